//! Every rule of `isvc check`: a case that fires and a near miss that does
//! not, on objects rendered from real services (through the built-in or
//! overridden templates, or edited after rendering where a template could
//! produce the same), plus ResourceQuota, LimitRange and
//! PodDisruptionBudget objects built by hand. Then the per-service and
//! per-run switches, and the command line: text, JSON, SARIF, --explain,
//! and `render` refusing error-level findings.

use std::path::Path;

use assert_cmd::Command;
use isvc::base::diagnostics::Source;
use isvc::check::{self, Finding};
use isvc::model::objects::{Object, ObjectId};
use serde_json::{Value, json};

use crate::harness::Test;

fn service(name: &str, model: &str, replicas: i32, gpus: i32) -> String {
    format!(
        "apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata: {{name: {name}, namespace: ml}}\n\
         spec: {{model: {model}, replicas: {replicas}, gpusPerReplica: {gpus}}}\n"
    )
}

fn qwen3() -> String {
    service("qwen3", "Qwen/Qwen3-0.6B", 3, 1)
}

/// Renders `services` with an optional platform file and template overrides.
fn render_with(services: &str, platform: Option<&str>, overrides: &[(&str, String)]) -> Vec<Object> {
    let mut test = Test::new().file("services/test.yaml", services);
    if let Some(p) = platform {
        test = test.platform(p);
    }
    for (name, text) in overrides {
        test = test.template(name, text.clone());
    }
    test.examine().unwrap_or_else(|d| panic!("{}", d.render(false))).objects
}

fn render(services: &str) -> Vec<Object> {
    render_with(services, None, &[])
}

fn platform(defaults: &str) -> String {
    format!("apiVersion: ai.example.com/v1alpha1\nkind: Platform\ndefaults:\n{defaults}")
}

/// The built-in template `name` with `from` replaced by `to` (which must occur).
fn template(name: &str, from: &str, to: &str) -> (&'static str, String) {
    let (n, text) = isvc::BUILTIN_TEMPLATES.iter().find(|(n, _)| *n == name).unwrap();
    assert!(text.contains(from), "{from:?} is not in {name}");
    (n, text.replacen(from, to, 1))
}

/// A hand-built object of the `ml` namespace.
fn object(yaml: &str) -> Object {
    let source = Source::new("hand.yaml", yaml);
    let docs = isvc::base::yaml::parse_documents(&source, isvc::base::yaml::Limits::default()).unwrap();
    let value = docs.into_iter().flatten().next().unwrap().to_json();
    Object::new(ObjectId::of(&value).unwrap(), value).from_source(Some("tenancy.yaml"))
}

fn with(mut objects: Vec<Object>, extra: &[&str]) -> Vec<Object> {
    objects.extend(extra.iter().map(|y| object(y)));
    objects
}

fn find<'a>(objects: &'a mut [Object], kind: &str) -> &'a mut Value {
    &mut objects.iter_mut().find(|o| o.id.kind == kind).unwrap().value
}

