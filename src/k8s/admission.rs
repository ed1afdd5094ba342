//! Admission as the API server does it when each pod is created:
//! LimitRange defaulting (plugin/pkg/admission/limitranger) and
//! ResourceQuota usage (plugin/pkg/admission/resourcequota, with the pod
//! evaluator's requests and limits), over the rendered objects of a
//! namespace. One engine: compile-time errors, the quota table and the
//! rules all read it.

use std::collections::{BTreeMap, BTreeSet};

pub(crate) use super::usage::{Bound, Usage};
use crate::base::quantity::Quantity;
use crate::k8s::index::{Context, Workload, containers_in, init_containers_in, namespace, quantity};
use crate::model::compact::View;
use crate::model::objects::Object;

/// A container's resources as admission sees them: after the API server
/// copies limits to missing requests and LimitRanges fill in defaults.
#[derive(Debug, Default)]
pub(crate) struct Effective {
    pub requests: BTreeMap<String, Quantity>,
    pub limits: BTreeMap<String, Quantity>,
    /// Resources whose limit a LimitRange default set, to that LimitRange.
    pub defaulted_limits: BTreeMap<String, String>,
}

pub(crate) fn resource_list<'v, V: Into<View<'v>>>(v: Option<V>) -> BTreeMap<String, Quantity> {
    let map = v.and_then(|v| v.into().as_object());
    map.into_iter().flatten().filter_map(|(k, v)| Some((k.to_string(), quantity(v)?))).collect()
}

/// The items of a LimitRange of one type.
pub(crate) fn items<'a>(lr: &'a Object, kind: &'a str) -> impl Iterator<Item = View<'a>> + 'a {
    lr.view()
        .at("/spec/limits")
        .into_iter()
        .flat_map(View::items)
        .filter(move |i| i.field("type").and_then(View::as_str) == Some(kind))
}

/// A Container item's default limits and requests, as the API server
/// completes them: a max without a default becomes the default limit, a
/// default limit without a default request becomes the request, and a min
/// without a default request becomes the request.
pub(crate) fn item_defaults<'v>(item: impl Into<View<'v>>) -> (BTreeMap<String, Quantity>, BTreeMap<String, Quantity>) {
    let item = item.into();
    let mut limits = resource_list(item.field("default"));
    for (k, v) in resource_list(item.field("max")) {
        limits.entry(k).or_insert(v);
    }
    let mut requests = resource_list(item.field("defaultRequest"));
    for (k, v) in &limits {
        requests.entry(k.clone()).or_insert_with(|| v.clone());
    }
    for (k, v) in resource_list(item.field("min")) {
        requests.entry(k).or_insert(v);
    }
    (limits, requests)
}

/// The container's resources after defaulting by `limit_ranges`.
pub(crate) fn effective<'v>(c: impl Into<View<'v>>, limit_ranges: &[&Object]) -> Effective {
    let c = c.into();
    let mut e = Effective {
        requests: resource_list(c.at("/resources/requests")),
        limits: resource_list(c.at("/resources/limits")),
        ..Effective::default()
    };
    for (k, v) in &e.limits {
        e.requests.entry(k.clone()).or_insert_with(|| v.clone());
    }
    for lr in limit_ranges {
        for item in items(lr, "Container") {
            let (limits, requests) = item_defaults(item);
            for (k, v) in limits {
                if !e.limits.contains_key(&k) {
                    e.defaulted_limits.insert(k.clone(), format!("{}/{}", namespace(lr), lr.id.name));
                    e.limits.insert(k, v);
                }
            }
            for (k, v) in requests {
                e.requests.entry(k).or_insert(v);
            }
        }
    }
    e
}

pub(crate) fn add(total: &mut BTreeMap<String, Quantity>, key: &str, q: &Quantity) {
    let sum = total.get(key).map_or_else(|| q.clone(), |t| t.plus(q));
    total.insert(key.to_string(), sum);
}

