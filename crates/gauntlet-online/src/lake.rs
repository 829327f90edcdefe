//! The trace lake: judged, anonymised trajectories as Parquet, partitioned by day.
//!
//! ```text
//! LAKE/traces/day=YYYY-MM-DD/part-<ms>-<writer>-<n>.parquet     one row per trace
//! LAKE/feedback/day=YYYY-MM-DD/part-<ms>-<writer>-<n>.parquet   one row per feedback, by trace_id
//! ```
//! Files are written whole under a hidden name and renamed into place, so a reader (DuckDB,
//! Spark, Trino: `read_parquet('LAKE/traces/**/*.parquet', hive_partitioning = true)`) never
//! sees half a file. `<writer>` is drawn at random once per process, so several receivers
//! (on other machines, or each the pid 1 of its container) write into one lake without ever
//! choosing the same name. The columns are documented in docs/reference.md ("The trace lake"); the
//! schema is [`trace_schema`] and [`feedback_schema`].
//!
//! The readers also take files that DuckDB, Spark or pandas wrote back: a column of another
//! type than ours is converted by Arrow's cast kernel when it can be (timestamps in seconds,
//! micro- or nanoseconds, with or without a time zone, or as text; large or view strings;
//! large lists; narrower numbers), and refused, naming the file and the column, when it cannot.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, TimestampMillisecondType};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use gauntlet_model::{Event, Trajectory};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::policy::Checked;

/// What went wrong with the lake.
#[derive(Debug, thiserror::Error)]
pub enum LakeError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parquet { path: PathBuf, message: String },
}

impl gauntlet_model::Classified for LakeError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        match self {
            LakeError::Io { .. } => gauntlet_model::ErrorKind::Harness,
            LakeError::Parquet { .. } => gauntlet_model::ErrorKind::InvalidInput,
        }
    }
}

/// One trace as the lake keeps it (every text already anonymised).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRow {
    pub trace_id: String,
    /// When the receiver got it (ms since the epoch, UTC); its day is the partition.
    pub received_at_ms: i64,
    pub started_at: Option<String>,
    pub service: Option<String>,
    pub agent: String,
    /// passed, failed or error.
    pub status: String,
    /// Whether the root span arrived (else judged after going idle).
    pub complete: bool,
    pub duration_ms: f64,
    pub tool_calls: i64,
    pub tool_errors: i64,
    pub model_calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cost_eur: f64,
    /// The tools called, in order.
    pub tools: Vec<String>,
    /// Evaluators that failed.
    pub failed_evaluators: Vec<String>,
    /// The first user message.
    pub user_input: Option<String>,
    pub final_answer: Option<String>,
    /// Every score: `[{name, value, passed, severity, dimension}]` as JSON.
    pub scores: String,
    /// The whole trajectory as JSON (gauntlet's trajectory format).
    pub trajectory: String,
    /// Feedback carried on the trace's spans, as JSON (`[]` when none).
    pub feedback: String,
    /// The last rating among that feedback.
    pub rating: Option<f64>,
}

/// Feedback posted for a trace (`POST /v1/feedback`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeedbackRow {
    pub trace_id: String,
    pub received_at_ms: i64,
    pub rating: Option<f64>,
    pub comment: Option<String>,
    pub edited_output: Option<String>,
    pub abandoned: Option<bool>,
}

/// The agent's model calls, tokens and cost (the simulated user's left out).
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub model_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_eur: f64,
}

/// What the agent's model calls in a trajectory used.
pub fn agent_usage(t: &Trajectory) -> Usage {
    let mut u = Usage::default();
    for e in &t.events {
        if let Event::ModelCall {
            prompt_tokens,
            completion_tokens,
            cost_eur,
            simulated_user: false,
            ..
        } = e
        {
            u.model_calls += 1;
            u.input_tokens += prompt_tokens;
            u.output_tokens += completion_tokens;
            u.cost_eur += cost_eur;
        }
    }
    u
}

