//! The LLM gateway: an OpenAI-compatible `/v1/chat/completions` proxy between agents and their
//! model, which records every model call into the trial and can record and replay cassettes.
//!
//! Each trial gets its own base URL, `http://127.0.0.1:PORT/t/KEY/v1`, and `KEY` doubles as the
//! API key the agent sends; the real upstream key stays in the harness. Per call the trial gets a
//! `model_call` event: model, prompt and completion tokens (from `usage`), cost from the price
//! table, latency and, for streams, time to first token. Cassettes key each response by case,
//! epoch, a hash of the request and its occurrence in the trial, so repeated epochs stay
//! independent; a replayed run needs no upstream and no key and reproduces the recorded calls.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use gauntlet_model::{Event, FaultKind, ToolError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::recorder::ModelCallRecorder;
use gauntlet_process::net::new_token;

pub use gauntlet_model::Price;

/// Where responses come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// From the upstream.
    Live,
    /// From the upstream, and written to this cassette.
    Record(PathBuf),
    /// From this cassette only; no upstream, no key.
    Replay(PathBuf),
}

/// How to run the gateway.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The upstream base URL (`https://api.example.com/v1`); not needed to replay.
    pub upstream: Option<String>,
    /// The upstream API key (never shown to agents).
    pub api_key: Option<String>,
    /// Live, record or replay.
    pub mode: Mode,
    /// Prices by model name.
    pub prices: BTreeMap<String, Price>,
}

/// The cassette format this gauntlet writes and reads. Each entry carries it; an entry without
/// one is from before cassettes had a version, which is this one.
pub const CASSETTE_VERSION: u32 = 1;

fn cassette_version() -> u32 {
    CASSETTE_VERSION
}

/// Why the gateway cannot start or finish.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The cassette to replay cannot be read or is not a cassette of this version.
    #[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Cassette {
        /// The cassette file.
        path: PathBuf,
        /// The line at fault.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// Live or recording without an upstream.
    #[error("the gateway needs an upstream (--gateway-upstream) unless it replays a cassette")]
    NoUpstream,
    /// The loopback listener or the cassette being written failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl gauntlet_model::Classified for GatewayError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        match self {
            GatewayError::Cassette { .. } | GatewayError::NoUpstream => {
                gauntlet_model::ErrorKind::InvalidInput
            }
            GatewayError::Io(_) => gauntlet_model::ErrorKind::Harness,
        }
    }
}

/// Why a judge's call through the gateway failed.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeCallError {
    /// What happened.
    pub message: String,
    /// Whether trying again may help.
    pub retryable: bool,
    /// The upstream's HTTP status, when it answered.
    pub status: Option<u16>,
}

/// One recorded response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CassetteEntry {
    /// The cassette format version ([`CASSETTE_VERSION`]).
    #[serde(default = "cassette_version")]
    pub format_version: u32,
    /// The case.
    pub case_id: String,
    /// The epoch.
    pub epoch: u32,
    /// SHA-256 of the request body's canonical JSON.
    pub request_hash: String,
    /// Which occurrence of that request in the trial (0, 1, ...).
    pub occurrence: usize,
    /// The upstream's HTTP status.
    pub status: u16,
    /// The JSON body (non-streaming).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// The SSE `data:` payloads, in order (streaming).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<String>,
    /// Latency as recorded, in milliseconds.
    pub latency_ms: f64,
    /// Time to first token as recorded (streaming).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
}

struct Slot {
    env: Arc<dyn ModelCallRecorder>,
    case_id: String,
    epoch: u32,
    seen: HashMap<String, usize>,
    /// The calls are not the agent's (the simulated user's, or a judge's): no model-call
    /// fault hits them.
    simulated_user: bool,
}

struct Shared {
    cfg: GatewayConfig,
    client: reqwest::Client,
    slots: Mutex<HashMap<String, Slot>>,
    replay: HashMap<(String, u32, String, usize), CassetteEntry>,
    recorded: Mutex<Vec<CassetteEntry>>,
}

