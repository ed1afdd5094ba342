//! An object in the small form the index ([`super::index::Context`]) and
//! the rules' lookups read of it: what a compile keeps of each object of
//! a namespace it checks in parts (`compiler::parts`), where every rule
//! runs on its own object whole and reads the others through the index.
//!
//! What is kept was read off every reader: the index as it builds itself
//! (pod templates and their labels, replica counts and autoscaler bounds;
//! identity and kind it reads off `Object::id`, as every reader does),
//! every lookup of the rules, of admission (quota use with the
//! LimitRange's defaults, priority classes, Kueue's queue labels) and of
//! the compiler's namespace stage (33 call sites). A rule never
//! reads a looked-up object's probes, environment, command, volumes or
//! security context, nor an autoscaler's metrics and behaviour: those, the
//! bulk of a serving Deployment, are left out. The integration tests
//! compile every input of the harness both whole and in parts of one
//! service, and hold the output and every finding equal
//! (tests/it/harness.rs); every test build of `check::run` runs the rules
//! again with lookups answered from skeletons ([`crate::check::run_with`]).
//!
//! What is kept is held in the compact form ([`crate::model::compact`]),
//! the object's `value` left `null`: every reader of a looked-up object
//! reads it through [`Object::view`], which reads either form. As JSON
//! values, the skeletons of 10,000 services in one namespace took 87 MB
//! of a 140 MB heap (maps of a few entries, each with its hash table);
//! `render --stdout` of them peaked at 186 MiB, and at 122 MiB in this
//! form, its pod templates' specs kept once (benches/README.md).

use serde_json::{Map, Value};

use crate::model::compact::{Compact, Shared};
use crate::model::labels::PREEMPTIBLE_ANNOTATION;
use crate::model::objects::Object;

/// `o` in the form the index and lookups read: its identity, owner,
/// source and place, and the fields of its value named below, moved out
/// of it (the rest is freed).
///
/// A pod template's `spec` (its containers' names, ports and resources) is
/// kept once for the objects whose are the same, in `shared` (those of
/// one model and size: a namespace of 10,000 generated services holds a
/// few dozen).
pub fn skeleton(o: Object, shared: &Shared) -> Object {
    let kind = o.id.kind.as_str();
    // Identity (`apiVersion`, `kind`, name and namespace) is read off
    // `o.id`, never off the value: at 10,000 services in one namespace the
    // value's copy of it took about a fifth of the skeletons' room.
    let kept = keep(o.value, |key, v| match key {
        "metadata" => metadata(v, kind),
        "spec" => Some(spec(v, kind)),
        // A PriorityClass's (the platform's, kept whole; a template may
        // render one).
        "value" | "globalDefault" => Some(v),
        _ => None,
    });
    let mut summary = Compact::from(kept);
    for path in crate::model::kinds::pod_template_paths(kind) {
        summary.share_at(&format!("{path}/spec"), shared);
    }
    Object { value: Value::Null, summary: Some(summary), file: None, ..o }
}

/// The `metadata` of an object of `kind` that lookups read, if any of it.
/// A Service's labels are matched by monitors' selectors, a Namespace's
/// by a Gateway's `allowedRoutes`; of another object's labels, only
/// Kueue's (its queue and priority) are read. A PriorityClass's
/// preemptible annotation is read by admission. (The platform's
/// Namespaces and PriorityClasses are kept whole; these are for a
/// template that renders one.)
fn metadata(v: Value, kind: &str) -> Option<Value> {
    let Value::Object(mut m) = v else { return None };
    let all = matches!(kind, "Service" | "Namespace");
    let mut kept = Vec::with_capacity(2);
    // The map `name` of `m` with the keys `pick` keeps, where any is kept.
    let mut keep_in = |name: &str, pick: &dyn Fn(&str) -> bool| {
        if let Some(map) = m.swap_remove(name).map(|v| keep(v, |k, v| pick(k).then_some(v)))
            && map.as_object().is_some_and(|o| !o.is_empty())
        {
            kept.push((name.to_string(), map));
        }
    };
    keep_in("labels", &|k| all || k.starts_with("kueue.x-k8s.io/"));
    if kind == "PriorityClass" {
        keep_in("annotations", &|k| k == PREEMPTIBLE_ANNOTATION);
    }
    (!kept.is_empty()).then(|| Value::Object(Map::from_iter(kept)))
}

