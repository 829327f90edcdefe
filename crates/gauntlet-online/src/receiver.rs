//! The receiver: OTLP/HTTP traces in, judged and anonymised trajectories into the lake.
//!
//! `POST /v1/traces` takes an `ExportTraceServiceRequest` as protobuf
//! (`application/x-protobuf`) or JSON (`application/json`), optionally gzip-compressed, behind
//! a bearer token. The handler only decodes and queues: a full queue answers 503 with
//! `Retry-After` (OTLP exporters retry) before the payload is decoded, a malformed payload 400, an oversized one 413 (one
//! whose `Content-Length` says so before its body is read), a body that stalls for
//! `read_timeout` or takes longer than `request_timeout` in all 408, and nothing else is lost;
//! a connection that sends nothing for `idle_timeout` (half a request, or idle between
//! requests) is closed. Spans whose trace id is not a W3C trace id (16 bytes, not all zero) are
//! refused, counted and said in the response's `partial_success`, as feedback for such an id
//! is refused. One worker assembles spans into traces (complete when the root ends, or after the
//! policy's idle time; a span sent twice kept once) and hands them out to be judged and redacted
//! on every core while it assembles the next; it keeps them in the order they completed and
//! writes the lake in batches.
//! `POST /v1/feedback` takes `{trace_id, rating, comment, edited_output, abandoned}`.
//! `GET /v1/status` (JSON) and `GET /metrics` (Prometheus text) report counts and alarms.

use std::collections::VecDeque;
use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use gauntlet_otel::{Assembler, AssemblerLimits, Encoding};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};

use crate::lake::{FeedbackRow, LakeWriter, prune, row_of};
use crate::monitor::Monitor;
use crate::policy::PolicyCheck;

/// How the receiver runs.
pub struct Settings {
    pub lake: PathBuf,
    pub token: String,
    pub judge: PolicyCheck,
    /// Rows held before the lake is written (also written every `flush_every`).
    pub flush_rows: usize,
    pub flush_every: Duration,
    /// Payloads queued for the worker; past it, a payload waits up to `busy_wait` for a place
    /// (the sender sees a slower answer), then is refused with 503.
    pub queue: usize,
    pub busy_wait: Duration,
    /// Largest body accepted, compressed or not.
    pub max_body_bytes: usize,
    /// Longest wait for the next bytes of a request's body.
    pub read_timeout: Duration,
    /// Longest a request may take, its body read in full.
    pub request_timeout: Duration,
    /// Longest a connection may send nothing (slow or half-sent headers, idle keep-alive).
    pub idle_timeout: Duration,
    pub limits: AssemblerLimits,
    /// Where to send each trace's verdicts as `gen_ai.evaluation.result` events (an OTLP/HTTP
    /// traces endpoint), with these headers.
    pub export_to: Option<(String, Vec<(String, String)>)>,
}

impl Settings {
    pub fn new(lake: PathBuf, token: String, judge: PolicyCheck) -> Settings {
        let idle_ms = (judge.policy().idle_timeout_s * 1000.0).max(1.0) as u64;
        Settings {
            lake,
            token,
            judge,
            flush_rows: 1_000,
            flush_every: Duration::from_secs(5),
            queue: 64,
            busy_wait: Duration::from_secs(1),
            max_body_bytes: 16 << 20,
            read_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(30),
            limits: AssemblerLimits {
                idle_ms,
                ..AssemblerLimits::default()
            },
            export_to: None,
        }
    }
}

/// What the receiver counted.
#[derive(Debug, Default)]
pub struct Counters {
    pub payloads: AtomicU64,
    pub spans: AtomicU64,
    pub rejected: AtomicU64,
    pub busy: AtomicU64,
    pub traces_judged: AtomicU64,
    pub traces_written: AtomicU64,
    pub feedback_written: AtomicU64,
    pub dropped_spans: AtomicU64,
    /// Spans refused for a trace id that is not valid.
    pub refused_spans: AtomicU64,
    /// Spans sent again (an exporter's retry), kept once.
    pub duplicate_spans: AtomicU64,
    pub open_traces: AtomicU64,
    pub lake_errors: AtomicU64,
    /// Verdict spans sent upstream, and sends that failed.
    pub verdicts_exported: AtomicU64,
    pub export_errors: AtomicU64,
}

impl Counters {
    fn json(&self, monitor: &Monitor) -> serde_json::Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        json!({
            "payloads": g(&self.payloads), "spans": g(&self.spans),
            "rejected_payloads": g(&self.rejected), "busy_refusals": g(&self.busy),
            "traces_judged": g(&self.traces_judged), "traces_written": g(&self.traces_written),
            "feedback_written": g(&self.feedback_written), "dropped_spans": g(&self.dropped_spans),
            "refused_spans": g(&self.refused_spans), "duplicate_spans": g(&self.duplicate_spans),
            "open_traces": g(&self.open_traces), "lake_errors": g(&self.lake_errors),
            "verdicts_exported": g(&self.verdicts_exported), "export_errors": g(&self.export_errors),
            "alarms": monitor.alarms(),
        })
    }
}

