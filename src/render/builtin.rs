//! The built-in templates as code: each function builds the object its
//! template in `templates/` renders, straight from the service's values,
//! without writing text and parsing it back.
//!
//! The templates stay the reference and what users override. A template
//! that is not overridden is built here instead, and the tests hold the
//! two equal: `tests/it/builtin.rs` renders every example and generated
//! services both ways and compares every object, and the unit test below
//! pins each function to its template's identity. The semantics mirrored:
//! `{{ x }}` is the value of `x` (written as JSON and read back as YAML,
//! which changes no JSON value); `x or none` is null when `x` is falsy in
//! minijinja's sense (none, false, zero, empty); a `for` loop appends one
//! item per element; mapping entries whose value is null are dropped
//! afterwards, as [`super::drop_nulls`] does for a parsed-back template.

use serde_json::Value;
#[cfg(test)]
use serde_json::json;

/// A value as [`v!`] takes it: cloned from the service's values, moved, or
/// a literal.
trait IntoValue {
    fn into_value(self) -> Value;
}

impl IntoValue for &Value {
    fn into_value(self) -> Value {
        self.clone()
    }
}

impl IntoValue for Value {
    fn into_value(self) -> Value {
        self
    }
}

impl IntoValue for &str {
    fn into_value(self) -> Value {
        Value::String(self.to_string())
    }
}

impl IntoValue for i32 {
    fn into_value(self) -> Value {
        Value::from(self)
    }
}

impl IntoValue for bool {
    fn into_value(self) -> Value {
        Value::Bool(self)
    }
}

/// JSON-like literals, as `serde_json::json!` writes them, but with each
/// value cloned or moved in rather than serialized again, and every map
/// and list allocated at its final size.
macro_rules! v {
    ({ $($tt:tt)* }) => { v!(@object [] () $($tt)*) };
    ([ $($tt:tt)* ]) => { v!(@array [] () $($tt)*) };
    (@object [$(($k:literal, ($($val:tt)*)))*] ()) => {{
        #[allow(unused_mut)]
        let mut map = serde_json::Map::with_capacity(<[&str]>::len(&[$($k),*]));
        $( map.insert($k.to_string(), v!($($val)*)); )*
        Value::Object(map)
    }};
    (@object [$($done:tt)*] () $k:literal : $($rest:tt)*) => { v!(@entry [$($done)*] $k () $($rest)*) };
    (@entry [$($done:tt)*] $k:literal ($($val:tt)*) , $($rest:tt)*) => {
        v!(@object [$($done)* ($k, ($($val)*))] () $($rest)*)
    };
    (@entry [$($done:tt)*] $k:literal ($($val:tt)*)) => { v!(@object [$($done)* ($k, ($($val)*))] ()) };
    (@entry [$($done:tt)*] $k:literal ($($val:tt)*) $next:tt $($rest:tt)*) => {
        v!(@entry [$($done)*] $k ($($val)* $next) $($rest)*)
    };
    (@array [$(($($val:tt)*))*] ()) => { Value::Array(vec![$(v!($($val)*)),*]) };
    (@array [$($done:tt)*] ($($val:tt)+) , $($rest:tt)*) => { v!(@array [$($done)* ($($val)+)] () $($rest)*) };
    (@array [$($done:tt)*] ($($val:tt)+)) => { v!(@array [$($done)* ($($val)+)] ()) };
    (@array [$($done:tt)*] ($($val:tt)*) $next:tt $($rest:tt)*) => { v!(@array [$($done)*] ($($val)* $next) $($rest)*) };
    ($e:expr) => { IntoValue::into_value($e) };
}

/// `{{ x }}` of an absent `x`, and `x or none` of a falsy one.
static NULL: Value = Value::Null;

/// The values a template sees: the derivation serialized, as minijinja
/// sees it.
pub struct Ctx {
    root: Value,
}

impl Ctx {
    pub fn new(root: Value) -> Ctx {
        Ctx { root }
    }

    /// `{{ a.b.c }}`: the value at a dotted path (null where it is absent,
    /// which the caller's comparison with the template would show).
    fn get(&self, path: &str) -> &Value {
        let mut v = &self.root;
        for key in path.split('.') {
            match v.get(key) {
                Some(next) => v = next,
                None => return &NULL,
            }
        }
        v
    }

    /// `{{ a.b.c or none }}`.
    fn or_none(&self, path: &str) -> &Value {
        let v = self.get(path);
        if truthy(v) { v } else { &NULL }
    }

    /// `{% if a.b %}`.
    fn is(&self, path: &str) -> bool {
        truthy(self.get(path))
    }