/// What one pod of `template` counts against quotas and Pod limits:
/// requests and limits summed over its containers (an init container
/// counts when it needs more than the rest), plus the pod overhead. A
/// limit is left out when a container has none for it.
pub(crate) fn pod_resources<'v>(template: impl Into<View<'v>>, limit_ranges: &[&Object]) -> Effective {
    let template = template.into();
    let mut pod = Effective::default();
    let app: Vec<Effective> = containers_in(template)
        .chain(
            init_containers_in(template).filter(|c| c.field("restartPolicy").and_then(View::as_str) == Some("Always")),
        )
        .map(|c| effective(c, limit_ranges))
        .collect();
    for c in &app {
        c.requests.iter().for_each(|(k, q)| add(&mut pod.requests, k, q));
    }
    let limited: BTreeSet<&String> = app.iter().flat_map(|c| c.limits.keys()).collect();
    for k in limited.into_iter().filter(|k| app.iter().all(|c| c.limits.contains_key(*k))) {
        app.iter().for_each(|c| add(&mut pod.limits, k, &c.limits[k]));
    }
    let inits =
        init_containers_in(template).filter(|c| c.field("restartPolicy").and_then(View::as_str) != Some("Always"));
    for init in inits.map(|c| effective(c, limit_ranges)) {
        for (totals, own) in [(&mut pod.requests, &init.requests), (&mut pod.limits, &init.limits)] {
            for (k, q) in own {
                if totals.get(k).is_none_or(|t| q > t) {
                    totals.insert(k.clone(), q.clone());
                }
            }
        }
    }
    for (k, q) in resource_list(template.at("/spec/overhead")) {
        add(&mut pod.requests, &k, &q);
        if pod.limits.contains_key(&k) {
            add(&mut pod.limits, &k, &q);
        }
    }
    pod
}

/// What a quota's hard key counts.
pub(crate) enum Measure<'k> {
    Pods,
    Requests(&'k str),
    Limits(&'k str),
    /// Objects of a resource (plural) in an API group ("" for core).
    Objects(&'k str, &'k str),
    /// Services of some types.
    Services(&'static [&'static str]),
    /// Storage the PersistentVolumeClaims of the namespace request
    /// (`requests.storage`: kubernetes/kubernetes
    /// `pkg/quota/v1/evaluator/core/persistent_volume_claims.go`).
    Storage,
}

pub(crate) fn measure(key: &str) -> Option<Measure<'_>> {
    Some(match key {
        "pods" | "count/pods" => Measure::Pods,
        "cpu" | "memory" | "ephemeral-storage" => Measure::Requests(key),
        "services.loadbalancers" => Measure::Services(&["LoadBalancer"]),
        "services.nodeports" => Measure::Services(&["NodePort", "LoadBalancer"]),
        "services"
        | "configmaps"
        | "secrets"
        | "persistentvolumeclaims"
        | "replicationcontrollers"
        | "resourcequotas" => Measure::Objects(key, ""),
        "requests.storage" => Measure::Storage,
        k if k.starts_with("hugepages-") => Measure::Requests(k),
        k => {
            if let Some(r) = k.strip_prefix("requests.") {
                Measure::Requests(r)
            } else if let Some(r) = k.strip_prefix("limits.") {
                Measure::Limits(r)
            } else if let Some(r) = k.strip_prefix("count/") {
                let (plural, group) = r.split_once('.').unwrap_or((r, ""));
                Measure::Objects(plural, group)
            } else {
                return None;
            }
        }
    })
}

/// The resource name of a kind: `NetworkPolicy` -> `networkpolicies`.
pub(crate) fn plural(kind: &str) -> String {
    let k = kind.to_ascii_lowercase();
    if let Some(stem) = k.strip_suffix('y').filter(|s| !s.ends_with(['a', 'e', 'o', 'u'])) {
        format!("{stem}ies")
    } else if k.ends_with('s') || k.ends_with('x') || k.ends_with("ch") || k.ends_with("sh") {
        format!("{k}es")
    } else {
        format!("{k}s")
    }
}

const KNOWN_SCOPES: [&str; 7] = [
    "BestEffort",
    "NotBestEffort",
    "Terminating",
    "NotTerminating",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
];

/// Whether isvc can tell which pods a quota's scopes select.
pub(crate) fn scopes_known<'v>(quota: impl Into<View<'v>>) -> bool {
    let quota = quota.into();
    let scopes = quota.at("/spec/scopes").into_iter().flat_map(View::items);
    let selected = quota.at("/spec/scopeSelector/matchExpressions").into_iter().flat_map(View::items);
    scopes
        .chain(selected.filter_map(|e| e.field("scopeName")))
        .all(|s| s.as_str().is_some_and(|s| KNOWN_SCOPES.contains(&s)))
}