enum Work {
    Traces(gauntlet_otel::ExportRequest),
    Feedback(FeedbackRow),
}

struct Shared {
    token: String,
    tx: mpsc::Sender<Work>,
    counters: Arc<Counters>,
    monitor: Arc<std::sync::Mutex<Monitor>>,
    max_body_bytes: usize,
    busy_wait: Duration,
}

/// A running receiver.
pub struct Running {
    pub addr: SocketAddr,
    pub counters: Arc<Counters>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    worker: tokio::task::JoinHandle<()>,
    stop: tokio_util::sync::CancellationToken,
}

impl Running {
    /// Stops taking requests, judges every open trace as it stands, writes the lake.
    pub async fn stop(self) -> Arc<Counters> {
        self.stop.cancel();
        let _ = self.server.await;
        let _ = self.worker.await;
        self.counters
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A TCP listener whose connections time out reads: a client that sends nothing for the
/// timeout (headers sent slowly or in part, or a connection left idle) is disconnected, so it
/// neither holds a socket for ever nor keeps a graceful stop waiting. The viewer serves on one
/// too.
pub struct TimedListener {
    inner: tokio::net::TcpListener,
    timeout: Duration,
}

impl TimedListener {
    /// Connections accepted by `inner` time out after `timeout` without a byte read.
    pub fn new(inner: tokio::net::TcpListener, timeout: Duration) -> TimedListener {
        TimedListener { inner, timeout }
    }
}

impl axum::serve::Listener for TimedListener {
    type Io = std::pin::Pin<Box<tokio_io_timeout::TimeoutStream<tokio::net::TcpStream>>>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, addr) = axum::serve::Listener::accept(&mut self.inner).await;
        let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
        stream.set_read_timeout(Some(self.timeout));
        (Box::pin(stream), addr)
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// Binds `listen` and starts the receiver.
pub async fn start(listen: SocketAddr, settings: Settings) -> std::io::Result<Running> {
    let listener = TimedListener::new(
        tokio::net::TcpListener::bind(listen).await?,
        settings.idle_timeout,
    );
    let addr = axum::serve::Listener::local_addr(&listener)?;
    let counters = Arc::new(Counters::default());
    let monitor = Arc::new(std::sync::Mutex::new(Monitor::default()));
    let (tx, rx) = mpsc::channel(settings.queue.max(1));
    let shared = Arc::new(Shared {
        token: settings.token.clone(),
        tx,
        counters: counters.clone(),
        monitor: monitor.clone(),
        max_body_bytes: settings.max_body_bytes,
        busy_wait: settings.busy_wait,
    });
    let app = Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/feedback", post(feedback))
        .route("/v1/status", get(status))
        .route("/metrics", get(metrics))
        .layer(DefaultBodyLimit::max(settings.max_body_bytes))
        // A declared length over the limit is refused before the body is read; a body that
        // stalls, or a request that drags on, ends the request (and its connection).
        .layer(RequestBodyLimitLayer::new(settings.max_body_bytes))
        .layer(RequestBodyTimeoutLayer::new(settings.read_timeout))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            settings.request_timeout,
        ))
        .with_state(shared);
    let stop = tokio_util::sync::CancellationToken::new();
    let server = {
        let stop = stop.clone();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await
        })
    };
    // Once the server has stopped, its handlers (and their senders) are gone and the worker
    // drains what was queued.
    let worker = tokio::spawn(work(rx, settings, counters.clone(), monitor));
    Ok(Running {
        addr,
        counters,
        server,
        worker,
        stop,
    })
}

fn authorised(shared: &Shared, headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| constant_time_eq(t.as_bytes(), shared.token.as_bytes()))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": message.into()}))).into_response()
}

/// The refusal of a body that could not be read: too large (413), stalled (408).
fn unread(s: &Shared, rejection: BytesRejection) -> Response {
    s.counters.rejected.fetch_add(1, Ordering::Relaxed);
    let mut cause: Option<&dyn std::error::Error> = Some(&rejection);
    while let Some(e) = cause {
        if e.is::<tower_http::timeout::TimeoutError>() {
            return refuse(
                StatusCode::REQUEST_TIMEOUT,
                "the body stalled: no bytes within the read timeout",
            );
        }
        cause = e.source();
    }
    refuse(rejection.status(), rejection.body_text())
}

/// The body, gunzipped when it says so, never past the size limit.
fn body_of(
    headers: &HeaderMap,
    body: &Bytes,
    limit: usize,
) -> Result<Vec<u8>, (StatusCode, String)> {
    match headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
    {
        None | Some("identity") => Ok(body.to_vec()),
        Some("gzip") => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(&body[..])
                .take(limit as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| (StatusCode::BAD_REQUEST, format!("bad gzip body: {e}")))?;
            if out.len() > limit {
                return Err((
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the body unpacks to more than {limit} bytes"),
                ));
            }
            Ok(out)
        }
        Some(other) => Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("content-encoding `{other}` (gzip or none)"),
        )),
    }
}