/// The fields of a map `v` that `pick` keeps, in their order, as it gives
/// them; any other value as it is. The map is made at its size: one grown
/// a field at a time takes up to twice its fields' room.
fn keep(v: Value, pick: impl Fn(&str, Value) -> Option<Value>) -> Value {
    match v {
        Value::Object(map) => {
            let kept: Vec<(String, Value)> = map.into_iter().filter_map(|(k, v)| pick(&k, v).map(|v| (k, v))).collect();
            let mut out = Map::with_capacity(kept.len());
            for (k, v) in kept {
                out.insert(k, v);
            }
            Value::Object(out)
        }
        other => other,
    }
}

/// An object's `spec`, of any kind: a workload's own `selector` is read
/// by no lookup (a workload is found by its pod templates' labels), a
/// Service's ports for their numbers and targets alone.
fn spec(v: Value, kind: &str) -> Value {
    let workload = crate::model::kinds::runs_pods(kind);
    keep(v, |key, v| match key {
        "template" => Some(template(v)),
        "selector" if workload => None,
        "ports" => Some(each(v, |p| keep(p, |k, v| matches!(k, "port" | "targetPort").then_some(v)))),
        "leaderWorkerTemplate" => Some(keep(v, |k, v| match k {
            "size" => Some(v),
            "leaderTemplate" | "workerTemplate" => Some(template(v)),
            _ => None,
        })),
        // Workloads: replica counts and rollout; the selector of a Service,
        // an InferencePool, a PodDisruptionBudget, a monitor.
        "replicas" | "parallelism" | "selector" | "strategy" | "rolloutStrategy"
        // Services and InferencePools.
        | "type" | "endpointPickerRef"
        // Autoscalers (HorizontalPodAutoscaler, ScaledObject).
        | "scaleTargetRef" | "minReplicas" | "maxReplicas" | "minReplicaCount" | "maxReplicaCount"
        // HTTPRoutes.
        | "rules" | "parentRefs"
        // NetworkPolicies.
        | "podSelector" | "policyTypes" | "ingress"
        // PersistentVolumeClaims, ResourceQuotas, LimitRanges.
        | "resources" | "hard" | "scopes" | "scopeSelector" | "limits"
        // Kueue's queues.
        | "clusterQueue" | "cohortName" | "cohort" => Some(v),
        _ => None,
    })
}

/// A pod template: its labels, and what admission counts of its pods.
fn template(v: Value) -> Value {
    keep(v, |key, v| match key {
        "metadata" => Some(keep(v, |k, v| (k == "labels").then_some(v))),
        "spec" => Some(keep(v, |k, v| match k {
            "priorityClassName" | "overhead" | "activeDeadlineSeconds" => Some(v),
            "containers" | "initContainers" => Some(each(v, container)),
            _ => None,
        })),
        _ => None,
    })
}

/// A container: its name, ports (each its name and number, which a
/// Service's `targetPort` names) and resources (an init container's restart
/// policy makes it a sidecar, counted beside the others).
fn container(v: Value) -> Value {
    keep(v, |k, v| match k {
        "ports" => Some(each(v, |p| keep(p, |k, v| matches!(k, "name" | "containerPort").then_some(v)))),
        "name" | "resources" | "restartPolicy" => Some(v),
        _ => None,
    })
}

