//! Kueue admission at compile time: what each ClusterQueue can admit
//! (nominal quota plus what it may borrow in its cohort) against what the
//! rendered workloads queued on it need, worked out by the admission engine
//! ([`crate::k8s::admission`]) as quotas are; positions are attached at the
//! services.

use std::collections::BTreeMap;

use crate::base::diagnostics::Diagnostic;
use crate::base::quantity::Quantity;
use crate::base::yaml::PathSegment;
use crate::k8s::admission;
use crate::k8s::index::{Context, Workload, namespace};
use crate::load::{LoadedService, PlatformOrigin};
use crate::model::labels::QUEUE_LABEL;
use crate::model::platform::{Platform, QuantityText, Queue, Tenant};

fn parse(map: &BTreeMap<String, QuantityText>, key: &str) -> Option<Quantity> {
    map.get(key).and_then(|q| Quantity::parse(q).ok())
}

fn sum<'a>(items: impl Iterator<Item = Quantity> + 'a) -> Quantity {
    items.fold(Quantity::zero(), |a, b| a.plus(&b))
}

/// Checks the queues against the tenants' quotas and the cluster's
/// capacity: the platform file alone.
pub fn admit_queues(
    platform: &Platform,
    platform_file: Option<&str>,
    origin: Option<&PlatformOrigin>,
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    if !crate::derive::kueue::uses_kueue(platform) {
        return diags;
    }
    let file = platform_file.unwrap_or("the platform file");
    let resources: std::collections::BTreeSet<&String> =
        platform.tenants.iter().flat_map(|t| t.queues.iter().flat_map(|q| q.nominal_quota.keys())).collect();
    // Nominal quotas against each tenant's ResourceQuota and the cluster's capacity.
    // A field of the platform file, where it was read from one.
    let at = |d: Diagnostic, path: &[PathSegment]| match origin {
        Some(o) => d.at(o.location(path)),
        None => d,
    };
    let key = |k: &str| PathSegment::Key(k.to_string());
    for r in &resources {
        for (i, tenant) in platform.tenants.iter().enumerate() {
            let nominal = sum(tenant.queues.iter().filter_map(|q| parse(&q.nominal_quota, r)));
            let quota = parse(&tenant.quota, &format!("requests.{r}")).or_else(|| parse(&tenant.quota, r));
            if let Some(quota) = quota.filter(|q| nominal > *q) {
                diags.push(at(
                    Diagnostic::error(format!(
                        "tenant \"{}\": its queues' nominal quota {r}={nominal} exceeds its ResourceQuota {r}={quota} ({file}); Kueue would admit pods the API server then rejects",
                        tenant.name
                    ))
                    .help(format!("lower the nominalQuota of the tenant's queues to {r}={quota} in all, or raise its quota")),
                    &[key("tenants"), PathSegment::Index(i), key("queues")],
                ));
            }
        }
        let capacity = platform.kueue.as_ref().and_then(|k| parse(&k.capacity, r));
        let total =
            sum(platform.tenants.iter().flat_map(|t| t.queues.iter().filter_map(|q| parse(&q.nominal_quota, r))));
        if let Some(capacity) = capacity.filter(|c| total > *c) {
            diags.push(at(
                Diagnostic::error(format!(
                    "the queues' nominal quotas add up to {r}={total}, more than the declared cluster capacity {r}={capacity} ({file})"
                ))
                .help(format!("lower the queues' nominalQuota to {r}={capacity} in all, or declare the capacity the cluster has")),
                &[key("kueue"), key("capacity"), key(r)],
            ));
        }
    }
    diags
}

/// Checks the queued workloads `cx` holds against what their queue can
/// ever admit: resources the queue does not cover, and peaks above its
/// nominal quota and what it may borrow (the admission engine's numbers).
/// A tenant's namespaces are indexed together (see the compiler's groups).
pub fn admit_workloads(
    cx: &Context<'_>,
    services: &[LoadedService],
    platform: &Platform,
    platform_file: Option<&str>,
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    if !crate::derive::kueue::uses_kueue(platform) {
        return diags;
    }
    let file = platform_file.unwrap_or("the platform file");
    // Indexed only once there is an error: a compile of many namespaces
    // runs this once for each.
    let by_name = std::cell::OnceCell::new();
    let at = |w: &Workload<'_>, path: &[&str]| {
        let by_name = by_name.get_or_init(|| crate::load::by_name(services));
        let s = by_name.get(&(namespace(w.object), w.object.owner.as_deref().unwrap_or(&w.object.id.name)))?;
        Some(s.location(&path.iter().map(|k| PathSegment::Key(k.to_string())).collect::<Vec<_>>()))
    };
    for tenant in &platform.tenants {
        let namespaces = tenant.namespace_list();
        for queue in &tenant.queues {
            let local = [queue.name.as_str()];
            for ns in &namespaces {
                for w in cx.workloads_in(ns) {
                    let labels = w.object.view().at("/metadata/labels");
                    let queued = labels.and_then(|l| l.field(QUEUE_LABEL)).and_then(|q| q.as_str());
                    if queued != Some(queue.name.as_str()) {
                        continue;
                    }
                    for r in
                        admission::requested_resources(cx, w).iter().filter(|r| !queue.nominal_quota.contains_key(*r))
                    {
                        let mut d = Diagnostic::error(format!(
                            "{ns}/{} requests {r}, which queue \"{}\" does not cover: Kueue never admits its pods",
                            w.object.id.name, queue.name
                        ))
                        .help(format!("add {r} to the nominalQuota of queue \"{}\" in {file}", queue.name));
                        if let Some(loc) = at(w, &["spec"]) {
                            d = d.at(loc);
                        }
                        diags.push(d);
                    }
                }
            }
            for (r, nominal) in queue.nominal_quota.iter().filter_map(|(r, q)| Some((r, Quantity::parse(q).ok()?))) {
                let borrowable = borrowable(tenant, queue, r, platform);
                let ceiling = nominal.plus(&borrowable);
                let (peak, largest) = admission::queue_peak(cx, &namespaces, &local, r);
                let Some(w) = largest.filter(|_| peak > ceiling) else { continue };
                let mut d = Diagnostic::error(format!(
                    "queue \"{}\" of tenant \"{}\" can admit at most {r}={ceiling} (nominal {nominal} + borrowable {borrowable}), \
                     but its non-preemptible services need {r}={peak} at the autoscalers' maximum",
                    queue.name, tenant.name
                ))
                .help(format!("raise the queue's nominalQuota or borrowingLimit in {file}, or lower replicas"));
                if let Some(loc) = at(w, &["spec", "replicas"]) {
                    d = d.at(loc);
                }
                diags.push(d);
            }
        }
    }
    diags
}

/// What a queue can borrow of `r` from the rest of its cohort.
fn borrowable(tenant: &Tenant, queue: &Queue, r: &str, platform: &Platform) -> Quantity {
    let cohort = tenant.cohort_name();
    let lendable = sum(platform.tenants.iter().filter(|t| t.cohort_name() == cohort).flat_map(|t| {
        t.queues
            .iter()
            .filter(move |q| !(t.name == tenant.name && q.name == queue.name))
            .filter_map(|q| q.lending_limit.as_ref().and_then(|l| parse(l, r)).or_else(|| parse(&q.nominal_quota, r)))
    }));
    match queue.borrowing_limit.as_ref().and_then(|b| parse(b, r)) {
        Some(limit) if limit < lendable => limit,
        _ => lendable,
    }
}
