//! The Kubernetes kinds isvc renders, checked against their real types.
//!
//! Every rendered document is decoded into its `k8s-openapi` type. A field
//! the type does not know (a typo in an overridden template) or a value of
//! the wrong type is an error, as the API server's strict field validation
//! would make it.

use crate::base::value::At;
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
        let Some(template) = value.at(&format!("/spec/leaderWorkerTemplate/{which}")) else { continue };
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
///
/// The common case, a valid object, is decided without building the typed
/// value's JSON: [`Shadow`] walks `value` beside the typed value's
/// serialization. Only when it finds a difference (or a shape it does not
/// follow) is the full round trip below run, which names every problem in
/// the order it always has.
fn round_trip<T: DeserializeOwned + Serialize>(value: &Value) -> Vec<Problem> {
    if let Ok(typed) = T::deserialize(value)
        && typed.serialize(Shadow(Some(value))).is_ok()
    {
        return Vec::new();
    }
    full_round_trip::<T>(value)
}

fn full_round_trip<T: DeserializeOwned + Serialize>(value: &Value) -> Vec<Problem> {
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

/// A serializer that writes nothing: it follows the original JSON `.0`
/// beside a typed value's serialization and fails as soon as the original
/// holds a mapping key the typed value does not write, which is exactly when
/// `unknown_fields` would report one against `serde_json::to_value` of the
/// typed value. Where the two shapes differ (a struct against a non-object,
/// a sequence against a non-array) it follows nothing further, as
/// `unknown_fields` compares nothing there. Enum variants with data, which
/// no checked type writes, and non-string map keys end the walk with an
/// error, so the full round trip decides.
struct Shadow<'a>(Option<&'a Value>);

#[derive(Debug)]
struct Differs;

impl std::fmt::Display for Differs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the original holds what the typed value does not")
    }
}

impl std::error::Error for Differs {}

impl serde::ser::Error for Differs {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Differs
    }
}

/// A mapping beside its original: how many of the original's keys the typed
/// value wrote (the keys of a struct, and of a map, are distinct).
struct ShadowMap<'a> {
    original: Option<&'a serde_json::Map<String, Value>>,
    seen: usize,
    key: Option<String>,
}

impl<'a> ShadowMap<'a> {
    fn new(original: Option<&'a Value>) -> Self {
        ShadowMap { original: original.and_then(Value::as_object), seen: 0, key: None }
    }

    fn field<V: Serialize + ?Sized>(&mut self, key: &str, value: &V) -> Result<(), Differs> {
        let Some(map) = self.original else { return Ok(()) };
        match crate::base::value::field(map, key) {
            Some(child) => {
                self.seen += 1;
                value.serialize(Shadow(Some(child)))
            }
            None => Ok(()),
        }
    }

    fn finish(self) -> Result<(), Differs> {
        match self.original {
            Some(map) if map.len() != self.seen => Err(Differs),
            _ => Ok(()),
        }
    }
}

impl serde::ser::SerializeStruct for ShadowMap<'_> {
    type Ok = ();
    type Error = Differs;
    fn serialize_field<V: Serialize + ?Sized>(&mut self, key: &'static str, value: &V) -> Result<(), Differs> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), Differs> {
        self.finish()
    }
}

impl serde::ser::SerializeMap for ShadowMap<'_> {
    type Ok = ();
    type Error = Differs;
    fn serialize_key<K: Serialize + ?Sized>(&mut self, key: &K) -> Result<(), Differs> {
        match serde_json::to_value(key) {
            Ok(Value::String(k)) => {
                self.key = Some(k);
                Ok(())
            }
            _ => Err(Differs),
        }
    }
    fn serialize_value<V: Serialize + ?Sized>(&mut self, value: &V) -> Result<(), Differs> {
        let key = self.key.take().ok_or(Differs)?;
        self.field(&key, value)
    }
    fn end(self) -> Result<(), Differs> {
        self.finish()
    }
}

/// A sequence beside its original: item `i` against the original's item `i`.
struct ShadowSeq<'a> {
    original: Option<std::slice::Iter<'a, Value>>,
}

impl ShadowSeq<'_> {
    fn item<V: Serialize + ?Sized>(&mut self, value: &V) -> Result<(), Differs> {
        match self.original.as_mut().and_then(Iterator::next) {
            Some(child) => value.serialize(Shadow(Some(child))),
            None => Ok(()),
        }
    }
}

impl serde::ser::SerializeSeq for ShadowSeq<'_> {
    type Ok = ();
    type Error = Differs;
    fn serialize_element<V: Serialize + ?Sized>(&mut self, value: &V) -> Result<(), Differs> {
        self.item(value)
    }
    fn end(self) -> Result<(), Differs> {
        Ok(())
    }
}

