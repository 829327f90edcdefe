//! Each case's reference trajectory played in a fresh world and judged by the case's own
//! checks, as `gauntlet check` does before a run: a reference that fails its own case is a
//! mistake in the case (or the world), found where it is written rather than at `run`.

use std::collections::HashMap;
use std::sync::Arc;

use gauntlet_agent::{Agent, AgentError, AgentInput, AgentOutput, BoxFuture, SharedEnv};
use gauntlet_model::{ReferenceStep, RunEvent, Score, TrialStatus};
use gauntlet_runner::{RunOptions, RunPlan, Settings, Trials, run_trials};
use gauntlet_suite::Suite;

use crate::AuditError;

/// Which references to play.
#[derive(Debug, Clone, Default)]
pub struct PlayOptions {
    /// Also play cases of real-service worlds (a directory, a repository, a server made per
    /// trial): slower, and they need the service's command installed.
    pub services: bool,
    /// Trials at once (default: one a core).
    pub concurrency: Option<usize>,
}

/// A reference that did not pass its own case.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FailedReference {
    /// The case.
    pub case_id: String,
    /// The trial's status (`failed` or `error`).
    pub status: TrialStatus,
    /// Why, one line each: a harness error's message, or each failing score with its reason.
    pub reasons: Vec<String>,
}

/// Plays the reference of every case that has one (in simulated worlds, and in real-service
/// worlds when `options.services`), and returns those that do not pass, in suite order.
pub async fn play_references(
    suite: &Suite,
    options: &PlayOptions,
) -> Result<Vec<FailedReference>, AuditError> {
    let settings = Settings::resolve(
        suite,
        &RunOptions {
            agent: Some("reference".into()),
            seed: suite.config.seed.or(Some(0)),
            epochs: Some(1),
            ..RunOptions::default()
        },
        None,
        gauntlet_runner::now,
        || "check-references".to_owned(),
    )?;
    let cases = settings.cases(suite)?;
    let mut plans = HashMap::new();
    let mut order = Vec::new();
    let trials: Vec<_> = settings
        .trials(suite, &cases)
        .into_iter()
        .filter(|t| !t.case.reference_trajectory.is_empty())
        .filter(|t| options.services || t.world.spec().service.is_none())
        .inspect(|t| {
            plans.insert(t.case.case_id.clone(), t.case.reference_trajectory.clone());
            order.push(t.case.case_id.clone());
        })
        .collect();
    if trials.is_empty() {
        return Ok(Vec::new());
    }
    let plan = RunPlan {
        retry_errors: 0,
        header: settings.header(suite),
        already_done: 0,
        trials: Trials::of(trials),
        concurrency: options.concurrency.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
        }),
        trial_timeout: std::time::Duration::from_secs(60),
        custom: Arc::new(gauntlet_runner::plan::custom_evaluators(suite)?),
        persona: None,
        benchmark: suite.config.benchmark.clone().map(Arc::new),
        judges: None,
        services_sandbox: None,
        trial_events: false,
    };
    let mut failed: HashMap<String, FailedReference> = HashMap::new();
    run_trials(plan, Arc::new(Reference { plans }), |mut event| {
        event.settle();
        if let RunEvent::TrialFinished { record, .. } = event
            && record.status != TrialStatus::Passed
        {
            let mut reasons: Vec<String> = record.error.iter().cloned().collect();
            reasons.extend(record.scores.iter().filter(|s| s.fails_trial()).map(why));
            failed.insert(
                record.case_id.clone(),
                FailedReference {
                    case_id: record.case_id.clone(),
                    status: record.status,
                    reasons,
                },
            );
        }
    })
    .await;
    Ok(order.iter().filter_map(|id| failed.remove(id)).collect())
}

/// A failing score in one line: its reason, or its name and details when it has none.
fn why(s: &Score) -> String {
    match &s.reason {
        Some(r) => format!("{}: {r}", s.name),
        None if s.details.is_null() => s.name.clone(),
        None => format!("{}: {}", s.name, s.details),
    }
}

/// Plays each case's reference.
struct Reference {
    plans: HashMap<String, Vec<ReferenceStep>>,
}

impl Agent for Reference {
    fn run<'a>(
        &'a self,
        input: &'a AgentInput,
        env: SharedEnv,
    ) -> BoxFuture<'a, Result<AgentOutput, AgentError>> {
        Box::pin(async move {
            let plan = self
                .plans
                .get(&input.case_id)
                .map_or(&[][..], Vec::as_slice);
            gauntlet_agent::play(plan, env).await
        })
    }
}
