//! GitOps delivery: engine objects only from what the platform file says,
//! per-cluster trees with their overrides, and a diff grouped by cluster.

use std::path::Path;

use assert_cmd::Command;
use serde_json::json;

use crate::harness::Test;

fn isvc(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("isvc").unwrap();
    c.current_dir(dir).arg("--color").arg("never");
    c
}

fn copy_example(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    crate::common::copy_dir(&Path::new("examples").join(name), dir.path());
    dir
}

#[test]
fn an_engine_without_a_gitops_section_is_an_error_not_a_guess() {
    let dir = copy_example("basic");
    let out = isvc(dir.path()).args(["render", "services", "--stdout", "--gitops", "argocd"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--gitops argocd needs a platform file with a `gitops` section: name, repoURL, revision and path"),
        "{err}"
    );
}

#[test]
fn clusters_get_their_overrides() {
    let dir = copy_example("gitops");
    let read = |p: &str| std::fs::read_to_string(dir.path().join("rendered").join(p)).unwrap();
    // qwen3 has 4 replicas: 12 at most in prod-us, 6 in prod-eu (x0.5), 3 in staging (x0.25).
    assert!(read("prod-us/default/qwen3/horizontalpodautoscaler.yaml").contains("maxReplicas: 12\n"));
    assert!(read("prod-eu/default/qwen3/horizontalpodautoscaler.yaml").contains("maxReplicas: 6\n"));
    assert!(read("staging/default/qwen3/horizontalpodautoscaler.yaml").contains("maxReplicas: 3\n"));
    assert!(
        read("prod-eu/default/qwen3/deployment.yaml")
            .contains("image: registry.eu.example.com/vllm/vllm-openai:v0.11.0\n")
    );
    assert!(!dir.path().join("rendered/staging/default/llama-70b").exists(), "staging runs only qwen3");
    let set = read("_gitops/applicationset-inference.yaml");
    assert!(set.contains("- cluster: staging\n        server: https://staging.k8s.example.com\n        path: examples/gitops/rendered/staging\n"), "{set}");
}

#[test]
fn diff_is_grouped_by_cluster() {
    let dir = copy_example("gitops");
    let svc = dir.path().join("services/qwen3.yaml");
    std::fs::write(&svc, std::fs::read_to_string(&svc).unwrap().replace("replicas: 4", "replicas: 8")).unwrap();
    let out = isvc(dir.path())
        .args(["diff", "services", "--platform", "platform.yaml", "--out", "rendered"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let clusters: Vec<&str> = text.lines().filter(|l| l.starts_with("cluster ")).collect();
    assert_eq!(clusters, ["cluster prod-eu:", "cluster prod-us:", "cluster staging:"], "{text}");
    let md = isvc(dir.path())
        .args(["diff", "services", "--platform", "platform.yaml", "--out", "rendered", "--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("| Cluster | Change | Kind | Namespace | Name | Pods |"), "{md}");
    assert!(md.contains("| prod-eu | changed | HorizontalPodAutoscaler | default | qwen3 | scaling only |"), "{md}");
}

#[test]
fn flux_layers_prerequisites_before_namespaces() {
    let dir = copy_example("gitops-flux");
    let k = std::fs::read_to_string(dir.path().join("rendered/_gitops/kustomization-inference-search.yaml")).unwrap();
    assert!(k.contains("dependsOn:\n  - name: inference-cluster\n"), "{k}");
    assert!(k.contains("prune: true\n") && k.contains("wait: true\n"));
    let root = std::fs::read_to_string(dir.path().join("rendered/kustomization.yaml")).unwrap();
    assert!(root.ends_with("resources:\n- _cluster\n- search\n"), "{root}");
}

#[test]
fn argocd_leaves_an_autoscaled_replica_count_to_the_autoscaler() {
    let dir = copy_example("gitops");
    let set = std::fs::read_to_string(dir.path().join("rendered/_gitops/applicationset-inference.yaml")).unwrap();
    // Without RespectIgnoreDifferences, ignoreDifferences only hides the diff
    // and the next sync writes the committed count back.
    assert!(set.contains("        - RespectIgnoreDifferences=true\n"), "{set}");
    assert!(
        set.contains(
            "      - group: apps\n        kind: Deployment\n        namespace: default\n        name: qwen3\n        jsonPointers:\n        - /spec/replicas\n"
        ),
        "{set}"
    );
    // The Deployment itself starts at the service's replicas.
    let deploy = std::fs::read_to_string(dir.path().join("rendered/prod-us/default/qwen3/deployment.yaml")).unwrap();
    assert!(deploy.contains("\n  replicas: 4\n"), "{deploy}");
}

#[test]
fn flux_ignores_an_autoscaled_replica_count() {
    let dir = copy_example("gitops-flux");
    let k = std::fs::read_to_string(dir.path().join("rendered/_gitops/kustomization-inference-search.yaml")).unwrap();
    assert!(
        k.ends_with(
            "  ignore:\n  - paths:\n    - /spec/replicas\n    target:\n      group: apps\n      kind: Deployment\n      name: ^reranker$\n"
        ),
        "{k}"
    );
    let cluster =
        std::fs::read_to_string(dir.path().join("rendered/_gitops/kustomization-inference-cluster.yaml")).unwrap();
    assert!(!cluster.contains("ignore:"), "{cluster}");
}

#[test]
fn namespaces_carry_prune_protection_for_both_engines() {
    let dir = copy_example("gitops-flux");
    let ns = std::fs::read_to_string(dir.path().join("rendered/_cluster/namespace-search.yaml")).unwrap();
    assert!(ns.contains("    kustomize.toolkit.fluxcd.io/prune: disabled\n"), "{ns}");
    assert!(ns.contains("    argocd.argoproj.io/sync-options: Prune=false,Delete=false\n"), "{ns}");
}

/// Three services in two namespaces; `chat` is scaled to zero (no autoscaler).
const FLEET: &str = "apiVersion: ai.example.com/v1alpha2
kind: InferenceService
metadata: {name: qwen3, namespace: team-a}
spec: {baseModel: Qwen/Qwen3-0.6B, replicas: 2, gpusPerReplica: 1}
---
apiVersion: ai.example.com/v1alpha2
kind: InferenceService
metadata: {name: chat, namespace: team-a}
spec: {baseModel: Qwen/Qwen3-0.6B, replicas: 0, gpusPerReplica: 1}
---
apiVersion: ai.example.com/v1alpha2
kind: InferenceService
metadata: {name: llama, namespace: team-b}
spec: {baseModel: meta-llama/Llama-3.1-8B-Instruct, replicas: 1, gpusPerReplica: 1}
";

fn per_namespace_platform(engine: &str, extra: &str) -> String {
    format!(
        "apiVersion: ai.example.com/v1alpha1
kind: Platform
gitops:
  engine: {engine}
  name: inference
  repoURL: https://git.example.com/platform/inference.git
  revision: main
  path: rendered/
  layout: namespaces
  argocd: {{server: https://kubernetes.default.svc}}
{extra}"
    )
}

fn engine_objects(objects: &[isvc::model::objects::Object]) -> Vec<&isvc::model::objects::Object> {
    objects.iter().filter(|o| o.bootstrap).collect()
}

#[test]
fn argocd_per_namespace_layout_has_an_application_per_directory() {
    let objects = Test::new().service(FLEET).platform(per_namespace_platform("argocd", "")).objects();
    let apps = engine_objects(&objects);
    let names: Vec<&str> = apps.iter().map(|o| o.id.name.as_str()).collect();
    assert_eq!(names, ["inference-cluster", "inference-team-a", "inference-team-b"]);
    for o in &apps {
        assert_eq!((o.id.kind.as_str(), o.id.namespace.as_deref()), ("Application", Some("argocd")));
    }
    let path = |i: usize| apps[i].value.pointer("/spec/source/path").unwrap().as_str().unwrap();
    assert_eq!([path(0), path(1), path(2)], ["rendered/_cluster", "rendered/team-a", "rendered/team-b"]);
    // Each Application leaves only its own namespace's autoscaled counts to
    // the autoscaler; chat (scaled to zero) keeps its count from git.
    assert!(apps[0].value["spec"].get("ignoreDifferences").is_none(), "{}", apps[0].value);
    assert_eq!(
        apps[1].value["spec"]["ignoreDifferences"],
        json!([{"group": "apps", "kind": "Deployment", "namespace": "team-a", "name": "qwen3", "jsonPointers": ["/spec/replicas"]}])
    );
    assert_eq!(apps[2].value["spec"]["ignoreDifferences"][0]["name"], "llama");
    assert_eq!(
        apps[1].value["spec"]["syncPolicy"]["syncOptions"],
        json!(["ServerSideApply=true", "PruneLast=true", "RespectIgnoreDifferences=true"])
    );
    assert_eq!(apps[1].value["metadata"]["finalizers"], json!(["resources-finalizer.argocd.argoproj.io"]));
}

#[test]
fn argocd_per_namespace_layout_with_clusters_has_an_application_per_cluster_and_directory() {
    let clusters = "clusters:
  - {name: prod, server: https://prod.k8s.example.com}
  - {name: staging, server: https://staging.k8s.example.com, services: [team-b/llama]}
";
    let objects = Test::new().service(FLEET).platform(per_namespace_platform("argocd", clusters)).objects();
    let apps: Vec<(&str, &str, &str)> = engine_objects(&objects)
        .iter()
        .map(|o| {
            (
                o.id.name.as_str(),
                o.value.pointer("/spec/source/path").unwrap().as_str().unwrap(),
                o.value.pointer("/spec/destination/server").unwrap().as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        apps,
        [
            ("inference-prod-cluster", "rendered/prod/_cluster", "https://prod.k8s.example.com"),
            ("inference-prod-team-a", "rendered/prod/team-a", "https://prod.k8s.example.com"),
            ("inference-prod-team-b", "rendered/prod/team-b", "https://prod.k8s.example.com"),
            ("inference-staging-cluster", "rendered/staging/_cluster", "https://staging.k8s.example.com"),
            ("inference-staging-team-b", "rendered/staging/team-b", "https://staging.k8s.example.com"),
        ]
    );
}

#[test]
fn the_per_namespace_layout_renders_what_the_tree_layout_does_besides_the_engine_objects() {
    let workloads = |layout: &str| {
        let platform = per_namespace_platform("argocd", "").replace("layout: namespaces", layout);
        let objects = Test::new().service(FLEET).platform(platform).objects();
        objects.into_iter().filter(|o| !o.bootstrap).map(|o| (o.id, o.value)).collect::<Vec<_>>()
    };
    assert_eq!(workloads("layout: namespaces"), workloads("layout: tree"));
    // Flux applies per namespace in both layouts.
    let flux = |layout: &str| {
        let platform = per_namespace_platform("flux", "").replace("layout: namespaces", layout);
        Test::new().service(FLEET).platform(platform).objects()
    };
    assert_eq!(flux("layout: namespaces"), flux("layout: tree"));
}

#[test]
fn a_namespace_named_cluster_cannot_share_the_prerequisites_name() {
    for engine in ["argocd", "flux"] {
        let services = FLEET.replace("team-b", "cluster");
        let err = Test::new().service(services).platform(per_namespace_platform(engine, "")).compile().unwrap_err();
        let text = err.render(false);
        assert!(text.contains("two GitOps objects would both be "), "{text}");
        assert!(text.contains("inference-cluster"), "{text}");
    }
}

#[test]
fn an_unknown_layout_is_an_input_error() {
    let platform = per_namespace_platform("argocd", "").replace("layout: namespaces", "layout: namespace");
    let err = Test::new().service(FLEET).platform(platform).compile().unwrap_err().render(false);
    assert!(err.contains("platform.yaml:9:11"), "{err}");
    assert!(err.contains("\"gitops.layout\" must be one of tree, namespaces"), "{err}");
}
