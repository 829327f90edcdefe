//! `gauntlet import BENCHMARK DATA_DIR --out SUITE_DIR`: a suite from a peer benchmark's data.

use gauntlet_import::{ImportError, tau_bench};

use crate::exit::{ExpectedError, GATES_PASSED};

/// The benchmarks gauntlet imports.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Benchmark {
    /// tau-bench (Sierra Research): airline and retail domains.
    TauBench,
}

pub fn import(benchmark: Benchmark, opts: tau_bench::Options) -> Result<i32, ExpectedError> {
    let Benchmark::TauBench = benchmark;
    let summary = tau_bench::import(&opts).map_err(|e| match e {
        ImportError::Io { .. } if !opts.data_dir.exists() => ExpectedError::input(format!(
            "{}: no such folder (it should hold tau-bench's data: tau_bench/envs/{}/data and \
             derived/*.json)",
            opts.data_dir.display(),
            opts.domain
        )),
        e => ExpectedError::input(e.to_string()),
    })?;
    eprintln!(
        "wrote {} cases ({} with outputs) to {}",
        summary.cases,
        summary.with_outputs,
        opts.out.display()
    );
    for r in &summary.refused_gold_actions {
        eprintln!("  note: the world refuses a gold action, as tau-bench does: {r}");
    }
    match &summary.policy {
        Some(p) => eprintln!("  policy: {} is the agents' system_prompt", p.display()),
        None => eprintln!(
            "  note: no tau_bench/envs/{}/wiki.md in the data: `openai:MODEL` gets gauntlet's generic system prompt",
            opts.domain
        ),
    }
    eprintln!(
        "run it:  gauntlet run {} --agent replay:FILE --epochs N   (or any agent)",
        opts.out.display()
    );
    Ok(GATES_PASSED)
}
