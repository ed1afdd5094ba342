//! Gateway registration: a service's `gateway.route` becomes a Gateway API
//! HTTPRoute (`gateway.networking.k8s.io/v1`) attached to the platform's
//! Gateway.
//!
//! Where the platform enables the Gateway API Inference Extension, the
//! route's backend is an InferencePool (`inference.networking.k8s.io/v1`)
//! selecting the service's serving pods, whose endpoint picker chooses a pod
//! per request (by queue length, loaded adapters, prefix cache); and a
//! service's `gateway.priority` becomes an InferenceObjective
//! (`llm-d.ai/v1alpha2`: llm-d took the API over when the extension dropped
//! it), which requests select with the `x-gateway-inference-objective`
//! header. Without the extension the backend is the service's Service.
//!
//! A route is a hostname, a path prefix, or both; no two services may claim
//! the same one.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::base::diagnostics::Diagnostic;
use crate::load::LoadedService;
use crate::model::platform::Platform;
use crate::model::v1alpha2::{InferenceServiceSpec, Problem, spec_path};

pub const ROUTE_API_VERSION: &str = "gateway.networking.k8s.io/v1";
pub const POOL_GROUP: &str = "inference.networking.k8s.io";
pub const POOL_API_VERSION: &str = "inference.networking.k8s.io/v1";
pub const OBJECTIVE_API_VERSION: &str = "llm-d.ai/v1alpha2";

/// The platform's Gateway: present, services may name a `gateway.route`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GatewayConfig {
    /// The Gateway every route attaches to. Its listeners must allow routes
    /// from the services' namespaces (`allowedRoutes`).
    pub parent_ref: ParentRef,
    /// Register services with the Gateway API Inference Extension: an
    /// InferencePool per service as the route's backend, and an
    /// InferenceObjective for a service's `gateway.priority`.
    #[serde(default)]
    pub inference_extension: bool,
    /// The endpoint picker each InferencePool calls (deployed with the
    /// extension, one per pool).
    #[serde(default)]
    pub endpoint_picker: EndpointPicker,
    /// Longest a request may take at the Gateway (a Gateway API duration,
    /// `300s`); left out, the Gateway's default, which may cut long
    /// generations short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub request_timeout: Option<String>,
}

/// A Gateway: its name and namespace, and optionally one listener.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParentRef {
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The Gateway's namespace; the service's own when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
    /// One listener of the Gateway; all of them when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub section_name: Option<String>,
}

/// How an InferencePool reaches its endpoint picker: the Service
/// `<service><serviceSuffix>` on `port`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EndpointPicker {
    /// Appended to the service name to name the picker's Service.
    pub service_suffix: String,
    /// The picker's gRPC port.
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// What the Gateway does when the picker does not answer: `FailClose`
    /// (reject) or `FailOpen` (route anyway).
    pub failure_mode: FailureMode,
}

impl Default for EndpointPicker {
    fn default() -> EndpointPicker {
        EndpointPicker { service_suffix: "-epp".to_string(), port: 9002, failure_mode: FailureMode::FailClose }
    }
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum FailureMode {
    FailClose,
    FailOpen,
}

/// A parsed route: an optional hostname and a path prefix (`/` for all).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Route {
    pub host: Option<String>,
    pub path: String,
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.host, self.path.as_str()) {
            (Some(h), "/") => write!(f, "{h}"),
            (Some(h), p) => write!(f, "{h}{p}"),
            (None, p) => write!(f, "{p}"),
        }
    }
}

/// Parses `host`, `/path` or `host/path`. A trailing `/` is dropped, so
/// `a.example.com/x/` and `a.example.com/x` are the same route.
pub fn parse_route(text: &str) -> Result<Route, String> {
    let (host, path) = match text.find('/') {
        Some(0) => (None, text),
        Some(i) => (Some(&text[..i]), &text[i..]),
        None => (Some(text), "/"),
    };
    if let Some(h) = host {
        check_hostname(h)?;
    }
    check_path(path)?;
    let path = if path.len() > 1 { path.trim_end_matches('/') } else { path };
    Ok(Route { host: host.map(str::to_string), path: path.to_string() })
}

