//! Scaling and rollout rules: autoscalers, disruption budgets and rolling
//! updates that cannot do their job.

use crate::base::value::At;
use serde_json::Value;

use super::{Context, Finding, Rule, Severity, View, Workload, labels, namespace};
use crate::model::objects::Object;

pub const AUTOSCALER_TARGET_MISSING: Rule = Rule::new(
    "ISVC005",
    Severity::Error,
    "an autoscaler must point at a rendered Deployment and have minReplicas <= maxReplicas",
)
.symptom(
    "the HorizontalPodAutoscaler shows `FailedGetScale` (target not found) and never scales, or the API server \
     rejects it (`minReplicas must be less than or equal to maxReplicas`) and the GitOps sync fails",
)
.fix("point spec.scaleTargetRef at the service's Deployment (kind and name) and keep minReplicas <= maxReplicas")
.explain(
    "An autoscaler reads and writes the scale subresource of its target. If no object of that kind and name \
     exists in the namespace, it reports an error and does nothing; bounds in the wrong order are invalid.",
);

pub const AUTOSCALER_ON_ZERO_REPLICAS: Rule =
    Rule::new("ISVC016", Severity::Error, "an autoscaler on a workload with zero replicas does nothing")
        .symptom(
            "the service stays at zero pods whatever the load; `kubectl describe hpa` shows `ScalingActive False \
     ScalingDisabled: scaling is disabled since the replica count of the target is zero`",
        )
        .fix(
            "scale to zero by removing the autoscaler (isvc does this for replicas: 0), or drop spec.replicas from the \
     workload so the autoscaler owns the count",
        )
        .explain(
            "The HorizontalPodAutoscaler switches itself off while its target has zero replicas, so that a service \
     deliberately scaled to zero stays there. A workload that says replicas: 0 next to an autoscaler is \
     therefore never scaled up again. An autoscaler with minReplicas: 0 is only accepted with the alpha \
     HPAScaleToZero feature gate.",
        );

pub const REPLICAS_UNDER_AUTOSCALER: Rule = Rule::new(
    "ISVC017",
    Severity::Warning,
    "a workload's spec.replicas outside its autoscaler's bounds is rescaled at once and put back on every sync",
)
.symptom(
    "replica counts flap: the autoscaler moves the count into [minReplicas, maxReplicas] within seconds \
     (`New size: 1; reason: Current number of replicas above Spec.MaxReplicas`), the next GitOps sync or \
     `kubectl apply` writes the committed number back, pods are killed and created again",
)
.fix(
    "keep spec.replicas between the autoscaler's minReplicas and maxReplicas (isvc renders the service's \
     replicas, which its bounds max(1, replicas/2) to 3 x replicas contain), and let the GitOps engine ignore \
     the field after creation (isvc's Argo CD and Flux objects do)",
)
.explain(
    "The HorizontalPodAutoscaler rescales a target whose count is outside its bounds without reading any \
     metric (kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go, reconcileAutoscaler); inside \
     the bounds it changes the count only when its metric says so. A count inside the bounds is therefore the \
     count the service starts at, and stays until the metric moves it. Leaving spec.replicas out instead \
     creates the workload at 1 pod (the API server's default), which an HPA with minReplicas 1 never raises \
     without a metric. After creation the count belongs to the autoscaler: Argo CD needs ignoreDifferences \
     on /spec/replicas with RespectIgnoreDifferences=true, Flux a spec.ignore rule, or every sync writes the \
     committed number back.",
);

pub const PDB_BLOCKS_DISRUPTION: Rule =
    Rule::new("ISVC018", Severity::Warning, "a PodDisruptionBudget that allows no disruption blocks node drains")
        .symptom(
            "`kubectl drain`, node upgrades and the cluster autoscaler's scale-down hang with `Cannot evict pod as it \
     would violate the pod's disruption budget`; GPU nodes cannot be upgraded or reclaimed",
        )
        .fix(
            "allow at least one disruption at the lowest replica count: maxUnavailable: 1, or a minAvailable below \
     the minimum number of pods",
        )
        .explain(
            "A PodDisruptionBudget limits voluntary evictions (drains, not rollouts or crashes). With maxUnavailable: \
     0, or minAvailable equal to the number of pods the workload runs at its low end (its autoscaler's \
     minimum), no pod may ever be evicted, so every drain of a node with such a pod waits forever. A \
     percentage in minAvailable is rounded up: 50% of one pod is one pod.",
        );

