//! Features together: tenancy with quotas and Kueue queues, the gateway's
//! endpoint pickers, monitoring, accelerator profiles (H100 and MIG), the
//! shared model cache and multi-node services, in one platform.

use serde_json::Value;

use crate::harness::Test;
use isvc::model::objects::Object;

const PLATFORM: &str = "apiVersion: ai.example.com/v1alpha1
kind: Platform
defaults:
  resources: {cpuPerGpu: \"8\", memoryPerGpu: 64Gi}
accelerators:
  - name: h100
    resource: nvidia.com/gpu
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
    memoryGiB: 80
    kueueFlavor: h100
  - name: mig-3g
    resource: nvidia.com/mig-3g.40gb
    nodeSelector: {nvidia.com/mig.config: all-3g.40gb}
    memoryGiB: 40
    kueueFlavor: a100-mig
modelCache: {storageClassName: nfs-rwx, size: 500Gi}
network: {allowFrom: [gateway-system]}
gateway:
  parentRef: {name: inference-gateway, namespace: gateway-system}
  inferenceExtension: true
monitoring: {namespace: monitoring}
kueue:
  flavor: {name: h100}
  capacity: {nvidia.com/gpu: 64, nvidia.com/mig-3g.40gb: 14, cpu: 1000, memory: 8Ti}
tenants:
  - name: team-a
    quota:
      requests.nvidia.com/gpu: 64
      requests.nvidia.com/mig-3g.40gb: 6
      requests.storage: 1Ti
      count/jobs.batch: 4
    queues:
      - name: batch
        priority: offline
        nominalQuota: {nvidia.com/gpu: 0, nvidia.com/mig-3g.40gb: 0, cpu: 0, memory: 0}
      - name: online
        priority: online
        nominalQuota: {nvidia.com/gpu: 64, nvidia.com/mig-3g.40gb: 6, cpu: 1000, memory: 8Ti}
";

fn service(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: {name}, namespace: team-a}}\n\
         spec:\n  baseModel: Qwen/Qwen3-8B\n  revision: 9c925d64d72725edaf899c6cb9c377fd0709d9c5\n{extra}"
    )
}

fn of_kind<'a>(objects: &'a [Object], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o.id.kind == kind).map(|o| &o.value).collect()
}

