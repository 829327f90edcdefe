//! The SQLite index of runs, trials and scores under a suite's state folder.

use std::path::Path;

use gauntlet_model::names::metric;
use gauntlet_model::{RunResults, TrialStatus};
use rusqlite::{Connection, params};

use crate::run_dir::StoreError;

/// A run stored in its folder that the run index does not list: a warning, not a failure (the
/// folder is whole; `gauntlet runs` does not show it).
#[derive(Debug, thiserror::Error)]
#[error("the run is stored in {} but the run index could not be updated: {source}", dir.display())]
pub struct NotIndexed {
    /// The run folder.
    pub dir: std::path::PathBuf,
    /// Why the index could not take it.
    #[source]
    pub source: StoreError,
}

/// The index database.
pub struct Index {
    conn: Connection,
}

/// One run as listed by `gauntlet runs` (and by `gauntlet runs --json`, field for field).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
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
    /// The run's name (`gauntlet run --name`), if it has one.
    pub name: Option<String>,
}

/// One row per run: what `gauntlet runs` lists. Trial records and scores stay in the run folders
/// (their `trials.jsonl` and `results.json`), not in the index, so it grows by a row per run.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, suite TEXT NOT NULL, agent TEXT NOT NULL, seed INTEGER NOT NULL,
  started_at TEXT NOT NULL, finished_at TEXT NOT NULL, verdict TEXT NOT NULL,
  trials INTEGER NOT NULL, passed INTEGER NOT NULL, dir TEXT NOT NULL, name TEXT);
";

/// Indexes made before runs had names gain the column (empty for their runs).
const ADD_NAME: &str = "ALTER TABLE runs ADD COLUMN name TEXT;";

