//! `gauntlet view`: a local web server over run folders, their index and the trace lake.
//!
//! Every route wants the token (`?token=` or `Authorization: Bearer`); the page is one
//! document with its script and style inline, allowed by hash under a strict Content Security
//! Policy, and nothing is loaded from anywhere else. Runs are found again on each listing; a
//! run's trials are paged from an offset index kept beside `trials.jsonl`, so a run of any size
//! opens without being read whole.
#![warn(missing_docs)]

mod cases;
mod catalog;
mod comparisons;
mod labels;
mod lake;
mod trials;
mod write;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

pub use catalog::{Catalog, SUMMARY_FILE};
pub use trials::{INDEX_FILE, TrialIndex};
pub use write::replace_file;

use crate::catalog::Run;
use crate::labels::{LabelFile, Posted};
use crate::trials::{Filter, entry_json, trials_file};

/// A request the viewer cannot answer.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The request is wrong (a filter, a label).
    #[error("{0}")]
    BadRequest(String),
    /// No such run, trial or lake.
    #[error("{0}")]
    NotFound(String),
    /// Reading a run or writing labels failed.
    #[error("{0}")]
    Io(String),
}

impl IntoResponse for ViewError {
    fn into_response(self) -> Response {
        let status = match self {
            ViewError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ViewError::NotFound(_) => StatusCode::NOT_FOUND,
            ViewError::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        (status, axum::Json(json!({"error": self.to_string()}))).into_response()
    }
}

/// Whether a token can guard the viewer: at least 16 characters a URL carries as they are
/// (letters, digits, `-`, `_`, `.`, `~`).
pub fn token_is_usable(token: &str) -> bool {
    token.len() >= 16
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'))
}

/// What the viewer serves.
pub struct Settings {
    /// The folders to look for runs and lakes in.
    pub dirs: Vec<PathBuf>,
    /// The label file the labelling page writes.
    pub labels: PathBuf,
    /// The token every request must carry.
    pub token: String,
    /// How long a connection may stay silent before it is closed ([`IDLE_TIMEOUT`]).
    pub idle_timeout: std::time::Duration,
}

struct Shared {
    /// Where the viewer listens: a request must name it, or a loopback name, as its `Host`.
    addr: SocketAddr,
    catalog: Catalog,
    labels: LabelFile,
    token: String,
    page: String,
    csp: String,
    /// `/api/compare`'s comparisons, once per pair.
    comparisons: comparisons::Comparisons,
    /// The suites whose cases the trajectory page shows beside their trials.
    cases: cases::Cases,
}

/// A viewer serving.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: CancellationToken,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// Stops serving, letting requests in flight finish.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.server.await;
    }
}

/// How long a connection may stay silent by default.
pub const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

const PAGE: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");

fn hash(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes()))
}

/// Binds `listen` and serves until [`Running::stop`].
pub async fn start(listen: SocketAddr, settings: Settings) -> std::io::Result<Running> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    // A client that sends nothing for this long (headers never finished, a connection left
    // idle) is disconnected: it holds no socket for ever and keeps no stop waiting.
    let listener = gauntlet_online::receiver::TimedListener::new(listener, settings.idle_timeout);
    // The trajectory's renderer is the HTML report's own (one implementation), then the page's.
    let script = format!("{}\n{SCRIPT}", gauntlet_report::TRANSCRIPT_SCRIPT);
    let style = format!("{STYLE}\n{}", gauntlet_report::TRANSCRIPT_STYLE);
    let page = PAGE
        .replace("/*STYLE*/", &style)
        .replace("/*SCRIPT*/", &script);
    let csp = format!(
        "default-src 'none'; script-src 'sha256-{}'; style-src 'sha256-{}'; img-src data:; \
         connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        hash(&script),
        hash(&style)
    );
    let shared = Arc::new(Shared {
        addr,
        catalog: Catalog::new(settings.dirs),
        labels: LabelFile::new(settings.labels),
        token: settings.token,
        page,
        csp,
        comparisons: comparisons::Comparisons::default(),
        cases: cases::Cases::default(),
    });
    let app = Router::new()
        .route("/", get(index))
        .route("/api/runs", get(runs))
        .route("/api/runs/{run_id}", get(run))
        .route("/api/runs/{run_id}/trials", get(trial_page))
        .route("/api/runs/{run_id}/trial", get(trial))
        .route("/api/compare", get(compare))
        .route("/api/labels", get(labels).post(put_label))
        .route("/api/lakes", get(lakes))
        .route("/api/lakes/candidates", get(candidates))
        .fallback(|| async { ViewError::NotFound("no such page".into()) })
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared);
    let stop = CancellationToken::new();
    let server = {
        let stop = stop.clone();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await
        })
    };
    Ok(Running { addr, stop, server })
}

