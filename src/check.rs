//! Checks over the rendered objects of a run, after templates: the causes of
//! inference outages that can be seen before anything reaches a cluster.
//!
//! Each rule has a stable ID. `render` refuses to write output with an
//! error-level finding.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;
use serde_json::Value;

use crate::diagnostics::{Diagnostic, Severity};
use crate::objects::Object;

/// A rule: stable ID, severity, and the one-line reason it matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    pub summary: &'static str,
}

pub const SELECTOR_MATCHES_NO_POD: Rule = Rule {
    id: "ISVC001",
    severity: Severity::Error,
    summary: "a Service whose selector matches no pod template has no endpoints and answers 503",
};
pub const TARGET_PORT_NOT_SERVED: Rule = Rule {
    id: "ISVC002",
    severity: Severity::Error,
    summary: "a Service targetPort that no container port serves sends traffic nowhere",
};
pub const LISTENS_ON_LOOPBACK: Rule = Rule {
    id: "ISVC003",
    severity: Severity::Error,
    summary: "a server bound to 127.0.0.1 or localhost is unreachable from the Service",
};
pub const GPU_REQUEST_NOT_LIMIT: Rule = Rule {
    id: "ISVC004",
    severity: Severity::Error,
    summary: "GPU requests must equal GPU limits; the API server rejects the pod otherwise",
};
pub const AUTOSCALER_TARGET_MISSING: Rule = Rule {
    id: "ISVC005",
    severity: Severity::Error,
    summary: "an autoscaler must point at a rendered Deployment and have minReplicas <= maxReplicas",
};

/// Every rule, for listings.
pub const RULES: [Rule; 5] = [
    SELECTOR_MATCHES_NO_POD,
    TARGET_PORT_NOT_SERVED,
    LISTENS_ON_LOOPBACK,
    GPU_REQUEST_NOT_LIMIT,
    AUTOSCALER_TARGET_MISSING,
];

/// A finding: the rule, the object and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub rule: Rule,
    pub object: String,
    pub source: Option<String>,
    pub message: String,
}

impl Finding {
    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut d =
            Diagnostic::error(format!("{} [{}]: {}", self.object, self.rule.id, self.message)).help(self.rule.summary);
        d.severity = self.rule.severity;
        if let Some(src) = &self.source {
            d.message.push_str(&format!(" (from {src})"));
        }
        d
    }
}

/// Runs every rule over `objects`. Linear in the number of objects: pod
/// templates are indexed by namespace and label, targets by identity.
pub fn run(objects: &[Object]) -> Vec<Finding> {
    let index = Index::new(objects);
    let finding = |rule: Rule, o: &Object, message: String| Finding {
        rule,
        object: o.id.to_string(),
        source: o.source.clone(),
        message,
    };
    objects
        .par_iter()
        .flat_map_iter(|o| {
            let mut findings = Vec::new();
            match o.id.kind.as_str() {
                "Service" => check_service(o, &index, &mut findings, &finding),
                "Deployment" | "LeaderWorkerSet" => check_pod_template(o, &mut findings, &finding),
                "HorizontalPodAutoscaler" => check_autoscaler(o, &index, &mut findings, &finding),
                _ => {}
            }
            findings
        })
        .collect()
}

