//! The verdict on a run: metrics over its trials' scores (`aggregate`, streamed by an
//! `Accumulator`), CEL gates and rubrics over those metrics (`gates`, `rubric`), the stored
//! `results.json` and its verdict (`results`), and two runs compared case by case (`compare`).
//!
//! One trial's scores are `gauntlet-eval`'s; everything here starts from them. Pure and
//! synchronous, like the evaluators: a stored run is re-gated with the functions the live run
//! used.
#![warn(missing_docs)]

mod aggregate;
mod compare;
mod gates;
mod results;
mod rubric;

pub use aggregate::{
    Accumulator, Aggregate, DISTRIBUTIONS, EXACT_QUANTILE_VALUES, MAX_K, aggregate, metric_names,
    pass_k_metrics,
};
pub use compare::{ALPHA, Comparer, MAX_PAIR_BOOTSTRAP, compare, compare_streams};
pub use gates::{CompiledGate, GateError, GateSpec, HARNESS_GATE, decide_all, harness_gate};
pub use results::{aggregate_of, build_results, regate, results_of};
pub use rubric::CompiledRubric;