/// A query string the route cannot read, as the API's JSON error.
fn bad_query(e: QueryRejection) -> ViewError {
    ViewError::BadRequest(e.body_text())
}

/// Equal in time whatever the first difference.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

fn token_of(req: &Request) -> Option<String> {
    if let Some(bearer) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        // The scheme is case-insensitive (RFC 7235): `bearer` is `Bearer`.
        .and_then(|(scheme, token)| scheme.eq_ignore_ascii_case("bearer").then_some(token))
    {
        return Some(bearer.trim().to_owned());
    }
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(req.uri()).ok()?;
    pairs
        .into_iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v)
}

/// Whether the request's `Host` names this viewer: a loopback name or address, or the address
/// it listens on. A page of another site whose name was rebound to 127.0.0.1 (DNS rebinding)
/// sends its own name and is refused, token or not. A viewer listening on every address
/// (`0.0.0.0`) cannot know the names it is reached by, and takes any.
fn host_is_ours(req: &Request, listen: SocketAddr) -> bool {
    if listen.ip().is_unspecified() {
        return true;
    }
    let Some(host) = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().host())
    else {
        // HTTP/1.0 without a Host names no other site.
        return true;
    };
    // The name without its port: `[::1]:8080`, `localhost:8080`, `127.0.0.1`.
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || ip == listen.ip())
}

/// Every route: the `Host`, the token, then headers that keep the page to itself.
async fn guard(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let authorised = token_of(&req).is_some_and(|t| same(&t, &s.token));
    let mut response = if !host_is_ours(&req, s.addr) {
        (
            StatusCode::FORBIDDEN,
            axum::Json(
                json!({"error": "this Host is not the viewer's (a page of another site \
                 reached it through its own name): open the URL gauntlet view printed"}),
            ),
        )
            .into_response()
    } else if authorised {
        next.run(req).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "the token is missing or wrong: open the URL gauntlet view printed"})),
        )
            .into_response()
    };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if let Ok(csp) = HeaderValue::from_str(&s.csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    response
}

async fn index(State(s): State<Arc<Shared>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        s.page.clone(),
    )
        .into_response()
}

/// Runs `work` on the blocking pool (it reads files) and answers with its JSON.
async fn blocking(
    work: impl FnOnce() -> Result<Value, ViewError> + Send + 'static,
) -> Result<axum::Json<Value>, ViewError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ViewError::Io(format!("the request failed: {e}")))?
        .map(axum::Json)
}

fn lock(run: &Mutex<Run>) -> std::sync::MutexGuard<'_, Run> {
    run.lock().unwrap_or_else(|p| p.into_inner())
}

/// The run `run_id`, or the newest run named so (`gauntlet run --name`): among the runs known
/// first, then among those a new scan finds.
fn find(s: &Shared, run_id: &str) -> Result<Arc<Mutex<Run>>, ViewError> {
    let named = || {
        s.catalog
            .runs()
            .into_iter()
            .filter_map(|run| {
                let key = {
                    let r = lock(&run);
                    (r.header.name.as_deref() == Some(run_id))
                        .then(|| (r.header.started_at.clone(), r.header.run_id.clone()))
                };
                key.map(|k| (k, run))
            })
            .max_by(|(a, _), (b, _)| a.cmp(b))
            .map(|(_, run)| run)
    };
    s.catalog
        .known(run_id)
        .or_else(named)
        .or_else(|| s.catalog.run(run_id))
        .or_else(named)
        .ok_or_else(|| {
            ViewError::NotFound(format!(
                "no run with the id or name `{run_id}` under the folders viewed"
            ))
        })
}

