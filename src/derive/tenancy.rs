//! Multi-tenancy: what a platform's tenants add to the cluster, where each
//! service belongs, and the quota arithmetic the API server would otherwise
//! do at run time.
//!
//! Per tenant namespace: a Namespace, a ResourceQuota with exactly the
//! declared hard limits, a LimitRange that fills in container requests, and
//! a NetworkPolicy that admits only the tenant's own namespaces and the
//! platform's `network.allowFrom`. Per priority tier: a PriorityClass.
//!
//! Everything here is pure: platform and services in, objects and
//! diagnostics out.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::base::diagnostics::Diagnostic;
use crate::base::quantity::Quantity;
use crate::base::yaml::PathSegment;
use crate::derive::DesiredService;
use crate::load::LoadedService;
use crate::model::labels::*;
use crate::model::objects::{Object, ObjectId};
use crate::model::platform::{Platform, PriorityTier, Tenant};

/// Name of the NetworkPolicy in every isolated tenant namespace.
pub const ISOLATION_POLICY: &str = "tenant-isolation";
/// Name of the LimitRange in every tenant namespace.
pub const LIMIT_RANGE: &str = "container-limits";

/// Where a service lands: its tenant, priority tier and Kueue queue.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Placement {
    pub tenant: Option<String>,
    /// Tier name (the PriorityClass name) and its settings.
    pub tier: Option<(String, PriorityTier)>,
    /// LocalQueue name, when the tenant uses Kueue for this service.
    pub queue: Option<String>,
}

/// Resolves a service's placement; errors name the offending field.
pub fn place(
    service: &crate::model::v1alpha2::InferenceService,
    platform: &Platform,
) -> Result<Placement, (Vec<&'static str>, String)> {
    let ns = service.namespace_or_default();
    let Some(tenant) = platform.tenant_of(ns) else {
        if let Some(p) = &service.spec.priority {
            return Err((
                vec!["spec", "priority"],
                format!("priority \"{p}\" needs a tenant, but namespace \"{ns}\" belongs to none"),
            ));
        }
        if let Some(q) = &service.spec.queue {
            return Err((
                vec!["spec", "queue"],
                format!("queue \"{q}\" needs a tenant, but namespace \"{ns}\" belongs to none"),
            ));
        }
        return Ok(Placement::default());
    };
    let tiers = platform.tiers();
    let tier_name = match &service.spec.priority {
        Some(p) => p.clone(),
        None => tenant.default_tier(&tiers).unwrap_or_default(),
    };
    let Some(tier) = tiers.get(&tier_name) else {
        let names: Vec<&str> = tiers.keys().map(String::as_str).collect();
        return Err((
            vec!["spec", "priority"],
            format!("unknown priority \"{tier_name}\"; the platform declares {}", names.join(", ")),
        ));
    };
    if !tenant.allows(&tier_name) {
        return Err((
            vec!["spec", "priority"],
            format!(
                "tenant \"{}\" may not use priority \"{tier_name}\"; it may use {}",
                tenant.name,
                tenant.priorities.join(", ")
            ),
        ));
    }
    let queue = match &service.spec.queue {
        Some(q) if tenant.queues.iter().any(|x| &x.name == q) => Some(q.clone()),
        Some(q) => {
            let names: Vec<&str> = tenant.queues.iter().map(|x| x.name.as_str()).collect();
            let have = if names.is_empty() { "none".to_string() } else { names.join(", ") };
            return Err((
                vec!["spec", "queue"],
                format!("tenant \"{}\" has no queue \"{q}\" (it has {have})", tenant.name),
            ));
        }
        None => {
            tenant.queues.iter().find(|x| x.priority.as_deref() == Some(tier_name.as_str())).map(|x| x.name.clone())
        }
    };
    Ok(Placement { tenant: Some(tenant.name.clone()), tier: Some((tier_name, tier.clone())), queue })
}

