//! The platform file: the defaults every service is rendered with.
//!
//! Without a file, [`Platform::default`] holds the built-in values. A file
//! overrides any of them; fields it leaves out keep the built-in value. The
//! file is versioned like a Kubernetes object so it can grow (tenants,
//! queues, clusters) without breaking old files.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize};

pub const KIND: &str = "Platform";

/// Platform-wide settings for rendering InferenceServices.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "isvc platform file")]
pub struct Platform {
    /// Always `ai.example.com/v1alpha1`.
    #[serde(default = "api_version")]
    pub api_version: String,
    /// Always `Platform`.
    #[serde(default = "kind")]
    pub kind: String,
    /// Directory of template overrides, relative to the platform file: a
    /// file there replaces the built-in template of the same name
    /// (`deployment.yaml`, `service.yaml`, `horizontalpodautoscaler.yaml`).
    /// The `--templates` flag takes precedence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub templates: Option<String>,
    /// Values every service gets unless the platform overrides them.
    #[serde(default)]
    pub defaults: Defaults,
    /// Priority tiers, by name. Left out, a platform with tenants gets
    /// `online` (high, preempts, disruption budget) and `offline` (low, never
    /// preempts, preemptible).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub priorities: BTreeMap<String, PriorityTier>,
    /// Prefix of the PriorityClass and Kueue WorkloadPriorityClass of each
    /// tier (`isvc-online`). Both are cluster-wide: the prefix keeps their
    /// names apart from other owners' classes of the same name. `isvc-`
    /// when left out; `""` keeps the bare tier names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_prefix: Option<String>,
    /// Namespaces allowed to reach the serving port of every tenant.
    #[serde(default)]
    pub network: Network,
    /// Kueue admission for tenants that declare queues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kueue: Option<Kueue>,
    /// Teams sharing the cluster, each with its namespaces, quota, limits,
    /// priorities, queues and network isolation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<Tenant>,
    /// Where the rendered output lives in git and how Argo CD or Flux
    /// applies it (`render --gitops`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gitops: Option<GitOps>,
    /// Clusters to render for: one output tree each, with per-cluster
    /// overrides. Left out, one tree for one cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<Cluster>,
    /// Relaxations of `defaults.security` for the services of one namespace
    /// (or some of them), each with the reason the image needs it. Nothing
    /// is relaxed for a service no entry names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_exceptions: Vec<SecurityException>,
    /// The Gateway services register with (`spec.gateway.route`), and whether
    /// the Gateway API Inference Extension is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewayConfig>,
    /// KEDA scales services that name `spec.autoscaling`, with a Prometheus
    /// trigger; without this section, a HorizontalPodAutoscaler does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keda: Option<KedaConfig>,
    /// Prometheus Operator ServiceMonitors for the services' metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitoring: Option<Monitoring>,
    /// A shared model cache: a ReadWriteMany PersistentVolumeClaim per
    /// namespace that has services, filled by one download Job per model and
    /// revision; the servers mount it read-only at the Hugging Face cache
    /// and run offline. Left out, every pod downloads into its own
    /// `emptyDir` (`defaults.modelCache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_cache: Option<SharedModelCache>,
    /// GPU profiles services pick with `spec.accelerator`: the first is the
    /// default. Left out, every service asks for `nvidia.com/gpu` on the
    /// nodes `defaults.nodeSelector` selects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accelerators: Vec<Accelerator>,
    /// Which server images services may name in `spec.image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Images>,
}

/// The resource name of a GPU when the platform declares no accelerator
/// profile (the NVIDIA device plugin's, NVIDIA/k8s-device-plugin
/// `README.md`).
pub const DEFAULT_GPU_RESOURCE: &str = "nvidia.com/gpu";

/// A shared, persistent model cache.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SharedModelCache {
    /// StorageClass of the claim; it must offer `ReadWriteMany` volumes
    /// (NFS, CephFS, EFS, Filestore, Azure Files). The cluster's default
    /// class when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub storage_class_name: Option<String>,
    /// Size of each namespace's claim (`500Gi`): every model and revision
    /// its services use must fit. Give `size` (a claim filled by download
    /// Jobs) or `image` (an OCI image per model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<QuantityText>,
    /// Instead of a claim: an OCI image (or artifact) per model and
    /// revision, holding its Hugging Face hub cache (`models--<org>--<name>/`
    /// at the root), that the kubelet pulls and mounts read-only in place of
    /// the claim (an image volume, Kubernetes 1.31+, on by default from
    /// 1.35). No download Job: the image is the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ModelImage>,
    /// Name of the claim in each namespace.
    #[serde(default = "default_claim_name")]
    #[schemars(length(min = 1, max = 63))]
    pub claim_name: String,
    /// Image of the download Jobs; it must ship the Hugging Face CLI `hf`
    /// (huggingface_hub 0.34 or later). The service's server image when
    /// left out (vLLM images ship it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub downloader_image: Option<String>,
    /// Longest a download may take, retries included, before its Job fails
    /// (`activeDeadlineSeconds`).
    #[serde(default = "default_download_deadline")]
    #[schemars(range(min = 60, max = 604800))]
    pub download_deadline_seconds: i64,
    /// Failed download pods before the Job gives up (`backoffLimit`).
    #[serde(default = "default_download_retries")]
    #[schemars(range(min = 0, max = 100))]
    pub download_retries: i32,
}

