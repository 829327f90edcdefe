//! The run event stream: what a run tells its consumers while it goes on. The runner emits
//! it; the run store and the terminal reporter are two consumers of it, and a stored run
//! replays as the same stream (`run.json`, `trials.jsonl`, `results.json`), so a reporter
//! prints the same summary for a stored run as it did live.

use std::sync::Arc;

use serde_json::Value;

use crate::{RunHeader, RunResults, TrialRecord};

/// One event of a run, in the order: `RunStarted`, then `TrialStarted` and `TrialFinished`
/// for each trial (trials overlap), then `RunFinished`.
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// The run started (or resumed).
    RunStarted {
        /// The run's header, as `run.json` stores it.
        header: Box<RunHeader>,
        /// Trials in the plan (this shard's share, for a part of a sharded run).
        planned: usize,
        /// Of those, how many a resumed run already has (0 for a new run).
        already_done: usize,
        /// When, RFC 3339.
        at: String,
    },
    /// A trial started.
    TrialStarted {
        /// Its position among the trials still to run.
        index: usize,
        /// The case.
        case_id: String,
        /// The repetition.
        epoch: u32,
        /// When, RFC 3339.
        at: String,
    },
    /// A trial ended: passed, failed or error.
    TrialFinished {
        /// Its position among the trials still to run (as in `TrialStarted`).
        index: usize,
        /// Everything about it but its `initial_state`, which is `null` here: trials share it.
        record: Box<TrialRecord>,
        /// The state the trial started from, shared with the other trials of its case.
        initial_state: Arc<Value>,
        /// When, RFC 3339.
        at: String,
    },
    /// Every trial ended and the run was judged.
    RunFinished {
        /// The canonical result, as `results.json` stores it.
        results: Box<RunResults>,
        /// When, RFC 3339.
        at: String,
    },
}
