//! JSON values in a compact form, for values a run keeps many of and only
//! reads: the skeletons a compile keeps of every object of a large
//! namespace (`k8s::skeleton`). A map is one list of its entries, in
//! order, without a hash table (the maps a skeleton keeps have one to a
//! few entries, searched in order); a string is its bytes alone; a key
//! that Kubernetes objects share (`spec`, `containers`,
//! `app.kubernetes.io/name`) is a number into [`KNOWN_KEYS`], not a
//! string of its own. A `serde_json` map of a few entries takes a hash
//! table of 64 bytes or more and 104 bytes an entry besides its key's
//! string, each value 80 bytes inline; here an entry takes 40 bytes, a
//! value 24.
//!
//! [`View`] reads a value of either form alike, so that what reads an
//! object whole or in its small form is written once.

use crate::base::value::At;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Number, Value};

/// The keys a skeleton keeps of most objects (`k8s::skeleton`), and the
/// labels isvc and Kubernetes put on them, in byte order: each is stored
/// as its place here. Any other key is stored as its text.
pub const KNOWN_KEYS: [&str; 90] = [
    "activeDeadlineSeconds",
    "annotations",
    "apiVersion",
    "app.kubernetes.io/component",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/name",
    "app.kubernetes.io/part-of",
    "app.kubernetes.io/version",
    "backendRefs",
    "clusterQueue",
    "cohort",
    "cohortName",
    "containerPort",
    "containers",
    "cpu",
    "endPort",
    "endpointPickerRef",
    "ephemeral-storage",
    "failureMode",
    "from",
    "globalDefault",
    "group",
    "hard",
    "ingress",
    "initContainers",
    "key",
    "kind",
    "kueue.x-k8s.io/priority-class",
    "kueue.x-k8s.io/queue-name",
    "labels",
    "leaderTemplate",
    "leaderWorkerTemplate",
    "limits",
    "limits.cpu",
    "limits.memory",
    "matchExpressions",
    "matchLabels",
    "maxReplicaCount",
    "maxReplicas",
    "maxSurge",
    "maxUnavailable",
    "memory",
    "metadata",
    "minReplicaCount",
    "minReplicas",
    "name",
    "namespace",
    "namespaceSelector",
    "number",
    "nvidia.com/gpu",
    "operator",
    "overhead",
    "parallelism",
    "parentRefs",
    "podSelector",
    "policyTypes",
    "port",
    "ports",
    "priorityClassName",
    "protocol",
    "replicas",
    "requests",
    "requests.cpu",
    "requests.memory",
    "requests.nvidia.com/gpu",
    "resources",
    "restartPolicy",
    "rollingUpdate",
    "rollingUpdateConfiguration",
    "rolloutStrategy",
    "rules",
    "scaleTargetRef",
    "scopeName",
    "scopeSelector",
    "scopes",
    "sectionName",
    "selector",
    "size",
    "spec",
    "storage",
    "strategy",
    "targetPort",
    "targetPorts",
    "template",
    "type",
    "value",
    "values",
    "weight",
    "workerTemplate",
];

/// A map's key: one of [`KNOWN_KEYS`] by its place, or its own text.
/// (16 bytes: the place sits where a text's length would, behind a null
/// pointer.)
#[derive(Clone, Debug, PartialEq)]
pub enum Key {
    Known(u16),
    Own(Box<str>),
}

impl Key {
    fn of(key: String) -> Key {
        match KNOWN_KEYS.binary_search(&key.as_str()) {
            Ok(i) => Key::Known(i as u16),
            Err(_) => Key::Own(key.into_boxed_str()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Key::Known(i) => KNOWN_KEYS[usize::from(*i)],
            Key::Own(k) => k,
        }
    }
}

/// A JSON value, compact (see the module's comment).
#[derive(Clone, Debug, PartialEq)]
pub enum Compact {
    Null,
    Bool(bool),
    Number(Number),
    Str(Box<str>),
    List(Box<[Compact]>),
    Map(Box<[(Key, Compact)]>),
    /// A value that many others hold alike ([`Shared`]).
    Shared(Arc<Compact>),
}

impl From<Value> for Compact {
    /// The value, its strings moved (each made at its length).
    fn from(value: Value) -> Compact {
        match value {
            Value::Null => Compact::Null,
            Value::Bool(b) => Compact::Bool(b),
            Value::Number(n) => Compact::Number(n),
            Value::String(s) => Compact::Str(s.into_boxed_str()),
            Value::Array(list) => Compact::List(list.into_iter().map(Compact::from).collect()),
            Value::Object(map) => Compact::Map(map.into_iter().map(|(k, v)| (Key::of(k), Compact::from(v))).collect()),
        }
    }
}

impl Compact {
    /// The value in `serde_json`'s form.
    pub fn to_json(&self) -> Value {
        match self {
            Compact::Null => Value::Null,
            Compact::Bool(b) => Value::Bool(*b),
            Compact::Number(n) => Value::Number(n.clone()),
            Compact::Str(s) => Value::String(s.to_string()),
            Compact::List(items) => Value::Array(items.iter().map(Compact::to_json).collect()),
            Compact::Map(entries) => {
                Value::Object(entries.iter().map(|(k, v)| (k.as_str().to_string(), v.to_json())).collect())
            }
            Compact::Shared(c) => c.to_json(),
        }
    }

