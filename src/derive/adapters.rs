//! LoRA adapters: the checks on a service's adapter list, and how vLLM gets
//! it.
//!
//! The list becomes a vLLM config file (`vllm serve --config`, whose keys are
//! the command-line options `enable-lora`, `max-loras`, `max-cpu-loras`,
//! `max-lora-rank` and `lora-modules`) held in a ConfigMap of the service
//! and mounted read-only into the server container; the server's arguments
//! only name the file.
//! vLLM reads the file at startup, so a changed list must restart the pods:
//! the pod template carries a checksum of the file, and changing the list
//! changes the ConfigMap and that one annotation, nothing else.

use crate::base::value::At;
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::base::diagnostics::Diagnostic;
use crate::model::objects::Object;
use crate::model::v1alpha2::InferenceServiceSpec;

/// Name of the ConfigMap volume in the pod, and of the key in the ConfigMap.
pub const VOLUME: &str = "adapters";
pub const CONFIG_FILE: &str = "lora.yaml";
/// Where the ConfigMap is mounted in the server container.
pub const MOUNT_PATH: &str = "/etc/isvc/adapters";
/// Pod-template annotation holding the checksum of the config file.
pub const CHECKSUM_ANNOTATION: &str = "ai.example.com/adapters-checksum";

/// What the objects of a service with adapters need.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AdapterPlan {
    /// Adapter names, as clients ask for them.
    pub names: Vec<String>,
    /// The ConfigMap's data: the config file by name.
    pub data: BTreeMap<String, String>,
    /// Checksum of the config file (64-bit FNV-1a, hex).
    pub checksum: String,
}

/// The adapter plan of a service, `None` without adapters. `lora` is the
/// platform's `defaults.lora`.
///
/// `max-loras` is the adapter count, at most `lora.maxLoras`: vLLM
/// preallocates GPU buffers for `max_loras` adapters of `max_lora_rank` in
/// every LoRA layer (vllm-project/vllm `vllm/lora/layers/base_linear.py`,
/// `create_lora_weights`), before it sizes the KV cache. `max-cpu-loras` is
/// the adapter count, so every adapter stays in host memory (vLLM's default
/// is `max_loras`, and it must be at least that: `vllm/config/lora.py`).
pub fn plan(
    spec: &InferenceServiceSpec,
    namespace: &str,
    name: &str,
    lora: &crate::model::platform::Lora,
) -> Option<AdapterPlan> {
    let max_lora_rank = lora.max_lora_rank;
    let count = spec.adapters.len();
    if spec.adapters.is_empty() {
        return None;
    }
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut config = format!(
        "# vLLM options for the LoRA adapters of {namespace}/{name}, read at startup (vllm serve --config).\n\
         enable-lora: true\nmax-loras: {}\nmax-cpu-loras: {count}\n",
        count.min(usize::try_from(lora.max_loras.max(1)).unwrap_or(1))
    );
    if let Some(rank) = max_lora_rank {
        config.push_str(&format!("max-lora-rank: {rank}\n"));
    }
    config.push_str("lora-modules:\n");
    for a in &spec.adapters {
        config.push_str(&format!("  - {}\n", quote(&format!("{}={}", a.name, a.source))));
    }
    Some(AdapterPlan {
        names: spec.adapters.iter().map(|a| a.name.clone()).collect(),
        checksum: format!("{:016x}", fnv1a(config.as_bytes())),
        data: BTreeMap::from([(CONFIG_FILE.to_string(), config)]),
    })
}

/// The server arguments that point vLLM at the mounted config file.
pub fn args() -> [String; 2] {
    ["--config".to_string(), format!("{MOUNT_PATH}/{CONFIG_FILE}")]
}

