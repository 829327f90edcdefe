//! Running trials: each case × epoch gets a fresh world, the agent plays it, evaluators judge it.
//!
//! Trials run concurrently on tokio with a bound; each emits [`RunEvent`]s to the caller as it
//! starts and ends, so reporters see progress while the run goes on. A trial that fails, errs,
//! hangs or panics never stops the others.
#![warn(missing_docs)]

mod custom;
mod ids;
mod run;

pub use custom::{CustomEvaluator, CustomKind, run_custom};
pub use ids::{trace_id, trial_seed};
pub use run::{RunEvent, RunPlan, TrialPlan, run_trials};