/// Whether a quota's scopes select the pods of `template`.
pub(crate) fn in_scope<'q, 't>(
    cx: &Context<'_>,
    quota: impl Into<View<'q>>,
    template: impl Into<View<'t>>,
    limit_ranges: &[&Object],
) -> bool {
    let (quota, template) = (quota.into(), template.into());
    let spec = |k: &str| template.at(&format!("/spec/{k}"));
    let best_effort = || {
        containers_in(template).chain(init_containers_in(template)).all(|c| {
            let e = effective(c, limit_ranges);
            e.requests.is_empty() && e.limits.is_empty()
        })
    };
    let class = spec("priorityClassName").and_then(View::as_str).or(cx.default_priority_class).unwrap_or_default();
    let test = |scope: &str, op: &str, values: &[&str]| -> bool {
        let exists = match scope {
            "BestEffort" => best_effort(),
            "NotBestEffort" => !best_effort(),
            "Terminating" => spec("activeDeadlineSeconds").is_some(),
            "NotTerminating" => spec("activeDeadlineSeconds").is_none(),
            "PriorityClass" => match op {
                "In" => return values.contains(&class),
                "NotIn" => return !values.contains(&class),
                _ => !class.is_empty(),
            },
            // Neither is about pods isvc renders.
            _ => false,
        };
        if op == "DoesNotExist" { !exists } else { exists }
    };
    let scopes = quota.at("/spec/scopes").into_iter().flat_map(View::items);
    let expressions = quota.at("/spec/scopeSelector/matchExpressions").into_iter().flat_map(View::items);
    scopes.filter_map(View::as_str).all(|s| test(s, "Exists", &[]))
        && expressions.into_iter().all(|e| {
            let values: Vec<&str> =
                e.field("values").into_iter().flat_map(View::items).filter_map(View::as_str).collect();
            test(
                e.field("scopeName").and_then(View::as_str).unwrap_or_default(),
                e.field("operator").and_then(View::as_str).unwrap_or_default(),
                &values,
            )
        })
}

/// What the workloads of its namespace count against `quota` at `bound`
/// ([`usage`]), worked out once per quota and bound and kept in the index.
pub(crate) fn quota_usage<'s>(cx: &'s Context<'_>, quota: &'s Object, bound: Bound) -> &'s [Usage] {
    match cx.quota_cells(quota) {
        Some(cells) => cells[bound as usize].get_or_init(|| usage(cx, quota, bound)),
        None => &[],
    }
}