/// The row of a judged (and anonymised) trace.
pub fn row_of(j: &Checked, received_at_ms: i64) -> TraceRow {
    let r = &j.record;
    let events = &r.trajectory.events;
    let calls: Vec<_> = r.trajectory.tool_calls().collect();
    let usage = agent_usage(&r.trajectory);
    let rating = j
        .feedback
        .iter()
        .rev()
        .find_map(|f| f.get("rating").and_then(Value::as_f64));
    TraceRow {
        trace_id: r.trace_id.clone(),
        received_at_ms,
        started_at: r.started_at.clone(),
        service: j.service.clone(),
        agent: j.agent.clone(),
        status: r.status.as_str().to_owned(),
        complete: j.complete,
        duration_ms: r.duration_ms,
        tool_calls: calls.len() as i64,
        tool_errors: calls.iter().filter(|c| c.error.is_some()).count() as i64,
        model_calls: usage.model_calls as i64,
        input_tokens: usage.input_tokens as i64,
        output_tokens: usage.output_tokens as i64,
        cost_eur: usage.cost_eur,
        tools: calls.iter().map(|c| c.tool.clone()).collect(),
        failed_evaluators: r
            .scores
            .iter()
            .filter(|s| !s.passed)
            .map(|s| s.name.clone())
            .collect(),
        user_input: events.iter().find_map(|e| match e {
            Event::UserMessage { text } => Some(text.clone()),
            _ => None,
        }),
        final_answer: r.trajectory.final_answer.clone(),
        scores: serde_json::to_string(&r.scores.iter().map(ScoreBrief::of).collect::<Vec<_>>())
            .expect("scores serialise"),
        trajectory: serde_json::to_string(&r.trajectory).expect("trajectories serialise"),
        feedback: Value::Array(j.feedback.clone()).to_string(),
        rating,
    }
}

/// A score as the lake's `scores` column holds it, written straight from the score.
#[derive(Serialize)]
struct ScoreBrief<'a> {
    name: &'a str,
    value: f64,
    passed: bool,
    severity: gauntlet_model::Severity,
    dimension: gauntlet_model::Dimension,
}

impl<'a> ScoreBrief<'a> {
    fn of(s: &'a gauntlet_model::Score) -> Self {
        ScoreBrief {
            name: &s.name,
            value: s.value,
            passed: s.passed,
            severity: s.severity,
            dimension: s.dimension,
        }
    }
}

fn list_of_text() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
}

fn timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// The columns of `traces/`.
pub fn trace_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("trace_id", DataType::Utf8, false),
        Field::new("received_at", timestamp(), false),
        Field::new("started_at", DataType::Utf8, true),
        Field::new("service", DataType::Utf8, true),
        Field::new("agent", DataType::Utf8, false),
        Field::new("status", DataType::Utf8, false),
        Field::new("complete", DataType::Boolean, false),
        Field::new("duration_ms", DataType::Float64, false),
        Field::new("tool_calls", DataType::Int64, false),
        Field::new("tool_errors", DataType::Int64, false),
        Field::new("model_calls", DataType::Int64, false),
        Field::new("input_tokens", DataType::Int64, false),
        Field::new("output_tokens", DataType::Int64, false),
        Field::new("cost_eur", DataType::Float64, false),
        Field::new("tools", list_of_text(), false),
        Field::new("failed_evaluators", list_of_text(), false),
        Field::new("user_input", DataType::Utf8, true),
        Field::new("final_answer", DataType::Utf8, true),
        Field::new("scores", DataType::Utf8, false),
        Field::new("trajectory", DataType::Utf8, false),
        Field::new("feedback", DataType::Utf8, false),
        Field::new("rating", DataType::Float64, true),
    ]))
}

/// The columns of `feedback/`.
pub fn feedback_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("trace_id", DataType::Utf8, false),
        Field::new("received_at", timestamp(), false),
        Field::new("rating", DataType::Float64, true),
        Field::new("comment", DataType::Utf8, true),
        Field::new("edited_output", DataType::Utf8, true),
        Field::new("abandoned", DataType::Boolean, true),
    ]))
}

