//! Each case's reference trajectory played in a fresh world and judged by the case's own
//! checks, as `gauntlet check` does before a run: a reference that fails its own case is a
//! mistake in the case (or the world), found where it is written rather than at `run`.

use std::collections::HashMap;
use std::sync::Arc;

use gauntlet_model::{RunEvent, Score, TrialStatus};
use gauntlet_runner::{RunOptions, Settings, run_trials};
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
            plans.insert(
                (t.case.case_id.clone(), 0),
                t.case.reference_trajectory.clone(),
            );
            order.push(t.case.case_id.clone());
        })
        .collect();
    if trials.is_empty() {
        return Ok(Vec::new());
    }
    let plan = crate::scripted_plan(suite, &settings, trials, options.concurrency)?;
    let mut failed: HashMap<String, FailedReference> = HashMap::new();
    // The references are the audit's epoch-0 plans.
    run_trials(plan, Arc::new(crate::MutantAgent { plans }), |mut event| {
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
