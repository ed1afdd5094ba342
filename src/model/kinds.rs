//! The one table of every kind isvc renders: its API group and version,
//! whether it is namespaced, its place in the apply order, where its pod
//! templates sit, and who owns it. Output order, the type check, `plan`'s
//! ownership and pruning, `diff`'s pod marks and the rules all read it; a
//! new kind is a new row here (and its type in `k8s::typecheck`).

use crate::base::value::At;
use serde_json::Value;

/// Who an object of a kind belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The cluster or the platform: the CRD, tenants' namespaces, quotas,
    /// priority classes and Kueue queues.
    Platform,
    /// One InferenceService: `plan` creates, updates and prunes these by the
    /// service's labels, as the reference Operator does.
    Service,
    /// The GitOps engine's own objects (Argo CD, Flux).
    GitOps,
}

/// One kind isvc renders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    /// Apply order: lower first (kustomize's idea: namespaces, CRDs and
    /// other prerequisites before what uses them).
    pub rank: u8,
    /// JSON pointers to the pod templates of a workload kind; empty for the
    /// rest. A change under one of them restarts pods.
    pub pod_templates: &'static [&'static str],
    /// Where the workload's replica count sits, for kinds that run pods.
    pub replicas: Option<&'static str>,
    /// A change under this pointer replaces the workload's pods (for a
    /// LeaderWorkerSet, the whole group template, its size included).
    pub restarts_under: Option<&'static str>,
    pub owner: Owner,
}

impl Kind {
    pub fn group(&self) -> &'static str {
        self.api_version.rsplit_once('/').map_or("", |(g, _)| g)
    }

    pub fn runs_pods(&self) -> bool {
        !self.pod_templates.is_empty()
    }
}

pub const CRD: &str = "apiextensions.k8s.io/v1";
pub const KUEUE: &str = "kueue.x-k8s.io/v1beta2";
pub const LWS: &str = "leaderworkerset.x-k8s.io/v1";
pub const KEDA: &str = "keda.sh/v1alpha1";
pub const GATEWAY: &str = "gateway.networking.k8s.io/v1";
pub const INFERENCE_POOL: &str = "inference.networking.k8s.io/v1";
pub const INFERENCE_POOL_GROUP: &str = "inference.networking.k8s.io";
/// llm-d took InferenceObjective over when the Inference Extension dropped it.
pub const INFERENCE_OBJECTIVE: &str = "llm-d.ai/v1alpha2";
pub const PROMETHEUS_OPERATOR: &str = "monitoring.coreos.com/v1";
pub const ARGO_CD: &str = "argoproj.io/v1alpha1";
pub const FLUX_SOURCE: &str = "source.toolkit.fluxcd.io/v1";
pub const FLUX_KUSTOMIZE: &str = "kustomize.toolkit.fluxcd.io/v1";

const NO_PODS: &[&str] = &[];
const DEPLOYMENT_PODS: &[&str] = &["/spec/template"];
const LWS_PODS: &[&str] = &["/spec/leaderWorkerTemplate/leaderTemplate", "/spec/leaderWorkerTemplate/workerTemplate"];

const fn row(api_version: &'static str, kind: &'static str, namespaced: bool, rank: u8, owner: Owner) -> Kind {
    Kind { api_version, kind, namespaced, rank, pod_templates: NO_PODS, replicas: None, restarts_under: None, owner }
}

