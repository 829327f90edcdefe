//! The run event stream: what a run tells its consumers while it goes on. The runner emits
//! it; the run store and the terminal reporter are two consumers of it, and a stored run
//! replays as the same stream (`run.json`, `trials.jsonl`, `results.json`), so a reporter
//! prints the same summary for a stored run as it did live.

use std::sync::Arc;

use serde_json::Value;

use crate::{ChangedState, Event, RunHeader, RunResults, Score, TrialRecord};

/// One event of a run, in the order: `RunStarted`, then for each trial `TrialStarted`, what
/// happens inside it (`TrialEvent`s as they happen, then a `TrialScored` per score) and
/// `TrialFinished` (trials overlap), then `RunFinished`. The in-trial events reach only
/// consumers that ask for them (they cost a copy of every trajectory event).
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
    /// Something happened inside a trial, as it happened: an event of its trajectory (a tool
    /// called and answered, a model called, the user asked or answering, a fault injected, a
    /// trap sprung, the final answer).
    TrialEvent {
        /// The trial's position among the trials still to run (as in `TrialStarted`).
        index: usize,
        /// The case.
        case_id: String,
        /// The repetition.
        epoch: u32,
        /// The trajectory event, as the trial's trajectory stores it.
        event: Box<Event>,
        /// When, RFC 3339.
        at: String,
    },
    /// An evaluator (a judge included) gave a trial a score, once the trial ended.
    TrialScored {
        /// The trial's position among the trials still to run (as in `TrialStarted`).
        index: usize,
        /// The case.
        case_id: String,
        /// The repetition.
        epoch: u32,
        /// The score, as the trial record stores it.
        score: Box<Score>,
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
        /// The trial's final state, when its world kept it as `initial_state` and the records
        /// the trial changed (a state of megabytes is then not copied per trial): the record's
        /// `final_state` is `null` until a consumer puts it there. The run store does, first,
        /// in the form it stores; a consumer without a store calls [`RunEvent::settle`].
        final_state: Option<ChangedState>,
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

impl RunEvent {
    /// Puts a finished trial's final state, whole, in its record where the event carries it as
    /// changes (see `TrialFinished::final_state`).
    pub fn settle(&mut self) {
        if let RunEvent::TrialFinished {
            record,
            final_state,
            ..
        } = self
            && let Some(changed) = final_state.take()
        {
            record.final_state = changed.to_value();
        }
    }

    /// The event as one line of `gauntlet run --events` (NDJSON, one object a line, as
    /// `cargo test --format json` writes): every object has `type` and `at` (RFC 3339).
    ///
    /// - `run_started`: `run_id`, `suite`, `agent`, `seed`, `epochs`, `planned` (trials in
    ///   the plan), `already_done` (of those, done before a resume);
    /// - `trial_started`: `case_id`, `epoch`;
    /// - inside a trial, one line per trajectory event as it happens, with `case_id` and
    ///   `epoch` besides the event's own fields (its `type` is the trajectory's: `tool_call`,
    ///   `model_call`, `question`, `confirmation_request`, `confirmation_response`,
    ///   `user_message`, `agent_message`, `fault_injected`, `cross_tenant_access`, `wait`,
    ///   `trapped`, `tools_changed`, `agent_stderr`, `unfinished`, `final_answer`, …; the
    ///   schema is `gauntlet schema trajectory`'s), then a `verdict` per score: `case_id`,
    ///   `epoch`, `evaluator`, `dimension`, `passed`, `value`, `score`, `severity`, `details`,
    ///   `events` (the indices of the trajectory events it points at);
    /// - `trial_finished`: `case_id`, `epoch`, `status` (`passed`, `failed`, `error`), `error`
    ///   (why the harness failed, or null), `trace_id`, `duration_ms`, `tool_calls`, `failed`
    ///   (the names of the scores that failed the trial);
    /// - `run_finished`: `run_id`, `verdict` (`passed` or `failed`), `trials`, `passed`,
    ///   `failed`, `errors`, `gates` (`[{name, passed}]`).
    pub fn wire(&self) -> Value {
        use serde_json::json;
        match self {
            RunEvent::RunStarted {
                header,
                planned,
                already_done,
                at,
            } => json!({
                "type": "run_started", "at": at, "run_id": header.run_id, "suite": header.suite,
                "agent": header.agent, "seed": header.seed, "epochs": header.epochs,
                "planned": planned, "already_done": already_done,
            }),
            RunEvent::TrialStarted {
                case_id, epoch, at, ..
            } => json!({"type": "trial_started", "at": at, "case_id": case_id, "epoch": epoch}),
            RunEvent::TrialEvent {
                case_id,
                epoch,
                event,
                at,
                ..
            } => {
                let mut line = serde_json::to_value(event)
                    .unwrap_or_else(|e| json!({"type": "unreadable", "error": e.to_string()}));
                if let Value::Object(fields) = &mut line {
                    fields.insert("at".into(), json!(at));
                    fields.insert("case_id".into(), json!(case_id));
                    fields.insert("epoch".into(), json!(epoch));
                }
                line
            }
            RunEvent::TrialScored {
                case_id,
                epoch,
                score,
                at,
                ..
            } => json!({
                "type": "verdict", "at": at, "case_id": case_id, "epoch": epoch,
                "evaluator": score.name, "dimension": score.dimension, "passed": score.passed,
                "value": score.value, "score": score.score, "severity": score.severity,
                "details": score.details, "events": score.events,
            }),
            RunEvent::TrialFinished { record, at, .. } => {
                let failed: Vec<&str> = record
                    .scores
                    .iter()
                    .filter(|s| s.fails_trial())
                    .map(|s| s.name.as_str())
                    .collect();
                json!({
                    "type": "trial_finished", "at": at, "case_id": record.case_id,
                    "epoch": record.epoch, "status": record.status, "error": record.error,
                    "trace_id": record.trace_id, "duration_ms": record.duration_ms,
                    "tool_calls": record.trajectory.tool_calls().count(), "failed": failed,
                })
            }
            RunEvent::RunFinished { results, at } => run_finished_wire(results, at),
        }
    }
}

/// The `run_finished` line of `--events` for a run's results (see [`RunEvent::wire`]).
pub fn run_finished_wire(results: &RunResults, at: &str) -> Value {
    use serde_json::json;
    let count = |name: &str| {
        results
            .metrics
            .get(name)
            .copied()
            .flatten()
            .map_or(0, |v| v as u64)
    };
    let gates: Vec<Value> = results
        .gates
        .iter()
        .map(|g| json!({"name": g.name, "passed": g.passed}))
        .collect();
    json!({
        "type": "run_finished", "at": at, "run_id": results.header.run_id,
        "verdict": results.verdict,
        "trials": count(crate::names::metric::TRIALS),
        "passed": count(crate::names::metric::PASSED),
        "failed": count(crate::names::metric::FAILED),
        "errors": count(crate::names::metric::ERRORS),
        "gates": gates,
    })
}
