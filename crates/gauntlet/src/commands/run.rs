//! `gauntlet run SUITE`: plan the trials, run them with progress, store, gate, summarise.

use std::sync::Arc;
use std::time::Duration;

use gauntlet_agent::gateway::{Gateway, GatewayConfig, Mode};
use gauntlet_agent::{
    AgentSpec, CommandAgent, HttpAgent, OpenAiAgent, PersonaModels, ReplayAgent, ScriptAgent,
    SimulatedUser, parse_agent_spec,
};
use gauntlet_model::{FORMAT_VERSION, RunHeader, TrialSummary, Versions};
use gauntlet_runner::{RunEvent, RunPlan, TrialPlan, run_trials, trace_id, trial_seed};
use gauntlet_store::{Index, RunWriter};
use gauntlet_suite::sha256_hex;
use gauntlet_world::{FaultPlan, FaultRule};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::RunArgs;
use crate::commands::shared::{load_suite, print_results, state_dir, verdict_code};
use crate::exit::ExpectedError;
use crate::results::{build_results, now};

pub fn run(args: RunArgs) -> Result<i32, ExpectedError> {
    let suite = load_suite(&args.suite)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ExpectedError::harness(format!("failed to start the async runtime: {e}")))?;
    let gateway = start_gateway(&runtime, &args, &suite)?;
    // A resumed run keeps what it started with; a new one takes the options, then the suite's.
    let resumed = match &args.resume {
        Some(dir) => Some(
            RunWriter::resume(dir)
                .map_err(|e| ExpectedError::input(format!("cannot resume the run: {e}")))?,
        ),
        None => None,
    };
    let old = resumed.as_ref().map(|(_, header, _)| header);
    let agent_spec = old.map(|h| h.agent.clone()).unwrap_or_else(|| {
        args.agent
            .clone()
            .or_else(|| suite.config.agent.clone())
            .unwrap_or_else(|| "script:reference".to_owned())
    });
    let seed = old.map_or_else(|| args.seed.or(suite.config.seed).unwrap_or(0), |h| h.seed);
    let epochs = old.map_or_else(
        || args.epochs.or(suite.config.epochs).unwrap_or(1),
        |h| h.epochs,
    );
    let filter = old.map_or_else(|| args.filter.clone(), |h| h.filter.clone());
    if epochs == 0 {
        return Err(ExpectedError::input("--epochs must be at least 1"));
    }
    if !(args.trial_timeout > 0.0 && args.trial_timeout.is_finite()) {
        return Err(ExpectedError::input(
            "--trial-timeout must be a positive number of seconds",
        ));
    }
    let mut cases: Vec<_> = suite
        .cases
        .iter()
        .filter(|c| filter.as_deref().is_none_or(|f| c.case.case_id.contains(f)))
        .collect();
    if cases.is_empty() {
        return Err(ExpectedError::input(format!(
            "no case id contains `{}`",
            filter.as_deref().unwrap_or_default()
        )));
    }
    let agent: Arc<dyn gauntlet_agent::Agent> = match parse_agent_spec(&agent_spec)
        .map_err(ExpectedError::input)?
    {
        AgentSpec::Script(name) => {
            let script = ScriptAgent::new(&name, cases.iter().map(|c| &c.case))
                .map_err(ExpectedError::input)?;
            // A script plays only the cases it has a plan for; say which it leaves out.
            let skipped: Vec<&str> = cases
                .iter()
                .filter(|c| !script.has_plan(&c.case.case_id))
                .map(|c| c.case.case_id.as_str())
                .collect();
            if !skipped.is_empty() && !args.quiet && !args.json {
                eprintln!(
                    "note: script `{name}` has no plan for {} case(s), not run: {}",
                    skipped.len(),
                    skipped.join(", ")
                );
            }
            cases.retain(|c| script.has_plan(&c.case.case_id));
            if cases.is_empty() {
                return Err(ExpectedError::input(format!(
                    "script `{name}` has a plan for no case"
                )));
            }
            Arc::new(script)
        }
        AgentSpec::Command(command) => {
            let dir = std::env::current_dir()
                .map_err(|e| ExpectedError::harness(format!("no working directory: {e}")))?;
            Arc::new(CommandAgent::new(&command, dir, gateway.clone()))
        }
        AgentSpec::Replay(file) => {
            let replay = ReplayAgent::load(&file).map_err(ExpectedError::input)?;
            let before = cases.len();
            cases.retain(|c| replay.has_case(&c.case.case_id));
            if cases.is_empty() {
                return Err(ExpectedError::input(format!(
                    "the log {file} has no trajectory for any case of the suite"
                )));
            }
            if cases.len() < before && !args.quiet && !args.json {
                eprintln!(
                    "note: the log has trajectories for {} of {} cases; only those run",
                    cases.len(),
                    before
                );
            }
            Arc::new(replay)
        }
        AgentSpec::Http(url) => Arc::new(HttpAgent::new(&url, gateway.clone())),
        AgentSpec::OpenAi(model) => {
            let Some(g) = gateway.clone() else {
                return Err(ExpectedError::input(
                    "`openai:MODEL` needs a model endpoint: give --gateway-upstream URL (or the suite's gateway.upstream), or --replay CASSETTE",
                ));
            };
            Arc::new(OpenAiAgent::new(
                &model,
                suite.config.system_prompt.clone(),
                suite.config.max_steps.unwrap_or(20),
                g,
            ))
        }
    };

    let profile_name = match (old, args.faults.as_deref()) {
        (Some(h), _) => h.fault_profile.clone(),
        (None, Some("none")) => None,
        (None, Some(name)) => Some(name.to_owned()),
        (None, None) => suite.config.fault_profile.clone(),
    };
    let profile: Vec<FaultRule> = match &profile_name {
        None => Vec::new(),
        Some(name) => match suite.config.fault_profiles.get(name) {
            Some(rules) => rules
                .iter()
                .map(|spec| FaultRule {
                    spec: spec.clone(),
                    source: format!("profile:{name}"),
                })
                .collect(),
            None => {
                let known: Vec<&str> = suite
                    .config
                    .fault_profiles
                    .keys()
                    .map(String::as_str)
                    .collect();
                return Err(ExpectedError::input(format!(
                    "no fault profile `{name}` in {} (it has: {})",
                    suite.config_file.display(),
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                )));
            }
        },
    };
    let started_at = old.map_or_else(now, |h| h.started_at.clone());
    let shard = old.map_or(args.shard, |h| h.shard);
    if let Some(id) = &args.run_id
        && (id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(ExpectedError::input(format!(
            "--run-id `{id}`: use letters, digits, `.`, `_` and `-` only"
        )));
    }
    let run_id = old.map_or_else(
        || args.run_id.clone().unwrap_or_else(new_run_id),
        |h| h.run_id.clone(),
    );
    let header = RunHeader {
        format_version: FORMAT_VERSION,
        run_id: run_id.clone(),
        suite: suite.config.name.clone(),
        agent: agent_spec.clone(),
        seed,
        epochs,
        started_at,
        versions: Versions {
            harness: env!("CARGO_PKG_VERSION").to_owned(),
            worlds: suite
                .worlds
                .iter()
                .map(|(n, w)| (n.clone(), w.hash.clone()))
                .collect(),
            dataset: suite.dataset_hash.clone(),
            agent: sha256_hex(agent_spec.as_bytes()),
            config: suite.config_hash.clone(),
        },
        fault_profile: profile_name.clone(),
        rubric: suite.rubric.as_ref().map(|r| r.def().clone()),
        filter: filter.clone(),
        shard,
    };
    if let Some(old) = old {
        let changed = changed_since(&old.versions, &header.versions);
        if !changed.is_empty() {
            return Err(ExpectedError::input(format!(
                "cannot resume the run: the {} changed since it started; start a new run",
                changed.join(", ")
            )));
        }
    }

    let mut trials = Vec::new();
    // Cases without their own initial_state share their world's state.
    let mut world_states: std::collections::HashMap<String, Arc<serde_json::Value>> =
        std::collections::HashMap::new();
    for lc in &cases {
        let case = Arc::new(lc.case.clone());
        let world = suite.world_of(lc);
        let initial_state = if lc.case.initial_state.is_empty() {
            let name = world.world.spec().name.clone();
            Arc::clone(
                world_states
                    .entry(name)
                    .or_insert_with(|| Arc::new(suite.initial_state(lc))),
            )
        } else {
            Arc::new(suite.initial_state(lc))
        };
        let context = lc
            .case
            .context
            .clone()
            .unwrap_or_else(|| world.world.spec().default_context.clone());
        let case_rules: Vec<FaultRule> = lc
            .case
            .faults
            .iter()
            .map(|spec| FaultRule {
                spec: spec.clone(),
                source: "case".to_owned(),
            })
            .chain(profile.iter().cloned())
            .collect();
        for epoch in 0..epochs {
            let seed = trial_seed(seed, &lc.case.case_id, epoch);
            trials.push(TrialPlan {
                case: Arc::clone(&case),
                world: Arc::clone(&world.world),
                initial_state: Arc::clone(&initial_state),
                context: context.clone(),
                epoch,
                seed,
                faults: FaultPlan {
                    rules: case_rules.clone(),
                    seed,
                },
                trace_id: trace_id(&run_id, &lc.case.case_id, epoch),
            });
        }
    }
    // A shard keeps its share of the plan, in plan order.
    if let Some(shard) = shard {
        trials = trials
            .into_iter()
            .enumerate()
            .filter(|(i, _)| shard.holds(*i))
            .map(|(_, t)| t)
            .collect();
    }
    let total = trials.len();
    // Records are written as trials end and only their summaries are kept; a resumed run's
    // earlier trials are summarised from their records and not run again.
    let mut summaries: Vec<Option<TrialSummary>> = (0..total).map(|_| None).collect();
    let (out, mut writer) = match resumed {
        Some((writer, _, done)) => {
            let mut done: std::collections::HashMap<(String, u32), TrialSummary> = done
                .into_iter()
                .map(|t| ((t.case_id.clone(), t.epoch), t))
                .collect();
            for (i, t) in trials.iter().enumerate() {
                summaries[i] = done.remove(&(t.case.case_id.clone(), t.epoch));
            }
            if !args.quiet && !args.json {
                let n = summaries.iter().flatten().count();
                eprintln!(
                    "resuming {}: {n} of {total} trials already done",
                    writer.dir().display()
                );
            }
            (writer.dir().to_owned(), writer)
        }
        None => {
            let folder = match shard {
                Some(s) => format!("{run_id}-shard-{}-of-{}", s.index, s.count),
                None => run_id.clone(),
            };
            let out = args
                .out
                .clone()
                .unwrap_or_else(|| state_dir(&suite).join("runs").join(folder));
            let writer = RunWriter::create(&out, &header).map_err(|e| {
                ExpectedError::harness(format!("failed to create the run folder: {e}"))
            })?;
            (out, writer)
        }
    };
    // The plan position of each trial still to run.
    let (positions, trials): (Vec<usize>, Vec<TrialPlan>) = trials
        .into_iter()
        .enumerate()
        .filter(|(i, _)| summaries[*i].is_none())
        .unzip();

    let progress = if args.quiet || args.json {
        ProgressBar::hidden()
    } else {
        let pb =
            ProgressBar::with_draw_target(Some(trials.len() as u64), ProgressDrawTarget::stderr());
        pb.set_style(
            ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} trials  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        pb
    };
    let mut write_error = None;
    let persona = persona_models(&args, &suite, gateway.as_ref(), &cases)?;
    let plan = RunPlan {
        trials,
        concurrency: args.concurrency.max(1),
        trial_timeout: Duration::from_secs_f64(args.trial_timeout),
        custom: Arc::new((custom_evaluators(&suite)?, suite.root.clone())),
        persona,
    };
    runtime.block_on(run_trials(plan, agent, |event| match event {
        RunEvent::TrialStarted { case_id, .. } => progress.set_message(case_id),
        RunEvent::TrialFinished {
            index,
            record,
            initial_state,
        } => {
            let mut record = record;
            if let Err(e) = writer.append_shared(&mut record, &initial_state) {
                write_error.get_or_insert(e);
            }
            // Summarised as stored: a large final state is its reference and changes.
            summaries[positions[index]] = Some(TrialSummary::of(&record));
            progress.inc(1);
        }
    }));
    progress.finish_and_clear();
    if let Some(g) = &gateway {
        runtime
            .block_on(g.shutdown())
            .map_err(|e| ExpectedError::harness(format!("failed to write the cassette: {e}")))?;
    }
    if let Some(e) = write_error {
        return Err(ExpectedError::harness(format!(
            "failed to record a trial: {e}"
        )));
    }

    let summaries: Vec<TrialSummary> = summaries.into_iter().flatten().collect();
    let (results, gate_errors) =
        build_results(header, summaries, &suite.gates, suite.rubric.as_ref());
    writer
        .finish(&results)
        .map_err(|e| ExpectedError::harness(format!("failed to write results: {e}")))?;
    // The index only makes past runs listable; a failure to update it loses no result. A part
    // of a sharded run is listed once merged.
    if let Err(e) = Index::open(&state_dir(&suite).join("index.sqlite")).and_then(|mut i| {
        if shard.is_none() {
            i.record(&results, &out)
        } else {
            Ok(())
        }
    }) {
        eprintln!(
            "warning: the run is stored in {} but the run index could not be updated: {e}",
            out.display()
        );
    }
    let reports = crate::commands::report::write_reports(&out, &results, &args.report)?;
    print_results(&results, args.json, args.quiet);
    if !args.quiet && !args.json {
        println!("results: {}", out.join("results.json").display());
        for r in reports {
            println!("report: {}", r.display());
        }
    }
    if let Some(s) = shard {
        if !args.quiet && !args.json {
            println!(
                "shard {s}: its gates saw this part only; `gauntlet merge` decides the run's verdict"
            );
        }
        // A gate that cannot be decided is still an error; a failed one waits for the merge.
        verdict_code(&results, gate_errors)?;
        return Ok(crate::exit::GATES_PASSED);
    }
    verdict_code(&results, gate_errors)
}

