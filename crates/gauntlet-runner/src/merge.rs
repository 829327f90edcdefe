//! The parts of a sharded run (`run --shard I/N`, or a distributed run's batches) as one run
//! folder: the parts are checked to be all the parts of one run, each exactly once; their
//! trials are streamed back into the order an unsharded run lists them (the plan's own rule,
//! [`Shard::holds`]: position `p` is part `p mod N`'s) through the store's one writer, and the gates are decided on all.
//! Memory holds one record at a time, the run's tally (per case and evaluator) and where each
//! trial is in its part (a key and an offset, about 100 bytes a trial): past
//! [`KEPT_SUMMARIES`](crate::offline::KEPT_SUMMARIES) the summaries wait on disk.

use std::path::{Path, PathBuf};

use gauntlet_verdict::{CompiledGate, CompiledRubric};

use crate::tally::{Tallied, Tally};
use gauntlet_model::{Classified, ErrorKind, RunHeader, RunResults, Shard, TrialSummary};
use gauntlet_store::{
    ResultsBrief, RunWriter, SpilledSummaries, StoreError, StoredTrials, read_results_brief,
};

/// A merged run.
pub struct Merged {
    /// Its results; their `trials` are empty when `spill` holds them.
    pub results: RunResults,
    /// Gates that could not be decided.
    pub gate_errors: Vec<String>,
    /// The trial summaries, on disk, for a run too large to hold them.
    pub spill: Option<SpilledSummaries>,
}

/// Why parts cannot be merged: the user's input (parts that are not all the parts of one
/// finished run), or the store.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No part given.
    #[error("give the run folders of the parts to merge")]
    NoParts,
    /// A folder that is not a finished run.
    #[error("{}: not a finished run part ({source}); finish it with `gauntlet run --resume`", dir.display())]
    Unfinished {
        /// The folder.
        dir: PathBuf,
        /// What reading it said.
        source: StoreError,
    },
    /// A whole run among the parts.
    #[error("{} is a whole run, not a part of one (run parts with --shard I/N)", dir.display())]
    Whole {
        /// The folder.
        dir: PathBuf,
    },
    /// Parts of different runs.
    #[error("{} and {} are not parts of one run: their {what} differ", first.display(), other.display())]
    Foreign {
        /// The first part.
        first: PathBuf,
        /// The part that differs from it.
        other: PathBuf,
        /// What differs.
        what: &'static str,
    },
    /// The same part twice.
    #[error("{} and {} are both part {index}/{count}", first.display(), other.display())]
    Duplicate {
        /// One folder.
        first: PathBuf,
        /// The other.
        other: PathBuf,
        /// The part.
        index: u32,
        /// Of how many.
        count: u32,
    },
    /// Parts missing.
    #[error("parts {} are missing", .0.join(", "))]
    Missing(Vec<String>),
    /// A part with the wrong number of trials.
    #[error("{} holds {holds} trials, but part {index}/{count} of a {total}-trial run holds {expected}", dir.display())]
    Incomplete {
        /// The folder.
        dir: PathBuf,
        /// Trials it holds.
        holds: usize,
        /// The part.
        index: u32,
        /// Of how many.
        count: u32,
        /// Trials of the whole run.
        total: usize,
        /// Trials the part should hold.
        expected: usize,
    },
    /// A trial a part's `results.json` lists, missing from its `trials.jsonl`.
    #[error("{}: results.json lists {case_id} epoch {epoch}, but trials.jsonl has no record of it", dir.display())]
    Lost {
        /// The folder.
        dir: PathBuf,
        /// The trial's case.
        case_id: String,
        /// Its epoch.
        epoch: u32,
    },
    /// The stored gates or rubric no longer compile.
    #[error("{}", .0.join("\n"))]
    Gates(Vec<String>),
    /// Reading a part or writing the merged run failed.
    #[error("{doing}: {source}")]
    Store {
        /// What was being done.
        doing: &'static str,
        /// Why it failed.
        source: StoreError,
    },
}

impl Classified for MergeError {
    fn kind(&self) -> ErrorKind {
        match self {
            MergeError::Store { source, .. } => source.kind(),
            _ => ErrorKind::InvalidInput,
        }
    }
}

/// What of the headers must agree for parts to be of one run.
fn differs(a: &RunHeader, b: &RunHeader, count: u32) -> Option<&'static str> {
    [
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
        ("attack", a.attack != b.attack),
        ("rubric", a.rubric != b.rubric),
        ("number of parts", b.shard.map(|s| s.count) != Some(count)),
    ]
    .into_iter()
    .find(|(_, d)| *d)
    .map(|(what, _)| what)
}

