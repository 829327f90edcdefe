//! The receiver: OTLP/HTTP traces in, judged and anonymised trajectories into the lake.
//!
//! `POST /v1/traces` takes an `ExportTraceServiceRequest` as protobuf
//! (`application/x-protobuf`) or JSON (`application/json`), optionally gzip-compressed, behind
//! a bearer token. The handler only decodes and queues: a full queue answers 503 with
//! `Retry-After` (OTLP exporters retry), a malformed payload 400, an oversized one 413, and
//! nothing else is lost. One worker assembles spans into traces (complete when the root ends,
//! or after the policy's idle time), judges each, redacts it and writes the lake in batches.
//! `POST /v1/feedback` takes `{trace_id, rating, comment, edited_output, abandoned}`.
//! `GET /v1/status` (JSON) and `GET /metrics` (Prometheus text) report counts and alarms.

use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use gauntlet_otel::{Assembler, AssemblerLimits, Encoding};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;

use crate::judge::Judge;
use crate::lake::{FeedbackRow, LakeWriter, prune, row_of};
use crate::monitor::Monitor;

/// How the receiver runs.
pub struct Settings {
    pub lake: PathBuf,
    pub token: String,
    pub judge: Judge,
    /// Rows held before the lake is written (also written every `flush_every`).
    pub flush_rows: usize,
    pub flush_every: Duration,
    /// Payloads queued for the worker; past it, 503.
    pub queue: usize,
    /// Largest body accepted, compressed or not.
    pub max_body_bytes: usize,
    pub limits: AssemblerLimits,
    /// Where to send each trace's verdicts as `gen_ai.evaluation.result` events (an OTLP/HTTP
    /// traces endpoint), with these headers.
    pub export_to: Option<(String, Vec<(String, String)>)>,
}

impl Settings {
    pub fn new(lake: PathBuf, token: String, judge: Judge) -> Settings {
        let idle_ms = (judge.policy().idle_timeout_s * 1000.0).max(1.0) as u64;
        Settings {
            lake,
            token,
            judge,
            flush_rows: 1_000,
            flush_every: Duration::from_secs(5),
            queue: 64,
            max_body_bytes: 16 << 20,
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

/// Binds `listen` and starts the receiver.
pub async fn start(listen: SocketAddr, settings: Settings) -> std::io::Result<Running> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let counters = Arc::new(Counters::default());
    let monitor = Arc::new(std::sync::Mutex::new(Monitor::default()));
    let (tx, rx) = mpsc::channel(settings.queue.max(1));
    let shared = Arc::new(Shared {
        token: settings.token.clone(),
        tx,
        counters: counters.clone(),
        monitor: monitor.clone(),
        max_body_bytes: settings.max_body_bytes,
    });
    let app = Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/feedback", post(feedback))
        .route("/v1/status", get(status))
        .route("/metrics", get(metrics))
        .layer(DefaultBodyLimit::max(settings.max_body_bytes))
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

async fn traces(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorised(&s, &headers) {
        return refuse(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    }
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
    let bytes = match body_of(&headers, &body, s.max_body_bytes) {
        Ok(b) => b,
        Err((status, message)) => {
            s.counters.rejected.fetch_add(1, Ordering::Relaxed);
            return refuse(status, message);
        }
    };
    let request = match gauntlet_otel::decode(&bytes, encoding) {
        Ok(r) => r,
        Err(e) => {
            s.counters.rejected.fetch_add(1, Ordering::Relaxed);
            return refuse(StatusCode::BAD_REQUEST, e.to_string());
        }
    };
    let spans: usize = request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum();
    match s.tx.try_send(Work::Traces(request)) {
        Ok(()) => {
            s.counters.payloads.fetch_add(1, Ordering::Relaxed);
            s.counters.spans.fetch_add(spans as u64, Ordering::Relaxed);
            // An empty ExportTraceServiceResponse, in the request's encoding.
            match encoding {
                Encoding::Protobuf => (
                    [(header::CONTENT_TYPE, "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
                    .into_response(),
                Encoding::Json => axum::Json(json!({})).into_response(),
            }
        }
        Err(_) => {
            s.counters.busy.fetch_add(1, Ordering::Relaxed);
            let mut r = refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy: the judging queue is full, retry",
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            r
        }
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

async fn feedback(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorised(&s, &headers) {
        return refuse(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    }
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
    let judge = settings.judge;
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
    loop {
        let done = tokio::select! {
            w = rx.recv() => match w {
                Some(Work::Traces(request)) => {
                    let complete = assembler.push(request, now_ms() as u64);
                    for t in complete {
                        take(&judge, &mut lake, &mut verdicts, &counters, &monitor, t).await;
                    }
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
                for t in assembler.expire(now_ms() as u64) {
                    take(&judge, &mut lake, &mut verdicts, &counters, &monitor, t).await;
                }
                false
            }
        };
        counters
            .dropped_spans
            .store(assembler.dropped_spans, Ordering::Relaxed);
        counters
            .open_traces
            .store(assembler.open_traces() as u64, Ordering::Relaxed);
        if done {
            for t in assembler.drain() {
                take(&judge, &mut lake, &mut verdicts, &counters, &monitor, t).await;
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

/// Judges one assembled trace and queues its anonymised row (and its verdicts for upstream).
async fn take(
    judge: &Judge,
    lake: &mut LakeWriter,
    verdicts: &mut Vec<gauntlet_otel::Span>,
    counters: &Counters,
    monitor: &std::sync::Mutex<Monitor>,
    trace: gauntlet_otel::Trace,
) {
    let imported = gauntlet_otel::imported_trace(&trace);
    let mut judged = judge.judge(imported).await;
    judge.anonymise(&mut judged);
    let received = now_ms();
    verdicts.push(gauntlet_otel::evaluation_span(
        &trace.trace_id,
        judged.root_span_id.as_deref(),
        judged.record.status.as_str(),
        &judged.record.scores,
        u64::try_from(received).unwrap_or(0) * 1_000_000,
    ));
    drop(trace);
    let row = row_of(&judged, received);
    counters.traces_judged.fetch_add(1, Ordering::Relaxed);
    let alarms = monitor.lock().expect("the monitor lock").observe(&row);
    for a in alarms {
        eprintln!("gauntlet online: drift alarm: {a}");
    }
    lake.push_trace(row);
}
