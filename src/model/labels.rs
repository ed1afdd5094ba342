//! Well-known labels and annotations: the ones isvc sets, reserves or reads.

/// Labels isvc sets on every object; users cannot set them.
pub const RESERVED_LABELS: [&str; 4] = [
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/component",
    "app.kubernetes.io/managed-by",
];

/// The label that marks objects isvc manages.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "isvc");

/// Label on tenant namespaces (and what NetworkPolicies select on).
pub const TENANT_LABEL: &str = "ai.example.com/tenant";

/// Marks the PriorityClass of a preemptible tier, for rules that read the
/// rendered objects.
pub const PREEMPTIBLE_ANNOTATION: &str = "ai.example.com/preemptible";

/// Pod annotation listing the relaxations the platform granted a service.
pub const EXCEPTIONS_ANNOTATION: &str = "isvc.ai.example.com/security-exceptions";

/// Pod annotation with the memory of one GPU of the pod's accelerator
/// profile (`80Gi`), for the rule that checks the weights fit.
pub const GPU_MEMORY_ANNOTATION: &str = "ai.example.com/gpu-memory";

/// Label Kueue reads for the LocalQueue of a workload.
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// Label Kueue reads for the WorkloadPriorityClass of a workload.
pub const PRIORITY_LABEL: &str = "kueue.x-k8s.io/priority-class";

/// Annotations that keep Argo CD and Flux from deleting an object when it
/// leaves the rendered tree (prune) or when the Application or
/// Kustomization is deleted: on Namespaces (tenants' hand-made Secrets and
/// caches live there) and the CRD (deleting it deletes every
/// InferenceService). Both are inert without the other engine, so both are
/// always set. Argo CD: argoproj/argo-cd `docs/user-guide/sync-options.md`
/// ("No Prune Resources", "No Resource Deletion"); Flux:
/// fluxcd/kustomize-controller `docs/spec/v1/kustomizations.md` ("Prune",
/// lowercase `disabled`).
pub const PRUNE_PROTECTION: [(&str, &str); 2] =
    [(ARGOCD_SYNC_OPTIONS, "Prune=false,Delete=false"), ("kustomize.toolkit.fluxcd.io/prune", "disabled")];

/// Argo CD's per-object sync options annotation (comma-separated).
pub const ARGOCD_SYNC_OPTIONS: &str = "argocd.argoproj.io/sync-options";
