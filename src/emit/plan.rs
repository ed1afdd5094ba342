//! The Operator's reconcile, run offline: what it would do to a cluster,
//! given a snapshot of it (`kubectl get ... -o yaml` or `-o json`), and the
//! status it would report for each InferenceService.
//!
//! The desired objects are those [`crate::Compiler::compile`] renders for the
//! services (the CRD and other objects without a service are installed by
//! `render`, not reconciled). A desired object is compared with its live
//! counterpart (same API group, kind, namespace and name) only on the
//! fields isvc owns:
//!
//! - every field the desired object sets must have the same value live;
//!   fields it leaves out (server defaults, `status`, `managedFields`,
//!   `resourceVersion`, annotations other tools add) never cause an update;
//! - of `metadata`, only the labels and annotations isvc sets count;
//! - quantities compare by value (`1` = `"1"` = `1000m`), and ports by
//!   number or name whether written as integer or string;
//! - list items with a name (containers, ports, volumes) are matched by it,
//!   so extra items others add are left alone;
//! - `spec.replicas` of an autoscaled Deployment belongs to the autoscaler
//!   once the Deployment exists (the rendered count is what it is created
//!   with): it causes an update only when it is below the autoscaler's (new)
//!   minimum, and is then raised to that minimum. Above the maximum the
//!   autoscaler scales down at its own pace.
//!
//! Objects without the `app.kubernetes.io/managed-by: isvc` label are
//! never updated or deleted (a desired object that exists without it is a
//! conflict). A managed object is deleted when its service (label
//! `app.kubernetes.io/name`) is among the inputs but no longer wants it; the
//! objects of services that are not among the inputs are left alone.

use crate::base::value::At;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;
use serde::Serialize;
use serde_json::{Value, json};

use crate::base::diagnostics::{Diagnostic, Diagnostics, Location, Source};
use crate::base::quantity::Quantity;
use crate::base::yaml::{self, Limits, PathSegment};
use crate::k8s::index;
use crate::model::labels::MANAGED_BY;
use crate::model::objects::{Object, ObjectId};
use crate::model::v1alpha2::{InferenceService, Phase};

/// Largest snapshot read, in bytes.
pub const MAX_SNAPSHOT_BYTES: u64 = 512 << 20;

/// Label naming the InferenceService an object belongs to.
const NAME_LABEL: &str = "app.kubernetes.io/name";

/// Reads a snapshot file (`-` for standard input).
pub fn read_snapshot(path: &Path) -> Result<Vec<Value>, Diagnostics> {
    read_snapshot_in(path, &yaml::RunBudget::new())
}

/// [`read_snapshot`], with alias expansions counted against `run`, the
/// budget of every input of the run.
pub fn read_snapshot_in(path: &Path, run: &yaml::RunBudget) -> Result<Vec<Value>, Diagnostics> {
    let source = if path == Path::new("-") {
        crate::load::read_stdin("the snapshot", MAX_SNAPSHOT_BYTES)?
    } else {
        crate::load::read_source_limited(path, MAX_SNAPSHOT_BYTES)?
    };
    crate::load::take_bytes(&source, run)?;
    parse_snapshot_in(&source, run)
}

/// The objects of a snapshot: a `List` (what `kubectl get a,b -o yaml` or
/// `-o json` prints), single objects, or a stream of either.
pub fn parse_snapshot(source: &Arc<Source>) -> Result<Vec<Value>, Diagnostics> {
    parse_snapshot_in(source, &yaml::RunBudget::new())
}

/// [`parse_snapshot`], with alias expansions counted against `run`, the
/// budget of every input of the run.
pub fn parse_snapshot_in(source: &Arc<Source>, run: &yaml::RunBudget) -> Result<Vec<Value>, Diagnostics> {
    // `kubectl get -o json` output is read as JSON first: YAML readers
    // refuse the surrogate-pair escapes (`\ud83d\ude00`) JSON uses for
    // characters beyond the Basic Multilingual Plane.
    let trimmed = source.text.trim_start_matches('\u{feff}').trim_start();
    if let Some(Ok(value)) = trimmed.starts_with('{').then(|| serde_json::from_str::<Value>(trimmed)) {
        return snapshot_objects(source, [(value, None)]);
    }
    let limits = Limits {
        max_depth: 128,
        max_nodes: 50_000_000,
        max_scalar_bytes: 16 << 20,
        printable_only: false,
        ..Limits::default()
    };
    // Read a piece at a time on every core; a snapshot the pieces cannot
    // stand for, or one with a problem, is read whole again, for its
    // diagnostics' positions.
    if let Some(parsed) = yaml::parse_values_in(source, limits, run) {
        let alias_nodes = parsed.alias_nodes;
        match snapshot_objects(source, parsed.values.into_iter().map(|v| (v, None))) {
            Ok(objects) => return Ok(objects),
            Err(_) => run.give_back(0, alias_nodes),
        }
    }
    let docs = yaml::parse_documents_in(source, limits, run)?;
    snapshot_objects(source, docs.into_iter().flatten().map(|n| (n.to_json(), Some(n))))
}

