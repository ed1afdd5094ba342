//! Engine rules: what the vLLM server needs to start and stop on a real
//! GPU cluster, which an overridden template or a platform file can take
//! away again.

use crate::base::value::At;
use serde_json::Value;

use super::{
    CommandLine, Context, Finding, Rule, Severity, container_name, containers, init_containers, pod_templates,
};
use crate::model::engine::{HF_HUB_OFFLINE, HF_TOKEN, HF_TOKEN_LEGACY, HF_TOKEN_PATH, is_gated};
use crate::model::objects::Object;

pub const GATED_MODEL_WITHOUT_TOKEN: Rule = Rule::new(
    "ISVC050",
    Severity::Warning,
    "the server downloads a gated model (Llama, Mistral, Gemma) without a Hugging Face token",
)
.symptom(
    "the pod crash-loops at start-up with `401 Client Error` / `GatedRepoError: Access to model ... is restricted`; \
     the service never becomes ready",
)
.fix(
    "give the platform a token Secret (defaults.huggingFace.tokenSecret: {name, key}, or per tenant), or the service \
     an HF_TOKEN in spec.env taken from a Secret (valueFrom.secretKeyRef); create the Secret in the namespace",
)
.explain(
    "Repositories such as meta-llama/*, mistralai/* and google/gemma-* are gated: the files download only for an \
     account that accepted the licence, with its token. huggingface_hub reads the token from the HF_TOKEN \
     environment variable (huggingface/huggingface_hub docs/source/en/package_reference/environment_variables.md). \
     Without it the download fails and vLLM exits; the kubelet restarts it forever. A server that runs with \
     HF_HUB_OFFLINE (weights already on a volume) needs no token, nor does a model loaded from a path; with \
     the platform's shared model cache it is the download Job that needs it (its pods fail and the servers \
     wait in Init).",
);

pub const DRAIN_CUT_SHORT: Rule = Rule::new(
    "ISVC051",
    Severity::Warning,
    "a model server without a preStop drain, or whose grace period ends before its drain does",
)
.symptom(
    "every rollout, scale-down and node drain fails the requests in flight: clients see connection resets and 502/503 \
     from the gateway, long generations are cut off mid-stream",
)
.fix(
    "keep the built-in lifecycle.preStop and terminationGracePeriodSeconds in overridden templates (drain.pre_stop, \
     drain.termination_grace_period_seconds); tune them with the platform's defaults.drain",
)
.explain(
    "A deleted pod leaves the Service's endpoints and the Gateway's pool while its containers get SIGTERM; both \
     happen at once, so without a preStop hook new requests still arrive at a server that is stopping. vLLM before \
     0.18 aborts every request in flight on SIGTERM; 0.18 and later wait up to --shutdown-timeout seconds (default \
     0: abort). The kubelet sends SIGKILL when terminationGracePeriodSeconds (default 30) run out, preStop time \
     included, so the grace period must exceed the preStop sleep plus --shutdown-timeout (vllm-project/vllm PR \
     #43208, docs/deployment/k8s.md). isvc renders a preStop sleep, --shutdown-timeout where the image's tag says \
     vLLM 0.18 or later, and a grace period covering both.",
);

pub const ROLLOUT_STOPS_ONLY_POD: Rule = Rule::new(
    "ISVC052",
    Severity::Warning,
    "a model server that may run as a single pod is rolled out by stopping that pod before its replacement is ready",
)
.symptom(
    "every rollout (a new image, a changed argument, an adapter) is an outage as long as the model's load time: \
     minutes for a small model, an hour for a large one; clients get 503 until the new pod is Ready",
)
.fix(
    "let the Deployment surge: maxSurge 1, maxUnavailable 0 (isvc's default for one-pod services); if the cluster \
     truly has no GPU to spare, say so with the platform's defaults.rollout.noSpareGpus and disable this rule",
)
.explain(
    "A Deployment whose lowest replica count is 1 (replicas: 1, or an autoscaler whose minReplicas is 1) runs a \
     single pod whenever load is low. With maxSurge 0 and maxUnavailable 1 (or the Recreate strategy) a rollout \
     deletes that pod first and only then starts the new one, which must pull the image and load the weights before \
     it is Ready. Surging starts the new pod first and needs one spare set of GPUs (and room in the ResourceQuota, \
     which ISVC019 checks) for the length of the rollout.",
);

