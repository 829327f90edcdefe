//! OTLP traces into trajectories.
//!
//! Spans are grouped by trace (`traces_of` for files, the `Assembler` for a live stream) and
//! each trace becomes one trajectory (`imported_trace`). Three producers are understood:
//! - gauntlet's own export: every event is carried whole, so the trial reads back exactly;
//! - the OpenTelemetry GenAI conventions: `invoke_agent`, `chat` (messages in
//!   `gen_ai.input.messages` / `gen_ai.output.messages`, tokens in `gen_ai.usage.*`) and
//!   `execute_tool` spans (`gen_ai.tool.*`);
//! - OpenInference: span kinds AGENT, LLM (`llm.input_messages.N.message.*`,
//!   `llm.token_count.*`, `llm.tools.N.tool.json_schema`) and TOOL (`tool.name`, `input.value`,
//!   `output.value`).
//!
//! A tool call the model asked for in a chat's output is a call even without a tool span; its
//! result then comes from the tool message of the next chat's input. A tool span fills in the
//! call it answers (by call id, else the first unanswered call of that tool).

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{BufRead, BufReader, Read};

use gauntlet_model::{ErrorKind, Event, SideEffect, ToolCall, ToolError, Trajectory};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value as Any};
use opentelemetry_proto::tonic::trace::v1::{Span, status::StatusCode};
use prost::Message;
use serde_json::{Map, Value};

use crate::export::{GAUNTLET_EVENT, GAUNTLET_EVENT_INDEX, GAUNTLET_TRIAL};

/// What could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Not OTLP/JSON (an `ExportTraceServiceRequest` per document).
    #[error("line {line}, column {column}: not OTLP/JSON: {message}")]
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    /// Not an OTLP/protobuf `ExportTraceServiceRequest`.
    #[error("not OTLP/protobuf: {0}")]
    Protobuf(String),
    /// A document or message larger than the limit, or one without an end: not read further.
    #[error(
        "more than {} MiB without the end of an OTLP request: not OTLP, or one request too large to read",
        limit >> 20
    )]
    TooLarge { limit: u64 },
    /// Reading failed.
    #[error("{0}")]
    Read(std::io::Error),
}

impl gauntlet_model::Classified for ImportError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::InvalidInput
    }
}

/// How a payload is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Json,
    Protobuf,
}

/// One export request.
pub fn decode(bytes: &[u8], encoding: Encoding) -> Result<ExportTraceServiceRequest, ImportError> {
    match encoding {
        Encoding::Json => serde_json::from_slice(bytes).map_err(|e| json_error(&e)),
        Encoding::Protobuf => ExportTraceServiceRequest::decode(bytes)
            .map_err(|e| ImportError::Protobuf(e.to_string())),
    }
}

fn json_error(e: &serde_json::Error) -> ImportError {
    ImportError::Json {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    }
}

/// The most one OTLP/JSON document or OTLP/protobuf message of a file may take: 64 MiB.
pub const MAX_DOCUMENT_BYTES: u64 = 64 << 20;

/// The requests of a file: OTLP/JSON (one request, or one per line as the Collector's file
/// exporter writes them) when it starts with `{`, else one OTLP/protobuf request.
pub fn decode_file(bytes: &[u8]) -> Result<Vec<ExportTraceServiceRequest>, ImportError> {
    let mut out = Vec::new();
    read_requests(bytes, bytes.len() as u64, |r| out.push(r))?;
    Ok(out)
}

/// Counts what a JSON stream reads since the last document ended, and fails the read past the
/// limit: a document that never ends is refused after `limit` bytes, not read for ever.
struct Bounded<R> {
    inner: R,
    limit: u64,
    used: std::rc::Rc<std::cell::Cell<u64>>,
    over: std::rc::Rc<std::cell::Cell<bool>>,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.used.get() > self.limit {
            self.over.set(true);
            return Err(std::io::Error::other("the document is over the size limit"));
        }
        let n = self.inner.read(buf)?;
        self.used.set(self.used.get() + n as u64);
        Ok(n)
    }
}