    /// `[first..., {% for x in path %} x {% endfor %}]`.
    fn list(&self, first: Vec<Value>, path: &str) -> Value {
        let more = self.get(path).as_array().map_or(&[][..], Vec::as_slice);
        let mut items = Vec::with_capacity(first.len() + more.len());
        items.extend(first);
        items.extend(more.iter().cloned());
        Value::Array(items)
    }
}

/// minijinja's truthiness: none, false, zero and empty strings and
/// collections are false.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}

/// The object `template` renders for the service whose values are `c`, or
/// `None` when `template` is not a built-in one.
pub fn build(template: &str, c: &Ctx) -> Option<Value> {
    let mut value = match template {
        "deployment.yaml" => deployment(c),
        "service.yaml" => service(c),
        "horizontalpodautoscaler.yaml" => horizontal_pod_autoscaler(c),
        "poddisruptionbudget.yaml" => pod_disruption_budget(c),
        "configmap.yaml" => config_map(c),
        "leaderworkerset.yaml" => leader_worker_set(c),
        "scaledobject.yaml" => scaled_object(c),
        "httproute.yaml" => http_route(c),
        "inferencepool.yaml" => inference_pool(c),
        "inferenceobjective.yaml" => inference_objective(c),
        "servicemonitor.yaml" => service_monitor(c),
        "endpointpicker-serviceaccount.yaml" => picker_service_account(c),
        "endpointpicker-role.yaml" => picker_role(c),
        "endpointpicker-rolebinding.yaml" => picker_role_binding(c),
        "endpointpicker-configmap.yaml" => picker_config_map(c),
        "endpointpicker-service.yaml" => picker_service(c),
        "endpointpicker-deployment.yaml" => picker_deployment(c),
        "endpointpicker-poddisruptionbudget.yaml" => picker_pod_disruption_budget(c),
        "endpointpicker-servicemonitor.yaml" => picker_service_monitor(c),
        _ => return None,
    };
    super::drop_nulls(&mut value);
    Some(value)
}

/// `metadata` with `name` and `labels` at the given paths.
fn metadata(c: &Ctx, name: &str, labels: &str) -> Value {
    v!({
        "name": c.get(name),
        "namespace": c.get("namespace"),
        "labels": c.get(labels),
        "annotations": c.or_none("annotations"),
    })
}

fn http_probe(c: &Ctx, failure_threshold: &str) -> Value {
    v!({
        "httpGet": {
            "path": c.get("container.probes.path"),
            "port": c.get("container.port_name"),
            "scheme": "HTTP",
        },
        "periodSeconds": c.get("container.probes.period_seconds"),
        "timeoutSeconds": c.get("container.probes.timeout_seconds"),
        "successThreshold": 1,
        "failureThreshold": c.get(failure_threshold),
    })
}

fn shm_mount() -> Value {
    v!({"name": "shm", "mountPath": "/dev/shm"})
}

fn shm_volume(c: &Ctx) -> Value {
    v!({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": c.get("container.shm_size")}})
}

/// The serving pod's spec, shared by the Deployment and the leader of a
/// LeaderWorkerSet (which adds `command`).
fn serving_pod_spec(c: &Ctx, command: Option<&str>) -> Value {
    // A Deployment's container has no command: null, which is dropped.
    let command = command.map_or(Value::Null, |p| c.get(p).clone());
    let container = v!({
        "name": c.get("container.name"),
        "image": c.get("container.image"),
        "imagePullPolicy": c.get("container.image_pull_policy"),
        "command": command,
        "args": c.get("container.args"),
        "env": c.get("container.env"),
        "ports": [{
            "name": c.get("container.port_name"),
            "containerPort": c.get("container.port"),
            "protocol": "TCP",
        }],
        "resources": {
            "requests": c.get("container.requests"),
            "limits": c.get("container.limits"),
        },
        "securityContext": c.get("security.container"),
        "lifecycle": {"preStop": {"exec": {"command": c.get("drain.pre_stop")}}},
        "startupProbe": http_probe(c, "container.probes.startup_failure_threshold"),
        "livenessProbe": http_probe(c, "container.probes.liveness_failure_threshold"),
        "readinessProbe": http_probe(c, "container.probes.readiness_failure_threshold"),
        "volumeMounts": c.list(vec![shm_mount()], "container.volume_mounts"),
    });
    pod_spec(c, container, "volumes")
}

/// A serving or worker pod's spec around its one `container`, with
/// `/dev/shm` and the volumes at `volumes`.
fn pod_spec(c: &Ctx, container: Value, volumes: &str) -> Value {
    v!({
        "priorityClassName": c.get("priority_class"),
        "nodeSelector": c.or_none("container.node_selector"),
        "tolerations": c.or_none("container.tolerations"),
        "automountServiceAccountToken": c.get("security.automount_service_account_token"),
        "terminationGracePeriodSeconds": c.get("drain.termination_grace_period_seconds"),
        "securityContext": c.get("security.pod"),
        "initContainers": c.or_none("init_containers"),
        "containers": [container],
        "volumes": c.list(vec![shm_volume(c)], volumes),
    })
}

fn deployment(c: &Ctx) -> Value {
    v!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(c, "name", "workload_labels"),
        "spec": {
            "replicas": c.get("replicas"),
            "selector": {"matchLabels": c.get("selector")},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {
                    "maxSurge": c.get("rollout.max_surge"),
                    "maxUnavailable": c.get("rollout.max_unavailable"),
                },
            },
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": c.get("rollout.progress_deadline_seconds"),
            "template": {
                "metadata": {"labels": c.get("pod_labels"), "annotations": c.or_none("pod_annotations")},
                "spec": serving_pod_spec(c, None),
            },
        },
    })
}

