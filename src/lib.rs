//! isvc: an offline GitOps compiler for LLM inference services.
//!
//! The pipeline, one layer per directory, each importing only the layers
//! below it (ARCHITECTURE.md; `src/layers.rs` tests it):
//!
//! ```text
//! cli ─▶ report ─▶ emit (write, diff, plan) ─▶ compiler ─▶ check ─▶ render
//!     ─▶ load | derive ─▶ k8s (typecheck, admission) ─▶ model ─▶ base
//! ```
//!
//! The entry point is [`Compiler`]: [`Inputs`] (services, platform,
//! templates) and [`Options`] in, a [`Compilation`] (what `render`, `diff`,
//! `plan` and `status` use) or an [`Examination`] (what `check` reports)
//! out. It does no I/O; without the default `cli` feature the library
//! builds without clap, so an Operator can embed it, with
//! [`emit::plan`] as its reconcile.

// The built-in templates' object literals (`render::builtin`) expand one
// token at a time.
#![recursion_limit = "512"]
// `Diagnostic` (152 bytes: message, location, related places, notes,
// help) is the error of most functions, returned by value as it is built,
// once for each problem a run reports; it is not boxed.
#![allow(clippy::result_large_err)]

pub mod base;
pub mod check;
#[cfg(feature = "cli")]
pub mod cli;
mod compiler;
pub(crate) mod derive;
pub mod emit;
pub(crate) mod k8s;
mod layers;
pub mod load;
pub mod model;
mod render;
pub mod report;
pub mod run;

pub use compiler::admission::QuotaUsage;
pub use compiler::{Compilation, Compiler, Examination, Inputs, Label, Options, Parts, RecordedNamespace};
pub use render::{BUILTIN as BUILTIN_TEMPLATES, Templates};
