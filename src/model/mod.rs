//! The model: the InferenceService versions and their conversion, the
//! platform file, rendered objects and their identities, and the one table
//! of every kind isvc renders. Pure data; no I/O.

pub mod compact;
pub mod conversion;
pub mod crd;
pub mod engine;
pub mod kinds;
pub mod labels;
pub mod objects;
pub mod platform;
pub mod route;
pub mod schema;
pub mod size;
pub mod v1alpha1;
pub mod v1alpha2;