/// A running gateway.
pub struct Gateway {
    shared: Arc<Shared>,
    addr: SocketAddr,
    cancel: CancellationToken,
    task: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// A trial's registration; unregisters when dropped.
pub struct TrialGateway {
    shared: Arc<Shared>,
    /// The base URL the agent uses (`OPENAI_BASE_URL`).
    pub base_url: String,
    /// The key the agent sends (`OPENAI_API_KEY`); valid for this trial only.
    pub key: String,
}

impl Drop for TrialGateway {
    fn drop(&mut self) {
        if let Ok(mut slots) = self.shared.slots.lock() {
            slots.remove(&self.key);
        }
    }
}

fn canonical_hash(body: &Value) -> String {
    gauntlet_model::digest::sha256_hex(gauntlet_model::path::canonical_json(body).as_bytes())
}

impl Gateway {
    /// Starts the gateway on a loopback port; loads the cassette to replay, if any.
    pub async fn start(cfg: GatewayConfig) -> Result<Gateway, GatewayError> {
        let mut replay = HashMap::new();
        if let Mode::Replay(path) = &cfg.mode {
            let bad = |line: Option<usize>, message: String| GatewayError::Cassette {
                path: path.clone(),
                line,
                message,
            };
            let text = std::fs::read_to_string(path).map_err(|e| bad(None, e.to_string()))?;
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let e: CassetteEntry =
                    serde_json::from_str(line).map_err(|err| bad(Some(i + 1), err.to_string()))?;
                if e.format_version != CASSETTE_VERSION {
                    return Err(bad(
                        Some(i + 1),
                        format!(
                            "cassette format version {} is not supported (this gauntlet reads \
                             {CASSETTE_VERSION}): record it again with --record-cassette",
                            e.format_version
                        ),
                    ));
                }
                replay.insert(
                    (
                        e.case_id.clone(),
                        e.epoch,
                        e.request_hash.clone(),
                        e.occurrence,
                    ),
                    e,
                );
            }
        } else if cfg.upstream.is_none() {
            return Err(GatewayError::NoUpstream);
        }
        let shared = Arc::new(Shared {
            client: reqwest::Client::new(),
            cfg,
            slots: Mutex::new(HashMap::new()),
            replay,
            recorded: Mutex::new(Vec::new()),
        });
        let router = axum::Router::new()
            .route(
                "/t/{key}/v1/chat/completions",
                axum::routing::post(completions),
            )
            .with_state(Arc::clone(&shared));
        let cancel = CancellationToken::new();
        let (addr, task) = gauntlet_process::net::spawn_loopback(
            "127.0.0.1:0".parse().expect("valid address"),
            router,
            cancel.clone(),
        )
        .await?;
        Ok(Gateway {
            shared,
            addr,
            cancel,
            task: tokio::sync::Mutex::new(Some(task)),
        })
    }

    /// The gateway's HTTP client (pooled), for the harness's own calls through the gateway.
    pub(crate) fn client(&self) -> reqwest::Client {
        self.shared.client.clone()
    }

    /// Registers a trial: model calls under the returned key are recorded into `env`.
    pub fn register(
        &self,
        env: Arc<dyn ModelCallRecorder>,
        case_id: &str,
        epoch: u32,
    ) -> TrialGateway {
        self.register_as(env, case_id, epoch, false)
    }

    /// Registers a trial's simulated user: its model calls are recorded into `env` marked as
    /// the user's, and recorded to and replayed from the cassette like the agent's.
    pub fn register_user(
        &self,
        env: Arc<dyn ModelCallRecorder>,
        case_id: &str,
        epoch: u32,
    ) -> TrialGateway {
        self.register_as(env, case_id, epoch, true)
    }

    /// Registers an LLM judge's calls on a trial: recorded into `env` (the judge's own record,
    /// not the trial's trajectory), written to and replayed from the cassette, never hit by the
    /// trial's model-call faults.
    pub fn register_judge(
        &self,
        env: Arc<dyn ModelCallRecorder>,
        case_id: &str,
        epoch: u32,
    ) -> TrialGateway {
        self.register_as(env, case_id, epoch, true)
    }

    fn register_as(
        &self,
        env: Arc<dyn ModelCallRecorder>,
        case_id: &str,
        epoch: u32,
        simulated_user: bool,
    ) -> TrialGateway {
        let key = new_token();
        if let Ok(mut slots) = self.shared.slots.lock() {
            slots.insert(
                key.clone(),
                Slot {
                    env,
                    case_id: case_id.to_owned(),
                    epoch,
                    seen: HashMap::new(),
                    simulated_user,
                },
            );
        }
        TrialGateway {
            shared: Arc::clone(&self.shared),
            base_url: format!("http://{}/t/{key}/v1", self.addr),
            key,
        }
    }

