//! What a render would change, object by object: added, removed, changed,
//! with the fields that differ, a line diff, and whether the change restarts
//! pods (a pod template change) or only scales them.
//!
//! Objects are matched by identity (apiVersion, kind, namespace, name), not
//! by file path, so a moved file is not reported as a removal and an addition.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;

use crate::base::diagnostics::Diagnostic;
use crate::base::digest::digest;
use crate::base::paths::TreePath;
use crate::base::yaml::{self, Limits, PathSegment, path_string};
use crate::emit::write::Existing;
use crate::model::objects::{ObjectId, Written};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Added,
    Removed,
    Changed,
}

/// What a change does to running pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Impact {
    /// The pod template changes: every pod is replaced (a rollout).
    RestartsPods,
    /// Pods are created or deleted with the object.
    CreatesPods,
    DeletesPods,
    /// Only replica counts or autoscaler bounds change.
    ScalingOnly,
    /// Only a route's backends or their weights change: requests move
    /// between services (a canary step), no pod is touched.
    TrafficShift,
    /// Nothing that runs changes (metadata, Service, CRD ...).
    NoPodChange,
}

impl Impact {
    pub fn describe(self) -> &'static str {
        match self {
            Impact::RestartsPods => "restarts pods",
            Impact::CreatesPods => "creates pods",
            Impact::DeletesPods => "deletes pods",
            Impact::ScalingOnly => "scaling only",
            Impact::TrafficShift => "traffic shift",
            Impact::NoPodChange => "no pod change",
        }
    }
}

/// One object's change.
#[derive(Clone, Debug, Serialize)]
pub struct ObjectDiff {
    /// The cluster whose tree the object is in, when the platform lists clusters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    pub change: Change,
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    /// The file in the output tree.
    pub file: PathBuf,
    pub impact: Impact,
    /// Changed fields, as paths (`spec.template.spec.containers[0].args`).
    pub fields: Vec<String>,
    /// Unified line diff of the file.
    pub diff: String,
}

impl ObjectDiff {
    pub fn id(&self) -> ObjectId {
        ObjectId {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// The whole report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub objects: Vec<ObjectDiff>,
    pub unchanged: usize,
}

impl Report {
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    fn count(&self, c: Change) -> usize {
        self.objects.iter().filter(|o| o.change == c).count()
    }

    /// One line: "1 added, 2 changed (1 restarts pods), 0 removed, 3 unchanged".
    pub fn summary(&self) -> String {
        let restarts = self.objects.iter().filter(|o| o.impact == Impact::RestartsPods).count();
        let shifts = self.objects.iter().filter(|o| o.impact == Impact::TrafficShift).count();
        let notes: Vec<String> = [(restarts, "restart pods"), (shifts, "shift traffic")]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
        let restart_note = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join(", ")) };
        format!(
            "{} added, {} changed{restart_note}, {} removed, {} unchanged",
            self.count(Change::Added),
            self.count(Change::Changed),
            self.count(Change::Removed),
            self.unchanged
        )
    }
}

/// Compares the objects a render would write, held as their files' texts
/// ([`Written`]), with what `existing` holds, read with its texts
/// ([`crate::emit::write::scan_texts`]; a file read for its digest alone is
/// compared as an empty one). kustomize entry points and the manifest are
/// not objects and are left to `render --check`.
///
/// Only the texts are held: an object whose file differs is read back from
/// its own text to be compared field by field, as the file it replaces is.
/// After a change to the platform every Deployment of a fleet differs, and
/// a diff holding every object's value whole peaked at 760 MiB at 10,000
/// services (benches/README.md).
pub fn diff(objects: &[Written], existing: &Existing) -> Result<Report, Diagnostic> {
    compare(objects, &Places::of(objects), existing, vec![false; objects.len()])
}

