//! The InferenceService CustomResourceDefinition, generated from the Rust
//! types by kube-derive (a structural schema: a type on every node, no
//! `$ref`), never kept by hand.

use kube_core::CustomResourceExt;
use serde_json::Value;

use crate::objects::{Object, ObjectId};
use crate::spec::InferenceService;

/// The CRD as a JSON value, in the order `kubectl get -o yaml` shows it.
pub fn crd() -> Value {
    let mut value = serde_json::to_value(InferenceService::crd()).unwrap_or(Value::Null);
    integral_floats_to_ints(&mut value);
    value
}

/// The CRD as a rendered object.
pub fn object() -> Object {
    let value = crd();
    let name = value.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    Object {
        id: ObjectId::new("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, &name),
        value,
        owner: None,
        source: None,
        cluster: None,
        bootstrap: false,
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
        let v = &c["spec"]["versions"][0];
        assert_eq!(v["name"], "v1alpha1");
        assert_eq!(v["served"], true);
        assert_eq!(v["storage"], true);
        assert_eq!(v["subresources"]["status"], json!({}));
        let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["required"], json!(["model", "replicas"]));
        assert_eq!(spec["properties"]["replicas"]["minimum"], json!(0));
        assert_eq!(spec["properties"]["gpusPerReplica"]["default"], json!(1));
        let columns: Vec<&str> =
            v["additionalPrinterColumns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(columns, ["Model", "Replicas", "Ready", "Phase", "Age"]);
    }

    #[test]
    fn schema_is_structural() {
        fn walk(v: &Value, path: &str) {
            let obj = v.as_object().unwrap();
            assert!(!obj.contains_key("$ref"), "$ref at {path}");
            assert!(obj.contains_key("type"), "no type at {path}");
            for (k, p) in obj.get("properties").and_then(Value::as_object).into_iter().flatten() {
                walk(p, &format!("{path}.{k}"));
            }
            if let Some(items) = obj.get("items") {
                walk(items, &format!("{path}[]"));
            }
        }
        walk(&crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"], "");
    }
}
