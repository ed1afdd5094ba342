//! A base model with LoRA adapters, queue-length autoscaling, gateway
//! registration, metrics and multi-node replicas: what each renders, what
//! changes when the adapter list does, the checks and their exact messages,
//! and both versions of the spec rendering the same objects.

use std::path::Path;

use assert_cmd::Command;
use isvc::model::objects::Object;
use serde_json::{Value, json};

use crate::harness::Test;

/// A platform with everything on: KEDA, the Gateway with the Inference
/// Extension, ServiceMonitors.
const PLATFORM: &str = "apiVersion: ai.example.com/v1alpha1
kind: Platform
defaults:
  lora: {maxLoraRank: 32}
gateway:
  parentRef: {name: inference-gateway, namespace: gateway-system}
  inferenceExtension: true
keda:
  serverAddress: http://prometheus.monitoring.svc:9090
monitoring:
  labels: {release: prometheus}
";

const LLAMA: &str = "apiVersion: ai.example.com/v1alpha2
kind: InferenceService
metadata: {name: llama, namespace: llm}
spec:
  baseModel: meta-llama/Llama-3.1-8B-Instruct
  adapters:
    - {name: sql, source: org/sql-lora}
    - {name: chat, source: /adapters/chat}
  autoscaling: {min: 2, max: 8, targetQueueLength: 4}
  gateway: {route: llm.example.com/llama, priority: 5}
";

fn compile(platform: &str, services: &str) -> Result<Vec<Object>, String> {
    Test::new().service(services).platform(platform).compile().map(|c| c.objects).map_err(|d| d.render(false))
}

fn find<'a>(objects: &'a [Object], kind: &str, name: &str) -> Option<&'a Value> {
    objects.iter().find(|o| o.id.kind == kind && o.id.name == name).map(|o| &o.value)
}

fn kinds(objects: &[Object], name: &str) -> Vec<String> {
    objects.iter().filter(|o| o.owner.as_deref() == Some(name)).map(|o| o.id.kind.clone()).collect()
}

#[test]
fn adapters_are_a_config_map_mounted_into_the_server() {
    let objects = compile(PLATFORM, LLAMA).unwrap();
    assert_eq!(
        kinds(&objects, "llama"),
        [
            "ConfigMap",
            "ConfigMap",
            "Role",
            "RoleBinding",
            "ServiceAccount",
            "Service",
            "Service",
            "Deployment",
            "Deployment",
            "ScaledObject",
            "PodDisruptionBudget",
            "InferencePool",
            "InferenceObjective",
            "HTTPRoute",
            "ServiceMonitor",
            "ServiceMonitor"
        ]
    );
    let cm = find(&objects, "ConfigMap", "llama").unwrap();
    assert_eq!(
        cm["data"]["lora.yaml"],
        "# vLLM options for the LoRA adapters of llm/llama, read at startup (vllm serve --config).\n\
         enable-lora: true\nmax-loras: 2\nmax-cpu-loras: 2\nmax-lora-rank: 32\nlora-modules:\n  - \"sql=org/sql-lora\"\n  - \"chat=/adapters/chat\"\n"
    );
    let pod = &find(&objects, "Deployment", "llama").unwrap()["spec"]["template"];
    let container = &pod["spec"]["containers"][0];
    let args: Vec<&str> = container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(args[args.len() - 2..], ["--config", "/etc/isvc/adapters/lora.yaml"]);
    assert_eq!(
        container["volumeMounts"][4],
        json!({"name": "adapters", "mountPath": "/etc/isvc/adapters", "readOnly": true})
    );
    assert_eq!(pod["spec"]["volumes"][4], json!({"name": "adapters", "configMap": {"name": "llama"}}));
    assert!(pod["metadata"]["annotations"]["ai.example.com/adapters-checksum"].as_str().unwrap().len() == 16);
}

