//! `gauntlet`: evaluates AI agents in simulated tool worlds. The only crate that owns the
//! terminal, reads arguments and decides exit codes. The `gauntlet` binary and the Python
//! package's `gauntlet` command both call [`main_with`].

mod audits;
mod cli;
mod commands;
mod events;
mod exit;
mod progress;
mod reports;
mod say;
mod shared;
mod stop;

use clap::Parser;

/// Runs the command line `args` (the program name first) and returns its exit code; clap's
/// own exits (`--help`, a bad flag) end the process as a command's would.
pub fn main_with<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    exit::quiet_on_closed_pipe();
    let cli = cli::Cli::parse_from(args);
    say::set_quiet(cli.quiet);
    let code = match cli.command.exec() {
        Ok(code) => code,
        Err(e) => {
            e.print();
            e.code()
        }
    };
    gauntlet_process::scratch::remove_own();
    code
}