/// The objects of the documents of a snapshot (with their nodes, for
/// positions, when read as YAML). A List's items are moved out of it, not
/// copied, and each document's node is dropped once its objects are taken:
/// a snapshot of 10,000 services is 29,000 objects in one List.
fn snapshot_objects(
    source: &Arc<Source>,
    docs: impl IntoIterator<Item = (Value, Option<yaml::Node>)>,
) -> Result<Vec<Value>, Diagnostics> {
    let mut objects = Vec::new();
    let mut diags = Diagnostics::new();
    for (mut value, node) in docs {
        let at = |path: &[PathSegment]| match &node {
            Some(n) => Location::span(source, n.at_path(path).span),
            None => Location::file(source),
        };
        let is_list = value.get("kind").and_then(Value::as_str).is_some_and(|k| k.ends_with("List"))
            && value.get("items").is_some();
        let items: Vec<Value> = if is_list {
            let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) else {
                diags.push(
                    Diagnostic::error(format!(
                        "a List's \"items\" must be a list of objects, found {}",
                        yaml::describe(&value["items"])
                    ))
                    .at(at(&[PathSegment::Key("items".into())]))
                    .help("take the snapshot with `kubectl get <kinds> -A -o yaml` (or -o json)"),
                );
                continue;
            };
            std::mem::take(items)
        } else {
            vec![value]
        };
        for (i, item) in items.into_iter().enumerate() {
            if ObjectId::of(&item).is_some() {
                objects.push(item);
            } else {
                // The entry's path, for its place: made for an error only.
                let path =
                    if is_list { vec![PathSegment::Key("items".into()), PathSegment::Index(i)] } else { Vec::new() };
                diags.push(
                    Diagnostic::error("snapshot entry has no apiVersion, kind or metadata.name")
                        .at(at(&path))
                        .help("take the snapshot with `kubectl get <kinds> -A -o yaml` (or -o json)"),
                );
            }
        }
    }
    if diags.is_empty() { Ok(objects) } else { Err(diags) }
}

/// What the reconcile does to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    Create,
    Update,
    Delete,
}

/// One owned field whose live value differs from the desired one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FieldChange {
    pub path: String,
    /// `None`: not set live.
    pub live: Option<Value>,
    /// `None`: isvc no longer sets it.
    pub desired: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One action of the plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    pub action: Verb,
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    /// The InferenceService the object belongs to.
    pub service: String,
    /// For updates, the owned fields that differ.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldChange>,
}

impl Action {
    pub fn id(&self) -> ObjectId {
        ObjectId::new(&self.api_version, &self.kind, self.namespace.as_deref(), &self.name)
    }
}

/// A desired object the reconcile may not touch: it exists without isvc's
/// managed-by label.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub service: String,
    pub reason: String,
}

/// The reconcile's result.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Plan {
    pub actions: Vec<Action>,
    pub conflicts: Vec<Conflict>,
    /// Desired objects that are live and up to date.
    pub unchanged: usize,
}

impl Plan {
    /// Nothing to do and nothing in the way.
    pub fn is_converged(&self) -> bool {
        self.actions.is_empty() && self.conflicts.is_empty()
    }

    fn count(&self, verb: Verb) -> usize {
        self.actions.iter().filter(|a| a.action == verb).count()
    }

    /// How many actions and conflicts concern each service, by (namespace,
    /// service): counted once, where a search per service would read every
    /// action again (29,000 creates into an empty cluster at 10,000
    /// services).
    pub fn pending(&self) -> HashMap<(&str, &str), usize> {
        let mut pending = HashMap::new();
        let concerned = self.actions.iter().map(|a| (&a.namespace, &a.service));
        for (ns, service) in concerned.chain(self.conflicts.iter().map(|c| (&c.namespace, &c.service))) {
            if let Some(ns) = ns {
                *pending.entry((ns.as_str(), service.as_str())).or_default() += 1;
            }
        }
        pending
    }

