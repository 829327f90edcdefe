//! `gauntlet merge PART... --out RUN`: the parts of a sharded run (`run --shard I/N`) as one run,
//! with the trials in the order an unsharded run lists them and the gates decided on all.

use std::path::{Path, PathBuf};

use gauntlet_model::{RunResults, TrialSummary};
use gauntlet_store::{RunWriter, read_results};

use crate::commands::gate::{stored_gates, stored_rubric};
use crate::commands::shared::{print_results, verdict_code};
use crate::exit::ExpectedError;
use gauntlet_eval::build_results;

pub fn merge(
    parts: &[PathBuf],
    out: &Path,
    reports: &[crate::commands::report::Format],
    json: bool,
) -> Result<i32, ExpectedError> {
    let mut loaded: Vec<(PathBuf, RunResults)> = Vec::new();
    for dir in parts {
        let r = read_results(dir).map_err(|e| {
            ExpectedError::input(format!(
                "{}: not a finished run part ({e}); finish it with `gauntlet run --resume`",
                dir.display()
            ))
        })?;
        if r.header.shard.is_none() {
            return Err(ExpectedError::input(format!(
                "{} is a whole run, not a part of one (run parts with --shard I/N)",
                dir.display()
            )));
        }
        loaded.push((dir.clone(), r));
    }
    let Some((first_dir, first)) = loaded.first() else {
        return Err(ExpectedError::input(
            "give the run folders of the parts to merge",
        ));
    };
    let count = first.header.shard.map_or(1, |s| s.count);
    // The parts must be of one run: same suite, agent, seed, epochs, versions and options.
    for (dir, r) in &loaded[1..] {
        let (a, b) = (&first.header, &r.header);
        let differs = [
            ("suite", a.suite != b.suite),
            ("agent", a.agent != b.agent),
            ("seed", a.seed != b.seed),
            ("epochs", a.epochs != b.epochs),
            (
                "versions (harness, worlds, dataset, agent, configuration)",
                a.versions != b.versions,
            ),
            ("fault profile", a.fault_profile != b.fault_profile),
            ("filter", a.filter != b.filter),
            ("rubric", a.rubric != b.rubric),
            ("number of parts", b.shard.map(|s| s.count) != Some(count)),
        ];
        if let Some((what, _)) = differs.iter().find(|(_, d)| *d) {
            return Err(ExpectedError::input(format!(
                "{} and {} are not parts of one run: their {what} differ",
                first_dir.display(),
                dir.display()
            )));
        }
    }
    let mut by_index: Vec<Option<&(PathBuf, RunResults)>> = vec![None; count as usize];
    for part in &loaded {
        let i = part.1.header.shard.map_or(1, |s| s.index) as usize - 1;
        if let Some(other) = by_index[i] {
            return Err(ExpectedError::input(format!(
                "{} and {} are both part {}/{count}",
                other.0.display(),
                part.0.display(),
                i + 1
            )));
        }
        by_index[i] = Some(part);
    }
    let missing: Vec<String> = (1..=count)
        .filter(|i| by_index[*i as usize - 1].is_none())
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(ExpectedError::input(format!(
            "parts {} are missing",
            missing.join(", ")
        )));
    }
    let parts: Vec<&(PathBuf, RunResults)> = by_index.into_iter().flatten().collect();
    // The plan's own shard rule puts each part's trials back at their positions.
    let total: usize = parts.iter().map(|p| p.1.trials.len()).sum();
    let shard = |j: usize| gauntlet_model::Shard {
        index: j as u32 + 1,
        count,
    };
    for (j, (dir, r)) in parts.iter().enumerate() {
        let expected = shard(j).share(total);
        if r.trials.len() != expected {
            return Err(ExpectedError::input(format!(
                "{} holds {} trials, but part {}/{count} of a {total}-trial run holds {expected}",
                dir.display(),
                r.trials.len(),
                j + 1
            )));
        }
    }
    let mut placed: Vec<Option<TrialSummary>> = vec![None; total];
    for (j, (_, r)) in parts.iter().enumerate() {
        for (k, t) in r.trials.iter().enumerate() {
            placed[shard(j).position(k)] = Some(t.clone());
        }
    }
    let trials: Vec<TrialSummary> = placed.into_iter().flatten().collect();
    let mut header = first.header.clone();
    header.shard = None;
    header.started_at = parts
        .iter()
        .map(|p| p.1.header.started_at.clone())
        .min()
        .unwrap_or_default();
    let gates = stored_gates(&first.gates)?;
    let rubric = stored_rubric(&header)?;
    let (results, gate_errors) = build_results(
        header.clone(),
        gauntlet_runner::stamp(),
        trials,
        &gates,
        rubric.as_ref(),
    );
    let mut writer = RunWriter::create(out, &header)
        .map_err(|e| ExpectedError::harness(format!("failed to create the run folder: {e}")))?;
    for (dir, _) in &parts {
        writer
            .append_run(dir)
            .map_err(|e| ExpectedError::harness(format!("failed to copy a part's trials: {e}")))?;
    }
    writer
        .finish(&results)
        .map_err(|e| ExpectedError::harness(format!("failed to write results: {e}")))?;
    // Parts in a suite's run folder (SUITE/.gauntlet/runs/...): the merged run joins its index.
    let state = parts[0].0.parent().and_then(Path::parent);
    if let Some(state) = state.filter(|s| s.file_name().is_some_and(|n| n == ".gauntlet")) {
        crate::commands::shared::index_run(state, &results, out);
    }
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
