//! Writing and reading run directories.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use gauntlet_model::{
    ChangedState, FORMAT_VERSION, OLDEST_READABLE_FORMAT, RunEvent, RunHeader, RunResults,
    SUMMARIES_FILE, StateRef, TrialRecord, TrialSummary,
};
use serde_json::Value;

pub use crate::error::StoreError;

use crate::error::io;
use crate::open::{BoundedLines, open_regular, read_regular, read_regular_to_string};
use crate::states::{StateReader, StateWriter};

/// A trial record serialised for `trials.jsonl` (see [`RunWriter::encode`]).
pub struct EncodedRecord(Vec<u8>);

/// One line of `trials.jsonl`; an error names `path`.
fn encode_line(
    record: &TrialRecord,
    path: impl FnOnce() -> PathBuf,
) -> Result<EncodedRecord, StoreError> {
    // Everything written must read back, whatever a trial recorded (see
    // `gauntlet_model::bound`): the rare record out of bounds is copied and bounded.
    let bounded;
    let record = if gauntlet_model::bound::record_in_bounds(record) {
        record
    } else {
        let mut copy = record.clone();
        gauntlet_model::bound::bound_record(&mut copy);
        bounded = copy;
        &bounded
    };
    let mut line = Vec::with_capacity(4096);
    serde_json::to_writer(&mut line, record).map_err(|e| StoreError::Format {
        path: path(),
        line: 0,
        message: e.to_string(),
    })?;
    line.push(b'\n');
    Ok(EncodedRecord(line))
}

/// Writes a JSON document atomically: a temporary file in the same folder, then a rename.
fn write_atomic<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    write_atomic_with(path, |w, tmp| {
        serde_json::to_writer_pretty(&mut *w, value).map_err(|e| StoreError::Format {
            path: tmp.to_owned(),
            line: 1,
            message: e.to_string(),
        })?;
        w.write_all(b"\n").map_err(io(tmp))
    })
}

/// Writes `path` through `write` (given the writer and the temporary path) into a temporary
/// file beside it, synced, then renamed over it: a reader sees the old file or the new one.
pub(crate) fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>, &Path) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let tmp = path.with_extension("json.tmp");
    let file = File::create(&tmp).map_err(io(&tmp))?;
    let mut w = BufWriter::with_capacity(1 << 16, file);
    write(&mut w, &tmp)?;
    w.into_inner()
        .map_err(|e| StoreError::Io {
            path: tmp.clone(),
            source: e.into_error(),
        })?
        .sync_all()
        .map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

/// Writes one run directory as the run goes.
pub struct RunWriter {
    dir: PathBuf,
    /// The header as `run.json` holds it.
    header: RunHeader,
    trials: BufWriter<File>,
    states: StateWriter,
}

impl RunWriter {
    /// Creates the directory and writes the header. Refuses a folder that already holds a run.
    pub fn create(dir: &Path, header: &RunHeader) -> Result<RunWriter, StoreError> {
        if dir.join("run.json").exists() {
            return Err(StoreError::Exists(dir.to_owned()));
        }
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        write_atomic(&dir.join("run.json"), header)?;
        let path = dir.join("trials.jsonl");
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(RunWriter {
            dir: dir.to_owned(),
            header: header.clone(),
            trials: BufWriter::new(file),
            states: StateWriter::default(),
        })
    }

    /// Reopens a run that stopped before it finished (killed, crashed), to add the trials it
    /// lacks: its header, and the summaries of the trials already written (their states as
    /// stored).
    /// A last line cut short by the stop is removed, so nothing half-written stays; a record
    /// written twice is kept once.
    pub fn resume(dir: &Path) -> Result<(RunWriter, RunHeader, Vec<TrialSummary>), StoreError> {
        Self::resume_with(dir, false)
    }