/// The OCI images that hold the models' caches.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelImage {
    /// The image of a model, with `{model}` replaced by the model id in
    /// lower case (`qwen/qwen3-8b`) and `{revision}` by the service's
    /// revision (`main` when left out; `/` becomes `-`):
    /// `registry.example.com/models/{model}:{revision}`.
    #[schemars(length(min = 1, max = 1024))]
    pub reference: String,
    /// When the kubelet pulls it.
    #[serde(default = "if_not_present")]
    pub pull_policy: PullPolicy,
}

fn if_not_present() -> PullPolicy {
    PullPolicy::IfNotPresent
}

fn default_claim_name() -> String {
    "isvc-model-cache".to_string()
}

fn default_download_deadline() -> i64 {
    21600
}

fn default_download_retries() -> i32 {
    6
}

/// A GPU profile: the device plugin's resource name, the nodes that offer
/// it, and how much memory one such GPU has.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Accelerator {
    /// Profile name, as `spec.accelerator` names it (`h100`, `mig-3g.40gb`):
    /// letters, digits, `-`, `_` and `.`.
    #[schemars(length(min = 1, max = 63))]
    pub name: String,
    /// The extended resource one GPU is requested as: `nvidia.com/gpu`, a
    /// MIG slice under the device plugin's mixed strategy
    /// (`nvidia.com/mig-3g.40gb`), `amd.com/gpu`.
    #[schemars(length(min = 1, max = 253))]
    pub resource: String,
    /// Node labels the pods of this profile must run on; replaces
    /// `defaults.nodeSelector`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Tolerations of the pods of this profile; replaces
    /// `defaults.tolerations`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Memory of one GPU (or one slice) in GiB: `isvc check` warns when a
    /// model's weights cannot fit the GPUs of a replica.
    #[serde(rename = "memoryGiB", default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 4096))]
    pub memory_gi_b: Option<u32>,
    /// Kueue ResourceFlavor of these nodes: queues give the quota of
    /// `resource` in this flavor. The platform's `kueue.flavor` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub kueue_flavor: Option<String>,
}

/// Which images services may run.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Images {
    /// Repositories `spec.image` may come from (`vllm/vllm-openai`,
    /// `registry.example.com/ml/`): an image matches a repository given in
    /// full, or any repository under one that ends with `/`. Any image when
    /// left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_repositories: Vec<String>,
}

impl Images {
    /// Whether `image` comes from an allowed repository.
    pub fn allows(&self, image: &str) -> bool {
        let repo = image_repository(image);
        self.allowed_repositories.is_empty()
            || self.allowed_repositories.iter().any(|r| match r.strip_suffix('/') {
                Some(prefix) => repo.starts_with(&format!("{prefix}/")),
                None => repo == r,
            })
    }
}

/// The repository of an image reference: without its tag and digest.
pub fn image_repository(image: &str) -> &str {
    let image = image.split('@').next().unwrap_or(image);
    match image.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => image,
    }
}

fn api_version() -> String {
    crate::model::v1alpha1::API_VERSION.to_string()
}

fn kind() -> String {
    KIND.to_string()
}

/// The prefix of PriorityClass names when the platform gives none.
pub const DEFAULT_PRIORITY_CLASS_PREFIX: &str = "isvc-";

/// Values every service is rendered with.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Defaults {
    /// The vLLM server image. Pin a version (or a digest); `latest` makes
    /// rollouts unrepeatable.
    #[schemars(length(min = 1))]
    pub image: String,
    /// When the kubelet pulls the image.
    pub image_pull_policy: PullPolicy,
    /// The port vLLM listens on and the Service exposes.
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// CPU, memory and shared memory, scaled by the GPUs of a replica.
    pub resources: Resources,
    /// Health probe timings.
    pub probes: Probes,
    /// The HorizontalPodAutoscaler rendered for services with replicas > 0.
    pub autoscaling: Autoscaling,
    /// How the Deployment replaces pods.
    pub rollout: Rollout,
    /// Node labels the serving pods must run on (for example a GPU product).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Tolerations of the serving pods (for tainted GPU nodes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Pod and container security settings of every service. Secure by
    /// default; each switch relaxes one setting for images that need it.
    pub security: Security,
    /// vLLM's LoRA settings for services with adapters.
    pub lora: Lora,
    /// Access to the Hugging Face Hub: the token for gated models.
    #[serde(skip_serializing_if = "HuggingFace::is_empty")]
    pub hugging_face: HuggingFace,
    /// How a server that is told to stop finishes the requests in flight.
    pub drain: Drain,
    /// The volume the server downloads the model into.
    #[serde(skip_serializing_if = "ModelCache::is_empty")]
    pub model_cache: ModelCache,
}

