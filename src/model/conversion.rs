//! Conversion between the InferenceService versions. v1alpha2 is the hub:
//! files of either version are converted to it on load, so equivalent specs
//! derive and render the same objects.
//!
//! - v1alpha1 to v1alpha2 loses nothing: `model` becomes `baseModel`, the
//!   other fields keep their names and meaning (`replicas` without
//!   `autoscaling` keeps the reference autoscaler bounds).
//! - v1alpha2 to v1alpha1 keeps what v1alpha1 can say and does not drop the
//!   rest: the fields v1alpha1 cannot express (adapters, autoscaling, nodes,
//!   resources, gateway, served model name, revision, engine arguments,
//!   environment, accelerator and image, and the new status fields) are stored as JSON in
//!   the annotation [`LOST_FIELDS_ANNOTATION`], the usual Kubernetes pattern,
//!   and restored from it on the way back. A v1alpha1 reader sees
//!   `replicas` as the autoscaling minimum and `gpusPerReplica` as the GPUs
//!   of one pod.
//!
//! Both directions together round-trip exactly; the property tests in
//! `tests/conversion.rs` check it.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::model::v1alpha1 as v1;
use crate::model::v1alpha2 as v2;

/// Annotation holding, on a v1alpha1 object converted down from v1alpha2,
/// the v1alpha2 fields v1alpha1 cannot express. Reserved: do not write it.
pub const LOST_FIELDS_ANNOTATION: &str = "ai.example.com/v1alpha2-fields";

/// A v1alpha1 spec as v1alpha2.
pub fn spec_to_hub(spec: &v1::InferenceServiceSpec) -> v2::InferenceServiceSpec {
    v2::InferenceServiceSpec {
        base_model: spec.model.clone(),
        adapters: Vec::new(),
        replicas: Some(spec.replicas),
        autoscaling: None,
        gpus_per_replica: spec.gpus_per_replica,
        nodes_per_replica: 1,
        resources: None,
        gateway: None,
        priority: spec.priority.clone(),
        queue: spec.queue.clone(),
        served_model_name: None,
        revision: None,
        args: Vec::new(),
        env: Vec::new(),
        accelerator: None,
        image: None,
    }
}

/// What v1alpha1 can say of a v1alpha2 spec: the base model, the replicas
/// (the autoscaling minimum when it autoscales), the GPUs of one pod, the
/// priority tier and the queue.
fn spec_from_hub(spec: &v2::InferenceServiceSpec) -> v1::InferenceServiceSpec {
    v1::InferenceServiceSpec {
        model: spec.base_model.clone(),
        replicas: spec.replicas.or(spec.autoscaling.as_ref().map(|a| a.min)).unwrap_or(0),
        gpus_per_replica: spec.gpus_per_node().clamp(1, v1::MAX_GPUS_PER_REPLICA),
        priority: spec.priority.clone(),
        queue: spec.queue.clone(),
    }
}

fn status_to_hub(status: &v1::InferenceServiceStatus) -> v2::InferenceServiceStatus {
    v2::InferenceServiceStatus { ready_replicas: status.ready_replicas, phase: status.phase, ..Default::default() }
}

fn status_from_hub(status: &v2::InferenceServiceStatus) -> v1::InferenceServiceStatus {
    v1::InferenceServiceStatus { ready_replicas: status.ready_replicas, phase: status.phase }
}

/// A v1alpha1 object as v1alpha2, restoring the fields a down conversion
/// stored in [`LOST_FIELDS_ANNOTATION`]. Fails only on a malformed annotation.
pub fn to_hub(object: &v1::InferenceService) -> Result<v2::InferenceService, String> {
    let mut metadata = object.metadata.clone();
    let lost = match metadata.annotations.as_mut().and_then(|a| a.remove(LOST_FIELDS_ANNOTATION)) {
        Some(text) => Some(
            serde_json::from_str::<Value>(&text)
                .map_err(|e| format!("annotation {LOST_FIELDS_ANNOTATION} is not JSON: {e}"))?,
        ),
        None => None,
    };
    if metadata.annotations.as_ref().is_some_and(BTreeMap::is_empty) {
        metadata.annotations = None;
    }
    let mut spec = spec_to_hub(&object.spec);
    let mut status = object.status.as_ref().map(status_to_hub);
    if let Some(lost) = lost {
        if let Some(fields) = lost.get("spec") {
            spec = overlay(&spec, fields)?;
        }
        if let Some(fields) = lost.get("status") {
            status = Some(overlay(&status.unwrap_or_default(), fields)?);
        }
    }
    Ok(v2::InferenceService { metadata, spec, status })
}