    /// [`RunWriter::resume`]; with `set_aside`, a complete line that is not a record (a disk
    /// error, a hand edit) is moved to `trials.corrupt.jsonl`, nothing lost, and its trial runs
    /// again, instead of refusing the run.
    pub fn resume_with(
        dir: &Path,
        set_aside: bool,
    ) -> Result<(RunWriter, RunHeader, Vec<TrialSummary>), StoreError> {
        if dir.join("results.json").exists() {
            return Err(StoreError::Finished(dir.to_owned()));
        }
        let header = read_header(dir)?;
        crate::spill::sweep_stale(dir);
        let path = dir.join("trials.jsonl");
        // Streamed: each record is summarised as it is read, and only the summaries are kept.
        let mut summaries: Vec<TrialSummary> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let (mut kept, mut last) = (0u64, b'\n');
        let mut corrupt: Vec<usize> = Vec::new();
        if let Some(file) = match open_regular(&path) {
            Ok(f) => Some(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io(&path)(e)),
        } {
            let mut reader = BoundedLines::new(BufReader::new(file));
            let mut line = Vec::new();
            for i in 1.. {
                if reader.read_line_bytes(&mut line).map_err(io(&path))? == 0 {
                    break;
                }
                let complete = line.ends_with(b"\n");
                if !line.iter().all(u8::is_ascii_whitespace) {
                    match serde_json::from_slice::<TrialRecord>(&line) {
                        Ok(r) => {
                            if seen.insert((r.case_id.clone(), r.epoch)) {
                                summaries.push(TrialSummary::of(&r));
                            }
                        }
                        // The stop cut the last record short: drop it, the trial runs again.
                        Err(_) if !complete => break,
                        Err(_) if set_aside => corrupt.push(i),
                        Err(e) => {
                            return Err(StoreError::Format {
                                path: path.clone(),
                                line: i,
                                message: format!(
                                    "{e}; this line is not a trial record. `gauntlet run SUITE \
                                     --resume {} --set-aside-corrupt` moves such lines to \
                                     trials.corrupt.jsonl and runs their trials again",
                                    dir.display()
                                ),
                            });
                        }
                    }
                }
                kept += line.len() as u64;
                last = *line.last().unwrap_or(&b'\n');
            }
        }
        if !corrupt.is_empty() {
            kept = set_lines_aside(&path, &dir.join("trials.corrupt.jsonl"), &corrupt, kept)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        file.set_len(kept).map_err(io(&path))?;
        if last != b'\n' {
            file.write_all(b"\n").map_err(io(&path))?;
        }
        let writer = RunWriter {
            dir: dir.to_owned(),
            header: header.clone(),
            trials: BufWriter::new(file),
            states: StateWriter::default(),
        };
        Ok((writer, header, summaries))
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one trial record and flushes it. A large initial state is written once under
    /// `states/` and the record keeps a reference to it and the trial's changes; the final
    /// state's stored form is returned then, for the trial's summary in `results.json`.
    pub fn append(&mut self, record: &TrialRecord) -> Result<Option<Value>, StoreError> {
        let compact = self
            .states
            .compact(&self.dir, &record.initial_state, &record.final_state)?;
        let owned;
        let mut stored_final = None;
        let record = match compact {
            None => record,
            Some((initial, final_state)) => {
                stored_final = Some(final_state.clone());
                // The record as stored: its states by reference.
                let mut stored = record.clone();
                stored.initial_state = initial;
                stored.final_state = final_state;
                owned = stored;
                &owned
            }
        };
        self.write_line(record)?;
        Ok(stored_final)
    }

    /// Appends a trial record whose initial state is shared with other trials. The record's
    /// states become what was written: the shared initial state, or, for a large one,
    /// references to it and the trial's changes (see [`RunWriter::append`]), so the caller can
    /// summarise the record with no further copy of a large state.
    ///
    /// `changed` is the trial's final state when it is kept as `initial` and the records the
    /// trial changed (the record's own `final_state` is then `null`): the changes stored are
    /// found by looking at those records only, and a small state is stored whole.
    pub fn append_shared(
        &mut self,
        record: &mut TrialRecord,
        initial: &std::sync::Arc<Value>,
        changed: Option<ChangedState>,
    ) -> Result<(), StoreError> {
        let final_state = match &changed {
            Some(c) => StateRef::Changed(c),
            None => StateRef::Whole(&record.final_state),
        };
        match self
            .states
            .compact_shared(&self.dir, initial, final_state)?
        {
            Some((initial, final_state)) => {
                record.initial_state = initial;
                record.final_state = final_state;
            }
            None => {
                record.initial_state = (**initial).clone();
                if let Some(c) = changed {
                    record.final_state = c.to_value();
                }
            }
        }
        self.write_line(record)
    }

    /// Writes one line of `trials.jsonl` and flushes it, so a crash loses no finished trial.
    fn write_line(&mut self, record: &TrialRecord) -> Result<(), StoreError> {
        let line = encode_line(record, || self.dir.join("trials.jsonl"))?;
        self.append_encoded(&line)
    }

    /// A record serialised as [`RunWriter::append`] would write it, on any thread (so records
    /// are serialised on every core and written in order by one); `None` for a record with a
    /// large initial state, which only `append` can store (it writes the state once under
    /// `states/`).
    pub fn encode(record: &TrialRecord) -> Option<Result<EncodedRecord, StoreError>> {
        if StateWriter::compacts(&record.initial_state) {
            return None;
        }
        Some(encode_line(record, || PathBuf::from("trials.jsonl")))
    }

    /// Appends a record serialised by [`RunWriter::encode`] and flushes it.
    pub fn append_encoded(&mut self, record: &EncodedRecord) -> Result<(), StoreError> {
        let path = self.dir.join("trials.jsonl");
        self.trials.write_all(&record.0).map_err(io(&path))?;
        self.trials.flush().map_err(io(&path))
    }

    /// Copies the stored states of another run folder (named by content: a file already here
    /// is the same state), so its records can be appended as stored (to merge the parts of a
    /// sharded run).
    pub fn adopt_states(&mut self, other: &Path) -> Result<(), StoreError> {
        let states = other.join("states");
        if !states.is_dir() {
            return Ok(());
        }
        let into = self.dir.join("states");
        std::fs::create_dir_all(&into).map_err(io(&into))?;
        for entry in std::fs::read_dir(&states).map_err(io(&states))? {
            let from = entry.map_err(io(&states))?.path();
            let to = into.join(from.file_name().unwrap_or_default());
            if !to.exists() {
                std::fs::copy(&from, &to).map_err(io(&to))?;
            }
        }
        Ok(())
    }

    /// Appends a record as another run folder stores it (a [`StoredTrial`], its states by
    /// reference: adopt that folder's states first). Buffered: [`RunWriter::finish`] flushes.
    pub fn append_stored(&mut self, trial: &StoredTrial) -> Result<(), StoreError> {
        let path = self.dir.join("trials.jsonl");
        self.trials
            .write_all(trial.line.as_bytes())
            .map_err(io(&path))?;
        self.trials.write_all(b"\n").map_err(io(&path))
    }

    /// The store as a consumer of the run event stream: each finished trial is appended (its
    /// record's states become what was written, so later consumers summarise it as stored).
    /// A record whose `initial_state` is `null` started from the event's shared state; one
    /// that carries its own (a shadow session, an imported trace) is stored with it. Other
    /// events write nothing; [`RunWriter::finish`] writes the result.
    pub fn consume(&mut self, event: &mut RunEvent) -> Result<(), StoreError> {
        if let RunEvent::TrialFinished {
            record,
            initial_state,
            final_state,
            ..
        } = event
        {
            if record.initial_state.is_null() {
                self.append_shared(record, initial_state, final_state.take())?;
            } else {
                // A record with its own initial state is stored with its final state whole.
                if let Some(changed) = final_state.take() {
                    record.final_state = changed.to_value();
                }
                if let Some((initial, final_state)) =
                    self.states
                        .compact(&self.dir, &record.initial_state, &record.final_state)?
                {
                    record.initial_state = initial;
                    record.final_state = final_state;
                }
                self.write_line(record)?;
            }
        }
        Ok(())
    }

    /// Writes the trial summaries into `summaries.jsonl`, then `results.json` (everything else),
    /// each atomically; the run is complete once `results.json` is there. The header is written
    /// again from the results when it changed (a scored file's epoch count is known at its end).
    pub fn finish(mut self, results: &RunResults) -> Result<(), StoreError> {
        self.close(results)?;
        write_atomic_with(&self.dir.join(SUMMARIES_FILE), |w, tmp| {
            for summary in &results.trials {
                crate::spill::write_summary(&mut *w, summary).map_err(|e| StoreError::Format {
                    path: tmp.to_owned(),
                    line: 1,
                    message: e.to_string(),
                })?;
                w.write_all(b"\n").map_err(io(tmp))?;
            }
            Ok(())
        })?;
        write_results_file(&self.dir, results)
    }

    /// Finishes the run as [`RunWriter::finish`], with the trial summaries (left empty in
    /// `results`) those of `spill`, whose file becomes `summaries.jsonl`.
    pub fn finish_spilled(
        mut self,
        results: &RunResults,
        spill: &mut crate::SpilledSummaries,
    ) -> Result<(), StoreError> {
        self.close(results)?;
        spill.keep_as(&self.dir.join(SUMMARIES_FILE))?;
        write_results_file(&self.dir, results)
    }

    /// Flushes the records, and writes the header again when the results' differs.
    fn close(&mut self, results: &RunResults) -> Result<(), StoreError> {
        let path = self.dir.join("trials.jsonl");
        self.trials.flush().map_err(io(&path))?;
        if self.header != results.header {
            write_atomic(&self.dir.join("run.json"), &results.header)?;
        }
        Ok(())
    }
}

/// Writes `dir/results.json`: `results` but its trial summaries (which are in `summaries.jsonl`).
fn write_results_file(dir: &Path, results: &RunResults) -> Result<(), StoreError> {
    let path = dir.join("results.json");
    let mut value =
        serde_json::to_value(results.without_trials()).map_err(|e| StoreError::Format {
            path: path.clone(),
            line: 1,
            message: e.to_string(),
        })?;
    if let Some(map) = value.as_object_mut() {
        map.remove("trials");
    }
    write_atomic(&path, &value)
}

/// Moves the 1-based `lines` of the first `kept` bytes of `path` to the end of `aside`, and
/// rewrites `path` with the others (atomically); the new length of what is kept.
fn set_lines_aside(
    path: &Path,
    aside: &Path,
    lines: &[usize],
    kept: u64,
) -> Result<u64, StoreError> {
    let text = read_regular(path).map_err(io(path))?;
    let text = &text[..usize::try_from(kept).unwrap_or(text.len()).min(text.len())];
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    for (i, line) in text.split_inclusive(|b| *b == b'\n').enumerate() {
        if lines.contains(&(i + 1)) {
            bad.extend_from_slice(line);
        } else {
            good.extend_from_slice(line);
        }
    }
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(aside)
        .map_err(io(aside))?;
    out.write_all(&bad).map_err(io(aside))?;
    out.sync_all().map_err(io(aside))?;
    let tmp = path.with_extension("jsonl.tmp");
    std::fs::write(&tmp, &good).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    Ok(good.len() as u64)
}

/// Refuses a document of another run format version, saying what to do about it. A document
/// without a version is read as this one (it cannot be told apart).
fn check_format(path: &Path, text: &str) -> Result<(), StoreError> {
    #[derive(serde::Deserialize)]
    struct Versioned {
        format_version: Option<u64>,
    }
    let version = serde_json::from_str::<Versioned>(text)
        .ok()
        .and_then(|v| v.format_version);
    let readable = u64::from(OLDEST_READABLE_FORMAT)..=u64::from(FORMAT_VERSION);
    match version {
        Some(v) if !readable.contains(&v) => Err(StoreError::Format {
            path: path.to_owned(),
            line: 1,
            message: format!(
                "run format version {v} is not supported (this gauntlet reads {OLDEST_READABLE_FORMAT} \
                 to {FORMAT_VERSION}): read it with the gauntlet release that wrote it, or run the \
                 suite again"
            ),
        }),
        _ => Ok(()),
    }
}

/// Reads `run.json`, the header of a run directory (finished or not).
pub fn read_header(dir: &Path) -> Result<RunHeader, StoreError> {
    let path = dir.join("run.json");
    let text = read_regular_to_string(&path).map_err(io(&path))?;
    check_format(&path, &text)?;
    serde_json::from_str(&text).map_err(|e| StoreError::Format {
        path,
        line: e.line(),
        message: e.to_string(),
    })
}

/// Reads a finished run whole: `results.json` of a run directory (or the file itself) with its
/// trial summaries (from `summaries.jsonl` beside it, format 2 on). Memory grows with the
/// trials: [`read_results_head`] and [`read_summaries`] read a large run in bounded memory.
pub fn read_results(path: &Path) -> Result<RunResults, StoreError> {
    let (file, mut results) = read_results_file(path)?;
    if results.format_version >= 2 {
        results.trials = summaries_of(&file)?.collect::<Result<_, _>>()?;
    }
    Ok(results)
}

/// Reads a finished run without its trial summaries (`trials` empty): bounded memory, whatever
/// the run's size, for a run in format 2 on.
pub fn read_results_head(path: &Path) -> Result<RunResults, StoreError> {
    let (_, mut results) = read_results_file(path)?;
    results.trials = Vec::new();
    Ok(results)
}

/// Reads a finished run with its trial summaries when it has at most `keep` of them, else
/// without any (`trials` empty, as a live run past that many leaves its summary); whether they
/// were left out. Memory holds `keep` summaries at most, whatever the run's size.
pub fn read_results_kept(path: &Path, keep: usize) -> Result<(RunResults, bool), StoreError> {
    let (file, mut results) = read_results_file(path)?;
    if results.format_version < 2 {
        let over = results.trials.len() > keep;
        if over {
            results.trials = Vec::new();
        }
        return Ok((results, over));
    }
    let mut kept = Vec::new();
    for summary in summaries_of(&file)? {
        if kept.len() == keep {
            return Ok((results, true));
        }
        kept.push(summary?);
    }
    results.trials = kept;
    Ok((results, false))
}

/// Streams a finished run's trial summaries, in plan order, one at a time (a run in format 1
/// has them in its `results.json`, which is read whole).
pub fn read_summaries(
    path: &Path,
) -> Result<Box<dyn Iterator<Item = Result<TrialSummary, StoreError>>>, StoreError> {
    let (file, results) = read_results_file(path)?;
    if results.format_version >= 2 {
        Ok(Box::new(summaries_of(&file)?))
    } else {
        Ok(Box::new(results.trials.into_iter().map(Ok)))
    }
}

/// The `results.json` of `path` (a run folder or the file) and what it holds as it is.
fn read_results_file(path: &Path) -> Result<(PathBuf, RunResults), StoreError> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_owned()
    };
    let text = read_regular_to_string(&file).map_err(io(&file))?;
    check_format(&file, &text)?;
    let results = serde_json::from_str(&text).map_err(|e| StoreError::Format {
        path: file.clone(),
        line: e.line(),
        message: e.to_string(),
    })?;
    Ok((file, results))
}

