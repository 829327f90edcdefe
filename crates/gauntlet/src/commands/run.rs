//! `gauntlet run SUITE`: the library's run ([`gauntlet_runner::Run`]) with the CLI's sinks:
//! the terminal (progress, notes, the summary), `--events`, the run index, the reports, a stop
//! on SIGINT or SIGTERM; the verdict becomes the exit code.

use std::path::PathBuf;

use gauntlet_model::RunEvent;
use gauntlet_runner::{Finished, Notice, Observer, Run, RunRequest};

use crate::exit::ExpectedError;
use crate::shared::{index_run, listing_trials, load_suite, report_finished, verdict_code};

/// Run a suite: every case (× epochs) against an agent, scored, gated and stored
///
/// Example:
///   gauntlet run examples/incident-desk --agent script:reference
///
/// Agents (--agent):
///   script:reference     replays each case's reference_trajectory; script:skip-confirmation,
///                        script:forbidden, script:loop, script:over-budget break it on
///                        purpose; script:NAME also plays a case's own scripts.NAME
///   cmd:COMMAND          any program, once per trial: the case on stdin, the world's tools
///                        over MCP (GAUNTLET_MCP_URL, GAUNTLET_MCP_TOKEN), its model through
///                        the gateway (OPENAI_BASE_URL), the answer on stdout
///   http://HOST/PATH     an agent service that receives each trial as a POST
///   openai:MODEL         the built-in tool-calling agent (needs --gateway-upstream or --replay-cassette)
///   replay:FILE          re-executes recorded tool calls (a run folder, trials.jsonl, an
///                        OpenAI-messages log, a tau-bench log) against today's worlds
///   python:MODULE:FUNCTION  a Python function agent(case, tools, user), in process, the
///                        module imported from the current folder; only with the gauntlet
///                        command `pip install gauntlet-harness` installs (this binary has
///                        no Python in it)
///
/// An agent that crashes once started (raises, exits non-zero) fails its trial
/// (agent_completed); one that cannot start is a harness error, as are a world or model
/// upstream that failed (--retry-errors N plays such trials again).
///
/// Exit codes: 0 every gate passed, 1 a gate failed, 2 invalid input, 3 harness failure.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The suite folder (holding gauntlet.yaml) or its configuration file.
    pub suite: PathBuf,
    /// The run's options: the library's request, whatever the door (`gauntlet.run`'s keyword
    /// arguments are the same keys).
    #[command(flatten)]
    pub request: RunRequest,
    /// Also write these reports into the run folder (report.html, junit.xml, summary.md).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub report: Vec<crate::reports::Format>,
    /// The global `--quiet`, set by dispatch.
    #[arg(skip)]
    pub quiet: bool,
    /// Print the results (results.json with its trial summaries) on stdout instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Under the summary, say why every failed trial failed (by default the first 20).
    #[arg(long)]
    pub explain: bool,
    /// Write the run's event stream to this file as it happens (`-` for stdout, which then
    /// holds nothing else): NDJSON, one object a line with its `type` (run_started,
    /// trial_started, trial_finished, run_finished) and `at` (RFC 3339); trial_finished
    /// carries case_id, epoch and status, run_finished the verdict (docs/reference.md).
    #[arg(long, value_name = "PATH", conflicts_with = "json")]
    pub events: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<i32, ExpectedError> {
    let suite = load_suite(&args.suite)?;
    let runtime = crate::shared::runtime()?;
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
    let reports = crate::reports::write_reports(&out, &results, &args.report)?;
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
    args: &Args,
    suite: &'s gauntlet_suite::Suite,
) -> Result<Run<'s>, ExpectedError> {
    Ok(Run::from_request(suite, args.request.clone())?
        .keep_summaries(crate::shared::kept_summaries()))
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
    args: &'a Args,
}

impl<'a> Terminal<'a> {
    fn new(args: &'a Args, runtime: &'a tokio::runtime::Runtime) -> Result<Self, ExpectedError> {
        let events = args
            .events
            .as_deref()
            .map(|path| {
                let folder = args
                    .request
                    .out
                    .as_deref()
                    .or(args.request.resume.as_deref());
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
                if self.talk && self.args.request.resume.is_some() {
                    eprintln!(
                        "resuming {}: {already_done} of {planned} trials already done",
                        dir.display()
                    );
                }
                self.runtime.spawn(crate::stop::stop_on_signal(
                    self.runtime,
                    resume_command(self.args, &dir),
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

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(mut self) -> Result<i32, ExpectedError> {
        self.quiet = crate::say::quiet();
        crate::reports::set_explain(self.explain);
        run(self)
    }
}

/// The command that finishes this run, to paste into the same shell: the suite, the run folder,
/// and the flags given that `--resume` accepts (the rest come from the run's header).
fn resume_command(args: &Args, out: &std::path::Path) -> String {
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
    let r = &args.request;
    if let Some(n) = r.concurrency {
        flag("concurrency", n.to_string());
    }
    if let Some(t) = r.trial_timeout {
        flag("trial-timeout", t.to_string());
    }
    if r.retry_errors > 0 {
        flag("retry-errors", r.retry_errors.to_string());
    }
    if let Some(eur) = r.max_cost_eur {
        flag("max-cost-eur", eur.to_string());
    }
    if let Some(u) = &r.gateway_upstream {
        flag("gateway-upstream", u.clone());
    }
    if let Some(c) = &r.replay_cassette {
        flag("replay-cassette", c.to_string_lossy().into_owned());
    }
    if let Some(m) = &r.user_model {
        flag("user-model", m.clone());
    }
    if let Some(i) = &r.isolation {
        flag("isolation", i.clone());
    }
    command
}
