//! `gauntlet calibrate --labels LABELS --verdicts VERDICTS`: a judge's agreement with humans.

use std::path::{Path, PathBuf};

use gauntlet_import::labels::{Side, is_results_json, read_label_file, read_results_json};
use gauntlet_model::digest::sha256_hex;
use gauntlet_model::labels::Level;
use gauntlet_model::{CalibrationFile, CalibrationThresholds, JudgeIdentity, Label};
use gauntlet_stats::agreement::KappaWeights;
use gauntlet_stats::calibration::{CalibrationOptions, calibrate as compute};

use crate::exit::ExpectedError;

/// Measure how far a judge agrees with human labels, before it may gate
///
/// Example:
///   gauntlet calibrate --labels human.jsonl --verdicts .gauntlet/runs/ID --out judge.calibration.json
///
/// LABELS and VERDICTS are JSON Lines of {"item": "ID", "label": VALUE} (VALUE a bool, a
/// number or a string; optional "rater" when items carry several labels, optional
/// "segment": {"benchmark": "...", "tag": ["a", "b"]} to break the figures down). VERDICTS
/// may also be a run folder (its judge verdicts, item CASE#EPOCH, segments case,
/// difficulty, tag and agent) and either may be an Online-Mind2Web /
/// AgentRewardBench results.json (--judge and --category pick the lists). Items are matched
/// by id; the unmatched are counted and listed.
///
/// Reports the confusion matrix, accuracy, precision, recall, F1, NPV, TNR, Cohen's kappa
/// with its standard error and 95% interval, weighted kappa (--weights), Krippendorff's
/// alpha (--level), the judge's positive rate against the humans', McNemar's test, the same
/// per segment, and human-human agreement where items carry two labels. With --out it
/// writes the calibration file a suite's judge names to be allowed to gate.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Human labels (JSON Lines, or a results.json).
    #[arg(long)]
    pub labels: PathBuf,
    /// Judge verdicts (JSON Lines, a run folder, or a results.json).
    #[arg(long)]
    pub verdicts: PathBuf,
    /// Print one JSON object instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Also give weighted kappa, for ordinal scales.
    #[arg(long, value_enum)]
    pub weights: Option<WeightsArg>,
    /// Krippendorff's level of measurement.
    #[arg(long, value_enum, default_value = "nominal")]
    pub level: LevelArg,
    /// In a results.json: the judge whose lists to read (webjudge, functional, gpt-4o-mini, ...).
    #[arg(long)]
    pub judge: Option<String>,
    /// In a results.json: the category (trajectory_success, trajectory_side_effect, ...).
    #[arg(long)]
    pub category: Option<String>,
    /// In a run folder: the judge evaluator whose verdicts to read, when it has several.
    #[arg(long)]
    pub evaluator: Option<String>,
    /// Write the calibration file here (what a judge's `calibration:` names).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Cohen's kappa the judge must reach to be trusted.
    #[arg(long, default_value_t = 0.6)]
    pub min_kappa: f64,
    /// Matched items needed to be trusted.
    #[arg(long, default_value_t = 30)]
    pub min_items: usize,
}

/// `--weights`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum WeightsArg {
    /// |i - j|.
    Linear,
    /// (i - j)^2.
    Quadratic,
}

/// `--level`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum LevelArg {
    /// Categories.
    Nominal,
    /// Ranks.
    Ordinal,
    /// Differences.
    Interval,
    /// Ratios.
    Ratio,
}

/// Labels or verdicts as read, with what identifies them.
struct Side_ {
    labels: Vec<Label>,
    sha256: String,
    judge: Option<JudgeIdentity>,
}