/// [`diff`] of `objects` with the files of the tree `out` that `keep`
/// chooses among those `existing` lists, as a scan found them (known by
/// digest): a file whose digest is that of what its object would be written
/// as is that object unchanged, and is not read; the others are read for
/// their texts. After a change to one service, that reads its few files
/// rather than every file of its namespace.
pub fn diff_in_tree(
    objects: &[Written],
    existing: &Existing,
    out: &Path,
    keep: impl Fn(&TreePath) -> bool + Sync,
) -> Result<Report, Diagnostic> {
    let places = Places::of(objects);
    // Each file compared: the object it holds unchanged, or its path, to read.
    let found: Vec<Result<usize, &Path>> = existing
        .ours
        .par_iter()
        .filter(|(path, _)| keep(path) && compared(path))
        .map(|(path, contents)| {
            let n = places.object_at(objects, path);
            n.filter(|&n| digest(objects[n].text.as_bytes()) == contents.digest).ok_or(path.as_path())
        })
        .collect();
    let mut unchanged = vec![false; objects.len()];
    let mut differing = foldhash::HashSet::default();
    for f in found {
        match f {
            Ok(n) => unchanged[n] = true,
            Err(path) => {
                differing.insert(path);
            }
        }
    }
    let read = existing.texts_of(out, |p| differing.contains(p))?;
    compare(objects, &places, &read, unchanged)
}

/// Where each object's file lies, and whether files are in clusters'
/// directories.
struct Places {
    clustered: bool,
    paths: foldhash::HashMap<PathBuf, usize>,
}

impl Places {
    fn of(objects: &[Written]) -> Places {
        Places {
            clustered: objects.iter().any(|w| w.object.cluster.is_some()),
            paths: objects.iter().enumerate().map(|(n, w)| (w.object.relative_path(), n)).collect(),
        }
    }

    /// The cluster whose directory holds the file `path`.
    fn cluster_of(&self, path: &Path) -> Option<String> {
        let first = path.components().next()?.as_os_str().to_string_lossy().into_owned();
        (self.clustered && first != crate::model::objects::GITOPS_DIR).then_some(first)
    }

    /// The object written to the file `path`, of the cluster whose
    /// directory holds it.
    fn object_at(&self, objects: &[Written], path: &Path) -> Option<usize> {
        let n = *self.paths.get(path)?;
        (self.cluster_of(path) == objects[n].object.cluster).then_some(n)
    }
}

