//! The outputs: the atomic tree write, the object diff, the reconcile plan
//! against a live snapshot, and `migrate`'s in-place rewrite. Data only:
//! formatting lives in `report`.

pub mod diff;
pub mod listing;
pub mod manifest;
pub mod migrate;
pub mod plan;
pub mod stat;
pub mod write;
