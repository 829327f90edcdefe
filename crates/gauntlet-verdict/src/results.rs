//! The canonical result of a run from its trial summaries: metrics, gates, rubric, verdict.
//! Pure: the caller gives the time the run finished.

use crate::{Accumulator, Aggregate, CompiledGate, CompiledRubric, decide_all};
use gauntlet_model::{FORMAT_VERSION, RunHeader, RunResults, TrialSummary, Verdict};

/// The result of a run, and the gate evaluation errors (which make the input invalid).
pub fn build_results(
    header: RunHeader,
    finished_at: String,
    trials: Vec<TrialSummary>,
    gates: &[CompiledGate],
    rubric: Option<&CompiledRubric>,
) -> (RunResults, Vec<String>) {
    let mut acc = Accumulator::with_judges(&header.judges);
    for t in &trials {
        acc.push(t);
    }
    let agg = acc.finish(header.seed, None);
    results_of(header, finished_at, agg, trials, gates, rubric)
}

/// The result of a run whose trials were tallied as they streamed by (`agg` from
/// [`Accumulator::finish`]); `trials` are the summaries kept for `results.json`, which may be
/// none when they are written elsewhere.
pub fn results_of(
    header: RunHeader,
    finished_at: String,
    mut agg: Aggregate,
    trials: Vec<TrialSummary>,
    gates: &[CompiledGate],
    rubric: Option<&CompiledRubric>,
) -> (RunResults, Vec<String>) {
    let judges = std::mem::take(&mut agg.judges);
    let (outcomes, errors) = decide_all(gates, &agg);
    let (rubric, rubric_passed) = match rubric {
        Some(r) => {
            let (o, ok) = r.decide(&agg);
            (Some(o), ok)
        }
        None => (None, true),
    };
    let verdict = if outcomes.iter().all(|g| g.passed) && rubric_passed {
        Verdict::Passed
    } else {
        Verdict::Failed
    };
    (
        RunResults {
            format_version: FORMAT_VERSION,
            header,
            finished_at,
            verdict,
            metrics: gauntlet_model::Metrics {
                benchmark: agg.benchmark,
                values: agg
                    .metrics
                    .into_iter()
                    .map(|(k, v)| (k, (!v.is_nan()).then_some(v)))
                    .collect(),
            },
            intervals: agg.intervals,
            evaluators: agg.evaluators,
            segments: agg.segments,
            flaky_cases: agg.flaky_cases,
            first_wrong_steps: agg.first_wrong_steps,
            rubric,
            gates: outcomes,
            judges,
            retried: 0,
            trials,
        },
        errors,
    )
}
