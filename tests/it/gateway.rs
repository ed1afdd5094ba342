//! The inference gateway path: every InferencePool's endpoint picker
//! (present, reachable through the tenant NetworkPolicy, failing open by
//! default, admitted), weighted routes shared by several services, scaling
//! on the picker's queue (and from zero), `diff` of a canary step, and the
//! rules ISVC060–062.

use isvc::check;
use isvc::model::objects::Object;
use serde_json::{Value, json};

use crate::harness::Test;

/// A tenant namespace `chat` behind a Gateway in `gateway-system`, with the
/// Inference Extension; `extra` is appended under `gateway:`.
fn platform(extra: &str, more: &str) -> String {
    format!(
        "apiVersion: ai.example.com/v1alpha1\nkind: Platform\n\
         network:\n  allowFrom: [monitoring]\n\
         tenants:\n  - name: chat\n    quota:\n      requests.nvidia.com/gpu: 16\n\
         gateway:\n  parentRef: {{name: inference-gateway, namespace: gateway-system}}\n  inferenceExtension: true\n{extra}{more}"
    )
}

fn service(name: &str, gateway: &str, scaling: &str) -> String {
    format!(
        "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: {name}, namespace: chat}}\n\
         spec:\n  baseModel: Qwen/Qwen3-0.6B\n  {scaling}\n  gateway: {gateway}\n"
    )
}

fn get<'a>(objects: &'a [Object], kind: &str, name: &str) -> Option<&'a Value> {
    objects.iter().find(|o| o.id.kind == kind && o.id.name == name).map(|o| &o.value)
}

fn ids(findings: &[check::Finding], id: &str) -> Vec<String> {
    findings.iter().filter(|f| f.rule.id == id).map(|f| f.message.clone()).collect()
}

