//! `gauntlet import BENCHMARK DATA_DIR --out SUITE_DIR`: a suite from a peer benchmark's data.

use std::path::PathBuf;

use gauntlet_import::{ImportError, agentdojo, tau_bench, tau2};

use crate::exit::{ExpectedError, GATES_PASSED};

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
        return crate::commands::import_otlp::import(&req.inputs, req.policy.as_deref(), &req.out);
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
