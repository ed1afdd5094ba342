//! Kueue admission (`kueue.x-k8s.io/v1beta2`, the version Kueue stores since
//! v0.16): a ResourceFlavor for the GPU nodes, a WorkloadPriorityClass per
//! tier, a ClusterQueue per tenant queue in the tenant's cohort (borrowing
//! and lending limits, reclaim at peak), and a LocalQueue of the same name in
//! every tenant namespace. Serving Deployments reach their queue through the
//! `kueue.x-k8s.io/queue-name` label that Kueue's `deployment` integration reads.
//!
//! The checks catch what Kueue would otherwise leave Pending forever.

use serde_json::{Value, json};

use crate::model::labels::TENANT_LABEL;
use crate::model::labels::*;
use crate::model::objects::{Object, ObjectId};
use std::collections::BTreeMap;

use crate::model::platform::{Accelerator, Platform, Queue, Tenant};

pub const API_VERSION: &str = "kueue.x-k8s.io/v1beta2";
/// Name of the ClusterQueue behind a tenant's queue.
pub fn cluster_queue(tenant: &Tenant, queue: &Queue) -> String {
    format!("{}-{}", tenant.name, queue.name)
}

pub fn uses_kueue(platform: &Platform) -> bool {
    platform.tenants.iter().any(|t| !t.queues.is_empty())
}

/// The Kueue objects of the platform (none when no tenant declares queues).
pub fn objects(platform: &Platform, source: Option<&str>) -> Vec<Object> {
    if !uses_kueue(platform) {
        return Vec::new();
    }
    let kueue = platform.kueue.clone().unwrap_or_default();
    let labels = json!({MANAGED_BY.0: MANAGED_BY.1});
    let object = |kind: &str, ns: Option<&str>, name: &str, value: Value| {
        Object::new(ObjectId::new(API_VERSION, kind, ns, name), value).from_source(source)
    };
    let mut out = Vec::new();
    let mut flavor_spec = serde_json::Map::new();
    if !kueue.flavor.node_labels.is_empty() {
        flavor_spec.insert("nodeLabels".into(), json!(kueue.flavor.node_labels));
    }
    if !kueue.flavor.tolerations.is_empty() {
        flavor_spec.insert("tolerations".into(), serde_json::to_value(&kueue.flavor.tolerations).unwrap_or_default());
    }
    out.push(object(
        "ResourceFlavor",
        None,
        &kueue.flavor.name,
        json!({"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": kueue.flavor.name, "labels": labels}, "spec": flavor_spec}),
    ));
    // A flavor per accelerator profile that names one: its nodes' labels
    // and taints, so Kueue places the profile's quota on them.
    let mut profile_flavors: BTreeMap<&str, &Accelerator> = BTreeMap::new();
    for a in &platform.accelerators {
        if let Some(f) = a.kueue_flavor.as_deref().filter(|f| *f != kueue.flavor.name) {
            profile_flavors.entry(f).or_insert(a);
        }
    }
    for (name, a) in &profile_flavors {
        let mut spec = serde_json::Map::new();
        if !a.node_selector.is_empty() {
            spec.insert("nodeLabels".into(), json!(a.node_selector));
        }
        if !a.tolerations.is_empty() {
            spec.insert("tolerations".into(), serde_json::to_value(&a.tolerations).unwrap_or_default());
        }
        out.push(object(
            "ResourceFlavor",
            None,
            name,
            json!({"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": name, "labels": labels}, "spec": spec}),
        ));
    }
    for (tier_name, tier) in platform.tiers() {
        let name = platform.priority_class(&tier_name);
        let mut value = json!({
            "apiVersion": API_VERSION, "kind": "WorkloadPriorityClass",
            "metadata": {"name": name, "labels": labels},
            "value": tier.value,
        });
        if let Some(d) = &tier.description {
            value["description"] = json!(d);
        }
        out.push(object("WorkloadPriorityClass", None, &name, value));
    }
    for tenant in &platform.tenants {
        for queue in &tenant.queues {
            let cq = cluster_queue(tenant, queue);
            let resources: Vec<(String, Value)> = queue
                .nominal_quota
                .iter()
                .map(|(r, q)| {
                    let mut entry = json!({"name": r, "nominalQuota": q.0});
                    if let Some(b) = queue.borrowing_limit.as_ref().and_then(|m| m.get(r)) {
                        entry["borrowingLimit"] = json!(b.0);
                    }
                    if let Some(l) = queue.lending_limit.as_ref().and_then(|m| m.get(r)) {
                        entry["lendingLimit"] = json!(l.0);
                    }
                    (r.clone(), entry)
                })
                .collect();
            out.push(object(
                "ClusterQueue",
                None,
                &cq,
                json!({
                    "apiVersion": API_VERSION, "kind": "ClusterQueue",
                    "metadata": {"name": cq, "labels": {MANAGED_BY.0: MANAGED_BY.1, TENANT_LABEL: tenant.name}},
                    "spec": {
                        "cohortName": tenant.cohort_name(),
                        "namespaceSelector": {"matchLabels": {TENANT_LABEL: tenant.name}},
                        "queueingStrategy": "BestEffortFIFO",
                        "preemption": preemption(platform, tenant, queue),
                        "resourceGroups": resource_groups(platform, &kueue.flavor.name, resources),
                    },
                }),
            ));
            for ns in tenant.namespace_list() {
                out.push(object(
                    "LocalQueue",
                    Some(&ns),
                    &queue.name,
                    json!({
                        "apiVersion": API_VERSION, "kind": "LocalQueue",
                        "metadata": {"name": queue.name, "namespace": ns, "labels": {MANAGED_BY.0: MANAGED_BY.1, TENANT_LABEL: tenant.name}},
                        "spec": {"clusterQueue": cq},
                    }),
                ));
            }
        }
    }
    out
}

