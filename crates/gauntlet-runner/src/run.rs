//! Scheduling trials and turning each into a [`TrialRecord`].

use gauntlet_store::clock::now;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gauntlet_agent::{
    Agent, AgentInput, AgentOutput, PersonaModels, SimulatedEnvironment, SimulatedUser,
};
use gauntlet_model::{
    Case, ChangedState, Context, Evaluation, FinalState, Observed, RunEvent, RunHeader,
    TrialRecord, TrialStatus,
};
use gauntlet_world::{FaultPlan, Injections, Simulator, World};
use serde_json::Value;
use tokio::sync::{Semaphore, mpsc};

use gauntlet_scoring::JudgePanel;
use gauntlet_scoring::{CustomEvaluators, TrialEvidence, evaluate_trial};

/// One trial to run (cheap to clone: the case, world and state are shared).
#[derive(Clone)]
pub struct TrialPlan {
    /// The case (evaluators read it; the agent sees only its input).
    pub case: Arc<Case>,
    /// The world it runs in.
    pub world: Arc<World>,
    /// The state it starts from (shared between the trials of a case).
    pub initial_state: Arc<Value>,
    /// Who the agent acts for.
    pub context: Context,
    /// The repetition.
    pub epoch: u32,
    /// The trial's seed.
    pub seed: u64,
    /// The faults to inject: the case's rules, then the run's profile.
    pub faults: FaultPlan,
    /// The W3C trace id.
    pub trace_id: String,
}

/// All trials of a run and how to schedule them.
pub struct RunPlan {
    /// The run's header (told to consumers in `RunStarted`).
    pub header: RunHeader,
    /// Trials a resumed run already has (not in `trials`).
    pub already_done: usize,
    /// The trials still to run, in case then epoch order.
    pub trials: Trials,
    /// How many trials run at once.
    pub concurrency: usize,
    /// Wall-time limit of one trial; the trial errs when exceeded.
    pub trial_timeout: Duration,
    /// Times a trial that ends in a harness error is played again before its error counts
    /// (`--retry-errors`); each attempt's error is kept in its record.
    pub retry_errors: u32,
    /// Custom evaluators run on every trial, and the folder they run in.
    pub custom: Arc<CustomEvaluators>,
    /// Where users with an LLM persona get their words (none: such cases err).
    pub persona: Option<PersonaModels>,
    /// The suite's benchmark, whose reward each trial is scored with.
    pub benchmark: Option<Arc<gauntlet_model::BenchmarkSpec>>,
    /// The suite's LLM judges (none when it has none).
    pub judges: Option<Arc<JudgePanel>>,
    /// Where the servers of real-service worlds run (none: as plain processes).
    pub services_sandbox: Option<Arc<gauntlet_process::Sandbox>>,
    /// Whether to emit what happens inside each trial (`TrialEvent`, `TrialScored`).
    pub trial_events: bool,
}

/// The trials still to run, made one at a time as slots free up: however many there are, only
/// those in flight are held.
pub struct Trials {
    /// How many.
    pub len: usize,
    /// Whether any runs in a real-service world.
    pub services: bool,
    /// The trials, in order.
    pub iter: Box<dyn Iterator<Item = TrialPlan> + Send>,
}

impl Trials {
    /// Trials already made.
    pub fn of(trials: Vec<TrialPlan>) -> Trials {
        Trials {
            len: trials.len(),
            services: trials.iter().any(|t| t.world.spec().service.is_some()),
            iter: Box::new(trials.into_iter()),
        }
    }
}