fn check_hostname(host: &str) -> Result<(), String> {
    let name = host.strip_prefix("*.").unwrap_or(host);
    crate::base::names::dns1123_subdomain(name).map_err(|e| format!("hostname \"{host}\": {e}"))?;
    if name.split('.').all(|l| l.bytes().all(|b| b.is_ascii_digit())) {
        return Err(format!("hostname \"{host}\" is an IP address; a route needs a hostname"));
    }
    Ok(())
}

/// The Gateway API's rules for a path prefix.
fn check_path(path: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("path \"{path}\" {why}"));
    if path.len() > 1024 {
        return bad("is longer than 1024 characters");
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-/._~!$&'()*+,;=:@%".contains(c);
    if let Some(c) = path.chars().find(|c| !allowed(*c)) {
        return bad(&format!("must not contain {c:?}"));
    }
    for part in ["//", "/./", "/../", "%2f", "%2F"] {
        if path.contains(part) {
            return bad(&format!("must not contain \"{part}\""));
        }
    }
    if path.ends_with("/..") || path.ends_with("/.") {
        return bad("must not end with \"/.\" or \"/..\"");
    }
    Ok(())
}

/// A route that does not parse.
pub fn check(spec: &InferenceServiceSpec) -> Vec<Problem> {
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
pub fn check_services(
    services: &[LoadedService],
    platform: &Platform,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
) -> Vec<Diagnostic> {
    let key = |k: &str| crate::base::yaml::PathSegment::Key(k.to_string());
    let mut out = Vec::new();
    let mut claimed: BTreeMap<Route, &LoadedService> = BTreeMap::new();
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
        match claimed.get(&route) {
            Some(first) => out.push(
                Diagnostic::error(format!(
                    "route \"{route}\" is claimed by two services: {}/{} in {} and {}/{} in {}",
                    first.service.namespace_or_default(),
                    first.service.name(),
                    label(first),
                    s.service.namespace_or_default(),
                    s.service.name(),
                    label(s)
                ))
                .at(at("route"))
                .related(first.location(&[key("spec"), key("gateway"), key("route")]), "claimed here first")
                .help("give each service its own hostname or path prefix"),
            ),
            None => {
                claimed.insert(route, s);
            }
        }
    }
    out
}