fn leader_worker_set(c: &Ctx) -> Value {
    let worker = v!({
        "name": c.get("container.name"),
        "image": c.get("container.image"),
        "imagePullPolicy": c.get("container.image_pull_policy"),
        "command": c.get("multi_node.worker_command"),
        "env": c.get("container.env"),
        "resources": {
            "requests": c.get("container.requests"),
            "limits": c.get("container.limits"),
        },
        "securityContext": c.get("security.container"),
        "lifecycle": {"preStop": {"exec": {"command": c.get("drain.worker_pre_stop")}}},
        "startupProbe": {
            "exec": {"command": c.get("multi_node.worker_probe")},
            "periodSeconds": c.get("container.probes.period_seconds"),
            "timeoutSeconds": c.get("multi_node.worker_probe_timeout_seconds"),
            "successThreshold": 1,
            "failureThreshold": c.get("container.probes.startup_failure_threshold"),
        },
        "volumeMounts": c.list(vec![shm_mount()], "security_mounts"),
    });
    v!({
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": metadata(c, "name", "workload_labels"),
        "spec": {
            "replicas": c.get("replicas"),
            "startupPolicy": "LeaderCreated",
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {
                    "maxSurge": c.get("rollout.max_surge"),
                    "maxUnavailable": c.get("rollout.max_unavailable"),
                },
            },
            "leaderWorkerTemplate": {
                "size": c.get("multi_node.size"),
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {
                    "metadata": {"labels": c.get("pod_labels"), "annotations": c.or_none("pod_annotations")},
                    "spec": serving_pod_spec(c, Some("multi_node.leader_command")),
                },
                "workerTemplate": {
                    "metadata": {
                        "labels": c.get("multi_node.worker_labels"),
                        "annotations": c.or_none("security.pod_annotations"),
                    },
                    "spec": pod_spec(c, worker, "security_volumes"),
                },
            },
        },
    })
}

fn service(c: &Ctx) -> Value {
    v!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(c, "name", "labels"),
        "spec": {
            "type": "ClusterIP",
            "selector": c.get("selector"),
            "ports": [{
                "name": c.get("container.port_name"),
                "port": c.get("container.port"),
                "targetPort": c.get("container.port_name"),
                "protocol": "TCP",
            }],
        },
    })
}

/// The scaling behaviour the HPA and KEDA's HPA share.
fn behavior(c: &Ctx) -> Value {
    v!({
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 60}],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": c.get("autoscaler.scale_down_stabilization_seconds"),
            "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 120}],
        },
    })
}

fn scale_target(c: &Ctx) -> Value {
    v!({"apiVersion": c.get("workload.api_version"), "kind": c.get("workload.kind"), "name": c.get("name")})
}

fn horizontal_pod_autoscaler(c: &Ctx) -> Value {
    let target = v!({"type": "AverageValue", "averageValue": c.get("autoscaler.target_average_value")});
    let metric = if c.is("autoscaler.picker_service") {
        v!({
            "type": "Object",
            "object": {
                "describedObject": {"apiVersion": "v1", "kind": "Service", "name": c.get("autoscaler.picker_service")},
                "metric": {"name": c.get("autoscaler.metric")},
                "target": target,
            },
        })
    } else {
        v!({"type": "Pods", "pods": {"metric": {"name": c.get("autoscaler.metric")}, "target": target}})
    };
    v!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": metadata(c, "name", "labels"),
        "spec": {
            "scaleTargetRef": scale_target(c),
            "minReplicas": c.get("autoscaler.min_replicas"),
            "maxReplicas": c.get("autoscaler.max_replicas"),
            "metrics": [metric],
            "behavior": behavior(c),
        },
    })
}

