//! The shared model cache: a ReadWriteMany PersistentVolumeClaim per
//! namespace, filled once per model and revision by a download Job, mounted
//! read-only by every server, which then runs offline.
//!
//! - The Job runs the Hugging Face CLI in init containers, `hf download
//!   <model> --revision <revision> --cache-dir <hub cache>`
//!   (huggingface/huggingface_hub `src/huggingface_hub/cli/download.py`;
//!   `huggingface-cli` no longer works from huggingface_hub 1.0 on), then
//!   the same for every adapter given as a Hub id (see
//!   [`cached_adapters`]), then a container writes the marker. The vLLM
//!   image's entrypoint is the API server, so each gives its own command. It reads the token as a
//!   file (`HF_TOKEN_PATH`), runs non-root with a read-only root, retries
//!   (`backoffLimit`) within a deadline (`activeDeadlineSeconds`), and
//!   writes a marker file once the snapshot is complete.
//! - The servers mount the claim read-only at the Hugging Face hub cache
//!   (`$HF_HOME/hub`, huggingface_hub
//!   `docs/source/en/package_reference/environment_variables.md`,
//!   `HF_HUB_CACHE`) and run with `HF_HUB_OFFLINE=1`: vLLM then resolves
//!   `--model <id> --revision <rev>` to the cached snapshot without a
//!   network call or a write (vllm-project/vllm `vllm/engine/arg_utils.py`,
//!   `EngineArgs.__post_init__`; `vllm/transformers_utils/repo_utils.py`,
//!   `get_model_path`). A snapshot downloaded by commit id has no
//!   `refs/main`, so the revision goes to vLLM too (`--revision`, see
//!   [`crate::derive::engine`]).
//! - Ordering: an init container in every server pod waits for the marker.
//!   This holds under any apply order (Argo CD, Flux, kubectl). No Argo CD
//!   sync wave: Argo CD starts a wave only when the one before is healthy,
//!   and a claim of a `WaitForFirstConsumer` class stays `Pending`, which
//!   Argo CD counts as Progressing (argoproj/gitops-engine
//!   `pkg/health/health_pvc.go`), until a pod of a later wave uses it; a
//!   Job is healthy only once it completes, so one long download would hold
//!   back every other change of the Application.
//! - The Job's name carries a hash of its whole spec: a Job's pod template
//!   is immutable (kubernetes/kubernetes
//!   `pkg/apis/batch/validation/validation.go`, `ValidateJobSpecUpdate`), so
//!   a new revision, image or token is a new Job, and the old one is pruned.
//!   No `ttlSecondsAfterFinished`: a GitOps engine would recreate a Job the
//!   TTL controller deleted, and download again.
//! - The alternative with the same interface, `modelCache.image`: an OCI
//!   image per model and revision holding its hub cache, mounted read-only
//!   at the same place as an image volume (`volumes[].image`,
//!   kubernetes/enhancements `keps/sig-node/4639-oci-volume-source`). The
//!   kubelet pulls it before the containers start, so there is no claim, no
//!   Job and no wait.

use crate::base::value::At;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::EnvVar;
use serde::Serialize;
use serde_json::{Value, json};

use crate::model::engine::{HF_HUB_OFFLINE, HF_TOKEN, HF_TOKEN_PATH, TOKEN_DIR, TOKEN_FILE};
use crate::model::labels::MANAGED_BY;
use crate::model::objects::{Object, ObjectId};
use crate::model::platform::{Platform, SharedModelCache};
use crate::model::v1alpha2::InferenceServiceSpec;

/// The volume of the claim, in servers and Jobs.
pub const VOLUME: &str = "model-cache";
/// Where the claim is mounted: the Hugging Face hub cache under the
/// `HF_HOME` every pod gets (see [`crate::derive::security`]).
pub const MOUNT_PATH: &str = "/home/vllm/.cache/huggingface/hub";
/// Directory of the markers the Jobs write, inside the claim.
pub const MARKER_DIR: &str = ".isvc-complete";
/// The revision downloaded when a service names none: the repository's
/// default branch, which the CLI records in `refs/main` for vLLM to resolve.
pub const DEFAULT_REVISION: &str = "main";
/// `app.kubernetes.io/component` of the download Jobs and their pods.
pub const COMPONENT: &str = "model-download";
/// Name of the init container that waits for the model.
pub const WAIT_CONTAINER: &str = "wait-for-model";
/// Name of the (first) download container, an init container of the Job.
pub const DOWNLOAD_CONTAINER: &str = "download";
/// Name of the Job's container that writes the marker after the downloads.
pub const MARK_CONTAINER: &str = "mark-complete";