/// [`diff`] of `objects`, written to their `places`, with `existing`; the
/// objects `unchanged` already found so are left out.
///
/// Each file is compared with the object written to its path, where that
/// object is the one it holds (nearly always): read back, compared and let
/// go on every core, so only the values of the pairs being compared are
/// alive (after a change to the platform every Deployment of the fleet
/// differs: 10,000 pairs at 10,000 services). A file holding another
/// object (moved, or copied) is matched with that object by identity
/// after, and read again; of several files holding one object, the first
/// by path is its file, and the others files a render removes.
fn compare(
    objects: &[Written],
    places: &Places,
    existing: &Existing,
    mut unchanged: Vec<bool>,
) -> Result<Report, Diagnostic> {
    type Key = (Option<String>, ObjectId);
    // What each file compared is.
    enum Found<'t> {
        /// The file of object `n`: unchanged (`None`), or changed.
        Paired(usize, Option<ObjectDiff>),
        /// A file holding another object than the one written to its path,
        /// if any: that object's key, to be matched by identity.
        Loose(Key, &'t Path, &'t str),
        /// A file that is not one object.
        Unreadable(&'t Path, &'t str),
    }
    let found: Vec<Result<Found<'_>, Diagnostic>> = existing
        .ours
        .par_iter()
        .filter(|(path, _)| compared(path))
        .map(|(path, contents)| {
            let text = contents.text.as_deref().unwrap_or_default();
            let at = places.object_at(objects, path);
            // A file that holds, byte for byte, what its object would be
            // written as is that object unchanged, without being parsed
            // back: after a change to one service, nearly every file.
            if let Some(n) = at.filter(|&n| objects[n].text == text) {
                return Ok(Found::Paired(n, None));
            }
            let Some((id, old)) = parse(path, text, Limits::default()) else {
                return Ok(Found::Unreadable(path, text));
            };
            Ok(match at.filter(|&n| objects[n].object.id == id) {
                Some(n) => Found::Paired(n, changed(&objects[n], path, text, &old)?),
                None => Found::Loose((places.cluster_of(path), id), path, text),
            })
        })
        .collect();
    let mut report = Report::default();
    let mut paired = unchanged.clone();
    let mut loose: BTreeMap<Key, (&Path, &str)> = BTreeMap::new();
    let mut removed: Vec<(Key, &Path, &str)> = Vec::new();
    let mut unreadable: Vec<(&Path, &str)> = Vec::new();
    for f in found {
        match f? {
            Found::Paired(n, diff) => {
                paired[n] = true;
                match diff {
                    Some(d) => report.objects.push(d),
                    None => unchanged[n] = true,
                }
            }
            Found::Loose(key, path, text) => match loose.entry(key) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert((path, text));
                }
                std::collections::btree_map::Entry::Occupied(e) => removed.push((e.key().clone(), path, text)),
            },
            Found::Unreadable(path, text) => unreadable.push((path, text)),
        }
    }
    // The objects no file at their path holds, each with the file that
    // holds it elsewhere, if any, in order.
    let rest: Vec<(usize, Option<(&Path, &str)>)> = (0..objects.len())
        .filter(|&n| !paired[n])
        .map(|n| (n, loose.remove(&(objects[n].object.cluster.clone(), objects[n].object.id.clone()))))
        .collect();
    let rest: Vec<Result<(usize, Option<ObjectDiff>), Diagnostic>> = rest
        .into_par_iter()
        .map(|(n, file)| {
            let (o, new_text) = (&objects[n].object, objects[n].text.as_str());
            let diff = match file {
                // (Read again as it was read above, so it parses.)
                Some((path, old_text)) => match parse(path, old_text, Limits::default()) {
                    Some((_, old)) => changed(&objects[n], path, old_text, &old)?,
                    None => None,
                },
                None => {
                    let impact = if has_pods(&o.id.kind) { Impact::CreatesPods } else { Impact::NoPodChange };
                    let path = o.relative_path();
                    Some(entry(
                        o.cluster.clone(),
                        Change::Added,
                        &o.id,
                        path.clone(),
                        impact,
                        Vec::new(),
                        unified("", new_text, &path),
                    ))
                }
            };
            Ok((n, diff))
        })
        .collect();
    for r in rest {
        match r? {
            (_, Some(d)) => report.objects.push(d),
            (n, None) => unchanged[n] = true,
        }
    }
    report.unchanged = unchanged.iter().filter(|u| **u).count();
    // A file removed whose object the render still writes elsewhere (a
    // copy, or a file moved by hand) deletes no pod.
    let written: foldhash::HashSet<(&Option<String>, &ObjectId)> = if loose.is_empty() && removed.is_empty() {
        foldhash::HashSet::default()
    } else {
        objects.iter().map(|w| (&w.object.cluster, &w.object.id)).collect()
    };
    let loose = loose.into_iter().map(|(key, (path, text))| (key, path, text));
    for ((cluster, id), path, old_text) in loose.chain(removed) {
        let impact = if has_pods(&id.kind) && !written.contains(&(&cluster, &id)) {
            Impact::DeletesPods
        } else {
            Impact::NoPodChange
        };
        report.objects.push(entry(
            cluster,
            Change::Removed,
            &id,
            path.to_path_buf(),
            impact,
            Vec::new(),
            unified(old_text, "", path),
        ));
    }
    for (path, old_text) in unreadable {
        let id = ObjectId::new("", "(unreadable file)", None, &path.display().to_string());
        report.objects.push(entry(
            places.cluster_of(path),
            Change::Removed,
            &id,
            path.to_path_buf(),
            Impact::NoPodChange,
            Vec::new(),
            unified(old_text, "", path),
        ));
    }
    report.objects.sort_by(|a, b| {
        (&a.cluster, crate::model::kinds::rank(&a.kind), &a.namespace, &a.name, &a.kind).cmp(&(
            &b.cluster,
            crate::model::kinds::rank(&b.kind),
            &b.namespace,
            &b.name,
            &b.kind,
        ))
    });
    Ok(report)
}

