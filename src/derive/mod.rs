//! The derivation: typed spec and platform in, the desired state of every
//! service out. Pure: no I/O, no clock, no randomness.
//!
//! Every decision about what the cluster should run is made here (names,
//! labels, arguments, resources, probes, replicas, autoscaler bounds, which
//! objects exist); the templates only give those values their YAML shape.
//! An Operator could call [`derive`] in its reconcile loop.

pub mod accelerators;
pub mod adapters;
pub mod autoscaling;
pub mod cache;
pub mod drain;
pub mod engine;
pub mod gateway;
pub mod gitops;
pub mod kueue;
pub mod monitoring;
pub mod multinode;
pub mod security;
pub mod tenancy;

use std::collections::BTreeMap;

use serde::Serialize;

use self::security::PodSecurity;
use crate::base::quantity::Quantity;
use crate::model::labels::MANAGED_BY;
use crate::model::platform::Platform;
use crate::model::v1alpha2::InferenceService;

/// Name of the container port (probes and the Service refer to it by name).
pub const PORT_NAME: &str = "http";
/// Name of the server container.
pub const CONTAINER_NAME: &str = "vllm";

/// The desired state of one InferenceService: every value its objects need.
/// Serialized, this is the context its templates are rendered with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DesiredService {
    pub name: String,
    pub namespace: String,
    /// Labels of every object rendered for the service.
    pub labels: BTreeMap<String, String>,
    /// Annotations of the Deployment, Service and autoscaler.
    pub annotations: BTreeMap<String, String>,
    /// The Deployment's and Service's selector: a subset of `pod_labels`.
    pub selector: BTreeMap<String, String>,
    pub pod_labels: BTreeMap<String, String>,
    /// Labels of the Deployment itself: `labels` plus the Kueue queue and
    /// priority labels when a queue admits the service.
    pub workload_labels: BTreeMap<String, String>,
    pub model: String,
    pub container: Container,
    /// The workload's `spec.replicas`: the count written, also under an
    /// autoscaler. Left out, the API server would create the workload at 1
    /// pod and an HPA whose minimum is 1 would keep it there until its
    /// metric arrives (kubernetes/kubernetes
    /// `pkg/apis/apps/v1/defaults.go` `SetDefaults_Deployment`;
    /// `pkg/controller/podautoscaler/horizontal.go` only rescales a count
    /// outside [minReplicas, maxReplicas] without metrics). The GitOps
    /// engine objects ignore the field afterwards, so the autoscaler owns it
    /// (see [`crate::derive::gitops`]).
    pub replicas: Option<i32>,
    pub rollout: RolloutPlan,
    /// The preStop hooks and grace period (see [`drain`]).
    pub drain: crate::derive::drain::DrainPlan,
    /// The autoscaler; `None` for a service scaled to zero.
    pub autoscaler: Option<Autoscaler>,
    /// `spec.replicas` as written (the steady state).
    pub spec_replicas: i32,
    /// Tenant owning the namespace, if the platform declares tenants.
    pub tenant: Option<String>,
    /// Priority tier.
    pub priority: Option<String>,
    /// The tier's PriorityClass (and Kueue WorkloadPriorityClass) name: the
    /// platform's prefix and the tier (`isvc-online`).
    pub priority_class: Option<String>,
    /// Kueue LocalQueue admitting the pods.
    pub queue: Option<String>,
    /// PodDisruptionBudget for tiers that ask for one.
    pub disruption_budget: Option<DisruptionBudget>,
    /// Pod and container security settings (see [`crate::derive::security`]).
    pub security: PodSecurity,
    /// The workload that runs the pods: a Deployment, or a LeaderWorkerSet
    /// when a replica spans several nodes.
    pub workload: Workload,
    /// Pods per replica: 1, or the nodes a replica spans.
    pub pods_per_replica: i32,
    /// The LeaderWorkerSet group, when a replica spans several nodes.
    pub multi_node: Option<crate::derive::multinode::MultiNode>,
    /// Annotations of the pod template (the adapter config's checksum).
    pub pod_annotations: BTreeMap<String, String>,
    /// Pod volumes besides `/dev/shm`, as Kubernetes writes them.
    pub volumes: Vec<serde_json::Value>,
    /// The writable volumes (and their mounts) a read-only root filesystem
    /// needs: every pod gets them, a multi-node worker only them.
    pub security_volumes: Vec<serde_json::Value>,
    pub security_mounts: Vec<serde_json::Value>,
    /// The LoRA adapters and their ConfigMap.
    pub adapters: Option<crate::derive::adapters::AdapterPlan>,
    /// The KEDA trigger, when KEDA scales the service instead of an HPA.
    pub keda: Option<crate::derive::autoscaling::KedaTrigger>,
    /// The HTTPRoute, InferencePool and InferenceObjective.
    pub gateway: Option<crate::derive::gateway::GatewayPlan>,
    /// The ServiceMonitor.
    pub monitoring: Option<crate::derive::monitoring::MonitorPlan>,
    /// Where clients reach the service.
    pub endpoint: String,
    /// The accelerator profile's name, when the platform declares profiles.
    pub accelerator: Option<String>,
    /// The shared model cache: the claim and the download Job (see [`cache`]).
    pub cache: Option<crate::derive::cache::CachePlan>,
    /// Init containers of every pod (the wait for the cached model).
    pub init_containers: Vec<serde_json::Value>,
    /// The objects to render, in order, each with its template.
    pub objects: Vec<Child>,
}

