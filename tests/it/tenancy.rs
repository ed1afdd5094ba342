//! Multi-tenancy: quota, LimitRange, priority and Kueue checks at compile
//! time, in the words the API server would use.

use std::path::Path;

use assert_cmd::Command;
use isvc::model::objects::Object;

use crate::harness::Test;

/// Compiles a platform file and services given as text.
fn compile(platform: &str, services: &str) -> Result<Vec<Object>, String> {
    Test::new().service(services).platform(platform).compile().map(|c| c.objects).map_err(|d| d.render(false))
}

const PLATFORM: &str = "apiVersion: ai.example.com/v1alpha1
kind: Platform
tenants:
  - name: team-a
    quota:
      requests.nvidia.com/gpu: 8
      count/deployments.apps: 2
";

fn service(name: &str, replicas: i32, gpus: i32, extra: &str) -> String {
    format!(
        "---\napiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata: {{name: {name}, namespace: team-a}}\nspec: {{model: m, replicas: {replicas}, gpusPerReplica: {gpus}{extra}}}\n"
    )
}

#[test]
fn steady_state_over_quota_names_the_services_that_use_it() {
    let services = service("a", 2, 2, "") + &service("b", 3, 2, ", priority: offline");
    let err = compile(PLATFORM, &services).unwrap_err();
    // The Deployments start at their replicas: a 2 x 2 GPUs, b 3 x 2.
    assert!(
        err.contains("error: exceeded quota: team-a, requested: requests.nvidia.com/gpu=6, used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=8 (namespace team-a, at steady state)"),
        "{err}"
    );
    assert!(err.contains("(a uses requests.nvidia.com/gpu=4)"), "{err}");
    assert!(err.contains("namespace team-a needs requests.nvidia.com/gpu=10"), "requested + used = needed: {err}");
}

#[test]
fn the_autoscaler_maximum_counts_only_tiers_that_are_not_preemptible() {
    // a: 1 replica x 2 GPUs, peak 3 x 2 = 6; b is offline (preemptible): 8 at peak is fine.
    let ok = service("a", 1, 2, "") + &service("b", 1, 2, ", priority: offline");
    compile(PLATFORM, &ok).unwrap();
    let too_much = service("a", 2, 2, "");
    let err = compile(PLATFORM, &too_much).unwrap_err();
    assert!(err.contains("requested: requests.nvidia.com/gpu=12, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=8 (namespace team-a, at the autoscalers' maximum)"), "{err}");
}

#[test]
fn object_counts_are_quota_too() {
    let services = service("a", 0, 1, "") + &service("b", 0, 1, "") + &service("c", 0, 1, "");
    let err = compile(PLATFORM, &services).unwrap_err();
    assert!(err.contains("exceeded quota: team-a, requested: count/deployments.apps=1, used: count/deployments.apps=2, limited: count/deployments.apps=2"), "{err}");
}

#[test]
fn a_quota_on_limits_needs_a_limit_or_a_default() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: team-a\n    quota: {limits.cpu: 64}\n";
    let err = compile(platform, &service("a", 1, 1, "")).unwrap_err();
    assert!(err.contains("error: Deployment team-a/a [ISVC021]: ResourceQuota team-a/team-a constrains limits.cpu, which container \"vllm\" does not set: every pod is refused (must specify limits.cpu)"), "{err}");
    let with_default = format!("{platform}    limits:\n      defaultLimit: {{cpu: 4}}\n");
    compile(&with_default, &service("a", 1, 1, "")).unwrap();
}

#[test]
fn requests_above_the_limit_range_maximum_are_rejected() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: team-a\n    limits:\n      max: {nvidia.com/gpu: 4}\n";
    let err = compile(platform, &service("a", 1, 8, "")).unwrap_err();
    assert!(err.contains("error: Deployment team-a/a [ISVC023]: container \"vllm\": nvidia.com/gpu limit 8 is above the maximum of 4 per Container in LimitRange team-a/container-limits"), "{err}");
    compile(platform, &service("a", 1, 4, "")).unwrap();
}

#[test]
fn a_gpu_maximum_comes_with_a_default_of_zero() {
    // Without a default, the API server makes the max the default limit and
    // request, and every container without a GPU limit asks for 4 GPUs.
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: team-a\n    limits:\n      max: {nvidia.com/gpu: 4, cpu: 32}\n";
    let objects = compile(platform, &service("a", 1, 1, "")).unwrap();
    let lr = &objects.iter().find(|o| o.id.kind == "LimitRange").unwrap().value["spec"]["limits"][0];
    assert_eq!(lr["default"]["nvidia.com/gpu"], "0");
    assert_eq!(lr["defaultRequest"]["nvidia.com/gpu"], "0");
    assert_eq!(lr["max"]["nvidia.com/gpu"], "4");
    // CPU is not an extended resource: its max stays the default limit.
    assert!(lr["default"].get("cpu").is_none());
    // A GPU default the platform gives is kept, and ISVC041 refuses it.
    let given = platform.replace("max:", "defaultLimit: {memory: 1Gi, nvidia.com/gpu: 1}\n      max:");
    let err = compile(&given, &service("a", 1, 1, "")).unwrap_err();
    assert!(
        err.contains("[ISVC041]: a container that sets no resources (a sidecar, an init container, `kubectl debug`) in namespace team-a is given nvidia.com/gpu: 1 as its limit and 1 as its request by LimitRange team-a/container-limits: its default"),
        "{err}"
    );
}