/// The last step of a download Job, once every download succeeded: the
/// marker, as a fixed script (the path comes from the environment).
const MARK_SCRIPT: &str = "mkdir -p \"$(dirname \"$ISVC_MODEL_MARKER\")\"\n\
touch \"$ISVC_MODEL_MARKER\"\n";
/// The wait, as a fixed script.
const WAIT_SCRIPT: &str = "until [ -f \"$ISVC_MODEL_MARKER\" ]; do\n\
  echo \"waiting for $ISVC_MODEL_MARKER (the model download Job)\"\n\
  sleep 10\n\
done\n";

/// A service's use of the shared cache.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CachePlan {
    /// The claim in the service's namespace.
    pub claim: String,
    /// The download Job's name.
    pub job: String,
    /// The model and the revision downloaded.
    pub model: String,
    pub revision: String,
    /// The marker file the Job writes when the snapshot is complete.
    pub marker: String,
    /// The claim (a PersistentVolumeClaim) and the Job, as Kubernetes writes them.
    pub claim_object: Value,
    pub job_object: Value,
}

/// Whether `model` is a Hugging Face id the cache can hold: not a path in
/// the container, nor a URL (`s3://bucket/model` for
/// `--load-format runai_streamer`, which streams from object storage).
pub fn cacheable(model: &str) -> bool {
    !model.is_empty() && !model.starts_with(['/', '.', '~']) && !model.contains("://")
}

/// The marker of `model` at `revision` (with `adapters`): one per model,
/// revision and adapter set, so Jobs of the same snapshots share it.
pub fn marker(model: &str, revision: &str, adapters: &[&str]) -> String {
    let mut key = format!("models--{}@{}", model.replace('/', "--"), revision.replace('/', "--"));
    if !adapters.is_empty() {
        key.push_str(&format!("+adapters-{:08x}", fnv1a(adapters.join(" ").as_bytes()) & 0xffff_ffff));
    }
    format!("{MOUNT_PATH}/{MARKER_DIR}/{key}")
}

/// The adapters of `spec` the Job downloads: those given as Hugging Face
/// ids. vLLM resolves an adapter id with `snapshot_download`
/// (vllm-project/vllm `vllm/lora/utils.py`, `get_adapter_absolute_path`),
/// which offline finds the cached snapshot through `refs/main`.
pub fn cached_adapters(spec: &InferenceServiceSpec) -> Vec<&str> {
    spec.adapters.iter().map(|a| a.source.as_str()).filter(|s| cacheable(s)).collect()
}

/// What a server pod needs from the cache: the environment that keeps it
/// offline, and the init container that waits for the model.
pub struct ServerSide {
    pub env: Vec<EnvVar>,
    pub volume: Value,
    pub mount: Value,
    /// The wait for the download Job; none for an image volume.
    pub init_container: Option<Value>,
}

/// The settings a Job and an init container share with the servers.
pub struct PodShape<'a> {
    pub image: &'a str,
    pub image_pull_policy: &'a str,
    pub pod_security: &'a Value,
    pub container_security: &'a Value,
    /// isvc's own environment (home, caches, temporary files).
    pub env: &'a [EnvVar],
    /// The writable volumes (home, caches, tmp) and their mounts.
    pub volumes: &'a [Value],
    pub mounts: &'a [Value],
    /// The token Secret's volume and mount, if the platform gives one.
    pub token: Option<&'a (Value, Value)>,
    pub pod_annotations: &'a BTreeMap<String, String>,
}