/// The summaries in `summaries.jsonl` beside `results` (a `results.json`), one at a time.
fn summaries_of(
    results: &Path,
) -> Result<impl Iterator<Item = Result<TrialSummary, StoreError>> + use<>, StoreError> {
    lines_of::<TrialSummary>(&summaries_beside(results))
}

/// Where the summaries of the `results.json` at `results` are.
fn summaries_beside(results: &Path) -> PathBuf {
    results.with_file_name(SUMMARIES_FILE)
}

/// The JSON lines of `path` read as `T`, one at a time; an error names the file and line.
fn lines_of<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<impl Iterator<Item = Result<T, StoreError>> + use<T>, StoreError> {
    let file = open_regular(path).map_err(|e| StoreError::Io {
        path: path.to_owned(),
        source: if e.kind() == std::io::ErrorKind::NotFound {
            std::io::Error::new(
                e.kind(),
                "the run's trial summaries are missing: a finished run (format 2 on) has them \
                 beside results.json",
            )
        } else {
            e
        },
    })?;
    let path = path.to_owned();
    Ok(BoundedLines::new(BufReader::with_capacity(1 << 16, file))
        .enumerate()
        .filter(|(_, l)| l.as_ref().map_or(true, |l| !l.trim().is_empty()))
        .map(move |(i, line)| {
            let line = line.map_err(io(&path))?;
            serde_json::from_str(&line).map_err(|e| StoreError::Format {
                path: path.clone(),
                line: i + 1,
                message: e.to_string(),
            })
        }))
}

