//! Running trials: each case × epoch gets a fresh world, the agent plays it, evaluators judge it.
//!
//! Trials run concurrently on tokio with a bound; each emits [`RunEvent`]s to the caller as it
//! starts and ends, so reporters see progress while the run goes on. A trial that fails, errs,
//! hangs or panics never stops the others.
#![warn(missing_docs)]

pub mod agents;
mod error;
mod ids;
pub mod merge;
pub mod offline;
mod ordered;
pub mod plan;
mod recorder;
mod request;
mod run;
mod session;
pub mod tally;

pub use gauntlet_model::RunEvent;
pub use gauntlet_store::clock::{now, stamp};
pub use ids::{new_run_id, new_run_id_for, trace_id, trial_seed};
pub use ordered::{WorkerPanicked, ordered_map};
pub use plan::{PlanError, RunOptions, Settings, TrialPlans};
pub use recorder::Recorder;
pub use request::{RequestError, RunRequest};
pub use run::{RunPlan, TrialPlan, Trials, run_trials};
pub use session::{Finished, Notice, Observer, Run, RunError, agent_fn};
