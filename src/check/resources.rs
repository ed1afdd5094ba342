//! Resource rules: GPUs, shared memory, CPU and memory of model servers.

use crate::base::value::At;
use serde_json::Value;

use super::model;
use super::{
    CommandLine, Context, Finding, Rule, Severity, container_name, containers, namespace, pod_templates, quantity,
};
use crate::base::quantity::Quantity;
use crate::k8s::admission::{self, Effective};
use crate::model::objects::Object;

pub const GPU_REQUEST_NOT_LIMIT: Rule = Rule::new(
    "ISVC004",
    Severity::Error,
    "GPU requests must equal GPU limits; the API server rejects the pod otherwise",
)
.symptom(
    "the Deployment is created but its ReplicaSet cannot create pods: `kubectl describe rs` shows FailedCreate \
     with `must be equal to nvidia.com/gpu limit` (or `Limit must be set for non overcommitable resources`)",
)
.fix("set resources.limits.<vendor>/gpu to the same whole number as the request (or set only the limit: the request follows it)")
.explain(
    "GPUs are extended resources and cannot be overcommitted: Kubernetes requires a limit, and a request, if \
     given, must equal it. Since the pods are created by the ReplicaSet, not applied directly, a GitOps sync \
     looks successful while no pod ever starts.",
);

pub const SHM_MISSING: Rule = Rule::new(
    "ISVC012",
    Severity::Error,
    "a multi-GPU server needs a larger /dev/shm than the container runtime's 64 MiB default",
)
.symptom(
    "the server crashes while the workers start (`Bus error`, `NCCL error: unhandled system error`, or \
     `No space left on device` on /dev/shm) and the pod restarts in CrashLoopBackOff",
)
.fix(
    "mount a memory-backed emptyDir (medium: Memory, with a sizeLimit) at /dev/shm, as isvc's templates do \
     (defaults.resources.shmSizePerGpu)",
)
.explain(
    "With tensor (or pipeline, or data) parallelism above 1, vLLM runs one worker process per GPU; they \
     exchange tensors through NCCL and vLLM's shared-memory message queue, both of which use /dev/shm. A \
     container gets a 64 MiB /dev/shm unless the pod mounts one, which is too small for either. The pod's \
     hostIPC also provides one, but shares the node's IPC namespace.",
);

pub const SHM_TOO_SMALL: Rule = Rule::new(
    "ISVC013",
    Severity::Warning,
    "the /dev/shm of a multi-GPU server is smaller than 1Gi per worker",
)
.symptom(
    "collective operations fail under load or with long prompts (`NCCL WARN Error: failed to extend \
     /dev/shm`, `Bus error`) and the pod restarts",
)
.fix("raise the emptyDir sizeLimit of /dev/shm to at least 1Gi per GPU worker (isvc: defaults.resources.shmSizePerGpu)")
.explain(
    "NCCL's shared-memory transport, which carries traffic between GPUs that cannot reach each other over \
     NVLink or PCIe peer-to-peer, allocates its buffers in /dev/shm per pair of workers, and vLLM's message \
     queue adds its own. Below 1Gi per worker these allocations fail as the number of workers grows. The size \
     counts against the container's memory limit only as far as it is used.",
);

pub const CPU_LIMIT: Rule =
    Rule::new("ISVC014", Severity::Warning, "a CPU limit throttles the inference server and shows up as latency")
        .symptom(
            "time to first token and inter-token latency spike under load while CPU usage looks moderate; \
     container_cpu_cfs_throttled_periods_total climbs; the GPU sits idle waiting for the scheduler and tokenizer",
        )
        .fix(
            "remove resources.limits.cpu and keep the CPU request (isvc: leave defaults.resources.cpuLimitPerGpu \
     unset); if a LimitRange adds the limit, give it no default CPU limit for this namespace",
        )
        .explain(
            "The CPU limit is enforced with CFS quota in 100 ms periods: a process that uses its quota early in a \
     period is stopped until the next one. vLLM's scheduler, detokenizer and HTTP server are latency-critical \
     CPU work between GPU steps, so throttling stalls the GPU. The request already guarantees the CPU share; \
     the limit only takes away idle CPU. A LimitRange with a default CPU limit (or a max, which becomes the \
     default) adds one to every container that has none.",
        );