    /// "1 to create, 2 to update, 0 to delete, 3 unchanged".
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} to create, {} to update, {} to delete, {} unchanged",
            self.count(Verb::Create),
            self.count(Verb::Update),
            self.count(Verb::Delete),
            self.unchanged
        );
        if !self.conflicts.is_empty() {
            s.push_str(&format!(", {} in conflict", self.conflicts.len()));
        }
        s
    }
}

/// Identity of an object across API versions of its group.
type Key = (String, String, Option<String>, String);

fn key(id: &ObjectId) -> Key {
    (id.group().to_string(), id.kind.clone(), id.namespace.clone(), id.name.clone())
}

fn label<'v>(v: &'v Value, name: &str) -> Option<&'v str> {
    v.at("/metadata/labels").and_then(|l| l.get(name)).and_then(Value::as_str)
}

fn is_managed(v: &Value) -> bool {
    label(v, MANAGED_BY.0) == Some(MANAGED_BY.1)
}

/// Whether another controller (not an InferenceService) owns the object.
fn controlled_by_other(v: &Value) -> bool {
    v.at("/metadata/ownerReferences").and_then(Value::as_array).into_iter().flatten().any(|r| {
        r.get("controller").and_then(Value::as_bool) == Some(true)
            && r.get("kind").and_then(Value::as_str) != Some(crate::model::v1alpha1::KIND)
    })
}

/// The actions that bring `live` to the `desired` objects of a compile.
pub fn plan(desired: &[Object], live: &[Value]) -> Plan {
    let live_by_key: HashMap<Key, &Value> =
        live.iter().filter_map(|v| ObjectId::of(v).map(|id| (key(&id), v))).collect();
    let owned: Vec<&Object> = desired.iter().filter(|o| o.owner.is_some()).collect();
    let services: BTreeSet<(Option<&str>, &str)> =
        owned.iter().map(|o| (o.id.namespace.as_deref(), o.owner.as_deref().unwrap_or_default())).collect();
    let wanted: BTreeSet<Key> = owned.iter().map(|o| key(&o.id)).collect();
    let autoscalers = autoscalers(owned.iter().copied());
    let mut plan = Plan::default();
    let action = |verb: Verb, id: &ObjectId, service: &str, fields: Vec<FieldChange>| Action {
        action: verb,
        api_version: id.api_version.clone(),
        kind: id.kind.clone(),
        namespace: id.namespace.clone(),
        name: id.name.clone(),
        service: service.to_string(),
        fields,
    };
    // Each desired object is compared with its live one on its own, on
    // every core (29,000 objects at 10,000 services), then taken in order.
    let outcomes: Vec<Outcome> = owned
        .par_iter()
        .map(|o| {
            let Some(l) = live_by_key.get(&key(&o.id)) else { return Outcome::Create };
            if !is_managed(l) {
                return Outcome::Conflict;
            }
            let mut fields = Vec::new();
            match autoscaler_of(o, &autoscalers) {
                Some(autoscaler) => {
                    // The rendered count is the starting count; afterwards the
                    // autoscaler owns it.
                    let mut desired = o.value.clone();
                    if let Some(spec) = desired.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.remove("replicas");
                    }
                    compare(&desired, l, &mut Vec::new(), &mut fields);
                    fields.extend(replicas_below_minimum(autoscaler, l));
                }
                None => compare(&o.value, l, &mut Vec::new(), &mut fields),
            }
            Outcome::Compared(fields)
        })
        .collect();
    for (o, outcome) in owned.iter().zip(outcomes) {
        let service = o.owner.as_deref().unwrap_or_default();
        match outcome {
            Outcome::Create => plan.actions.push(action(Verb::Create, &o.id, service, Vec::new())),
            Outcome::Conflict => plan.conflicts.push(Conflict {
                api_version: o.id.api_version.clone(),
                kind: o.id.kind.clone(),
                namespace: o.id.namespace.clone(),
                name: o.id.name.clone(),
                service: service.to_string(),
                reason: format!(
                    "exists without the label {}={}, so isvc does not own it and leaves it alone",
                    MANAGED_BY.0, MANAGED_BY.1
                ),
            }),
            Outcome::Compared(fields) if fields.is_empty() => plan.unchanged += 1,
            Outcome::Compared(fields) => plan.actions.push(action(Verb::Update, &o.id, service, fields)),
        }
    }
    for l in live {
        let Some(id) = ObjectId::of(l) else { continue };
        let Some(service) = label(l, NAME_LABEL) else { continue };
        if !is_managed(l)
            || crate::model::kinds::of(&id.api_version, &id.kind)
                .is_none_or(|k| k.owner != crate::model::kinds::Owner::Service)
            || controlled_by_other(l)
            || !services.contains(&(id.namespace.as_deref(), service))
            || wanted.contains(&key(&id))
        {
            continue;
        }
        plan.actions.push(action(Verb::Delete, &id, service, Vec::new()));
    }
    plan.actions.sort_by(|a, b| {
        let k = |x: &Action| {
            (
                x.action == Verb::Delete,
                crate::model::kinds::rank(&x.kind),
                x.namespace.clone(),
                x.name.clone(),
                x.kind.clone(),
            )
        };
        k(a).cmp(&k(b))
    });
    plan
}