    /// Sends an LLM judge's chat request through the gateway on behalf of a trial: recorded into
    /// `env` (the judge's own record), to and from the cassette like every call. The response
    /// body on success; the error's text otherwise (`retryable` when a later attempt may do
    /// better: 429, 5xx, a connection failure).
    pub async fn judge_call(
        &self,
        env: Arc<dyn ModelCallRecorder>,
        case_id: &str,
        epoch: u32,
        request: &Value,
    ) -> Result<Value, JudgeCallError> {
        let trial = self.register_judge(env, case_id, epoch);
        // A client per call: judges run on several runtimes (one per scoring thread), and a
        // pooled connection belongs to the runtime that opened it.
        let client = reqwest::Client::new();
        let response = client
            .post(format!("{}/chat/completions", trial.base_url))
            .bearer_auth(&trial.key)
            .json(request)
            .send()
            .await
            .map_err(|e| JudgeCallError {
                message: format!("the judge's model call failed: {e}"),
                retryable: true,
                status: None,
            })?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|e| JudgeCallError {
            message: format!("the judge's model answered with no JSON body: {e}"),
            retryable: status.is_server_error(),
            status: Some(status.as_u16()),
        })?;
        if !status.is_success() {
            return Err(JudgeCallError {
                message: format!(
                    "the judge's model answered {status}: {}",
                    body["error"]["message"].as_str().unwrap_or("no message")
                ),
                retryable: status.as_u16() == 429 || status.is_server_error(),
                status: Some(status.as_u16()),
            });
        }
        Ok(body)
    }

    /// Stops the gateway and writes the cassette it recorded (sorted, one entry per line).
    pub async fn shutdown(&self) -> std::io::Result<()> {
        self.cancel.cancel();
        if let Some(task) = self.task.lock().await.take() {
            let _ = task.await;
        }
        if let Mode::Record(path) = &self.shared.cfg.mode {
            let mut entries = self
                .shared
                .recorded
                .lock()
                .map(|e| e.clone())
                .unwrap_or_default();
            entries.sort_by(|a, b| {
                (&a.case_id, a.epoch, a.occurrence, &a.request_hash).cmp(&(
                    &b.case_id,
                    b.epoch,
                    b.occurrence,
                    &b.request_hash,
                ))
            });
            let mut text = String::new();
            for e in entries {
                text.push_str(&serde_json::to_string(&e).map_err(std::io::Error::other)?);
                text.push('\n');
            }
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, text)?;
        }
        Ok(())
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"message": message, "type": "gauntlet_gateway"}})),
    )
        .into_response()
}

/// The trial a model call belongs to, and when on its clock the call came.
struct Caller {
    env: Arc<dyn ModelCallRecorder>,
    simulated_user: bool,
    at_ms: f64,
}

/// What the caller got instead of an answer: the error, and the fault if it was injected.
type Failure = (ToolError, Option<FaultKind>);

/// The error of an upstream (or recorded) response with a failing status.
fn upstream_failure(status: u16, body: Option<&Value>) -> Option<Failure> {
    (!(200..300).contains(&status)).then(|| {
        let message = body
            .and_then(|b| b["error"]["message"].as_str())
            .unwrap_or("the model endpoint failed")
            .to_owned();
        let e = ToolError {
            status,
            message,
            retry_after_s: None,
        };
        (e, None)
    })
}

/// The response of an injected fault, shaped as OpenAI's API errors (with `retry-after` and
/// `retry-after-ms` on a 429, which OpenAI's SDKs honour).
fn fault_response(e: &ToolError) -> Response {
    let kind = match e.status {
        429 => "rate_limit_error",
        504 => "timeout",
        _ => "server_error",
    };
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let mut response = (
        status,
        axum::Json(json!({"error": {"message": e.message, "type": kind, "code": null}})),
    )
        .into_response();
    if let Some(s) = e.retry_after_s {
        let headers = response.headers_mut();
        for (name, value) in [
            ("retry-after", format!("{}", s.ceil() as u64)),
            ("retry-after-ms", format!("{}", (s * 1000.0).round() as u64)),
        ] {
            if let Ok(v) = axum::http::HeaderValue::from_str(&value) {
                headers.insert(name, v);
            }
        }
    }
    response
}