pub const MODEL_CACHE_UNBOUNDED: Rule = Rule::new(
    "ISVC053",
    Severity::Warning,
    "the model is downloaded into an emptyDir without a sizeLimit (or one below the weights), or without an \
     ephemeral-storage request",
)
.symptom(
    "weights fill whatever node disk the scheduler picked: other pods are evicted under DiskPressure, or the node \
     runs out of disk mid-download; a sizeLimit below the weights evicts the pod (`Usage of EmptyDir volume \
     \"cache\" exceeds the limit`) and it downloads again, forever",
)
.fix(
    "keep the built-in cache volume (security_volumes, with its sizeLimit) and the container's requests in \
     overridden templates; set the platform's defaults.modelCache.sizeLimit when the estimate from the model's name \
     is wrong",
)
.explain(
    "vLLM downloads the weights into the Hugging Face cache (HF_HOME), an emptyDir on the node's disk. Without an \
     ephemeral-storage request the scheduler does not know a 405B model needs some 400Gi there; without a sizeLimit \
     nothing bounds it. The kubelet evicts a pod whose emptyDir exceeds its sizeLimit, with a grace period of 1 \
     second (kubernetes/kubernetes pkg/kubelet/eviction, emptyDirLimitEviction), so the limit must hold the whole \
     snapshot. isvc sizes both from the model's name (weights plus 10% plus 10Gi). Pods admitted by a Kueue queue \
     get no request: Kueue holds back pods that request a resource their ClusterQueue does not cover.",
);

pub const RAY_WAIT_SHORTER_THAN_STARTUP: Rule = Rule::new(
    "ISVC054",
    Severity::Warning,
    "a multi-node group's Ray wait (--ray_init_timeout, 300s by default) ends before its startup budget, or a worker \
     has no startup probe",
)
.symptom(
    "on cold nodes the group never forms: the leader logs `Waiting for all ray workers to be active timed out.` (or a \
     worker `Ray worker starts timeout`), exits 1, and the LeaderWorkerSet recreates every pod of the group, again \
     and again",
)
.fix(
    "pass --ray_init_timeout with the startup budget to multi-node-serving.sh on the leader and the workers, and give \
     workers a startup probe with the same budget (isvc's LeaderWorkerSet template does both)",
)
.explain(
    "vLLM's examples/online_serving/multi-node-serving.sh makes the leader wait ray_init_timeout seconds (default \
     300) for all ray_cluster_size nodes, then `exit 1`; a worker retries `ray start` as long, then exits 1. A cold \
     node may spend longer than that pulling the image. With restartPolicy RecreateGroupOnPodRestart \
     (kubernetes-sigs/lws api/leaderworkerset/v1), one exit recreates the whole group, which starts cold again. \
     Waiting as long as the startup probe allows makes the group's budget the one limit.",
);

/// `max-loras` above this preallocates GPU memory for more adapters than a
/// batch usually mixes.
pub const MANY_LORA_SLOTS: i64 = 16;

pub const LORA_SLOTS: Rule = Rule::new(
    "ISVC055",
    Severity::Warning,
    "a LoRA config whose GPU slots (max-loras) are many, or whose host-memory slots (max-cpu-loras) hold fewer \
     adapters than it serves or than max-loras",
)
.symptom(
    "a large max-loras takes GPU memory from the KV cache at start-up (fewer concurrent requests, or `No available \
     memory for the cache blocks`); max-cpu-loras below max-loras stops vLLM at start-up (`max_cpu_loras ... must be \
     >= max_loras`); below the adapter count, adapters are evicted and reloaded from disk or the Hub on use",
)
.fix(
    "keep max-loras small (the platform's defaults.lora.maxLoras, 4 by default) and max-cpu-loras at the number of \
     adapters, as isvc renders them",
)
.explain(
    "vLLM allocates, for every LoRA-wrapped layer, dense buffers for max_loras adapters of max_lora_rank at start-up \
     (vllm-project/vllm vllm/lora/layers/base_linear.py, create_lora_weights), whether or not that many are ever \
     used in one batch, and before it sizes the KV cache. Adapters beyond max_loras wait in a host-memory cache of \
     max_cpu_loras (vllm/config/lora.py; it must be at least max_loras) and are copied to a GPU slot when a batch \
     needs them, which is cheap. So the GPU slots should be few and the host slots should hold every adapter.",
);

