//! `gauntlet runs SUITE`: past runs from the suite's index.

use std::path::Path;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gauntlet_store::Index;

use crate::exit::{ExpectedError, GATES_PASSED};

pub fn runs(suite: &Path, limit: usize, prune: bool) -> Result<i32, ExpectedError> {
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
            eprintln!("pruned {n} run(s) whose folder no longer exists");
        }
        index
            .list(limit)
            .map_err(|e| ExpectedError::harness(format!("failed to read the run index: {e}")))?
    } else {
        Vec::new()
    };
    if rows.is_empty() {
        println!(
            "no runs recorded under {} yet (gauntlet run and gauntlet merge write them)",
            root.display()
        );
        return Ok(GATES_PASSED);
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header(["run", "started", "agent", "verdict", "passed", "folder"]);
    for r in rows {
        table.add_row([
            r.run_id,
            r.started_at,
            r.agent,
            r.verdict,
            format!("{}/{}", r.passed, r.trials),
            r.dir,
        ]);
    }
    println!("{table}");
    Ok(GATES_PASSED)
}