fn managed_labels(extra: &[(&str, &str)]) -> Value {
    let mut labels = serde_json::Map::new();
    for (k, v) in extra {
        labels.insert(k.to_string(), json!(v));
    }
    labels.insert(MANAGED_BY.0.to_string(), json!(MANAGED_BY.1));
    Value::Object(labels)
}

fn quantities(map: &BTreeMap<String, crate::model::platform::QuantityText>) -> Value {
    Value::Object(map.iter().map(|(k, v)| (k.clone(), json!(v.0))).collect())
}

/// The cluster objects of the platform's tenants and tiers.
pub fn objects(platform: &Platform, source: Option<&str>) -> Vec<Object> {
    let mut out = Vec::new();
    if platform.tenants.is_empty() {
        return out;
    }
    let object = |api_version: &str, kind: &str, ns: Option<&str>, name: &str, value: Value| Object {
        id: ObjectId::new(api_version, kind, ns, name),
        value,
        owner: None,
        source: source.map(str::to_string),
        cluster: None,
        bootstrap: false,
    };
    for (tier_name, tier) in platform.tiers() {
        let name = platform.priority_class(&tier_name);
        let mut value = json!({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name, "labels": managed_labels(&[])},
            "value": tier.value,
            "globalDefault": false,
            "preemptionPolicy": if tier.preempt { "PreemptLowerPriority" } else { "Never" },
        });
        if let Some(d) = &tier.description {
            value["description"] = json!(d);
        }
        if tier.preemptible {
            value["metadata"]["annotations"] = json!({PREEMPTIBLE_ANNOTATION: "true"});
        }
        out.push(object("scheduling.k8s.io/v1", "PriorityClass", None, &name, value));
    }
    for tenant in &platform.tenants {
        for ns in tenant.namespace_list() {
            let labels = managed_labels(&[(TENANT_LABEL, &tenant.name)]);
            out.push(object(
                "v1",
                "Namespace",
                None,
                &ns,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
                    "name": ns, "labels": labels.clone(),
                    // Removing a tenant must not delete its Secrets and caches.
                    "annotations": PRUNE_PROTECTION.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                }}),
            ));
            if !tenant.quota.is_empty() {
                out.push(object(
                    "v1",
                    "ResourceQuota",
                    Some(&ns),
                    &tenant.name,
                    json!({
                        "apiVersion": "v1", "kind": "ResourceQuota",
                        "metadata": {"name": tenant.name, "namespace": ns, "labels": labels.clone()},
                        "spec": {"hard": quantities(&tenant.quota)},
                    }),
                ));
            }
            let mut limit = serde_json::Map::new();
            limit.insert("type".into(), json!("Container"));
            let (default_limit, default_request) = limit_defaults(&tenant.limits);
            for (key, map) in
                [("default", &default_limit), ("defaultRequest", &default_request), ("max", &tenant.limits.max)]
            {
                if !map.is_empty() {
                    limit.insert(key.into(), quantities(map));
                }
            }
            if limit.len() > 1 {
                out.push(object(
                    "v1",
                    "LimitRange",
                    Some(&ns),
                    LIMIT_RANGE,
                    json!({
                        "apiVersion": "v1", "kind": "LimitRange",
                        "metadata": {"name": LIMIT_RANGE, "namespace": ns, "labels": labels.clone()},
                        "spec": {"limits": [Value::Object(limit)]},
                    }),
                ));
            }
            if tenant.isolation {
                out.push(object(
                    "networking.k8s.io/v1",
                    "NetworkPolicy",
                    Some(&ns),
                    ISOLATION_POLICY,
                    isolation(tenant, &ns, platform, &labels),
                ));
            }
        }
    }
    out
}

