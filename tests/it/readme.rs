//! The README and the CLI reference say what isvc prints: the first command's
//! output, the walkthrough's render summary and tree, and the summary in
//! docs/cli.md are checked against the real binary.

use std::path::Path;

use crate::harness::{isvc, run};

fn readme() -> String {
    std::fs::read_to_string("README.md").unwrap()
}

/// The body of the heredoc `cat > NAME <<'YAML'` in the README, unindented.
fn heredoc(text: &str, name: &str) -> String {
    let start = format!("cat > {name} <<'YAML'");
    let mut lines = text.lines().skip_while(|l| l.trim() != start);
    let first = lines.next().unwrap_or_else(|| panic!("README has no `{start}`"));
    let indent = first.len() - first.trim_start().len();
    let mut body = String::new();
    for l in lines.take_while(|l| l.trim() != "YAML") {
        body.push_str(l.get(indent..).unwrap_or("").trim_end());
        body.push('\n');
    }
    body
}

/// The kinds of a YAML stream, in order.
fn kinds(stream: &str) -> Vec<&str> {
    stream.lines().filter_map(|l| l.strip_prefix("kind: ")).collect()
}

#[test]
fn the_first_command_prints_the_deployment_the_readme_shows() {
    let text = readme();
    let command = text.lines().find(|l| l.starts_with("cargo run -q -- render ")).expect("the first command");
    let args: Vec<&str> = command.trim_start_matches("cargo run -q -- ").split_whitespace().collect();
    assert_eq!(args, ["render", "examples/basic/services", "--stdout", "--kind", "Deployment"]);
    let (code, out, err) = run(isvc(Path::new(".")).args(&args));
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(kinds(&out), ["Deployment"]);
    // Every line the README shows (the rest is elided with `# ...`) is in
    // the output, in the same order.
    let shown = text.split("It prints (shortened here):\n\n```yaml\n").nth(1).unwrap().split("```").next().unwrap();
    let mut rest = out.as_str();
    for line in shown.lines().filter(|l| !l.trim_start().starts_with("# ") && !l.trim().is_empty()) {
        let at = rest.find(&format!("{line}\n")).unwrap_or_else(|| panic!("README line {line:?} is not in:\n{out}"));
        rest = &rest[at + line.len()..];
    }
    // Without --kind, the CRD's lines come first, as the README says.
    let (_, all, _) = run(isvc(Path::new(".")).args(["render", "examples/basic/services", "--stdout"]));
    assert_eq!(kinds(&all), ["CustomResourceDefinition", "Service", "Deployment", "HorizontalPodAutoscaler"]);
    let crd_lines = all.lines().skip(1).position(|l| l == "---").unwrap() + 1;
    assert!(text.contains(&format!("(its first {crd_lines} lines)")), "the CRD takes {crd_lines} lines");
}

#[test]
fn the_walkthrough_prints_the_summary_and_tree_the_readme_shows() {
    let text = readme();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("services")).unwrap();
    for name in ["services/qwen3.yaml", "platform.yaml"] {
        std::fs::write(dir.path().join(name), heredoc(&text, name)).unwrap();
    }
    let command = "isvc render services --platform platform.yaml --out rendered";
    let after = text.split(&format!("   {command}\n")).nth(1).expect("the walkthrough's render command");
    let summary = after.lines().next().unwrap().trim_start().strip_prefix("# ").unwrap();
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let (code, _, err) = run(isvc(dir.path()).args(&args));
    assert_eq!((code, err.trim_end()), (0, summary));
    // The tree drawn below it holds exactly the files written.
    let drawn = after.split("```text\n").nth(1).unwrap().split("```").next().unwrap();
    let drawn: Vec<&str> = drawn
        .lines()
        .filter_map(|l| l.rsplit(' ').next())
        .filter(|name| name.ends_with(".yaml") || *name == ".isvc-manifest")
        .collect();
    let mut written: Vec<String> = walkdir::WalkDir::new(dir.path().join("rendered"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let mut drawn: Vec<String> = drawn.iter().map(|s| s.to_string()).collect();
    drawn.sort();
    assert_eq!(drawn, written);
}

#[test]
fn the_cli_reference_shows_the_summary_render_prints() {
    let doc = std::fs::read_to_string("docs/cli.md").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let services = dir.path().join("examples/basic/services");
    std::fs::create_dir_all(&services).unwrap();
    std::fs::copy("examples/basic/services/qwen3.yaml", services.join("qwen3.yaml")).unwrap();
    let command = "isvc render examples/basic/services --out basic";
    assert!(doc.contains(&format!("```sh\n{command}\n```")), "docs/cli.md no longer shows `{command}`");
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    for expected in ["8 created, 0 updated, 0 deleted, 0 unchanged", "0 created, 0 updated, 0 deleted, 8 unchanged"] {
        let (code, _, err) = run(isvc(dir.path()).args(&args));
        let line = err.trim_end();
        assert_eq!(code, 0);
        assert!(line.ends_with(expected), "{line}");
        assert!(doc.contains(&format!("```text\n{line}\n```")), "docs/cli.md does not quote `{line}`");
    }
}
