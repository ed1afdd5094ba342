//! Accelerator profiles, per-service images and the shared model cache:
//! what the rendered objects carry, and what is refused.

use serde_json::Value;

use crate::harness::Test;
use isvc::model::objects::Object;

const PLATFORM: &str = "apiVersion: ai.example.com/v1alpha1
kind: Platform
defaults:
  image: vllm/vllm-openai:v0.11.0
  huggingFace:
    tokenSecret: {name: hf-token, key: token}
accelerators:
  - name: h100
    resource: nvidia.com/gpu
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    memoryGiB: 80
  - name: mig-3g
    resource: nvidia.com/mig-3g.40gb
    nodeSelector: {nvidia.com/mig.config: all-3g.40gb}
    memoryGiB: 40
images:
  allowedRepositories: [vllm/vllm-openai, registry.example.com/ml/]
modelCache:
  storageClassName: nfs-rwx
  size: 800Gi
";

const REVISION: &str = "6f6073b423013f6a7d4d9f39144961bfbfbc386b";

fn service(name: &str, model: &str, extra: &str) -> String {
    format!(
        "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: {name}, namespace: ml}}\n\
         spec:\n  baseModel: {model}\n  replicas: 1\n{extra}"
    )
}

fn find<'a>(objects: &'a [Object], kind: &str, name: &str) -> &'a Value {
    &objects
        .iter()
        .find(|o| o.id.kind == kind && (name.is_empty() || o.id.name == name))
        .unwrap_or_else(|| {
            panic!("no {kind} {name}: {:?}", objects.iter().map(|o| o.id.to_string()).collect::<Vec<_>>())
        })
        .value
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

fn env<'a>(c: &'a Value, name: &str) -> Option<&'a str> {
    c["env"].as_array()?.iter().find(|e| e["name"] == name).and_then(|e| e["value"].as_str())
}