async fn traces(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if !authorised(&s, &headers) {
        return refuse(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    }
    let body = match body {
        Ok(b) => b,
        Err(r) => return unread(&s, r),
    };
    let encoding = match headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().trim())
    {
        Some("application/x-protobuf" | "application/protobuf") => Encoding::Protobuf,
        Some("application/json") => Encoding::Json,
        other => {
            s.counters.rejected.fetch_add(1, Ordering::Relaxed);
            return refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "content-type {} (application/x-protobuf or application/json)",
                    other.unwrap_or("missing")
                ),
            );
        }
    };
    // A place in the queue first, waited for a while: a busy receiver slows its senders down,
    // and refuses before decoding, not after.
    let Ok(Ok(place)) = tokio::time::timeout(s.busy_wait, s.tx.reserve()).await else {
        s.counters.busy.fetch_add(1, Ordering::Relaxed);
        let mut r = refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy: the judging queue is full, retry",
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        return r;
    };
    let bytes = match body_of(&headers, &body, s.max_body_bytes) {
        Ok(b) => b,
        Err((status, message)) => {
            s.counters.rejected.fetch_add(1, Ordering::Relaxed);
            return refuse(status, message);
        }
    };
    let mut request = match gauntlet_otel::decode(&bytes, encoding) {
        Ok(r) => r,
        Err(e) => {
            s.counters.rejected.fetch_add(1, Ordering::Relaxed);
            return refuse(StatusCode::BAD_REQUEST, e.to_string());
        }
    };
    let refused = gauntlet_otel::remove_invalid_spans(&mut request);
    let spans: usize = request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum();
    place.send(Work::Traces(request));
    s.counters.payloads.fetch_add(1, Ordering::Relaxed);
    s.counters.spans.fetch_add(spans as u64, Ordering::Relaxed);
    s.counters
        .refused_spans
        .fetch_add(refused as u64, Ordering::Relaxed);
    // An ExportTraceServiceResponse in the request's encoding: empty, or saying which spans
    // were refused (OTLP's partial success, which exporters do not retry).
    let response = gauntlet_otel::export_response(refused as u64);
    match encoding {
        Encoding::Protobuf => (
            [(header::CONTENT_TYPE, "application/x-protobuf")],
            prost::Message::encode_to_vec(&response),
        )
            .into_response(),
        Encoding::Json => axum::Json(match &response.partial_success {
            None => json!({}),
            Some(p) => json!({"partialSuccess": {
                "rejectedSpans": p.rejected_spans.to_string(),
                "errorMessage": p.error_message,
            }}),
        })
        .into_response(),
    }
}

/// `POST /v1/feedback`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Feedback {
    trace_id: String,
    #[serde(default)]
    rating: Option<f64>,
    #[serde(default)]
    comment: Option<String>,
    #[serde(default)]
    edited_output: Option<String>,
    #[serde(default)]
    abandoned: Option<bool>,
}

