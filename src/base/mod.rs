//! The base layer: YAML with positions, diagnostics, quantities and names.
//! It knows nothing of InferenceServices or Kubernetes.

pub mod diagnostics;
pub mod digest;
pub mod free;
pub mod names;
pub mod paths;
pub mod problem;
pub mod quantity;
pub mod value;
pub mod yaml;

/// `text` in ASCII lower case, written into `buf`; `None` if it is longer
/// than `buf` (longer than any word the caller matches). For matching
/// short words in any case without a new string. Inlined into its callers
/// (the emitter asks it of most short scalars): called across modules
/// instead, a render took 1.1% more instructions.
#[inline]
pub fn lowercase_in<'b>(text: &str, buf: &'b mut [u8]) -> Option<&'b [u8]> {
    let bytes = text.as_bytes();
    let lower = buf.get_mut(..bytes.len())?;
    for (l, c) in lower.iter_mut().zip(bytes) {
        *l = c.to_ascii_lowercase();
    }
    Some(lower)
}
