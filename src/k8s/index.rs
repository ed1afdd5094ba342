//! The rendered objects as the cluster would hold them, indexed once per
//! run: objects by kind and namespace, workloads with their replica
//! bounds (their autoscaler's, else their own), pod templates by label.
//! Admission and the rules read it.

use crate::base::value::At;
use std::sync::OnceLock;

use serde_json::Value;

use crate::model::compact::{MapView, View};

use crate::base::quantity::Quantity;
use crate::k8s::usage::Usage;
use crate::model::objects::Object;

// The index's maps: keyed by names of the objects, hashed with foldhash
// (randomly seeded, as std's SipHash is) rather than SipHash; the index is
// built for every group a compile checks. Nothing reads them in their
// order without sorting.
use foldhash::HashMap;

/// Lookups the rules share, built once per run.
pub(crate) struct Context<'a> {
    /// (namespace, label key, label value) to the pod templates carrying it.
    pods_by_label: HashMap<(&'a str, &'a str, &'a str), Vec<View<'a>>>,
    /// Every object by (kind, namespace, name).
    ids: HashMap<(&'a str, &'a str, &'a str), &'a Object>,
    /// Autoscalers by (namespace, target kind, target name).
    autoscalers: HashMap<(&'a str, &'a str, &'a str), &'a Object>,
    /// Workloads (objects with pod templates) by namespace.
    workloads: HashMap<&'a str, Vec<Workload<'a>>>,
    /// (kind, namespace, name) of a workload to its place in `workloads`.
    workload_at: HashMap<(&'a str, &'a str, &'a str), usize>,
    /// What the workloads count against each ResourceQuota, by (namespace,
    /// name), at the low and the high end; worked out once, when needed.
    quota_usage: HashMap<(&'a str, &'a str), [OnceLock<Vec<Usage>>; 2]>,
    /// Objects of each kind by namespace, for namespace-wide rules.
    by_kind: HashMap<(&'a str, &'a str), Vec<&'a Object>>,
    /// The PriorityClass pods without one get (`globalDefault: true`).
    pub default_priority_class: Option<&'a str>,
    /// The reverse lookups, each built the first time a rule asks (most
    /// groups need few of them): a namespace of thousands of services
    /// would otherwise scan every object of a kind for each object that
    /// looks them up, its check growing with the square of its size.
    reverse: Reverse<'a>,
}

/// Lookups from an object to the objects that select or name it. Their
/// maps are keyed by the hash of the names looked up ([`key`]): objects
/// that share a hash come out together, and are told apart by matching
/// them in full (by the caller of a lookup that gives a superset).
#[derive(Default)]
struct Reverse<'a> {
    /// The objects of [`SELECTING`] kinds by (namespace, kind, label key,
    /// label value) of one pair their selector requires (the first that is
    /// a string), as places in `by_kind`; a selector that requires no pair
    /// under the key "".
    selecting: OnceLock<HashMap<u64, Vec<usize>>>,
    /// The workloads of each namespace by (namespace, label key, label
    /// value) of their pod templates, as places in `workloads`, each once.
    workloads_by_label: OnceLock<HashMap<u64, Vec<usize>>>,
    /// A pod template (by address) to its workload: (namespace, place).
    workload_by_template: OnceLock<HashMap<usize, (&'a str, usize)>>,
    /// The HTTPRoutes with a backend of an InferencePool, by (namespace,
    /// pool name), in `by_kind` order, each once.
    routes_to_pool: OnceLock<HashMap<u64, Vec<&'a Object>>>,
}

/// The key of names in the reverse lookups' maps.
fn key(names: &[&str]) -> u64 {
    std::hash::BuildHasher::hash_one(&foldhash::fast::FixedState::default(), names)
}

/// The kinds [`Context::selecting`] looks up by their selectors.
const SELECTING: [&str; 4] = ["Service", "InferencePool", "ServiceMonitor", "PodMonitor"];

/// An object that runs pods, with its replica bounds.
pub(crate) struct Workload<'a> {
    pub object: &'a Object,
    /// Pod templates, each with the pods one replica runs from it.
    pub templates: Vec<(View<'a>, i64)>,
    /// Replicas at the low end (the autoscaler's minimum, else
    /// `spec.replicas`) and the high end (the autoscaler's maximum).
    pub min_replicas: i64,
    pub max_replicas: i64,
    /// Replicas the workload is created with, its steady state:
    /// `spec.replicas` (1 when left out, as the API server defaults it),
    /// raised or lowered into the autoscaler's bounds, as the autoscaler does
    /// without reading a metric.
    pub start_replicas: i64,
}

impl Workload<'_> {
    pub fn pods(&self, replicas: i64) -> i64 {
        self.templates.iter().map(|(_, n)| n * replicas).sum()
    }
}

/// The kind and name of the workload an autoscaler scales: a
/// HorizontalPodAutoscaler's `spec.scaleTargetRef`, or a KEDA ScaledObject's,
/// which targets a Deployment unless it names a kind (keda.sh/v1alpha1
/// ScaleTarget: `kind` defaults to Deployment). `None` for any other object.
pub fn scale_target(o: &Object) -> Option<(&str, &str)> {
    if !matches!(o.id.kind.as_str(), "HorizontalPodAutoscaler" | "ScaledObject") {
        return None;
    }
    let target = o.view().at("/spec/scaleTargetRef")?;
    let field = |k: &str| target.field(k).and_then(View::as_str);
    let kind = field("kind").or((o.id.kind == "ScaledObject").then_some("Deployment"))?;
    Some((kind, field("name")?))
}

/// The lowest and highest count the autoscaler `a` keeps its workload
/// within, each kind's bounds read under its own names with its own
/// defaults; `own` is the workload's own count, if it sets one. The highest
/// is never below the lowest.
pub fn autoscaler_bounds(a: &Object, own: Option<i64>) -> (i64, i64) {
    let spec = a.view().field("spec");
    let bound = |key: &str, default: i64| spec.and_then(|s| s.field(key)).and_then(View::as_i64).unwrap_or(default);
    let (low, high) = if a.id.kind == "ScaledObject" {
        // KEDA's ScaledObject: `minReplicaCount` defaults to 0 and
        // `maxReplicaCount` to 100 (keda.sh, "ScaledObject specification";
        // kedacore/keda `controllers/keda/hpa.go`, `getHPAMaxReplicas`).
        (bound("minReplicaCount", 0), bound("maxReplicaCount", 100))
    } else {
        // autoscaling/v2: `minReplicas` defaults to 1 (the API server's
        // defaulting); `maxReplicas` is required.
        (bound("minReplicas", 1), bound("maxReplicas", own.unwrap_or(1)))
    };
    (low, high.max(low))
}

impl<'a> Context<'a> {
    /// The index of `objects`: a slice, or the objects of one namespace
    /// chained with the cluster-scoped ones every namespace sees. Built on
    /// two cores: the pod templates by label on one, everything else on
    /// the other (a namespace of 10,000 services indexes 29,000 objects,
    /// and the check of a namespace waits for its index).
    pub fn new<I>(objects: I) -> Context<'a>
    where
        I: IntoIterator<Item = &'a Object> + Clone + Send,
    {
        let labelled = objects.clone();
        let (mut cx, pods_by_label) =
            rayon::join(move || Context::by_identity(objects), move || pods_by_label(labelled));
        cx.pods_by_label = pods_by_label;
        cx
    }

    /// Every lookup of the index but the pod templates by label.
    fn by_identity<I>(objects: I) -> Context<'a>
    where
        I: IntoIterator<Item = &'a Object> + Clone,
    {
        let mut cx = Context {
            pods_by_label: HashMap::default(),
            ids: HashMap::default(),
            autoscalers: HashMap::default(),
            workloads: HashMap::default(),
            workload_at: HashMap::default(),
            quota_usage: HashMap::default(),
            by_kind: HashMap::default(),
            default_priority_class: None,
            reverse: Reverse::default(),
        };
        for o in objects.clone() {
            let ns = namespace(o);
            cx.ids.insert((o.id.kind.as_str(), ns, o.id.name.as_str()), o);
            cx.by_kind.entry((ns, o.id.kind.as_str())).or_default().push(o);
            match o.id.kind.as_str() {
                "HorizontalPodAutoscaler" | "ScaledObject" => {
                    if let Some((kind, name)) = scale_target(o) {
                        cx.autoscalers.insert((ns, kind, name), o);
                    }
                }
                "ResourceQuota" => {
                    cx.quota_usage.insert((ns, o.id.name.as_str()), Default::default());
                }
                "PriorityClass" if o.view().field("globalDefault").and_then(View::as_bool) == Some(true) => {
                    cx.default_priority_class = Some(o.id.name.as_str());
                }
                _ => {}
            }
        }
        // A workload's bounds read its autoscaler: indexed above.
        for o in objects {
            if let Some(w) = cx.workload(o) {
                let list = cx.workloads.entry(namespace(o)).or_default();
                cx.workload_at.insert((o.id.kind.as_str(), namespace(o), o.id.name.as_str()), list.len());
                list.push(w);
            }
        }
        cx
    }

    fn workload(&self, o: &'a Object) -> Option<Workload<'a>> {
        let spec = o.view().field("spec")?;
        let templates: Vec<(View<'a>, i64)> = match o.id.kind.as_str() {
            "Deployment" | "StatefulSet" | "ReplicaSet" | "Job" => vec![(spec.field("template")?, 1)],
            "LeaderWorkerSet" => {
                let lwt = spec.field("leaderWorkerTemplate")?;
                let worker = lwt.field("workerTemplate")?;
                let size = lwt.field("size").and_then(View::as_i64).unwrap_or(1);
                let leader = lwt.field("leaderTemplate").unwrap_or(worker);
                vec![(leader, 1), (worker, size - 1)]
            }
            _ => return None,
        };
        // The Deployment controller and the LeaderWorkerSet controller
        // default a missing `spec.replicas` to 1; an autoscaler then keeps
        // the count within its bounds (pkg/controller/podautoscaler: a count
        // below minReplicas is raised, above maxReplicas lowered).
        // A Job runs `parallelism` pods at once (1 when left out:
        // kubernetes/kubernetes `pkg/apis/batch/v1/defaults.go`).
        let count = if o.id.kind == "Job" { "parallelism" } else { "replicas" };
        let own = spec.field(count).and_then(View::as_i64);
        let (min, max) = match self.autoscaler_of(o) {
            Some(a) => autoscaler_bounds(a, own),
            None => (own.unwrap_or(1), own.unwrap_or(1)),
        };
        Some(Workload {
            object: o,
            templates,
            min_replicas: min,
            max_replicas: max,
            start_replicas: own.unwrap_or(1).clamp(min, max),
        })
    }

    /// Pod templates in `ns` whose labels include every pair of `selector`.
    pub fn selected<'s>(&self, ns: &str, selector: impl Into<MapView<'s>>) -> Vec<View<'a>> {
        let selector = selector.into();
        let mut candidates: Option<&Vec<View<'a>>> = None;
        for (k, v) in selector {
            let list = self.pods_by_label.get(&(ns, k, v.as_str().unwrap_or_default()));
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
                let labels = labels(*t, "/metadata/labels");
                selector.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
            })
            .copied()
            .collect()
    }

    pub fn object(&self, kind: &str, ns: &str, name: &str) -> Option<&'a Object> {
        self.ids.get(&(kind, ns, name)).copied()
    }

    /// The autoscaler whose target is `o`.
    pub fn autoscaler_of(&self, o: &Object) -> Option<&'a Object> {
        self.autoscalers.get(&(namespace(o), o.id.kind.as_str(), o.id.name.as_str())).copied()
    }

    pub fn workloads_in(&self, ns: &str) -> &[Workload<'a>] {
        self.workloads.get(ns).map_or(&[], Vec::as_slice)
    }

    /// Every workload of the run, in every namespace.
    pub fn all_workloads(&self) -> impl Iterator<Item = &Workload<'a>> {
        self.workloads.values().flatten()
    }

    /// The workload of `o`'s identity: `o` itself, or, where a namespace is
    /// checked in parts (`compiler::parts`), the small form of it the index
    /// holds, which keeps every field a rule reads of a workload
    /// ([`crate::k8s::skeleton`]).
    pub fn workload_of(&self, o: &Object) -> Option<&Workload<'a>> {
        let i = self.workload_at.get(&(o.id.kind.as_str(), namespace(o), o.id.name.as_str()))?;
        self.workloads_in(namespace(o)).get(*i).filter(|w| w.object.id == o.id)
    }

    /// The cells that keep what the workloads of its namespace count
    /// against `quota`, at the low and the high bound
    /// (`admission::quota_usage` fills them).
    pub(crate) fn quota_cells<'s>(&'s self, quota: &'s Object) -> Option<&'s [OnceLock<Vec<Usage>>; 2]> {
        self.quota_usage.get(&(namespace(quota), quota.id.name.as_str()))
    }

    /// Every object of the namespace.
    pub fn objects_in<'s>(&'s self, ns: &'s str) -> impl Iterator<Item = &'a Object> + 's {
        self.by_kind.iter().filter(move |((n, _), _)| *n == ns).flat_map(|(_, v)| v.iter().copied())
    }

    pub fn objects_of_kind<'s>(&'s self, ns: &'s str, kind: &'s str) -> &'s [&'s Object] {
        self.by_kind.get(&(ns, kind)).map_or(&[], Vec::as_slice)
    }

    /// The objects of `kind` (one of [`SELECTING`]) in `ns` whose selector
    /// may match one of the label sets `labels`: those requiring a pair
    /// one set holds, and those requiring none. A superset, for the caller
    /// to match in full ([`selector_matches`]); in the order of
    /// [`Context::objects_of_kind`], each once.
    pub fn selecting(&self, ns: &str, kind: &str, labels: &[Option<MapView<'_>>]) -> Vec<&'a Object> {
        debug_assert!(SELECTING.contains(&kind), "{kind} is not indexed by its selector");
        let index = self.reverse.selecting.get_or_init(|| {
            let mut index: HashMap<u64, Vec<usize>> = HashMap::default();
            for ((ns, kind), objects) in self.by_kind.iter().filter(|((_, k), _)| SELECTING.contains(k)) {
                for (i, o) in objects.iter().enumerate() {
                    let Some(selector) = o.view().at("/spec/selector") else { continue };
                    // A Service's selector is the pairs themselves; the
                    // others' a LabelSelector.
                    let pairs = if *kind == "Service" {
                        selector.as_object()
                    } else {
                        selector.field("matchLabels").and_then(View::as_object)
                    };
                    let first = pairs.into_iter().flatten().find_map(|(k, v)| Some((k, v.as_str()?)));
                    let (k, v) = first.unwrap_or(("", ""));
                    index.entry(key(&[ns, kind, k, v])).or_default().push(i);
                }
            }
            index
        });
        let objects = self.by_kind.get(&(ns, kind)).map_or(&[][..], Vec::as_slice);
        let mut places: Vec<usize> = index.get(&key(&[ns, kind, "", ""])).cloned().unwrap_or_default();
        for (k, v) in labels.iter().flatten().flat_map(|l| l.iter()) {
            if let Some(v) = v.as_str() {
                places.extend(index.get(&key(&[ns, kind, k, v])).into_iter().flatten());
            }
        }
        places.sort_unstable();
        places.dedup();
        places.into_iter().filter_map(|i| objects.get(i).copied()).collect()
    }

    /// The workloads of `ns` whose pod templates may match `selector` (a
    /// LabelSelector): those with every string pair of its `matchLabels`,
    /// or every workload when it has none. A superset, for the caller to
    /// match in full; in the order of [`Context::workloads_in`].
    pub fn workloads_selectable<'s>(&self, ns: &str, selector: impl Into<View<'s>>) -> Vec<&Workload<'a>> {
        let selector = selector.into();
        let index = self.reverse.workloads_by_label.get_or_init(|| {
            let mut index: HashMap<u64, Vec<usize>> = HashMap::default();
            for (ns, list) in &self.workloads {
                for (i, w) in list.iter().enumerate() {
                    for (template, _) in &w.templates {
                        for (k, v) in labels(*template, "/metadata/labels").into_iter().flatten() {
                            let Some(v) = v.as_str() else { continue };
                            let places = index.entry(key(&[ns, k, v])).or_default();
                            if places.last() != Some(&i) {
                                places.push(i);
                            }
                        }
                    }
                }
            }
            index
        });
        let all = self.workloads_in(ns);
        let pairs = selector.field("matchLabels").and_then(View::as_object).into_iter().flatten();
        let mut smallest: Option<&[usize]> = None;
        for (k, v) in pairs.filter_map(|(k, v)| Some((k, v.as_str()?))) {
            let places = index.get(&key(&[ns, k, v])).map_or(&[][..], Vec::as_slice);
            if smallest.is_none_or(|s| places.len() < s.len()) {
                smallest = Some(places);
            }
        }
        match smallest {
            Some(places) => places.iter().filter_map(|i| all.get(*i)).collect(),
            None => all.iter().collect(),
        }
    }

    /// The first workload of `ns`, in the order of [`Context::workloads_in`],
    /// one of whose pod templates is one of `templates` (templates this
    /// index holds, by address).
    pub fn workload_of_templates(&self, ns: &str, templates: &[View<'_>]) -> Option<&Workload<'a>> {
        let index = self.reverse.workload_by_template.get_or_init(|| {
            let mut index = HashMap::default();
            for (ns, list) in &self.workloads {
                for (i, w) in list.iter().enumerate() {
                    for (template, _) in &w.templates {
                        index.entry(template.address()).or_insert((*ns, i));
                    }
                }
            }
            index
        });
        let at = |t: &View<'_>| index.get(&t.address()).filter(|(n, _)| *n == ns);
        let (_, i) = templates.iter().filter_map(at).min_by_key(|(_, i)| *i)?;
        self.workloads_in(ns).get(*i)
    }

    /// The HTTPRoutes of `ns` with a backend of the InferencePool `pool`, in
    /// the order of [`Context::objects_of_kind`], each once.
    pub fn routes_to_pool(&self, ns: &str, pool: &str) -> Vec<&'a Object> {
        let index = self.reverse.routes_to_pool.get_or_init(|| {
            let mut index: HashMap<u64, Vec<&Object>> = HashMap::default();
            for ((ns, _), routes) in self.by_kind.iter().filter(|((_, k), _)| *k == "HTTPRoute") {
                for route in routes {
                    for name in pool_backends(route) {
                        let list = index.entry(key(&[ns, name])).or_default();
                        if !list.last().is_some_and(|r| std::ptr::eq(*r, *route)) {
                            list.push(route);
                        }
                    }
                }
            }
            index
        });
        // Routes to another pool of the same key are left out here.
        let routes = index.get(&key(&[ns, pool])).into_iter().flatten();
        routes.filter(|r| namespace(r) == ns && pool_backends(r).any(|n| n == pool)).copied().collect()
    }
}

