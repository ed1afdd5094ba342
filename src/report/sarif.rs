//! SARIF 2.1.0, the format GitHub code scanning reads: every rule as a
//! reporting descriptor, every finding as a result pointing at the
//! InferenceService file and line it comes from.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::check::{Finding, RULES, Rule, Severity};

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

fn descriptor(rule: &Rule) -> Value {
    let help = format!("{}\n\nIn a cluster: {}\n\nFix: {}\n\n{}", rule.summary, rule.symptom, rule.fix, rule.explain);
    let markdown = format!(
        "{}\n\n**In a cluster:** {}\n\n**Fix:** {}\n\n{}\n\nDisable for one service with the annotation \
         `{}: \"{}\"`, or for a run with `--disable {}`.",
        rule.summary,
        rule.symptom,
        rule.fix,
        rule.explain,
        crate::check::DISABLE_ANNOTATION,
        rule.id,
        rule.id
    );
    let mut descriptor = json!({
        "id": rule.id,
        "name": rule.pascal_name(),
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.explain},
        "help": {"text": help, "markdown": markdown},
        "defaultConfiguration": {"level": level(rule.severity)},
        "properties": {"tags": ["kubernetes", "inference"], "precision": "high"},
    });
    if let Some(uri) = help_uri(rule) {
        descriptor["helpUri"] = json!(uri);
    }
    descriptor
}

/// Where a rule is documented on the web: `ISVC_DOCS_URL` (the URL of the
/// rules page, for a mirror), else the package's repository at this
/// version; none when neither is known, as SARIF allows.
fn help_uri(rule: &Rule) -> Option<String> {
    let anchor = rule.id.to_ascii_lowercase();
    if let Some(base) = std::env::var("ISVC_DOCS_URL").ok().filter(|u| !u.is_empty()) {
        return Some(format!("{base}#{anchor}"));
    }
    let repository = env!("CARGO_PKG_REPOSITORY");
    (!repository.is_empty()).then(|| format!("{repository}/blob/v{}/docs/check.md#{anchor}", env!("CARGO_PKG_VERSION")))
}

/// A file path as a SARIF URI: relative paths as they are (GitHub resolves
/// them against the repository root), absolute ones under the working
/// directory made relative, others as `file://` URIs.
fn uri(path: &str) -> String {
    let p = Path::new(path);
    let rel = if p.is_absolute() {
        match std::env::current_dir().ok().and_then(|cwd| p.strip_prefix(cwd).ok().map(Path::to_path_buf)) {
            Some(r) => r,
            None => return format!("file://{}", encode(&path.replace('\\', "/"))),
        }
    } else {
        p.to_path_buf()
    };
    encode(rel.to_string_lossy().replace('\\', "/").trim_start_matches("./"))
}

fn encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '.' | '_' | '~' | '/' | ':' => out.push(c),
            other => {
                let mut buf = [0u8; 4];
                for b in other.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
        }
    }
    out
}

/// The findings as a SARIF log. `fallback` is the file results point at
/// when their object has no source (the platform file, for example):
/// GitHub needs a location on every result.
pub fn to_sarif(findings: &[Finding], fallback: Option<&str>) -> String {
    let index: HashMap<&str, usize> = RULES.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let results: Vec<Value> = findings
        .iter()
        .map(|f| {
            let key = format!(
                "{}/{}/{}/{}/{}",
                f.rule.id,
                f.id.api_version,
                f.id.kind,
                f.id.namespace.as_deref().unwrap_or(""),
                f.id.name
            );
            let n = seen.entry(key.clone()).and_modify(|n| *n += 1).or_insert(0);
            let mut result = json!({
                "ruleId": f.rule.id,
                "level": level(f.rule.severity),
                "message": {"text": format!("{}: {}", f.object, f.message)},
                "partialFingerprints": {"isvcFinding/v1": format!("{key}/{n}")},
            });
            if let Some(i) = index.get(f.rule.id) {
                result["ruleIndex"] = json!(i);
            }
            if let Some(file) = f.file().or_else(|| fallback.map(str::to_string)) {
                let mut location = json!({"physicalLocation": {"artifactLocation": {"uri": uri(&file)}}});
                if let Some(span) = f.location.as_ref().and_then(|l| l.span) {
                    location["physicalLocation"]["region"] =
                        json!({"startLine": span.start.line, "startColumn": span.start.col});
                }
                result["locations"] = json!([location]);
            }
            result
        })
        .collect();
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "isvc",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": RULES.iter().map(descriptor).collect::<Vec<_>>(),
            }},
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&log).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uris() {
        assert_eq!(uri("services/qwen3.yaml"), "services/qwen3.yaml");
        assert_eq!(uri("./services/my file.yaml"), "services/my%20file.yaml");
        assert_eq!(
            uri("/elsewhere/x.yaml").starts_with("file:///elsewhere/x.yaml"),
            !std::env::current_dir().unwrap().starts_with("/elsewhere")
        );
    }
}
