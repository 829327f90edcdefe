//! Custom evaluators: an external command that reads one trial as JSON on stdin and writes its
//! scores as JSON on stdout, or a JavaScript function that takes the same JSON and returns the
//! same JSON, run in the world handlers' sandbox (no clock, randomness, files or network).
//!
//! Input: `{"case": Case, "trial": {case_id, epoch, trajectory, initial_state, final_state},
//! "scores": [Score]}`. Output: `{"scores": [{"name", "score", "passed", "value"?, "severity"?,
//! "dimension"?, "details"?}]}`. A command that fails, times out or writes something else gives
//! a failed score `custom:NAME` that says why, and the trial ends with status `error` (a harness
//! error: an evaluator that cannot judge is not a verdict on the agent); the run goes on.

use std::process::Stdio;
use std::time::Duration;

use gauntlet_model::{Dimension, Score, Severity};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

/// A custom evaluator as configured in `gauntlet.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomEvaluator {
    /// Its name (failures are reported as `custom:NAME`).
    pub name: String,
    /// What runs.
    pub runs: CustomKind,
    /// Seconds before it is stopped (10 by default).
    #[serde(default)]
    pub timeout_s: Option<f64>,
}

/// How a custom evaluator runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum CustomKind {
    /// A command, run with `sh -c` in the suite folder.
    Command(String),
    /// A JavaScript function of a script.
    Script {
        /// The file (for messages).
        file: String,
        /// Its source.
        source: String,
        /// The function.
        function: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Output {
    scores: Vec<OutputScore>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputScore {
    name: String,
    score: f64,
    passed: bool,
    #[serde(default)]
    value: Option<f64>,
    #[serde(default)]
    severity: Option<Severity>,
    #[serde(default)]
    dimension: Option<Dimension>,
    #[serde(default)]
    details: Value,
}

/// The failed score `custom:NAME` of an evaluator that could not judge a trial, saying why.
pub fn failure(name: &str, why: String) -> Score {
    Score {
        name: format!("custom:{name}"),
        dimension: Dimension::Outcome,
        value: 0.0,
        score: 0.0,
        passed: false,
        severity: Severity::Error,
        details: json!({"error": why}),
        events: Vec::new(),
        reason: None,
    }
}

/// Why a custom evaluator could not judge a trial: the harness's failure (the trial is an
/// `error`), never a verdict on the agent.
#[derive(Debug, thiserror::Error)]
pub enum CustomError {
    /// The JavaScript function failed (its message names the file and line).
    #[error("{0}")]
    Script(#[source] gauntlet_world::ScriptError),
    /// The JavaScript function's thread panicked.
    #[error("the script panicked")]
    Panicked,
    /// The command could not start.
    #[error("cannot start `{command}`: {source}")]
    Start {
        /// The command.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for the command failed.
    #[error("failed to run: {0}")]
    Run(#[source] std::io::Error),
    /// The command ran past its time limit.
    #[error("timed out after {0:?}")]
    TimedOut(Duration),
    /// The command exited with a failure.
    #[error("exited with {status}: {stderr}")]
    Exited {
        /// How it exited.
        status: std::process::ExitStatus,
        /// What it said on standard error.
        stderr: String,
    },
    /// The command's output is not JSON.
    #[error("wrote no JSON ({0}); expected {{\"scores\": [{{\"name\", \"score\", \"passed\"}}]}}")]
    NotJson(#[source] serde_json::Error),
    /// The output is JSON but not scores.
    #[error(
        "gave no valid scores ({0}); expected {{\"scores\": [{{\"name\", \"score\", \"passed\"}}]}}"
    )]
    NotScores(#[source] serde_json::Error),
}

impl gauntlet_model::Classified for CustomError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::Harness
    }
}

/// Runs one custom evaluator on one trial's input.
///
/// An evaluator that cannot judge the trial (it fails to start, breaks, times out or writes no
/// scores) is the harness's failure, not the agent's: the reason comes back as the error, and
/// the trial ends with status `error` ([`failure`] is the score that shows it).
pub async fn run_custom(
    ev: &CustomEvaluator,
    dir: &std::path::Path,
    input: &Value,
) -> Result<Vec<Score>, CustomError> {
    let timeout = Duration::from_secs_f64(ev.timeout_s.unwrap_or(10.0).max(0.1));
    let command = match &ev.runs {
        CustomKind::Command(c) => c,
        CustomKind::Script {
            file,
            source,
            function,
        } => {
            let (file, source, function, input) = (
                file.clone(),
                source.clone(),
                function.clone(),
                input.clone(),
            );
            let returned = tokio::task::spawn_blocking(move || {
                gauntlet_world::call_function(&file, &source, &function, &input, timeout)
            })
            .await;
            return match returned {
                Ok(Ok(v)) => scores_of(v),
                Ok(Err(e)) => Err(CustomError::Script(e)),
                Err(_) => Err(CustomError::Panicked),
            };
        }
    };
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(source) => {
            return Err(CustomError::Start {
                command: command.clone(),
                source,
            });
        }
    };
    let body = input.to_string();
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input just closes the pipe; that is its business.
        let _ = stdin.write_all(body.as_bytes()).await;
    }
    let out = match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => return Err(CustomError::Run(e)),
        Err(_) => return Err(CustomError::TimedOut(timeout)),
    };
    if !out.status.success() {
        return Err(CustomError::Exited {
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    match serde_json::from_slice::<Value>(&out.stdout) {
        Ok(v) => scores_of(v),
        Err(e) => Err(CustomError::NotJson(e)),
    }
}

/// The scores an evaluator gave, or why they are not scores.
fn scores_of(v: Value) -> Result<Vec<Score>, CustomError> {
    match serde_json::from_value::<Output>(v) {
        Ok(o) => Ok(o
            .scores
            .into_iter()
            .map(|s| Score {
                name: s.name,
                dimension: s.dimension.unwrap_or(Dimension::Outcome),
                value: s.value.unwrap_or(s.score),
                score: s.score.clamp(0.0, 1.0),
                passed: s.passed,
                severity: s.severity.unwrap_or(Severity::Error),
                details: s.details,
                events: Vec::new(),
                reason: None,
            })
            .collect()),
        Err(e) => Err(CustomError::NotScores(e)),
    }
}