/// What the reconcile finds of one desired object.
enum Outcome {
    /// Not live.
    Create,
    /// Live without isvc's managed-by label.
    Conflict,
    /// Live and isvc's: the owned fields that differ.
    Compared(Vec<FieldChange>),
}

/// The autoscaler among `desired` that scales the workload `o` (a
/// Deployment, or a LeaderWorkerSet through its scale subresource): a
/// HorizontalPodAutoscaler, or a KEDA ScaledObject (whose own
/// HorizontalPodAutoscaler, `keda-hpa-<name>`, KEDA creates in the cluster:
/// kedacore/keda `controllers/keda/hpa.go`).
fn autoscaler_of<'a>(o: &Object, autoscalers: &Autoscalers<'a>) -> Option<&'a Object> {
    autoscalers.get(&(o.id.namespace.as_deref(), o.id.kind.as_str(), o.id.name.as_str())).copied()
}

/// The autoscalers among some objects by the (namespace, kind, name) of the
/// workload each scales; the first of several. Looked up per workload, where
/// a search of the objects per workload made `plan` at 10,000 services
/// quadratic (20 s).
type Autoscalers<'a> = HashMap<(Option<&'a str>, &'a str, &'a str), &'a Object>;

fn autoscalers<'a>(objects: impl IntoIterator<Item = &'a Object>) -> Autoscalers<'a> {
    let mut by_target = HashMap::new();
    for a in objects {
        if let Some((kind, name)) = index::scale_target(a) {
            by_target.entry((a.id.namespace.as_deref(), kind, name)).or_insert(a);
        }
    }
    by_target
}

/// An autoscaled workload whose live count is below its autoscaler's
/// minimum is raised to it; any other live count is the autoscaler's
/// business. (An HPA leaves a target at zero alone, pkg/controller/
/// podautoscaler; KEDA's executor raises a count below `minReplicaCount`
/// itself, kedacore/keda `pkg/scaling/executor`, `RequestScale`, and a
/// minimum of 0 lets it scale to zero.)
fn replicas_below_minimum(autoscaler: &Object, live: &Value) -> Option<FieldChange> {
    let (min, _) = index::autoscaler_bounds(autoscaler, None);
    // Objects read from a cluster always carry the count the API server
    // defaulted or the HPA chose; without one there is nothing to raise.
    let current = live.at("/spec/replicas").and_then(Value::as_i64)?;
    (current < min).then(|| FieldChange {
        path: "spec.replicas".to_string(),
        live: Some(json!(current)),
        desired: Some(json!(min)),
        note: Some(format!("raised to the minimum of {}", autoscaler.id)),
    })
}

/// Keys whose values (and whose children's values) are quantities.
const QUANTITY_KEYS: [&str; 11] = [
    "requests",
    "limits",
    "hard",
    "overhead",
    "sizeLimit",
    "averageValue",
    "default",
    "defaultRequest",
    "max",
    "min",
    "maxLimitRequestRatio",
];

/// Keys whose values may be written as integer or string.
const INT_OR_STRING_KEYS: [&str; 6] = ["port", "targetPort", "maxSurge", "maxUnavailable", "minAvailable", "value"];

