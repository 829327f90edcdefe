//! A run's trial summaries on their way to `results.json`: tallied one at a time in plan order
//! (so the statistics do not depend on which trial ended first), and held in memory up to a
//! limit, past which they wait on disk. What `run` and `merge` hold grows with the cases and the
//! trials in flight, never with the run's length.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gauntlet_model::{JudgeHeader, RunHeader, RunResults, TrialSummary};
use gauntlet_store::{RunWriter, SpilledSummaries, StoreError};
use gauntlet_verdict::{Accumulator, CompiledGate, CompiledRubric, results_of};

/// Trial summaries tallied in the order they are pushed.
pub struct Tally {
    acc: Accumulator,
    kept: Vec<TrialSummary>,
    spill: Option<SpilledSummaries>,
    keep: usize,
    dir: PathBuf,
    retried: u32,
}

/// A finished tally: the results (their `trials` empty when `spill` holds them), the gates that
/// could not be decided, and the summaries on disk for a run too large to hold them.
pub struct Tallied {
    /// The run's results.
    pub results: RunResults,
    /// Gates that could not be decided.
    pub gate_errors: Vec<String>,
    /// The trial summaries, on disk, when there were more than the tally kept.
    pub spill: Option<SpilledSummaries>,
}

impl Tally {
    /// A tally keeping at most `keep` summaries in memory; the rest wait in a file in `dir`
    /// (the run folder), deleted when the spill is dropped.
    pub fn new(judges: &[JudgeHeader], keep: usize, dir: &Path) -> Tally {
        Tally {
            acc: Accumulator::with_judges(judges),
            kept: Vec::new(),
            spill: None,
            keep,
            dir: dir.to_owned(),
            retried: 0,
        }
    }

    /// Counts `trials` replayed after a harness error (`--retry-errors`), for the results'
    /// `retried`.
    pub fn add_retried(&mut self, trials: u32) {
        self.retried += trials;
    }

    /// Adds the next summary.
    pub fn push(&mut self, summary: TrialSummary) -> Result<(), StoreError> {
        self.acc.push(&summary);
        match &mut self.spill {
            Some(spill) => spill.push(&summary),
            None if self.kept.len() < self.keep => {
                self.kept.push(summary);
                Ok(())
            }
            None => {
                let mut spill = SpilledSummaries::create(Some(&self.dir))?;
                for t in self.kept.drain(..).chain(std::iter::once(summary)) {
                    spill.push(&t)?;
                }
                self.kept = Vec::new();
                self.spill = Some(spill);
                Ok(())
            }
        }
    }

    /// The run's results from everything pushed, written by `writer` (the run is complete).
    pub fn finish(
        self,
        header: RunHeader,
        finished_at: String,
        gates: &[CompiledGate],
        rubric: Option<&CompiledRubric>,
        writer: RunWriter,
    ) -> Result<Tallied, StoreError> {
        let seed = header.seed;
        let (mut results, gate_errors) = results_of(
            header,
            finished_at,
            self.acc.finish(seed, None),
            self.kept,
            gates,
            rubric,
        );
        results.retried = self.retried;
        let mut spill = self.spill;
        match &mut spill {
            Some(s) => writer.finish_spilled(&results, s),
            None => writer.finish(&results),
        }?;
        Ok(Tallied {
            results,
            gate_errors,
            spill,
        })
    }
}

/// A [`Tally`] fed in any order: each summary comes with its plan position and waits until
/// every earlier position has come. Memory holds only those that ended ahead of an earlier one
/// still running (about the trials in flight).
pub struct InOrder {
    tally: Tally,
    /// The positions still to come, in order.
    expected: std::iter::Peekable<Box<dyn Iterator<Item = usize> + Send>>,
    waiting: BTreeMap<usize, TrialSummary>,
}

impl InOrder {
    /// Feeds `tally` in the order of `positions`.
    pub fn new(tally: Tally, positions: Box<dyn Iterator<Item = usize> + Send>) -> InOrder {
        InOrder {
            tally,
            expected: positions.peekable(),
            waiting: BTreeMap::new(),
        }
    }

    /// The summary of the trial at `position`; it is tallied once the earlier ones are.
    pub fn push(&mut self, position: usize, summary: TrialSummary) -> Result<(), StoreError> {
        self.waiting.insert(position, summary);
        while let Some(next) = self.expected.peek().copied() {
            let Some(summary) = self.waiting.remove(&next) else {
                break;
            };
            self.expected.next();
            self.tally.push(summary)?;
        }
        Ok(())
    }

    /// Counts `trials` replayed after a harness error (see [`Tally::add_retried`]).
    pub fn add_retried(&mut self, trials: u32) {
        self.tally.add_retried(trials);
    }

    /// The tally of everything pushed; summaries still waiting on one that never came (a run
    /// cut short) are tallied in their order.
    pub fn into_tally(mut self) -> Result<Tally, StoreError> {
        for (_, summary) in std::mem::take(&mut self.waiting) {
            self.tally.push(summary)?;
        }
        Ok(self.tally)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(case: &str, epoch: u32) -> TrialSummary {
        serde_json::from_value(serde_json::json!({
            "case_id": case, "epoch": epoch, "trace_id": "", "status": "passed", "scores": [],
            "tool_calls": 0, "steps": 0, "tokens": 0, "cost_eur": 0.0, "duration_ms": 0.0,
            "final_state": null
        }))
        .unwrap()
    }

    #[test]
    fn summaries_are_tallied_in_plan_order_whatever_order_they_end_in() {
        let dir = tempfile::tempdir().unwrap();
        let mut ordered = InOrder::new(
            Tally::new(&[], 2, dir.path()),
            Box::new([0usize, 3, 6, 9].into_iter()),
        );
        for p in [6, 0, 9, 3] {
            ordered.push(p, summary("c", p as u32)).unwrap();
        }
        assert!(ordered.waiting.is_empty());
        let tally = ordered.into_tally().unwrap();
        // Past two summaries they wait on disk, in order.
        assert!(tally.kept.is_empty());
        assert_eq!(tally.spill.as_ref().map(SpilledSummaries::len), Some(4));
        let run = dir.path().join("run");
        let header = RunHeader::new("r", "s", "a", "t");
        let writer = RunWriter::create(&run, &header).unwrap();
        let done = tally.finish(header, "t".into(), &[], None, writer).unwrap();
        assert!(done.results.trials.is_empty() && done.spill.is_some());
        assert_eq!(done.results.metrics["trials"], Some(4.0));
        let stored = gauntlet_store::read_results(&run).unwrap();
        let epochs: Vec<u32> = stored.trials.iter().map(|t| t.epoch).collect();
        assert_eq!(epochs, [0, 3, 6, 9]);
        drop(done);
        // The spill file went with it.
        let left: Vec<_> = std::fs::read_dir(&run)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            left.iter()
                .all(|n| !n.to_string_lossy().starts_with(".summaries-")),
            "{left:?}"
        );
    }
}
