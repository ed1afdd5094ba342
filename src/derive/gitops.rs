//! GitOps delivery: kustomize entry points for the output tree, apply
//! ordering, and the Argo CD or Flux objects that take over an Operator's
//! run-time duties — prune (cascading delete), self-heal, retries with
//! backoff, prerequisites before workloads.
//!
//! Everything is derived from the compiled objects and the platform file;
//! nothing about the repository or the destination is guessed.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde_json::{Value, json};

use crate::base::diagnostics::Diagnostic;
use crate::model::objects::{CLUSTER_DIR, GITOPS_DIR, HEADER_PREFIX, Object, ObjectId};
use crate::model::platform::{Engine, GitOps, Layout, Platform};

/// Name of kustomize's entry-point file.
pub const KUSTOMIZATION: &str = "kustomization.yaml";

/// Argo CD sync wave of cluster-scoped prerequisites: before everything else.
const PREREQUISITE_WAVE: &str = "-1";

/// Whether objects of `kind` are prerequisites others depend on.
fn is_prerequisite(o: &Object) -> bool {
    o.id.namespace.is_none() && crate::model::kinds::rank(&o.id.kind) <= 4
}

/// Adds what an engine needs to apply the objects in the right order:
/// for Argo CD, sync waves on prerequisites and a dry-run skip for custom
/// resources whose CRD another tool installs. (Flux orders with dependsOn
/// between its Kustomizations instead.)
pub fn annotate(objects: &mut [Object], engine: Engine) {
    if engine != Engine::Argocd {
        return;
    }
    for o in objects.iter_mut().filter(|o| !o.bootstrap) {
        let mut notes = Vec::new();
        if is_prerequisite(o) {
            notes.push(("argocd.argoproj.io/sync-wave", PREREQUISITE_WAVE));
        }
        if o.id.group() == "kueue.x-k8s.io" {
            notes.push((crate::model::labels::ARGOCD_SYNC_OPTIONS, "SkipDryRunOnMissingResource=true"));
        }
        if notes.is_empty() {
            continue;
        }
        // The file written ahead no longer is the object's.
        o.file = None;
        let Some(meta) = o.value.get_mut("metadata").and_then(Value::as_object_mut) else { continue };
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(map) = annotations.as_object_mut() {
            for (k, v) in notes {
                // Sync options add up: keep those the object has (prune protection).
                // Annotating twice adds nothing the second time.
                let value = match map.get(k).and_then(Value::as_str) {
                    Some(old) if k == crate::model::labels::ARGOCD_SYNC_OPTIONS && old.split(',').any(|o| o == v) => {
                        continue;
                    }
                    Some(old) if k == crate::model::labels::ARGOCD_SYNC_OPTIONS && !old.is_empty() => {
                        format!("{old},{v}")
                    }
                    _ => v.to_string(),
                };
                map.insert(k.to_string(), json!(value));
            }
        }
    }
}

