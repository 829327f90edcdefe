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

/// A stored run's metrics as the aggregate gates and rubrics read: `results.json` holds all of
/// it (metrics, intervals, evaluators, segments, flaky cases, first wrong steps, the benchmark's
/// headline, the judges), so a run is decided again without reading one trial.
pub fn aggregate_of(results: &RunResults) -> Aggregate {
    Aggregate {
        metrics: results
            .metrics
            .values
            .iter()
            .map(|(k, v)| (k.clone(), v.unwrap_or(f64::NAN)))
            .collect(),
        intervals: results.intervals.clone(),
        evaluators: results.evaluators.clone(),
        segments: results.segments.clone(),
        flaky_cases: results.flaky_cases.clone(),
        first_wrong_steps: results.first_wrong_steps.clone(),
        benchmark: results.metrics.benchmark.clone(),
        judges: results.judges.clone(),
    }
}

/// A stored run decided again by `gates` and `rubric` on its stored metrics ([`aggregate_of`]):
/// what [`build_results`] over its trial summaries gives, in memory bounded by the metrics.
/// `stored.trials` are kept as they are (none when read without them).
pub fn regate(
    stored: RunResults,
    gates: &[CompiledGate],
    rubric: Option<&CompiledRubric>,
) -> (RunResults, Vec<String>) {
    let agg = aggregate_of(&stored);
    results_of(
        stored.header,
        stored.finished_at,
        agg,
        stored.trials,
        gates,
        rubric,
    )
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
