//! [`Recorder`]: a run folder written from the run event stream, for the ways in whose trials
//! come from elsewhere (shadow sessions, imported traces). It goes through the store's one
//! writer with the same events as [`crate::Run`], and tallies the run as trials arrive, so
//! memory holds summaries, never records.

use std::path::Path;

use gauntlet_model::{RunEvent, RunHeader, TrialRecord, TrialSummary};
use gauntlet_store::RunWriter;

use crate::session::RunError;
use gauntlet_store::clock::{now, stamp};

/// A run folder being written, trial by trial.
pub struct Recorder {
    writer: RunWriter,
    header: RunHeader,
    tally: gauntlet_verdict::Accumulator,
    summaries: Vec<TrialSummary>,
}

impl Recorder {
    /// A new run folder at `out` for `header`, and the run's `RunStarted` event (nothing is
    /// planned: trials arrive as they come).
    pub fn start(out: &Path, header: RunHeader) -> Result<(Recorder, RunEvent), RunError> {
        let writer = RunWriter::create(out, &header).map_err(|source| RunError::Store {
            doing: "failed to create the run folder",
            source,
        })?;
        let started = RunEvent::RunStarted {
            header: Box::new(header.clone()),
            planned: 0,
            already_done: 0,
            at: now(),
        };
        let recorder = Recorder {
            writer,
            tally: gauntlet_verdict::Accumulator::with_judges(&header.judges),
            header,
            summaries: Vec::new(),
        };
        Ok((recorder, started))
    }

    /// The run folder.
    pub fn dir(&self) -> &Path {
        self.writer.dir()
    }

    /// Stores one judged trial, and its `TrialFinished` event (the record as stored).
    pub fn trial(&mut self, record: TrialRecord) -> Result<RunEvent, RunError> {
        // The record carries its own initial state (see `RunWriter::consume`).
        let mut event = RunEvent::TrialFinished {
            index: self.summaries.len(),
            record: Box::new(record),
            initial_state: std::sync::Arc::new(serde_json::Value::Null),
            final_state: None,
            at: now(),
        };
        self.writer
            .consume(&mut event)
            .map_err(|source| RunError::Store {
                doing: "failed to record a trial",
                source,
            })?;
        if let RunEvent::TrialFinished { record, .. } = &event {
            let summary = TrialSummary::of(record);
            self.tally.push(&summary);
            self.summaries.push(summary);
        }
        Ok(event)
    }

    /// How many trials it holds.
    pub fn trials(&self) -> usize {
        self.summaries.len()
    }

    /// Writes `results.json` (metrics of every trial; no gates: these runs have no suite to
    /// decide them), and the run's `RunFinished` event.
    pub fn finish(self) -> Result<RunEvent, RunError> {
        let (results, _) = gauntlet_verdict::results_of(
            self.header.clone(),
            stamp(),
            self.tally.finish(self.header.seed, None),
            self.summaries,
            &[],
            None,
        );
        self.writer
            .finish(&results)
            .map_err(|source| RunError::Store {
                doing: "failed to write results",
                source,
            })?;
        Ok(RunEvent::RunFinished {
            at: results.finished_at.clone(),
            results: Box::new(results),
        })
    }
}
