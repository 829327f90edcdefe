//! Trial summaries kept on disk rather than in memory, for runs too large to hold: `score` on a
//! big file and `run` past its kept summaries tally their metrics as trials stream by and write
//! their summaries here, in plan order; the file then becomes the run folder's
//! `summaries.jsonl`, so memory stays flat however many trials there are.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use gauntlet_model::{RunResults, TrialSummary};

use crate::StoreError;
use crate::error::io;

/// Trial summaries in a file (one JSON object per line): a temporary file, deleted when dropped,
/// until [`SpilledSummaries::keep_as`] names it.
#[derive(Debug)]
pub struct SpilledSummaries {
    file: BufWriter<File>,
    path: PathBuf,
    /// Deletes the file when dropped, until it is kept.
    temp: Option<tempfile::TempPath>,
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
        let mut builder = tempfile::Builder::new();
        builder.prefix(PREFIX).suffix(SUFFIX);
        // It becomes the run folder's `summaries.jsonl`: created 0666 less the umask, as the
        // folder's other files are, not 0600 as temporary files are by default.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let (file, temp) = builder
            .tempfile_in(&where_)
            .map_err(io(&where_))?
            .into_parts();
        Ok(SpilledSummaries {
            file: BufWriter::with_capacity(1 << 16, file),
            path: temp.to_path_buf(),
            temp: Some(temp),
            count: 0,
        })
    }

    /// Keeps the file as `to` (renamed, or copied across file systems), synced: it is no longer
    /// deleted when dropped.
    pub fn keep_as(&mut self, to: &Path) -> Result<(), StoreError> {
        self.file.flush().map_err(io(&self.path))?;
        self.file.get_ref().sync_all().map_err(io(&self.path))?;
        if let Some(temp) = self.temp.take() {
            if let Err(e) = temp.persist(to) {
                // Another file system (a spill outside the run folder): copied, then deleted.
                std::fs::copy(&e.path, to).map_err(io(to))?;
                File::open(to).and_then(|f| f.sync_all()).map_err(io(to))?;
            }
            self.path = to.to_owned();
        }
        Ok(())
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
        write_summary(&mut line, summary)?;
        line.push(b'\n');
        Ok(EncodedSummary(line))
    }

    /// Adds one summary serialised by [`SpilledSummaries::encode`].
    pub fn push_encoded(&mut self, summary: &EncodedSummary) -> Result<(), StoreError> {
        if let Err(e) = self.file.write_all(&summary.0) {
            return Err(io(&self.path)(e));
        }
        self.count += 1;
        Ok(())
    }

    /// Adds one summary.
    pub fn push(&mut self, summary: &TrialSummary) -> Result<(), StoreError> {
        let line = Self::encode(summary).map_err(|e| StoreError::Format {
            path: self.path.clone(),
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
        out: impl Write,
    ) -> Result<(), StoreError> {
        self.file.flush().map_err(io(&self.path))?;
        write_full_results(results, &self.path, out)
    }
}

/// Writes one summary as JSON, bounded first when it must be (see [`gauntlet_model::bound`]):
/// whatever a trial recorded, the line reads back.
pub(crate) fn write_summary(
    out: impl Write,
    summary: &TrialSummary,
) -> Result<(), serde_json::Error> {
    if gauntlet_model::bound::summary_in_bounds(summary) {
        return serde_json::to_writer(out, summary);
    }
    let mut bounded = summary.clone();
    gauntlet_model::bound::bound_summary(&mut bounded);
    serde_json::to_writer(out, &bounded)
}

/// Writes `results` (whose `trials` are left out) as pretty JSON to `out` with its `trials`
/// being the summaries of the file `summaries` (one per line), streamed: the full view of a run
/// of any size in the memory of one summary.
pub fn write_full_results(
    results: &RunResults,
    summaries: &Path,
    mut out: impl Write,
) -> Result<(), StoreError> {
    let format = |message: String| StoreError::Format {
        path: summaries.to_owned(),
        line: 1,
        message,
    };
    let mut value =
        serde_json::to_value(results.without_trials()).map_err(|e| format(e.to_string()))?;
    value["trials"] = serde_json::Value::String(SLOT.to_owned());
    let text = serde_json::to_string_pretty(&value).map_err(|e| format(e.to_string()))?;
    let slot = serde_json::to_string(SLOT).map_err(|e| format(e.to_string()))?;
    let Some((before, after)) = text.split_once(&slot) else {
        return Err(format("the results have no trials slot".to_owned()));
    };
    let file = crate::open::open_regular(summaries).map_err(io(summaries))?;
    let run = |out: &mut dyn Write| -> std::io::Result<()> {
        out.write_all(before.as_bytes())?;
        out.write_all(b"[")?;
        let mut first = true;
        let mut lines = crate::open::BoundedLines::new(BufReader::with_capacity(1 << 16, &file));
        let mut line = Vec::new();
        while lines.read_line_bytes(&mut line)? > 0 {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            if line.is_empty() {
                continue;
            }
            out.write_all(if first { b"\n    " } else { b",\n    " })?;
            out.write_all(&line)?;
            first = false;
        }
        out.write_all(if first { b"]" } else { b"\n  ]" })?;
        out.write_all(after.as_bytes())?;
        out.write_all(b"\n")
    };
    run(&mut out).map_err(io(summaries))
}