fn scaled_object(c: &Ctx) -> Value {
    v!({
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": metadata(c, "name", "labels"),
        "spec": {
            "scaleTargetRef": scale_target(c),
            "pollingInterval": c.get("keda.polling_interval"),
            "minReplicaCount": c.get("autoscaler.min_replicas"),
            "maxReplicaCount": c.get("autoscaler.max_replicas"),
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": behavior(c)}},
            "triggers": [{
                "type": "prometheus",
                "metricType": "AverageValue",
                "metadata": {
                    "serverAddress": c.get("keda.server_address"),
                    "query": c.get("keda.query"),
                    "threshold": c.get("autoscaler.target_average_value"),
                },
            }],
        },
    })
}

fn pod_disruption_budget(c: &Ctx) -> Value {
    v!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata(c, "name", "labels"),
        "spec": {
            "maxUnavailable": c.get("disruption_budget.max_unavailable"),
            "selector": {"matchLabels": c.get("disruption_budget.selector")},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    })
}

fn config_map(c: &Ctx) -> Value {
    v!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(c, "name", "labels"),
        "data": c.get("adapters.data"),
    })
}

fn service_monitor(c: &Ctx) -> Value {
    v!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": metadata(c, "name", "monitoring.labels"),
        "spec": {
            "selector": {"matchLabels": c.get("selector")},
            "endpoints": [{
                "port": c.get("container.port_name"),
                "path": c.get("monitoring.path"),
                "interval": c.get("monitoring.interval"),
            }],
        },
    })
}

fn http_route(c: &Ctx) -> Value {
    // The `if` blocks: a key whose value is null is dropped.
    let filters = if c.is("gateway.rewrite") {
        v!([{
            "type": "URLRewrite",
            "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
        }])
    } else {
        Value::Null
    };
    let timeouts =
        if c.is("gateway.request_timeout") { v!({"request": c.get("gateway.request_timeout")}) } else { Value::Null };
    let rule = v!({
        "matches": [{"path": {"type": "PathPrefix", "value": c.get("gateway.path")}}],
        "filters": filters,
        "backendRefs": c.list(Vec::new(), "gateway.backends"),
        "timeouts": timeouts,
    });
    v!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": metadata(c, "name", "labels"),
        "spec": {
            "parentRefs": [c.get("gateway.parent_ref")],
            "hostnames": c.or_none("gateway.hostnames"),
            "rules": [rule],
        },
    })
}

fn inference_pool(c: &Ctx) -> Value {
    v!({
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": metadata(c, "name", "labels"),
        "spec": {
            "selector": {"matchLabels": c.get("selector")},
            "targetPorts": [{"number": c.get("container.port")}],
            "endpointPickerRef": {
                "kind": "Service",
                "name": c.get("gateway.pool.endpoint_picker"),
                "port": {"number": c.get("gateway.pool.endpoint_picker_port")},
                "failureMode": c.get("gateway.pool.failure_mode"),
            },
        },
    })
}

fn inference_objective(c: &Ctx) -> Value {
    v!({
        "apiVersion": "llm-d.ai/v1alpha2",
        "kind": "InferenceObjective",
        "metadata": metadata(c, "name", "labels"),
        "spec": {
            "poolRef": {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": c.get("name")},
            "priority": c.get("gateway.priority"),
        },
    })
}

const PICKER: &str = "gateway.pool.picker.name";
const PICKER_LABELS: &str = "gateway.pool.picker.labels";

fn picker_service_account(c: &Ctx) -> Value {
    v!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(c, PICKER, PICKER_LABELS)})
}

fn picker_role(c: &Ctx) -> Value {
    v!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": metadata(c, PICKER, PICKER_LABELS),
        "rules": c.get("gateway.pool.picker.rules"),
    })
}

fn picker_role_binding(c: &Ctx) -> Value {
    v!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": metadata(c, PICKER, PICKER_LABELS),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": c.get(PICKER)},
        "subjects": [{"kind": "ServiceAccount", "name": c.get(PICKER), "namespace": c.get("namespace")}],
    })
}

fn picker_config_map(c: &Ctx) -> Value {
    v!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(c, PICKER, PICKER_LABELS),
        "data": c.get("gateway.pool.picker.config"),
    })
}