/// Records a model call into the trial.
fn record_call(
    shared: &Shared,
    caller: &Caller,
    model: &str,
    usage: Option<&Value>,
    latency_ms: f64,
    ttft_ms: Option<f64>,
    failure: Option<Failure>,
) {
    let tokens = |k: &str| {
        usage
            .and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let (prompt, completion) = (tokens("prompt_tokens"), tokens("completion_tokens"));
    let price = shared.cfg.prices.get(model).copied().unwrap_or_default();
    let cost = prompt as f64 / 1000.0 * price.prompt_eur_per_1k
        + completion as f64 / 1000.0 * price.completion_eur_per_1k;
    caller.env.record(Event::ModelCall {
        model: model.to_owned(),
        prompt_tokens: prompt,
        completion_tokens: completion,
        cost_eur: cost,
        latency_ms,
        ttft_ms,
        simulated_user: caller.simulated_user,
        at_ms: Some(caller.at_ms),
        fault: failure.as_ref().and_then(|f| f.1),
        error: failure.map(|f| f.0),
    });
}

fn sse_body(chunks: &[String]) -> Body {
    let mut text = String::new();
    for c in chunks {
        text.push_str("data: ");
        text.push_str(c);
        text.push_str("\n\n");
    }
    Body::from(text)
}

async fn completions(
    State(shared): State<Arc<Shared>>,
    Path(key): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let auth_ok = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v == format!("Bearer {key}"));
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "the request body is not JSON");
    };
    let hash = canonical_hash(&request);
    let slot = shared.slots.lock().ok().and_then(|slots| {
        slots.get(&key).map(|s| {
            let caller = Caller {
                env: s.env.clone(),
                simulated_user: s.simulated_user,
                at_ms: 0.0,
            };
            (caller, s.case_id.clone(), s.epoch)
        })
    });
    let (Some((mut caller, case_id, epoch)), true) = (slot, auth_ok) else {
        return error(StatusCode::UNAUTHORIZED, "unknown trial key");
    };
    let stream = request
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_owned();
    // An injected fault answers before the upstream (or the cassette) is asked, and does not
    // count as an occurrence: a cassette recorded without faults replays under them.
    caller.at_ms = caller.env.now_ms();
    let fault = if caller.simulated_user {
        None
    } else {
        caller.env.model_call_fault()
    };
    if let Some((kind, e)) = fault {
        let response = fault_response(&e);
        record_call(
            &shared,
            &caller,
            &model,
            None,
            0.0,
            None,
            Some((e, Some(kind))),
        );
        return response;
    }
    let occurrence = shared
        .slots
        .lock()
        .ok()
        .and_then(|mut slots| {
            let n = slots.get_mut(&key)?.seen.entry(hash.clone()).or_default();
            *n += 1;
            Some(*n - 1)
        })
        .unwrap_or(0);
    if let Mode::Replay(_) = shared.cfg.mode {
        let Some(e) = shared
            .replay
            .get(&(case_id.clone(), epoch, hash.clone(), occurrence))
        else {
            return error(
                StatusCode::BAD_GATEWAY,
                &format!(
                    "no cassette entry for this request (case {case_id}, epoch {epoch}, occurrence {occurrence})"
                ),
            );
        };
        let usage = e
            .body
            .as_ref()
            .and_then(|b| b.get("usage"))
            .cloned()
            .or_else(|| usage_of_chunks(&e.chunks));
        record_call(
            &shared,
            &caller,
            &model,
            usage.as_ref(),
            e.latency_ms,
            e.ttft_ms,
            upstream_failure(e.status, e.body.as_ref()),
        );
        let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::OK);
        return if e.chunks.is_empty() {
            (status, axum::Json(e.body.clone().unwrap_or(Value::Null))).into_response()
        } else {
            Response::builder()
                .status(status)
                .header("content-type", "text/event-stream")
                .body(sse_body(&e.chunks))
                .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "bad response"))
        };
    }
    let upstream = shared.cfg.upstream.clone().unwrap_or_default();
    let mut req = shared
        .client
        .post(format!(
            "{}/chat/completions",
            upstream.trim_end_matches('/')
        ))
        .json(&request);
    if let Some(k) = &shared.cfg.api_key {
        req = req.bearer_auth(k);
    }
    let started = Instant::now();
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_GATEWAY,
                &format!("the upstream failed: {e}"),
            );
        }
    };
    let status = resp.status().as_u16();
    let mut entry = CassetteEntry {
        format_version: CASSETTE_VERSION,
        case_id,
        epoch,
        request_hash: hash,
        occurrence,
        status,
        body: None,
        chunks: Vec::new(),
        latency_ms: 0.0,
        ttft_ms: None,
    };
    if !stream {
        let bytes = resp.bytes().await.unwrap_or_default();
        entry.latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let model = value
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(&model)
            .to_owned();
        record_call(
            &shared,
            &caller,
            &model,
            value.get("usage"),
            entry.latency_ms,
            None,
            upstream_failure(status, Some(&value)),
        );
        entry.body = Some(value);
        keep(&shared, entry);
        return Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(bytes))
            .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "bad response"));
    }
    // Streaming: pass each chunk on as it comes, and keep them for the record.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    let shared2 = Arc::clone(&shared);
    tokio::spawn(async move {
        let mut upstream = resp.bytes_stream();
        let mut buffer = String::new();
        let mut first: Option<f64> = None;
        while let Some(part) = upstream.next().await {
            let Ok(bytes) = part else { break };
            if first.is_none() {
                first = Some(started.elapsed().as_secs_f64() * 1000.0);
            }
            buffer.push_str(&String::from_utf8_lossy(&bytes));
            while let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
                for line in event.lines() {
                    if let Some(data) = line.strip_prefix("data:") {
                        entry.chunks.push(data.trim().to_owned());
                    }
                }
            }
            if tx.send(Ok(bytes)).await.is_err() {
                break;
            }
        }
        entry.latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        entry.ttft_ms = first;
        let usage = usage_of_chunks(&entry.chunks);
        let model = entry
            .chunks
            .iter()
            .find_map(|c| {
                serde_json::from_str::<Value>(c)
                    .ok()
                    .and_then(|v| v.get("model").and_then(Value::as_str).map(str::to_owned))
            })
            .unwrap_or(model);
        record_call(
            &shared2,
            &caller,
            &model,
            usage.as_ref(),
            entry.latency_ms,
            entry.ttft_ms,
            upstream_failure(status, None),
        );
        keep(&shared2, entry);
    });
    let stream = tokio_stream_from(rx);
    Response::builder()
        .status(status)
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "bad response"))
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