impl Default for Defaults {
    fn default() -> Defaults {
        Defaults {
            image: "vllm/vllm-openai:v0.11.0".to_string(),
            image_pull_policy: PullPolicy::IfNotPresent,
            port: 8000,
            resources: Resources::default(),
            probes: Probes::default(),
            autoscaling: Autoscaling::default(),
            rollout: Rollout::default(),
            node_selector: BTreeMap::new(),
            tolerations: Vec::new(),
            security: Security::default(),
            lora: Lora::default(),
            hugging_face: HuggingFace::default(),
            drain: Drain::default(),
            model_cache: ModelCache::default(),
        }
    }
}

/// The model cache: an `emptyDir` on the node's disk that holds the
/// downloaded weights and compiled kernels.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ModelCache {
    /// Size of every service's cache (its `sizeLimit` and `ephemeral-storage`
    /// request), replacing the estimate from the model's name (weights plus
    /// 10% plus 10Gi; 109Gi when the name gives no size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_limit: Option<QuantityText>,
}

impl ModelCache {
    pub fn is_empty(&self) -> bool {
        self.size_limit.is_none()
    }
}

/// Graceful drain: a pod that is deleted (rollout, scale-down, node drain)
/// keeps serving while the Service and the Gateway stop sending it new
/// requests, then finishes the requests in flight before it exits.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Drain {
    /// Seconds the server keeps serving after the pod is deleted, before it
    /// gets SIGTERM (a preStop sleep): time for endpoints, kube-proxy and
    /// the Gateway to stop routing new requests to it.
    #[schemars(range(min = 0, max = 600))]
    pub pre_stop_seconds: i32,
    /// Longest a request in flight may take to finish (a long generation).
    /// vLLM 0.18 and later get `--shutdown-timeout` with it; older images,
    /// which abort every request on SIGTERM, sleep this much longer first.
    #[schemars(range(min = 0, max = 3600))]
    pub request_seconds: i32,
}

impl Default for Drain {
    fn default() -> Drain {
        Drain { pre_stop_seconds: 15, request_seconds: 120 }
    }
}

/// Access to the Hugging Face Hub.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct HuggingFace {
    /// The Secret key holding a Hugging Face token: every server and
    /// multi-node worker mounts it read-only as a file that `HF_TOKEN_PATH`
    /// names, so gated models (Llama, Mistral, Gemma) download. The Secret must exist in each service's
    /// namespace; isvc never renders it (it does not belong in git). A
    /// service's own `HF_TOKEN` in `spec.env` replaces it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_secret: Option<SecretKeyRef>,
}

impl HuggingFace {
    pub fn is_empty(&self) -> bool {
        self.token_secret.is_none()
    }
}

/// A key of a Secret in the service's namespace.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretKeyRef {
    /// The Secret's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The key in the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// vLLM's LoRA settings for services with adapters.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Lora {
    /// Most adapters one batch may mix (vLLM's `--max-loras`): vLLM
    /// preallocates GPU memory for this many adapters of `maxLoraRank` in
    /// every LoRA layer, taken from the KV cache. A service with fewer
    /// adapters gets its adapter count; every adapter stays loaded in host
    /// memory (`--max-cpu-loras`), and is copied to the GPU when a batch
    /// needs it.
    #[schemars(range(min = 1, max = 64))]
    pub max_loras: i32,
    /// Highest rank of any adapter (vLLM's `--max-lora-rank`; it reserves
    /// GPU memory for it). vLLM's default (16) when left out; an adapter of a
    /// higher rank fails to load.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = [1, 8, 16, 32, 64, 128, 256, 320, 512]))]
    pub max_lora_rank: Option<i32>,
}

impl Default for Lora {
    fn default() -> Lora {
        Lora { max_loras: 4, max_lora_rank: None }
    }
}

/// Kubernetes image pull policy.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum PullPolicy {
    Always,
    IfNotPresent,
    Never,
}

impl PullPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            PullPolicy::Always => "Always",
            PullPolicy::IfNotPresent => "IfNotPresent",
            PullPolicy::Never => "Never",
        }
    }
}

/// Per-GPU resources: a replica with N GPUs gets N times each value.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Resources {
    /// CPU request per GPU (a Kubernetes quantity: `4`, `3500m`).
    pub cpu_per_gpu: QuantityText,
    /// Memory request and limit per GPU. It must hold the weights while they
    /// load and the shared memory below.
    pub memory_per_gpu: QuantityText,
    /// CPU limit per GPU. Unset by default: a CPU limit throttles the server
    /// and shows up as latency spikes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_limit_per_gpu: Option<QuantityText>,
    /// Size of the memory-backed `/dev/shm` per GPU (NCCL uses it for tensor
    /// parallelism). Counts against the memory limit when used.
    pub shm_size_per_gpu: QuantityText,
}

impl Default for Resources {
    fn default() -> Resources {
        Resources {
            cpu_per_gpu: QuantityText::from("4"),
            memory_per_gpu: QuantityText::from("32Gi"),
            cpu_limit_per_gpu: None,
            shm_size_per_gpu: QuantityText::from("4Gi"),
        }
    }
}

