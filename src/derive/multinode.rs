//! Replicas that span several nodes, for models that do not fit one.
//!
//! With `nodesPerReplica` above 1, a service is a LeaderWorkerSet
//! (`leaderworkerset.x-k8s.io/v1`) instead of a Deployment: each replica is
//! a group of that many pods, restarted together. As in LeaderWorkerSet's
//! own vLLM example, the pods form a Ray cluster with the helper script the
//! vLLM image ships; the leader then runs the OpenAI server with tensor
//! parallelism over the GPUs of a node and pipeline parallelism over the
//! nodes, and only the leader serves, so only leaders are selected by the
//! Service and the inference pool.
//!
//! The script's leader waits `--ray_init_timeout` seconds (300 by default)
//! for every worker to join, then exits 1; a worker retries as long before
//! it exits 1 (vllm-project/vllm
//! `examples/online_serving/multi-node-serving.sh`). With
//! `RecreateGroupOnPodRestart`, either exit recreates the whole group, so a
//! group whose nodes are cold (pulling a 20 GB image) never forms. Both get
//! the whole startup budget (`defaults.probes.startupTimeoutSeconds`)
//! instead, and the workers a startup probe with the same budget that asks
//! the leader's Ray head whether it is up (`ray health-check`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::v1alpha2::InferenceServiceSpec;

pub const API_VERSION: &str = "leaderworkerset.x-k8s.io/v1";
pub const KIND: &str = "LeaderWorkerSet";
/// The Ray helper script in the vLLM image.
pub const RAY_SCRIPT: &str = "/vllm-workspace/examples/online_serving/multi-node-serving.sh";
/// `app.kubernetes.io/component` of the worker pods (leaders keep the
/// service's `inference-server`).
pub const WORKER_COMPONENT: &str = "inference-worker";

/// The group of pods one replica is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MultiNode {
    /// Pods per group: the leader and `size - 1` workers.
    pub size: i32,
    /// The leader's command; the server arguments follow it (`"$@"`), so no
    /// value is ever part of the shell text.
    pub leader_command: Vec<String>,
    /// The workers' command: join the leader's Ray cluster and wait.
    pub worker_command: Vec<String>,
    /// Labels of the worker pods.
    pub worker_labels: BTreeMap<String, String>,
    /// The workers' startup probe command: the leader's Ray head answers.
    pub worker_probe: Vec<String>,
    /// Seconds one worker probe may take (the Ray CLI starts a Python
    /// interpreter).
    pub worker_probe_timeout_seconds: i32,
}

/// The port of the leader's Ray head (the script's default).
pub const RAY_PORT: i32 = 6379;
/// Shortest time one worker startup probe may take.
pub const WORKER_PROBE_TIMEOUT_SECONDS: i32 = 10;

/// The multi-node plan of a service, `None` for one node per replica.
/// `startup_seconds` is the startup budget, `probe_timeout_seconds` the
/// platform's probe timeout.
pub fn plan(
    spec: &InferenceServiceSpec,
    pod_labels: &BTreeMap<String, String>,
    startup_seconds: i32,
    probe_timeout_seconds: i32,
) -> Option<MultiNode> {
    if spec.nodes_per_replica <= 1 {
        return None;
    }
    let mut worker_labels = pod_labels.clone();
    worker_labels.insert("app.kubernetes.io/component".to_string(), WORKER_COMPONENT.to_string());
    Some(MultiNode {
        size: spec.nodes_per_replica,
        leader_command: vec![
            "sh".to_string(),
            "-c".to_string(),
            format!(
                "bash {RAY_SCRIPT} leader --ray_cluster_size=$(LWS_GROUP_SIZE) --ray_init_timeout={startup_seconds} && exec python3 -m vllm.entrypoints.openai.api_server \"$@\""
            ),
            "vllm".to_string(),
        ],
        worker_command: vec![
            "sh".to_string(),
            "-c".to_string(),
            format!(
                "exec bash {RAY_SCRIPT} worker --ray_address=$(LWS_LEADER_ADDRESS) --ray_init_timeout={startup_seconds}"
            ),
        ],
        worker_labels,
        worker_probe: vec![
            "sh".to_string(),
            "-c".to_string(),
            format!("ray health-check --address=\"$LWS_LEADER_ADDRESS:{RAY_PORT}\""),
        ],
        worker_probe_timeout_seconds: probe_timeout_seconds.max(WORKER_PROBE_TIMEOUT_SECONDS),
    })
}

/// The server arguments for pipeline parallelism over the nodes.
pub fn args(spec: &InferenceServiceSpec) -> Vec<String> {
    if spec.nodes_per_replica <= 1 {
        return Vec::new();
    }
    vec![
        "--pipeline-parallel-size".to_string(),
        spec.nodes_per_replica.to_string(),
        "--distributed-executor-backend".to_string(),
        "ray".to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(gpus: i32, nodes: i32) -> InferenceServiceSpec {
        let mut s = crate::model::conversion::spec_to_hub(&crate::model::v1alpha1::InferenceServiceSpec {
            model: "m".into(),
            replicas: 1,
            gpus_per_replica: gpus,
            priority: None,
            queue: None,
        });
        s.nodes_per_replica = nodes;
        s
    }

    #[test]
    fn only_several_nodes_make_a_group() {
        assert!(plan(&spec(8, 1), &BTreeMap::new(), 3600, 5).is_none());
        let p = plan(&spec(16, 2), &BTreeMap::new(), 3600, 5).unwrap();
        assert_eq!(p.size, 2);
        assert!(p.leader_command[2].contains(" --ray_init_timeout=3600 && exec "), "{:?}", p.leader_command);
        assert!(p.worker_command[2].ends_with(" --ray_init_timeout=3600"), "{:?}", p.worker_command);
        assert_eq!(p.worker_probe_timeout_seconds, 10);
        assert_eq!(p.worker_labels["app.kubernetes.io/component"], "inference-worker");
        assert_eq!(args(&spec(16, 2)), ["--pipeline-parallel-size", "2", "--distributed-executor-backend", "ray"]);
    }
}
