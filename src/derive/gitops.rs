//! GitOps delivery: kustomize entry points for the output tree, apply
//! ordering, and the Argo CD or Flux objects that take over an Operator's
//! run-time duties — prune (cascading delete), self-heal, retries with
//! backoff, prerequisites before workloads.
//!
//! Everything is derived from the compiled objects and the platform file;
//! nothing about the repository or the destination is guessed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::base::diagnostics::Diagnostic;
use crate::model::objects::{CLUSTER_DIR, GITOPS_DIR, HEADER_PREFIX, Object, ObjectId};
use crate::model::platform::{Engine, GitOps, Platform};

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
            notes.push(("argocd.argoproj.io/sync-options", "SkipDryRunOnMissingResource=true"));
        }
        if notes.is_empty() {
            continue;
        }
        let Some(meta) = o.value.get_mut("metadata").and_then(Value::as_object_mut) else { continue };
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(map) = annotations.as_object_mut() {
            for (k, v) in notes {
                map.insert(k.to_string(), json!(v));
            }
        }
    }
}

/// The kustomization files of a tree: one per namespace directory, one for
/// `_cluster`, and one at each tree's root listing those directories.
/// `roots` are the trees' directories ("" for a single tree).
pub fn kustomizations<'a>(files: impl Iterator<Item = &'a PathBuf>, roots: &[String]) -> Vec<(PathBuf, String)> {
    // tree root -> directory -> files in it (relative to the directory)
    let mut dirs: BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<PathBuf>>> = BTreeMap::new();
    for f in files {
        let (root, rest) = split_root(f, roots);
        let mut parts = rest.components();
        let Some(first) = parts.next() else { continue };
        let first = PathBuf::from(first.as_os_str());
        if first == Path::new(GITOPS_DIR) || rest.file_name().is_some_and(|n| n == KUSTOMIZATION) {
            continue;
        }
        let inner: PathBuf = parts.collect();
        dirs.entry(root).or_default().entry(first).or_default().insert(inner);
    }
    let mut out = Vec::new();
    for (root, entries) in dirs {
        let mut resources = Vec::new();
        for (dir, files) in entries {
            let listed: Vec<String> = files.iter().map(|p| slash(p)).collect();
            out.push((root.join(&dir).join(KUSTOMIZATION), kustomization(&listed)));
            resources.push(slash(&dir));
        }
        // Prerequisites first, so `kubectl apply -k` creates them first too.
        resources.sort_by_key(|r| (r != CLUSTER_DIR, r.clone()));
        out.push((root.join(KUSTOMIZATION), kustomization(&resources)));
    }
    out
}

fn split_root(path: &Path, roots: &[String]) -> (PathBuf, PathBuf) {
    for r in roots.iter().filter(|r| !r.is_empty()) {
        if let Ok(rest) = path.strip_prefix(r) {
            return (PathBuf::from(r), rest.to_path_buf());
        }
    }
    (PathBuf::new(), path.to_path_buf())
}

fn slash(p: &Path) -> String {
    p.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}

fn kustomization(resources: &[String]) -> String {
    let value = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    });
    format!("{HEADER_PREFIX}. Do not edit: run `isvc render` to update.\n{}", crate::base::yaml::to_string(&value))
}

/// One tree the engine must apply: its cluster (if the platform lists
/// clusters) and the namespaces it holds.
pub struct Target<'a> {
    pub cluster: Option<&'a crate::model::platform::Cluster>,
    pub namespaces: BTreeSet<String>,
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
    let object = |api_version: &str, kind: &str, ns: &str, name: &str, value: Value| Object {
        id: ObjectId::new(api_version, kind, Some(ns), name),
        value,
        owner: None,
        source: source.map(str::to_string),
        cluster: None,
        bootstrap: true,
    };
    let timeout = platform.defaults.probes.startup_timeout_seconds.max(600) + 600;
    match engine {
        Engine::Argocd => argocd(g, platform, targets, &object),
        Engine::Flux => Ok(flux(g, targets, timeout, &object)),
    }
}