/// What the rendered objects of its namespace count against each hard
/// limit of `quota`, with every workload at `bound`. Empty for a quota
/// whose scopes isvc cannot judge.
pub(crate) fn usage(cx: &Context<'_>, quota: &Object, bound: Bound) -> Vec<Usage> {
    if !scopes_known(quota.view()) {
        return Vec::new();
    }
    let ns = namespace(quota);
    let limit_ranges = cx.objects_of_kind(ns, "LimitRange");
    let hard = quota.view().at("/spec/hard").and_then(View::as_object).into_iter().flatten();
    let keys: Vec<(&str, Measure<'_>, Quantity)> =
        hard.filter_map(|(k, v)| Some((k, measure(k)?, quantity(v)?))).collect();
    let mut out: Vec<Usage> = keys
        .iter()
        .map(|(k, m, hard)| Usage {
            resource: k.to_string(),
            hard: hard.clone(),
            used: None,
            parts: Vec::new(),
            per_pod: matches!(m, Measure::Pods | Measure::Requests(_) | Measure::Limits(_)),
        })
        .collect();
    // Pods and their resources, one workload at a time.
    for w in cx.workloads_in(ns) {
        let mut totals: Vec<Option<Quantity>> = vec![None; keys.len()];
        for (template, per_replica) in &w.templates {
            let pods = per_replica * replicas(cx, w, *template, bound);
            if pods <= 0 || !in_scope(cx, quota.view(), template, limit_ranges) {
                continue;
            }
            let pod = pod_resources(template, limit_ranges);
            for (i, (_, m, _)) in keys.iter().enumerate() {
                if let Some(each) = per_pod(m, &pod) {
                    let q = each.times(pods);
                    totals[i] = Some(totals[i].take().map_or_else(|| q.clone(), |t| t.plus(&q)));
                }
            }
        }
        for (u, t) in out.iter_mut().zip(totals) {
            if let Some(t) = t.filter(|t| t.nanos() > 0) {
                u.parts.push((w.object.id.name.clone(), t));
            }
        }
    }
    // Objects, counted by kind.
    for (u, (_, m, _)) in out.iter_mut().zip(&keys) {
        match m {
            Measure::Objects(resource, group) => {
                // One part per object, named by the service it belongs to,
                // so a count quota's error points at the service that
                // does not fit.
                let mut counted: Vec<&Object> =
                    cx.objects_in(ns).filter(|o| plural(&o.id.kind) == *resource && o.id.group() == *group).collect();
                counted.sort_by(|a, b| (&a.owner, &a.id.name).cmp(&(&b.owner, &b.id.name)));
                u.parts
                    .extend(counted.into_iter().map(|o| (o.owner.clone().unwrap_or_else(|| o.id.name.clone()), one())));
            }
            Measure::Services(types) => {
                let n = cx
                    .objects_of_kind(ns, "Service")
                    .iter()
                    .filter(|s| {
                        types.contains(&s.view().at("/spec/type").and_then(View::as_str).unwrap_or("ClusterIP"))
                    })
                    .count() as i64;
                if n > 0 {
                    u.parts.push((format!("{n} Service"), one().times(n)));
                }
            }
            Measure::Storage => {
                for claim in cx.objects_of_kind(ns, "PersistentVolumeClaim") {
                    let size = claim.view().at("/spec/resources/requests/storage").and_then(quantity);
                    if let Some(size) = size {
                        u.parts.push((claim.id.name.clone(), size));
                    }
                }
            }
            _ => {}
        }
        u.used = u.parts.iter().map(|(_, q)| q.clone()).reduce(|a, b| a.plus(&b));
    }
    out
}

/// A count of one.
pub(crate) fn one() -> Quantity {
    Quantity::parse("1").unwrap_or_else(|_| Quantity::zero())
}

/// What one pod counts against a pod-based hard limit.
pub(crate) fn per_pod(m: &Measure<'_>, pod: &Effective) -> Option<Quantity> {
    match m {
        Measure::Pods => Some(one()),
        Measure::Requests(r) => pod.requests.get(*r).cloned(),
        Measure::Limits(r) => pod.limits.get(*r).cloned(),
        _ => None,
    }
}

/// The first hard limit of `quota` that `extra` more replicas of `w` (a
/// rollout's surge) would exceed, with what they would
/// need: (resource, needed, hard). `None` when they fit, or when the quota
/// is exceeded already without them.
pub(crate) fn surge_excess(
    cx: &Context<'_>,
    quota: &Object,
    w: &Workload<'_>,
    extra: i64,
) -> Option<(String, Quantity, Quantity)> {
    let usage = quota_usage(cx, quota, Bound::Min);
    if usage.iter().any(Usage::exceeded) {
        return None;
    }
    let limit_ranges = cx.objects_of_kind(namespace(quota), "LimitRange");
    // A surge replica is a whole replica: a LeaderWorkerSet's group is its
    // leader and its workers.
    let pods: Vec<(Effective, i64)> = w
        .templates
        .iter()
        .filter(|(t, _)| in_scope(cx, quota.view(), t, limit_ranges))
        .map(|(t, n)| (pod_resources(t, limit_ranges), n * extra))
        .collect();
    usage.iter().filter(|u| u.per_pod).find_map(|u| {
        let m = measure(&u.resource)?;
        let each =
            pods.iter().filter_map(|(pod, n)| per_pod(&m, pod).map(|q| q.times(*n))).reduce(|a, b| a.plus(&b))?;
        let needed = u.used.as_ref().map_or_else(|| each.clone(), |used| used.plus(&each));
        (needed > u.hard).then(|| (u.resource.clone(), needed, u.hard.clone()))
    })
}

/// Replicas at `bound`. At the autoscalers' maximum, pods of a preemptible
/// tier (a PriorityClass isvc marks with
/// [`crate::model::labels::PREEMPTIBLE_ANNOTATION`]) are
/// left out: online work preempts them at peak.
pub(crate) fn replicas(cx: &Context<'_>, w: &Workload<'_>, template: View<'_>, bound: Bound) -> i64 {
    match bound {
        Bound::Min => w.start_replicas,
        Bound::Max if preemptible(cx, template) => 0,
        Bound::Max => w.max_replicas,
    }
}

pub(crate) fn preemptible<'v>(cx: &Context<'_>, template: impl Into<View<'v>>) -> bool {
    let Some(class) = template.into().at("/spec/priorityClassName").and_then(View::as_str) else { return false };
    cx.objects_of_kind("", "PriorityClass").iter().any(|pc| {
        pc.id.name == class
            && pc
                .view()
                .at("/metadata/annotations")
                .and_then(|a| a.field(crate::model::labels::PREEMPTIBLE_ANNOTATION))
                .and_then(View::as_str)
                == Some("true")
    })
}

