//! Judging trials: evaluators `(case, trajectory, final state) -> scores`, run metrics
//! `scores -> values`, and gates `metrics -> verdict`.
//!
//! Everything here is pure and synchronous: a stored run is re-scored and re-gated with the
//! same functions the live run used, and none of them needs a runtime, a world or a disk.
#![warn(missing_docs)]

mod aggregate;
mod evaluators;
mod gates;
mod sequence;

pub use aggregate::{Aggregate, aggregate, metric_names, trial_status};
pub use evaluators::evaluate;
pub use gates::{CompiledGate, GateError, GateSpec, decide_all};
pub use sequence::{ToolSequenceScores, score_tool_sequence};

/// Whether a regular expression compiles with the evaluators' engine; its error otherwise.
pub fn check_regex(re: &str) -> Result<(), String> {
    regex::Regex::new(re).map(|_| ()).map_err(|e| e.to_string())
}