/// (namespace, label key, label value) to the pod templates of `objects`
/// carrying it.
fn pods_by_label<'a>(
    objects: impl IntoIterator<Item = &'a Object>,
) -> HashMap<(&'a str, &'a str, &'a str), Vec<View<'a>>> {
    let mut pods: HashMap<(&str, &str, &str), Vec<View<'a>>> = HashMap::default();
    for o in objects {
        let ns = namespace(o);
        for template in pod_template_views(o) {
            for (k, v) in labels(template, "/metadata/labels").into_iter().flatten() {
                if let Some(v) = v.as_str() {
                    pods.entry((ns, k, v)).or_default().push(template);
                }
            }
        }
    }
    pods
}

/// The names of the InferencePools the rules of the HTTPRoute `route` send
/// requests to.
pub(crate) fn pool_backends(route: &Object) -> impl Iterator<Item = &str> {
    let rules = route.view().at("/spec/rules").into_iter().flat_map(View::items);
    rules
        .flat_map(|r| r.field("backendRefs").into_iter().flat_map(View::items))
        .filter(|b| b.field("kind").and_then(View::as_str) == Some("InferencePool"))
        .filter_map(|b| b.field("name").and_then(View::as_str))
}

/// The namespace of an object; "" for cluster-scoped ones.
pub(crate) fn namespace(o: &Object) -> &str {
    o.id.namespace.as_deref().unwrap_or_default()
}

/// The pod templates of a workload object (the kinds table says where).
pub(crate) fn pod_templates(o: &Object) -> Vec<&Value> {
    crate::model::kinds::pod_templates(&o.id.kind, &o.value)
}

/// [`pod_templates`] of the object whole or of its skeleton.
pub(crate) fn pod_template_views(o: &Object) -> Vec<View<'_>> {
    crate::model::kinds::pod_template_views(&o.id.kind, o.view())
}