/// What a finished run's `results.json` holds besides its trial summaries, of which only the
/// keys are kept: read with memory for the keys only, whatever the run's size.
#[derive(Debug, Clone)]
pub struct ResultsBrief {
    /// The run's header.
    pub header: RunHeader,
    /// Its gate decisions (the gates themselves, to decide again).
    pub gates: Vec<gauntlet_model::GateOutcome>,
    /// Its trials' `(case_id, epoch)`, in the order it lists them (plan order).
    pub trials: Vec<(String, u32)>,
}

/// Reads a finished run folder's `results.json` as a [`ResultsBrief`], streaming past all of
/// the trial summaries but their keys.
pub fn read_results_brief(dir: &Path) -> Result<ResultsBrief, StoreError> {
    #[derive(serde::Deserialize)]
    struct Key {
        case_id: String,
        epoch: u32,
    }
    #[derive(serde::Deserialize)]
    struct Brief {
        format_version: Option<u64>,
        header: RunHeader,
        gates: Vec<gauntlet_model::GateOutcome>,
        #[serde(default)]
        trials: Vec<Key>,
    }
    let file = dir.join("results.json");
    let reader = BufReader::with_capacity(1 << 16, open_regular(&file).map_err(io(&file))?);
    let brief: Brief = serde_json::from_reader(reader).map_err(|e| StoreError::Format {
        path: file.clone(),
        line: e.line(),
        message: e.to_string(),
    })?;
    if let Some(v) = brief.format_version {
        check_format(&file, &format!("{{\"format_version\": {v}}}"))?;
    }
    let keys = if brief.format_version.unwrap_or(FORMAT_VERSION.into()) >= 2 {
        lines_of::<Key>(&summaries_beside(&file))?.collect::<Result<Vec<_>, _>>()?
    } else {
        brief.trials
    };
    Ok(ResultsBrief {
        header: brief.header,
        gates: brief.gates,
        trials: keys.into_iter().map(|k| (k.case_id, k.epoch)).collect(),
    })
}

