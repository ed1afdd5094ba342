//! Inputs people really write: each behaves as the README's "Input rules"
//! says.

use std::sync::Arc;

use isvc::base::diagnostics::Source;
use serde_json::Value;

use crate::harness::Test;

fn load(text: &str) -> Result<Vec<isvc::load::LoadedService>, String> {
    let source: Arc<Source> = Source::new("services/x.yaml", text);
    let (services, diags) = isvc::load::parse_services(&source);
    if diags.is_empty() { Ok(services) } else { Err(isvc::base::diagnostics::Diagnostics(diags).render(false)) }
}

fn deployment(text: &str) -> Value {
    let services = load(text).unwrap();
    assert!(!services.is_empty());
    let objects = Test::new().file("services/x.yaml", text).objects();
    objects.into_iter().find(|o| o.id.kind == "Deployment").unwrap().value
}

const BASE: &str = "apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata:\n  name: qwen3\nspec:\n  model: Qwen/Qwen3-0.6B\n  replicas: 1\n";

#[test]
fn crlf_line_endings_and_a_byte_order_mark_are_accepted() {
    let crlf = BASE.replace('\n', "\r\n");
    assert_eq!(load(&crlf).unwrap().len(), 1);
    assert_eq!(load(&format!("\u{feff}{BASE}")).unwrap().len(), 1);
    assert_eq!(deployment(&crlf), deployment(BASE), "line endings do not change the output");
}

#[test]
fn tabs_indent_nothing_but_may_appear_in_values() {
    let err = load(&BASE.replace("  replicas", "\treplicas")).unwrap_err();
    assert!(err.contains("indent with spaces"), "{err}");
    let v = deployment(
        &BASE.replace("metadata:\n  name: qwen3\n", "metadata:\n  name: qwen3\n  annotations: {note: \"a\\tb\"}\n"),
    );
    assert_eq!(v["metadata"]["annotations"]["note"], "a\tb");
}

#[test]
fn comments_anywhere_are_ignored() {
    let commented = "# head\napiVersion: ai.example.com/v1alpha1 # trailing\n# between\nkind: InferenceService\nmetadata: # here\n  name: qwen3 # and here\nspec:\n  # inside\n  model: Qwen/Qwen3-0.6B\n  replicas: 1\n# tail\n";
    assert_eq!(deployment(commented), deployment(BASE));
}

#[test]
fn anchors_and_merge_keys_work_within_a_document() {
    let text = "apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata:\n  name: qwen3\n  labels: &common {team: a, tier: gold}\n  annotations:\n    <<: *common\n    owner: me\nspec: {model: Qwen/Qwen3-0.6B, replicas: 1}\n";
    let v = deployment(text);
    assert_eq!(v["metadata"]["annotations"], serde_json::json!({"owner": "me", "team": "a", "tier": "gold"}));
}

#[test]
fn model_ids_up_to_1024_characters() {
    let long = "org/".to_string() + &"m".repeat(1020);
    let v = deployment(&BASE.replace("Qwen/Qwen3-0.6B", &long));
    assert_eq!(v["spec"]["template"]["spec"]["containers"][0]["args"][1], long);
    let err = load(&BASE.replace("Qwen/Qwen3-0.6B", &(long + "x"))).unwrap_err();
    assert!(err.contains("\"spec.model\" must be at most 1024 characters long, found 1025"), "{err}");
}

#[test]
fn non_ascii_annotations_are_kept_exactly() {
    let text = BASE.replace(
        "  name: qwen3\n",
        "  name: qwen3\n  annotations: {description: \"Модель für Ümlaute — 日本語 🚀\"}\n",
    );
    assert_eq!(deployment(&text)["metadata"]["annotations"]["description"], "Модель für Ümlaute — 日本語 🚀");
}

#[test]
fn yaml_1_1_lookalikes_are_read_as_yaml_1_2() {
    // `on`, `no`, `yes` are strings; `0755` is the integer 755.
    let v = deployment(
        &BASE
            .replace("Qwen/Qwen3-0.6B", "on")
            .replace("  name: qwen3\n", "  name: qwen3\n  annotations: {enabled: yes, mode: no}\n"),
    );
    assert_eq!(v["spec"]["template"]["spec"]["containers"][0]["args"][1], "on");
    assert_eq!(v["metadata"]["annotations"], serde_json::json!({"enabled": "yes", "mode": "no"}));
    let services = load(&BASE.replace("replicas: 1", "replicas: 0755")).unwrap();
    assert_eq!(services[0].service.spec.replicas, Some(755));
    // A boolean field written the YAML 1.1 way gets a pointed message.
    let err = load(&BASE.replace("replicas: 1", "replicas: yes")).unwrap_err();
    assert!(err.contains("\"spec.replicas\" must be an integer, found a string (\"yes\")"), "{err}");
}

#[test]
fn empty_files_and_empty_documents_are_skipped() {
    assert!(load("").unwrap().is_empty());
    assert!(load("# nothing here\n").unwrap().is_empty());
    assert_eq!(load(&format!("---\n---\n{BASE}---\n# empty\n")).unwrap().len(), 1);
}
