//! The compiler renders, admits and checks one namespace at a time (all
//! namespaces of one Kueue cohort's tenants together). These tests hold
//! that equal to checking every object with one index of all of them, and
//! a render that keeps only each object's text equal to one that keeps the
//! objects.

use crate::common::example_inputs;
use crate::harness::Test;
use isvc::check::{self, Config};
use isvc::model::objects::{Object, Written};
use isvc::{Compiler, Examination, Inputs, Options};

/// The findings of every rule over `objects` with one index of them all,
/// located in the inputs as `isvc check` locates them.
fn checked_whole(inputs: &Inputs, objects: &[Object]) -> Vec<check::Finding> {
    let mut findings = check::run_with(objects, &Config::default());
    check::locate(&mut findings, &inputs.services);
    findings
}

fn assert_grouped_equals_whole(inputs: &Inputs, what: &str) -> usize {
    let Examination { objects, findings } =
        Compiler::new(inputs, Options::default()).examine().unwrap_or_else(|d| panic!("{what}: {}", d.render(false)));
    let whole = checked_whole(inputs, &objects);
    assert_eq!(findings, whole, "{what}: the findings a namespace at a time differ from those over every object");
    // The render keeps each object's text only; the texts are the objects'.
    let kept = Compiler::new(inputs, Options::default()).compile().unwrap_or_else(|d| panic!("{}", d.render(false)));
    let written = Compiler::new(inputs, Options::default()).compile_held::<Written>().unwrap();
    assert_eq!(kept.objects.len(), written.objects.len(), "{what}");
    for (o, w) in kept.objects.iter().zip(&written.objects) {
        assert_eq!((&o.id, &o.cluster, o.to_file()), (&w.object.id, &w.object.cluster, w.text.clone()), "{what}");
    }
    assert_eq!(kept.quota, written.quota, "{what}");
    findings.len()
}

#[test]
fn every_example_checked_a_namespace_at_a_time_has_the_findings_of_one_index() {
    let mut seen = 0;
    for example in crate::common::examples() {
        let inputs = example_inputs(&example, isvc::Templates::builtin());
        if !inputs.platform.clusters.is_empty() {
            // Findings of several clusters are named after their cluster.
            continue;
        }
        if Compiler::new(&inputs, Options::default()).examine().is_err() {
            // An example of an error (quota exceeded) renders nothing to check.
            continue;
        }
        assert_grouped_equals_whole(&inputs, &example.display().to_string());
        seen += 1;
    }
    assert!(seen >= 8, "only {seen} examples");
}