fn engine_name(engine: Engine) -> &'static str {
    match engine {
        Engine::Argocd => "argocd",
        Engine::Flux => "flux",
    }
}

type MakeObject<'a> = dyn Fn(&str, &str, &str, &str, Value) -> Object + 'a;

/// Automated sync with prune (cascading delete) and self-heal, retries with
/// exponential backoff, server-side apply. No `ignoreDifferences` on
/// replicas: isvc renders `spec.replicas` only for services without an
/// autoscaler, where the rendered value must win.
fn sync_policy() -> Value {
    json!({
        "automated": {"prune": true, "selfHeal": true},
        "syncOptions": ["ServerSideApply=true", "PruneLast=true"],
        "retry": {"limit": 10, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "10m"}},
    })
}

fn argocd(
    g: &GitOps,
    platform: &Platform,
    targets: &[Target<'_>],
    object: &MakeObject<'_>,
) -> Result<Vec<Object>, Diagnostic> {
    let a = &g.argocd;
    let finalizers = json!(["resources-finalizer.argocd.argoproj.io"]);
    let metadata = json!({"name": g.name, "namespace": a.namespace, "finalizers": finalizers});
    if platform.clusters.is_empty() {
        let Some(server) = &a.server else {
            return Err(Diagnostic::error("gitops.argocd.server is not set: which cluster should Argo CD deploy to?")
                .help("use https://kubernetes.default.svc for the cluster Argo CD runs in"));
        };
        let app = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": metadata,
            "spec": {
                "project": a.project,
                "source": {"repoURL": g.repo_url, "targetRevision": g.revision, "path": g.path},
                "destination": {"server": server},
                "syncPolicy": sync_policy(),
            },
        });
        return Ok(vec![object("argoproj.io/v1alpha1", "Application", &a.namespace, &g.name, app)]);
    }
    let mut elements = Vec::new();
    for t in targets {
        let Some(c) = t.cluster else { continue };
        let Some(server) = &c.server else {
            return Err(Diagnostic::error(format!(
                "cluster \"{}\" has no `server`: Argo CD needs its API server URL",
                c.name
            )));
        };
        elements.push(json!({"cluster": c.name, "server": server, "path": format!("{}/{}", g.path.trim_end_matches('/'), c.name)}));
    }
    let set = json!({
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
                    "syncPolicy": sync_policy(),
                },
            },
        },
    });
    Ok(vec![object("argoproj.io/v1alpha1", "ApplicationSet", &a.namespace, &g.name, set)])
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
        let kustomization = |name: &str, path: String, depends: Option<&str>| {
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
        out.push(kustomization(&prerequisites, format!("{base}/{CLUSTER_DIR}"), None));
        for ns in &t.namespaces {
            out.push(kustomization(&format!("{prefix}-{ns}"), format!("{base}/{ns}"), Some(&prerequisites)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kustomizations_list_exactly_the_files() {
        let files: Vec<PathBuf> = [
            "_cluster/customresourcedefinition-x.yaml",
            "team-a/chat/deployment.yaml",
            "team-a/_namespace/resourcequota-team-a.yaml",
            "_gitops/application-inference.yaml",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let k: BTreeMap<PathBuf, String> = kustomizations(files.iter(), &[]).into_iter().collect();
        assert_eq!(k.len(), 3);
        assert!(k[Path::new("kustomization.yaml")].ends_with("resources:\n- _cluster\n- team-a\n"));
        assert!(
            k[Path::new("team-a/kustomization.yaml")]
                .ends_with("resources:\n- _namespace/resourcequota-team-a.yaml\n- chat/deployment.yaml\n")
        );
        assert!(k[Path::new("_cluster/kustomization.yaml")].contains("- customresourcedefinition-x.yaml\n"));
    }
}