/// The kustomization files of a tree: one per namespace directory, one for
/// `_cluster`, and one at each tree's root listing those directories.
/// `roots` are the trees' directories ("" for a single tree). The
/// directories `kept` (a namespace kept from an earlier render, with its
/// kustomization) are listed at their tree's root and get no new one; the
/// files in them need not be among `files`.
pub fn kustomizations<'a>(
    files: impl Iterator<Item = &'a Path>,
    kept: &[&Path],
    roots: &[String],
) -> Vec<(PathBuf, String)> {
    use crate::base::paths::{cmp_plain, slash_text};
    // Each path as text, with one `/` between names: a tree has tens of
    // thousands, borrowed where they are plain already (isvc builds them
    // so), and compared as text in the order of paths (`base::paths`).
    let kept: Vec<Cow<'_, str>> = kept.iter().map(|d| slash_text(d)).collect();
    let kept: BTreeSet<(&str, &str)> = kept.iter().map(|d| split_root(d, roots)).collect();
    let texts: Vec<Cow<'_, str>> = files.map(|f| slash_text(f)).collect();
    // (tree root, directory, file in it relative to the directory). A
    // tree's paths come sorted, and stay so split: each list is then one
    // run of them, found without a map keyed by paths.
    let mut split: Vec<(&str, &str, &str)> = Vec::new();
    // Whether the directory of the path before was kept: a directory's
    // paths come one after another.
    let mut last: Option<((&str, &str), bool)> = None;
    for text in &texts {
        let (root, rest) = split_root(text, roots);
        let (first, below) = rest.split_once('/').unwrap_or((rest, ""));
        if first.is_empty() || first == GITOPS_DIR || rest.rsplit('/').next() == Some(KUSTOMIZATION) {
            continue;
        }
        let in_kept = match last {
            Some((dir, in_kept)) if dir == (root, first) => in_kept,
            _ => {
                let in_kept = kept.contains(&(root, first));
                last = Some(((root, first), in_kept));
                in_kept
            }
        };
        // A kept directory's files are left to its kustomization.
        if !in_kept {
            split.push((root, first, below));
        }
    }
    let order = |a: &(&str, &str, &str), b: &(&str, &str, &str)| {
        cmp_plain(a.0.as_bytes(), b.0.as_bytes())
            .then_with(|| cmp_plain(a.1.as_bytes(), b.1.as_bytes()))
            .then_with(|| cmp_plain(a.2.as_bytes(), b.2.as_bytes()))
    };
    if !split.is_sorted_by(|a, b| order(a, b).is_le()) {
        split.sort_unstable_by(order);
    }
    split.dedup();
    // Each tree's root and its directories, kept or listed.
    let mut resources: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for &(root, dir) in &kept {
        resources.entry(root).or_default().push(dir);
    }
    let mut out = Vec::new();
    for tree in split.chunk_by(|a, b| a.0 == b.0) {
        let root = Path::new(tree[0].0);
        let listed = resources.entry(tree[0].0).or_default();
        for dir in tree.chunk_by(|a, b| a.1 == b.1) {
            let files: Vec<&str> = dir.iter().map(|(_, _, p)| *p).collect();
            out.push((root.join(dir[0].1).join(KUSTOMIZATION), kustomization(&files)));
            listed.push(dir[0].1);
        }
    }
    // (A kept directory's files were left out above: the two lists of a
    // root never share a directory.)
    for (root, mut dirs) in resources {
        // Prerequisites first, so `kubectl apply -k` creates them first too.
        dirs.sort_by_key(|r| (*r != CLUSTER_DIR, *r));
        out.push((Path::new(root).join(KUSTOMIZATION), kustomization(&dirs)));
    }
    out
}

/// A tree's root among `roots` and the path below it.
fn split_root<'p>(path: &'p str, roots: &'p [String]) -> (&'p str, &'p str) {
    for r in roots.iter().filter(|r| !r.is_empty()) {
        if let Some(rest) = path.strip_prefix(r.as_str()).and_then(|rest| rest.strip_prefix('/')) {
            return (r, rest);
        }
    }
    ("", path)
}

fn kustomization(resources: &[&str]) -> String {
    let value = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    });
    format!("{HEADER_PREFIX}. Do not edit: run `isvc render` to update.\n{}", crate::base::yaml::to_string(&value))
}

/// One tree the engine must apply: its cluster (if the platform lists
/// clusters), the namespaces it holds, and its workloads whose
/// `spec.replicas` an autoscaler owns once they exist.
pub struct Target<'a> {
    pub cluster: Option<&'a crate::model::platform::Cluster>,
    pub namespaces: BTreeSet<String>,
    /// Sorted, each once.
    pub autoscaled: Vec<&'a ObjectId>,
}

impl<'a> Target<'a> {
    /// The autoscaled workloads of each namespace, in order: each
    /// namespace's Application or Kustomization lists its own (at 10,000
    /// services, 9,000 workloads, which every one of them would otherwise
    /// go through).
    fn autoscaled_by_namespace(&self) -> BTreeMap<&'a str, Vec<&'a ObjectId>> {
        let mut by: BTreeMap<&str, Vec<&ObjectId>> = BTreeMap::new();
        for id in &self.autoscaled {
            if let Some(ns) = id.namespace.as_deref() {
                by.entry(ns).or_default().push(id);
            }
        }
        by
    }
}

/// The JSON pointer of the replica count an autoscaler owns.
pub const REPLICAS_POINTER: &str = "/spec/replicas";

