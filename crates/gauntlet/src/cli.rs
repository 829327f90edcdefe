//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Evaluate AI agents the way their users will meet them: in a simulated, stateful tool world,
/// judged on the effect first, then the path, the tools, the cost and the safety.
///
/// Exit codes: 0 every gate passed; 1 a gate failed; 2 invalid input (cases, worlds,
/// configuration, arguments); 3 the harness itself could not run.
#[derive(Debug, Parser)]
#[command(name = "gauntlet", version, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Print nothing but errors and what was asked for (`--json`, `--out -`): the exit code
    /// tells the verdict. Every command takes it.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
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
    #[command(verbatim_doc_comment)]
    Run(Box<RunArgs>),
    /// Check a suite without running it; every problem as `file:line:col: message` (exit 2).
    Check {
        /// The suite folder (holding gauntlet.yaml) or its configuration file.
        suite: PathBuf,
        /// Print one JSON object: `{"ok", "suite", "cases", "worlds", "gates", "problems":
        /// [{"file", "line", "col", "message"}]}`.
        #[arg(long)]
        json: bool,
        /// Also audit the checks (`gauntlet audit`): exit 1 when a case's checks pass a wrong
        /// trajectory the suite does not accept, or when nothing could be audited.
        #[arg(long)]
        audit: bool,
        /// Do not play the references. By default each case's reference_trajectory is played
        /// in a fresh simulated world and judged by the case's own checks; one that fails is
        /// reported at the case with its reasons (exit 2).
        #[arg(long)]
        no_play: bool,
        /// Also play the references of cases in real-service worlds (a directory, a
        /// repository, a server started per trial; needs the service's command installed).
        #[arg(long, conflicts_with = "no_play")]
        play_services: bool,
    },
    /// Audit a suite's checks: mutants of each case's reference trajectory that still pass
    ///
    /// Example:
    ///   gauntlet audit examples/incident-desk
    ///
    /// For every case with a reference_trajectory, wrong trajectories are derived from it and
    /// each is played in a fresh world and judged by the case's evaluators: do nothing; the
    /// answer only, in the reference's own words; each write dropped, repeated, or with one
    /// argument changed (another record, another value of its type); consecutive writes
    /// swapped; an extra write on another record; the confirmation or question skipped; and,
    /// where records carry a tenant, a write on another tenant's record. A mutant that still
    /// passes survives: the case cannot tell it from the reference, it is hackable. A survivor
    /// that ends in the reference's own final state with its own answer is equivalent, not a
    /// hole, unless it skipped a question or a confirmation (always a hole). Survivors named in
    /// gauntlet.yaml's `audit: {accept: [{case, mutation, why}]}` are accepted, with the reason.
    /// Deterministic for a seed.
    ///
    /// Exit codes: 0 no case is hackable, 1 some are or nothing could be audited, 2 invalid input.
    #[command(verbatim_doc_comment)]
    Audit {
        /// The suite folder (holding gauntlet.yaml) or its configuration file.
        suite: PathBuf,
        /// Print one JSON object: `{"suite", "seed", "cases": [{"case_id", "mutants",
        /// "killed", "survivors": [{"mutation", "kind"}], "accepted": [{"mutation", "kind",
        /// "why"}], "equivalent", "hackable", "kill_rate", "skipped"}], "hackable_cases",
        /// "audited_cases", "mutants", "kill_rate", "unmatched_accepts": [{"case",
        /// "mutation"}]}`.
        #[arg(long)]
        json: bool,
        /// Seeds the choice of other records and values.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Only cases whose id contains this text.
        #[arg(long)]
        filter: Option<String>,
    },
    /// Write a small working suite to edit: a world, two cases and gates
    ///
    /// Example:
    ///   gauntlet init my-suite && gauntlet run my-suite
    ///
    /// Overwrites nothing: a folder that already holds one of its files is refused.
    #[command(verbatim_doc_comment)]
    Init {
        /// The folder to write (made if missing).
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// Score recorded trajectories against a suite's cases, without running anything.
    ///
    /// Reads gauntlet's trials.jsonl (or a run folder) and AgentTrajectory JSON
    /// (one document, JSON Lines, or an array); each trajectory is matched to its case by
    /// case_id / task_id.
    Score(ScoreArgs),
    /// Re-decide the gates of a stored run without re-running it.
    Gate {
        /// The run folder (or its results.json), or a run id or name in the index of the suite in
        /// the current folder.
        run: PathBuf,
        /// A YAML or JSON file with a `gates:` list to use instead of the run's own gates.
        #[arg(long)]
        gates: Option<PathBuf>,
        /// Print the re-decided results as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Merge the parts of a sharded run (`run --shard I/N`) into one run and decide its gates.
    ///
    /// Example:
    ///   gauntlet merge runs/ID-shard-1-of-2 runs/ID-shard-2-of-2 --out runs/ID
    ///
    /// The parts must come from the same suite, agent, seed, epochs and options, one of each
    /// part; the merged run lists its trials in the order an unsharded run would, so its
    /// statistics and gates are the unsharded run's. Records are streamed from the parts, and
    /// past 1,000 trials (GAUNTLET_SCORE_KEEP) their summaries wait on disk: memory stays
    /// small however large the run.
    #[command(verbatim_doc_comment)]
    Merge {
        /// The run folders of the parts.
        #[arg(required = true)]
        parts: Vec<PathBuf>,
        /// The run folder to write.
        #[arg(long)]
        out: PathBuf,
        /// Also write these reports into the merged run folder (report.html, junit.xml,
        /// summary.md).
        #[arg(long, value_enum, value_delimiter = ',')]
        report: Vec<crate::commands::report::Format>,
        /// Print the results (results.json with its trial summaries) on stdout instead of the summary.
        #[arg(long)]
        json: bool,
    },
    /// Export a stored run's trials as OpenTelemetry traces (OTLP/JSON), GenAI conventions.
    ///
    /// Example:
    ///   gauntlet export RUN_DIR --out traces.json
    ///
    /// One trace per trial (its trace id): an `invoke_agent` span, a `chat` span per model call
    /// and an `execute_tool` span per tool call under it, every verdict a
    /// `gen_ai.evaluation.result` event. The file is an ExportTraceServiceRequest, as OTLP/HTTP
    /// posts it (`curl -H 'content-type: application/json' --data @traces.json COLLECTOR/v1/traces`).
    #[command(verbatim_doc_comment)]
    Export {
        /// The run folder (or its results.json).
        run: PathBuf,
        /// The file to write (`-` for standard output).
        #[arg(long)]
        out: PathBuf,
    },
    /// Compare two stored runs, paired by case and epoch.
    ///
    /// Gives McNemar's exact test on pass/fail, paired bootstrap intervals of each quantity's
    /// difference, effect sizes, the segments that moved, what changed between the runs, and a
    /// verdict in words. Exits 0, or 1 with --fail-on-regression when B is significantly worse or
    /// has a critical violation on a case where A had none.
    Compare(CompareArgs),
    /// List past runs of a suite, newest first.
    Runs {
        /// The suite folder (its .gauntlet/index.sqlite is read).
        #[arg(default_value = ".")]
        suite: PathBuf,
        /// How many runs to list.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Forget the runs whose folder was deleted. The index holds a row per run; the runs
        /// themselves are their folders (.gauntlet/runs/RUN_ID or --out): delete the folders
        /// you no longer need, then prune.
        #[arg(long)]
        prune: bool,
        /// Print the runs as a JSON array (run_id, suite, agent, started_at, verdict, trials,
        /// passed, dir, name), newest first.
        #[arg(long)]
        json: bool,
    },
    /// Print the JSON Schema of results.json.
    Schema,
    /// Serve one case's world as an MCP server, for an IDE agent or MCP Inspector.
    ///
    /// With --http, prints `{"url", "token"}` on stdout; requests need `Authorization: Bearer
    /// TOKEN`. When the session ends (stdio closes, or Ctrl-C), prints the trajectory's verdict
    /// and record on stderr.
    Serve {
        /// The suite folder.
        suite: PathBuf,
        /// The case whose world to serve.
        #[arg(long)]
        case: String,
        /// Serve over stdio.
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
        /// Serve over streamable HTTP on this loopback address (127.0.0.1:0 picks a port).
        #[arg(long)]
        http: Option<std::net::SocketAddr>,
    },
    /// Put gauntlet in front of real MCP servers: reads pass through, writes are recorded and
    /// never executed, and each session is judged and kept as a trial.
    ///
    /// Examples:
    ///   gauntlet shadow --upstream 'cmd:npx -y @modelcontextprotocol/server-filesystem /srv/docs' --http 127.0.0.1:0
    ///   gauntlet shadow --upstream 'fs=cmd:node fs.js' --upstream 'mem=http://127.0.0.1:7000/mcp' --stdio
    ///   gauntlet shadow --upstream 'cmd:...' --canary --config shadow.yaml --http 127.0.0.1:0
    ///   gauntlet shadow harvest .gauntlet/runs/shadow-ID --out suites/from-shadow
    ///
    /// A tool is a read when its MCP annotations say `readOnlyHint: true`, a write when they
    /// say false; an unannotated tool is a write unless --config says otherwise. A write is
    /// answered by a success shaped by the tool's output schema (or the configuration's
    /// template, or a gauntlet world that applies it to a copy of its state). With --canary, writes of `canary.allow` tools reach the upstream within
    /// `canary.max_writes` and `canary.max_calls`; others are refused. With one upstream, tools
    /// keep their names; with several, each is PREFIX__name (PREFIX from NAME= or the server's
    /// name). A command upstream is started for each session in its own process group and
    /// killed with it. The client may send the user's request as `_meta` key
    /// `gauntlet/user_input` on a call. Stops on Ctrl-C or SIGTERM, writing results.json.
    #[command(verbatim_doc_comment, args_conflicts_with_subcommands = true)]
    Shadow(Box<ShadowArgs>),
    /// Receive production traces (OTLP/HTTP), judge them, keep them anonymised in a Parquet lake.
    ///
    /// Example:
    ///   gauntlet online --listen 127.0.0.1:4318 --lake lake/ --policy policy.yaml
    ///
    /// Prints one JSON line on start: {"url": ..., "token": ..., "lake": ...}. Point an
    /// OpenTelemetry exporter at URL/v1/traces with the header `Authorization: Bearer TOKEN`
    /// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_HEADERS); protobuf or JSON,
    /// gzip or not. Spans of a trace are assembled until its root span ends (or the policy's
    /// idle_timeout_s passes), then the trace is judged by every evaluator that needs no case
    /// and by the policy (tool schemas and kinds, forbidden tools, call, retry, token, cost and
    /// latency budgets, canaries), then secrets and personal data are redacted (or hashed,
    /// keyed by GAUNTLET_REDACTION_KEY) before it is written to LAKE/traces/day=DAY/*.parquet.
    /// POST URL/v1/feedback takes {trace_id, rating, comment, edited_output, abandoned} into
    /// LAKE/feedback/. GET URL/v1/status and URL/metrics report counts and drift alarms
    /// (CUSUM on failure and tool-error rates, EWMA on duration and tokens, also logged).
    /// Partitions older than the policy's retention_days (30) are deleted. Stops on Ctrl-C or
    /// SIGTERM: open traces are judged as they stand and everything is written.
    #[command(verbatim_doc_comment)]
    Online(OnlineArgs),
    /// Browse runs in a local web page: suites and their trends, a run's gates, metrics and
    /// trials, trajectories, two runs compared, labelling, the trace lake.
    ///
    /// Examples:
    ///   gauntlet view
    ///   gauntlet view examples/incident-desk lake/ --listen 127.0.0.1:8765
    ///
    /// Looks in each DIR (default: the current folder), its .gauntlet/runs, its subfolders and
    /// theirs, and the folders the run indexes there list; a lake is a folder with a traces/
    /// table (gauntlet online --lake). Runs are found again on each visit; a run still going
    /// updates as its trials finish. Prints one JSON line on start: {"url": ..., "token": ...};
    /// open the URL (it carries the token; every request needs it, as ?token= or
    /// `Authorization: Bearer TOKEN`). The JSON API under /api/ is in the reference. Each run
    /// gets view-index.json and view-summary.json beside its trials, written once, so it opens
    /// fast the next time. Serves until Ctrl-C or SIGTERM.
    #[command(verbatim_doc_comment)]
    View(ViewArgs),
    /// Compare two windows of trajectories: has anything drifted?
    ///
    /// Examples:
    ///   gauntlet drift --baseline lake/@2026-11-01..2026-11-07 --current lake/@2026-11-08..
    ///   gauntlet drift --baseline runs/last-week --current runs/today --json
    ///
    /// A window is a run folder, or a lake (`gauntlet online --lake`) with an optional day range
    /// LAKE@FROM..TO (either side may be left open). Per metric, the test that fits it: rates
    /// (tool errors per call, pass rate, each evaluator's pass rate) by the two-proportion
    /// z-test (Fisher's exact test when an expected count is under 5); trajectory length,
    /// latency, cost and tokens by Mann-Whitney U and Kolmogorov-Smirnov; the tool mix by
    /// chi-square. Each has an effect size; p-values are adjusted together
    /// (Benjamini-Hochberg) and a test drifts when its adjusted p is under --alpha.
    /// Exit code 1 when anything drifted (for cron and CI), 0 when not, 2 on bad input.
    #[command(verbatim_doc_comment)]
    Drift {
        /// The reference window.
        #[arg(long)]
        baseline: String,
        /// The window to check.
        #[arg(long)]
        current: String,
        /// The false-discovery rate across all tests.
        #[arg(long, default_value_t = 0.01)]
        alpha: f64,
        /// The smallest change of a rate that counts as drift (absolute: 0.02 is two points);
        /// a smaller significant change is reported as below the floor.
        #[arg(long, default_value_t = 0.02)]
        min_rate_change: f64,
        /// The smallest change of a mean (trajectory length, latency, cost, tokens) that counts,
        /// relative to the baseline's (0.1 is ten per cent).
        #[arg(long, default_value_t = 0.1)]
        min_relative_change: f64,
        /// The smallest change of the mean latency that counts, in milliseconds (sub-millisecond
        /// latencies move with the machine's load).
        #[arg(long, default_value_t = 10.0)]
        min_latency_ms: f64,
        /// Print the report as JSON: {alpha, drift, tests: [{metric, test, baseline, current,
        /// statistic, p_value, p_adjusted, effect, effect_kind, drift, below_floor?}]}.
        #[arg(long)]
        json: bool,
    },
    /// Turn failed and negatively rated production trajectories into candidate cases.
    ///
    /// Examples:
    ///   gauntlet harvest lake/ --out suites/from-production
    ///   gauntlet harvest lake/@2026-11-01.. --out suites/refunds --where 'service == "orders" && "refund" in tools'
    ///
    /// Reads a lake written by `gauntlet online` (LAKE, or LAKE@FROM..TO for a day range). A
    /// trajectory is a candidate when it did not pass, was rated below zero, or was abandoned
    /// (feedback posted or carried on its spans), and when --where holds: a CEL expression over
    /// trace_id, day, status, service, agent, complete, duration_ms, tool_calls, tool_errors,
    /// input_tokens, output_tokens, cost_eur, tools, failed_evaluators, rated, rating,
    /// abandoned and user_input. Candidates with the same request (normalised) and tool
    /// sequence become one case. Cases replay the trace's tool answers in a recorded world,
    /// are tagged harvested, needs-review and origin:production, and their observed
    /// trajectories are written to counterexamples.jsonl. The suite passes `gauntlet check`.
    /// With --all, every trajectory is taken: a shadow comparison replays production's requests
    /// on a candidate agent and compares the runs with `gauntlet drift`.
    #[command(verbatim_doc_comment)]
    Harvest {
        /// The lake, optionally with a day range (LAKE@FROM..TO).
        lake: String,
        /// The suite folder to write (it must not hold a suite yet).
        #[arg(long)]
        out: PathBuf,
        /// Keep only candidates for which this CEL expression is true.
        #[arg(long = "where", value_name = "EXPR")]
        filter: Option<String>,
        /// Take every trajectory, not only the failed, rated below zero or abandoned: production's
        /// requests to replay on a candidate agent (`gauntlet run OUT --agent ...`) and compare
        /// with `gauntlet drift --baseline LAKE --current RUN`.
        #[arg(long)]
        all: bool,
    },
    /// Write a suite from a peer benchmark's published data, or a run from OpenTelemetry traces.
    ///
    /// Examples:
    ///   gauntlet import otlp traces.json more.pb --out runs/production
    ///   gauntlet import tau-bench ../tau-bench --domain airline --out suites/airline
    ///   gauntlet import tau2-bench ../tau2-bench --domain mock --out suites/tau2-mock
    ///   gauntlet import tau2-bench ../tau2-bench --domain retail --tau-bench-data ../tau-bench \
    ///       --out suites/tau2-retail
    ///   gauntlet import agentdojo ../agentdojo --suite banking --out suites/banking
    ///
    /// tau-bench: DATA_DIR is laid out like the tau-bench repository, with the task lists
    /// exported as JSON under derived/ (see docs/reference.md, "Importing tau-bench"). One case
    /// per task (`airline-test-0`, ...): the instruction as input, the gold actions as reference
    /// trajectory, tau-bench's reward rule as expected outcome.
    ///
    /// tau2-bench: DATA_DIR is laid out like the tau2-bench repository
    /// (data/tau2/domains/DOMAIN/{tasks.json,db.json,...}). One case per task (`mock-update_task_1`,
    /// `retail-0`, ...), tau2's reward basis as expectations; the import replays every task's
    /// gold actions and reports each environment assertion they do not meet.
    ///
    /// agentdojo: DATA_DIR is laid out like the AgentDojo repository
    /// (src/agentdojo/data/suites/SUITE/{environment,injection_vectors}.yaml). One case per
    /// AgentDojo run kind: `banking-user_task_N`, `banking-injection_task_M`, and
    /// `banking-user_task_N-injection_task_M` (user task N under the important_instructions
    /// attack carrying injection task M). Each trial scores `utility` and `security`.
    ///
    /// otlp: FILE... are OTLP/JSON (one export request, or one per line as the OpenTelemetry
    /// Collector's file exporter writes) or OTLP/protobuf export requests. Spans are grouped by
    /// trace, and each trace becomes one trial of the run folder --out (trials.jsonl,
    /// results.json): spans of the OpenTelemetry GenAI conventions (invoke_agent, chat,
    /// execute_tool) or OpenInference's (AGENT, LLM, TOOL); gauntlet's own `export` reads back
    /// whole. Trials are judged by the evaluators that need no case (and --policy's);
    /// `gauntlet score RUN/trials.jsonl --cases SUITE` re-scores them against a suite.
    Import {
        /// The source.
        #[arg(value_enum)]
        benchmark: crate::commands::import::Benchmark,
        /// The benchmark's data folder; for otlp, one or more trace files.
        #[arg(value_name = "DATA_DIR | FILE...", required = true, num_args = 1..)]
        data_dir: Vec<PathBuf>,
        /// otlp only: a policy (tools and their schemas, constraints, canaries) to judge by.
        #[arg(long)]
        policy: Option<PathBuf>,
        /// The domain: airline or retail (tau-bench, default airline); mock or retail (tau2-bench).
        #[arg(long)]
        domain: Option<String>,
        /// The task split: tau-bench's derived task list (default test); a split of tau2's
        /// split_tasks.json (base, train, test; default every task).
        #[arg(long)]
        split: Option<String>,
        /// tau-bench only: a users table to use instead of the data folder's (tau-bench's
        /// historical logs were made with the one at commit 7362a17).
        #[arg(long)]
        users: Option<PathBuf>,
        /// tau2-bench retail only: tau-bench's repository (or its retail data folder), to build
        /// tau2's retail database when DATA_DIR has no db.json (tau2's equals tau-bench's
        /// tables with a user_id per user).
        #[arg(long)]
        tau_bench_data: Option<PathBuf>,
        /// The suite folder to write (created; existing files are overwritten); for otlp, the
        /// run folder (it must not exist yet).
        #[arg(long)]
        out: PathBuf,
        /// Play each task's user as the benchmark does: an LLM persona holds the instruction and
        /// opens the conversation (`user.persona`, no `user_input`). Running such a suite needs
        /// a model: --user-model and --gateway-upstream (or --replay-cassette).
        #[arg(long)]
        persona: bool,
        /// AgentDojo only: the suite (banking).
        #[arg(long)]
        suite: Option<String>,
    },
    /// Render a stored run as HTML, JUnit XML, Markdown, JSON, its summary or its event stream.
    ///
    /// Example:
    ///   gauntlet report RUN_DIR --format html --out report.html
    #[command(verbatim_doc_comment)]
    Report {
        /// The run folder, or a run id or name in the index of the suite in the current folder.
        run: PathBuf,
        /// The format.
        #[arg(long, value_enum, default_value = "html")]
        format: crate::commands::report::Format,
        /// Write to this file instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
        /// A baseline run (a folder, or a run id or name as RUN): the HTML report opens with the
        /// paired comparison against it.
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// With `--format terminal`: say why every failed trial failed (by default the first
        /// 20).
        #[arg(long)]
        explain: bool,
    },
    /// Measure how far a judge agrees with human labels, before it may gate
    ///
    /// Example:
    ///   gauntlet calibrate --labels human.jsonl --verdicts .gauntlet/runs/ID --out judge.calibration.json
    ///
    /// LABELS and VERDICTS are JSON Lines of {"item": "ID", "label": VALUE} (VALUE a bool, a
    /// number or a string; optional "rater" when items carry several labels, optional
    /// "segment": {"benchmark": "...", "tag": ["a", "b"]} to break the figures down). VERDICTS
    /// may also be a run folder (its judge verdicts, item CASE#EPOCH, segments case,
    /// difficulty, tag and agent) and either may be an Online-Mind2Web /
    /// AgentRewardBench results.json (--judge and --category pick the lists). Items are matched
    /// by id; the unmatched are counted and listed.
    ///
    /// Reports the confusion matrix, accuracy, precision, recall, F1, NPV, TNR, Cohen's kappa
    /// with its standard error and 95% interval, weighted kappa (--weights), Krippendorff's
    /// alpha (--level), the judge's positive rate against the humans', McNemar's test, the same
    /// per segment, and human-human agreement where items carry two labels. With --out it
    /// writes the calibration file a suite's judge names to be allowed to gate.
    #[command(verbatim_doc_comment)]
    Calibrate(CalibrateArgs),
}

/// Arguments of `gauntlet calibrate`.
#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// Human labels (JSON Lines, or a results.json).
    #[arg(long)]
    pub labels: PathBuf,
    /// Judge verdicts (JSON Lines, a run folder, or a results.json).
    #[arg(long)]
    pub verdicts: PathBuf,
    /// Print one JSON object instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Also give weighted kappa, for ordinal scales.
    #[arg(long, value_enum)]
    pub weights: Option<WeightsArg>,
    /// Krippendorff's level of measurement.
    #[arg(long, value_enum, default_value = "nominal")]
    pub level: LevelArg,
    /// In a results.json: the judge whose lists to read (webjudge, functional, gpt-4o-mini, ...).
    #[arg(long)]
    pub judge: Option<String>,
    /// In a results.json: the category (trajectory_success, trajectory_side_effect, ...).
    #[arg(long)]
    pub category: Option<String>,
    /// In a run folder: the judge evaluator whose verdicts to read, when it has several.
    #[arg(long)]
    pub evaluator: Option<String>,
    /// Write the calibration file here (what a judge's `calibration:` names).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Cohen's kappa the judge must reach to be trusted.
    #[arg(long, default_value_t = 0.6)]
    pub min_kappa: f64,
    /// Matched items needed to be trusted.
    #[arg(long, default_value_t = 30)]
    pub min_items: usize,
}

