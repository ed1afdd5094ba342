//! The InferenceService resource: one typed definition that drives parsing,
//! defaults, validation messages, the CRD and the editor JSON Schema.

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of the InferenceService resource.
pub const GROUP: &str = "ai.example.com";
/// The served (and stored) version.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` as written in files.
pub const API_VERSION: &str = "ai.example.com/v1alpha1";
pub const KIND: &str = "InferenceService";

/// Most GPUs one replica may ask for: one node's worth.
pub const MAX_GPUS_PER_REPLICA: i32 = 8;
/// Most replicas a service may ask for (its autoscaler may go to 3x this).
pub const MAX_REPLICAS: i32 = 1000;

/// An LLM served by vLLM: the model, how many replicas, and GPUs per replica.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[kube(
    group = "ai.example.com",
    version = "v1alpha1",
    kind = "InferenceService",
    plural = "inferenceservices",
    singular = "inferenceservice",
    namespaced,
    shortname = "isvc",
    status = "InferenceServiceStatus",
    doc = "An LLM served by vLLM: the model, how many replicas, and GPUs per replica.",
    crates(
        kube_core = "::kube_core",
        k8s_openapi = "::k8s_openapi",
        schemars = "::schemars",
        serde = "::serde",
        serde_json = "::serde_json"
    ),
    printcolumn = r#"{"name":"Model","type":"string","jsonPath":".spec.model"}"#,
    printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyReplicas"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InferenceServiceSpec {
    /// The model vLLM serves: a Hugging Face model id (`Qwen/Qwen3-0.6B`) or a
    /// path inside the container.
    #[schemars(length(min = 1, max = 1024))]
    pub model: String,

    /// Number of serving pods. 0 scales the service to zero (no autoscaler);
    /// above 0 an autoscaler keeps between max(1, replicas/2) and 3 x replicas.
    #[schemars(range(min = 0, max = 1000))]
    pub replicas: i32,

    /// GPUs per pod (1 to 8, one node's worth); vLLM shards the model over
    /// them with tensor parallelism.
    #[serde(default = "default_gpus_per_replica")]
    #[schemars(range(min = 1, max = 8))]
    pub gpus_per_replica: i32,

    /// Priority tier declared by the platform (for example `online` or
    /// `offline`); the tenant's default when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub priority: Option<String>,

    /// Kueue LocalQueue that admits the pods; the tenant's queue for the
    /// service's tier when left out (only where the platform uses Kueue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub queue: Option<String>,
}

fn default_gpus_per_replica() -> i32 {
    1
}

/// What a controller (or `isvc status`) reports about a service.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InferenceServiceStatus {
    /// Pods that pass their readiness probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Ready when enough replicas are ready and nothing is pending, else Progressing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
}

/// The phase of an InferenceService.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Phase {
    Ready,
    Progressing,
}

impl InferenceService {
    /// The namespace, with the default applied.
    pub fn namespace_or_default(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or("default")
    }

    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }
}