/// Each item of a list `v` as `f` makes it; any other value as it is.
fn each(v: Value, f: impl Fn(Value) -> Value) -> Value {
    match v {
        Value::Array(list) => Value::Array(list.into_iter().map(f).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::objects::ObjectId;
    use serde_json::json;

    #[test]
    fn a_deployment_keeps_what_lookups_read_and_loses_the_rest_its_selector_too() {
        let value = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "m", "namespace": "ns", "labels": {"a": "b", "kueue.x-k8s.io/queue-name": "q"}, "annotations": {"x": "y"}},
            "spec": {
                "replicas": 2, "selector": {"matchLabels": {"a": "b"}},
                "strategy": {"type": "RollingUpdate"},
                "template": {
                    "metadata": {"labels": {"a": "b"}, "annotations": {"x": "y"}},
                    "spec": {
                        "priorityClassName": "p",
                        "containers": [{
                            "name": "c", "image": "i", "args": ["--port", "8000"],
                            "ports": [{"name": "http", "containerPort": 8000, "protocol": "TCP", "hostPort": 80}],
                            "resources": {"limits": {"nvidia.com/gpu": 1}},
                            "readinessProbe": {"httpGet": {"path": "/health"}},
                        }],
                        "initContainers": [{"name": "s", "restartPolicy": "Always", "command": ["x"]}],
                        "volumes": [{"name": "shm"}],
                    },
                },
            },
        });
        let o = Object::new(ObjectId::new("apps/v1", "Deployment", Some("ns"), "m"), value).owned_by("m");
        let s = skeleton(o.clone(), &Shared::default());
        assert_eq!(s.value, Value::Null);
        assert_eq!(
            s.view().to_json(),
            json!({
                "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}},
                "spec": {
                    "replicas": 2,
                    "strategy": {"type": "RollingUpdate"},
                    "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {
                            "priorityClassName": "p",
                            "containers": [{
                                "name": "c", "ports": [{"name": "http", "containerPort": 8000}],
                                "resources": {"limits": {"nvidia.com/gpu": 1}},
                            }],
                            "initContainers": [{"name": "s", "restartPolicy": "Always"}],
                        },
                    },
                },
            })
        );
        assert_eq!((s.id, s.owner), (o.id, o.owner));
    }

    #[test]
    fn a_service_keeps_its_labels_for_monitors_selectors_and_its_ports_numbers() {
        let value = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "m", "namespace": "ns", "labels": {"app": "m"}, "annotations": {"x": "y"}},
            "spec": {"selector": {"app": "m"}, "ports": [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]},
        });
        let o = Object::new(ObjectId::new("v1", "Service", Some("ns"), "m"), value);
        assert_eq!(
            skeleton(o, &Shared::default()).view().to_json(),
            json!({"metadata": {"labels": {"app": "m"}}, "spec": {"selector": {"app": "m"}, "ports": [{"port": 8000, "targetPort": "http"}]}})
        );
    }

    #[test]
    fn a_namespace_keeps_its_labels_for_gateways_selectors() {
        let value =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {"gateway": "yes"}}});
        let o = Object::new(ObjectId::new("v1", "Namespace", None, "ns"), value).owned_by("m");
        assert_eq!(
            skeleton(o, &Shared::default()).view().to_json(),
            json!({"metadata": {"labels": {"gateway": "yes"}}})
        );
    }

    #[test]
    fn a_priority_class_keeps_its_value_and_whether_it_is_preemptible() {
        let value = json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "spot", "labels": {"tier": "spot"}, "annotations": {"ai.example.com/preemptible": "true", "x": "y"}},
            "value": 100, "globalDefault": false, "description": "spot",
        });
        let o = Object::new(ObjectId::new("scheduling.k8s.io/v1", "PriorityClass", None, "spot"), value).owned_by("m");
        assert_eq!(
            skeleton(o, &Shared::default()).view().to_json(),
            json!({"metadata": {"annotations": {"ai.example.com/preemptible": "true"}}, "value": 100, "globalDefault": false})
        );
    }

    #[test]
    fn an_autoscaler_keeps_its_target_and_bounds_not_its_metrics_nor_its_identity() {
        let value = json!({
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "m", "labels": {"app": "m"}},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "m"}, "minReplicas": 1, "maxReplicas": 3,
                "metrics": [{"type": "Pods"}], "behavior": {"scaleUp": {}},
            },
        });
        let o = Object::new(ObjectId::new("autoscaling/v2", "HorizontalPodAutoscaler", Some("ns"), "m"), value);
        assert_eq!(
            skeleton(o, &Shared::default()).view().to_json(),
            json!({"spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "m"}, "minReplicas": 1, "maxReplicas": 3,
            }})
        );
    }
}