pub const MEMORY_BELOW_LOADING_PEAK: Rule =
    Rule::new("ISVC015", Severity::Warning, "the memory limit is below what the server needs while it loads the model")
        .symptom(
            "pods are OOMKilled (exit code 137, `Last State: Terminated, Reason: OOMKilled`) during start-up, or \
     loading crawls while the node re-reads evicted weight pages from disk, and the startup probe gives up",
        )
        .fix(
            "raise the memory limit to the estimate (isvc: defaults.resources.memoryPerGpu, which is per GPU) or serve \
     a quantized variant of the model",
        )
        .explain(
            "Estimate of host memory while loading: the weights (parameter count from the model id x 2 bytes, 1 for \
     FP8/INT8, 0.5 for AWQ/GPTQ/INT4), plus 4 GiB per worker process (Python, PyTorch, the CUDA context and \
     NCCL buffers; one worker per GPU with tensor parallelism), plus the size of a memory-backed /dev/shm. \
     The weights count in full, not divided over GPUs: every worker memory-maps the same safetensors files, \
     and their page cache is charged to the pod's memory cgroup once. Clean page cache can be reclaimed, so \
     a safetensors load just below the estimate may still succeed, slowly; loaders that materialise tensors \
     on the CPU (.bin or .pt checkpoints, quantisation at load, CPU offload) are OOM-killed. This is a \
     heuristic: a model id without a parameter count is estimated without the weights.",
        );

pub const WEIGHTS_EXCEED_GPU_MEMORY: Rule = Rule::new(
    "ISVC070",
    Severity::Warning,
    "the model's weights do not fit the GPU memory of one replica",
)
.symptom(
    "the server fails at start-up with `torch.OutOfMemoryError: CUDA out of memory` while it loads the weights, \
     or with `ValueError: No available memory for the cache blocks` after it, and the pod restarts in \
     CrashLoopBackOff",
)
.fix(
    "give the service more GPUs (spec.gpusPerReplica), an accelerator profile with more memory per GPU \
     (spec.accelerator), or a quantized variant of the model",
)
.explain(
    "vLLM shards the weights over the tensor and pipeline parallel ranks; each GPU must hold its shard within \
     --gpu-memory-utilization (0.9 by default) of its memory, and the KV cache needs what is left. isvc \
     estimates the weights from the parameter count in the model id (2 bytes per parameter, 1 for FP8/INT8, \
     0.5 for AWQ/GPTQ/INT4) and reads the memory of one GPU from the accelerator profile (the pod annotation \
     ai.example.com/gpu-memory, from the platform's accelerators[].memoryGiB). A MIG slice has the memory of \
     the slice, not of the whole GPU. A model id without a parameter count is not checked.",
);

/// The share of a GPU's memory vLLM takes by default
/// (vllm-project/vllm `vllm/config/cache.py`, `gpu_memory_utilization`).
const GPU_MEMORY_UTILIZATION: f64 = 0.9;

/// Whether `resource` is an accelerator: an extended resource (a name
/// with a domain outside `kubernetes.io`), such as `nvidia.com/gpu`, a MIG
/// slice `nvidia.com/mig-3g.40gb` or `amd.com/gpu`.
fn is_accelerator(resource: &str) -> bool {
    resource.split_once('/').is_some_and(|(domain, _)| !domain.ends_with("kubernetes.io"))
}

/// The resource rules over one object.
pub(crate) fn check(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    let limit_ranges = cx.objects_of_kind(namespace(o), "LimitRange");
    for template in pod_templates(o) {
        for c in containers(template) {
            gpus(o, c, out);
            let cl = CommandLine::of(c);
            // The rest is about model servers, not their sidecars.
            if !cl.serves_model() {
                continue;
            }
            let effective = admission::effective(c, limit_ranges);
            gpu_memory(o, template, c, &cl, out);
            cpu_limit(o, c, &effective, out);
            let shm = shared_memory(template, c);
            let workers = cl.ranks();
            if workers > 1 {
                shm_size(o, c, workers, &shm, out);
            }
            memory(o, c, &cl, workers, group_size(o), &shm, &effective, out);
        }
    }
}

