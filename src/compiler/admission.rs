//! Quota errors and the quota table, from the one admission engine
//! ([`crate::k8s::admission`]) over the rendered objects: the numbers the
//! errors give, the table shows and rules ISVC021/022 report are the same
//! numbers. Positions are attached here, at the edge: a workload's
//! contribution points at its service's `spec.replicas`.

use std::collections::{BTreeMap, HashMap};

use crate::base::diagnostics::{Diagnostic, Location};
use crate::base::quantity::Quantity;
use crate::base::yaml::PathSegment;
use crate::k8s::admission::{Bound, Usage, quota_usage};
use crate::k8s::index::{Context, namespace};
use crate::load::LoadedService;
use crate::model::objects::Object;

/// One row of a namespace's quota table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaUsage {
    pub cluster: Option<String>,
    pub namespace: String,
    pub quota: String,
    pub key: String,
    /// At steady state (`spec.replicas` within the autoscaler's bounds).
    pub steady: String,
    /// At the autoscalers' maximum, preemptible tiers left out.
    pub peak: String,
    pub hard: String,
}

/// What admission makes of the rendered objects: an error per quota and
/// resource the pods do not fit (at steady state, else at the autoscalers'
/// maximum), and the quota table.
pub(crate) fn quotas(
    cx: &Context<'_>,
    objects: &[Object],
    services: &[LoadedService],
    platform_file: Option<&str>,
) -> (Vec<Diagnostic>, Vec<QuotaUsage>) {
    // Where an error points, indexed only once there is an error: a
    // compile of many namespaces runs this once for each.
    let by_name = std::cell::OnceCell::new();
    // A service's other workloads (its endpoint picker) point at the
    // service's gateway section.
    let owners = std::cell::OnceCell::new();
    let at = |ns: &str, workload: &str| -> Option<Location> {
        let by_name = by_name.get_or_init(|| crate::load::by_name(services));
        if let Some(s) = by_name.get(&(ns, workload)) {
            return Some(s.location(&[PathSegment::Key("spec".into()), PathSegment::Key("replicas".into())]));
        }
        let owners: &HashMap<(&str, &str), &str> = owners.get_or_init(|| {
            objects
                .iter()
                .filter(|o| crate::model::kinds::runs_pods(&o.id.kind))
                .filter_map(|o| Some(((namespace(o), o.id.name.as_str()), o.owner.as_deref()?)))
                .collect()
        });
        let s = by_name.get(&(ns, *owners.get(&(ns, workload))?))?;
        Some(s.location(&[PathSegment::Key("spec".into()), PathSegment::Key("gateway".into())]))
    };
    let mut diags = Vec::new();
    let mut rows = Vec::new();
    for quota in objects.iter().filter(|o| o.id.kind == "ResourceQuota") {
        let ns = namespace(quota);
        let steady = quota_usage(cx, quota, Bound::Min);
        let peak = quota_usage(cx, quota, Bound::Max);
        let peak_of: BTreeMap<&str, &Usage> = peak.iter().map(|u| (u.resource.as_str(), u)).collect();
        for u in steady {
            let p = peak_of.get(u.resource.as_str()).copied();
            let shown = |u: Option<&Usage>| u.and_then(|u| u.used.as_ref()).map_or_else(zero, Quantity::to_string);
            rows.push(QuotaUsage {
                cluster: None,
                namespace: ns.to_string(),
                quota: quota.id.name.clone(),
                key: u.resource.clone(),
                steady: shown(Some(u)),
                peak: shown(p),
                hard: u.hard.to_string(),
            });
            let (usage, mode) = match p {
                _ if u.exceeded() => (u, Mode::Steady),
                Some(p) if p.exceeded() => (p, Mode::Peak),
                _ => continue,
            };
            diags.push(exceeded(&quota.id.name, ns, usage, mode, &at, platform_file));
        }
    }
    (diags, rows)
}

fn zero() -> String {
    "0".to_string()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Steady,
    Peak,
}

/// The API server's `exceeded quota` message for the pod that would not fit:
/// the first workload whose pods, added in order, cross the hard limit.
/// What it requests and what the others use add up to what the namespace
/// needs.
fn exceeded(
    quota: &str,
    ns: &str,
    u: &Usage,
    mode: Mode,
    at: &dyn Fn(&str, &str) -> Option<Location>,
    platform_file: Option<&str>,
) -> Diagnostic {
    let key = &u.resource;
    let total = u.used.clone().unwrap_or_else(Quantity::zero);
    let mut running = Quantity::zero();
    let mut crossing = u.parts.len().saturating_sub(1);
    for (i, (_, q)) in u.parts.iter().enumerate() {
        running = running.plus(q);
        if running > u.hard {
            crossing = i;
            break;
        }
    }
    let (name, requested) = u.parts.get(crossing).cloned().unwrap_or_else(|| (String::new(), Quantity::zero()));
    let used =
        u.parts.iter().enumerate().filter(|(i, _)| *i != crossing).fold(Quantity::zero(), |a, (_, (_, q))| a.plus(q));
    let (when, where_) = match mode {
        Mode::Steady => ("At steady state (replicas)", "at steady state"),
        Mode::Peak => {
            ("At the autoscalers' maximum (3 x replicas, preemptible tiers left out)", "at the autoscalers' maximum")
        }
    };
    let mut d = Diagnostic::error(format!(
        "exceeded quota: {quota}, requested: {key}={requested}, used: {key}={used}, limited: {key}={} (namespace {ns}, {where_})",
        u.hard
    ));
    if let Some(loc) = at(ns, &name) {
        d = d.at(loc);
    }
    for (i, (other, q)) in u.parts.iter().enumerate() {
        if i == crossing {
            continue;
        }
        if let Some(loc) = at(ns, other) {
            d = d.related(loc, format!("{other} uses {key}={q}"));
        }
    }
    let file = platform_file.unwrap_or("the platform file");
    d.help(format!(
        "{when}, namespace {ns} needs {key}={total}; raise tenant \"{quota}\"'s quota in {file}, or lower replicas or gpusPerReplica"
    ))
}
