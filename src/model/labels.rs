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

/// Label Kueue reads for the LocalQueue of a workload.
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// Label Kueue reads for the WorkloadPriorityClass of a workload.
pub const PRIORITY_LABEL: &str = "kueue.x-k8s.io/priority-class";