/// The change of the object `written` from the file `path` of the tree,
/// whose text `old_text` reads as `old`: `None` where the two are the same
/// object (a header comment that names the source differently changes
/// nothing the cluster gets).
fn changed(written: &Written, path: &Path, old_text: &str, old: &Value) -> Result<Option<ObjectDiff>, Diagnostic> {
    let (o, new_text) = (&written.object, written.text.as_str());
    if old_text == new_text {
        return Ok(None);
    }
    let new = read_back(&o.relative_path(), new_text)?;
    if *old == new {
        return Ok(None);
    }
    let mut fields = Vec::new();
    changed_paths(old, &new, &mut Vec::new(), &mut fields);
    let impact = impact_of(&o.id.kind, &fields);
    let fields = fields.iter().map(|p| path_string(p)).collect();
    let diff = unified(old_text, new_text, path);
    Ok(Some(entry(o.cluster.clone(), Change::Changed, &o.id, o.relative_path(), impact, fields, diff)))
}

/// Whether [`diff`] compares the tree's file `path`: every file of isvc's
/// but kustomize entry points and the manifest.
pub fn compared(path: &std::path::Path) -> bool {
    path.file_name().is_none_or(|n| n != crate::derive::gitops::KUSTOMIZATION)
        && path.as_os_str() != crate::emit::manifest::MANIFEST
}

fn entry(
    cluster: Option<String>,
    change: Change,
    id: &ObjectId,
    file: PathBuf,
    impact: Impact,
    fields: Vec<String>,
    diff: String,
) -> ObjectDiff {
    ObjectDiff {
        cluster,
        change,
        api_version: id.api_version.clone(),
        kind: id.kind.clone(),
        namespace: id.namespace.clone(),
        name: id.name.clone(),
        file,
        impact,
        fields,
        diff,
    }
}

/// The object a file of the tree holds, read within `limits`; `None` for a
/// text that is not one object.
fn parse(path: &std::path::Path, text: &str, limits: Limits) -> Option<(ObjectId, Value)> {
    let source = crate::base::diagnostics::Source::new(path, text);
    let docs = yaml::parse_documents(&source, limits).ok()?;
    let node = docs.into_iter().flatten().next()?;
    let value = node.into_json();
    Some((ObjectId::of(&value)?, value))
}

/// The value of an object this run would write to `path`, read back from
/// its file's `text` as the file it replaces is read. The text is isvc's
/// own, emitted from a checked object: the limits a tree's files are read
/// within, which guard against hand-written ones, would refuse the
/// escaped control characters and the nesting an object may carry from
/// its inputs, and are lifted (the text is bounded by the render's own).
fn read_back(path: &Path, text: &str) -> Result<Value, Diagnostic> {
    let own = Limits {
        max_depth: 4 * Limits::default().max_depth,
        max_nodes: usize::MAX,
        max_scalar_bytes: usize::MAX,
        printable_only: false,
        ..Limits::default()
    };
    parse(path, text, own).map(|(_, value)| value).ok_or_else(|| {
        Diagnostic::error(format!(
            "cannot read back the object isvc would write to {} to compare it with the file there",
            path.display()
        ))
    })
}

fn has_pods(kind: &str) -> bool {
    crate::model::kinds::runs_pods(kind)
}

/// The keys of a JSON pointer.
fn pointer_keys(pointer: &str) -> Vec<&str> {
    pointer.split('/').skip(1).collect()
}