pub const ROLLOUT_CANNOT_PROCEED: Rule =
    Rule::new("ISVC019", Severity::Error, "a rolling update that can neither add nor remove a pod cannot proceed")
        .symptom(
            "the API server rejects the Deployment (`may not be 0 when maxSurge is 0`), or the rollout stalls with \
     the new ReplicaSet's pods refused (`exceeded quota`) until progressDeadlineSeconds, and Argo CD shows the \
     application Degraded",
        )
        .fix(
            "use maxSurge: 0 with maxUnavailable: 1 (isvc's default: no spare GPU or quota needed), or raise the quota \
     to hold the surge pods",
        )
        .explain(
            "A RollingUpdate replaces pods by starting up to maxSurge new ones above the desired count and stopping \
     up to maxUnavailable old ones. Both 0 is invalid. Surge pods need room: with a ResourceQuota in the \
     namespace, the rendered services at their minimum replicas plus the surge pods must fit its hard limits \
     (GPUs above all), or the new pods are refused and the rollout never progresses. Left out, the strategy \
     defaults to 25% surge, which rounds up to at least one extra pod.",
        );

pub const METRIC_NOT_SCRAPED: Rule = Rule::new(
    "ISVC040",
    Severity::Error,
    "a KEDA ScaledObject queries Prometheus for a metric nothing scrapes: KEDA reads it as 0 and never scales",
)
.symptom(
    "KEDA without a scrape: the ScaledObject is Ready and its HPA exists, but the query returns no series, KEDA \
     counts that as 0 waiting requests, and the service never scales up however long the queue grows",
)
.fix(
    "add `monitoring` to the platform file (isvc then renders a ServiceMonitor for every service, whose labels \
     the default KEDA query selects on), or scrape the pods another way and disable this rule for the service",
)
.explain(
    "KEDA's Prometheus scaler treats an empty query result as the value 0 unless the trigger sets \
     ignoreNullValues: \"false\" (kedacore/keda pkg/scalers/prometheus_scaler.go, ExecutePromQuery: `if \
     s.metadata.IgnoreNullValues { return 0, nil }`). A query over vllm:num_requests_waiting is empty until \
     Prometheus scrapes vLLM's /metrics, which takes a ServiceMonitor or PodMonitor selecting the pods. \
     isvc looks for one in the workload's namespace: a ServiceMonitor whose selector matches a Service that \
     selects the pods, or a PodMonitor whose selector matches the pods.",
);

/// The scaling rules over one object.
pub(crate) fn check(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    match o.id.kind.as_str() {
        "HorizontalPodAutoscaler" => autoscaler(cx, o, out),
        "PodDisruptionBudget" => disruption_budget(cx, o, out),
        "ScaledObject" => scaled_object(cx, o, out),
        _ => {}
    }
    if let Some(w) = cx.workload_of(o) {
        if let (Some(hpa), Some(replicas)) = (cx.autoscaler_of(o), o.value.at("/spec/replicas").and_then(Value::as_i64))
            && replicas > 0
            && !(w.min_replicas..=w.max_replicas).contains(&replicas)
        {
            out.push(Finding::new(
                REPLICAS_UNDER_AUTOSCALER,
                o,
                format!(
                    "sets spec.replicas: {replicas} outside the bounds of {} ({} to {}): it rescales the workload to {} at once",
                    hpa.id,
                    w.min_replicas,
                    w.max_replicas,
                    replicas.clamp(w.min_replicas, w.max_replicas)
                ),
            ));
        }
        if crate::model::kinds::runs_pods(&o.id.kind) {
            rollout(cx, w, out);
        }
    }
}

fn autoscaler(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    let target = o.value.at("/spec/scaleTargetRef/name").and_then(Value::as_str).unwrap_or_default();
    let kind = o.value.at("/spec/scaleTargetRef/kind").and_then(Value::as_str).unwrap_or_default();
    match cx.object(kind, namespace(o), target) {
        None => out.push(Finding::new(
            AUTOSCALER_TARGET_MISSING,
            o,
            format!("scaleTargetRef {kind}/{target} is not rendered"),
        )),
        Some(t) if t.view().at("/spec/replicas").and_then(View::as_i64) == Some(0) => out.push(Finding::new(
            AUTOSCALER_ON_ZERO_REPLICAS,
            o,
            format!("its target {} has spec.replicas: 0, so the autoscaler never scales it", t.id),
        )),
        Some(_) => {}
    }
    let min = o.value.at("/spec/minReplicas").and_then(Value::as_i64).unwrap_or(1);
    let max = o.value.at("/spec/maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    if min > max {
        out.push(Finding::new(AUTOSCALER_TARGET_MISSING, o, format!("minReplicas {min} is above maxReplicas {max}")));
    }
    if min == 0 {
        out.push(Finding::new(
            AUTOSCALER_ON_ZERO_REPLICAS,
            o,
            "minReplicas is 0, which needs the alpha HPAScaleToZero feature gate; without it the API server rejects it",
        ));
    }
}

