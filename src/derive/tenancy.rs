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

/// The Kueue queue of a namespace's own workloads, which no service names
/// (the model-cache download Jobs): the tenant's queue of its default tier,
/// else its first queue, with the tier's WorkloadPriorityClass when the
/// queue has one. None where the tenant has no queues.
///
/// Such a workload carries the `kueue.x-k8s.io/queue-name` label so Kueue
/// admits it whatever its configuration: with `manageJobsWithoutQueueName:
/// true`, a Job without the label in a managed namespace is suspended and
/// never started (kubernetes-sigs/kueue
/// `site/content/en/docs/tasks/manage/enforce_job_management/manage_jobs_without_queue_name.md`).
pub fn namespace_queue(platform: &Platform, namespace: &str) -> Option<(String, Option<String>)> {
    let tenant = platform.tenant_of(namespace)?;
    let tier = tenant.default_tier(&platform.tiers());
    let queue =
        tenant.queues.iter().find(|q| q.priority.is_some() && q.priority == tier).or_else(|| tenant.queues.first())?;
    Some((queue.name.clone(), queue.priority.as_deref().map(|p| platform.priority_class(p))))
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
    let object = |api_version: &str, kind: &str, ns: Option<&str>, name: &str, value: Value| {
        Object::new(ObjectId::new(api_version, kind, ns, name), value).from_source(source)
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

/// Ingress only from the tenant's own namespaces; from the platform's
/// `allowFrom` namespaces to the serving port (and to the endpoint pickers'
/// metrics port, where the Inference Extension is on: those namespaces are
/// the gateway's and monitoring's); from `monitoring.namespace` to the same
/// ports; and from the Gateway's namespace to the
/// serving port and the pickers' ext-proc port. The Gateway calls the
/// picker of a pool before it sends the request to the pod the picker
/// chose, so both must be open to it.
fn isolation(tenant: &Tenant, ns: &str, platform: &Platform, labels: &Value) -> Value {
    let mut ingress = vec![json!({"from": [{"namespaceSelector": {"matchLabels": {TENANT_LABEL: tenant.name}}}]})];
    let picker = platform.gateway.as_ref().filter(|g| g.inference_extension).map(|g| &g.endpoint_picker);
    let tcp = |port: i32| json!({"protocol": "TCP", "port": port});
    if !platform.network.allow_from.is_empty() {
        let mut ports = vec![tcp(platform.defaults.port)];
        if picker.is_some() {
            ports.push(tcp(crate::derive::gateway::PICKER_METRICS_PORT));
        }
        ingress.push(json!({
            "from": [{"namespaceSelector": {"matchExpressions": [{
                "key": "kubernetes.io/metadata.name", "operator": "In", "values": platform.network.allow_from,
            }]}}],
            "ports": ports,
        }));
    }
    // Prometheus: vLLM's metrics on the serving port, the pickers' on theirs.
    let monitoring_ns = platform.monitoring.as_ref().and_then(|m| m.namespace.as_deref());
    if let Some(mns) = monitoring_ns.filter(|m| !tenant.namespace_list().iter().any(|n| n == m)) {
        let mut ports = vec![tcp(platform.defaults.port)];
        if picker.is_some() {
            ports.push(tcp(crate::derive::gateway::PICKER_METRICS_PORT));
        }
        ingress.push(json!({
            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": mns}}}],
            "ports": ports,
        }));
    }
    let gateway_ns = platform.gateway.as_ref().and_then(|g| g.parent_ref.namespace.as_deref());
    if let Some(gns) = gateway_ns.filter(|g| !tenant.namespace_list().iter().any(|n| n == g)) {
        let mut ports = vec![tcp(platform.defaults.port)];
        if let Some(p) = picker {
            ports.push(tcp(p.port));
        }
        ingress.push(json!({
            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": gns}}}],
            "ports": ports,
        }));
    }
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": ISOLATION_POLICY, "namespace": ns, "labels": labels},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": ingress},
    })
}
