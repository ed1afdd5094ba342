//! The built-in templates as code: each function builds the object its
//! template in `templates/` renders, straight from the service's typed
//! desired state, without writing text and parsing it back, and without
//! first serializing the desired state into the generic value the
//! templates read.
//!
//! The templates stay the reference and what users override. A template
//! that is not overridden is built here instead, and the tests hold the
//! two equal: `tests/it/builtin.rs` renders every example and generated
//! services both ways and compares every object, and the unit test below
//! pins each function to its template's identity. The semantics mirrored:
//! `{{ x }}` is the value of `x` as serde serializes it (written as JSON
//! and read back as YAML, which changes no JSON value); a field of an
//! absent (`None`) value is null; `x or none` is null when `x` is falsy in
//! minijinja's sense (none, false, zero, empty); a `for` loop appends one
//! item per element; mapping entries whose value is null are dropped
//! afterwards, as [`super::drop_nulls`] does for a parsed-back template.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Capabilities, EnvVar, PodSecurityContext, SeccompProfile, SecurityContext};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::derive::DesiredService;
use crate::derive::gateway::PickerPlan;
#[cfg(test)]
use serde_json::json;

/// A value as [`v!`] takes it: a field of the desired state, converted as
/// serde would serialize it, or a literal.
trait IntoValue {
    fn into_value(self) -> Value;
}

impl IntoValue for Value {
    fn into_value(self) -> Value {
        self
    }
}

impl IntoValue for &Value {
    fn into_value(self) -> Value {
        self.clone()
    }
}

impl IntoValue for &str {
    fn into_value(self) -> Value {
        Value::String(self.to_string())
    }
}

impl IntoValue for &String {
    fn into_value(self) -> Value {
        Value::String(self.clone())
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

impl IntoValue for &BTreeMap<String, String> {
    fn into_value(self) -> Value {
        // A BTreeMap serializes in key order, and the map keeps that order.
        let mut map = Map::with_capacity(self.len());
        for (k, v) in self {
            map.insert(k.clone(), Value::String(v.clone()));
        }
        Value::Object(map)
    }
}

impl IntoValue for &Vec<String> {
    fn into_value(self) -> Value {
        Value::Array(self.iter().map(|s| Value::String(s.clone())).collect())
    }
}

impl IntoValue for &Vec<Value> {
    fn into_value(self) -> Value {
        Value::Array(self.clone())
    }
}

/// A container's environment as `EnvVar` serializes it (k8s-openapi: `name`,
/// then `value` and `valueFrom` where set), built directly: through serde
/// it took 3% of `render --stdout`'s time at 10,000 services, eight
/// variables a container.
impl IntoValue for &Vec<EnvVar> {
    fn into_value(self) -> Value {
        let var = |e: &EnvVar| {
            let mut map = Map::with_capacity(1 + usize::from(e.value.is_some()) + usize::from(e.value_from.is_some()));
            map.insert("name".to_string(), Value::String(e.name.clone()));
            if let Some(value) = &e.value {
                map.insert("value".to_string(), Value::String(value.clone()));
            }
            if let Some(from) = &e.value_from {
                map.insert("valueFrom".to_string(), ser(from));
            }
            Value::Object(map)
        };
        Value::Array(self.iter().map(var).collect())
    }
}

impl IntoValue for i64 {
    fn into_value(self) -> Value {
        Value::from(self)
    }
}

/// A value of a type left to its own serialization (the rarely set fields
/// of the security contexts below).
struct Ser<'a, T>(&'a T);

impl<T: Serialize> IntoValue for Ser<'_, T> {
    fn into_value(self) -> Value {
        ser(self.0)
    }
}

/// A map made field by field in a type's order of serialization, each
/// field left out where it is `None`, as k8s-openapi's `Serialize` does.
struct Fields(Map<String, Value>);

impl Fields {
    fn with_capacity(n: usize) -> Fields {
        Fields(Map::with_capacity(n))
    }

    fn opt<T: IntoValue>(mut self, key: &str, value: Option<T>) -> Fields {
        if let Some(v) = value {
            self.0.insert(key.to_string(), v.into_value());
        }
        self
    }

