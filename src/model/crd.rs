//! The InferenceService CustomResourceDefinition, generated from the Rust
//! types by kube-derive (a structural schema: a type on every node, no
//! `$ref`), never kept by hand.
//!
//! Both versions are served; v1alpha2 is stored. isvc runs no conversion
//! webhook (it runs nothing in the cluster), and without one the API server
//! converts by changing `apiVersion` alone (`strategy: None`), which would
//! lose `model` of a v1alpha1 object stored as v1alpha2. So v1alpha1 is
//! served for reading but refuses writes with a message that says how to
//! migrate, and is marked deprecated. Files of both versions keep working
//! with `isvc render`, which converts in-process ([`crate::model::conversion`]).

use crate::base::value::At;
use kube_core::CustomResourceExt;
use serde_json::{Value, json};

use crate::model::objects::{Object, ObjectId};

/// Why the cluster refuses v1alpha1 writes, shown by `kubectl apply`.
pub const V1ALPHA1_WRITE_MESSAGE: &str = "ai.example.com/v1alpha1 InferenceServices cannot be stored: the cluster \
     stores v1alpha2 and has no conversion webhook. Convert the file with `isvc migrate` and apply it as v1alpha2.";

/// The CRD as a JSON value, in the order `kubectl get -o yaml` shows it.
pub fn crd() -> Value {
    let merged = kube_core::crd::merge_crds(
        vec![crate::model::v1alpha2::InferenceService::crd(), crate::model::v1alpha1::InferenceService::crd()],
        crate::model::v1alpha2::VERSION,
    )
    .unwrap_or_else(|e| unreachable!("both versions share group, kind and scope: {e}"));
    let mut value = serde_json::to_value(merged).unwrap_or(Value::Null);
    integral_floats_to_ints(&mut value);
    int_or_string(&mut value);
    if let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
    // Deleting the CRD deletes every InferenceService: no GitOps engine may.
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        let protection = crate::model::labels::PRUNE_PROTECTION.iter().map(|(k, v)| (k.to_string(), json!(v)));
        meta.insert("annotations".into(), Value::Object(protection.collect()));
    }
    for version in value.pointer_mut("/spec/versions").and_then(Value::as_array_mut).into_iter().flatten() {
        if version["name"] == crate::model::v1alpha2::VERSION {
            if let Some(spec) = version.pointer_mut("/schema/openAPIV3Schema/properties/spec") {
                // What `isvc render` checks with positions, for objects applied to the cluster.
                spec["x-kubernetes-validations"] = json!([
                    {"rule": "has(self.replicas) != has(self.autoscaling)", "message": "give replicas or autoscaling, not both"},
                    {"rule": "!has(self.autoscaling) || self.autoscaling.min <= self.autoscaling.max", "message": "autoscaling.min must not be above autoscaling.max"},
                    {"rule": "self.gpusPerReplica % self.nodesPerReplica == 0", "message": "gpusPerReplica must split evenly over nodesPerReplica"},
                ]);
            }
            continue;
        }
        version["deprecated"] = json!(true);
        version["deprecationWarning"] = json!(
            "ai.example.com/v1alpha1 InferenceService is deprecated; use v1alpha2 (`isvc migrate` converts files)"
        );
        if let Some(spec) = version.pointer_mut("/schema/openAPIV3Schema/properties/spec") {
            spec["x-kubernetes-validations"] = json!([{"rule": "false", "message": V1ALPHA1_WRITE_MESSAGE}]);
        }
    }
    value
}

/// The CRD as a rendered object.
pub fn object() -> Object {
    let value = crd();
    let name = value.at("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    Object::new(ObjectId::new("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, &name), value)
}

/// kube-derive empties the branches of an int-or-string node's `anyOf`; the
/// API server accepts the node without them, as `kubectl explain` shows it.
fn int_or_string(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
                map.remove("anyOf");
            }
            map.values_mut().for_each(int_or_string);
        }
        Value::Array(items) => items.iter_mut().for_each(int_or_string),
        _ => {}
    }
}

/// schemars writes bounds as floats (`minimum: 0.0`); Kubernetes prints
/// integers. Whole-number floats become integers for a clean, stable file.
fn integral_floats_to_ints(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|f| n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15) {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_to_ints),
        Value::Object(map) => map.values_mut().for_each(integral_floats_to_ints),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crd_has_what_the_cluster_needs() {
        let c = crd();
        assert_eq!(c["metadata"]["name"], "inferenceservices.ai.example.com");
        assert_eq!(c["spec"]["scope"], "Namespaced");
        assert_eq!(c["spec"]["names"]["shortNames"], json!(["isvc"]));
        assert_eq!(c["spec"]["conversion"], json!({"strategy": "None"}));
        let v = &c["spec"]["versions"][0];
        assert_eq!(v["name"], "v1alpha2");
        assert_eq!(v["served"], true);
        assert_eq!(v["storage"], true);
        assert_eq!(v["subresources"]["status"], json!({}));
        let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["required"], json!(["baseModel"]));
        assert_eq!(spec["properties"]["replicas"]["minimum"], json!(0));
        assert_eq!(spec["properties"]["gpusPerReplica"]["default"], json!(1));
        let columns: Vec<&str> =
            v["additionalPrinterColumns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(columns, ["Model", "Replicas", "Ready", "Phase", "Endpoint", "Age"]);

        let old = &c["spec"]["versions"][1];
        assert_eq!(old["name"], "v1alpha1");
        assert_eq!(old["served"], true);
        assert_eq!(old["storage"], false);
        assert_eq!(old["deprecated"], true);
        let spec = &old["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["required"], json!(["model", "replicas"]));
        assert_eq!(spec["x-kubernetes-validations"][0]["rule"], "false", "v1alpha1 writes would lose fields");
    }

    #[test]
    fn schema_is_structural() {
        fn walk(v: &Value, path: &str) {
            let obj = v.as_object().unwrap();
            assert!(!obj.contains_key("$ref"), "$ref at {path}");
            // Quantities are int-or-string, the one node allowed no type.
            assert!(obj.contains_key("type") || obj.contains_key("x-kubernetes-int-or-string"), "no type at {path}");
            for (k, p) in obj.get("properties").and_then(Value::as_object).into_iter().flatten() {
                walk(p, &format!("{path}.{k}"));
            }
            if let Some(items) = obj.get("items") {
                walk(items, &format!("{path}[]"));
            }
        }
        for version in crd()["spec"]["versions"].as_array().unwrap() {
            walk(&version["schema"]["openAPIV3Schema"], "");
        }
    }
}
