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

/// GitHub refuses a comment longer than 65,536 characters; the default cap
/// leaves room for what a workflow adds around it.
pub const COMMENT_LIMIT: usize = 60_000;

/// How many names a warning lists before it says how many more there are.
const NAMES_LISTED: usize = 20;

/// Markdown for a pull-request comment, at most `limit` characters: the
/// summary, warnings for pod restarts and deletions, counts by kind and by
/// namespace, then one row and one collapsed diff per object, pod restarts
/// and deletions first, as many as fit. What does not fit is counted, with
/// a pointer to the full diff (`isvc diff --format text`, which a workflow
/// keeps as an artifact).
pub fn to_markdown(report: &Report, limit: usize) -> String {
    let mut out = String::from("### isvc diff\n\n");
    if report.is_empty() {
        out.push_str(&format!("No changes. {}\n", report.summary()));
        return out;
    }
    out.push_str(&format!("**{}**\n\n", report.summary()));
    let listed = |objects: Vec<&ObjectDiff>| {
        let mut names: Vec<String> = objects.iter().take(NAMES_LISTED).map(|o| format!("`{}`", o.id())).collect();
        if objects.len() > NAMES_LISTED {
            names.push(format!("and {} more", objects.len() - NAMES_LISTED));
        }
        names.join(", ")
    };
    let restarts: Vec<&ObjectDiff> = report.objects.iter().filter(|o| o.impact == Impact::RestartsPods).collect();
    let removed: Vec<&ObjectDiff> = report.objects.iter().filter(|o| o.change == Change::Removed).collect();
    if !restarts.is_empty() {
        out.push_str(&format!("> [!WARNING]\n> Restarts GPU pods (a rolling update): {}\n\n", listed(restarts)));
    }
    if !removed.is_empty() {
        out.push_str(&format!("> [!CAUTION]\n> Deletes from the cluster: {}\n\n", listed(removed)));
    }
    out.push_str(&counts(report));
    let clustered = report.objects.iter().any(|o| o.cluster.is_some());
    // Pod restarts first, then deletions, then the rest, each in output order.
    let mut order: Vec<&ObjectDiff> = report.objects.iter().collect();
    order.sort_by_key(|o| (o.impact != Impact::RestartsPods, o.change != Change::Removed));
    let row = |o: &ObjectDiff| {
        let mut r = String::new();
        if clustered {
            r.push_str(&format!("| {} ", o.cluster.as_deref().unwrap_or("(GitOps)")));
        }
        r.push_str(&format!(
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
        r
    };
    let details = |o: &ObjectDiff| {
        let place = o.cluster.as_ref().map(|c| format!(" in {c}")).unwrap_or_default();
        let mut d = format!("<details><summary>{} <code>{}</code>{place}</summary>\n\n", o.change_word(), o.id());
        if !o.fields.is_empty() {
            d.push_str(&format!(
                "Fields: {}\n\n",
                o.fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        d.push_str(&format!("```diff\n{}```\n\n</details>\n\n", o.diff));
        d
    };
    let note = |left: usize| {
        format!(
            "_{left} more object(s) not shown: the comment is capped at {limit} characters. The full diff is \
             `isvc diff --format text` (the workflow's artifact)._\n"
        )
    };
    // The table rows that fit, then the diffs that fit after them; the
    // budget keeps room for the closing note.
    let budget = limit.saturating_sub(out.len() + note(report.objects.len()).len() + 200);
    let mut table = String::new();
    table.push_str(if clustered { "| Cluster " } else { "" });
    table.push_str("| Change | Kind | Namespace | Name | Pods |\n");
    table.push_str(if clustered { "|---" } else { "" });
    table.push_str("|---|---|---|---|---|\n");
    let mut rows = 0;
    for o in &order {
        let r = row(o);
        if table.len() + r.len() > budget {
            break;
        }
        table.push_str(&r);
        rows += 1;
    }
    let mut diffs = String::new();
    let mut shown = 0;
    for o in order.iter().take(rows) {
        let d = details(o);
        if table.len() + diffs.len() + d.len() > budget {
            break;
        }
        diffs.push_str(&d);
        shown += 1;
    }
    out.push_str(&table);
    out.push('\n');
    out.push_str(&diffs);
    if rows < order.len() || shown < rows {
        let left = order.len() - shown;
        out.push_str(&note(left));
    }
    out
}

/// Changes counted by kind and by namespace, as two small tables.
fn counts(report: &Report) -> String {
    use std::collections::BTreeMap;
    #[derive(Default)]
    struct Tally {
        added: usize,
        changed: usize,
        removed: usize,
        restarts: usize,
    }
    let mut by_kind: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut by_namespace: BTreeMap<&str, Tally> = BTreeMap::new();
    for o in &report.objects {
        for t in [
            by_kind.entry(o.kind.as_str()).or_default(),
            by_namespace.entry(o.namespace.as_deref().unwrap_or("(cluster)")).or_default(),
        ] {
            match o.change {
                Change::Added => t.added += 1,
                Change::Changed => t.changed += 1,
                Change::Removed => t.removed += 1,
            }
            t.restarts += usize::from(o.impact == Impact::RestartsPods);
        }
    }
    let mut out = String::new();
    for (what, tallies) in [("Kind", &by_kind), ("Namespace", &by_namespace)] {
        out.push_str(&format!("| {what} | Added | Changed | Removed | Restart pods |\n|---|---|---|---|---|\n"));
        for (name, t) in tallies {
            out.push_str(&format!("| {name} | {} | {} | {} | {} |\n", t.added, t.changed, t.removed, t.restarts));
        }
        out.push('\n');
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
