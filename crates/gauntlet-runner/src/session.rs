//! A run of a suite as one library call: [`Run`] takes the suite, the agent (a `--agent` spec
//! or any [`Agent`], a closure included) and the options, runs every trial, writes the run
//! folder through the store's one writer, and returns the results; what happens on the way
//! reaches an [`Observer`] as the run event stream. The CLI's `run` is this call plus its
//! sinks (terminal, `--events`, index, reports) and the exit code.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let suite = gauntlet_suite::Suite::load("examples/incident-desk".as_ref())
//!     .map_err(|p| format!("{p:?}"))?;
//! let finished = gauntlet_runner::Run::new(&suite)
//!     .agent_spec("script:reference")
//!     .epochs(2)
//!     .execute(&mut ())
//!     .await?;
//! println!("{:?}", finished.results.verdict);
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gauntlet_agent::{Agent, AgentError, AgentInput, AgentOutput, BoxFuture, SharedEnv};
use gauntlet_model::{Classified, ErrorKind, RunEvent, RunResults, TrialSummary};
use gauntlet_process::Isolation;
use gauntlet_store::{RunWriter, StoreError};
use gauntlet_suite::Suite;

use crate::agents::{ChosenAgent, GatewayOptions, choose_agent, persona_models, start_gateway};
use crate::plan::{check_unchanged, custom_evaluators};
use crate::tally::{InOrder, Tallied, Tally};
use crate::{PlanError, RunOptions, RunPlan, Settings, Trials, run_trials, stamp};

/// What a run tells its caller besides the event stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// Something the user must know (an agent running unisolated, a judge without a model).
    Warning(String),
    /// Something the user may want to know (cases an agent does not play, and why).
    Note(String),
    /// The run folder, once it exists (a new run's, or the resumed one's), with the trials
    /// already done and the trials in the plan.
    Folder {
        /// The run folder.
        dir: PathBuf,
        /// Trials a resumed run already has.
        already_done: usize,
        /// Trials in the plan.
        planned: usize,
    },
}

/// Whoever follows a run: the CLI's terminal and `--events`, a viewer, a test. Every method
/// defaults to nothing, so `&mut ()` follows nothing.
pub trait Observer {
    /// Whether it follows what happens inside trials (`TrialEvent`, `TrialScored`): a copy of
    /// every trajectory event, so only those that show them ask.
    fn follows_trials(&self) -> bool {
        false
    }
    /// A notice, before the trials start.
    fn notice(&mut self, _notice: Notice) {}
    /// An event of the run's stream, after the run folder has stored it.
    fn event(&mut self, _event: &RunEvent) {}
}

impl Observer for () {}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The plan is not one the suite and options allow.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The LLM gateway did not start.
    #[error("cannot start the LLM gateway: {0}")]
    Gateway(#[source] gauntlet_agent::gateway::GatewayError),
    /// The run folder: created, resumed, written or finished.
    #[error("{doing}: {source}")]
    Store {
        /// What the run was doing.
        doing: &'static str,
        /// Why it could not.
        #[source]
        source: StoreError,
    },
    /// An option that cannot be used (`concurrency` 0, a sandbox that does not work here).
    #[error("{0}")]
    Input(String),
    /// The harness itself failed (the cassette could not be written).
    #[error("{0}")]
    Harness(String),
    /// `max_cost_eur` was spent before every trial had run: the run stopped, resumable.
    #[error(
        "the cost budget (`max_cost_eur` {budget:.4} EUR) was spent after {done} of {planned} trials ({spent:.4} EUR); the run stopped without a verdict, its finished trials are in {dir}: resume it with a larger budget (gauntlet run SUITE --resume {dir} --max-cost-eur EUR, or resume= and max_cost_eur= in Python)",
        dir = dir.display()
    )]
    BudgetSpent {
        /// The budget.
        budget: f64,
        /// What the trials run cost.
        spent: f64,
        /// Trials done (a resumed run's earlier ones included).
        done: usize,
        /// Trials in the plan.
        planned: usize,
        /// The run folder.
        dir: PathBuf,
    },
}

