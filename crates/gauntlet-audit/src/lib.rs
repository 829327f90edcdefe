//! Tests of the tests: how much a suite's checks can be fooled. For every case with a reference
//! trajectory, wrong trajectories are derived from it ([`mutate`]) and each is played by a
//! scripted agent in a fresh world and judged by the case's evaluators, as a trial of a run
//! would be. A mutant *survives* when its trial still passes: the case's checks cannot tell it
//! from the reference. A survivor that ends in the reference's own final state with its own
//! answer is *equivalent* (nothing observable differs), not a hole, unless it skipped a question
//! or a confirmation: acting without asking is a hole whatever the end. A survivor the suite's
//! `audit.accept` names is *accepted*, with its reason. Deterministic for a seed.
#![warn(missing_docs)]

pub mod mutate;
mod references;

use std::collections::HashMap;
use std::sync::Arc;

use gauntlet_agent::{Agent, AgentError, AgentInput, AgentOutput, BoxFuture, SharedEnv};
use gauntlet_model::{ReferenceStep, RunEvent, TrialRecord, TrialStatus};
use gauntlet_runner::{RunOptions, RunPlan, Settings, TrialPlan, Trials, run_trials};
use gauntlet_suite::{AcceptedSurvivor, Suite};
use serde::Serialize;
use sha2::Digest;

pub use mutate::{Mutant, MutationKind, WorldView, mutants};
pub use references::{FailedReference, PlayOptions, play_references};

/// What to audit.
#[derive(Debug, Clone, Default)]
pub struct AuditOptions {
    /// Seeds the choices among records and values (and the trials' own seeds).
    pub seed: u64,
    /// Only cases whose id contains it.
    pub filter: Option<String>,
    /// Trials at once (default: one a core: scripted trials only compute, and each holds its
    /// world's state several times over while it is judged).
    pub concurrency: Option<usize>,
}

/// A mutant the case's checks did not kill.
#[derive(Debug, Clone, Serialize)]
pub struct Survivor {
    /// What was changed.
    pub mutation: String,
    /// The kind of change.
    pub kind: MutationKind,
}

/// A survivor the suite accepts on purpose (`audit.accept` in `gauntlet.yaml`).
#[derive(Debug, Clone, Serialize)]
pub struct Accepted {
    /// What was changed.
    pub mutation: String,
    /// The kind of change.
    pub kind: MutationKind,
    /// Why the suite accepts it.
    pub why: String,
}

/// An entry of `audit.accept` that matched no survivor of an audited case: the check it
/// excused has been tightened, or the mutation is named otherwise.
#[derive(Debug, Clone, Serialize)]
pub struct UnmatchedAccept {
    /// The case.
    pub case: String,
    /// The mutation as written.
    pub mutation: String,
}

/// One case's audit.
#[derive(Debug, Clone, Serialize)]
pub struct CaseAudit {
    /// The case.
    pub case_id: String,
    /// Mutants tried.
    pub mutants: usize,
    /// Mutants whose trial did not pass.
    pub killed: usize,
    /// Mutants that passed though something observable differs from the reference, or that
    /// skipped a question or a confirmation, and that the suite does not accept: holes.
    pub survivors: Vec<Survivor>,
    /// Survivors the suite accepts (`audit.accept`), with the reason: not holes.
    pub accepted: Vec<Accepted>,
    /// Mutants that passed with the reference's own final state and answer, having skipped no
    /// question and no confirmation.
    pub equivalent: Vec<Survivor>,
    /// Whether any survivor is a hole (accepted survivors are not).
    pub hackable: bool,
    /// Killed over mutants that are not equivalent (`null` when there are none).
    pub kill_rate: Option<f64>,
    /// Why the case was not audited: no reference trajectory, or a reference that does not
    /// pass its own checks (its status and failed evaluators).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// A suite's audit.
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    /// The suite's name.
    pub suite: String,
    /// The seed.
    pub seed: u64,
    /// Every case, in suite order.
    pub cases: Vec<CaseAudit>,
    /// Cases with a hole.
    pub hackable_cases: usize,
    /// Cases audited (with a reference that passes).
    pub audited_cases: usize,
    /// Mutants tried in all.
    pub mutants: usize,
    /// Killed over non-equivalent mutants, over the suite.
    pub kill_rate: Option<f64>,
    /// Entries of `audit.accept` that matched no survivor of an audited case.
    pub unmatched_accepts: Vec<UnmatchedAccept>,
}