/// A ScaledObject with a Prometheus trigger whose target's pods nothing in
/// the namespace scrapes.
fn scaled_object(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    let triggers = o.value.at("/spec/triggers").and_then(Value::as_array).into_iter().flatten();
    let Some(query) = triggers
        .filter(|t| t.field("type").and_then(Value::as_str) == Some("prometheus"))
        .find_map(|t| t.at("/metadata/query").and_then(Value::as_str))
    else {
        return;
    };
    let ns = namespace(o);
    let kind = o.value.at("/spec/scaleTargetRef/kind").and_then(Value::as_str).unwrap_or("Deployment");
    let name = o.value.at("/spec/scaleTargetRef/name").and_then(Value::as_str).unwrap_or_default();
    let Some(w) = cx.object(kind, ns, name).and_then(|t| cx.workload_of(t)) else { return };
    let mut pod_labels: Vec<_> = w.templates.iter().map(|(t, _)| labels(*t, "/metadata/labels")).collect();
    // A query of the endpoint picker's metrics (`llm_d_epp_*`, llm-d/llm-d-router
    // `pkg/epp/metrics/metrics.go`) reads the picker's pods: those of the
    // Service the pool of the workload's pods names.
    let mut whose = w.object.id.to_string();
    if query.contains("llm_d_epp_") {
        let picker = cx.selecting(ns, "InferencePool", &pod_labels).into_iter().find_map(|pool| {
            let sel = pool.view().at("/spec/selector")?;
            pod_labels.iter().any(|l| super::selector_matches(sel, *l)).then_some(())?;
            let svc = pool.view().at("/spec/endpointPickerRef/name").and_then(View::as_str)?;
            let svc = cx.object("Service", ns, svc)?;
            let selector = svc.view().at("/spec/selector").and_then(View::as_object)?;
            Some((svc.id.to_string(), cx.selected(ns, selector)))
        });
        if let Some((svc, pods)) = picker {
            whose = format!("the endpoint picker behind {svc}");
            pod_labels = pods.iter().map(|t| labels(t, "/metadata/labels")).collect();
        }
    }
    let selects_pods = |selector: Option<View<'_>>| {
        selector.is_some_and(|s| pod_labels.iter().any(|l| super::selector_matches(s, *l)))
    };
    // Each lookup by the labels of the pods (or Services) looked for: a
    // scan of every object of the kind for each ScaledObject would grow
    // with the square of the namespace.
    let by_pod_monitor =
        cx.selecting(ns, "PodMonitor", &pod_labels).iter().any(|m| selects_pods(m.view().at("/spec/selector")));
    let services: Vec<&Object> = cx
        .selecting(ns, "Service", &pod_labels)
        .into_iter()
        .filter(|svc| {
            let selector = svc.view().at("/spec/selector").map(|m| serde_json::json!({"matchLabels": m.to_json()}));
            selects_pods(selector.as_ref().map(View::from))
        })
        .collect();
    let service_labels: Vec<_> = services.iter().map(|svc| labels(svc.view(), "/metadata/labels")).collect();
    let by_service_monitor = cx.selecting(ns, "ServiceMonitor", &service_labels).iter().any(|m| {
        let Some(selector) = m.view().at("/spec/selector") else { return false };
        service_labels.iter().any(|l| super::selector_matches(selector, *l))
    });
    if !by_pod_monitor && !by_service_monitor {
        out.push(Finding::new(
            METRIC_NOT_SCRAPED,
            o,
            format!(
                "its Prometheus trigger queries `{query}`, but no ServiceMonitor or PodMonitor scrapes the pods of {whose}: \
                 KEDA reads the empty result as 0 and never scales up"
            ),
        ));
    }
}