/// Runs every trial, calling `on_event` with `RunStarted`, then as trials start and finish (and,
/// with `trial_events`, with what happens inside each). `RunFinished` is the caller's to send
/// once it has judged the run.
pub async fn run_trials(plan: RunPlan, agent: Arc<dyn Agent>, mut on_event: impl FnMut(RunEvent)) {
    on_event(RunEvent::RunStarted {
        planned: plan.trials.len + plan.already_done,
        already_done: plan.already_done,
        header: Box::new(plan.header),
        at: now(),
    });
    let semaphore = Arc::new(Semaphore::new(plan.concurrency.max(1)));
    // A trial is made and started only once it has a slot, and its slot is given back only once
    // its record is consumed: trials that end faster than records are stored (cheap trials,
    // large states) wait instead of piling records up, so at most `concurrency` of them are
    // held, whatever the run's length.
    let (tx, mut rx) = mpsc::unbounded_channel::<Sent>();
    if plan.trials.services {
        gauntlet_services::sweep_stale();
    }
    let shared = Arc::new(TrialShared {
        timeout: plan.trial_timeout,
        retry_errors: plan.retry_errors,
        custom: Arc::clone(&plan.custom),
        persona: plan.persona.clone(),
        benchmark: plan.benchmark.clone(),
        judges: plan.judges.clone(),
        starts: Arc::default(),
        sandbox: plan.services_sandbox.clone(),
    });
    let trial_events = plan.trial_events;
    let mut trials = plan.trials.iter.enumerate();
    let mut sender = Some(tx);
    loop {
        let (open, semaphore) = (sender.is_some(), Arc::clone(&semaphore));
        let slot = async move {
            match open {
                true => semaphore.acquire_owned().await.ok(),
                false => std::future::pending().await,
            }
        };
        tokio::select! {
            // Records first: a consumed one frees the slot the next trial takes.
            biased;
            sent = rx.recv() => match sent {
                Some(Sent { event, slot }) => {
                    on_event(event);
                    drop(slot);
                }
                None => break,
            },
            permit = slot => {
                let (Some(permit), Some(tx)) = (permit, &sender) else {
                    sender = None;
                    continue;
                };
                match trials.next() {
                    Some((index, trial)) => {
                        start_trial(index, trial, permit, tx.clone(), &agent, &shared, trial_events);
                    }
                    // The last trial has started: the stream ends when it has been told.
                    None => sender = None,
                }
            }
        }
    }
}

/// Starts a trial on its own task, holding `permit` until its record is consumed.
fn start_trial(
    index: usize,
    trial: TrialPlan,
    permit: tokio::sync::OwnedSemaphorePermit,
    tx: mpsc::UnboundedSender<Sent>,
    agent: &Arc<dyn Agent>,
    shared: &Arc<TrialShared>,
    trial_events: bool,
) {
    let shared = Arc::clone(shared);
    let agent = Arc::clone(agent);
    tokio::spawn(async move {
        let _ = tx.send(Sent::event(RunEvent::TrialStarted {
            index,
            case_id: trial.case.case_id.clone(),
            epoch: trial.epoch,
            at: now(),
        }));
        let spare = trial.clone();
        let tap = trial_events.then(|| {
            let (tx, case_id, epoch) = (tx.clone(), trial.case.case_id.clone(), trial.epoch);
            let tap: gauntlet_world::EventTap = Arc::new(move |event| {
                let _ = tx.send(Sent::event(RunEvent::TrialEvent {
                    index,
                    case_id: case_id.clone(),
                    epoch,
                    event: Box::new(event.clone()),
                    at: now(),
                }));
            });
            tap
        });
        // A trial that errs is played again, from the start, while retries are left; the
        // errors of the attempts before the last are kept in its record.
        let mut retried_errors = Vec::new();
        let Ran {
            mut record,
            started_from,
            final_state,
        } = loop {
            // A panicking agent or evaluator must cost its trial only.
            let attempt = tokio::spawn(run_one(
                trial.clone(),
                Arc::clone(&agent),
                Arc::clone(&shared),
                tap.clone(),
            ));
            let ran = match attempt.await {
                Ok(r) => r,
                Err(_) => error_record(&spare, "the trial panicked".to_owned()),
            };
            if ran.record.status != TrialStatus::Error
                || retried_errors.len() >= shared.retry_errors as usize
            {
                break ran;
            }
            retried_errors.push(ran.record.error.unwrap_or_default());
        };
        record.retried_errors = retried_errors;
        if trial_events {
            for score in &record.scores {
                let _ = tx.send(Sent::event(RunEvent::TrialScored {
                    index,
                    case_id: record.case_id.clone(),
                    epoch: record.epoch,
                    score: Box::new(score.clone()),
                    at: now(),
                }));
            }
        }
        let _ = tx.send(Sent {
            event: RunEvent::TrialFinished {
                index,
                record: Box::new(record),
                initial_state: started_from.unwrap_or(spare.initial_state),
                final_state,
                at: now(),
            },
            slot: Some(permit),
        });
    });
}