fn text<'a>(values: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(values.collect::<StringArray>())
}

fn lists<'a>(values: impl Iterator<Item = &'a Vec<String>>) -> ArrayRef {
    let mut b = ListBuilder::new(StringBuilder::new());
    for v in values {
        for s in v {
            b.values().append_value(s);
        }
        b.append(true);
    }
    Arc::new(b.finish())
}

fn times(values: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(TimestampMillisecondArray::from_iter_values(values).with_timezone("UTC"))
}

fn trace_batch(rows: &[&TraceRow]) -> RecordBatch {
    let columns: Vec<ArrayRef> = vec![
        text(rows.iter().map(|r| Some(r.trace_id.as_str()))),
        times(rows.iter().map(|r| r.received_at_ms)),
        text(rows.iter().map(|r| r.started_at.as_deref())),
        text(rows.iter().map(|r| r.service.as_deref())),
        text(rows.iter().map(|r| Some(r.agent.as_str()))),
        text(rows.iter().map(|r| Some(r.status.as_str()))),
        Arc::new(BooleanArray::from_iter(
            rows.iter().map(|r| Some(r.complete)),
        )),
        Arc::new(Float64Array::from_iter_values(
            rows.iter().map(|r| r.duration_ms),
        )),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| r.tool_calls),
        )),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| r.tool_errors),
        )),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| r.model_calls),
        )),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| r.input_tokens),
        )),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| r.output_tokens),
        )),
        Arc::new(Float64Array::from_iter_values(
            rows.iter().map(|r| r.cost_eur),
        )),
        lists(rows.iter().map(|r| &r.tools)),
        lists(rows.iter().map(|r| &r.failed_evaluators)),
        text(rows.iter().map(|r| r.user_input.as_deref())),
        text(rows.iter().map(|r| r.final_answer.as_deref())),
        text(rows.iter().map(|r| Some(r.scores.as_str()))),
        text(rows.iter().map(|r| Some(r.trajectory.as_str()))),
        text(rows.iter().map(|r| Some(r.feedback.as_str()))),
        Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.rating))),
    ];
    RecordBatch::try_new(trace_schema(), columns).expect("columns match the schema")
}

fn feedback_batch(rows: &[&FeedbackRow]) -> RecordBatch {
    let columns: Vec<ArrayRef> = vec![
        text(rows.iter().map(|r| Some(r.trace_id.as_str()))),
        times(rows.iter().map(|r| r.received_at_ms)),
        Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.rating))),
        text(rows.iter().map(|r| r.comment.as_deref())),
        text(rows.iter().map(|r| r.edited_output.as_deref())),
        Arc::new(BooleanArray::from_iter(rows.iter().map(|r| r.abandoned))),
    ];
    RecordBatch::try_new(feedback_schema(), columns).expect("columns match the schema")
}

/// The day (UTC, `YYYY-MM-DD`) of a time in ms since the epoch.
pub fn day_of(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_zoned(jiff::tz::TimeZone::UTC).date().to_string())
        .unwrap_or_else(|_| "1970-01-01".to_owned())
}

static FILE_SEQ: AtomicU64 = AtomicU64::new(0);

/// This process's writer id in file names: 12 hex digits drawn from the OS's randomness (the
/// seed of std's `RandomState`) once per process.
fn writer_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("{:012x}", h.finish() & 0xffff_ffff_ffff)
    })
}

/// Writes one Parquet file of `batch` into `dir` (created), whole or not at all.
fn write_file(dir: &Path, batch: &RecordBatch, now_ms: i64) -> Result<PathBuf, LakeError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| LakeError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let name = format!(
        "part-{now_ms}-{}-{}.parquet",
        writer_id(),
        FILE_SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    let file = File::create(&tmp).map_err(io(&tmp))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let parquet = |e: parquet::errors::ParquetError| LakeError::Parquet {
        path: tmp.clone(),
        message: e.to_string(),
    };
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(parquet)?;
    w.write(batch).map_err(parquet)?;
    let file = w.into_inner().map_err(parquet)?;
    file.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    Ok(path)
}