    /// Keeps the value at `pointer` (keys alone, no escapes), if there is
    /// one, as the one `shared` keeps of the values equal to it.
    pub fn share_at(&mut self, pointer: &str, shared: &Shared) {
        let mut at = self;
        for key in pointer.split('/').skip(1) {
            let Compact::Map(entries) = at else { return };
            let Some((_, v)) = entries.iter_mut().find(|(k, _)| k.as_str() == key) else { return };
            at = v;
        }
        if !matches!(at, Compact::Shared(_)) {
            *at = shared.share(std::mem::replace(at, Compact::Null));
        }
    }

    /// The value, past any [`Compact::Shared`].
    fn resolved(&self) -> &Compact {
        match self {
            Compact::Shared(c) => c.resolved(),
            c => c,
        }
    }

    /// Feeds the value to `state`: equal values (as [`PartialEq`] has them)
    /// feed the same.
    fn hash_into(&self, state: &mut impl Hasher) {
        let c = self.resolved();
        std::mem::discriminant(c).hash(state);
        match c {
            Compact::Null | Compact::Shared(_) => {}
            Compact::Bool(b) => b.hash(state),
            Compact::Number(n) => n.hash(state),
            Compact::Str(s) => s.hash(state),
            Compact::List(items) => {
                items.len().hash(state);
                items.iter().for_each(|i| i.hash_into(state));
            }
            Compact::Map(entries) => {
                entries.len().hash(state);
                for (k, v) in entries.iter() {
                    k.as_str().hash(state);
                    v.hash_into(state);
                }
            }
        }
    }
}

/// The values a run's skeletons hold alike, each kept once: the pod
/// templates' `spec` of the services of one model and size are the same
/// (their containers, ports and resources), so a namespace of 10,000
/// services holds a few dozen. Made for a compile's check of one
/// namespace, and freed with it.
#[derive(Default)]
pub struct Shared(Mutex<HashMap<u64, Vec<Arc<Compact>>>>);

impl Shared {
    /// `value`, as the one kept of the values equal to it.
    pub fn share(&self, value: Compact) -> Compact {
        let mut hasher = foldhash::fast::FixedState::default().build_hasher();
        value.hash_into(&mut hasher);
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let same = map.entry(hasher.finish()).or_default();
        let kept = match same.iter().find(|c| ***c == value) {
            Some(c) => c.clone(),
            None => {
                let c = Arc::new(value);
                same.push(c.clone());
                c
            }
        };
        Compact::Shared(kept)
    }
}

/// A value read in either form.
#[derive(Clone, Copy, Debug)]
pub enum View<'a> {
    Json(&'a Value),
    Compact(&'a Compact),
}

impl<'a> From<&'a Value> for View<'a> {
    fn from(v: &'a Value) -> View<'a> {
        View::Json(v)
    }
}

impl<'a> From<&&'a Value> for View<'a> {
    fn from(v: &&'a Value) -> View<'a> {
        View::Json(v)
    }
}

impl<'a> From<&View<'a>> for View<'a> {
    fn from(v: &View<'a>) -> View<'a> {
        *v
    }
}

impl<'a> From<&'a Compact> for View<'a> {
    fn from(v: &'a Compact) -> View<'a> {
        View::Compact(v)
    }
}

impl<'a> View<'a> {
    /// The view, past any [`Compact::Shared`].
    fn resolved(self) -> View<'a> {
        match self {
            View::Compact(c) => View::Compact(c.resolved()),
            json => json,
        }
    }

    /// The entry `key` of a map.
    pub fn field(self, key: &str) -> Option<View<'a>> {
        self.as_object()?.get(key)
    }

