//! The render benchmark's peers render the same objects as isvc.
//!
//! `benches/bench.sh` compares isvc with a Python Jinja2 + PyYAML renderer
//! (`benches/baseline/render.py`) and a Helm chart (`benches/helm-chart/`).
//! Those comparisons only mean something while the peers produce the objects
//! isvc produces, so this test renders a sample of services with isvc
//! (`render --stdout`) and with each peer, and has
//! `benches/baseline/compare.py` compare the streams object by object (as
//! parsed data; for Python also in the same order).
//!
//! The peers are external programs, so the comparisons are ignored tests:
//! `cargo test` lists them as ignored, with what each needs, and
//! `cargo test -- --ignored` (as `.ci/run` does, with Python installed)
//! runs them and fails when a tool is missing:
//! - Python: `python3` (or `$PYTHON`) with jinja2 and PyYAML built with
//!   libyaml;
//! - Helm: `HELM` naming a helm binary (and Python, for compare.py).
//!
//! The sample follows `benches/bench.sh`'s generator (namespaces, models,
//! replicas including 0, GPUs per replica given or left out, optional labels
//! and annotations), plus a file holding two services, one of them without a
//! namespace and with an annotation that needs quoting.
//!
//! This file is self-contained (no shared test helpers), so that it can be
//! moved as it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

/// Services in the generated part of the sample.
const SAMPLE: usize = 60;
const NAMESPACES: usize = 4;

const MODELS: [(&str, &str); 8] = [
    ("Qwen/Qwen3-0.6B", "qwen3-0-6b"),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3-1-8b"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b"),
    ("google/gemma-3-27b-it", "gemma-3-27b"),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "r1-distill-32b"),
    ("Qwen/Qwen2.5-72B-Instruct", "qwen2-5-72b"),
    ("microsoft/Phi-4-mini-instruct", "phi-4-mini"),
    ("/models/acme/support-bot-v7", "support-bot"),
];
const REPLICAS: [u32; 10] = [0, 1, 1, 2, 2, 3, 4, 6, 8, 12];
const GPUS: [u32; 4] = [1, 2, 4, 8];
const TIERS: [&str; 3] = ["gold", "silver", "bronze"];

/// One InferenceService of the sample.
struct Service {
    file: String,
    name: String,
    namespace: Option<String>,
    model: String,
    replicas: u32,
    /// `None`: left out of the file, so the default (1) applies.
    gpus: Option<u32>,
    labels: Vec<(String, String)>,
    annotations: Vec<(String, String)>,
}

impl Service {
    /// The InferenceService document.
    fn yaml(&self) -> String {
        let mut y = String::from("apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata:\n");
        y += &format!("  name: {}\n", self.name);
        if let Some(ns) = &self.namespace {
            y += &format!("  namespace: {ns}\n");
        }
        if !self.labels.is_empty() {
            y += "  labels:\n";
            for (k, v) in &self.labels {
                y += &format!("    {k}: {}\n", json!(v));
            }
        }
        if !self.annotations.is_empty() {
            y += "  annotations:\n";
            for (k, v) in &self.annotations {
                y += &format!("    {k}: {}\n", json!(v));
            }
        }
        y += &format!("spec:\n  model: {}\n  replicas: {}\n", json!(self.model), self.replicas);
        if let Some(g) = self.gpus {
            y += &format!("  gpusPerReplica: {g}\n");
        }
        y
    }

    /// The entry of the Helm chart's `services` list.
    fn helm_value(&self) -> Value {
        let mut v = json!({
            "name": self.name,
            "source": self.file,
            "model": self.model,
            "replicas": self.replicas,
        });
        if let Some(ns) = &self.namespace {
            v["namespace"] = json!(ns);
        }
        if let Some(g) = self.gpus {
            v["gpusPerReplica"] = json!(g);
        }
        let map = |kv: &[(String, String)]| Value::Object(kv.iter().map(|(k, v)| (k.clone(), json!(v))).collect());
        if !self.labels.is_empty() {
            v["labels"] = map(&self.labels);
        }
        if !self.annotations.is_empty() {
            v["annotations"] = map(&self.annotations);
        }
        v
    }
}

/// The sample: `SAMPLE` services as `benches/bench.sh` generates them, and
/// one file with two more.
fn sample() -> Vec<Service> {
    let mut services: Vec<Service> = (0..SAMPLE)
        .map(|i| {
            let ns = format!("team-{:02}", i % NAMESPACES);
            let (model, prefix) = MODELS[(i / NAMESPACES) % MODELS.len()];
            let replicas = REPLICAS[(i * 7 + i / NAMESPACES) % REPLICAS.len()];
            let gpus = GPUS[(i * 3 + i / 80) % GPUS.len()];
            let name = format!("{prefix}-{i:05}");
            let mut labels = vec![("team".to_string(), ns.clone())];
            if i % 3 == 0 {
                labels.push(("tier".to_string(), TIERS[(i / 3) % TIERS.len()].to_string()));
            }
            let mut annotations = Vec::new();
            if i % 5 == 0 {
                annotations.push(("example.com/owner".to_string(), format!("{ns}@example.com")));
            }
            Service {
                file: format!("services/{ns}/{name}.yaml"),
                name,
                namespace: Some(ns),
                model: model.to_string(),
                replicas,
                gpus: (gpus != 1 || i % 2 == 1).then_some(gpus),
                labels,
                annotations,
            }
        })
        .collect();
    let file = "services/shared/two-services.yaml".to_string();
    services.push(Service {
        file: file.clone(),
        name: "no-namespace".to_string(),
        namespace: None,
        model: "Qwen/Qwen3-0.6B".to_string(),
        replicas: 1,
        gpus: None,
        labels: Vec::new(),
        annotations: Vec::new(),
    });
    services.push(Service {
        file,
        name: "quoted-annotation".to_string(),
        namespace: Some("team-x".to_string()),
        model: "meta-llama/Llama-3.1-8B-Instruct".to_string(),
        replicas: 3,
        gpus: Some(2),
        labels: vec![("team".to_string(), "x".to_string())],
        annotations: vec![("example.com/note".to_string(), "a \"quoted\" value: with # and colon".to_string())],
    });
    services
}