/// Probe timings. The startup probe holds the other probes off until the
/// server answers, so a pod that is still loading weights is not killed.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Probes {
    /// HTTP path that answers 200 once the model is loaded.
    pub path: String,
    /// How long a pod may take to start and load the model before it is
    /// restarted. Large models need tens of minutes.
    #[schemars(range(min = 60, max = 86400))]
    pub startup_timeout_seconds: i32,
    /// How often each probe runs.
    #[schemars(range(min = 1, max = 300))]
    pub period_seconds: i32,
    /// How long one probe request may take.
    #[schemars(range(min = 1, max = 300))]
    pub timeout_seconds: i32,
    /// Failed liveness probes in a row before the container is restarted.
    #[schemars(range(min = 1, max = 100))]
    pub liveness_failure_threshold: i32,
    /// Failed readiness probes in a row before the pod leaves the Service.
    #[schemars(range(min = 1, max = 100))]
    pub readiness_failure_threshold: i32,
}

impl Default for Probes {
    fn default() -> Probes {
        Probes {
            path: "/health".to_string(),
            startup_timeout_seconds: 3600,
            period_seconds: 10,
            timeout_seconds: 5,
            liveness_failure_threshold: 6,
            readiness_failure_threshold: 3,
        }
    }
}

/// Queue-length autoscaling with a HorizontalPodAutoscaler.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Autoscaling {
    /// The per-pod metric, as the metrics adapter exposes vLLM's
    /// `vllm:num_requests_waiting`.
    #[schemars(length(min = 1))]
    pub metric: String,
    /// Target average of the metric per pod (a quantity): the autoscaler adds
    /// pods while more requests than this wait per pod.
    pub target_average_value: QuantityText,
    /// How long load must stay low before pods are removed.
    #[schemars(range(min = 0, max = 3600))]
    pub scale_down_stabilization_seconds: i32,
}

impl Default for Autoscaling {
    fn default() -> Autoscaling {
        Autoscaling {
            metric: "num_requests_waiting".to_string(),
            target_average_value: QuantityText::from("5"),
            scale_down_stabilization_seconds: 600,
        }
    }
}

/// Rolling-update settings. The default needs no spare GPU for services of
/// several pods: one old pod goes before its replacement starts
/// (`maxSurge: 0`). A service that may run one pod surges instead, unless
/// `noSpareGpus`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Rollout {
    /// Extra pods a rollout may start above the desired count. Each needs
    /// free GPUs; with none spare, a surge pod stays Pending and the rollout stalls.
    #[schemars(range(min = 0, max = 100))]
    pub max_surge: i32,
    /// Pods a rollout may take down at once.
    #[schemars(range(min = 0, max = 100))]
    pub max_unavailable: i32,
    /// The cluster has no GPU to spare for a surge pod. Unset, a service
    /// that may run a single pod (replicas 0 or 1, or an autoscaling minimum
    /// of 1) starts its new pod before it stops the old one (`maxSurge: 1,
    /// maxUnavailable: 0`), as a rollout would otherwise be an outage of the
    /// model's load time; set, it follows `maxSurge` and `maxUnavailable`
    /// like every other service.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_spare_gpus: bool,
}

impl Default for Rollout {
    fn default() -> Rollout {
        Rollout { max_surge: 0, max_unavailable: 1, no_spare_gpus: false }
    }
}

/// Pod and container security settings (see `src/security.rs` for what each
/// becomes). Every switch is off unless set; each allows exactly what it
/// names. In `securityExceptions`, a switch that is off keeps what
/// `defaults.security` says: an exception can relax, never tighten.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Security {
    /// UID the server runs as. Unset: 10001 (with `allowRootUser`, the
    /// image's own user). 0 (root) needs `allowRootUser`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2147483647))]
    pub run_as_user: Option<i64>,
    /// Primary GID of the server. Unset: 10001 (with `allowRootUser`, the
    /// image's own group). Use 0 for images that make their writable
    /// directories group-0 writable (the OpenShift convention).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2147483647))]
    pub run_as_group: Option<i64>,
    /// Group that owns the pod's volumes. Unset: 10001.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2147483647))]
    pub fs_group: Option<i64>,
    /// Allow the server to run as root: `runAsNonRoot` is not enforced and,
    /// unless `runAsUser` is given, the image's user (root for
    /// vllm/vllm-openai) is used.
    pub allow_root_user: bool,
    /// Allow setuid binaries and file capabilities to raise the process's
    /// privileges (`allowPrivilegeEscalation: true`).
    pub allow_privilege_escalation: bool,
    /// Allow writes to the image's root filesystem (`readOnlyRootFilesystem:
    /// false`), for images that write outside home, cache and /tmp, and for
    /// GPU nodes whose NVIDIA container toolkit cannot create a container
    /// with a read-only root (its CDI hooks fail with `read-only file
    /// system`; fixed in newer toolkits).
    pub writable_root_filesystem: bool,
    /// Mount the service account's API token into the pods
    /// (`automountServiceAccountToken: true`).
    pub mount_service_account_token: bool,
    /// Run without a seccomp filter (`seccompProfile: Unconfined`) instead
    /// of the container runtime's default profile.
    pub unconfined_seccomp: bool,
    /// Linux capabilities to add back after all are dropped, without the
    /// `CAP_` prefix (`IPC_LOCK`, `SYS_PTRACE`).
    #[schemars(inner(regex(pattern = r"^[A-Z][A-Z0-9_]*$")))]
    pub add_capabilities: Vec<String>,
}

