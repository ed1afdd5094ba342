//! Validation of the inputs: what the schema cannot say about a service or
//! the platform file, as problems at field paths. Pure: no I/O.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::base::diagnostics::{Diagnostic, Location, Source};
use crate::base::problem::{Problem, spec_path};
use crate::base::quantity::Quantity;
use crate::base::yaml::{Node, NodeValue, PathSegment};
use crate::load::LoadedService;
use crate::model::platform::{Platform, PriorityTier};
use crate::model::route::{Route, parse_route};
use crate::model::v1alpha2::{InferenceServiceSpec, MAX_GPUS_PER_NODE};

/// Namespaces Kubernetes itself uses: never a tenant's, as isvc would own
/// them and lock them down.
pub const SYSTEM_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// What the schema cannot say: adapter names, replicas or autoscaling
/// and its bounds, how GPUs split over nodes, the route, quantities.
pub fn service(spec: &InferenceServiceSpec) -> Vec<Problem> {
    let mut out = adapters(spec);
    out.extend(autoscaling(spec));
    out.extend(multinode(spec));
    out.extend(gateway(spec));
    out.extend(engine(spec));
    if let Some(image) = &spec.image
        && let Err(e) = image_reference(image)
    {
        out.push(
            Problem::new(spec_path(&["image"]), format!("invalid image {image:?}: {e}"))
                .help("write one image reference, for example \"vllm/vllm-openai:v0.11.0\""),
        );
    }
    for (field, q) in
        spec.resources.iter().flat_map(|r| [("cpu", &r.cpu), ("memory", &r.memory), ("shmSize", &r.shm_size)])
    {
        let Some(q) = q else { continue };
        match crate::base::quantity::Quantity::parse(&q.0) {
            Ok(v) if v.nanos() == 0 => out.push(Problem::new(
                spec_path(&["resources", field]),
                format!("resources.{field} must be more than zero"),
            )),
            Ok(_) => {}
            Err(e) => {
                let help = match field {
                    "cpu" => "write cores, for example 8 or 500m",
                    _ => "write a size with a binary suffix, for example 64Gi",
                };
                out.push(Problem::new(spec_path(&["resources", field]), format!("resources.{field}: {e}")).help(help))
            }
        }
    }
    out
}

/// Problems in the engine inputs: arguments isvc owns, environment
/// variables it sets, revisions and served names vLLM cannot take.
fn engine(spec: &InferenceServiceSpec) -> Vec<Problem> {
    use crate::model::engine::{HF_TOKEN_LEGACY, RESERVED_ENV, owned_arg};
    let mut out = Vec::new();
    let at = |field: &str, i: usize, key: Option<&str>| {
        let mut p = vec![PathSegment::Key("spec".into()), PathSegment::Key(field.into()), PathSegment::Index(i)];
        p.extend(key.map(|k| PathSegment::Key(k.into())));
        p
    };
    for (i, arg) in spec.args.iter().enumerate() {
        if let Some((flag, instead)) = owned_arg(arg) {
            out.push(
                Problem::new(at("args", i, None), format!("argument {flag} is set by isvc; it cannot be in spec.args"))
                    .help(format!("use {instead}")),
            );
        } else if i == 0 && !arg.starts_with('-') {
            out.push(
                Problem::new(at("args", i, None), format!("\"{arg}\" is not an option; spec.args are vLLM options"))
                    .help("write options as \"--name=value\" or as \"--name\", \"value\""),
            );
        }
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, e) in spec.env.iter().enumerate() {
        if let Some(first) = seen.insert(e.name.as_str(), i) {
            out.push(Problem::new(
                at("env", i, Some("name")),
                format!("environment variable {} is listed twice (first as env[{first}])", e.name),
            ));
        } else if RESERVED_ENV.contains(&e.name.as_str()) {
            out.push(
                Problem::new(at("env", i, Some("name")), format!("environment variable {} is set by isvc", e.name))
                    .help("isvc points it at the pod's writable volumes; leave it out"),
            );
        } else if e.name == HF_TOKEN_LEGACY {
            out.push(
                Problem::new(at("env", i, Some("name")), format!("{HF_TOKEN_LEGACY} is the old name of HF_TOKEN"))
                    .help("name it HF_TOKEN"),
            );
        } else if e.name.is_empty() || e.name.contains('=') {
            out.push(Problem::new(
                at("env", i, Some("name")),
                format!("invalid environment variable name \"{}\"", e.name),
            ));
        }
        if e.value.is_some() && e.value_from.is_some() {
            out.push(Problem::new(
                at("env", i, Some("valueFrom")),
                format!("environment variable {} has both value and valueFrom", e.name),
            ));
        }
        if e.name == crate::model::engine::HF_TOKEN && e.value.is_some() {
            out.push(
                Problem::new(
                    at("env", i, Some("value")),
                    "HF_TOKEN is written in the file; it would be committed to git",
                )
                .help("take it from a Secret: valueFrom: {secretKeyRef: {name: ..., key: ...}}"),
            );
        }
    }
    if let Some(r) = &spec.revision
        && (r.chars().any(|c| c.is_whitespace() || c.is_control()) || r.starts_with('-'))
    {
        out.push(Problem::new(
            spec_path(&["revision"]),
            format!("invalid revision \"{r}\": give a commit id, branch or tag"),
        ));
    }
    if let Some(n) = &spec.served_model_name {
        if n.trim() != n || n.is_empty() || n.chars().any(char::is_control) {
            out.push(Problem::new(spec_path(&["servedModelName"]), format!("invalid servedModelName \"{n}\"")));
        } else if spec.adapters.iter().any(|a| &a.name == n) {
            out.push(Problem::new(
                spec_path(&["servedModelName"]),
                format!("servedModelName \"{n}\" is also the name of an adapter"),
            ));
        }
    }
    out
}

/// Problems in a spec's adapter list: names that are not DNS labels, that
/// repeat, or that are the base model's; sources vLLM cannot load.
fn adapters(spec: &InferenceServiceSpec) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, a) in spec.adapters.iter().enumerate() {
        let at = |field: &str| {
            vec![
                PathSegment::Key("spec".into()),
                PathSegment::Key("adapters".into()),
                PathSegment::Index(i),
                PathSegment::Key(field.into()),
            ]
        };
        if let Err(e) = crate::base::names::dns1123_label(&a.name) {
            out.push(
                Problem::new(at("name"), format!("invalid adapter name \"{}\": {e}", a.name))
                    .help("clients ask for an adapter by this name; use lower case letters, digits and '-'"),
            );
        } else if a.name == spec.base_model {
            out.push(
                Problem::new(at("name"), format!("adapter \"{}\" has the name of the base model", a.name))
                    .help("clients could not ask for one or the other; rename the adapter"),
            );
        } else if let Some(first) = seen.insert(&a.name, i) {
            out.push(
                Problem::new(
                    at("name"),
                    format!("adapter \"{}\" is listed twice (first as adapters[{first}])", a.name),
                )
                .help("adapter names must be unique within a service"),
            );
        }
        if let Err(e) = adapter_source(&a.source) {
            out.push(Problem::new(at("source"), format!("adapter \"{}\": {e}", a.name)).help(
                "vLLM loads an adapter from a Hugging Face repository (org/name) or a path in the container; \
                 mount other storage into the container and give its path",
            ));
        }
    }
    out
}