/// The requests of a file as [`decode_file`] reads them, streamed: each is handed to `f` once
/// decoded, and no document (OTLP/JSON) or message (OTLP/protobuf) may take more than
/// `max_document_bytes`, so an endless or huge input (`/dev/zero`) is refused after that much
/// is read.
pub fn read_requests(
    reader: impl Read,
    max_document_bytes: u64,
    mut f: impl FnMut(ExportTraceServiceRequest),
) -> Result<(), ImportError> {
    let too_large = || ImportError::TooLarge {
        limit: max_document_bytes,
    };
    let mut reader = BufReader::new(reader);
    // The first byte that is not white space says which encoding; the white space before it
    // counts towards the limit and towards where a JSON error is, and is kept for protobuf
    // (where it is data: 0x0a starts most requests).
    let (mut skipped, mut lines, mut column) = (0u64, 0usize, 0usize);
    let mut lead = Vec::new();
    let first = loop {
        let buf = reader.fill_buf().map_err(ImportError::Read)?;
        if buf.is_empty() {
            return Ok(());
        }
        let at = buf.iter().position(|b| !b.is_ascii_whitespace());
        let blank = &buf[..at.unwrap_or(buf.len())];
        for &b in blank {
            if b == b'\n' {
                lines += 1;
                column = 0;
            } else {
                column += 1;
            }
        }
        let (n, first) = (blank.len(), at.map(|i| buf[i]));
        lead.extend_from_slice(blank);
        reader.consume(n);
        skipped += n as u64;
        if skipped > max_document_bytes {
            return Err(too_large());
        }
        if let Some(b) = first {
            break b;
        }
    };
    if first != b'{' {
        // Room for all of it up front (pages are only taken as they are written): growing by
        // doubling would hold twice the limit.
        let mut bytes = lead;
        let room =
            usize::try_from(max_document_bytes.saturating_add(1).min(1 << 30)).unwrap_or(1 << 30);
        bytes.reserve_exact(room.saturating_sub(bytes.len()));
        reader
            .take(max_document_bytes.saturating_sub(skipped) + 1)
            .read_to_end(&mut bytes)
            .map_err(ImportError::Read)?;
        if bytes.len() as u64 > max_document_bytes {
            return Err(too_large());
        }
        f(decode(&bytes, Encoding::Protobuf)?);
        return Ok(());
    }
    drop(lead);
    let used = std::rc::Rc::new(std::cell::Cell::new(skipped));
    let over = std::rc::Rc::new(std::cell::Cell::new(false));
    let bounded = Bounded {
        inner: reader,
        limit: max_document_bytes,
        used: used.clone(),
        over: over.clone(),
    };
    for r in serde_json::Deserializer::from_reader(bounded).into_iter::<ExportTraceServiceRequest>()
    {
        match r {
            Ok(request) => {
                used.set(0);
                f(request);
            }
            Err(_) if over.get() => return Err(too_large()),
            Err(e) if e.is_io() => {
                return Err(ImportError::Read(e.into()));
            }
            Err(e) => {
                // Where in the file: the white space skipped first is not in the reader.
                let (line, col) = (e.line(), e.column());
                return Err(ImportError::Json {
                    line: line + lines,
                    column: if line == 1 { col + column } else { col },
                    message: e.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Whether a trace id is valid (W3C Trace Context): 16 bytes (32 lowercase hex digits as
/// text), not all zero.
pub fn is_valid_trace_id(id: &[u8]) -> bool {
    id.len() == 16 && id.iter().any(|&b| b != 0)
}

/// What a valid trace id is, for a refusal.
pub const TRACE_ID_RULE: &str = "a trace id must be 16 bytes (32 hex digits), not all zero";

/// Takes out of a request the spans whose trace id is not valid; how many it took.
pub fn remove_invalid_spans(request: &mut ExportTraceServiceRequest) -> usize {
    let mut removed = 0;
    for rs in &mut request.resource_spans {
        for ss in &mut rs.scope_spans {
            let before = ss.spans.len();
            ss.spans.retain(|s| is_valid_trace_id(&s.trace_id));
            removed += before - ss.spans.len();
        }
    }
    removed
}

/// The answer to an export request of which `rejected` spans were refused for their trace id:
/// empty when none was, else OTLP's partial success saying how many and why.
pub fn export_response(rejected: u64) -> ExportTraceServiceResponse {
    ExportTraceServiceResponse {
        partial_success: (rejected > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: i64::try_from(rejected).unwrap_or(i64::MAX),
            error_message: format!("{rejected} spans refused: {TRACE_ID_RULE}"),
        }),
    }
}

/// The spans of one trace, with the attributes of the resource that produced its root (or its
/// first span).
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub trace_id: Vec<u8>,
    pub resource: Vec<KeyValue>,
    pub spans: Vec<Span>,
    /// Spans left out: over the limit of spans per trace (the root is always kept).
    pub dropped_spans: u64,
}

impl Trace {
    /// Whether the root span (the one without a parent) is here.
    pub fn has_root(&self) -> bool {
        self.spans.iter().any(|s| s.parent_span_id.is_empty())
    }
}

/// Calls `f` with each span and its resource's attributes.
fn for_each_span(request: ExportTraceServiceRequest, mut f: impl FnMut(&[KeyValue], Span)) {
    for rs in request.resource_spans {
        let resource = rs.resource.map(|r| r.attributes).unwrap_or_default();
        for ss in rs.scope_spans {
            for span in ss.spans {
                f(&resource, span);
            }
        }
    }
}

/// A trace being gathered, with the ids of its spans so far.
#[derive(Debug, Default)]
struct Gathering {
    trace: Trace,
    span_ids: HashSet<Vec<u8>>,
}

/// What became of a span offered to a trace.
#[derive(Debug, PartialEq, Eq)]
enum Offered {
    Kept,
    /// A span id already in the trace (an exporter's retry): the first is kept.
    Duplicate,
    /// Over the limit of spans per trace (never the root).
    OverLimit,
}

impl Gathering {
    fn new(trace_id: Vec<u8>, resource: &[KeyValue]) -> Gathering {
        Gathering {
            trace: Trace {
                trace_id,
                resource: resource.to_vec(),
                ..Trace::default()
            },
            span_ids: HashSet::new(),
        }
    }

    fn offer(&mut self, resource: &[KeyValue], span: Span, max_spans: usize) -> Offered {
        if !span.span_id.is_empty() && self.span_ids.contains(&span.span_id) {
            return Offered::Duplicate;
        }
        let root = span.parent_span_id.is_empty();
        if !root && self.trace.spans.len() >= max_spans {
            self.trace.dropped_spans += 1;
            return Offered::OverLimit;
        }
        if !span.span_id.is_empty() {
            self.span_ids.insert(span.span_id.clone());
        }
        if root {
            self.trace.resource = resource.to_vec();
        }
        self.trace.spans.push(span);
        Offered::Kept
    }
}

/// Spans grouped by trace as requests come, in the order traces first appear: a span whose trace
/// id is not valid is refused, one whose span id is already in its trace (a retry) kept once.
#[derive(Debug, Default)]
pub struct Grouper {
    index: HashMap<Vec<u8>, usize>,
    traces: Vec<Gathering>,
    /// Spans refused for a trace id that is not valid.
    pub refused_spans: u64,
    /// Spans sent again (same trace and span id), kept once.
    pub duplicate_spans: u64,
}

impl Grouper {
    pub fn add(&mut self, request: ExportTraceServiceRequest) {
        for_each_span(request, |resource, span| {
            if !is_valid_trace_id(&span.trace_id) {
                self.refused_spans += 1;
                return;
            }
            let i = *self.index.entry(span.trace_id.clone()).or_insert_with(|| {
                self.traces
                    .push(Gathering::new(span.trace_id.clone(), resource));
                self.traces.len() - 1
            });
            if self.traces[i].offer(resource, span, usize::MAX) == Offered::Duplicate {
                self.duplicate_spans += 1;
            }
        });
    }

    /// The traces.
    pub fn finish(self) -> Vec<Trace> {
        self.traces.into_iter().map(|g| g.trace).collect()
    }
}

/// Spans grouped by trace, in the order traces first appear (see [`Grouper`]).
pub fn traces_of(requests: impl IntoIterator<Item = ExportTraceServiceRequest>) -> Vec<Trace> {
    let mut g = Grouper::default();
    for r in requests {
        g.add(r);
    }
    g.finish()
}

/// Bounds of a live assembler.
#[derive(Debug, Clone, Copy)]
pub struct AssemblerLimits {
    /// Traces held open at once; past it, the longest idle is handed over as it stands.
    pub max_open_traces: usize,
    /// Spans kept per trace; further spans are dropped and counted, except the root, which is
    /// always kept (it completes the trace).
    pub max_spans_per_trace: usize,
    /// A trace whose root never arrives is handed over after this long without a new span.
    pub idle_ms: u64,
}

impl Default for AssemblerLimits {
    fn default() -> Self {
        AssemblerLimits {
            max_open_traces: 10_000,
            max_spans_per_trace: 2_000,
            idle_ms: 30_000,
        }
    }
}

struct Open {
    gathering: Gathering,
    last_ms: u64,
}

/// Completed traces remembered, so a late span is counted rather than starting a new trace.
const REMEMBERED: usize = 100_000;

/// Assembles a stream of export requests into traces: a trace is complete when its root span
/// arrives (spans are exported as they end, and the root ends last), or when it has been idle
/// for the limit, and is handed over with every span that arrived for it (a span sent twice,
/// once). Memory is bounded by the limits.
pub struct Assembler {
    limits: AssemblerLimits,
    open: HashMap<Vec<u8>, Open>,
    done: HashSet<Vec<u8>>,
    done_order: VecDeque<Vec<u8>>,
    /// Spans dropped: over a trace's limit, or arriving after their trace was complete.
    pub dropped_spans: u64,
    /// Spans sent again (same trace and span id) while their trace was open, kept once.
    pub duplicate_spans: u64,
    /// Spans refused for a trace id that is not valid.
    pub refused_spans: u64,
}

impl Assembler {
    pub fn new(limits: AssemblerLimits) -> Self {
        Assembler {
            limits,
            open: HashMap::new(),
            done: HashSet::new(),
            done_order: VecDeque::new(),
            dropped_spans: 0,
            duplicate_spans: 0,
            refused_spans: 0,
        }
    }

    /// Traces open now.
    pub fn open_traces(&self) -> usize {
        self.open.len()
    }

    /// Adds a request's spans at `now_ms`; returns the traces now complete (and any handed over
    /// early to stay within the limit of open traces).
    pub fn push(&mut self, request: ExportTraceServiceRequest, now_ms: u64) -> Vec<Trace> {
        let mut rooted = Vec::new();
        let mut out = Vec::new();
        let limits = self.limits;
        for_each_span(request, |resource, span| {
            if !is_valid_trace_id(&span.trace_id) {
                self.refused_spans += 1;
                return;
            }
            if self.done.contains(&span.trace_id) {
                self.dropped_spans += 1;
                return;
            }
            if !self.open.contains_key(&span.trace_id)
                && self.open.len() >= limits.max_open_traces
                && let Some(oldest) = self
                    .open
                    .iter()
                    .min_by_key(|(_, o)| o.last_ms)
                    .map(|(k, _)| k.clone())
            {
                let o = self.open.remove(&oldest).expect("present");
                out.push(o.gathering.trace);
            }
            let open = self
                .open
                .entry(span.trace_id.clone())
                .or_insert_with(|| Open {
                    gathering: Gathering::new(span.trace_id.clone(), resource),
                    last_ms: now_ms,
                });
            open.last_ms = now_ms;
            let root = span.parent_span_id.is_empty();
            match open
                .gathering
                .offer(resource, span, limits.max_spans_per_trace)
            {
                Offered::Kept if root => rooted.push(open.gathering.trace.trace_id.clone()),
                Offered::Kept => {}
                Offered::Duplicate => self.duplicate_spans += 1,
                Offered::OverLimit => self.dropped_spans += 1,
            }
        });
        for id in rooted {
            if let Some(o) = self.open.remove(&id) {
                out.push(o.gathering.trace);
            }
        }
        for t in &out {
            self.remember(t.trace_id.clone());
        }
        out
    }

    fn remember(&mut self, id: Vec<u8>) {
        if self.done.insert(id.clone()) {
            self.done_order.push_back(id);
            if self.done_order.len() > REMEMBERED
                && let Some(old) = self.done_order.pop_front()
            {
                self.done.remove(&old);
            }
        }
    }

    /// Traces idle for longer than the limit, handed over as they stand.
    pub fn expire(&mut self, now_ms: u64) -> Vec<Trace> {
        let idle: Vec<Vec<u8>> = self
            .open
            .iter()
            .filter(|(_, o)| now_ms.saturating_sub(o.last_ms) >= self.limits.idle_ms)
            .map(|(k, _)| k.clone())
            .collect();
        let out: Vec<Trace> = idle
            .into_iter()
            .filter_map(|k| self.open.remove(&k).map(|o| o.gathering.trace))
            .collect();
        for t in &out {
            self.remember(t.trace_id.clone());
        }
        out
    }

    /// Every open trace, as it stands (at stop).
    pub fn drain(&mut self) -> Vec<Trace> {
        self.open.drain().map(|(_, o)| o.gathering.trace).collect()
    }
}

/// A tool the producer declared to the model (name, description, parameters' JSON Schema).
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// One trace as a trial.
#[derive(Debug, Clone)]
pub struct ImportedTrace {
    /// W3C trace id, 32 lowercase hex digits.
    pub trace_id: String,
    /// The producing service (`service.name`).
    pub service: Option<String>,
    /// The agent (`gen_ai.agent.name`, else the root span's name).
    pub agent: String,
    /// The case: `gauntlet.case_id` when gauntlet produced the trace, else the trace id.
    pub case_id: String,
    pub epoch: u32,
    pub seed: u64,
    pub tags: Vec<String>,
    pub difficulty: Option<String>,
    /// When the root started (RFC 3339).
    pub started_at: Option<String>,
    pub duration_ms: f64,
    pub trajectory: Trajectory,
    pub initial_state: Value,
    pub final_state: Value,
    /// The harness's failure, for a gauntlet trial that ended in error.
    pub error: Option<String>,
    /// Tools declared to the model in the trace.
    pub tools: Vec<DeclaredTool>,
    /// Feedback carried on spans (events whose name ends in `feedback`), as attribute objects.
    pub feedback: Vec<Value>,
    /// Whether the root span was among the spans.
    pub complete: bool,
    /// Spans left out over the limit of spans per trace (the root never is).
    pub dropped_spans: u64,
    /// The root span's id, when there is one.
    pub root_span_id: Option<Vec<u8>>,
}

fn hex(bytes: &[u8]) -> String {
    gauntlet_model::digest::hex(bytes)
}

/// A JSON value of an attribute value.
fn json_of(v: &AnyValue) -> Value {
    match &v.value {
        Some(Any::StringValue(s)) => Value::String(s.clone()),
        Some(Any::BoolValue(b)) => Value::Bool(*b),
        Some(Any::IntValue(i)) => Value::from(*i),
        Some(Any::DoubleValue(d)) => serde_json::Number::from_f64(*d)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Some(Any::ArrayValue(a)) => Value::Array(a.values.iter().map(json_of).collect()),
        Some(Any::KvlistValue(kv)) => Value::Object(
            kv.values
                .iter()
                .map(|k| (k.key.clone(), k.value.as_ref().map_or(Value::Null, json_of)))
                .collect(),
        ),
        Some(Any::BytesValue(b)) => Value::String(hex(b)),
        // Dictionary references of the profiles signal; traces do not use them.
        Some(Any::StringValueStrindex(_)) | None => Value::Null,
    }
}

fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a AnyValue> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
}

fn attr_str<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attr(attrs, key).and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn attr_u64(attrs: &[KeyValue], key: &str) -> Option<u64> {
    match attr(attrs, key).and_then(|v| v.value.as_ref()) {
        Some(Any::IntValue(i)) => u64::try_from(*i).ok(),
        Some(Any::DoubleValue(d)) if *d >= 0.0 => Some(*d as u64),
        Some(Any::StringValue(s)) => s.parse().ok(),
        _ => None,
    }
}

fn first_str<'a>(attrs: &'a [KeyValue], keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| attr_str(attrs, k))
}

/// A JSON text as its value; anything else as a string.
fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

fn ms_between(from: u64, to: u64) -> f64 {
    to.saturating_sub(from) as f64 / 1e6
}

/// What a span is, by the conventions it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Agent,
    Chat,
    Tool,
    Other,
}

fn role(span: &Span) -> Role {
    if let Some(op) = attr_str(&span.attributes, "gen_ai.operation.name") {
        return match op {
            "chat" | "text_completion" | "generate_content" => Role::Chat,
            "execute_tool" => Role::Tool,
            "invoke_agent" | "create_agent" => Role::Agent,
            _ => Role::Other,
        };
    }
    match attr_str(&span.attributes, "openinference.span.kind") {
        Some("LLM") => Role::Chat,
        Some("TOOL") => Role::Tool,
        Some("AGENT") => Role::Agent,
        _ => Role::Other,
    }
}

/// A chat message, whichever convention carried it.
#[derive(Debug, Default)]
struct Msg {
    role: String,
    text: Option<String>,
    calls: Vec<(String, String, Value)>,
    responses: Vec<(String, Value)>,
}

/// Messages in the GenAI conventions' JSON (`[{role, parts: [...]}]`).
fn genai_messages(text: &str) -> Vec<Msg> {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    items
        .iter()
        .map(|m| {
            let mut msg = Msg {
                role: m["role"].as_str().unwrap_or_default().to_owned(),
                ..Default::default()
            };
            let mut texts = Vec::new();
            for part in m["parts"].as_array().into_iter().flatten() {
                match part["type"].as_str() {
                    Some("text") => texts.extend(part["content"].as_str().map(str::to_owned)),
                    Some("tool_call") => msg.calls.push((
                        part["id"].as_str().unwrap_or_default().to_owned(),
                        part["name"].as_str().unwrap_or_default().to_owned(),
                        match &part["arguments"] {
                            Value::String(s) => parsed(s),
                            Value::Null => Value::Object(Map::new()),
                            v => v.clone(),
                        },
                    )),
                    Some("tool_call_response") => {
                        let r = if part["response"].is_null() {
                            &part["result"]
                        } else {
                            &part["response"]
                        };
                        msg.responses.push((
                            part["id"].as_str().unwrap_or_default().to_owned(),
                            match r {
                                Value::String(s) => parsed(s),
                                v => v.clone(),
                            },
                        ));
                    }
                    _ => {}
                }
            }
            if !texts.is_empty() {
                msg.text = Some(texts.join("\n"));
            }
            msg
        })
        .collect()
}

/// Attributes under `prefix.` as nested JSON: `a.0.b` → `{"a": [{"b": ..}]}`.
fn unflatten(attrs: &[KeyValue], prefix: &str) -> Value {
    let mut root = Value::Object(Map::new());
    for kv in attrs {
        let Some(rest) = kv
            .key
            .strip_prefix(prefix)
            .and_then(|r| r.strip_prefix('.'))
        else {
            continue;
        };
        let mut node = &mut root;
        for seg in rest.split('.') {
            if !node.is_object() {
                *node = Value::Object(Map::new());
            }
            node = node
                .as_object_mut()
                .expect("an object")
                .entry(seg.to_owned())
                .or_insert(Value::Null);
        }
        *node = kv.value.as_ref().map_or(Value::Null, json_of);
    }
    arrays(root)
}

/// Objects whose keys are all indices become arrays, in index order.
fn arrays(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            if !m.is_empty() && m.keys().all(|k| k.parse::<usize>().is_ok()) {
                let mut items: Vec<(usize, Value)> = m
                    .into_iter()
                    .map(|(k, v)| (k.parse().expect("an index"), arrays(v)))
                    .collect();
                items.sort_by_key(|(i, _)| *i);
                Value::Array(items.into_iter().map(|(_, v)| v).collect())
            } else {
                Value::Object(m.into_iter().map(|(k, v)| (k, arrays(v))).collect())
            }
        }
        other => other,
    }
}