/// The cache plan of a service, if its namespace has a cache and its model
/// is a Hugging Face id.
pub fn plan(
    spec: &InferenceServiceSpec,
    platform: &Platform,
    namespace: &str,
    shape: &PodShape<'_>,
) -> Option<(Option<CachePlan>, ServerSide)> {
    let cache = platform.model_cache_of(namespace)?;
    if !cacheable(&spec.base_model) {
        return None;
    }
    let revision = spec.revision.clone().unwrap_or_else(|| DEFAULT_REVISION.to_string());
    // HF_HUB_CACHE is where huggingface_hub looks anyway ($HF_HOME/hub);
    // said explicitly, the mount and the variable visibly agree.
    let offline = vec![
        EnvVar { name: "HF_HUB_CACHE".into(), value: Some(MOUNT_PATH.into()), value_from: None },
        EnvVar { name: HF_HUB_OFFLINE.into(), value: Some("1".into()), value_from: None },
    ];
    let mount = json!({"name": VOLUME, "mountPath": MOUNT_PATH, "readOnly": true});
    if let Some(image) = &cache.image {
        // The kubelet pulls the image before any container starts
        // (kubernetes/kubernetes `pkg/volume/image/image.go`, KEP 4639):
        // nothing to wait for, nothing to download.
        let reference = image_reference(&image.reference, &spec.base_model, &revision);
        let volume =
            json!({"name": VOLUME, "image": {"reference": reference, "pullPolicy": image.pull_policy.as_str()}});
        return Some((None, ServerSide { env: offline, volume, mount, init_container: None }));
    }
    let size = cache.size.as_ref()?;
    let marker = marker(&spec.base_model, &revision, &cached_adapters(spec));
    let job_spec = job_spec(spec, cache, &revision, &marker, shape);
    let job = job_name(&spec.base_model, &job_spec);
    let mut labels = json!({
        "app.kubernetes.io/component": COMPONENT,
        MANAGED_BY.0: MANAGED_BY.1,
    });
    // In a namespace Kueue manages, the Job waits for admission in the
    // tenant's queue like the servers: its pods count against the queue's
    // quota, and it is not left suspended.
    if let Some((queue, class)) = crate::derive::tenancy::namespace_queue(platform, namespace) {
        labels[crate::model::labels::QUEUE_LABEL] = json!(queue);
        if let Some(class) = class {
            labels[crate::model::labels::PRIORITY_LABEL] = json!(class);
        }
    }
    let job_object = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job, "namespace": namespace, "labels": labels},
        "spec": job_spec,
    });
    let mut claim_spec = json!({
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": size.0}},
    });
    if let Some(class) = &cache.storage_class_name {
        claim_spec["storageClassName"] = json!(class);
    }
    let claim_object = json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": cache.claim_name, "namespace": namespace, "labels": {MANAGED_BY.0: MANAGED_BY.1}},
        "spec": claim_spec,
    });
    let wait_env = vec![EnvVar { name: "ISVC_MODEL_MARKER".into(), value: Some(marker.clone()), value_from: None }];
    let server = ServerSide {
        env: offline,
        volume: json!({"name": VOLUME, "persistentVolumeClaim": {"claimName": cache.claim_name, "readOnly": true}}),
        mount,
        init_container: Some(json!({
            "name": WAIT_CONTAINER,
            "image": shape.image,
            "imagePullPolicy": shape.image_pull_policy,
            "command": ["/bin/sh", "-c", WAIT_SCRIPT],
            "env": wait_env,
            "resources": small_resources(),
            "securityContext": shape.container_security,
            "volumeMounts": [{"name": VOLUME, "mountPath": MOUNT_PATH, "readOnly": true}],
        })),
    };
    Some((
        Some(CachePlan {
            claim: cache.claim_name.clone(),
            job,
            model: spec.base_model.clone(),
            revision,
            marker,
            claim_object,
            job_object,
        }),
        server,
    ))
}

/// The image of `model` at `revision`: `reference` with `{model}` as the
/// model id in lower case (repository names are lower case) and
/// `{revision}` with `/` as `-` (a tag has no `/`).
pub fn image_reference(reference: &str, model: &str, revision: &str) -> String {
    reference.replace("{model}", &model.to_ascii_lowercase()).replace("{revision}", &revision.replace('/', "-"))
}

