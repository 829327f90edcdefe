//! Trial summaries kept on disk rather than in memory, for runs too large to hold: `score` on a
//! big file tallies its metrics as trials stream by and writes their summaries here; the
//! results are then written with the summaries copied in from the file, so memory stays flat
//! however many trials there are, and `results.json` keeps its format.

use std::io::{BufRead, BufReader, BufWriter, Seek, Write};
use std::path::Path;

use gauntlet_model::{RunResults, TrialSummary};

use crate::StoreError;
use crate::run_dir::io;

/// Trial summaries in a temporary file (one JSON object per line), deleted when dropped.
#[derive(Debug)]
pub struct SpilledSummaries {
    file: BufWriter<tempfile::NamedTempFile>,
    count: u64,
}

/// The names spill files in a run folder go by (a random part between them).
const PREFIX: &str = ".summaries-";
const SUFFIX: &str = ".jsonl";

/// Deletes the spill files a stopped process left in a run folder (a kill never deletes its
/// own): only the process finishing the run writes one, so any found when resuming is stale.
pub(crate) fn sweep_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(PREFIX) && name.ends_with(SUFFIX) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A trial summary serialised for a spill file (see [`SpilledSummaries::encode`]).
pub struct EncodedSummary(Vec<u8>);

/// Stands in for the trials while the rest of the results is printed.
const SLOT: &str = "\u{0}gauntlet-trials-slot\u{0}";

impl SpilledSummaries {
    /// A spill file in `dir` (a run folder), or in the system's temporary folder.
    pub fn create(dir: Option<&Path>) -> Result<SpilledSummaries, StoreError> {
        let where_ = dir.map_or_else(std::env::temp_dir, Path::to_owned);
        let file = tempfile::Builder::new()
            .prefix(PREFIX)
            .suffix(SUFFIX)
            .tempfile_in(&where_)
            .map_err(io(&where_))?;
        Ok(SpilledSummaries {
            file: BufWriter::with_capacity(1 << 16, file),
            count: 0,
        })
    }

    /// Summaries written so far.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether none was written.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// A summary serialised as [`SpilledSummaries::push`] would write it, on any thread.
    pub fn encode(summary: &TrialSummary) -> Result<EncodedSummary, serde_json::Error> {
        let mut line = Vec::with_capacity(2048);
        serde_json::to_writer(&mut line, summary)?;
        line.push(b'\n');
        Ok(EncodedSummary(line))
    }

    /// Adds one summary serialised by [`SpilledSummaries::encode`].
    pub fn push_encoded(&mut self, summary: &EncodedSummary) -> Result<(), StoreError> {
        if let Err(e) = self.file.write_all(&summary.0) {
            return Err(io(self.file.get_ref().path())(e));
        }
        self.count += 1;
        Ok(())
    }

    /// Adds one summary.
    pub fn push(&mut self, summary: &TrialSummary) -> Result<(), StoreError> {
        let line = Self::encode(summary).map_err(|e| StoreError::Format {
            path: self.file.get_ref().path().to_owned(),
            line: self.count as usize + 1,
            message: e.to_string(),
        })?;
        self.push_encoded(&line)
    }

    /// Writes `results` as pretty JSON to `out` with its `trials` (which must be empty) being
    /// the spilled summaries, in the order they were pushed.
    pub fn write_results(
        &mut self,
        results: &RunResults,
        mut out: impl Write,
    ) -> Result<(), StoreError> {
        let path = self.file.get_ref().path().to_owned();
        let format = |message: String| StoreError::Format {
            path: path.clone(),
            line: 1,
            message,
        };
        self.file.flush().map_err(io(&path))?;
        let mut value = serde_json::to_value(results).map_err(|e| format(e.to_string()))?;
        value["trials"] = serde_json::Value::String(SLOT.to_owned());
        let text = serde_json::to_string_pretty(&value).map_err(|e| format(e.to_string()))?;
        let slot = serde_json::to_string(SLOT).map_err(|e| format(e.to_string()))?;
        let Some((before, after)) = text.split_once(&slot) else {
            return Err(format("the results have no trials slot".to_owned()));
        };
        let mut file = self.file.get_ref().reopen().map_err(io(&path))?;
        file.rewind().map_err(io(&path))?;
        let write = |out: &mut dyn Write, bytes: &[u8]| out.write_all(bytes);
        let mut run = |out: &mut dyn Write| -> std::io::Result<()> {
            write(out, before.as_bytes())?;
            write(out, b"[")?;
            let mut first = true;
            for line in BufReader::with_capacity(1 << 16, &mut file).split(b'\n') {
                let line = line?;
                if line.is_empty() {
                    continue;
                }
                write(out, if first { b"\n    " } else { b",\n    " })?;
                write(out, &line)?;
                first = false;
            }
            write(out, if first { b"]" } else { b"\n  ]" })?;
            write(out, after.as_bytes())?;
            write(out, b"\n")
        };
        run(&mut out).map_err(io(&path))
    }

    /// Writes the results into `dir/results.json` (atomically), as [`Self::write_results`].
    pub fn write_results_file(
        &mut self,
        results: &RunResults,
        dir: &Path,
    ) -> Result<(), StoreError> {
        crate::run_dir::write_atomic_with(&dir.join("results.json"), |w, _| {
            self.write_results(results, w)
        })
    }
}