fn container(objects: &mut [Object]) -> &mut Value {
    &mut find(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
}

fn of_rule(objects: &[Object], id: &str) -> Vec<Finding> {
    check::run(objects).into_iter().filter(|f| f.rule.id == id).collect()
}

/// Asserts that rule `id` fires, with a message containing `text`.
#[track_caller]
fn fires(objects: &[Object], id: &str, text: &str) {
    let found = of_rule(objects, id);
    assert!(
        found.iter().any(|f| f.message.contains(text)),
        "{id} should fire with {text:?}; found {:#?}",
        check::run(objects).iter().map(|f| format!("{} {}: {}", f.rule.id, f.object, f.message)).collect::<Vec<_>>()
    );
}

#[track_caller]
fn quiet(objects: &[Object], id: &str) {
    let found = of_rule(objects, id);
    assert!(found.is_empty(), "{id} should not fire: {:#?}", found.iter().map(|f| &f.message).collect::<Vec<_>>());
}

/// A platform that gives every server a Hugging Face token.
fn with_token() -> String {
    platform("  huggingFace:\n    tokenSecret: {name: hf-token, key: token}\n")
}

#[test]
fn the_built_in_templates_pass_every_rule() {
    for s in [qwen3(), service("big", "meta-llama/Llama-3.3-70B-Instruct", 2, 8), service("zero", "x/M-1B", 0, 2)] {
        let findings = check::run(&render_with(&s, Some(&with_token()), &[]));
        assert!(findings.is_empty(), "{s}\n{findings:#?}");
    }
}

#[test]
fn isvc001_selector_matches_no_pod() {
    let bad = template(
        "service.yaml",
        "selector: {{ selector }}",
        "selector: {app.kubernetes.io/name: {{ name }}, tier: gpu}",
    );
    fires(
        &render_with(&qwen3(), None, &[bad]),
        "ISVC001",
        "selector app.kubernetes.io/name=qwen3,tier=gpu matches no pod",
    );
    // A smaller selector still matches the pods.
    let subset =
        template("service.yaml", "selector: {{ selector }}", "selector: {app.kubernetes.io/instance: {{ name }}}");
    quiet(&render_with(&qwen3(), None, &[subset]), "ISVC001");
}

#[test]
fn isvc002_target_port_not_served() {
    let bad = template("service.yaml", "targetPort: {{ container.port_name }}", "targetPort: metrics");
    fires(&render_with(&qwen3(), None, &[bad]), "ISVC002", "targetPort \"metrics\" is not a port");
    // The container port's number works as well as its name.
    let number = template("service.yaml", "targetPort: {{ container.port_name }}", "targetPort: {{ container.port }}");
    quiet(&render_with(&qwen3(), None, &[number]), "ISVC002");
}

#[test]
fn isvc003_listens_on_loopback() {
    let bad = template(
        "deployment.yaml",
        "args: {{ container.args }}",
        "args: {{ container.args + [\"--host=127.0.0.1\"] }}",
    );
    fires(&render_with(&qwen3(), None, &[bad]), "ISVC003", "listens on 127.0.0.1");
    let mut objects = render(&qwen3());
    container(&mut objects)["args"] = json!(["--model", "m", "--host", "localhost"]);
    fires(&objects, "ISVC003", "listens on localhost");
    // A model id that happens to follow --host is not an address.
    let mut objects = render(&qwen3());
    container(&mut objects)["args"] = json!(["--host", "0.0.0.0", "--served-model-name", "localhost"]);
    quiet(&objects, "ISVC003");
}

#[test]
fn isvc004_gpu_request_not_limit() {
    let mut objects = render(&qwen3());
    container(&mut objects)["resources"]["limits"]["nvidia.com/gpu"] = json!("2");
    fires(&objects, "ISVC004", "requests nvidia.com/gpu=1 but limits it to 2");
    let mut objects = render(&qwen3());
    container(&mut objects)["resources"]["limits"].as_object_mut().unwrap().remove("nvidia.com/gpu");
    fires(&objects, "ISVC004", "limits it to nothing");
    // 1 and "1" are the same quantity; a limit alone is fine (the request follows it).
    let mut objects = render(&qwen3());
    container(&mut objects)["resources"]["limits"]["nvidia.com/gpu"] = json!(1);
    quiet(&objects, "ISVC004");
    container(&mut objects)["resources"]["requests"].as_object_mut().unwrap().remove("nvidia.com/gpu");
    quiet(&objects, "ISVC004");
}

#[test]
fn isvc005_autoscaler_target_missing_or_bounds_reversed() {
    let bad = template("horizontalpodautoscaler.yaml", "name: {{ name }}\n  minReplicas", "name: other\n  minReplicas");
    fires(&render_with(&qwen3(), None, &[bad]), "ISVC005", "scaleTargetRef Deployment/other is not rendered");
    let mut objects = render(&qwen3());
    find(&mut objects, "HorizontalPodAutoscaler")["spec"]["minReplicas"] = json!(10);
    fires(&objects, "ISVC005", "minReplicas 10 is above maxReplicas 9");
    let mut objects = render(&qwen3());
    find(&mut objects, "HorizontalPodAutoscaler")["spec"]["minReplicas"] = json!(9);
    quiet(&objects, "ISVC005");
}

#[test]
fn isvc006_workload_selector_must_match_its_template() {
    let mut objects = render(&qwen3());
    find(&mut objects, "Deployment")["spec"]["selector"] = json!({"matchLabels": {"app.kubernetes.io/name": "other"}});
    fires(&objects, "ISVC006", "does not match the pod template's labels");
    find(&mut objects, "Deployment")["spec"]["selector"] = json!({"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["qwen3", "other"]}]});
    quiet(&objects, "ISVC006");
}

#[test]
fn isvc007_server_port_not_declared() {
    let bad = template(
        "deployment.yaml",
        "args: {{ container.args }}",
        "args: {{ container.args + [\"--port\", \"9000\"] }}",
    );
    fires(&render_with(&qwen3(), None, &[bad]), "ISVC007", "listens on port 9000 but declares containerPort 8000");
    // vLLM's default port is 8000, so leaving --port out is fine with containerPort 8000...
    let mut objects = render(&qwen3());
    container(&mut objects)["args"] = json!(["--model", "Qwen/Qwen3-0.6B"]);
    quiet(&objects, "ISVC007");
    // ...and changing the platform's port moves both.
    quiet(&render_with(&qwen3(), Some(&platform("  port: 9000\n")), &[]), "ISVC007");
}

#[test]
fn isvc008_liveness_without_startup_probe() {
    let mut objects = render(&qwen3());
    container(&mut objects).as_object_mut().unwrap().remove("startupProbe");
    fires(&objects, "ISVC008", "restarts it after 60s without an answer, and no startup probe");
    // Without a liveness probe nothing kills a loading server.
    container(&mut objects).as_object_mut().unwrap().remove("livenessProbe");
    quiet(&objects, "ISVC008");
    // A sidecar with a liveness probe only is not a model server.
    let mut objects = render(&qwen3());
    let sidecar = json!({"name": "metrics", "image": "prom/statsd-exporter:v0.28.0", "livenessProbe": {"httpGet": {"path": "/", "port": 9102}}});
    find(&mut objects, "Deployment")["spec"]["template"]["spec"]["containers"].as_array_mut().unwrap().push(sidecar);
    quiet(&objects, "ISVC008");
}

#[test]
fn isvc009_startup_budget_too_short_for_the_model() {
    let short = platform("  probes: {startupTimeoutSeconds: 900}\n");
    let big = service("llama", "meta-llama/Llama-3.3-70B-Instruct", 1, 4);
    fires(
        &render_with(&big, Some(&short), &[]),
        "ISVC009",
        "may take 900s to start; loading meta-llama/Llama-3.3-70B-Instruct (70B parameters",
    );
    // 15 minutes are plenty for 0.6B parameters...
    quiet(&render_with(&qwen3(), Some(&short), &[]), "ISVC009");
    // ...and for the 70B model in FP8 they are not, at 1 byte a parameter (1000s).
    let fp8 = service("llama", "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", 1, 4);
    fires(&render_with(&fp8, Some(&short), &[]), "ISVC009", "needs about 1000s");
    let enough = platform("  probes: {startupTimeoutSeconds: 1000}\n");
    quiet(&render_with(&fp8, Some(&enough), &[]), "ISVC009");
}

#[test]
fn isvc010_liveness_stricter_than_startup() {
    let mut objects = render(&qwen3());
    container(&mut objects)["livenessProbe"]["httpGet"]["path"] = json!("/v1/models");
    fires(&objects, "ISVC010", "the liveness probe checks httpGet");
    let mut objects = render(&qwen3());
    container(&mut objects)["livenessProbe"]["timeoutSeconds"] = json!(1);
    fires(&objects, "ISVC010", "allows 1s per request, the startup probe 5s");
    // More patience in liveness, and the scheme left to its default, are fine.
    let mut objects = render(&qwen3());
    container(&mut objects)["livenessProbe"]["failureThreshold"] = json!(12);
    container(&mut objects)["livenessProbe"]["httpGet"].as_object_mut().unwrap().remove("scheme");
    quiet(&objects, "ISVC010");
}

#[test]
fn isvc011_probe_not_served() {
    let bad = platform("  probes: {path: /ready}\n");
    fires(&render_with(&qwen3(), Some(&bad), &[]), "ISVC011", "readinessProbe path /ready is not served by vLLM");
    let mut objects = render(&qwen3());
    container(&mut objects)["readinessProbe"]["httpGet"]["port"] = json!("metrics");
    fires(&objects, "ISVC011", "readinessProbe port metrics is not a port the container serves");
    let mut objects = render(&qwen3());
    container(&mut objects)["readinessProbe"]["httpGet"]["port"] = json!(8080);
    fires(&objects, "ISVC011", "readinessProbe port 8080");
    // Another endpoint vLLM serves, and the port by number, are fine.
    let mut objects = render(&qwen3());
    container(&mut objects)["readinessProbe"]["httpGet"] = json!({"path": "/v1/models", "port": 8000});
    quiet(&objects, "ISVC011");
    // Paths of servers other than vLLM are not judged.
    let mut objects =
        render_with(&qwen3(), Some(&platform("  image: ghcr.io/example/tgi:3.0.1\n  probes: {path: /ready}\n")), &[]);
    container(&mut objects)["args"] = json!(["--port", "8000"]);
    quiet(&objects, "ISVC011");
}

#[test]
fn isvc012_shm_missing_with_tensor_parallelism() {
    let no_shm = |s: &str| {
        let mut objects = render(s);
        container(&mut objects).as_object_mut().unwrap().remove("volumeMounts");
        objects
    };
    fires(&no_shm(&service("tp", "x/M-8B", 1, 2)), "ISVC012", "runs 2 GPU workers but mounts nothing at /dev/shm");
    // One worker needs no shared memory; the host's IPC namespace provides it.
    quiet(&no_shm(&qwen3()), "ISVC012");
    let mut objects = no_shm(&service("tp", "x/M-8B", 1, 2));
    find(&mut objects, "Deployment")["spec"]["template"]["spec"]["hostIPC"] = json!(true);
    quiet(&objects, "ISVC012");
}

#[test]
fn isvc013_shm_too_small_for_the_workers() {
    let tp4 = service("tp", "x/M-8B", 1, 4);
    fires(
        &render_with(&tp4, Some(&platform("  resources: {shmSizePerGpu: 256Mi}\n")), &[]),
        "ISVC013",
        "runs 4 GPU workers with a /dev/shm of 1024Mi; give it at least 4Gi",
    );
    quiet(&render_with(&tp4, Some(&platform("  resources: {shmSizePerGpu: 1Gi}\n")), &[]), "ISVC013");
}

#[test]
fn isvc014_cpu_limit() {
    fires(
        &render_with(&qwen3(), Some(&platform("  resources: {cpuLimitPerGpu: \"8\"}\n")), &[]),
        "ISVC014",
        "has a CPU limit of 8",
    );
    // A LimitRange max without a default becomes the default CPU limit.
    let lr = "apiVersion: v1\nkind: LimitRange\nmetadata: {name: caps, namespace: ml}\nspec:\n  limits: [{type: Container, max: {cpu: \"16\"}}]\n";
    fires(&with(render(&qwen3()), &[lr]), "ISVC014", "gets a CPU limit of 16 from the default of LimitRange ml/caps");
    quiet(&render(&qwen3()), "ISVC014");
    let memory_only = "apiVersion: v1\nkind: LimitRange\nmetadata: {name: caps, namespace: ml}\nspec:\n  limits: [{type: Container, max: {memory: 64Gi}}]\n";
    quiet(&with(render(&qwen3()), &[memory_only]), "ISVC014");
}

#[test]
fn isvc015_memory_below_the_loading_peak() {
    let eight_b = service("llama", "meta-llama/Llama-3.1-8B-Instruct", 1, 1);
    fires(
        &render_with(&eight_b, Some(&platform("  resources: {memoryPerGpu: 16Gi, shmSizePerGpu: 1Gi}\n")), &[]),
        "ISVC015",
        "memory limit of 16Gi, below the loading peak of about 20Gi (weights 15Gi + 4Gi x 1 worker + /dev/shm 1Gi)",
    );
    quiet(&render_with(&eight_b, Some(&platform("  resources: {memoryPerGpu: 24Gi}\n")), &[]), "ISVC015");
    // A 4-bit quantized 70B model needs far less than the bf16 one.
    let awq = service("llama", "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", 1, 2);
    quiet(&render(&awq), "ISVC015");
    fires(&render(&service("llama", "meta-llama/Llama-3.1-70B-Instruct", 1, 2)), "ISVC015", "weights 130Gi");
}

#[test]
fn isvc016_autoscaler_on_zero_replicas() {
    let zero = template("deployment.yaml", "replicas: {{ replicas }}", "replicas: 0");
    fires(&render_with(&qwen3(), None, &[zero]), "ISVC016", "its target Deployment ml/qwen3 has spec.replicas: 0");
    let mut objects = render(&qwen3());
    find(&mut objects, "HorizontalPodAutoscaler")["spec"]["minReplicas"] = json!(0);
    fires(&objects, "ISVC016", "minReplicas is 0");
    // A service scaled to zero has no autoscaler.
    quiet(&render(&service("zero", "x/M-1B", 0, 1)), "ISVC016");
}

#[test]
fn isvc017_replicas_outside_the_autoscaler_bounds() {
    // replicas: 3 renders spec.replicas: 3 inside the HPA's 1 to 9: the
    // count the service starts at, not a fight.
    quiet(&render(&qwen3()), "ISVC017");
    let pinned = template("deployment.yaml", "replicas: {{ replicas }}", "replicas: 12");
    fires(
        &render_with(&qwen3(), None, &[pinned]),
        "ISVC017",
        "sets spec.replicas: 12 outside the bounds of HorizontalPodAutoscaler ml/qwen3 (1 to 9): it rescales the workload to 9 at once",
    );
    let zero_pinned = template("deployment.yaml", "replicas: {{ replicas }}", "replicas: {{ replicas or 3 }}");
    quiet(&render_with(&service("zero", "x/M-1B", 0, 1), None, &[zero_pinned]), "ISVC017");
}

#[test]
fn isvc040_keda_without_a_scrape() {
    let llama = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: llama, namespace: ml}\n\
                 spec: {baseModel: meta-llama/Llama-3.1-8B-Instruct, autoscaling: {min: 2, max: 8, targetQueueLength: 4}}\n";
    let keda = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\nkeda: {serverAddress: http://prometheus:9090}\n";
    fires(
        &render_with(llama, Some(keda), &[]),
        "ISVC040",
        "its Prometheus trigger queries `sum(vllm:num_requests_waiting{namespace=\"ml\",service=\"llama\"})`, but no \
         ServiceMonitor or PodMonitor scrapes the pods of Deployment ml/llama: KEDA reads the empty result as 0 and never \
         scales up",
    );
    // With `monitoring`, isvc renders the ServiceMonitor the query needs.
    quiet(&render_with(llama, Some(&format!("{keda}monitoring: {{}}\n")), &[]), "ISVC040");
    // A PodMonitor selecting the pods does as well.
    let pod_monitor = "apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata: {name: vllm, namespace: ml}\n\
                       spec:\n  selector: {matchLabels: {app.kubernetes.io/name: llama}}\n  podMetricsEndpoints: [{port: http}]\n";
    quiet(&with(render_with(llama, Some(keda), &[]), &[pod_monitor]), "ISVC040");
    // An HPA without a metrics pipeline still starts at `replicas`: not this rule.
    quiet(&render(&qwen3()), "ISVC040");
}

const PDB: &str = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: qwen3, namespace: ml}\nspec:\n  selector: {matchLabels: {app.kubernetes.io/name: qwen3}}\n";

#[test]
fn isvc018_pdb_blocks_every_disruption() {
    let pdb = |budget: &str| format!("{PDB}  {budget}\n");
    // replicas 3: the autoscaler's minimum is 1 pod.
    fires(
        &with(render(&qwen3()), &[&pdb("maxUnavailable: 0")]),
        "ISVC018",
        "maxUnavailable 0 allows no eviction of the 1 pod (qwen3)",
    );
    fires(&with(render(&qwen3()), &[&pdb("minAvailable: 1")]), "ISVC018", "minAvailable 1 keeps all of the 1 pod");
    fires(&with(render(&qwen3()), &[&pdb("minAvailable: 50%")]), "ISVC018", "minAvailable 50%");
    quiet(&with(render(&qwen3()), &[&pdb("maxUnavailable: 1")]), "ISVC018");
    // replicas 6: at least 3 pods, so one may go.
    quiet(&with(render(&service("qwen3", "Qwen/Qwen3-0.6B", 6, 1)), &[&pdb("minAvailable: 2")]), "ISVC018");
    // A budget that selects nothing blocks nothing.
    quiet(&with(render(&service("other", "Qwen/Qwen3-0.6B", 3, 1)), &[&pdb("maxUnavailable: 0")]), "ISVC018");
}

fn gpu_quota(gpus: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {{name: gpus, namespace: ml}}\nspec:\n  hard: {{requests.nvidia.com/gpu: \"{gpus}\"}}\n"
    )
}

#[test]
fn isvc019_rollout_cannot_proceed() {
    let mut objects = render(&qwen3());
    find(&mut objects, "Deployment")["spec"]["strategy"]["rollingUpdate"] =
        json!({"maxSurge": 0, "maxUnavailable": "0%"});
    fires(&objects, "ISVC019", "maxSurge and maxUnavailable are both 0");
    // A surge pod needs a GPU the quota does not have (3 pods at the start, quota 3).
    let surge = platform("  rollout: {maxSurge: 1, maxUnavailable: 0}\n");
    fires(
        &with(render_with(&qwen3(), Some(&surge), &[]), &[&gpu_quota("3")]),
        "ISVC019",
        "a rollout starts 1 extra pod (maxSurge 1), but ResourceQuota ml/gpus has no room for requests.nvidia.com/gpu: 4 needed, 3 allowed",
    );
    quiet(&with(render_with(&qwen3(), Some(&surge), &[]), &[&gpu_quota("4")]), "ISVC019");
    // A service that may run one pod (replicas 3: an autoscaler minimum of
    // 1) surges by default, and ISVC019 still checks the quota holds the
    // surge pod on top of the 3 it starts with.
    fires(
        &with(render(&qwen3()), &[&gpu_quota("3")]),
        "ISVC019",
        "a rollout starts 1 extra pod (maxSurge 1), but ResourceQuota ml/gpus has no room for requests.nvidia.com/gpu: 4 needed, 3 allowed",
    );
    // The platform's rollout for services of several pods needs no spare quota.
    let six = service("qwen3", "Qwen/Qwen3-0.6B", 6, 1);
    quiet(&with(render(&six), &[&gpu_quota("3")]), "ISVC019");
}

#[test]
fn isvc020_mutable_image() {
    fires(
        &render_with(&qwen3(), Some(&platform("  image: vllm/vllm-openai:latest\n")), &[]),
        "ISVC020",
        "runs vllm/vllm-openai:latest",
    );
    fires(&render_with(&qwen3(), Some(&platform("  image: vllm/vllm-openai\n")), &[]), "ISVC020", "has no tag");
    quiet(&render_with(&qwen3(), Some(&platform("  image: vllm/vllm-openai:latest@sha256:4b8f\n")), &[]), "ISVC020");
}

#[test]
fn isvc021_quota_exceeded_or_unspecified() {
    // replicas 6: the Deployment is created with 6 pods, 6 GPUs (the
    // autoscaler's minimum of 3 is where it may go later).
    let six = service("qwen3", "Qwen/Qwen3-0.6B", 6, 1);
    fires(
        &with(render(&six), &[&gpu_quota("5")]),
        "ISVC021",
        "at steady state, requests.nvidia.com/gpu would be 6, above the hard limit of 5 (qwen3: 6)",
    );
    quiet(&with(render(&six), &[&gpu_quota("6")]), "ISVC021");
    // Two services share the namespace's quota.
    let two = format!("{six}---\n{}", service("embed", "Qwen/Qwen3-Embedding-0.6B", 2, 1));
    fires(
        &with(render(&two), &[&gpu_quota("7")]),
        "ISVC021",
        "would be 8, above the hard limit of 7 (embed: 2, qwen3: 6)",
    );
    // A quota on limits.cpu needs a CPU limit on every container...
    let cpu = "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: compute, namespace: ml}\nspec:\n  hard: {limits.cpu: \"64\"}\n";
    fires(&with(render(&qwen3()), &[cpu]), "ISVC021", "constrains limits.cpu, which container \"vllm\" does not set");
    // ...which a LimitRange default can supply.
    let default = "apiVersion: v1\nkind: LimitRange\nmetadata: {name: defaults, namespace: ml}\nspec:\n  limits: [{type: Container, default: {cpu: \"8\"}}]\n";
    quiet(&with(render(&qwen3()), &[cpu, default]), "ISVC021");
    // Object counts.
    let count = "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: counts, namespace: ml}\nspec:\n  hard: {count/deployments.apps: \"1\", services: \"2\"}\n";
    fires(
        &with(render(&two), &[count]),
        "ISVC021",
        "count/deployments.apps would be 2, above the hard limit of 1 (embed: 1, qwen3: 1)",
    );
    quiet(&with(render(&six), &[count]), "ISVC021");
}

#[test]
fn isvc021_quota_scopes_select_pods_by_priority_class() {
    let scoped = "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: high, namespace: ml}\nspec:\n  hard: {requests.nvidia.com/gpu: \"0\"}\n  scopeSelector:\n    matchExpressions: [{scopeName: PriorityClass, operator: In, values: [high]}]\n";
    // The pods have no priority class: the quota does not apply...
    quiet(&with(render(&qwen3()), &[scoped]), "ISVC021");
    // ...unless a global default PriorityClass gives them one.
    let class = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\nglobalDefault: true\n";
    fires(
        &with(render(&qwen3()), &[scoped, class]),
        "ISVC021",
        "requests.nvidia.com/gpu would be 3, above the hard limit of 0",
    );
}

#[test]
fn isvc022_quota_blocks_scale_up() {
    // replicas 3: 1 to 9 pods.
    fires(
        &with(render(&qwen3()), &[&gpu_quota("4")]),
        "ISVC022",
        "at the autoscalers' maximum replica counts, requests.nvidia.com/gpu would be 9, above the hard limit of 4",
    );
    quiet(&with(render(&qwen3()), &[&gpu_quota("4")]), "ISVC021");
    quiet(&with(render(&qwen3()), &[&gpu_quota("9")]), "ISVC022");
    // Over at the minimum is ISVC021 alone.
    quiet(&with(render(&qwen3()), &[&gpu_quota("0")]), "ISVC022");
}

#[test]
fn isvc023_limit_range_violation() {
    let lr = |item: &str| {
        format!("apiVersion: v1\nkind: LimitRange\nmetadata: {{name: lr, namespace: ml}}\nspec:\n  limits: [{item}]\n")
    };
    let objects = with(render(&qwen3()), &[&lr("{type: Container, max: {cpu: \"2\"}}")]);
    fires(&objects, "ISVC023", "cpu request 4 is above the maximum of 2 per Container in LimitRange ml/lr");
    let objects = with(render(&qwen3()), &[&lr("{type: Container, min: {memory: 64Gi}}")]);
    fires(&objects, "ISVC023", "memory request 32Gi is below the minimum of 64Gi");
    let objects = with(render(&qwen3()), &[&lr("{type: Container, default: {cpu: \"2\"}}")]);
    fires(&objects, "ISVC023", "cpu request 4 is above the limit of 2 that LimitRange ml/lr gives it by default");
    let objects = with(render(&qwen3()), &[&lr("{type: Pod, max: {memory: 16Gi}}")]);
    fires(&objects, "ISVC023", "the pod: memory limit 32Gi is above the maximum of 16Gi per Pod");
    let objects = with(render(&qwen3()), &[&lr("{type: Container, maxLimitRequestRatio: {memory: \"1\"}}")]);
    quiet(&objects, "ISVC023");
    let objects = with(render(&qwen3()), &[&lr("{type: Container, maxLimitRequestRatio: {cpu: \"2\"}}")]);
    fires(&objects, "ISVC023", "must set both a cpu request and limit");
    // Bounds the container is inside of (a max of 8 CPUs becomes its limit).
    let objects =
        with(render(&qwen3()), &[&lr("{type: Container, max: {cpu: \"8\", memory: 64Gi}, min: {memory: 1Gi}}")]);
    quiet(&objects, "ISVC023");
}

#[test]
fn isvc041_limit_range_gives_a_plain_container_gpus() {
    let lr = |item: &str| {
        format!("apiVersion: v1\nkind: LimitRange\nmetadata: {{name: lr, namespace: ml}}\nspec:\n  limits: [{item}]\n")
    };
    // A max alone becomes the default limit and request of every container
    // that sets none.
    fires(
        &with(render(&qwen3()), &[&lr("{type: Container, max: {nvidia.com/gpu: \"8\"}}")]),
        "ISVC041",
        "a container that sets no resources (a sidecar, an init container, `kubectl debug`) in namespace ml is given \
         nvidia.com/gpu: 8 as its limit and 8 as its request by LimitRange ml/lr: a max without a default becomes the default",
    );
    // A default of 0 keeps the maximum without handing out GPUs.
    quiet(
        &with(
            render(&qwen3()),
            &[&lr(
                "{type: Container, max: {nvidia.com/gpu: \"8\"}, default: {nvidia.com/gpu: \"0\"}, defaultRequest: {nvidia.com/gpu: \"0\"}}",
            )],
        ),
        "ISVC041",
    );
    // CPU and memory defaults are what a LimitRange is for.
    quiet(&with(render(&qwen3()), &[&lr("{type: Container, max: {cpu: \"8\"}}")]), "ISVC041");
    // A Pod maximum has no default: a pod without a GPU limit is rejected.
    fires(
        &with(render(&qwen3()), &[&lr("{type: Pod, max: {nvidia.com/gpu: \"8\"}}")]),
        "ISVC041",
        "a pod of such containers sets no nvidia.com/gpu limit, but LimitRange ml/lr caps it at 8 per Pod: LimitRanger rejects it",
    );
}

#[test]
fn tenant_limit_ranges_never_hand_out_gpus() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: ml\n    limits:\n      max: {nvidia.com/gpu: 8}\n";
    quiet(&render_with(&qwen3(), Some(platform), &[]), "ISVC041");
}

#[test]
fn isvc042_lower_tier_reclaims_from_a_higher_one() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: ml\n    queues:\n      \
                    - {name: online, priority: online, nominalQuota: {nvidia.com/gpu: 16, cpu: 128, memory: 1Ti}}\n      \
                    - {name: offline, priority: offline, nominalQuota: {nvidia.com/gpu: 0, cpu: 0, memory: 0}}\n";
    let services = format!(
        "{}---\n{}",
        qwen3(),
        service("eval", "Qwen/Qwen3-0.6B", 1, 1).replace("gpusPerReplica: 1}", "gpusPerReplica: 1, priority: offline}")
    );
    // isvc derives the policies from the tiers: online may reclaim from any
    // borrower, offline never preempts.
    let mut objects = render_with(&services, Some(platform), &[]);
    quiet(&objects, "ISVC042");
    let online = objects.iter().find(|o| o.id.kind == "ClusterQueue" && o.id.name == "ml-online").unwrap();
    assert_eq!(
        online.value["spec"]["preemption"],
        json!({"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority",
               "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 1000}})
    );
    let offline = objects.iter_mut().find(|o| o.id.kind == "ClusterQueue" && o.id.name == "ml-offline").unwrap();
    assert_eq!(
        offline.value["spec"]["preemption"],
        json!({"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"})
    );
    // The policy every queue used to get: offline reclaiming evicts online.
    offline.value["spec"]["preemption"]["reclaimWithinCohort"] = json!("Any");
    fires(
        &objects,
        "ISVC042",
        "reclaimWithinCohort: Any lets its workloads (ml/eval, priority 1000) evict those of ClusterQueue ml-online in \
         cohort ml that borrowed (ml/qwen3, priority 100000), irrespective of priority",
    );
}

#[test]
fn isvc043_namespaces_and_the_crd_are_never_pruned() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: ml\n";
    let mut objects = render_with(&qwen3(), Some(platform), &[]);
    // isvc protects its Namespaces and the CRD for both engines.
    quiet(&objects, "ISVC043");
    for kind in ["Namespace", "CustomResourceDefinition"] {
        assert_eq!(
            find(&mut objects, kind)["metadata"]["annotations"],
            json!({"argocd.argoproj.io/sync-options": "Prune=false,Delete=false", "kustomize.toolkit.fluxcd.io/prune": "disabled"}),
            "{kind}"
        );
    }
    let namespace = find(&mut objects, "Namespace");
    namespace["metadata"]["annotations"] = json!({"argocd.argoproj.io/sync-options": "Prune=false"});
    fires(
        &objects,
        "ISVC043",
        "deleting the Argo CD Application deletes it (no Delete=false); Flux prunes it (no \
         kustomize.toolkit.fluxcd.io/prune: disabled): deleting it deletes everything in the namespace",
    );
    find(&mut objects, "CustomResourceDefinition")["metadata"].as_object_mut().unwrap().remove("annotations");
    fires(&objects, "ISVC043", "Argo CD prunes it (no Prune=false); deleting the Argo CD Application deletes it");
    // A Flux label does as well as the annotation.
    find(&mut objects, "Namespace")["metadata"]["annotations"] =
        json!({"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"});
    find(&mut objects, "Namespace")["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/prune"] = json!("disabled");
    assert!(of_rule(&objects, "ISVC043").iter().all(|f| f.object.starts_with("CustomResourceDefinition")));
}

#[test]
fn isvc044_pods_name_a_priority_class_nobody_renders() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: ml\n";
    // The pods name the class isvc renders for their tier.
    quiet(&render_with(&qwen3(), Some(platform), &[]), "ISVC044");
    let bare = template("deployment.yaml", "priorityClassName: {{ priority_class }}", "priorityClassName: online");
    fires(
        &render_with(&qwen3(), Some(platform), &[bare]),
        "ISVC044",
        "its pods name PriorityClass online, which the output does not define: the API server refuses them if it does \
         not exist, and another owner's class of that name applies cluster-wide",
    );
    let system = template(
        "deployment.yaml",
        "priorityClassName: {{ priority_class }}",
        "priorityClassName: system-cluster-critical",
    );
    quiet(&render_with(&qwen3(), None, &[system]), "ISVC044");
}

#[test]
fn rules_are_disabled_per_service_and_per_run() {
    let annotated = qwen3().replace(
        "namespace: ml}",
        "namespace: ml, annotations: {isvc.ai.example.com/disable-checks: \"ISVC014, isvc020\"}}",
    );
    let loud = platform("  image: vllm/vllm-openai:latest\n  resources: {cpuLimitPerGpu: \"8\"}\n");
    let both = format!("{annotated}---\n{}", service("other", "Qwen/Qwen3-0.6B", 1, 1));
    let objects = render_with(&both, Some(&loud), &[]);
    let on = |id: &str| -> Vec<String> { of_rule(&objects, id).into_iter().map(|f| f.object).collect() };
    assert_eq!(on("ISVC014"), ["Deployment ml/other"]);
    assert_eq!(on("ISVC020"), ["Deployment ml/other"]);
    let config = check::Config::with_disabled(&["ISVC020"]).unwrap();
    let left: Vec<&str> = check::run_with(&objects, &config).iter().map(|f| f.rule.id).collect();
    assert_eq!(left, ["ISVC014"]);
}

// The command line.

fn isvc(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("isvc").unwrap();
    c.current_dir(dir).arg("--color").arg("never");
    c
}

fn setup(services: &str, platform: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("services")).unwrap();
    std::fs::write(dir.path().join("services/svc.yaml"), services).unwrap();
    if let Some(p) = platform {
        std::fs::write(dir.path().join("platform.yaml"), p).unwrap();
    }
    dir
}