/// Adds to `out` every field `desired` sets that `live` does not have with
/// the same value.
fn compare(desired: &Value, live: &Value, path: &mut Vec<PathSegment>, out: &mut Vec<FieldChange>) {
    match (desired, live) {
        (Value::Object(d), Value::Object(l)) => {
            for (k, dv) in d {
                if path.is_empty() && !matches!(k.as_str(), "metadata" | "spec" | "data" | "stringData" | "rules") {
                    continue; // apiVersion, kind (the identity), status
                }
                if path.len() == 1
                    && path[0] == PathSegment::Key("metadata".into())
                    && !matches!(k.as_str(), "labels" | "annotations")
                {
                    continue; // name and namespace are the identity; the rest is the server's
                }
                path.push(PathSegment::Key(k.clone()));
                match l.get(k) {
                    Some(lv) => compare(dv, lv, path, out),
                    None => out.push(change(path, None, dv)),
                }
                path.pop();
            }
        }
        (Value::Array(d), Value::Array(l)) => match merge_key(d) {
            Some(k) => {
                for (i, item) in d.iter().enumerate() {
                    let id = &item[k];
                    path.push(PathSegment::Index(i));
                    match l.iter().find(|x| same_scalar(&x[k], id)) {
                        Some(lv) => compare(item, lv, path, out),
                        None => out.push(change(path, None, item)),
                    }
                    path.pop();
                }
            }
            None if d.len() == l.len() => {
                for (i, (dv, lv)) in d.iter().zip(l).enumerate() {
                    path.push(PathSegment::Index(i));
                    compare(dv, lv, path, out);
                    path.pop();
                }
            }
            None => out.push(change(path, Some(live), desired)),
        },
        (d, l) if equal_scalars(d, l, path) => {}
        (d, l) => out.push(change(path, Some(l), d)),
    }
}

fn change(path: &[PathSegment], live: Option<&Value>, desired: &Value) -> FieldChange {
    FieldChange { path: yaml::path_string(path), live: live.cloned(), desired: Some(desired.clone()), note: None }
}

/// The key that identifies items of a list of objects, if they have one.
fn merge_key(items: &[Value]) -> Option<&'static str> {
    ["name", "containerPort", "port", "mountPath", "type"]
        .into_iter()
        .find(|k| !items.is_empty() && items.iter().all(|i| i.get(k).is_some_and(|v| !v.is_object() && !v.is_array())))
}

fn same_scalar(a: &Value, b: &Value) -> bool {
    a == b || (text(a).is_some() && text(a) == text(b))
}

/// A scalar's text: strings as they are, numbers as written.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn equal_scalars(d: &Value, l: &Value, path: &[PathSegment]) -> bool {
    if d == l {
        return true;
    }
    let under = |keys: &[&str]| path.iter().any(|s| matches!(s, PathSegment::Key(k) if keys.contains(&k.as_str())));
    let last_is = |keys: &[&str]| matches!(path.last(), Some(PathSegment::Key(k)) if keys.contains(&k.as_str()));
    if under(&QUANTITY_KEYS) {
        let q = |v: &Value| text(v).and_then(|t| Quantity::parse(&t).ok());
        if let (Some(a), Some(b)) = (q(d), q(l)) {
            return a.nanos() == b.nanos();
        }
    }
    last_is(&INT_OR_STRING_KEYS) && text(d).is_some() && text(d) == text(l)
}

/// What a controller would report for one InferenceService.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceStatus {
    pub namespace: String,
    pub name: String,
    pub model: String,
    /// `spec.replicas` of the InferenceService.
    pub replicas: i32,
    /// Pods the Deployment (groups the LeaderWorkerSet) has now been asked
    /// for: `spec.replicas`, or for an autoscaled service the live count, at
    /// least the autoscaler's minimum.
    pub wanted: i64,
    /// The workload's ready pods (a LeaderWorkerSet's ready groups).
    pub ready_replicas: i64,
    pub phase: Phase,
    /// Why the service is not Ready, or how it scales when it is.
    pub message: String,
    /// Adapters the serving pods have loaded: the configured ones, once the
    /// pods that serve them are ready (vLLM loads its adapter list at start).
    pub loaded_adapters: Vec<String>,
    /// Where clients reach the service.
    pub endpoint: Option<String>,
    /// When the workload's `Available` condition last changed, from the
    /// snapshot (isvc has no clock of its own).
    pub since: Option<String>,
}