/// The map at `pointer` of `v` (an object's labels, say), read whole or
/// in a skeleton's form.
pub(crate) fn labels<'v>(v: impl Into<View<'v>>, pointer: &str) -> Option<MapView<'v>> {
    v.into().at(pointer).and_then(View::as_object)
}

/// The app containers of a pod template.
pub(crate) fn containers(template: &Value) -> impl Iterator<Item = &Value> {
    template.at("/spec/containers").and_then(Value::as_array).into_iter().flatten()
}

/// The init containers of a pod template.
pub(crate) fn init_containers(template: &Value) -> impl Iterator<Item = &Value> {
    template.at("/spec/initContainers").and_then(Value::as_array).into_iter().flatten()
}

/// [`containers`] of a pod template read whole or in a skeleton's form.
pub(crate) fn containers_in<'v>(template: impl Into<View<'v>>) -> impl Iterator<Item = View<'v>> {
    template.into().at("/spec/containers").into_iter().flat_map(View::items)
}

/// [`init_containers`] of a pod template read whole or in a skeleton's
/// form.
pub(crate) fn init_containers_in<'v>(template: impl Into<View<'v>>) -> impl Iterator<Item = View<'v>> {
    template.into().at("/spec/initContainers").into_iter().flat_map(View::items)
}