/// The kind of workload a service runs as.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Workload {
    pub api_version: &'static str,
    pub kind: &'static str,
}

/// The vLLM container.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Container {
    pub name: String,
    pub image: String,
    pub image_pull_policy: String,
    pub args: Vec<String>,
    pub port: i32,
    pub port_name: String,
    pub gpus: i32,
    /// `requests` and `limits`, resource name to quantity.
    pub requests: BTreeMap<String, String>,
    pub limits: BTreeMap<String, String>,
    /// Size of the memory-backed `/dev/shm`.
    pub shm_size: String,
    /// Size of the model cache volume (`sizeLimit`, and the
    /// `ephemeral-storage` request outside Kueue).
    pub cache_size: String,
    pub probes: ProbePlan,
    /// Node selector and tolerations of the pod.
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<crate::model::platform::Toleration>,
    /// Volume mounts besides `/dev/shm`, as Kubernetes writes them.
    pub volume_mounts: Vec<serde_json::Value>,
    /// The environment of the server (and of multi-node workers): isvc's
    /// own, the Hugging Face token, then `spec.env` (see [`engine`]).
    pub env: Vec<k8s_openapi::api::core::v1::EnvVar>,
}

/// Probe settings, all three on the same HTTP path and port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProbePlan {
    pub path: String,
    pub period_seconds: i32,
    pub timeout_seconds: i32,
    /// Startup: failures allowed before a restart, covering the load time.
    pub startup_failure_threshold: i32,
    pub liveness_failure_threshold: i32,
    pub readiness_failure_threshold: i32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RolloutPlan {
    pub max_surge: i32,
    pub max_unavailable: i32,
    /// How long a rollout may go without progress before the Deployment is
    /// marked failed: the startup budget plus ten minutes, so a pod that is
    /// still loading weights does not fail the rollout (and the GitOps health).
    pub progress_deadline_seconds: i32,
}

/// The HorizontalPodAutoscaler's settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Autoscaler {
    pub min_replicas: i32,
    pub max_replicas: i32,
    pub metric: String,
    /// The picker's Service, whose queue metric the HPA reads as an Object
    /// metric where the service's requests wait in the picker.
    pub picker_service: Option<String>,
    pub target_average_value: String,
    pub scale_down_stabilization_seconds: i32,
}

/// A PodDisruptionBudget that can never block a rollout or a drain forever:
/// at most `max_unavailable` pods down at once, and unhealthy pods (still
/// loading, or crashing) may always be evicted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DisruptionBudget {
    pub max_unavailable: i32,
    /// Every pod of the service (leaders and workers of a group alike).
    pub selector: BTreeMap<String, String>,
}

