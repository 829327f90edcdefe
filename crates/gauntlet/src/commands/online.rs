//! `gauntlet online`: the receiver of production traces, until Ctrl-C or SIGTERM.

use std::sync::atomic::Ordering;
use std::time::Duration;

use gauntlet_online::judge::Judge;
use gauntlet_online::receiver::{Settings, start};

use crate::cli::OnlineArgs;
use crate::commands::import_otlp::load_policy;
use crate::commands::shared::{announce_and_wait, random_hex, server_runtime};
use crate::exit::{ExpectedError, GATES_PASSED};

pub fn online(args: OnlineArgs) -> Result<i32, ExpectedError> {
    let policy = load_policy(args.policy.as_deref())?;
    let key = match std::env::var("GAUNTLET_REDACTION_KEY") {
        Ok(k) if !k.is_empty() => k,
        _ => random_hex()?,
    };
    let judge = Judge::new(policy, &key).map_err(|e| {
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
