//! `gauntlet merge PART... --out RUN`: the parts of a sharded run (`run --shard I/N`) as one run,
//! with the trials in the order an unsharded run lists them and the gates decided on all.

use std::path::{Path, PathBuf};

use gauntlet_runner::merge::{Merged, merge_parts};

use crate::exit::ExpectedError;
use crate::shared::{listing_trials, print_results, verdict_code};

/// Merge the parts of a sharded run (`run --shard I/N`) into one run and decide its gates.
///
/// Example:
///   gauntlet merge runs/ID-shard-1-of-2 runs/ID-shard-2-of-2 --out runs/ID
///
/// The parts must come from the same suite, agent, seed, epochs and options, one of each
/// part; the merged run lists its trials in the order an unsharded run would, so its
/// statistics and gates are the unsharded run's. Records are streamed from the parts, and
/// past 1,000 trials (GAUNTLET_SCORE_KEEP) their summaries wait on disk: memory stays
/// small however large the run.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The run folders of the parts.
    #[arg(required = true)]
    pub parts: Vec<PathBuf>,
    /// The run folder to write.
    #[arg(long)]
    pub out: PathBuf,
    /// Also write these reports into the merged run folder (report.html, junit.xml,
    /// summary.md).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub report: Vec<crate::reports::Format>,
    /// Print the results (results.json with its trial summaries) on stdout instead of the summary.
    #[arg(long)]
    pub json: bool,
}

pub fn merge(
    parts: &[PathBuf],
    out: &Path,
    reports: &[crate::reports::Format],
    json: bool,
) -> Result<i32, ExpectedError> {
    let Merged {
        results,
        gate_errors,
        spill,
    } = merge_parts(
        parts,
        out,
        crate::shared::kept_summaries(),
        gauntlet_runner::stamp,
    )?;
    // Parts in a suite's run folder (SUITE/.gauntlet/runs/...): the merged run joins its index.
    let state = parts[0].parent().and_then(Path::parent);
    if let Some(state) = state.filter(|s| s.file_name().is_some_and(|n| n == ".gauntlet")) {
        crate::shared::index_run(state, &results, out);
    }
    let results = listing_trials(results, spill.is_some(), json, reports, out)?;
    let written = crate::reports::write_reports(out, &results, reports)?;
    print_results(&results, json, false);
    if !json {
        crate::say!("results: {}", out.join("results.json").display());
        for r in written {
            crate::say!("report: {}", r.display());
        }
    }
    verdict_code(&results, gate_errors)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        merge(&self.parts, &self.out, &self.report, self.json)
    }
}