/// A source vLLM can load: an absolute path in the container, or a Hugging
/// Face repository id (`org/name` or `name`).
fn adapter_source(source: &str) -> Result<(), String> {
    if source.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("source must not contain spaces or control characters".to_string());
    }
    if source.starts_with('/') {
        return Ok(());
    }
    if let Some((scheme, _)) = source.split_once("://") {
        return Err(format!("source \"{source}\" is a URL; vLLM does not download adapters from {scheme}:// URLs"));
    }
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.len() <= 96
            && p.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && !p.starts_with(['-', '.'])
    };
    match source.split_once('/') {
        Some((org, name)) if part_ok(org) && part_ok(name) => Ok(()),
        None if part_ok(source) => Ok(()),
        _ => {
            Err(format!("source \"{source}\" is neither an absolute path nor a Hugging Face repository id (org/name)"))
        }
    }
}

/// `replicas` or `autoscaling`, exactly one; `min` not above `max`.
fn autoscaling(spec: &InferenceServiceSpec) -> Vec<Problem> {
    let mut out = Vec::new();
    match (&spec.autoscaling, spec.replicas) {
        (None, None) => out.push(
            Problem::new(spec_path(&[]), "give spec.replicas or spec.autoscaling")
                .help("replicas: N for a fixed count, or autoscaling: {min, max, targetQueueLength}"),
        ),
        (Some(_), Some(_)) => out.push(
            Problem::new(spec_path(&["replicas"]), "give spec.replicas or spec.autoscaling, not both")
                .help("with autoscaling, the autoscaler owns the replica count; remove replicas"),
        ),
        _ => {}
    }
    if let Some(a) = spec.autoscaling.as_ref().filter(|a| a.min > a.max) {
        out.push(
            Problem::new(
                spec_path(&["autoscaling", "min"]),
                format!("autoscaling.min ({}) is above autoscaling.max ({})", a.min, a.max),
            )
            .help("lower min or raise max"),
        );
    }
    out
}

/// The GPUs of a replica must split evenly over its nodes, at most 8 a node.
fn multinode(spec: &InferenceServiceSpec) -> Vec<Problem> {
    let (gpus, nodes) = (spec.gpus_per_replica, spec.nodes_per_replica.max(1));
    let at = spec_path(&["gpusPerReplica"]);
    if gpus % nodes != 0 {
        return vec![
            Problem::new(at, format!("gpusPerReplica ({gpus}) does not split evenly over nodesPerReplica ({nodes})"))
                .help("every node of a replica gets the same number of GPUs"),
        ];
    }
    if gpus / nodes > MAX_GPUS_PER_NODE {
        let help = if nodes == 1 {
            format!(
                "a replica larger than one node spans several: set nodesPerReplica to {}",
                (gpus + MAX_GPUS_PER_NODE - 1) / MAX_GPUS_PER_NODE
            )
        } else {
            "raise nodesPerReplica".to_string()
        };
        return vec![
            Problem::new(
                at,
                format!(
                    "gpusPerReplica ({gpus}) over {nodes} node(s) is {} GPUs per node, more than {MAX_GPUS_PER_NODE}",
                    gpus / nodes
                ),
            )
            .help(help),
        ];
    }
    Vec::new()
}

/// A route that does not parse.
fn gateway(spec: &InferenceServiceSpec) -> Vec<Problem> {
    let Some(g) = &spec.gateway else { return Vec::new() };
    match parse_route(&g.route) {
        Ok(_) => Vec::new(),
        Err(e) => vec![
            Problem::new(spec_path(&["gateway", "route"]), format!("invalid route \"{}\": {e}", g.route))
                .help("a route is a hostname (qwen3.llm.example.com), a path prefix (/qwen3), or both (llm.example.com/qwen3)"),
        ],
    }
}

/// Across services: a route needs the platform's Gateway, a priority needs
/// the Inference Extension, and no two services may claim one route.
/// `label` names a service's file.
pub fn routes(
    services: &[LoadedService],
    platform: &Platform,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
) -> Vec<Diagnostic> {
    let key = |k: &str| crate::base::yaml::PathSegment::Key(k.to_string());
    let mut out = Vec::new();
    let mut claimed: BTreeMap<Route, Vec<&LoadedService>> = BTreeMap::new();
    for s in services {
        let Some(g) = &s.service.spec.gateway else { continue };
        let at = |field: &str| s.location(&[key("spec"), key("gateway"), key(field)]);
        let Some(config) = &platform.gateway else {
            out.push(
                Diagnostic::error(format!(
                    "route \"{}\" needs a Gateway, but the platform file has no \"gateway\" section",
                    g.route
                ))
                .at(at("route"))
                .help("add gateway.parentRef to the platform file, naming the Gateway that routes attach to"),
            );
            continue;
        };
        if config.inference_extension {
            let picker = format!("{}{}", s.service.name(), config.endpoint_picker.service_suffix);
            if let Err(e) = crate::base::names::dns1035_label(&picker) {
                out.push(
                    Diagnostic::error(format!("the endpoint picker's Service name \"{picker}\" {e}"))
                        .at(s.location(&[key("metadata"), key("name")]))
                        .help("shorten the service name or the platform's gateway.endpointPicker.serviceSuffix"),
                );
            }
        }
        if g.priority.is_some() && !config.inference_extension {
            out.push(
                Diagnostic::error(
                    "gateway.priority needs the Gateway API Inference Extension, which the platform does not enable",
                )
                .at(at("priority"))
                .help("set gateway.inferenceExtension: true in the platform file, or remove the priority"),
            );
        }
        let Ok(route) = parse_route(&g.route) else { continue };
        claimed.entry(route).or_default().push(s);
    }
    for (route, group) in &claimed {
        out.extend(route_claims(route, group, label));
    }
    out
}