/// Rows waiting to be written, by day.
fn by_day<T>(rows: &[T], ms: impl Fn(&T) -> i64) -> std::collections::BTreeMap<String, Vec<&T>> {
    let mut days: std::collections::BTreeMap<String, Vec<&T>> = Default::default();
    for r in rows {
        days.entry(day_of(ms(r))).or_default().push(r);
    }
    days
}

/// Appends rows to the lake: one file per table and day per flush.
pub struct LakeWriter {
    root: PathBuf,
    traces: Vec<TraceRow>,
    feedback: Vec<FeedbackRow>,
    /// Rows written so far.
    pub written_traces: u64,
    pub written_feedback: u64,
}

impl LakeWriter {
    pub fn new(root: &Path) -> LakeWriter {
        LakeWriter {
            root: root.to_owned(),
            traces: Vec::new(),
            feedback: Vec::new(),
            written_traces: 0,
            written_feedback: 0,
        }
    }

    pub fn push_trace(&mut self, row: TraceRow) {
        self.traces.push(row);
    }

    pub fn push_feedback(&mut self, row: FeedbackRow) {
        self.feedback.push(row);
    }

    /// Rows held, not yet written.
    pub fn pending(&self) -> usize {
        self.traces.len() + self.feedback.len()
    }

    /// Writes every held row; the files written.
    pub fn flush(&mut self, now_ms: i64) -> Result<Vec<PathBuf>, LakeError> {
        let mut files = Vec::new();
        for (day, rows) in by_day(&self.traces, |r| r.received_at_ms) {
            let dir = self.root.join("traces").join(format!("day={day}"));
            files.push(write_file(&dir, &trace_batch(&rows), now_ms)?);
        }
        for (day, rows) in by_day(&self.feedback, |r| r.received_at_ms) {
            let dir = self.root.join("feedback").join(format!("day={day}"));
            files.push(write_file(&dir, &feedback_batch(&rows), now_ms)?);
        }
        self.written_traces += self.traces.len() as u64;
        self.written_feedback += self.feedback.len() as u64;
        self.traces.clear();
        self.feedback.clear();
        Ok(files)
    }
}

/// Deletes the partitions of days before `today - retention_days`; the folders deleted.
pub fn prune(root: &Path, retention_days: u32, now_ms: i64) -> Result<Vec<PathBuf>, LakeError> {
    let oldest_kept = day_of(now_ms - i64::from(retention_days) * 86_400_000);
    let mut deleted = Vec::new();
    for table in ["traces", "feedback"] {
        let dir = root.join(table);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(day) = name.strip_prefix("day=")
                && day < oldest_kept.as_str()
            {
                // Another receiver on the same lake may have pruned it first.
                match std::fs::remove_dir_all(e.path()) {
                    Ok(()) => deleted.push(e.path()),
                    Err(gone) if gone.kind() == std::io::ErrorKind::NotFound => {}
                    Err(source) => {
                        return Err(LakeError::Io {
                            path: e.path(),
                            source,
                        });
                    }
                }
            }
        }
    }
    Ok(deleted)
}

/// The Parquet files of a table for days in `from..=to` (either open), in day order.
pub fn files(
    root: &Path,
    table: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Vec<PathBuf>, LakeError> {
    let dir = root.join(table);
    let entries = std::fs::read_dir(&dir).map_err(|source| LakeError::Io {
        path: dir.clone(),
        source,
    })?;
    let mut days: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let day = name.strip_prefix("day=")?.to_owned();
            (from.is_none_or(|f| day.as_str() >= f) && to.is_none_or(|t| day.as_str() <= t))
                .then(|| (day, e.path()))
        })
        .collect();
    days.sort();
    let mut out = Vec::new();
    for (_, dir) in days {
        let mut parts: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|source| LakeError::Io {
                path: dir.clone(),
                source,
            })?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "parquet")
                    && !p
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        parts.sort();
        out.extend(parts);
    }
    Ok(out)
}