/// Every kind isvc renders, in apply order.
pub const KINDS: &[Kind] = &[
    row(CRD, "CustomResourceDefinition", false, 0, Owner::Platform),
    row("v1", "Namespace", false, 1, Owner::Platform),
    row("scheduling.k8s.io/v1", "PriorityClass", false, 2, Owner::Platform),
    row(KUEUE, "ResourceFlavor", false, 3, Owner::Platform),
    row(KUEUE, "WorkloadPriorityClass", false, 3, Owner::Platform),
    row(KUEUE, "ClusterQueue", false, 4, Owner::Platform),
    row("v1", "ResourceQuota", true, 6, Owner::Platform),
    row("v1", "LimitRange", true, 7, Owner::Platform),
    row("networking.k8s.io/v1", "NetworkPolicy", true, 8, Owner::Platform),
    row(KUEUE, "LocalQueue", true, 9, Owner::Platform),
    row("v1", "PersistentVolumeClaim", true, 9, Owner::Platform),
    Kind {
        pod_templates: DEPLOYMENT_PODS,
        replicas: Some("/spec/parallelism"),
        restarts_under: Some("/spec/template"),
        ..row("batch/v1", "Job", true, 9, Owner::Platform)
    },
    row("v1", "ServiceAccount", true, 10, Owner::Service),
    row("rbac.authorization.k8s.io/v1", "Role", true, 10, Owner::Service),
    row("rbac.authorization.k8s.io/v1", "RoleBinding", true, 10, Owner::Service),
    row("v1", "ConfigMap", true, 10, Owner::Service),
    row("v1", "Service", true, 11, Owner::Service),
    Kind {
        pod_templates: DEPLOYMENT_PODS,
        replicas: Some("/spec/replicas"),
        restarts_under: Some("/spec/template"),
        ..row("apps/v1", "Deployment", true, 12, Owner::Service)
    },
    Kind {
        pod_templates: LWS_PODS,
        replicas: Some("/spec/replicas"),
        restarts_under: Some("/spec/leaderWorkerTemplate"),
        ..row(LWS, "LeaderWorkerSet", true, 12, Owner::Service)
    },
    row("autoscaling/v2", "HorizontalPodAutoscaler", true, 13, Owner::Service),
    row(KEDA, "ScaledObject", true, 13, Owner::Service),
    row("policy/v1", "PodDisruptionBudget", true, 14, Owner::Service),
    row(INFERENCE_POOL, "InferencePool", true, 15, Owner::Service),
    row(INFERENCE_OBJECTIVE, "InferenceObjective", true, 16, Owner::Service),
    row(GATEWAY, "HTTPRoute", true, 17, Owner::Service),
    row(PROMETHEUS_OPERATOR, "ServiceMonitor", true, 18, Owner::Service),
    row(FLUX_SOURCE, "GitRepository", true, 20, Owner::GitOps),
    row(FLUX_KUSTOMIZE, "Kustomization", true, 20, Owner::GitOps),
    row(ARGO_CD, "AppProject", true, 20, Owner::GitOps),
    row(ARGO_CD, "Application", true, 20, Owner::GitOps),
    row(ARGO_CD, "ApplicationSet", true, 20, Owner::GitOps),
];

/// The row of `kind` (names are unique across the groups isvc renders).
pub fn lookup(kind: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.kind == kind)
}

/// The row of an apiVersion and kind, exactly.
pub fn of(api_version: &str, kind: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.kind == kind && k.api_version == api_version)
}

/// Apply order of a kind: lower first; kinds isvc does not render last.
pub fn rank(kind: &str) -> u8 {
    lookup(kind).map_or(30, |k| k.rank)
}

/// Whether objects of `kind` run pods.
pub fn runs_pods(kind: &str) -> bool {
    lookup(kind).is_some_and(Kind::runs_pods)
}

/// The pod templates of `value`, an object of `kind`, by the kind's row.
/// The kind is the object's identity's: a value need not hold its own (an
/// object's skeleton, `k8s::skeleton`, does not).
pub fn pod_templates<'v>(kind: &str, value: &'v Value) -> Vec<&'v Value> {
    pod_template_paths(kind).iter().filter_map(|p| value.at(p)).collect()
}

/// Where the pod templates of an object of `kind` are (JSON pointers).
pub fn pod_template_paths(kind: &str) -> &'static [&'static str] {
    lookup(kind).map_or(NO_PODS, |k| k.pod_templates)
}

/// [`pod_templates`], of a value read in either form.
pub fn pod_template_views<'v>(
    kind: &str,
    value: crate::model::compact::View<'v>,
) -> Vec<crate::model::compact::View<'v>> {
    pod_template_paths(kind).iter().filter_map(|p| value.at(p)).collect()
}

/// The kinds `plan` creates, updates and prunes for a service.
pub fn service_kinds() -> impl Iterator<Item = &'static Kind> {
    KINDS.iter().filter(|k| k.owner == Owner::Service)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_unique_and_in_apply_order() {
        let mut names: Vec<&str> = KINDS.iter().map(|k| k.kind).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KINDS.len(), "a kind is listed twice");
        assert!(KINDS.windows(2).all(|w| w[0].rank <= w[1].rank), "the table is not in apply order");
    }

    #[test]
    fn workloads_have_pod_templates_and_a_replica_count() {
        for k in KINDS {
            assert_eq!(k.runs_pods(), k.replicas.is_some(), "{}", k.kind);
            assert_eq!(k.runs_pods(), k.restarts_under.is_some(), "{}", k.kind);
        }
        assert!(runs_pods("Deployment") && runs_pods("LeaderWorkerSet") && runs_pods("Job") && !runs_pods("Service"));
        assert_eq!(lookup("InferencePool").unwrap().group(), INFERENCE_POOL_GROUP);
    }
}