/// The status of every service: Ready when its workload's (Deployment's or
/// LeaderWorkerSet's) ready and updated replicas reach the wanted count,
/// its controller has seen the latest spec, and the plan has nothing to do
/// for the service; Progressing otherwise.
pub fn status(services: &[&InferenceService], desired: &[Object], live: &[Value], plan: &Plan) -> Vec<ServiceStatus> {
    let live_by_key: HashMap<Key, &Value> =
        live.iter().filter_map(|v| ObjectId::of(v).map(|id| (key(&id), v))).collect();
    // Every lookup below is indexed once: a search of the objects per
    // service made `status` at 10,000 services quadratic (28 s).
    let owned = Owned::new(desired);
    let autoscalers = autoscalers(desired);
    let pending_by_service = plan.pending();
    let mut out = Vec::new();
    for s in services {
        let (ns, name) = (s.namespace_or_default(), s.name());
        // The service's own objects, named after it (its endpoint picker's
        // are named after the picker).
        let mine = |kind: &str| owned.named.get(&(ns, name, kind)).copied();
        // The workload: a Deployment, or for a multi-node service a
        // LeaderWorkerSet, whose status counts groups of pods
        // (kubernetes-sigs/lws `api/leaderworkerset/v1`, LeaderWorkerSetStatus:
        // readyReplicas, updatedReplicas, observedGeneration).
        let workload = mine("Deployment").or_else(|| mine("LeaderWorkerSet"));
        let (controller, unit) = match workload {
            Some(w) if w.id.kind == "LeaderWorkerSet" => ("LeaderWorkerSet", "groups"),
            _ => ("Deployment", "pods"),
        };
        let live_workload = workload.and_then(|d| live_by_key.get(&key(&d.id)).copied());
        let int = |v: Option<&Value>, p: &str| v.and_then(|v| v.at(p)).and_then(Value::as_i64);
        let ready = int(live_workload, "/status/readyReplicas").unwrap_or(0);
        let updated = int(live_workload, "/status/updatedReplicas").unwrap_or(0);
        // The autoscaler's bounds, whichever kind it is.
        let bounds = workload.and_then(|d| autoscaler_of(d, &autoscalers)).map(|a| index::autoscaler_bounds(a, None));
        let lowest = bounds.map(|(min, _)| min);
        let desired_replicas = workload.and_then(|d| int(Some(&d.value), "/spec/replicas"));
        let wanted = match (desired_replicas, lowest) {
            (n, Some(min)) => int(live_workload, "/spec/replicas").or(n).unwrap_or(1).max(min),
            (Some(n), None) => n,
            (None, None) => int(live_workload, "/spec/replicas").unwrap_or(1),
        };
        let seen = int(live_workload, "/status/observedGeneration") >= int(live_workload, "/metadata/generation");
        let pending = pending_by_service.get(&(ns, name)).copied().unwrap_or(0);
        let message = if pending > 0 {
            format!("{pending} action{} pending (see isvc plan)", if pending == 1 { "" } else { "s" })
        } else if !seen {
            format!("the {controller} controller has not yet seen the latest spec")
        } else if updated < wanted {
            format!("rolling out: {updated} of {wanted} {unit} updated")
        } else if ready < wanted {
            format!("{ready} of {wanted} {unit} ready")
        } else {
            match bounds {
                Some((_, max)) if wanted == 0 => {
                    format!("scaled to zero by its autoscaler, between 0 and {max} {unit}")
                }
                Some((min, max)) => format!("autoscaled between {min} and {max} {unit}"),
                None if wanted == 0 => "scaled to zero".to_string(),
                None => String::new(),
            }
        };
        let phase = if pending == 0 && seen && updated >= wanted && ready >= wanted {
            Phase::Ready
        } else {
            Phase::Progressing
        };
        let (_, steady) = crate::derive::autoscaling::bounds(&s.spec);
        let loaded_adapters = if ready > 0 && updated >= wanted {
            s.spec.adapters.iter().map(|a| a.name.clone()).collect()
        } else {
            Vec::new()
        };
        let endpoint = endpoint_of(&owned, ns, name);
        let since = live_workload
            .and_then(|d| d.at("/status/conditions"))
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Available")))
            .and_then(|c| c.get("lastTransitionTime"))
            .and_then(Value::as_str)
            .map(str::to_string);
        out.push(ServiceStatus {
            namespace: ns.to_string(),
            name: name.to_string(),
            model: s.spec.base_model.clone(),
            replicas: steady,
            wanted,
            ready_replicas: ready,
            phase,
            message,
            loaded_adapters,
            endpoint,
            since,
        });
    }
    out
}

