//! Reading recorded trajectories for offline scoring, streamed one at a time.
//!
//! Accepted: our `trials.jsonl` records (or a run directory), and the
//! `AgentTrajectory` JSON, as JSON Lines, one document, concatenated documents, or an array.
//! The format is decided per item, trying first the one that matched last.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use gauntlet_model::Trajectory;
use gauntlet_model::TrialRecord;
use gauntlet_model::article::AgentTrajectory;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::run_dir::StoreError;

/// One recorded trial to score.
#[derive(Debug, Clone)]
pub struct ImportedTrial {
    /// The case it belongs to.
    pub case_id: String,
    /// The repetition (0 for imported logs that have none).
    pub epoch: u32,
    /// The trace id, when the log has one.
    pub trace_id: Option<String>,
    /// The events.
    pub trajectory: Trajectory,
    /// The final state.
    pub final_state: Value,
    /// The initial state.
    pub initial_state: Value,
    /// Wall time, when known.
    pub duration_ms: f64,
    /// Why the harness failed the trial, when the log says it did (our records' `error`).
    pub error: Option<String>,
    /// What is odd about the log but changes no score (repeated or unordered step numbers).
    pub warnings: Vec<String>,
    /// 1-based line (JSON Lines) or item number (other layouts) in the source, for messages.
    pub line: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Format {
    Ours,
    Article,
}

/// An item that is neither format: each format's complaint, in the order they were tried.
#[derive(Debug)]
struct NotATrial(Vec<(Format, serde_json::Error)>);

impl std::fmt::Display for NotATrial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (format, e)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            match format {
                Format::Ours => write!(f, "not a gauntlet trial record ({e})")?,
                Format::Article => write!(f, "not an article AgentTrajectory ({e})")?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for NotATrial {}

impl gauntlet_model::Classified for NotATrial {
    /// A recorded file that holds something else is the user's input.
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

/// Parses one JSON text as either format, trying `first` first.
fn parse_item(text: &str, first: &mut Format) -> Result<ImportedTrial, NotATrial> {
    let order = if *first == Format::Ours {
        [Format::Ours, Format::Article]
    } else {
        [Format::Article, Format::Ours]
    };
    let mut errors = Vec::new();
    for f in order {
        let r = match f {
            Format::Ours => serde_json::from_str::<TrialRecord>(text).map(|r| ImportedTrial {
                case_id: r.case_id,
                epoch: r.epoch,
                trace_id: Some(r.trace_id),
                trajectory: r.trajectory,
                final_state: r.final_state,
                initial_state: r.initial_state,
                duration_ms: r.duration_ms,
                error: r.error,
                warnings: Vec::new(),
                line: 0,
            }),
            Format::Article => serde_json::from_str::<AgentTrajectory>(text).map(|mut a| {
                let warnings = a.step_number_warnings();
                ImportedTrial {
                    trajectory: a.take_trajectory(),
                    warnings,
                    case_id: a.task_id,
                    epoch: 0,
                    trace_id: None,
                    final_state: Value::Object(a.final_state),
                    initial_state: Value::Object(a.initial_state),
                    duration_ms: a.total_latency_seconds * 1000.0,
                    error: None,
                    line: 0,
                }
            }),
        };
        match r {
            Ok(t) => {
                *first = f;
                return Ok(t);
            }
            Err(e) => errors.push((f, e)),
        }
    }
    Err(NotATrial(errors))
}

/// One item of a recorded-trajectories file, read but not yet parsed: the reading of a file
/// stays in order on one thread while items are parsed (and scored) on several.
pub struct RawItem {
    /// 1-based line (JSON Lines) or item number (other layouts).
    pub line: usize,
    text: String,
}

/// Parses [`RawItem`]s of one file into trials. Each scoring thread keeps a clone: it remembers
/// the format the last item had and the stored states it has read.
#[derive(Clone)]
pub struct ItemParser {
    file: PathBuf,
    format: Format,
    /// Stored-state references are expanded in JSON Lines files (our `trials.jsonl`).
    states: Option<crate::StateReader>,
}

impl RawItem {
    /// The item's size in bytes (its line's, for JSON Lines), for progress.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Whether the item is empty (never, for an item read from a file).
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

impl ItemParser {
    /// The trial of one item, or why it is not one (naming the file and line).
    pub fn parse(&mut self, raw: RawItem) -> Result<ImportedTrial, StoreError> {
        let line = raw.line;
        let fmt_err = |message: String| StoreError::Format {
            path: self.file.clone(),
            line,
            message,
        };
        let mut t = match parse_item(&raw.text, &mut self.format) {
            Ok(t) => t,
            Err(m) if self.states.is_some() => return Err(fmt_err(m.to_string())),
            Err(m) => return Err(fmt_err(format!("item {line}: {m}"))),
        };
        drop(raw);
        t.line = line;
        if let Some(states) = &mut self.states {
            t.initial_state = states.expand(std::mem::take(&mut t.initial_state))?;
            t.final_state = states.expand(std::mem::take(&mut t.final_state))?;
        }
        Ok(t)
    }
}

/// The items of a recorded-trajectories file (or run directory), streamed in order and not
/// yet parsed, and the parser for them. [`read_trajectories`] is the two together.
pub type RawItems = Box<dyn Iterator<Item = Result<RawItem, StoreError>> + Send>;

/// Opens a file (or run directory) of recorded trajectories: its items, read in order, and
/// the parser for them.
pub fn read_items(path: &Path) -> Result<(RawItems, ItemParser), StoreError> {
    let file: PathBuf = if path.is_dir() {
        path.join("trials.jsonl")
    } else {
        path.to_owned()
    };
    let io = |source| StoreError::Io {
        path: file.clone(),
        source,
    };
    // Our records carry no version; their run's header does.
    if let Some(dir) = file.parent()
        && dir.join("run.json").is_file()
    {
        crate::read_header(dir)?;
    }
    let mut reader =
        BufReader::with_capacity(1 << 16, crate::open::open_regular(&file).map_err(io)?);
    // Decide the layout from the first non-empty line.
    let first_line = {
        let buf = reader.fill_buf().map_err(io)?;
        let end = buf.iter().position(|b| *b == b'\n').unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).trim().to_owned()
    };
    let line_mode = !first_line.starts_with('[')
        && serde_json::from_str::<serde::de::IgnoredAny>(&first_line).is_ok();
    let fmt_err = {
        let file = file.clone();
        move |line: usize, message: String| StoreError::Format {
            path: file.clone(),
            line,
            message,
        }
    };
    let parser = ItemParser {
        file: file.clone(),
        format: Format::Ours,
        states: line_mode.then(|| crate::StateReader::for_file(&file)),
    };
    if line_mode {
        let mut lines = crate::open::BoundedLines::new(reader).enumerate();
        let items = std::iter::from_fn(move || {
            loop {
                let (i, line) = lines.next()?;
                return Some(match line {
                    Ok(l) if l.trim().is_empty() => continue,
                    Ok(text) => Ok(RawItem { line: i + 1, text }),
                    Err(e) => Err(fmt_err(i + 1, e.to_string())),
                });
            }
        });
        return Ok((Box::new(items), parser));
    }
    let mut text = String::new();
    reader.read_to_string(&mut text).map_err(io)?;
    let items: Vec<Box<RawValue>> = if text.trim_start().starts_with('[') {
        serde_json::from_str(&text).map_err(|e| fmt_err(e.line(), e.to_string()))?
    } else {
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Box<RawValue>>()
            .collect::<Result<_, _>>()
            .map_err(|e| fmt_err(e.line(), e.to_string()))?
    };
    drop(text);
    let items = items.into_iter().enumerate().map(|(i, raw)| {
        Ok(RawItem {
            line: i + 1,
            text: String::from(Box::<str>::from(raw)),
        })
    });
    Ok((Box::new(items), parser))
}

/// Streams the trials of a file (or run directory). Each item is scored or reported on its own.
pub fn read_trajectories(
    path: &Path,
) -> Result<Box<dyn Iterator<Item = Result<ImportedTrial, StoreError>> + Send>, StoreError> {
    let (items, mut parser) = read_items(path)?;
    Ok(Box::new(
        items.map(move |item| item.and_then(|raw| parser.parse(raw))),
    ))
}
