//! Reports: text, JSON, markdown and SARIF for findings, quota use, diffs
//! and plans.

pub mod diff;
pub mod findings;
pub mod plan;
pub mod quota;
pub mod sarif;
