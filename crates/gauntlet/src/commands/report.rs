//! `gauntlet report RUN --format F`, and the `--report` files a live run writes: every format is
//! a projection of the canonical results.json (and, for HTML, the trial records).

use std::path::{Path, PathBuf};

use gauntlet_store::{read_results, read_results_head, read_summaries};

use crate::reports::{Format, render};

use crate::exit::{ExpectedError, GATES_PASSED};

/// Render a stored run as HTML, JUnit XML, Markdown, JSON, its summary or its event stream.
///
/// Example:
///   gauntlet report RUN_DIR --format html --out report.html
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The run folder, or a run id or name in the index of the suite in the current folder.
    pub run: PathBuf,
    /// The format.
    #[arg(long, value_enum, default_value = "html")]
    pub format: Format,
    /// Write to this file instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A baseline run (a folder, or a run id or name as RUN): the HTML report opens with the
    /// paired comparison against it.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// With `--format terminal`: say why every failed trial failed (by default the first
    /// 20).
    #[arg(long)]
    pub explain: bool,
}

/// Writes the full results of a run folder (format 2 on: `results.json` and `summaries.jsonl`)
/// to `out` or stdout, the summaries streamed; false for a run of format 1, read whole instead.
fn json_streamed(dir: &Path, out: Option<&Path>) -> Result<bool, ExpectedError> {
    let head = read_results_head(dir)
        .map_err(|e| ExpectedError::input(format!("failed to read the run: {e}")))?;
    if head.format_version < 2 {
        return Ok(false);
    }
    let summaries = dir.join(gauntlet_model::SUMMARIES_FILE);
    let mut w: Box<dyn std::io::Write> = match out {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).map_err(|e| {
                ExpectedError::harness(format!("failed to write {}: {e}", path.display()))
            })?,
        )),
        None => Box::new(std::io::stdout().lock()),
    };
    let failed = |e: &(dyn std::error::Error + 'static)| {
        crate::exit::exit_if_closed_pipe(e);
        ExpectedError::harness(format!("failed to write the results: {e}"))
    };
    gauntlet_store::write_full_results(&head, &summaries, &mut w).map_err(|e| failed(&e))?;
    w.flush().map_err(|e| failed(&e))?;
    if let Some(path) = out {
        crate::note!("wrote {}", path.display());
    }
    Ok(true)
}

pub fn report(
    run: &Path,
    format: Format,
    out: Option<&Path>,
    baseline: Option<&Path>,
) -> Result<i32, ExpectedError> {
    let run = &crate::shared::run_folder(run)?;
    let baseline = baseline.map(crate::shared::run_folder).transpose()?;
    let baseline = baseline.as_deref();
    let dir = if run.is_dir() {
        run.to_owned()
    } else {
        run.parent().unwrap_or(Path::new(".")).to_owned()
    };
    // The full results are streamed from the run folder: a run of any size in constant memory.
    if format == Format::Json && baseline.is_none() && json_streamed(&dir, out)? {
        return Ok(GATES_PASSED);
    }
    // The event stream is written as it is read: a run of any size in constant memory.
    if format == Format::Events {
        crate::events::replay_to(&dir, out.unwrap_or(Path::new("-")))?;
        if let Some(path) = out {
            crate::note!("wrote {}", path.display());
        }
        return Ok(GATES_PASSED);
    }
    // The terminal summary is the run replayed (its summaries listed up to a thousand, as the
    // live run printed them), and Markdown tallies the trials as they are read.
    let streamed = match format {
        Format::Terminal => Some(crate::reports::render(
            &dir,
            &read_results_head(&dir)
                .map_err(|e| ExpectedError::input(format!("failed to read the run: {e}")))?,
            format,
            None,
        )?),
        Format::Md => Some(markdown_streamed(&dir, baseline)?),
        _ => None,
    };
    if let Some(text) = streamed {
        return written(text, out);
    }
    let results = read_results(&dir)
        .map_err(|e| ExpectedError::input(format!("failed to read the run: {e}")))?;
    let baseline = baseline
        .map(|b| {
            read_results(b)
                .map_err(|e| ExpectedError::input(format!("failed to read the baseline run: {e}")))
        })
        .transpose()?;
    let text = render(&dir, &results, format, baseline.as_ref())?;
    written(text, out)
}

/// The Markdown summary of a run folder (and its comparison with `baseline`), its trials and
/// the baseline's read one at a time.
fn markdown_streamed(dir: &Path, baseline: Option<&Path>) -> Result<String, ExpectedError> {
    let failed = |e: gauntlet_store::StoreError| {
        ExpectedError::input(format!("failed to read the run: {e}"))
    };
    let results = read_results_head(dir).map_err(failed)?;
    let mut trials = gauntlet_report::MarkdownTrials::default();
    for t in read_summaries(dir).map_err(failed)? {
        trials.push(&t.map_err(failed)?);
    }
    let mut text = gauntlet_report::render_markdown_with(&results, &trials);
    if let Some(b) = baseline {
        let failed = |e: gauntlet_store::StoreError| {
            ExpectedError::input(format!("failed to read the baseline run: {e}"))
        };
        let a = read_results_head(b).map_err(failed)?;
        let c = gauntlet_verdict::compare_streams(
            &a,
            &results,
            read_summaries(b).map_err(failed)?,
            read_summaries(dir).map_err(failed)?,
            a.header.seed ^ results.header.seed.rotate_left(32),
        )
        .map_err(failed)?;
        text.push_str(&gauntlet_report::render_markdown_comparison(&c));
    }
    Ok(text)
}

/// Writes a report to `out`, or standard output.
fn written(text: String, out: Option<&Path>) -> Result<i32, ExpectedError> {
    match out {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| {
                ExpectedError::harness(format!("failed to write {}: {e}", path.display()))
            })?;
            crate::note!("wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(GATES_PASSED)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        crate::reports::set_explain(self.explain);
        report(
            &self.run,
            self.format,
            self.out.as_deref(),
            self.baseline.as_deref(),
        )
    }
}