    fn done(self) -> Value {
        Value::Object(self.0)
    }
}

/// The security contexts of every pod and container (their order and
/// fields as k8s-openapi serializes them: `SecurityContext`,
/// `PodSecurityContext`, `Capabilities`, `SeccompProfile`), built directly:
/// through serde they took 1.4% of `render --stdout`'s time at 10,000
/// services. The fields a platform never sets go through serde.
impl IntoValue for &SecurityContext {
    fn into_value(self) -> Value {
        Fields::with_capacity(6)
            .opt("allowPrivilegeEscalation", self.allow_privilege_escalation)
            .opt("appArmorProfile", self.app_armor_profile.as_ref().map(Ser))
            .opt("capabilities", self.capabilities.as_ref())
            .opt("privileged", self.privileged)
            .opt("procMount", self.proc_mount.as_ref())
            .opt("readOnlyRootFilesystem", self.read_only_root_filesystem)
            .opt("runAsGroup", self.run_as_group)
            .opt("runAsNonRoot", self.run_as_non_root)
            .opt("runAsUser", self.run_as_user)
            .opt("seLinuxOptions", self.se_linux_options.as_ref().map(Ser))
            .opt("seccompProfile", self.seccomp_profile.as_ref())
            .opt("windowsOptions", self.windows_options.as_ref().map(Ser))
            .done()
    }
}

impl IntoValue for &PodSecurityContext {
    fn into_value(self) -> Value {
        Fields::with_capacity(6)
            .opt("appArmorProfile", self.app_armor_profile.as_ref().map(Ser))
            .opt("fsGroup", self.fs_group)
            .opt("fsGroupChangePolicy", self.fs_group_change_policy.as_ref())
            .opt("runAsGroup", self.run_as_group)
            .opt("runAsNonRoot", self.run_as_non_root)
            .opt("runAsUser", self.run_as_user)
            .opt("seLinuxChangePolicy", self.se_linux_change_policy.as_ref())
            .opt("seLinuxOptions", self.se_linux_options.as_ref().map(Ser))
            .opt("seccompProfile", self.seccomp_profile.as_ref())
            .opt("supplementalGroups", self.supplemental_groups.as_ref().map(Ser))
            .opt("supplementalGroupsPolicy", self.supplemental_groups_policy.as_ref())
            .opt("sysctls", self.sysctls.as_ref().map(Ser))
            .opt("windowsOptions", self.windows_options.as_ref().map(Ser))
            .done()
    }
}

impl IntoValue for &Capabilities {
    fn into_value(self) -> Value {
        Fields::with_capacity(2).opt("add", self.add.as_ref()).opt("drop", self.drop.as_ref()).done()
    }
}

impl IntoValue for &SeccompProfile {
    fn into_value(self) -> Value {
        Fields::with_capacity(2)
            .opt("localhostProfile", self.localhost_profile.as_ref())
            .opt("type", Some(&self.type_))
            .done()
    }
}

/// `{{ a.b }}` where `a` may be absent: null then.
impl<T: IntoValue> IntoValue for Option<T> {
    fn into_value(self) -> Value {
        self.map_or(Value::Null, IntoValue::into_value)
    }
}

