//! The Kubernetes kinds isvc renders, checked against their real types.
//!
//! Every rendered document is decoded into its `k8s-openapi` type. A field
//! the type does not know (a typo in an overridden template) or a value of
//! the wrong type is an error, as the API server's strict field validation
//! would make it.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, LimitRange, Namespace, PersistentVolumeClaim, PodTemplateSpec, ResourceQuota, Service, ServiceAccount,
};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::problem::Problem;
use crate::base::yaml::PathSegment;
use crate::model::kinds;

/// Checks `value` against the type of its kind.
pub fn typecheck(value: &Value) -> Vec<Problem> {
    let api_version = value.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or_default();
    match (api_version, kind) {
        ("apps/v1", "Deployment") => round_trip::<Deployment>(value),
        ("v1", "Service") => round_trip::<Service>(value),
        ("autoscaling/v2", "HorizontalPodAutoscaler") => round_trip::<HorizontalPodAutoscaler>(value),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => round_trip::<CustomResourceDefinition>(value),
        ("policy/v1", "PodDisruptionBudget") => round_trip::<PodDisruptionBudget>(value),
        ("v1", "Namespace") => round_trip::<Namespace>(value),
        ("v1", "ResourceQuota") => round_trip::<ResourceQuota>(value),
        ("v1", "LimitRange") => round_trip::<LimitRange>(value),
        ("networking.k8s.io/v1", "NetworkPolicy") => round_trip::<NetworkPolicy>(value),
        ("scheduling.k8s.io/v1", "PriorityClass") => round_trip::<PriorityClass>(value),
        ("v1", "ConfigMap") => round_trip::<ConfigMap>(value),
        ("v1", "ServiceAccount") => round_trip::<ServiceAccount>(value),
        ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<Role>(value),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => round_trip::<RoleBinding>(value),
        ("v1", "PersistentVolumeClaim") => round_trip::<PersistentVolumeClaim>(value),
        ("batch/v1", "Job") => round_trip::<Job>(value),
        (kinds::LWS, "LeaderWorkerSet") => leader_worker_set(value),
        (kinds::INFERENCE_OBJECTIVE, "InferenceObjective") => round_trip::<InferenceObjective>(value),
        // The other kinds of the table (Kueue, KEDA, the Gateway API, the
        // Inference Extension, the Prometheus Operator, Argo CD and Flux)
        // have no Rust types here; their objects are built from typed plans
        // and validated against the upstream CRDs in CI.
        _ if kinds::of(api_version, kind).is_some() => Vec::new(),
        _ => {
            vec![Problem::new(Vec::new(), format!("isvc does not render {kind} objects of {api_version}"))]
        }
    }
}

/// A LeaderWorkerSet's two pod templates, checked as pod templates (the rest
/// of it is validated against the upstream CRD in CI).
fn leader_worker_set(value: &Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    for which in ["leaderTemplate", "workerTemplate"] {
        let Some(template) = value.pointer(&format!("/spec/leaderWorkerTemplate/{which}")) else { continue };
        for mut p in round_trip::<PodTemplateSpec>(template) {
            let mut path: Vec<PathSegment> =
                ["spec", "leaderWorkerTemplate", which].iter().map(|k| PathSegment::Key(k.to_string())).collect();
            path.append(&mut p.path);
            p.message = p.message.replacen(
                "unknown field \"",
                &format!("unknown field \"spec.leaderWorkerTemplate.{which}."),
                1,
            );
            problems.push(Problem::new(path, p.message));
        }
    }
    problems
}

/// llm-d's InferenceObjective (`llm-d.ai/v1alpha2`), the fields isvc writes.
#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InferenceObjective {
    api_version: String,
    kind: String,
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    spec: InferenceObjectiveSpec,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InferenceObjectiveSpec {
    pool_ref: PoolRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    priority: Option<i32>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct PoolRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    name: String,
}

/// Decodes into `T` and back; whatever did not survive was not a field of `T`.
fn round_trip<T: DeserializeOwned + Serialize>(value: &Value) -> Vec<Problem> {
    let typed: T = match serde_path_to_error::deserialize(value) {
        Ok(t) => t,
        Err(e) => {
            let path = e
                .path()
                .iter()
                .filter_map(|s| match s {
                    serde_path_to_error::Segment::Map { key } => Some(PathSegment::Key(key.clone())),
                    serde_path_to_error::Segment::Seq { index } => Some(PathSegment::Index(*index)),
                    _ => None,
                })
                .collect();
            return vec![Problem::new(path, e.inner().to_string())];
        }
    };
    let back = serde_json::to_value(&typed).unwrap_or(Value::Null);
    let mut problems = Vec::new();
    unknown_fields(value, &back, &mut Vec::new(), &mut problems);
    problems
}

fn unknown_fields(original: &Value, typed: &Value, path: &mut Vec<PathSegment>, out: &mut Vec<Problem>) {
    match (original, typed) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                path.push(PathSegment::Key(k.clone()));
                match b.get(k) {
                    Some(w) => unknown_fields(v, w, path, out),
                    None => out.push(Problem::new(
                        path.clone(),
                        format!("unknown field \"{}\"", crate::base::yaml::path_string(path)),
                    )),
                }
                path.pop();
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                path.push(PathSegment::Index(i));
                unknown_fields(v, w, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_found_at_their_path() {
        let svc = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "a"},
            "spec": {"selectr": {"a": "b"}, "ports": [{"port": 80, "targetPrt": 8000}]}
        });
        let problems: Vec<String> = typecheck(&svc).into_iter().map(|p| p.message).collect();
        assert_eq!(problems, vec!["unknown field \"spec.selectr\"", "unknown field \"spec.ports[0].targetPrt\""]);
    }

    #[test]
    fn wrong_types_are_found() {
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}, "spec": {"ports": [{"port": "eighty"}]}});
        let p = typecheck(&svc);
        assert_eq!(p.len(), 1);
        assert_eq!(crate::base::yaml::path_string(&p[0].path), "spec.ports[0].port");
    }

    #[test]
    fn every_kind_of_the_table_is_known() {
        for k in crate::model::kinds::KINDS {
            let v = serde_json::json!({"apiVersion": k.api_version, "kind": k.kind, "metadata": {"name": "x"}});
            let problems = typecheck(&v);
            assert!(
                problems.iter().all(|p| !p.message.starts_with("isvc does not render")),
                "{} {}: {problems:?}",
                k.api_version,
                k.kind
            );
        }
    }
}