/// `--weights`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum WeightsArg {
    /// |i - j|.
    Linear,
    /// (i - j)^2.
    Quadratic,
}

/// `--level`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum LevelArg {
    /// Categories.
    Nominal,
    /// Ranks.
    Ordinal,
    /// Differences.
    Interval,
    /// Ratios.
    Ratio,
}

/// Arguments of `gauntlet run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
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
    pub report: Vec<crate::commands::report::Format>,
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

/// Arguments of `gauntlet compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline run: its folder (or its results.json), or a run id or name (`run --name`)
    /// in the index of the suite in the current folder.
    pub a: PathBuf,
    /// The candidate run, as A.
    pub b: PathBuf,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 when B regressed: it passes significantly less often than A (p < 0.05), or it has
    /// a critical violation on a case where A had none, whatever the p-value.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Also let this suite's LLM judge say which trajectory of each pair is better, asking in
    /// both orders (A first, then B first): a verdict that flips with the order is a tie
    /// (position bias). Pairs where a deterministic check failed in either run are not judged
    /// unless the judge says `run_on: all`. Needs the run folders (trials.jsonl), not only
    /// results.json.
    #[arg(long, value_name = "SUITE")]
    pub pairwise: Option<PathBuf>,
    /// The suite's judge to use with --pairwise, when it has several.
    #[arg(long, value_name = "NAME", requires = "pairwise")]
    pub evaluator: Option<String>,
    /// Where the pairwise judge asks for verdicts the judge cache does not have (an
    /// OpenAI-compatible base URL; the key from GAUNTLET_UPSTREAM_API_KEY or OPENAI_API_KEY).
    #[arg(long, requires = "pairwise")]
    pub gateway_upstream: Option<String>,
}