/// One object to render for a service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Child {
    pub api_version: &'static str,
    pub kind: &'static str,
    /// Template file that gives the object its shape.
    pub template: &'static str,
    /// Whether the object is one of the endpoint picker's, named after the
    /// picker rather than the service.
    pub picker: bool,
}

pub const DEPLOYMENT: Child =
    Child { api_version: "apps/v1", kind: "Deployment", template: "deployment.yaml", picker: false };
pub const SERVICE: Child = Child { api_version: "v1", kind: "Service", template: "service.yaml", picker: false };
pub const DISRUPTION_BUDGET: Child = Child {
    api_version: "policy/v1",
    kind: "PodDisruptionBudget",
    template: "poddisruptionbudget.yaml",
    picker: false,
};
pub const AUTOSCALER: Child = Child {
    api_version: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    template: "horizontalpodautoscaler.yaml",
    picker: false,
};
pub const CONFIG_MAP: Child = Child { api_version: "v1", kind: "ConfigMap", template: "configmap.yaml", picker: false };
pub const LEADER_WORKER_SET: Child = Child {
    api_version: crate::derive::multinode::API_VERSION,
    kind: crate::derive::multinode::KIND,
    template: "leaderworkerset.yaml",
    picker: false,
};
pub const SCALED_OBJECT: Child =
    Child { api_version: "keda.sh/v1alpha1", kind: "ScaledObject", template: "scaledobject.yaml", picker: false };
pub const HTTP_ROUTE: Child = Child {
    api_version: crate::derive::gateway::ROUTE_API_VERSION,
    kind: "HTTPRoute",
    template: "httproute.yaml",
    picker: false,
};
pub const INFERENCE_POOL: Child = Child {
    api_version: crate::derive::gateway::POOL_API_VERSION,
    kind: "InferencePool",
    template: "inferencepool.yaml",
    picker: false,
};
pub const INFERENCE_OBJECTIVE: Child = Child {
    api_version: crate::derive::gateway::OBJECTIVE_API_VERSION,
    kind: "InferenceObjective",
    template: "inferenceobjective.yaml",
    picker: false,
};
pub const SERVICE_MONITOR: Child = Child {
    api_version: crate::derive::monitoring::API_VERSION,
    kind: "ServiceMonitor",
    template: "servicemonitor.yaml",
    picker: false,
};

const fn picker_child(api_version: &'static str, kind: &'static str, template: &'static str) -> Child {
    Child { api_version, kind, template, picker: true }
}

/// The endpoint picker's objects, in the order they are rendered.
pub const PICKER_CHILDREN: [Child; 7] = [
    picker_child("v1", "ServiceAccount", "endpointpicker-serviceaccount.yaml"),
    picker_child("rbac.authorization.k8s.io/v1", "Role", "endpointpicker-role.yaml"),
    picker_child("rbac.authorization.k8s.io/v1", "RoleBinding", "endpointpicker-rolebinding.yaml"),
    picker_child("v1", "ConfigMap", "endpointpicker-configmap.yaml"),
    picker_child("v1", "Service", "endpointpicker-service.yaml"),
    picker_child("apps/v1", "Deployment", "endpointpicker-deployment.yaml"),
    picker_child("policy/v1", "PodDisruptionBudget", "endpointpicker-poddisruptionbudget.yaml"),
];
pub const PICKER_SERVICE_MONITOR: Child =
    picker_child(crate::derive::monitoring::API_VERSION, "ServiceMonitor", "endpointpicker-servicemonitor.yaml");

/// Autoscaler bounds for a service with `replicas` > 0, as the reference
/// Operator sets them: min = max(1, replicas / 2), max = replicas x 3.
pub fn autoscaler_bounds(replicas: i32) -> Option<(i32, i32)> {
    (replicas > 0).then(|| ((replicas / 2).max(1), replicas.saturating_mul(3)))
}