/// A value of a type with its own serialization (Kubernetes types, the
/// platform's), serialized as the templates' context serializes it.
fn ser<T: Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// `x or none`: null when the value is falsy in minijinja's sense (none,
/// false, zero, empty strings and collections).
fn or_none(v: Value) -> Value {
    if truthy(&v) { v } else { Value::Null }
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

/// `[first..., {% for x in more %} x {% endfor %}]`.
fn list(first: Vec<Value>, more: &[Value]) -> Value {
    let mut items = Vec::with_capacity(first.len() + more.len());
    items.extend(first);
    items.extend(more.iter().cloned());
    Value::Array(items)
}

/// JSON-like literals, as `serde_json::json!` writes them, but with each
/// value converted by [`IntoValue`] rather than serialized, every map and
/// list allocated at its final size, and no map entry whose value is null
/// (which [`build`] would drop).
macro_rules! v {
    ({ $($tt:tt)* }) => { v!(@object [] () $($tt)*) };
    ([ $($tt:tt)* ]) => { v!(@array [] () $($tt)*) };
    (@object [$(($k:literal, ($($val:tt)*)))*] ()) => {{
        #[allow(unused_mut)]
        let mut map = serde_json::Map::with_capacity(<[&str]>::len(&[$($k),*]));
        // A null entry is never made: `build` would drop it again.
        $( match v!($($val)*) {
            Value::Null => {}
            value => {
                map.insert($k.to_string(), value);
            }
        } )*
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

/// The object `template` renders for the service `d`, or `None` when
/// `template` is not a built-in one.
pub fn build(template: &str, d: &DesiredService) -> Option<Value> {
    let mut value = match template {
        "deployment.yaml" => deployment(d),
        "service.yaml" => service(d),
        "horizontalpodautoscaler.yaml" => horizontal_pod_autoscaler(d),
        "poddisruptionbudget.yaml" => pod_disruption_budget(d),
        "configmap.yaml" => config_map(d),
        "leaderworkerset.yaml" => leader_worker_set(d),
        "scaledobject.yaml" => scaled_object(d),
        "httproute.yaml" => http_route(d),
        "inferencepool.yaml" => inference_pool(d),
        "inferenceobjective.yaml" => inference_objective(d),
        "servicemonitor.yaml" => service_monitor(d),
        "endpointpicker-serviceaccount.yaml" => picker_service_account(d),
        "endpointpicker-role.yaml" => picker_role(d),
        "endpointpicker-rolebinding.yaml" => picker_role_binding(d),
        "endpointpicker-configmap.yaml" => picker_config_map(d),
        "endpointpicker-service.yaml" => picker_service(d),
        "endpointpicker-deployment.yaml" => picker_deployment(d),
        "endpointpicker-poddisruptionbudget.yaml" => picker_pod_disruption_budget(d),
        "endpointpicker-servicemonitor.yaml" => picker_service_monitor(d),
        _ => return None,
    };
    super::drop_nulls(&mut value);
    Some(value)
}

/// `metadata` with the given `name` and `labels`.
fn metadata(d: &DesiredService, name: Value, labels: Value) -> Value {
    v!({
        "name": name,
        "namespace": &d.namespace,
        "labels": labels,
        "annotations": or_none(v!(&d.annotations)),
    })
}

fn http_probe(d: &DesiredService, failure_threshold: i32) -> Value {
    let probes = &d.container.probes;
    v!({
        "httpGet": {
            "path": &probes.path,
            "port": &d.container.port_name,
            "scheme": "HTTP",
        },
        "periodSeconds": probes.period_seconds,
        "timeoutSeconds": probes.timeout_seconds,
        "successThreshold": 1,
        "failureThreshold": failure_threshold,
    })
}

fn shm_mount() -> Value {
    v!({"name": "shm", "mountPath": "/dev/shm"})
}

fn shm_volume(d: &DesiredService) -> Value {
    v!({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": &d.container.shm_size}})
}

/// The serving pod's spec, shared by the Deployment and the leader of a
/// LeaderWorkerSet (which adds `command`; null, and so dropped, for a
/// Deployment).
fn serving_pod_spec(d: &DesiredService, command: Value) -> Value {
    let c = &d.container;
    let container = v!({
        "name": &c.name,
        "image": &c.image,
        "imagePullPolicy": &c.image_pull_policy,
        "command": command,
        "args": &c.args,
        "env": &c.env,
        "ports": [{
            "name": &c.port_name,
            "containerPort": c.port,
            "protocol": "TCP",
        }],
        "resources": {
            "requests": &c.requests,
            "limits": &c.limits,
        },
        "securityContext": &d.security.container,
        "lifecycle": {"preStop": {"exec": {"command": &d.drain.pre_stop}}},
        "startupProbe": http_probe(d, c.probes.startup_failure_threshold),
        "livenessProbe": http_probe(d, c.probes.liveness_failure_threshold),
        "readinessProbe": http_probe(d, c.probes.readiness_failure_threshold),
        "volumeMounts": list(vec![shm_mount()], &c.volume_mounts),
    });
    pod_spec(d, container, &d.volumes)
}

/// A serving or worker pod's spec around its one `container`, with
/// `/dev/shm` and `volumes`.
fn pod_spec(d: &DesiredService, container: Value, volumes: &[Value]) -> Value {
    v!({
        "priorityClassName": d.priority_class.as_ref(),
        "nodeSelector": or_none(v!(&d.container.node_selector)),
        "tolerations": or_none(ser(&d.container.tolerations)),
        "automountServiceAccountToken": d.security.automount_service_account_token,
        "terminationGracePeriodSeconds": d.drain.termination_grace_period_seconds,
        "securityContext": &d.security.pod,
        "initContainers": or_none(v!(&d.init_containers)),
        "containers": [container],
        "volumes": list(vec![shm_volume(d)], volumes),
    })
}

/// A pod template's `metadata`.
fn template_metadata(labels: &BTreeMap<String, String>, annotations: &BTreeMap<String, String>) -> Value {
    v!({"labels": labels, "annotations": or_none(v!(annotations))})
}

fn deployment(d: &DesiredService) -> Value {
    v!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(d, v!(&d.name), v!(&d.workload_labels)),
        "spec": {
            "replicas": d.replicas,
            "selector": {"matchLabels": &d.selector},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {
                    "maxSurge": d.rollout.max_surge,
                    "maxUnavailable": d.rollout.max_unavailable,
                },
            },
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": d.rollout.progress_deadline_seconds,
            "template": {
                "metadata": template_metadata(&d.pod_labels, &d.pod_annotations),
                "spec": serving_pod_spec(d, Value::Null),
            },
        },
    })
}

fn leader_worker_set(d: &DesiredService) -> Value {
    let c = &d.container;
    let m = d.multi_node.as_ref();
    let worker = v!({
        "name": &c.name,
        "image": &c.image,
        "imagePullPolicy": &c.image_pull_policy,
        "command": m.map(|m| &m.worker_command),
        "env": &c.env,
        "resources": {
            "requests": &c.requests,
            "limits": &c.limits,
        },
        "securityContext": &d.security.container,
        "lifecycle": {"preStop": {"exec": {"command": &d.drain.worker_pre_stop}}},
        "startupProbe": {
            "exec": {"command": m.map(|m| &m.worker_probe)},
            "periodSeconds": c.probes.period_seconds,
            "timeoutSeconds": m.map(|m| m.worker_probe_timeout_seconds),
            "successThreshold": 1,
            "failureThreshold": c.probes.startup_failure_threshold,
        },
        "volumeMounts": list(vec![shm_mount()], &d.security_mounts),
    });
    let worker_labels = m.map(|m| &m.worker_labels);
    v!({
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": metadata(d, v!(&d.name), v!(&d.workload_labels)),
        "spec": {
            "replicas": d.replicas,
            "startupPolicy": "LeaderCreated",
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {
                    "maxSurge": d.rollout.max_surge,
                    "maxUnavailable": d.rollout.max_unavailable,
                },
            },
            "leaderWorkerTemplate": {
                "size": m.map(|m| m.size),
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {
                    "metadata": template_metadata(&d.pod_labels, &d.pod_annotations),
                    "spec": serving_pod_spec(d, v!(m.map(|m| &m.leader_command))),
                },
                "workerTemplate": {
                    "metadata": {
                        "labels": worker_labels,
                        "annotations": or_none(v!(&d.security.pod_annotations)),
                    },
                    "spec": pod_spec(d, worker, &d.security_volumes),
                },
            },
        },
    })
}

fn service(d: &DesiredService) -> Value {
    v!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(d, v!(&d.name), v!(&d.labels)),
        "spec": {
            "type": "ClusterIP",
            "selector": &d.selector,
            "ports": [{
                "name": &d.container.port_name,
                "port": d.container.port,
                "targetPort": &d.container.port_name,
                "protocol": "TCP",
            }],
        },
    })
}