/// Messages in OpenInference's flattened attributes (`llm.input_messages.N.message.*`).
fn openinference_messages(attrs: &[KeyValue], prefix: &str) -> Vec<Msg> {
    let Value::Array(items) = unflatten(attrs, prefix) else {
        return Vec::new();
    };
    items
        .iter()
        .map(|item| {
            let m = &item["message"];
            let mut msg = Msg {
                role: m["role"].as_str().unwrap_or_default().to_owned(),
                ..Default::default()
            };
            let text = m["content"].as_str().map(str::to_owned).or_else(|| {
                let parts: Vec<&str> = m["contents"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["message_content"]["text"].as_str())
                    .collect();
                (!parts.is_empty()).then(|| parts.join("\n"))
            });
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                let call = &c["tool_call"];
                msg.calls.push((
                    call["id"].as_str().unwrap_or_default().to_owned(),
                    call["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    match &call["function"]["arguments"] {
                        Value::String(s) => parsed(s),
                        Value::Null => Value::Object(Map::new()),
                        v => v.clone(),
                    },
                ));
            }
            if msg.role == "tool" {
                let id = m["tool_call_id"].as_str().unwrap_or_default().to_owned();
                msg.responses
                    .push((id, text.as_deref().map(parsed).unwrap_or(Value::Null)));
            } else {
                msg.text = text;
            }
            msg
        })
        .collect()
}

