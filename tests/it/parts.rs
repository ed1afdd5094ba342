//! A namespace checked in parts (`compiler::parts`) gives what a whole one
//! does. Every compile of the harness holds that too
//! ([`crate::harness::same_in_parts`]); these tests add every example.

use crate::common::example_inputs;
use crate::harness::same_in_parts;
use isvc::Templates;

#[test]
fn every_example_compiles_the_same_in_parts() {
    for example in crate::common::examples() {
        same_in_parts(&example_inputs(&example, Templates::builtin()));
    }
}

/// Services whose objects interleave in the output order (`a`'s picker,
/// `a-epp`, sorts after `a-b`), two sharing a weighted route, a quota, and
/// the files of two services held by the caller (a re-render after a
/// change elsewhere): in parts of one service, the same files are written
/// and the same services left to the caller.
#[test]
fn a_rerender_in_parts_keeps_and_writes_what_a_whole_one_does() {
    use isvc::model::objects::Written;
    use isvc::{Compiler, Options, Parts};
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\n\
        tenants:\n  - name: chat\n    quota:\n      requests.nvidia.com/gpu: 16\n\
        gateway:\n  parentRef: {name: inference-gateway, namespace: gateway-system}\n  inferenceExtension: true\n";
    let service = |name: &str, gateway: &str| {
        format!(
            "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: {name}, namespace: chat}}\n\
             spec:\n  baseModel: Qwen/Qwen3-0.6B\n  replicas: 1\n  gateway: {gateway}\n"
        )
    };
    let test = crate::harness::Test::new()
        .file("services/a.yaml", service("a", "{route: a.example.com}"))
        .file("services/a-b.yaml", service("a-b", "{route: b.example.com}"))
        .file("services/c.yaml", service("c", "{route: c.example.com}"))
        .file("services/v1.yaml", service("llama-v1", "{route: llm.example.com/llama, weight: 90}"))
        .file("services/v2.yaml", service("llama-v2", "{route: llm.example.com/llama, weight: 10}"))
        .platform(platform);
    let inputs = test.inputs().unwrap();
    let kept = ["services/a.yaml", "services/c.yaml", "services/v1.yaml"].map(String::from).into();
    let compile = |parts: Parts| {
        let options = Options::default().parts(parts).keep_files_of(std::collections::BTreeSet::clone(&kept));
        let c = Compiler::new(&inputs, options).compile_held::<Written>().unwrap();
        let files: Vec<(String, String)> =
            c.objects.iter().map(|w| (w.object.id.to_string(), w.text.clone())).collect();
        (files, c.kept_services)
    };
    let whole = compile(Parts { above: usize::MAX, size: 1 });
    // `a` and `c` are held by the caller; `llama-v1` shares a route, so its
    // files are written all the same.
    assert_eq!(whole.1["chat"], ["a", "c"].map(String::from).into());
    assert!(whole.0.iter().any(|(id, _)| id == "Deployment chat/llama-v1"));
    assert!(!whole.0.iter().any(|(id, _)| id == "Deployment chat/a"));
    for size in [1, 2, 3] {
        assert_eq!(compile(Parts { above: 0, size }), whole, "parts of {size}");
    }
}