fn impact_of(kind: &str, fields: &[Vec<PathSegment>]) -> Impact {
    let starts = |p: &[PathSegment], prefix: &[&str]| {
        prefix.iter().enumerate().all(|(i, k)| matches!(p.get(i), Some(PathSegment::Key(s)) if s == k))
    };
    let row = crate::model::kinds::lookup(kind);
    if let Some(root) = row.and_then(|k| k.restarts_under)
        && fields.iter().any(|p| starts(p, &pointer_keys(root)))
    {
        return Impact::RestartsPods;
    }
    let replicas = row.and_then(|k| k.replicas);
    let scaling = |p: &Vec<PathSegment>| match kind {
        _ if replicas.is_some() => starts(p, &pointer_keys(replicas.unwrap_or_default())),
        "HorizontalPodAutoscaler" => starts(p, &["spec", "minReplicas"]) || starts(p, &["spec", "maxReplicas"]),
        "ScaledObject" => starts(p, &["spec", "minReplicaCount"]) || starts(p, &["spec", "maxReplicaCount"]),
        _ => false,
    };
    if !fields.is_empty() && fields.iter().all(scaling) {
        return Impact::ScalingOnly;
    }
    // An HTTPRoute rule's backendRefs (gateway-api `apis/v1/httproute_types.go`
    // `HTTPRouteRule.BackendRefs`): which services get its requests, and how many.
    let backends = |p: &Vec<PathSegment>| {
        matches!(p.as_slice(), [PathSegment::Key(a), PathSegment::Key(b), PathSegment::Index(_), PathSegment::Key(c), ..]
            if a == "spec" && b == "rules" && c == "backendRefs")
    };
    if kind == "HTTPRoute" && !fields.is_empty() && fields.iter().all(backends) {
        return Impact::TrafficShift;
    }
    Impact::NoPodChange
}

/// Paths of the leaves that differ between `a` and `b`.
fn changed_paths(a: &Value, b: &Value, path: &mut Vec<PathSegment>, out: &mut Vec<Vec<PathSegment>>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                path.push(PathSegment::Key(k.clone()));
                match (x.get(k), y.get(k)) {
                    (Some(v), Some(w)) => changed_paths(v, w, path, out),
                    _ => out.push(path.clone()),
                }
                path.pop();
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                path.push(PathSegment::Index(i));
                changed_paths(v, w, path, out);
                path.pop();
            }
        }
        _ if a != b => out.push(path.clone()),
        _ => {}
    }
}

fn unified(old: &str, new: &str, path: &std::path::Path) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