async fn feedback(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if !authorised(&s, &headers) {
        return refuse(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    }
    let body = match body {
        Ok(b) => b,
        Err(r) => return unread(&s, r),
    };
    let f: Feedback = match serde_json::from_slice(&body) {
        Ok(f) => f,
        Err(e) => {
            s.counters.rejected.fetch_add(1, Ordering::Relaxed);
            return refuse(
                StatusCode::BAD_REQUEST,
                format!("feedback is {{trace_id, rating, comment, edited_output, abandoned}}: {e}"),
            );
        }
    };
    if !gauntlet_model::is_trace_id(&f.trace_id) {
        s.counters.rejected.fetch_add(1, Ordering::Relaxed);
        return refuse(
            StatusCode::BAD_REQUEST,
            "trace_id must be 32 lowercase hex digits, not all zero",
        );
    }
    let row = FeedbackRow {
        trace_id: f.trace_id,
        received_at_ms: now_ms(),
        rating: f.rating.filter(|r| r.is_finite()),
        comment: f.comment,
        edited_output: f.edited_output,
        abandoned: f.abandoned,
    };
    match s.tx.try_send(Work::Feedback(row)) {
        Ok(()) => (StatusCode::ACCEPTED, axum::Json(json!({"accepted": true}))).into_response(),
        Err(_) => {
            s.counters.busy.fetch_add(1, Ordering::Relaxed);
            refuse(StatusCode::SERVICE_UNAVAILABLE, "busy, retry")
        }
    }
}

async fn status(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !authorised(&s, &headers) {
        return refuse(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    }
    let monitor = s.monitor.lock().expect("the monitor lock").clone();
    axum::Json(s.counters.json(&monitor)).into_response()
}

async fn metrics(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !authorised(&s, &headers) {
        return refuse(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    }
    let c = &s.counters;
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let mut out = String::new();
    for (name, help, v) in [
        ("spans_received", "Spans accepted.", g(&c.spans)),
        (
            "payloads_rejected",
            "Payloads refused as malformed.",
            g(&c.rejected),
        ),
        (
            "busy_refusals",
            "Payloads refused with 503 (queue full).",
            g(&c.busy),
        ),
        ("traces_judged", "Traces judged.", g(&c.traces_judged)),
        (
            "traces_written",
            "Trace rows written to the lake.",
            g(&c.traces_written),
        ),
        (
            "dropped_spans",
            "Spans dropped (late or over a trace's limit).",
            g(&c.dropped_spans),
        ),
        (
            "refused_spans",
            "Spans refused for a trace id that is not valid.",
            g(&c.refused_spans),
        ),
        (
            "duplicate_spans",
            "Spans sent again (same trace and span id), kept once.",
            g(&c.duplicate_spans),
        ),
    ] {
        out.push_str(&format!(
            "# HELP gauntlet_online_{name}_total {help}\n# TYPE gauntlet_online_{name}_total counter\ngauntlet_online_{name}_total {v}\n"
        ));
    }
    let monitor = s.monitor.lock().expect("the monitor lock").clone();
    out.push_str("# HELP gauntlet_online_drift_alarms_total Sequential drift alarms, by metric.\n# TYPE gauntlet_online_drift_alarms_total counter\n");
    for (metric, n) in monitor.alarm_counts() {
        out.push_str(&format!(
            "gauntlet_online_drift_alarms_total{{metric=\"{metric}\"}} {n}\n"
        ));
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}

/// The worker: assembles, judges, redacts and writes, until the queue closes.
async fn work(
    mut rx: mpsc::Receiver<Work>,
    settings: Settings,
    counters: Arc<Counters>,
    monitor: Arc<std::sync::Mutex<Monitor>>,
) {
    let mut assembler = Assembler::new(settings.limits);
    let mut lake = LakeWriter::new(&settings.lake);
    let mut verdicts: Vec<gauntlet_otel::Span> = Vec::new();
    let exporter = settings
        .export_to
        .clone()
        .map(|to| Arc::new(Exporter::new(to)));
    // Verdicts are made into spans only to be sent: without an exporter nothing would take them.
    let export = exporter.is_some();
    let judge = Arc::new(settings.judge);
    let retention = judge.policy().retention_days;
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let mut last_flush = std::time::Instant::now();
    let mut last_prune: Option<std::time::Instant> = None;
    let flush = |lake: &mut LakeWriter, counters: &Counters| {
        let (t, f) = (lake.written_traces, lake.written_feedback);
        match lake.flush(now_ms()) {
            Ok(_) => {
                counters
                    .traces_written
                    .fetch_add(lake.written_traces - t, Ordering::Relaxed);
                counters
                    .feedback_written
                    .fetch_add(lake.written_feedback - f, Ordering::Relaxed);
            }
            Err(e) => {
                counters.lake_errors.fetch_add(1, Ordering::Relaxed);
                eprintln!("gauntlet online: failed to write the lake (kept, retried): {e}");
            }
        }
    };
    // Shares being judged, kept in the order they were handed out; while they run on every
    // core, the worker assembles the next payload and writes the lake.
    let mut judging: VecDeque<JoinHandle<Vec<Taken>>> = VecDeque::new();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let in_flight = 2 * cores;
    loop {
        let done = tokio::select! {
            // What is judged is kept first, in order.
            biased;
            share = async { judging.front_mut().expect("a share").await }, if !judging.is_empty() => {
                judging.pop_front();
                keep(share, &mut lake, &mut verdicts, &counters, &monitor);
                false
            }
            w = rx.recv(), if judging.len() < in_flight => match w {
                Some(Work::Traces(request)) => {
                    let complete = assembler.push(request, now_ms() as u64);
                    judging.extend(shares(&judge, cores, export, complete));
                    false
                }
                Some(Work::Feedback(mut row)) => {
                    for text in [&mut row.comment, &mut row.edited_output].into_iter().flatten() {
                        *text = judge.redactor().text(text).into_owned();
                    }
                    lake.push_feedback(row);
                    false
                }
                None => true,
            },
            _ = tick.tick() => {
                let expired = assembler.expire(now_ms() as u64);
                judging.extend(shares(&judge, cores, export, expired));
                false
            }
        };
        counters
            .dropped_spans
            .store(assembler.dropped_spans, Ordering::Relaxed);
        counters
            .duplicate_spans
            .store(assembler.duplicate_spans, Ordering::Relaxed);
        counters
            .open_traces
            .store(assembler.open_traces() as u64, Ordering::Relaxed);
        if done {
            judging.extend(shares(&judge, cores, export, assembler.drain()));
            for share in judging.drain(..) {
                keep(share.await, &mut lake, &mut verdicts, &counters, &monitor);
            }
            counters.open_traces.store(0, Ordering::Relaxed);
            flush(&mut lake, &counters);
            if let Some(e) = &exporter {
                e.dispatch(std::mem::take(&mut verdicts), &counters);
                e.drain().await;
            }
            break;
        }
        if lake.pending() > 0
            && (lake.pending() >= settings.flush_rows
                || last_flush.elapsed() >= settings.flush_every)
        {
            flush(&mut lake, &counters);
            last_flush = std::time::Instant::now();
        }
        if let Some(e) = &exporter
            && !verdicts.is_empty()
            && (verdicts.len() >= settings.flush_rows || lake.pending() == 0)
        {
            e.dispatch(std::mem::take(&mut verdicts), &counters);
        }
        if last_prune.is_none_or(|t| t.elapsed() >= Duration::from_secs(3600)) {
            match prune(&settings.lake, retention, now_ms()) {
                Ok(deleted) => {
                    for d in deleted {
                        eprintln!(
                            "gauntlet online: deleted {} (older than {retention} days)",
                            d.display()
                        );
                    }
                }
                Err(e) => eprintln!("gauntlet online: retention: {e}"),
            }
            last_prune = Some(std::time::Instant::now());
        }
    }
}

/// Sends verdict spans to an OTLP/HTTP endpoint, off the worker: at most `SENDS` requests in
/// flight; a batch that finds none free is dropped and counted, so a slow upstream never slows
/// judging.
struct Exporter {
    url: String,
    headers: Vec<(String, String)>,
    client: reqwest::Client,
    in_flight: Arc<tokio::sync::Semaphore>,
}

const SENDS: u32 = 4;

impl Exporter {
    fn new((url, headers): (String, Vec<(String, String)>)) -> Exporter {
        Exporter {
            url,
            headers,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .expect("an HTTP client"),
            in_flight: Arc::new(tokio::sync::Semaphore::new(SENDS as usize)),
        }
    }

    fn dispatch(self: &Arc<Self>, spans: Vec<gauntlet_otel::Span>, counters: &Arc<Counters>) {
        if spans.is_empty() {
            return;
        }
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            counters.export_errors.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "gauntlet online: {} verdicts not sent: {} sends to {} still pending",
                spans.len(),
                SENDS,
                self.url
            );
            return;
        };
        let (me, counters) = (self.clone(), counters.clone());
        tokio::spawn(async move {
            me.send(spans, &counters).await;
            drop(permit);
        });
    }

    /// Waits (a few seconds at most) for the sends in flight.
    async fn drain(&self) {
        let _ =
            tokio::time::timeout(Duration::from_secs(5), self.in_flight.acquire_many(SENDS)).await;
    }

    /// One request with every span; a failure is counted and logged, not retried.
    async fn send(&self, spans: Vec<gauntlet_otel::Span>, counters: &Counters) {
        if spans.is_empty() {
            return;
        }
        let n = spans.len() as u64;
        let body = prost::Message::encode_to_vec(&gauntlet_otel::evaluation_request(spans));
        let mut request = self
            .client
            .post(&self.url)
            .header(header::CONTENT_TYPE, "application/x-protobuf")
            .body(body);
        for (k, v) in &self.headers {
            request = request.header(k, v);
        }
        match request.send().await.and_then(|r| r.error_for_status()) {
            Ok(_) => {
                counters.verdicts_exported.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => {
                counters.export_errors.fetch_add(1, Ordering::Relaxed);
                eprintln!(
                    "gauntlet online: failed to send {n} verdicts to {}: {e}",
                    self.url
                );
            }
        }
    }
}

/// A trace judged, anonymised, and what is kept of it: its lake row and, when verdicts are
/// exported, its verdicts as a span.
struct Taken {
    row: crate::lake::TraceRow,
    verdicts: Option<gauntlet_otel::Span>,
}

/// Judges one trace (the part that runs on any core); its verdicts as a span if `export`.
async fn judged(judge: &PolicyCheck, export: bool, trace: gauntlet_otel::Trace) -> Taken {
    let imported = gauntlet_otel::imported_trace(&trace);
    let mut judged = judge.judge(imported).await;
    judge.anonymise(&mut judged);
    let received = now_ms();
    let verdicts = export.then(|| {
        gauntlet_otel::evaluation_span(
            &trace.trace_id,
            judged.root_span_id.as_deref(),
            judged.record.status.as_str(),
            &judged.record.scores,
            u64::try_from(received).unwrap_or(0) * 1_000_000,
        )
    });
    drop(trace);
    Taken {
        row: row_of(&judged, received),
        verdicts,
    }
}

/// Hands `traces` out to be judged on every core: a share each (judged in order), at least
/// `JUDGED_TOGETHER` traces a share; with their verdicts as spans if `export`.
fn shares(
    judge: &Arc<PolicyCheck>,
    cores: usize,
    export: bool,
    traces: Vec<gauntlet_otel::Trace>,
) -> Vec<JoinHandle<Vec<Taken>>> {
    let share = traces.len().div_ceil(cores).max(JUDGED_TOGETHER);
    let mut traces = traces.into_iter();
    let mut out = Vec::new();
    loop {
        let part: Vec<_> = traces.by_ref().take(share).collect();
        if part.is_empty() {
            return out;
        }
        let judge = judge.clone();
        out.push(tokio::spawn(async move {
            judged_in_turn(&judge, export, part).await
        }));
    }
}

/// Keeps a share's judged traces in their order: the lake row, the verdicts to export, the
/// monitor, the counters. A share whose judge panicked is lost; the receiver goes on.
fn keep(
    share: Result<Vec<Taken>, tokio::task::JoinError>,
    lake: &mut LakeWriter,
    verdicts: &mut Vec<gauntlet_otel::Span>,
    counters: &Counters,
    monitor: &std::sync::Mutex<Monitor>,
) {
    let taken = match share {
        Ok(taken) => taken,
        Err(e) => return eprintln!("gauntlet online: judging failed: {e}"),
    };
    for Taken { row, verdicts: v } in taken {
        verdicts.extend(v);
        counters.traces_judged.fetch_add(1, Ordering::Relaxed);
        let alarms = monitor.lock().expect("the monitor lock").observe(&row);
        for a in alarms {
            eprintln!("gauntlet online: drift alarm: {a}");
        }
        lake.push_trace(row);
    }
}

/// Judges `traces` one after the other, in order.
async fn judged_in_turn(
    judge: &PolicyCheck,
    export: bool,
    traces: Vec<gauntlet_otel::Trace>,
) -> Vec<Taken> {
    let mut out = Vec::with_capacity(traces.len());
    for t in traces {
        out.push(judged(judge, export, t).await);
    }
    out
}

/// The fewest traces a share is given: fewer are not worth a task of their own.
const JUDGED_TOGETHER: usize = 8;

#[cfg(test)]
mod tests {
    use gauntlet_model::online::Policy;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    const TOKEN: &str = "t0k3n";

    async fn receiver(lake: &std::path::Path, tune: impl FnOnce(&mut Settings)) -> Running {
        let judge = PolicyCheck::new(Policy::default(), "k").unwrap();
        let mut settings = Settings::new(lake.to_owned(), TOKEN.into(), judge);
        tune(&mut settings);
        start("127.0.0.1:0".parse().unwrap(), settings)
            .await
            .unwrap()
    }

    /// Sends `head` (and `body`, in pieces `gap` apart) on a new connection; the status line of
    /// the answer and how long it took.
    async fn raw(
        addr: SocketAddr,
        head: &str,
        body: &[&[u8]],
        gap: Duration,
    ) -> (String, Duration) {
        let started = std::time::Instant::now();
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        c.write_all(head.as_bytes()).await.unwrap();
        for piece in body {
            // The server may have answered and closed already.
            if c.write_all(piece).await.is_err() {
                break;
            }
            tokio::time::sleep(gap).await;
        }
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut answer)).await;
        let text = String::from_utf8_lossy(&answer);
        (
            text.lines().next().unwrap_or_default().to_owned(),
            started.elapsed(),
        )
    }

    fn head(length: u64) -> String {
        format!(
            "POST /v1/traces HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\n\
             content-type: application/x-protobuf\r\ncontent-length: {length}\r\n\r\n"
        )
    }

    /// Regression: a request whose body never came in full (`Content-Length: 1 GiB` and a
    /// short body, or a body that stalls or trickles) was awaited for ever, its connection held
    /// open.
    #[tokio::test]
    async fn a_stalled_or_oversized_body_is_refused_not_awaited_for_ever() {
        let tmp = tempfile::tempdir().unwrap();
        let r = receiver(tmp.path(), |s| {
            s.read_timeout = Duration::from_millis(300);
            s.request_timeout = Duration::from_secs(2);
        })
        .await;
        // A declared length over the limit: 413 before the body is read.
        let (status, took) = raw(r.addr, &head(1 << 30), &[b"abc"], Duration::ZERO).await;
        assert!(status.contains(" 413 "), "{status}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        // A body that stops short: 408 once nothing came for the read timeout.
        let (status, took) = raw(r.addr, &head(100), &[b"abc"], Duration::ZERO).await;
        assert!(status.contains(" 408 "), "{status}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        // A body that trickles, each byte within the read timeout: 408 at the request timeout.
        let bytes = [b"a".as_slice(); 30];
        let (status, took) = raw(r.addr, &head(100), &bytes, Duration::from_millis(150)).await;
        assert!(status.contains(" 408 "), "{status}");
        assert!(took < Duration::from_secs(4), "{took:?}");
        assert_eq!(
            r.counters.rejected.load(Ordering::Relaxed),
            1,
            "the stalled one"
        );
        let stopped = tokio::time::timeout(Duration::from_secs(10), r.stop()).await;
        assert!(stopped.is_ok(), "the receiver did not stop");
    }

    /// Regression: a connection that sent half its headers (or nothing) stayed open for ever,
    /// and kept a graceful stop waiting for it.
    #[tokio::test]
    async fn a_connection_that_sends_nothing_is_closed_and_does_not_hold_up_the_stop() {
        let tmp = tempfile::tempdir().unwrap();
        let r = receiver(tmp.path(), |s| s.idle_timeout = Duration::from_millis(500)).await;
        let mut half = tokio::net::TcpStream::connect(r.addr).await.unwrap();
        half.write_all(b"POST /v1/traces HTTP/1.1\r\nhost: x\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        let closed =
            tokio::time::timeout(Duration::from_secs(5), half.read_to_end(&mut answer)).await;
        assert!(
            closed.is_ok(),
            "the half-sent request's connection is still open"
        );
        // Another, silent, connection open at the stop.
        let _silent = tokio::net::TcpStream::connect(r.addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let stopped = tokio::time::timeout(Duration::from_secs(5), r.stop()).await;
        assert!(stopped.is_ok(), "the receiver did not stop");
    }

    async fn post_json(addr: SocketAddr, body: String) -> (u16, String) {
        let r = reqwest::Client::new()
            .post(format!("http://{addr}/v1/traces"))
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    fn payload(spans: &[serde_json::Value]) -> String {
        json!({"resourceSpans": [{"resource": {"attributes": []},
            "scopeSpans": [{"spans": spans}]}]})
        .to_string()
    }

    fn tool_span(trace_id: &str, span_id: &str, parent: &str) -> serde_json::Value {
        json!({"traceId": trace_id, "spanId": span_id, "parentSpanId": parent,
        "name": "execute_tool get_order",
        "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000005000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "get_order"}},
            {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": "{\"order_id\": \"A-1\"}"}}
        ]})
    }

    fn lake_rows(lake: &std::path::Path) -> Vec<crate::lake::TraceRow> {
        crate::lake::files(lake, "traces", None, None)
            .unwrap()
            .iter()
            .flat_map(|f| crate::lake::read_trace_file(f).unwrap())
            .collect()
    }

    /// Traces complete together (here: 50 open ones when the receiver stops) are judged in
    /// shares on every core, and each is kept once, whole.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn traces_judged_on_every_core_are_each_kept_once() {
        let tmp = tempfile::tempdir().unwrap();
        let lake = tmp.path().join("lake");
        let r = receiver(&lake, |_| {}).await;
        let ids: Vec<String> = (1..=50u32).map(|i| format!("{i:032x}")).collect();
        let spans: Vec<_> = ids
            .iter()
            .map(|id| tool_span(id, "b7ad6b7169203331", ""))
            .collect();
        let (status, body) = post_json(r.addr, payload(&spans)).await;
        assert_eq!(status, 200, "{body}");
        let counters = r.stop().await;
        assert_eq!(counters.traces_judged.load(Ordering::Relaxed), 50);
        let rows = lake_rows(&lake);
        let mut kept: Vec<&str> = rows.iter().map(|r| r.trace_id.as_str()).collect();
        kept.sort_unstable();
        assert_eq!(kept, ids.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            rows.iter()
                .all(|r| r.status == rows[0].status && r.tool_calls == 1)
        );
    }

    /// Regression: every judged trace's verdicts were kept as a span to export, and without an
    /// exporter nothing ever took them: a receiver's memory grew with every trace. They are
    /// made only to be exported.
    #[tokio::test]
    async fn verdicts_are_made_into_spans_only_to_be_exported() {
        let judge = PolicyCheck::new(Policy::default(), "k").unwrap();
        let trace = || {
            let body = payload(&[tool_span(&format!("{:032x}", 7), "b7ad6b7169203331", "")]);
            let request = gauntlet_otel::decode(body.as_bytes(), Encoding::Json).unwrap();
            gauntlet_otel::traces_of([request]).remove(0)
        };
        assert!(judged(&judge, false, trace()).await.verdicts.is_none());
        let exported = judged(&judge, true, trace()).await;
        assert_eq!(exported.row.trace_id, format!("{:032x}", 7));
        assert!(exported.verdicts.is_some_and(|v| !v.events.is_empty()));
    }

    /// A queue full for longer than `busy_wait` refuses with 503 and `Retry-After` before the
    /// payload is read: a malformed one is refused as busy too, not decoded; one that waits
    /// while a place frees is taken; with room again, a malformed one is a 400.
    #[tokio::test]
    async fn a_full_queue_refuses_before_decoding() {
        let (tx, mut rx) = mpsc::channel(1);
        let shared = Arc::new(Shared {
            token: "t".into(),
            tx,
            counters: Arc::default(),
            monitor: Arc::default(),
            max_body_bytes: 1 << 20,
            busy_wait: Duration::from_millis(200),
        });
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, "Bearer t".parse().unwrap());
        headers.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        let post = |body: String| {
            traces(
                State(shared.clone()),
                headers.clone(),
                Ok(Bytes::from(body)),
            )
        };
        let good = payload(&[tool_span(&format!("{:032x}", 1), "b7ad6b7169203331", "")]);
        assert_eq!(post(good.clone()).await.status(), StatusCode::OK);
        for body in [good.clone(), "{not json".to_owned()] {
            let r = post(body).await;
            assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(r.headers()[header::RETRY_AFTER], "1");
        }
        assert_eq!(shared.counters.busy.load(Ordering::Relaxed), 2);
        assert_eq!(shared.counters.rejected.load(Ordering::Relaxed), 0);
        let waiting = tokio::spawn(post(good.clone()));
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(matches!(rx.recv().await, Some(Work::Traces(_))));
        assert_eq!(waiting.await.unwrap().status(), StatusCode::OK);
        assert!(matches!(rx.recv().await, Some(Work::Traces(_))));
        let r = post("{not json".to_owned()).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert_eq!(shared.counters.rejected.load(Ordering::Relaxed), 1);
    }

    /// Regression: spans whose trace id was `ab`, 3 bytes, 64 hex digits or all zeros were
    /// accepted and stored; they are refused, counted and reported as OTLP's partial success.
    #[tokio::test]
    async fn spans_with_an_invalid_trace_id_are_refused_and_counted() {
        let tmp = tempfile::tempdir().unwrap();
        let lake = tmp.path().join("lake");
        let r = receiver(&lake, |_| {}).await;
        let good = "0af7651916cd43dd8448eb211c80319c";
        let spans: Vec<_> = [good, "ab", "abcdef", &"ab".repeat(32), &"0".repeat(32)]
            .iter()
            .map(|id| tool_span(id, "b7ad6b7169203331", ""))
            .collect();
        let (status, body) = post_json(r.addr, payload(&spans)).await;
        assert_eq!(status, 200, "{body}");
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["partialSuccess"]["rejectedSpans"], "4", "{body}");
        assert!(
            body["partialSuccess"]["errorMessage"]
                .as_str()
                .unwrap()
                .contains("16 bytes"),
            "{body}"
        );
        let counters = r.stop().await;
        assert_eq!(counters.refused_spans.load(Ordering::Relaxed), 4);
        assert_eq!(counters.spans.load(Ordering::Relaxed), 1);
        let rows = lake_rows(&lake);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].trace_id, good);
    }

    /// Regression: a span re-sent by its exporter before its trace's root arrived was counted
    /// twice (and the trace failed loop detection); and a trace whose root never arrived lost
    /// its one span at the idle timeout and was stored with 0 calls.
    #[tokio::test]
    async fn a_retried_span_counts_once_and_a_rootless_trace_keeps_its_span_when_idle() {
        let tmp = tempfile::tempdir().unwrap();
        let lake = tmp.path().join("lake");
        let r = receiver(&lake, |s| s.limits.idle_ms = 200).await;
        let retried = "0af7651916cd43dd8448eb211c80319c";
        let child = tool_span(retried, "b7ad6b7169203331", "00f067aa0ba902b7");
        for _ in 0..2 {
            assert_eq!(
                post_json(r.addr, payload(std::slice::from_ref(&child)))
                    .await
                    .0,
                200
            );
        }
        let root = json!({"traceId": retried, "spanId": "00f067aa0ba902b7", "name": "invoke_agent",
            "startTimeUnixNano": "1699999999000000000", "endTimeUnixNano": "1700000001000000000"});
        assert_eq!(post_json(r.addr, payload(&[root])).await.0, 200);
        // A trace of one tool span whose root never comes: judged when idle.
        let lonely = "4bf92f3577b34da6a3ce929d0e0e4736";
        let span = tool_span(lonely, "53995c3f42cd8ad8", "00f067aa0ba902b7");
        assert_eq!(post_json(r.addr, payload(&[span])).await.0, 200);
        let started = std::time::Instant::now();
        while r.counters.traces_judged.load(Ordering::Relaxed) < 2 {
            assert!(started.elapsed() < Duration::from_secs(10), "not judged");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let counters = r.stop().await;
        assert_eq!(counters.duplicate_spans.load(Ordering::Relaxed), 1);
        let rows = lake_rows(&lake);
        let row = |id: &str| rows.iter().find(|r| r.trace_id == id).unwrap();
        assert_eq!(row(retried).tool_calls, 1);
        assert!(
            !row(retried)
                .failed_evaluators
                .iter()
                .any(|e| e == gauntlet_model::names::LOOP_DETECTION)
        );
        assert_eq!(row(lonely).tool_calls, 1);
        assert!(!row(lonely).complete);
    }
}
