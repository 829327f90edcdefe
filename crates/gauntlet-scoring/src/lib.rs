//! Scoring one trial, wherever it came from: the built-in evaluators, the suite's custom
//! evaluators (commands and JavaScript functions) and its LLM judges (through the gateway, with
//! the judge cache in front, gating only once calibrated). A suite run, `score`, `serve`,
//! `shadow` and the online receiver all call [`evaluate_trial`]; none of them needs the runner
//! for it.
#![warn(missing_docs)]

mod custom;
mod evaluate;
pub mod judge;

pub use custom::{CustomError, CustomEvaluator, CustomKind, run_custom};
pub use evaluate::{CustomEvaluators, Evaluation, TrialEvidence, evaluate_trial};
pub use judge::{JudgeError, JudgePanel, PreparedJudge, prepare_judges};