/// Three tenants' namespaces without Kueue, each with findings of its own:
/// quotas, a LimitRange, a mutable tag,
/// a service in a namespace of no tenant.
const PLATFORM: &str = "apiVersion: ai.example.com/v1alpha1
kind: Platform
defaults:
  image: vllm/vllm-openai:latest
  resources: {cpuPerGpu: \"8\", memoryPerGpu: 64Gi}
tenants:
  - name: search
    namespaces: [search-prod, search-dev]
    quota: {requests.nvidia.com/gpu: 16, requests.cpu: 512, requests.memory: 4Ti}
    limits:
      max: {nvidia.com/gpu: 4}
  - name: chat
    quota: {requests.nvidia.com/gpu: 8}
";

fn service(name: &str, ns: &str, spec: &str) -> String {
    format!(
        "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: {name}, namespace: {ns}}}\n\
         spec: {{{spec}}}\n---\n"
    )
}

/// The inputs of one file holding `services` ([`service`]), with `platform`.
fn fleet(services: impl AsRef<[String]>, platform: &str) -> Inputs {
    Test::new().file("services/fleet.yaml", services.as_ref().concat()).platform(platform).inputs().unwrap()
}

#[test]
fn namespaces_of_several_tenants_checked_apart_have_the_findings_of_one_index() {
    let services = [
        service("reranker", "search-prod", "baseModel: Qwen/Qwen3-Reranker-4B, replicas: 2"),
        service("embed", "search-prod", "baseModel: Qwen/Qwen3-Embedding-0.6B, replicas: 1"),
        service("canary", "search-dev", "baseModel: Qwen/Qwen3-Reranker-8B, replicas: 1, gpusPerReplica: 2"),
        service("assistant", "chat", "baseModel: Qwen/Qwen3-8B, autoscaling: {min: 1, max: 4, targetQueueLength: 8}"),
        service("stray", "lab", "baseModel: Qwen/Qwen3-0.6B, replicas: 1"),
    ];
    let inputs = fleet(services, PLATFORM);
    let findings = assert_grouped_equals_whole(&inputs, "three tenants");
    assert!(findings > 0, "the inputs were meant to have findings");
}

#[test]
fn the_same_services_render_the_same_bytes_in_any_number_of_namespaces() {
    // One object list, whether the platform's namespaces are compiled apart
    // or (with a Kueue queue elsewhere) together: only Kueue's own objects
    // differ.
    let services = [
        service("a", "one", "baseModel: Qwen/Qwen3-0.6B, replicas: 1"),
        service("b", "two", "baseModel: Qwen/Qwen3-0.6B, replicas: 3"),
        service("c", "one", "baseModel: Qwen/Qwen3-8B, replicas: 2"),
    ]
    .concat();
    let apart = Test::new().service(services.clone()).objects();
    let kueue = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: queued\n    \
                 queues:\n      - name: q\n        nominalQuota: {nvidia.com/gpu: 8, cpu: 64, memory: 512Gi}\n";
    let together = Test::new().service(services).platform(kueue).objects();
    let mine = |objects: Vec<Object>| -> Vec<String> {
        objects.into_iter().filter(|o| o.owner.is_some()).map(|o| o.to_file()).collect()
    };
    assert_eq!(mine(apart), mine(together));
}

#[test]
fn namespaces_to_reuse_are_left_out_where_namespaces_are_compiled_apart() {
    let services = [
        service("a", "one", "baseModel: Qwen/Qwen3-0.6B, replicas: 1"),
        service("b", "two", "baseModel: Qwen/Qwen3-0.6B, replicas: 3"),
    ]
    .concat();
    let reuse = || Options::default().reuse(["two".to_string(), "absent".to_string()].into());
    let namespaces = |objects: &[Object]| -> Vec<String> {
        let mut ns: Vec<String> = objects.iter().filter_map(|o| o.id.namespace.clone()).collect();
        ns.dedup();
        ns
    };
    let inputs = Test::new().service(services.clone()).inputs().unwrap();
    let compiler = Compiler::new(&inputs, reuse());
    let digests = compiler.namespace_digests();
    assert_eq!(digests.keys().collect::<Vec<_>>(), ["one", "two"]);
    let compiled = compiler.compile().unwrap();
    // A namespace of which no service was given is the caller's too.
    assert_eq!(compiled.reused, ["absent".to_string(), "two".to_string()].into());
    assert!(!namespaces(&compiled.objects).contains(&"two".to_string()));
    assert!(namespaces(&compiled.objects).contains(&"one".to_string()));

    // A namespace of a tenant with queues is compiled with its cohort, and
    // the GitOps engine's objects list every namespace's: not left out.
    let kueue = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: two\n    \
                 queues:\n      - name: q\n        nominalQuota: {nvidia.com/gpu: 8, cpu: 64, memory: 512Gi}\n";
    let inputs = Test::new().service(services.clone()).platform(kueue).inputs().unwrap();
    assert_eq!(Compiler::new(&inputs, reuse()).compile().unwrap().reused, ["absent".to_string()].into());
    let flux = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ngitops: {engine: flux, name: t, \
                repoURL: https://git.example.com/x.git, revision: main, path: rendered}\n";
    let inputs = Test::new().service(services).platform(flux).inputs().unwrap();
    let compiled = Compiler::new(&inputs, reuse()).compile().unwrap();
    assert!(compiled.reused.is_empty() && namespaces(&compiled.objects).contains(&"two".to_string()));
}

#[test]
fn a_namespace_digest_changes_with_its_services_only() {
    let one = service("a", "one", "baseModel: Qwen/Qwen3-0.6B, replicas: 1");
    let two = |replicas: u32| service("b", "two", &format!("baseModel: Qwen/Qwen3-0.6B, replicas: {replicas}"));
    let digests = |text: String| {
        let inputs = Test::new().file("services/s.yaml", text).inputs().unwrap();
        Compiler::new(&inputs, Options::default()).namespace_digests()
    };
    let (before, after) = (digests(one.clone() + &two(1)), digests(one.clone() + &two(2)));
    assert_eq!(before["one"], after["one"]);
    assert_ne!(before["two"], after["two"]);
    // The file a service is read from is named in its objects' headers.
    let moved = Test::new().file("services/s.yaml", one.clone()).file("services/t.yaml", two(1)).inputs().unwrap();
    assert_ne!(Compiler::new(&moved, Options::default()).namespace_digests()["two"], before["two"]);
}

/// Two Kueue cohorts and a namespace of a tenant without queues: each
/// cohort's tenants are compiled together with its ClusterQueues, the rest
/// a namespace at a time.
const COHORTS: &str = "apiVersion: ai.example.com/v1alpha1
kind: Platform
defaults:
  resources: {cpuPerGpu: \"8\", memoryPerGpu: 64Gi}
priorities:
  production: {value: 100000, preempt: true}
  batch: {value: 100, preempt: false, preemptible: true}
tenants:
  - name: search
    namespaces: [search-prod, search-dev]
    cohort: pool-a
    defaultPriority: production
    queues:
      - name: serving
        priority: production
        nominalQuota: {nvidia.com/gpu: 8, cpu: 64, memory: 512Gi}
  - name: eval
    cohort: pool-a
    defaultPriority: batch
    queues:
      - name: batch
        priority: batch
        nominalQuota: {nvidia.com/gpu: 4, cpu: 32, memory: 256Gi}
  - name: chat
    cohort: pool-b
    defaultPriority: production
    queues:
      - name: serving
        priority: production
        nominalQuota: {nvidia.com/gpu: 8, cpu: 64, memory: 512Gi}
  - name: lab
";

#[test]
fn kueue_cohorts_checked_apart_have_the_findings_of_one_index() {
    let services = [
        service("reranker", "search-prod", "baseModel: Qwen/Qwen3-Reranker-4B, replicas: 2"),
        service("canary", "search-dev", "baseModel: Qwen/Qwen3-Reranker-8B, replicas: 1"),
        service("nightly", "eval", "baseModel: Qwen/Qwen3-8B, replicas: 2"),
        service("assistant", "chat", "baseModel: Qwen/Qwen3-8B, replicas: 2"),
        service("notebook", "lab", "baseModel: Qwen/Qwen3-0.6B, replicas: 1"),
    ];
    let inputs = fleet(services, COHORTS);
    assert_grouped_equals_whole(&inputs, "two cohorts");
    // The namespace of the tenant without queues is compiled on its own,
    // and can be kept; the cohorts' namespaces cannot.
    let options = Options::default().reuse(["lab".to_string(), "chat".to_string()].into());
    let compiled = Compiler::new(&inputs, options).compile().unwrap();
    assert_eq!(compiled.reused, ["lab".to_string()].into());
}

#[test]
fn a_queue_is_admitted_over_every_namespace_of_its_tenant() {
    // Each namespace alone fits the queue at the autoscalers' maximum
    // (3 GPUs of 4); the two together do not.
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ntenants:\n  - name: search\n    \
                    namespaces: [search-prod, search-dev]\n    queues:\n      - name: serving\n        \
                    priority: online\n        nominalQuota: {nvidia.com/gpu: 4, cpu: 64, memory: 512Gi}\n";
    let services = [
        service("a", "search-prod", "baseModel: Qwen/Qwen3-0.6B, replicas: 1"),
        service("b", "search-dev", "baseModel: Qwen/Qwen3-0.6B, replicas: 1"),
    ];
    let both = match Test::new().service(services.concat()).platform(platform).compile() {
        Ok(_) => panic!("the queue admitted both namespaces' services"),
        Err(d) => d.render(false),
    };
    assert!(both.contains("queue \"serving\" of tenant \"search\" can admit at most nvidia.com/gpu=4"), "{both}");
    assert!(Test::new().service(services[0].clone()).platform(platform).compile().is_ok());
}

/// A platform of three tenants with GPU quotas, and a CPU limit per GPU.
const QUOTAS: &str = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\n\
                      defaults:\n  resources: {cpuLimitPerGpu: 8}\ntenants:\n  \
                      - {name: a, quota: {requests.nvidia.com/gpu: 1}}\n  \
                      - {name: b, quota: {requests.nvidia.com/gpu: 8}}\n  \
                      - {name: c, quota: {requests.nvidia.com/gpu: 1}}\n";

/// `compile_held::<T>()`'s errors, rendered.
fn errors_of<T: isvc::model::objects::Held>(inputs: &Inputs) -> String {
    match Compiler::new(inputs, Options::default()).compile_held::<T>() {
        Ok(_) => panic!("the inputs were meant to fail"),
        Err(d) => d.render(false),
    }
}

#[test]
fn errors_of_several_namespaces_are_the_same_whether_groups_overlap_or_not() {
    // A render renders one namespace while it checks the one before it
    // (`Held::OVERLAP`), `render --stdout` one after the other: both
    // report every namespace's errors, in one order: those of the render
    // (a service that cannot be derived, in a namespace after others) and
    // those of the check (quotas).
    let services = [
        service("x", "a", "baseModel: Qwen/Qwen3-8B, replicas: 2"),
        service("y", "b", "baseModel: Qwen/Qwen3-8B, replicas: 1"),
        service("z", "c", "baseModel: Qwen/Qwen3-8B, replicas: 3, gpusPerReplica: 2"),
        service("w", "d", "baseModel: Qwen/Qwen3-8B, replicas: 1, gpusPerReplica: 2, resources: {cpu: 32}"),
        service("v", "e", "baseModel: Qwen/Qwen3-8B, replicas: 1"),
    ];
    let inputs = fleet(services, QUOTAS);
    let overlapped = errors_of::<Written>(&inputs);
    assert_eq!(overlapped, errors_of::<isvc::model::objects::Streamed>(&inputs));
    for part in ["namespace a", "namespace c", "cannot derive w"] {
        assert!(overlapped.contains(part), "{part} in: {overlapped}");
    }
    assert!(!overlapped.contains("namespace b"), "{overlapped}");
}

#[test]
fn a_fleet_renders_the_same_stream_and_quota_rows_whether_groups_overlap_or_not() {
    use isvc::model::objects::{Stream, Streamed};
    let services: Vec<String> = (0..12)
        .map(|i| {
            let ns = ["a", "b", "c", "d"][i % 4];
            service(&format!("s{i}"), ns, &format!("baseModel: Qwen/Qwen3-0.6B, replicas: {}", i % 3))
        })
        .collect();
    let platform = QUOTAS.replace("gpu: 1}", "gpu: 64}").replace("gpu: 8}", "gpu: 64}");
    let inputs = fleet(services, &platform);
    let compiler = Compiler::new(&inputs, Options::default());
    let written = compiler.compile_held::<Written>().unwrap_or_else(|d| panic!("{}", d.render(false)));
    let streamed = compiler.compile_held::<Streamed>().unwrap();
    let mut one_by_one = Vec::new();
    Stream::of(&streamed.objects).unwrap().write(&mut one_by_one).unwrap();
    let overlapped: String = written.objects.iter().map(|w| format!("---\n{}", w.text)).collect();
    assert_eq!(overlapped, String::from_utf8(one_by_one).unwrap());
    assert!(!written.quota.is_empty());
    assert_eq!(written.quota, streamed.quota);
}
