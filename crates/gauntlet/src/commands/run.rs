//! `gauntlet run SUITE`: wiring. The runner plans and runs the trials and emits run events;
//! the store and the terminal consume them; the verdict becomes the exit code.

use std::sync::Arc;
use std::time::Duration;

use gauntlet_eval::build_results;
use gauntlet_model::digest::sha256_hex;
use gauntlet_model::{RunEvent, TrialSummary};
use gauntlet_runner::agents::{ChosenAgent, choose_agent, persona_models, start_gateway};
use gauntlet_runner::plan::{already_done, check_unchanged, custom_evaluators};
use gauntlet_runner::{RunPlan, Settings, run_trials};
use gauntlet_store::RunWriter;

use crate::cli::RunArgs;
use crate::commands::shared::{index_run, load_suite, report_finished, state_dir, verdict_code};
use crate::exit::ExpectedError;
use crate::results::now;

pub fn run(args: RunArgs) -> Result<i32, ExpectedError> {
    let suite = load_suite(&args.suite)?;
    if args.concurrency == 0 {
        return Err(ExpectedError::input(
            "--concurrency must be at least 1 (trials at once)",
        ));
    }
    if !(args.trial_timeout > 0.0 && args.trial_timeout.is_finite()) {
        return Err(ExpectedError::input(
            "--trial-timeout must be a positive number of seconds",
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ExpectedError::harness(format!("failed to start the async runtime: {e}")))?;
    let gateway = runtime
        .block_on(start_gateway(args.gateway_options()?, &suite))
        .map_err(|e| ExpectedError::doing("cannot start the LLM gateway", &e))?;
    let resumed = match &args.resume {
        Some(dir) => Some(
            RunWriter::resume_with(dir, args.set_aside_corrupt)
                .map_err(|e| ExpectedError::input(format!("cannot resume the run: {e}")))?,
        ),
        None => None,
    };
    let old = resumed.as_ref().map(|(_, header, _)| header);
    let settings = Settings::resolve(&suite, &args.run_options(), old, now, new_run_id)?;
    let mut events = args
        .events
        .as_deref()
        .map(crate::events::EventLines::open)
        .transpose()?;
    // With `--events -`, stdout holds the event lines and nothing else.
    let events_on_stdout = args.events.as_deref() == Some(std::path::Path::new("-"));
    let talk = !args.quiet && !args.json && !events_on_stdout;
    let cases = settings.cases(&suite)?;
    let workdir = std::env::current_dir()
        .map_err(|e| ExpectedError::harness(format!("no working directory: {e}")))?;
    let ChosenAgent {
        agent,
        cases,
        notes,
        warnings,
    } = choose_agent(
        &settings.agent,
        cases,
        &suite,
        gateway.as_ref(),
        workdir,
        args.isolation.into(),
    )?;
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    if talk {
        for note in notes {
            eprintln!("note: {note}");
        }
    }
    let judges = gauntlet_runner::judge::judge_panel(
        &suite,
        gateway.as_ref(),
        &state_dir(&suite).join("judge-cache.sqlite"),
        args.record.is_some(),
    )?;
    if let Some(w) = judges.as_ref().and_then(|j| j.endpoint_warning()) {
        eprintln!("warning: {w}");
    }
    let mut header = settings.header(&suite);
    header.judges = judges.as_ref().map(|j| j.headers()).unwrap_or_default();
    if let Some(old) = old {
        check_unchanged(old, &header)?;
    }
    let trials = settings.trials(&suite, &cases);
    let total = trials.len();
    // Records are written as trials end and only their summaries are kept; a resumed run's
    // earlier trials are summarised from their records and not run again.
    let (out, mut writer, mut summaries) = match resumed {
        Some((writer, _, done)) => {
            let summaries = already_done(&trials, done);
            if talk {
                let n = summaries.iter().flatten().count();
                eprintln!(
                    "resuming {}: {n} of {total} trials already done",
                    writer.dir().display()
                );
            }
            (writer.dir().to_owned(), writer, summaries)
        }
        None => {
            let folder = match settings.shard {
                Some(s) => format!("{}-shard-{}-of-{}", settings.run_id, s.index, s.count),
                None => settings.run_id.clone(),
            };
            let out = args
                .out
                .clone()
                .unwrap_or_else(|| state_dir(&suite).join("runs").join(folder));
            let writer = RunWriter::create(&out, &header)
                .map_err(|e| ExpectedError::doing("failed to create the run folder", &e))?;
            (out, writer, vec![None; total])
        }
    };
    // The plan position of each trial still to run.
    let (positions, trials): (Vec<usize>, Vec<_>) = trials
        .into_iter()
        .enumerate()
        .filter(|(i, _)| summaries[*i].is_none())
        .unzip();
    // The servers of real-service worlds run in the same sandbox as command agents.
    let services_sandbox = if trials.iter().any(|t| t.world.spec().service.is_some()) {
        let (sandbox, warning) =
            gauntlet_agent::Sandbox::detect(args.isolation.into()).map_err(ExpectedError::input)?;
        if let Some(w) = warning {
            eprintln!(
                "warning: {}",
                w.replace(
                    "command agents are",
                    "real-service world servers and command agents are"
                )
            );
        }
        Some(Arc::new(sandbox))
    } else {
        None
    };
    let plan = RunPlan {
        header: header.clone(),
        already_done: total - trials.len(),
        trials,
        concurrency: args.concurrency,
        trial_timeout: Duration::from_secs_f64(args.trial_timeout),
        custom: Arc::new(custom_evaluators(&suite)?),
        benchmark: suite.config.benchmark.clone().map(Arc::new),
        persona: persona_models(args.user_model.clone(), &suite, gateway.as_ref(), &cases)?,
        judges,
        services_sandbox,
    };
    runtime.spawn(stop_on_signal(&runtime, resume_command(&args, &out)));
    let progress = crate::progress::Progress::new(talk);
    let mut write_error = None;
    // Two consumers of the event stream: the store, then the progress bar (a record is
    // summarised as stored: a large final state is its reference and changes).
    runtime.block_on(run_trials(plan, agent, |mut event| {
        if let Err(e) = writer.consume(&mut event) {
            write_error.get_or_insert(e);
        }
        if let RunEvent::TrialFinished { index, record, .. } = &event {
            summaries[positions[*index]] = Some(TrialSummary::of(record));
        }
        if let Some(lines) = events.as_mut() {
            lines.event(&event);
        }
        progress.report(&event);
    }));
    progress.finish();
    if let Some(g) = &gateway {
        runtime
            .block_on(g.shutdown())
            .map_err(|e| ExpectedError::harness(format!("failed to write the cassette: {e}")))?;
    }
    if let Some(e) = write_error {
        return Err(ExpectedError::doing("failed to record a trial", &e));
    }

    let summaries: Vec<TrialSummary> = summaries.into_iter().flatten().collect();
    let (results, gate_errors) = build_results(
        header,
        now(),
        summaries,
        &suite.gates,
        suite.rubric.as_ref(),
    );
    writer
        .finish(&results)
        .map_err(|e| ExpectedError::doing("failed to write results", &e))?;
    // A part of a sharded run is listed once merged.
    if settings.shard.is_none() {
        index_run(&state_dir(&suite), &results, &out);
    }
    let reports = crate::commands::report::write_reports(&out, &results, &args.report)?;
    if let Some(lines) = events.as_mut() {
        lines.line(&gauntlet_model::events::run_finished_wire(&results, &now()));
    }
    let results = report_finished(results, args.json, args.quiet || events_on_stdout);
    if talk {
        println!("results: {}", out.join("results.json").display());
        for r in reports {
            println!("report: {}", r.display());
        }
    }
    if let Some(s) = settings.shard {
        if talk {
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

/// On SIGINT or SIGTERM: kills every running agent (they sit in process groups of their own,
/// which a terminal's Ctrl-C does not reach), says how to resume, and exits 130 or 143. The
/// trials already finished are stored; the run resumes from them.
/// The handlers are installed before this returns (a signal that comes before the task first
/// runs is not lost to the default action, which would skip the clean-up).
fn stop_on_signal(
    runtime: &tokio::runtime::Runtime,
    resume: String,
) -> impl Future<Output = ()> + use<> {
    use tokio::signal::unix::{SignalKind, signal};
    let _entered = runtime.enter();
    let signals = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    );
    async move {
        let (Ok(mut int), Ok(mut term)) = signals else {
            return;
        };
        stop_on(&mut int, &mut term, resume).await;
    }
}

async fn stop_on(
    int: &mut tokio::signal::unix::Signal,
    term: &mut tokio::signal::unix::Signal,
    resume: String,
) {
    let code = tokio::select! {
        _ = int.recv() => 130,
        _ = term.recv() => 143,
    };
    let killed = gauntlet_agent::kill_all_agents();
    // The trials' real services: their servers die with this process; their folders go now.
    gauntlet_services::remove_own();
    gauntlet_agent::scratch::remove_own();
    eprintln!(
        "\nstopped: {killed} running agent(s) killed; finished trials are stored. \
         Resume with: {resume}"
    );
    std::process::exit(code);
}

/// The command that finishes this run, to paste into the same shell: the suite, the run folder,
/// and the flags given that `--resume` accepts (the rest come from the run's header).
fn resume_command(args: &RunArgs, out: &std::path::Path) -> String {
    let quote = |s: &str| {
        shlex::try_quote(s)
            .map(|q| q.into_owned())
            .unwrap_or_else(|_| s.to_owned())
    };
    let path = |p: &std::path::Path| quote(&p.to_string_lossy());
    let mut command = format!("gauntlet run {} --resume {}", path(&args.suite), path(out));
    let mut flag = |name: &str, value: String| {
        command.push_str(&format!(" --{name} {}", quote(&value)));
    };
    if args.concurrency != 4 {
        flag("concurrency", args.concurrency.to_string());
    }
    if args.trial_timeout != 300.0 {
        flag("trial-timeout", args.trial_timeout.to_string());
    }
    if let Some(u) = &args.gateway_upstream {
        flag("gateway-upstream", u.clone());
    }
    if let Some(c) = &args.replay {
        flag("replay-cassette", c.to_string_lossy().into_owned());
    }
    if let Some(m) = &args.user_model {
        flag("user-model", m.clone());
    }
    if !matches!(args.isolation, crate::cli::IsolationArg::Auto) {
        let name = match args.isolation {
            crate::cli::IsolationArg::Bubblewrap => "bubblewrap",
            _ => "none",
        };
        flag("isolation", name.to_owned());
    }
    command
}

/// A run id that sorts by time: `20261130T071403Z-1a2b3c`.
fn new_run_id() -> String {
    let now = jiff::Timestamp::now();
    let stamp = now.strftime("%Y%m%dT%H%M%SZ").to_string();
    let noise = sha256_hex(format!("{}{}", now.as_nanosecond(), std::process::id()).as_bytes());
    format!("{stamp}-{}", &noise[..6])
}
