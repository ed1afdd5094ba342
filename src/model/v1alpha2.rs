//! The InferenceService resource, version v1alpha2: a base model with LoRA
//! adapters, a fixed replica count or queue-length autoscaling, replicas
//! that span several nodes, resource overrides and gateway registration.
//!
//! This is the hub version: the derivation works on it alone, and v1alpha1
//! objects are converted to it on load ([`crate::model::conversion`]). The CRD
//! stores this version. Like [`crate::model::v1alpha1`], one typed definition drives
//! parsing, defaults, the CRD and the editor JSON Schema.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

pub use crate::model::platform::QuantityText;

pub use crate::model::v1alpha1::Phase;

/// This version's name.
pub const VERSION: &str = "v1alpha2";
/// `apiVersion` as written in files.
pub const API_VERSION: &str = "ai.example.com/v1alpha2";

/// Most GPUs one pod (one node) may have.
pub const MAX_GPUS_PER_NODE: i32 = crate::model::v1alpha1::MAX_GPUS_PER_REPLICA;
/// Most nodes one replica may span.
pub const MAX_NODES_PER_REPLICA: i32 = 16;
/// Most LoRA adapters one service may serve.
pub const MAX_ADAPTERS: usize = 64;

/// An LLM served by vLLM: a base model, its LoRA adapters, how it scales,
/// and where the gateway routes to it.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "ai.example.com",
    version = "v1alpha2",
    kind = "InferenceService",
    plural = "inferenceservices",
    singular = "inferenceservice",
    namespaced,
    shortname = "isvc",
    status = "InferenceServiceStatus",
    derive = "PartialEq",
    doc = "An LLM served by vLLM: a base model with its LoRA adapters, how it scales, and where the gateway routes to it.",
    crates(
        kube_core = "::kube_core",
        k8s_openapi = "::k8s_openapi",
        schemars = "::schemars",
        serde = "::serde",
        serde_json = "::serde_json"
    ),
    printcolumn = r#"{"name":"Model","type":"string","jsonPath":".spec.baseModel"}"#,
    printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyReplicas"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Endpoint","type":"string","jsonPath":".status.endpoint"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InferenceServiceSpec {
    /// The model vLLM serves: a Hugging Face model id (`Qwen/Qwen3-8B`) or a
    /// path inside the container. Clients ask for it by this name.
    #[schemars(length(min = 1, max = 1024))]
    pub base_model: String,

    /// LoRA adapters served on top of the base model. Clients ask for an
    /// adapter by its name, as if it were a model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub adapters: Vec<Adapter>,

    /// A fixed number of serving replicas (0 turns the service off). Without
    /// `autoscaling`, an autoscaler keeps between max(1, replicas/2) and
    /// 3 x replicas, as in v1alpha1. Give `replicas` or `autoscaling`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1000))]
    pub replicas: Option<i32>,

    /// Scale on vLLM's queue length between `min` and `max` replicas. Give
    /// `replicas` or `autoscaling`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<Autoscaling>,

    /// GPUs per replica. With `nodesPerReplica` above 1 they are split evenly
    /// over the nodes (at most 8 per node); vLLM shards the model with tensor
    /// parallelism inside a node and pipeline parallelism across nodes.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 128))]
    pub gpus_per_replica: i32,

    /// Nodes one replica spans, for models that do not fit one node. Above 1,
    /// each replica is a LeaderWorkerSet group of this many pods.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 16))]
    pub nodes_per_replica: i32,

    /// Per-pod CPU, memory and shared memory, replacing the platform's
    /// per-GPU defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,

    /// Registration with the platform's Gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<Gateway>,

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

    /// The name clients ask for (vLLM's `--served-model-name`, also the
    /// `model_name` label of its metrics). Left out, `baseModel`, as vLLM
    /// itself defaults to the model it loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub served_model_name: Option<String>,

    /// The revision of the base model's weights: a commit id (best: the
    /// rendered output then pins the weights too), a branch or a tag
    /// (vLLM's `--revision`). Left out, the repository's default branch
    /// at the time the pod starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub revision: Option<String>,

    /// Extra vLLM server arguments, appended after the ones isvc derives
    /// (`--max-model-len=32768`, `--gpu-memory-utilization=0.85`,
    /// `--quantization=fp8`, `--enable-auto-tool-choice`,
    /// `--tool-call-parser=hermes`). Arguments isvc owns (`--model`,
    /// `--host`, `--port`, the parallel sizes, `--config`, the LoRA options,
    /// `--served-model-name`, `--revision`, ...) are refused: use the spec
    /// field that sets them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 128), inner(length(min = 1, max = 4096)))]
    pub args: Vec<String>,

    /// Extra environment variables of the server (and of multi-node
    /// workers), as Kubernetes writes them: `value` or `valueFrom`. Names
    /// isvc sets (`HOME`, `HF_HOME`, `TMPDIR`, ...) are refused; `HF_TOKEN`
    /// replaces the platform's Hugging Face token.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 128))]
    pub env: Vec<k8s_openapi::api::core::v1::EnvVar>,

    /// The accelerator profile of the platform the pods run on (`h100`,
    /// `mig-3g`): its GPU resource name, nodes and tolerations. The
    /// platform's first profile when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub accelerator: Option<String>,

    /// The vLLM server image, replacing the platform's `defaults.image`;
    /// the platform may restrict the repositories it comes from. Pin a
    /// version or a digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub image: Option<String>,
}