/// Checks that `parts` are every part of one finished run, each once; them in part order.
fn check_parts(parts: &[PathBuf]) -> Result<Vec<(PathBuf, ResultsBrief)>, MergeError> {
    let mut loaded = Vec::new();
    for dir in parts {
        let brief = read_results_brief(dir).map_err(|source| MergeError::Unfinished {
            dir: dir.clone(),
            source,
        })?;
        if brief.header.shard.is_none() {
            return Err(MergeError::Whole { dir: dir.clone() });
        }
        loaded.push((dir.clone(), brief));
    }
    let Some((first_dir, first)) = loaded.first() else {
        return Err(MergeError::NoParts);
    };
    let count = first.header.shard.map_or(1, |s| s.count);
    for (dir, r) in &loaded[1..] {
        if let Some(what) = differs(&first.header, &r.header, count) {
            return Err(MergeError::Foreign {
                first: first_dir.clone(),
                other: dir.clone(),
                what,
            });
        }
    }
    let mut by_index: Vec<Option<(PathBuf, ResultsBrief)>> = vec![None; count as usize];
    for (dir, brief) in loaded {
        let index = brief.header.shard.map_or(1, |s| s.index);
        let slot = &mut by_index[index as usize - 1];
        if let Some((other, _)) = slot {
            return Err(MergeError::Duplicate {
                first: other.clone(),
                other: dir,
                index,
                count,
            });
        }
        *slot = Some((dir, brief));
    }
    let missing: Vec<String> = (1..=count)
        .filter(|i| by_index[*i as usize - 1].is_none())
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing(missing));
    }
    let parts: Vec<(PathBuf, ResultsBrief)> = by_index.into_iter().flatten().collect();
    let total: usize = parts.iter().map(|p| p.1.trials.len()).sum();
    for (j, (dir, brief)) in parts.iter().enumerate() {
        let shard = Shard {
            index: j as u32 + 1,
            count,
        };
        let expected = shard.share(total);
        if brief.trials.len() != expected {
            return Err(MergeError::Incomplete {
                dir: dir.clone(),
                holds: brief.trials.len(),
                index: shard.index,
                count,
                total,
                expected,
            });
        }
    }
    Ok(parts)
}

/// Merges the finished parts of one sharded run into a new run folder `out`, its trials in
/// plan order and its gates decided on all of them; `finished_at` is the merge's clock. At most
/// `keep` trial summaries are held in memory (see [`KEPT_SUMMARIES`](crate::offline::KEPT_SUMMARIES)); past that they wait on
/// disk and the results come back without them.
pub fn merge_parts(
    parts: &[PathBuf],
    out: &Path,
    keep: usize,
    finished_at: impl FnOnce() -> String,
) -> Result<Merged, MergeError> {
    let store = |doing| move |source| MergeError::Store { doing, source };
    let parts = check_parts(parts)?;
    let first = &parts[0].1;
    let mut header = first.header.clone();
    header.shard = None;
    header.started_at = parts
        .iter()
        .map(|p| p.1.header.started_at.clone())
        .min()
        .unwrap_or_default();
    let gates = CompiledGate::recompile(&first.gates)
        .map_err(|es| MergeError::Gates(es.iter().map(ToString::to_string).collect()))?;
    let rubric = header
        .rubric
        .as_ref()
        .map(|def| {
            CompiledRubric::compile(def)
                .map_err(|e| MergeError::Gates(vec![format!("the run's rubric: {e}")]))
        })
        .transpose()?;
    let mut writer =
        RunWriter::create(out, &header).map_err(store("failed to create the run folder"))?;
    let mut readers = Vec::with_capacity(parts.len());
    for (dir, _) in &parts {
        writer
            .adopt_states(dir)
            .map_err(store("failed to copy a part's states"))?;
        readers.push(StoredTrials::open(dir).map_err(store("failed to read a part's trials"))?);
    }
    let total: usize = parts.iter().map(|p| p.1.trials.len()).sum();
    let mut tally = Tally::new(&header.judges, keep, out);
    // Reading the parts in turn restores plan order (see `Shard::holds`).
    for position in 0..total {
        let (j, k) = (position % parts.len(), position / parts.len());
        let (dir, brief) = &parts[j];
        let (case_id, epoch) = &brief.trials[k];
        let trial = readers[j]
            .get(case_id, *epoch)
            .map_err(store("failed to read a part's trials"))?
            .ok_or_else(|| MergeError::Lost {
                dir: dir.clone(),
                case_id: case_id.clone(),
                epoch: *epoch,
            })?;
        writer
            .append_stored(&trial)
            .map_err(store("failed to write the merged trials"))?;
        if !trial.record.retried_errors.is_empty() {
            tally.add_retried(1);
        }
        tally
            .push(TrialSummary::of(&trial.record))
            .map_err(store("failed to set trial summaries aside"))?;
    }
    let Tallied {
        results,
        gate_errors,
        spill,
    } = tally
        .finish(header, finished_at(), &gates, rubric.as_ref(), writer)
        .map_err(store("failed to write results"))?;
    Ok(Merged {
        results,
        gate_errors,
        spill,
    })
}