fn run(c: &mut Command) -> (i32, String, String) {
    let out = c.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn check_reports_warnings_with_file_line_symptom_and_fix() {
    let dir = setup(
        &service("llama", "meta-llama/Llama-3.3-70B-Instruct", 2, 4),
        Some(&platform(
            "  probes: {startupTimeoutSeconds: 900}\n  huggingFace:\n    tokenSecret: {name: hf-token, key: token}\n",
        )),
    );
    let (code, out, err) = run(isvc(dir.path()).args(["check", "services", "--platform", "platform.yaml"]));
    assert_eq!(code, 0, "warnings alone pass: {out}{err}");
    assert!(out.contains("warning: Deployment ml/llama [ISVC009]: container \"vllm\" may take 900s to start"), "{out}");
    assert!(out.contains("  --> services/svc.yaml:3:18\n"), "{out}");
    assert!(out.contains("  = note: in a cluster: on a cold node"), "{out}");
    assert!(out.contains("  = help: raise the startup budget"), "{out}");
    assert!(out.ends_with("check: 0 errors, 2 warnings in 4 objects\n"), "{out}");
    let (code, _, _) = run(isvc(dir.path()).args(["check", "--platform", "platform.yaml", "--strict"]));
    assert_eq!(code, 1);
    let (code, out, _) = run(isvc(dir.path()).args([
        "check",
        "--platform",
        "platform.yaml",
        "--disable",
        "ISVC009,ISVC015",
        "--strict",
    ]));
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("check: 0 errors, 0 warnings in 4 objects\n"), "{out}");
}