/// Problems in the platform's `gateway` section, with the path of the field.
pub fn check_platform(platform: &Platform) -> Vec<(Vec<crate::base::yaml::PathSegment>, String)> {
    let key = |k: &str| crate::base::yaml::PathSegment::Key(k.to_string());
    let Some(g) = &platform.gateway else { return Vec::new() };
    let mut out = Vec::new();
    if let Err(e) = crate::base::names::dns1123_subdomain(&g.parent_ref.name) {
        out.push((
            vec![key("gateway"), key("parentRef"), key("name")],
            format!("invalid Gateway name \"{}\": {e}", g.parent_ref.name),
        ));
    }
    if let Some(ns) = &g.parent_ref.namespace {
        if let Err(e) = crate::base::names::dns1123_label(ns) {
            out.push((
                vec![key("gateway"), key("parentRef"), key("namespace")],
                format!("invalid namespace \"{ns}\": {e}"),
            ));
        }
    }
    if let Some(t) = &g.request_timeout {
        if !is_gateway_duration(t) {
            out.push((
                vec![key("gateway"), key("requestTimeout")],
                format!("\"{t}\" is not a Gateway API duration (for example 300s, 5m, 1h30m)"),
            ));
        }
    }
    if g.inference_extension {
        let epp = format!("x{}", g.endpoint_picker.service_suffix);
        if crate::base::names::dns1035_label(&epp).is_err() || epp.len() > 40 {
            out.push((
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

/// What a service's gateway objects need.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GatewayPlan {
    pub parent_ref: ParentRef,
    /// The route's hostname, if it names one.
    pub hostnames: Vec<String>,
    /// The path prefix the route matches.
    pub path: String,
    /// Whether the prefix is replaced by `/` before the request reaches vLLM.
    pub rewrite: bool,
    pub backend: BackendRef,
    pub request_timeout: Option<String>,
    /// The InferencePool, where the platform enables the extension.
    pub pool: Option<PoolPlan>,
    /// The InferenceObjective's priority, where the pool exists.
    pub priority: Option<i32>,
}

/// The route's backend: the InferencePool, or the Service and its port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendRef {
    pub group: String,
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

/// The InferencePool's endpoint picker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PoolPlan {
    pub endpoint_picker: String,
    pub endpoint_picker_port: i32,
    pub failure_mode: FailureMode,
}

/// The gateway plan of a service that names a route the platform can serve.
pub fn plan(spec: &InferenceServiceSpec, config: Option<&GatewayConfig>, name: &str, port: i32) -> Option<GatewayPlan> {
    let g = spec.gateway.as_ref()?;
    let config = config?;
    let route = parse_route(&g.route).ok()?;
    let pool = config.inference_extension.then(|| PoolPlan {
        endpoint_picker: format!("{name}{}", config.endpoint_picker.service_suffix),
        endpoint_picker_port: config.endpoint_picker.port,
        failure_mode: config.endpoint_picker.failure_mode,
    });
    let backend = match &pool {
        Some(_) => BackendRef {
            group: POOL_GROUP.to_string(),
            kind: "InferencePool".to_string(),
            name: name.to_string(),
            port: None,
        },
        None => {
            BackendRef { group: String::new(), kind: "Service".to_string(), name: name.to_string(), port: Some(port) }
        }
    };
    Some(GatewayPlan {
        parent_ref: config.parent_ref.clone(),
        hostnames: route.host.iter().cloned().collect(),
        rewrite: route.path != "/",
        path: route.path,
        backend,
        request_timeout: config.request_timeout.clone(),
        priority: pool.as_ref().and(g.priority),
        pool,
    })
}

/// Where clients reach a service: its route, or the Service's address.
pub fn endpoint(spec: &InferenceServiceSpec, name: &str, namespace: &str, port: i32) -> String {
    match spec.gateway.as_ref().and_then(|g| parse_route(&g.route).ok()) {
        Some(route) => route.to_string(),
        None => format!("http://{name}.{namespace}.svc:{port}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_a_host_a_prefix_or_both() {
        let r = |s| parse_route(s).map(|r| (r.host, r.path));
        assert_eq!(r("llm.example.com"), Ok((Some("llm.example.com".into()), "/".into())));
        assert_eq!(r("/qwen3/"), Ok((None, "/qwen3".into())));
        assert_eq!(r("llm.example.com/a/b"), Ok((Some("llm.example.com".into()), "/a/b".into())));
        assert_eq!(r("*.llm.example.com"), Ok((Some("*.llm.example.com".into()), "/".into())));
        assert_eq!(parse_route("llm.example.com/x/").unwrap(), parse_route("llm.example.com/x").unwrap());
        assert_eq!(parse_route("llm.example.com/x").unwrap().to_string(), "llm.example.com/x");
    }

    #[test]
    fn bad_routes_say_why() {
        assert_eq!(
            parse_route("LLM.example.com").unwrap_err(),
            "hostname \"LLM.example.com\": \"LLM\" must consist of lower case alphanumeric characters or '-'"
        );
        assert_eq!(
            parse_route("10.0.0.1/x").unwrap_err(),
            "hostname \"10.0.0.1\" is an IP address; a route needs a hostname"
        );
        assert_eq!(parse_route("/a//b").unwrap_err(), "path \"/a//b\" must not contain \"//\"");
        assert_eq!(parse_route("/a b").unwrap_err(), "path \"/a b\" must not contain ' '");
    }

    #[test]
    fn durations_follow_the_gateway_api() {
        assert!(is_gateway_duration("300s") && is_gateway_duration("1h30m") && is_gateway_duration("500ms"));
        assert!(!is_gateway_duration("5 m") && !is_gateway_duration("") && !is_gateway_duration("1.5s"));
    }
}
