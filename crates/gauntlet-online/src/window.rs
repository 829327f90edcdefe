//! Windows of trajectories for drift: a stored run, or days of the lake.

use std::path::{Path, PathBuf};

use gauntlet_model::TrialStatus;
use gauntlet_stats::drift::{Observation, Sample};
use serde_json::Value;

use crate::lake::{LakeError, TraceRow, agent_usage, files, read_trace_file};

/// Why a window cannot be read: a path, a day or a range that is wrong, or a window with
/// nothing in it, is the user's input; a lake or run that cannot be read says its own kind.
#[derive(Debug, thiserror::Error)]
pub enum WindowError {
    /// `@FROM..TO` after a path that is no lake.
    #[error("{}: a day range (@FROM..TO) needs a lake (a folder with traces/)", .0.display())]
    RangeNeedsLake(PathBuf),
    /// A side of the range that is not a day.
    #[error("`{text}` is not a day (YYYY-MM-DD): {source}")]
    NotADay {
        /// What was written.
        text: String,
        /// Why.
        source: jiff::Error,
    },
    /// A path that does not exist.
    #[error("{}: no such run or lake", .0.display())]
    NoSuchRunOrLake(PathBuf),
    /// The lake cannot be read.
    #[error(transparent)]
    Lake(#[from] LakeError),
    /// The run cannot be read.
    #[error(transparent)]
    Store(#[from] gauntlet_store::StoreError),
    /// A run with no trials.
    #[error("{}: no trials", .0.display())]
    NoTrials(PathBuf),
    /// A lake with no traces in the range.
    #[error(
        "{}: no traces between {} and {}",
        .dir.display(),
        .from.as_deref().unwrap_or("the start"),
        .to.as_deref().unwrap_or("the end")
    )]
    NoTraces {
        /// The lake.
        dir: PathBuf,
        /// The first day, if any.
        from: Option<String>,
        /// The last day, if any.
        to: Option<String>,
    },
}

impl gauntlet_model::Classified for WindowError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        match self {
            WindowError::Lake(e) => e.kind(),
            WindowError::Store(e) => e.kind(),
            WindowError::RangeNeedsLake(_)
            | WindowError::NotADay { .. }
            | WindowError::NoSuchRunOrLake(_)
            | WindowError::NoTrials(_)
            | WindowError::NoTraces { .. } => gauntlet_model::ErrorKind::InvalidInput,
        }
    }
}

/// Where a window's trajectories are.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A run folder (or its trials.jsonl).
    Run(PathBuf),
    /// A lake, between two days (inclusive, either open).
    Lake {
        dir: PathBuf,
        from: Option<String>,
        to: Option<String>,
    },
}

impl Source {
    /// `PATH`, or `LAKE@FROM..TO` (days `YYYY-MM-DD`, either side may be empty). A folder with
    /// a `traces/` folder is a lake; anything else a run.
    pub fn parse(text: &str) -> Result<Source, WindowError> {
        let (path, days) = match text.rsplit_once('@') {
            Some((p, d)) if d.contains("..") => (p, Some(d)),
            _ => (text, None),
        };
        let path = PathBuf::from(path);
        let is_lake = path.join("traces").is_dir();
        match days {
            Some(d) => {
                if !is_lake {
                    return Err(WindowError::RangeNeedsLake(path));
                }
                let (from, to) = d.split_once("..").expect("checked");
                let day = |s: &str| -> Result<Option<String>, WindowError> {
                    if s.is_empty() {
                        return Ok(None);
                    }
                    s.parse::<jiff::civil::Date>()
                        .map(|d| Some(d.to_string()))
                        .map_err(|source| WindowError::NotADay {
                            text: s.to_owned(),
                            source,
                        })
                };
                Ok(Source::Lake {
                    dir: path,
                    from: day(from)?,
                    to: day(to)?,
                })
            }
            None if is_lake => Ok(Source::Lake {
                dir: path,
                from: None,
                to: None,
            }),
            None if path.exists() => Ok(Source::Run(path)),
            None => Err(WindowError::NoSuchRunOrLake(path)),
        }
    }
}

/// What a lake row contributes.
fn observation_of_row<'a>(r: &'a TraceRow, scores: &'a Value) -> Observation<'a> {
    Observation {
        tools: r.tools.iter().map(String::as_str).collect(),
        tool_errors: r.tool_errors.max(0) as u64,
        duration_ms: r.duration_ms,
        cost_eur: r.cost_eur,
        tokens: (r.input_tokens + r.output_tokens).max(0) as u64,
        passed: r.status == "passed",
        verdicts: scores
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| Some((s["name"].as_str()?, s["passed"].as_bool()?)))
            .collect(),
    }
}

/// Reads a window into a sample.
pub fn sample(source: &Source) -> Result<Sample, WindowError> {
    let mut sample = Sample::default();
    match source {
        Source::Lake { dir, from, to } => {
            for f in files(dir, "traces", from.as_deref(), to.as_deref())? {
                for row in read_trace_file(&f)? {
                    let scores: Value = serde_json::from_str(&row.scores).unwrap_or(Value::Null);
                    sample.add(observation_of_row(&row, &scores));
                }
            }
        }
        Source::Run(path) => {
            let dir: &Path = if path.is_dir() {
                path
            } else {
                path.parent().unwrap_or(Path::new("."))
            };
            for t in gauntlet_store::read_trials_lean(dir)? {
                let t = t?;
                let calls: Vec<_> = t.trajectory.tool_calls().collect();
                let usage = agent_usage(&t.trajectory);
                sample.add(Observation {
                    tools: calls.iter().map(|c| c.tool.as_str()).collect(),
                    tool_errors: calls.iter().filter(|c| c.error.is_some()).count() as u64,
                    duration_ms: t.duration_ms,
                    cost_eur: usage.cost_eur,
                    tokens: usage.input_tokens + usage.output_tokens,
                    passed: t.status == TrialStatus::Passed,
                    verdicts: t
                        .scores
                        .iter()
                        .map(|s| (s.name.as_str(), s.passed))
                        .collect(),
                });
            }
        }
    }
    if sample.trajectories == 0 {
        return Err(match source {
            Source::Run(p) => WindowError::NoTrials(p.clone()),
            Source::Lake { dir, from, to } => WindowError::NoTraces {
                dir: dir.clone(),
                from: from.clone(),
                to: to.clone(),
            },
        });
    }
    Ok(sample)
}
