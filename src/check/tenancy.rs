//! Tenancy rules: what ResourceQuota and LimitRange admission would do to
//! the rendered pods, worked out from the rendered quota and limit objects
//! of the same namespace.
//!
//! Only the objects of this run are counted: other workloads in the
//! namespace use the same quota, so a quota that fits here may still be
//! full in the cluster. A quota whose scopes isvc cannot judge is skipped.

use crate::base::value::At;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{
    Context, Finding, Rule, Severity, View, Workload, container_name, containers_in, init_containers_in, namespace,
};
use crate::base::quantity::Quantity;
use crate::k8s::admission::{
    Bound, Effective, Usage, effective, in_scope, items, pod_resources, quota_usage, resource_list, scopes_known,
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
     namespace ask for at the replica count they are created with (spec.replicas, within the autoscaler's \
     bounds), after \
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

pub const LIMIT_RANGE_INJECTS: Rule = Rule::new(
    "ISVC041",
    Severity::Error,
    "a LimitRange gives a container that sets no resources GPUs (or other extended resources), or rejects it",
)
.symptom(
    "a sidecar, an init container that downloads a model, an endpoint picker or a `kubectl debug` pod in the \
     namespace asks for the LimitRange's maximum of GPUs: it stays Pending (`Insufficient nvidia.com/gpu`) or \
     takes GPUs from the inference servers; the pod's `kubernetes.io/limit-ranger` annotation says \
     `LimitRanger plugin set: nvidia.com/gpu request for container ...; nvidia.com/gpu limit for container ...`",
)
.fix(
    "give every extended resource in a LimitRange's max a default and defaultRequest of 0 (isvc's tenant \
     LimitRange does), or bound GPUs with the ResourceQuota and Kueue only",
)
.explain(
    "When a LimitRange is stored, the API server completes each Container item: a resource in max without a \
     default gets the max as its default limit, and a default limit without a defaultRequest becomes the \
     default request (kubernetes/kubernetes pkg/apis/core/v1/defaults.go, SetDefaults_LimitRangeItem). The \
     LimitRanger admission plugin then fills in the defaults for every container and init container of \
     every pod in the namespace that leaves a resource out (plugin/pkg/admission/limitranger/admission.go). \
     So `max: {nvidia.com/gpu: 8}` alone makes every container without a GPU limit ask for 8 GPUs. isvc \
     simulates LimitRanger for a plain container, one without requests or limits, in each namespace with a \
     LimitRange, and reports the extended resources it would be given and the bounds it would fail.",
);

pub const KUEUE_RECLAIM_INVERTS_PRIORITY: Rule = Rule::new(
    "ISVC042",
    Severity::Error,
    "a Kueue ClusterQueue's reclaimWithinCohort: Any lets lower-priority work evict higher-priority work in its cohort",
)
.symptom(
    "online serving pods that borrowed idle GPUs are evicted (Workload condition `Evicted`, reason `Preempted`, \
     `InCohortReclamation`) as soon as offline or batch work of a lower priority is submitted to the queue it \
     borrowed from; at peak the online service loses replicas to a nightly job",
)
.fix(
    "give queues of a tier that does not preempt reclaimWithinCohort: Never (isvc does for tiers with preempt: \
     false) or LowerPriority, and keep Any for the highest tier of the cohort",
)
.explain(
    "In Kueue's Classic Preemption, a workload may preempt workloads of other ClusterQueues in its cohort that \
     are borrowing, as the preemptor's ClusterQueue allows: reclaimWithinCohort: Any preempts them \
     \"irrespective of priority\" when the preemptor fits in its own nominal quota (kubernetes-sigs/kueue \
     apis/kueue/v1beta2/clusterqueue_types.go, ClusterQueuePreemption; site/content/en/docs/concepts/\
     preemption.md). A queue cannot protect its borrowing workloads; only the other queues' policies can. isvc \
     works out each ClusterQueue's lowest workload priority (from the kueue.x-k8s.io/priority-class label's \
     WorkloadPriorityClass, else the pods' PriorityClass) and flags a queue with Any whose cohort has a queue \
     with workloads of higher priority.",
);

pub const PRUNABLE_BY_GITOPS: Rule = Rule::new(
    "ISVC043",
    Severity::Error,
    "a Namespace or CustomResourceDefinition that Argo CD or Flux may delete, and everything in it with it",
)
.symptom(
    "removing a tenant from the platform file deletes its namespace with the Secrets, model caches and \
     PersistentVolumeClaims made by hand; deleting the Argo CD Application (its resources finalizer) or the \
     Flux Kustomization deletes the CRD, and with it every InferenceService in the cluster",
)
.fix(
    "annotate the object with argocd.argoproj.io/sync-options: Prune=false,Delete=false and \
     kustomize.toolkit.fluxcd.io/prune: disabled (isvc does for its Namespaces and the CRD); delete a \
     retired tenant's namespace by hand",
)
.explain(
    "Argo CD with automated prune deletes objects that leave the rendered tree, and with the \
     resources-finalizer deletes all of an Application's objects when the Application is deleted; Flux with \
     prune: true does both for a Kustomization. Deleting a Namespace deletes every object in it, including \
     those no engine manages; deleting a CRD deletes all its custom resources. Argo CD keeps an object \
     annotated Prune=false (the Application then shows it OutOfSync) and, with Delete=false, keeps it when \
     the Application is deleted (argoproj/argo-cd docs/user-guide/sync-options.md); Flux skips pruning and \
     garbage collection of an object annotated kustomize.toolkit.fluxcd.io/prune: disabled \
     (fluxcd/kustomize-controller docs/spec/v1/kustomizations.md).",
);

pub const PRIORITY_CLASS_NOT_OWNED: Rule = Rule::new(
    "ISVC044",
    Severity::Warning,
    "pods name a PriorityClass the output does not define: missing, or another owner's cluster-wide class",
)
.symptom(
    "the ReplicaSet cannot create pods: FailedCreate with `pods \"...\" is forbidden: no PriorityClass with name \
     online was found`; or the pods get another team's `online` class, with its value and preemption policy",
)
.fix(
    "let the platform define the tiers (isvc renders a PriorityClass per tier, named with \
     `priorityClassPrefix`, `isvc-` by default) and name those, or create the class before the pods",
)
.explain(
    "PriorityClasses are cluster-scoped: one `online` class serves every namespace, and its preemption policy \
     lets its pods preempt every lower-priority pod of every team on a node (pods without a class have \
     priority 0, or the globalDefault class's). The Priority admission plugin rejects a pod whose class does \
     not exist (kubernetes/kubernetes plugin/pkg/admission/priority/admission.go: `no PriorityClass with name \
     %v was found`). A class name shared with another owner means whoever applies last decides its value. \
     isvc checks that every class a rendered pod names is rendered too (system-node-critical and \
     system-cluster-critical excepted).",
);

/// The tenancy rules over one object.
pub(crate) fn check(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    if o.id.kind == "ResourceQuota" {
        quota_totals(cx, o, out);
    }
    if o.id.kind == "LimitRange" {
        plain_container(cx, o, out);
    }
    if o.id.kind == "ClusterQueue" {
        reclaim_inverts_priority(cx, o, out);
    }
    if matches!(o.id.kind.as_str(), "Namespace" | "CustomResourceDefinition") {
        prunable(o, out);
    }
    if let Some(w) = cx.workload_of(o) {
        quota_fields(cx, w, out);
        limit_ranges(cx, w, out);
        priority_class_defined(cx, w, out);
    }
}

fn describe(u: &Usage) -> String {
    let parts: Vec<String> = u.parts.iter().map(|(n, q)| format!("{n}: {q}")).collect();
    let used = u.used.as_ref().map_or_else(|| "0".to_string(), Quantity::to_string);
    format!("{} would be {used}, above the hard limit of {} ({})", u.resource, u.hard, parts.join(", "))
}

fn quota_totals(cx: &Context<'_>, quota: &Object, out: &mut Vec<Finding>) {
    let at_min: Vec<&Usage> = quota_usage(cx, quota, Bound::Min).iter().filter(|u| u.exceeded()).collect();
    for u in &at_min {
        out.push(Finding::new(QUOTA_EXCEEDED, quota, format!("at steady state, {}", describe(u))));
    }
    let at_max = quota_usage(cx, quota, Bound::Max).iter().filter(|u| u.exceeded());
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
    for p in quota_field_problems(cx, w) {
        out.push(Finding::new(QUOTA_EXCEEDED, w.object, p));
    }
}

/// The ResourceQuota keys a workload's containers leave unset, which makes
/// the quota admission refuse every pod, one line each.
pub(crate) fn quota_field_problems(cx: &Context<'_>, w: &Workload<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let ns = namespace(w.object);
    let limit_ranges = cx.objects_of_kind(ns, "LimitRange");
    for quota in cx.objects_of_kind(ns, "ResourceQuota").iter().filter(|q| scopes_known(q.view())) {
        let hard = quota.view().at("/spec/hard").and_then(View::as_object);
        let mut missing: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (template, _) in w.templates.iter().filter(|(t, _)| in_scope(cx, quota.view(), t, limit_ranges)) {
            for c in containers_in(template).chain(init_containers_in(template)) {
                let e = effective(c, limit_ranges);
                for (key, kind, resource) in REQUIRED_BY_QUOTA {
                    let set = if kind == "requests" { &e.requests } else { &e.limits };
                    if hard.is_some_and(|h| h.get(key).is_some()) && !set.contains_key(resource) {
                        missing.entry(key).or_default().insert(container_name(c));
                    }
                }
            }
        }
        for (key, names) in missing {
            let names: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
            out.push(format!(
                "{} constrains {key}, which container {} does not set: every pod is refused (must specify {key})",
                quota.id,
                names.join(", ")
            ));
        }
    }
    out
}

/// Checks one set of requests and limits (a container's, or a pod's sums)
/// against a LimitRange item; `per` is the item's type.
fn bounds(item: View<'_>, what: &str, e: &Effective, lr: &str, per: &str, problems: &mut Vec<String>) {
    for (r, max) in resource_list(item.field("max")) {
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
    for (r, min) in resource_list(item.field("min")) {
        match e.requests.get(&r) {
            None => {
                problems.push(format!("{what} sets no {r} request, but LimitRange {lr} needs at least {min} per {per}"))
            }
            Some(q) if *q < min => problems
                .push(format!("{what}: {r} request {q} is below the minimum of {min} per {per} in LimitRange {lr}")),
            Some(_) => {}
        }
    }
    for (r, ratio) in resource_list(item.field("maxLimitRequestRatio")) {
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

/// Whether `resource` is an extended resource (`nvidia.com/gpu`): a name
/// with a domain, outside the `kubernetes.io` ones.
fn extended(resource: &str) -> bool {
    resource.split_once('/').is_some_and(|(domain, _)| !domain.ends_with("kubernetes.io"))
}

/// What LimitRange `lr` (with the others of its namespace) does to a
/// container that sets no requests or limits: extended resources it gives
/// the container, and the bounds the container then fails.
fn plain_container(cx: &Context<'_>, lr: &Object, out: &mut Vec<Finding>) {
    let ns = namespace(lr);
    let lrs = cx.objects_of_kind(ns, "LimitRange");
    let name = format!("{ns}/{}", lr.id.name);
    let plain = serde_json::json!({"name": "plain"});
    let e = effective(&plain, lrs);
    let what = "a container that sets no resources";
    for (r, by) in e.defaulted_limits.iter().filter(|(r, by)| extended(r) && **by == name) {
        let Some(limit) = e.limits.get(r).filter(|l| **l > Quantity::zero()) else { continue };
        let request = e.requests.get(r).map_or_else(|| limit.to_string(), Quantity::to_string);
        let explicit = items(lr, "Container").any(|i| i.at("/default").and_then(|d| d.field(r)).is_some());
        let why = if explicit { "its default" } else { "a max without a default becomes the default" };
        out.push(Finding::new(
            LIMIT_RANGE_INJECTS,
            lr,
            format!(
                "{what} (a sidecar, an init container, `kubectl debug`) in namespace {ns} is given {r}: {limit} as \
                 its limit and {request} as its request by LimitRange {by}: {why}"
            ),
        ));
    }
    let mut problems = Vec::new();
    for item in items(lr, "Container") {
        bounds(item, what, &e, &name, "Container", &mut problems);
    }
    let pod = pod_resources(&serde_json::json!({"spec": {"containers": [plain]}}), lrs);
    for item in items(lr, "Pod") {
        bounds(item, "a pod of such containers", &pod, &name, "Pod", &mut problems);
    }
    problems.dedup();
    for p in problems {
        out.push(Finding::new(LIMIT_RANGE_INJECTS, lr, format!("{p}: LimitRanger rejects it")));
    }
}

/// Pods naming a PriorityClass the run does not render.
fn priority_class_defined(cx: &Context<'_>, w: &Workload<'_>, out: &mut Vec<Finding>) {
    let mut named: Vec<&str> = w
        .templates
        .iter()
        .filter_map(|(t, _)| t.at("/spec/priorityClassName").and_then(View::as_str))
        .filter(|c| !matches!(*c, "system-node-critical" | "system-cluster-critical"))
        .filter(|c| cx.object("PriorityClass", "", c).is_none())
        .collect();
    named.dedup();
    for class in named {
        out.push(Finding::new(
            PRIORITY_CLASS_NOT_OWNED,
            w.object,
            format!(
                "its pods name PriorityClass {class}, which the output does not define: the API server refuses \
                 them if it does not exist, and another owner's class of that name applies cluster-wide"
            ),
        ));
    }
}

/// A Namespace or CRD without the annotations that keep Argo CD and Flux
/// from deleting it.
fn prunable(o: &Object, out: &mut Vec<Finding>) {
    let annotations = o.value.at("/metadata/annotations");
    let get = |k: &str| annotations.and_then(|a| a.field(k)).and_then(Value::as_str).unwrap_or_default();
    let argo: Vec<&str> = get(crate::model::labels::ARGOCD_SYNC_OPTIONS).split(',').map(str::trim).collect();
    let mut missing = Vec::new();
    if !argo.contains(&"Prune=false") {
        missing.push("Argo CD prunes it (no Prune=false)");
    }
    if !argo.contains(&"Delete=false") {
        missing.push("deleting the Argo CD Application deletes it (no Delete=false)");
    }
    // Flux compares case-insensitively in current releases, exactly in older ones.
    let flux = o.value.at("/metadata/labels").and_then(|l| l.field("kustomize.toolkit.fluxcd.io/prune"));
    if get("kustomize.toolkit.fluxcd.io/prune") != "disabled" && flux.and_then(Value::as_str) != Some("disabled") {
        missing.push("Flux prunes it (no kustomize.toolkit.fluxcd.io/prune: disabled)");
    }
    if missing.is_empty() {
        return;
    }
    let what = if o.id.kind == "Namespace" {
        "deleting it deletes everything in the namespace"
    } else {
        "deleting it deletes every custom resource of the kind"
    };
    out.push(Finding::new(PRUNABLE_BY_GITOPS, o, format!("{}: {what}", missing.join("; "))));
}

/// The priority of a workload's pods as Kueue sees it: the
/// WorkloadPriorityClass its `kueue.x-k8s.io/priority-class` label names,
/// else the pods' PriorityClass, else 0.
fn kueue_priority(cx: &Context<'_>, w: &Workload<'_>) -> i64 {
    let value = |kind: &str, name: &str| {
        cx.object(kind, "", name).and_then(|c| c.view().field("value")).and_then(View::as_i64).unwrap_or(0)
    };
    let label = w.object.view().at("/metadata/labels").and_then(|l| l.field(crate::model::labels::PRIORITY_LABEL));
    if let Some(name) = label.and_then(View::as_str) {
        return value("WorkloadPriorityClass", name);
    }
    let class = w.templates.first().and_then(|(t, _)| t.at("/spec/priorityClassName")).and_then(View::as_str);
    class.map_or(0, |c| value("PriorityClass", c))
}

/// The ClusterQueue a workload is queued in, through its LocalQueue.
fn cluster_queue_of<'a>(cx: &Context<'a>, w: &Workload<'a>) -> Option<&'a str> {
    let labels = w.object.view().at("/metadata/labels")?;
    let queue = labels.field(crate::model::labels::QUEUE_LABEL)?.as_str()?;
    cx.object("LocalQueue", namespace(w.object), queue)?.view().at("/spec/clusterQueue")?.as_str()
}

/// A ClusterQueue with `reclaimWithinCohort: Any` whose workloads rank below
/// workloads of another ClusterQueue of its cohort.
fn reclaim_inverts_priority(cx: &Context<'_>, cq: &Object, out: &mut Vec<Finding>) {
    if cq.value.at("/spec/preemption/reclaimWithinCohort").and_then(Value::as_str) != Some("Any") {
        return;
    }
    let cohort_of = |name: &str| {
        cx.object("ClusterQueue", "", name)
            .and_then(|q| q.view().at("/spec/cohortName").or_else(|| q.view().at("/spec/cohort")))
            .and_then(View::as_str)
    };
    let Some(cohort) = cohort_of(&cq.id.name) else { return };
    // (ClusterQueue, priority, workload) of every queued workload in the cohort.
    let mut queued: Vec<(&str, i64, String)> = cx
        .all_workloads()
        .filter_map(|w| {
            let q = cluster_queue_of(cx, w)?;
            (cohort_of(q) == Some(cohort))
                .then(|| (q, kueue_priority(cx, w), format!("{}/{}", namespace(w.object), w.object.id.name)))
        })
        .collect();
    queued.sort();
    let Some((_, lowest, low_name)) =
        queued.iter().filter(|(q, _, _)| *q == cq.id.name).min_by_key(|(_, p, _)| *p).cloned()
    else {
        return;
    };
    // One finding per other queue, naming its highest-priority workload.
    let mut top: BTreeMap<&str, (i64, &str)> = BTreeMap::new();
    for (q, p, name) in queued.iter().filter(|(q, p, _)| *q != cq.id.name && *p > lowest) {
        if top.get(q).is_none_or(|(best, _)| p > best) {
            top.insert(q, (*p, name));
        }
    }
    for (q, (p, name)) in top {
        out.push(Finding::new(
            KUEUE_RECLAIM_INVERTS_PRIORITY,
            cq,
            format!(
                "reclaimWithinCohort: Any lets its workloads ({low_name}, priority {lowest}) evict those of \
                 ClusterQueue {q} in cohort {cohort} that borrowed ({name}, priority {p}), irrespective of priority"
            ),
        ));
    }
}

fn limit_ranges(cx: &Context<'_>, w: &Workload<'_>, out: &mut Vec<Finding>) {
    for p in limit_range_problems(cx, w) {
        out.push(Finding::new(LIMIT_RANGE_VIOLATION, w.object, p));
    }
}

/// What LimitRanger refuses of a workload's pods, one line each.
pub(crate) fn limit_range_problems(cx: &Context<'_>, w: &Workload<'_>) -> Vec<String> {
    let ns = namespace(w.object);
    let lrs = cx.objects_of_kind(ns, "LimitRange");
    if lrs.is_empty() {
        return Vec::new();
    }
    let mut problems = Vec::new();
    for (template, _) in &w.templates {
        for c in containers_in(template).chain(init_containers_in(template)) {
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
    problems
}