pub(crate) fn container_name<'v>(c: impl Into<View<'v>>) -> &'v str {
    c.into().field("name").and_then(View::as_str).unwrap_or_default()
}

/// Whether `labels` satisfy a label selector (`matchLabels` and
/// `matchExpressions`); a selector with neither matches everything.
pub(crate) fn selector_matches<'s, 'l, L: Into<MapView<'l>>>(selector: impl Into<View<'s>>, labels: Option<L>) -> bool {
    let (selector, labels) = (selector.into(), labels.map(Into::into));
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(View::as_str);
    let match_labels = selector.field("matchLabels").and_then(View::as_object).into_iter().flatten();
    if !match_labels.into_iter().all(|(k, v)| get(k) == v.as_str()) {
        return false;
    }
    selector.field("matchExpressions").into_iter().flat_map(View::items).all(|e| {
        let key = e.field("key").and_then(View::as_str).unwrap_or_default();
        let values: Vec<&str> = e.field("values").into_iter().flat_map(View::items).filter_map(View::as_str).collect();
        match e.field("operator").and_then(View::as_str) {
            Some("In") => get(key).is_some_and(|v| values.contains(&v)),
            Some("NotIn") => get(key).is_none_or(|v| !values.contains(&v)),
            Some("Exists") => get(key).is_some(),
            Some("DoesNotExist") => get(key).is_none(),
            _ => false,
        }
    })
}