/// The services that claim one route: one alone, or several of one
/// namespace that each give a weight, the weights adding up to 100 (the
/// HTTPRoute's backendRefs split the requests in proportion to them,
/// gateway-api `apis/v1/httproute_types.go` `BackendRef.Weight`).
fn route_claims(
    route: &Route,
    group: &[&LoadedService],
    label: &(dyn Fn(&LoadedService) -> String + Sync),
) -> Vec<Diagnostic> {
    let key = |k: &str| crate::base::yaml::PathSegment::Key(k.to_string());
    let at = |s: &LoadedService, field: &str| s.location(&[key("spec"), key("gateway"), key(field)]);
    let weight = |s: &LoadedService| s.service.spec.gateway.as_ref().and_then(|g| g.weight);
    let who = |s: &LoadedService| format!("{}/{} in {}", s.service.namespace_or_default(), s.service.name(), label(s));
    let mut out = Vec::new();
    let first = group[0];
    if group.len() > 1 {
        // Without weights, the second claim is a conflict.
        if let Some(s) =
            group.iter().skip(1).find(|s| weight(s).is_none()).or(group.iter().find(|s| weight(s).is_none()))
        {
            let other = if std::ptr::eq(*s, first) { group[1] } else { first };
            out.push(
                Diagnostic::error(format!(
                    "route \"{route}\" is claimed by two services: {} and {}",
                    who(other),
                    who(s)
                ))
                .at(at(s, "route"))
                .related(at(other, "route"), "claimed here first")
                .help("give each service its own hostname or path prefix, or split the route's traffic: give every service of it gateway.weight, adding up to 100"),
            );
            return out;
        }
        if let Some(s) = group.iter().find(|s| s.service.namespace_or_default() != first.service.namespace_or_default())
        {
            out.push(
                Diagnostic::error(format!(
                    "route \"{route}\" is split between namespaces: {} and {}",
                    who(first),
                    who(s)
                ))
                .at(at(s, "weight"))
                .related(at(first, "weight"), "weighted here")
                .help("services that share a route must be in one namespace: the HTTPRoute's backends are in its own"),
            );
            return out;
        }
    }
    let Some(_) = weight(first) else { return out };
    let total: i64 = group.iter().filter_map(|s| weight(s)).map(i64::from).sum();
    if total != 100 {
        let parts: Vec<String> = group
            .iter()
            .map(|s| format!("{} at {} ({})", weight(s).unwrap_or_default(), at(s, "weight"), who(s)))
            .collect();
        let mut d = Diagnostic::error(format!(
            "the weights of route \"{route}\" add up to {total}, not 100: {}",
            parts.join(", ")
        ))
        .at(at(first, "weight"))
        .help("make the gateway.weight of the route's services add up to 100 (for a canary: 90 and 10)");
        for s in group.iter().skip(1) {
            d = d.related(at(s, "weight"), "weighted here");
        }
        out.push(d);
    }
    out
}

/// `autoscaling.min: 0` where something can scale the service back up: an
/// endpoint picker with flow control holds its requests (they wait in the
/// picker, not in vLLM, so its queue is the demand even at zero pods), and
/// KEDA scales (it activates a workload from zero on a Prometheus metric;
/// a HorizontalPodAutoscaler needs the alpha HPAScaleToZero gate).
pub fn scale_from_zero(services: &[LoadedService], platform: &Platform) -> Vec<Diagnostic> {
    let key = |k: &str| crate::base::yaml::PathSegment::Key(k.to_string());
    let mut out = Vec::new();
    for s in services {
        let spec = &s.service.spec;
        if spec.autoscaling.as_ref().is_none_or(|a| a.min > 0) {
            continue;
        }
        let priority = spec.gateway.as_ref().is_some_and(|g| g.priority.is_some());
        let held =
            spec.gateway.is_some() && platform.gateway.as_ref().is_some_and(|g| g.picker_holds_requests(priority));
        let why = match (held, platform.keda.is_some()) {
            (true, true) => continue,
            (false, _) => {
                "the queue length is read from the serving pods (vllm:num_requests_waiting), so at zero pods nothing \
                 would scale the service back up"
            }
            (true, false) => {
                "a HorizontalPodAutoscaler cannot scale to zero (minReplicas: 0 needs the alpha HPAScaleToZero gate)"
            }
        };
        out.push(
            Diagnostic::error(format!("autoscaling.min is 0, but {why}"))
                .at(s.location(&[key("spec"), key("autoscaling"), key("min")]))
                .help(
                    "set autoscaling.min to 1; scaling from zero needs a gateway.route to an endpoint picker that holds \
                     requests (gateway.inferenceExtension and gateway.endpointPicker.flowControl in the platform file) \
                     and KEDA (keda in the platform file)",
                ),
        );
    }
    out
}

/// Problems in the platform's `gateway` section, with the path of the field.
fn platform_gateway(platform: &Platform) -> Vec<Problem> {
    let key = |k: &str| crate::base::yaml::PathSegment::Key(k.to_string());
    let Some(g) = &platform.gateway else { return Vec::new() };
    let mut out = Vec::new();
    if let Err(e) = crate::base::names::dns1123_subdomain(&g.parent_ref.name) {
        out.push(Problem::new(
            vec![key("gateway"), key("parentRef"), key("name")],
            format!("invalid Gateway name \"{}\": {e}", g.parent_ref.name),
        ));
    }
    if let Some(ns) = &g.parent_ref.namespace
        && let Err(e) = crate::base::names::dns1123_label(ns)
    {
        out.push(Problem::new(
            vec![key("gateway"), key("parentRef"), key("namespace")],
            format!("invalid namespace \"{ns}\": {e}"),
        ));
    }
    if let Some(t) = &g.request_timeout
        && !is_gateway_duration(t)
    {
        out.push(Problem::new(
            vec![key("gateway"), key("requestTimeout")],
            format!("\"{t}\" is not a Gateway API duration (for example 300s, 5m, 1h30m)"),
        ));
    }
    // The picker's requests and limits: quantities, a request not above its
    // limit (the API server refuses the pod otherwise).
    let res = &g.endpoint_picker.resources;
    let at = |which: &str, r: &str| vec![key("gateway"), key("endpointPicker"), key("resources"), key(which), key(r)];
    for (which, map) in [("requests", &res.requests), ("limits", &res.limits)] {
        for (r, q) in map {
            if let Err(e) = crate::base::quantity::Quantity::parse(q) {
                out.push(Problem::new(at(which, r), e));
            }
        }
    }
    for (r, q) in &res.requests {
        let limit = res.limits.get(r);
        if let (Ok(q), Some(Ok(l))) =
            (crate::base::quantity::Quantity::parse(q), limit.map(|l| crate::base::quantity::Quantity::parse(l)))
            && q > l
        {
            out.push(
                    Problem::new(
                        at("requests", r),
                        format!(
                            "the picker's {r} request ({q}) is above its limit ({l}); the API server refuses such a pod"
                        ),
                    )
                    .help(format!(
                        "lower gateway.endpointPicker.resources.requests.{r} or raise gateway.endpointPicker.resources.limits.{r}"
                    )),
                );
        }
    }
    if g.inference_extension {
        let epp = format!("x{}", g.endpoint_picker.service_suffix);
        if crate::base::names::dns1035_label(&epp).is_err() || epp.len() > 40 {
            out.push(Problem::new(
                vec![key("gateway"), key("endpointPicker"), key("serviceSuffix")],
                format!(
                    "serviceSuffix \"{}\" cannot end a Service name: use '-', lower case letters and digits, at most 39",
                    g.endpoint_picker.service_suffix
                ),
            ));
        }
    }
    out
}

