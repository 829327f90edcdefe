//! `gauntlet compare RUN_A RUN_B`: paired comparison of two stored runs, and with `--pairwise
//! SUITE` the suite's LLM judge's preferences between the paired trajectories.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use gauntlet_model::compare::PairwiseReport;
use gauntlet_model::judge::RunOn;
use gauntlet_model::{Event, TrialRecord, TrialStatus};
use gauntlet_report::{SummaryOptions, render_comparison};
use gauntlet_scoring::judge::{Pair, pairwise_report};
use gauntlet_store::{StoreError, read_results_head, read_summaries, read_trials_lean};

use crate::exit::{ExpectedError, GATE_FAILED, GATES_PASSED};
use crate::shared::{load_suite, offline_judges, run_folder};

/// Compare two stored runs, paired by case and epoch.
///
/// Gives McNemar's exact test on pass/fail, paired bootstrap intervals of each quantity's
/// difference, effect sizes, the segments that moved, what changed between the runs, and a
/// verdict in words. Exits 0, or 1 with --fail-on-regression when B is significantly worse or
/// has a critical violation on a case where A had none.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The baseline run: its folder (or its results.json), or a run id or name (`run --name`)
    /// in the index of the suite in the current folder.
    pub a: PathBuf,
    /// The candidate run, as A.
    pub b: PathBuf,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 when B regressed: it passes significantly less often than A (p < 0.05), or it has
    /// a critical violation on a case where A had none, whatever the p-value.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Also let this suite's LLM judge say which trajectory of each pair is better, asking in
    /// both orders (A first, then B first): a verdict that flips with the order is a tie
    /// (position bias). Pairs where a deterministic check failed in either run are not judged
    /// unless the judge says `run_on: all`. Needs the run folders (trials.jsonl), not only
    /// results.json.
    #[arg(long, value_name = "SUITE")]
    pub pairwise: Option<PathBuf>,
    /// The suite's judge to use with --pairwise, when it has several.
    #[arg(long, value_name = "NAME", requires = "pairwise")]
    pub evaluator: Option<String>,
    /// Where the pairwise judge asks for verdicts the judge cache does not have (an
    /// OpenAI-compatible base URL; the key from GAUNTLET_UPSTREAM_API_KEY or OPENAI_API_KEY).
    #[arg(long, requires = "pairwise")]
    pub gateway_upstream: Option<String>,
}

pub fn compare(args: Args) -> Result<i32, ExpectedError> {
    let failed = |e: StoreError| ExpectedError::input(format!("failed to read the run: {e}"));
    let (a, b) = (run_folder(&args.a)?, run_folder(&args.b)?);
    let (ra, rb) = (
        read_results_head(&a).map_err(failed)?,
        read_results_head(&b).map_err(failed)?,
    );
    // The bootstrap seed comes from the runs, so the same two runs always compare identically.
    let seed = ra.header.seed ^ rb.header.seed.rotate_left(32);
    // Both runs' summaries are walked together in plan order, one at a time.
    let mut c = gauntlet_verdict::compare_streams(
        &ra,
        &rb,
        read_summaries(&a).map_err(failed)?,
        read_summaries(&b).map_err(failed)?,
        seed,
    )
    .map_err(failed)?;
    if let Some(suite) = &args.pairwise {
        c.pairwise = Some(pairwise(
            suite,
            &a,
            &b,
            args.evaluator.as_deref(),
            args.gateway_upstream.clone(),
        )?);
    }
    if args.json {
        let text = serde_json::to_string_pretty(&c).map_err(|e| {
            ExpectedError::harness(format!("failed to serialize the comparison: {e}"))
        })?;
        println!("{text}");
    } else {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        if !crate::say::quiet() {
            anstream::print!(
                "{}",
                render_comparison(
                    &c,
                    SummaryOptions {
                        color,
                        width: None,
                        explain: false,
                    }
                )
            );
        }
    }
    Ok(if args.fail_on_regression && c.regression {
        GATE_FAILED
    } else {
        GATES_PASSED
    })
}

/// A run's trials by (case, epoch).
fn trials_of(run: &Path) -> Result<HashMap<(String, u32), TrialRecord>, ExpectedError> {
    let bad = |e: gauntlet_store::StoreError| {
        ExpectedError::input(format!(
            "--pairwise reads the trajectories of {}: {e}",
            run.display()
        ))
    };
    let mut out = HashMap::new();
    for t in read_trials_lean(run).map_err(bad)? {
        let t = t.map_err(bad)?;
        out.insert((t.case_id.clone(), t.epoch), t);
    }
    Ok(out)
}

/// The suite's judge on every pair both runs hold, in both orders.
fn pairwise(
    suite: &Path,
    a: &Path,
    b: &Path,
    judge: Option<&str>,
    upstream: Option<String>,
) -> Result<PairwiseReport, ExpectedError> {
    let suite = load_suite(suite)?;
    let Some((runtime, panel)) = offline_judges(&suite, upstream)? else {
        return Err(ExpectedError::input(format!(
            "--pairwise: the suite {} has no `judges:` to compare with",
            suite.root.display()
        )));
    };
    let run_on = panel.pick(judge)?.spec.run_on;
    let goals: HashMap<&str, &str> = suite
        .cases
        .iter()
        .map(|c| (c.case.case_id.as_str(), c.case.user_input.as_str()))
        .collect();
    let (ta, mut tb) = (trials_of(a)?, trials_of(b)?);
    let mut keys: Vec<&(String, u32)> = ta.keys().collect();
    keys.sort();
    let mut pairs = Vec::new();
    let mut skipped = 0;
    for key in keys {
        let Some(y) = tb.remove(key) else {
            continue;
        };
        let x = &ta[key];
        let judged = |s: TrialStatus| match s {
            TrialStatus::Passed => true,
            TrialStatus::Failed => run_on == RunOn::All,
            TrialStatus::Error => false,
        };
        if !judged(x.status) || !judged(y.status) {
            skipped += 1;
            continue;
        }
        let goal = goals
            .get(key.0.as_str())
            .map(|g| (*g).to_owned())
            .or_else(|| {
                x.trajectory.events.iter().find_map(|e| match e {
                    Event::UserMessage { text } => Some(text.clone()),
                    _ => None,
                })
            })
            .unwrap_or_default();
        pairs.push(Pair {
            case_id: key.0.clone(),
            epoch: key.1,
            goal,
            a: x.trajectory.clone(),
            b: y.trajectory,
        });
    }
    runtime
        .block_on(pairwise_report(&panel, judge, &pairs, skipped))
        .map_err(ExpectedError::from)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        compare(self)
    }
}