/// Streams the trial records of a run directory (or a `trials.jsonl` file), one at a time.
pub fn read_trials(
    path: &Path,
) -> Result<impl Iterator<Item = Result<TrialRecord, StoreError>> + use<>, StoreError> {
    read_trials_with(path, false)
}

/// Like [`read_trials`], with each trial's states restricted to what changed (stored bases are
/// not copied whole): for views that hold many trials, such as reports.
pub fn read_trials_lean(
    path: &Path,
) -> Result<impl Iterator<Item = Result<TrialRecord, StoreError>> + use<>, StoreError> {
    read_trials_with(path, true)
}

/// One line of a run folder's `trials.jsonl` as stored (states by reference), and its record.
pub struct StoredTrial {
    /// The line, without its newline.
    pub line: String,
    /// The record it holds, its states as stored.
    pub record: TrialRecord,
}

/// A run folder's records as stored (states by reference), found by `(case_id, epoch)`: one
/// pass over `trials.jsonl` notes where each record starts (its first copy, should a resumed
/// run have written one twice), then each is read on demand. Memory holds the offsets only.
pub struct StoredTrials {
    path: PathBuf,
    file: BoundedLines<BufReader<File>>,
    offsets: std::collections::HashMap<(String, u32), (u64, usize)>,
}

impl StoredTrials {
    /// Indexes the records of a run folder.
    pub fn open(dir: &Path) -> Result<StoredTrials, StoreError> {
        #[derive(serde::Deserialize)]
        struct Key {
            case_id: String,
            epoch: u32,
        }
        read_header(dir)?;
        let path = dir.join("trials.jsonl");
        let file = BufReader::with_capacity(1 << 16, open_regular(&path).map_err(io(&path))?);
        let mut lines = BoundedLines::new(file);
        let mut offsets = std::collections::HashMap::new();
        let (mut at, mut line, mut n) = (0u64, Vec::new(), 0usize);
        loop {
            let read = lines.read_line_bytes(&mut line).map_err(io(&path))?;
            if read == 0 {
                break;
            }
            n += 1;
            if !line.iter().all(u8::is_ascii_whitespace) {
                let key: Key = serde_json::from_slice(&line).map_err(|e| StoreError::Format {
                    path: path.clone(),
                    line: n,
                    message: e.to_string(),
                })?;
                offsets.entry((key.case_id, key.epoch)).or_insert((at, n));
            }
            at += read as u64;
        }
        Ok(StoredTrials {
            path,
            file: lines,
            offsets,
        })
    }

    /// How many distinct trials it holds.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The stored record of `(case_id, epoch)`, if the run has it.
    pub fn get(&mut self, case_id: &str, epoch: u32) -> Result<Option<StoredTrial>, StoreError> {
        use std::io::Seek;
        let Some(&(at, n)) = self.offsets.get(&(case_id.to_owned(), epoch)) else {
            return Ok(None);
        };
        self.file
            .get_mut()
            .seek(std::io::SeekFrom::Start(at))
            .map_err(io(&self.path))?;
        let line = match self.file.next() {
            Some(line) => line.map_err(io(&self.path))?,
            None => String::new(),
        };
        let record = serde_json::from_str(&line).map_err(|e| StoreError::Format {
            path: self.path.clone(),
            line: n,
            message: e.to_string(),
        })?;
        Ok(Some(StoredTrial { line, record }))
    }
}

fn read_trials_with(
    path: &Path,
    lean: bool,
) -> Result<impl Iterator<Item = Result<TrialRecord, StoreError>> + use<>, StoreError> {
    let file = if path.is_dir() {
        path.join("trials.jsonl")
    } else {
        path.to_owned()
    };
    // The records carry no version; their run's header does.
    if let Some(dir) = file.parent()
        && dir.join("run.json").is_file()
    {
        read_header(dir)?;
    }
    let reader = BufReader::new(open_regular(&file).map_err(io(&file))?);
    let mut states = StateReader::for_file(&file);
    Ok(BoundedLines::new(reader)
        .enumerate()
        .filter(|(_, l)| l.as_ref().map_or(true, |l| !l.trim().is_empty()))
        .map(move |(i, line)| {
            let line = line.map_err(io(&file))?;
            let mut r: TrialRecord =
                serde_json::from_str(&line).map_err(|e| StoreError::Format {
                    path: file.clone(),
                    line: i + 1,
                    message: e.to_string(),
                })?;
            let (initial, final_state) = (
                std::mem::take(&mut r.initial_state),
                std::mem::take(&mut r.final_state),
            );
            (r.initial_state, r.final_state) = if lean {
                states.lean(initial, final_state)?
            } else {
                (states.expand(initial)?, states.expand(final_state)?)
            };
            Ok(r)
        }))
}