/// `^([0-9]{1,5}(h|m|s|ms)){1,4}$`, the Gateway API's Duration.
fn is_gateway_duration(text: &str) -> bool {
    let mut rest = text;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 5 {
            return false;
        }
        rest = &rest[digits..];
        let unit = ["ms", "h", "m", "s"].into_iter().find(|u| rest.starts_with(u));
        let Some(unit) = unit else { return false };
        rest = &rest[unit.len()..];
        parts += 1;
    }
    (1..=4).contains(&parts)
}

/// Problems in the platform's `monitoring` section, with the field's path.
fn platform_monitoring(platform: &crate::model::platform::Platform) -> Vec<Problem> {
    let key = |k: &str| crate::base::yaml::PathSegment::Key(k.to_string());
    let Some(m) = &platform.monitoring else { return Vec::new() };
    let mut out = Vec::new();
    for (k, v) in &m.labels {
        if let Err(e) = crate::base::names::qualified_name(k) {
            out.push(Problem::new(
                vec![key("monitoring"), key("labels"), key(k)],
                format!("invalid label key \"{k}\": {e}"),
            ));
        } else if let Err(e) = crate::base::names::label_value(v, true) {
            out.push(Problem::new(
                vec![key("monitoring"), key("labels"), key(k)],
                format!("invalid value for label \"{k}\": {e}"),
            ));
        }
    }
    if let Some(i) = m.interval.as_ref().filter(|i| !is_prometheus_duration(i)) {
        out.push(Problem::new(
            vec![key("monitoring"), key("interval")],
            format!("\"{i}\" is not a Prometheus duration (for example 30s, 1m)"),
        ));
    }
    out
}

/// `^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`,
/// without the empty string.
fn is_prometheus_duration(text: &str) -> bool {
    if text == "0" {
        return true;
    }
    let mut rest = text;
    let mut units = ["y", "w", "d", "h", "m", "s", "ms"].iter();
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        // Units must come in order, each at most once; "ms" before "m".
        let found = units.by_ref().find(|u| rest.starts_with(**u) && !(**u == "m" && rest.starts_with("ms")));
        let Some(u) = found else { return false };
        rest = &rest[u.len()..];
    }
    !text.is_empty()
}

/// Problems in the tenant section of a platform file, each with the path of
/// the field it is about.
fn platform_tenancy(platform: &Platform) -> Vec<Problem> {
    let key = |k: &str| PathSegment::Key(k.to_string());
    let mut out = Vec::new();
    let tiers = platform.tiers();
    for name in platform.priorities.keys() {
        if let Err(e) = crate::base::names::dns1123_subdomain(name) {
            out.push(Problem::new(
                vec![key("priorities"), key(name)],
                format!("invalid priority name \"{name}\": {e}"),
            ));
        }
    }
    // The PriorityClass names: the prefix and each tier.
    if let Some(prefix) = &platform.priority_class_prefix {
        for tier in tiers.keys() {
            let class = platform.priority_class(tier);
            if let Err(e) = crate::base::names::dns1123_subdomain(&class) {
                out.push(Problem::new(
                    vec![key("priorityClassPrefix")],
                    format!("prefix \"{prefix}\" makes PriorityClass name \"{class}\" invalid: {e}"),
                ));
                break;
            }
        }
    }
    for (i, ns) in platform.network.allow_from.iter().enumerate() {
        if let Err(e) = crate::base::names::dns1123_label(ns) {
            out.push(Problem::new(
                vec![key("network"), key("allowFrom"), PathSegment::Index(i)],
                format!("invalid namespace \"{ns}\": {e}"),
            ));
        }
    }
    if let Some(ns) = platform.monitoring.as_ref().and_then(|m| m.namespace.as_ref())
        && let Err(e) = crate::base::names::dns1123_label(ns)
    {
        out.push(Problem::new(vec![key("monitoring"), key("namespace")], format!("invalid namespace \"{ns}\": {e}")));
    }
    if let Some(k) = &platform.kueue {
        if let Err(e) = crate::base::names::dns1123_subdomain(&k.flavor.name) {
            out.push(Problem::new(
                vec![key("kueue"), key("flavor"), key("name")],
                format!("invalid flavor name \"{}\": {e}", k.flavor.name),
            ));
        }
        for (r, q) in &k.capacity {
            if let Err(e) = Quantity::parse(q) {
                out.push(Problem::new(vec![key("kueue"), key("capacity"), key(r)], e));
            }
        }
    }
    let mut owner: BTreeMap<String, &str> = BTreeMap::new();
    let mut names: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, t) in platform.tenants.iter().enumerate() {
        let at = |rest: &[PathSegment]| {
            let mut p = vec![key("tenants"), PathSegment::Index(i)];
            p.extend_from_slice(rest);
            p
        };
        if let Err(e) = crate::base::names::dns1123_label(&t.name) {
            out.push(Problem::new(at(&[key("name")]), format!("invalid tenant name \"{}\": {e}", t.name)));
        }
        if let Some(first) = names.insert(&t.name, i) {
            out.push(Problem::new(
                at(&[key("name")]),
                format!("tenant \"{}\" is declared twice (first as tenants[{first}])", t.name),
            ));
        }
        for (j, ns) in t.namespace_list().iter().enumerate() {
            let path = if t.namespaces.is_empty() {
                at(&[key("name")])
            } else {
                at(&[key("namespaces"), PathSegment::Index(j)])
            };
            if let Err(e) = crate::base::names::dns1123_label(ns) {
                out.push(Problem::new(path.clone(), format!("invalid namespace \"{ns}\": {e}")));
            }
            if SYSTEM_NAMESPACES.contains(&ns.as_str()) {
                out.push(
                    Problem::new(path.clone(), format!("namespace \"{ns}\" is a system namespace and cannot belong to a tenant"))
                        .help("a tenant's namespaces get quotas and a default-deny network policy; give the tenant a namespace of its own"),
                );
            }
            if let Some(other) = owner.insert(ns.clone(), &t.name) {
                out.push(Problem::new(path, format!("namespace \"{ns}\" belongs to tenant \"{other}\" already")));
            }
        }
        for (k, q) in &t.quota {
            if let Err(e) = Quantity::parse(q) {
                out.push(Problem::new(at(&[key("quota"), key(k)]), format!("quota \"{k}\": {e}")));
            }
        }
        for (section, map) in [
            ("defaultRequest", &t.limits.default_request),
            ("defaultLimit", &t.limits.default_limit),
            ("max", &t.limits.max),
        ] {
            for (k, q) in map {
                if let Err(e) = Quantity::parse(q) {
                    out.push(Problem::new(
                        at(&[key("limits"), key(section), key(k)]),
                        format!("limits.{section}.{k}: {e}"),
                    ));
                }
            }
        }
        for (j, p) in t.priorities.iter().enumerate() {
            if !tiers.contains_key(p) {
                out.push(Problem::new(at(&[key("priorities"), PathSegment::Index(j)]), unknown_tier(p, &tiers)));
            }
        }
        if let Some(p) = &t.default_priority {
            if !tiers.contains_key(p) {
                out.push(Problem::new(at(&[key("defaultPriority")]), unknown_tier(p, &tiers)));
            } else if !t.allows(p) {
                out.push(Problem::new(
                    at(&[key("defaultPriority")]),
                    format!("default priority \"{p}\" is not among the tenant's priorities"),
                ));
            }
        }
        if let Some(c) = &t.cohort
            && let Err(e) = crate::base::names::dns1123_subdomain(c)
        {
            out.push(Problem::new(at(&[key("cohort")]), format!("invalid cohort name \"{c}\": {e}")));
        }
        let mut queue_names = BTreeMap::new();
        for (j, q) in t.queues.iter().enumerate() {
            let qat = |k: &str| at(&[key("queues"), PathSegment::Index(j), key(k)]);
            if let Err(e) = crate::base::names::dns1123_label(&q.name) {
                out.push(Problem::new(qat("name"), format!("invalid queue name \"{}\": {e}", q.name)));
            }
            if queue_names.insert(q.name.clone(), j).is_some() {
                out.push(Problem::new(qat("name"), format!("queue \"{}\" is declared twice", q.name)));
            }
            if let Some(p) = q.priority.as_ref().filter(|p| !tiers.contains_key(*p)) {
                out.push(Problem::new(qat("priority"), unknown_tier(p, &tiers)));
            }
            if q.nominal_quota.is_empty() {
                out.push(Problem::new(
                    qat("nominalQuota"),
                    "a queue needs at least one resource in nominalQuota".to_string(),
                ));
            }
            for (section, map) in [
                ("nominalQuota", Some(&q.nominal_quota)),
                ("borrowingLimit", q.borrowing_limit.as_ref()),
                ("lendingLimit", q.lending_limit.as_ref()),
            ] {
                for (r, v) in map.into_iter().flatten() {
                    if let Err(e) = Quantity::parse(v) {
                        out.push(Problem::new(
                            at(&[key("queues"), PathSegment::Index(j), key(section), key(r)]),
                            format!("{section}.{r}: {e}"),
                        ));
                    } else if section != "nominalQuota" && !q.nominal_quota.contains_key(r) {
                        out.push(Problem::new(
                            at(&[key("queues"), PathSegment::Index(j), key(section), key(r)]),
                            format!("{section}.{r} is set, but {r} is not in the queue's nominalQuota"),
                        ));
                    }
                }
            }
        }
    }
    out
}

