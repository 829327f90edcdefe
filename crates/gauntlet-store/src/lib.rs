//! Where runs live: the versioned run directory and the SQLite index of past runs.
//!
//! A run directory holds `run.json` (the header, written first), `trials.jsonl` (one record per
//! trial, appended and flushed as each ends, so a crash loses no finished trial),
//! `summaries.jsonl` (one trial summary per line, in plan order) and `results.json` (the
//! canonical result but its trial summaries, written last and atomically).
#![warn(missing_docs)]

pub mod clock;
mod error;
mod index;
mod judge_cache;
pub mod open;
mod recorded;
mod run_dir;
mod spill;
mod states;
mod verdicts;

pub use index::{Index, NotIndexed, RunRow};
pub use judge_cache::{CachedReply, JudgeCache};
pub use recorded::{ImportedTrial, ItemParser, RawItem, RawItems, read_items, read_trajectories};
pub use run_dir::{
    EncodedRecord, ResultsBrief, RunWriter, StoreError, StoredTrial, StoredTrials, read_header,
    read_results, read_results_brief, read_results_head, read_results_kept, read_summaries,
    read_trials, read_trials_lean, replay, replay_kept,
};
pub use spill::{EncodedSummary, SpilledSummaries, write_full_results};
pub use states::StateReader;
pub use verdicts::{JudgeVerdicts, read_judge_verdicts};
