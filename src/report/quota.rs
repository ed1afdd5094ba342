//! The quota table, in the layout of `kubectl describe quota`.

use std::collections::BTreeMap;

use crate::compiler::admission::QuotaUsage;

/// The rows as tables, one per namespace, in the layout of `kubectl describe quota`.
pub fn format_quota_table(rows: &[QuotaUsage]) -> String {
    let mut out = String::new();
    let mut groups: BTreeMap<(Option<&str>, &str, &str), Vec<&QuotaUsage>> = BTreeMap::new();
    for r in rows {
        groups.entry((r.cluster.as_deref(), &r.namespace, &r.quota)).or_default().push(r);
    }
    for ((cluster, ns, quota), rows) in groups {
        let place = cluster.map(|c| format!(" (cluster {c})")).unwrap_or_default();
        out.push_str(&format!("Name:       {quota}\nNamespace:  {ns}{place}\n"));
        let header = ["Resource", "Used (steady state)", "Used (HPA maximum)", "Hard"];
        let cells: Vec<[&str; 4]> = rows.iter().map(|r| [r.key.as_str(), &r.steady, &r.peak, &r.hard]).collect();
        let width = |i: usize| cells.iter().map(|c| c[i].len()).chain([header[i].len()]).max().unwrap_or(0);
        let widths = [width(0), width(1), width(2), width(3)];
        let line = |c: [&str; 4]| {
            format!(
                "{:<w0$}  {:<w1$}  {:<w2$}  {}\n",
                c[0],
                c[1],
                c[2],
                c[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            )
        };
        out.push_str(&line(header));
        out.push_str(&line(["--------", "-------------------", "------------------", "----"]));
        for c in cells {
            out.push_str(&line(c));
        }
        out.push('\n');
    }
    if !out.is_empty() {
        out.push_str("(HPA maximum: every autoscaler at maxReplicas; services of preemptible tiers are left out, online work preempts them at peak)\n");
    }
    out
}
