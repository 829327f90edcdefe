//! `gauntlet import BENCHMARK DATA_DIR --out SUITE_DIR`: a suite from a peer benchmark's data.

mod otlp;

use std::path::PathBuf;

use gauntlet_import::{ImportError, agentdojo, tau_bench, tau2};

use crate::exit::{ExpectedError, GATES_PASSED};

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
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The source.
    #[arg(value_enum)]
    pub benchmark: crate::commands::import::Benchmark,
    /// The benchmark's data folder; for otlp, one or more trace files.
    #[arg(value_name = "DATA_DIR | FILE...", required = true, num_args = 1..)]
    pub data_dir: Vec<PathBuf>,
    /// otlp only: a policy (tools and their schemas, constraints, canaries) to judge by.
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// The domain: airline or retail (tau-bench, default airline); mock or retail (tau2-bench).
    #[arg(long)]
    pub domain: Option<String>,
    /// The task split: tau-bench's derived task list (default test); a split of tau2's
    /// split_tasks.json (base, train, test; default every task).
    #[arg(long)]
    pub split: Option<String>,
    /// tau-bench only: a users table to use instead of the data folder's (tau-bench's
    /// historical logs were made with the one at commit 7362a17).
    #[arg(long)]
    pub users: Option<PathBuf>,
    /// tau2-bench retail only: tau-bench's repository (or its retail data folder), to build
    /// tau2's retail database when DATA_DIR has no db.json (tau2's equals tau-bench's
    /// tables with a user_id per user).
    #[arg(long)]
    pub tau_bench_data: Option<PathBuf>,
    /// The suite folder to write (created; existing files are overwritten); for otlp, the
    /// run folder (it must not exist yet).
    #[arg(long)]
    pub out: PathBuf,
    /// Play each task's user as the benchmark does: an LLM persona holds the instruction and
    /// opens the conversation (`user.persona`, no `user_input`). Running such a suite needs
    /// a model: --user-model and --gateway-upstream (or --replay-cassette).
    #[arg(long)]
    pub persona: bool,
    /// AgentDojo only: the suite (banking).
    #[arg(long)]
    pub suite: Option<String>,
}

/// The benchmarks gauntlet imports.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Benchmark {
    /// tau-bench (Sierra Research): airline and retail domains.
    TauBench,
    /// tau2-bench (Sierra Research): mock and retail domains.
    #[value(name = "tau2-bench")]
    Tau2Bench,
    /// AgentDojo (ETH Zurich): the banking suite, with its injection tasks as attacks.
    #[value(name = "agentdojo")]
    AgentDojo,
    /// OpenTelemetry traces (OTLP/JSON or OTLP/protobuf files) into a run folder.
    Otlp,
}

/// The command line's import request, for either benchmark.
pub struct Request {
    pub inputs: Vec<PathBuf>,
    pub policy: Option<PathBuf>,
    pub domain: Option<String>,
    pub split: Option<String>,
    pub users: Option<PathBuf>,
    pub tau_bench_data: Option<PathBuf>,
    pub out: PathBuf,
    pub persona: bool,
    pub suite: Option<String>,
}

pub fn import(benchmark: Benchmark, req: Request) -> Result<i32, ExpectedError> {
    if matches!(benchmark, Benchmark::Otlp) {
        if req.domain.is_some()
            || req.split.is_some()
            || req.users.is_some()
            || req.tau_bench_data.is_some()
            || req.persona
            || req.suite.is_some()
        {
            return Err(ExpectedError::input(
                "`import otlp` takes FILE..., --out and --policy only",
            ));
        }
        return otlp::import(&req.inputs, req.policy.as_deref(), &req.out);
    }
    if req.policy.is_some() {
        return Err(ExpectedError::input("--policy is for `import otlp`"));
    }
    let [data_dir] = <[PathBuf; 1]>::try_from(req.inputs).map_err(|_| {
        ExpectedError::input("a benchmark import takes one DATA_DIR (several files are for otlp)")
    })?;
    if !data_dir.is_dir() {
        let layout = match benchmark {
            Benchmark::TauBench => {
                "tau-bench's data: tau_bench/envs/DOMAIN/data and derived/*.json"
            }
            Benchmark::Tau2Bench => {
                "tau2-bench's data: data/tau2/domains/DOMAIN/tasks.json, db.json"
            }
            Benchmark::AgentDojo | Benchmark::Otlp => {
                "AgentDojo's data: src/agentdojo/data/suites/SUITE/environment.yaml, injection_vectors.yaml"
            }
        };
        return Err(ExpectedError::input(format!(
            "{}: no such folder (it should hold {layout})",
            data_dir.display()
        )));
    }
    if req.suite.is_some() && !matches!(benchmark, Benchmark::AgentDojo) {
        return Err(ExpectedError::input(
            "--suite is for `import agentdojo`; tau-bench and tau2-bench take --domain",
        ));
    }
    match benchmark {
        Benchmark::Otlp => unreachable!("imported above"),
        Benchmark::AgentDojo => {
            if req.domain.is_some() || req.split.is_some() || req.users.is_some() || req.persona {
                return Err(ExpectedError::input(
                    "`import agentdojo` takes --suite and --out only",
                ));
            }
            agentdojo_import(agentdojo::Options {
                data_dir: data_dir.clone(),
                suite: req.suite.unwrap_or_else(|| "banking".into()),
                out: req.out,
            })
        }
        Benchmark::TauBench => {
            if req.tau_bench_data.is_some() {
                return Err(ExpectedError::input(
                    "--tau-bench-data is for `import tau2-bench`; tau-bench's own data is DATA_DIR",
                ));
            }
            tau_bench_import(tau_bench::Options {
                data_dir: data_dir.clone(),
                domain: req.domain.unwrap_or_else(|| "airline".into()),
                split: req.split.unwrap_or_else(|| "test".into()),
                users: req.users,
                out: req.out,
                persona: req.persona,
            })
        }
        Benchmark::Tau2Bench => {
            if req.users.is_some() {
                return Err(ExpectedError::input(
                    "--users is for `import tau-bench`; tau2's users are in its db.json",
                ));
            }
            let Some(domain) = req.domain else {
                return Err(ExpectedError::input(
                    "`import tau2-bench` needs --domain mock or --domain retail",
                ));
            };
            tau2_import(tau2::Options {
                data_dir: data_dir.clone(),
                domain,
                split: req.split,
                tau_bench_data: req.tau_bench_data,
                out: req.out,
                persona: req.persona,
            })
        }
    }
}

