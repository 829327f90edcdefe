//! `gauntlet`: evaluates AI agents in simulated tool worlds. The only crate that owns the
//! terminal, reads arguments and decides exit codes.

mod cli;
mod commands;
mod events;
mod exit;
mod progress;
mod say;
mod stop;

use clap::Parser;

/// mimalloc: scoring and running allocate many short-lived JSON values, where glibc's malloc
/// spent about a third of `score`'s time (benches/peers/score.sh).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    exit::quiet_on_closed_pipe();
    let cli = cli::Cli::parse();
    let code = match commands::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            e.print();
            e.code()
        }
    };
    gauntlet_agent::scratch::remove_own();
    std::process::exit(code);
}