fn input_messages(span: &Span) -> Vec<Msg> {
    match attr_str(&span.attributes, "gen_ai.input.messages") {
        Some(text) => genai_messages(text),
        None => openinference_messages(&span.attributes, "llm.input_messages"),
    }
}

fn output_messages(span: &Span) -> Vec<Msg> {
    match attr_str(&span.attributes, "gen_ai.output.messages") {
        Some(text) => genai_messages(text),
        None => openinference_messages(&span.attributes, "llm.output_messages"),
    }
}

/// Tools declared on a chat span.
fn declared_tools(span: &Span) -> Vec<DeclaredTool> {
    let defs: Vec<Value> = match attr_str(&span.attributes, "gen_ai.tool.definitions") {
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Array(a)) => a,
            _ => Vec::new(),
        },
        None => match unflatten(&span.attributes, "llm.tools") {
            Value::Array(a) => a
                .iter()
                .filter_map(|t| t["tool"]["json_schema"].as_str())
                .filter_map(|s| serde_json::from_str(s).ok())
                .collect(),
            _ => Vec::new(),
        },
    };
    defs.iter()
        .filter_map(|d| {
            let f = if d["function"].is_object() {
                &d["function"]
            } else {
                d
            };
            Some(DeclaredTool {
                name: f["name"].as_str()?.to_owned(),
                description: f["description"].as_str().unwrap_or_default().to_owned(),
                parameters: if f["parameters"].is_object() {
                    f["parameters"].clone()
                } else {
                    serde_json::json!({"type": "object"})
                },
            })
        })
        .collect()
}