/// A finished run as the event stream it was live: `RunStarted` (from `run.json`), each
/// trial's `TrialStarted`, its trajectory's events as `TrialEvent`s, a `TrialScored` per score
/// and `TrialFinished` in stored order (from `trials.jsonl`, states lean), and `RunFinished`
/// (from `results.json`). Timestamps are the stored ones where the run kept them (a trial's
/// start, the run's start and end); inside a trial they are its start plus the trial clock of
/// the last tool call, and a trial ends at its start plus its duration.
pub fn replay(
    dir: &Path,
) -> Result<impl Iterator<Item = Result<RunEvent, StoreError>>, StoreError> {
    replay_kept(dir, usize::MAX)
}

/// [`replay`], its `RunFinished` results holding the trial summaries only when the run has at
/// most `keep` of them (as a live run past that many finishes without them): memory for `keep`
/// summaries and one trial, whatever the run's size.
pub fn replay_kept(
    dir: &Path,
    keep: usize,
) -> Result<impl Iterator<Item = Result<RunEvent, StoreError>>, StoreError> {
    let header = read_header(dir)?;
    let (results, left_out) = read_results_kept(dir, keep)?;
    let planned = if left_out {
        results
            .metrics
            .get(gauntlet_model::names::metric::TRIALS)
            .copied()
            .flatten()
            .unwrap_or(0.0) as usize
    } else {
        results.trials.len()
    };
    let run_start = header.started_at.clone();
    let started = RunEvent::RunStarted {
        at: header.started_at.clone(),
        header: Box::new(header),
        planned,
        already_done: 0,
    };
    let trials = read_trials_lean(dir)?
        .enumerate()
        .flat_map(move |(index, r)| match r {
            Ok(record) => trial_events(index, record, &run_start)
                .into_iter()
                .map(Ok)
                .collect(),
            Err(e) => vec![Err(e)],
        });
    let finished = RunEvent::RunFinished {
        at: results.finished_at.clone(),
        results: Box::new(results),
    };
    Ok(std::iter::once(Ok(started))
        .chain(trials)
        .chain(std::iter::once(Ok(finished))))
}