impl Classified for RunError {
    fn kind(&self) -> ErrorKind {
        match self {
            RunError::Plan(e) => e.kind(),
            RunError::Gateway(e) => e.kind(),
            RunError::Store { source, .. } => source.kind(),
            RunError::Input(_) => ErrorKind::InvalidInput,
            RunError::Harness(_) | RunError::BudgetSpent { .. } => ErrorKind::Harness,
        }
    }
}

/// A finished run.
#[derive(Debug)]
pub struct Finished {
    /// The canonical result, as `results.json` stores it.
    pub results: RunResults,
    /// Gates that could not be decided (they make the input invalid).
    pub gate_errors: Vec<String>,
    /// The run folder.
    pub dir: PathBuf,
    /// The part of a sharded run it is (its gates saw this part only).
    pub shard: Option<gauntlet_model::Shard>,
    /// The trial summaries, on disk, for a run with more than [`Run::keep_summaries`]: the
    /// results' `trials` are then empty, and `results.json` has them all.
    pub spill: Option<gauntlet_store::SpilledSummaries>,
}

/// The agent of a run: named by a spec, or given.
enum AgentChoice {
    Spec(Option<String>),
    Given(Arc<dyn Agent>),
}

/// A run of a suite, built then executed (see the module's example).
pub struct Run<'s> {
    suite: &'s Suite,
    agent: AgentChoice,
    options: RunOptions,
    gateway: GatewayOptions,
    concurrency: usize,
    trial_timeout: Duration,
    retry_errors: u32,
    isolation: Isolation,
    user_model: Option<String>,
    out: Option<PathBuf>,
    resume: Option<(PathBuf, bool)>,
    workdir: Option<PathBuf>,
    keep: usize,
    max_cost_eur: Option<f64>,
}

impl<'s> Run<'s> {
    /// A run of `suite` with its own defaults: its agent (else `script:reference`), seed and
    /// epochs, 4 trials at once, 300 s a trial, agents sandboxed where bubblewrap works.
    pub fn new(suite: &'s Suite) -> Self {
        Run {
            suite,
            agent: AgentChoice::Spec(None),
            options: RunOptions::default(),
            gateway: GatewayOptions::default(),
            concurrency: 4,
            trial_timeout: Duration::from_secs(300),
            retry_errors: 0,
            isolation: Isolation::Auto,
            user_model: None,
            out: None,
            resume: None,
            workdir: None,
            keep: crate::offline::KEPT_SUMMARIES,
            max_cost_eur: None,
        }
    }

    /// The agent, as `--agent` names it (`script:reference`, `cmd:…`, `openai:MODEL`, …).
    pub fn agent_spec(mut self, spec: impl Into<String>) -> Self {
        self.agent = AgentChoice::Spec(Some(spec.into()));
        self
    }

    /// The agent itself: any [`Agent`] (see [`agent_fn`] for a closure). The run header
    /// records it as `label`.
    pub fn agent(mut self, label: impl Into<String>, agent: Arc<dyn Agent>) -> Self {
        self.options.agent = Some(label.into());
        self.agent = AgentChoice::Given(agent);
        self
    }

    /// The plan's options: seed, epochs, filter, faults, attack, shard, run id, name. What
    /// `options` leaves out keeps what was set before (`.epochs(3).options(o)` keeps the 3
    /// unless `o` says otherwise); a given agent keeps its label.
    pub fn options(mut self, options: RunOptions) -> Self {
        let old = std::mem::take(&mut self.options);
        self.options = RunOptions {
            agent: match self.agent {
                AgentChoice::Given(_) => old.agent,
                AgentChoice::Spec(_) => options.agent.or(old.agent),
            },
            seed: options.seed.or(old.seed),
            epochs: options.epochs.or(old.epochs),
            filter: options.filter.or(old.filter),
            faults: options.faults.or(old.faults),
            attack: options.attack.or(old.attack),
            shard: options.shard.or(old.shard),
            run_id: options.run_id.or(old.run_id),
            name: options.name.or(old.name),
        };
        self
    }

