//! `gauntlet view [DIR...]`: the web viewer over runs and lakes, until Ctrl-C or SIGTERM.

use gauntlet_view::{Settings, start};

use crate::cli::ViewArgs;
use crate::commands::shared::{announce_and_wait, random_hex, server_runtime};
use crate::exit::{ExpectedError, GATES_PASSED};

pub fn view(mut args: ViewArgs) -> Result<i32, ExpectedError> {
    // A bare run id or name stands for its run's folder.
    for dir in &mut args.dirs {
        if !dir.exists() {
            *dir = crate::commands::shared::run_folder(dir)?;
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