#[test]
fn render_refuses_error_findings_and_check_explains_them() {
    let dir = setup(&qwen3(), Some(&platform("  probes: {path: /healthz}\n")));
    let (code, out, err) = run(isvc(dir.path()).args(["render", "--platform", "platform.yaml", "--out", "rendered"]));
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("error: Deployment ml/qwen3 [ISVC011]: container \"vllm\": readinessProbe path /healthz is not served by vLLM"), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert!(!dir.path().join("rendered").exists());
    // check reports the same and exits 1: findings, not bad input.
    let (code, out, _) = run(isvc(dir.path()).args(["check", "--platform", "platform.yaml", "--format", "json"]));
    assert_eq!(code, 1);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["errors"], 3, "{out}");
    let first = &report["findings"][0];
    assert_eq!(first["ruleId"], "ISVC011");
    assert_eq!(first["severity"], "error");
    assert_eq!(
        first["object"],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ml", "name": "qwen3"})
    );
    assert_eq!(first["file"], "services/svc.yaml");
    assert_eq!(first["line"], 3);
    // Disabled for the run, render writes.
    let (code, _, err) = run(isvc(dir.path()).args([
        "render",
        "--platform",
        "platform.yaml",
        "--out",
        "rendered",
        "--disable",
        "ISVC011",
    ]));
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = run(isvc(dir.path()).args(["check", "--explain", "isvc011"]));
    assert_eq!(code, 0);
    assert!(out.starts_with("ISVC011 (error): a probe points at a path or port the server does not serve\n"), "{out}");
    assert!(out.contains("isvc.ai.example.com/disable-checks: \"ISVC011\""), "{out}");
    let (code, _, err) = run(isvc(dir.path()).args(["check", "--explain", "ISVC11"]));
    assert_eq!(code, 2);
    assert!(err.contains("did you mean ISVC011?"), "{err}");
    let (code, _, err) = run(isvc(dir.path()).args(["render", "--stdout", "--disable", "ISVC099"]));
    assert_eq!(code, 2);
    assert!(err.contains("no rule has the ID \"ISVC099\""), "{err}");
}

