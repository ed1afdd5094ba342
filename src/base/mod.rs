//! The base layer: YAML with positions, diagnostics, quantities and names.
//! It knows nothing of InferenceServices or Kubernetes.

pub mod diagnostics;
pub mod digest;
pub mod names;
pub mod paths;
pub mod problem;
pub mod quantity;
pub mod value;
pub mod yaml;