impl AuditReport {
    /// Whether the suite passes its audit: some case was audited, and no case has a hole. A
    /// suite in which nothing could be audited does not pass: it proved nothing.
    pub fn passed(&self) -> bool {
        self.audited_cases > 0 && self.hackable_cases == 0
    }
}

/// Why a suite cannot be audited: the user's input.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The audit's run could not be planned (an unknown filter, a custom evaluator).
    #[error(transparent)]
    Plan(#[from] gauntlet_runner::PlanError),
}

impl gauntlet_model::Classified for AuditError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        match self {
            AuditError::Plan(e) => e.kind(),
        }
    }
}

/// The plan of a run of scripted trials (the audit's mutants, `check`'s references): one
/// attempt each, a minute at most, a trial a core unless told.
fn scripted_plan(
    suite: &Suite,
    settings: &Settings,
    trials: Vec<TrialPlan>,
    concurrency: Option<usize>,
) -> Result<RunPlan, AuditError> {
    Ok(RunPlan {
        retry_errors: 0,
        header: settings.header(suite),
        already_done: 0,
        trials: Trials::of(trials),
        concurrency: concurrency.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
        }),
        trial_timeout: std::time::Duration::from_secs(60),
        custom: Arc::new(gauntlet_runner::plan::custom_evaluators(suite)?),
        persona: None,
        benchmark: suite.config.benchmark.clone().map(Arc::new),
        judges: None,
        services_sandbox: None,
        trial_events: false,
    })
}

/// Plays each trial's plan: the reference at epoch 0, mutant `i` at epoch `i`.
struct MutantAgent {
    plans: HashMap<(String, u32), Vec<ReferenceStep>>,
}

impl Agent for MutantAgent {
    fn run<'a>(
        &'a self,
        input: &'a AgentInput,
        env: SharedEnv,
    ) -> BoxFuture<'a, Result<AgentOutput, AgentError>> {
        Box::pin(async move {
            let plan = self
                .plans
                .get(&(input.case_id.clone(), input.epoch))
                .map_or(&[][..], Vec::as_slice);
            gauntlet_agent::play(plan, env).await
        })
    }
}

/// Audits a suite's checks: every case's mutants, played and judged.
pub async fn audit(suite: &Suite, options: &AuditOptions) -> Result<AuditReport, AuditError> {
    let settings = Settings::resolve(
        suite,
        &RunOptions {
            agent: Some("audit".into()),
            seed: Some(options.seed),
            epochs: Some(1),
            filter: options.filter.clone(),
            faults: Some("none".into()),
            ..RunOptions::default()
        },
        None,
        gauntlet_runner::now,
        || format!("audit-{}", options.seed),
    )?;
    let cases = settings.cases(suite)?;
    let bases = settings.trials(suite, &cases);
    let mut plans = HashMap::new();
    let mut trials: Vec<TrialPlan> = Vec::new();
    let mut derived: Vec<(String, Vec<Mutant>)> = Vec::new();
    for base in bases {
        let case = &base.case;
        let spec = base.world.spec();
        let view = WorldView {
            spec,
            initial_state: &base.initial_state,
            context: &base.context,
        };
        let list = mutants(case, view, options.seed);
        if !case.reference_trajectory.is_empty() {
            plans.insert((case.case_id.clone(), 0), case.reference_trajectory.clone());
            trials.push(base.clone());
            for (i, m) in list.iter().enumerate() {
                let epoch = i as u32 + 1;
                plans.insert((case.case_id.clone(), epoch), m.steps.clone());
                let mut t = base.clone();
                t.epoch = epoch;
                t.trace_id = gauntlet_runner::trace_id(&settings.run_id, &case.case_id, epoch);
                trials.push(t);
            }
        }
        derived.push((case.case_id.clone(), list));
    }
    let plan = scripted_plan(suite, &settings, trials, options.concurrency)?;
    // Only what the verdict needs is kept of each trial: states can be megabytes.
    let mut records: HashMap<(String, u32), Outcome> = HashMap::new();
    run_trials(plan, Arc::new(MutantAgent { plans }), |mut event| {
        event.settle();
        if let RunEvent::TrialFinished { record, .. } = event {
            records.insert((record.case_id.clone(), record.epoch), Outcome::of(&record));
        }
    })
    .await;
    let accepts = &suite.config.audit.accept;
    let cases: Vec<CaseAudit> = derived
        .into_iter()
        .map(|(case_id, list)| judge_case(case_id, &list, &records, accepts))
        .collect();
    let audited: Vec<&CaseAudit> = cases.iter().filter(|c| c.skipped.is_none()).collect();
    let unmatched_accepts = accepts
        .iter()
        .filter(|a| {
            audited.iter().any(|c| {
                c.case_id == a.case
                    && !c
                        .accepted
                        .iter()
                        .any(|m| accepts_mutant(a, &c.case_id, &m.mutation, m.kind))
            })
        })
        .map(|a| UnmatchedAccept {
            case: a.case.clone(),
            mutation: a.mutation.clone(),
        })
        .collect();
    let (killed, judged) = audited.iter().fold((0, 0), |(k, n), c| {
        (k + c.killed, n + c.mutants - c.equivalent.len())
    });
    Ok(AuditReport {
        suite: suite.config.name.clone(),
        seed: options.seed,
        hackable_cases: audited.iter().filter(|c| c.hackable).count(),
        audited_cases: audited.len(),
        mutants: audited.iter().map(|c| c.mutants).sum(),
        kill_rate: (judged > 0).then(|| killed as f64 / judged as f64),
        cases,
        unmatched_accepts,
    })
}