/// Lookups the rules need, built once per run.
struct Index<'a> {
    /// (namespace, label key, label value) to the pod templates carrying it.
    pods_by_label: HashMap<(&'a str, &'a str, &'a str), Vec<&'a Value>>,
    /// (kind, namespace, name) of every object.
    ids: HashSet<(&'a str, &'a str, &'a str)>,
}

impl<'a> Index<'a> {
    fn new(objects: &'a [Object]) -> Index<'a> {
        let mut pods_by_label: HashMap<(&str, &str, &str), Vec<&Value>> = HashMap::new();
        let mut ids = HashSet::new();
        for o in objects {
            let ns = o.id.namespace.as_deref().unwrap_or_default();
            ids.insert((o.id.kind.as_str(), ns, o.id.name.as_str()));
            for template in crate::objects::pod_templates(&o.value) {
                for (k, v) in template.pointer("/metadata/labels").and_then(Value::as_object).into_iter().flatten() {
                    if let Some(v) = v.as_str() {
                        pods_by_label.entry((ns, k.as_str(), v)).or_default().push(template);
                    }
                }
            }
        }
        Index { pods_by_label, ids }
    }

    /// Pod templates in `ns` whose labels include every pair of `selector`.
    fn selected(&self, ns: &str, selector: &serde_json::Map<String, Value>) -> Vec<&'a Value> {
        let mut candidates: Option<&Vec<&Value>> = None;
        for (k, v) in selector {
            let list = self.pods_by_label.get(&(ns, k.as_str(), v.as_str().unwrap_or_default()));
            match list {
                None => return Vec::new(),
                Some(l) if candidates.is_none_or(|c| l.len() < c.len()) => candidates = Some(l),
                Some(_) => {}
            }
        }
        candidates
            .into_iter()
            .flatten()
            .filter(|t| {
                let labels = t.pointer("/metadata/labels").and_then(Value::as_object);
                selector.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
            })
            .copied()
            .collect()
    }
}

type MakeFinding<'a> = dyn Fn(Rule, &Object, String) -> Finding + Sync + 'a;

fn check_service(o: &Object, index: &Index<'_>, out: &mut Vec<Finding>, finding: &MakeFinding<'_>) {
    let Some(selector) = o.value.pointer("/spec/selector").and_then(Value::as_object) else { return };
    if selector.is_empty() {
        return;
    }
    let matched = index.selected(o.id.namespace.as_deref().unwrap_or_default(), selector);
    if matched.is_empty() {
        let sel: Vec<String> =
            selector.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
        out.push(finding(
            SELECTOR_MATCHES_NO_POD,
            o,
            format!("selector {} matches no pod template in the namespace", sel.join(",")),
        ));
        return;
    }
    for (i, port) in o.value.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let target = port.get("targetPort").or_else(|| port.get("port"));
        let Some(target) = target else { continue };
        let served = matched.iter().any(|t| {
            containers(t).any(|c| {
                c.get("ports").and_then(Value::as_array).into_iter().flatten().any(|p| match target {
                    Value::String(name) => p.get("name").and_then(Value::as_str) == Some(name),
                    number => p.get("containerPort") == Some(number),
                })
            })
        });
        if !served {
            out.push(finding(
                TARGET_PORT_NOT_SERVED,
                o,
                format!("spec.ports[{i}].targetPort {target} is not a port of any selected container"),
            ));
        }
    }
}

fn containers(template: &Value) -> impl Iterator<Item = &Value> {
    template.pointer("/spec/containers").and_then(Value::as_array).into_iter().flatten()
}

fn check_pod_template(o: &Object, out: &mut Vec<Finding>, finding: &MakeFinding<'_>) {
    for c in crate::objects::pod_templates(&o.value).into_iter().flat_map(containers) {
        let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
        let args: Vec<&str> = ["command", "args"]
            .iter()
            .filter_map(|k| c.get(*k).and_then(Value::as_array))
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for (i, a) in args.iter().enumerate() {
            let host = match a.split_once('=') {
                Some(("--host", h)) => Some(h),
                _ if *a == "--host" => args.get(i + 1).copied(),
                _ => None,
            };
            if let Some(h) = host.filter(|h| matches!(*h, "127.0.0.1" | "localhost" | "::1" | "[::1]")) {
                out.push(finding(
                    LISTENS_ON_LOOPBACK,
                    o,
                    format!("container \"{name}\" listens on {h}; use --host 0.0.0.0"),
                ));
            }
        }
        let requests = c.pointer("/resources/requests").and_then(Value::as_object);
        let limits = c.pointer("/resources/limits").and_then(Value::as_object);
        for key in requests.into_iter().chain(limits).flat_map(|m| m.keys()).filter(|k| k.ends_with("/gpu")) {
            let r = requests.and_then(|m| m.get(key));
            let l = limits.and_then(|m| m.get(key));
            if r.is_some() && l.is_some() && quantity_text(r) != quantity_text(l) || l.is_none() {
                out.push(finding(
                    GPU_REQUEST_NOT_LIMIT,
                    o,
                    format!(
                        "container \"{name}\" requests {key}={} but limits it to {}",
                        quantity_text(r),
                        quantity_text(l)
                    ),
                ));
                break;
            }
        }
    }
}

fn quantity_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "nothing".to_string(),
    }
}

fn check_autoscaler(o: &Object, index: &Index<'_>, out: &mut Vec<Finding>, finding: &MakeFinding<'_>) {
    let target = o.value.pointer("/spec/scaleTargetRef/name").and_then(Value::as_str).unwrap_or_default();
    let kind = o.value.pointer("/spec/scaleTargetRef/kind").and_then(Value::as_str).unwrap_or_default();
    if !index.ids.contains(&(kind, o.id.namespace.as_deref().unwrap_or_default(), target)) {
        out.push(finding(AUTOSCALER_TARGET_MISSING, o, format!("scaleTargetRef {kind}/{target} is not rendered")));
    }
    let min = o.value.pointer("/spec/minReplicas").and_then(Value::as_i64).unwrap_or(1);
    let max = o.value.pointer("/spec/maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    if min > max {
        out.push(finding(AUTOSCALER_TARGET_MISSING, o, format!("minReplicas {min} is above maxReplicas {max}")));
    }
}