fn one() -> i32 {
    1
}

/// A LoRA adapter.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Adapter {
    /// The name clients ask for (the `model` of a request): a DNS label,
    /// unique in the service and different from the base model.
    #[schemars(length(min = 1, max = 63))]
    pub name: String,
    /// Where vLLM loads it from: a Hugging Face repository id
    /// (`org/adapter`) or an absolute path inside the container (a mounted
    /// volume).
    #[schemars(length(min = 1, max = 1024))]
    pub source: String,
}

/// Queue-length autoscaling bounds and target.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Autoscaling {
    /// Fewest replicas. At least 1, except behind a Gateway whose endpoint
    /// picker holds requests (the platform's `gateway.endpointPicker.flowControl`)
    /// and where KEDA scales: elsewhere the queue length is read from the
    /// serving pods, so nothing could scale a service back up from zero.
    #[schemars(range(min = 0, max = 1000))]
    pub min: i32,
    /// Most replicas.
    #[schemars(range(min = 1, max = 3000))]
    pub max: i32,
    /// Waiting requests per replica above which replicas are added: vLLM's
    /// `vllm:num_requests_waiting`, or, behind an endpoint picker with flow
    /// control, the requests the picker holds in its queue.
    #[schemars(range(min = 1, max = 100000))]
    pub target_queue_length: i32,
}

/// Per-pod resources that replace the platform's per-GPU defaults.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resources {
    /// CPU request of each pod (`16`, `3500m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub cpu: Option<QuantityText>,
    /// Memory request and limit of each pod (`64Gi`); it must hold the
    /// shared memory too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub memory: Option<QuantityText>,
    /// Size of the memory-backed `/dev/shm` of each pod (`8Gi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub shm_size: Option<QuantityText>,
}

/// Registration with the platform's Gateway.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Gateway {
    /// Where the Gateway serves this service: a hostname
    /// (`qwen3.llm.example.com`), a path prefix (`/qwen3`), or both
    /// (`llm.example.com/qwen3`). A path prefix is removed before the request
    /// reaches vLLM. No two services may claim the same route.
    #[schemars(length(min = 1, max = 1024))]
    pub route: String,
    /// Priority of this service's requests in the inference pool's flow
    /// control: higher is served first, 0 when left out, negative allowed.
    /// Needs the platform's Gateway API Inference Extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Share of the route's requests, in percent, when several services of
    /// one namespace share `route` (a canary or blue-green rollout): every
    /// service of the route gives one, and they add up to 100. 0 keeps the
    /// service on the route without traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub weight: Option<i32>,
}

/// A Kubernetes quantity in the CRD's terms: an integer or a string.
fn int_or_string(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": true
    })
}

/// What a controller (or `isvc status`) reports about a service.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InferenceServiceStatus {
    /// Pods that pass their readiness probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Ready when enough replicas are ready and nothing is pending, else Progressing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// Adapters the serving pods have loaded, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded_adapters: Vec<String>,
    /// Where clients reach the service: the Gateway route, or the Service's
    /// cluster address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The latest observations of the service's state (`Ready`,
    /// `AdaptersLoaded`, `Routed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
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

impl InferenceServiceSpec {
    /// GPUs of each pod: the replica's GPUs split over its nodes.
    pub fn gpus_per_node(&self) -> i32 {
        self.gpus_per_replica / self.nodes_per_replica.max(1)
    }
}