pub const OFFLINE_WITHOUT_REVISION: Rule = Rule::new(
    "ISVC056",
    Severity::Warning,
    "a server that runs with HF_HUB_OFFLINE loads a Hugging Face model id without --revision",
)
.symptom(
    "the server exits at start-up with `LocalEntryNotFoundError` (cannot find the requested files in the local cache) \
     although the weights are on the volume, or serves whatever snapshot `refs/main` points at",
)
.fix("give the service spec.revision: the commit id the cache was filled with")
.explain(
    "With HF_HUB_OFFLINE, vLLM resolves the model id to a cached snapshot with its --revision \
     (vllm-project/vllm vllm/engine/arg_utils.py and vllm/transformers_utils/repo_utils.py, get_model_path; \
     snapshot_download with local_files_only). Without --revision it looks up the branch `main` in the cache's \
     refs/ folder, which huggingface_hub only writes when the cache was filled by branch name, not by commit id \
     (huggingface/huggingface_hub _snapshot_download.py). A pinned revision also makes the rendered output say \
     which weights run.",
);

pub const CACHE_OF_A_BRANCH: Rule = Rule::new(
    "ISVC071",
    Severity::Warning,
    "the model cache downloads a branch or tag, not a commit",
)
.symptom(
    "the servers keep the weights the branch had when the download Job first ran: a new upstream commit never \
     reaches them, and caches filled at other times (another namespace, another cluster) hold other weights \
     under the same name",
)
.fix("pin spec.revision to the commit id of the weights (the `main` branch's current commit, for example)")
.explain(
    "The download Job of the shared model cache runs once per model and revision: its name comes from its spec, \
     so a branch name that stays the same renders the same Job, which never runs again, and the servers resolve \
     `refs/main` offline to whatever it fetched (huggingface/huggingface_hub _snapshot_download.py writes \
     refs/<branch> when it downloads by branch name). A commit id names the weights themselves: changing it renders \
     a new Job and a rollout, and the output says which weights run.",
);

/// Whether `revision` is a full commit id (40 hexadecimal digits).
fn is_commit(revision: &str) -> bool {
    revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The engine rules over one object.
pub(crate) fn check(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    if o.id.kind == "Deployment" {
        rollout(cx, o, out);
    }
    if o.id.kind == "LeaderWorkerSet" {
        ray_wait(o, out);
    }
    if o.id.kind == "ConfigMap" {
        lora_slots(o, out);
    }
    for template in pod_templates(o) {
        // Downloads run in init containers too (the model cache's Jobs).
        // Each container's command line is read once for every rule here.
        for c in init_containers(template) {
            let cl = CommandLine::of(c);
            cached_branch(o, &cl, out);
            gated_model(o, c, &cl, out);
        }
        for c in containers(template) {
            let cl = CommandLine::of(c);
            cached_branch(o, &cl, out);
            gated_model(o, c, &cl, out);
            offline_revision(o, c, &cl, out);
            drain(o, template, c, &cl, out);
            model_cache(o, template, c, &cl, out);
        }
    }
}

/// Seconds a preStop hook waits: a `sleep` action, or an `exec` command that
/// runs `sleep N`; `None` without a hook, 0 for one that does not sleep.
fn pre_stop_seconds(c: &Value) -> Option<i64> {
    let hook = c.at("/lifecycle/preStop")?;
    if let Some(s) = hook.at("/sleep/seconds").and_then(Value::as_i64) {
        return Some(s);
    }
    let words: Vec<&str> = hook
        .at("/exec/command")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .flat_map(str::split_whitespace)
        .collect();
    let at = words.iter().position(|w| *w == "sleep" || w.ends_with("/sleep"));
    Some(at.and_then(|i| words.get(i + 1)).and_then(|n| n.parse().ok()).unwrap_or(0))
}

fn drain(o: &Object, template: &Value, c: &Value, cl: &CommandLine<'_>, out: &mut Vec<Finding>) {
    if cl.model().is_none() {
        return;
    }
    let name = container_name(c);
    let grace = template.at("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(30);
    let Some(pre_stop) = pre_stop_seconds(c) else {
        out.push(Finding::new(
            DRAIN_CUT_SHORT,
            o,
            format!(
                "container \"{name}\" has no preStop hook: it gets SIGTERM while the Service and Gateway still route to it"
            ),
        ));
        return;
    };
    let shutdown: i64 = cl.value(&["--shutdown-timeout"]).and_then(|v| v.parse().ok()).unwrap_or(0);
    if grace < pre_stop + shutdown {
        out.push(Finding::new(
            DRAIN_CUT_SHORT,
            o,
            format!(
                "container \"{name}\" drains for {}s (preStop {pre_stop}s + --shutdown-timeout {shutdown}s) but is killed after terminationGracePeriodSeconds {grace}s",
                pre_stop + shutdown
            ),
        ));
    }
}

/// The value of environment variable `name` in container `c`: the value,
/// `Some("")` for one taken from elsewhere, `None` when not set.
pub(crate) fn env<'v>(c: &'v Value, name: &str) -> Option<&'v str> {
    let e = c
        .field("env")
        .and_then(Value::as_array)?
        .iter()
        .rev()
        .find(|e| e.field("name").and_then(Value::as_str) == Some(name))?;
    Some(e.field("value").and_then(Value::as_str).unwrap_or_default())
}

