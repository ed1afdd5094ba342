//! A corpus of bad inputs, each with the exact error output it must produce.
//!
//! Every case under `tests/bad/` is run through the real binary:
//!
//! - `tests/bad/<case>.yaml` is passed as the service file;
//! - `tests/bad/platform-<case>.yaml` is passed as `--platform` together
//!   with a valid service;
//! - a directory `tests/bad/<case>/` is passed as a whole (for problems that
//!   span several files).
//!
//! A few inputs are generated at run time instead of being committed (a
//! scalar over 1 MiB, an oversized file, bytes that are not UTF-8).
//!
//! Each run must exit with status 2, write nothing, print nothing on stdout,
//! not panic and not hang; its stderr is compared with the snapshot
//! `tests/snapshots/<case>.snap`. `--out` and `--stdout` must report the same
//! errors. To update the snapshots after a deliberate change of wording:
//! `INSTA_UPDATE=always cargo test --test bad_inputs`, then review the diff.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;

/// Longest a single run may take before it counts as a hang.
const TIMEOUT: Duration = Duration::from_secs(20);

/// A valid service, rendered together with each bad platform file.
const VALID_SERVICE: &str = "\
apiVersion: ai.example.com/v1alpha1
kind: InferenceService
metadata: {name: qwen3}
spec: {model: Qwen/Qwen3-0.6B, replicas: 3, gpusPerReplica: 1}
";

/// Lines longer than this are shown shortened in snapshots (the huge
/// scalar case would otherwise put a 1 MiB line into one).
const MAX_SNAPSHOT_LINE: usize = 300;

struct Case {
    name: String,
    /// Directory the binary runs in; paths below are relative to it.
    cwd: PathBuf,
    /// Arguments after `render`, before `--out`/`--stdout`.
    args: Vec<String>,
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The committed cases, in name order.
fn committed_cases(valid_service: &Path) -> Vec<Case> {
    let root = manifest_dir();
    let mut entries: Vec<_> = std::fs::read_dir(root.join("tests/bad"))
        .expect("tests/bad exists")
        .map(|e| e.expect("readable entry").path())
        .collect();
    entries.sort();
    let mut cases = Vec::new();
    for path in entries {
        let file_name = path.file_name().unwrap().to_string_lossy().into_owned();
        if file_name.starts_with('.') {
            continue;
        }
        let rel = format!("tests/bad/{file_name}");
        if path.is_dir() {
            cases.push(Case { name: file_name, cwd: root.clone(), args: vec![rel] });
            continue;
        }
        let Some(name) = file_name.strip_suffix(".yaml") else {
            panic!("unexpected file {rel}: cases are .yaml files or directories");
        };
        let args = if name.starts_with("platform-") {
            vec!["--platform".to_string(), rel, valid_service.display().to_string()]
        } else {
            vec![rel]
        };
        cases.push(Case { name: name.to_string(), cwd: root.clone(), args });
    }
    cases
}

/// Cases too big or too odd to commit, written under `dir/generated/`.
fn generated_cases(dir: &Path) -> Vec<Case> {
    let gen_dir = dir.join("generated");
    std::fs::create_dir_all(&gen_dir).unwrap();
    let header = "apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata: {name: qwen3}\n";

    // A scalar one byte over the 1 MiB limit.
    let mut huge = String::from(header);
    huge.push_str("spec:\n  replicas: 3\n  model: ");
    huge.push_str(&"q".repeat((1 << 20) + 1));
    huge.push('\n');

    // A file over the 8 MiB limit on input files (many small documents).
    let mut big = String::new();
    let mut i = 0;
    while big.len() <= 8 << 20 {
        big.push_str(&format!(
            "---\napiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata: {{name: svc-{i}}}\nspec: {{model: Qwen/Qwen3-0.6B, replicas: 1}}\n"
        ));
        i += 1;
    }

    // Latin-1 text: "modèle" with a lone 0xE8 byte, not UTF-8.
    let mut latin1 = header.as_bytes().to_vec();
    latin1.extend_from_slice(b"spec:\n  replicas: 3\n  model: mod\xe8le\n");

    let files: [(&str, Vec<u8>); 3] =
        [("huge-scalar", huge.into_bytes()), ("huge-file", big.into_bytes()), ("non-utf8", latin1)];
    files
        .into_iter()
        .map(|(name, bytes)| {
            let rel = format!("generated/{name}.yaml");
            std::fs::write(dir.join(&rel), bytes).unwrap();
            Case { name: format!("generated-{name}"), cwd: dir.to_path_buf(), args: vec![rel] }
        })
        .collect()
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(case: &Case, mode: &[String]) -> Run {
    let mut cmd = Command::cargo_bin("isvc").expect("the isvc binary is built");
    cmd.current_dir(&case.cwd)
        .env_remove("NO_COLOR")
        .env("RUST_BACKTRACE", "0")
        .args(["render", "--color", "never"])
        .args(&case.args)
        .args(mode)
        .timeout(TIMEOUT);
    let started = Instant::now();
    let output = cmd.output().expect("isvc runs");
    let elapsed = started.elapsed();
    assert!(elapsed < TIMEOUT, "case {}: still running after {elapsed:?}; killed", case.name);
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Replaces the temporary directory with a fixed name and shortens lines
/// that would bloat a snapshot.
fn normalize(stderr: &str, tmp: &Path) -> String {
    let stderr = stderr.replace(&tmp.display().to_string(), "[TMP]");
    let mut out = String::new();
    for line in stderr.lines() {
        let chars = line.chars().count();
        if chars > MAX_SNAPSHOT_LINE {
            let head: String = line.chars().take(60).collect();
            out.push_str(&format!("{head}[... line of {chars} characters shortened]\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn bad_inputs_give_the_expected_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp_path = tmp.path().canonicalize().unwrap();
    let valid_service = tmp_path.join("valid-service.yaml");
    std::fs::write(&valid_service, VALID_SERVICE).unwrap();

    let mut cases = committed_cases(&valid_service);
    cases.extend(generated_cases(&tmp_path));
    assert!(cases.len() >= 35, "only {} cases", cases.len());

    for (i, case) in cases.iter().enumerate() {
        let out_dir = tmp_path.join(format!("out-{i}"));
        let to_dir = run(case, &["--out".to_string(), out_dir.display().to_string()]);
        let to_stdout = run(case, &["--stdout".to_string()]);

        for (mode, r) in [("--out", &to_dir), ("--stdout", &to_stdout)] {
            assert!(!r.stderr.contains("panicked"), "case {} ({mode}) panicked:\n{}", case.name, r.stderr);
            assert_eq!(r.code, Some(2), "case {} ({mode}): expected exit status 2\nstderr:\n{}", case.name, r.stderr);
            assert_eq!(r.stdout, "", "case {} ({mode}) printed to stdout", case.name);
        }
        let written: Vec<_> = match std::fs::read_dir(&out_dir) {
            Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        };
        assert!(written.is_empty(), "case {}: wrote {written:?} despite the errors", case.name);
        assert_eq!(to_dir.stderr, to_stdout.stderr, "case {}: --out and --stdout report different errors", case.name);

        let stderr = normalize(&to_dir.stderr, &tmp_path);
        let shown_args =
            case.args.iter().map(|a| a.replace(&tmp_path.display().to_string(), "[TMP]")).collect::<Vec<_>>().join(" ");
        insta::with_settings!({
            snapshot_path => manifest_dir().join("tests/snapshots"),
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => format!("isvc render --color never {shown_args} --out DIR"),
        }, {
            insta::assert_snapshot!(case.name.as_str(), stderr);
        });
    }
}
