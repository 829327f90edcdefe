//! `gauntlet export RUN --out FILE`: a stored run's trials as OpenTelemetry traces (OTLP/JSON
//! Lines), streamed.

use std::io::Write;
use std::path::{Path, PathBuf};

use gauntlet_otel::{ExportRequest, TraceBatches};
use gauntlet_store::{read_header, read_trials_lean};

use crate::exit::{ExpectedError, GATES_PASSED};

/// Export a stored run's trials as OpenTelemetry traces (OTLP/JSON Lines).
///
/// Example:
///   gauntlet export RUN_DIR --out traces.jsonl
///   gauntlet export RUN_DIR --out traces.jsonl --split 100000
///
/// One trace per trial (its trace id): an `invoke_agent` span, a `chat` span per model call
/// and an `execute_tool` span per tool call under it, every verdict a
/// `gen_ai.evaluation.result` event. The file is OTLP/JSON Lines: one ExportTraceServiceRequest
/// per line, each of --batch traces (the format of the OpenTelemetry Collector's file exporter,
/// read by its `otlpjsonfile` receiver and by `gauntlet import otlp`). Trials are read and
/// written one at a time, so a run of any size exports in the memory of one batch. Each line
/// is a body OTLP/HTTP takes (`head -1 traces.jsonl | curl -H 'content-type: application/json'
/// --data @- COLLECTOR/v1/traces`). `--format json` writes the whole run as one request, as
/// before: for small runs only (`import otlp` reads at most 64 MiB per request).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The run folder (or its results.json).
    pub run: PathBuf,
    /// The file to write (`-` for standard output).
    #[arg(long)]
    pub out: PathBuf,
    /// Traces (trials) per request, one request per line.
    #[arg(long, default_value_t = gauntlet_otel::TRACES_PER_REQUEST, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub batch: usize,
    /// Write files of at most N traces each: FILE's name with -00001, -00002, ... before its
    /// extension.
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub split: Option<usize>,
    /// `jsonl` (one request per line), or `json`: the whole run as one request (small runs).
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: ExportFormat,
}

/// How an export is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// OTLP/JSON Lines: one ExportTraceServiceRequest per line.
    Jsonl,
    /// One ExportTraceServiceRequest for the whole run.
    Json,
}

/// The file the `index`th part (from 1) of a split export goes to.
fn part_path(out: &Path, index: usize) -> PathBuf {
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match out.extension() {
        Some(ext) => format!("{stem}-{index:05}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{index:05}"),
    };
    out.with_file_name(name)
}

/// Where the lines go: standard output, one file, or files of `split` traces each.
struct Sink<'a> {
    out: &'a Path,
    split: Option<usize>,
    writer: Option<Box<dyn Write>>,
    /// Traces in the current file, files opened.
    in_file: usize,
    files: usize,
}

impl Sink<'_> {
    fn open(&mut self) -> Result<(), ExpectedError> {
        if let Some(mut w) = self.writer.take() {
            w.flush().map_err(|e| self.failed(e))?;
        }
        self.files += 1;
        self.in_file = 0;
        self.writer = Some(if self.out == Path::new("-") {
            Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
        } else {
            let path = match self.split {
                Some(_) => part_path(self.out, self.files),
                None => self.out.to_owned(),
            };
            let file = std::fs::File::create(&path)
                .map_err(|e| ExpectedError::harness(format!("{}: {e}", path.display())))?;
            Box::new(std::io::BufWriter::with_capacity(1 << 16, file))
        });
        Ok(())
    }

    fn failed(&self, e: std::io::Error) -> ExpectedError {
        crate::exit::exit_if_closed_pipe(&e);
        ExpectedError::harness(format!("{}: {e}", self.out.display()))
    }

    /// Writes a request of `traces` traces as one line.
    fn line(&mut self, request: &ExportRequest, traces: usize) -> Result<(), ExpectedError> {
        let full = self.split.is_some_and(|n| self.in_file >= n);
        if self.writer.is_none() || full {
            self.open()?;
        }
        let w = self.writer.as_mut().expect("opened above");
        let written = serde_json::to_writer(&mut *w, request)
            .map_err(std::io::Error::from)
            .and_then(|()| w.write_all(b"\n"));
        written.map_err(|e| self.failed(e))?;
        self.in_file += traces;
        Ok(())
    }

    fn finish(mut self) -> Result<usize, ExpectedError> {
        if self.writer.is_none() {
            // No trial: an empty file says so.
            self.open()?;
        }
        if let Some(mut w) = self.writer.take() {
            w.flush().map_err(|e| self.failed(e))?;
        }
        Ok(self.files)
    }
}

pub fn export(
    run: &Path,
    out: &Path,
    batch: usize,
    split: Option<usize>,
    format: ExportFormat,
) -> Result<i32, ExpectedError> {
    let dir = if run.is_dir() {
        run.to_owned()
    } else {
        run.parent().unwrap_or(Path::new(".")).to_owned()
    };
    // The header is all the trials need (results.json, with every summary, is not read).
    let header = read_header(&dir)
        .map_err(|e| ExpectedError::input(format!("failed to read the run: {e}")))?;
    if format == ExportFormat::Json && split.is_some() {
        return Err(ExpectedError::input(
            "--split writes OTLP/JSON Lines: leave out --format json",
        ));
    }
    // Requests of `batch` traces (the whole run as one for --format json), never more than a
    // split file's traces.
    let per_request = match (format, split) {
        (ExportFormat::Json, _) => usize::MAX,
        (ExportFormat::Jsonl, Some(n)) => batch.min(n),
        (ExportFormat::Jsonl, None) => batch,
    };
    let mut batches = TraceBatches::new(header.clone(), per_request);
    let mut sink = Sink {
        out,
        split,
        writer: None,
        in_file: 0,
        files: 0,
    };
    let (mut trials, mut spans, mut pending) = (0usize, 0usize, 0usize);
    let count = |r: &ExportRequest| -> usize {
        r.resource_spans
            .iter()
            .flat_map(|rs| &rs.scope_spans)
            .map(|ss| ss.spans.len())
            .sum()
    };
    // Trials stream in; only one request's spans are held (states are not needed).
    for t in read_trials_lean(&dir)
        .map_err(|e| ExpectedError::input(format!("failed to read the trials: {e}")))?
    {
        let t = t.map_err(|e| ExpectedError::input(format!("failed to read a trial: {e}")))?;
        trials += 1;
        pending += 1;
        if let Some(request) = batches.push(&t) {
            spans += count(&request);
            sink.line(&request, std::mem::take(&mut pending))?;
        }
    }
    match batches.finish() {
        Some(request) => {
            spans += count(&request);
            sink.line(&request, pending)?;
        }
        // One request, even of no trace, as before.
        None if format == ExportFormat::Json => {
            sink.line(&gauntlet_otel::export_request(&header, Vec::new()), 0)?;
        }
        None => {}
    }
    let files = sink.finish()?;
    if out != Path::new("-") {
        let what = match format {
            ExportFormat::Jsonl => "OTLP/JSON Lines",
            ExportFormat::Json => "OTLP/JSON",
        };
        if split.is_some() {
            crate::note!(
                "wrote {spans} spans of {trials} trials to {files} files {} ... ({what})",
                part_path(out, 1).display()
            );
        } else {
            crate::note!(
                "wrote {spans} spans of {trials} trials to {} ({what})",
                out.display()
            );
        }
    }
    Ok(GATES_PASSED)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        export(&self.run, &self.out, self.batch, self.split, self.format)
    }
}