/// The scaling behaviour the HPA and KEDA's HPA share.
fn behavior(d: &DesiredService) -> Value {
    v!({
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 60}],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": d.autoscaler.as_ref().map(|a| a.scale_down_stabilization_seconds),
            "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 120}],
        },
    })
}

fn scale_target(d: &DesiredService) -> Value {
    v!({"apiVersion": d.workload.api_version, "kind": d.workload.kind, "name": &d.name})
}

fn horizontal_pod_autoscaler(d: &DesiredService) -> Value {
    let a = d.autoscaler.as_ref();
    let target = v!({"type": "AverageValue", "averageValue": a.map(|a| &a.target_average_value)});
    let picker_service = v!(a.and_then(|a| a.picker_service.as_ref()));
    let metric = if truthy(&picker_service) {
        v!({
            "type": "Object",
            "object": {
                "describedObject": {"apiVersion": "v1", "kind": "Service", "name": picker_service},
                "metric": {"name": a.map(|a| &a.metric)},
                "target": target,
            },
        })
    } else {
        v!({"type": "Pods", "pods": {"metric": {"name": a.map(|a| &a.metric)}, "target": target}})
    };
    v!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": metadata(d, v!(&d.name), v!(&d.labels)),
        "spec": {
            "scaleTargetRef": scale_target(d),
            "minReplicas": a.map(|a| a.min_replicas),
            "maxReplicas": a.map(|a| a.max_replicas),
            "metrics": [metric],
            "behavior": behavior(d),
        },
    })
}