#[test]
fn a_surge_that_cannot_fit_stalls_the_rollout() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ndefaults:\n  rollout: {maxSurge: 1, maxUnavailable: 0}\ntenants:\n  - name: team-a\n    quota: {requests.nvidia.com/gpu: 8}\n";
    let err = compile(platform, &service("a", 1, 8, ", priority: offline")).unwrap_err();
    assert!(err.contains("error: Deployment team-a/a [ISVC019]: a rollout starts 1 extra pod (maxSurge 1), but ResourceQuota team-a/team-a has no room for requests.nvidia.com/gpu: 16 needed, 8 allowed"), "{err}");
}

#[test]
fn priorities_and_queues_must_exist_and_be_allowed() {
    let platform =
        "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: team-a\n    priorities: [offline]\n";
    let err = compile(platform, &service("a", 1, 1, ", priority: online")).unwrap_err();
    assert!(err.contains("tenant \"team-a\" may not use priority \"online\"; it may use offline"), "{err}");
    assert!(err.contains("--> services.yaml:5:"), "points at the service: {err}");
    let err = compile(platform, &service("a", 1, 1, ", priority: gold")).unwrap_err();
    assert!(err.contains("unknown priority \"gold\"; the platform declares offline, online"), "{err}");
    let err = compile(platform, &service("a", 1, 1, ", queue: fast")).unwrap_err();
    assert!(err.contains("tenant \"team-a\" has no queue \"fast\" (it has none)"), "{err}");
}

#[test]
fn every_pod_carries_its_priority_class_and_online_gets_a_disruption_budget() {
    let objects = compile(PLATFORM, &(service("a", 1, 1, "") + &service("b", 1, 1, ", priority: offline"))).unwrap();
    let find =
        |kind: &str, name: &str| objects.iter().find(|o| o.id.kind == kind && o.id.name == name).map(|o| &o.value);
    // PriorityClasses are cluster-wide: their names carry the platform's prefix.
    assert_eq!(find("Deployment", "a").unwrap()["spec"]["template"]["spec"]["priorityClassName"], "isvc-online");
    assert_eq!(find("Deployment", "b").unwrap()["spec"]["template"]["spec"]["priorityClassName"], "isvc-offline");
    let pdb = find("PodDisruptionBudget", "a").unwrap();
    assert_eq!(pdb["spec"]["maxUnavailable"], 1);
    assert_eq!(pdb["spec"]["unhealthyPodEvictionPolicy"], "AlwaysAllow");
    assert!(find("PodDisruptionBudget", "b").is_none(), "offline gets no budget");
    assert_eq!(find("PriorityClass", "isvc-offline").unwrap()["preemptionPolicy"], "Never");
    assert_eq!(find("PriorityClass", "isvc-online").unwrap()["preemptionPolicy"], "PreemptLowerPriority");
    assert!(find("WorkloadPriorityClass", "isvc-online").is_none(), "no queues, no Kueue objects");
    assert_eq!(find("ResourceQuota", "team-a").unwrap()["spec"]["hard"]["requests.nvidia.com/gpu"], "8");
    assert!(find("LimitRange", "container-limits").unwrap()["spec"]["limits"][0]["defaultRequest"]["cpu"] == "500m");
}

#[test]
fn the_priority_class_prefix_is_the_platforms() {
    let platform = format!("{PLATFORM}priorityClassPrefix: acme-\n");
    let objects = compile(&platform, &service("a", 1, 1, "")).unwrap();
    let deploy = objects.iter().find(|o| o.id.kind == "Deployment").unwrap();
    assert_eq!(deploy.value["spec"]["template"]["spec"]["priorityClassName"], "acme-online");
    assert!(objects.iter().any(|o| o.id.kind == "PriorityClass" && o.id.name == "acme-online"));
    let err = compile(&format!("{PLATFORM}priorityClassPrefix: Acme_\n"), &service("a", 1, 1, "")).unwrap_err();
    assert!(err.contains("prefix \"Acme_\" makes PriorityClass name \"Acme_offline\" invalid"), "{err}");
    // An empty prefix keeps the bare tier names.
    let bare = format!("{PLATFORM}priorityClassPrefix: \"\"\n");
    let objects = compile(&bare, &service("a", 1, 1, "")).unwrap();
    assert!(objects.iter().any(|o| o.id.kind == "PriorityClass" && o.id.name == "online"));
}

#[test]
fn kueue_queues_must_cover_what_the_pods_request() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: team-a\n    queues:\n      - {name: online, priority: online, nominalQuota: {nvidia.com/gpu: 8}}\n";
    let err = compile(platform, &service("a", 1, 1, "")).unwrap_err();
    assert!(
        err.contains("team-a/a requests cpu, which queue \"online\" does not cover: Kueue never admits its pods"),
        "{err}"
    );
}