    /// Stop starting trials once those run cost this much, in euros (`max_cost_eur`): the run
    /// then ends with [`RunError::BudgetSpent`], its folder resumable.
    pub fn max_cost_eur(mut self, budget: Option<f64>) -> Self {
        self.max_cost_eur = budget;
        self
    }

    /// Repetitions of each case.
    pub fn epochs(mut self, epochs: u32) -> Self {
        self.options.epochs = Some(epochs);
        self
    }

    /// The run's seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.options.seed = Some(seed);
        self
    }

    /// Trials at once (at least 1).
    pub fn concurrency(mut self, trials: usize) -> Self {
        self.concurrency = trials;
        self
    }

    /// The wall-time limit of one trial.
    pub fn trial_timeout(mut self, limit: Duration) -> Self {
        self.trial_timeout = limit;
        self
    }

    /// Times a trial that ends in a harness error (`error`, not `failed`) is played again before
    /// its error counts (default 0), as Inspect's `retry_on_error`; the results say how many
    /// trials were (`retried`), and each record the errors of its earlier attempts.
    pub fn retry_errors(mut self, times: u32) -> Self {
        self.retry_errors = times;
        self
    }

    /// The LLM gateway: upstream, cassettes, key.
    pub fn gateway(mut self, options: GatewayOptions) -> Self {
        self.gateway = options;
        self
    }

    /// How command agents are isolated.
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// The model of persona users whose case names none.
    pub fn user_model(mut self, model: Option<String>) -> Self {
        self.user_model = model;
        self
    }

    /// The run folder (default: `SUITE/.gauntlet/runs/RUN_ID`).
    pub fn out(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out = Some(dir.into());
        self
    }

    /// Finish the run stored in `dir` (`set_aside_corrupt`: move lines that are not trial
    /// records aside and run their trials again).
    pub fn resume(mut self, dir: impl Into<PathBuf>, set_aside_corrupt: bool) -> Self {
        self.resume = Some((dir.into(), set_aside_corrupt));
        self
    }

    /// Trial summaries the results hold in memory, at most (default
    /// [`KEPT_SUMMARIES`](crate::offline::KEPT_SUMMARIES)): past this they wait on disk, the
    /// returned results list none ([`Finished::spill`]) and memory stays flat however long the
    /// run.
    pub fn keep_summaries(mut self, summaries: usize) -> Self {
        self.keep = summaries;
        self
    }

    /// Where command agents run (default: the current folder).
    pub fn workdir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workdir = Some(dir.into());
        self
    }

    /// Runs every trial (a resumed run: those it lacks), storing each as it ends, and judges
    /// the run. A trial that fails, errs or hangs never stops the others.
    pub async fn execute(self, observer: &mut dyn Observer) -> Result<Finished, RunError> {
        let suite = self.suite;
        if self.concurrency == 0 {
            return Err(RunError::Input(
                "`concurrency` must be at least 1 (trials at once)".to_owned(),
            ));
        }
        if self.trial_timeout.is_zero() {
            return Err(RunError::Input(
                "`trial_timeout` must be a positive number of seconds".to_owned(),
            ));
        }
        let recording = self.gateway.record.is_some();
        let gateway = start_gateway(self.gateway, suite)
            .await
            .map_err(RunError::Gateway)?;
        let resumed = match &self.resume {
            Some((dir, set_aside)) => Some(RunWriter::resume_with(dir, *set_aside).map_err(
                |source| RunError::Store {
                    doing: "cannot resume the run",
                    source,
                },
            )?),
            None => None,
        };
        let old = resumed.as_ref().map(|(_, header, _)| header);
        let mut options = self.options;
        if let AgentChoice::Spec(Some(spec)) = &self.agent {
            options.agent = Some(spec.clone());
        }
        let settings = Settings::resolve(suite, &options, old, stamp, crate::ids::new_run_id)?;
        let cases = settings.cases(suite)?;
        let (agent, cases) = match self.agent {
            AgentChoice::Given(agent) => (agent, cases),
            AgentChoice::Spec(_) => {
                let workdir = match self.workdir {
                    Some(d) => d,
                    None => std::env::current_dir()
                        .map_err(|e| RunError::Harness(format!("no working directory: {e}")))?,
                };
                let ChosenAgent {
                    agent,
                    cases,
                    notes,
                    warnings,
                } = choose_agent(
                    &settings.agent,
                    cases,
                    suite,
                    gateway.as_ref(),
                    workdir,
                    self.isolation,
                )?;
                for w in warnings {
                    observer.notice(Notice::Warning(w));
                }
                for n in notes {
                    observer.notice(Notice::Note(n));
                }
                (agent, cases)
            }
        };
        let state = suite.state_dir();
        let judges = gauntlet_scoring::judge::judge_panel(
            suite,
            gateway.as_ref(),
            &state.join("judge-cache.sqlite"),
            recording,
        )
        .map_err(PlanError::from)?;
        if let Some(w) = judges.as_ref().and_then(|j| j.endpoint_warning()) {
            observer.notice(Notice::Warning(w));
        }
        let mut header = settings.header(suite);
        header.judges = judges.as_ref().map(|j| j.headers()).unwrap_or_default();
        if let Some(old) = old {
            check_unchanged(old, &header)?;
        }
        let plans = settings.plans(suite, &cases);
        let total = plans.len();
        // Records are written as trials end and only their summaries are kept; a resumed
        // run's earlier trials are summarised from their records and not run again.
        let (out, mut writer, done) = match resumed {
            Some((writer, _, done)) => {
                // Stored trials the plan does not hold (another filter's) are not this run's.
                let done: BTreeMap<usize, TrialSummary> = done
                    .into_iter()
                    .filter_map(|t| Some((plans.position_of(&t.case_id, t.epoch)?, t)))
                    .collect();
                (writer.dir().to_owned(), writer, done)
            }
            None => {
                let folder = match settings.shard {
                    Some(s) => format!("{}-shard-{}-of-{}", settings.run_id, s.index, s.count),
                    None => settings.run_id.clone(),
                };
                let out = self.out.unwrap_or_else(|| state.join("runs").join(folder));
                let writer =
                    RunWriter::create(&out, &header).map_err(|source| RunError::Store {
                        doing: "failed to create the run folder",
                        source,
                    })?;
                (out, writer, BTreeMap::new())
            }
        };
        let already_done = done.len();
        observer.notice(Notice::Folder {
            dir: out.clone(),
            already_done,
            planned: total,
        });
        // The servers of real-service worlds run in the same sandbox as command agents.
        let services = plans.has_services();
        let services_sandbox = if services {
            let (sandbox, warning) = gauntlet_process::Sandbox::detect(self.isolation)
                .map_err(|e| RunError::Input(e.to_string()))?;
            if let Some(w) = warning {
                observer.notice(Notice::Warning(w.replace(
                    "command agents are",
                    "real-service world servers and command agents are",
                )));
            }
            Some(Arc::new(sandbox))
        } else {
            None
        };
        // The trials still to run, made as they start: a trial is made once a slot is free,
        // and a slot is freed once the record before it was consumed (and its cost counted),
        // so the budget is checked against every trial that finished.
        let spent = Arc::new(std::sync::atomic::AtomicU64::new(0f64.to_bits()));
        let budget = self.max_cost_eur;
        let to_run = {
            let (plans, done) = (plans.clone(), done.keys().copied().collect::<HashSet<_>>());
            let spent = Arc::clone(&spent);
            let within = move || {
                budget.is_none_or(|b| {
                    f64::from_bits(spent.load(std::sync::atomic::Ordering::Relaxed)) < b
                })
            };
            plans
                .positions()
                .filter(move |p| !done.contains(p))
                .take_while(move |_| within())
                .map(move |p| plans.trial(p))
        };
        let plan = RunPlan {
            header: header.clone(),
            already_done,
            trials: Trials {
                len: total - already_done,
                services,
                iter: Box::new(to_run),
            },
            concurrency: self.concurrency,
            trial_timeout: self.trial_timeout,
            retry_errors: self.retry_errors,
            custom: Arc::new(custom_evaluators(suite)?),
            benchmark: suite.config.benchmark.clone().map(Arc::new),
            persona: persona_models(self.user_model, suite, gateway.as_ref(), &cases)?,
            judges,
            services_sandbox,
            trial_events: observer.follows_trials(),
        };
        let store = |doing| move |source| RunError::Store { doing, source };
        let mut tally = InOrder::new(
            Tally::new(&header.judges, self.keep, &out),
            Box::new(plans.positions()),
        );
        for (position, summary) in done {
            tally
                .push(position, summary)
                .map_err(store("failed to set trial summaries aside"))?;
        }
        let mut write_error = None;
        let mut finished = already_done;
        // The store consumes each event first (a record is summarised as stored: a large
        // final state is its reference then), the observer after.
        run_trials(plan, agent, |mut event| {
            if let Err(e) = writer.consume(&mut event) {
                write_error.get_or_insert(e);
            }
            if let RunEvent::TrialFinished { record, .. } = &event
                && let Some(position) = plans.position_of(&record.case_id, record.epoch)
            {
                if !record.retried_errors.is_empty() {
                    tally.add_retried(1);
                }
                if let Err(e) = tally.push(position, TrialSummary::of(record)) {
                    write_error.get_or_insert(e);
                }
                finished += 1;
                let cost = f64::from_bits(spent.load(std::sync::atomic::Ordering::Relaxed))
                    + record.trajectory.cost_eur()
                    + record.trajectory.user_cost_eur();
                spent.store(cost.to_bits(), std::sync::atomic::Ordering::Relaxed);
            }
            observer.event(&event);
        })
        .await;
        if let Some(g) = &gateway {
            g.shutdown()
                .await
                .map_err(|e| RunError::Harness(format!("failed to write the cassette: {e}")))?;
        }
        if let Some(source) = write_error {
            return Err(RunError::Store {
                doing: "failed to record a trial",
                source,
            });
        }
        if let Some(budget) = budget
            && finished < total
        {
            return Err(RunError::BudgetSpent {
                budget,
                spent: f64::from_bits(spent.load(std::sync::atomic::Ordering::Relaxed)),
                done: finished,
                planned: total,
                dir: out,
            });
        }
        let Tallied {
            results,
            gate_errors,
            spill,
        } = tally
            .into_tally()
            .and_then(|t| t.finish(header, stamp(), &suite.gates, suite.rubric.as_ref(), writer))
            .map_err(store("failed to write results"))?;
        Ok(Finished {
            results,
            gate_errors,
            dir: out,
            shard: settings.shard,
            spill,
        })
    }
}

