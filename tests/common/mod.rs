//! Helpers shared by the integration tests.

use std::path::PathBuf;

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