fn span_error(span: &Span) -> Option<ToolError> {
    let status = span.status.as_ref()?;
    (status.code == StatusCode::Error as i32).then(|| {
        let kind = attr_str(&span.attributes, "error.type");
        ToolError {
            status: kind.and_then(|k| k.parse().ok()).unwrap_or(500),
            message: if status.message.is_empty() {
                kind.unwrap_or("error").to_owned()
            } else {
                status.message.clone()
            },
            retry_after_s: None,
        }
    })
}

fn feedback_of(span: &Span) -> impl Iterator<Item = Value> + '_ {
    span.events
        .iter()
        .filter(|e| e.name.ends_with("feedback"))
        .map(|e| {
            Value::Object(
                e.attributes
                    .iter()
                    .map(|kv| {
                        let key = kv.key.rsplit('.').next().unwrap_or(&kv.key).to_owned();
                        (key, kv.value.as_ref().map_or(Value::Null, json_of))
                    })
                    .collect(),
            )
        })
}

/// The root: the span without a parent (or whose parent is not in the trace), the agent's if
/// there are several.
fn root_of(trace: &Trace) -> Option<&Span> {
    let ids: HashSet<&[u8]> = trace.spans.iter().map(|s| s.span_id.as_slice()).collect();
    let mut roots: Vec<&Span> = trace
        .spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty() || !ids.contains(s.parent_span_id.as_slice()))
        .collect();
    roots.sort_by_key(|s| {
        (
            !s.parent_span_id.is_empty(),
            role(s) != Role::Agent,
            s.start_time_unix_nano,
        )
    });
    roots.first().copied()
}