/// The workloads among `objects` that carry `spec.replicas` and that a
/// HorizontalPodAutoscaler or a KEDA ScaledObject scales: the rendered count
/// is what they start with, and after that the autoscaler's.
pub fn autoscaled<'a>(objects: impl Iterator<Item = &'a Object>) -> BTreeSet<ObjectId> {
    let mut with_replicas = BTreeSet::new();
    let mut targets = Vec::new();
    for o in objects {
        // (Read through `view`: a compile that checks a namespace in parts
        // gives the skeletons of its objects.)
        if o.view().at(REPLICAS_POINTER).is_some() {
            with_replicas.insert(&o.id);
        }
        if let Some((kind, name)) = crate::k8s::index::scale_target(o) {
            let api_version =
                o.view().at("/spec/scaleTargetRef/apiVersion").and_then(|v| v.as_str()).unwrap_or("apps/v1");
            targets.push(ObjectId::new(api_version, kind, o.id.namespace.as_deref(), name));
        }
    }
    targets.into_iter().filter(|id| with_replicas.contains(id)).collect()
}

/// The engine's own objects: an Argo CD Application (an ApplicationSet for
/// several clusters), or a Flux GitRepository with Kustomizations.
pub fn engine_objects(
    platform: &Platform,
    engine: Engine,
    targets: &[Target<'_>],
    source: Option<&str>,
) -> Result<Vec<Object>, Diagnostic> {
    let Some(g) = &platform.gitops else {
        return Err(Diagnostic::error(format!(
            "--gitops {} needs a `gitops` section in the platform file: name, repoURL, revision and path",
            engine_name(engine)
        ))
        .help("isvc does not guess where the output lives or where it goes; see docs/gitops.md"));
    };
    let object = |api_version: &str, kind: &str, ns: &str, name: &str, value: Value| {
        Object::new(ObjectId::new(api_version, kind, Some(ns), name), value).from_source(source).engine_object()
    };
    let timeout = platform.defaults.probes.startup_timeout_seconds.max(600) + 600;
    let out = match engine {
        Engine::Argocd => argocd(g, platform, targets, &object)?,
        Engine::Flux => flux(g, targets, timeout, &object),
    };
    unique_names(&out)?;
    Ok(out)
}

fn engine_name(engine: Engine) -> &'static str {
    match engine {
        Engine::Argocd => "argocd",
        Engine::Flux => "flux",
    }
}

type MakeObject<'a> = dyn Fn(&str, &str, &str, &str, Value) -> Object + Sync + 'a;

/// Automated sync with prune (cascading delete) and self-heal, retries with
/// exponential backoff, server-side apply. With autoscaled workloads, also
/// `RespectIgnoreDifferences=true`: without it `ignoreDifferences` only hides
/// the diff and the next sync still applies the committed replica count
/// (argoproj/argo-cd `docs/user-guide/sync-options.md`, "Respect ignore
/// differences configs").
fn sync_policy(respect_ignore_differences: bool) -> Value {
    let mut options = vec!["ServerSideApply=true", "PruneLast=true"];
    if respect_ignore_differences {
        options.push("RespectIgnoreDifferences=true");
    }
    json!({
        "automated": {"prune": true, "selfHeal": true},
        "syncOptions": options,
        "retry": {"limit": 10, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "10m"}},
    })
}

/// Argo CD `ignoreDifferences` on `spec.replicas` of each autoscaled
/// workload (argoproj/argo-cd `docs/user-guide/diffing.md`). By name, so a
/// service scaled to zero (no autoscaler) still gets its count from git.
/// RespectIgnoreDifferences only acts on objects that exist: the first sync
/// creates each workload with the rendered count.
fn ignore_differences<'a>(workloads: impl Iterator<Item = &'a ObjectId>) -> Vec<Value> {
    let unique: BTreeSet<&ObjectId> = workloads.collect();
    unique
        .into_iter()
        .map(|id| {
            json!({
                "group": id.group(), "kind": id.kind, "namespace": id.namespace, "name": id.name,
                "jsonPointers": [REPLICAS_POINTER],
            })
        })
        .collect()
}

/// A Flux Kustomization `spec.ignore` rule for `spec.replicas` of each
/// autoscaled workload (fluxcd/kustomize-controller
/// `docs/spec/v1/kustomizations.md`, "Ignore Rules"; the field exists from
/// kustomize-controller v1.9.0). Target fields are regular expressions, so
/// the name is anchored and its dots escaped.
fn flux_ignore<'a>(workloads: impl Iterator<Item = &'a ObjectId>) -> Vec<Value> {
    workloads
        .map(|id| {
            json!({
                "paths": [REPLICAS_POINTER],
                "target": {"group": id.group(), "kind": id.kind, "name": format!("^{}$", id.name.replace('.', "\\."))},
            })
        })
        .collect()
}