#[test]
fn the_cache_claim_the_pinned_download_and_the_read_only_mount() {
    let svc = service(
        "llama",
        "meta-llama/Llama-3.3-70B-Instruct",
        &format!("  gpusPerReplica: 4\n  revision: {REVISION}\n"),
    );
    let objects = Test::new().service(svc).platform(PLATFORM).objects();

    let claim = find(&objects, "PersistentVolumeClaim", "isvc-model-cache");
    assert_eq!(claim["metadata"]["namespace"], "ml");
    assert_eq!(strs(&claim["spec"]["accessModes"]), ["ReadWriteMany"]);
    assert_eq!(claim["spec"]["storageClassName"], "nfs-rwx");
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "800Gi");

    let job = find(&objects, "Job", "");
    let name = job["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("download-llama-3-3-70b-instruct-") && name.len() <= 63, "{name}");
    assert!(job["spec"]["backoffLimit"].as_i64().unwrap() > 0);
    assert!(job["spec"]["activeDeadlineSeconds"].as_i64().unwrap() > 0);
    assert!(job["spec"].get("ttlSecondsAfterFinished").is_none(), "a GitOps engine would recreate it");
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    // The download: the Hub CLI with the revision pinned, as an init
    // container; then the marker.
    let dl = &pod["initContainers"][0];
    assert_eq!(dl["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(strs(&dl["command"]), ["hf"]);
    assert_eq!(
        strs(&dl["args"]),
        [
            "download",
            "meta-llama/Llama-3.3-70B-Instruct",
            "--revision",
            REVISION,
            "--cache-dir",
            "/home/vllm/.cache/huggingface/hub"
        ]
    );
    assert_eq!(env(dl, "HF_TOKEN_PATH"), Some("/etc/isvc/hf-token/token"));
    let mark = &pod["containers"][0];
    assert_eq!(mark["name"], "mark-complete");
    let volumes = pod["volumes"].as_array().unwrap();
    assert!(volumes.iter().any(|v| v["persistentVolumeClaim"]["claimName"] == "isvc-model-cache"));
    assert!(volumes.iter().any(|v| v["secret"]["secretName"] == "hf-token"));

    let server = &find(&objects, "Deployment", "llama")["spec"]["template"]["spec"];
    let vllm = &server["containers"][0];
    assert_eq!(env(vllm, "HF_HUB_OFFLINE"), Some("1"));
    let args = strs(&vllm["args"]);
    assert!(args.windows(2).any(|w| w == ["--revision", REVISION]), "{args:?}");
    let hf_home = env(vllm, "HF_HOME").unwrap();
    let mount = vllm["volumeMounts"].as_array().unwrap().iter().find(|m| m["name"] == "model-cache").unwrap();
    assert_eq!(mount["mountPath"], format!("{hf_home}/hub"));
    assert_eq!(env(vllm, "HF_HUB_CACHE"), mount["mountPath"].as_str());
    assert_eq!(mount["readOnly"], true);
    let volume = server["volumes"].as_array().unwrap().iter().find(|v| v["name"] == "model-cache").unwrap();
    assert_eq!(volume["persistentVolumeClaim"]["readOnly"], true);
    // The server waits for the Job's marker before it starts.
    let wait = &server["initContainers"][0];
    assert_eq!(wait["name"], "wait-for-model");
    assert_eq!(env(wait, "ISVC_MODEL_MARKER"), env(mark, "ISVC_MODEL_MARKER"));
    assert!(env(wait, "ISVC_MODEL_MARKER").unwrap().ends_with(&format!("@{REVISION}")));
}

#[test]
fn services_of_one_model_share_a_job_and_each_namespace_has_one_claim() {
    let a = service("a", "Qwen/Qwen3-8B", &format!("  revision: {REVISION}\n"));
    let b = service("b", "Qwen/Qwen3-8B", &format!("  revision: {REVISION}\n"));
    let c = service("c", "Qwen/Qwen3-8B", "  revision: main\n").replace("namespace: ml", "namespace: other");
    let objects = Test::new().service(format!("{a}---\n{b}---\n{c}")).platform(PLATFORM).objects();
    let count = |kind: &str, ns: &str| {
        objects.iter().filter(|o| o.id.kind == kind && o.id.namespace.as_deref() == Some(ns)).count()
    };
    assert_eq!((count("Job", "ml"), count("PersistentVolumeClaim", "ml")), (1, 1));
    assert_eq!((count("Job", "other"), count("PersistentVolumeClaim", "other")), (1, 1));
    // A model loaded from a path is not downloaded.
    let local = service("local", "/models/llama", "");
    let objects = Test::new().service(local).platform(PLATFORM).objects();
    assert!(!objects.iter().any(|o| o.id.kind == "Job"));
}

#[test]
fn a_new_revision_is_a_new_job_and_a_rollout() {
    let render = |rev: &str| {
        Test::new()
            .service(service("qwen", "Qwen/Qwen3-8B", &format!("  revision: {rev}\n")))
            .platform(PLATFORM)
            .objects()
    };
    let (old, new) = (render(REVISION), render("0e9e39f249a16976918f6564b8830bc894c89659"));
    let job = |o: &[Object]| find(o, "Job", "")["metadata"]["name"].as_str().unwrap().to_string();
    assert_ne!(job(&old), job(&new));
    let template = |o: &[Object]| find(o, "Deployment", "qwen")["spec"]["template"].clone();
    assert_ne!(template(&old), template(&new), "the pod template changes, so the pods roll");

    // `isvc diff` says so.
    let test = |rev: &str| {
        Test::new()
            .file("services/qwen.yaml", service("qwen", "Qwen/Qwen3-8B", &format!("  revision: {rev}\n")))
            .platform(PLATFORM)
    };
    let first = test(REVISION).cli(&["render", "services", "--platform", "platform.yaml", "--out", "out"]);
    assert_eq!(first.code(), Some(0), "{}", first.stderr());
    let changed = "0e9e39f249a16976918f6564b8830bc894c89659";
    std::fs::write(
        first.path("services/qwen.yaml"),
        service("qwen", "Qwen/Qwen3-8B", &format!("  revision: {changed}\n")),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_isvc"))
        .current_dir(first.dir.path())
        .args(["diff", "services", "--platform", "platform.yaml", "--out", "out", "--color", "never"])
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(changed), "{text}");
    assert!(text.contains(&job(&old)) && text.contains(&job(&test(changed).objects())), "{text}");
}

#[test]
fn profiles_set_the_resource_nodes_and_tolerations() {
    let small = service("small", "Qwen/Qwen3-8B", "  accelerator: mig-3g\n");
    let big = service("big", "meta-llama/Llama-3.3-70B-Instruct", "  gpusPerReplica: 4\n  accelerator: h100\n");
    let default = service("plain", "Qwen/Qwen3-0.6B", "");
    let objects = Test::new().service(format!("{small}---\n{big}---\n{default}")).platform(PLATFORM).objects();
    let pod = |name: &str| find(&objects, "Deployment", name)["spec"]["template"]["spec"].clone();
    let small = pod("small");
    let r = &small["containers"][0]["resources"];
    assert_eq!(r["requests"]["nvidia.com/mig-3g.40gb"], "1");
    assert_eq!(r["limits"]["nvidia.com/mig-3g.40gb"], "1");
    assert!(r["limits"].get("nvidia.com/gpu").is_none());
    assert_eq!(small["nodeSelector"]["nvidia.com/mig.config"], "all-3g.40gb");
    let big = pod("big");
    assert_eq!(big["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "4");
    assert_eq!(big["nodeSelector"]["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
    assert_eq!(big["tolerations"][0]["key"], "nvidia.com/gpu");
    // The first profile is the default.
    assert_eq!(pod("plain")["nodeSelector"]["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
}

#[test]
fn an_unknown_accelerator_is_refused_at_its_line_with_a_suggestion() {
    let svc = service("small", "Qwen/Qwen3-8B", "  accelerator: mig-3\n");
    let err = Test::new().file("services/small.yaml", svc).platform(PLATFORM).compile().unwrap_err().render(false);
    assert!(err.contains("error: unknown accelerator \"mig-3\""), "{err}");
    assert!(err.contains("= help: did you mean \"mig-3g\"? The platform declares h100, mig-3g"), "{err}");
    assert!(err.contains("services/small.yaml:7:16"), "{err}");
    // Without profiles, naming one is an error too.
    let svc = service("small", "Qwen/Qwen3-8B", "  accelerator: h100\n");
    let err = Test::new().service(svc).compile().unwrap_err().render(false);
    assert!(err.contains("the platform declares no accelerators"), "{err}");
}

#[test]
fn images_come_from_allowed_repositories() {
    let ok = service("a", "Qwen/Qwen3-8B", "  image: registry.example.com/ml/vllm:v0.11.1\n");
    let objects = Test::new().service(ok).platform(PLATFORM).objects();
    let pod = &find(&objects, "Deployment", "a")["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["image"], "registry.example.com/ml/vllm:v0.11.1");
    assert_eq!(pod["initContainers"][0]["image"], "registry.example.com/ml/vllm:v0.11.1");
    assert_eq!(
        find(&objects, "Job", "")["spec"]["template"]["spec"]["initContainers"][0]["image"],
        "registry.example.com/ml/vllm:v0.11.1"
    );
    let bad = service("a", "Qwen/Qwen3-8B", "  image: docker.io/someone/vllm:latest\n");
    let err = Test::new().file("services/a.yaml", bad).platform(PLATFORM).compile().unwrap_err().render(false);
    assert!(err.contains("image \"docker.io/someone/vllm:latest\" is not from an allowed repository (its repository is docker.io/someone/vllm)"), "{err}");
    assert!(err.contains("= help: use an image of vllm/vllm-openai, registry.example.com/ml/"), "{err}");
    assert!(err.contains("services/a.yaml:7:10"), "{err}");
}

#[test]
fn the_model_cache_example_passes_the_quota_free_checks() {
    // Job pods run in a vLLM image but download; the server rules leave them alone.
    let f = Test::new()
        .service(service("q", "Qwen/Qwen3-8B", &format!("  revision: {REVISION}\n")))
        .platform(PLATFORM)
        .examine()
        .unwrap()
        .findings;
    assert!(
        f.iter().all(|f| !f.object.to_string().starts_with("Job")),
        "{:?}",
        f.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
}

const KUEUE_PLATFORM: &str = "apiVersion: ai.example.com/v1alpha1
kind: Platform
accelerators:
  - name: h100
    resource: nvidia.com/gpu
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
    kueueFlavor: h100
  - name: mig-3g
    resource: nvidia.com/mig-3g.40gb
    nodeSelector: {nvidia.com/mig.config: all-3g.40gb}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    kueueFlavor: a100-mig
modelCache: {size: 200Gi}
tenants:
  - name: team-a
    namespaces: [ml]
    quota: {requests.nvidia.com/mig-3g.40gb: '3', requests.nvidia.com/gpu: '8', requests.cpu: '200', requests.memory: 2000Gi}
    queues:
      - {name: online, priority: online, nominalQuota: {cpu: '200', memory: 2000Gi, nvidia.com/gpu: '8', nvidia.com/mig-3g.40gb: '3'}}
";

#[test]
fn kueue_gives_each_profile_its_flavor_and_quotas_count_the_slices() {
    let svc = service("small", "Qwen/Qwen3-8B", "  accelerator: mig-3g\n");
    let objects = Test::new().service(svc.clone()).platform(KUEUE_PLATFORM).objects();
    let mig = find(&objects, "ResourceFlavor", "a100-mig");
    assert_eq!(mig["spec"]["nodeLabels"]["nvidia.com/mig.config"], "all-3g.40gb");
    assert_eq!(mig["spec"]["tolerations"][0]["key"], "nvidia.com/gpu");
    find(&objects, "ResourceFlavor", "h100");
    let groups = &find(&objects, "ClusterQueue", "team-a-online")["spec"]["resourceGroups"];
    let covered: Vec<(Vec<&str>, &str)> = groups
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (strs(&g["coveredResources"]), g["flavors"][0]["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        covered,
        [
            (vec!["cpu", "memory"], "default-flavor"),
            (vec!["nvidia.com/mig-3g.40gb"], "a100-mig"),
            (vec!["nvidia.com/gpu"], "h100"),
        ]
    );
    // One replica may grow to three slices (the autoscaler's maximum): it fits
    // the quota of three; three replicas do not.
    let three = svc.replace("replicas: 1", "replicas: 3");
    let err = Test::new().service(three).platform(KUEUE_PLATFORM).compile();
    let text = match err {
        Err(d) => d.render(false),
        Ok(c) => c.warnings.render(false),
    };
    assert!(text.contains("exceeded quota: team-a, requested: requests.nvidia.com/mig-3g.40gb=9"), "{text}");
    assert!(text.contains("can admit at most nvidia.com/mig-3g.40gb=3"), "{text}");
}

#[test]
fn the_claims_count_against_a_storage_quota() {
    let platform = "apiVersion: ai.example.com/v1alpha1
kind: Platform
modelCache: {size: 500Gi}
tenants:
  - name: team-a
    namespaces: [ml]
    quota: {requests.storage: 100Gi, requests.nvidia.com/gpu: '8'}
";
    let svc = service("q", "Qwen/Qwen3-8B", &format!("  revision: {REVISION}\n"));
    let err = Test::new().service(svc).platform(platform).compile().unwrap_err().render(false);
    assert!(err.contains("requested: requests.storage=500Gi"), "{err}");
}

#[test]
fn multi_node_workers_load_from_the_cache_too() {
    let svc = service(
        "huge",
        "meta-llama/Llama-3.1-405B-Instruct-FP8",
        &format!("  gpusPerReplica: 16\n  nodesPerReplica: 2\n  revision: {REVISION}\n"),
    );
    let objects = Test::new().service(svc).platform(PLATFORM).objects();
    let lws = find(&objects, "LeaderWorkerSet", "huge");
    for which in ["leaderTemplate", "workerTemplate"] {
        let pod = &lws["spec"]["leaderWorkerTemplate"][which]["spec"];
        let c = &pod["containers"][0];
        assert_eq!(env(c, "HF_HUB_OFFLINE"), Some("1"), "{which}");
        assert!(
            c["volumeMounts"].as_array().unwrap().iter().any(|m| m["name"] == "model-cache" && m["readOnly"] == true),
            "{which}"
        );
        assert_eq!(pod["initContainers"][0]["name"], "wait-for-model", "{which}");
    }
}

#[test]
fn the_quota_table_counts_the_download_jobs_and_the_claim() {
    let platform = "apiVersion: ai.example.com/v1alpha1
kind: Platform
modelCache: {size: 300Gi}
accelerators:
  - {name: mig-3g, resource: nvidia.com/mig-3g.40gb}
tenants:
  - name: team-a
    quota: {requests.nvidia.com/mig-3g.40gb: '8', requests.cpu: '100', requests.storage: 1Ti, count/jobs.batch: '4'}
";
    let svc = service("chat", "Qwen/Qwen3-8B", &format!("  revision: {REVISION}\n"))
        .replace("namespace: ml", "namespace: team-a");
    let run = Test::new().file("services/chat.yaml", svc).platform(platform).cli(&[
        "render",
        "services",
        "--platform",
        "platform.yaml",
        "--out",
        "out",
    ]);
    let err = run.stderr();
    assert_eq!(run.code(), Some(0), "{err}");
    let row = |key: &str| err.lines().find(|l| l.starts_with(key)).map(|l| l.split_whitespace().collect::<Vec<_>>());
    assert_eq!(row("count/jobs.batch"), Some(vec!["count/jobs.batch", "1", "1", "4"]), "{err}");
    // 4 CPUs per GPU for the server (one replica, three at the HPA maximum) and 1 for the download.
    assert_eq!(row("requests.cpu"), Some(vec!["requests.cpu", "5", "13", "100"]), "{err}");
    assert_eq!(
        row("requests.nvidia.com/mig-3g.40gb"),
        Some(vec!["requests.nvidia.com/mig-3g.40gb", "1", "3", "8"]),
        "{err}"
    );
    assert_eq!(row("requests.storage"), Some(vec!["requests.storage", "300Gi", "300Gi", "1Ti"]), "{err}");
}

#[test]
fn adapters_from_the_hub_are_downloaded_with_the_model() {
    let svc = service(
        "lora",
        "Qwen/Qwen3-8B",
        &format!(
            "  revision: {REVISION}\n  adapters:\n    - {{name: sql, source: org/sql-lora}}\n    - {{name: local, source: /adapters/x}}\n"
        ),
    );
    let objects = Test::new().service(svc).platform(PLATFORM).objects();
    let job = &find(&objects, "Job", "")["spec"]["template"]["spec"];
    let downloads: Vec<Vec<&str>> =
        job["initContainers"].as_array().unwrap().iter().map(|c| strs(&c["args"])).collect();
    assert_eq!(
        downloads,
        [
            vec![
                "download",
                "Qwen/Qwen3-8B",
                "--revision",
                REVISION,
                "--cache-dir",
                "/home/vllm/.cache/huggingface/hub"
            ],
            vec!["download", "org/sql-lora", "--cache-dir", "/home/vllm/.cache/huggingface/hub"],
        ],
        "the adapter given as a path is not downloaded"
    );
    let marker = env(&job["containers"][0], "ISVC_MODEL_MARKER").unwrap();
    assert!(marker.contains("+adapters-"), "{marker}");
    let wait = &find(&objects, "Deployment", "lora")["spec"]["template"]["spec"]["initContainers"][0];
    assert_eq!(env(wait, "ISVC_MODEL_MARKER"), Some(marker));
}

#[test]
fn an_image_per_model_replaces_the_claim_and_the_download() {
    let platform = PLATFORM.replace(
        "modelCache:\n  storageClassName: nfs-rwx\n  size: 800Gi\n",
        "modelCache:\n  image: {reference: \"registry.example.com/models/{model}:{revision}\"}\n",
    );
    let svc = service("qwen", "Qwen/Qwen3-8B", "  revision: refs/pr/7\n");
    let test = Test::new().service(svc).platform(platform);
    let objects = test.objects();
    assert!(!objects.iter().any(|o| o.id.kind == "Job" || o.id.kind == "PersistentVolumeClaim"));
    let pod = &find(&objects, "Deployment", "qwen")["spec"]["template"]["spec"];
    let volume = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == "model-cache").unwrap();
    assert_eq!(
        volume["image"],
        serde_json::json!({"reference": "registry.example.com/models/qwen/qwen3-8b:refs-pr-7", "pullPolicy": "IfNotPresent"})
    );
    let vllm = &pod["containers"][0];
    assert_eq!(env(vllm, "HF_HUB_OFFLINE"), Some("1"));
    let mount = vllm["volumeMounts"].as_array().unwrap().iter().find(|m| m["name"] == "model-cache").unwrap();
    assert_eq!(
        (mount["mountPath"].as_str(), mount["readOnly"].as_bool()),
        (Some("/home/vllm/.cache/huggingface/hub"), Some(true))
    );
    assert!(pod.get("initContainers").is_none(), "the kubelet pulls the image before the containers start");
    let findings = test.examine().unwrap().findings;
    assert!(findings.is_empty(), "{:?}", findings.iter().map(|f| &f.message).collect::<Vec<_>>());
}

#[test]
fn the_cache_needs_a_size_or_an_image() {
    for (cache, message) in [
        (
            "modelCache: {storageClassName: nfs}\n",
            "modelCache needs `size` (a claim filled by download Jobs) or `image` (an image per model)",
        ),
        (
            "modelCache: {size: 1Ti, image: {reference: \"r/{model}:x\"}}\n",
            "modelCache gives both `size` (a claim) and `image` (an image per model)",
        ),
        (
            "modelCache: {image: {reference: \"registry.example.com/llama:1\"}}\n",
            "modelCache.image.reference \"registry.example.com/llama:1\" does not name the model",
        ),
    ] {
        let platform = format!("apiVersion: ai.example.com/v1alpha1\nkind: Platform\n{cache}");
        let err = Test::new().service(crate::harness::QWEN3).platform(platform).compile().unwrap_err().render(false);
        assert!(err.contains(message), "{err}");
        assert!(err.contains("platform.yaml:3:"), "{err}");
    }
}

#[test]
fn a_clusters_registry_mirror_applies_to_service_and_cache_images() {
    let platform = format!("{PLATFORM}clusters:\n  - {{name: eu, imageRegistry: mirror.eu.example.com}}\n")
        .replace("size: 800Gi\n", "size: 800Gi\n  downloaderImage: registry.example.com/ml/hf:1.0\n");
    let svc = service("a", "Qwen/Qwen3-8B", "  image: registry.example.com/ml/vllm:v0.11.1\n");
    let objects = Test::new().service(svc).platform(platform).objects();
    let pod = &find(&objects, "Deployment", "a")["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["image"], "mirror.eu.example.com/ml/vllm:v0.11.1");
    assert_eq!(pod["initContainers"][0]["image"], "mirror.eu.example.com/ml/vllm:v0.11.1");
    assert_eq!(
        find(&objects, "Job", "")["spec"]["template"]["spec"]["initContainers"][0]["image"],
        "mirror.eu.example.com/ml/hf:1.0"
    );
}

#[test]
fn the_checks_that_read_vllm_flags_work_with_a_services_own_image() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ndefaults:\n  resources: {memoryPerGpu: 8Gi, shmSizePerGpu: 1Gi}\n";
    let svc = service(
        "chat",
        "Qwen/Qwen3-32B",
        "  image: registry.example.com/ml/server:2025-01\n  args: [--tensor-parallel-size=1]\n",
    );
    let err = Test::new().service(svc).platform(platform).compile().unwrap_err().render(false);
    // The owned-argument check reads the command line, whatever the image.
    assert!(err.contains("--tensor-parallel-size"), "{err}");
    let svc = service("chat", "Qwen/Qwen3-32B", "  image: registry.example.com/ml/server:2025-01\n");
    let findings = Test::new().service(svc).platform(platform).examine().unwrap().findings;
    let ids: Vec<&str> = findings.iter().map(|f| f.rule.id).collect();
    assert!(ids.contains(&"ISVC015"), "the memory rule reads --model and the parallel sizes: {ids:?}");
}