/// The weights against the GPU memory of the ranks they are sharded over.
fn gpu_memory(o: &Object, template: &Value, c: &Value, cl: &CommandLine<'_>, out: &mut Vec<Finding>) {
    let annotation = template
        .at("/metadata/annotations")
        .and_then(|a| a.get(crate::model::labels::GPU_MEMORY_ANNOTATION))
        .and_then(Value::as_str);
    let (Some(per_gpu), Some(size)) = (annotation.and_then(|a| Quantity::parse(a).ok()), cl.model_size()) else {
        return;
    };
    let ranks = cl.ranks();
    let per_gpu = (per_gpu.nanos() / 1_000_000_000) as f64;
    let utilization = cl
        .value(&["--gpu-memory-utilization"])
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|u| *u > 0.0 && *u <= 1.0)
        .unwrap_or(GPU_MEMORY_UTILIZATION);
    let usable = per_gpu * utilization * ranks as f64;
    if size.weight_bytes() <= usable {
        return;
    }
    out.push(Finding::new(
        WEIGHTS_EXCEED_GPU_MEMORY,
        o,
        format!(
            "container \"{}\" loads {} onto {ranks} GPU{} of {} each, which hold {} at a memory utilization of {utilization}",
            container_name(c),
            size.describe(),
            if ranks == 1 { "" } else { "s" },
            super::gib(per_gpu),
            super::gib(usable),
        ),
    ));
}

fn gpus(o: &Object, c: &Value, out: &mut Vec<Finding>) {
    let name = container_name(c);
    let requests = c.at("/resources/requests").and_then(Value::as_object);
    let limits = c.at("/resources/limits").and_then(Value::as_object);
    for key in requests.into_iter().chain(limits).flat_map(|m| m.keys()).filter(|k| is_accelerator(k)) {
        let r = requests.and_then(|m| crate::base::value::field(m, key));
        let l = limits.and_then(|m| crate::base::value::field(m, key));
        let differ = match (r, l) {
            (Some(r), Some(l)) => quantity(r).zip(quantity(l)).is_none_or(|(r, l)| r != l),
            (_, None) => true,
            (None, Some(_)) => false,
        };
        if differ {
            out.push(Finding::new(
                GPU_REQUEST_NOT_LIMIT,
                o,
                format!("container \"{name}\" requests {key}={} but limits it to {}", super::show(r), super::show(l)),
            ));
            break;
        }
    }
}

/// What backs a container's /dev/shm.
enum Shm {
    /// Nothing: the runtime's 64 MiB.
    Missing,
    /// A memory-backed emptyDir, with its size limit if it has one.
    Memory(Option<Quantity>),
    /// Something else: a disk-backed emptyDir, a host path, the host's IPC.
    Other,
}

fn shared_memory(template: &Value, c: &Value) -> Shm {
    if template.at("/spec/hostIPC").and_then(Value::as_bool) == Some(true) {
        return Shm::Other;
    }
    let mounts = c.field("volumeMounts").and_then(Value::as_array).into_iter().flatten();
    let Some(volume) = mounts
        .filter(|m| m.field("mountPath").and_then(Value::as_str).map(|p| p.trim_end_matches('/')) == Some("/dev/shm"))
        .find_map(|m| m.field("name"))
    else {
        return Shm::Missing;
    };
    let volumes = template.at("/spec/volumes").and_then(Value::as_array).into_iter().flatten();
    match volumes.filter(|v| v.field("name") == Some(volume)).find_map(|v| v.field("emptyDir")) {
        Some(e) if e.field("medium").and_then(Value::as_str) == Some("Memory") => {
            Shm::Memory(e.field("sizeLimit").and_then(quantity))
        }
        _ => Shm::Other,
    }
}