/// Every leaf path where `a` and `b` differ.
fn changed(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                match (x.get(k), y.get(k)) {
                    (Some(v), Some(w)) => changed(v, w, &format!("{path}.{k}"), out),
                    _ => out.push(format!("{path}.{k}")),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                changed(v, w, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => out.push(path.to_string()),
        _ => {}
    }
}

#[test]
fn changing_the_adapter_list_changes_only_the_config_map_and_the_checksum() {
    let before = compile(PLATFORM, LLAMA).unwrap();
    let after = compile(PLATFORM, &LLAMA.replace("org/sql-lora", "org/sql-lora-v2")).unwrap();
    assert_eq!(before.len(), after.len());
    let mut diffs = Vec::new();
    for (a, b) in before.iter().zip(&after) {
        assert_eq!(a.id, b.id);
        let mut paths = Vec::new();
        changed(&a.value, &b.value, "", &mut paths);
        diffs.extend(paths.into_iter().map(|p| format!("{}{p}", a.id.kind)));
    }
    assert_eq!(
        diffs,
        ["ConfigMap.data.lora.yaml", "Deployment.spec.template.metadata.annotations.ai.example.com/adapters-checksum"]
    );
}

#[test]
fn keda_scales_services_with_autoscaling_and_never_alongside_an_hpa() {
    let fixed = "---\napiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: fixed, namespace: llm}\nspec: {baseModel: m, replicas: 4}\n";
    let objects = compile(PLATFORM, &format!("{LLAMA}{fixed}")).unwrap();
    let so = find(&objects, "ScaledObject", "llama").unwrap();
    assert!(find(&objects, "HorizontalPodAutoscaler", "llama").is_none(), "never both on one Deployment");
    assert_eq!(so["spec"]["scaleTargetRef"], json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "llama"}));
    assert_eq!((&so["spec"]["minReplicaCount"], &so["spec"]["maxReplicaCount"]), (&json!(2), &json!(8)));
    let trigger = &so["spec"]["triggers"][0];
    assert_eq!(trigger["type"], "prometheus");
    assert_eq!(
        trigger["metadata"],
        json!({
            "serverAddress": "http://prometheus.monitoring.svc:9090",
            // llama's gateway.priority turns its picker's flow control on,
            // so requests wait in the picker: it scales on the picker's queue.
            "query": "sum(llm_d_epp_flow_control_queue_size{namespace=\"llm\",service=\"llama-epp\"})",
            "threshold": "4",
        })
    );
    // The Deployment starts at the minimum; after that KEDA's HPA owns the count.
    assert_eq!(find(&objects, "Deployment", "llama").unwrap()["spec"]["replicas"], json!(2));
    // A fixed replica count keeps the reference HPA, KEDA or not.
    let hpa = find(&objects, "HorizontalPodAutoscaler", "fixed").unwrap();
    assert_eq!((&hpa["spec"]["minReplicas"], &hpa["spec"]["maxReplicas"]), (&json!(2), &json!(12)));
    assert!(find(&objects, "ScaledObject", "fixed").is_none());

    // Without KEDA, the HPA scales on the same bounds and target.
    let plain = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\n";
    let objects =
        compile(plain, &LLAMA.replace("  gateway: {route: llm.example.com/llama, priority: 5}\n", "")).unwrap();
    assert!(find(&objects, "ScaledObject", "llama").is_none());
    let hpa = find(&objects, "HorizontalPodAutoscaler", "llama").unwrap();
    assert_eq!((&hpa["spec"]["minReplicas"], &hpa["spec"]["maxReplicas"]), (&json!(2), &json!(8)));
    assert_eq!(hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"], "4");
}

