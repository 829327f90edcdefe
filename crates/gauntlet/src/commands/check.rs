//! `gauntlet check SUITE`.

use std::path::{Path, PathBuf};

use gauntlet_suite::{Diagnostic, Suite};

use crate::exit::{ExpectedError, GATES_PASSED, INVALID_INPUT};

/// Check a suite without running it; every problem as `file:line:col: message` (exit 2).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite folder (holding gauntlet.yaml) or its configuration file.
    pub suite: PathBuf,
    /// Print one JSON object: `{"ok", "suite", "cases", "worlds", "gates", "problems":
    /// [{"file", "line", "col", "message"}]}`.
    #[arg(long)]
    pub json: bool,
    /// Also audit the checks (`gauntlet audit`): exit 1 when a case's checks pass a wrong
    /// trajectory the suite does not accept, or when nothing could be audited.
    #[arg(long)]
    pub audit: bool,
    /// Do not play the references. By default each case's reference_trajectory is played
    /// in a fresh simulated world and judged by the case's own checks; one that fails is
    /// reported at the case with its reasons (exit 2).
    #[arg(long)]
    pub no_play: bool,
    /// Also play the references of cases in real-service worlds (a directory, a
    /// repository, a server started per trial; needs the service's command installed).
    #[arg(long, conflicts_with = "no_play")]
    pub play_services: bool,
}

/// Which references `check` plays.
#[derive(Debug, Clone, Copy)]
pub struct Play {
    /// Play at all (`--no-play` turns it off).
    pub references: bool,
    /// Also in real-service worlds (`--play-services`).
    pub services: bool,
}

impl Play {
    /// From the command's flags.
    pub fn new(no_play: bool, play_services: bool) -> Play {
        Play {
            references: !no_play,
            services: play_services,
        }
    }
}

/// Each reference that fails its own case, as a problem at the case's `reference_trajectory`.
fn failing_references(suite: &Suite, play: Play) -> Result<Vec<Diagnostic>, ExpectedError> {
    if !play.references {
        return Ok(Vec::new());
    }
    let runtime = crate::shared::runtime()?;
    let options = gauntlet_audit::PlayOptions {
        services: play.services,
        concurrency: None,
    };
    let failed = runtime.block_on(gauntlet_audit::play_references(suite, &options))?;
    Ok(failed
        .into_iter()
        .filter_map(|f| {
            let case = suite.cases.iter().find(|c| c.case.case_id == f.case_id)?;
            Some(case.diagnostic(
                "/reference_trajectory",
                format!(
                    "case `{}`: its reference_trajectory does not pass its own checks ({}): {} (`--no-play` skips this check)",
                    f.case_id,
                    f.status.as_str(),
                    f.reasons.join("; ")
                ),
            ))
        })
        .collect())
}

pub fn check(path: &Path, json: bool, audit: bool, play: Play) -> Result<i32, ExpectedError> {
    if json {
        return check_json(path, audit, play);
    }
    let suite = crate::shared::load_suite(path)?;
    let failing = failing_references(&suite, play)?;
    if !failing.is_empty() {
        return Err(ExpectedError::inputs(
            failing.iter().map(ToString::to_string).collect(),
        ));
    }
    crate::say!(
        "ok: suite `{}`: {} cases, {} worlds, {} gates and the built-in `{}`",
        suite.config.name,
        suite.cases.len(),
        suite.worlds.len(),
        suite.config.gates.len(),
        gauntlet_verdict::HARNESS_GATE,
    );
    for w in gauntlet_suite::warnings(&suite) {
        crate::note!(
            "{}:{}:{}: warning: {}",
            w.file.display(),
            w.line.max(1),
            w.col.max(1),
            w.message
        );
    }
    if audit {
        let report = crate::audits::audit_suite(&suite, 0, None)?;
        crate::say!("{}", crate::audits::render(&report));
        return Ok(crate::audits::verdict(&report));
    }
    Ok(GATES_PASSED)
}

/// `check --json`: one object whether the suite loads or not; the exit code as without.
fn check_json(path: &Path, audit: bool, play: Play) -> Result<i32, ExpectedError> {
    // A reference that fails its own case is a problem of the suite, as a bad file is.
    let loaded = match Suite::load(path) {
        Ok(suite) => {
            let failing = failing_references(&suite, play)?;
            if failing.is_empty() {
                Ok(suite)
            } else {
                Err(failing)
            }
        }
        Err(problems) => Err(problems),
    };
    let (value, code) = match loaded {
        Ok(suite) => {
            let mut value = serde_json::json!({
                "ok": true,
                "suite": suite.config.name,
                "cases": suite.cases.len(),
                "worlds": suite.worlds.len(),
                "gates": suite.gates.len(),
                "problems": [],
                "warnings": gauntlet_suite::warnings(&suite),
            });
            let mut code = GATES_PASSED;
            if audit {
                let report = crate::audits::audit_suite(&suite, 0, None)?;
                code = crate::audits::verdict(&report);
                value["audit"] = serde_json::to_value(&report).map_err(|e| {
                    ExpectedError::harness(format!("failed to serialize the audit: {e}"))
                })?;
            }
            (value, code)
        }
        Err(problems) => (
            serde_json::json!({"ok": false, "problems": problems}),
            INVALID_INPUT,
        ),
    };
    let text = serde_json::to_string_pretty(&value)
        .map_err(|e| ExpectedError::harness(format!("failed to serialize the check: {e}")))?;
    println!("{text}");
    Ok(code)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        check(
            &self.suite,
            self.json,
            self.audit,
            Play::new(self.no_play, self.play_services),
        )
    }
}
