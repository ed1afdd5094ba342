//! What Kubernetes does with the objects: their types (typecheck) and the
//! admission of pods against ResourceQuota, LimitRange and Kueue.

pub mod admission;
pub mod index;
pub mod skeleton;
pub mod typecheck;
pub mod usage;
