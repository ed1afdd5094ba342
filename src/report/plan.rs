//! The plan and the services' status as text and JSON.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::emit::plan::*;
use crate::model::objects::ObjectId;
use crate::model::v1alpha2::{InferenceService, InferenceServiceStatus, Phase};

/// The plan as text: one line per action, the fields of updates below it.
pub fn to_text(plan: &Plan, color: bool) -> String {
    use anstyle::{AnsiColor, Style};
    let paint = |s: String, c: AnsiColor| {
        if color {
            let st = Style::new().fg_color(Some(c.into()));
            format!("{}{s}{}", st.render(), st.render_reset())
        } else {
            s
        }
    };
    let show = |v: &Option<Value>| v.as_ref().map_or("(unset)".to_string(), Value::to_string);
    let mut out = String::new();
    for a in &plan.actions {
        let (mark, word, c) = match a.action {
            Verb::Create => ("+", "create", AnsiColor::Green),
            Verb::Update => ("~", "update", AnsiColor::Yellow),
            Verb::Delete => ("-", "delete", AnsiColor::Red),
        };
        let why = match a.action {
            Verb::Delete => format!(
                "  (no longer wanted by InferenceService {}/{})",
                a.namespace.as_deref().unwrap_or_default(),
                a.service
            ),
            _ => String::new(),
        };
        out.push_str(&paint(format!("{mark} {word} {}{why}\n", a.id()), c));
        for f in &a.fields {
            let note = f.note.as_ref().map_or(String::new(), |n| format!("  ({n})"));
            out.push_str(&format!("    {}: {} -> {}{note}\n", f.path, show(&f.live), show(&f.desired)));
        }
    }
    for c in &plan.conflicts {
        let id = ObjectId::new(&c.api_version, &c.kind, c.namespace.as_deref(), &c.name);
        out.push_str(&paint(format!("! conflict {id}: {}\n", c.reason), AnsiColor::Red));
    }
    out.push_str(&format!("plan: {}\n", plan.summary()));
    out
}

/// The plan as JSON for scripts.
pub fn to_json(plan: &Plan) -> String {
    let value = json!({
        "converged": plan.is_converged(),
        "summary": plan.summary(),
        "actions": plan.actions,
        "conflicts": plan.conflicts,
        "unchanged": plan.unchanged,
    });
    serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
}

fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Ready => "Ready",
        Phase::Progressing => "Progressing",
    }
}

/// A table like `kubectl get inferenceservices` would print.
pub fn status_to_text(statuses: &[ServiceStatus]) -> String {
    let mut rows = vec![["NAMESPACE", "NAME", "MODEL", "REPLICAS", "READY", "PHASE", "MESSAGE"].map(str::to_string)];
    for s in statuses {
        rows.push([
            s.namespace.clone(),
            s.name.clone(),
            s.model.clone(),
            s.replicas.to_string(),
            s.ready_replicas.to_string(),
            phase_name(s.phase).to_string(),
            s.message.clone(),
        ]);
    }
    let widths: Vec<usize> = (0..7).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(line.join("   ").trim_end());
        out.push('\n');
    }
    out
}

/// The services as InferenceService objects with their status, in a
/// `List`, as `kubectl get inferenceservices -o json` would show them.
pub fn status_to_json(services: &[&InferenceService], statuses: &[ServiceStatus]) -> String {
    let by_name: BTreeMap<(&str, &str), &ServiceStatus> =
        statuses.iter().map(|s| ((s.namespace.as_str(), s.name.as_str()), s)).collect();
    let items: Vec<Value> = services
        .iter()
        .filter_map(|svc| {
            let s = by_name.get(&(svc.namespace_or_default(), svc.name()))?;
            let ready = s.phase == Phase::Ready;
            let typed = InferenceServiceStatus {
                ready_replicas: Some(s.ready_replicas as i32),
                phase: Some(s.phase),
                loaded_adapters: s.loaded_adapters.clone(),
                endpoint: s.endpoint.clone(),
                conditions: Vec::new(),
            };
            let mut status = serde_json::to_value(&typed).unwrap_or_default();
            let mut condition = json!({
                "type": "Ready",
                "status": if ready { "True" } else { "False" },
                "reason": if ready { "Ready" } else { "Progressing" },
                "message": s.message,
            });
            if let Some(t) = &s.since {
                condition["lastTransitionTime"] = json!(t);
            }
            status["conditions"] = json!([condition]);
            Some(json!({
                "apiVersion": crate::model::v1alpha2::API_VERSION,
                "kind": crate::model::v1alpha1::KIND,
                "metadata": {"name": s.name, "namespace": s.namespace},
                "spec": svc.spec,
                "status": status,
            }))
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    serde_json::to_string_pretty(&list).unwrap_or_default() + "\n"
}