fn failed(e: ImportError) -> ExpectedError {
    ExpectedError::input(e.to_string())
}

fn tau_bench_import(opts: tau_bench::Options) -> Result<i32, ExpectedError> {
    let summary = tau_bench::import(&opts).map_err(failed)?;
    crate::note!(
        "wrote {} cases ({} with outputs) to {}",
        summary.cases,
        summary.with_outputs,
        opts.out.display()
    );
    for r in &summary.refused_gold_actions {
        crate::note!("  note: the world refuses a gold action, as tau-bench does: {r}");
    }
    match &summary.policy {
        Some(p) => crate::note!("  policy: {} is the agents' system_prompt", p.display()),
        None => crate::note!(
            "  note: no tau_bench/envs/{}/wiki.md in the data: `openai:MODEL` gets gauntlet's generic system prompt",
            opts.domain
        ),
    }
    run_it(&opts.out);
    Ok(GATES_PASSED)
}

fn tau2_import(opts: tau2::Options) -> Result<i32, ExpectedError> {
    let summary = tau2::import(&opts).map_err(failed)?;
    crate::note!(
        "wrote {} cases to {} ({} with a message history, given to the agent as text)",
        summary.cases,
        opts.out.display(),
        summary.with_history
    );
    crate::note!(
        "  gold actions meet {} of {} environment assertions",
        summary.env_assertions - summary.unmet_env_assertions.len(),
        summary.env_assertions
    );
    for u in &summary.unmet_env_assertions {
        crate::note!("  note: the gold actions do not meet an assertion: {u}");
    }
    for r in &summary.refused_gold_actions {
        crate::note!("  note: the world refuses a gold action: {r}");
    }
    if summary.nl_assertion_cases > 0 {
        crate::note!(
            "  note: {} cases have NL_ASSERTION in their reward basis: that needs an LLM judge; \
             the assertions are in each case's description and are not scored",
            summary.nl_assertion_cases
        );
    }
    if let Some(p) = &summary.policy {
        crate::note!("  policy: {} is the agents' system_prompt", p.display());
    }
    run_it(&opts.out);
    Ok(GATES_PASSED)
}

fn agentdojo_import(opts: agentdojo::Options) -> Result<i32, ExpectedError> {
    let summary = agentdojo::import(&opts).map_err(failed)?;
    crate::note!(
        "wrote {} cases to {}: {} user tasks, {} injection tasks, {} user tasks under attack ({})",
        summary.user_tasks + summary.injection_tasks + summary.attacked,
        opts.out.display(),
        summary.user_tasks,
        summary.injection_tasks,
        summary.attacked,
        agentdojo::ATTACK
    );
    for p in &summary.ground_truth_problems {
        crate::note!("  note: {p}");
    }
    crate::note!(
        "run it:  gauntlet run {} --agent replay:RUNS_DIR   (AgentDojo's run logs: user_task_N/none/none.json, ...)",
        opts.out.display()
    );
    Ok(GATES_PASSED)
}

fn run_it(out: &std::path::Path) {
    crate::note!(
        "run it:  gauntlet run {} --agent replay:FILE --epochs N   (or any agent)",
        out.display()
    );
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        import(
            self.benchmark,
            Request {
                inputs: self.data_dir,
                policy: self.policy,
                domain: self.domain,
                split: self.split,
                users: self.users,
                tau_bench_data: self.tau_bench_data,
                out: self.out,
                persona: self.persona,
                suite: self.suite,
            },
        )
    }
}