    /// The value at a JSON pointer (RFC 6901): a whole value's as
    /// [`At::at`] finds it, a compact one's the same way.
    pub fn at(self, pointer: &str) -> Option<View<'a>> {
        let compact = match self {
            View::Json(v) => return v.at(pointer).map(View::Json),
            View::Compact(c) => c,
        };
        if pointer.is_empty() {
            return Some(self);
        }
        let mut target = View::Compact(compact);
        let escaped = pointer.as_bytes().contains(&b'~');
        for token in pointer.strip_prefix('/')?.split('/') {
            let token = crate::base::value::unescape(token, escaped);
            target = match (target.as_object(), target.as_array()) {
                (Some(map), _) => map.get(&token)?,
                (_, Some(list)) => list.get(crate::base::value::index(&token)?)?,
                _ => return None,
            };
        }
        Some(target)
    }

    pub fn as_str(self) -> Option<&'a str> {
        match self.resolved() {
            View::Json(v) => v.as_str(),
            View::Compact(Compact::Str(s)) => Some(s),
            View::Compact(_) => None,
        }
    }

    pub fn as_number(self) -> Option<&'a Number> {
        match self.resolved() {
            View::Json(Value::Number(n)) | View::Compact(Compact::Number(n)) => Some(n),
            _ => None,
        }
    }

    pub fn as_i64(self) -> Option<i64> {
        self.as_number()?.as_i64()
    }

    pub fn as_bool(self) -> Option<bool> {
        match self.resolved() {
            View::Json(Value::Bool(b)) | View::Compact(Compact::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    pub fn is_null(self) -> bool {
        matches!(self.resolved(), View::Json(Value::Null) | View::Compact(Compact::Null))
    }

    /// The value as a map (under `serde_json`'s name), if it is one.
    pub fn as_object(self) -> Option<MapView<'a>> {
        match self.resolved() {
            View::Json(Value::Object(m)) => Some(MapView::Json(m)),
            View::Compact(Compact::Map(entries)) => Some(MapView::Compact(entries)),
            _ => None,
        }
    }

    /// The value as a list (under `serde_json`'s name), if it is one.
    pub fn as_array(self) -> Option<ListView<'a>> {
        match self.resolved() {
            View::Json(Value::Array(items)) => Some(ListView::Json(items)),
            View::Compact(Compact::List(items)) => Some(ListView::Compact(items)),
            _ => None,
        }
    }

    /// The items of a list, none for anything else.
    pub fn items(self) -> impl Iterator<Item = View<'a>> {
        self.as_array().into_iter().flat_map(ListView::iter)
    }

    /// The value in `serde_json`'s form.
    pub fn to_json(self) -> Value {
        match self {
            View::Json(v) => v.clone(),
            View::Compact(c) => c.to_json(),
        }
    }

    /// Where the value lies: the same place for the same value read
    /// twice.
    pub fn address(self) -> usize {
        match self.resolved() {
            View::Json(v) => std::ptr::from_ref(v) as usize,
            View::Compact(c) => std::ptr::from_ref(c) as usize,
        }
    }
}

impl PartialEq for View<'_> {
    /// The same JSON value, whatever the forms.
    fn eq(&self, other: &View<'_>) -> bool {
        if let (Some(a), Some(b)) = (self.as_object(), other.as_object()) {
            return a.len() == b.len() && a.iter().all(|(k, v)| b.get(k) == Some(v));
        }
        if let (Some(a), Some(b)) = (self.as_array(), other.as_array()) {
            return a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x == y);
        }
        match (self.resolved(), other.resolved()) {
            (View::Json(a), View::Json(b)) => a == b,
            _ => match (self.as_number(), other.as_number()) {
                (Some(a), Some(b)) => a == b,
                _ => {
                    (self.is_null() && other.is_null())
                        || self.as_bool().is_some_and(|a| other.as_bool() == Some(a))
                        || self.as_str().is_some_and(|a| other.as_str() == Some(a))
                }
            },
        }
    }
}

impl PartialEq<Value> for View<'_> {
    fn eq(&self, other: &Value) -> bool {
        *self == View::Json(other)
    }
}