#[test]
fn unknown_ids_in_the_annotation_are_warned_about() {
    let dir = setup(
        &qwen3().replace("namespace: ml}", "namespace: ml, annotations: {isvc.ai.example.com/disable-checks: ISVC14}}"),
        None,
    );
    let (code, _, err) = run(isvc(dir.path()).args(["render", "--stdout"]));
    assert_eq!(code, 0);
    assert!(err.contains("warning: no rule has the ID \"ISVC14\" in annotation isvc.ai.example.com/disable-checks; it disables nothing"), "{err}");
    assert!(err.contains("did you mean ISVC014?"), "{err}");
}

#[test]
fn sarif_has_rules_results_and_locations_for_code_scanning() {
    let dir = setup(&qwen3(), Some(&platform("  image: vllm/vllm-openai:latest\n  probes: {path: /healthz}\n")));
    let (code, out, _) = run(isvc(dir.path()).args(["check", "--platform", "platform.yaml", "--format", "sarif"]));
    assert_eq!(code, 1);
    let sarif: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), check::RULES.len());
    for r in rules {
        for field in ["shortDescription", "fullDescription", "help"] {
            assert!(!r[field]["text"].as_str().unwrap().is_empty(), "{r}");
        }
    }
    let results = run["results"].as_array().unwrap();
    let ids: Vec<&str> = results.iter().map(|r| r["ruleId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["ISVC011", "ISVC011", "ISVC011", "ISVC020"]);
    for r in results {
        let i = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[i]["id"], r["ruleId"]);
        let loc = &r["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "services/svc.yaml");
        assert_eq!(loc["region"]["startLine"], 3);
    }
    assert_eq!(results[3]["level"], "warning");
    // Fingerprints tell the three probe findings apart.
    let prints: std::collections::BTreeSet<&str> =
        results.iter().map(|r| r["partialFingerprints"]["isvcFinding/v1"].as_str().unwrap()).collect();
    assert_eq!(prints.len(), 4);
}

#[test]
fn isvc050_gated_model_without_token() {
    let llama = service("llama", "meta-llama/Llama-3.1-8B-Instruct", 1, 1);
    fires(
        &render(&llama),
        "ISVC050",
        "container \"vllm\" downloads the gated model meta-llama/Llama-3.1-8B-Instruct with no HF_TOKEN; the download is refused",
    );
    // The platform's token reaches the server as a file from the Secret,
    // mounted read-only, which HF_TOKEN_PATH names.
    let objects = render_with(&llama, Some(&with_token()), &[]);
    quiet(&objects, "ISVC050");
    let mut objects = objects;
    let c = container(&mut objects).clone();
    let env = c["env"].as_array().unwrap();
    assert!(env.contains(&json!({"name": "HF_TOKEN_PATH", "value": "/etc/isvc/hf-token/token"})));
    assert!(env.iter().all(|e| e["name"] != "HF_TOKEN"), "no token in the environment");
    let mounts = c["volumeMounts"].as_array().unwrap();
    assert!(mounts.contains(&json!({"name": "hf-token", "mountPath": "/etc/isvc/hf-token", "readOnly": true})));
    let volumes = find(&mut objects, "Deployment")["spec"]["template"]["spec"]["volumes"].as_array().unwrap().clone();
    assert!(volumes.contains(&json!({"name": "hf-token", "secret": {"secretName": "hf-token",
        "items": [{"key": "token", "path": "token"}], "defaultMode": 288}})));
    // A template that writes its own environment loses it.
    let bad = template("deployment.yaml", "env: {{ container.env }}", "env: {{ security.env }}");
    fires(&render_with(&llama, Some(&with_token()), &[bad]), "ISVC050", "gated model");
    // Models outside the gated organisations, and offline servers, need none.
    quiet(&render(&qwen3()), "ISVC050");
    let offline = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: llama, namespace: ml}\n\
                   spec:\n  baseModel: meta-llama/Llama-3.1-8B-Instruct\n  replicas: 1\n  revision: main\n  \
                   env: [{name: HF_HUB_OFFLINE, value: \"1\"}]\n";
    quiet(&render(offline), "ISVC050");
}

#[test]
fn isvc051_drain_cut_short() {
    let mut objects = render(&qwen3());
    quiet(&objects, "ISVC051");
    let c = container(&mut objects).clone();
    assert_eq!(c["lifecycle"], json!({"preStop": {"exec": {"command": ["sleep", "135"]}}}));
    assert_eq!(find(&mut objects, "Deployment")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"], 150);
    let no_hook = template(
        "deployment.yaml",
        "          lifecycle:\n            preStop:\n              exec:\n                command: {{ drain.pre_stop }}\n",
        "",
    );
    fires(
        &render_with(&qwen3(), None, &[no_hook]),
        "ISVC051",
        "container \"vllm\" has no preStop hook: it gets SIGTERM while the Service and Gateway still route to it",
    );
    let short = template(
        "deployment.yaml",
        "terminationGracePeriodSeconds: {{ drain.termination_grace_period_seconds }}",
        "terminationGracePeriodSeconds: 30",
    );
    fires(
        &render_with(&qwen3(), None, std::slice::from_ref(&short)),
        "ISVC051",
        "container \"vllm\" drains for 135s (preStop 135s + --shutdown-timeout 0s) but is killed after terminationGracePeriodSeconds 30s",
    );
    // vLLM 0.18 and later drain themselves after a short preStop sleep.
    let new = platform("  image: vllm/vllm-openai:v0.18.0\n  drain: {preStopSeconds: 10, requestSeconds: 600}\n");
    let mut objects = render_with(&qwen3(), Some(&new), &[]);
    quiet(&objects, "ISVC051");
    let c = container(&mut objects).clone();
    assert!(c["args"].as_array().unwrap().contains(&json!("--shutdown-timeout=600")));
    assert_eq!(c["lifecycle"]["preStop"]["exec"]["command"], json!(["sleep", "10"]));
    fires(
        &render_with(&qwen3(), Some(&new), &[short]),
        "ISVC051",
        "drains for 610s (preStop 10s + --shutdown-timeout 600s) but is killed after terminationGracePeriodSeconds 30s",
    );
}

#[test]
fn isvc052_rollout_stops_only_pod() {
    // replicas 3 gives the autoscaler a minimum of 1: the service surges.
    let mut objects = render(&qwen3());
    quiet(&objects, "ISVC052");
    let rolling = find(&mut objects, "Deployment")["spec"]["strategy"]["rollingUpdate"].clone();
    assert_eq!(rolling, json!({"maxSurge": 1, "maxUnavailable": 0}));
    // Services that never run fewer than two pods keep the platform's rollout.
    let mut six = render(&service("qwen3", "Qwen/Qwen3-0.6B", 6, 1));
    quiet(&six, "ISVC052");
    let rolling = find(&mut six, "Deployment")["spec"]["strategy"]["rollingUpdate"].clone();
    assert_eq!(rolling, json!({"maxSurge": 0, "maxUnavailable": 1}));
    // A platform without spare GPUs gets what it asked for, and the warning.
    let full = platform("  rollout: {noSpareGpus: true}\n");
    fires(
        &render_with(&qwen3(), Some(&full), &[]),
        "ISVC052",
        "maxSurge 0 and maxUnavailable 1 at 1 replica: a rollout stops the only pod before its replacement has loaded the model",
    );
    let recreate = template("deployment.yaml", "type: RollingUpdate", "type: Recreate");
    fires(
        &render_with(&qwen3(), None, &[recreate]),
        "ISVC052",
        "strategy Recreate stops the only pod before its replacement has loaded the model",
    );
}

#[test]
fn isvc053_model_cache_unbounded() {
    let llama = service("llama", "meta-llama/Llama-3.1-8B-Instruct", 1, 1);
    let mut objects = render_with(&llama, Some(&with_token()), &[]);
    quiet(&objects, "ISVC053");
    assert_eq!(container(&mut objects)["resources"]["requests"]["ephemeral-storage"], "27Gi");
    let volumes = &mut find(&mut objects, "Deployment")["spec"]["template"]["spec"]["volumes"];
    let cache = volumes.as_array_mut().unwrap().iter_mut().find(|v| v["name"] == "cache").unwrap();
    assert_eq!(cache["emptyDir"], json!({"sizeLimit": "27Gi"}));
    cache["emptyDir"] = json!({});
    fires(
        &objects,
        "ISVC053",
        "container \"vllm\" downloads meta-llama/Llama-3.1-8B-Instruct (about 15Gi) into emptyDir \"cache\", which has no sizeLimit",
    );
    let mut objects = render_with(&llama, Some(&with_token()), &[]);
    let volumes = &mut find(&mut objects, "Deployment")["spec"]["template"]["spec"]["volumes"];
    let cache = volumes.as_array_mut().unwrap().iter_mut().find(|v| v["name"] == "cache").unwrap();
    cache["emptyDir"]["sizeLimit"] = json!("10Gi");
    container(&mut objects)["resources"]["requests"].as_object_mut().unwrap().remove("ephemeral-storage");
    fires(
        &objects,
        "ISVC053",
        "container \"vllm\" downloads meta-llama/Llama-3.1-8B-Instruct (about 15Gi) into emptyDir \"cache\", whose sizeLimit 10Gi is smaller",
    );
    fires(
        &objects,
        "ISVC053",
        "container \"vllm\" downloads meta-llama/Llama-3.1-8B-Instruct (about 15Gi) to the node's disk but requests no ephemeral-storage",
    );
    // The platform can fix the size; quantization in spec.args shrinks the estimate.
    let fixed = platform("  modelCache: {sizeLimit: 200Gi}\n");
    let mut objects = render_with(&qwen3(), Some(&fixed), &[]);
    assert_eq!(container(&mut objects)["resources"]["requests"]["ephemeral-storage"], "200Gi");
    let fp8 = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: big, namespace: ml}\n\
               spec: {baseModel: Qwen/Qwen3-32B, replicas: 1, args: [--quantization=fp8]}\n";
    let mut objects = render(fp8);
    assert_eq!(container(&mut objects)["resources"]["requests"]["ephemeral-storage"], "43Gi");
}

#[test]
fn isvc054_ray_wait_shorter_than_startup() {
    let big = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: big, namespace: ml}\n\
               spec: {baseModel: Qwen/Qwen3-235B-A22B, replicas: 1, gpusPerReplica: 16, nodesPerReplica: 2}\n";
    let mut objects = render(big);
    quiet(&objects, "ISVC054");
    let lwt = find(&mut objects, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"].clone();
    let leader = &lwt["leaderTemplate"]["spec"]["containers"][0]["command"][2];
    assert!(leader.as_str().unwrap().contains("--ray_init_timeout=3600 && exec"), "{leader}");
    let worker = &lwt["workerTemplate"]["spec"]["containers"][0];
    assert_eq!(worker["startupProbe"]["exec"]["command"][2], "ray health-check --address=\"$LWS_LEADER_ADDRESS:6379\"");
    assert_eq!(worker["startupProbe"]["failureThreshold"], 360);
    // The script's own 300 s, as in LeaderWorkerSet's vLLM example.
    let lwt = &mut find(&mut objects, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"];
    let command = &mut lwt["leaderTemplate"]["spec"]["containers"][0]["command"][2];
    *command = json!(command.as_str().unwrap().replace(" --ray_init_timeout=3600", ""));
    lwt["workerTemplate"]["spec"]["containers"][0].as_object_mut().unwrap().remove("startupProbe");
    fires(
        &objects,
        "ISVC054",
        "container \"vllm\" (leader) waits 300s for the Ray cluster, less than the startup budget of 3600s: a slow node restarts the whole group",
    );
    fires(&objects, "ISVC054", "container \"vllm\" (worker) has no startup probe");
}

#[test]
fn isvc055_lora_slots() {
    let svc = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: qwen3, namespace: ml}\n\
               spec:\n  baseModel: Qwen/Qwen3-8B\n  replicas: 1\n  adapters:\n    - {name: a, source: org/a}\n    \
               - {name: b, source: org/b}\n    - {name: c, source: org/c}\n";
    let two = platform("  lora: {maxLoras: 2}\n");
    let mut objects = render_with(svc, Some(&two), &[]);
    quiet(&objects, "ISVC055");
    let data = &mut find(&mut objects, "ConfigMap")["data"]["lora.yaml"];
    let config = data.as_str().unwrap().to_string();
    assert!(config.contains("\nmax-loras: 2\nmax-cpu-loras: 3\n"), "{config}");
    *data = json!(config.replace("max-cpu-loras: 3", "max-cpu-loras: 1"));
    fires(&objects, "ISVC055", "max-cpu-loras 1 is below max-loras 2: vLLM refuses to start");
    let data = &mut find(&mut objects, "ConfigMap")["data"]["lora.yaml"];
    *data = json!(config.replace("max-cpu-loras: 3\n", ""));
    fires(&objects, "ISVC055", "max-cpu-loras 2 holds fewer than the 3 adapters served: the rest are reloaded on use");
    let data = &mut find(&mut objects, "ConfigMap")["data"]["lora.yaml"];
    *data = json!(config.replace("max-loras: 2", "max-loras: 32").replace("max-cpu-loras: 3", "max-cpu-loras: 64"));
    fires(
        &objects,
        "ISVC055",
        "max-loras 32 preallocates GPU memory for 32 adapters in every LoRA layer (more than 16)",
    );
}

#[test]
fn isvc056_offline_without_revision() {
    let svc = |revision: &str| {
        format!(
            "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: qwen3, namespace: ml}}\n\
             spec:\n  baseModel: Qwen/Qwen3-8B\n  replicas: 1\n{revision}  env: [{{name: HF_HUB_OFFLINE, value: \"1\"}}]\n"
        )
    };
    fires(
        &render(&svc("")),
        "ISVC056",
        "container \"vllm\" runs with HF_HUB_OFFLINE and loads Qwen/Qwen3-8B without --revision",
    );
    quiet(&render(&svc("  revision: 0e9e39f249a16976918f6564b8830bc894c89659\n")), "ISVC056");
    quiet(&render(&qwen3()), "ISVC056");
}

#[test]
fn engine_inputs_reach_the_server() {
    let svc = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: llama, namespace: ml}\n\
               spec:\n  baseModel: meta-llama/Llama-3.1-8B-Instruct\n  replicas: 1\n  servedModelName: llama\n  \
               revision: 0e9e39f249a16976918f6564b8830bc894c89659\n  args: [--max-model-len=32768, --enable-auto-tool-choice]\n  \
               env:\n    - {name: VLLM_LOGGING_LEVEL, value: DEBUG}\n    - name: HF_TOKEN\n      \
               valueFrom: {secretKeyRef: {name: team-token, key: hf}}\n";
    let mut objects = render_with(svc, Some(&with_token()), &[]);
    let c = container(&mut objects).clone();
    let args: Vec<&str> = c["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(
        args[..6],
        [
            "--model",
            "meta-llama/Llama-3.1-8B-Instruct",
            "--served-model-name",
            "llama",
            "--revision",
            "0e9e39f249a16976918f6564b8830bc894c89659"
        ]
    );
    assert_eq!(args[args.len() - 2..], ["--max-model-len=32768", "--enable-auto-tool-choice"]);
    let env: Vec<&Value> = c["env"].as_array().unwrap().iter().filter(|e| e["name"] == "HF_TOKEN").collect();
    assert_eq!(env, [&json!({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "team-token", "key": "hf"}}})]);
    assert_eq!(c["env"].as_array().unwrap().last().unwrap()["name"], "HF_TOKEN");
    assert!(c["env"].as_array().unwrap().iter().any(|e| e == &json!({"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"})));
}

