//! Golden tests: every example's committed `rendered/` tree is exactly what
//! `isvc render services [--platform platform.yaml] --out rendered` produces
//! from inside the example directory, and rendering is idempotent there.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

use crate::common::examples;

/// `words`, then `--platform platform.yaml` when the example has one.
fn example_args(example: &Path, words: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    if example.join("platform.yaml").is_file() {
        args.extend(["--platform".to_string(), "platform.yaml".to_string()]);
    }
    args
}

fn render_args(example: &Path, out: &str) -> Vec<String> {
    example_args(example, &["render", "services", "--out", out])
}

/// Runs isvc with `args` inside `example` and fails, with its output, unless it succeeds.
fn assert_isvc_succeeds(example: &Path, args: &[String], what: &str) {
    let out = Command::cargo_bin("isvc").unwrap().current_dir(example).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}: `isvc {}` {what}\n{}{}",
        example.display(),
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<(PathBuf, Vec<u8>)> = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

#[test]
fn committed_output_is_up_to_date() {
    for ex in examples() {
        let mut args = render_args(&ex, "rendered");
        args.push("--check".to_string());
        assert_isvc_succeeds(&ex, &args, "finds rendered/ stale; run it without --check there");
    }
}

#[test]
fn fresh_render_matches_committed_bytes_and_rerender_is_a_no_op() {
    for ex in examples() {
        let tmp = tempfile::tempdir().unwrap();
        // Render into a sibling-shaped copy so headers name the same paths.
        let copy = tmp.path().join("ex");
        crate::common::copy_dir(&ex.join("services"), &copy.join("services"));
        for f in ["platform.yaml"] {
            if ex.join(f).exists() {
                std::fs::copy(ex.join(f), copy.join(f)).unwrap();
            }
        }
        if ex.join("templates").is_dir() {
            crate::common::copy_dir(&ex.join("templates"), &copy.join("templates"));
        }
        let run = || {
            Command::cargo_bin("isvc").unwrap().current_dir(&copy).args(render_args(&ex, "rendered")).assert().success()
        };
        run();
        assert_eq!(files(&copy.join("rendered")), files(&ex.join("rendered")), "{}", ex.display());
        let first = files(&copy.join("rendered"));
        let out = run();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(stderr.contains(" 0 created, 0 updated, 0 deleted"), "{stderr}");
        assert_eq!(files(&copy.join("rendered")), first);
        // diff of an up-to-date tree reports nothing and exits 0.
        let diff = example_args(&ex, &["diff", "services", "--out", "rendered"]);
        Command::cargo_bin("isvc").unwrap().current_dir(&copy).args(&diff).assert().success();
    }
}

/// Every object of every committed example tree, read back and written
/// again by `base::yaml`, gives the committed bytes. Those bytes were
/// written by serde-saphyr before isvc had its own emitter, so this checks
/// the emitter against real output directly (the fresh render above checks
/// it through the whole pipeline).
#[test]
fn committed_objects_are_written_again_byte_for_byte() {
    let mut count = 0;
    for ex in examples() {
        for (path, bytes) in files(&ex.join("rendered")) {
            if path.extension().is_none_or(|e| e != "yaml") {
                continue;
            }
            let text = String::from_utf8(bytes).unwrap();
            let body = text.split_once('\n').filter(|(header, _)| header.starts_with("# ")).map_or("", |(_, b)| b);
            let source = isvc::base::diagnostics::Source::new(path.to_string_lossy().into_owned(), body);
            let docs = isvc::base::yaml::parse_documents(&source, isvc::base::yaml::Limits::default()).unwrap();
            assert_eq!(docs.len(), 1, "{}: one document", path.display());
            let value = docs[0].as_ref().unwrap().to_json();
            assert_eq!(isvc::base::yaml::to_string(&value), body, "{}/rendered/{}", ex.display(), path.display());
            count += 1;
        }
    }
    assert!(count > 100, "expected the examples' objects, found {count}");
}

#[test]
fn examples_pass_every_check_rule() {
    for ex in examples() {
        let args = example_args(&ex, &["check", "services", "--strict"]);
        assert_isvc_succeeds(&ex, &args, "finds problems");
    }
}

#[test]
fn shipped_schemas_are_up_to_date() {
    for (name, text) in isvc::model::schema::files() {
        let committed = std::fs::read_to_string(Path::new("schemas").join(name)).unwrap_or_default();
        assert!(committed == text, "schemas/{name} is stale; run `isvc schema`");
    }
}

