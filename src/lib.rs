//! isvc: an offline GitOps compiler for LLM inference services.
//!
//! The pipeline, one module per stage:
//!
//! ```text
//! load ─▶ derive ─▶ render ─▶ check ─▶ output | diff | plan
//! (files,   (pure:     (templates,  (rules over   (atomic tree write,
//!  schema,   desired    parse back,  rendered      prune, --check;
//!  names)    state)     kinds)       objects)      object diff;
//!                                                  reconcile against a
//!                                                  live snapshot)
//! ```
//!
//! [`compile`] runs derive, render and check over loaded services; it does no
//! I/O, so an Operator can embed it, and [`plan`] is the Operator's reconcile
//! over its result. `yaml` and `diagnostics` are leaves that every stage uses.

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
pub mod render;
pub mod report;

pub use compiler::admission::QuotaUsage;
pub use compiler::{Compilation, Compiler, Examination, Inputs, Label, Options};
