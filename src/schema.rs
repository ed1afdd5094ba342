//! JSON Schemas for the two input files, generated from the Rust types.
//!
//! The same schemas serve editors (through `# yaml-language-server:
//! $schema=`) and the compiler's own input checks ([`crate::schema_check`]).

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::platform::Platform;
use crate::spec::{API_VERSION, InferenceServiceSpec, KIND};

/// File names `isvc schema` writes.
pub const INFERENCE_SERVICE_FILE: &str = "inferenceservice.schema.json";
pub const PLATFORM_FILE: &str = "platform.schema.json";

const DRAFT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Schema of an InferenceService file (one document), built once.
pub fn inference_service_cached() -> &'static Value {
    static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(inference_service)
}

/// Schema of an InferenceService file (one document).
pub fn inference_service() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let spec = generator.subschema_for::<InferenceServiceSpec>();
    let defs = generator.take_definitions(true);
    json!({
        "$schema": DRAFT,
        "title": "InferenceService",
        "description": "An LLM served by vLLM, compiled by isvc into a Deployment, a Service and a HorizontalPodAutoscaler.",
        "type": "object",
        "additionalProperties": false,
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"type": "string", "const": API_VERSION},
            "kind": {"type": "string", "const": KIND},
            "metadata": metadata(),
            "spec": spec.to_value(),
        },
        "$defs": defs,
    })
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
                json!({"description": "Always `Platform`.", "type": "string", "const": crate::platform::KIND}),
            );
        }
        obj.insert("required".into(), json!(["apiVersion", "kind"]));
    }
    schema
}

/// Every schema file with its name, as `isvc schema` writes them.
pub fn files() -> Vec<(&'static str, String)> {
    [(INFERENCE_SERVICE_FILE, inference_service()), (PLATFORM_FILE, platform())]
        .into_iter()
        .map(|(name, schema)| (name, serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_schema_has_the_required_fields_and_bounds() {
        let s = inference_service();
        let spec = &s["properties"]["spec"];
        let spec = match spec.get("$ref").and_then(Value::as_str) {
            Some(r) => &s["$defs"][r.rsplit('/').next().unwrap()],
            None => spec,
        };
        assert_eq!(spec["required"], json!(["model", "replicas"]));
        assert_eq!(spec["properties"]["replicas"]["minimum"], json!(0));
        assert_eq!(spec["properties"]["gpusPerReplica"]["default"], json!(1));
        assert_eq!(spec["additionalProperties"], json!(false));
    }
}