fn unknown_tier(name: &str, tiers: &BTreeMap<String, PriorityTier>) -> String {
    let known: Vec<&str> = tiers.keys().map(String::as_str).collect();
    format!("unknown priority \"{name}\"; the platform declares {}", known.join(", "))
}

/// Checks the security settings of a platform file on its tree, so the
/// problems are reported with positions, together with the schema's.
pub fn platform_security(source: &Arc<Source>, root: &Node, diags: &mut Vec<Diagnostic>) {
    let defaults = root.get("defaults").and_then(|d| d.get("security"));
    let root_allowed = |block: Option<&Node>| {
        block.and_then(|b| b.get("allowRootUser")).is_some_and(|n| matches!(n.value, NodeValue::Bool(true)))
    };
    security_block(source, defaults, root_allowed(defaults), diags);
    let Some(NodeValue::Seq(exceptions)) = root.get("securityExceptions").map(|n| &n.value) else { return };
    for exception in exceptions {
        let block = exception.get("security");
        security_block(source, block, root_allowed(defaults) || root_allowed(block), diags);
        let at = |n: &Node| Location::span(source, n.span);
        if let Some(ns) = exception.get("namespace")
            && let Some(Err(e)) = ns.as_str().map(crate::base::names::dns1123_label)
        {
            diags.push(Diagnostic::error(format!("invalid namespace in securityExceptions: {e}")).at(at(ns)));
        }
        if let Some(NodeValue::Seq(services)) = exception.get("services").map(|n| &n.value) {
            for s in services {
                if let Some(Err(e)) = s.as_str().map(crate::base::names::dns1035_label) {
                    diags.push(Diagnostic::error(format!("invalid service name in securityExceptions: {e}")).at(at(s)));
                }
            }
        }
    }
}

/// Checks one `security` block; `root_allowed` says whether root is allowed
/// for the services it applies to.
fn security_block(source: &Arc<Source>, block: Option<&Node>, root_allowed: bool, diags: &mut Vec<Diagnostic>) {
    let Some(block) = block else { return };
    if let Some(uid) = block.get("runAsUser").filter(|n| matches!(n.value, NodeValue::Int(0)))
        && !root_allowed
    {
        diags.push(
            Diagnostic::error("\"runAsUser: 0\" is root, which this block does not allow")
                .at(Location::span(source, uid.span))
                .help("add \"allowRootUser: true\" beside it if the image must run as root, or use a non-zero UID"),
        );
    }
    let Some(NodeValue::Seq(caps)) = block.get("addCapabilities").map(|n| &n.value) else { return };
    for cap in caps {
        let at = Location::span(source, cap.span);
        match cap.as_str() {
            Some("ALL") => diags.push(
                Diagnostic::error("\"addCapabilities\" cannot add ALL: that undoes \"drop: [ALL]\"")
                    .at(at)
                    .help("name each capability the image needs"),
            ),
            Some(c) if c.starts_with("CAP_") => diags.push(
                Diagnostic::error(format!("capability \"{c}\" is written without the CAP_ prefix in Kubernetes"))
                    .at(at)
                    .help(format!("write \"{}\"", &c[4..])),
            ),
            _ => {}
        }
    }
}