/// Arguments of `gauntlet score`.
#[derive(Debug, clap::Args)]
pub struct ScoreArgs {
    /// The trajectories: a file (JSON, JSON Lines) or a run folder.
    pub trajectories: PathBuf,
    /// The suite whose cases (and gates) apply.
    #[arg(long)]
    pub cases: PathBuf,
    /// Write a run folder with the new scores.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The global `--quiet`, set by dispatch.
    #[arg(skip)]
    pub quiet: bool,
    /// Print the results as JSON instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Where the suite's LLM judges ask for verdicts the judge cache does not have (an
    /// OpenAI-compatible base URL; the key from GAUNTLET_UPSTREAM_API_KEY or OPENAI_API_KEY).
    /// Without it only cached verdicts are used, and the rest are invalid.
    #[arg(long)]
    pub gateway_upstream: Option<String>,
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

impl RunArgs {
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

/// Arguments of `gauntlet view`.
#[derive(Debug, clap::Args)]
pub struct ViewArgs {
    /// Folders to look for runs and lakes in (a run id or name in the index of the suite in the
    /// current folder stands for its run's folder).
    #[arg(default_value = ".")]
    pub dirs: Vec<PathBuf>,
    /// Where to listen; loopback unless you say otherwise (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8765")]
    pub listen: std::net::SocketAddr,
    /// The label file the labelling page writes, as `gauntlet calibrate --labels` reads it
    /// (default: the first DIR's .gauntlet/labels.jsonl).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// The token requests must carry (default: a random one; or GAUNTLET_VIEW_TOKEN).
    #[arg(long)]
    pub token: Option<String>,
}

/// Arguments of `gauntlet online`.
#[derive(Debug, clap::Args)]
pub struct OnlineArgs {
    /// Where to listen; loopback unless you say otherwise (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:4318")]
    pub listen: std::net::SocketAddr,
    /// The lake folder (created).
    #[arg(long)]
    pub lake: PathBuf,
    /// The policy (YAML or JSON): tools, constraints, canaries, redaction, retention_days,
    /// idle_timeout_s. See docs/reference.md, "The online receiver".
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// The bearer token clients must send (default: GAUNTLET_ONLINE_TOKEN, else a random one,
    /// printed on start).
    #[arg(long)]
    pub token: Option<String>,
    /// Seconds between lake writes (also written every 1,000 traces and at stop).
    #[arg(long, default_value_t = 5.0)]
    pub flush_every: f64,
    /// Also send each trace's verdicts, as `gen_ai.evaluation.result` events on an `evaluate`
    /// span in the trace, to this OTLP/HTTP traces endpoint (e.g.
    /// http://collector:4318/v1/traces).
    #[arg(long, value_name = "URL")]
    pub export_to: Option<String>,
    /// A header for --export-to, NAME=VALUE (repeatable), e.g. 'authorization=Bearer T'.
    #[arg(long, value_name = "NAME=VALUE", requires = "export_to")]
    pub export_header: Vec<String>,
}

/// Arguments of `gauntlet shadow`.
#[derive(Debug, clap::Args)]
pub struct ShadowArgs {
    /// What to do instead of proxying.
    #[command(subcommand)]
    pub action: Option<ShadowAction>,
    /// An upstream MCP server: `[NAME=]cmd:COMMAND` (stdio) or `[NAME=]http(s)://HOST/PATH`
    /// (streamable HTTP; `#bearer=TOKEN` or `#bearer=$VAR` adds a bearer token). Repeat for
    /// several.
    #[arg(long = "upstream", value_name = "UPSTREAM")]
    pub upstreams: Vec<gauntlet_shadow::UpstreamSpec>,
    /// The shadow configuration (YAML or JSON): tool kinds and responders, canary allowance
    /// and budgets, faults, the upstream time limit.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Canary mode: writes of `canary.allow` tools are executed, within budgets.
    #[arg(long)]
    pub canary: bool,
    /// Serve one session over stdio.
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,
    /// Serve over streamable HTTP on this loopback address (127.0.0.1:0 picks a port); prints
    /// `{"url", "token"}` on stdout.
    #[arg(long)]
    pub http: Option<std::net::SocketAddr>,
    /// The run folder sessions are written to (default .gauntlet/runs/shadow-ID).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `gauntlet shadow` subcommands.
#[derive(Debug, Subcommand)]
pub enum ShadowAction {
    /// Turn a shadow run's sessions into a suite that replays them offline: a recorded world
    /// (reads answered from the recording by tool and canonical arguments; an unrecorded call
    /// is a tool error) and one case per session (its input, its calls as the reference, its
    /// writes as the expected outcome).
    ///
    /// Example:
    ///   gauntlet shadow harvest .gauntlet/runs/shadow-ID --out suites/from-shadow
    #[command(verbatim_doc_comment)]
    Harvest {
        /// The shadow run folder.
        run: PathBuf,
        /// The suite folder to write.
        #[arg(long)]
        out: PathBuf,
    },
}
