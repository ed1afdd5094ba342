//! JSON Schemas for the two input files, generated from the Rust types.
//!
//! The same schemas serve editors (through `# yaml-language-server:
//! $schema=`) and the compiler's own input checks ([`crate::load::schema_validate`]).

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::model::platform::Platform;
use crate::model::v1alpha1::{API_VERSION, KIND};

/// File names `isvc schema` writes: the editor schema (either version, by
/// `apiVersion`), one schema per version, and the platform file's.
pub const INFERENCE_SERVICE_FILE: &str = "inferenceservice.schema.json";
pub const INFERENCE_SERVICE_V1ALPHA1_FILE: &str = "inferenceservice-v1alpha1.schema.json";
pub const INFERENCE_SERVICE_V1ALPHA2_FILE: &str = "inferenceservice-v1alpha2.schema.json";
pub const PLATFORM_FILE: &str = "platform.schema.json";

const DRAFT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The `apiVersion`s an InferenceService file may have, newest first.
pub const INFERENCE_SERVICE_VERSIONS: [&str; 2] = [crate::model::v1alpha2::API_VERSION, API_VERSION];

/// Schema of an InferenceService document of `api_version`, built once;
/// `None` for a version isvc does not know.
pub fn inference_service_cached(api_version: &str) -> Option<&'static Value> {
    static V1ALPHA1: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    static V1ALPHA2: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    match api_version {
        crate::model::v1alpha2::API_VERSION => Some(V1ALPHA2.get_or_init(inference_service_v1alpha2)),
        API_VERSION => Some(V1ALPHA1.get_or_init(inference_service_v1alpha1)),
        _ => None,
    }
}

/// Schema of a v1alpha1 InferenceService document.
pub fn inference_service_v1alpha1() -> Value {
    document::<crate::model::v1alpha1::InferenceServiceSpec>(
        API_VERSION,
        "An LLM served by vLLM (v1alpha1), compiled by isvc into a Deployment, a Service and a HorizontalPodAutoscaler.",
    )
}

/// Schema of a v1alpha2 InferenceService document.
pub fn inference_service_v1alpha2() -> Value {
    document::<crate::model::v1alpha2::InferenceServiceSpec>(
        crate::model::v1alpha2::API_VERSION,
        "An LLM served by vLLM (v1alpha2): a base model with LoRA adapters, replicas or queue-length autoscaling, \
         and gateway registration, compiled by isvc into Kubernetes objects.",
    )
}

/// The editor schema: a v1alpha1 document when `apiVersion` says so, a
/// v1alpha2 document otherwise.
pub fn inference_service() -> Value {
    let strip = |mut v: Value| {
        if let Some(o) = v.as_object_mut() {
            o.remove("$schema");
        }
        v
    };
    json!({
        "$schema": DRAFT,
        "title": "InferenceService",
        "description": "An LLM served by vLLM, compiled by isvc into Kubernetes objects. `apiVersion` picks the version: ai.example.com/v1alpha2 (current) or ai.example.com/v1alpha1.",
        "type": "object",
        "if": {"properties": {"apiVersion": {"const": API_VERSION}}, "required": ["apiVersion"]},
        "then": strip(inference_service_v1alpha1()),
        "else": exactly_one_scaling(strip(inference_service_v1alpha2())),
    })
}

/// A v1alpha2 spec gives exactly one of `replicas` and `autoscaling`. The
/// editor schema says so; the compiler says it with a clearer message
/// (`load::validate`), so its own schema leaves the rule out.
fn exactly_one_scaling(mut document: Value) -> Value {
    if let Some(spec) = document.pointer_mut("/properties/spec").and_then(Value::as_object_mut) {
        spec.insert("oneOf".into(), json!([{"required": ["replicas"]}, {"required": ["autoscaling"]}]));
    }
    document
}

/// One document with `spec` of type `S`, every subschema inlined (so the
/// versions can share the editor schema without their definitions clashing).
fn document<S: JsonSchema>(api_version: &str, description: &str) -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let mut spec = settings.into_generator().into_root_schema_for::<S>().to_value();
    close_objects(&mut spec);
    let mut spec = spec.as_object().cloned().unwrap_or_default();
    for k in ["$schema", "title"] {
        spec.remove(k);
    }
    json!({
        "$schema": DRAFT,
        "title": "InferenceService",
        "description": description,
        "type": "object",
        "additionalProperties": false,
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"type": "string", "const": api_version},
            "kind": {"type": "string", "const": KIND},
            "metadata": metadata(),
            "spec": Value::Object(spec),
        },
    })
}