fn batches(path: &Path) -> Result<impl Iterator<Item = Result<RecordBatch, LakeError>>, LakeError> {
    let err = |message: String| LakeError::Parquet {
        path: path.to_owned(),
        message,
    };
    // Regular files only: a FIFO planted as a day's Parquet file would block the reader.
    let file = gauntlet_store::open::open_regular(path).map_err(|source| LakeError::Io {
        path: path.to_owned(),
        source,
    })?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| err(e.to_string()))?;
    let path = path.to_owned();
    Ok(reader.map(move |b| {
        b.map_err(|e| LakeError::Parquet {
            path: path.clone(),
            message: e.to_string(),
        })
    }))
}

/// The column `name` of a batch as `schema` says it is (a timestamp in milliseconds, with any
/// time zone): converted when it was written back as another type that converts, else refused.
fn column(
    b: &RecordBatch,
    schema: &Schema,
    name: &str,
    path: &Path,
) -> Result<ArrayRef, LakeError> {
    let refuse = |message: String| LakeError::Parquet {
        path: path.to_owned(),
        message,
    };
    let a = b
        .column_by_name(name)
        .ok_or_else(|| refuse(format!("no column `{name}`: not a gauntlet lake file")))?;
    let want = match schema.field_with_name(name).map(Field::data_type) {
        Ok(DataType::Timestamp(unit, _)) => DataType::Timestamp(*unit, None),
        Ok(t) => t.clone(),
        Err(e) => return Err(refuse(e.to_string())),
    };
    let have = a.data_type();
    let same = match (have, &want) {
        (DataType::Timestamp(from, _), DataType::Timestamp(to, _)) => from == to,
        _ => have == &want,
    };
    if same {
        return Ok(a.clone());
    }
    if !arrow_cast::can_cast_types(have, &want) {
        return Err(refuse(format!(
            "column `{name}` is {have}, which does not read as {want}"
        )));
    }
    let options = arrow_cast::CastOptions {
        safe: false,
        ..Default::default()
    };
    arrow_cast::cast_with_options(a, &want, &options).map_err(|e| {
        refuse(format!(
            "column `{name}` ({have}) does not read as {want}: {e}"
        ))
    })
}

fn opt_text(a: &ArrayRef, i: usize) -> Option<String> {
    let a = a.as_string::<i32>();
    (!a.is_null(i)).then(|| a.value(i).to_owned())
}

fn list(a: &ArrayRef, i: usize) -> Vec<String> {
    let l = a.as_list::<i32>().value(i);
    let s = l.as_string::<i32>();
    (0..s.len()).map(|k| s.value(k).to_owned()).collect()
}

fn opt_f64(a: &ArrayRef, i: usize) -> Option<f64> {
    let a = a.as_primitive::<Float64Type>();
    (!a.is_null(i)).then(|| a.value(i))
}