#[test]
fn kueue_nominal_quotas_must_fit_the_quota_and_the_cluster() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\nkueue:\n  capacity: {nvidia.com/gpu: 8}\ntenants:\n  - name: team-a\n    quota: {requests.nvidia.com/gpu: 8}\n    queues:\n      - {name: a, nominalQuota: {nvidia.com/gpu: 6}}\n      - {name: b, nominalQuota: {nvidia.com/gpu: 6}}\n";
    let err = compile(platform, "").unwrap_err();
    assert!(
        err.contains(
            "tenant \"team-a\": its queues' nominal quota nvidia.com/gpu=12 exceeds its ResourceQuota nvidia.com/gpu=8"
        ),
        "{err}"
    );
    assert!(err.contains("the queues' nominal quotas add up to nvidia.com/gpu=12, more than the declared cluster capacity nvidia.com/gpu=8"), "{err}");
}

#[test]
fn platform_mistakes_point_at_the_platform_file() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: Team_A\n  - name: b\n    namespaces: [shared]\n  - name: c\n    namespaces: [shared]\n    quota: {requests.cpu: 12cores}\n";
    let err = compile(platform, "").unwrap_err();
    assert!(err.contains("invalid tenant name \"Team_A\""), "{err}");
    assert!(err.contains("namespace \"shared\" belongs to tenant \"b\" already"), "{err}");
    assert!(err.contains("quota \"requests.cpu\": \"12cores\" has an unknown suffix"), "{err}");
    assert!(err.contains("--> platform.yaml:9:"), "{err}");
}

#[test]
fn the_over_quota_example_fails_with_the_expected_errors() {
    let dir = Path::new("tests/tenancy/over-quota");
    let out = Command::cargo_bin("isvc")
        .unwrap()
        .current_dir(dir)
        .args(["--color", "never", "render", "services", "--platform", "platform.yaml", "--stdout"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let expected = std::fs::read_to_string(dir.join("expected.stderr")).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr), expected);
}

/// `isvc check` examines every cluster, as `render` does: a cluster whose
/// replicaFactor pushes a tenant over its quota fails both.
#[test]
fn check_agrees_with_render_on_every_cluster() {
    let platform = "apiVersion: ai.example.com/v1alpha1
kind: Platform
tenants:
  - name: team-a
    quota: {requests.nvidia.com/gpu: 8}
clusters:
  - name: small
    server: https://small.example.com
  - name: big
    server: https://big.example.com
    replicaFactor: 4
";
    let test = Test::new().file("a.yaml", service("a", 1, 2, "")).platform(platform);
    let render = test.cli(&["render", "services", "--platform", "platform.yaml", "--out", "out"]);
    let check = test.cli(&["check", "services", "--platform", "platform.yaml"]);
    let (render_err, check_err) = (render.stderr(), check.stderr());
    assert_ne!(render.code(), Some(0), "render refuses: {render_err}");
    assert_ne!(check.code(), Some(0), "check refuses too: {check_err}");
    assert!(!render.path("out").exists(), "nothing was written");
    let message = "cluster big: exceeded quota: team-a, requested: requests.nvidia.com/gpu=24";
    assert!(render_err.contains(message), "{render_err}");
    assert!(check_err.contains(message), "{check_err}");
    // The cluster that fits passes on its own.
    let small = test.cli(&["check", "services", "--platform", "platform.yaml", "--cluster", "small"]);
    assert_eq!(small.code(), Some(0), "{}", small.stderr());
}

/// The quota table, the compile-time error and `check` give the same
/// numbers: a two-node replica of 16 GPUs runs two pods of 8, and its
/// autoscaler's maximum of 3 replicas needs 48 GPUs.
#[test]
fn quota_numbers_agree_everywhere() {
    let service = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: big, namespace: team-a}\n\
                   spec: {baseModel: meta-llama/Llama-3.1-405B-Instruct, replicas: 1, gpusPerReplica: 16, nodesPerReplica: 2}\n";
    let platform = |gpus: i32| {
        format!(
            "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: team-a\n    quota: {{requests.nvidia.com/gpu: {gpus}}}\n"
        )
    };
    let fits =
        Test::new().service(service).platform(platform(64)).compile().unwrap_or_else(|d| panic!("{}", d.render(false)));
    let row = fits.quota.iter().find(|r| r.key == "requests.nvidia.com/gpu").unwrap();
    assert_eq!((row.steady.as_str(), row.peak.as_str()), ("16", "48"));
    let err = Test::new().service(service).platform(platform(40)).compile().unwrap_err().render(false);
    assert!(
        err.contains("exceeded quota: team-a, requested: requests.nvidia.com/gpu=48, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=40"),
        "{err}"
    );
    assert!(err.contains("namespace team-a needs requests.nvidia.com/gpu=48"), "{err}");
    // `check` refuses what `render` refuses, with the same words.
    let checked = Test::new().service(service).platform(platform(40)).examine().unwrap_err().render(false);
    assert_eq!(checked, err);
}