fn argocd(
    g: &GitOps,
    platform: &Platform,
    targets: &[Target<'_>],
    object: &MakeObject<'_>,
) -> Result<Vec<Object>, Diagnostic> {
    if g.layout == Layout::Namespaces {
        return argocd_per_namespace(g, platform, targets, object);
    }
    let a = &g.argocd;
    let finalizers = json!(["resources-finalizer.argocd.argoproj.io"]);
    let metadata = json!({"name": g.name, "namespace": a.namespace, "finalizers": finalizers});
    let ignored = ignore_differences(targets.iter().flat_map(|t| t.autoscaled.iter().copied()));
    let any_ignored = !ignored.is_empty();
    let mut spec_extra = serde_json::Map::new();
    if any_ignored {
        spec_extra.insert("ignoreDifferences".to_string(), Value::Array(ignored));
    }
    if platform.clusters.is_empty() {
        let server = single_server(g)?;
        let mut app = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": metadata,
            "spec": {
                "project": a.project,
                "source": {"repoURL": g.repo_url, "targetRevision": g.revision, "path": g.path},
                "destination": {"server": server},
                "syncPolicy": sync_policy(any_ignored),
            },
        });
        if let Some(spec) = app["spec"].as_object_mut() {
            spec.extend(spec_extra);
        }
        return Ok(vec![object("argoproj.io/v1alpha1", "Application", &a.namespace, &g.name, app)]);
    }
    let mut elements = Vec::new();
    for t in targets {
        let Some(c) = t.cluster else { continue };
        let server = cluster_server(c)?;
        elements.push(json!({"cluster": c.name, "server": server, "path": format!("{}/{}", g.path.trim_end_matches('/'), c.name)}));
    }
    let mut set = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": g.name, "namespace": a.namespace},
        "spec": {
            "goTemplate": true,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"list": {"elements": elements}}],
            "template": {
                "metadata": {"name": format!("{}-{{{{.cluster}}}}", g.name), "finalizers": finalizers},
                "spec": {
                    "project": a.project,
                    "source": {"repoURL": g.repo_url, "targetRevision": g.revision, "path": "{{.path}}"},
                    "destination": {"server": "{{.server}}"},
                    "syncPolicy": sync_policy(any_ignored),
                },
            },
        },
    });
    if let Some(spec) = set.pointer_mut("/spec/template/spec").and_then(Value::as_object_mut) {
        spec.extend(spec_extra);
    }
    Ok(vec![object("argoproj.io/v1alpha1", "ApplicationSet", &a.namespace, &g.name, set)])
}

fn single_server(g: &GitOps) -> Result<&str, Diagnostic> {
    g.argocd.server.as_deref().ok_or_else(|| {
        Diagnostic::error("gitops.argocd.server is not set: which cluster should Argo CD deploy to?")
            .help("use https://kubernetes.default.svc for the cluster Argo CD runs in")
    })
}

fn cluster_server(c: &crate::model::platform::Cluster) -> Result<&str, Diagnostic> {
    c.server.as_deref().ok_or_else(|| {
        Diagnostic::error(format!("cluster \"{}\" has no `server`: Argo CD needs its API server URL", c.name))
    })
}