#[test]
fn every_pool_gets_its_picker_reachable_and_failing_open() {
    let objects = Test::new()
        .file("services/a.yaml", service("a", "{route: a.example.com}", "replicas: 1"))
        .file("services/b.yaml", service("b", "{route: b.example.com}", "replicas: 1"))
        .platform(platform("", ""))
        .objects();
    for pool in ["a", "b"] {
        let p = get(&objects, "InferencePool", pool).unwrap();
        let epp = format!("{pool}-epp");
        assert_eq!(
            p["spec"]["endpointPickerRef"],
            json!({"kind": "Service", "name": epp, "port": {"number": 9002}, "failureMode": "FailOpen"})
        );
        for kind in
            ["ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Service", "Deployment", "PodDisruptionBudget"]
        {
            assert!(get(&objects, kind, &epp).is_some(), "{kind} {epp}");
        }
        let d = get(&objects, "Deployment", &epp).unwrap();
        let pod = &d["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], json!(epp));
        assert_eq!(
            pod["containers"][0]["readinessProbe"]["grpc"],
            json!({"port": 9003, "service": "inference-extension"})
        );
        let args: Vec<&str> =
            pod["containers"][0]["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(args.windows(2).any(|w| w == ["--pool-name", pool]), "{args:?}");
        assert!(args.windows(2).any(|w| w == ["--pool-namespace", "chat"]), "{args:?}");
        assert!(args.windows(2).any(|w| w == ["--config-file", "/config/config.yaml"]), "{args:?}");
        // The picker reads pods and pools, so it may read them.
        let rules = &get(&objects, "Role", &epp).unwrap()["rules"];
        assert!(rules.as_array().unwrap().iter().any(|r| r["resources"] == json!(["pods"])));
        assert!(rules.as_array().unwrap().iter().any(|r| r["resources"] == json!(["inferencepools"])));
        let config = get(&objects, "ConfigMap", &epp).unwrap()["data"]["config.yaml"].as_str().unwrap().to_string();
        for scorer in ["queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"] {
            assert!(config.contains(&format!("- type: {scorer}\n")), "{config}");
        }
        assert!(!config.contains("lora-affinity-scorer") && !config.contains("flowControl"), "{config}");
    }
    // The Gateway's namespace reaches the pickers' ext-proc port and the
    // serving port; monitoring reaches the metrics port.
    let np = get(&objects, "NetworkPolicy", "tenant-isolation").unwrap();
    let ingress = np["spec"]["ingress"].as_array().unwrap();
    assert!(
        ingress.contains(&json!({
            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateway-system"}}}],
            "ports": [{"protocol": "TCP", "port": 8000}, {"protocol": "TCP", "port": 9002}],
        })),
        "{ingress:#?}"
    );
    assert!(
        ingress
            .iter()
            .any(|r| r["ports"].as_array().is_some_and(|p| p.contains(&json!({"protocol": "TCP", "port": 9090}))))
    );
    // With monitoring.namespace, Prometheus' namespace gets both metrics ports.
    let objects = Test::new()
        .file("services/a.yaml", service("a", "{route: a.example.com}", "replicas: 1"))
        .platform(platform("", "monitoring: {namespace: prometheus}\n"))
        .objects();
    let np = get(&objects, "NetworkPolicy", "tenant-isolation").unwrap();
    assert!(np["spec"]["ingress"].as_array().unwrap().contains(&json!({
        "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "prometheus"}}}],
        "ports": [{"protocol": "TCP", "port": 8000}, {"protocol": "TCP", "port": 9090}],
    })));
    // And every rule passes on the picker's objects.
    let findings = Test::new()
        .file("services/a.yaml", service("a", "{route: a.example.com}", "replicas: 1"))
        .platform(platform("", ""))
        .examine()
        .unwrap()
        .findings;
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn failure_mode_is_platform_tunable_and_adapters_add_lora_affinity() {
    let svc = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: a, namespace: chat}\n\
               spec:\n  baseModel: Qwen/Qwen3-0.6B\n  replicas: 1\n  adapters: [{name: sql, source: org/sql}]\n  gateway: {route: a.example.com}\n";
    let objects = Test::new()
        .service(svc)
        .platform(platform("  endpointPicker: {failureMode: FailClose, replicas: 2}\n", ""))
        .objects();
    assert_eq!(get(&objects, "InferencePool", "a").unwrap()["spec"]["endpointPickerRef"]["failureMode"], "FailClose");
    let config = get(&objects, "ConfigMap", "a-epp").unwrap()["data"]["config.yaml"].as_str().unwrap().to_string();
    assert!(config.contains("- type: lora-affinity-scorer\n"), "{config}");
    let d = get(&objects, "Deployment", "a-epp").unwrap();
    assert_eq!(d["spec"]["replicas"], 2);
    let args = d["spec"]["template"]["spec"]["containers"][0]["args"].as_array().unwrap();
    assert!(args.contains(&json!("--ha-enable-leader-election")));
    let rules = get(&objects, "Role", "a-epp").unwrap()["rules"].as_array().unwrap().clone();
    assert!(rules.iter().any(|r| r["resources"] == json!(["leases"])));
}

#[test]
fn a_priority_turns_flow_control_on_and_names_the_current_header() {
    let objects = Test::new()
        .service(service("a", "{route: a.example.com, priority: 5}", "replicas: 1"))
        .platform(platform("", ""))
        .objects();
    let config = get(&objects, "ConfigMap", "a-epp").unwrap()["data"]["config.yaml"].as_str().unwrap().to_string();
    assert!(config.contains("featureGates:\n- flowControl\n"), "{config}");
    assert_eq!(get(&objects, "InferenceObjective", "a").unwrap()["spec"]["priority"], 5);
    let template = isvc::BUILTIN_TEMPLATES.iter().find(|(n, _)| *n == "inferenceobjective.yaml").unwrap().1;
    assert!(template.contains("x-llm-d-inference-objective"));
}

#[test]
fn a_route_split_90_10_has_one_weighted_backend_per_service() {
    let objects = Test::new()
        .file("services/v1.yaml", service("llama-v1", "{route: llm.example.com/llama, weight: 90}", "replicas: 1"))
        .file("services/v2.yaml", service("llama-v2", "{route: llm.example.com/llama, weight: 10}", "replicas: 1"))
        .platform(platform("", ""))
        .objects();
    let route = get(&objects, "HTTPRoute", "llama-v1").unwrap();
    assert_eq!(
        route["spec"]["rules"][0]["backendRefs"],
        json!([
            {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llama-v1", "weight": 90},
            {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llama-v2", "weight": 10},
        ])
    );
    assert!(get(&objects, "HTTPRoute", "llama-v2").is_none(), "one HTTPRoute per route");
    // The files' order does not matter.
    let reversed = Test::new()
        .file("services/v2.yaml", service("llama-v2", "{route: llm.example.com/llama, weight: 10}", "replicas: 1"))
        .file("services/v1.yaml", service("llama-v1", "{route: llm.example.com/llama, weight: 90}", "replicas: 1"))
        .platform(platform("", ""))
        .objects();
    assert_eq!(get(&reversed, "HTTPRoute", "llama-v1"), Some(route));
    assert!(get(&objects, "Deployment", "llama-v2-epp").is_some());
    // Without the extension the backends are the Services, on their port.
    let plain = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ngateway:\n  parentRef: {name: gw, namespace: gateway-system}\n";
    let objects = Test::new()
        .file("services/v1.yaml", service("llama-v1", "{route: /llama, weight: 50}", "replicas: 1"))
        .file("services/v2.yaml", service("llama-v2", "{route: /llama, weight: 50}", "replicas: 1"))
        .platform(plain)
        .objects();
    assert_eq!(
        get(&objects, "HTTPRoute", "llama-v1").unwrap()["spec"]["rules"][0]["backendRefs"],
        json!([
            {"group": "", "kind": "Service", "name": "llama-v1", "port": 8000, "weight": 50},
            {"group": "", "kind": "Service", "name": "llama-v2", "port": 8000, "weight": 50},
        ])
    );
}

#[test]
fn weights_that_do_not_add_up_are_refused_with_every_file_and_line() {
    let err = Test::new()
        .file("services/v1.yaml", service("llama-v1", "{route: llm.example.com/llama, weight: 90}", "replicas: 1"))
        .file("services/v2.yaml", service("llama-v2", "{route: llm.example.com/llama, weight: 20}", "replicas: 1"))
        .platform(platform("", ""))
        .compile()
        .unwrap_err()
        .render(false);
    assert!(
        err.contains(
            "the weights of route \"llm.example.com/llama\" add up to 110, not 100: 90 at services/v1.yaml:7:51 \
             (chat/llama-v1 in services/v1.yaml), 20 at services/v2.yaml:7:51 (chat/llama-v2 in services/v2.yaml)"
        ),
        "{err}"
    );
    assert!(err.contains("--> services/v1.yaml:7:51"), "{err}");
    // Sharing without weights is still a conflict.
    let err = Test::new()
        .file("services/v1.yaml", service("llama-v1", "{route: llm.example.com/llama, weight: 90}", "replicas: 1"))
        .file("services/v2.yaml", service("llama-v2", "{route: llm.example.com/llama}", "replicas: 1"))
        .platform(platform("", ""))
        .compile()
        .unwrap_err()
        .render(false);
    assert!(err.contains("route \"llm.example.com/llama\" is claimed by two services: chat/llama-v1 in services/v1.yaml and chat/llama-v2 in services/v2.yaml"), "{err}");
    // A lone weight must be 100.
    let err = Test::new()
        .file("services/v1.yaml", service("llama-v1", "{route: /llama, weight: 90}", "replicas: 1"))
        .platform(platform("", ""))
        .compile()
        .unwrap_err()
        .render(false);
    assert!(err.contains("add up to 90, not 100"), "{err}");
}

#[test]
fn services_scale_on_the_pickers_queue_and_from_zero_where_it_holds_requests() {
    let keda = "keda:\n  serverAddress: http://prometheus.monitoring.svc:9090\nmonitoring: {}\n";
    let flow = "  endpointPicker: {flowControl: true}\n";
    let scaling = "autoscaling: {min: 0, max: 2, targetQueueLength: 4}";
    let objects =
        Test::new().service(service("a", "{route: a.example.com}", scaling)).platform(platform(flow, keda)).objects();
    let so = get(&objects, "ScaledObject", "a").unwrap();
    assert_eq!(so["spec"]["minReplicaCount"], 0);
    // At zero while no request waits, KEDA's doing (kedacore/keda
    // pkg/scaling/executor, scaleToZero): plan leaves the count, and status
    // calls the service Ready and says so.
    let mut live: Vec<Value> = objects.iter().map(|o| o.value.clone()).collect();
    let deploy = live.iter_mut().find(|v| v["kind"] == "Deployment" && v["metadata"]["name"] == "a").unwrap();
    deploy["spec"]["replicas"] = json!(0);
    let plan = isvc::emit::plan::plan(&objects, &live);
    assert!(plan.is_converged(), "{plan:#?}");
    let text = service("a", "{route: a.example.com}", scaling);
    let (loaded, _) = isvc::load::parse_services(&isvc::base::diagnostics::Source::new("services.yaml", text));
    let services: Vec<_> = loaded.iter().map(|s| &*s.service).collect();
    let status = &isvc::emit::plan::status(&services, &objects, &live, &plan)[0];
    assert_eq!((status.phase, status.wanted), (isvc::model::v1alpha2::Phase::Ready, 0));
    assert_eq!(status.message, "scaled to zero by its autoscaler, between 0 and 2 pods");
    assert_eq!(
        so["spec"]["triggers"][0]["metadata"]["query"],
        "sum(llm_d_epp_flow_control_queue_size{namespace=\"chat\",service=\"a-epp\"})"
    );
    // Prometheus must scrape the picker, not only vLLM (ISVC040).
    let mut unscraped = Test::new()
        .service(service("a", "{route: a.example.com}", scaling))
        .platform(platform(flow, keda))
        .examine()
        .unwrap()
        .objects;
    unscraped.retain(|o| !(o.id.kind == "ServiceMonitor" && o.id.name == "a-epp"));
    let found = ids(&check::run(&unscraped), "ISVC040");
    assert!(
        found[0].contains(
            "no ServiceMonitor or PodMonitor scrapes the pods of the endpoint picker behind Service chat/a-epp"
        ),
        "{found:?}"
    );
    // An HPA reads the picker's queue as an Object metric of its Service.
    let objects = Test::new()
        .service(service("a", "{route: a.example.com}", "autoscaling: {min: 1, max: 2, targetQueueLength: 4}"))
        .platform(platform(flow, ""))
        .objects();
    let hpa = get(&objects, "HorizontalPodAutoscaler", "a").unwrap();
    assert_eq!(
        hpa["spec"]["metrics"][0]["object"]["describedObject"],
        json!({"apiVersion": "v1", "kind": "Service", "name": "a-epp"})
    );
    assert_eq!(hpa["spec"]["metrics"][0]["object"]["metric"]["name"], "llm_d_epp_flow_control_queue_size");
    // Elsewhere min: 0 stays refused, with the reason.
    for (p, why) in [
        (platform("", keda), "the queue length is read from the serving pods"),
        (platform(flow, ""), "a HorizontalPodAutoscaler cannot scale to zero"),
    ] {
        let err = Test::new()
            .file("services/a.yaml", service("a", "{route: a.example.com}", scaling))
            .platform(p)
            .compile()
            .unwrap_err()
            .render(false);
        assert!(err.contains(&format!("error: autoscaling.min is 0, but {why}")), "{err}");
        assert!(err.contains("--> services/a.yaml:6:"), "{err}");
    }
}

#[test]
fn diff_shows_a_weight_change_as_a_traffic_shift() {
    let test = Test::new()
        .file("services/v1.yaml", service("llama-v1", "{route: /llama, weight: 90}", "replicas: 1"))
        .file("services/v2.yaml", service("llama-v2", "{route: /llama, weight: 10}", "replicas: 1"))
        .platform(platform("", ""));
    let run = test.cli(&["render", "services", "--platform", "platform.yaml", "--out", "rendered"]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    std::fs::write(run.path("services/v1.yaml"), service("llama-v1", "{route: /llama, weight: 50}", "replicas: 1"))
        .unwrap();
    std::fs::write(run.path("services/v2.yaml"), service("llama-v2", "{route: /llama, weight: 50}", "replicas: 1"))
        .unwrap();
    let out = crate::harness::isvc(run.dir.path())
        .args(["diff", "services", "--platform", "platform.yaml", "--out", "rendered", "--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("0 added, 1 changed (1 shift traffic), 0 removed"), "{md}");
    assert!(md.contains("| changed | HTTPRoute | chat | llama-v1 | traffic shift |"), "{md}");
    assert!(!md.contains("restarts pods"), "{md}");
}

/// The objects of one service behind the Gateway, for the rules.
fn rendered() -> Vec<Object> {
    Test::new()
        .service(service("a", "{route: a.example.com}", "replicas: 1"))
        .platform(platform("", ""))
        .examine()
        .unwrap()
        .objects
}

#[test]
fn isvc060_pool_without_its_picker() {
    let objects = rendered();
    assert!(ids(&check::run(&objects), "ISVC060").is_empty());
    let without: Vec<Object> =
        objects.iter().filter(|o| !(o.id.kind == "Service" && o.id.name == "a-epp")).cloned().collect();
    assert_eq!(
        ids(&check::run(&without), "ISVC060"),
        [
            "its endpointPickerRef names Service chat/a-epp, which is not rendered: the Gateway routes without it (FailOpen)"
        ]
    );
    let mut wrong_port = objects.clone();
    let pool = wrong_port.iter_mut().find(|o| o.id.kind == "InferencePool").unwrap();
    pool.value["spec"]["endpointPickerRef"]["port"]["number"] = json!(9999);
    pool.value["spec"]["endpointPickerRef"]["failureMode"] = json!("FailClose");
    assert_eq!(
        ids(&check::run(&wrong_port), "ISVC060"),
        [
            "its endpointPickerRef names port 9999 of Service chat/a-epp, which has no such port: every request to the pool fails (FailClose)"
        ]
    );
    let no_pods: Vec<Object> =
        objects.iter().filter(|o| !(o.id.kind == "Deployment" && o.id.name == "a-epp")).cloned().collect();
    assert_eq!(
        ids(&check::run(&no_pods), "ISVC060"),
        [
            "its endpointPickerRef names Service chat/a-epp, which selects no pods: the Gateway routes without it (FailOpen)"
        ]
    );
}

#[test]
fn isvc061_network_policy_keeps_the_gateway_out() {
    let objects = rendered();
    assert!(ids(&check::run(&objects), "ISVC061").is_empty());
    // The policy before isvc admitted the Gateway to the picker: the serving port only.
    let mut serving_only = objects.clone();
    let np = serving_only.iter_mut().find(|o| o.id.kind == "NetworkPolicy").unwrap();
    let ingress = np.value["spec"]["ingress"].as_array_mut().unwrap();
    ingress.retain(|r| r["from"][0]["namespaceSelector"]["matchLabels"].get("kubernetes.io/metadata.name").is_none());
    ingress.push(json!({"from": [{"namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["gateway-system"]}]}}], "ports": [{"protocol": "TCP", "port": 8000}]}));
    assert_eq!(
        ids(&check::run(&serving_only), "ISVC061"),
        [
            "no NetworkPolicy of namespace chat admits the Gateway's namespace gateway-system to port 9002 of its endpoint picker Service chat/a-epp: the ext-proc call of every request is dropped"
        ]
    );
    // Without any rule for it, the serving port is closed too.
    let mut closed = objects.clone();
    let np = closed.iter_mut().find(|o| o.id.kind == "NetworkPolicy").unwrap();
    np.value["spec"]["ingress"].as_array_mut().unwrap().truncate(1);
    let found = ids(&check::run(&closed), "ISVC061");
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found.iter().any(|m| m.contains("to port 8000 of the pool's pods")), "{found:#?}");
}

#[test]
fn isvc062_picker_pods_refused_by_the_namespace() {
    let limits = "    limits:\n      max: {cpu: 500m, memory: 64Gi, nvidia.com/gpu: 8}\n";
    let p = format!(
        "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ndefaults:\n  resources: {{cpuPerGpu: 500m}}\n\
         tenants:\n  - name: chat\n{limits}\
         gateway:\n  parentRef: {{name: gw, namespace: gateway-system}}\n  inferenceExtension: true\n"
    );
    let findings = Test::new()
        .service(service("a", "{route: a.example.com}", "replicas: 1"))
        .platform(p)
        .examine()
        .unwrap()
        .findings;
    let found = ids(&findings, "ISVC062");
    assert!(
        found.iter().any(|m| m.starts_with(
            "its endpoint picker Deployment chat/a-epp: container \"epp\": cpu request 1 is above the maximum of 500m"
        )),
        "{found:#?}"
    );
    let fits = format!(
        "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ndefaults:\n  resources: {{cpuPerGpu: 500m}}\n\
         tenants:\n  - name: chat\n{limits}\
         gateway:\n  parentRef: {{name: gw, namespace: gateway-system}}\n  inferenceExtension: true\n  \
         endpointPicker:\n    resources: {{requests: {{cpu: 500m, memory: 1Gi}}, limits: {{cpu: 500m, memory: 2Gi}}}}\n"
    );
    let findings = Test::new()
        .service(service("a", "{route: a.example.com}", "replicas: 1"))
        .platform(fits)
        .examine()
        .unwrap()
        .findings;
    assert!(ids(&findings, "ISVC062").is_empty(), "{findings:#?}");
}

#[test]
fn picker_pods_count_in_the_tenant_quota() {
    // One serving pod requests 4 CPUs, its picker 1: a quota of 4.5 CPUs
    // refuses the picker, and the error points at the service's gateway.
    let p = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\n\
             tenants:\n  - name: chat\n    quota: {requests.cpu: 4500m}\n\
             gateway:\n  parentRef: {name: gw, namespace: gateway-system}\n  inferenceExtension: true\n";
    let err = Test::new()
        .file("services/a.yaml", service("a", "{route: a.example.com}", "replicas: 1"))
        .platform(p)
        .compile()
        .unwrap_err()
        .render(false);
    assert!(
        err.contains(
            "exceeded quota: chat, requested: requests.cpu=1, used: requests.cpu=4, limited: requests.cpu=4500m"
        ),
        "{err}"
    );
    assert!(err.contains("--> services/a.yaml:7:12"), "{err}");
}

#[test]
fn picker_requests_above_their_limits_are_refused_in_the_platform_file() {
    let err = Test::new()
        .service(service("a", "{route: a.example.com}", "replicas: 1"))
        .platform(platform("  endpointPicker:\n    resources: {requests: {memory: 8Gi}, limits: {memory: 4Gi}}\n", ""))
        .compile()
        .unwrap_err()
        .render(false);
    assert!(
        err.contains("the picker's memory request (8Gi) is above its limit (4Gi); the API server refuses such a pod"),
        "{err}"
    );
    assert!(err.contains("--> platform.yaml:"), "{err}");
}

/// A service named as another's endpoint picker (`<name>-epp`) renders
/// objects of the picker's kinds and name: one error for the pair, at the
/// service named so, from every command that compiles, and from a
/// re-render that compiles only the namespace the new service joins.
/// Before, both were written (into two directories) and the index read
/// one of them for the other.
#[test]
fn a_service_named_as_another_ones_endpoint_picker_is_an_error() {
    let expected = "\
error: Service, Deployment and PodDisruptionBudget chat/a-epp are each rendered twice, for service \"a\" and service \"a-epp\": a cluster holds one object of a kind and name
  --> services/a-epp.yaml:3:18
   |
 3 | metadata: {name: a-epp, namespace: chat}
   |                  ^^^^^
  = note: object names come from service names, and a service with a gateway route also names its endpoint picker's objects <service>-epp
  = help: rename one of the services

error: aborting due to 1 error; nothing was written
";
    let test = Test::new()
        .file("services/a.yaml", service("a", "{route: a.example.com}", "replicas: 1"))
        .file("services/b.yaml", service("b", "{route: b.example.com}", "replicas: 1"))
        .platform(platform("", ""));
    let run = test.cli(&["render", "services", "--platform", "platform.yaml", "--out", "rendered"]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let named = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\n\
                 metadata: {name: a-epp, namespace: chat}\nspec: {baseModel: Qwen/Qwen3-0.6B, replicas: 1}\n";
    std::fs::write(run.path("services/a-epp.yaml"), named).unwrap();
    let before = std::fs::read_to_string(run.path("rendered/.isvc-manifest")).unwrap();
    for args in [
        &["render", "services", "--platform", "platform.yaml", "--out", "rendered"][..],
        &["render", "services", "--platform", "platform.yaml", "--stdout"],
        &["render", "services", "--platform", "platform.yaml", "--out", "rendered", "--full"],
    ] {
        let out = crate::harness::isvc(run.dir.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), expected, "{args:?}");
        assert!(out.stdout.is_empty());
    }
    assert_eq!(std::fs::read_to_string(run.path("rendered/.isvc-manifest")).unwrap(), before, "nothing written");
    assert!(!run.path("rendered/chat/a-epp").exists());
    let out = crate::harness::isvc(run.dir.path())
        .args(["check", "services", "--platform", "platform.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with(expected.lines().next().unwrap()));
}
