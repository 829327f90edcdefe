//! Writing and reading run directories.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use gauntlet_model::{FORMAT_VERSION, RunHeader, RunResults, TrialRecord, TrialSummary};
use serde_json::Value;

use crate::states::{StateReader, StateWriter};

/// A store failure, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is not what the format says.
    #[error("{path}:{line}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The line (1 for whole-file documents).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The output folder already holds a run.
    #[error("{0} already holds a run; choose another --out or remove it")]
    Exists(PathBuf),
    /// A run to resume has already finished.
    #[error("{0} holds a finished run (it has results.json): there is nothing to resume")]
    Finished(PathBuf),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Writes a JSON document atomically: a temporary file in the same folder, then a rename.
fn write_atomic<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let tmp = path.with_extension("json.tmp");
    let file = File::create(&tmp).map_err(io(&tmp))?;
    let mut w = BufWriter::new(file);
    serde_json::to_writer_pretty(&mut w, value).map_err(|e| StoreError::Format {
        path: tmp.clone(),
        line: 1,
        message: e.to_string(),
    })?;
    w.write_all(b"\n").map_err(io(&tmp))?;
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
        if dir.join("results.json").exists() {
            return Err(StoreError::Finished(dir.to_owned()));
        }
        let header = read_header(dir)?;
        let path = dir.join("trials.jsonl");
        // Streamed: each record is summarised as it is read, and only the summaries are kept.
        let mut summaries: Vec<TrialSummary> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let (mut kept, mut last) = (0u64, b'\n');
        if let Some(file) = match File::open(&path) {
            Ok(f) => Some(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io(&path)(e)),
        } {
            let mut reader = BufReader::new(file);
            let mut line = Vec::new();
            for i in 1.. {
                line.clear();
                if reader.read_until(b'\n', &mut line).map_err(io(&path))? == 0 {
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
                        Err(e) => {
                            return Err(StoreError::Format {
                                path: path.clone(),
                                line: i,
                                message: e.to_string(),
                            });
                        }
                    }
                }
                kept += line.len() as u64;
                last = *line.last().unwrap_or(&b'\n');
            }
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
                owned = TrialRecord {
                    initial_state: initial,
                    final_state,
                    ..record.clone()
                };
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
    pub fn append_shared(
        &mut self,
        record: &mut TrialRecord,
        initial: &std::sync::Arc<Value>,
    ) -> Result<(), StoreError> {
        match self
            .states
            .compact_shared(&self.dir, initial, &record.final_state)?
        {
            Some((initial, final_state)) => {
                record.initial_state = initial;
                record.final_state = final_state;
            }
            None => record.initial_state = (**initial).clone(),
        }
        self.write_line(record)
    }

    /// Writes one line of `trials.jsonl` and flushes it, so a crash loses no finished trial.
    fn write_line(&mut self, record: &TrialRecord) -> Result<(), StoreError> {
        let path = self.dir.join("trials.jsonl");
        serde_json::to_writer(&mut self.trials, record).map_err(|e| StoreError::Format {
            path: path.clone(),
            line: 0,
            message: e.to_string(),
        })?;
        self.trials.write_all(b"\n").map_err(io(&path))?;
        self.trials.flush().map_err(io(&path))
    }

    /// Appends every trial record of another run folder as stored there, with the stored states
    /// they refer to (to merge the parts of a sharded run); how many records.
    pub fn append_run(&mut self, other: &Path) -> Result<usize, StoreError> {
        let states = other.join("states");
        if states.is_dir() {
            let into = self.dir.join("states");
            std::fs::create_dir_all(&into).map_err(io(&into))?;
            for entry in std::fs::read_dir(&states).map_err(io(&states))? {
                let from = entry.map_err(io(&states))?.path();
                let to = into.join(from.file_name().unwrap_or_default());
                // Named by content: a file already there is the same state.
                if !to.exists() {
                    std::fs::copy(&from, &to).map_err(io(&to))?;
                }
            }
        }
        let path = other.join("trials.jsonl");
        let reader = BufReader::new(File::open(&path).map_err(io(&path))?);
        let mut n = 0;
        for (i, line) in reader.lines().enumerate() {
            let line = line.map_err(io(&path))?;
            if line.trim().is_empty() {
                continue;
            }
            if let Err(e) = serde_json::from_str::<TrialRecord>(&line) {
                return Err(StoreError::Format {
                    path,
                    line: i + 1,
                    message: e.to_string(),
                });
            }
            let to = self.dir.join("trials.jsonl");
            self.trials.write_all(line.as_bytes()).map_err(io(&to))?;
            self.trials.write_all(b"\n").map_err(io(&to))?;
            n += 1;
        }
        Ok(n)
    }

    /// Writes `results.json` atomically; the run is complete.
    pub fn finish(mut self, results: &RunResults) -> Result<(), StoreError> {
        let path = self.dir.join("trials.jsonl");
        self.trials.flush().map_err(io(&path))?;
        write_atomic(&self.dir.join("results.json"), results)
    }
}

/// Reads `run.json`, the header of a run directory (finished or not).
pub fn read_header(dir: &Path) -> Result<RunHeader, StoreError> {
    let path = dir.join("run.json");
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    serde_json::from_str(&text).map_err(|e| StoreError::Format {
        path,
        line: e.line(),
        message: e.to_string(),
    })
}

/// Reads `results.json` of a run directory (or the file itself).
pub fn read_results(path: &Path) -> Result<RunResults, StoreError> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_owned()
    };
    let text = std::fs::read_to_string(&file).map_err(io(&file))?;
    let version: Option<u64> = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("format_version").and_then(serde_json::Value::as_u64));
    if let Some(v) = version
        && v != u64::from(FORMAT_VERSION)
    {
        return Err(StoreError::Format {
            path: file,
            line: 1,
            message: format!(
                "run format version {v} is not supported (this gauntlet reads {FORMAT_VERSION})"
            ),
        });
    }
    serde_json::from_str(&text).map_err(|e| StoreError::Format {
        path: file.clone(),
        line: e.line(),
        message: e.to_string(),
    })
}

/// Streams the trial records of a run directory (or a `trials.jsonl` file), one at a time.
pub fn read_trials(
    path: &Path,
) -> Result<impl Iterator<Item = Result<TrialRecord, StoreError>>, StoreError> {
    read_trials_with(path, false)
}

/// Like [`read_trials`], with each trial's states restricted to what changed (stored bases are
/// not copied whole): for views that hold many trials, such as reports.
pub fn read_trials_lean(
    path: &Path,
) -> Result<impl Iterator<Item = Result<TrialRecord, StoreError>>, StoreError> {
    read_trials_with(path, true)
}

fn read_trials_with(
    path: &Path,
    lean: bool,
) -> Result<impl Iterator<Item = Result<TrialRecord, StoreError>>, StoreError> {
    let file = if path.is_dir() {
        path.join("trials.jsonl")
    } else {
        path.to_owned()
    };
    let reader = BufReader::new(File::open(&file).map_err(io(&file))?);
    let mut states = StateReader::for_file(&file);
    Ok(reader
        .lines()
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
