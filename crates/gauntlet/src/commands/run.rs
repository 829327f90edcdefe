//! `gauntlet run SUITE`: the library's run ([`gauntlet_runner::Run`]) with the CLI's sinks:
//! the terminal (progress, notes, the summary), `--events`, the run index, the reports, a stop
//! on SIGINT or SIGTERM; the verdict becomes the exit code.

use std::time::Duration;

use gauntlet_model::RunEvent;
use gauntlet_runner::{Finished, Notice, Observer, Run};

use crate::cli::RunArgs;
use crate::commands::shared::{
    index_run, listing_trials, load_suite, report_finished, verdict_code,
};
use crate::exit::ExpectedError;

pub fn run(args: RunArgs) -> Result<i32, ExpectedError> {
    let suite = load_suite(&args.suite)?;
    let runtime = crate::commands::shared::runtime()?;
    let run = library_run(&args, &suite)?;
    let mut terminal = Terminal::new(&args, &runtime)?;
    let Finished {
        results,
        gate_errors,
        dir: out,
        shard,
        spill,
    } = runtime.block_on(run.execute(&mut terminal))?;
    terminal.progress.finish();
    // A part of a sharded run is listed once merged.
    if shard.is_none() {
        index_run(&suite.state_dir(), &results, &out);
    }
    let results = listing_trials(results, spill.is_some(), args.json, &args.report, &out)?;
    drop(spill);
    let reports = crate::commands::report::write_reports(&out, &results, &args.report)?;
    if let Some(lines) = terminal.events.as_mut() {
        let at = gauntlet_runner::now();
        lines.line(&gauntlet_model::events::run_finished_wire(&results, &at));
    }
    let results = report_finished(results, args.json, args.quiet || terminal.events_on_stdout);
    if let Some(failure) = terminal.events.as_ref().and_then(|l| l.failure()) {
        return Err(ExpectedError::harness(failure));
    }
    if terminal.talk {
        println!("results: {}", out.join("results.json").display());
        for r in reports {
            println!("report: {}", r.display());
        }
        if let Some(s) = shard {
            println!(
                "shard {s}: its gates saw this part only; `gauntlet merge` decides the run's verdict"
            );
        }
    }
    // A gate that cannot be decided is still an error; in a part, a failed one waits for the
    // merge, and so does one it could not decide (an empty part: no trials).
    let code = verdict_code(
        &results,
        if shard.is_some() {
            Vec::new()
        } else {
            gate_errors
        },
    )?;
    Ok(if shard.is_some() {
        crate::exit::GATES_PASSED
    } else {
        code
    })
}

/// The library's run as the arguments describe it.
fn library_run<'s>(
    args: &RunArgs,
    suite: &'s gauntlet_suite::Suite,
) -> Result<Run<'s>, ExpectedError> {
    if !(args.trial_timeout > 0.0 && args.trial_timeout.is_finite()) {
        return Err(ExpectedError::input(
            "--trial-timeout must be a positive number of seconds",
        ));
    }
    let mut run = Run::new(suite)
        .options(args.run_options()?)
        .gateway(args.gateway_options()?)
        .concurrency(args.concurrency)
        .trial_timeout(Duration::from_secs_f64(args.trial_timeout))
        .retry_errors(args.retry_errors)
        .isolation(args.isolation.into())
        .user_model(args.user_model.clone())
        .keep_summaries(crate::commands::score::kept_summaries());
    if let Some(out) = &args.out {
        run = run.out(out);
    }
    if let Some(dir) = &args.resume {
        run = run.resume(dir, args.set_aside_corrupt);
    }
    Ok(run)
}

/// The run as the terminal follows it: notes and warnings on stderr, the progress bar,
/// `--events`, and the stop on a signal once the run folder exists.
struct Terminal<'a> {
    talk: bool,
    /// `--events -`: stdout holds the event lines and nothing else.
    events_on_stdout: bool,
    progress: crate::progress::Progress,
    events: Option<crate::events::EventLines>,
    runtime: &'a tokio::runtime::Runtime,
    args: &'a RunArgs,
}

impl<'a> Terminal<'a> {
    fn new(args: &'a RunArgs, runtime: &'a tokio::runtime::Runtime) -> Result<Self, ExpectedError> {
        let events = args
            .events
            .as_deref()
            .map(|path| {
                let folder = args.out.as_deref().or(args.resume.as_deref());
                crate::events::EventLines::open_beside(path, folder)
            })
            .transpose()?;
        let events_on_stdout = args.events.as_deref() == Some(std::path::Path::new("-"));
        let talk = !args.quiet && !args.json && !events_on_stdout;
        Ok(Terminal {
            talk,
            events_on_stdout,
            progress: crate::progress::Progress::new(talk),
            events,
            runtime,
            args,
        })
    }
}

impl Observer for Terminal<'_> {
    fn notice(&mut self, notice: Notice) {
        match notice {
            Notice::Warning(w) => eprintln!("warning: {w}"),
            Notice::Note(n) if self.talk => eprintln!("note: {n}"),
            Notice::Note(_) => {}
            Notice::Folder {
                dir,
                already_done,
                planned,
            } => {
                if self.talk && self.args.resume.is_some() {
                    eprintln!(
                        "resuming {}: {already_done} of {planned} trials already done",
                        dir.display()
                    );
                }
                self.runtime.spawn(crate::stop::stop_on_signal(
                    self.runtime,
                    crate::stop::resume_command(self.args, &dir),
                ));
            }
        }
    }

    fn follows_trials(&self) -> bool {
        self.events.is_some()
    }

    fn event(&mut self, event: &RunEvent) {
        if let Some(lines) = self.events.as_mut() {
            lines.event(event);
        }
        self.progress.report(event);
    }
}