/// One trace as a trial.
pub fn imported_trace(trace: &Trace) -> ImportedTrace {
    let root = root_of(trace);
    let t0 = trace
        .spans
        .iter()
        .map(|s| s.start_time_unix_nano)
        .min()
        .unwrap_or(0);
    let end = trace
        .spans
        .iter()
        .map(|s| s.end_time_unix_nano)
        .max()
        .unwrap_or(t0);
    let root_attrs: &[KeyValue] = root.map_or(&[], |r| &r.attributes);
    let trace_id = hex(&trace.trace_id);
    let mut out = ImportedTrace {
        case_id: attr_str(root_attrs, "gauntlet.case_id")
            .map_or_else(|| trace_id.clone(), str::to_owned),
        trace_id,
        service: attr_str(&trace.resource, "service.name").map(str::to_owned),
        agent: first_str(root_attrs, &["gen_ai.agent.name"])
            .map(str::to_owned)
            .or_else(|| root.map(|r| r.name.clone()))
            .unwrap_or_default(),
        epoch: attr_u64(root_attrs, "gauntlet.epoch").unwrap_or(0) as u32,
        seed: 0,
        tags: Vec::new(),
        difficulty: None,
        started_at: i64::try_from(root.map_or(t0, |r| r.start_time_unix_nano))
            .ok()
            .filter(|n| *n > 0)
            .and_then(|n| jiff::Timestamp::from_nanosecond(i128::from(n)).ok())
            .map(|t| t.to_string()),
        duration_ms: ms_between(t0, end),
        trajectory: Trajectory::default(),
        initial_state: Value::Object(Map::new()),
        final_state: Value::Object(Map::new()),
        error: None,
        tools: Vec::new(),
        feedback: trace.spans.iter().flat_map(feedback_of).collect(),
        complete: trace.has_root(),
        dropped_spans: trace.dropped_spans,
        root_span_id: root.map(|r| r.span_id.clone()),
    };
    match attr_str(root_attrs, GAUNTLET_TRIAL).map(parsed) {
        Some(trial) if trial.is_object() => ours(trace, root.expect("a root"), &trial, &mut out),
        _ => theirs(trace, root, t0, &mut out),
    }
    out
}