#[test]
fn download_jobs_wait_in_the_tenants_default_queue() {
    // The service runs offline; the Job, which belongs to no one service,
    // goes to the queue of the tenant's default tier (online).
    let objects = Test::new()
        .service(service("qwen", "  accelerator: mig-3g\n  replicas: 1\n  priority: offline\n"))
        .platform(PLATFORM)
        .objects();
    let jobs = of_kind(&objects, "Job");
    assert_eq!(jobs.len(), 1);
    let labels = &jobs[0]["metadata"]["labels"];
    assert_eq!(labels["kueue.x-k8s.io/queue-name"], "online", "{labels}");
    assert_eq!(labels["kueue.x-k8s.io/priority-class"], "isvc-online", "{labels}");
    let server = of_kind(&objects, "Deployment").into_iter().find(|d| d["metadata"]["name"] == "qwen").unwrap();
    assert_eq!(server["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "batch");
}

#[test]
fn pickers_wait_in_their_services_queue() {
    let objects = Test::new()
        .service(service("qwen", "  replicas: 1\n  priority: offline\n  gateway: {route: llm.example.com/qwen}\n"))
        .platform(PLATFORM)
        .objects();
    let picker = of_kind(&objects, "Deployment").into_iter().find(|d| d["metadata"]["name"] == "qwen-epp").unwrap();
    let labels = &picker["metadata"]["labels"];
    assert_eq!(labels["kueue.x-k8s.io/queue-name"], "batch", "{labels}");
    assert_eq!(labels["kueue.x-k8s.io/priority-class"], "isvc-offline", "{labels}");
    // Only the Deployment: its Service, ConfigMap and pods keep the picker's labels.
    let service = of_kind(&objects, "Service").into_iter().find(|d| d["metadata"]["name"] == "qwen-epp").unwrap();
    assert!(service["metadata"]["labels"].get("kueue.x-k8s.io/queue-name").is_none());
}

#[test]
fn a_namespace_without_queues_leaves_the_job_to_the_job_controller() {
    let platform = PLATFORM.split("    queues:\n").next().unwrap().to_string();
    let objects = Test::new().service(service("qwen", "  replicas: 1\n")).platform(platform).objects();
    let job = of_kind(&objects, "Job")[0];
    assert!(job["metadata"]["labels"].get("kueue.x-k8s.io/queue-name").is_none(), "{job}");
}

#[test]
fn the_queue_counts_the_download_jobs() {
    // One GPU at 8 CPUs, at the autoscaler's maximum of 3 replicas: 24 CPUs
    // for the servers, and one more for the download Job's pod.
    let with = |cpu: &str| {
        let platform = PLATFORM.replace("cpu: 1000, memory: 8Ti}\n", &format!("cpu: {cpu}, memory: 8Ti}}\n"));
        Test::new().service(service("qwen", "  replicas: 1\n")).platform(platform).compile()
    };
    let err = with("24").expect_err("the Job does not fit the queue").render(false);
    assert!(err.contains("queue \"online\" of tenant \"team-a\" can admit at most cpu=24"), "{err}");
    assert!(err.contains("need cpu=25"), "{err}");
    assert!(with("25").is_ok());
}

#[test]
fn pickers_and_servers_are_reachable_and_multi_node_workers_mount_the_cache() {
    let objects = Test::new()
        .service(service("small", "  replicas: 1\n  gateway: {route: llm.example.com/qwen}\n"))
        .service(service(
            "big",
            "  gpusPerReplica: 16\n  nodesPerReplica: 2\n  autoscaling: {min: 1, max: 1, targetQueueLength: 8}\n",
        ))
        .platform(PLATFORM)
        .objects();
    let policy = of_kind(&objects, "NetworkPolicy")[0];
    let admits = |ns: &str, port: i64| {
        policy["spec"]["ingress"].as_array().unwrap().iter().any(|rule| {
            let from = rule["from"].to_string();
            from.contains(&format!("\"{ns}\"")) && rule["ports"].as_array().unwrap().iter().any(|p| p["port"] == port)
        })
    };
    assert!(admits("gateway-system", 8000) && admits("gateway-system", 9002), "{policy}");
    assert!(admits("monitoring", 8000) && admits("monitoring", 9090), "{policy}");
    let lws = of_kind(&objects, "LeaderWorkerSet")[0];
    for t in ["leaderTemplate", "workerTemplate"] {
        let pod = &lws["spec"]["leaderWorkerTemplate"][t]["spec"];
        let mounts = pod["containers"][0]["volumeMounts"].to_string();
        assert!(mounts.contains("/home/vllm/.cache/huggingface/hub"), "{t}: {mounts}");
        assert!(pod["initContainers"].to_string().contains("wait-for-model"), "{t}");
    }
}

#[test]
fn a_multi_node_pod_loads_its_share_of_the_weights() {
    // 405B at 16 bits is about 754Gi; over 2 nodes of 8 H100s each pod
    // loads about half: 512Gi per pod is enough, 256Gi is not.
    let big = |memory: &str| {
        let platform = PLATFORM.replace("memoryPerGpu: 64Gi", &format!("memoryPerGpu: {memory}"));
        let svc = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\n\
                   metadata: {name: big, namespace: team-a}\nspec:\n  baseModel: meta-llama/Llama-3.1-405B-Instruct\n  \
                   gpusPerReplica: 16\n  nodesPerReplica: 2\n  autoscaling: {min: 1, max: 1, targetQueueLength: 8}\n";
        let findings = Test::new().service(svc).platform(platform).examine().unwrap().findings;
        findings.into_iter().filter(|f| f.rule.id == "ISVC015").map(|f| f.message).collect::<Vec<_>>()
    };
    assert_eq!(big("64Gi"), Vec::<String>::new());
    let low = big("32Gi");
    assert_eq!(low.len(), 1, "{low:?}");
    assert!(low[0].contains("weights 377Gi of 754Gi over 2 nodes + 4Gi x 8 workers"), "{low:?}");
}

#[test]
fn a_cluster_with_a_mirror_pulls_the_pickers_from_it() {
    let platform = format!(
        "{PLATFORM}clusters:\n  - {{name: us, server: https://us.example.com}}\n  \
         - {{name: eu, server: https://eu.example.com, imageRegistry: mirror.example.eu}}\n"
    );
    let objects = Test::new()
        .service(service("qwen", "  replicas: 1\n  gateway: {route: llm.example.com/qwen}\n"))
        .platform(platform)
        .objects();
    let images = |cluster: &str| -> Vec<String> {
        let mut out: Vec<String> = objects
            .iter()
            .filter(|o| o.cluster.as_deref() == Some(cluster))
            .flat_map(|o| {
                let text = o.value.to_string();
                text.split("\"image\":\"").skip(1).map(|s| s.split('"').next().unwrap().to_string()).collect::<Vec<_>>()
            })
            .collect();
        out.sort();
        out.dedup();
        out
    };
    let eu = images("eu");
    assert!(!eu.is_empty() && eu.iter().all(|i| i.starts_with("mirror.example.eu/")), "{eu:?}");
    assert!(eu.contains(&"mirror.example.eu/llm-d/llm-d-router-endpoint-picker:v0.10.0".to_string()), "{eu:?}");
    assert!(images("us").iter().any(|i| i.starts_with("ghcr.io/llm-d/")));
}

#[test]
fn a_cpu_flavor_with_node_labels_cannot_hold_a_profile_of_its_own_flavor() {
    // Kueue would give a MIG pod's CPU and memory from the H100 flavor and
    // pin it to H100 nodes as well as MIG ones.
    let platform = PLATFORM.replace(
        "  flavor: {name: h100}\n",
        "  flavor: {name: h100, nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}}\n",
    );
    let err = Test::new()
        .file("services/qwen.yaml", service("qwen", "  replicas: 1\n"))
        .platform(platform)
        .compile()
        .expect_err("refused")
        .render(false);
    assert!(
        err.contains("the pods of accelerator \"mig-3g\" would need the node labels of Kueue flavor \"h100\" (nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3)"),
        "{err}"
    );
    assert!(err.contains("platform.yaml:15:18"), "{err}");
    assert!(!err.contains("accelerator \"h100\" would"), "{err}");
}
