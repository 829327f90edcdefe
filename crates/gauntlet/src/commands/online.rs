//! `gauntlet online`: the receiver of production traces, until Ctrl-C or SIGTERM.

use std::path::PathBuf;

use std::sync::atomic::Ordering;
use std::time::Duration;

use gauntlet_online::policy::PolicyCheck;
use gauntlet_online::receiver::{Settings, start};

use crate::exit::{ExpectedError, GATES_PASSED};
use crate::shared::load_policy;
use crate::shared::{announce_and_wait, random_hex, server_runtime};

/// Receive production traces (OTLP/HTTP), judge them, keep them anonymised in a Parquet lake.
///
/// Example:
///   gauntlet online --listen 127.0.0.1:4318 --lake lake/ --policy policy.yaml
///
/// Prints one JSON line on start: {"url": ..., "token": ..., "lake": ...}. Point an
/// OpenTelemetry exporter at URL/v1/traces with the header `Authorization: Bearer TOKEN`
/// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_HEADERS); protobuf or JSON,
/// gzip or not. Spans of a trace are assembled until its root span ends (or the policy's
/// idle_timeout_s passes), then the trace is judged by every evaluator that needs no case
/// and by the policy (tool schemas and kinds, forbidden tools, call, retry, token, cost and
/// latency budgets, canaries), then secrets and personal data are redacted (or hashed,
/// keyed by GAUNTLET_REDACTION_KEY) before it is written to LAKE/traces/day=DAY/*.parquet.
/// POST URL/v1/feedback takes {trace_id, rating, comment, edited_output, abandoned} into
/// LAKE/feedback/. GET URL/v1/status and URL/metrics report counts and drift alarms
/// (CUSUM on failure and tool-error rates, EWMA on duration and tokens, also logged).
/// Partitions older than the policy's retention_days (30) are deleted. Stops on Ctrl-C or
/// SIGTERM: open traces are judged as they stand and everything is written.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Where to listen; loopback unless you say otherwise (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:4318")]
    pub listen: std::net::SocketAddr,
    /// The lake folder (created).
    #[arg(long)]
    pub lake: PathBuf,
    /// The policy (YAML or JSON): tools, constraints, canaries, redaction, retention_days,
    /// idle_timeout_s. See docs/reference.md, "The online receiver".
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// The bearer token clients must send (default: GAUNTLET_ONLINE_TOKEN, else a random one,
    /// printed on start).
    #[arg(long)]
    pub token: Option<String>,
    /// Seconds between lake writes (also written every 1,000 traces and at stop).
    #[arg(long, default_value_t = 5.0)]
    pub flush_every: f64,
    /// Also send each trace's verdicts, as `gen_ai.evaluation.result` events on an `evaluate`
    /// span in the trace, to this OTLP/HTTP traces endpoint (e.g.
    /// http://collector:4318/v1/traces).
    #[arg(long, value_name = "URL")]
    pub export_to: Option<String>,
    /// A header for --export-to, NAME=VALUE (repeatable), e.g. 'authorization=Bearer T'.
    #[arg(long, value_name = "NAME=VALUE", requires = "export_to")]
    pub export_header: Vec<String>,
}

pub fn online(args: Args) -> Result<i32, ExpectedError> {
    let policy = load_policy(args.policy.as_deref())?;
    let key = match std::env::var("GAUNTLET_REDACTION_KEY") {
        Ok(k) if !k.is_empty() => k,
        _ => random_hex()?,
    };
    let judge = PolicyCheck::new(policy, &key).map_err(|e| {
        ExpectedError::input(format!(
            "{}: {e}",
            args.policy
                .as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ))
    })?;
    let token = match args
        .token
        .clone()
        .or_else(|| std::env::var("GAUNTLET_ONLINE_TOKEN").ok())
    {
        Some(t) if !t.is_empty() => t,
        _ => random_hex()?,
    };
    if !(args.flush_every.is_finite() && args.flush_every > 0.0) {
        return Err(ExpectedError::input(
            "--flush-every must be a positive number of seconds",
        ));
    }
    std::fs::create_dir_all(&args.lake)
        .map_err(|e| ExpectedError::input(format!("{}: {e}", args.lake.display())))?;
    let mut settings = Settings::new(args.lake.clone(), token.clone(), judge);
    settings.flush_every = Duration::from_secs_f64(args.flush_every);
    if let Some(url) = &args.export_to {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ExpectedError::input(format!(
                "--export-to {url}: an http:// or https:// OTLP traces endpoint"
            )));
        }
        let headers = args
            .export_header
            .iter()
            .map(|h| {
                h.split_once('=')
                    .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                    .ok_or_else(|| ExpectedError::input(format!("--export-header {h}: NAME=VALUE")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        settings.export_to = Some((url.clone(), headers));
    }
    server_runtime()?.block_on(async move {
        let running = start(args.listen, settings).await.map_err(|e| {
            ExpectedError::input(format!("cannot listen on {}: {e}", args.listen))
        })?;
        let line = serde_json::json!({
            "url": format!("http://{}", running.addr),
            "token": token,
            "lake": args.lake,
        });
        announce_and_wait("online", running.addr, &line).await?;
        crate::note!("gauntlet online: stopping: judging open traces and writing the lake");
        let counters = running.stop().await;
        let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        crate::note!(
            "gauntlet online: {} spans, {} traces judged, {} written to {}, {} feedback, {} payloads refused",
            g(&counters.spans),
            g(&counters.traces_judged),
            g(&counters.traces_written),
            args.lake.display(),
            g(&counters.feedback_written),
            g(&counters.rejected) + g(&counters.busy),
        );
        Ok(GATES_PASSED)
    })
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        online(self)
    }
}