/// A trace gauntlet exported: every event was carried whole.
fn ours(trace: &Trace, root: &Span, trial: &Value, out: &mut ImportedTrace) {
    let mut indexed: Vec<(u64, Event)> = Vec::new();
    let mut carried = |attrs: &[KeyValue]| {
        if let (Some(e), Some(i)) = (
            attr_str(attrs, GAUNTLET_EVENT),
            attr_u64(attrs, GAUNTLET_EVENT_INDEX),
        ) && let Ok(event) = serde_json::from_str::<Event>(e)
        {
            indexed.push((i, event));
        }
    };
    for s in &trace.spans {
        carried(&s.attributes);
    }
    for e in root.events.iter().filter(|e| e.name == GAUNTLET_EVENT) {
        carried(&e.attributes);
    }
    indexed.sort_by_key(|(i, _)| *i);
    out.trajectory.events = indexed.into_iter().map(|(_, e)| e).collect();
    out.trajectory.final_answer = trial["final_answer"].as_str().map(str::to_owned);
    out.trajectory.side_effects =
        serde_json::from_value::<Vec<SideEffect>>(trial["side_effects"].clone())
            .unwrap_or_default();
    out.seed = trial["seed"].as_u64().unwrap_or(0);
    out.tags = serde_json::from_value(trial["tags"].clone()).unwrap_or_default();
    out.difficulty = trial["difficulty"].as_str().map(str::to_owned);
    out.error = trial["error"].as_str().map(str::to_owned);
    out.initial_state = trial["initial_state"].clone();
    out.final_state = trial["final_state"].clone();
    if let Some(ms) = trial["duration_ms"].as_f64() {
        out.duration_ms = ms;
    }
}

