//! `gauntlet run SUITE`: the library's run ([`gauntlet_runner::Run`]) with the CLI's sinks:
//! the terminal (progress, notes, the summary), `--events`, the run index, the reports, a stop
//! on SIGINT or SIGTERM; the verdict becomes the exit code.

use std::path::PathBuf;

use std::time::Duration;

use gauntlet_model::RunEvent;
use gauntlet_runner::{Finished, Notice, Observer, Run};

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
    /// The agent under test (default: the suite's `agent`, else script:reference).
    #[arg(long)]
    pub agent: Option<String>,
    /// The run folder to write (default: SUITE/.gauntlet/runs/RUN_ID).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The run's seed (default: the suite's `seed`, else 0).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Repetitions of each case (default: the suite's `epochs`, else 1).
    #[arg(long)]
    pub epochs: Option<u32>,
    /// Trials running at once.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Wall-time limit of one trial, in seconds; a trial over it ends with status error.
    #[arg(long, default_value_t = 300.0)]
    pub trial_timeout: f64,
    /// Play a trial that ends in a harness error (status error, not failed) again, up to N
    /// times, before its error counts; the run says how many trials were retried.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub retry_errors: u32,
    /// Apply a suite-wide fault profile from gauntlet.yaml's `fault_profiles` (`none` for none;
    /// default: the suite's `fault_profile`).
    #[arg(long)]
    pub faults: Option<String>,
    /// Run every case under one of gauntlet.yaml's `attacks`: its text at its injection vectors,
    /// its goal judged by effect (each case scores `utility` and `security`).
    #[arg(long)]
    pub attack: Option<String>,
    /// The model endpoint behind the LLM gateway (an OpenAI-compatible base URL); agents get the
    /// gateway as OPENAI_BASE_URL and never see the upstream key.
    #[arg(long)]
    pub gateway_upstream: Option<String>,
    /// Record every model call into this cassette (JSON Lines). (`--record` also works.)
    #[arg(long = "record-cassette", value_name = "CASSETTE", alias = "record")]
    pub record: Option<PathBuf>,
    /// Answer model calls from this cassette only: no upstream, no key. Not to be confused
    /// with `--agent replay:FILE`, which replays an agent's recorded tool calls. (`--replay`
    /// also works.)
    #[arg(long = "replay-cassette", value_name = "CASSETTE", alias = "replay")]
    pub replay: Option<PathBuf>,
    /// The model that plays users with an LLM `persona`, when their case names none (default:
    /// the suite's `user_model`). Its calls go through the gateway like the agent's.
    #[arg(long)]
    pub user_model: Option<String>,
    /// Only run cases whose id contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Finish a run that stopped early (killed, crashed): run only the trials RUN_DIR lacks,
    /// with the run's own agent, seed, epochs, fault profile and filter, then write its
    /// results. Refused if the suite changed since the run started.
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["agent", "out", "seed", "epochs", "faults", "filter", "record", "shard", "run_id", "name"])]
    pub resume: Option<PathBuf>,
    /// With --resume: move lines of trials.jsonl that are not trial records to
    /// trials.corrupt.jsonl (nothing is lost) and run their trials again.
    #[arg(long, requires = "resume")]
    pub set_aside_corrupt: bool,
    /// Run one part of the run, I of N (such as 2/4): the trials whose position in the plan
    /// leaves I-1 when divided by N. The parts of one run (same suite, agent, seed, epochs)
    /// make the whole with `gauntlet merge`; a part exits 0 and leaves the verdict to it.
    /// `auto` takes the part from the environment: GAUNTLET_SHARD=I/N (any CI matrix), else a
    /// Kubernetes Indexed Job's JOB_COMPLETION_INDEX (from 0: index 0 is part 1) with
    /// --shard-count N.
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<ShardArg>,
    /// With `--shard auto` in an Indexed Job: how many parts there are (the Job's
    /// completions).
    #[arg(long, value_name = "N", requires = "shard")]
    pub shard_count: Option<u32>,
    /// The run's id (letters, digits, `.`, `_`, `-`), so that parts run apart share one (trace
    /// ids derive from it); a fresh one when absent.
    #[arg(long)]
    pub run_id: Option<String>,
    /// A name for the run (letters, digits, `.`, `_`, `-`), such as `baseline`: kept in its
    /// header and the suite's index, so that `compare`, `report`, `gate` and `view` run from the
    /// suite's folder take it instead of the run folder (the newest run of that name).
    #[arg(long)]
    pub name: Option<String>,
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
    /// How command agents are isolated: `auto` runs each in a bubblewrap sandbox (own PID and
    /// user namespaces, the host read-only, a private /tmp) when bubblewrap works here, and
    /// warns loudly when it does not; `bubblewrap` refuses to run without it; `none` runs agents
    /// as plain processes (they can then read gauntlet's environment), with a warning.
    #[arg(long, value_enum, default_value = "auto")]
    pub isolation: IsolationArg,
}

/// `--isolation`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum IsolationArg {
    /// bubblewrap where it works, else unisolated with a warning.
    Auto,
    /// bubblewrap or nothing.
    Bubblewrap,
    /// Unisolated, with a warning.
    None,
}