/// The resource groups of a ClusterQueue: the resource of an accelerator
/// profile with its own `kueueFlavor` in that flavor's group, the rest in
/// the platform's flavor. Kueue wants each resource, and each flavor, in
/// one group only (kubernetes-sigs/kueue
/// `apis/kueue/v1beta2/clusterqueue_types.go`, `ResourceGroup`), so the
/// groups are by flavor.
fn resource_groups(platform: &Platform, default_flavor: &str, resources: Vec<(String, Value)>) -> Value {
    let mut groups: BTreeMap<&str, Vec<(String, Value)>> = BTreeMap::new();
    for (r, entry) in resources {
        let flavor = platform
            .accelerators
            .iter()
            .find(|a| a.resource == r && a.kueue_flavor.is_some())
            .and_then(|a| a.kueue_flavor.as_deref())
            .unwrap_or(default_flavor);
        groups.entry(flavor).or_default().push((r, entry));
    }
    // The platform's flavor first, as before profiles.
    let mut order: Vec<&str> = groups.keys().copied().filter(|f| *f != default_flavor).collect();
    if groups.contains_key(default_flavor) || groups.is_empty() {
        order.insert(0, default_flavor);
    }
    Value::Array(
        order
            .into_iter()
            .map(|f| {
                let entries = groups.remove(f).unwrap_or_default();
                json!({
                    "coveredResources": entries.iter().map(|(r, _)| r).collect::<Vec<_>>(),
                    "flavors": [{"name": f, "resources": entries.iter().map(|(_, e)| e).collect::<Vec<_>>()}],
                })
            })
            .collect(),
    )
}

/// A ClusterQueue's preemption policy, from the tier of its queue (Classic
/// Preemption; kubernetes-sigs/kueue `apis/kueue/v1beta2/clusterqueue_types.go`
/// and `site/content/en/docs/concepts/preemption.md`). Kueue lets a
/// workload preempt in another ClusterQueue of the cohort only workloads of
/// a queue that is borrowing, by the *preemptor's* policies, so each queue's
/// own policy decides whom it may evict:
///
/// - a tier that preempts (`online`) takes back its nominal quota from any
///   borrower (`reclaimWithinCohort: Any`) when no tier in its cohort ranks
///   above it (else only from lower priorities), and while borrowing at peak
///   preempts lower-priority borrowers up to the highest lower tier's value
///   (`borrowWithinCohort`); within its queue, lower priorities;
/// - a tier that never preempts (`offline`) preempts nothing: it runs on
///   idle quota and waits (`Never` throughout), so it never evicts online
///   serving that borrowed;
/// - a queue without a tier preempts only lower priorities.
pub fn preemption(platform: &Platform, tenant: &Tenant, queue: &Queue) -> Value {
    let tiers = platform.tiers();
    let Some(tier) = queue.priority.as_ref().and_then(|p| tiers.get(p)) else {
        return json!({"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "LowerPriority"});
    };
    if !tier.preempt {
        return json!({"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"});
    }
    let cohort = tenant.cohort_name();
    let cohort_values: Vec<i32> = platform
        .tenants
        .iter()
        .filter(|t| t.cohort_name() == cohort)
        .flat_map(|t| t.queues.iter())
        .filter_map(|q| q.priority.as_ref().and_then(|p| tiers.get(p)))
        .map(|t| t.value)
        .collect();
    let highest = cohort_values.iter().all(|v| *v <= tier.value);
    let mut borrow = json!({"policy": "LowerPriority"});
    if let Some(below) = tiers.values().map(|t| t.value).filter(|v| *v < tier.value).max() {
        borrow["maxPriorityThreshold"] = json!(below);
    }
    json!({
        "reclaimWithinCohort": if highest { "Any" } else { "LowerPriority" },
        "withinClusterQueue": "LowerPriority",
        "borrowWithinCohort": borrow,
    })
}