/// Names that become directory and file names of the output tree: cluster
/// names (one tree each) and the GitOps name (the engine objects' files).
/// Each must be a DNS-1123 label, so it can never be `..`, absolute, empty,
/// hold a separator or a newline, or name a file like `kustomization.yaml`;
/// and cluster names must be unique, as each owns its directory.
fn platform_names(platform: &Platform) -> Vec<Problem> {
    let key = |k: &str| PathSegment::Key(k.to_string());
    let mut out = Vec::new();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, c) in platform.clusters.iter().enumerate() {
        let at = vec![key("clusters"), PathSegment::Index(i), key("name")];
        if let Err(e) = crate::base::names::dns1123_label(&c.name) {
            out.push(
                Problem::new(at.clone(), format!("invalid cluster name {:?}: {e}", c.name))
                    .help("a cluster name is the directory of its tree: use lower case letters, digits and '-'"),
            );
        }
        if let Some(first) = seen.insert(&c.name, i) {
            out.push(
                Problem::new(at, format!("cluster {:?} is listed twice (first as clusters[{first}])", c.name))
                    .help("each cluster owns one directory of the output; rename or merge them"),
            );
        }
    }
    if let Some(g) = platform.gitops.as_ref().filter(|g| g.engine == Some(crate::model::platform::Engine::Argocd)) {
        // Argo CD needs a destination; said here, at the field, rather than
        // when the objects are built (where no position is known).
        if platform.clusters.is_empty() && g.argocd.server.is_none() {
            out.push(
                Problem::new(
                    vec![key("gitops"), key("engine")],
                    "gitops.argocd.server is not set: which cluster should Argo CD deploy to?",
                )
                .help("set gitops.argocd.server; use https://kubernetes.default.svc for the cluster Argo CD runs in"),
            );
        }
        for (i, c) in platform.clusters.iter().enumerate() {
            if c.server.is_none() {
                out.push(
                    Problem::new(
                        vec![key("clusters"), PathSegment::Index(i), key("name")],
                        format!("cluster {:?} has no `server`: Argo CD needs its API server URL", c.name),
                    )
                    .help("add server: https://<api-server> to the cluster"),
                );
            }
        }
    }
    if let Some(g) = &platform.gitops
        && let Err(e) = crate::base::names::dns1123_label(&g.name)
    {
        out.push(
            Problem::new(vec![key("gitops"), key("name")], format!("invalid GitOps name {:?}: {e}", g.name)).help(
                "it names the Application or Kustomizations and their files: use lower case letters, digits and '-'",
            ),
        );
    }
    out
}

/// Platform values copied into every pod: the image, node selectors and
/// registry mirrors. A value with a newline or a key the API server
/// refuses must fail here, at its field, not in the cluster.
fn platform_values(platform: &Platform) -> Vec<Problem> {
    let key = |k: &str| PathSegment::Key(k.to_string());
    let mut out = Vec::new();
    let image_at = vec![key("defaults"), key("image")];
    if let Err(e) = image_reference(&platform.defaults.image) {
        out.push(
            Problem::new(image_at, format!("invalid image {:?}: {e}", platform.defaults.image))
                .help("write one image reference, for example \"vllm/vllm-openai:v0.11.0\""),
        );
    }
    let labels = |what: &str, path: Vec<PathSegment>, map: &BTreeMap<String, String>, out: &mut Vec<Problem>| {
        for (k, v) in map {
            let mut at = path.clone();
            at.push(key(k));
            if let Err(e) = crate::base::names::qualified_name(k) {
                out.push(
                    Problem::new(at.clone(), format!("invalid {what} key {k:?}: {e}"))
                        .help("a node label key is [prefix/]name, for example \"nvidia.com/gpu.product\""),
                );
            }
            if let Err(e) = crate::base::names::label_value(v, true) {
                out.push(
                    Problem::new(at, format!("invalid {what} value {v:?} for {k:?}: {e}"))
                        .help("a node label value is at most 63 letters, digits, '-', '_' or '.'"),
                );
            }
        }
    };
    labels("nodeSelector", vec![key("defaults"), key("nodeSelector")], &platform.defaults.node_selector, &mut out);
    if let Some(k) = &platform.kueue {
        labels("node label", vec![key("kueue"), key("flavor"), key("nodeLabels")], &k.flavor.node_labels, &mut out);
    }
    let tolerations = platform
        .defaults
        .tolerations
        .iter()
        .enumerate()
        .map(|(i, t)| (vec![key("defaults"), key("tolerations"), PathSegment::Index(i)], t))
        .chain(platform.kueue.iter().flat_map(|k| {
            k.flavor
                .tolerations
                .iter()
                .enumerate()
                .map(|(i, t)| (vec![key("kueue"), key("flavor"), key("tolerations"), PathSegment::Index(i)], t))
        }));
    for (at, t) in tolerations {
        if !t.key.is_empty()
            && let Err(e) = crate::base::names::qualified_name(&t.key)
        {
            let mut path = at.clone();
            path.push(key("key"));
            out.push(
                Problem::new(path, format!("invalid toleration key {:?}: {e}", t.key))
                    .help("a taint key is [prefix/]name, for example \"nvidia.com/gpu\""),
            );
        }
        if let Some(v) = &t.value
            && let Err(e) = crate::base::names::label_value(v, true)
        {
            let mut path = at.clone();
            path.push(key("value"));
            out.push(
                Problem::new(path, format!("invalid toleration value {v:?}: {e}"))
                    .help("a taint value is at most 63 letters, digits, '-', '_' or '.'"),
            );
        }
    }
    for (i, c) in platform.clusters.iter().enumerate() {
        let at = |k: &str| vec![key("clusters"), PathSegment::Index(i), key(k)];
        labels("nodeSelector", at("nodeSelector"), &c.node_selector, &mut out);
        if let Some(r) = &c.image_registry
            && let Err(e) = image_reference(r)
        {
            out.push(
                Problem::new(at("imageRegistry"), format!("invalid image registry {r:?}: {e}"))
                    .help("write a registry host, for example \"registry.eu.example.com\""),
            );
        }
    }
    out
}

/// An image reference (or registry prefix): printable ASCII without
/// spaces, quotes or control characters, at most 4096 bytes.
fn image_reference(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("must not be empty".to_string());
    }
    if text.len() > 4096 {
        return Err(format!("must be no more than 4096 characters (it has {})", text.len()));
    }
    match text.chars().find(|c| !c.is_ascii_graphic() || matches!(c, '"' | '\'' | '\\' | '`' | '$')) {
        Some(c) => Err(format!("must not contain {:?}: an image reference is [registry/]repository[:tag][@digest]", c)),
        None => Ok(()),
    }
}

/// What the schema cannot say about the platform file: tenants, tiers and
/// queues, the Gateway, monitoring.
pub fn platform(platform: &Platform) -> Vec<Problem> {
    let mut out = platform_names(platform);
    out.extend(platform_values(platform));
    out.extend(platform_tenancy(platform));
    out.extend(platform_gateway(platform));
    out.extend(platform_monitoring(platform));
    out.extend(platform_accelerators(platform));
    out.extend(platform_model_cache(platform));
    out
}