/// Whether an `audit.accept` entry names a case's mutant: by the mutation's name, or by its
/// kind for every mutant of that kind.
fn accepts_mutant(a: &AcceptedSurvivor, case_id: &str, mutation: &str, kind: MutationKind) -> bool {
    a.case == case_id && (a.mutation == mutation || a.mutation == kind.name())
}

/// What the audit keeps of a trial: its status, why it did not pass, and what an observer
/// sees of its end (the final answer, a digest of the final state).
struct Outcome {
    status: TrialStatus,
    error: Option<String>,
    failed: Vec<String>,
    end: (Option<String>, String),
}

impl Outcome {
    fn of(r: &TrialRecord) -> Outcome {
        // Hashed as it is written: a state can be megabytes.
        let mut hasher = sha2::Sha256::new();
        let _ = serde_json::to_writer(&mut hasher, &r.final_state);
        let digest: String = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Outcome {
            status: r.status,
            error: r.error.clone(),
            failed: r
                .scores
                .iter()
                .filter(|s| s.fails_trial())
                .map(|s| s.name.clone())
                .collect(),
            end: (r.trajectory.final_answer.clone(), digest),
        }
    }
}

fn judge_case(
    case_id: String,
    list: &[Mutant],
    records: &HashMap<(String, u32), Outcome>,
    accepts: &[AcceptedSurvivor],
) -> CaseAudit {
    let skipped = |why: String| CaseAudit {
        case_id: case_id.clone(),
        mutants: 0,
        killed: 0,
        survivors: Vec::new(),
        accepted: Vec::new(),
        equivalent: Vec::new(),
        hackable: false,
        kill_rate: None,
        skipped: Some(why),
    };
    let Some(reference) = records.get(&(case_id.clone(), 0)) else {
        return skipped("no reference trajectory to derive mutants from".into());
    };
    if reference.status != TrialStatus::Passed {
        let failed = &reference.failed;
        return skipped(format!(
            "the reference trajectory does not pass its own checks ({}: {})",
            match reference.status {
                TrialStatus::Passed => "passed",
                TrialStatus::Failed => "failed",
                TrialStatus::Error => "error",
            },
            match (&reference.error, failed.is_empty()) {
                (Some(e), _) => e.clone(),
                (None, true) => "no evaluator failed".into(),
                (None, false) => failed.join(", "),
            }
        ));
    }
    let (mut killed, mut survivors, mut accepted, mut equivalent) =
        (0, Vec::new(), Vec::new(), Vec::new());
    for (i, m) in list.iter().enumerate() {
        let Some(r) = records.get(&(case_id.clone(), i as u32 + 1)) else {
            killed += 1; // never finished: not a pass
            continue;
        };
        if r.status != TrialStatus::Passed {
            killed += 1;
            continue;
        }
        let s = Survivor {
            mutation: m.mutation.clone(),
            kind: m.kind,
        };
        if r.end == reference.end && m.kind.can_be_equivalent() {
            equivalent.push(s);
        } else if let Some(a) = accepts
            .iter()
            .find(|a| accepts_mutant(a, &case_id, &m.mutation, m.kind))
        {
            accepted.push(Accepted {
                mutation: s.mutation,
                kind: s.kind,
                why: a.why.clone(),
            });
        } else {
            survivors.push(s);
        }
    }
    let judged = list.len() - equivalent.len();
    CaseAudit {
        case_id,
        mutants: list.len(),
        killed,
        hackable: !survivors.is_empty(),
        kill_rate: (judged > 0).then(|| killed as f64 / judged as f64),
        survivors,
        accepted,
        equivalent,
        skipped: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mutant(mutation: &str, kind: MutationKind) -> Mutant {
        Mutant {
            mutation: mutation.into(),
            kind,
            steps: Vec::new(),
        }
    }

    fn passed(answer: &str, state: &str) -> Outcome {
        Outcome {
            status: TrialStatus::Passed,
            error: None,
            failed: Vec::new(),
            end: (Some(answer.into()), state.into()),
        }
    }

    /// The ambiguous case of issue 47: the mutant that skips the question (or the confirmation)
    /// already knows the answer, so it ends where the reference ends; it is a hole all the same.
    #[test]
    fn a_skipped_question_or_confirmation_that_survives_is_never_equivalent() {
        let list = [
            mutant("skip the question", MutationKind::SkipQuestion),
            mutant("skip the confirmation", MutationKind::SkipConfirmation),
            mutant("repeat write 1 (close_incident)", MutationKind::RepeatWrite),
        ];
        let mut records = HashMap::new();
        for epoch in 0..=3 {
            records.insert(("c".to_owned(), epoch), passed("Closed.", "s"));
        }
        let audit = judge_case("c".into(), &list, &records, &[]);
        let names = |v: &[Survivor]| v.iter().map(|s| s.mutation.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&audit.survivors),
            ["skip the question", "skip the confirmation"]
        );
        assert_eq!(
            names(&audit.equivalent),
            ["repeat write 1 (close_incident)"]
        );
        assert!(audit.hackable);
        assert_eq!(audit.kill_rate, Some(0.0));
    }

    #[test]
    fn an_accepted_survivor_is_reported_with_its_reason_and_is_not_a_hole() {
        let list = [
            mutant("skip the question", MutationKind::SkipQuestion),
            mutant(
                "write 1 (add_note): text \"a\" -> \"b\"",
                MutationKind::ChangeArgument,
            ),
            mutant("drop write 1 (add_note)", MutationKind::DropWrite),
        ];
        let mut records = HashMap::new();
        records.insert(("c".to_owned(), 0), passed("Done.", "s"));
        records.insert(("c".to_owned(), 1), passed("Done.", "s"));
        records.insert(("c".to_owned(), 2), passed("Done.", "t"));
        records.insert(("c".to_owned(), 3), passed("Done.", "u"));
        let accept = |case: &str, mutation: &str| AcceptedSurvivor {
            case: case.into(),
            mutation: mutation.into(),
            why: format!("{mutation} is fine"),
        };
        // By name and by kind; an entry for another case accepts nothing here.
        let accepts = [
            accept("c", "write 1 (add_note): text \"a\" -> \"b\""),
            accept("c", "skip_question"),
            accept("other", "drop_write"),
        ];
        let audit = judge_case("c".into(), &list, &records, &accepts);
        assert_eq!(audit.survivors.len(), 1, "{audit:?}");
        assert_eq!(audit.survivors[0].mutation, "drop write 1 (add_note)");
        let accepted: Vec<(&str, &str)> = audit
            .accepted
            .iter()
            .map(|a| (a.mutation.as_str(), a.why.as_str()))
            .collect();
        assert_eq!(
            accepted,
            [
                ("skip the question", "skip_question is fine"),
                (
                    "write 1 (add_note): text \"a\" -> \"b\"",
                    "write 1 (add_note): text \"a\" -> \"b\" is fine"
                ),
            ]
        );
        assert!(audit.hackable, "the drop is not accepted");
        // Accepted survivors still count as not killed.
        assert_eq!(audit.kill_rate, Some(0.0));
        let audit = judge_case(
            "c".into(),
            &list,
            &records,
            &[
                accepts[0].clone(),
                accepts[1].clone(),
                accept("c", "drop_write"),
            ],
        );
        assert!(!audit.hackable, "{audit:?}");
        assert!(audit.survivors.is_empty());
    }
}
