//! What isvc knows about the vLLM server it runs: the arguments and
//! environment variables it owns, the Hugging Face organisations whose
//! models are gated, and which image versions have which flags. Shared by
//! input validation, the derivation and the checks.

/// Server arguments isvc sets itself: a service gives them through the
/// spec field named next to each, never through `spec.args` (two values for
/// one flag leave the choice to the parser, and the checks would read the
/// wrong one).
pub const OWNED_ARGS: &[(&str, &str)] = &[
    ("--model", "spec.baseModel"),
    ("--host", "nothing: the server listens on every address"),
    ("--port", "the platform's defaults.port"),
    ("--uds", "nothing: the server listens on its port"),
    ("--tensor-parallel-size", "spec.gpusPerReplica"),
    ("--pipeline-parallel-size", "spec.nodesPerReplica"),
    ("--distributed-executor-backend", "spec.nodesPerReplica"),
    ("--config", "spec.adapters (the LoRA options live in a config file)"),
    ("--enable-lora", "spec.adapters"),
    ("--lora-modules", "spec.adapters"),
    ("--max-loras", "the platform's defaults.lora.maxLoras"),
    ("--max-cpu-loras", "spec.adapters"),
    ("--max-lora-rank", "the platform's defaults.lora.maxLoraRank"),
    ("--served-model-name", "spec.servedModelName"),
    ("--revision", "spec.revision"),
    ("--shutdown-timeout", "the platform's defaults.drain.requestSeconds"),
    ("--hf-token", "the platform's defaults.huggingFace.tokenSecret, or an HF_TOKEN in spec.env from a Secret"),
];

/// Short spellings of owned arguments.
const OWNED_SHORT: &[(&str, &str)] = &[("-tp", "--tensor-parallel-size"), ("-pp", "--pipeline-parallel-size")];

/// The owned argument `arg` sets, with the field to use instead, if any.
/// vLLM reads `--max_model_len` as `--max-model-len` and `--flag=value` as
/// `--flag value`, and so does this.
pub fn owned_arg(arg: &str) -> Option<(&'static str, &'static str)> {
    let name = arg.split_once('=').map_or(arg, |(n, _)| n);
    let name = if let Some(long) = name.strip_prefix("--") {
        format!("--{}", long.replace('_', "-"))
    } else {
        let short = OWNED_SHORT.iter().find(|(s, _)| *s == name)?;
        short.1.to_string()
    };
    OWNED_ARGS.iter().find(|(flag, _)| *flag == name).copied()
}

/// Environment variables isvc sets on the server: the writable directories
/// of a read-only root filesystem (see `derive::security`), and those the
/// LeaderWorkerSet controller injects.
pub const RESERVED_ENV: &[&str] = &[
    "HOME",
    "USER",
    "TMPDIR",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "HF_HOME",
    "VLLM_CACHE_ROOT",
    "VLLM_CONFIG_ROOT",
    "LWS_LEADER_ADDRESS",
    "LWS_GROUP_SIZE",
    "LWS_WORKER_INDEX",
    "HF_TOKEN_PATH",
];

/// The variable huggingface_hub reads its token from (huggingface/huggingface_hub
/// `docs/source/en/package_reference/environment_variables.md`, "HF_TOKEN").
pub const HF_TOKEN: &str = "HF_TOKEN";
/// Where huggingface_hub reads the token when `HF_TOKEN` is unset
/// (huggingface/huggingface_hub `constants.py`, `HF_TOKEN_PATH`; the
/// environment variables reference: `HF_TOKEN` "will overwrite the token
/// stored on the machine (in either `$HF_TOKEN_PATH` or ...)").
pub const HF_TOKEN_PATH: &str = "HF_TOKEN_PATH";
/// The read-only volume holding the platform's token Secret, and the file
/// in it.
pub const TOKEN_VOLUME: &str = "hf-token";
pub const TOKEN_DIR: &str = "/etc/isvc/hf-token";
pub const TOKEN_FILE: &str = "token";
/// The older name huggingface_hub still reads.
pub const HF_TOKEN_LEGACY: &str = "HUGGING_FACE_HUB_TOKEN";
/// With this set, no download is attempted (`HF_HUB_OFFLINE`).
pub const HF_HUB_OFFLINE: &str = "HF_HUB_OFFLINE";