/// A relaxation of `defaults.security` for some services, with its reason.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecurityException {
    /// Namespace of the services the exception covers. Always required, so
    /// an exception never reaches another team's namespace by name alone.
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
    /// Names of the services it covers in that namespace; empty or left
    /// out: every service there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<String>,
    /// Why the image needs it, for the security review.
    #[schemars(length(min = 1))]
    pub reason: String,
    /// The settings relaxed: switches set here are added to
    /// `defaults.security`'s, ids given here replace its ids.
    pub security: Security,
}

/// A Kubernetes quantity as written: a string (`500m`, `32Gi`) or a plain
/// number (`8`), as the API server accepts both.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct QuantityText(pub String);

impl From<&str> for QuantityText {
    fn from(s: &str) -> QuantityText {
        QuantityText(s.to_string())
    }
}

impl std::ops::Deref for QuantityText {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for QuantityText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<QuantityText, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Int(i64),
            Float(f64),
        }
        Ok(QuantityText(match Raw::deserialize(d)? {
            Raw::Text(s) => s,
            Raw::Int(i) => i.to_string(),
            Raw::Float(f) => f.to_string(),
        }))
    }
}

impl JsonSchema for QuantityText {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Quantity")
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": ["string", "number"],
            "pattern": "^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
        })
    }
}

/// A priority tier: a PriorityClass (and a Kueue WorkloadPriorityClass).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PriorityTier {
    /// Priority value; higher wins. User tiers stay below 1000000000.
    #[schemars(range(min = -2147483648, max = 1000000000))]
    pub value: i32,
    /// Whether pods of this tier may preempt lower-priority pods to get
    /// scheduled (`PreemptLowerPriority`); false renders `preemptionPolicy: Never`.
    #[serde(default = "yes")]
    pub preempt: bool,
    /// Whether this tier's pods may be preempted at peak: quota checks at the
    /// autoscalers' maximum leave preemptible services out.
    #[serde(default)]
    pub preemptible: bool,
    /// Whether services of this tier get a PodDisruptionBudget
    /// (`maxUnavailable: 1`), so maintenance never takes more than one pod.
    #[serde(default)]
    pub disruption_budget: bool,
    /// Shown by `kubectl get priorityclass`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

fn yes() -> bool {
    true
}

/// The tiers a platform with tenants gets when it declares none.
pub fn default_priorities() -> BTreeMap<String, PriorityTier> {
    BTreeMap::from([
        (
            "online".to_string(),
            PriorityTier {
                value: 100000,
                preempt: true,
                preemptible: false,
                disruption_budget: true,
                description: Some("Online inference: preempts offline work at peak.".to_string()),
            },
        ),
        (
            "offline".to_string(),
            PriorityTier {
                value: 1000,
                preempt: false,
                preemptible: true,
                disruption_budget: false,
                description: Some("Offline work: runs on spare capacity and never preempts.".to_string()),
            },
        ),
    ])
}

/// Network isolation settings shared by all tenants.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Network {
    /// Namespaces (for example the gateway's and monitoring's) allowed to
    /// reach the serving port of every tenant's pods.
    #[serde(default)]
    pub allow_from: Vec<String>,
}

/// Kueue settings: the flavor of the GPU nodes and the declared capacity.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Kueue {
    /// The ResourceFlavor every queue's quota is given in.
    #[serde(default)]
    pub flavor: Flavor,
    /// What the cluster has, resource to quantity. The nominal quotas of all
    /// queues must fit in it.
    #[serde(default)]
    pub capacity: BTreeMap<String, QuantityText>,
}

/// A Kueue ResourceFlavor: which nodes provide the quota.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Flavor {
    /// ResourceFlavor name.
    pub name: String,
    /// Node labels of the nodes of this flavor.
    #[serde(default)]
    pub node_labels: BTreeMap<String, String>,
    /// Tolerations Kueue adds to admitted pods (for tainted GPU nodes).
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
}

impl Default for Flavor {
    fn default() -> Flavor {
        Flavor { name: "default-flavor".to_string(), node_labels: BTreeMap::new(), tolerations: Vec::new() }
    }
}