/// Derives the desired state of one service. Fails on platform values that
/// are not valid quantities (the loader reports those with positions) and on
/// resource overrides that cannot work with the platform's.
pub fn derive(service: &InferenceService, platform: &Platform) -> Result<DesiredService, String> {
    let d = &platform.defaults;
    let spec = &service.spec;
    let placement = crate::derive::tenancy::place(service, platform).map_err(|(_, e)| e)?;
    let name = service.name().to_string();
    let namespace = service.namespace_or_default().to_string();
    let gpus = spec.gpus_per_node();
    let (bounds, spec_replicas) = crate::derive::autoscaling::bounds(spec);

    let mut labels: BTreeMap<String, String> =
        service.metadata.labels.clone().unwrap_or_default().into_iter().collect();
    labels.extend([
        ("app.kubernetes.io/name".to_string(), name.clone()),
        ("app.kubernetes.io/instance".to_string(), name.clone()),
        ("app.kubernetes.io/component".to_string(), "inference-server".to_string()),
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
    ]);
    let pod_labels = labels.clone();
    let multi_node =
        crate::derive::multinode::plan(spec, &pod_labels, d.probes.startup_timeout_seconds, d.probes.timeout_seconds);
    let all_pods = BTreeMap::from([("app.kubernetes.io/name".to_string(), name.clone())]);
    // Only a group's leader serves; a Deployment's pods all do.
    let mut selector = all_pods.clone();
    if multi_node.is_some() {
        selector.insert("app.kubernetes.io/component".to_string(), "inference-server".to_string());
    }
    let annotations: BTreeMap<String, String> = service
        .metadata
        .annotations
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| k != "kubectl.kubernetes.io/last-applied-configuration")
        .collect();

    let per_gpu = |field: &str, value: &str| {
        Quantity::parse(value)
            .map(|q| q.times(i64::from(gpus)).to_string())
            .map_err(|e| format!("defaults.resources.{field}: {e}"))
    };
    let overrides = spec.resources.clone().unwrap_or_default();
    let pick = |o: &Option<crate::model::v1alpha2::QuantityText>, field: &str, value: &str| match o {
        Some(q) => Ok(q.0.clone()),
        None => per_gpu(field, value),
    };
    let cpu = pick(&overrides.cpu, "cpuPerGpu", &d.resources.cpu_per_gpu)?;
    let memory = pick(&overrides.memory, "memoryPerGpu", &d.resources.memory_per_gpu)?;
    let shm_size = pick(&overrides.shm_size, "shmSizePerGpu", &d.resources.shm_size_per_gpu)?;
    let cpu_limit = d.resources.cpu_limit_per_gpu.as_deref().map(|l| per_gpu("cpuLimitPerGpu", l)).transpose()?;
    if spec.resources.is_some() {
        validate_overrides(&cpu, &memory, &shm_size, cpu_limit.as_deref())?;
    }
    let profile = crate::derive::accelerators::profile(spec, platform).map_err(|r| r.message)?;
    let mut pod_annotations = BTreeMap::new();
    let image = crate::derive::accelerators::image(spec, platform).map_err(|r| r.message)?;
    if let Some(m) = profile.memory_gib {
        pod_annotations.insert(crate::model::labels::GPU_MEMORY_ANNOTATION.to_string(), format!("{m}Gi"));
    }
    let gpu = gpus.to_string();
    let mut requests = BTreeMap::from([
        ("cpu".to_string(), cpu),
        ("memory".to_string(), memory.clone()),
        (profile.resource.clone(), gpu.clone()),
    ]);
    let mut limits = BTreeMap::from([("memory".to_string(), memory), (profile.resource.clone(), gpu)]);
    if let Some(limit) = cpu_limit {
        limits.insert("cpu".to_string(), limit);
    }

    let port = d.port;
    let mut args = vec!["--model".to_string(), spec.base_model.clone()];
    args.extend(crate::derive::engine::identity_args(spec));
    // With the shared cache, the server loads what the cache holds: without
    // a revision, the branch the download fetched, through its refs/main.
    let shared = platform.model_cache_of(&namespace).is_some() && crate::derive::cache::cacheable(&spec.base_model);
    if shared && spec.revision.is_none() {
        args.extend(["--revision".to_string(), crate::derive::cache::DEFAULT_REVISION.to_string()]);
    }
    args.extend([
        "--tensor-parallel-size".to_string(),
        gpus.to_string(),
        "--host".to_string(),
        "0.0.0.0".to_string(),
        "--port".to_string(),
        port.to_string(),
    ]);
    args.extend(crate::derive::multinode::args(spec));
    let adapters = crate::derive::adapters::plan(spec, &namespace, &name, &d.lora);
    let mut volume_mounts = Vec::new();
    let mut volumes = Vec::new();
    if let Some(a) = &adapters {
        args.extend(crate::derive::adapters::args());
        pod_annotations.insert(crate::derive::adapters::CHECKSUM_ANNOTATION.to_string(), a.checksum.clone());
        volume_mounts.push(serde_json::json!({
            "name": crate::derive::adapters::VOLUME, "mountPath": crate::derive::adapters::MOUNT_PATH, "readOnly": true,
        }));
        volumes.push(serde_json::json!({"name": crate::derive::adapters::VOLUME, "configMap": {"name": name}}));
    }
    let p = &d.probes;
    let (drain, drain_args) = crate::derive::drain::plan(&d.drain, &image);
    args.extend(drain_args);
    args.extend(spec.args.iter().cloned());
    let probes = ProbePlan {
        path: p.path.clone(),
        period_seconds: p.period_seconds,
        timeout_seconds: p.timeout_seconds,
        startup_failure_threshold: (p.startup_timeout_seconds + p.period_seconds - 1) / p.period_seconds,
        liveness_failure_threshold: p.liveness_failure_threshold,
        readiness_failure_threshold: p.readiness_failure_threshold,
    };

    // Behind a picker with flow control, the picker's queue is the demand.
    let picker = platform
        .gateway
        .as_ref()
        .filter(|_| crate::derive::gateway::picker_holds_requests(spec, platform.gateway.as_ref()))
        .map(|g| (&g.endpoint_picker, crate::derive::gateway::picker_name(&name, &g.endpoint_picker)));
    let autoscaler = bounds.map(|(min_replicas, max_replicas)| Autoscaler {
        min_replicas,
        max_replicas,
        metric: match &picker {
            Some(_) => crate::derive::autoscaling::PICKER_QUEUE_METRIC.to_string(),
            None => d.autoscaling.metric.clone(),
        },
        picker_service: picker.as_ref().map(|(_, n)| n.clone()),
        target_average_value: spec
            .autoscaling
            .as_ref()
            .map_or_else(|| d.autoscaling.target_average_value.0.clone(), |a| a.target_queue_length.to_string()),
        scale_down_stabilization_seconds: d.autoscaling.scale_down_stabilization_seconds,
    });
    let keda = crate::derive::autoscaling::keda_trigger(
        spec,
        platform.keda.as_ref(),
        picker.as_ref().map(|(e, n)| (*e, n.as_str())),
        &namespace,
        &name,
    );
    let disruption_budget = placement
        .tier
        .as_ref()
        .filter(|(_, tier)| tier.disruption_budget && spec_replicas > 0)
        .map(|_| DisruptionBudget { max_unavailable: 1, selector: all_pods.clone() });
    // The platform's security settings with the exceptions that cover the
    // service: the picker's pods and the service's own.
    let settings = security::settings_for(platform, &namespace, &name);
    let gateway =
        crate::derive::gateway::plan(spec, platform.gateway.as_ref(), &name, &namespace, &labels, port, &settings);
    let monitoring = crate::derive::monitoring::plan(platform.monitoring.as_ref(), &labels);
    let mut gateway = gateway;
    if let (Some(pool), Some(m)) = (gateway.as_mut().and_then(|g| g.pool.as_mut()), platform.monitoring.as_ref()) {
        pool.picker.monitor_labels = pool.picker.labels.clone();
        pool.picker.monitor_labels.extend(m.labels.clone());
    }

    let workload = if multi_node.is_some() { LEADER_WORKER_SET } else { DEPLOYMENT };
    let mut objects = vec![SERVICE, workload.clone()];
    if adapters.is_some() {
        objects.push(CONFIG_MAP);
    }
    match (&autoscaler, &keda) {
        (Some(_), Some(_)) => objects.push(SCALED_OBJECT),
        (Some(_), None) => objects.push(AUTOSCALER),
        (None, _) => {}
    }
    if disruption_budget.is_some() {
        objects.push(DISRUPTION_BUDGET);
    }
    if let Some(g) = &gateway {
        objects.push(HTTP_ROUTE);
        if g.pool.is_some() {
            objects.push(INFERENCE_POOL);
            objects.extend(PICKER_CHILDREN);
            if monitoring.is_some() {
                objects.push(PICKER_SERVICE_MONITOR);
            }
        }
        if g.priority.is_some() {
            objects.push(INFERENCE_OBJECTIVE);
        }
    }
    if monitoring.is_some() {
        objects.push(SERVICE_MONITOR);
    }
    let priority = placement.tier.map(|(name, _)| name);
    let priority_class = priority.as_deref().map(|p| platform.priority_class(p));
    let mut workload_labels = labels.clone();
    if let Some(q) = &placement.queue {
        workload_labels.insert(crate::model::labels::QUEUE_LABEL.to_string(), q.clone());
        if let Some(p) = &priority_class {
            workload_labels.insert(crate::model::labels::PRIORITY_LABEL.to_string(), p.clone());
        }
    }

    // A Deployment without the queue label in a namespace Kueue manages
    // (`manageJobsWithoutQueueName: true`) is suspended: the picker goes
    // to its service's queue (kubernetes-sigs/kueue
    // `site/content/en/docs/tasks/manage/enforce_job_management/manage_jobs_without_queue_name.md`).
    if let Some(pool) = gateway.as_mut().and_then(|g| g.pool.as_mut()) {
        for key in [crate::model::labels::QUEUE_LABEL, crate::model::labels::PRIORITY_LABEL] {
            if let Some(v) = workload_labels.get(key) {
                pool.picker.workload_labels.insert(key.to_string(), v.clone());
            }
        }
    }

    let security = security::derive(&settings);
    // The writable volumes a read-only root filesystem needs come first,
    // then the adapter configuration.
    pod_annotations.extend(security.pod_annotations.clone());
    let writable = [("home", &security.home_dir), ("cache", &security.cache_dir), ("tmp", &security.tmp_dir)];
    let security_mounts: Vec<serde_json::Value> =
        writable.iter().map(|(volume, path)| serde_json::json!({"name": volume, "mountPath": path})).collect();
    // The cache holds the downloaded weights: bounded, and requested from
    // the node's disk, so the scheduler places the pod where they fit
    // (docs/engine.md). Kueue refuses pods that request a resource its
    // ClusterQueue does not cover (kubernetes-sigs/kueue flavorassigner,
    // "resource %s unavailable in ClusterQueue"), so a queued service gets
    // the limit alone.
    // With the shared cache, the weights live on the claim: the emptyDir
    // keeps the compiled kernels alone.
    let cache_size = match &d.model_cache.size_limit {
        Some(q) => q.0.clone(),
        None if shared => format!("{}Gi", crate::model::size::CACHE_HEADROOM_BYTES as i64 >> 30),
        None => {
            let size = crate::model::size::ModelSize::guess(
                &spec.base_model,
                crate::derive::engine::arg_value(&spec.args, &["--quantization", "-q"]),
                crate::derive::engine::arg_value(&spec.args, &["--dtype"]),
            );
            format!("{}Gi", crate::model::size::cache_gib(size.as_ref()))
        }
    };
    if placement.queue.is_none() {
        requests.insert("ephemeral-storage".to_string(), cache_size.clone());
    }
    let mut security_volumes: Vec<serde_json::Value> = writable
        .iter()
        .map(|(volume, _)| match *volume {
            "cache" => serde_json::json!({"name": volume, "emptyDir": {"sizeLimit": cache_size}}),
            _ => serde_json::json!({"name": volume, "emptyDir": {}}),
        })
        .collect();
    let mut security_mounts = security_mounts;
    // The writable volumes and mounts alone, for the cache's pods: made
    // only where the service loads from the shared cache.
    let writable = shared.then(|| (security_volumes.clone(), security_mounts.clone()));
    let token = crate::derive::engine::token_volume(spec, platform, &namespace);
    if let Some((volume, mount)) = &token {
        security_volumes.push(volume.clone());
        security_mounts.push(mount.clone());
    }
    let mut base_env = security.env.clone();
    let planned = match &writable {
        Some((writable_volumes, writable_mounts)) => {
            let pod_security = serde_json::to_value(&security.pod).map_err(|e| e.to_string())?;
            let container_security = serde_json::to_value(&security.container).map_err(|e| e.to_string())?;
            let shape = crate::derive::cache::PodShape {
                image: &image,
                image_pull_policy: d.image_pull_policy.as_str(),
                pod_security: &pod_security,
                container_security: &container_security,
                env: &security.env,
                volumes: writable_volumes,
                mounts: writable_mounts,
                token: token.as_ref(),
                pod_annotations: &security.pod_annotations,
            };
            crate::derive::cache::plan(spec, platform, &namespace, &shape)
        }
        None => None,
    };
    let mut init_containers = Vec::new();
    let cache = planned.and_then(|(plan, server)| {
        // Every pod of the service, multi-node workers included, loads
        // from the cache.
        security_volumes.push(server.volume);
        security_mounts.push(server.mount);
        base_env.extend(server.env);
        init_containers.extend(server.init_container);
        plan
    });
    volume_mounts.splice(0..0, security_mounts.iter().cloned());
    volumes.splice(0..0, security_volumes.iter().cloned());
    let env = crate::derive::engine::env(spec, platform, &namespace, &base_env);
    // A service that may run one pod surges rather than stop its only pod
    // for the model's whole load time, unless no GPU is spare.
    let lowest = autoscaler.as_ref().map_or(spec_replicas, |a| a.min_replicas);
    let (max_surge, max_unavailable) =
        if lowest <= 1 && spec.nodes_per_replica <= 1 && !d.rollout.no_spare_gpus && d.rollout.max_unavailable > 0 {
            (d.rollout.max_surge.max(1), 0)
        } else {
            (d.rollout.max_surge, d.rollout.max_unavailable)
        };

    Ok(DesiredService {
        endpoint: crate::derive::gateway::endpoint(spec, &name, &namespace, port),
        name,
        namespace,
        labels,
        annotations,
        selector,
        pod_labels,
        workload_labels,
        model: spec.base_model.clone(),
        container: Container {
            name: CONTAINER_NAME.to_string(),
            image,
            image_pull_policy: d.image_pull_policy.as_str().to_string(),
            args,
            port,
            port_name: PORT_NAME.to_string(),
            gpus,
            requests,
            limits,
            shm_size,
            cache_size,
            probes,
            node_selector: profile.node_selector,
            tolerations: profile.tolerations,
            volume_mounts,
            env,
        },
        replicas: Some(spec_replicas),
        rollout: RolloutPlan {
            max_surge,
            max_unavailable,
            progress_deadline_seconds: p.startup_timeout_seconds.max(600) + 600,
        },
        drain,
        autoscaler,
        spec_replicas,
        tenant: placement.tenant,
        priority,
        priority_class,
        queue: placement.queue,
        disruption_budget,
        security,
        workload: Workload { api_version: workload.api_version, kind: workload.kind },
        pods_per_replica: spec.nodes_per_replica.max(1),
        multi_node,
        pod_annotations,
        security_volumes,
        security_mounts,
        volumes,
        adapters,
        keda,
        gateway,
        monitoring,
        accelerator: profile.name,
        cache,
        init_containers,
        objects,
    })
}

