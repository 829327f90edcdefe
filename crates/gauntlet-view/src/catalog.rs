//! The runs and lakes under the folders `gauntlet view` was given: found again on every listing
//! (a run started since appears), each run's summary and trial index kept once read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use gauntlet_model::{RunHeader, TrialStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ViewError;
use crate::trials::{TrialIndex, trials_file};

/// The file beside `results.json` that keeps what the viewer reads of it.
pub const SUMMARY_FILE: &str = "view-summary.json";

/// A run unfinished whose trials grew within this many seconds is `running`; older, `unfinished`.
const LIVE_SECONDS: u64 = 120;

/// What `results.json` says of a finished run, without its trial summaries (counted only).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// `results.json`'s size and modification time when read.
    stamp: (u64, u128),
    pub finished_at: String,
    pub verdict: Value,
    pub metrics: Value,
    pub intervals: Value,
    pub evaluators: Value,
    pub segments: Value,
    pub flaky_cases: Value,
    pub rubric: Value,
    pub gates: Value,
    pub judges: Value,
    pub trials: usize,
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
}

#[derive(Deserialize)]
struct ResultsLite {
    finished_at: String,
    verdict: Value,
    metrics: Value,
    #[serde(default)]
    intervals: Value,
    #[serde(default)]
    evaluators: Value,
    #[serde(default)]
    segments: Value,
    #[serde(default)]
    flaky_cases: Value,
    #[serde(default)]
    rubric: Value,
    #[serde(default)]
    gates: Value,
    #[serde(default)]
    judges: Value,
}

/// Size and modification time of a regular file (a pipe or a device is not read: opening one
/// would block the viewer).
fn stamp(path: &Path) -> Option<(u64, u128)> {
    let m = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    let t = m
        .modified()
        .ok()?
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?;
    Some((m.len(), t.as_nanos()))
}

/// One run folder.
pub struct Run {
    pub dir: PathBuf,
    pub header: RunHeader,
    summary: Option<Summary>,
    index: Option<TrialIndex>,
}

impl Run {
    fn open(dir: &Path) -> Result<Run, ViewError> {
        let header = gauntlet_store::read_header(dir).map_err(|e| ViewError::Io(e.to_string()))?;
        Ok(Run {
            dir: dir.to_owned(),
            header,
            summary: None,
            index: None,
        })
    }

    /// The summary of its `results.json`, `None` while the run has none (it is going, or it
    /// stopped before the end). Read once and kept beside the run.
    pub fn summary(&mut self) -> Result<Option<&Summary>, ViewError> {
        let path = self.dir.join("results.json");
        let Some(now) = stamp(&path) else {
            self.summary = None;
            return Ok(None);
        };
        if self.summary.as_ref().is_none_or(|s| s.stamp != now) {
            let kept = gauntlet_store::open::read_regular(&self.dir.join(SUMMARY_FILE))
                .ok()
                .and_then(|b| serde_json::from_slice::<Summary>(&b).ok())
                .filter(|s| s.stamp == now);
            self.summary = Some(match kept {
                Some(s) => s,
                None => {
                    let s = read_summary(&path, now)?;
                    if let Ok(bytes) = serde_json::to_vec(&s) {
                        let _ =
                            crate::write::replace_file(&self.dir.join(SUMMARY_FILE), &bytes, false);
                    }
                    s
                }
            });
        }
        Ok(self.summary.as_ref())
    }

    /// Its trial index, brought up to date with `trials.jsonl`.
    pub fn index(&mut self) -> Result<&TrialIndex, ViewError> {
        let finished = self.dir.join("results.json").is_file();
        let index = self
            .index
            .get_or_insert_with(|| TrialIndex::load(&self.dir));
        if index.refresh(&trials_file(&self.dir))? && finished {
            index.save(&self.dir);
        }
        Ok(index)
    }