/// Reads the trace rows of one file.
pub fn read_trace_file(path: &Path) -> Result<Vec<TraceRow>, LakeError> {
    let mut out = Vec::new();
    for b in batches(path)? {
        let b = b?;
        let schema = trace_schema();
        let c = |name: &str| column(&b, &schema, name, path);
        let (id, at, started, service, agent, status, complete) = (
            c("trace_id")?,
            c("received_at")?,
            c("started_at")?,
            c("service")?,
            c("agent")?,
            c("status")?,
            c("complete")?,
        );
        let (duration, calls, errors, models, input, output, cost) = (
            c("duration_ms")?,
            c("tool_calls")?,
            c("tool_errors")?,
            c("model_calls")?,
            c("input_tokens")?,
            c("output_tokens")?,
            c("cost_eur")?,
        );
        let (tools, failed, user, answer, scores, trajectory, feedback, rating) = (
            c("tools")?,
            c("failed_evaluators")?,
            c("user_input")?,
            c("final_answer")?,
            c("scores")?,
            c("trajectory")?,
            c("feedback")?,
            c("rating")?,
        );
        let int = |a: &ArrayRef, i: usize| a.as_primitive::<Int64Type>().value(i);
        let f64v = |a: &ArrayRef, i: usize| a.as_primitive::<Float64Type>().value(i);
        for i in 0..b.num_rows() {
            out.push(TraceRow {
                trace_id: opt_text(&id, i).unwrap_or_default(),
                received_at_ms: at.as_primitive::<TimestampMillisecondType>().value(i),
                started_at: opt_text(&started, i),
                service: opt_text(&service, i),
                agent: opt_text(&agent, i).unwrap_or_default(),
                status: opt_text(&status, i).unwrap_or_default(),
                complete: complete.as_boolean().value(i),
                duration_ms: f64v(&duration, i),
                tool_calls: int(&calls, i),
                tool_errors: int(&errors, i),
                model_calls: int(&models, i),
                input_tokens: int(&input, i),
                output_tokens: int(&output, i),
                cost_eur: f64v(&cost, i),
                tools: list(&tools, i),
                failed_evaluators: list(&failed, i),
                user_input: opt_text(&user, i),
                final_answer: opt_text(&answer, i),
                scores: opt_text(&scores, i).unwrap_or_default(),
                trajectory: opt_text(&trajectory, i).unwrap_or_default(),
                feedback: opt_text(&feedback, i).unwrap_or_default(),
                rating: opt_f64(&rating, i),
            });
        }
    }
    Ok(out)
}