/// The desired objects `status` looks up for a service, by (namespace,
/// service, kind); the first of several, in the objects' order.
struct Owned<'a> {
    /// Any object of the service.
    any: HashMap<(&'a str, &'a str, &'a str), &'a Object>,
    /// An object of the service named after it.
    named: HashMap<(&'a str, &'a str, &'a str), &'a Object>,
    /// The HTTPRoutes by (namespace, a backend's name): a route shared by
    /// weighted services is rendered by one of them and names every one
    /// among its backends.
    routes: HashMap<(&'a str, &'a str), &'a Object>,
}

impl<'a> Owned<'a> {
    fn new(desired: &'a [Object]) -> Owned<'a> {
        let mut owned = Owned { any: HashMap::new(), named: HashMap::new(), routes: HashMap::new() };
        for o in desired {
            let Some(ns) = o.id.namespace.as_deref() else { continue };
            if let Some(owner) = o.owner.as_deref() {
                owned.any.entry((ns, owner, o.id.kind.as_str())).or_insert(o);
                if o.id.name == owner {
                    owned.named.entry((ns, owner, o.id.kind.as_str())).or_insert(o);
                }
            }
            if o.id.kind == "HTTPRoute" {
                let backends = o.value.at("/spec/rules/0/backendRefs").and_then(Value::as_array).into_iter().flatten();
                for backend in backends.filter_map(|r| r.get("name").and_then(Value::as_str)) {
                    owned.routes.entry((ns, backend)).or_insert(o);
                }
            }
        }
        owned
    }
}

/// The address clients use: the HTTPRoute's hostname and path when the
/// service registers with a gateway, else the Service's cluster address.
fn endpoint_of(owned: &Owned<'_>, ns: &str, name: &str) -> Option<String> {
    let mine = |kind: &str| owned.any.get(&(ns, name, kind)).copied();
    let shared = || owned.routes.get(&(ns, name)).copied();
    if let Some(route) = mine("HTTPRoute").or_else(shared) {
        let host = route.value.at("/spec/hostnames/0").and_then(Value::as_str);
        let path = route.value.at("/spec/rules/0/matches/0/path/value").and_then(Value::as_str).unwrap_or("/");
        if let Some(host) = host {
            return Some(format!("http://{host}{path}"));
        }
    }
    let svc = mine("Service")?;
    let port = svc.value.at("/spec/ports/0/port").and_then(Value::as_i64)?;
    Some(format!("http://{name}.{ns}.svc:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Service files, the platform file and a snapshot share one byte budget.
    #[test]
    fn the_platform_file_and_the_snapshot_share_the_run_byte_budget() {
        let dir = tempfile::tempdir().unwrap();
        let service = dir.path().join("qwen3.yaml");
        std::fs::write(
            &service,
            "apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata: {name: qwen3}\n\
             spec: {model: Qwen/Qwen3-0.6B, replicas: 3, gpusPerReplica: 1}\n",
        )
        .unwrap();
        let platform = dir.path().join("platform.yaml");
        std::fs::write(&platform, "apiVersion: ai.example.com/v1alpha1\nkind: Platform\n").unwrap();
        let live = dir.path().join("live.yaml");
        std::fs::write(&live, "apiVersion: v1\nkind: List\nitems: []\n").unwrap();
        let help = "  = help: isvc reads at most 200 bytes per run (service files, platform file and snapshot together), \
                    and at most 8388608 bytes per input file; render smaller sets of services, each into its own --out\n";
        // 146 + 51 bytes fit in 200; the snapshot's 36 more do not.
        let run = yaml::RunBudget::with_limits(yaml::MAX_RUN_ALIAS_NODES, 200);
        assert_eq!(crate::load::load_services_in(std::slice::from_ref(&service), &run).unwrap().len(), 1);
        crate::load::load_platform_in(Some(&platform), &run).unwrap();
        let err = read_snapshot_in(&live, &run).unwrap_err().render(false);
        let message = |p: &Path| {
            format!(
                "error: {} takes the inputs of this run over 200 bytes in all; refusing to read more\n{help}\n\
                 error: aborting due to 1 error; nothing was written\n",
                p.display()
            )
        };
        assert_eq!(err, message(&live));
        // The platform file read after the snapshot is the one refused.
        let run = yaml::RunBudget::with_limits(yaml::MAX_RUN_ALIAS_NODES, 200);
        crate::load::load_services_in(std::slice::from_ref(&service), &run).unwrap();
        read_snapshot_in(&live, &run).unwrap();
        let err = crate::load::load_platform_in(Some(&platform), &run).unwrap_err().render(false);
        assert_eq!(err, message(&platform));
    }

    /// Service files, the platform file and a snapshot share one alias
    /// budget: each file here is far under its own.
    #[test]
    fn the_platform_file_and_the_snapshot_share_the_run_alias_budget() {
        // One document whose aliases copy 12 330 nodes.
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
                    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n";
        // 81 documents over 11 service files: 998 730 nodes of 1 000 000.
        let spend = |run: &yaml::RunBudget| {
            for i in 0..11 {
                let docs = if i < 10 { 8 } else { 1 };
                let src = Source::new(format!("services/s{i}.yaml"), vec![bomb; docs].join("---\n"));
                let (_, fatal) = yaml::parse_stream_in(&src, yaml::Limits::default(), run);
                assert!(fatal.is_none(), "{fatal:?}");
            }
        };
        let message = "error: aliases in the input files expand to more than 1000000 nodes in all; refusing to expand them further\n";
        let run = yaml::RunBudget::new();
        spend(&run);
        let platform =
            Source::new("platform.yaml", format!("apiVersion: ai.example.com/v1alpha1\nkind: Platform\n{bomb}"));
        let err = crate::load::parse_platform_in(&platform, &run).unwrap_err();
        let text = Diagnostics(err).render(false);
        assert!(text.starts_with(&format!("{message}  --> platform.yaml:6:")), "{text}");
        assert!(text.contains("= help: an alias (*name) copies its anchor's whole subtree"), "{text}");
        // Alone, the same platform file is within its own budget (and is
        // refused for its unknown fields instead).
        let alone = Diagnostics(crate::load::parse_platform(&platform).unwrap_err()).render(false);
        assert!(alone.starts_with("error: unknown field \"a\""), "{alone}");

        let run = yaml::RunBudget::new();
        spend(&run);
        let live = Source::new("live.yaml", bomb);
        let text = parse_snapshot_in(&live, &run).unwrap_err().render(false);
        assert!(text.starts_with(&format!("{message}  --> live.yaml:4:")), "{text}");
        assert!(parse_snapshot(&live).is_err_and(|d| !d.render(false).contains("aliases")));
    }

    fn changes(desired: Value, live: Value) -> Vec<String> {
        let mut out = Vec::new();
        compare(&desired, &live, &mut Vec::new(), &mut out);
        out.into_iter().map(|c| c.path).collect()
    }

    #[test]
    fn only_owned_fields_count() {
        let desired = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "labels": {"x": "1"}},
            "spec": {"ports": [{"name": "http", "port": 8000, "targetPort": "http"}]}});
        let live = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "a", "uid": "u", "resourceVersion": "7", "labels": {"x": "1", "extra": "y"}},
            "spec": {"clusterIP": "10.0.0.1", "ports": [{"name": "http", "port": 8000, "protocol": "TCP", "targetPort": "http"}]},
            "status": {"loadBalancer": {}}});
        assert!(changes(desired.clone(), live.clone()).is_empty());
        let mut moved = live;
        moved["spec"]["ports"][0]["targetPort"] = json!(8080);
        assert_eq!(changes(desired, moved), ["spec.ports[0].targetPort"]);
    }

    #[test]
    fn quantities_and_ports_compare_by_value() {
        let desired = json!({"spec": {"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}, "port": 80}});
        let live = json!({"spec": {"resources": {"limits": {"cpu": "1000m", "memory": "1073741824"}}, "port": "80"}});
        assert!(changes(desired.clone(), live).is_empty());
        let live = json!({"spec": {"resources": {"limits": {"cpu": "2", "memory": "1Gi"}}, "port": 80}});
        assert_eq!(changes(desired, live), ["spec.resources.limits.cpu"]);
        // Outside quantities, text is text.
        assert_eq!(
            changes(json!({"metadata": {"labels": {"v": "1"}}}), json!({"metadata": {"labels": {"v": "1.0"}}})),
            ["metadata.labels.v"]
        );
    }

    #[test]
    fn lists_of_named_items_match_by_name_and_others_by_position() {
        let desired = json!({"spec": {"containers": [{"name": "a", "args": ["x", "y"]}]}});
        let live = json!({"spec": {"containers": [{"name": "sidecar"}, {"name": "a", "args": ["x", "y"], "terminationMessagePath": "/dev/termination-log"}]}});
        assert!(changes(desired.clone(), live).is_empty());
        let live = json!({"spec": {"containers": [{"name": "a", "args": ["x"]}]}});
        assert_eq!(changes(desired, live), ["spec.containers[0].args"]);
    }
}