fn rollout(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    let Some(w) = cx.workload_of(o) else { return };
    let serves = pod_templates(o).into_iter().any(|t| containers(t).any(|c| CommandLine::of(c).model().is_some()));
    if w.min_replicas != 1 || !serves {
        return;
    }
    let strategy = o.value.at("/spec/strategy");
    if strategy.and_then(|s| s.field("type")).and_then(Value::as_str) == Some("Recreate") {
        out.push(Finding::new(
            ROLLOUT_STOPS_ONLY_POD,
            o,
            "strategy Recreate stops the only pod before its replacement has loaded the model",
        ));
        return;
    }
    let field = |k: &str| {
        strategy.and_then(|s| s.at(&format!("/rollingUpdate/{k}"))).cloned().unwrap_or_else(|| Value::from("25%"))
    };
    let surge = super::scaling::scaled(Some(&field("maxSurge")), 1, true);
    let unavailable = super::scaling::scaled(Some(&field("maxUnavailable")), 1, false);
    if surge == Some(0) && unavailable.is_some_and(|u| u >= 1) {
        out.push(Finding::new(
            ROLLOUT_STOPS_ONLY_POD,
            o,
            format!(
                "maxSurge {} and maxUnavailable {} at {} replica: a rollout stops the only pod before its replacement has loaded the model",
                super::show(Some(&field("maxSurge"))),
                super::show(Some(&field("maxUnavailable"))),
                w.min_replicas
            ),
        ));
    }
}