async fn runs(State(s): State<Arc<Shared>>) -> Result<axum::Json<Value>, ViewError> {
    blocking(move || {
        s.catalog.rescan();
        let mut out = Vec::new();
        for run in s.catalog.runs() {
            // A run that cannot be read is left out of the list, not the list's failure.
            if let Ok(listing) = lock(&run).listing() {
                out.push(listing);
            }
        }
        out.sort_by(|a, b| {
            b["started_at"]
                .as_str()
                .cmp(&a["started_at"].as_str())
                .then(b["run_id"].as_str().cmp(&a["run_id"].as_str()))
        });
        Ok(Value::Array(out))
    })
    .await
}

async fn run(
    State(s): State<Arc<Shared>>,
    axum::extract::Path(run_id): axum::extract::Path<String>,
) -> Result<axum::Json<Value>, ViewError> {
    blocking(move || {
        let run = find(&s, &run_id)?;
        let mut run = lock(&run);
        let mut out = run.listing()?;
        out["header"] = serde_json::to_value(&run.header).unwrap_or_default();
        let summary = run.summary()?.cloned();
        let index = run.index()?;
        let mut tags = std::collections::BTreeSet::new();
        let mut evaluators = std::collections::BTreeMap::<&str, u64>::new();
        let mut cases = std::collections::BTreeSet::new();
        for e in index.entries() {
            tags.extend(e.tags.iter().map(String::as_str));
            cases.insert(e.case_id.as_str());
            for f in &e.failed {
                *evaluators.entry(f.as_str()).or_default() += 1;
            }
        }
        out["filters"] = json!({
            "tags": tags,
            "evaluators": evaluators.keys().collect::<Vec<_>>(),
            "cases": cases.len(),
        });
        out["indexed"] = json!(index.entries().len());
        let segments = summary
            .as_ref()
            .and_then(|s| serde_json::from_value(s.segments.clone()).ok())
            .unwrap_or_default();
        let plots = gauntlet_report::run_plots(
            &segments,
            index.entries().iter().map(|e| gauntlet_report::PlotTrial {
                failed: e.failed.iter().map(String::as_str).collect(),
                error: e.status == gauntlet_model::TrialStatus::Error,
                tool_calls: e.tool_calls,
                duration_ms: e.duration_ms,
                cost_eur: e.cost_eur,
            }),
        );
        out["plots"] = plots
            .into_iter()
            .map(|(title, svg)| json!({"title": title, "svg": svg}))
            .collect();
        if let Some(s) = summary {
            for (k, v) in [
                ("gates", s.gates),
                ("rubric", s.rubric),
                ("evaluators", s.evaluators),
                ("segments", s.segments),
                ("flaky_cases", s.flaky_cases),
                ("judges", s.judges),
            ] {
                out[k] = v;
            }
        }
        Ok(out)
    })
    .await
}

#[derive(Deserialize)]
struct PageQuery {
    #[serde(default)]
    offset: usize,
    #[serde(default)]
    limit: Option<usize>,
    status: Option<String>,
    case: Option<String>,
    tag: Option<String>,
    evaluator: Option<String>,
    q: Option<String>,
}

