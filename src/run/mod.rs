//! A command's run over its inputs and output tree, without a terminal:
//! the inputs loaded and compiled, an output tree surveyed (its manifest,
//! the cache of file status, the input files' digests; `survey`), and what
//! a render writes into it, `--check` finds stale or `diff` reports
//! (`tree`). The command line parses arguments into [`Sources`], calls
//! these and prints what they return; another front end (an Operator's
//! reconcile of a git checkout, a language server) can call the same.
//! What a run finds along the way, it tells a [`Progress`].

mod compile;
mod survey;
mod tree;

pub use compile::{Progress, Reconciled, Remains, Sources, compile, examine, header_base, reconcile, run_budget};
pub use tree::{Mode, Rendered, diff, render_tree};
