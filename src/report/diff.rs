//! The object diff as text, markdown (for pull-request comments) and JSON.

use serde_json::json;

use crate::emit::diff::*;

/// Plain or coloured text for a terminal.
pub fn to_text(report: &Report, color: bool) -> String {
    use anstyle::{AnsiColor, Style};
    let paint = |s: &str, c: AnsiColor| {
        if color {
            let st = Style::new().fg_color(Some(c.into()));
            format!("{}{s}{}", st.render(), st.render_reset())
        } else {
            s.to_string()
        }
    };
    let mut out = String::new();
    let mut cluster: Option<&str> = None;
    for o in &report.objects {
        if o.cluster.is_some() && o.cluster.as_deref() != cluster {
            cluster = o.cluster.as_deref();
            out.push_str(&format!("cluster {}:\n", cluster.unwrap_or_default()));
        }
        let (mark, c) = match o.change {
            Change::Added => ("+", AnsiColor::Green),
            Change::Removed => ("-", AnsiColor::Red),
            Change::Changed => ("~", AnsiColor::Yellow),
        };
        let note = match o.impact {
            Impact::NoPodChange => String::new(),
            i => format!("  [{}]", i.describe()),
        };
        out.push_str(&paint(&format!("{mark} {}{note}\n", o.id()), c));
        if !o.fields.is_empty() {
            out.push_str(&format!("    fields: {}\n", o.fields.join(", ")));
        }
        for line in o.diff.lines() {
            let styled = match line.chars().next() {
                Some('+') if !line.starts_with("+++") => paint(line, AnsiColor::Green),
                Some('-') if !line.starts_with("---") => paint(line, AnsiColor::Red),
                Some('@') => paint(line, AnsiColor::Cyan),
                _ => line.to_string(),
            };
            out.push_str("    ");
            out.push_str(&styled);
            out.push('\n');
        }
    }
    out.push_str(&format!("{}\n", report.summary()));
    out
}

/// Markdown for a pull-request comment: a summary table, then one collapsed
/// diff per object, with warnings for deletions and pod restarts.
pub fn to_markdown(report: &Report) -> String {
    let mut out = String::from("### isvc diff\n\n");
    if report.is_empty() {
        out.push_str(&format!("No changes. {}\n", report.summary()));
        return out;
    }
    out.push_str(&format!("**{}**\n\n", report.summary()));
    let restarts: Vec<String> =
        report.objects.iter().filter(|o| o.impact == Impact::RestartsPods).map(|o| format!("`{}`", o.id())).collect();
    let removed: Vec<String> =
        report.objects.iter().filter(|o| o.change == Change::Removed).map(|o| format!("`{}`", o.id())).collect();
    if !restarts.is_empty() {
        out.push_str(&format!("> [!WARNING]\n> Restarts GPU pods (a rolling update): {}\n\n", restarts.join(", ")));
    }
    if !removed.is_empty() {
        out.push_str(&format!("> [!CAUTION]\n> Deletes from the cluster: {}\n\n", removed.join(", ")));
    }
    let clustered = report.objects.iter().any(|o| o.cluster.is_some());
    out.push_str(if clustered { "| Cluster " } else { "" });
    out.push_str("| Change | Kind | Namespace | Name | Pods |\n");
    out.push_str(if clustered { "|---" } else { "" });
    out.push_str("|---|---|---|---|---|\n");
    for o in &report.objects {
        if clustered {
            out.push_str(&format!("| {} ", o.cluster.as_deref().unwrap_or("(GitOps)")));
        }
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            match o.change {
                Change::Added => "added",
                Change::Removed => "**removed**",
                Change::Changed => "changed",
            },
            o.kind,
            o.namespace.as_deref().unwrap_or("(cluster)"),
            o.name,
            match o.impact {
                Impact::RestartsPods => "**restarts pods**",
                i => i.describe(),
            }
        ));
    }
    out.push('\n');
    for o in &report.objects {
        let place = o.cluster.as_ref().map(|c| format!(" in {c}")).unwrap_or_default();
        out.push_str(&format!("<details><summary>{} <code>{}</code>{place}</summary>\n\n", o.change_word(), o.id()));
        if !o.fields.is_empty() {
            out.push_str(&format!(
                "Fields: {}\n\n",
                o.fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        out.push_str(&format!("```diff\n{}```\n\n</details>\n\n", o.diff));
    }
    out
}

/// JSON for scripts.
pub fn to_json(report: &Report) -> String {
    let value = json!({
        "summary": report.summary(),
        "unchanged": report.unchanged,
        "objects": report.objects,
    });
    serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
}