/// An event on its way to the consumer, with the trial slot it frees once consumed.
struct Sent {
    event: RunEvent,
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Sent {
    fn event(event: RunEvent) -> Sent {
        Sent { event, slot: None }
    }
}

impl TrialPlan {
    /// What is known of this trial before it runs: who it is; the rest is the caller's.
    fn observed(&self) -> Observed {
        Observed {
            case_id: self.case.case_id.clone(),
            epoch: self.epoch,
            seed: self.seed,
            trace_id: self.trace_id.clone(),
            tags: self.case.tags.clone(),
            difficulty: self.case.difficulty.clone(),
            ..Observed::default()
        }
    }
}

/// A trial as it ended: its record and, where its world kept it so, its final state as the
/// state it started from and what it changed (the record's `final_state` is `null` then).
struct Ran {
    record: TrialRecord,
    /// The state the trial started from, when it is its own (a real service's).
    started_from: Option<Arc<Value>>,
    final_state: Option<ChangedState>,
}

/// A trial the harness could not run: it ends where it started, with no events.
fn error_record(trial: &TrialPlan, error: String) -> Ran {
    Ran {
        record: TrialRecord::new(
            Observed {
                error: Some(error),
                ..trial.observed()
            },
            Evaluation::unjudged(TrialStatus::Error),
        ),
        started_from: None,
        final_state: Some(ChangedState::new(Arc::clone(&trial.initial_state))),
    }
}

/// What every trial of a run shares.
struct TrialShared {
    timeout: Duration,
    retry_errors: u32,
    custom: Arc<CustomEvaluators>,
    persona: Option<PersonaModels>,
    benchmark: Option<Arc<gauntlet_model::BenchmarkSpec>>,
    judges: Option<Arc<JudgePanel>>,
    /// The initial-state hash of each case's first trial on a real service: every later trial
    /// of the case must start from the same.
    starts: StartHashes,
    sandbox: Option<Arc<gauntlet_process::Sandbox>>,
}

async fn run_one(
    trial: TrialPlan,
    agent: Arc<dyn Agent>,
    shared: Arc<TrialShared>,
    tap: Option<gauntlet_world::EventTap>,
) -> Ran {
    let TrialShared {
        timeout,
        retry_errors: _,
        custom,
        persona,
        benchmark,
        judges,
        starts,
        sandbox,
    } = &*shared;
    let timeout = *timeout;
    let started = Instant::now();
    let started_at = gauntlet_store::clock::instant();
    let case = &trial.case;
    let user = match SimulatedUser::for_trial(
        case.user.clone(),
        persona.as_ref(),
        &case.case_id,
        trial.epoch,
    ) {
        Ok(user) => user,
        Err(why) => return error_record(&trial, why.to_string()),
    };
    let injections = match Injections::for_trial(trial.world.spec(), case.attack.as_ref()) {
        Ok(i) => i,
        Err(why) => return error_record(&trial, why.to_string()),
    };
    // A world that is a real service is made for this trial, and starts from what it reads back.
    let (service, initial_state) = match trial.world.spec().service.clone() {
        None => (None, Arc::clone(&trial.initial_state)),
        Some(spec) => {
            let sandbox = sandbox.clone();
            let made = tokio::task::spawn_blocking(move || {
                gauntlet_services::RealService::start_and_read(&spec, sandbox.as_deref())
                    .map_err(|e| e.to_string())
            })
            .await
            .unwrap_or_else(|_| Err("starting the service panicked".to_owned()));
            let (service, state) = match made {
                Ok(m) => m,
                Err(why) => {
                    return error_record(&trial, why);
                }
            };
            let hash = gauntlet_model::digest::sha256_hex(
                gauntlet_model::path::canonical_json(&state).as_bytes(),
            );
            let first = starts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(case.case_id.clone())
                .or_insert_with(|| hash.clone())
                .clone();
            if first != hash {
                return error_record(
                    &trial,
                    format!(
                        "the service started from another state than the case's first trial (sha256 {hash} vs {first}): its fixture or setup is not deterministic"
                    ),
                );
            }
            (Some(service), Arc::new(state))
        }
    };
    let mut simulator = Simulator::start(
        Arc::clone(&trial.world),
        Arc::clone(&initial_state),
        trial.context.clone(),
        trial.faults.clone(),
    )
    .inject(injections)
    .with_traps(traps_of(case));
    if let Some(tap) = tap {
        simulator = simulator.with_tap(tap);
    }
    if let Some(service) = service {
        simulator = simulator.with_service(Box::new(service));
    }
    let has_traps = case.checkpoints.iter().any(|c| c.trap);
    let env = SimulatedEnvironment::new(simulator, user, &case.user_input).shared();
    let run_agent = async {
        let user_input = gauntlet_agent::conversation::open(&env, &case.user_input)
            .await
            .map_err(|e| e.to_string())?;
        let input = AgentInput {
            case_id: case.case_id.clone(),
            user_input,
            epoch: trial.epoch,
            seed: trial.seed,
        };
        agent
            .run(&input, env.clone())
            .await
            .map_err(|e| format!("agent failed: {e}"))
    };
    // A trap that fails ends the trial there: the agent is stopped, not run to its end.
    let trapped = async {
        if !has_traps {
            return std::future::pending::<()>().await;
        }
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            if gauntlet_agent::lock(&env).trapped() {
                break;
            }
        }
    };
    let run_agent = async {
        tokio::select! {
            out = run_agent => Some(out),
            () = trapped => None,
        }
    };
    let (out, error) = match tokio::time::timeout(timeout, run_agent).await {
        Ok(None) => (AgentOutput::default(), None),
        Ok(Some(Ok(out))) => (out, None),
        Ok(Some(Err(e))) => (AgentOutput::default(), Some(e)),
        Err(_) => (
            AgentOutput::default(),
            Some(format!(
                "agent exceeded the trial time limit of {timeout:?}"
            )),
        ),
    };
    let AgentOutput {
        final_answer,
        unfinished,
        crashed,
    } = out;
    let (trajectory, final_state, harness_failure) = {
        let mut env = gauntlet_agent::lock(&env);
        // An agent out of steps failed its task, and so did one that crashed once started; the
        // trajectory says so, for every judge.
        if let Some(reason) = unfinished {
            env.record_event(gauntlet_model::Event::Unfinished { reason });
        }
        if let Some(reason) = crashed {
            env.record_event(gauntlet_model::Event::AgentCrashed { reason });
        }
        let (trajectory, final_state) = env.finish(final_answer);
        (trajectory, final_state, env.harness_failure())
    };
    // The harness's own failure (the simulated user could not answer) outranks the agent's.
    let error = harness_failure.or(error);
    let evaluation = evaluate_trial(
        &TrialEvidence {
            case_id: &case.case_id,
            case: Some(case),
            epoch: trial.epoch,
            trajectory: &trajectory,
            initial_state: Some(&initial_state),
            final_state: final_state.as_ref(),
            world: Some(trial.world.spec()),
            benchmark: benchmark.as_deref(),
            harness_failed: error.is_some(),
            policy: None,
        },
        custom,
        judges.as_deref(),
    )
    .await;
    // A state kept as the initial state and what changed goes beside the record, not copied.
    let (final_state, changed) = match final_state {
        FinalState::Whole(v) => (v, None),
        FinalState::Changed(c) => (Value::Null, Some(c)),
    };
    let record = TrialRecord::new(
        Observed {
            final_state,
            trajectory,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            started_at: Some(started_at.to_string()),
            error,
            ..trial.observed()
        },
        evaluation,
    );
    let own_start = trial
        .world
        .spec()
        .service
        .is_some()
        .then_some(initial_state);
    Ran {
        record,
        started_from: own_start,
        final_state: changed,
    }
}

/// Each case's initial-state hash on a real service, from its first trial.
type StartHashes = Arc<std::sync::Mutex<std::collections::HashMap<String, String>>>;

/// The case's checkpoints marked `trap`, checked on the live state as the trial runs.
fn traps_of(case: &gauntlet_model::Case) -> Vec<gauntlet_world::Trap> {
    case.checkpoints
        .iter()
        .filter(|c| c.trap)
        .map(|c| {
            let checkpoint = c.clone();
            gauntlet_world::Trap {
                label: c.label(),
                at: c.after.clone(),
                check: Box::new(move |state| gauntlet_eval::checkpoints::check(&checkpoint, state)),
            }
        })
        .collect()
}
