//! Reports of a check run: text like every other diagnostic, and JSON for
//! scripts.

use serde_json::{Value, json};

use crate::check::{Finding, Severity};

/// Counts of findings by severity.
pub fn counts(findings: &[Finding]) -> (usize, usize) {
    let errors = findings.iter().filter(|f| f.rule.severity == Severity::Error).count();
    (errors, findings.len() - errors)
}

/// One line: "2 errors, 1 warning in 4 objects".
pub fn summary(findings: &[Finding], objects: usize) -> String {
    let (errors, warnings) = counts(findings);
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    format!("{}, {} in {}", plural(errors, "error"), plural(warnings, "warning"), plural(objects, "object"))
}

/// The findings as diagnostics text (`color` adds ANSI styles), then the summary.
pub fn to_text(findings: &[Finding], objects: usize, color: bool) -> String {
    let mut out = String::new();
    for f in findings {
        out.push_str(&f.to_diagnostic().render(color));
        out.push('\n');
    }
    out.push_str(&format!("check: {}\n", summary(findings, objects)));
    out
}

/// JSON for scripts: every finding with its rule, object and location.
pub fn to_json(findings: &[Finding], objects: usize) -> String {
    let (errors, warnings) = counts(findings);
    let items: Vec<Value> = findings
        .iter()
        .map(|f| {
            json!({
                "ruleId": f.rule.id,
                "severity": f.rule.severity_name(),
                "message": f.message,
                "object": {
                    "apiVersion": f.id.api_version,
                    "kind": f.id.kind,
                    "namespace": f.id.namespace,
                    "name": f.id.name,
                },
                "service": f.owner,
                "file": f.file(),
                "line": f.line(),
                "summary": f.rule.summary,
                "symptom": f.rule.symptom,
                "fix": f.rule.fix,
            })
        })
        .collect();
    let value = json!({
        "summary": summary(findings, objects),
        "errors": errors,
        "warnings": warnings,
        "findings": items,
    });
    serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
}
