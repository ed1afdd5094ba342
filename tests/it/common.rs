//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::{Value, json};

/// Roots of the example output trees: `examples/*/rendered`, or with
/// clusters `examples/*/rendered/<cluster>`, plus each `_gitops` directory
/// of a multi-cluster example (its objects are applied on their own).
pub fn example_trees() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for rendered in std::fs::read_dir("examples").unwrap().filter_map(|e| e.ok().map(|e| e.path().join("rendered"))) {
        if rendered.join("kustomization.yaml").is_file() {
            out.push(rendered);
        } else if rendered.is_dir() {
            for d in std::fs::read_dir(&rendered).unwrap().filter_map(|e| e.ok().map(|e| e.path())) {
                if d.join("kustomization.yaml").is_file() {
                    out.push(d);
                }
            }
        }
    }
    out.sort();
    assert!(out.len() >= 7, "{out:?}");
    out
}

/// The examples with services (`examples/*/services`), sorted.
pub fn examples() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("examples")
        .expect("examples/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("services").is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 10, "expected the shipped examples, found {dirs:?}");
    dirs
}

/// Copies the directory `from` to `to`, files and directories.
pub fn copy_dir(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from).into_iter().filter_map(Result::ok) {
        let target = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

pub fn dns_label() -> impl Strategy<Value = String> {
    "[a-z]([a-z0-9-]{0,30}[a-z0-9])?"
}

/// Any text at all: quotes, colons, newlines, YAML indicators, unicode.
pub fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{1,40}",
        Just("a: b\n  evil: true".to_string()),
        Just("\"}\n---\nkind: Secret".to_string()),
        Just("{{ name }}".to_string()),
        Just("on".to_string()),
        Just("0755".to_string()),
        Just("- item".to_string()),
        Just("*alias".to_string()),
        Just("Ünïcödé 🚀".to_string()),
    ]
}

prop_compose! {
    pub fn service()(
        name in dns_label(),
        namespace in proptest::option::of(dns_label()),
        model in any_text().prop_filter("non-empty", |m| !m.is_empty()),
        replicas in prop_oneof![Just(0), 1..=1000i32],
        gpus in proptest::option::of(1..=8i32),
        labels in proptest::collection::btree_map("[a-z][a-z0-9]{0,10}", "[a-zA-Z0-9]([a-zA-Z0-9._-]{0,20}[a-zA-Z0-9])?", 0..3),
        annotations in proptest::collection::btree_map("[a-z][a-z0-9.]{0,10}[a-z]", any_text(), 0..3),
    ) -> Value {
        let mut metadata = json!({"name": name});
        if let Some(ns) = namespace { metadata["namespace"] = json!(ns); }
        if !labels.is_empty() { metadata["labels"] = json!(labels); }
        if !annotations.is_empty() { metadata["annotations"] = json!(annotations); }
        let mut spec = json!({"model": model, "replicas": replicas});
        if let Some(g) = gpus { spec["gpusPerReplica"] = json!(g); }
        json!({"apiVersion": "ai.example.com/v1alpha1", "kind": "InferenceService", "metadata": metadata, "spec": spec})
    }
}

/// The inputs of `example` (its services and platform file).
pub fn example_inputs(example: &Path, templates: isvc::Templates) -> isvc::Inputs {
    let files = isvc::load::input_files(&[example.join("services")]).unwrap();
    let services = isvc::load::load_services(&files).unwrap();
    let platform_file = example.join("platform.yaml");
    let (platform, origin) = if platform_file.is_file() {
        let (p, o) = isvc::load::load_platform_with_origin(Some(&platform_file)).unwrap();
        (p, o)
    } else {
        (Default::default(), None)
    };
    isvc::Inputs::new(services)
        .with_platform(platform, Some("platform.yaml".into()))
        .with_platform_origin(origin)
        .with_templates(templates)
}