/// A Kubernetes toleration.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    pub key: String,
    /// `Exists` or `Equal`.
    #[serde(default = "exists")]
    pub operator: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`; all effects when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
}

fn exists() -> String {
    "Exists".to_string()
}

/// A team sharing the cluster.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tenant {
    /// Tenant name: names its ResourceQuota, ClusterQueues and labels.
    pub name: String,
    /// Namespaces of the tenant; just the tenant's name when left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Hard ResourceQuota per namespace, quota key to quantity
    /// (`requests.nvidia.com/gpu`, `requests.cpu`, `requests.memory`,
    /// `count/deployments.apps`, or any other key Kubernetes knows).
    #[serde(default)]
    pub quota: BTreeMap<String, QuantityText>,
    /// LimitRange for containers in the tenant's namespaces.
    #[serde(default)]
    pub limits: ContainerLimits,
    /// Tiers its services may use; every declared tier when left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub priorities: Vec<String>,
    /// Tier of services that name none: `online` if allowed, else the first allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_priority: Option<String>,
    /// Kueue cohort the tenant's queues belong to (tenants that share one can
    /// borrow each other's unused quota); the tenant's name when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cohort: Option<String>,
    /// Kueue queues: a ClusterQueue each, with a LocalQueue of the same name
    /// in every namespace of the tenant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<Queue>,
    /// Deny ingress from other namespaces except `network.allowFrom`.
    #[serde(default = "yes")]
    pub isolation: bool,
    /// The tenant's own Hugging Face access, replacing
    /// `defaults.huggingFace` for its services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hugging_face: Option<HuggingFace>,
    /// The tenant's own shared model cache, replacing the platform's
    /// `modelCache` in its namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_cache: Option<SharedModelCache>,
}

/// LimitRange values for one container.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ContainerLimits {
    /// Requests given to containers that set none (with a quota on
    /// `requests.*`, such pods are otherwise rejected).
    pub default_request: BTreeMap<String, QuantityText>,
    /// Limits given to containers that set none.
    pub default_limit: BTreeMap<String, QuantityText>,
    /// The most one container may ask for. An extended resource here
    /// (`nvidia.com/gpu`) gets a default limit and request of 0 unless
    /// `defaultLimit` names it: the API server would otherwise make the max
    /// the default, and every container without a GPU limit would ask for it.
    pub max: BTreeMap<String, QuantityText>,
}

impl Default for ContainerLimits {
    fn default() -> ContainerLimits {
        ContainerLimits {
            default_request: BTreeMap::from([
                ("cpu".to_string(), QuantityText::from("500m")),
                ("memory".to_string(), QuantityText::from("1Gi")),
            ]),
            default_limit: BTreeMap::from([("memory".to_string(), QuantityText::from("1Gi"))]),
            max: BTreeMap::new(),
        }
    }
}

/// A Kueue queue of a tenant.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Queue {
    /// LocalQueue name; the ClusterQueue is `<tenant>-<name>`.
    pub name: String,
    /// Tier whose services use this queue unless they name another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    /// Quota the queue owns, resource to quantity (`nvidia.com/gpu`, `cpu`, `memory`).
    pub nominal_quota: BTreeMap<String, QuantityText>,
    /// How much more it may borrow from unused quota in the cohort; no limit
    /// when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borrowing_limit: Option<BTreeMap<String, QuantityText>>,
    /// How much of its unused quota others may borrow; all of it when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lending_limit: Option<BTreeMap<String, QuantityText>>,
}

impl Platform {
    /// The priority tiers in force: the declared ones, or the defaults.
    pub fn tiers(&self) -> BTreeMap<String, PriorityTier> {
        if self.priorities.is_empty() { default_priorities() } else { self.priorities.clone() }
    }

    /// The name of tier `tier`'s PriorityClass and WorkloadPriorityClass.
    pub fn priority_class(&self, tier: &str) -> String {
        format!("{}{tier}", self.priority_class_prefix.as_deref().unwrap_or(DEFAULT_PRIORITY_CLASS_PREFIX))
    }

    /// The shared model cache of `namespace`: its tenant's, else the
    /// platform's.
    pub fn model_cache_of(&self, namespace: &str) -> Option<&SharedModelCache> {
        self.tenant_of(namespace).and_then(|t| t.model_cache.as_ref()).or(self.model_cache.as_ref())
    }

    /// The accelerator profile `name`, or the default (the first) when
    /// `None`; `Err` with the declared names for an unknown one.
    pub fn accelerator(&self, name: Option<&str>) -> Result<Option<&Accelerator>, Vec<&str>> {
        match name {
            None => Ok(self.accelerators.first()),
            Some(n) => match self.accelerators.iter().find(|a| a.name == n) {
                Some(a) => Ok(Some(a)),
                None => Err(self.accelerators.iter().map(|a| a.name.as_str()).collect()),
            },
        }
    }

    /// The tenant that owns `namespace`, if any.
    pub fn tenant_of(&self, namespace: &str) -> Option<&Tenant> {
        self.tenants.iter().find(|t| t.namespace_list().iter().any(|n| n == namespace))
    }
}

impl Tenant {
    /// The tenant's namespaces, with the default applied.
    pub fn namespace_list(&self) -> Vec<String> {
        if self.namespaces.is_empty() { vec![self.name.clone()] } else { self.namespaces.clone() }
    }

    /// The Kueue cohort, with the default applied.
    pub fn cohort_name(&self) -> &str {
        self.cohort.as_deref().unwrap_or(&self.name)
    }

    /// The tier a service gets when it names none.
    pub fn default_tier(&self, tiers: &BTreeMap<String, PriorityTier>) -> Option<String> {
        if let Some(p) = &self.default_priority {
            return Some(p.clone());
        }
        let allowed: Vec<&String> =
            if self.priorities.is_empty() { tiers.keys().collect() } else { self.priorities.iter().collect() };
        allowed.iter().find(|p| p.as_str() == "online").or(allowed.first()).map(|p| p.to_string())
    }

    /// The Hugging Face token of the tenant's services: its own, else the
    /// platform's.
    pub fn hf_token<'a>(&'a self, platform: &'a Platform) -> Option<&'a SecretKeyRef> {
        self.hugging_face.as_ref().unwrap_or(&platform.defaults.hugging_face).token_secret.as_ref()
    }

    /// Whether services may use tier `name`.
    pub fn allows(&self, name: &str) -> bool {
        self.priorities.is_empty() || self.priorities.iter().any(|p| p == name)
    }
}

/// The GitOps engine that applies the output.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Argocd,
    Flux,
}

/// Where the output lives in git and how the engine applies it. Nothing here
/// is guessed: the repository, revision and path must be given.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitOps {
    /// Engine to emit objects for; `render --gitops` overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<Engine>,
    /// Name of the Application, ApplicationSet or Kustomizations.
    #[schemars(length(min = 1, max = 40))]
    pub name: String,
    /// URL of the git repository holding the rendered output.
    #[serde(rename = "repoURL")]
    #[schemars(length(min = 1))]
    pub repo_url: String,
    /// Branch to follow.
    #[schemars(length(min = 1))]
    pub revision: String,
    /// Path of the output directory (`--out`) inside the repository.
    #[schemars(length(min = 1))]
    pub path: String,
    /// How Argo CD splits the tree: `tree`, one Application over the whole
    /// tree (one kustomize build of every object); `namespaces`, one
    /// Application for `_cluster` and one per namespace directory, so no
    /// build holds more than one namespace. Flux always applies per
    /// namespace.
    #[serde(default, skip_serializing_if = "Layout::is_tree")]
    pub layout: Layout,
    /// Argo CD settings.
    #[serde(default)]
    pub argocd: ArgoCd,
    /// Flux settings.
    #[serde(default)]
    pub flux: Flux,
}

/// How the GitOps engine's objects split the output tree: `tree`, one Argo
/// CD Application (per cluster) over the whole tree; `namespaces`, one per
/// namespace directory and one for `_cluster`.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    #[default]
    Tree,
    Namespaces,
}

impl Layout {
    fn is_tree(&self) -> bool {
        *self == Layout::Tree
    }
}

/// Argo CD settings.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ArgoCd {
    /// Namespace Argo CD runs in.
    pub namespace: String,
    /// Argo CD project.
    pub project: String,
    /// Destination cluster API server for a single-cluster platform (for
    /// several clusters, each cluster's `server`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

impl Default for ArgoCd {
    fn default() -> ArgoCd {
        ArgoCd { namespace: "argocd".to_string(), project: "default".to_string(), server: None }
    }
}

/// Flux settings.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Flux {
    /// Namespace the Flux objects live in.
    pub namespace: String,
    /// How often Flux reconciles (a Go duration).
    pub interval: String,
}

impl Default for Flux {
    fn default() -> Flux {
        Flux { namespace: "flux-system".to_string(), interval: "10m".to_string() }
    }
}

/// A cluster to render for, with its overrides.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cluster {
    /// Cluster name: the directory of its tree.
    pub name: String,
    /// API server URL (the Argo CD destination).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Secret (in the Flux namespace) holding this cluster's kubeconfig, for
    /// Flux to apply remotely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config_secret: Option<String>,
    /// Replicas are multiplied by this and rounded up (0 keeps 0).
    #[serde(default = "one")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub replica_factor: f64,
    /// Node labels added to the serving pods' node selector.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Registry mirror: images are pulled from here instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_registry: Option<String>,
    /// Services that run here, as `name` or `namespace/name`; all when left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<String>,
}

fn one() -> f64 {
    1.0
}

/// The platform's Gateway: present, services may name a `gateway.route`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GatewayConfig {
    /// The Gateway every route attaches to. Its listeners must allow routes
    /// from the services' namespaces (`allowedRoutes`).
    pub parent_ref: ParentRef,
    /// Register services with the Gateway API Inference Extension: an
    /// InferencePool per service as the route's backend, and an
    /// InferenceObjective for a service's `gateway.priority`.
    #[serde(default)]
    pub inference_extension: bool,
    /// The endpoint picker each InferencePool calls (deployed with the
    /// extension, one per pool).
    #[serde(default)]
    pub endpoint_picker: EndpointPicker,
    /// Longest a request may take at the Gateway (a Gateway API duration,
    /// `300s`); left out, the Gateway's default, which may cut long
    /// generations short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub request_timeout: Option<String>,
}

impl GatewayConfig {
    /// Whether the endpoint picker of a service's pool holds requests in its
    /// flow control queue (rather than vLLM in its own): the platform turns
    /// flow control on, or the service gives a `gateway.priority`, which
    /// acts only through flow control.
    pub fn picker_holds_requests(&self, priority: bool) -> bool {
        self.inference_extension && (self.endpoint_picker.flow_control || priority)
    }
}

/// A Gateway: its name and namespace, and optionally one listener.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParentRef {
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The Gateway's namespace; the service's own when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
    /// One listener of the Gateway; all of them when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub section_name: Option<String>,
}

/// The endpoint picker isvc renders for every InferencePool (llm-d's
/// router, `cmd/epp`): its Service `<service><serviceSuffix>` on `port`, the
/// Deployment behind it, and its configuration.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EndpointPicker {
    /// Appended to the service name to name the picker's Service,
    /// Deployment, ServiceAccount, Role, ConfigMap and disruption budget.
    pub service_suffix: String,
    /// The picker's gRPC ext-proc port, which the Gateway calls.
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// What the Gateway does when the picker does not answer: `FailOpen`
    /// (route to a pod of its own choosing) or `FailClose` (reject the
    /// request).
    pub failure_mode: FailureMode,
    /// The picker image. Pin a version.
    #[schemars(length(min = 1))]
    pub image: String,
    /// `Always`, `IfNotPresent` or `Never`.
    pub image_pull_policy: PullPolicy,
    /// Pickers per pool. Above 1 they elect a leader (`--ha-enable-leader-election`).
    #[schemars(range(min = 1, max = 10))]
    pub replicas: i32,
    /// The picker container's requests and limits, resource to quantity.
    pub resources: PickerResources,
    /// Turn the picker's flow control on (the `flowControl` feature gate):
    /// requests wait in the picker, by priority, instead of in vLLM. Needed
    /// for `gateway.priority` to act, for autoscaling on the picker's queue,
    /// and for `autoscaling.min: 0`.
    pub flow_control: bool,
    /// apiVersion of the picker's configuration file: `llm-d.ai/v1alpha1`
    /// for llm-d's router, `inference.networking.x-k8s.io/v1alpha1` for the
    /// Inference Extension's own picker (v1.5 and older).
    #[schemars(length(min = 1))]
    pub config_api_version: String,
    /// PromQL query for the requests a service's picker holds in its flow
    /// control queue, where KEDA scales services behind a picker with flow
    /// control; `{namespace}` and `{picker}` are replaced by the service's
    /// namespace and its picker's Service name.
    #[schemars(length(min = 1))]
    pub queue_query: String,
}

impl Default for EndpointPicker {
    fn default() -> EndpointPicker {
        EndpointPicker {
            service_suffix: "-epp".to_string(),
            port: 9002,
            failure_mode: FailureMode::FailOpen,
            image: "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0".to_string(),
            image_pull_policy: PullPolicy::IfNotPresent,
            replicas: 1,
            resources: PickerResources::default(),
            flow_control: false,
            config_api_version: "llm-d.ai/v1alpha1".to_string(),
            queue_query: "sum(llm_d_epp_flow_control_queue_size{namespace=\"{namespace}\",service=\"{picker}\"})"
                .to_string(),
        }
    }
}

/// Requests and limits of the picker container.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PickerResources {
    pub requests: BTreeMap<String, QuantityText>,
    pub limits: BTreeMap<String, QuantityText>,
}

impl Default for PickerResources {
    fn default() -> PickerResources {
        PickerResources {
            requests: BTreeMap::from([("cpu".to_string(), "1".into()), ("memory".to_string(), "2Gi".into())]),
            limits: BTreeMap::from([("memory".to_string(), "4Gi".into())]),
        }
    }
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum FailureMode {
    FailClose,
    FailOpen,
}

/// The platform's KEDA settings: present, KEDA scales the services that
/// name `autoscaling`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KedaConfig {
    /// URL of the Prometheus server KEDA queries (for example
    /// `http://prometheus-operated.monitoring.svc:9090`).
    #[schemars(length(min = 1))]
    pub server_address: String,
    /// PromQL query for the waiting requests of one service, summed over its
    /// pods; `{namespace}` and `{name}` are replaced by the service's. The
    /// default fits the labels Prometheus Operator gives targets of the
    /// ServiceMonitor isvc renders.
    #[serde(default = "default_query")]
    #[schemars(length(min = 1))]
    pub query: String,
    /// Seconds between two queries.
    #[serde(default = "default_polling_interval")]
    #[schemars(range(min = 1, max = 3600))]
    pub polling_interval: i32,
}

fn default_query() -> String {
    "sum(vllm:num_requests_waiting{namespace=\"{namespace}\",service=\"{name}\"})".to_string()
}

fn default_polling_interval() -> i32 {
    15
}

/// The platform's monitoring settings.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Monitoring {
    /// Render a ServiceMonitor for every service.
    #[serde(default = "yes")]
    pub service_monitor: bool,
    /// Labels added to each ServiceMonitor, so the Prometheus's
    /// `serviceMonitorSelector` picks them up (for example `release: prometheus`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// How often Prometheus scrapes (a Prometheus duration, `30s`); its
    /// global interval when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub interval: Option<String>,
    /// The namespace Prometheus scrapes from: the tenant NetworkPolicy
    /// admits it to the serving port (vLLM's metrics) and to the endpoint
    /// pickers' metrics port. Left out, `network.allowFrom` must list it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
}