/// What the workloads queued on `local_queues` (LocalQueue names in
/// `namespaces`, read from the `kueue.x-k8s.io/queue-name` label Kueue's
/// workload integrations read) ask for of `resource` at the autoscalers'
/// maximum, preemptible tiers left out as for quotas; with the workload that
/// asks the most. Requests count after LimitRange defaults, as Kueue sees
/// the created pods.
pub(crate) fn queue_peak<'c, 'a>(
    cx: &'c Context<'a>,
    namespaces: &[String],
    local_queues: &[&str],
    resource: &str,
) -> (Quantity, Option<&'c Workload<'a>>) {
    let mut total = Quantity::zero();
    let mut largest: Option<(&Workload<'a>, Quantity)> = None;
    for ns in namespaces {
        let limit_ranges = cx.objects_of_kind(ns, "LimitRange");
        for w in cx.workloads_in(ns) {
            let queue = w
                .object
                .view()
                .at("/metadata/labels")
                .and_then(|l| l.field(crate::model::labels::QUEUE_LABEL))
                .and_then(View::as_str);
            if !queue.is_some_and(|q| local_queues.contains(&q)) {
                continue;
            }
            let mut mine = Quantity::zero();
            for (template, per_replica) in &w.templates {
                let pods = per_replica * replicas(cx, w, *template, Bound::Max);
                if let Some(each) = pod_resources(template, limit_ranges).requests.get(resource) {
                    mine = mine.plus(&each.times(pods));
                }
            }
            total = total.plus(&mine);
            if mine.nanos() > 0 && largest.as_ref().is_none_or(|(_, q)| mine > *q) {
                largest = Some((w, mine));
            }
        }
    }
    (total, largest.map(|(w, _)| w))
}

/// Resources the pods of a queued workload request, after LimitRange
/// defaults.
pub(crate) fn requested_resources(cx: &Context<'_>, w: &Workload<'_>) -> BTreeSet<String> {
    let limit_ranges = cx.objects_of_kind(namespace(w.object), "LimitRange");
    w.templates.iter().flat_map(|(t, _)| pod_resources(t, limit_ranges).requests.into_keys()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use serde_json::json;

    fn lr(limits: Value) -> Object {
        object(
            json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": "ns"}, "spec": {"limits": limits}}),
        )
    }

    #[test]
    fn limit_range_defaults_follow_the_api_server() {
        let lr = lr(json!([{"type": "Container", "max": {"cpu": "16"}, "min": {"memory": "1Gi"}}]));
        let c = json!({"resources": {"requests": {"cpu": "4"}, "limits": {"memory": "8Gi"}}});
        let e = effective(&c, &[&lr]);
        // The max becomes the default limit; the memory limit sets the request.
        assert_eq!(e.limits["cpu"].to_string(), "16");
        assert_eq!(e.defaulted_limits["cpu"], "ns/lr");
        assert_eq!(e.requests["memory"].to_string(), "8Gi");
        assert_eq!(e.requests["cpu"].to_string(), "4");
    }

    #[test]
    fn pods_sum_containers_and_take_the_largest_init_container() {
        let t = json!({"spec": {
            "containers": [{"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}, {"resources": {"requests": {"cpu": "500m"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "3"}}}]
        }});
        let pod = pod_resources(&t, &[]);
        assert_eq!(pod.requests["cpu"].to_string(), "3");
        // One container has no CPU limit, so the pod has none.
        assert!(!pod.limits.contains_key("cpu"));
    }

    #[test]
    fn kinds_name_their_resources() {
        assert_eq!(plural("Deployment"), "deployments");
        assert_eq!(plural("NetworkPolicy"), "networkpolicies");
        assert_eq!(plural("PriorityClass"), "priorityclasses");
        assert_eq!(plural("Gateway"), "gateways");
    }

    use crate::model::objects::test_object as object;

    #[test]
    fn a_leader_worker_set_surges_whole_groups() {
        let pod = json!({"spec": {"containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}});
        let objects = [
            object(json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "ns"},
                          "spec": {"hard": {"requests.nvidia.com/gpu": "40"}}})),
            object(json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                          "metadata": {"name": "big", "namespace": "ns"},
                          "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2, "leaderTemplate": pod, "workerTemplate": pod}}})),
        ];
        let cx = Context::new(&objects);
        let w = &cx.workloads_in("ns")[0];
        // Two groups of two 8-GPU pods: 32 of 40. One more group needs 16.
        assert_eq!(quota_usage(&cx, &objects[0], Bound::Min)[0].used.as_ref().unwrap().to_string(), "32");
        let (resource, needed, hard) = surge_excess(&cx, &objects[0], w, 1).unwrap();
        assert_eq!(
            (resource.as_str(), needed.to_string(), hard.to_string()),
            ("requests.nvidia.com/gpu", "48".into(), "40".into())
        );
    }
}