/// The default limits and requests of a tenant's LimitRange: as declared,
/// plus 0 for every extended resource (`nvidia.com/gpu`) in `max` that has
/// none. Without a default, the API server makes the max the default limit
/// and request (kubernetes/kubernetes `pkg/apis/core/v1/defaults.go`,
/// `SetDefaults_LimitRangeItem`), and LimitRanger gives every container that
/// sets no GPU limit (a sidecar, a debug pod) the maximum of GPUs.
pub fn limit_defaults(
    limits: &crate::model::platform::ContainerLimits,
) -> (BTreeMap<String, crate::model::platform::QuantityText>, BTreeMap<String, crate::model::platform::QuantityText>) {
    let mut default_limit = limits.default_limit.clone();
    let mut default_request = limits.default_request.clone();
    let extended = |r: &str| r.split_once('/').is_some_and(|(domain, _)| !domain.ends_with("kubernetes.io"));
    for r in limits.max.keys().filter(|r| extended(r)) {
        if !default_limit.contains_key(r) {
            default_limit.insert(r.clone(), "0".into());
            default_request.entry(r.clone()).or_insert_with(|| "0".into());
        }
    }
    (default_limit, default_request)
}

/// Ingress only from the tenant's own namespaces, and from the platform's
/// `allowFrom` namespaces to the serving port.
fn isolation(tenant: &Tenant, ns: &str, platform: &Platform, labels: &Value) -> Value {
    let mut ingress = vec![json!({"from": [{"namespaceSelector": {"matchLabels": {TENANT_LABEL: tenant.name}}}]})];
    if !platform.network.allow_from.is_empty() {
        ingress.push(json!({
            "from": [{"namespaceSelector": {"matchExpressions": [{
                "key": "kubernetes.io/metadata.name", "operator": "In", "values": platform.network.allow_from,
            }]}}],
            "ports": [{"protocol": "TCP", "port": platform.defaults.port}],
        }));
    }
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": ISOLATION_POLICY, "namespace": ns, "labels": labels},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": ingress},
    })
}

/// How much of a quota key one service takes, per pod and in pods.
struct Usage {
    per_pod: Option<Quantity>,
    per_object: Option<Quantity>,
}

fn usage(key: &str, d: &DesiredService) -> Option<Usage> {
    let q = |s: &str| Quantity::parse(s).ok();
    let one = Some(Quantity::parse("1").unwrap_or_else(|_| Quantity::zero()));
    let (resource, from_limits) = match key {
        "pods" | "count/pods" => return Some(Usage { per_pod: one, per_object: None }),
        "count/deployments.apps" => {
            let deployment = d.workload.kind == crate::derive::DEPLOYMENT.kind;
            return Some(Usage { per_pod: None, per_object: if deployment { one } else { None } });
        }
        "services" | "count/services" => return Some(Usage { per_pod: None, per_object: one }),
        "count/horizontalpodautoscalers.autoscaling" => {
            return Some(Usage { per_pod: None, per_object: if d.autoscaler.is_some() { one } else { None } });
        }
        k if k.starts_with("limits.") => (&k["limits.".len()..], true),
        k if k.starts_with("requests.") => (&k["requests.".len()..], false),
        "cpu" | "memory" | "ephemeral-storage" => (key, false),
        _ => return None,
    };
    let map = if from_limits { &d.container.limits } else { &d.container.requests };
    // Extended resources (GPUs) have requests equal to limits.
    let value = map.get(resource).or_else(|| d.container.limits.get(resource).filter(|_| resource.contains('/')));
    Some(Usage { per_pod: Some(value.and_then(|v| q(v)).unwrap_or_else(Quantity::zero)), per_object: None })
}