#[test]
fn the_gateway_routes_to_the_inference_pool_with_the_extension_and_to_the_service_without() {
    let objects = compile(PLATFORM, LLAMA).unwrap();
    let route = &find(&objects, "HTTPRoute", "llama").unwrap()["spec"];
    assert_eq!(route["parentRefs"], json!([{"name": "inference-gateway", "namespace": "gateway-system"}]));
    assert_eq!(route["hostnames"], json!(["llm.example.com"]));
    let rule = &route["rules"][0];
    assert_eq!(rule["matches"], json!([{"path": {"type": "PathPrefix", "value": "/llama"}}]));
    assert_eq!(
        rule["filters"][0]["urlRewrite"]["path"],
        json!({"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"})
    );
    assert_eq!(
        rule["backendRefs"],
        json!([{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llama"}])
    );
    let pool = &find(&objects, "InferencePool", "llama").unwrap()["spec"];
    let pod_labels = &find(&objects, "Deployment", "llama").unwrap()["spec"]["template"]["metadata"]["labels"];
    for (k, v) in pool["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(&pod_labels[k], v, "the pool selects the serving pods");
    }
    assert_eq!(pool["targetPorts"], json!([{"number": 8000}]));
    assert_eq!(pool["endpointPickerRef"]["name"], "llama-epp");
    let objective = find(&objects, "InferenceObjective", "llama").unwrap();
    assert_eq!(objective["apiVersion"], "llm-d.ai/v1alpha2");
    assert_eq!(
        objective["spec"],
        json!({"poolRef": {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llama"}, "priority": 5})
    );
    let monitor = find(&objects, "ServiceMonitor", "llama").unwrap();
    assert_eq!(monitor["metadata"]["labels"]["release"], "prometheus");
    assert_eq!(monitor["spec"]["endpoints"], json!([{"port": "http", "path": "/metrics"}]));

    let no_extension = PLATFORM.replace("  inferenceExtension: true\n", "");
    let objects = compile(&no_extension, &LLAMA.replace(", priority: 5", "")).unwrap();
    assert!(find(&objects, "InferencePool", "llama").is_none());
    let route = &find(&objects, "HTTPRoute", "llama").unwrap()["spec"];
    assert_eq!(
        route["rules"][0]["backendRefs"],
        json!([{"group": "", "kind": "Service", "name": "llama", "port": 8000}])
    );
}

#[test]
fn a_replica_larger_than_a_node_is_a_leader_worker_set_group() {
    let big = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: big}\nspec: {baseModel: m, replicas: 2, gpusPerReplica: 16, nodesPerReplica: 2}\n";
    let objects = compile("apiVersion: ai.example.com/v1alpha1\nkind: Platform\n", big).unwrap();
    assert_eq!(kinds(&objects, "big"), ["Service", "LeaderWorkerSet", "HorizontalPodAutoscaler"]);
    let lws = &find(&objects, "LeaderWorkerSet", "big").unwrap()["spec"]["leaderWorkerTemplate"];
    assert_eq!(lws["size"], 2);
    let leader = &lws["leaderTemplate"]["spec"]["containers"][0];
    assert_eq!(leader["resources"]["limits"]["nvidia.com/gpu"], "8", "each node gets half the GPUs");
    let args: Vec<&str> = leader["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert!(args.windows(2).any(|w| w == ["--tensor-parallel-size", "8"]), "{args:?}");
    assert!(args.windows(2).any(|w| w == ["--pipeline-parallel-size", "2"]), "{args:?}");
    assert_eq!(leader["command"][3], "vllm", "arguments reach the server as \"$@\", never through the shell text");
    assert_eq!(lws["workerTemplate"]["metadata"]["labels"]["app.kubernetes.io/component"], "inference-worker");
    let service = find(&objects, "Service", "big").unwrap();
    assert_eq!(service["spec"]["selector"]["app.kubernetes.io/component"], "inference-server", "only leaders serve");
    let hpa = find(&objects, "HorizontalPodAutoscaler", "big").unwrap();
    assert_eq!(hpa["spec"]["scaleTargetRef"]["kind"], "LeaderWorkerSet");
}

fn isvc(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("isvc").unwrap();
    c.current_dir(dir).arg("--color").arg("never");
    c
}

/// Renders `files` (name, text) under `services/` with `platform`, and
/// returns the exit code and stderr.
fn render_err(platform: &str, files: &[(&str, &str)]) -> (i32, String) {
    render_with_templates(platform, files, &[])
}

/// As [`render_err`], with template overrides (name, text) in `templates/`.
fn render_with_templates(platform: &str, files: &[(&str, &str)], templates: &[(&str, &str)]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    for (sub, entries) in [("services", files), ("templates", templates)] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        for (name, text) in entries {
            std::fs::write(dir.path().join(sub).join(name), text).unwrap();
        }
    }
    std::fs::write(dir.path().join("platform.yaml"), platform).unwrap();
    let out = isvc(dir.path())
        .args(["render", "services", "--platform", "platform.yaml", "--templates", "templates", "--stdout"])
        .output()
        .unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn checks_point_at_the_field_with_exact_messages() {
    let spec = |body: &str| {
        format!(
            "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: a}}\nspec:\n  baseModel: llama\n{body}"
        )
    };
    let cases = [
        (
            "  replicas: 1\n  adapters:\n    - {name: llama, source: org/x}\n",
            "error: adapter \"llama\" has the name of the base model\n  --> services/a.yaml:8:14\n",
        ),
        (
            "  replicas: 1\n  adapters:\n    - {name: sql, source: org/x}\n    - {name: sql, source: org/y}\n",
            "error: adapter \"sql\" is listed twice (first as adapters[0])\n  --> services/a.yaml:9:14\n",
        ),
        (
            "  autoscaling: {min: 1, max: 4, targetQueueLength: 0}\n",
            "error: \"spec.autoscaling.targetQueueLength\" must be at least 1, found 0\n  --> services/a.yaml:6:52\n",
        ),
        (
            "  autoscaling: {min: 5, max: 2, targetQueueLength: 3}\n",
            "error: autoscaling.min (5) is above autoscaling.max (2)\n  --> services/a.yaml:6:22\n",
        ),
        (
            "  replicas: 1\n  autoscaling: {min: 1, max: 2, targetQueueLength: 3}\n",
            "error: give spec.replicas or spec.autoscaling, not both\n  --> services/a.yaml:6:13\n",
        ),
        (
            "  replicas: 1\n  gpusPerReplica: 12\n  nodesPerReplica: 5\n",
            "error: gpusPerReplica (12) does not split evenly over nodesPerReplica (5)\n  --> services/a.yaml:7:19\n",
        ),
        (
            "  replicas: 1\n  gateway: {route: /a//b}\n",
            "error: invalid route \"/a//b\": path \"/a//b\" must not contain \"//\"\n  --> services/a.yaml:7:20\n",
        ),
    ];
    for (body, expected) in cases {
        let (code, stderr) = render_err(PLATFORM, &[("a.yaml", &spec(body))]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.starts_with(expected), "expected:\n{expected}\ngot:\n{stderr}");
    }
}

#[test]
fn a_route_two_services_claim_is_an_error_naming_both_files() {
    let svc = |name: &str| {
        format!(
            "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: {name}}}\nspec:\n  baseModel: m\n  replicas: 1\n  gateway: {{route: llm.example.com/chat/}}\n"
        )
    };
    let (code, stderr) = render_err(PLATFORM, &[("a.yaml", &svc("a")), ("team-b.yaml", &svc("b"))]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with(
            "error: route \"llm.example.com/chat\" is claimed by two services: default/a in services/a.yaml and default/b in services/team-b.yaml\n  --> services/team-b.yaml:7:20\n"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("  --> services/a.yaml:7:20 (claimed here first)\n"), "{stderr}");
}

#[test]
fn gateway_fields_need_the_platform_to_provide_them() {
    let svc = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: a}\nspec:\n  baseModel: m\n  replicas: 1\n  gateway: {route: a.example.com, priority: 3}\n";
    let (_, stderr) = render_err("apiVersion: ai.example.com/v1alpha1\nkind: Platform\n", &[("a.yaml", svc)]);
    assert!(
        stderr.starts_with(
            "error: route \"a.example.com\" needs a Gateway, but the platform file has no \"gateway\" section\n"
        ),
        "{stderr}"
    );
    let (_, stderr) = render_err(&PLATFORM.replace("  inferenceExtension: true\n", ""), &[("a.yaml", svc)]);
    assert!(
        stderr.starts_with("error: gateway.priority needs the Gateway API Inference Extension, which the platform does not enable\n  --> services/a.yaml:7:45\n"),
        "{stderr}"
    );
}

#[test]
fn v1alpha1_and_v1alpha2_files_render_the_same_children() {
    let render = |text: &str| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("services")).unwrap();
        std::fs::write(dir.path().join("services/qwen3.yaml"), text).unwrap();
        std::fs::write(dir.path().join("platform.yaml"), PLATFORM).unwrap();
        let out =
            isvc(dir.path()).args(["render", "services", "--platform", "platform.yaml", "--stdout"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let v1 = render(
        "apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata: {name: qwen3, labels: {team: a}}\nspec: {model: Qwen/Qwen3-8B, replicas: 3, gpusPerReplica: 2}\n",
    );
    let v2 = render(
        "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: qwen3, labels: {team: a}}\nspec: {baseModel: Qwen/Qwen3-8B, replicas: 3, gpusPerReplica: 2}\n",
    );
    assert_eq!(v1, v2);
    assert!(v1.contains("kind: HorizontalPodAutoscaler") && v1.contains("kind: ServiceMonitor"));
}

#[test]
fn migrate_keeps_comments_and_layout() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("services")).unwrap();
    let before = "# yaml-language-server: $schema=../schemas/inferenceservice.schema.json\n\
                  # The chat model. Keep replicas at 3 until the launch.\n\
                  apiVersion: ai.example.com/v1alpha1   # migrated later\n\
                  kind: InferenceService\n\
                  metadata:\n  name: chat\n  labels: {team: a}\n\
                  spec:\n  model: 'Qwen/Qwen3-8B'     # pinned\n  replicas: 3\n\n\
                  ---\n# already current\napiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: b}\nspec: {baseModel: m, replicas: 1}\n";
    let path = dir.path().join("services/chat.yaml");
    std::fs::write(&path, before).unwrap();
    let out = isvc(dir.path()).args(["migrate", "--check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "would migrate: services/chat.yaml (1 document)\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before, "--check writes nothing");

    let out = isvc(dir.path()).arg("migrate").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let after = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        after,
        before
            .replace(
                "apiVersion: ai.example.com/v1alpha1   # migrated later",
                "apiVersion: ai.example.com/v1alpha2   # migrated later"
            )
            .replace("  model: 'Qwen/Qwen3-8B'", "  baseModel: 'Qwen/Qwen3-8B'")
    );
    let out = isvc(dir.path()).args(["migrate", "--check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "nothing left to do");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "nothing to migrate: every InferenceService is ai.example.com/v1alpha2\n"
    );

    // A file that does not load is bad input: exit 2, untouched.
    std::fs::write(
        dir.path().join("services/bad.yaml"),
        "apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata: {name: x}\nspec: {model: m}\n",
    )
    .unwrap();
    let out = isvc(dir.path()).arg("migrate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn an_overridden_template_is_checked_against_the_objective_fields() {
    let (_, builtin) = isvc::BUILTIN_TEMPLATES.iter().find(|(n, _)| *n == "inferenceobjective.yaml").unwrap();
    let template = builtin.replace("priority: {{", "prority: {{");
    let (code, stderr) =
        render_with_templates(PLATFORM, &[("llama.yaml", LLAMA)], &[("inferenceobjective.yaml", &template)]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error: rendered InferenceObjective llm/llama: unknown field `prority`"), "{stderr}");
}

#[test]
fn an_overridden_deployment_that_drops_the_adapter_mount_is_an_error() {
    // The gpu-pool example's override predates adapters: it has no volume loops.
    let template = std::fs::read_to_string("examples/gpu-pool/templates/deployment.yaml").unwrap();
    let (code, stderr) = render_with_templates(PLATFORM, &[("llama.yaml", LLAMA)], &[("deployment.yaml", &template)]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("error: Deployment llm/llama: the server does not read its adapters: no container mounts ConfigMap llama at /etc/isvc/adapters and passes --config /etc/isvc/adapters/lora.yaml (from services/llama.yaml)\n"),
        "{stderr}"
    );
}

#[test]
fn resource_overrides_replace_the_per_gpu_defaults_and_must_fit() {
    let plain = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ndefaults:\n  resources: {cpuLimitPerGpu: 8}\n";
    let svc = |resources: &str| {
        format!(
            "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: a}}\nspec: {{baseModel: m, replicas: 1, gpusPerReplica: 2, resources: {resources}}}\n"
        )
    };
    let objects = compile(plain, &svc("{cpu: 6, memory: 100Gi}")).unwrap();
    let pod = &find(&objects, "Deployment", "a").unwrap()["spec"]["template"]["spec"];
    let resources = &pod["containers"][0]["resources"];
    assert_eq!(
        resources["requests"],
        json!({"cpu": "6", "ephemeral-storage": "109Gi", "memory": "100Gi", "nvidia.com/gpu": "2"})
    );
    assert_eq!(resources["limits"], json!({"cpu": "16", "memory": "100Gi", "nvidia.com/gpu": "2"}));
    assert_eq!(pod["volumes"][0]["emptyDir"]["sizeLimit"], "8Gi", "shared memory keeps the per-GPU default");

    let err = compile(plain, &svc("{memory: 4Gi}")).unwrap_err();
    assert!(err.contains("cannot derive a: /dev/shm (8Gi) must be smaller than the pod's memory (4Gi)"), "{err}");
    let err = compile(plain, &svc("{cpu: 32}")).unwrap_err();
    assert!(
        err.contains("cannot derive a: spec.resources.cpu (32) is above the platform's CPU limit for the pod (16)"),
        "{err}"
    );
    let err = compile(plain, &svc("{cpu: 12cores}")).unwrap_err();
    assert!(err.contains("resources.cpu: \"12cores\" has an unknown suffix"), "{err}");
}
