//! Judging one trial: evaluators `(case, trajectory, final state) -> scores` and the trial's
//! status; what a run makes of its trials (metrics, gates, the verdict, two runs compared) is
//! `gauntlet-verdict`'s.
//!
//! Everything here is pure and synchronous: a stored run is re-scored and re-gated with the
//! same functions the live run used, and none of them needs a runtime, a world or a disk.
#![warn(missing_docs)]

pub mod arguments;
pub mod attack;
pub mod attribution;
pub mod bfcl;
pub mod checkpoints;
pub mod claims;
mod evaluators;
pub mod faults;
pub mod judge;
mod matching;
pub mod pairwise;
pub mod reasons;
pub mod redact;
pub mod safety;
mod sequence;
pub mod trajectory_match;
mod trial;
mod user;

pub use evaluators::EvalContext;
pub use sequence::{ToolSequenceScores, score_tool_sequence};
pub use trial::{
    BuiltinEvaluation, NEEDS, TrialInput, conclude, evaluate, evaluate_builtin, evaluate_in, needs,
    trial_status,
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