/// Compile-time quota arithmetic for every tenant namespace: at steady state
/// (replicas) and at the autoscalers' maximum (preemptible tiers left out),
/// a rollout's surge, and requests a quota demands but nothing provides.
pub fn check_quotas(
    services: &[(&LoadedService, &DesiredService)],
    platform: &Platform,
    platform_file: Option<&str>,
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let tiers = platform.tiers();
    for tenant in &platform.tenants {
        for ns in tenant.namespace_list() {
            let in_ns: Vec<&(&LoadedService, &DesiredService)> =
                services.iter().filter(|(_, d)| d.namespace == ns).collect();
            if in_ns.is_empty() {
                continue;
            }
            for (key, hard) in &tenant.quota {
                let Ok(hard) = Quantity::parse(hard) else { continue };
                missing_requests(tenant, &ns, key, &in_ns, &mut diags);
                for mode in [Mode::Steady, Mode::Peak] {
                    let mut entries = Vec::new();
                    for (s, d) in &in_ns {
                        let preemptible = d.priority.as_ref().and_then(|p| tiers.get(p)).is_some_and(|t| t.preemptible);
                        if mode == Mode::Peak && preemptible {
                            continue;
                        }
                        let Some(u) = usage(key, d) else { continue };
                        let pods = match mode {
                            Mode::Steady => i64::from(d.steady_replicas()),
                            Mode::Peak => i64::from(d.peak_pods()),
                        };
                        let amount = match (&u.per_pod, &u.per_object) {
                            (Some(p), _) => p.times(pods),
                            (None, Some(o)) => o.clone(),
                            (None, None) => continue,
                        };
                        entries.push((*s, *d, amount, pods));
                    }
                    if let Some(d) = exceeded(&tenant.name, &ns, key, &hard, mode, &entries, platform_file) {
                        diags.push(d);
                    }
                }
                surge(tenant, &ns, key, &hard, &in_ns, &mut diags);
            }
        }
    }
    diags
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Steady,
    Peak,
}

fn exceeded(
    quota: &str,
    ns: &str,
    key: &str,
    hard: &Quantity,
    mode: Mode,
    entries: &[(&LoadedService, &DesiredService, Quantity, i64)],
    platform_file: Option<&str>,
) -> Option<Diagnostic> {
    let mut used = Quantity::zero();
    for (i, (s, _, amount, _)) in entries.iter().enumerate() {
        let next = used.plus(amount);
        if next > *hard {
            let total = entries.iter().fold(Quantity::zero(), |acc, e| acc.plus(&e.2));
            let when = match mode {
                Mode::Steady => "At steady state (replicas)",
                Mode::Peak => "At the autoscalers' maximum (3 x replicas, preemptible tiers left out)",
            };
            let where_ = match mode {
                Mode::Steady => "at steady state",
                Mode::Peak => "at the autoscalers' maximum",
            };
            let mut d = Diagnostic::error(format!(
                "exceeded quota: {quota}, requested: {key}={amount}, used: {key}={used}, limited: {key}={hard} (namespace {ns}, {where_})"
            ))
            .at(s.location(&[PathSegment::Key("spec".into()), PathSegment::Key("replicas".into())]));
            for (other, od, oamount, pods) in entries.iter().take(i) {
                let pods = if *pods == 1 { "1 pod".to_string() } else { format!("{pods} pods") };
                d = d.related(
                    other.location(&[PathSegment::Key("spec".into()), PathSegment::Key("replicas".into())]),
                    format!("{} uses {key}={oamount} ({pods})", od.name),
                );
            }
            let file = platform_file.unwrap_or("the platform file");
            return Some(d.help(format!(
                "{when}, namespace {ns} needs {key}={total}; raise tenant \"{quota}\"'s quota in {file}, or lower replicas or gpusPerReplica"
            )));
        }
        used = next;
    }
    None
}

