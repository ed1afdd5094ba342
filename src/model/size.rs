//! How big a model is, from its name, and what that means for start-up time,
//! host memory and disk. Heuristics, documented in docs/check.md,
//! docs/engine.md and in `isvc check --explain ISVC009` / `ISVC015` /
//! `ISVC053`; the derivation sizes the model cache with them, the checks
//! the budgets:
//!
//! - **Parameters** come from the model id when it names a count: `70B`,
//!   `0.6B`, `8x7B` (mixtures of experts: experts x size, an upper bound),
//!   `125M`, `1T`. The largest count in the name wins (`Qwen3-30B-A3B` is 30B).
//! - **Bytes per parameter**: 2 (bf16/fp16) unless the name or
//!   `--quantization` says 8-bit (`FP8`, `INT8`, `W8A8`: 1) or 4-bit (`AWQ`,
//!   `GPTQ`, `INT4`, `NF4`, `FP4`: 0.5); `--dtype float32` makes it 4.
//! - **Start-up** needs 5 minutes (imports, CUDA initialisation, memory
//!   profiling, CUDA graph capture) plus the weights read at 100 MB/s, a
//!   conservative rate for a cold download from a model hub or a network
//!   volume. The image pull happens before the container starts and does not
//!   count against probes.
//! - **Host memory while loading**: the weights (safetensors are memory-mapped
//!   by every worker, and their page cache is charged to the pod's memory
//!   cgroup; below that, loading thrashes, and loaders that stage tensors on
//!   the CPU are OOM-killed), plus 4 GiB per worker process (Python, PyTorch,
//!   the CUDA context, NCCL), plus the memory-backed `/dev/shm`, which counts
//!   against the same limit.

/// A model's size as far as its name tells.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelSize {
    /// Parameters.
    pub params: f64,
    pub bytes_per_param: f64,
}

impl ModelSize {
    /// The size of `model` served with `quantization` and `dtype` (values of
    /// the server flags), if the name gives a parameter count.
    pub fn guess(model: &str, quantization: Option<&str>, dtype: Option<&str>) -> Option<ModelSize> {
        // One pass over the words of the name, each in any case, without a
        // copy of the name: the guess is made twice for every service a
        // compile renders.
        let mut params: Option<f64> = None;
        let (mut four_bit, mut eight_bit) = (false, false);
        let mut note = |piece: &str| match weight_mark(piece) {
            Some(Bits::Four) => four_bit = true,
            Some(Bits::Eight) => eight_bit = true,
            None => {}
        };
        // Split by a predicate, as `At::at` splits pointers: the searcher
        // for a set of characters costs more to set up than short texts
        // take to scan (measured there).
        #[allow(clippy::manual_pattern_char_comparison)]
        let words = model.split(|c: char| matches!(c, '/' | '-' | '_' | ' ' | ':')).filter(|w| !w.is_empty());
        for word in words {
            if let Some(p) = parameter_count(word) {
                params = Some(params.map_or(p, |m| m.max(p)));
            }
            word.split('.').for_each(&mut note);
        }
        let params = params?;
        quantization.into_iter().for_each(&mut note);
        let bytes_per_param = if four_bit {
            0.5
        } else if eight_bit {
            1.0
        } else if matches!(dtype, Some("float32" | "float" | "fp32")) {
            4.0
        } else {
            2.0
        };
        Some(ModelSize { params, bytes_per_param })
    }

    pub fn weight_bytes(&self) -> f64 {
        self.params * self.bytes_per_param
    }

    /// "70B", "0.6B": the count as the name would give it.
    pub fn describe(&self) -> String {
        let b = self.params / 1e9;
        let count = if b >= 1.0 { format!("{}B", trim(b)) } else { format!("{}M", trim(b * 1000.0)) };
        let width = match self.bytes_per_param {
            x if x <= 0.5 => "4-bit",
            x if x <= 1.0 => "8-bit",
            x if x <= 2.0 => "16-bit",
            _ => "32-bit",
        };
        format!("{count} parameters, {width} weights of about {}", gib(self.weight_bytes()))
    }
}

/// The width of the weights a mark names.
enum Bits {
    Four,
    Eight,
}