    /// `running` while its trials grow, `unfinished` when they stopped without a result, else
    /// the verdict.
    fn state(&mut self) -> Result<String, ViewError> {
        if let Some(s) = self.summary()? {
            return Ok(s.verdict.as_str().unwrap_or("failed").to_owned());
        }
        let fresh = std::fs::metadata(trials_file(&self.dir))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() < LIVE_SECONDS);
        Ok(if fresh { "running" } else { "unfinished" }.to_owned())
    }

    /// The run as `/api/runs` lists it.
    pub fn listing(&mut self) -> Result<Value, ViewError> {
        let verdict = self.state()?;
        let (trials, passed, failed, errors, metrics, intervals, finished_at) =
            match self.summary()?.cloned() {
                Some(s) => (
                    s.trials,
                    s.passed,
                    s.failed,
                    s.errors,
                    s.metrics,
                    s.intervals,
                    Some(s.finished_at),
                ),
                None => {
                    let entries = self.index()?.entries();
                    let count = |st| entries.iter().filter(|e| e.status == st).count();
                    let (p, f, e) = (
                        count(TrialStatus::Passed),
                        count(TrialStatus::Failed),
                        count(TrialStatus::Error),
                    );
                    let rate = (!entries.is_empty()).then(|| p as f64 / entries.len() as f64);
                    (
                        entries.len(),
                        p,
                        f,
                        e,
                        serde_json::json!({ "pass_rate": rate }),
                        Value::Object(Default::default()),
                        None,
                    )
                }
            };
        let h = &self.header;
        Ok(serde_json::json!({
            "run_id": h.run_id,
            "name": h.name,
            "suite": h.suite,
            "agent": h.agent,
            "started_at": h.started_at,
            "finished_at": finished_at,
            "epochs": h.epochs,
            "seed": h.seed,
            "trials": trials,
            "passed": passed,
            "failed": failed,
            "errors": errors,
            "verdict": verdict,
            "live": verdict == "running",
            "metrics": metrics,
            "intervals": intervals,
            "dir": self.dir.display().to_string(),
        }))
    }
}

/// Reads the top of `results.json` up to its trial summaries (the last field, the bulk of a
/// large run's file), which are not read: the trial counts are in the metrics.
fn read_summary(path: &Path, now: (u64, u128)) -> Result<Summary, ViewError> {
    use serde::de::{Deserializer as _, Error as _, MapAccess, Visitor};
    const STOP: &str = "gauntlet-view: the trial summaries start here";
    struct Top<'a>(&'a mut serde_json::Map<String, Value>);
    impl<'de> Visitor<'de> for Top<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a results.json object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "trials" {
                    return Err(A::Error::custom(STOP));
                }
                let value = map.next_value::<Value>()?;
                self.0.insert(key, value);
            }
            Ok(())
        }
    }
    let error = |e: &dyn std::fmt::Display| ViewError::Io(format!("{}: {e}", path.display()));
    let file = gauntlet_store::open::open_regular(path).map_err(|e| error(&e))?;
    let mut top = serde_json::Map::new();
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(file));
    match de.deserialize_map(Top(&mut top)) {
        Ok(()) => {}
        Err(e) if e.to_string().starts_with(STOP) => {}
        Err(e) => return Err(error(&e)),
    }
    let r: ResultsLite = serde_json::from_value(Value::Object(top)).map_err(|e| error(&e))?;
    let count = |name: &str| r.metrics[name].as_f64().unwrap_or(0.0) as usize;
    Ok(Summary {
        stamp: now,
        trials: count("trials"),
        passed: count("passed"),
        failed: count("failed"),
        errors: count("errors"),
        finished_at: r.finished_at,
        verdict: r.verdict,
        metrics: r.metrics,
        intervals: r.intervals,
        evaluators: r.evaluators,
        segments: r.segments,
        flaky_cases: r.flaky_cases,
        rubric: r.rubric,
        gates: r.gates,
        judges: r.judges,
    })
}

/// Everything under the folders given.
pub struct Catalog {
    roots: Vec<PathBuf>,
    /// Each run by id, with its folder (read without taking the run's lock, which a request
    /// reading a large run may hold).
    runs: Mutex<BTreeMap<String, Known>>,
}

/// A run found: its folder, and the run behind its own lock.
type Known = (PathBuf, Arc<Mutex<Run>>);

impl Catalog {
    /// A catalog of what is under `roots` (nothing read until the first scan).
    pub fn new(roots: Vec<PathBuf>) -> Catalog {
        Catalog {
            roots,
            runs: Mutex::new(BTreeMap::new()),
        }
    }