fn keep(shared: &Shared, entry: CassetteEntry) {
    if let (Mode::Record(_), Ok(mut rec)) = (&shared.cfg.mode, shared.recorded.lock()) {
        rec.push(entry);
    }
}

/// The `usage` object of a stream (sent in its last chunk when `stream_options.include_usage`).
fn usage_of_chunks(chunks: &[String]) -> Option<Value> {
    chunks.iter().rev().find_map(|c| {
        serde_json::from_str::<Value>(c)
            .ok()
            .and_then(|v| v.get("usage").filter(|u| u.is_object()).cloned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaying(text: &str) -> (tempfile::TempDir, GatewayConfig) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("cassette.jsonl");
        std::fs::write(&path, text).unwrap();
        let cfg = GatewayConfig {
            upstream: None,
            api_key: None,
            mode: Mode::Replay(path),
            prices: BTreeMap::new(),
        };
        (tmp, cfg)
    }

    const ENTRY: &str = r#"{"case_id":"c","epoch":0,"request_hash":"h","occurrence":0,"status":200,"body":{},"latency_ms":1.0}"#;

    #[tokio::test]
    async fn a_cassette_of_another_version_is_refused_with_its_line_and_the_remedy() {
        let v2 = ENTRY.replacen('{', r#"{"format_version":2,"#, 1);
        let (_tmp, cfg) = replaying(&format!("{ENTRY}\n{v2}\n"));
        let Err(e) = Gateway::start(cfg).await else {
            panic!("a version 2 cassette was accepted");
        };
        let message = e.to_string();
        assert!(message.contains("cassette.jsonl:2:"), "{message}");
        assert!(
            message.contains("record it again with --record-cassette"),
            "{message}"
        );
        assert_eq!(
            gauntlet_model::Classified::kind(&e),
            gauntlet_model::ErrorKind::InvalidInput
        );
    }

    #[tokio::test]
    async fn a_cassette_from_before_versions_replays_as_version_1() {
        let (_tmp, cfg) = replaying(&format!("{ENTRY}\n"));
        let gateway = Gateway::start(cfg).await.unwrap();
        assert_eq!(gateway.shared.replay.len(), 1);
        gateway.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn live_without_an_upstream_is_the_users_mistake() {
        let cfg = GatewayConfig {
            upstream: None,
            api_key: None,
            mode: Mode::Live,
            prices: BTreeMap::new(),
        };
        let Err(e) = Gateway::start(cfg).await else {
            panic!("started without an upstream");
        };
        assert!(matches!(e, GatewayError::NoUpstream));
    }
}