fn scaled_object(d: &DesiredService) -> Value {
    let a = d.autoscaler.as_ref();
    let k = d.keda.as_ref();
    v!({
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": metadata(d, v!(&d.name), v!(&d.labels)),
        "spec": {
            "scaleTargetRef": scale_target(d),
            "pollingInterval": k.map(|k| k.polling_interval),
            "minReplicaCount": a.map(|a| a.min_replicas),
            "maxReplicaCount": a.map(|a| a.max_replicas),
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": behavior(d)}},
            "triggers": [{
                "type": "prometheus",
                "metricType": "AverageValue",
                "metadata": {
                    "serverAddress": k.map(|k| &k.server_address),
                    "query": k.map(|k| &k.query),
                    "threshold": a.map(|a| &a.target_average_value),
                },
            }],
        },
    })
}

fn pod_disruption_budget(d: &DesiredService) -> Value {
    let b = d.disruption_budget.as_ref();
    v!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata(d, v!(&d.name), v!(&d.labels)),
        "spec": {
            "maxUnavailable": b.map(|b| b.max_unavailable),
            "selector": {"matchLabels": b.map(|b| &b.selector)},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    })
}

fn config_map(d: &DesiredService) -> Value {
    v!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(d, v!(&d.name), v!(&d.labels)),
        "data": d.adapters.as_ref().map(|a| &a.data),
    })
}

fn service_monitor(d: &DesiredService) -> Value {
    let m = d.monitoring.as_ref();
    v!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": metadata(d, v!(&d.name), v!(m.map(|m| &m.labels))),
        "spec": {
            "selector": {"matchLabels": &d.selector},
            "endpoints": [{
                "port": &d.container.port_name,
                "path": m.map(|m| &m.path),
                "interval": m.and_then(|m| m.interval.as_ref()),
            }],
        },
    })
}

fn http_route(d: &DesiredService) -> Value {
    let g = d.gateway.as_ref();
    // The `if` blocks: a key whose value is null is dropped.
    let filters = if g.is_some_and(|g| g.rewrite) {
        v!([{
            "type": "URLRewrite",
            "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
        }])
    } else {
        Value::Null
    };
    let timeout = v!(g.and_then(|g| g.request_timeout.as_ref()));
    let timeouts = if truthy(&timeout) { v!({"request": timeout}) } else { Value::Null };
    let backends: Vec<Value> = g.map(|g| g.backends.iter().map(ser).collect()).unwrap_or_default();
    let rule = v!({
        "matches": [{"path": {"type": "PathPrefix", "value": g.map(|g| &g.path)}}],
        "filters": filters,
        "backendRefs": Value::Array(backends),
        "timeouts": timeouts,
    });
    v!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": metadata(d, v!(&d.name), v!(&d.labels)),
        "spec": {
            "parentRefs": [g.map(|g| ser(&g.parent_ref))],
            "hostnames": or_none(v!(g.map(|g| &g.hostnames))),
            "rules": [rule],
        },
    })
}