/// A map read in either form.
#[derive(Clone, Copy, Debug)]
pub enum MapView<'a> {
    Json(&'a Map<String, Value>),
    Compact(&'a [(Key, Compact)]),
}

impl<'a> From<&'a Map<String, Value>> for MapView<'a> {
    fn from(m: &'a Map<String, Value>) -> MapView<'a> {
        MapView::Json(m)
    }
}

impl<'a> From<&&'a Map<String, Value>> for MapView<'a> {
    fn from(m: &&'a Map<String, Value>) -> MapView<'a> {
        MapView::Json(m)
    }
}

impl<'a> From<&MapView<'a>> for MapView<'a> {
    fn from(m: &MapView<'a>) -> MapView<'a> {
        *m
    }
}

impl<'a> MapView<'a> {
    pub fn get(self, key: &str) -> Option<View<'a>> {
        match self {
            MapView::Json(m) => crate::base::value::field(m, key).map(View::Json),
            MapView::Compact(entries) => entries.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| View::Compact(v)),
        }
    }

    pub fn len(self) -> usize {
        match self {
            MapView::Json(m) => m.len(),
            MapView::Compact(entries) => entries.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The entries, in order.
    pub fn iter(self) -> MapIter<'a> {
        match self {
            MapView::Json(m) => MapIter::Json(m.iter()),
            MapView::Compact(entries) => MapIter::Compact(entries.iter()),
        }
    }
}

/// The entries of a [`MapView`].
pub enum MapIter<'a> {
    Json(serde_json::map::Iter<'a>),
    Compact(std::slice::Iter<'a, (Key, Compact)>),
}

impl<'a> Iterator for MapIter<'a> {
    type Item = (&'a str, View<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            MapIter::Json(it) => it.next().map(|(k, v)| (k.as_str(), View::Json(v))),
            MapIter::Compact(it) => it.next().map(|(k, v)| (k.as_str(), View::Compact(v))),
        }
    }
}

impl<'a> IntoIterator for MapView<'a> {
    type Item = (&'a str, View<'a>);
    type IntoIter = MapIter<'a>;

    fn into_iter(self) -> MapIter<'a> {
        self.iter()
    }
}

/// The items of a [`ListView`].
pub enum ListIter<'a> {
    Json(std::slice::Iter<'a, Value>),
    Compact(std::slice::Iter<'a, Compact>),
}

impl<'a> Iterator for ListIter<'a> {
    type Item = View<'a>;

    fn next(&mut self) -> Option<View<'a>> {
        match self {
            ListIter::Json(it) => it.next().map(View::Json),
            ListIter::Compact(it) => it.next().map(View::Compact),
        }
    }
}

impl<'a> IntoIterator for ListView<'a> {
    type Item = View<'a>;
    type IntoIter = ListIter<'a>;

    fn into_iter(self) -> ListIter<'a> {
        self.iter()
    }
}