fn picker_service(c: &Ctx) -> Value {
    let port = |name: &str, path: &str| v!({"name": name, "port": c.get(path), "targetPort": name, "protocol": "TCP"});
    v!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(c, PICKER, PICKER_LABELS),
        "spec": {
            "type": "ClusterIP",
            "selector": c.get("gateway.pool.picker.selector"),
            "ports": [
                port("grpc-ext-proc", "gateway.pool.picker.port"),
                port("grpc-health", "gateway.pool.picker.health_port"),
                port("http-metrics", "gateway.pool.picker.metrics_port"),
            ],
        },
    })
}

fn picker_deployment(c: &Ctx) -> Value {
    let field_env = |name: &str, path: &str| v!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}});
    let port = |name: &str, path: &str| v!({"name": name, "containerPort": c.get(path), "protocol": "TCP"});
    let grpc = |service: &str| v!({"port": c.get("gateway.pool.picker.health_port"), "service": c.get(service)});
    v!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(c, PICKER, "gateway.pool.picker.workload_labels"),
        "spec": {
            "replicas": c.get("gateway.pool.picker.replicas"),
            "selector": {"matchLabels": c.get("gateway.pool.picker.selector")},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "revisionHistoryLimit": 10,
            "template": {
                "metadata": {
                    "labels": c.get(PICKER_LABELS),
                    "annotations": c.or_none("gateway.pool.picker.pod_annotations"),
                },
                "spec": {
                    "serviceAccountName": c.get(PICKER),
                    "automountServiceAccountToken":
                        c.get("gateway.pool.picker.security.automount_service_account_token"),
                    "priorityClassName": c.get("priority_class"),
                    "terminationGracePeriodSeconds": c.get("gateway.pool.picker.termination_grace_period_seconds"),
                    "securityContext": c.get("gateway.pool.picker.security.pod"),
                    "containers": [{
                        "name": "epp",
                        "image": c.get("gateway.pool.picker.image"),
                        "imagePullPolicy": c.get("gateway.pool.picker.image_pull_policy"),
                        "args": c.get("gateway.pool.picker.args"),
                        "env": [field_env("NAMESPACE", "metadata.namespace"), field_env("POD_NAME", "metadata.name")],
                        "ports": [
                            port("grpc-ext-proc", "gateway.pool.picker.port"),
                            port("grpc-health", "gateway.pool.picker.health_port"),
                            port("http-metrics", "gateway.pool.picker.metrics_port"),
                        ],
                        "resources": {
                            "requests": c.get("gateway.pool.picker.requests"),
                            "limits": c.get("gateway.pool.picker.limits"),
                        },
                        "securityContext": c.get("gateway.pool.picker.security.container"),
                        "livenessProbe": {
                            "grpc": grpc("gateway.pool.picker.liveness_service"),
                            "initialDelaySeconds": 5,
                            "periodSeconds": 10,
                        },
                        "readinessProbe": {"grpc": grpc("gateway.pool.picker.readiness_service"), "periodSeconds": 2},
                        "volumeMounts": [
                            {"name": "config", "mountPath": c.get("gateway.pool.picker.config_dir"), "readOnly": true},
                            {"name": "tmp", "mountPath": "/tmp"},
                        ],
                    }],
                    "volumes": [
                        {"name": "config", "configMap": {"name": c.get(PICKER)}},
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    })
}

fn picker_pod_disruption_budget(c: &Ctx) -> Value {
    v!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata(c, PICKER, PICKER_LABELS),
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": c.get("gateway.pool.picker.selector")},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    })
}

fn picker_service_monitor(c: &Ctx) -> Value {
    v!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": metadata(c, PICKER, "gateway.pool.picker.monitor_labels"),
        "spec": {
            "selector": {"matchLabels": c.get("gateway.pool.picker.selector")},
            "endpoints": [{"port": "http-metrics", "path": "/metrics", "interval": c.get("monitoring.interval")}],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_template_is_built() {
        let c = Ctx::new(json!({}));
        for (name, text) in super::super::BUILTIN {
            let v = build(name, &c).unwrap_or_else(|| panic!("{name} is not built"));
            // The kind the template's text names.
            let kind = text.lines().find_map(|l| l.strip_prefix("kind: ")).unwrap();
            assert_eq!(v["kind"], kind, "{name}");
        }
        assert!(build("_partial.yaml", &c).is_none());
    }

    #[test]
    fn or_none_follows_minijinja_truthiness() {
        let c = Ctx::new(json!({"a": {}, "b": [], "c": "", "d": 0, "e": false, "f": {"x": 1}, "g": "x", "h": 0.5}));
        for k in ["a", "b", "c", "d", "e", "missing"] {
            assert!(c.or_none(k).is_null(), "{k}");
        }
        for k in ["f", "g", "h"] {
            assert!(!c.or_none(k).is_null(), "{k}");
        }
    }
}
