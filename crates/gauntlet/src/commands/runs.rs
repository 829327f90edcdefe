//! `gauntlet runs SUITE`: past runs from the suite's index.

use std::path::{Path, PathBuf};

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gauntlet_store::Index;

use crate::exit::{ExpectedError, GATES_PASSED};

/// List past runs of a suite, newest first.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite folder (its .gauntlet/index.sqlite is read).
    #[arg(default_value = ".")]
    pub suite: PathBuf,
    /// How many runs to list.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Forget the runs whose folder was deleted. The index holds a row per run; the runs
    /// themselves are their folders (.gauntlet/runs/RUN_ID or --out): delete the folders
    /// you no longer need, then prune.
    #[arg(long)]
    pub prune: bool,
    /// Print the runs as a JSON array (run_id, suite, agent, started_at, verdict, trials,
    /// passed, dir, name), newest first.
    #[arg(long)]
    pub json: bool,
}

pub fn runs(suite: &Path, limit: usize, prune: bool, json: bool) -> Result<i32, ExpectedError> {
    let root = if suite.is_file() {
        suite.parent().unwrap_or(Path::new("."))
    } else {
        suite
    };
    let db = root.join(".gauntlet").join("index.sqlite");
    let rows = if db.exists() {
        let mut index = Index::open(&db)
            .map_err(|e| ExpectedError::harness(format!("failed to open the run index: {e}")))?;
        if prune {
            let n = index
                .prune()
                .map_err(|e| ExpectedError::harness(format!("failed to prune the index: {e}")))?;
            crate::note!("pruned {n} run(s) whose folder no longer exists");
        }
        index
            .list(limit)
            .map_err(|e| ExpectedError::harness(format!("failed to read the run index: {e}")))?
    } else {
        Vec::new()
    };
    if json {
        let text = serde_json::to_string_pretty(&rows)
            .map_err(|e| ExpectedError::harness(format!("failed to serialize the runs: {e}")))?;
        println!("{text}");
        return Ok(GATES_PASSED);
    }
    if rows.is_empty() {
        crate::say!(
            "no runs recorded under {} yet (gauntlet run and gauntlet merge write them)",
            root.display()
        );
        return Ok(GATES_PASSED);
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header([
        "run", "name", "started", "agent", "verdict", "passed", "folder",
    ]);
    for r in rows {
        table.add_row([
            r.run_id,
            r.name.unwrap_or_default(),
            r.started_at,
            r.agent,
            r.verdict,
            format!("{}/{}", r.passed, r.trials),
            r.dir,
        ]);
    }
    crate::say!("{table}");
    Ok(GATES_PASSED)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        runs(&self.suite, self.limit, self.prune, self.json)
    }
}
