//! Tenancy rules: what ResourceQuota and LimitRange admission would do to
//! the rendered pods, worked out from the rendered quota and limit objects
//! of the same namespace.
//!
//! Only the objects of this run are counted: other workloads in the
//! namespace use the same quota, so a quota that fits here may still be
//! full in the cluster. A quota whose scopes isvc cannot judge is skipped.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{Context, Finding, Rule, Severity, Workload, container_name, containers, init_containers, namespace};
use crate::base::quantity::Quantity;
use crate::k8s::admission::{
    Bound, Effective, Usage, effective, in_scope, items, pod_resources, resource_list, scopes_known,
};
use crate::model::objects::Object;

pub const QUOTA_EXCEEDED: Rule = Rule::new(
    "ISVC021",
    Severity::Error,
    "a ResourceQuota refuses the pods: they leave out a resource it limits, or do not fit it at steady state",
)
.symptom(
    "the Deployment exists but has fewer pods than it should, or none: its ReplicaSet shows FailedCreate with \
     `exceeded quota: <name>, requested: requests.nvidia.com/gpu=4, used: ..., limited: ...` or `failed quota: \
     <name>: must specify limits.cpu`",
)
.fix(
    "raise the quota's hard limits, lower the services' replicas or GPUs, or set the resource the quota \
     requires (a quota on limits.cpu needs a CPU limit on every container, or a LimitRange default)",
)
.explain(
    "A ResourceQuota is checked when each pod is created, not when the Deployment is applied, so a GitOps \
     sync succeeds and the pods are refused one by one. isvc adds up what the rendered workloads of the \
     namespace ask for at steady state (spec.replicas within the autoscaler's bounds, the autoscaler's minimum where it leaves replicas out), after \
     LimitRange defaults, and compares it with each quota's hard limits (pods, requests.*, limits.*, \
     count/*). A quota on cpu, memory, requests.* or limits.* of CPU and memory also requires every container \
     to state that value. Other workloads in the namespace count too, so this is a lower bound.",
);

pub const QUOTA_BLOCKS_SCALE_UP: Rule =
    Rule::new("ISVC022", Severity::Warning, "a ResourceQuota stops the autoscaler before its maximum")
        .symptom(
            "under load the autoscaler raises the replica count but the new pods are refused (`exceeded quota`); \
     latency climbs while the HPA shows the desired count and the Deployment fewer ready pods",
        )
        .fix("raise the quota or lower the services' maximum (isvc: maxReplicas is 3 x replicas)")
        .explain(
            "The services fit the quota at their minimum but not at their autoscalers' maximum replica counts, so \
     scaling stops part-way, exactly when load is highest. Other workloads in the namespace count too.",
        );

pub const LIMIT_RANGE_VIOLATION: Rule =
    Rule::new("ISVC023", Severity::Error, "a LimitRange rejects the pods: a request or limit outside its bounds")
        .symptom(
            "the ReplicaSet cannot create pods: FailedCreate with `maximum cpu usage per Container is 4, but limit is \
     8`, `minimum memory usage per Pod is ...`, or `must be less than or equal to cpu limit` after a default \
     was applied",
        )
        .fix(
            "bring the container's requests and limits inside the LimitRange's min, max and maxLimitRequestRatio, or \
     change the LimitRange for the namespace",
        )
        .explain(
            "The LimitRange admission plugin first fills in defaults (default limits, defaultRequest requests; a max \
     without a default becomes the default limit) for containers that leave a value out, then rejects pods \
     whose containers (type Container) or sums (type Pod) fall outside min and max, or whose limit/request \
     ratio is above maxLimitRequestRatio. A default limit below the container's own request makes the pod \
     invalid. As with quotas, the check happens when pods are created, so the GitOps sync looks fine.",
        );

/// The tenancy rules over one object.
pub(crate) fn check(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    if o.id.kind == "ResourceQuota" {
        quota_totals(cx, o, out);
    }
    if let Some(w) = cx.workload_of(o) {
        quota_fields(cx, w, out);
        limit_ranges(cx, w, out);
    }
}

fn describe(u: &Usage) -> String {
    let parts: Vec<String> = u.parts.iter().map(|(n, q)| format!("{n}: {q}")).collect();
    let used = u.used.as_ref().map_or_else(|| "0".to_string(), Quantity::to_string);
    format!("{} would be {used}, above the hard limit of {} ({})", u.resource, u.hard, parts.join(", "))
}

fn quota_totals(cx: &Context<'_>, quota: &Object, out: &mut Vec<Finding>) {
    let at_min: Vec<&Usage> = cx.quota_usage(quota, Bound::Min).iter().filter(|u| u.exceeded()).collect();
    for u in &at_min {
        out.push(Finding::new(QUOTA_EXCEEDED, quota, format!("at steady state, {}", describe(u))));
    }
    let at_max = cx.quota_usage(quota, Bound::Max).iter().filter(|u| u.exceeded());
    for e in at_max.filter(|e| at_min.iter().all(|m| m.resource != e.resource)) {
        out.push(Finding::new(
            QUOTA_BLOCKS_SCALE_UP,
            quota,
            format!("at the autoscalers' maximum replica counts, {}", describe(e)),
        ));
    }
}

