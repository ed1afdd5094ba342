//! Reports: text, JSON, markdown and SARIF for findings, quota use, diffs
//! and plans.

pub mod findings;
pub mod quota;
pub mod sarif;