/// What differs between the versions a run started with and today's: the names of the parts.
fn changed_since(then: &Versions, now: &Versions) -> Vec<&'static str> {
    [
        ("harness", then.harness == now.harness),
        ("worlds", then.worlds == now.worlds),
        ("dataset", then.dataset == now.dataset),
        ("agent", then.agent == now.agent),
        ("suite configuration", then.config == now.config),
    ]
    .into_iter()
    .filter(|(_, same)| !same)
    .map(|(name, _)| name)
    .collect()
}

/// Starts the LLM gateway when the run needs one (a model endpoint, a cassette to record or
/// replay); the upstream key comes from `GAUNTLET_UPSTREAM_API_KEY`, else `OPENAI_API_KEY`.
fn start_gateway(
    runtime: &tokio::runtime::Runtime,
    args: &RunArgs,
    suite: &gauntlet_suite::Suite,
) -> Result<Option<Arc<Gateway>>, ExpectedError> {
    let cfg = suite.config.gateway.clone().unwrap_or_default();
    let upstream = args.gateway_upstream.clone().or(cfg.upstream);
    let mode = match (&args.record, &args.replay) {
        (Some(_), Some(_)) => {
            return Err(ExpectedError::input(
                "--record and --replay exclude each other",
            ));
        }
        (Some(p), None) => Mode::Record(p.clone()),
        (None, Some(p)) => Mode::Replay(p.clone()),
        (None, None) => Mode::Live,
    };
    if upstream.is_none() && mode == Mode::Live {
        return Ok(None);
    }
    let api_key = std::env::var("GAUNTLET_UPSTREAM_API_KEY")
        .or_else(|_| std::env::var("OPENAI_API_KEY"))
        .ok();
    let config = GatewayConfig {
        upstream,
        api_key,
        mode,
        prices: cfg.prices,
    };
    runtime
        .block_on(Gateway::start(config))
        .map(|g| Some(Arc::new(g)))
        .map_err(|e| ExpectedError::input(format!("cannot start the LLM gateway: {e}")))
}