/// An [`Agent`] from an async closure: it gets the trial's input and environment (its tools and
/// user, [`gauntlet_agent::Environment`]) and returns the final answer, or an [`AgentError`] saying
/// why the harness could not run it (the trial is then an `error`; an agent of its own that
/// crashes reports [`AgentOutput::crashed`] instead, and its trial fails).
pub fn agent_fn<F, Fut>(f: F) -> Arc<dyn Agent>
where
    F: Fn(AgentInput, SharedEnv) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<String, AgentError>> + Send + 'static,
{
    struct FnAgent<F>(F);
    impl<F, Fut> Agent for FnAgent<F>
    where
        F: Fn(AgentInput, SharedEnv) -> Fut + Send + Sync,
        Fut: std::future::Future<Output = Result<String, AgentError>> + Send + 'static,
    {
        fn run<'a>(
            &'a self,
            input: &'a AgentInput,
            env: SharedEnv,
        ) -> BoxFuture<'a, Result<AgentOutput, AgentError>> {
            let fut = (self.0)(input.clone(), env);
            Box::pin(async move {
                let answer = fut.await?;
                Ok(AgentOutput {
                    final_answer: Some(answer),
                    unfinished: None,
                    crashed: None,
                })
            })
        }
    }
    Arc::new(FnAgent(f))
}
