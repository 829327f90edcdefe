//! Judging trials: evaluators `(case, trajectory, final state) -> scores`, run metrics
//! `scores -> values`, and gates `metrics -> verdict`; the statistics they use are
//! `gauntlet-stats`'.
//!
//! Everything here is pure and synchronous: a stored run is re-scored and re-gated with the
//! same functions the live run used, and none of them needs a runtime, a world or a disk.
#![warn(missing_docs)]

mod aggregate;
pub mod arguments;
pub mod attack;
pub mod attribution;
pub mod bfcl;
pub mod checkpoints;
pub mod claims;
mod compare;
mod evaluators;
pub mod faults;
mod gates;
pub mod judge;
mod matching;
pub mod pairwise;
pub mod reasons;
pub mod redact;
mod results;
mod rubric;
pub mod safety;
mod sequence;
pub mod trajectory_match;
mod trial;
mod user;

pub use aggregate::{
    Accumulator, Aggregate, DISTRIBUTIONS, EXACT_QUANTILE_VALUES, MAX_K, aggregate, metric_names,
    pass_k_metrics, trial_status,
};
pub use compare::{ALPHA, compare};
pub use evaluators::EvalContext;
pub use gates::{CompiledGate, GateError, GateSpec, HARNESS_GATE, decide_all, harness_gate};
pub use results::{build_results, results_of};
pub use rubric::CompiledRubric;
pub use sequence::{ToolSequenceScores, score_tool_sequence};
pub use trial::{
    BuiltinEvaluation, NEEDS, TrialInput, conclude, evaluate, evaluate_builtin, evaluate_in, needs,
};

/// Whether a regular expression compiles with the evaluators' engine; its error otherwise.
pub fn check_regex(re: &str) -> Result<(), InvalidRegex> {
    regex::Regex::new(re).map(|_| ()).map_err(InvalidRegex)
}

/// A regular expression the evaluators' engine does not compile: the case's input.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct InvalidRegex(#[from] regex::Error);

impl gauntlet_model::Classified for InvalidRegex {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}