fn model_cache(o: &Object, template: &Value, c: &Value, cl: &CommandLine<'_>, out: &mut Vec<Finding>) {
    let Some(model) = cl.model() else { return };
    let offline = env(c, HF_HUB_OFFLINE).is_some_and(|v| !v.is_empty() && v != "0");
    let Some(home) = env(c, "HF_HUB_CACHE").or(env(c, "HF_HOME")).filter(|h| h.starts_with('/')) else { return };
    if model.starts_with('/') || offline {
        return;
    }
    let under = |path: &str| home == path || home.starts_with(&format!("{}/", path.trim_end_matches('/')));
    let Some(mount) = c
        .field("volumeMounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| m.field("mountPath").and_then(Value::as_str).is_some_and(under))
        .max_by_key(|m| m.field("mountPath").and_then(Value::as_str).map_or(0, str::len))
    else {
        return;
    };
    let name = mount.field("name").and_then(Value::as_str).unwrap_or_default();
    let volume = template
        .at("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v.field("name").and_then(Value::as_str) == Some(name));
    let Some(empty_dir) = volume.and_then(|v| v.field("emptyDir")) else { return };
    let weights = cl.model_size().map(|s| s.weight_bytes());
    let about = weights.map(|w| format!(" (about {})", super::gib(w))).unwrap_or_default();
    let container = container_name(c);
    match empty_dir.field("sizeLimit").and_then(super::quantity) {
        None => out.push(Finding::new(
            MODEL_CACHE_UNBOUNDED,
            o,
            format!(
                "container \"{container}\" downloads {model}{about} into emptyDir \"{name}\", which has no sizeLimit"
            ),
        )),
        Some(limit) if weights.is_some_and(|w| (limit.nanos() as f64) / 1e9 < w) => out.push(Finding::new(
            MODEL_CACHE_UNBOUNDED,
            o,
            format!(
                "container \"{container}\" downloads {model}{about} into emptyDir \"{name}\", whose sizeLimit {} is smaller",
                super::show(empty_dir.field("sizeLimit"))
            ),
        )),
        Some(_) => {}
    }
    let queued = o.value.at("/metadata/labels").and_then(|l| l.get(crate::model::labels::QUEUE_LABEL)).is_some();
    if !queued && c.at("/resources/requests/ephemeral-storage").is_none() {
        out.push(Finding::new(
            MODEL_CACHE_UNBOUNDED,
            o,
            format!(
                "container \"{container}\" downloads {model}{about} to the node's disk but requests no ephemeral-storage"
            ),
        ));
    }
}

fn lora_slots(o: &Object, out: &mut Vec<Finding>) {
    let Some(config) = o.value.at("/data/lora.yaml").and_then(Value::as_str) else { return };
    let key = |k: &str| config.lines().find_map(|l| l.strip_prefix(k)?.strip_prefix(':')?.trim().parse::<i64>().ok());
    let adapters = config
        .lines()
        .skip_while(|l| !l.starts_with("lora-modules:"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .count() as i64;
    let gpu = key("max-loras").unwrap_or(1);
    let cpu = key("max-cpu-loras").unwrap_or(gpu);
    if gpu > MANY_LORA_SLOTS {
        out.push(Finding::new(
            LORA_SLOTS,
            o,
            format!("max-loras {gpu} preallocates GPU memory for {gpu} adapters in every LoRA layer (more than {MANY_LORA_SLOTS})"),
        ));
    }
    if cpu < gpu {
        out.push(Finding::new(
            LORA_SLOTS,
            o,
            format!("max-cpu-loras {cpu} is below max-loras {gpu}: vLLM refuses to start"),
        ));
    } else if cpu < adapters {
        out.push(Finding::new(
            LORA_SLOTS,
            o,
            format!(
                "max-cpu-loras {cpu} holds fewer than the {adapters} adapters served: the rest are reloaded on use"
            ),
        ));
    }
}

/// Seconds a container's startup probe allows.
fn startup_budget(c: &Value) -> Option<i64> {
    let p = c.field("startupProbe")?;
    let n = |k: &str, d: i64| p.field(k).and_then(Value::as_i64).unwrap_or(d);
    Some(n("periodSeconds", 10) * n("failureThreshold", 3))
}

fn ray_wait(o: &Object, out: &mut Vec<Finding>) {
    let templates = pod_templates(o);
    let all = || templates.iter().flat_map(|t| containers(t));
    let Some(budget) = all().filter_map(startup_budget).max() else { return };
    for c in all() {
        let cl = CommandLine::of(c);
        let Some(at) = cl.words.iter().position(|w| w.ends_with("multi-node-serving.sh")) else { continue };
        let role = cl.words.get(at + 1).copied().unwrap_or_default();
        let wait: i64 = cl.value(&["--ray_init_timeout"]).and_then(|v| v.parse().ok()).unwrap_or(300);
        let name = container_name(c);
        if wait < budget {
            out.push(Finding::new(
                RAY_WAIT_SHORTER_THAN_STARTUP,
                o,
                format!(
                    "container \"{name}\" ({role}) waits {wait}s for the Ray cluster, less than the startup budget of {budget}s: a slow node restarts the whole group"
                ),
            ));
        }
        if role == "worker" && c.field("startupProbe").is_none() {
            out.push(Finding::new(
                RAY_WAIT_SHORTER_THAN_STARTUP,
                o,
                format!("container \"{name}\" (worker) has no startup probe"),
            ));
        }
    }
}

fn offline_revision(o: &Object, c: &Value, cl: &CommandLine<'_>, out: &mut Vec<Finding>) {
    let Some(model) = cl.model() else { return };
    let offline =
        env(c, HF_HUB_OFFLINE).is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"));
    if offline && !model.starts_with('/') && model.contains('/') && cl.value(&["--revision"]).is_none() {
        out.push(Finding::new(
            OFFLINE_WITHOUT_REVISION,
            o,
            format!(
                "container \"{}\" runs with HF_HUB_OFFLINE and loads {model} without --revision",
                container_name(c)
            ),
        ));
    }
}

/// A model-cache download (see derive::cache) of a branch or tag.
fn cached_branch(o: &Object, cl: &CommandLine<'_>, out: &mut Vec<Finding>) {
    let (Some(model), Some(revision)) = (cl.downloaded_repo(), cl.value(&["--revision"])) else { return };
    if !is_commit(revision) {
        out.push(Finding::new(
            CACHE_OF_A_BRANCH,
            o,
            format!("the download of {model} is of \"{revision}\", not a commit: the cache keeps what it had at the first run"),
        ));
    }
}

fn gated_model(o: &Object, c: &Value, cl: &CommandLine<'_>, out: &mut Vec<Finding>) {
    // A server names its model; a download (the model cache's Jobs) its
    // repository.
    let Some(model) = cl.model().or(cl.downloaded_repo()) else { return };
    if !is_gated(model) {
        return;
    }
    let offline =
        env(c, HF_HUB_OFFLINE).is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"));
    let token = env(c, HF_TOKEN).is_some()
        || env(c, HF_TOKEN_LEGACY).is_some()
        || env(c, HF_TOKEN_PATH).is_some()
        || cl.value(&["--hf-token"]).is_some();
    if !offline && !token {
        out.push(Finding::new(
            GATED_MODEL_WITHOUT_TOKEN,
            o,
            format!(
                "container \"{}\" downloads the gated model {model} with no HF_TOKEN; the download is refused",
                container_name(c)
            ),
        ));
    }
}