/// Earlier indexes also copied every trial and score (364 MB after 118k trials), which nothing
/// read: dropped, and the file compacted, the first time such an index is opened.
const DROP_PER_TRIAL_TABLES: &str = "
DROP TABLE IF EXISTS trials;
DROP TABLE IF EXISTS scores;
VACUUM;
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
        let old: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('trials', 'scores')",
                [],
                |r| r.get(0),
            )
            .map_err(db(path))?;
        if old > 0 {
            conn.execute_batch(DROP_PER_TRIAL_TABLES)
                .map_err(db(path))?;
        }
        let named: i64 = conn
            .query_row(
                "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'name'",
                [],
                |r| r.get(0),
            )
            .map_err(db(path))?;
        if named == 0 {
            conn.execute_batch(ADD_NAME).map_err(db(path))?;
        }
        Ok(Index { conn })
    }

    /// Forgets the runs whose folder no longer exists (deleted by hand); how many.
    pub fn prune(&mut self) -> Result<usize, StoreError> {
        let p = Path::new("index");
        let gone: Vec<String> = {
            let mut stmt = self
                .conn
                .prepare("SELECT run_id, dir FROM runs")
                .map_err(db(p))?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
                .map_err(db(p))?;
            rows.filter_map(Result::ok)
                .filter(|(_, dir)| !Path::new(dir).join("run.json").exists())
                .map(|(id, _)| id)
                .collect()
        };
        let tx = self.conn.transaction().map_err(db(p))?;
        for id in &gone {
            tx.execute("DELETE FROM runs WHERE run_id = ?1", params![id])
                .map_err(db(p))?;
        }
        tx.commit().map_err(db(p))?;
        Ok(gone.len())
    }

    /// Records a finished run in the index of a suite's state folder (`STATE/index.sqlite`),
    /// as `run` does once a run is over.
    pub fn record_run(state: &Path, results: &RunResults, dir: &Path) -> Result<(), NotIndexed> {
        Index::open(&state.join("index.sqlite"))
            .and_then(|mut index| index.record(results, dir))
            .map_err(|source| NotIndexed {
                dir: dir.to_owned(),
                source,
            })
    }

    /// Records a finished run (replacing an earlier record of the same run id).
    pub fn record(&mut self, results: &RunResults, dir: &Path) -> Result<(), StoreError> {
        let p = Path::new("index");
        let tx = self.conn.transaction().map_err(db(p))?;
        let h = &results.header;
        // From the counts: a run too large to hold returns its results without the summaries.
        let count = |name| results.metrics.get(name).copied().flatten().unwrap_or(0.0) as i64;
        let (trials, passed) = if results.trials.is_empty() {
            (count(metric::TRIALS), count(metric::PASSED))
        } else {
            let passed = results
                .trials
                .iter()
                .filter(|t| t.status == TrialStatus::Passed);
            (results.trials.len() as i64, passed.count() as i64)
        };
        tx.execute(
            "INSERT OR REPLACE INTO runs
               (run_id, suite, agent, seed, started_at, finished_at, verdict, trials, passed, dir, name)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                h.run_id,
                h.suite,
                h.agent,
                h.seed as i64,
                h.started_at,
                results.finished_at,
                format!("{:?}", results.verdict).to_lowercase(),
                trials,
                passed,
                // Absolute, so that `runs` and `--prune` find it from any working directory.
                std::fs::canonicalize(dir)
                    .unwrap_or_else(|_| dir.to_owned())
                    .display()
                    .to_string(),
                h.name,
            ],
        )
        .map_err(db(p))?;
        tx.commit().map_err(db(p))
    }

    /// Runs, newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<RunRow>, StoreError> {
        let p = Path::new("index");
        let mut stmt = self
            .conn
            .prepare(
                "SELECT run_id, suite, agent, started_at, verdict, trials, passed, dir, name
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
                    name: r.get(8)?,
                })
            })
            .map_err(db(p))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(db(p))
    }

    /// The folder of the run whose id or name is `key`: the run with that id, else the newest
    /// run of that name. `None` when the index has neither.
    pub fn find(&self, key: &str) -> Result<Option<std::path::PathBuf>, StoreError> {
        let p = Path::new("index");
        let mut stmt = self
            .conn
            .prepare(
                "SELECT dir FROM runs WHERE run_id = ?1 OR name = ?1
                 ORDER BY run_id = ?1 DESC, started_at DESC, run_id DESC LIMIT 1",
            )
            .map_err(db(p))?;
        let mut rows = stmt.query(params![key]).map_err(db(p))?;
        match rows.next().map_err(db(p))? {
            Some(row) => Ok(Some(std::path::PathBuf::from(
                row.get::<_, String>(0).map_err(db(p))?,
            ))),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs table before runs had names.
    const OLD_SCHEMA: &str = "
    CREATE TABLE runs (
      run_id TEXT PRIMARY KEY, suite TEXT NOT NULL, agent TEXT NOT NULL, seed INTEGER NOT NULL,
      started_at TEXT NOT NULL, finished_at TEXT NOT NULL, verdict TEXT NOT NULL,
      trials INTEGER NOT NULL, passed INTEGER NOT NULL, dir TEXT NOT NULL);
    ";

    fn results(id: &str, name: Option<&str>, started_at: &str) -> RunResults {
        let mut header = gauntlet_model::RunHeader::new(id, "s", "script:reference", started_at);
        header.name = name.map(str::to_owned);
        serde_json::from_value(serde_json::json!({
            "format_version": gauntlet_model::FORMAT_VERSION,
            "header": header,
            "finished_at": started_at,
            "verdict": "passed", "metrics": {}, "intervals": {}, "evaluators": {},
            "segments": {}, "gates": [],
        }))
        .unwrap()
    }

    #[test]
    fn an_index_made_before_names_finds_runs_by_id_and_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(OLD_SCHEMA).unwrap();
            conn.execute_batch(
                "INSERT INTO runs VALUES ('old', 's', 'a', 0, 't0', 't1', 'passed', 1, 1, '/runs/old');",
            )
            .unwrap();
        }
        let mut index = Index::open(&path).unwrap();
        let (first, second) = (dir.path().join("first"), dir.path().join("second"));
        let named = |id, at| results(id, Some("baseline"), at);
        index
            .record(&named("r1", "2026-12-01T10:00:00Z"), &first)
            .unwrap();
        index
            .record(&named("r2", "2026-12-02T10:00:00Z"), &second)
            .unwrap();
        assert_eq!(index.find("old").unwrap(), Some("/runs/old".into()));
        assert_eq!(index.find("r1").unwrap(), Some(first), "by id");
        assert_eq!(
            index.find("baseline").unwrap(),
            Some(second),
            "by name: the newest run of that name"
        );
        assert_eq!(index.find("nothing").unwrap(), None);
        let names: Vec<(String, Option<String>)> = index
            .list(10)
            .unwrap()
            .into_iter()
            .map(|r| (r.run_id, r.name))
            .collect();
        assert!(names.contains(&("r1".into(), Some("baseline".into()))));
        assert!(names.contains(&("old".into(), None)));
    }

    #[test]
    fn an_index_with_per_trial_tables_is_compacted_to_its_run_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(OLD_SCHEMA).unwrap();
            conn.execute_batch(
                "CREATE TABLE trials (run_id TEXT, case_id TEXT, epoch INTEGER, status TEXT, trace_id TEXT);
                 CREATE TABLE scores (run_id TEXT, name TEXT, value REAL);
                 INSERT INTO runs VALUES ('r1', 's', 'a', 0, 't0', 't1', 'passed', 1, 1, '/nowhere');
                 INSERT INTO trials VALUES ('r1', 'c', 0, 'passed', 'x');",
            )
            .unwrap();
        }
        let mut index = Index::open(&path).unwrap();
        let tables: Vec<String> = index
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(tables, ["runs"]);
        assert_eq!(index.list(10).unwrap().len(), 1, "the run rows stay");
        assert_eq!(index.prune().unwrap(), 1, "its folder does not exist");
        assert!(index.list(10).unwrap().is_empty());
    }
}