/// Needs the team's cluster-side validator beside the checkout; `.ci/run`
/// runs it on every example itself, so this test is for a developer's run
/// (`cargo test -- --ignored`).
#[test]
#[ignore = "needs ../shared/tools/validate-manifests beside the checkout"]
fn rendered_examples_pass_the_cluster_validator() {
    let tool = Path::new("../shared/tools/validate-manifests");
    assert!(tool.exists(), "{} not found: it lives beside the project checkout", tool.display());
    let mut trees = crate::common::example_trees();
    trees.extend(
        examples()
            .iter()
            .map(|e| e.join("rendered/_gitops"))
            .filter(|g| g.is_dir() && !g.parent().unwrap().join("kustomization.yaml").exists()),
    );
    for tree in trees {
        let out = std::process::Command::new(tool).arg(&tree).output().unwrap();
        assert!(
            out.status.success(),
            "{} fails validation:\n{}{}",
            tree.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn readme_documents_every_platform_field() {
    fn fields(schema: &serde_json::Value, root: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
        let schema = match schema.get("$ref").and_then(|r| r.as_str()) {
            Some(r) => &root["$defs"][r.rsplit('/').next().unwrap()],
            None => schema,
        };
        for (k, v) in schema.get("properties").and_then(|p| p.as_object()).into_iter().flatten() {
            let name = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            out.push(name.clone());
            fields(v, root, &name, out);
        }
    }
    let schema = isvc::model::schema::platform();
    let mut names = Vec::new();
    fields(&schema, &schema, "", &mut names);
    let readme = std::fs::read_to_string("docs/platform.md").unwrap();
    for name in names.iter().filter(|n| {
        !matches!(
            n.as_str(),
            "defaults" | "defaults.resources" | "defaults.probes" | "defaults.autoscaling" | "defaults.rollout"
        )
    }) {
        assert!(
            readme.contains(&format!("`{name}`")) || (name == "apiVersion" || name == "kind"),
            "docs/platform.md does not document platform field `{name}`"
        );
    }
}

/// `render --stdout` packs the texts it holds (`model::objects::Streamed`);
/// with `--kind` naming every kind it holds them unpacked (`Written`). Both
/// print the same bytes for every example and cluster: the examples hold
/// namespaces of several services, Kueue cohorts of several namespaces,
/// several clusters and GitOps engine objects.
#[test]
fn the_packed_stream_is_the_unpacked_one() {
    let every_kind: Vec<&str> = isvc::model::kinds::KINDS.iter().map(|k| k.kind).collect();
    let every_kind = every_kind.join(",");
    for ex in examples() {
        let inputs = crate::common::example_inputs(&ex, isvc::Templates::builtin());
        let mut clusters: Vec<Vec<String>> =
            inputs.platform.clusters.iter().map(|c| vec!["--cluster".to_string(), c.name.clone()]).collect();
        if clusters.is_empty() {
            clusters.push(Vec::new());
        }
        for cluster in clusters {
            let run = |extra: &[&str]| {
                let mut args = example_args(&ex, &["render", "services", "--stdout", "-q"]);
                args.extend(cluster.iter().cloned());
                args.extend(extra.iter().map(|a| a.to_string()));
                let out = Command::cargo_bin("isvc").unwrap().current_dir(&ex).args(&args).output().unwrap();
                assert!(
                    out.status.success(),
                    "{}: isvc {}\n{}",
                    ex.display(),
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr)
                );
                out.stdout
            };
            let packed = run(&[]);
            assert!(packed.starts_with(b"---\n"), "{}: {cluster:?}", ex.display());
            assert!(
                packed == run(&["--kind", &every_kind]),
                "{}: {cluster:?}: the packed stream differs",
                ex.display()
            );
        }
    }
}

/// The same for a fleet where a Kueue cohort compiles two namespaces
/// together (`assistant` and `search-prod`) and namespaces of other groups
/// sort between them: each namespace's objects of one kind stay one run.
#[test]
fn a_cohort_s_namespaces_keep_their_runs_apart_in_the_packed_stream() {
    use crate::harness::Test;
    let platform = "apiVersion: ai.example.com/v1alpha1
kind: Platform
priorities:
  production: {value: 100000, preempt: true}
kueue:
  flavor: {name: a100}
  capacity: {nvidia.com/gpu: 1000, cpu: 100000, memory: 1000Ti}
tenants:
  - name: search
    namespaces: [search-prod]
    cohort: shared-pool
    defaultPriority: production
    quota: {requests.nvidia.com/gpu: 400, requests.cpu: 900000, requests.memory: 9000Ti}
    queues:
      - {name: serving, priority: production, nominalQuota: {nvidia.com/gpu: 200, cpu: 20000, memory: 200Ti}}
  - name: assistant
    cohort: shared-pool
    quota: {requests.nvidia.com/gpu: 400, requests.cpu: 900000, requests.memory: 9000Ti}
    queues:
      - {name: serving, priority: production, nominalQuota: {nvidia.com/gpu: 200, cpu: 20000, memory: 200Ti}}
  - name: mid
    namespaces: [b-team, search-mid]
    quota: {requests.nvidia.com/gpu: 400, requests.cpu: 900000, requests.memory: 9000Ti}
";
    let mut services = String::new();
    for namespace in ["assistant", "b-team", "search-mid", "search-prod"] {
        for i in [2, 0, 1] {
            services.push_str(&format!(
                "---\napiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata: {{name: m{i}, namespace: {namespace}}}\nspec: {{model: Qwen/Qwen3-0.6B, replicas: {}}}\n",
                i + 1
            ));
        }
    }
    let test = Test::new().service(services).platform(platform);
    let every_kind: Vec<&str> = isvc::model::kinds::KINDS.iter().map(|k| k.kind).collect();
    let every_kind = every_kind.join(",");
    let stream = |extra: &[&str]| {
        let mut args = vec!["render", "services", "--platform", "platform.yaml", "--stdout", "-q"];
        args.extend(extra);
        let run = test.cli(&args);
        assert_eq!(run.code(), Some(0), "{}", run.stderr());
        run.output.stdout
    };
    let packed = stream(&[]);
    let text = String::from_utf8_lossy(&packed);
    // The namespaces of other groups come between the cohort's.
    let at =
        |name: &str| text.find(&format!("kind: Deployment\nmetadata:\n  name: m0\n  namespace: {name}\n")).unwrap();
    assert!(at("assistant") < at("b-team") && at("search-mid") < at("search-prod"));
    assert!(packed == stream(&["--kind", &every_kind]), "the packed stream differs:\n{text}");
}