impl serde::ser::SerializeTuple for ShadowSeq<'_> {
    type Ok = ();
    type Error = Differs;
    fn serialize_element<V: Serialize + ?Sized>(&mut self, value: &V) -> Result<(), Differs> {
        self.item(value)
    }
    fn end(self) -> Result<(), Differs> {
        Ok(())
    }
}

impl serde::ser::SerializeTupleStruct for ShadowSeq<'_> {
    type Ok = ();
    type Error = Differs;
    fn serialize_field<V: Serialize + ?Sized>(&mut self, value: &V) -> Result<(), Differs> {
        self.item(value)
    }
    fn end(self) -> Result<(), Differs> {
        Ok(())
    }
}

impl<'a> serde::Serializer for Shadow<'a> {
    type Ok = ();
    type Error = Differs;
    type SerializeSeq = ShadowSeq<'a>;
    type SerializeTuple = ShadowSeq<'a>;
    type SerializeTupleStruct = ShadowSeq<'a>;
    type SerializeTupleVariant = serde::ser::Impossible<(), Differs>;
    type SerializeMap = ShadowMap<'a>;
    type SerializeStruct = ShadowMap<'a>;
    type SerializeStructVariant = serde::ser::Impossible<(), Differs>;

    fn serialize_bool(self, _: bool) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_i8(self, _: i8) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_i16(self, _: i16) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_i32(self, _: i32) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_i64(self, _: i64) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_u8(self, _: u8) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_u16(self, _: u16) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_u32(self, _: u32) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_u64(self, _: u64) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_f32(self, _: f32) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_f64(self, _: f64) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_char(self, _: char) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_str(self, _: &str) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_some<V: Serialize + ?Sized>(self, value: &V) -> Result<(), Differs> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Differs> {
        Ok(())
    }
    fn serialize_newtype_struct<V: Serialize + ?Sized>(self, _: &'static str, value: &V) -> Result<(), Differs> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<V: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &V,
    ) -> Result<(), Differs> {
        Err(Differs)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<ShadowSeq<'a>, Differs> {
        Ok(ShadowSeq { original: self.0.and_then(Value::as_array).map(|a| a.iter()) })
    }
    fn serialize_tuple(self, len: usize) -> Result<ShadowSeq<'a>, Differs> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<ShadowSeq<'a>, Differs> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Differs> {
        Err(Differs)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<ShadowMap<'a>, Differs> {
        Ok(ShadowMap::new(self.0))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<ShadowMap<'a>, Differs> {
        Ok(ShadowMap::new(self.0))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Differs> {
        Err(Differs)
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
    fn the_quick_check_agrees_with_the_full_round_trip() {
        let pod = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
            {"name": "c", "image": "i", "ports": [{"containerPort": 80}],
             "resources": {"limits": {"nvidia.com/gpu": "1"}}, "env": [{"name": "E", "value": "v"}]}]}});
        let deployment = |pod: &Value| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "annotations": {"x": "y"}},
                   "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}}, "template": pod,
                            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "0%"}}}})
        };
        let mut cases = vec![deployment(&pod)];
        // An unknown key at every depth of the valid object, one at a time.
        fn keys(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
            match v {
                Value::Object(m) => {
                    out.push(path.clone());
                    for (k, c) in m {
                        path.push(k.clone());
                        keys(c, path, out);
                        path.pop();
                    }
                }
                Value::Array(a) => {
                    for (i, c) in a.iter().enumerate() {
                        path.push(i.to_string());
                        keys(c, path, out);
                        path.pop();
                    }
                }
                _ => {}
            }
        }
        let valid = deployment(&pod);
        let mut paths = Vec::new();
        keys(&valid, &mut Vec::new(), &mut paths);
        for p in &paths {
            let mut v = valid.clone();
            let pointer: String = p.iter().map(|k| format!("/{k}")).collect();
            v.pointer_mut(&pointer).unwrap().as_object_mut().unwrap().insert("bogus".into(), json!("1"));
            cases.push(v);
        }
        cases.push(deployment(&json!({"spec": {"containers": "not a list"}})));
        for v in &cases {
            let quick = round_trip::<Deployment>(v);
            let full = full_round_trip::<Deployment>(v);
            assert_eq!(quick, full, "{v}");
        }
        // Every object but the first has a problem; map keys the type keeps
        // (labels, annotations, limits) take any key.
        let with_problems = cases.iter().filter(|v| !round_trip::<Deployment>(v).is_empty()).count();
        let maps = ["labels", "annotations", "limits", "matchLabels"];
        let free = paths.iter().filter(|p| p.last().is_some_and(|k| maps.contains(&k.as_str()))).count();
        assert_eq!(with_problems, cases.len() - 1 - free);
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