/// Resource overrides that the API server or the kernel would refuse: a CPU
/// request above the platform's CPU limit, `/dev/shm` that does not fit in
/// the memory limit.
fn validate_overrides(cpu: &str, memory: &str, shm: &str, cpu_limit: Option<&str>) -> Result<(), String> {
    let q = |field: &str, v: &str| Quantity::parse(v).map_err(|e| format!("spec.resources.{field}: {e}"));
    if let Some(limit) = cpu_limit
        && q("cpu", cpu)? > q("cpu", limit)?
    {
        return Err(format!(
            "spec.resources.cpu ({cpu}) is above the platform's CPU limit for the pod ({limit}); the API server rejects a request above its limit"
        ));
    }
    if q("shmSize", shm)? >= q("memory", memory)? {
        return Err(format!(
            "/dev/shm ({shm}) must be smaller than the pod's memory ({memory}): it counts against the memory limit; set spec.resources.memory and shmSize to fit"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::v1alpha1::InferenceServiceSpec;

    fn service(replicas: i32, gpus: i32) -> InferenceService {
        let mut s = crate::model::v1alpha1::InferenceService::new(
            "qwen3",
            InferenceServiceSpec {
                model: "Qwen/Qwen3-0.6B".into(),
                replicas,
                gpus_per_replica: gpus,
                priority: None,
                queue: None,
            },
        );
        s.metadata.labels = Some(BTreeMap::from([("team".to_string(), "a".to_string())]));
        crate::model::conversion::to_hub(&s).unwrap()
    }

    #[test]
    fn autoscaler_follows_the_reference_operator() {
        assert_eq!(autoscaler_bounds(0), None);
        assert_eq!(autoscaler_bounds(1), Some((1, 3)));
        assert_eq!(autoscaler_bounds(3), Some((1, 9)));
        assert_eq!(autoscaler_bounds(6), Some((3, 18)));
    }

    #[test]
    fn autoscaled_services_start_at_their_replicas() {
        // `replicas: 3` runs 3 pods from the first sync; the HPA's bounds
        // (1 to 9) contain it, so it is not rescaled without a metric.
        let d = derive(&service(3, 1), &Platform::default()).unwrap();
        assert_eq!(d.replicas, Some(3));
        assert_eq!(d.autoscaler.as_ref().map(|a| (a.min_replicas, a.max_replicas)), Some((1, 9)));
        assert_eq!(d.objects, vec![SERVICE, DEPLOYMENT, AUTOSCALER]);
        let zero = derive(&service(0, 1), &Platform::default()).unwrap();
        assert_eq!(zero.replicas, Some(0));
        assert_eq!(zero.objects, vec![SERVICE, DEPLOYMENT]);
    }

    #[test]
    fn resources_scale_with_gpus() {
        let d = derive(&service(1, 4), &Platform::default()).unwrap();
        assert_eq!(d.container.requests["cpu"], "16");
        assert_eq!(d.container.requests["memory"], "128Gi");
        assert_eq!(d.container.requests["nvidia.com/gpu"], "4");
        assert_eq!(d.container.limits["nvidia.com/gpu"], "4");
        assert!(!d.container.limits.contains_key("cpu"));
        assert_eq!(d.container.shm_size, "16Gi");
        assert!(d.container.args.windows(2).any(|w| w == ["--tensor-parallel-size", "4"]));
    }

    #[test]
    fn selector_is_a_subset_of_pod_labels_and_user_labels_carry_over() {
        let d = derive(&service(1, 1), &Platform::default()).unwrap();
        assert!(d.selector.iter().all(|(k, v)| d.pod_labels.get(k) == Some(v)));
        assert_eq!(d.labels["team"], "a");
        assert_eq!(d.labels["app.kubernetes.io/managed-by"], "isvc");
    }
}