/// Refuses unknown fields in every object that lists its fields, as the
/// spec's own types do (`deny_unknown_fields`), including the Kubernetes
/// types a spec embeds (`env` items: a misspelt `valeu` is an error, not a
/// variable without a value).
fn close_objects(schema: &mut Value) {
    match schema {
        Value::Object(o) => {
            if o.contains_key("properties") && !o.contains_key("additionalProperties") {
                o.insert("additionalProperties".to_string(), Value::Bool(false));
            }
            o.values_mut().for_each(close_objects);
        }
        Value::Array(a) => a.iter_mut().for_each(close_objects),
        _ => {}
    }
}

fn metadata() -> Value {
    let string_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["name"],
        "properties": {
            "name": {
                "description": "Name of the service and of every object rendered for it: a DNS-1035 label (lower case, starts with a letter, at most 63 characters).",
                "type": "string",
                "pattern": "^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
            },
            "namespace": {
                "description": "Namespace of the rendered objects; `default` when left out.",
                "type": "string",
                "pattern": "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
            },
            "labels": merge(&string_map, json!({"description": "Copied to every rendered object and to the pods."})),
            "annotations": merge(&string_map, json!({"description": "Copied to the Deployment, Service and HorizontalPodAutoscaler (not to the pods)."})),
        }
    })
}

fn merge(base: &Value, extra: Value) -> Value {
    let mut out: Map<String, Value> = base.as_object().cloned().unwrap_or_default();
    if let Value::Object(e) = extra {
        out.extend(e);
    }
    Value::Object(out)
}

/// Schema of the platform file.
pub fn platform() -> Value {
    let mut schema = SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<Platform>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert(
                "apiVersion".into(),
                json!({"description": "Always `ai.example.com/v1alpha1`.", "type": "string", "const": API_VERSION}),
            );
            props.insert(
                "kind".into(),
                json!({"description": "Always `Platform`.", "type": "string", "const": crate::model::platform::KIND}),
            );
        }
        obj.insert("required".into(), json!(["apiVersion", "kind"]));
    }
    schema
}

/// Every schema file with its name, as `isvc schema` writes them.
pub fn files() -> Vec<(&'static str, String)> {
    [
        (INFERENCE_SERVICE_FILE, inference_service()),
        (INFERENCE_SERVICE_V1ALPHA1_FILE, inference_service_v1alpha1()),
        (INFERENCE_SERVICE_V1ALPHA2_FILE, inference_service_v1alpha2()),
        (PLATFORM_FILE, platform()),
    ]
    .into_iter()
    .map(|(name, schema)| (name, serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n"))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_schemas_have_the_required_fields_and_bounds() {
        let s = inference_service_v1alpha1();
        let spec = &s["properties"]["spec"];
        assert_eq!(spec["required"], json!(["model", "replicas"]));
        assert_eq!(spec["properties"]["replicas"]["minimum"], json!(0));
        assert_eq!(spec["properties"]["gpusPerReplica"]["default"], json!(1));
        assert_eq!(spec["additionalProperties"], json!(false));
        let s = inference_service_v1alpha2();
        let spec = &s["properties"]["spec"];
        assert_eq!(spec["required"], json!(["baseModel"]));
        assert_eq!(spec["properties"]["autoscaling"]["required"], json!(["min", "max", "targetQueueLength"]));
        assert_eq!(spec["additionalProperties"], json!(false));
        assert!(!s.to_string().contains("$ref"), "every subschema is inlined");
    }

    #[test]
    fn the_editor_schema_picks_the_version_by_api_version() {
        let s = inference_service();
        assert_eq!(s["then"]["properties"]["apiVersion"]["const"], API_VERSION);
        assert_eq!(s["else"]["properties"]["apiVersion"]["const"], crate::model::v1alpha2::API_VERSION);
        assert_eq!(
            s["else"]["properties"]["spec"]["oneOf"],
            json!([{"required": ["replicas"]}, {"required": ["autoscaling"]}])
        );
    }
}