/// Accelerator profiles: unique DNS-label names, a resource name the API
/// server takes, node labels and tolerations like `defaults`'.
fn platform_accelerators(platform: &Platform) -> Vec<Problem> {
    let key = |k: &str| PathSegment::Key(k.to_string());
    let mut out = Vec::new();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, a) in platform.accelerators.iter().enumerate() {
        let at = |k: &str| vec![key("accelerators"), PathSegment::Index(i), key(k)];
        // The name is only matched against spec.accelerator and shown in
        // messages: letters, digits, '-', '_' and '.' (`H100`, `mig-3g.40gb`).
        if a.name.is_empty() || !a.name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
            out.push(
                Problem::new(
                    at("name"),
                    format!("invalid accelerator name {:?}: use letters, digits, '-', '_' or '.'", a.name),
                )
                .help("for example \"h100\" or \"mig-3g.40gb\""),
            );
        }
        if let Some(first) = seen.insert(&a.name, i) {
            out.push(
                Problem::new(
                    at("name"),
                    format!("accelerator {:?} is declared twice (first as accelerators[{first}])", a.name),
                )
                .help("give each profile its own name"),
            );
        }
        // An extended resource is a fully qualified name outside the
        // kubernetes.io domain (kubernetes/kubernetes
        // `pkg/apis/core/helper/helpers.go`, `IsExtendedResourceName`).
        let qualified = crate::base::names::qualified_name(&a.resource).is_ok() && a.resource.contains('/');
        if !qualified || a.resource.split('/').next().is_some_and(|d| d.ends_with("kubernetes.io")) {
            out.push(
                Problem::new(at("resource"), format!("invalid accelerator resource {:?}: not an extended resource name", a.resource))
                    .help("write the device plugin's resource, for example \"nvidia.com/gpu\", \"nvidia.com/mig-3g.40gb\" or \"amd.com/gpu\""),
            );
        }
        for (k, v) in &a.node_selector {
            let mut path = at("nodeSelector");
            path.push(key(k));
            if let Err(e) = crate::base::names::qualified_name(k).and(crate::base::names::label_value(v, true)) {
                out.push(
                    Problem::new(path, format!("invalid nodeSelector {k:?}: {v:?}: {e}"))
                        .help("a node label is [prefix/]name: value, for example \"nvidia.com/gpu.product\": \"NVIDIA-H100-80GB-HBM3\""),
                );
            }
        }
        for (j, t) in a.tolerations.iter().enumerate() {
            if !t.key.is_empty()
                && let Err(e) = crate::base::names::qualified_name(&t.key)
            {
                let mut path = at("tolerations");
                path.extend([PathSegment::Index(j), key("key")]);
                out.push(
                    Problem::new(path, format!("invalid toleration key {:?}: {e}", t.key))
                        .help("a taint key is [prefix/]name, for example \"nvidia.com/gpu\""),
                );
            }
        }
        if let Some(f) = &a.kueue_flavor
            && let Err(e) = crate::base::names::dns1123_subdomain(f)
        {
            out.push(
                Problem::new(at("kueueFlavor"), format!("invalid Kueue flavor name {f:?}: {e}"))
                    .help("a ResourceFlavor name is lower case letters, digits, '-' and '.'"),
            );
        }
    }
    // A queued pod's CPU and memory are quota of `kueue.flavor`, and Kueue
    // adds the node labels of every flavor it assigns to the pod's node
    // selector (kubernetes-sigs/kueue `site/content/en/docs/concepts/resource_flavor.md`,
    // "ResourceFlavor labels"): a profile on nodes of its own flavor that
    // lack those labels would never be scheduled.
    if platform.tenants.iter().any(|t| !t.queues.is_empty())
        && let Some(kueue) = &platform.kueue
    {
        for (i, a) in platform.accelerators.iter().enumerate() {
            let Some(f) = a.kueue_flavor.as_deref().filter(|f| *f != kueue.flavor.name) else { continue };
            let missing: Vec<String> = kueue
                .flavor
                .node_labels
                .iter()
                .filter(|(k, v)| a.node_selector.get(*k).or(platform.defaults.node_selector.get(*k)) != Some(*v))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            if !missing.is_empty() {
                out.push(
                    Problem::new(
                        vec![key("accelerators"), PathSegment::Index(i), key("kueueFlavor")],
                        format!(
                            "the pods of accelerator {:?} would need the node labels of Kueue flavor {:?} ({}) as well as those of {f:?}: Kueue gives their CPU and memory from {:?}",
                            a.name,
                            kueue.flavor.name,
                            missing.join(", "),
                            kueue.flavor.name
                        ),
                    )
                    .help("leave kueue.flavor.nodeLabels empty and let each profile's nodeSelector place its pods"),
                );
            }
        }
    }
    for (i, r) in platform.images.iter().flat_map(|i| i.allowed_repositories.iter()).enumerate() {
        if let Err(e) = image_reference(r) {
            out.push(
                Problem::new(
                    vec![key("images"), key("allowedRepositories"), PathSegment::Index(i)],
                    format!("invalid repository {r:?}: {e}"),
                )
                .help("write a repository, for example \"vllm/vllm-openai\", or a prefix ending in '/'"),
            );
        }
    }
    out
}