#[test]
fn readme_lists_every_rule_with_its_severity() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/check.md")).unwrap();
    for r in check::RULES {
        let row = format!("| {} | {} |", r.id, r.severity_name());
        assert!(readme.contains(&row), "docs/check.md has no row {row}");
    }
}

#[test]
fn isvc070_weights_that_do_not_fit_the_accelerator() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\naccelerators:\n  \
                    - {name: h100, resource: nvidia.com/gpu, memoryGiB: 80}\n  \
                    - {name: mig-3g, resource: nvidia.com/mig-3g.40gb, memoryGiB: 40}\n";
    let svc = |model: &str, extra: &str| {
        format!(
            "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: m, namespace: ml}}\n\
             spec:\n  baseModel: {model}\n  replicas: 1\n{extra}"
        )
    };
    let big = "meta-llama/Llama-3.3-70B-Instruct";
    // 70B at 16 bits is about 130Gi: not on one 40Gi slice, nor on one H100.
    fires(
        &render_with(&svc(big, "  accelerator: mig-3g\n"), Some(platform), &[]),
        "ISVC070",
        "container \"vllm\" loads 70B parameters, 16-bit weights of about 130Gi onto 1 GPU of 40Gi each, which hold 36Gi at a memory utilization of 0.9",
    );
    fires(&render_with(&svc(big, ""), Some(platform), &[]), "ISVC070", "onto 1 GPU of 80Gi each, which hold 72Gi");
    // Four H100s hold it; so does one at 8 bits (about 65Gi of weights).
    quiet(&render_with(&svc(big, "  gpusPerReplica: 4\n"), Some(platform), &[]), "ISVC070");
    quiet(&render_with(&svc(big, "  args: [--quantization=fp8]\n"), Some(platform), &[]), "ISVC070");
    // A lower --gpu-memory-utilization leaves less for the weights.
    fires(
        &render_with(&svc(big, "  gpusPerReplica: 2\n  args: [--gpu-memory-utilization=0.5]\n"), Some(platform), &[]),
        "ISVC070",
        "onto 2 GPUs of 80Gi each, which hold 80Gi at a memory utilization of 0.5",
    );
    quiet(&render_with(&svc("Qwen/Qwen3-8B", "  accelerator: mig-3g\n"), Some(platform), &[]), "ISVC070");
    // Without a profile's memory, nothing to check.
    quiet(&render_with(&svc(big, ""), None, &[]), "ISVC070");
}

