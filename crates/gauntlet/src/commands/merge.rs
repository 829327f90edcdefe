//! `gauntlet merge PART... --out RUN`: the parts of a sharded run (`run --shard I/N`) as one run,
//! with the trials in the order an unsharded run lists them and the gates decided on all.

use std::path::{Path, PathBuf};

use gauntlet_runner::merge::{Merged, merge_parts};

use crate::commands::shared::{listing_trials, print_results, verdict_code};
use crate::exit::ExpectedError;

pub fn merge(
    parts: &[PathBuf],
    out: &Path,
    reports: &[crate::commands::report::Format],
    json: bool,
) -> Result<i32, ExpectedError> {
    let Merged {
        results,
        gate_errors,
        spill,
    } = merge_parts(
        parts,
        out,
        crate::commands::score::kept_summaries(),
        gauntlet_runner::stamp,
    )?;
    // Parts in a suite's run folder (SUITE/.gauntlet/runs/...): the merged run joins its index.
    let state = parts[0].parent().and_then(Path::parent);
    if let Some(state) = state.filter(|s| s.file_name().is_some_and(|n| n == ".gauntlet")) {
        crate::commands::shared::index_run(state, &results, out);
    }
    let results = listing_trials(results, spill.is_some(), json, reports, out)?;
    let written = crate::commands::report::write_reports(out, &results, reports)?;
    print_results(&results, json, false);
    if !json {
        crate::say!("results: {}", out.join("results.json").display());
        for r in written {
            crate::say!("report: {}", r.display());
        }
    }
    verdict_code(&results, gate_errors)
}
