//! `gauntlet view [DIR...]`: the web viewer over runs and lakes, until Ctrl-C or SIGTERM.

use std::path::PathBuf;

use gauntlet_view::{Settings, start};

use crate::exit::{ExpectedError, GATES_PASSED};
use crate::shared::{announce_and_wait, random_hex, server_runtime};

/// Browse runs in a local web page: suites and their trends, a run's gates, metrics and
/// trials, trajectories, two runs compared, labelling, the trace lake.
///
/// Examples:
///   gauntlet view
///   gauntlet view examples/incident-desk lake/ --listen 127.0.0.1:8765
///
/// Looks in each DIR (default: the current folder), its .gauntlet/runs, its subfolders and
/// theirs, and the folders the run indexes there list; a lake is a folder with a traces/
/// table (gauntlet online --lake). Runs are found again on each visit; a run still going
/// updates as its trials finish. Prints one JSON line on start: {"url": ..., "token": ...};
/// open the URL (it carries the token; every request needs it, as ?token= or
/// `Authorization: Bearer TOKEN`). The JSON API under /api/ is in the reference. Each run
/// gets view-index.json and view-summary.json beside its trials, written once, so it opens
/// fast the next time. Serves until Ctrl-C or SIGTERM.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Folders to look for runs and lakes in (a run id or name in the index of the suite in the
    /// current folder stands for its run's folder).
    #[arg(default_value = ".")]
    pub dirs: Vec<PathBuf>,
    /// Where to listen; loopback unless you say otherwise (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8765")]
    pub listen: std::net::SocketAddr,
    /// The label file the labelling page writes, as `gauntlet calibrate --labels` reads it
    /// (default: the first DIR's .gauntlet/labels.jsonl).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// The token requests must carry (default: a random one; or GAUNTLET_VIEW_TOKEN).
    #[arg(long)]
    pub token: Option<String>,
}

pub fn view(mut args: Args) -> Result<i32, ExpectedError> {
    // A bare run id or name stands for its run's folder.
    for dir in &mut args.dirs {
        if !dir.exists() {
            *dir = crate::shared::run_folder(dir)?;
        }
    }
    for dir in &args.dirs {
        if !dir.is_dir() {
            return Err(ExpectedError::input(format!(
                "{}: not a folder (gauntlet view takes folders holding runs, suites or a lake)",
                dir.display()
            )));
        }
    }
    let token = match args
        .token
        .clone()
        .or_else(|| std::env::var("GAUNTLET_VIEW_TOKEN").ok())
    {
        Some(t) if !t.is_empty() => {
            if !gauntlet_view::token_is_usable(&t) {
                return Err(ExpectedError::input(
                    "--token (or GAUNTLET_VIEW_TOKEN): at least 16 characters, letters, digits, \
                     `-`, `_`, `.` or `~` (it travels in the URL)",
                ));
            }
            t
        }
        _ => random_hex()?,
    };
    let labels = args
        .labels
        .clone()
        .unwrap_or_else(|| args.dirs[0].join(".gauntlet").join("labels.jsonl"));
    let settings = Settings {
        dirs: args.dirs.clone(),
        labels,
        token: token.clone(),
        idle_timeout: gauntlet_view::IDLE_TIMEOUT,
    };
    let runtime = server_runtime()?;
    let served = runtime.block_on(async move {
        let running = start(args.listen, settings)
            .await
            .map_err(|e| ExpectedError::input(format!("cannot listen on {}: {e}", args.listen)))?;
        let line = serde_json::json!({
            "url": format!("http://{}/?token={token}", running.addr),
            "token": token,
        });
        announce_and_wait("view", running.addr, &line).await?;
        // Requests in flight get a moment to finish; a stop never waits on them for good.
        if tokio::time::timeout(STOP_GRACE, running.stop())
            .await
            .is_err()
        {
            eprintln!(
                "gauntlet view: requests still in flight after {} s; stopped anyway",
                STOP_GRACE.as_secs()
            );
        }
        Ok(GATES_PASSED)
    });
    // Dropping a runtime waits for its blocking reads, however long they take: not this one.
    runtime.shutdown_background();
    served
}

/// How long a stopping viewer lets requests in flight finish.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        view(self)
    }
}