    /// Looks for run folders again: the folders given, their `.gauntlet/runs/*`, their
    /// subfolders, the subfolders' `.gauntlet/runs/*`, and the folders the run indexes there
    /// list (runs written with `--out`). A run id in two folders is the finished copy's.
    pub fn rescan(&self) {
        let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
        for dir in run_folders(&self.roots) {
            let Ok(header) = gauntlet_store::read_header(&dir) else {
                continue;
            };
            let better = match found.get(&header.run_id) {
                None => true,
                Some(old) => {
                    !old.join("results.json").is_file() && dir.join("results.json").is_file()
                }
            };
            if better {
                found.insert(header.run_id, dir);
            }
        }
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.retain(|id, (dir, _)| found.get(id) == Some(dir));
        for (id, dir) in found {
            if runs.contains_key(&id) {
                continue;
            }
            if let Ok(run) = Run::open(&dir) {
                runs.insert(id, (dir, Arc::new(Mutex::new(run))));
            }
        }
    }

    /// Every run found at the last scan.
    pub fn runs(&self) -> Vec<Arc<Mutex<Run>>> {
        let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.values().map(|(_, run)| run.clone()).collect()
    }

    /// The run `run_id` if it was found at the last scan (no scan made).
    pub fn known(&self, run_id: &str) -> Option<Arc<Mutex<Run>>> {
        let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.get(run_id).map(|(_, run)| run.clone())
    }

    /// The run `run_id` (found again when it is not known yet).
    pub fn run(&self, run_id: &str) -> Option<Arc<Mutex<Run>>> {
        let known = self
            .runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(run_id)
            .map(|(_, run)| run.clone());
        known.or_else(|| {
            self.rescan();
            self.runs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(run_id)
                .map(|(_, run)| run.clone())
        })
    }

    /// The trace lakes (`gauntlet online --lake`) among the folders given and their
    /// subfolders: folders with a `traces` table.
    pub fn lakes(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for root in &self.roots {
            for dir in std::iter::once(root.clone()).chain(subfolders(root)) {
                if is_lake(&dir) && !out.contains(&dir) {
                    out.push(dir);
                }
            }
        }
        out
    }
}

fn is_lake(dir: &Path) -> bool {
    std::fs::read_dir(dir.join("traces")).is_ok_and(|mut days| {
        days.any(|d| d.is_ok_and(|d| d.file_name().to_string_lossy().starts_with("day=")))
    })
}

/// Folders never looked into for runs (builds, dependencies, history).
const SKIPPED: &[&str] = &["target", "node_modules", ".git", ".venv", "__pycache__"];

fn subfolders(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            !name.starts_with(".parts-") && !SKIPPED.contains(&name.as_str())
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

fn run_folders(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let consider = |dir: PathBuf, out: &mut Vec<PathBuf>| {
        if dir.join("run.json").is_file() && !out.contains(&dir) {
            out.push(dir);
        }
    };
    for root in roots {
        let mut suites = vec![root.clone()];
        suites.extend(subfolders(root));
        for suite in suites {
            consider(suite.clone(), &mut out);
            let state = suite.join(".gauntlet");
            for dir in subfolders(&state.join("runs")) {
                consider(dir, &mut out);
            }
            if suite != *root {
                continue;
            }
            for dir in subfolders(root) {
                for sub in subfolders(&dir) {
                    consider(sub, &mut out);
                }
            }
        }
        for suite in std::iter::once(root.clone()).chain(subfolders(root)) {
            let db = suite.join(".gauntlet").join("index.sqlite");
            if !db.is_file() {
                continue;
            }
            if let Ok(rows) = gauntlet_store::Index::open(&db).and_then(|i| i.list(100_000)) {
                for row in rows {
                    consider(PathBuf::from(row.dir), &mut out);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_read_up_to_the_trials_and_a_pipe_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        // The trial summaries, last, are not read: garbage there does not matter.
        std::fs::write(
            &path,
            r#"{"format_version": 1, "finished_at": "t", "verdict": "failed",
                "metrics": {"trials": 3.0, "passed": 1.0, "failed": 1.0, "errors": 1.0},
                "gates": [{"name": "g"}], "trials": [not json at all"#,
        )
        .unwrap();
        let s = read_summary(&path, (0, 0)).unwrap();
        assert_eq!((s.trials, s.passed, s.failed, s.errors), (3, 1, 1, 1));
        assert_eq!(s.verdict, "failed");
        assert_eq!(s.gates[0]["name"], "g");
        // A file that is not JSON up to there is an error naming it.
        std::fs::write(&path, "{\"finished_at\": oops").unwrap();
        assert!(
            read_summary(&path, (0, 0))
                .unwrap_err()
                .to_string()
                .contains("results.json")
        );
        // A pipe in place of results.json is never opened (it would block).
        std::fs::remove_file(&path).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        assert!(stamp(&path).is_none());
    }
}