/// A trace of another producer: the GenAI or OpenInference conventions.
///
/// Every span counts, the root included: when the root never arrived, the span standing in for
/// it (the earliest whose parent is missing) may be a chat or a tool span, and its call is the
/// trace's as much as any other's.
fn theirs(trace: &Trace, root: Option<&Span>, t0: u64, out: &mut ImportedTrace) {
    let mut spans: Vec<&Span> = trace.spans.iter().collect();
    // The request and the answer come from the root, unless it is a tool's span (standing in
    // for a root that never arrived): a tool's input and output are not the conversation's.
    let root = root.filter(|r| role(r) != Role::Tool);
    // Spans in start order; a parent before its children when they start together.
    spans.sort_by_key(|s| (s.start_time_unix_nano, s.end_time_unix_nano));
    let mut events: Vec<Event> = Vec::new();
    let mut users_seen = 0;
    let mut step = 0u32;
    // Calls by id, and calls not yet answered by a tool span (event index).
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut unmatched: Vec<usize> = Vec::new();
    let mut last_answer: Option<String> = None;
    let mut tools: Vec<DeclaredTool> = Vec::new();
    let new_call = |events: &mut Vec<Event>, id: String, tool: String, args: Value, step: u32| {
        let n = events
            .iter()
            .filter(|e| matches!(e, Event::ToolCall(_)))
            .count();
        events.push(Event::ToolCall(Box::new(ToolCall {
            id: if id.is_empty() {
                format!("call-{}", n + 1)
            } else {
                id
            },
            step,
            tool,
            arguments: args,
            kind: None,
            schema_valid: None,
            result: None,
            error: None,
            fault: None,
            idempotency_key: None,
            state_changes: Vec::new(),
            idempotent_replay: false,
            at_ms: 0.0,
            recorded_output: None,
            latency_ms: 0.0,
        })));
        events.len() - 1
    };
    if let Some(r) = root
        && let Some(text) = attr_str(&r.attributes, "gen_ai.input.messages")
    {
        for m in genai_messages(text)
            .into_iter()
            .filter(|m| m.role == "user")
        {
            events.extend(m.text.map(|text| Event::UserMessage { text }));
            users_seen += 1;
        }
    }
    for span in spans {
        let at_ms = ms_between(t0, span.start_time_unix_nano);
        let latency_ms = ms_between(span.start_time_unix_nano, span.end_time_unix_nano);
        match role(span) {
            Role::Chat => {
                for tool in declared_tools(span) {
                    if !tools.iter().any(|t| t.name == tool.name) {
                        tools.push(tool);
                    }
                }
                let mut users = 0;
                for m in input_messages(span) {
                    if m.role == "user" {
                        users += 1;
                        if users > users_seen {
                            events.extend(m.text.map(|text| Event::UserMessage { text }));
                            users_seen = users;
                        }
                    }
                    // A tool's answer in the history fills a call no tool span answered.
                    for (id, result) in m.responses {
                        if let Some(&i) = by_id.get(&id)
                            && let Event::ToolCall(c) = &mut events[i]
                            && c.result.is_none()
                            && c.error.is_none()
                        {
                            c.result = Some(result);
                        }
                    }
                }
                let a = &span.attributes;
                events.push(Event::ModelCall {
                    model: first_str(
                        a,
                        &[
                            "gen_ai.response.model",
                            "gen_ai.request.model",
                            "llm.model_name",
                        ],
                    )
                    .unwrap_or("unknown")
                    .to_owned(),
                    prompt_tokens: attr_u64(a, "gen_ai.usage.input_tokens")
                        .or_else(|| attr_u64(a, "llm.token_count.prompt"))
                        .unwrap_or(0),
                    completion_tokens: attr_u64(a, "gen_ai.usage.output_tokens")
                        .or_else(|| attr_u64(a, "llm.token_count.completion"))
                        .unwrap_or(0),
                    cost_eur: 0.0,
                    latency_ms,
                    ttft_ms: None,
                    simulated_user: false,
                    at_ms: Some(at_ms),
                    error: span_error(span),
                    fault: None,
                });
                step += 1;
                last_answer = None;
                for m in output_messages(span) {
                    if m.calls.is_empty() {
                        last_answer = m.text.or(last_answer);
                        continue;
                    }
                    if let Some(text) = m.text {
                        events.push(Event::AgentMessage { step, text });
                    }
                    for (id, tool, args) in m.calls {
                        if !id.is_empty() && by_id.contains_key(&id) {
                            continue;
                        }
                        let i = new_call(&mut events, id.clone(), tool, args, step);
                        if let Event::ToolCall(c) = &mut events[i] {
                            c.at_ms = ms_between(t0, span.end_time_unix_nano);
                        }
                        by_id.insert(id, i);
                        unmatched.push(i);
                    }
                }
            }
            Role::Tool => {
                let a = &span.attributes;
                let id = first_str(a, &["gen_ai.tool.call.id", "tool_call.id"])
                    .unwrap_or_default()
                    .to_owned();
                let tool = first_str(a, &["gen_ai.tool.name", "tool.name"])
                    .map_or_else(|| span.name.clone(), str::to_owned);
                // The call this span answers: by id, else the first unanswered call of the tool.
                let known = by_id
                    .get(&id)
                    .copied()
                    .filter(|_| !id.is_empty())
                    .filter(|i| unmatched.contains(i))
                    .or_else(|| {
                        unmatched
                            .iter()
                            .copied()
                            .find(|&i| matches!(&events[i], Event::ToolCall(c) if c.tool == tool))
                    });
                let args = first_str(a, &["gen_ai.tool.call.arguments", "input.value"]).map(parsed);
                let i = match known {
                    Some(i) => {
                        unmatched.retain(|&u| u != i);
                        i
                    }
                    None => {
                        if step == 0 {
                            step = 1;
                        }
                        let i = new_call(
                            &mut events,
                            id.clone(),
                            tool,
                            args.clone().unwrap_or_else(|| Value::Object(Map::new())),
                            step,
                        );
                        if !id.is_empty() {
                            by_id.insert(id, i);
                        }
                        i
                    }
                };
                if let Event::ToolCall(c) = &mut events[i] {
                    if let Some(args) = args
                        && c.arguments.as_object().is_none_or(Map::is_empty)
                    {
                        c.arguments = args;
                    }
                    c.at_ms = at_ms;
                    c.latency_ms = latency_ms;
                    c.error = span_error(span);
                    c.result = if c.error.is_some() {
                        None
                    } else {
                        first_str(a, &["gen_ai.tool.call.result", "output.value"]).map(parsed)
                    };
                }
            }
            Role::Agent | Role::Other => {}
        }
    }
    let root_attrs: &[KeyValue] = root.map_or(&[], |r| &r.attributes);
    // OpenInference puts the request and the answer on the agent's span.
    if users_seen == 0
        && let Some(text) = attr_str(root_attrs, "input.value")
    {
        events.insert(
            0,
            Event::UserMessage {
                text: text.to_owned(),
            },
        );
    }
    let answer = attr_str(root_attrs, "gen_ai.output.messages")
        .and_then(|t| genai_messages(t).into_iter().rev().find_map(|m| m.text))
        .or_else(|| attr_str(root_attrs, "output.value").map(str::to_owned))
        .or(last_answer);
    out.trajectory = Trajectory {
        events,
        final_answer: answer,
        side_effects: Vec::new(),
    };
    out.tools = tools;
}

#[cfg(test)]
mod tests;