/// A v1alpha2 object as v1alpha1. Whatever v1alpha1 cannot express goes
/// into [`LOST_FIELDS_ANNOTATION`], so [`to_hub`] gives the object back.
pub fn from_hub(object: &v2::InferenceService) -> v1::InferenceService {
    let spec = spec_from_hub(&object.spec);
    let status = object.status.as_ref().map(status_from_hub);
    let mut lost = Map::new();
    let spec_lost = difference(&object.spec, &spec_to_hub(&spec));
    if !spec_lost.is_empty() {
        lost.insert("spec".to_string(), Value::Object(spec_lost));
    }
    if let Some(s) = &object.status {
        let status_lost = difference(s, &status_to_hub(&status_from_hub(s)));
        if !status_lost.is_empty() {
            lost.insert("status".to_string(), Value::Object(status_lost));
        }
    }
    let mut metadata = object.metadata.clone();
    if !lost.is_empty() {
        metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(LOST_FIELDS_ANNOTATION.to_string(), Value::Object(lost).to_string());
    }
    v1::InferenceService { metadata, spec, status }
}

/// The fields of `want` whose value differs in `got`, as JSON; a field
/// `want` leaves out is given as null.
fn difference<T: serde::Serialize>(want: &T, got: &T) -> Map<String, Value> {
    let want = object_of(want);
    let got = object_of(got);
    let keys: Vec<&String> = want.keys().chain(got.keys().filter(|k| !want.contains_key(*k))).collect();
    keys.into_iter()
        .filter(|k| want.get(*k) != got.get(*k))
        .map(|k| (k.clone(), want.get(k).cloned().unwrap_or(Value::Null)))
        .collect()
}

/// `base` with the fields of `fields` set (null: removed).
fn overlay<T: serde::Serialize + serde::de::DeserializeOwned>(base: &T, fields: &Value) -> Result<T, String> {
    let Value::Object(fields) = fields else {
        return Err(format!("annotation {LOST_FIELDS_ANNOTATION} must hold JSON objects"));
    };
    let mut value = object_of(base);
    for (k, v) in fields {
        if v.is_null() {
            value.remove(k);
        } else {
            value.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(Value::Object(value))
        .map_err(|e| format!("annotation {LOST_FIELDS_ANNOTATION} does not hold valid fields: {e}"))
}

fn object_of<T: serde::Serialize>(value: &T) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// A one-replica, one-GPU v1alpha2 spec of a gated Llama model, for tests.
#[cfg(test)]
pub(crate) fn sample_spec() -> v2::InferenceServiceSpec {
    spec_to_hub(&v1::InferenceServiceSpec {
        model: "meta-llama/Llama-3.1-8B-Instruct".into(),
        replicas: 1,
        gpus_per_replica: 1,
        priority: None,
        queue: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1(model: &str, replicas: i32) -> v1::InferenceService {
        v1::InferenceService::new(
            "qwen3",
            v1::InferenceServiceSpec {
                model: model.into(),
                replicas,
                gpus_per_replica: 2,
                priority: Some("online".into()),
                queue: None,
            },
        )
    }

    #[test]
    fn model_becomes_base_model_and_back() {
        let old = v1("Qwen/Qwen3-0.6B", 3);
        let hub = to_hub(&old).unwrap();
        assert_eq!(hub.spec.base_model, "Qwen/Qwen3-0.6B");
        assert_eq!(hub.spec.replicas, Some(3));
        assert_eq!(hub.spec.gpus_per_replica, 2);
        assert_eq!(hub.spec.priority.as_deref(), Some("online"));
        let back = from_hub(&hub);
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&old).unwrap());
        assert!(back.metadata.annotations.is_none(), "nothing was lost, so nothing is stored");
    }

    #[test]
    fn what_v1alpha1_cannot_say_is_kept_in_an_annotation() {
        let mut hub = to_hub(&v1("base", 1)).unwrap();
        hub.spec.replicas = None;
        hub.spec.autoscaling = Some(v2::Autoscaling { min: 2, max: 8, target_queue_length: 4 });
        hub.spec.adapters = vec![v2::Adapter { name: "sql".into(), source: "org/sql-lora".into() }];
        hub.spec.gpus_per_replica = 16;
        hub.spec.nodes_per_replica = 2;
        let down = from_hub(&hub);
        assert_eq!(down.spec.replicas, 2, "the autoscaling minimum");
        assert_eq!(down.spec.gpus_per_replica, 8, "the GPUs of one pod");
        let stored = &down.metadata.annotations.as_ref().unwrap()[LOST_FIELDS_ANNOTATION];
        assert_eq!(
            stored,
            r#"{"spec":{"adapters":[{"name":"sql","source":"org/sql-lora"}],"autoscaling":{"min":2,"max":8,"targetQueueLength":4},"gpusPerReplica":16,"nodesPerReplica":2,"replicas":null}}"#
        );
        assert_eq!(to_hub(&down).unwrap(), hub);
    }

    #[test]
    fn a_malformed_annotation_is_an_error() {
        let mut old = v1("base", 1);
        old.metadata.annotations = Some(BTreeMap::from([(LOST_FIELDS_ANNOTATION.to_string(), "{".to_string())]));
        assert!(to_hub(&old).unwrap_err().starts_with("annotation ai.example.com/v1alpha2-fields is not JSON"));
        old.metadata.annotations =
            Some(BTreeMap::from([(LOST_FIELDS_ANNOTATION.to_string(), r#"{"spec":{"replicas":"x"}}"#.to_string())]));
        assert!(to_hub(&old).unwrap_err().contains("does not hold valid fields"));
    }
}