#[test]
fn isvc050_a_download_job_of_a_gated_model_without_a_token() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\nmodelCache: {size: 500Gi}\n";
    let svc = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: m, namespace: ml}\n\
               spec:\n  baseModel: meta-llama/Llama-3.1-8B-Instruct\n  revision: 0e9e39f249a16976918f6564b8830bc894c89659\n  replicas: 1\n";
    let objects = render_with(svc, Some(platform), &[]);
    let found = of_rule(&objects, "ISVC050");
    assert_eq!(
        found.iter().map(|f| (f.object.to_string(), f.message.clone())).collect::<Vec<_>>(),
        [(
            objects.iter().find(|o| o.id.kind == "Job").unwrap().id.to_string(),
            "container \"download\" downloads the gated model meta-llama/Llama-3.1-8B-Instruct with no HF_TOKEN; the download is refused".to_string()
        )],
        "the offline server is not the one that downloads"
    );
    let with = format!("{platform}defaults:\n  huggingFace:\n    tokenSecret: {{name: hf-token, key: token}}\n");
    quiet(&render_with(svc, Some(&with), &[]), "ISVC050");
}

#[test]
fn isvc071_a_cache_of_a_branch() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\nmodelCache: {size: 500Gi}\n";
    let svc = |revision: &str| {
        format!(
            "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: m, namespace: ml}}\n\
             spec:\n  baseModel: Qwen/Qwen3-8B\n  replicas: 1\n{revision}"
        )
    };
    let objects = render_with(&svc(""), Some(platform), &[]);
    fires(
        &objects,
        "ISVC071",
        "the download of Qwen/Qwen3-8B is of \"main\", not a commit: the cache keeps what it had at the first run",
    );
    // The server is told the branch the cache holds, so offline it finds refs/main.
    quiet(&objects, "ISVC056");
    fires(&render_with(&svc("  revision: v1.0\n"), Some(platform), &[]), "ISVC071", "is of \"v1.0\", not a commit");
    quiet(&render_with(&svc("  revision: 0e9e39f249a16976918f6564b8830bc894c89659\n"), Some(platform), &[]), "ISVC071");
}