impl ObjectDiff {
    pub fn change_word(&self) -> &'static str {
        match self.change {
            Change::Added => "Added",
            Change::Removed => "Removed",
            Change::Changed => "Changed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::write::Contents;
    use crate::model::objects::{Held, Object};
    use serde_json::json;

    fn config_map(name: &str, data: &str, source: &str) -> Object {
        let value = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "team"}, "data": {"k": data},
        });
        Object::new(ObjectId::of(&value).unwrap(), value).owned_by(name).from_source(Some(source))
    }

    /// The tree's files as `objects` are written, by their own paths, or at
    /// `path` for the one `at` names.
    fn tree(objects: &[Object], at: Option<(&str, &str)>) -> Existing {
        let mut existing = Existing::default();
        for o in objects {
            let path = match at {
                Some((name, path)) if o.id.name == name => PathBuf::from(path),
                _ => o.relative_path(),
            };
            existing.ours.insert(path.into(), Contents::text(o.to_file()));
        }
        existing
    }

    #[test]
    fn files_as_their_objects_are_written_are_unchanged_unread_and_others_are_compared_as_objects() {
        let objects = [config_map("a", "1", "a.yaml"), config_map("b", "1", "b.yaml"), config_map("c", "1", "c.yaml")];
        // The same bytes: unchanged. Another source in the header, the same
        // object: unchanged too, compared as objects.
        let mut written = objects.clone();
        written[1].source = Some("elsewhere.yaml".into());
        written[2] = config_map("c", "2", "c.yaml");
        let held = Written::hold(objects.to_vec());
        let report = diff(&held, &tree(&written, None)).unwrap();
        assert_eq!(report.unchanged, 2);
        assert_eq!(report.objects.len(), 1);
        assert_eq!((report.objects[0].name.as_str(), report.objects[0].change), ("c", Change::Changed));

        // The same bytes at another object's path are no match by path: the
        // object is found where it lies, by what it is.
        let moved = tree(&objects, Some(("a", "team/x/configmap.yaml")));
        let report = diff(&held, &moved).unwrap();
        assert!(report.objects.is_empty() && report.unchanged == 3, "{:?}", report.objects);

        // A copy of a file at another path is a file a render removes.
        let mut copied = tree(&objects, None);
        copied.ours.insert(PathBuf::from("team/a/copy.yaml").into(), Contents::text(objects[0].to_file()));
        let report = diff(&held, &copied).unwrap();
        assert_eq!(report.unchanged, 3);
        assert_eq!(report.objects.len(), 1);
        assert_eq!((report.objects[0].name.as_str(), report.objects[0].change), ("a", Change::Removed));

        // So it is when the object's own file changed too: the file at its
        // path is its file, changed, and the copy is removed, whichever of
        // the two comes first by path.
        for copy in ["team/a/copy.yaml", "team/0/copy.yaml"] {
            let mut both = tree(&[config_map("a", "0", "a.yaml"), objects[1].clone(), objects[2].clone()], None);
            both.ours.insert(PathBuf::from(copy).into(), Contents::text(objects[0].to_file()));
            let report = diff(&held, &both).unwrap();
            let changes: Vec<_> =
                report.objects.iter().map(|o| (o.name.as_str(), o.change, o.file.display().to_string())).collect();
            assert_eq!(
                changes,
                [("a", Change::Changed, "team/a/configmap.yaml".to_string()), ("a", Change::Removed, copy.to_string())],
                "{copy}"
            );
            assert_eq!(report.unchanged, 2);
        }

        // A file holding an object at another object's path is compared
        // with its own object, wherever that object's file goes: moved.
        let mut moved = tree(&objects[1..], None);
        moved.ours.insert(
            PathBuf::from("team/z/configmap.yaml").into(),
            Contents::text(config_map("a", "0", "a.yaml").to_file()),
        );
        let report = diff(&held, &moved).unwrap();
        let changes: Vec<_> = report.objects.iter().map(|o| (o.name.as_str(), o.change, o.fields.clone())).collect();
        assert_eq!(changes, [("a", Change::Changed, vec!["data.k".to_string()])]);
        assert_eq!(report.unchanged, 2);
    }

    #[test]
    fn a_file_whose_digest_is_its_objects_text_is_unchanged_unread_in_a_tree() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let objects = [config_map("a", "1", "a.yaml"), config_map("b", "1", "b.yaml"), config_map("c", "1", "c.yaml")];
        let mut written = objects.clone();
        written[1].source = Some("elsewhere.yaml".into());
        written[2] = config_map("c", "2", "c.yaml");
        // The tree as a scan found it: each file known by its digest.
        let mut existing = Existing::default();
        for o in &written {
            let text = o.to_file();
            std::fs::create_dir_all(out.join(o.relative_path()).parent().unwrap()).unwrap();
            std::fs::write(out.join(o.relative_path()), &text).unwrap();
            existing.ours.insert(o.relative_path().into(), Contents::digest(digest(text.as_bytes())));
        }
        // a's file, changed on disk since the scan, is not read again: its
        // recorded digest is that of a's text.
        std::fs::write(out.join(objects[0].relative_path()), "not a file of isvc's\n").unwrap();
        // A file the caller leaves out (a namespace kept) is neither read
        // nor reported.
        let other = PathBuf::from("other/x/configmap.yaml");
        let text = config_map("x", "1", "x.yaml").to_file();
        std::fs::create_dir_all(out.join("other/x")).unwrap();
        std::fs::write(out.join(&other), &text).unwrap();
        existing.ours.insert(other.clone().into(), Contents::digest(digest(text.as_bytes())));
        let held = Written::hold(objects.to_vec());
        let report = diff_in_tree(&held, &existing, out, |p| p.as_path() != other).unwrap();
        // b's file is read and compared as an object (another header, the
        // same object); c's differs.
        assert_eq!(report.unchanged, 2);
        assert_eq!(report.objects.len(), 1, "{:?}", report.objects);
        assert_eq!((report.objects[0].name.as_str(), report.objects[0].change), ("c", Change::Changed));
        // The same as a diff of the tree read with its texts, before a's
        // file changed.
        let texts = tree(&written, None);
        let full = diff(&held, &texts).unwrap();
        assert_eq!((full.unchanged, full.objects.len()), (2, 1));
    }
}