/// Quota keys whose presence makes every container state the value.
const REQUIRED_BY_QUOTA: [(&str, &str, &str); 6] = [
    ("cpu", "requests", "cpu"),
    ("requests.cpu", "requests", "cpu"),
    ("limits.cpu", "limits", "cpu"),
    ("memory", "requests", "memory"),
    ("requests.memory", "requests", "memory"),
    ("limits.memory", "limits", "memory"),
];

fn quota_fields(cx: &Context<'_>, w: &Workload<'_>, out: &mut Vec<Finding>) {
    let ns = namespace(w.object);
    let limit_ranges = cx.objects_of_kind(ns, "LimitRange");
    for quota in cx.objects_of_kind(ns, "ResourceQuota").iter().filter(|q| scopes_known(&q.value)) {
        let hard = quota.value.pointer("/spec/hard").and_then(Value::as_object);
        let mut missing: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (template, _) in w.templates.iter().filter(|(t, _)| in_scope(cx, &quota.value, t, limit_ranges)) {
            for c in containers(template).chain(init_containers(template)) {
                let e = effective(c, limit_ranges);
                for (key, kind, resource) in REQUIRED_BY_QUOTA {
                    let set = if kind == "requests" { &e.requests } else { &e.limits };
                    if hard.is_some_and(|h| h.contains_key(key)) && !set.contains_key(resource) {
                        missing.entry(key).or_default().insert(container_name(c));
                    }
                }
            }
        }
        for (key, names) in missing {
            let names: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
            out.push(Finding::new(
                QUOTA_EXCEEDED,
                w.object,
                format!(
                    "{} constrains {key}, which container {} does not set: every pod is refused (must specify {key})",
                    quota.id,
                    names.join(", ")
                ),
            ));
        }
    }
}

/// Checks one set of requests and limits (a container's, or a pod's sums)
/// against a LimitRange item; `per` is the item's type.
fn bounds(item: &Value, what: &str, e: &Effective, lr: &str, per: &str, problems: &mut Vec<String>) {
    for (r, max) in resource_list(item.get("max")) {
        match e.limits.get(&r) {
            None => problems.push(format!("{what} sets no {r} limit, but LimitRange {lr} caps it at {max} per {per}")),
            Some(l) if *l > max => problems
                .push(format!("{what}: {r} limit {l} is above the maximum of {max} per {per} in LimitRange {lr}")),
            Some(_) => {}
        }
        if let Some(q) = e.requests.get(&r).filter(|q| **q > max) {
            problems
                .push(format!("{what}: {r} request {q} is above the maximum of {max} per {per} in LimitRange {lr}"));
        }
    }
    for (r, min) in resource_list(item.get("min")) {
        match e.requests.get(&r) {
            None => {
                problems.push(format!("{what} sets no {r} request, but LimitRange {lr} needs at least {min} per {per}"))
            }
            Some(q) if *q < min => problems
                .push(format!("{what}: {r} request {q} is below the minimum of {min} per {per} in LimitRange {lr}")),
            Some(_) => {}
        }
    }
    for (r, ratio) in resource_list(item.get("maxLimitRequestRatio")) {
        match (e.requests.get(&r), e.limits.get(&r)) {
            (Some(q), Some(l)) if l.nanos() * 1_000_000_000 > ratio.nanos() * q.nanos() => problems.push(format!(
                "{what}: {r} limit {l} is more than {ratio} times the request {q} (maxLimitRequestRatio in LimitRange {lr})"
            )),
            (Some(_), Some(_)) => {}
            _ => problems.push(format!(
                "{what} must set both a {r} request and limit: LimitRange {lr} bounds their ratio"
            )),
        }
    }
}

fn limit_ranges(cx: &Context<'_>, w: &Workload<'_>, out: &mut Vec<Finding>) {
    let ns = namespace(w.object);
    let lrs = cx.objects_of_kind(ns, "LimitRange");
    if lrs.is_empty() {
        return;
    }
    let mut problems = Vec::new();
    for (template, _) in &w.templates {
        for c in containers(template).chain(init_containers(template)) {
            let e = effective(c, lrs);
            let what = format!("container \"{}\"", container_name(c));
            for (r, lr) in &e.defaulted_limits {
                if let (Some(q), Some(l)) = (e.requests.get(r), e.limits.get(r))
                    && q > l
                {
                    problems.push(format!(
                        "{what}: {r} request {q} is above the limit of {l} that LimitRange {lr} gives it by default"
                    ));
                }
            }
            for lr in lrs {
                let name = format!("{ns}/{}", lr.id.name);
                for item in items(lr, "Container") {
                    bounds(item, &what, &e, &name, "Container", &mut problems);
                }
            }
        }
        let pod = pod_resources(template, lrs);
        for lr in lrs {
            let name = format!("{ns}/{}", lr.id.name);
            for item in items(lr, "Pod") {
                bounds(item, "the pod", &pod, &name, "Pod", &mut problems);
            }
        }
    }
    problems.dedup();
    for p in problems {
        out.push(Finding::new(LIMIT_RANGE_VIOLATION, w.object, p));
    }
}
