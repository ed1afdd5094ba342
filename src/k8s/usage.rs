//! What a quota's hard limits count: the figures admission works out
//! (`admission::usage`) and the index keeps, once for each quota and bound.

use crate::base::quantity::Quantity;

/// Which replica count of each workload to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    Min = 0,
    Max = 1,
}

/// One hard limit of a quota and what the rendered objects count against it.
#[derive(Debug)]
pub(crate) struct Usage {
    pub resource: String,
    pub hard: Quantity,
    /// The sum of `parts`, if anything counts.
    pub used: Option<Quantity>,
    /// What each workload (or kind of object) contributes.
    pub parts: Vec<(String, Quantity)>,
    /// Whether pods count here (so a rollout's surge pods do too).
    pub per_pod: bool,
}

impl Usage {
    pub fn exceeded(&self) -> bool {
        self.used.as_ref().is_some_and(|u| *u > self.hard)
    }
}