/// The width of the weights `piece` of a model's name (or a
/// `--quantization` value) marks, in any case.
fn weight_mark(piece: &str) -> Option<Bits> {
    // No mark is longer than 12 bytes; a piece is compared in lower case.
    let mut buf = [0u8; 12];
    match crate::base::lowercase_in(piece, &mut buf)? {
        b"awq" | b"gptq" | b"int4" | b"4bit" | b"w4a16" | b"w4a4" | b"nf4" | b"fp4" | b"nvfp4" | b"mxfp4" | b"bnb"
        | b"bitsandbytes" | b"q4" | b"awq_marlin" | b"gptq_marlin" => Some(Bits::Four),
        b"fp8" | b"int8" | b"8bit" | b"w8a8" | b"w8a16" | b"q8" | b"fbgemm_fp8" => Some(Bits::Eight),
        _ => None,
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

/// `70b` -> 70e9, `0.6b` -> 0.6e9, `8x7b` -> 56e9, `125m` -> 125e6, `1t` -> 1e12,
/// in any case (`70B`, `8X7B`).
fn parameter_count(word: &str) -> Option<f64> {
    let (multiplier, rest) = match word.split_once(['x', 'X']) {
        Some((n, rest)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => (n.parse::<f64>().ok()?, rest),
        _ => (1.0, word),
    };
    let unit = match rest.bytes().last()?.to_ascii_lowercase() {
        b'b' => 1e9,
        b'm' => 1e6,
        b't' => 1e12,
        _ => return None,
    };
    let number = &rest[..rest.len() - 1];
    if number.is_empty() || !number.starts_with(|c: char| c.is_ascii_digit()) || number.matches('.').count() > 1 {
        return None;
    }
    if !number.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let n: f64 = number.parse().ok()?;
    (n > 0.0).then_some(multiplier * n * unit)
}

/// Seconds of start-up the fixed work takes, whatever the model.
pub const STARTUP_BASE_SECONDS: i64 = 300;
/// Rate at which weights are assumed to arrive on a cold node, bytes/s.
pub const LOAD_BYTES_PER_SECOND: f64 = 100e6;
/// Host memory of one worker process besides the weights.
pub const RUNTIME_BYTES_PER_WORKER: f64 = (4u64 << 30) as f64;

/// Room the model cache needs besides the weights: compiled kernels
/// (torch.compile, Triton, FlashInfer), tokenizer and config files, LoRA
/// adapters downloaded from the Hub.
pub const CACHE_HEADROOM_BYTES: f64 = (10u64 << 30) as f64;
/// The weights assumed for a model whose name gives no parameter count.
pub const UNKNOWN_WEIGHT_BYTES: f64 = (90u64 << 30) as f64;

/// The size, in whole GiB, of the cache a server downloads the model into:
/// the weights (or [`UNKNOWN_WEIGHT_BYTES`]) plus 10% (safetensors metadata,
/// the original checkpoint files some repositories also ship) plus
/// [`CACHE_HEADROOM_BYTES`].
pub fn cache_gib(size: Option<&ModelSize>) -> i64 {
    let weights = size.map_or(UNKNOWN_WEIGHT_BYTES, ModelSize::weight_bytes);
    // Rounded to a millionth of a GiB first, so 99.00000001 is 99.
    let gib = (weights * 1.1 + CACHE_HEADROOM_BYTES) / (1u64 << 30) as f64;
    ((gib * 1e6).round() / 1e6).ceil() as i64
}

/// The start-up time, in seconds, a server of this model should be allowed.
pub fn startup_seconds(size: Option<&ModelSize>) -> i64 {
    STARTUP_BASE_SECONDS + size.map_or(0, |s| (s.weight_bytes() / LOAD_BYTES_PER_SECOND).ceil() as i64)
}

/// Host memory, in bytes, a pod needs while it loads: weights, the runtime
/// of each worker, and the memory-backed `/dev/shm`.
pub fn loading_peak_bytes(size: Option<&ModelSize>, workers: i64, shm_bytes: f64) -> f64 {
    size.map_or(0.0, ModelSize::weight_bytes) + RUNTIME_BYTES_PER_WORKER * workers as f64 + shm_bytes
}

/// A byte count for messages, in GiB.
pub fn gib(bytes: f64) -> String {
    let g = bytes / (1u64 << 30) as f64;
    let text = if g < 10.0 { format!("{g:.1}") } else { format!("{g:.0}") };
    format!("{}Gi", text.strip_suffix(".0").unwrap_or(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(model: &str) -> Option<f64> {
        ModelSize::guess(model, None, None).map(|s| s.params)
    }

    #[test]
    fn parameter_counts_come_from_the_name() {
        assert_eq!(params("meta-llama/Llama-3.3-70B-Instruct"), Some(70e9));
        assert_eq!(params("Qwen/Qwen3-0.6B"), Some(0.6e9));
        assert_eq!(params("mistralai/Mixtral-8x7B-Instruct-v0.1"), Some(56e9));
        assert_eq!(params("Qwen/Qwen3-30B-A3B"), Some(30e9));
        assert_eq!(params("facebook/opt-125m"), Some(125e6));
        assert_eq!(params("google/gemma-3-27b-it"), Some(27e9));
        assert_eq!(params("mistralai/Mistral-Small-3.1-24B-Instruct-2503"), Some(24e9));
        assert_eq!(params("moonshotai/Kimi-K2-Instruct-1T"), Some(1e12));
        assert_eq!(params("x/MIXTRAL-8X22B"), Some(176e9));
        for unknown in ["/models/llama", "microsoft/phi-4", "BAAI/bge-m3", "Phi-3-mini-4k-instruct", "v0.1", "x7b"] {
            assert_eq!(params(unknown), None, "{unknown}");
        }
    }

    #[test]
    fn quantization_shrinks_the_weights() {
        let bytes = |m: &str, q: Option<&str>| ModelSize::guess(m, q, None).unwrap().weight_bytes();
        assert_eq!(bytes("meta-llama/Llama-3.1-8B-Instruct", None), 16e9);
        assert_eq!(bytes("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", None), 70e9);
        assert_eq!(bytes("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", None), 35e9);
        assert_eq!(bytes("meta-llama/Llama-3.1-70B-Instruct", Some("fp8")), 70e9);
        assert_eq!(ModelSize::guess("x/Model-1B", None, Some("float32")).unwrap().weight_bytes(), 4e9);
        // Marks in any case, as a piece of the name or the flag's value.
        assert_eq!(bytes("x/Model-8B", Some("AWQ_Marlin")), 4e9);
        assert_eq!(bytes("x/Model-8B", Some("bitsandbytes")), 4e9);
        assert_eq!(bytes("x/Model-8B-v1.W8A16", None), 8e9);
        assert_eq!(bytes("x/Model-8B-awqish", Some("bitsandbytes2")), 16e9);
    }

    #[test]
    fn budgets_grow_with_the_model() {
        let size = |m: &str| ModelSize::guess(m, None, None);
        assert_eq!(startup_seconds(None), 300);
        assert_eq!(startup_seconds(size("Qwen/Qwen3-0.6B").as_ref()), 312);
        assert_eq!(startup_seconds(size("meta-llama/Llama-3.3-70B-Instruct").as_ref()), 1700);
        assert_eq!(startup_seconds(size("meta-llama/Llama-3.1-405B").as_ref()), 8400);
        let gib = (1u64 << 30) as f64;
        assert_eq!(loading_peak_bytes(None, 2, 8.0 * gib), 16.0 * gib);
        assert_eq!(loading_peak_bytes(size("x/M-8B").as_ref(), 1, 0.0), 16e9 + 4.0 * gib);
    }

    #[test]
    fn the_cache_holds_the_weights_and_some() {
        let size = |m: &str| ModelSize::guess(m, None, None);
        assert_eq!(cache_gib(size("Qwen/Qwen3-0.6B").as_ref()), 12);
        assert_eq!(cache_gib(size("meta-llama/Llama-3.1-8B-Instruct").as_ref()), 27);
        // 405B FP8: about 377Gi of weights.
        assert_eq!(cache_gib(size("meta-llama/Llama-3.1-405B-Instruct-FP8").as_ref()), 425);
        assert_eq!(cache_gib(None), 109);
    }
}