/// A rolling update starts `maxSurge` extra pods; at steady state they must
/// fit the quota or the rollout never makes progress.
fn surge(
    tenant: &Tenant,
    ns: &str,
    key: &str,
    hard: &Quantity,
    in_ns: &[&(&LoadedService, &DesiredService)],
    diags: &mut Vec<Diagnostic>,
) {
    let steady = in_ns
        .iter()
        .filter_map(|(_, d)| usage(key, d).and_then(|u| u.per_pod.map(|p| p.times(i64::from(d.steady_replicas())))));
    let total = steady.fold(Quantity::zero(), |a, b| a.plus(&b));
    if total > *hard {
        return; // already reported as exceeded at steady state
    }
    for (s, d) in in_ns {
        if d.rollout.max_surge == 0 || d.steady_replicas() == 0 {
            continue;
        }
        let Some(per_pod) = usage(key, d).and_then(|u| u.per_pod) else { continue };
        let extra = per_pod.times(i64::from(d.rollout.max_surge));
        if total.plus(&extra) > *hard {
            diags.push(
                Diagnostic::error(format!(
                    "rollout of {ns}/{} cannot make progress under quota {}: its surge of {} pod(s) needs {key}={extra} \
                     on top of {total} at steady state, limited: {key}={hard}",
                    d.name, tenant.name, d.rollout.max_surge
                ))
                .at(s.location(&[PathSegment::Key("spec".into()), PathSegment::Key("replicas".into())]))
                .help("set defaults.rollout.maxSurge: 0 in the platform file, or leave room in the quota"),
            );
        }
    }
}

/// With a quota on `requests.X` or `limits.X`, a container that sets no X
/// and gets no LimitRange default is rejected: "must specify X".
fn missing_requests(
    tenant: &Tenant,
    ns: &str,
    key: &str,
    in_ns: &[&(&LoadedService, &DesiredService)],
    diags: &mut Vec<Diagnostic>,
) {
    let (resource, limits) = match key.split_once('.') {
        Some(("requests", r)) => (r, false),
        Some(("limits", r)) => (r, true),
        _ => return,
    };
    let lr = if limits { &tenant.limits.default_limit } else { &tenant.limits.default_request };
    for (s, d) in in_ns {
        let set = if limits {
            d.container.limits.contains_key(resource)
        } else {
            d.container.requests.contains_key(resource)
        };
        // Extended resources: a limit implies the request.
        let implied = !limits && resource.contains('/') && d.container.limits.contains_key(resource);
        if !set && !implied && !lr.contains_key(resource) {
            diags.push(
                Diagnostic::error(format!("pods of {ns}/{} would be rejected: failed quota: {}: must specify {key}", d.name, tenant.name))
                    .at(s.location(&[PathSegment::Key("spec".into()), PathSegment::Key("replicas".into())]))
                    .help(format!(
                        "give tenant \"{}\" a LimitRange default for {resource} (limits.{}), or set it in the platform's defaults",
                        tenant.name,
                        if limits { "defaultLimit" } else { "defaultRequest" }
                    )),
            );
        }
    }
}

/// Requests above the tenant's LimitRange maximum are rejected by the API server.
pub fn check_limits(services: &[(&LoadedService, &DesiredService)], platform: &Platform) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for (s, d) in services {
        let Some(tenant) = platform.tenant_of(&d.namespace) else { continue };
        for (resource, max) in &tenant.limits.max {
            let Ok(max) = Quantity::parse(max) else { continue };
            for (what, map) in [("request", &d.container.requests), ("limit", &d.container.limits)] {
                let Some(value) = map.get(resource).and_then(|v| Quantity::parse(v).ok()) else { continue };
                if value > max {
                    diags.push(
                        Diagnostic::error(format!(
                            "pods of {}/{} would be rejected: maximum {resource} usage per Container is {max}, but {what} is {value}",
                            d.namespace, d.name
                        ))
                        .at(s.location(&[PathSegment::Key("spec".into()), PathSegment::Key("replicas".into())]))
                        .help(format!("lower gpusPerReplica, or raise tenant \"{}\"'s limits.max.{resource}", tenant.name)),
                    );
                    break;
                }
            }
        }
    }
    diags
}