/// `gitops.layout: namespaces`: one Application for each tree's `_cluster`
/// and one per namespace directory, each building only its directory's
/// kustomization.yaml. A kustomize build costs time quadratic in the objects
/// it holds (kubernetes-sigs/kustomize `api/resmap/reswrangler.go`: `Append`
/// compares each new object's ID with every object already accumulated), and
/// Argo CD gives a manifest generation 60 seconds
/// (argoproj/argo-cd `docs/operator-manual/argocd-cmd-params-cm.yaml`,
/// `controller.repo.server.timeout.seconds`) and the kustomize process 90
/// (`docs/operator-manual/high_availability.md`, `ARGOCD_EXEC_TIMEOUT`), so
/// one build over a large fleet fails where per-namespace builds pass.
/// Each Application ignores the replica counts of its own namespace's
/// autoscaled workloads only. Applications are not ordered among
/// themselves: a namespace's first sync that needs a Namespace or CRD from
/// `_cluster` fails and is retried with backoff until `_cluster` has synced.
fn argocd_per_namespace(
    g: &GitOps,
    platform: &Platform,
    targets: &[Target<'_>],
    object: &MakeObject<'_>,
) -> Result<Vec<Object>, Diagnostic> {
    let a = &g.argocd;
    let root = g.path.trim_end_matches('/');
    let mut out = Vec::new();
    for t in targets {
        let (prefix, base, server) = match t.cluster {
            Some(c) => (format!("{}-{}", g.name, c.name), format!("{root}/{}", c.name), cluster_server(c)?),
            None if platform.clusters.is_empty() => (g.name.clone(), root.to_string(), single_server(g)?),
            None => continue,
        };
        let units: Vec<(String, &str, Option<&str>)> =
            std::iter::once((format!("{prefix}-cluster"), CLUSTER_DIR, None))
                .chain(t.namespaces.iter().map(|ns| (format!("{prefix}-{ns}"), ns.as_str(), Some(ns.as_str()))))
                .collect();
        let autoscaled = t.autoscaled_by_namespace();
        // Made on every core, in order: a render after one change makes
        // every namespace's again (at 10,000 services in 20 namespaces,
        // each lists some 450 workloads), once its compile is done.
        let apps = units.into_par_iter().map(|(name, dir, ns)| {
            let ignored = ignore_differences(ns.and_then(|ns| autoscaled.get(ns)).into_iter().flatten().copied());
            let mut app = json!({
                "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                "metadata": {"name": name, "namespace": a.namespace, "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
                "spec": {
                    "project": a.project,
                    "source": {"repoURL": g.repo_url, "targetRevision": g.revision, "path": format!("{base}/{dir}")},
                    "destination": {"server": server},
                    "syncPolicy": sync_policy(!ignored.is_empty()),
                },
            });
            if !ignored.is_empty() {
                app["spec"]["ignoreDifferences"] = Value::Array(ignored);
            }
            object("argoproj.io/v1alpha1", "Application", &a.namespace, &name, app)
        });
        out.par_extend(apps);
    }
    Ok(out)
}

/// Objects one kustomize build may hold before it risks Argo CD's 60-second
/// manifest generation: measured between 4,000 and 5,600 (docs/gitops.md,
/// "Large fleets"; build time grows at least with the square of the objects).
pub const ARGOCD_BUILD_LIMIT: usize = 4000;

/// Warnings for the Argo CD builds that hold more than
/// [`ARGOCD_BUILD_LIMIT`] objects: with `layout: tree` a cluster's whole
/// tree, with `layout: namespaces` one namespace directory; the objects of
/// the namespaces `reused` (by cluster, `None` without clusters, and
/// namespace) counted as well.
pub fn build_size_warnings<'a>(
    g: &GitOps,
    objects: impl IntoIterator<Item = &'a Object>,
    reused: &[(Option<&'a str>, &'a str, usize)],
) -> Vec<Diagnostic> {
    let mut builds: BTreeMap<(Option<&str>, Option<&str>), usize> = BTreeMap::new();
    let dir = |namespace: Option<&'a str>| match g.layout {
        Layout::Tree => None,
        Layout::Namespaces => Some(namespace.unwrap_or(CLUSTER_DIR)),
    };
    for o in objects.into_iter().filter(|o| !o.bootstrap) {
        *builds.entry((o.cluster.as_deref(), dir(o.id.namespace.as_deref()))).or_default() += 1;
    }
    for (cluster, namespace, count) in reused {
        *builds.entry((*cluster, dir(Some(namespace)))).or_default() += count;
    }
    let mut out = Vec::new();
    for ((cluster, dir), count) in builds.into_iter().filter(|(_, n)| *n > ARGOCD_BUILD_LIMIT) {
        let place = match cluster {
            Some(c) => format!(" of cluster {c}"),
            None => String::new(),
        };
        let (what, help) = match dir {
            None => (
                format!("the tree{place}"),
                "set `gitops.layout: namespaces` in the platform file: one Application per namespace directory (docs/gitops.md, \"Large fleets\")",
            ),
            Some(d) => (
                format!("directory {d}{place}"),
                "spread its services over more namespaces, or raise Argo CD's controller.repo.server.timeout.seconds and ARGOCD_EXEC_TIMEOUT (docs/gitops.md, \"Large fleets\")",
            ),
        };
        out.push(
            Diagnostic::warning(format!(
                "Argo CD builds {what} in one kustomize build of {count} objects, which can outlast its 60-second timeout above about {ARGOCD_BUILD_LIMIT}"
            ))
            .help(help),
        );
    }
    out
}