/// Services with adapters whose rendered server does not read them: an
/// overridden template that dropped `container.volume_mounts`, `volumes` or
/// `container.args` would start vLLM without its adapters.
pub fn unmounted(objects: &[Object]) -> Vec<Diagnostic> {
    let config = format!("{MOUNT_PATH}/{CONFIG_FILE}");
    let mut out = Vec::new();
    let lora = |o: &&Object| o.id.kind == "ConfigMap" && o.value.at("/data/lora.yaml").is_some();
    if !objects.iter().any(|o| lora(&o)) {
        return out;
    }
    // The first object with pod templates of each (namespace, owner): one
    // pass, where a scan for each ConfigMap would grow with the square of
    // a namespace of services with adapters.
    let mut workloads: BTreeMap<(&Option<String>, &Option<String>), &Object> = BTreeMap::new();
    for o in objects.iter().filter(|o| !crate::k8s::index::pod_templates(o).is_empty()) {
        workloads.entry((&o.id.namespace, &o.owner)).or_insert(o);
    }
    for cm in objects.iter().filter(lora) {
        let Some(workload) = workloads.get(&(&cm.id.namespace, &cm.owner)) else {
            continue;
        };
        let reads = crate::k8s::index::pod_templates(workload).into_iter().any(|t| {
            let volume = t
                .at("/spec/volumes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|v| v.at("/configMap/name").and_then(Value::as_str) == Some(cm.id.name.as_str()));
            let Some(volume) = volume.and_then(|v| v.get("name")) else { return false };
            t.at("/spec/containers").and_then(Value::as_array).into_iter().flatten().any(|c| {
                let args: Vec<&str> =
                    c.get("args").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
                let mounted = c.get("volumeMounts").and_then(Value::as_array).into_iter().flatten().any(|m| {
                    m.get("name") == Some(volume) && m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH)
                });
                mounted && args.windows(2).any(|w| w == ["--config", config.as_str()])
            })
        });
        if !reads {
            let from = cm.source.as_deref().map(|s| format!(" (from {s})")).unwrap_or_default();
            out.push(
                Diagnostic::error(format!(
                    "{}: the server does not read its adapters: no container mounts ConfigMap {} at {MOUNT_PATH} and passes --config {config}{from}",
                    workload.id, cm.id.name
                ))
                .help("an overridden template must keep container.args, container.volume_mounts and volumes"),
            );
        }
    }
    out
}

/// 64-bit FNV-1a: a stable checksum, not a security measure.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::platform::Lora;
    use crate::model::v1alpha2::Adapter;

    fn lora(max_loras: i32, rank: Option<i32>) -> Lora {
        Lora { max_loras, max_lora_rank: rank }
    }

    fn spec(adapters: &[(&str, &str)]) -> InferenceServiceSpec {
        let mut s = crate::model::conversion::spec_to_hub(&crate::model::v1alpha1::InferenceServiceSpec {
            model: "meta-llama/Llama-3.1-8B-Instruct".into(),
            replicas: 1,
            gpus_per_replica: 1,
            priority: None,
            queue: None,
        });
        s.adapters = adapters.iter().map(|(n, s)| Adapter { name: n.to_string(), source: s.to_string() }).collect();
        s
    }

    #[test]
    fn the_config_file_lists_every_adapter_and_its_checksum_follows_it() {
        let a =
            plan(&spec(&[("sql", "org/sql-lora"), ("chat", "/mnt/adapters/chat")]), "ns", "llama", &lora(4, Some(64)))
                .unwrap();
        assert_eq!(
            a.data[CONFIG_FILE],
            "# vLLM options for the LoRA adapters of ns/llama, read at startup (vllm serve --config).\n\
             enable-lora: true\nmax-loras: 2\nmax-cpu-loras: 2\nmax-lora-rank: 64\nlora-modules:\n  - \"sql=org/sql-lora\"\n  - \"chat=/mnt/adapters/chat\"\n"
        );
        let b = plan(
            &spec(&[("sql", "org/sql-lora-v2"), ("chat", "/mnt/adapters/chat")]),
            "ns",
            "llama",
            &lora(4, Some(64)),
        )
        .unwrap();
        assert_ne!(a.checksum, b.checksum);
        assert!(plan(&spec(&[]), "ns", "llama", &lora(4, None)).is_none());
    }

    #[test]
    fn gpu_slots_are_bounded_host_memory_holds_every_adapter() {
        let many: Vec<(String, String)> = (0..10).map(|i| (format!("a{i}"), format!("org/a{i}"))).collect();
        let refs: Vec<(&str, &str)> = many.iter().map(|(n, s)| (n.as_str(), s.as_str())).collect();
        let config = &plan(&spec(&refs), "ns", "llama", &lora(4, None)).unwrap().data[CONFIG_FILE];
        assert!(config.contains("\nmax-loras: 4\nmax-cpu-loras: 10\n"), "{config}");
    }
}