/// Hugging Face organisations (and repository prefixes) whose models are
/// gated: downloading them needs an account that accepted the licence, and
/// its token. Not a complete list; the well-known ones.
pub const GATED_PREFIXES: &[&str] = &[
    "meta-llama/",
    "mistralai/",
    "google/gemma",
    "google/medgemma",
    "google/codegemma",
    "google/paligemma",
    "CohereForAI/",
    "CohereLabs/",
    "bigcode/starcoder",
    "tiiuae/falcon-180",
];

/// Whether `model` (a Hugging Face id) is in a well-known gated repository.
pub fn is_gated(model: &str) -> bool {
    GATED_PREFIXES.iter().any(|p| model.get(..p.len()).is_some_and(|head| head.eq_ignore_ascii_case(p)))
}

/// The vLLM release of an image reference tagged like the official images
/// (`vllm/vllm-openai:v0.18.0`, `...:0.18.1-cu128`), as (major, minor,
/// patch); `None` for `latest`, a digest or any other tag.
pub fn vllm_version(image: &str) -> Option<(u32, u32, u32)> {
    let image = image.split('@').next()?;
    let (repo, tag) = image.rsplit_once(':')?;
    if tag.contains('/') || !repo.to_ascii_lowercase().contains("vllm") {
        return None;
    }
    let tag = tag.strip_prefix('v').unwrap_or(tag);
    let core = tag.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next()??, parts.next()??);
    let patch = match parts.next() {
        Some(p) => p?,
        None => 0,
    };
    parts.next().is_none().then_some((major, minor, patch))
}

/// The first vLLM release with `--shutdown-timeout` (vllm-project/vllm PR
/// #34730, re-landed as #36666; announced for v0.18.0 in llm-d/llm-d issue
/// #927). Before it, SIGTERM aborts every request in flight.
pub const SHUTDOWN_TIMEOUT_SINCE: (u32, u32, u32) = (0, 18, 0);

/// Whether the image's vLLM has `--shutdown-timeout`; `false` when the tag
/// does not tell.
pub fn has_shutdown_timeout(image: &str) -> bool {
    vllm_version(image).is_some_and(|v| v >= SHUTDOWN_TIMEOUT_SINCE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_arguments_are_found_in_every_spelling() {
        assert_eq!(owned_arg("--model").map(|o| o.1), Some("spec.baseModel"));
        assert_eq!(owned_arg("--tensor_parallel_size=2").map(|o| o.0), Some("--tensor-parallel-size"));
        assert_eq!(owned_arg("-tp").map(|o| o.0), Some("--tensor-parallel-size"));
        assert_eq!(owned_arg("--revision=abc").map(|o| o.1), Some("spec.revision"));
        for free in ["--max-model-len=8192", "--gpu-memory-utilization", "-q", "fp8", "--quantization"] {
            assert_eq!(owned_arg(free), None, "{free}");
        }
    }

    #[test]
    fn gated_organisations() {
        assert!(is_gated("meta-llama/Llama-3.1-8B-Instruct"));
        assert!(is_gated("mistralai/Mistral-7B-Instruct-v0.3"));
        assert!(is_gated("google/gemma-3-27b-it"));
        assert!(!is_gated("google/flan-t5-xl"));
        assert!(!is_gated("Qwen/Qwen3-8B"));
        assert!(!is_gated("/models/meta-llama/Llama-3.1-8B"));
        assert!(!is_gated("᠄%ﳻ𚿾mK&/i"), "a prefix length inside a character is no match");
    }

    #[test]
    fn versions_come_from_the_tag() {
        assert_eq!(vllm_version("vllm/vllm-openai:v0.11.0"), Some((0, 11, 0)));
        assert_eq!(vllm_version("registry.example.com:5000/vllm/vllm-openai:v0.18.1"), Some((0, 18, 1)));
        assert_eq!(vllm_version("vllm/vllm-openai:0.19.0-cu128@sha256:abc"), Some((0, 19, 0)));
        assert_eq!(vllm_version("vllm/vllm-openai:latest"), None);
        assert_eq!(vllm_version("vllm/vllm-openai@sha256:abc"), None);
        assert_eq!(vllm_version("registry.example.com:5000/vllm"), None);
        assert!(!has_shutdown_timeout("vllm/vllm-openai:v0.11.0"));
        assert!(has_shutdown_timeout("vllm/vllm-openai:v0.18.0"));
    }
}
