//! The derivation: typed spec and platform in, the desired state of every
//! service out. Pure: no I/O, no clock, no randomness.
//!
//! Every decision about what the cluster should run is made here (names,
//! labels, arguments, resources, probes, replicas, autoscaler bounds, which
//! objects exist); the templates only give those values their YAML shape.
//! An Operator could call [`derive`] in its reconcile loop.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::platform::Platform;
use crate::quantity::Quantity;
use crate::security::{self, PodSecurity};
use crate::spec::InferenceService;

/// Labels isvc sets on every object; users cannot set them.
pub const RESERVED_LABELS: [&str; 4] = [
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/component",
    "app.kubernetes.io/managed-by",
];
/// The label that marks objects isvc manages.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "isvc");
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
    /// Deployment replicas; `None` when the autoscaler owns the count (so a
    /// GitOps engine never fights it over `spec.replicas`).
    pub replicas: Option<i32>,
    pub rollout: RolloutPlan,
    /// The autoscaler; `None` for a service scaled to zero.
    pub autoscaler: Option<Autoscaler>,
    /// `spec.replicas` as written (the steady state).
    pub spec_replicas: i32,
    /// Tenant owning the namespace, if the platform declares tenants.
    pub tenant: Option<String>,
    /// Priority tier, which is also the PriorityClass name.
    pub priority: Option<String>,
    /// Kueue LocalQueue admitting the pods.
    pub queue: Option<String>,
    /// PodDisruptionBudget for tiers that ask for one.
    pub disruption_budget: Option<DisruptionBudget>,
    /// Pod and container security settings (see [`crate::security`]).
    pub security: PodSecurity,
    /// The objects to render, in order, each with its template.
    pub objects: Vec<Child>,
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
    pub probes: ProbePlan,
    /// Node selector and tolerations of the pod.
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<crate::platform::Toleration>,
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
    pub target_average_value: String,
    pub scale_down_stabilization_seconds: i32,
}

/// A PodDisruptionBudget that can never block a rollout or a drain forever:
/// at most `max_unavailable` pods down at once, and unhealthy pods (still
/// loading, or crashing) may always be evicted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DisruptionBudget {
    pub max_unavailable: i32,
}

/// One object to render for a service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Child {
    pub api_version: &'static str,
    pub kind: &'static str,
    /// Template file that gives the object its shape.
    pub template: &'static str,
}

pub const DEPLOYMENT: Child = Child { api_version: "apps/v1", kind: "Deployment", template: "deployment.yaml" };
pub const SERVICE: Child = Child { api_version: "v1", kind: "Service", template: "service.yaml" };
pub const DISRUPTION_BUDGET: Child =
    Child { api_version: "policy/v1", kind: "PodDisruptionBudget", template: "poddisruptionbudget.yaml" };
pub const AUTOSCALER: Child =
    Child { api_version: "autoscaling/v2", kind: "HorizontalPodAutoscaler", template: "horizontalpodautoscaler.yaml" };

impl DesiredService {
    /// Pods at steady state: `spec.replicas`.
    pub fn steady_replicas(&self) -> i32 {
        self.spec_replicas
    }
}

/// Autoscaler bounds for a service with `replicas` > 0, as the reference
/// Operator sets them: min = max(1, replicas / 2), max = replicas x 3.
pub fn autoscaler_bounds(replicas: i32) -> Option<(i32, i32)> {
    (replicas > 0).then(|| ((replicas / 2).max(1), replicas.saturating_mul(3)))
}