/// An int-or-percent value resolved against `total`, rounded up or down.
pub(crate) fn scaled(v: Option<&Value>, total: i64, round_up: bool) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let percent: i64 = s.strip_suffix('%')?.parse().ok()?;
            let x = percent * total;
            Some(if round_up { (x + 99) / 100 } else { x / 100 })
        }
        _ => None,
    }
}

fn disruption_budget(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    let Some(selector) = o.value.at("/spec/selector") else { return };
    let selected: Vec<&Workload<'_>> = cx
        .workloads_selectable(namespace(o), selector)
        .into_iter()
        .filter(|w| w.templates.iter().any(|(t, _)| super::selector_matches(selector, labels(*t, "/metadata/labels"))))
        .collect();
    let pods: i64 = selected.iter().map(|w| w.pods(w.min_replicas)).sum();
    if pods == 0 {
        return;
    }
    let names: Vec<String> = selected.iter().map(|w| w.object.id.name.clone()).collect();
    let at = format!("{pod} {s} ({})", names.join(", "), pod = pods, s = if pods == 1 { "pod" } else { "pods" });
    let spec = &o.value["spec"];
    if let Some(0) = scaled(spec.field("maxUnavailable"), pods, true) {
        out.push(Finding::new(
            PDB_BLOCKS_DISRUPTION,
            o,
            format!(
                "maxUnavailable {} allows no eviction of the {at} it covers",
                super::show(spec.field("maxUnavailable"))
            ),
        ));
    } else if let Some(min) = scaled(spec.field("minAvailable"), pods, true).filter(|m| *m >= pods) {
        out.push(Finding::new(
            PDB_BLOCKS_DISRUPTION,
            o,
            format!(
                "minAvailable {} keeps all of the {at} it covers at their minimum ({min} of {pods}): no eviction is ever allowed",
                super::show(spec.field("minAvailable"))
            ),
        ));
    }
}

fn rollout(cx: &Context<'_>, w: &Workload<'_>, out: &mut Vec<Finding>) {
    let o = w.object;
    // A Deployment's strategy defaults to RollingUpdate with 25% / 25%
    // (apps/v1 defaults); a LeaderWorkerSet's rolloutStrategy to
    // RollingUpdate with maxUnavailable 1 and maxSurge 0 (kubernetes-sigs/lws
    // api/leaderworkerset/v1/leaderworkerset_types.go, kubebuilder defaults),
    // and it surges whole groups.
    let lws = o.id.kind == "LeaderWorkerSet";
    let strategy = o.view().at(if lws { "/spec/rolloutStrategy" } else { "/spec/strategy" });
    if strategy.and_then(|s| s.field("type")).and_then(View::as_str) == Some("Recreate") {
        return;
    }
    let rolling = strategy.and_then(|s| s.field(if lws { "rollingUpdateConfiguration" } else { "rollingUpdate" }));
    let default = |k: &str| match (lws, k) {
        (false, _) => Value::from("25%"),
        (true, "maxSurge") => Value::from(0),
        (true, _) => Value::from(1),
    };
    let field = |k: &str| rolling.and_then(|r| r.field(k)).map_or_else(|| default(k), View::to_json);
    let (surge, unavailable) = (field("maxSurge"), field("maxUnavailable"));
    let zero = |v: &Value| matches!(v.as_i64(), Some(0)) || v.as_str() == Some("0%");
    if zero(&surge) && zero(&unavailable) {
        out.push(Finding::new(
            ROLLOUT_CANNOT_PROCEED,
            o,
            format!("maxSurge and maxUnavailable are both 0: the API server rejects the {}", o.id.kind),
        ));
        return;
    }
    let replicas = w.start_replicas;
    let Some(extra) = scaled(Some(&surge), replicas, true).filter(|s| *s > 0 && replicas > 0) else { return };
    for quota in cx.objects_of_kind(namespace(o), "ResourceQuota") {
        if let Some((resource, needed, hard)) = crate::k8s::admission::surge_excess(cx, quota, w, extra) {
            out.push(Finding::new(
                ROLLOUT_CANNOT_PROCEED,
                o,
                format!(
                    "a rollout starts {extra} extra {}{} (maxSurge {}), but {} has no room for {}: {} needed, {} allowed",
                    if lws { "group" } else { "pod" },
                    if extra == 1 { "" } else { "s" },
                    super::show(Some(&surge)),
                    quota.id,
                    resource,
                    needed,
                    hard
                ),
            ));
        }
    }
}