/// Two engine objects with one name would overwrite each other. Names join
/// `gitops.name`, the cluster and the namespace (or `cluster` for the
/// prerequisites) with `-`, so a namespace named `cluster`, or cluster `a`
/// with namespace `b-c` next to cluster `a-b` with namespace `c`, collide.
fn unique_names(objects: &[Object]) -> Result<(), Diagnostic> {
    let mut seen = BTreeSet::new();
    for o in objects {
        if !seen.insert(&o.id) {
            return Err(Diagnostic::error(format!(
                "two GitOps objects would both be {} {}/{}",
                o.id.kind,
                o.id.namespace.as_deref().unwrap_or_default(),
                o.id.name
            ))
            .help(
                "the names join gitops.name, the cluster and the namespace with `-` (`cluster` for `_cluster`): \
                 rename the namespace or the cluster so that they differ",
            ));
        }
    }
    Ok(())
}

/// A GitRepository, and per tree a Kustomization for the cluster-scoped
/// prerequisites plus one per namespace that `dependsOn` it; all prune,
/// wait for health, and allow the startup budget as timeout.
fn flux(g: &GitOps, targets: &[Target<'_>], timeout: i32, object: &MakeObject<'_>) -> Vec<Object> {
    let f = &g.flux;
    let mut out = vec![object(
        "source.toolkit.fluxcd.io/v1",
        "GitRepository",
        &f.namespace,
        &g.name,
        json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": g.name, "namespace": f.namespace},
            "spec": {"interval": "1m", "url": g.repo_url, "ref": {"branch": g.revision}},
        }),
    )];
    for t in targets {
        let prefix = match t.cluster {
            Some(c) => format!("{}-{}", g.name, c.name),
            None => g.name.clone(),
        };
        let base = match t.cluster {
            Some(c) => format!("./{}/{}", g.path.trim_matches('/'), c.name),
            None => format!("./{}", g.path.trim_matches('/')),
        };
        let autoscaled = t.autoscaled_by_namespace();
        let kustomization = |name: &str, path: String, depends: Option<&str>, ns: Option<&str>| {
            let mut spec = json!({
                "interval": f.interval,
                "sourceRef": {"kind": "GitRepository", "name": g.name},
                "path": path,
                "prune": true,
                "wait": true,
                "timeout": format!("{timeout}s"),
                "retryInterval": "1m",
            });
            if let Some(d) = depends {
                spec["dependsOn"] = json!([{"name": d}]);
            }
            let ignore = flux_ignore(ns.and_then(|ns| autoscaled.get(ns)).into_iter().flatten().copied());
            if !ignore.is_empty() {
                spec["ignore"] = Value::Array(ignore);
            }
            if let Some(secret) = t.cluster.and_then(|c| c.kube_config_secret.as_ref()) {
                spec["kubeConfig"] = json!({"secretRef": {"name": secret}});
            }
            object(
                "kustomize.toolkit.fluxcd.io/v1",
                "Kustomization",
                &f.namespace,
                name,
                json!({
                    "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                    "metadata": {"name": name, "namespace": f.namespace},
                    "spec": spec,
                }),
            )
        };
        let prerequisites = format!("{prefix}-cluster");
        out.push(kustomization(&prerequisites, format!("{base}/{CLUSTER_DIR}"), None, None));
        // Made on every core, in order, as Argo CD's Applications are.
        out.par_extend(t.namespaces.par_iter().map(|ns| {
            kustomization(&format!("{prefix}-{ns}"), format!("{base}/{ns}"), Some(&prerequisites), Some(ns.as_str()))
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::value::At;

    use crate::model::objects::test_object as object;

    #[test]
    fn annotating_twice_adds_no_sync_option_twice() {
        let mut objects = [object(json!({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
            "metadata": {"name": "q", "annotations": {"argocd.argoproj.io/sync-options": "Delete=false"}}}))];
        annotate(&mut objects, Engine::Argocd);
        annotate(&mut objects, Engine::Argocd);
        let options = objects[0].value.at("/metadata/annotations/argocd.argoproj.io~1sync-options");
        assert_eq!(options, Some(&json!("Delete=false,SkipDryRunOnMissingResource=true")));
    }

    #[test]
    fn an_annotated_object_drops_the_file_written_ahead() {
        let mut objects = [
            object(json!({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
                "metadata": {"name": "q", "namespace": "ml"}})),
            object(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ml"}})),
        ];
        objects.iter_mut().for_each(Object::write_ahead);
        annotate(&mut objects, Engine::Argocd);
        assert_eq!(objects[0].file, None);
        assert!(objects[0].to_file().contains("SkipDryRunOnMissingResource=true"));
        // Not annotated: its file stands.
        assert_eq!(objects[1].file.as_deref(), Some(objects[1].to_file().as_str()));
    }

    #[test]
    fn autoscaled_workloads_are_those_with_replicas_and_an_autoscaler() {
        let objects = [
            object(
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "namespace": "ml"}, "spec": {"replicas": 3}}),
            ),
            object(
                json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "a", "namespace": "ml"},
                "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "a"}}}),
            ),
            object(
                json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "big", "namespace": "ml"}, "spec": {"replicas": 2}}),
            ),
            object(
                json!({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "big", "namespace": "ml"},
                "spec": {"scaleTargetRef": {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "big"}}}),
            ),
            // Scaled to zero: no autoscaler, git keeps the count.
            object(
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "zero", "namespace": "ml"}, "spec": {"replicas": 0}}),
            ),
        ];
        let ids = autoscaled(objects.iter());
        let names: Vec<&str> = ids.iter().map(|id| id.name.as_str()).collect();
        assert_eq!(names, ["a", "big"]);
        let argo = ignore_differences(ids.iter());
        assert_eq!(
            argo[1],
            json!({"group": "leaderworkerset.x-k8s.io", "kind": "LeaderWorkerSet", "namespace": "ml", "name": "big", "jsonPointers": ["/spec/replicas"]})
        );
        let flux = flux_ignore(ids.iter());
        assert_eq!(flux[0]["target"], json!({"group": "apps", "kind": "Deployment", "name": "^a$"}));
    }

    #[test]
    fn argocd_sync_options_add_to_the_prune_protection() {
        let mut objects = [object(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": "h100", "annotations": {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"}}}))];
        annotate(&mut objects, Engine::Argocd);
        assert_eq!(
            objects[0].value["metadata"]["annotations"]["argocd.argoproj.io/sync-options"],
            "Prune=false,Delete=false,SkipDryRunOnMissingResource=true"
        );
    }

    #[test]
    fn builds_over_the_limit_are_warned_about() {
        let g: GitOps = serde_json::from_value(
            json!({"name": "inference", "repoURL": "r", "revision": "main", "path": "rendered"}),
        )
        .unwrap();
        let config_maps = |ns: &'static str, n: usize| {
            (0..n).map(move |i| {
                object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}"), "namespace": ns}}))
            })
        };
        let mut objects: Vec<Object> = config_maps("a", 2500).chain(config_maps("b", 2500)).collect();
        let tree = build_size_warnings(&g, &objects, &[]);
        assert_eq!(tree.len(), 1);
        assert_eq!(
            tree[0].message,
            "Argo CD builds the tree in one kustomize build of 5000 objects, which can outlast its 60-second timeout above about 4000"
        );
        let per_namespace = GitOps { layout: Layout::Namespaces, ..g.clone() };
        assert!(build_size_warnings(&per_namespace, &objects, &[]).is_empty());
        // The objects of a namespace reused from an earlier compile count
        // with its directory's, and with the tree's.
        let reused = build_size_warnings(&per_namespace, &objects, &[(None, "a", 1600), (None, "c", 100)]);
        assert_eq!(reused.len(), 1);
        assert!(reused[0].message.starts_with("Argo CD builds directory a in one kustomize build of 4100 objects"));
        let tree = build_size_warnings(&g, &objects[..3000], &[(None, "c", 1001)]);
        assert!(tree[0].message.starts_with("Argo CD builds the tree in one kustomize build of 4001 objects"));
        assert!(build_size_warnings(&g, &objects[..3000], &[(None, "c", 1000)]).is_empty());
        // A cluster's reused objects count in that cluster's tree alone.
        let in_cluster = |o: &Object| Object { cluster: Some("east".into()), ..o.clone() };
        let east: Vec<Object> = objects[..3000].iter().map(in_cluster).collect();
        assert!(build_size_warnings(&g, &east, &[(Some("west"), "c", 1001)]).is_empty());
        let tree = build_size_warnings(&g, &east, &[(Some("east"), "c", 1001)]);
        assert!(
            tree[0]
                .message
                .starts_with("Argo CD builds the tree of cluster east in one kustomize build of 4001 objects"),
            "{}",
            tree[0].message
        );
        objects.extend(config_maps("a", 2000).map(|mut o| {
            o.id.name.push('x');
            o
        }));
        let big = build_size_warnings(&per_namespace, &objects, &[]);
        assert_eq!(big.len(), 1);
        assert!(
            big[0].message.starts_with("Argo CD builds directory a in one kustomize build of 4500 objects"),
            "{}",
            big[0].message
        );
    }

    fn paths(texts: &[&str]) -> Vec<PathBuf> {
        texts.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn kustomizations_list_exactly_the_files() {
        let files = paths(&[
            "_cluster/customresourcedefinition-x.yaml",
            "team-a/chat/deployment.yaml",
            "team-a/_namespace/resourcequota-team-a.yaml",
            "_gitops/application-inference.yaml",
        ]);
        let k: BTreeMap<PathBuf, String> =
            kustomizations(files.iter().map(PathBuf::as_path), &[], &[]).into_iter().collect();
        assert_eq!(k.len(), 3);
        assert!(k[Path::new("kustomization.yaml")].ends_with("resources:\n- _cluster\n- team-a\n"));
        assert!(
            k[Path::new("team-a/kustomization.yaml")]
                .ends_with("resources:\n- _namespace/resourcequota-team-a.yaml\n- chat/deployment.yaml\n")
        );
        assert!(k[Path::new("_cluster/kustomization.yaml")].contains("- customresourcedefinition-x.yaml\n"));
        // In any order, a path given twice listed once: as from a sorted tree.
        let mut sorted = files.clone();
        sorted.sort();
        let twice: Vec<PathBuf> = files.iter().chain(&files).cloned().collect();
        assert_eq!(
            kustomizations(twice.iter().map(PathBuf::as_path), &[], &[]),
            kustomizations(sorted.iter().map(PathBuf::as_path), &[], &[])
        );
        let again: BTreeMap<PathBuf, String> =
            kustomizations(sorted.iter().map(PathBuf::as_path), &[], &[]).into_iter().collect();
        assert_eq!(again, k);
    }

    #[test]
    fn a_kept_directory_is_listed_at_its_root_and_gets_no_new_kustomization() {
        let files = paths(&[
            "_cluster/customresourcedefinition-x.yaml",
            "team-a/chat/deployment.yaml",
            "team-b/code/deployment.yaml",
            "team-b/code/service.yaml",
            "team-c/kustomization.yaml",
            "team-c/code/service.yaml",
        ]);
        let all: BTreeMap<PathBuf, String> =
            kustomizations(files.iter().map(PathBuf::as_path), &[], &[]).into_iter().collect();
        let kept = [Path::new("team-b"), Path::new("team-c")];
        // Its files given or not: in an incremental render, they are.
        for given in [
            files.clone(),
            files.iter().filter(|f| !f.starts_with("team-b") && !f.starts_with("team-c")).cloned().collect(),
        ] {
            let with_kept: BTreeMap<PathBuf, String> =
                kustomizations(given.iter().map(PathBuf::as_path), &kept, &[]).into_iter().collect();
            let mut expected = all.clone();
            expected.remove(Path::new("team-b/kustomization.yaml"));
            expected.remove(Path::new("team-c/kustomization.yaml"));
            assert_eq!(with_kept, expected, "{given:?}");
        }
        assert!(all[Path::new("kustomization.yaml")].ends_with("- _cluster\n- team-a\n- team-b\n- team-c\n"));
        // Each tree of several keeps its own.
        let trees = paths(&["a/team-a/x/deployment.yaml", "b/team-a/x/deployment.yaml"]);
        let roots = ["a".to_string(), "b".to_string()];
        let k: BTreeMap<PathBuf, String> =
            kustomizations(trees.iter().map(PathBuf::as_path), &[Path::new("b/team-a")], &roots).into_iter().collect();
        let names: Vec<&str> = k.keys().filter_map(|p| p.to_str()).collect();
        assert_eq!(names, ["a/kustomization.yaml", "a/team-a/kustomization.yaml", "b/kustomization.yaml"]);
        assert!(k[Path::new("b/kustomization.yaml")].ends_with("resources:\n- team-a\n"));
    }
}