/// Reads the feedback rows of one file.
pub fn read_feedback_file(path: &Path) -> Result<Vec<FeedbackRow>, LakeError> {
    let mut out = Vec::new();
    for b in batches(path)? {
        let b = b?;
        let schema = feedback_schema();
        let c = |name: &str| column(&b, &schema, name, path);
        let (id, at, rating, comment, edited, abandoned) = (
            c("trace_id")?,
            c("received_at")?,
            c("rating")?,
            c("comment")?,
            c("edited_output")?,
            c("abandoned")?,
        );
        for i in 0..b.num_rows() {
            out.push(FeedbackRow {
                trace_id: opt_text(&id, i).unwrap_or_default(),
                received_at_ms: at.as_primitive::<TimestampMillisecondType>().value(i),
                rating: opt_f64(&rating, i),
                comment: opt_text(&comment, i),
                edited_output: opt_text(&edited, i),
                abandoned: {
                    let a = abandoned.as_boolean();
                    (!a.is_null(i)).then(|| a.value(i))
                },
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The `scores` column as it was written through JSON values, written straight from the
    /// scores: byte for byte the same, a score that is not a number included.
    #[test]
    fn scores_are_written_as_before() {
        let scores: Vec<gauntlet_model::Score> = serde_json::from_value(json!([
            {"name": "task_success", "dimension": "outcome", "value": 1.0, "score": 1.0,
             "passed": true, "severity": "critical", "details": {"x": 1}, "events": [2]},
            {"name": "efficiency", "dimension": "efficiency", "value": 0.25, "score": 0.25,
             "passed": false, "severity": "info"}
        ]))
        .unwrap();
        let mut scores = scores;
        scores.push(gauntlet_model::Score {
            value: f64::NAN,
            ..scores[1].clone()
        });
        let before = Value::Array(
            scores
                .iter()
                .map(|s| {
                    json!({"name": s.name, "value": s.value, "passed": s.passed,
                           "severity": s.severity, "dimension": s.dimension})
                })
                .collect(),
        )
        .to_string();
        let now =
            serde_json::to_string(&scores.iter().map(ScoreBrief::of).collect::<Vec<_>>()).unwrap();
        assert_eq!(now, before);
    }

    fn row(id: &str, at: i64, tools: &[&str]) -> TraceRow {
        TraceRow {
            trace_id: id.into(),
            received_at_ms: at,
            started_at: Some("2026-12-01T10:00:00Z".into()),
            service: None,
            agent: "orders".into(),
            status: "failed".into(),
            complete: true,
            duration_ms: 12.5,
            tool_calls: tools.len() as i64,
            tool_errors: 1,
            model_calls: 2,
            input_tokens: 131,
            output_tokens: 16,
            cost_eur: 0.0,
            tools: tools.iter().map(|s| s.to_string()).collect(),
            failed_evaluators: vec!["loop_detection".into()],
            user_input: Some("hi".into()),
            final_answer: None,
            scores: "[]".into(),
            trajectory: "{\"events\":[]}".into(),
            feedback: "[]".into(),
            rating: Some(-1.0),
        }
    }

    const DAY: i64 = 86_400_000;

    #[test]
    fn rows_written_by_day_read_back_equal_and_old_days_are_pruned() {
        let tmp = tempfile::tempdir().unwrap();
        let mut w = LakeWriter::new(tmp.path());
        let today = 20_000 * DAY + 5_000;
        let rows = vec![
            row("a", today, &["get_order", "refund"]),
            row("b", today - 40 * DAY, &[]),
            row("c", today, &["get_order"]),
        ];
        for r in rows.clone() {
            w.push_trace(r);
        }
        w.push_feedback(FeedbackRow {
            trace_id: "a".into(),
            received_at_ms: today,
            rating: Some(1.0),
            comment: Some("thanks".into()),
            edited_output: None,
            abandoned: Some(false),
        });
        let written = w.flush(today).unwrap();
        assert_eq!(written.len(), 3, "two days of traces, one of feedback");
        assert_eq!(w.pending(), 0);
        let mut back = Vec::new();
        for f in files(tmp.path(), "traces", None, None).unwrap() {
            back.extend(read_trace_file(&f).unwrap());
        }
        back.sort_by(|x, y| x.trace_id.cmp(&y.trace_id));
        assert_eq!(back, rows);
        let fb =
            read_feedback_file(&files(tmp.path(), "feedback", None, None).unwrap()[0]).unwrap();
        assert_eq!(fb[0].comment.as_deref(), Some("thanks"));
        // A window of days.
        let day = day_of(today);
        assert_eq!(
            files(tmp.path(), "traces", Some(&day), Some(&day))
                .unwrap()
                .len(),
            1
        );
        // Retention: the 40-day-old partition goes, today's stays.
        let deleted = prune(tmp.path(), 30, today).unwrap();
        assert_eq!(deleted.len(), 1);
        assert_eq!(files(tmp.path(), "traces", None, None).unwrap().len(), 1);
    }

    /// Writes `rows` as one file of `table` whose columns are converted by `retype` (what
    /// another tool would write back), and returns the file.
    fn rewritten(
        root: &Path,
        rows: &[TraceRow],
        retype: impl Fn(&str, &DataType) -> DataType,
    ) -> PathBuf {
        let batch = trace_batch(&rows.iter().collect::<Vec<_>>());
        let mut fields = Vec::new();
        let mut columns = Vec::new();
        for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
            let to = retype(f.name(), f.data_type());
            let c = if f.name() == "received_at" {
                // From our milliseconds: scaled as raw numbers, so that no zone is looked up.
                let ms = arrow_cast::cast(c, &DataType::Int64).unwrap();
                let ms = ms.as_primitive::<Int64Type>();
                let scaled = |k: i64| -> ArrayRef { Arc::new(ms.unary::<_, Int64Type>(|v| v * k)) };
                match &to {
                    DataType::Timestamp(TimeUnit::Microsecond, _) => {
                        arrow_cast::cast(&scaled(1_000), &to).unwrap()
                    }
                    DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                        arrow_cast::cast(&scaled(1_000_000), &to).unwrap()
                    }
                    DataType::Timestamp(TimeUnit::Millisecond, _) => c.clone(),
                    DataType::Utf8 => {
                        let naive = arrow_cast::cast(
                            &scaled(1),
                            &DataType::Timestamp(TimeUnit::Millisecond, None),
                        )
                        .unwrap();
                        arrow_cast::cast(&naive, &to).unwrap()
                    }
                    _ => arrow_cast::cast(&scaled(1), &to).unwrap(),
                }
            } else {
                arrow_cast::cast(c, &to).unwrap()
            };
            columns.push(c);
            fields.push(Field::new(f.name(), to, true));
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        let dir = root.join("traces/day=2026-12-01");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!(
            "part-{}.parquet",
            FILE_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let mut w =
            ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        path
    }

    /// Regression: `drift` and `harvest` panicked on a lake file DuckDB had rewritten
    /// (`received_at` as TIMESTAMP_MICROS), and would on pandas' or Spark's types too.
    #[test]
    fn files_other_tools_wrote_back_read_or_are_refused_by_file_and_column() {
        let tmp = tempfile::tempdir().unwrap();
        let rows = vec![
            row("a", 20_000 * DAY + 1_234, &["get_order", "refund"]),
            row("b", 20_000 * DAY + 5_678, &[]),
        ];
        let list = |item: DataType, large: bool| {
            let f = Arc::new(Field::new("element", item, true));
            if large {
                DataType::LargeList(f)
            } else {
                DataType::List(f)
            }
        };
        type Retype = Box<dyn Fn(&str, &DataType) -> DataType>;
        let variants: Vec<(&str, Retype)> = vec![
            // DuckDB: TIMESTAMP (microseconds, no zone), lists of `element`.
            (
                "duckdb",
                Box::new(move |_, t| match t {
                    DataType::Timestamp(..) => DataType::Timestamp(TimeUnit::Microsecond, None),
                    DataType::List(_) => list(DataType::Utf8, false),
                    t => t.clone(),
                }),
            ),
            // pandas (pyarrow): nanoseconds in UTC, large strings and lists, narrower numbers.
            (
                "pandas",
                Box::new(move |name, t| match t {
                    DataType::Timestamp(..) => {
                        DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
                    }
                    DataType::Utf8 => DataType::LargeUtf8,
                    DataType::List(_) => list(DataType::LargeUtf8, true),
                    DataType::Int64 if name == "tool_calls" => DataType::Int32,
                    DataType::Float64 if name == "rating" => DataType::Float32,
                    t => t.clone(),
                }),
            ),
            // Spark and others: seconds, string views, the time as text.
            (
                "views",
                Box::new(move |_, t| match t {
                    DataType::Timestamp(..) => DataType::Utf8,
                    DataType::Utf8 => DataType::Utf8View,
                    t => t.clone(),
                }),
            ),
        ];
        for (name, retype) in variants {
            let path = rewritten(&tmp.path().join(name), &rows, retype);
            let back = read_trace_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(back, rows, "{name}");
        }
        // The feedback table too.
        let fb = FeedbackRow {
            trace_id: "a".into(),
            received_at_ms: 20_000 * DAY + 9,
            rating: Some(-1.0),
            comment: Some("wrong".into()),
            edited_output: None,
            abandoned: None,
        };
        let batch = feedback_batch(&[&fb]);
        let micros: ArrayRef = Arc::new(arrow_array::TimestampMicrosecondArray::from(vec![
            fb.received_at_ms * 1_000,
        ]));
        let mut columns = batch.columns().to_vec();
        columns[1] = micros.clone();
        let mut fields: Vec<Field> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields[1] = Field::new("received_at", micros.data_type().clone(), true);
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        let path = tmp.path().join("feedback.parquet");
        let mut w =
            ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        assert_eq!(read_feedback_file(&path).unwrap(), vec![fb]);
        // A column that cannot be read as ours is refused, by file and column, not a panic.
        let path = rewritten(&tmp.path().join("bad"), &rows, |name, t| {
            if name == "received_at" {
                DataType::Boolean
            } else {
                t.clone()
            }
        });
        let err = read_trace_file(&path).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("`received_at`"), "{err}");
        let path = rewritten(&tmp.path().join("text"), &rows, |name, t| {
            if name == "tool_calls" {
                DataType::Utf8
            } else {
                t.clone()
            }
        });
        assert_eq!(read_trace_file(&path).unwrap(), rows, "numbers as text");
    }
}