/// A list read in either form.
#[derive(Clone, Copy, Debug)]
pub enum ListView<'a> {
    Json(&'a [Value]),
    Compact(&'a [Compact]),
}

impl<'a> ListView<'a> {
    pub fn get(self, i: usize) -> Option<View<'a>> {
        match self {
            ListView::Json(items) => items.get(i).map(View::Json),
            ListView::Compact(items) => items.get(i).map(View::Compact),
        }
    }

    pub fn len(self) -> usize {
        match self {
            ListView::Json(items) => items.len(),
            ListView::Compact(items) => items.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn iter(self) -> ListIter<'a> {
        match self {
            ListView::Json(items) => ListIter::Json(items.iter()),
            ListView::Compact(items) => ListIter::Compact(items.iter()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Value {
        json!({
            "a": {"b": [1, {"c": "d"}, null, true, 2.5, -3]},
            "x/y": {"~z": "escaped"},
            "labels": {"app": "m", "tier": "gold"},
            "empty": {},
            "none": [],
        })
    }

    #[test]
    fn a_compact_value_reads_as_its_json_does_at_every_pointer() {
        let v = sample();
        let c = Compact::from(v.clone());
        assert_eq!(c.to_json(), v);
        for p in [
            "",
            "/a",
            "/a/b",
            "/a/b/0",
            "/a/b/1/c",
            "/a/b/2",
            "/a/b/3",
            "/a/b/4",
            "/a/b/5",
            "/a/b/6",
            "/a/b/01",
            "/x~1y",
            "/x~1y/~0z",
            "/labels/app",
            "/empty",
            "/none",
            "/none/0",
            "/missing",
            "a",
            "/a/b/+1",
        ] {
            let json = v.at(p);
            let (vj, vc) = (View::Json(&v).at(p), View::Compact(&c).at(p));
            assert_eq!(vj.map(View::to_json), json.cloned(), "{p}");
            assert_eq!(vc.map(View::to_json), json.cloned(), "{p}");
            if let (Some(a), Some(b)) = (vj, vc) {
                // Either way round: the forms compare alike.
                assert!(a == b, "{p}");
                assert!(b == a, "{p}");
                assert_eq!(
                    (a.as_str(), a.as_i64(), a.as_number(), a.as_bool(), a.is_null()),
                    (b.as_str(), b.as_i64(), b.as_number(), b.as_bool(), b.is_null()),
                    "{p}"
                );
                assert_eq!(
                    a.items().map(View::to_json).collect::<Vec<_>>(),
                    b.items().map(View::to_json).collect::<Vec<_>>()
                );
                let entries = |m: Option<MapView<'_>>| {
                    m.map(|m| m.iter().map(|(k, v)| (k.to_string(), v.to_json())).collect::<Vec<_>>())
                };
                assert_eq!(entries(a.as_object()), entries(b.as_object()), "{p}");
            }
        }
    }

    #[test]
    fn views_compare_as_json_values_whatever_their_forms() {
        let v = sample();
        let c = Compact::from(v.clone());
        assert!(View::Compact(&c) == v);
        let mut other = v.clone();
        other["labels"]["app"] = json!("n");
        assert!(View::Compact(&c) != other);
        assert!(View::Compact(&c).field("labels") != View::Json(&v).field("a"));
        // Maps compare without regard to their order, as `serde_json`'s do.
        let swapped = json!({"tier": "gold", "app": "m"});
        assert!(View::Compact(&c).field("labels").is_some_and(|l| l == swapped));
        assert!(View::Json(&json!(1)) != View::Json(&json!("1")));
        assert!(View::Compact(&Compact::from(json!(1))) == json!(1));
    }

    #[test]
    fn known_keys_are_unique_and_stored_by_place_others_as_text() {
        assert!(KNOWN_KEYS.windows(2).all(|w| w[0] < w[1]), "sorted, each once: they are found by halving");
        assert_eq!(std::mem::size_of::<Key>(), 16);
        let c = Compact::from(json!({"spec": 1, "team": 2}));
        let Compact::Map(entries) = &c else { panic!("a map") };
        assert!(matches!(entries[0].0, Key::Known(_)));
        assert!(matches!(&entries[1].0, Key::Own(k) if &**k == "team"));
        assert_eq!(c.to_json(), json!({"spec": 1, "team": 2}));
    }

    #[test]
    fn shared_values_are_kept_once_and_read_as_their_own() {
        let shared = Shared::default();
        let spec = || Compact::from(json!({"containers": [{"name": "c", "resources": {"limits": {"cpu": 2}}}]}));
        let (a, b) = (shared.share(spec()), shared.share(spec()));
        let other = shared.share(Compact::from(json!({"containers": []})));
        let (Compact::Shared(x), Compact::Shared(y), Compact::Shared(z)) = (&a, &b, &other) else { panic!("shared") };
        assert!(Arc::ptr_eq(x, y) && !Arc::ptr_eq(x, z));
        let holder = Compact::Map(Box::new([(Key::of("spec".to_string()), a)]));
        let view = View::Compact(&holder);
        assert_eq!(view.at("/spec/containers/0/resources/limits/cpu").and_then(View::as_i64), Some(2));
        assert_eq!(view.to_json(), json!({"spec": spec().to_json()}));
        assert!(view == json!({"spec": spec().to_json()}));
        assert_eq!(view.at("/spec").map(View::address), View::Compact(&b).at("").map(View::address));
    }

    #[test]
    fn the_same_value_read_twice_lies_at_one_address() {
        let c = Compact::from(sample());
        let a = View::Compact(&c).at("/labels").map(View::address);
        assert_eq!(a, View::Compact(&c).field("labels").map(View::address));
        assert_ne!(a, View::Compact(&c).field("empty").map(View::address));
    }
}