fn read(path: &Path, side: Side, args: &Args) -> Result<Side_, ExpectedError> {
    let input = |e: gauntlet_import::ImportError| ExpectedError::input(e.to_string());
    if path.is_dir() {
        if side == Side::Human {
            return Err(ExpectedError::input(format!(
                "{}: --labels takes a JSON Lines file of human labels (or a results.json), not a folder",
                path.display()
            )));
        }
        let verdicts = gauntlet_store::read_judge_verdicts(path, args.evaluator.as_deref())
            .map_err(|e| ExpectedError::input(e.to_string()))?;
        let text = serde_json::to_string(&verdicts.labels).unwrap_or_default();
        return Ok(Side_ {
            sha256: sha256_hex(text.as_bytes()),
            labels: verdicts.labels,
            judge: Some(verdicts.judge),
        });
    }
    let bytes = std::fs::read(path)
        .map_err(|e| ExpectedError::input(format!("{}: {e}", path.display())))?;
    let labels = if is_results_json(path) {
        let (Some(judge), Some(category)) = (&args.judge, &args.category) else {
            return Err(ExpectedError::input(format!(
                "{}: a results.json holds several judges and categories: name them with --judge NAME --category NAME (e.g. --judge webjudge --category trajectory_success)",
                path.display()
            )));
        };
        read_results_json(path, judge, category, side).map_err(input)?
    } else {
        read_label_file(path).map_err(input)?
    };
    Ok(Side_ {
        labels,
        sha256: sha256_hex(&bytes),
        judge: None,
    })
}

pub fn calibrate(args: &Args) -> Result<i32, ExpectedError> {
    let humans = read(&args.labels, Side::Human, args)?;
    let judge = read(&args.verdicts, Side::Judge, args)?;
    let options = CalibrationOptions {
        weights: args.weights.map(|w| match w {
            WeightsArg::Linear => KappaWeights::Linear,
            WeightsArg::Quadratic => KappaWeights::Quadratic,
        }),
        level: match args.level {
            LevelArg::Nominal => Level::Nominal,
            LevelArg::Ordinal => Level::Ordinal,
            LevelArg::Interval => Level::Interval,
            LevelArg::Ratio => Level::Ratio,
        },
        confidence: 0.95,
    };
    let report = compute(humans.labels, judge.labels, &options)
        .map_err(|e| ExpectedError::input(e.to_string()))?;
    let figures = serde_json::to_value(&report)
        .map_err(|e| ExpectedError::harness(format!("failed to serialize the figures: {e}")))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&figures).unwrap_or_default()
        );
    } else {
        if !crate::say::quiet() {
            print!("{}", gauntlet_report::render_calibration(&report));
        }
    }
    if let Some(out) = &args.out {
        let thresholds = CalibrationThresholds {
            min_kappa: args.min_kappa,
            min_items: args.min_items,
        };
        let trusted = report.figures.cohen_kappa >= thresholds.min_kappa
            && report.figures.n >= thresholds.min_items;
        let file = CalibrationFile {
            format_version: 1,
            judge: judge.judge.clone(),
            labels_sha256: humans.sha256,
            verdicts_sha256: judge.sha256,
            n: report.figures.n,
            cohen_kappa: report.figures.cohen_kappa,
            thresholds,
            trusted,
            created_at: gauntlet_runner::stamp(),
            figures,
        };
        let text = serde_json::to_string_pretty(&file).unwrap_or_default();
        std::fs::write(out, text + "\n")
            .map_err(|e| ExpectedError::harness(format!("{}: {e}", out.display())))?;
        if !args.json {
            let who = judge.judge.as_ref().map_or_else(
                || {
                    "no judge named (verdicts from a file, not a run), so no judge may gate by it"
                        .to_owned()
                },
                |j| {
                    format!(
                        "judge `{}` ({}, rubric {})",
                        j.name,
                        j.model,
                        &j.rubric_hash[..12.min(j.rubric_hash.len())]
                    )
                },
            );
            crate::note!(
                "wrote {}: {}; {} (kappa {:.3} against at least {}, {} items against at least {})",
                out.display(),
                who,
                if trusted { "trusted" } else { "NOT trusted" },
                file.cohen_kappa,
                file.thresholds.min_kappa,
                file.n,
                file.thresholds.min_items
            );
        }
    }
    Ok(0)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        calibrate(&self)
    }
}