/// The shared model cache of the platform and of each tenant: a size the
/// API server takes, a claim name that is a DNS subdomain, an image.
fn platform_model_cache(platform: &Platform) -> Vec<Problem> {
    let key = |k: &str| PathSegment::Key(k.to_string());
    let caches = platform.model_cache.iter().map(|c| (vec![key("modelCache")], c)).chain(
        platform.tenants.iter().enumerate().filter_map(|(i, t)| {
            t.model_cache.as_ref().map(|c| (vec![key("tenants"), PathSegment::Index(i), key("modelCache")], c))
        }),
    );
    let mut out = Vec::new();
    for (base, c) in caches {
        let at = |k: &str| {
            let mut p = base.clone();
            p.push(key(k));
            p
        };
        match (&c.size, &c.image) {
            (Some(size), None) => match Quantity::parse(&size.0) {
                Ok(q) if q.nanos() > 0 => {}
                Ok(_) => out.push(Problem::new(at("size"), "modelCache.size must be more than zero")),
                Err(e) => out.push(
                    Problem::new(at("size"), format!("modelCache.size: {e}"))
                        .help("write a size with a binary suffix, for example 500Gi"),
                ),
            },
            (None, Some(image)) => {
                let mut reference = at("image");
                reference.push(key("reference"));
                let sample = image.reference.replace("{model}", "org/model").replace("{revision}", "main");
                if !image.reference.contains("{model}") {
                    out.push(
                        Problem::new(reference, format!("modelCache.image.reference {:?} does not name the model", image.reference))
                            .help("put {model} (and {revision}) in it, for example \"registry.example.com/models/{model}:{revision}\""),
                    );
                } else if let Err(e) = image_reference(&sample) {
                    out.push(Problem::new(reference, format!("invalid image reference {:?}: {e}", image.reference)));
                }
            }
            (Some(_), Some(_)) => out.push(
                Problem::new(at("image"), "modelCache gives both `size` (a claim) and `image` (an image per model)")
                    .help("keep one: a claim filled by download Jobs, or images that hold the models"),
            ),
            (None, None) => out.push(
                Problem::new(
                    base.clone(),
                    "modelCache needs `size` (a claim filled by download Jobs) or `image` (an image per model)",
                )
                .help("for example modelCache: {storageClassName: nfs, size: 500Gi}"),
            ),
        }
        if let Err(e) = crate::base::names::dns1123_label(&c.claim_name) {
            out.push(
                Problem::new(at("claimName"), format!("invalid claim name {:?}: {e}", c.claim_name))
                    .help("use lower case letters, digits and '-', for example \"isvc-model-cache\""),
            );
        }
        if let Some(i) = &c.downloader_image
            && let Err(e) = image_reference(i)
        {
            out.push(
                Problem::new(at("downloaderImage"), format!("invalid image {i:?}: {e}"))
                    .help("write one image reference with the `hf` CLI, for example \"vllm/vllm-openai:v0.11.0\""),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::v1alpha2::{Adapter, Autoscaling};

    fn base() -> InferenceServiceSpec {
        crate::model::conversion::sample_spec()
    }

    fn with_adapters(adapters: &[(&str, &str)]) -> InferenceServiceSpec {
        let mut s = base();
        s.adapters = adapters.iter().map(|(n, s)| Adapter { name: n.to_string(), source: s.to_string() }).collect();
        s
    }

    fn with_scaling(replicas: Option<i32>, autoscaling: Option<(i32, i32, i32)>) -> InferenceServiceSpec {
        let mut s = base();
        s.replicas = replicas;
        s.autoscaling = autoscaling.map(|(min, max, t)| Autoscaling { min, max, target_queue_length: t });
        s
    }

    fn with_nodes(gpus: i32, nodes: i32) -> InferenceServiceSpec {
        let mut s = base();
        s.gpus_per_replica = gpus;
        s.nodes_per_replica = nodes;
        s
    }

    #[test]
    fn names_must_be_labels_unique_and_not_the_base_model() {
        let s =
            with_adapters(&[("sql", "org/a"), ("sql", "org/b"), ("Chat_1", "org/c"), ("meta-llama", "s3://bucket/x")]);
        let msgs: Vec<String> = adapters(&s).into_iter().map(|p| p.message).collect();
        assert_eq!(
            msgs,
            [
                "adapter \"sql\" is listed twice (first as adapters[0])",
                "invalid adapter name \"Chat_1\": must consist of lower case alphanumeric characters or '-'",
                "adapter \"meta-llama\": source \"s3://bucket/x\" is a URL; vLLM does not download adapters from s3:// URLs",
            ]
        );
        let mut s = with_adapters(&[("llama", "org/a")]);
        s.base_model = "llama".into();
        assert_eq!(adapters(&s)[0].message, "adapter \"llama\" has the name of the base model");
    }

    #[test]
    fn exactly_one_of_replicas_and_autoscaling_and_min_not_above_max() {
        let msgs = |s| autoscaling(&s).into_iter().map(|p| p.message).collect::<Vec<_>>();
        assert_eq!(msgs(with_scaling(None, None)), ["give spec.replicas or spec.autoscaling"]);
        assert_eq!(msgs(with_scaling(Some(1), Some((1, 2, 3)))), ["give spec.replicas or spec.autoscaling, not both"]);
        assert_eq!(msgs(with_scaling(None, Some((5, 3, 1)))), ["autoscaling.min (5) is above autoscaling.max (3)"]);
        assert!(msgs(with_scaling(None, Some((3, 3, 1)))).is_empty());
    }

    #[test]
    fn engine_inputs_leave_isvcs_own_alone() {
        let msgs = |s: &InferenceServiceSpec| engine(s).into_iter().map(|p| p.message).collect::<Vec<_>>();
        let mut s = with_adapters(&[("sql", "org/a")]);
        s.args = vec!["serve".into(), "-tp".into(), "2".into(), "--max-model-len=8192".into()];
        s.served_model_name = Some("sql".into());
        s.revision = Some("--main".into());
        s.env = vec![
            k8s_openapi::api::core::v1::EnvVar { name: "TMPDIR".into(), ..Default::default() },
            k8s_openapi::api::core::v1::EnvVar { name: "HUGGING_FACE_HUB_TOKEN".into(), ..Default::default() },
            k8s_openapi::api::core::v1::EnvVar { name: "A".into(), value: Some("1".into()), ..Default::default() },
            k8s_openapi::api::core::v1::EnvVar { name: "A".into(), value: Some("2".into()), ..Default::default() },
        ];
        assert_eq!(
            msgs(&s),
            [
                "\"serve\" is not an option; spec.args are vLLM options",
                "argument --tensor-parallel-size is set by isvc; it cannot be in spec.args",
                "environment variable TMPDIR is set by isvc",
                "HUGGING_FACE_HUB_TOKEN is the old name of HF_TOKEN",
                "environment variable A is listed twice (first as env[2])",
                "invalid revision \"--main\": give a commit id, branch or tag",
                "servedModelName \"sql\" is also the name of an adapter",
            ]
        );
        let mut ok = base();
        ok.args = vec!["--max-model-len".into(), "32768".into(), "--enable-auto-tool-choice".into()];
        ok.revision = Some("0e9e39f249a16976918f6564b8830bc894c89659".into());
        ok.served_model_name = Some("llama".into());
        assert!(msgs(&ok).is_empty());
    }

    #[test]
    fn durations_follow_the_gateway_api() {
        assert!(is_gateway_duration("300s") && is_gateway_duration("1h30m") && is_gateway_duration("500ms"));
        assert!(!is_gateway_duration("5 m") && !is_gateway_duration("") && !is_gateway_duration("1.5s"));
    }

    #[test]
    fn prometheus_durations() {
        for ok in ["30s", "1m", "1h30m", "500ms", "0", "1m30s500ms"] {
            assert!(is_prometheus_duration(ok), "{ok}");
        }
        for bad in ["", "30", "1.5s", "30s1m", "1mm"] {
            assert!(!is_prometheus_duration(bad), "{bad}");
        }
    }

    #[test]
    fn gpus_split_evenly_over_at_most_eight_per_node() {
        let msgs = |s| multinode(&s).into_iter().map(|p| p.message).collect::<Vec<_>>();
        assert!(msgs(with_nodes(16, 2)).is_empty());
        assert_eq!(msgs(with_nodes(12, 5)), ["gpusPerReplica (12) does not split evenly over nodesPerReplica (5)"]);
        assert_eq!(msgs(with_nodes(16, 1)), ["gpusPerReplica (16) over 1 node(s) is 16 GPUs per node, more than 8"]);
        assert_eq!(
            multinode(&with_nodes(16, 1))[0].help.as_deref(),
            Some("a replica larger than one node spans several: set nodesPerReplica to 2")
        );
    }
}