/// Where users with an LLM persona get their words; an input error, naming the case, when a
/// case's persona has no endpoint or no model.
fn persona_models(
    args: &RunArgs,
    suite: &gauntlet_suite::Suite,
    gateway: Option<&Arc<Gateway>>,
    cases: &[&gauntlet_suite::LoadedCase],
) -> Result<Option<PersonaModels>, ExpectedError> {
    let models = gateway.map(|g| PersonaModels {
        gateway: Arc::clone(g),
        default_model: args.user_model.clone().or(suite.config.user_model.clone()),
        prompt: suite.config.user_prompt.clone(),
    });
    for lc in cases {
        let case = &lc.case;
        if let Err(why) =
            SimulatedUser::for_trial(case.user.clone(), models.as_ref(), &case.case_id, 0)
        {
            return Err(ExpectedError::input(format!(
                "case `{}` ({}): {why}",
                case.case_id,
                lc.file.display()
            )));
        }
    }
    Ok(models)
}

/// The suite's custom evaluators, for the runner.
pub fn custom_evaluators(
    suite: &gauntlet_suite::Suite,
) -> Result<Vec<gauntlet_runner::CustomEvaluator>, ExpectedError> {
    use gauntlet_runner::CustomKind;
    suite
        .config
        .evaluators
        .iter()
        .map(|e| {
            let runs = match (&e.command, &e.script) {
                (Some(c), None) => CustomKind::Command(c.clone()),
                (None, Some(file)) => {
                    let path = suite.root.join(file);
                    let source = std::fs::read_to_string(&path).map_err(|err| {
                        ExpectedError::input(format!(
                            "evaluator `{}`: {}: {err}",
                            e.name,
                            path.display()
                        ))
                    })?;
                    CustomKind::Script {
                        file: file.clone(),
                        source,
                        function: e.function.clone().unwrap_or_else(|| "evaluate".to_owned()),
                    }
                }
                _ => {
                    return Err(ExpectedError::input(format!(
                        "evaluator `{}` needs exactly one of `command` and `script`",
                        e.name
                    )));
                }
            };
            Ok(gauntlet_runner::CustomEvaluator {
                name: e.name.clone(),
                runs,
                timeout_s: e.timeout_s,
            })
        })
        .collect()
}

/// A run id that sorts by time: `20261130T071403Z-1a2b3c`.
fn new_run_id() -> String {
    let now = jiff::Timestamp::now();
    let stamp = now.strftime("%Y%m%dT%H%M%SZ").to_string();
    let noise = sha256_hex(format!("{}{}", now.as_nanosecond(), std::process::id()).as_bytes());
    format!("{stamp}-{}", &noise[..6])
}
