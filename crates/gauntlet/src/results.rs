//! Building the canonical result from trial summaries: metrics, gates, verdict.

use gauntlet_eval::{CompiledGate, aggregate, decide_all};
use gauntlet_model::{FORMAT_VERSION, RunHeader, RunResults, TrialSummary, Verdict};

/// The result of a run, and the gate evaluation errors (which make the input invalid).
pub fn build_results(
    header: RunHeader,
    trials: Vec<TrialSummary>,
    gates: &[CompiledGate],
) -> (RunResults, Vec<String>) {
    let agg = aggregate(&trials);
    let (outcomes, errors) = decide_all(gates, &agg);
    let verdict = if outcomes.iter().all(|g| g.passed) {
        Verdict::Passed
    } else {
        Verdict::Failed
    };
    (
        RunResults {
            format_version: FORMAT_VERSION,
            header,
            finished_at: now(),
            verdict,
            metrics: agg
                .metrics
                .into_iter()
                .map(|(k, v)| (k, (!v.is_nan()).then_some(v)))
                .collect(),
            evaluators: agg.evaluators,
            segments: agg.segments,
            gates: outcomes,
            trials,
        },
        errors,
    )
}

/// The current time, RFC 3339 in UTC, to the second.
pub fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string())
}