/// One stored trial as the events it was live (see [`replay`]).
fn trial_events(index: usize, record: TrialRecord, run_start: &str) -> Vec<RunEvent> {
    let start = record
        .started_at
        .clone()
        .unwrap_or_else(|| run_start.to_owned());
    let base = start.parse::<jiff::Timestamp>().ok();
    let at = |ms: f64| match base {
        Some(t) => {
            let nanos = (ms.max(0.0) * 1e6) as i64;
            t.checked_add(jiff::SignedDuration::from_nanos(nanos))
                .unwrap_or(t)
                .to_string()
        }
        None => start.clone(),
    };
    let (case_id, epoch) = (record.case_id.clone(), record.epoch);
    let mut events = Vec::with_capacity(2 + record.trajectory.events.len() + record.scores.len());
    events.push(RunEvent::TrialStarted {
        index,
        case_id: case_id.clone(),
        epoch,
        at: at(0.0),
    });
    let mut clock = 0.0;
    for event in &record.trajectory.events {
        if let gauntlet_model::Event::ToolCall(call) = event {
            clock = call.at_ms + call.latency_ms;
        }
        events.push(RunEvent::TrialEvent {
            index,
            case_id: case_id.clone(),
            epoch,
            event: Box::new(event.clone()),
            at: at(clock),
        });
    }
    let end = at(record.duration_ms);
    for score in &record.scores {
        events.push(RunEvent::TrialScored {
            index,
            case_id: case_id.clone(),
            epoch,
            score: Box::new(score.clone()),
            at: end.clone(),
        });
    }
    events.push(RunEvent::TrialFinished {
        index,
        record: Box::new(record),
        initial_state: std::sync::Arc::new(Value::Null),
        final_state: None,
        at: end,
    });
    events
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use gauntlet_model::{TrialStatus, Verdict, Versions};
    use serde_json::json;

    use super::*;

    fn header() -> RunHeader {
        RunHeader {
            format_version: FORMAT_VERSION,
            run_id: "r1".into(),
            suite: "s".into(),
            agent: "script:reference".into(),
            seed: 7,
            epochs: 1,
            started_at: "2026-12-01T10:00:00Z".into(),
            versions: Versions::default(),
            fault_profile: None,
            attack: None,
            rubric: None,
            filter: None,
            shard: None,
            judges: vec![],
            name: None,
        }
    }

    fn record(case: &str) -> TrialRecord {
        TrialRecord {
            case_id: case.into(),
            epoch: 0,
            seed: 1,
            trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            status: TrialStatus::Passed,
            error: None,
            tags: vec![],
            difficulty: None,
            initial_state: Value::Null,
            final_state: json!({"done": true}),
            trajectory: Default::default(),
            scores: vec![],
            duration_ms: 1.0,
            started_at: Some("2026-12-01T10:00:01Z".into()),
            not_applicable: vec![],
            judges: vec![],
            retried_errors: vec![],
        }
    }

    fn results(trials: Vec<TrialSummary>) -> RunResults {
        RunResults {
            format_version: FORMAT_VERSION,
            header: header(),
            finished_at: "2026-12-01T10:00:09Z".into(),
            verdict: Verdict::Passed,
            metrics: Default::default(),
            intervals: BTreeMap::new(),
            evaluators: BTreeMap::new(),
            segments: BTreeMap::new(),
            flaky_cases: vec![],
            first_wrong_steps: Default::default(),
            rubric: None,
            gates: vec![],
            judges: vec![],
            retried: 0,
            trials,
        }
    }

    /// Writes a run of two trials through the event consumer; its folder.
    fn stored_run() -> (tempfile::TempDir, PathBuf, Vec<TrialSummary>) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let mut writer = RunWriter::create(&dir, &header()).unwrap();
        let initial = Arc::new(json!({"done": false}));
        let mut summaries = Vec::new();
        for (index, case) in ["a", "b"].into_iter().enumerate() {
            let mut event = RunEvent::TrialFinished {
                index,
                record: Box::new(record(case)),
                initial_state: Arc::clone(&initial),
                final_state: None,
                at: String::new(),
            };
            writer.consume(&mut event).unwrap();
            if let RunEvent::TrialFinished { record, .. } = &event {
                summaries.push(TrialSummary::of(record));
            }
        }
        writer.finish(&results(summaries.clone())).unwrap();
        (tmp, dir, summaries)
    }

    /// A trial whose final state comes as its shared initial state and the records it
    /// changed is stored as the same trial with its final state whole would be, line for line
    /// and `states/` file for file, for a large state (a reference and its changes) and a small
    /// one (inline).
    #[test]
    fn a_final_state_given_as_changes_is_stored_as_the_whole_state_would_be() {
        let big: serde_json::Map<String, Value> = (0..3000)
            .map(|i| (format!("r{i}"), json!({"n": i, "pad": "x".repeat(20)})))
            .collect();
        for (large, initial) in [
            (
                true,
                json!({"users": {"u1": {"n": 1}, "u2": {"n": 2}}, "flag": true, "rows": big}),
            ),
            (
                false,
                json!({"users": {"u1": {"n": 1}, "u2": {"n": 2}}, "flag": true}),
            ),
        ] {
            let initial = Arc::new(initial);
            let mut changed = gauntlet_model::ChangedState::new(Arc::clone(&initial));
            changed.set_entry("flag".into(), Some(json!(false)));
            changed.set_record("users", "u2".into(), None);
            changed.set_record("users", "u3".into(), Some(json!({"n": 3})));
            // Written back as it was (`1.0` is `1`): no change.
            changed.set_record("users", "u1".into(), Some(json!({"n": 1.0})));
            let whole = changed.to_value();
            let stored = |final_state: Option<gauntlet_model::ChangedState>| {
                let tmp = tempfile::tempdir().unwrap();
                let dir = tmp.path().join("run");
                let mut writer = RunWriter::create(&dir, &header()).unwrap();
                let mut record = record("a");
                record.final_state = if final_state.is_some() {
                    Value::Null
                } else {
                    whole.clone()
                };
                let mut event = RunEvent::TrialFinished {
                    index: 0,
                    record: Box::new(record),
                    initial_state: Arc::clone(&initial),
                    final_state,
                    at: String::new(),
                };
                writer.consume(&mut event).unwrap();
                drop(writer);
                let mut files = vec![std::fs::read_to_string(dir.join("trials.jsonl")).unwrap()];
                if let Ok(states) = std::fs::read_dir(dir.join("states")) {
                    for f in states {
                        files.push(std::fs::read_to_string(f.unwrap().path()).unwrap());
                    }
                }
                let RunEvent::TrialFinished { record, .. } = event else {
                    unreachable!()
                };
                (files, record.final_state)
            };
            let (as_changes, seen) = stored(Some(changed.clone()));
            assert_eq!(as_changes, stored(None).0);
            assert_eq!(as_changes.len(), if large { 2 } else { 1 }, "{large}");
            if large {
                assert_eq!(
                    seen["$changes"],
                    json!({"/users/u3": {"n": 3}, "/users/u2": null, "/flag": false})
                );
            } else {
                assert_eq!(seen, whole);
            }
        }
    }

    #[test]
    fn a_stored_run_replays_as_the_event_stream_it_was() {
        let (_tmp, dir, summaries) = stored_run();
        let events: Vec<RunEvent> = replay(&dir).unwrap().map(Result::unwrap).collect();
        let inside = |e: &&RunEvent| {
            matches!(
                e,
                RunEvent::TrialEvent { .. } | RunEvent::TrialScored { .. }
            )
        };
        let in_trials = events.iter().filter(inside).count();
        assert_eq!(events.len(), 1 + 2 * 2 + in_trials + 1);
        match &events[0] {
            RunEvent::RunStarted {
                header: h, planned, ..
            } => {
                assert_eq!(**h, header());
                assert_eq!(*planned, 2);
            }
            other => panic!("{other:?}"),
        }
        let finished: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                RunEvent::TrialFinished { record, .. } => {
                    // The consumer stored the shared initial state with the record.
                    assert_eq!(record.initial_state, json!({"done": false}));
                    Some(record.case_id.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(finished, ["a", "b"]);
        match events.last().unwrap() {
            RunEvent::RunFinished { results: r, at } => {
                assert_eq!(r.trials, summaries);
                assert_eq!(at, "2026-12-01T10:00:09Z");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_reader_refuses_another_format_version_and_says_what_to_do() {
        let (_tmp, dir, _) = stored_run();
        for file in ["run.json", "results.json"] {
            let path = dir.join(file);
            let mut v: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            v["format_version"] = json!(99);
            std::fs::write(&path, v.to_string()).unwrap();
        }
        let mut refusals = vec![
            read_header(&dir).map(|_| ()).unwrap_err(),
            read_results(&dir).map(|_| ()).unwrap_err(),
            read_trials(&dir).map(|_| ()).unwrap_err(),
            replay(&dir).map(|_| ()).unwrap_err(),
            crate::read_trajectories(&dir).map(|_| ()).unwrap_err(),
        ];
        // An unfinished run of another version is not resumed either.
        std::fs::remove_file(dir.join("results.json")).unwrap();
        refusals.push(RunWriter::resume(&dir).map(|_| ()).unwrap_err());
        for e in refusals {
            let message = e.to_string();
            assert!(
                message.contains("run format version 99 is not supported")
                    && message.contains("run the suite again"),
                "{message}"
            );
        }
    }

    /// A finished run of `n` trials through [`RunWriter::finish`], or through a spill file
    /// with `spilled`; its folder and summaries.
    fn run_of(n: usize, spilled: bool) -> (tempfile::TempDir, PathBuf, Vec<TrialSummary>) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let mut writer = RunWriter::create(&dir, &header()).unwrap();
        let mut summaries = Vec::new();
        for i in 0..n {
            let mut r = record(&format!("case-{:03}", n - i));
            r.epoch = i as u32 % 3;
            writer.append(&r).unwrap();
            summaries.push(TrialSummary::of(&r));
        }
        if spilled {
            let mut spill = crate::SpilledSummaries::create(Some(&dir)).unwrap();
            for t in &summaries {
                spill.push(t).unwrap();
            }
            writer.finish_spilled(&results(vec![]), &mut spill).unwrap();
            drop(spill);
        } else {
            writer.finish(&results(summaries.clone())).unwrap();
        }
        (tmp, dir, summaries)
    }

    #[test]
    fn results_json_is_the_same_size_whatever_the_trial_count_and_the_summaries_lie_beside_it() {
        let size = |dir: &Path| std::fs::metadata(dir.join("results.json")).unwrap().len();
        let (_a, few, _) = run_of(3, false);
        for spilled in [false, true] {
            let (_b, many, summaries) = run_of(300, spilled);
            assert_eq!(size(&many), size(&few), "spilled {spilled}");
            let stored: Value =
                serde_json::from_str(&std::fs::read_to_string(many.join("results.json")).unwrap())
                    .unwrap();
            assert_eq!(stored["format_version"], FORMAT_VERSION);
            assert!(stored.get("trials").is_none(), "{stored}");
            let lines = std::fs::read_to_string(many.join(SUMMARIES_FILE)).unwrap();
            assert_eq!(lines.lines().count(), 300);
            // Read whole, head only, streamed, and as keys: the same trials in the same order.
            assert_eq!(read_results(&many).unwrap().trials, summaries);
            assert_eq!(
                read_results(&many.join("results.json")).unwrap().trials,
                summaries
            );
            assert!(read_results_head(&many).unwrap().trials.is_empty());
            let streamed: Vec<TrialSummary> =
                read_summaries(&many).unwrap().map(Result::unwrap).collect();
            assert_eq!(streamed, summaries);
            let keys: Vec<(String, u32)> = summaries
                .iter()
                .map(|t| (t.case_id.clone(), t.epoch))
                .collect();
            assert_eq!(read_results_brief(&many).unwrap().trials, keys);
            // The full view streamed from the file is the results read whole.
            let mut full = Vec::new();
            crate::write_full_results(
                &read_results_head(&many).unwrap(),
                &many.join(SUMMARIES_FILE),
                &mut full,
            )
            .unwrap();
            let full: RunResults = serde_json::from_slice(&full).unwrap();
            assert_eq!(full, read_results(&many).unwrap());
            // No spill file is left behind.
            let names: Vec<String> = std::fs::read_dir(&many)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with('.'))
                .collect();
            assert!(names.is_empty(), "{names:?}");
        }
    }

    #[test]
    fn a_run_of_format_1_with_its_summaries_in_results_json_is_still_read() {
        let (_tmp, dir, summaries) = run_of(5, false);
        let mut v = serde_json::to_value(read_results(&dir).unwrap()).unwrap();
        v["format_version"] = json!(1);
        std::fs::write(dir.join("results.json"), v.to_string()).unwrap();
        std::fs::remove_file(dir.join(SUMMARIES_FILE)).unwrap();
        let read = read_results(&dir).unwrap();
        assert_eq!((read.format_version, read.trials), (1, summaries.clone()));
        assert!(read_results_head(&dir).unwrap().trials.is_empty());
        let streamed: Vec<TrialSummary> =
            read_summaries(&dir).unwrap().map(Result::unwrap).collect();
        assert_eq!(streamed, summaries);
        assert_eq!(read_results_brief(&dir).unwrap().trials.len(), 5);
    }

    #[test]
    fn a_finished_run_without_its_summaries_says_which_file_is_missing() {
        let (_tmp, dir, _) = run_of(2, false);
        std::fs::remove_file(dir.join(SUMMARIES_FILE)).unwrap();
        for e in [
            read_results(&dir).map(|_| ()).unwrap_err(),
            read_results_brief(&dir).map(|_| ()).unwrap_err(),
        ] {
            let message = e.to_string();
            assert!(
                message.contains(SUMMARIES_FILE) && message.contains("missing"),
                "{message}"
            );
        }
    }
}