/// Writes the sample's files, the Helm values and `isvc crd` under `dir`.
fn write_sample(dir: &Path) {
    let services = sample();
    let mut files: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for s in &services {
        files.entry(&s.file).or_default().push(s.yaml());
    }
    for (file, docs) in files {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, docs.join("---\n")).unwrap();
    }
    // JSON is YAML: the values file needs no quoting rules of its own.
    let values = json!({ "services": services.iter().map(Service::helm_value).collect::<Vec<_>>() });
    std::fs::write(dir.join("values.yaml"), serde_json::to_string_pretty(&values).unwrap()).unwrap();
    let crd = run(Command::new(isvc()).arg("crd").current_dir(dir), "isvc crd");
    std::fs::write(dir.join("crd.yaml"), crd.stdout).unwrap();
}

fn isvc() -> &'static str {
    env!("CARGO_BIN_EXE_isvc")
}

fn benches() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches")
}

fn python() -> String {
    std::env::var("PYTHON").ok().filter(|p| !p.is_empty()).unwrap_or_else(|| "python3".to_string())
}

/// Says on stderr, past the test harness's capture, that a comparison did not run.
/// Why the Python peer cannot run here, if it cannot.
fn python_missing() -> Option<String> {
    let py = python();
    match Command::new(&py).args(["-c", "import jinja2, yaml; yaml.CSafeLoader"]).output() {
        Err(e) => Some(format!("{py} with jinja2 and pyyaml not available ({py}: {e})")),
        Ok(out) if !out.status.success() => {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err.lines().last().unwrap_or("").trim().to_string();
            Some(format!("{py} with jinja2 and pyyaml (built with libyaml) not available ({last})"))
        }
        Ok(_) => None,
    }
}

/// Runs `cmd` and returns its output; fails the test, with its stderr, unless it succeeds.
fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(out.status.success(), "{what} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    out
}

/// A directory with the sample and isvc's stream of it in `isvc.yaml`.
fn rendered_sample() -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("isvc-bench-peers.").tempdir().unwrap();
    write_sample(dir.path());
    let out = run(
        Command::new(isvc()).args(["render", "services", "--stdout"]).current_dir(dir.path()),
        "isvc render services --stdout",
    );
    std::fs::write(dir.path().join("isvc.yaml"), out.stdout).unwrap();
    dir
}

/// compare.py's verdict on `actual` against isvc's stream; fails the test on a mismatch.
fn assert_same_objects(dir: &Path, actual: &str, any_order: bool, peer: &str) {
    let mut cmd = Command::new(python());
    cmd.arg(benches().join("baseline/compare.py")).current_dir(dir);
    if any_order {
        cmd.arg("--any-order");
    }
    let out = cmd.args(["isvc.yaml", actual]).output().expect("run compare.py");
    let verdict = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success() && verdict.starts_with("match"),
        "{peer} does not render the objects isvc renders: {verdict}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The sample has Services, Deployments and autoscalers for most services.
    let objects: usize = verdict.trim_start_matches("match (").split(' ').next().unwrap().parse().unwrap();
    assert!(objects > 2 * (SAMPLE + 2), "{peer}: only {objects} objects compared: {verdict}");
}

#[test]
#[ignore = "needs python3 with jinja2 and PyYAML (libyaml); .ci/run runs the ignored tests"]
fn python_baseline_renders_the_same_objects_as_isvc() {
    if let Some(why) = python_missing() {
        panic!("python baseline comparison needs {why}");
    }
    let dir = rendered_sample();
    for (flags, file) in [(&[][..], "python.yaml"), (&["--no-parse-back"][..], "python-no-parse-back.yaml")] {
        let what = ["benches/baseline/render.py"].iter().chain(flags).copied().collect::<Vec<_>>().join(" ");
        let out = run(
            Command::new(python())
                .arg(benches().join("baseline/render.py"))
                .args(flags)
                .args(["--crd", "crd.yaml", "services"])
                .current_dir(dir.path()),
            &what,
        );
        std::fs::write(dir.path().join(file), out.stdout).unwrap();
        assert_same_objects(dir.path(), file, false, &what);
    }
}

#[test]
#[ignore = "needs HELM=/path/to/helm (v4) and python3 with PyYAML"]
fn helm_chart_renders_the_same_objects_as_isvc() {
    let helm = std::env::var("HELM").unwrap_or_default();
    assert!(Path::new(&helm).is_file(), "HELM={helm:?} is not a helm binary (HELM=/path/to/helm)");
    if let Some(why) = python_missing() {
        panic!("helm chart comparison: compare.py needs {why}");
    }
    let dir = rendered_sample();
    let out = run(
        Command::new(&helm)
            .arg("template")
            .arg("isvc")
            .arg(benches().join("helm-chart"))
            .args(["-f", "values.yaml", "--set-file", "crd=crd.yaml"])
            .current_dir(dir.path()),
        "helm template",
    );
    std::fs::write(dir.path().join("helm.yaml"), out.stdout).unwrap();
    assert_same_objects(dir.path(), "helm.yaml", true, "benches/helm-chart");
}
