//! The `gauntlet` command: [`gauntlet::main_with`] on the process's arguments.

/// mimalloc: scoring and running allocate many short-lived JSON values, where glibc's malloc
/// spent about a third of `score`'s time (benches/peers/score.sh).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(gauntlet::main_with(std::env::args_os()));
}