fn inference_pool(d: &DesiredService) -> Value {
    let pool = d.gateway.as_ref().and_then(|g| g.pool.as_ref());
    v!({
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": metadata(d, v!(&d.name), v!(&d.labels)),
        "spec": {
            "selector": {"matchLabels": &d.selector},
            "targetPorts": [{"number": d.container.port}],
            "endpointPickerRef": {
                "kind": "Service",
                "name": pool.map(|p| &p.endpoint_picker),
                "port": {"number": pool.map(|p| p.endpoint_picker_port)},
                "failureMode": pool.map(|p| ser(&p.failure_mode)),
            },
        },
    })
}

fn inference_objective(d: &DesiredService) -> Value {
    v!({
        "apiVersion": "llm-d.ai/v1alpha2",
        "kind": "InferenceObjective",
        "metadata": metadata(d, v!(&d.name), v!(&d.labels)),
        "spec": {
            "poolRef": {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": &d.name},
            "priority": d.gateway.as_ref().and_then(|g| g.priority),
        },
    })
}

/// The endpoint picker of the service's InferencePool, if it has one.
fn picker(d: &DesiredService) -> Option<&PickerPlan> {
    d.gateway.as_ref().and_then(|g| g.pool.as_ref()).map(|p| &p.picker)
}

/// `metadata` of a picker object, with the picker's `labels`.
fn picker_metadata(d: &DesiredService, labels: impl Fn(&PickerPlan) -> &BTreeMap<String, String>) -> Value {
    let p = picker(d);
    metadata(d, v!(p.map(|p| &p.name)), v!(p.map(labels)))
}

fn picker_service_account(d: &DesiredService) -> Value {
    v!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": picker_metadata(d, |p| &p.labels)})
}

fn picker_role(d: &DesiredService) -> Value {
    v!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": picker_metadata(d, |p| &p.labels),
        "rules": picker(d).map(|p| &p.rules),
    })
}

fn picker_role_binding(d: &DesiredService) -> Value {
    let name = picker(d).map(|p| &p.name);
    v!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": picker_metadata(d, |p| &p.labels),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": &d.namespace}],
    })
}

fn picker_config_map(d: &DesiredService) -> Value {
    v!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": picker_metadata(d, |p| &p.labels),
        "data": picker(d).map(|p| &p.config),
    })
}

fn picker_service(d: &DesiredService) -> Value {
    let p = picker(d);
    let port =
        |name: &str, number: Option<i32>| v!({"name": name, "port": number, "targetPort": name, "protocol": "TCP"});
    v!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": picker_metadata(d, |p| &p.labels),
        "spec": {
            "type": "ClusterIP",
            "selector": p.map(|p| &p.selector),
            "ports": [
                port("grpc-ext-proc", p.map(|p| p.port)),
                port("grpc-health", p.map(|p| p.health_port)),
                port("http-metrics", p.map(|p| p.metrics_port)),
            ],
        },
    })
}