/// One row of a namespace's quota table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaUsage {
    pub cluster: Option<String>,
    pub namespace: String,
    pub quota: String,
    pub key: String,
    /// At steady state (replicas).
    pub steady: String,
    /// At the autoscalers' maximum, preemptible tiers left out.
    pub peak: String,
    pub hard: String,
}

/// What every tenant namespace's services use of each quota key, as
/// `kubectl describe quota` would show it once they run.
pub fn quota_usage(services: &[(&LoadedService, &DesiredService)], platform: &Platform) -> Vec<QuotaUsage> {
    let tiers = platform.tiers();
    let mut rows = Vec::new();
    for tenant in &platform.tenants {
        for ns in tenant.namespace_list() {
            for (key, hard) in &tenant.quota {
                let (mut steady, mut peak) = (Quantity::zero(), Quantity::zero());
                let mut known = true;
                for (_, d) in services.iter().filter(|(_, d)| d.namespace == ns) {
                    let Some(u) = usage(key, d) else {
                        known = false;
                        break;
                    };
                    let preemptible = d.priority.as_ref().and_then(|p| tiers.get(p)).is_some_and(|t| t.preemptible);
                    let max = d.autoscaler.as_ref().map_or(d.steady_replicas(), |a| a.max_replicas);
                    let (s, p) = match (&u.per_pod, &u.per_object) {
                        (Some(per), _) => (per.times(i64::from(d.steady_replicas())), per.times(i64::from(max))),
                        (None, Some(o)) => (o.clone(), o.clone()),
                        (None, None) => (Quantity::zero(), Quantity::zero()),
                    };
                    steady = steady.plus(&s);
                    // Objects exist at peak whatever their tier; pods of
                    // preemptible tiers give way to online ones.
                    if !preemptible || u.per_pod.is_none() {
                        peak = peak.plus(&p);
                    }
                }
                let shown = |q: &Quantity| if known { q.to_string() } else { "?".to_string() };
                rows.push(QuotaUsage {
                    cluster: None,
                    namespace: ns.clone(),
                    quota: tenant.name.clone(),
                    key: key.clone(),
                    steady: shown(&steady),
                    peak: shown(&peak),
                    hard: hard.0.clone(),
                });
            }
        }
    }
    rows
}

/// The rows as tables, one per namespace, in the layout of `kubectl describe quota`.
pub fn format_quota_table(rows: &[QuotaUsage]) -> String {
    let mut out = String::new();
    let mut groups: BTreeMap<(Option<&str>, &str, &str), Vec<&QuotaUsage>> = BTreeMap::new();
    for r in rows {
        groups.entry((r.cluster.as_deref(), &r.namespace, &r.quota)).or_default().push(r);
    }
    for ((cluster, ns, quota), rows) in groups {
        let place = cluster.map(|c| format!(" (cluster {c})")).unwrap_or_default();
        out.push_str(&format!("Name:       {quota}\nNamespace:  {ns}{place}\n"));
        let header = ["Resource", "Used (steady state)", "Used (HPA maximum)", "Hard"];
        let cells: Vec<[&str; 4]> = rows.iter().map(|r| [r.key.as_str(), &r.steady, &r.peak, &r.hard]).collect();
        let width = |i: usize| cells.iter().map(|c| c[i].len()).chain([header[i].len()]).max().unwrap_or(0);
        let widths = [width(0), width(1), width(2), width(3)];
        let line = |c: [&str; 4]| {
            format!(
                "{:<w0$}  {:<w1$}  {:<w2$}  {}\n",
                c[0],
                c[1],
                c[2],
                c[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            )
        };
        out.push_str(&line(header));
        out.push_str(&line(["--------", "-------------------", "------------------", "----"]));
        for c in cells {
            out.push_str(&line(c));
        }
        out.push('\n');
    }
    if !out.is_empty() {
        out.push_str("(HPA maximum: every autoscaler at maxReplicas; services of preemptible tiers are left out, online work preempts them at peak)\n");
    }
    out
}
