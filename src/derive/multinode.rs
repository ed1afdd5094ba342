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
}

/// The multi-node plan of a service, `None` for one node per replica.
pub fn plan(spec: &InferenceServiceSpec, pod_labels: &BTreeMap<String, String>) -> Option<MultiNode> {
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
                "bash {RAY_SCRIPT} leader --ray_cluster_size=$(LWS_GROUP_SIZE) && exec python3 -m vllm.entrypoints.openai.api_server \"$@\""
            ),
            "vllm".to_string(),
        ],
        worker_command: vec![
            "sh".to_string(),
            "-c".to_string(),
            format!("exec bash {RAY_SCRIPT} worker --ray_address=$(LWS_LEADER_ADDRESS)"),
        ],
        worker_labels,
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
        assert!(plan(&spec(8, 1), &BTreeMap::new()).is_none());
        let p = plan(&spec(16, 2), &BTreeMap::new()).unwrap();
        assert_eq!(p.size, 2);
        assert_eq!(p.worker_labels["app.kubernetes.io/component"], "inference-worker");
        assert_eq!(args(&spec(16, 2)), ["--pipeline-parallel-size", "2", "--distributed-executor-backend", "ray"]);
    }
}