fn shm_size(o: &Object, c: &Value, workers: i64, shm: &Shm, out: &mut Vec<Finding>) {
    let name = container_name(c);
    match shm {
        Shm::Missing => out.push(Finding::new(
            SHM_MISSING,
            o,
            format!("container \"{name}\" runs {workers} GPU workers but mounts nothing at /dev/shm (64Mi by default)"),
        )),
        Shm::Memory(Some(size)) if size.nanos() < workers as i128 * (1i128 << 30) * 1_000_000_000 => {
            out.push(Finding::new(
                SHM_TOO_SMALL,
                o,
                format!("container \"{name}\" runs {workers} GPU workers with a /dev/shm of {size}; give it at least {workers}Gi"),
            ))
        }
        _ => {}
    }
}

fn cpu_limit(o: &Object, c: &Value, effective: &Effective, out: &mut Vec<Finding>) {
    let Some(limit) = effective.limits.get("cpu") else { return };
    let name = container_name(c);
    let message = match effective.defaulted_limits.get("cpu") {
        Some(lr) => format!("container \"{name}\" gets a CPU limit of {limit} from the default of LimitRange {lr}"),
        None => format!("container \"{name}\" has a CPU limit of {limit}"),
    };
    out.push(Finding::new(CPU_LIMIT, o, message));
}

/// Pods one replica spans: a LeaderWorkerSet's group size
/// (`spec.leaderWorkerTemplate.size`, the leader included), else 1.
fn group_size(o: &Object) -> i64 {
    if o.id.kind != "LeaderWorkerSet" {
        return 1;
    }
    o.value.at("/spec/leaderWorkerTemplate/size").and_then(Value::as_i64).unwrap_or(1).max(1)
}

/// The loading peak of one pod. A replica over `pods` nodes splits the
/// weights and the GPU workers among them: with tensor parallelism over the
/// nodes each rank loads its shard, with pipeline parallelism each node its
/// layers (vllm-project/vllm `docs/serving/parallelism_scaling.md`), so one
/// pod holds about 1/`pods` of each.
#[allow(clippy::too_many_arguments)]
fn memory(
    o: &Object,
    c: &Value,
    cl: &CommandLine<'_>,
    workers: i64,
    pods: i64,
    shm: &Shm,
    effective: &Effective,
    out: &mut Vec<Finding>,
) {
    let Some(limit) = effective.limits.get("memory") else { return };
    let size = cl.model_size();
    let shm_bytes = match shm {
        Shm::Memory(Some(q)) => (q.nanos() / 1_000_000_000) as f64,
        _ => 0.0,
    };
    let workers = (workers + pods - 1) / pods;
    let weights = size.as_ref().map_or(0.0, |s| s.weight_bytes() / pods as f64);
    let peak = model::loading_peak_bytes(None, workers, shm_bytes) + weights;
    let limit_bytes = (limit.nanos() / 1_000_000_000) as f64;
    if limit_bytes >= peak {
        return;
    }
    let mut parts = Vec::new();
    if let Some(s) = &size {
        if pods > 1 {
            parts.push(format!(
                "weights {} of {} over {pods} nodes",
                super::gib(weights),
                super::gib(s.weight_bytes())
            ));
        } else {
            parts.push(format!("weights {}", super::gib(s.weight_bytes())));
        }
    }
    parts.push(format!(
        "{} x {workers} worker{}",
        super::gib(model::RUNTIME_BYTES_PER_WORKER),
        if workers == 1 { "" } else { "s" }
    ));
    if shm_bytes > 0.0 {
        parts.push(format!("/dev/shm {}", super::gib(shm_bytes)));
    }
    out.push(Finding::new(
        MEMORY_BELOW_LOADING_PEAK,
        o,
        format!(
            "container \"{}\" has a memory limit of {limit}, below the loading peak of about {} ({})",
            container_name(c),
            super::gib(peak),
            parts.join(" + ")
        ),
    ));
}
