//! Kueue admission at compile time: what each ClusterQueue can admit
//! (nominal quota plus what it may borrow in its cohort) against what the
//! services placed on it need, with positions attached at the services.

use std::collections::BTreeMap;

use crate::base::diagnostics::Diagnostic;
use crate::base::quantity::Quantity;
use crate::base::yaml::PathSegment;
use crate::derive::DesiredService;
use crate::load::LoadedService;
use crate::model::platform::{Platform, QuantityText, Queue, Tenant};

fn parse(map: &BTreeMap<String, QuantityText>, key: &str) -> Option<Quantity> {
    map.get(key).and_then(|q| Quantity::parse(q).ok())
}

fn sum<'a>(items: impl Iterator<Item = Quantity> + 'a) -> Quantity {
    items.fold(Quantity::zero(), |a, b| a.plus(&b))
}

/// Checks the queues against quotas and capacity, and the queued services
/// against what their queue can ever admit.
pub fn admit(
    services: &[(&LoadedService, &DesiredService)],
    platform: &Platform,
    platform_file: Option<&str>,
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    if !crate::derive::kueue::uses_kueue(platform) {
        return diags;
    }
    let file = platform_file.unwrap_or("the platform file");
    let resources: std::collections::BTreeSet<&String> =
        platform.tenants.iter().flat_map(|t| t.queues.iter().flat_map(|q| q.nominal_quota.keys())).collect();
    // Nominal quotas against each tenant's ResourceQuota and the cluster's capacity.
    for r in &resources {
        for tenant in &platform.tenants {
            let nominal = sum(tenant.queues.iter().filter_map(|q| parse(&q.nominal_quota, r)));
            let quota = parse(&tenant.quota, &format!("requests.{r}")).or_else(|| parse(&tenant.quota, r));
            if let Some(quota) = quota.filter(|q| nominal > *q) {
                diags.push(Diagnostic::error(format!(
                    "tenant \"{}\": its queues' nominal quota {r}={nominal} exceeds its ResourceQuota {r}={quota} ({file}); Kueue would admit pods the API server then rejects",
                    tenant.name
                )));
            }
        }
        let capacity = platform.kueue.as_ref().and_then(|k| parse(&k.capacity, r));
        let total =
            sum(platform.tenants.iter().flat_map(|t| t.queues.iter().filter_map(|q| parse(&q.nominal_quota, r))));
        if let Some(capacity) = capacity.filter(|c| total > *c) {
            diags.push(Diagnostic::error(format!(
                "the queues' nominal quotas add up to {r}={total}, more than the declared cluster capacity {r}={capacity} ({file})"
            )));
        }
    }
    // Queued services: resources the queue does not cover, and peaks it can never admit.
    let tiers = platform.tiers();
    for tenant in &platform.tenants {
        for queue in &tenant.queues {
            let queued: Vec<&(&LoadedService, &DesiredService)> = services
                .iter()
                .filter(|(_, d)| {
                    d.queue.as_deref() == Some(queue.name.as_str()) && tenant.namespace_list().contains(&d.namespace)
                })
                .collect();
            for (s, d) in &queued {
                for r in d.container.requests.keys().filter(|r| !queue.nominal_quota.contains_key(*r)) {
                    diags.push(
                        Diagnostic::error(format!(
                            "{}/{} requests {r}, which queue \"{}\" does not cover: Kueue never admits its pods",
                            d.namespace, d.name, queue.name
                        ))
                        .at(s.location(&[PathSegment::Key("spec".into())]))
                        .help(format!("add {r} to the nominalQuota of queue \"{}\" in {file}", queue.name)),
                    );
                }
            }
            for (r, nominal) in queue.nominal_quota.iter().filter_map(|(r, q)| Some((r, Quantity::parse(q).ok()?))) {
                let borrowable = borrowable(tenant, queue, r, platform);
                let ceiling = nominal.plus(&borrowable);
                let mut peak = Quantity::zero();
                let mut worst: Option<&(&LoadedService, &DesiredService)> = None;
                for item in &queued {
                    let d = item.1;
                    let online = !d.priority.as_ref().and_then(|p| tiers.get(p)).is_some_and(|t| t.preemptible);
                    let Some(per_pod) = d.container.requests.get(r).and_then(|v| Quantity::parse(v).ok()) else {
                        continue;
                    };
                    if online {
                        let pods = d.peak_pods();
                        peak = peak.plus(&per_pod.times(i64::from(pods)));
                        worst = Some(item);
                    }
                }
                if let Some((s, _)) = worst.filter(|_| peak > ceiling) {
                    diags.push(
                        Diagnostic::error(format!(
                            "queue \"{}\" of tenant \"{}\" can admit at most {r}={ceiling} (nominal {nominal} + borrowable {borrowable}), \
                             but its non-preemptible services need {r}={peak} at the autoscalers' maximum",
                            queue.name, tenant.name
                        ))
                        .at(s.location(&[PathSegment::Key("spec".into()), PathSegment::Key("replicas".into())]))
                        .help(format!("raise the queue's nominalQuota or borrowingLimit in {file}, or lower replicas")),
                    );
                }
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