fn picker_deployment(d: &DesiredService) -> Value {
    let p = picker(d);
    let field_env = |name: &str, path: &str| v!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}});
    let port = |name: &str, number: Option<i32>| v!({"name": name, "containerPort": number, "protocol": "TCP"});
    let grpc = |service: Option<&String>| v!({"port": p.map(|p| p.health_port), "service": service});
    v!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": picker_metadata(d, |p| &p.workload_labels),
        "spec": {
            "replicas": p.map(|p| p.replicas),
            "selector": {"matchLabels": p.map(|p| &p.selector)},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "revisionHistoryLimit": 10,
            "template": {
                "metadata": {
                    "labels": p.map(|p| &p.labels),
                    "annotations": or_none(v!(p.map(|p| &p.pod_annotations))),
                },
                "spec": {
                    "serviceAccountName": p.map(|p| &p.name),
                    "automountServiceAccountToken": p.map(|p| p.security.automount_service_account_token),
                    "priorityClassName": d.priority_class.as_ref(),
                    "terminationGracePeriodSeconds": p.map(|p| p.termination_grace_period_seconds),
                    "securityContext": p.map(|p| &p.security.pod),
                    "containers": [{
                        "name": "epp",
                        "image": p.map(|p| &p.image),
                        "imagePullPolicy": p.map(|p| &p.image_pull_policy),
                        "args": p.map(|p| &p.args),
                        "env": [field_env("NAMESPACE", "metadata.namespace"), field_env("POD_NAME", "metadata.name")],
                        "ports": [
                            port("grpc-ext-proc", p.map(|p| p.port)),
                            port("grpc-health", p.map(|p| p.health_port)),
                            port("http-metrics", p.map(|p| p.metrics_port)),
                        ],
                        "resources": {
                            "requests": p.map(|p| &p.requests),
                            "limits": p.map(|p| &p.limits),
                        },
                        "securityContext": p.map(|p| &p.security.container),
                        "livenessProbe": {
                            "grpc": grpc(p.map(|p| &p.liveness_service)),
                            "initialDelaySeconds": 5,
                            "periodSeconds": 10,
                        },
                        "readinessProbe": {"grpc": grpc(p.map(|p| &p.readiness_service)), "periodSeconds": 2},
                        "volumeMounts": [
                            {"name": "config", "mountPath": p.map(|p| &p.config_dir), "readOnly": true},
                            {"name": "tmp", "mountPath": "/tmp"},
                        ],
                    }],
                    "volumes": [
                        {"name": "config", "configMap": {"name": p.map(|p| &p.name)}},
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    })
}

fn picker_pod_disruption_budget(d: &DesiredService) -> Value {
    v!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": picker_metadata(d, |p| &p.labels),
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": picker(d).map(|p| &p.selector)},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    })
}

fn picker_service_monitor(d: &DesiredService) -> Value {
    let interval = d.monitoring.as_ref().and_then(|m| m.interval.as_ref());
    v!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": picker_metadata(d, |p| &p.monitor_labels),
        "spec": {
            "selector": {"matchLabels": picker(d).map(|p| &p.selector)},
            "endpoints": [{"port": "http-metrics", "path": "/metrics", "interval": interval}],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::platform::Platform;

    #[test]
    fn an_environment_is_built_as_serde_serializes_it() {
        use k8s_openapi::api::core::v1::{EnvVarSource, ObjectFieldSelector};
        let from = EnvVarSource {
            field_ref: Some(ObjectFieldSelector { field_path: "metadata.name".into(), ..Default::default() }),
            ..Default::default()
        };
        for env in [
            vec![],
            vec![
                EnvVar { name: "A".into(), value: Some("1".into()), ..Default::default() },
                EnvVar { name: "B".into(), ..Default::default() },
                EnvVar { name: "C".into(), value_from: Some(from.clone()), ..Default::default() },
                EnvVar { name: "D".into(), value: Some(String::new()), value_from: Some(from) },
            ],
        ] {
            // As text: maps compare equal whatever their order.
            assert_eq!(serde_json::to_string(&v!(&env)).unwrap(), serde_json::to_string(&env).unwrap());
        }
    }

    #[test]
    fn security_contexts_are_built_as_serde_serializes_them() {
        use k8s_openapi::api::core::v1::{SELinuxOptions, Sysctl};
        let derived = crate::derive::security::derive(&Default::default());
        let full_pod = PodSecurityContext {
            fs_group: Some(1),
            fs_group_change_policy: Some("Always".into()),
            run_as_group: Some(2),
            run_as_non_root: Some(false),
            run_as_user: Some(-3),
            se_linux_change_policy: Some("MountOption".into()),
            se_linux_options: Some(SELinuxOptions { level: Some("s0".into()), ..Default::default() }),
            seccomp_profile: Some(SeccompProfile { type_: "Localhost".into(), localhost_profile: Some("p".into()) }),
            supplemental_groups: Some(vec![4, 5]),
            supplemental_groups_policy: Some("Strict".into()),
            sysctls: Some(vec![Sysctl { name: "a".into(), value: "1".into() }]),
            ..Default::default()
        };
        let full = SecurityContext {
            allow_privilege_escalation: Some(true),
            capabilities: Some(Capabilities { add: Some(vec!["NET_ADMIN".into()]), drop: Some(vec![]) }),
            privileged: Some(true),
            proc_mount: Some("Unmasked".into()),
            read_only_root_filesystem: Some(false),
            run_as_group: Some(1),
            run_as_non_root: Some(true),
            run_as_user: Some(2),
            se_linux_options: Some(SELinuxOptions::default()),
            seccomp_profile: Some(SeccompProfile { type_: "RuntimeDefault".into(), localhost_profile: None }),
            ..Default::default()
        };
        // As text: maps compare equal whatever their order.
        let text = |v: Value| serde_json::to_string(&v).unwrap();
        for pod in [&derived.pod, &full_pod, &PodSecurityContext::default()] {
            assert_eq!(text(v!(pod)), serde_json::to_string(pod).unwrap());
        }
        for container in [&derived.container, &full, &SecurityContext::default()] {
            assert_eq!(text(v!(container)), serde_json::to_string(container).unwrap());
        }
    }

    /// The desired state of a plain service (`gpus` GPUs, 3 replicas).
    fn desired() -> DesiredService {
        let mut s = crate::model::v1alpha1::InferenceService::new(
            "qwen3",
            crate::model::v1alpha1::InferenceServiceSpec {
                model: "Qwen/Qwen3-0.6B".into(),
                replicas: 3,
                gpus_per_replica: 1,
                priority: None,
                queue: None,
            },
        );
        s.metadata.namespace = Some("team-a".into());
        crate::derive::derive(&crate::model::conversion::to_hub(&s).unwrap(), &Platform::default()).unwrap()
    }

    #[test]
    fn every_built_in_template_is_built() {
        // Objects a plain service has no plan for (a picker, KEDA) are
        // still built, with the absent values left out.
        let d = desired();
        for (name, text) in super::super::BUILTIN {
            let v = build(name, &d).unwrap_or_else(|| panic!("{name} is not built"));
            // The kind the template's text names.
            let kind = text.lines().find_map(|l| l.strip_prefix("kind: ")).unwrap();
            assert_eq!(v["kind"], kind, "{name}");
        }
        assert!(build("_partial.yaml", &d).is_none());
    }

    #[test]
    fn or_none_follows_minijinja_truthiness() {
        let falsy = [json!({}), json!([]), json!(""), json!(0), json!(false), Value::Null];
        for v in falsy {
            assert!(or_none(v.clone()).is_null(), "{v}");
        }
        for v in [json!({"x": 1}), json!("x"), json!(0.5), json!([0]), json!(true)] {
            assert!(!or_none(v.clone()).is_null(), "{v}");
        }
    }

    #[test]
    fn typed_values_convert_as_serde_serializes_them() {
        // The conversions stand in for serializing the desired state, as
        // the templates' context does: they must give the same values.
        let d = desired();
        let tree = serde_json::to_value(&d).unwrap();
        assert_eq!(v!(&d.labels), tree["labels"]);
        assert_eq!(v!(&d.container.args), tree["container"]["args"]);
        assert_eq!(v!(d.replicas), tree["replicas"]);
        assert_eq!(v!(d.container.port), tree["container"]["port"]);
        assert_eq!(v!(d.priority_class.as_ref()), tree["priority_class"]);
        assert_eq!(v!(&d.init_containers), tree["init_containers"]);
        assert_eq!(v!(d.workload.kind), tree["workload"]["kind"]);
    }
}