async fn trial_page(
    State(s): State<Arc<Shared>>,
    axum::extract::Path(run_id): axum::extract::Path<String>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Result<axum::Json<Value>, ViewError> {
    let Query(q) = q.map_err(bad_query)?;
    blocking(move || {
        let run = find(&s, &run_id)?;
        let mut run = lock(&run);
        let live = run.summary()?.is_none();
        let index = run.index()?;
        let limit = q.limit.unwrap_or(50).min(1000);
        let filter = Filter {
            status: q.status,
            case: q.case,
            tag: q.tag,
            evaluator: q.evaluator,
            q: q.q,
        };
        let (total, page) = index.page(&filter, q.offset, limit)?;
        Ok(json!({
            "total": total,
            "offset": q.offset,
            "live": live,
            "trials": page.into_iter().map(entry_json).collect::<Vec<_>>(),
        }))
    })
    .await
}

#[derive(Deserialize)]
struct TrialQuery {
    case: String,
    epoch: u32,
}

async fn trial(
    State(s): State<Arc<Shared>>,
    axum::extract::Path(run_id): axum::extract::Path<String>,
    q: Result<Query<TrialQuery>, QueryRejection>,
) -> Result<axum::Json<Value>, ViewError> {
    let Query(q) = q.map_err(bad_query)?;
    blocking(move || {
        let run = find(&s, &run_id)?;
        let mut run = lock(&run);
        let path = trials_file(&run.dir);
        let (dir, header) = (run.dir.clone(), run.header.clone());
        let record = run
            .index()?
            .record(&path, &q.case, q.epoch)?
            .ok_or_else(|| {
                ViewError::NotFound(format!(
                    "run `{run_id}` has no trial {}#{}",
                    q.case, q.epoch
                ))
            })?;
        drop(run);
        // The record as stored, and the trial as a person reviews it: the transcript, the
        // verdicts failing first, the state diff and the case beside it.
        let review = gauntlet_report::review(&record);
        let mut out = serde_json::to_value(&record).map_err(|e| ViewError::Io(e.to_string()))?;
        let review = serde_json::to_value(&review).map_err(|e| ViewError::Io(e.to_string()))?;
        // Its keys beside the record's (`status`, `error`, `case_id` and `epoch` are the same).
        if let (Some(out), Value::Object(review)) = (out.as_object_mut(), review) {
            out.extend(review);
        }
        out["case"] = s.cases.panel(&dir, &header, &q.case).unwrap_or(Value::Null);
        out["run"] = json!({"run_id": header.run_id, "name": header.name, "suite": header.suite});
        Ok(out)
    })
    .await
}

#[derive(Deserialize)]
struct CompareQuery {
    a: String,
    b: String,
}

async fn compare(
    State(s): State<Arc<Shared>>,
    q: Result<Query<CompareQuery>, QueryRejection>,
) -> Result<axum::Json<Value>, ViewError> {
    let Query(q) = q.map_err(bad_query)?;
    blocking(move || {
        let dir = |id: &str| -> Result<PathBuf, ViewError> {
            let run = find(&s, id)?;
            let dir = lock(&run).dir.clone();
            if !dir.join("results.json").is_file() {
                return Err(ViewError::BadRequest(format!(
                    "run `{id}` has not finished: only finished runs compare"
                )));
            }
            Ok(dir)
        };
        let (da, db) = (dir(&q.a)?, dir(&q.b)?);
        s.comparisons
            .get(&da, &db, || {
                let read = |d: &PathBuf| gauntlet_store::read_results(d).map_err(|e| e.to_string());
                let (a, b) = (read(&da)?, read(&db)?);
                // The same seed as `gauntlet compare`, so both give the same figures.
                let c = gauntlet_verdict::compare(
                    &a,
                    &b,
                    a.header.seed ^ b.header.seed.rotate_left(32),
                );
                let mut out = serde_json::to_value(&c).map_err(|e| e.to_string())?;
                // The case × run matrix, flipped cases first, and the runs' names.
                out["matrix"] = Value::Array(comparisons::matrix(&a.trials, &b.trials, &c.flips));
                out["names"] = json!({"a": a.header.name, "b": b.header.name});
                Ok(out)
            })
            .map_err(ViewError::Io)
    })
    .await
}

async fn labels(State(s): State<Arc<Shared>>) -> Result<axum::Json<Value>, ViewError> {
    blocking(move || {
        Ok(json!({
            "file": s.labels.path().display().to_string(),
            "labels": s.labels.read()?,
        }))
    })
    .await
}

async fn put_label(
    State(s): State<Arc<Shared>>,
    body: Result<axum::Json<Posted>, axum::extract::rejection::JsonRejection>,
) -> Result<axum::Json<Value>, ViewError> {
    let axum::Json(posted) = body.map_err(|e| ViewError::BadRequest(e.body_text()))?;
    blocking(move || {
        let label = s.labels.put(posted)?;
        serde_json::to_value(label).map_err(|e| ViewError::Io(e.to_string()))
    })
    .await
}

async fn lakes(State(s): State<Arc<Shared>>) -> Result<axum::Json<Value>, ViewError> {
    blocking(move || {
        let found = s.catalog.lakes();
        let mut out = Vec::new();
        for (i, dir) in found.iter().enumerate() {
            out.push(
                json!({"lake": i, "dir": dir.display().to_string(), "days": lake::days(dir)?}),
            );
        }
        Ok(Value::Array(out))
    })
    .await
}

#[derive(Deserialize)]
struct CandidateQuery {
    lake: usize,
    day: String,
    #[serde(default)]
    limit: Option<usize>,
}

async fn candidates(
    State(s): State<Arc<Shared>>,
    q: Result<Query<CandidateQuery>, QueryRejection>,
) -> Result<axum::Json<Value>, ViewError> {
    let Query(q) = q.map_err(bad_query)?;
    blocking(move || {
        // Lakes are numbered as `/api/lakes` lists them, found again in the same order.
        let dir = s
            .catalog
            .lakes()
            .get(q.lake)
            .cloned()
            .ok_or_else(|| ViewError::NotFound(format!("no lake {}", q.lake)))?;
        Ok(Value::Array(lake::candidates(
            &dir,
            &q.day,
            q.limit.unwrap_or(100).min(1000),
        )?))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_connection_that_never_finishes_its_headers_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let running = start(
            "127.0.0.1:0".parse().unwrap(),
            Settings {
                dirs: vec![dir.path().to_owned()],
                labels: dir.path().join("labels.jsonl"),
                token: "0123456789abcdef".into(),
                idle_timeout: std::time::Duration::from_millis(200),
            },
        )
        .await
        .unwrap();
        let mut slow = tokio::net::TcpStream::connect(running.addr).await.unwrap();
        slow.write_all(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .unwrap();
        let mut buf = Vec::new();
        let closed = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            slow.read_to_end(&mut buf),
        )
        .await;
        assert!(closed.is_ok(), "the connection was left open");
        // The server still answers others, and stops.
        let mut ok = tokio::net::TcpStream::connect(running.addr).await.unwrap();
        ok.write_all(b"GET /api/runs?token=0123456789abcdef HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        ok.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        running.stop().await;
    }

    async fn ask(addr: SocketAddr, head: &str) -> String {
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        c.write_all(format!("{head}\r\nConnection: close\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        c.read_to_string(&mut answer).await.unwrap();
        answer
    }

    /// Issue 48: a page of another site rebound to 127.0.0.1 (DNS rebinding) is refused by its
    /// `Host`; `Authorization: bearer` is the `Bearer` scheme (RFC 7235).
    #[tokio::test]
    async fn another_sites_host_is_refused_and_the_bearer_scheme_is_case_insensitive() {
        let dir = tempfile::tempdir().unwrap();
        let running = start(
            "127.0.0.1:0".parse().unwrap(),
            Settings {
                dirs: vec![dir.path().to_owned()],
                labels: dir.path().join("labels.jsonl"),
                token: "0123456789abcdef".into(),
                idle_timeout: IDLE_TIMEOUT,
            },
        )
        .await
        .unwrap();
        let get = "GET /api/runs?token=0123456789abcdef HTTP/1.1\r\nHost: ";
        let port = running.addr.port();
        for host in [
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            "[::1]".to_owned(),
            "LOCALHOST".to_owned(),
        ] {
            let answer = ask(running.addr, &format!("{get}{host}")).await;
            assert!(answer.starts_with("HTTP/1.1 200"), "{host}: {answer}");
        }
        for host in ["evil.example", "evil.example:80", "127.0.0.1.evil.example"] {
            let answer = ask(running.addr, &format!("{get}{host}")).await;
            assert!(answer.starts_with("HTTP/1.1 403"), "{host}: {answer}");
        }
        for scheme in ["Bearer", "bearer", "BEARER"] {
            let answer = ask(
                running.addr,
                &format!(
                    "GET /api/runs HTTP/1.1\r\nHost: localhost\r\n\
                     Authorization: {scheme} 0123456789abcdef"
                ),
            )
            .await;
            assert!(answer.starts_with("HTTP/1.1 200"), "{scheme}: {answer}");
        }
        running.stop().await;
    }
}
