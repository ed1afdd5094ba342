//! Generated valid services never render an object the cluster would reject:
//! a sample of random specs, rendered and run through the team's validator
//! (Kubernetes' strict schemas and the API server's own rules).

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

#[test]
#[ignore = "needs ../shared/tools/validate-manifests beside the checkout; .ci/run runs the ignored tests"]
fn rendered_objects_of_generated_specs_pass_the_cluster_validator() {
    let tool = Path::new("../shared/tools/validate-manifests");
    assert!(tool.exists(), "{} not found: it lives beside the project checkout", tool.display());
    let bin = assert_cmd::cargo::cargo_bin("isvc");
    let mut runner = TestRunner::new(Config { cases: 6, ..Config::default() });
    runner
        .run(&proptest::collection::vec(crate::common::service(), 1..12), |docs| {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("services")).unwrap();
            let mut seen = std::collections::BTreeSet::new();
            let mut text = String::new();
            for d in &docs {
                let key = (
                    d["metadata"].get("namespace").and_then(|n| n.as_str()).unwrap_or("default").to_string(),
                    d["metadata"]["name"].to_string(),
                );
                if seen.insert(key) {
                    text.push_str(&format!("---\n{}", isvc::base::yaml::to_string(d)));
                }
            }
            std::fs::write(dir.path().join("services/all.yaml"), text).unwrap();
            let render = std::process::Command::new(&bin)
                .current_dir(dir.path())
                .args(["-q", "render", "services", "--out", "rendered"])
                .output()
                .unwrap();
            prop_assert!(render.status.success(), "{}", String::from_utf8_lossy(&render.stderr));
            let out = std::process::Command::new(tool).arg(dir.path().join("rendered")).output().unwrap();
            prop_assert!(
                out.status.success(),
                "validator rejected:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            Ok(())
        })
        .unwrap();
}
