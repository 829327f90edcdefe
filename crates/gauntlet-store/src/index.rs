//! The SQLite index of runs, trials and scores under a suite's state folder.

use std::path::Path;

use gauntlet_model::{RunResults, TrialStatus};
use rusqlite::{Connection, params};

use crate::run_dir::StoreError;

/// The index database.
pub struct Index {
    conn: Connection,
}

/// One run as listed by `gauntlet runs`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// The run id.
    pub run_id: String,
    /// The suite.
    pub suite: String,
    /// The agent.
    pub agent: String,
    /// Start time (RFC 3339).
    pub started_at: String,
    /// `passed` or `failed`.
    pub verdict: String,
    /// Number of trials.
    pub trials: u32,
    /// Trials that passed.
    pub passed: u32,
    /// Where the run directory is.
    pub dir: String,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, suite TEXT NOT NULL, agent TEXT NOT NULL, seed INTEGER NOT NULL,
  started_at TEXT NOT NULL, finished_at TEXT NOT NULL, verdict TEXT NOT NULL,
  trials INTEGER NOT NULL, passed INTEGER NOT NULL, dir TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
  run_id TEXT NOT NULL, case_id TEXT NOT NULL, epoch INTEGER NOT NULL, status TEXT NOT NULL,
  trace_id TEXT NOT NULL, PRIMARY KEY (run_id, case_id, epoch));
CREATE TABLE IF NOT EXISTS scores (
  run_id TEXT NOT NULL, case_id TEXT NOT NULL, epoch INTEGER NOT NULL, name TEXT NOT NULL,
  value REAL NOT NULL, score REAL NOT NULL, passed INTEGER NOT NULL,
  PRIMARY KEY (run_id, case_id, epoch, name));
";

fn db(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |e| StoreError::Format {
        path: path.to_owned(),
        line: 0,
        message: format!("index database: {e}"),
    }
}

impl Index {
    /// Opens (creating if needed) the index at a path.
    pub fn open(path: &Path) -> Result<Index, StoreError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Io {
                path: parent.to_owned(),
                source,
            })?;
        }
        let conn = Connection::open(path).map_err(db(path))?;
        conn.execute_batch(SCHEMA).map_err(db(path))?;
        Ok(Index { conn })
    }

    /// Records a finished run (replacing an earlier record of the same run id).
    pub fn record(&mut self, results: &RunResults, dir: &Path) -> Result<(), StoreError> {
        let p = Path::new("index");
        let tx = self.conn.transaction().map_err(db(p))?;
        let h = &results.header;
        let passed = results
            .trials
            .iter()
            .filter(|t| t.status == TrialStatus::Passed)
            .count();
        tx.execute(
            "INSERT OR REPLACE INTO runs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                h.run_id,
                h.suite,
                h.agent,
                h.seed as i64,
                h.started_at,
                results.finished_at,
                format!("{:?}", results.verdict).to_lowercase(),
                results.trials.len() as i64,
                passed as i64,
                dir.display().to_string(),
            ],
        )
        .map_err(db(p))?;
        {
            let mut trial = tx
                .prepare("INSERT OR REPLACE INTO trials VALUES (?1, ?2, ?3, ?4, ?5)")
                .map_err(db(p))?;
            let mut score = tx
                .prepare("INSERT OR REPLACE INTO scores VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
                .map_err(db(p))?;
            for t in &results.trials {
                let status = serde_json::to_value(t.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                trial
                    .execute(params![h.run_id, t.case_id, t.epoch, status, t.trace_id])
                    .map_err(db(p))?;
                for s in &t.scores {
                    score
                        .execute(params![
                            h.run_id, t.case_id, t.epoch, s.name, s.value, s.score, s.passed
                        ])
                        .map_err(db(p))?;
                }
            }
        }
        tx.commit().map_err(db(p))
    }

    /// Runs, newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<RunRow>, StoreError> {
        let p = Path::new("index");
        let mut stmt = self
            .conn
            .prepare(
                "SELECT run_id, suite, agent, started_at, verdict, trials, passed, dir
                 FROM runs ORDER BY started_at DESC, run_id DESC LIMIT ?1",
            )
            .map_err(db(p))?;
        let rows = stmt
            .query_map(params![limit as i64], |r| {
                Ok(RunRow {
                    run_id: r.get(0)?,
                    suite: r.get(1)?,
                    agent: r.get(2)?,
                    started_at: r.get(3)?,
                    verdict: r.get(4)?,
                    trials: r.get(5)?,
                    passed: r.get(6)?,
                    dir: r.get(7)?,
                })
            })
            .map_err(db(p))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(db(p))
    }
}