impl From<IsolationArg> for gauntlet_agent::Isolation {
    fn from(a: IsolationArg) -> Self {
        match a {
            IsolationArg::Auto => gauntlet_agent::Isolation::Auto,
            IsolationArg::Bubblewrap => gauntlet_agent::Isolation::Bubblewrap,
            IsolationArg::None => gauntlet_agent::Isolation::None,
        }
    }
}

/// `--shard`: a part given, or `auto` (from the environment).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShardArg {
    /// `--shard auto`.
    Auto,
    /// `--shard I/N`.
    Part(gauntlet_model::Shard),
}

impl std::str::FromStr for ShardArg {
    type Err = gauntlet_model::ShardSyntaxError;

    fn from_str(s: &str) -> Result<ShardArg, Self::Err> {
        if s == "auto" {
            return Ok(ShardArg::Auto);
        }
        s.parse().map(ShardArg::Part)
    }
}

/// The part `--shard auto` runs, from the environment `var` reads: GAUNTLET_SHARD=I/N, else
/// JOB_COMPLETION_INDEX (from 0) of `count` parts.
pub fn shard_from_env(
    count: Option<u32>,
    var: impl Fn(&str) -> Option<String>,
) -> Result<gauntlet_model::Shard, crate::exit::ExpectedError> {
    use crate::exit::ExpectedError;
    if let Some(text) = var("GAUNTLET_SHARD") {
        return text
            .trim()
            .parse()
            .map_err(|e| ExpectedError::input(format!("GAUNTLET_SHARD=`{text}`: {e}")));
    }
    let Some(index) = var("JOB_COMPLETION_INDEX") else {
        return Err(ExpectedError::input(
            "--shard auto found no part: set GAUNTLET_SHARD=I/N, or run in a Kubernetes Indexed Job (JOB_COMPLETION_INDEX) with --shard-count N",
        ));
    };
    let index: u32 = index.trim().parse().map_err(|_| {
        ExpectedError::input(format!(
            "JOB_COMPLETION_INDEX=`{index}` is not a number from 0"
        ))
    })?;
    let Some(count) = count else {
        return Err(ExpectedError::input(format!(
            "JOB_COMPLETION_INDEX={index} with --shard auto needs --shard-count N (the Job's completions)"
        )));
    };
    if count == 0 || index >= count {
        return Err(ExpectedError::input(format!(
            "JOB_COMPLETION_INDEX={index} is not one of --shard-count {count} parts (0 to {})",
            count.saturating_sub(1)
        )));
    }
    Ok(gauntlet_model::Shard {
        index: index + 1,
        count,
    })
}

impl Args {
    /// The part of the run to run, `--shard auto` read from the environment.
    pub fn shard(&self) -> Result<Option<gauntlet_model::Shard>, crate::exit::ExpectedError> {
        match self.shard {
            // `--shard-count` requires `--shard` (clap refuses it alone).
            None => Ok(None),
            Some(ShardArg::Part(s)) => {
                if self.shard_count.is_some_and(|n| n != s.count) {
                    return Err(crate::exit::ExpectedError::input(format!(
                        "--shard {s} and --shard-count {} disagree",
                        self.shard_count.unwrap_or_default()
                    )));
                }
                Ok(Some(s))
            }
            Some(ShardArg::Auto) => {
                shard_from_env(self.shard_count, |k| std::env::var(k).ok()).map(Some)
            }
        }
    }

    /// What the user asked of the run's plan.
    pub fn run_options(&self) -> Result<gauntlet_runner::RunOptions, crate::exit::ExpectedError> {
        Ok(gauntlet_runner::RunOptions {
            agent: self.agent.clone(),
            seed: self.seed,
            epochs: self.epochs,
            filter: self.filter.clone(),
            faults: self.faults.clone(),
            attack: self.attack.clone(),
            shard: self.shard()?,
            run_id: self.run_id.clone(),
            name: self.name.clone(),
        })
    }

    /// What the user asked of the LLM gateway; the upstream key comes from
    /// `GAUNTLET_UPSTREAM_API_KEY`, else `OPENAI_API_KEY`, and stays in the harness.
    pub fn gateway_options(
        &self,
    ) -> Result<gauntlet_runner::agents::GatewayOptions, crate::exit::ExpectedError> {
        if self.record.is_some() && self.replay.is_some() {
            return Err(crate::exit::ExpectedError::input(
                "--record-cassette and --replay-cassette exclude each other",
            ));
        }
        Ok(gauntlet_runner::agents::GatewayOptions {
            upstream: self.gateway_upstream.clone(),
            record: self.record.clone(),
            replay: self.replay.clone(),
            api_key: gauntlet_runner::agents::upstream_key(),
        })
    }
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
        .keep_summaries(crate::shared::kept_summaries());
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
    args: &'a Args,
}

impl<'a> Terminal<'a> {
    fn new(args: &'a Args, runtime: &'a tokio::runtime::Runtime) -> Result<Self, ExpectedError> {
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

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(mut self) -> Result<i32, ExpectedError> {
        self.quiet = crate::say::quiet();
        crate::reports::set_explain(self.explain);
        run(self)
    }
}