/// Derives the desired state of one service. Fails only on platform values
/// that are not valid quantities (the loader reports those with positions).
pub fn derive(service: &InferenceService, platform: &Platform) -> Result<DesiredService, String> {
    let d = &platform.defaults;
    let placement = crate::tenancy::place(service, platform).map_err(|(_, e)| e)?;
    let name = service.name().to_string();
    let namespace = service.namespace_or_default().to_string();
    let gpus = service.spec.gpus_per_replica;
    let replicas = service.spec.replicas;

    let selector = BTreeMap::from([("app.kubernetes.io/name".to_string(), name.clone())]);
    let mut labels: BTreeMap<String, String> =
        service.metadata.labels.clone().unwrap_or_default().into_iter().collect();
    labels.extend([
        ("app.kubernetes.io/name".to_string(), name.clone()),
        ("app.kubernetes.io/instance".to_string(), name.clone()),
        ("app.kubernetes.io/component".to_string(), "inference-server".to_string()),
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
    ]);
    let pod_labels = labels.clone();
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
    let cpu = per_gpu("cpuPerGpu", &d.resources.cpu_per_gpu)?;
    let memory = per_gpu("memoryPerGpu", &d.resources.memory_per_gpu)?;
    let shm_size = per_gpu("shmSizePerGpu", &d.resources.shm_size_per_gpu)?;
    let gpu = gpus.to_string();
    let requests = BTreeMap::from([
        ("cpu".to_string(), cpu),
        ("memory".to_string(), memory.clone()),
        ("nvidia.com/gpu".to_string(), gpu.clone()),
    ]);
    let mut limits = BTreeMap::from([("memory".to_string(), memory), ("nvidia.com/gpu".to_string(), gpu)]);
    if let Some(limit) = &d.resources.cpu_limit_per_gpu {
        limits.insert("cpu".to_string(), per_gpu("cpuLimitPerGpu", limit)?);
    }

    let port = d.port;
    let args = vec![
        "--model".to_string(),
        service.spec.model.clone(),
        "--tensor-parallel-size".to_string(),
        gpus.to_string(),
        "--host".to_string(),
        "0.0.0.0".to_string(),
        "--port".to_string(),
        port.to_string(),
    ];
    let p = &d.probes;
    let probes = ProbePlan {
        path: p.path.clone(),
        period_seconds: p.period_seconds,
        timeout_seconds: p.timeout_seconds,
        startup_failure_threshold: (p.startup_timeout_seconds + p.period_seconds - 1) / p.period_seconds,
        liveness_failure_threshold: p.liveness_failure_threshold,
        readiness_failure_threshold: p.readiness_failure_threshold,
    };

    let autoscaler = autoscaler_bounds(replicas).map(|(min_replicas, max_replicas)| Autoscaler {
        min_replicas,
        max_replicas,
        metric: d.autoscaling.metric.clone(),
        target_average_value: d.autoscaling.target_average_value.0.clone(),
        scale_down_stabilization_seconds: d.autoscaling.scale_down_stabilization_seconds,
    });
    let disruption_budget = placement
        .tier
        .as_ref()
        .filter(|(_, tier)| tier.disruption_budget && replicas > 0)
        .map(|_| DisruptionBudget { max_unavailable: 1 });
    let mut objects = vec![SERVICE, DEPLOYMENT];
    if autoscaler.is_some() {
        objects.push(AUTOSCALER);
    }
    if disruption_budget.is_some() {
        objects.push(DISRUPTION_BUDGET);
    }
    let priority = placement.tier.map(|(name, _)| name);
    let mut workload_labels = labels.clone();
    if let Some(q) = &placement.queue {
        workload_labels.insert(crate::kueue::QUEUE_LABEL.to_string(), q.clone());
        if let Some(p) = &priority {
            workload_labels.insert(crate::kueue::PRIORITY_LABEL.to_string(), p.clone());
        }
    }

    let security = security::derive(&security::settings_for(platform, &namespace, &name));

    Ok(DesiredService {
        name,
        namespace,
        labels,
        annotations,
        selector,
        pod_labels,
        workload_labels,
        model: service.spec.model.clone(),
        container: Container {
            name: CONTAINER_NAME.to_string(),
            image: d.image.clone(),
            image_pull_policy: d.image_pull_policy.as_str().to_string(),
            args,
            port,
            port_name: PORT_NAME.to_string(),
            gpus,
            requests,
            limits,
            shm_size,
            probes,
            node_selector: d.node_selector.clone(),
            tolerations: d.tolerations.clone(),
        },
        replicas: if autoscaler.is_some() { None } else { Some(replicas) },
        rollout: RolloutPlan {
            max_surge: d.rollout.max_surge,
            max_unavailable: d.rollout.max_unavailable,
            progress_deadline_seconds: p.startup_timeout_seconds.max(600) + 600,
        },
        autoscaler,
        spec_replicas: replicas,
        tenant: placement.tenant,
        priority,
        queue: placement.queue,
        disruption_budget,
        security,
        objects,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::InferenceServiceSpec;

    fn service(replicas: i32, gpus: i32) -> InferenceService {
        let mut s = InferenceService::new(
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
        s
    }

    #[test]
    fn autoscaler_follows_the_reference_operator() {
        assert_eq!(autoscaler_bounds(0), None);
        assert_eq!(autoscaler_bounds(1), Some((1, 3)));
        assert_eq!(autoscaler_bounds(3), Some((1, 9)));
        assert_eq!(autoscaler_bounds(6), Some((3, 18)));
    }

    #[test]
    fn autoscaled_services_leave_replicas_to_the_autoscaler() {
        let d = derive(&service(3, 1), &Platform::default()).unwrap();
        assert_eq!(d.replicas, None);
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