/// The resources of the wait container: it only polls a file.
fn small_resources() -> Value {
    json!({"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "32Mi"}})
}

fn job_spec(
    spec: &InferenceServiceSpec,
    cache: &SharedModelCache,
    revision: &str,
    marker: &str,
    shape: &PodShape<'_>,
) -> Value {
    let mut env: Vec<EnvVar> = shape.env.to_vec();
    let var = |name: &str, value: &str| EnvVar { name: name.into(), value: Some(value.into()), value_from: None };
    // hf_xet keeps a chunk cache of 10 GB by default under HF_HOME
    // (huggingface/xet-core `xet_runtime/config/groups/chunk_cache.rs`,
    // `DEFAULT_CHUNK_CACHE_CAPACITY`), on the pod's bounded cache emptyDir;
    // one download reads every chunk once, so none.
    env.push(var("HF_XET_CHUNK_CACHE_SIZE_BYTES", "0"));
    let mut volumes: Vec<Value> = shape.volumes.to_vec();
    let mut mounts: Vec<Value> = shape.mounts.to_vec();
    volumes.push(json!({"name": VOLUME, "persistentVolumeClaim": {"claimName": cache.claim_name}}));
    mounts.push(json!({"name": VOLUME, "mountPath": MOUNT_PATH}));
    // The service's own token, else the platform's as a file.
    match spec.env.iter().find(|e| e.name == HF_TOKEN) {
        Some(own) => env.push(own.clone()),
        None => {
            if let Some((volume, mount)) = shape.token {
                env.push(var(HF_TOKEN_PATH, &format!("{TOKEN_DIR}/{TOKEN_FILE}")));
                volumes.push(volume.clone());
                mounts.push(mount.clone());
            }
        }
    }
    let image = cache.downloader_image.as_deref().unwrap_or(shape.image);
    // One download per init container, in order, each the CLI itself with
    // its arguments (no shell: a model id or revision is never parsed as a
    // script); a failed one fails the pod, and the Job retries it.
    let download = |name: String, repo: &str, revision: Option<&str>| {
        let mut args = vec!["download".to_string(), repo.to_string()];
        if let Some(r) = revision {
            args.extend(["--revision".to_string(), r.to_string()]);
        }
        args.extend(["--cache-dir".to_string(), MOUNT_PATH.to_string()]);
        json!({
            "name": name,
            "image": image,
            "imagePullPolicy": shape.image_pull_policy,
            "command": ["hf"],
            "args": args,
            "env": env,
            "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "2Gi"}},
            "securityContext": shape.container_security,
            "volumeMounts": mounts,
        })
    };
    let mut downloads = vec![download(DOWNLOAD_CONTAINER.to_string(), &spec.base_model, Some(revision))];
    downloads.extend(
        cached_adapters(spec)
            .iter()
            .enumerate()
            .map(|(i, a)| download(format!("{DOWNLOAD_CONTAINER}-adapter-{}", i + 1), a, None)),
    );
    let mut template_meta = json!({"labels": {"app.kubernetes.io/component": COMPONENT, MANAGED_BY.0: MANAGED_BY.1}});
    if !shape.pod_annotations.is_empty() {
        template_meta["annotations"] = json!(shape.pod_annotations);
    }
    json!({
        "backoffLimit": cache.download_retries,
        "activeDeadlineSeconds": cache.download_deadline_seconds,
        "template": {
            "metadata": template_meta,
            "spec": {
                "restartPolicy": "Never",
                "automountServiceAccountToken": false,
                "securityContext": shape.pod_security,
                "initContainers": downloads,
                "containers": [{
                    "name": MARK_CONTAINER,
                    "image": image,
                    "imagePullPolicy": shape.image_pull_policy,
                    "command": ["/bin/sh", "-c", MARK_SCRIPT],
                    "env": [var("ISVC_MODEL_MARKER", marker)],
                    "resources": small_resources(),
                    "securityContext": shape.container_security,
                    "volumeMounts": [{"name": VOLUME, "mountPath": MOUNT_PATH}],
                }],
                "volumes": volumes,
            },
        },
    })
}

/// `download-<model>-<hash of the Job's spec>`, a DNS label: the model's
/// name part shortened so the whole fits 63 characters (the Job controller
/// copies the name into the `batch.kubernetes.io/job-name` label).
fn job_name(model: &str, spec: &Value) -> String {
    let hash = format!("{:010x}", fnv1a(spec.to_string().as_bytes()) & 0xff_ffff_ffff);
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    let mut slug: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    slug.truncate(63 - "download-".len() - 1 - hash.len());
    let slug = slug.trim_matches('-');
    if slug.is_empty() { format!("download-{hash}") } else { format!("download-{slug}-{hash}") }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// The claims and Jobs of every service's plan, once each (services of a
/// namespace share its claim, and those of one model and revision its Job).
/// `source` names the file each came from.
pub fn objects<'a>(plans: impl IntoIterator<Item = (&'a CachePlan, &'a str, Option<String>)>) -> Vec<Object> {
    let mut out: BTreeMap<ObjectId, Object> = BTreeMap::new();
    for (plan, namespace, source) in plans {
        for value in [&plan.claim_object, &plan.job_object] {
            let id = ObjectId::new(
                value["apiVersion"].as_str().unwrap_or_default(),
                value["kind"].as_str().unwrap_or_default(),
                Some(namespace),
                value.at("/metadata/name").and_then(Value::as_str).unwrap_or_default(),
            );
            out.entry(id.clone()).or_insert_with(|| Object::new(id, value.clone()).from_source(source.as_deref()));
        }
    }
    out.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_and_names() {
        assert_eq!(
            marker("Qwen/Qwen3-0.6B", "refs/pr/1", &[]),
            "/home/vllm/.cache/huggingface/hub/.isvc-complete/models--Qwen--Qwen3-0.6B@refs--pr--1"
        );
        assert_ne!(marker("a/b", "main", &["org/lora"]), marker("a/b", "main", &[]));
        let name = job_name("meta-llama/Llama-3.3-70B-Instruct", &json!({}));
        assert!(name.starts_with("download-llama-3-3-70b-instruct-"), "{name}");
        let long = job_name(&format!("org/{}", "x".repeat(200)), &json!({}));
        assert!(long.len() <= 63 && crate::base::names::dns1123_label(&long).is_ok(), "{long}");
        assert_ne!(job_name("a/b", &json!({"r": 1})), job_name("a/b", &json!({"r": 2})));
        assert!(cacheable("Qwen/Qwen3-8B") && !cacheable("/models/llama") && cacheable("gpt2"));
        assert!(!cacheable("s3://bucket/llama") && !cacheable("./models/x"));
    }
}