/// A quantity written as a string or a number.
pub(crate) fn quantity<'v>(v: impl Into<View<'v>>) -> Option<Quantity> {
    let v = v.into();
    match (v.as_str(), v.as_number()) {
        (Some(s), _) => Quantity::parse(s).ok(),
        (_, Some(n)) => Quantity::parse(&n.to_string()).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::model::objects::test_object as object;

    fn deployment() -> Object {
        object(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}}))
    }

    /// The reverse lookups return a superset of what matches, in the
    /// namespace's order: checked against a scan of every object.
    #[test]
    fn reverse_lookups_find_every_match_in_order() {
        let service = |name: &str, selector: Value| {
            object(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "ns"},
                "spec": {"selector": selector}}))
        };
        let monitor = |name: &str, selector: Value| {
            object(json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
                "metadata": {"name": name, "namespace": "ns"}, "spec": {"selector": selector}}))
        };
        let workload = |name: &str, labels: Value| {
            object(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ns"},
                "spec": {"template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c"}]}}}}))
        };
        let route = |name: &str, pools: &[&str]| {
            let backends: Vec<Value> = pools.iter().map(|p| json!({"kind": "InferencePool", "name": p})).collect();
            object(json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                "metadata": {"name": name, "namespace": "ns"}, "spec": {"rules": [{"backendRefs": backends}]}}))
        };
        let objects = [
            service("s1", json!({"app": "a", "tier": "x"})),
            service("s2", json!({"app": "b"})),
            service("all", json!({})),
            service("null", Value::Null),
            object(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "none", "namespace": "ns"}})),
            service("s3", json!({"tier": "x"})),
            monitor("m1", json!({"matchLabels": {"team": "t"}})),
            monitor("m2", json!({"matchExpressions": [{"key": "team", "operator": "Exists"}]})),
            workload("w1", json!({"app": "a", "tier": "x"})),
            workload("w2", json!({"app": "b"})),
            workload("w3", json!({"app": "a"})),
            route("r1", &["p1", "p2", "p1"]),
            route("r2", &["p2"]),
        ];
        let cx = Context::new(objects.iter());
        let names = |os: Vec<&Object>| os.iter().map(|o| o.id.name.clone()).collect::<Vec<_>>();
        let labels = |v: Value| v.as_object().cloned();
        let (a, x, ab) = (labels(json!({"app": "a"})), labels(json!({"tier": "x"})), labels(json!({"app": "b"})));
        // Candidates: those requiring a pair the labels hold, and those
        // requiring none (`all`, `null`); never one without a selector.
        assert_eq!(names(cx.selecting("ns", "Service", &[a.as_ref().map(MapView::from)])), ["s1", "all", "null"]);
        assert_eq!(
            names(cx.selecting("ns", "Service", &[x.as_ref().map(MapView::from), ab.as_ref().map(MapView::from)])),
            ["s2", "all", "null", "s3"]
        );
        assert_eq!(names(cx.selecting("ns", "Service", &[None])), ["all", "null"]);
        assert_eq!(
            names(cx.selecting("ns", "ServiceMonitor", &[labels(json!({"team": "t"})).as_ref().map(MapView::from)])),
            ["m1", "m2"]
        );
        assert!(cx.selecting("other", "Service", &[a.as_ref().map(MapView::from)]).is_empty());
        // Every match is among the candidates.
        for l in [&a, &x, &ab] {
            let candidates = cx.selecting("ns", "Service", &[l.as_ref().map(MapView::from)]);
            for svc in cx.objects_of_kind("ns", "Service") {
                let Some(selector) = svc.value.at("/spec/selector") else { continue };
                if selector_matches(&json!({"matchLabels": selector}), l.as_ref()) {
                    assert!(candidates.iter().any(|c| std::ptr::eq(*c, *svc)), "{}", svc.id);
                }
            }
        }
        let workloads = |selector: Value| {
            cx.workloads_selectable("ns", &selector).iter().map(|w| w.object.id.name.clone()).collect::<Vec<_>>()
        };
        assert_eq!(workloads(json!({"matchLabels": {"app": "a"}})), ["w1", "w3"]);
        assert_eq!(workloads(json!({"matchLabels": {"app": "a", "tier": "x"}})), ["w1"]);
        assert_eq!(workloads(json!({"matchLabels": {"app": "c"}})), Vec::<String>::new());
        assert_eq!(workloads(json!({"matchExpressions": []})), ["w1", "w2", "w3"]);
        let template = |name: &str| cx.object("Deployment", "ns", name).unwrap().view().at("/spec/template").unwrap();
        let of = |ts: &[View<'_>]| cx.workload_of_templates("ns", ts).map(|w| w.object.id.name.clone());
        assert_eq!(of(&[template("w3"), template("w2")]), Some("w2".to_string()));
        assert_eq!(of(&[View::Json(&json!({}))]), None);
        assert!(cx.workload_of_templates("other", &[template("w1")]).is_none());
        let routes = |pool: &str| cx.routes_to_pool("ns", pool).iter().map(|r| r.id.name.clone()).collect::<Vec<_>>();
        assert_eq!(routes("p1"), ["r1"]);
        assert_eq!(routes("p2"), ["r1", "r2"]);
        assert!(routes("p3").is_empty());
    }

    fn bounds(autoscaler: Value) -> (i64, i64, i64) {
        let objects = [deployment(), object(autoscaler)];
        let cx = Context::new(objects.iter());
        let w = &cx.workloads_in("ns")[0];
        (w.min_replicas, w.max_replicas, w.start_replicas)
    }

    #[test]
    fn an_autoscalers_bounds_left_out_take_their_controllers_defaults() {
        let target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"});
        // KEDA: minReplicaCount 0, maxReplicaCount 100 when left out.
        let keda = json!({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": {"name": "d", "namespace": "ns"}, "spec": {"scaleTargetRef": {"name": "d"}}});
        assert_eq!(bounds(keda), (0, 100, 2));
        // A HorizontalPodAutoscaler's minReplicas defaults to 1.
        let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "d", "namespace": "ns"}, "spec": {"scaleTargetRef": target, "maxReplicas": 6}});
        assert_eq!(bounds(hpa), (1, 6, 2));
        // Given, they are read as they are, and the start is kept within them.
        let keda = json!({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": {"name": "d", "namespace": "ns"},
            "spec": {"scaleTargetRef": {"name": "d"}, "minReplicaCount": 3, "maxReplicaCount": 5}});
        assert_eq!(bounds(keda), (3, 5, 3));
    }
}
