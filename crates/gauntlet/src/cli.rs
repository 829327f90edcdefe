//! Command-line arguments.

use clap::{Parser, Subcommand};

use crate::commands;
use crate::exit::ExpectedError;

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

/// The subcommands: each one's arguments and what it does live in its module under `commands/`.
#[derive(Debug, Subcommand)]
pub enum Command {
    Run(Box<commands::run::Args>),
    Check(commands::check::Args),
    Audit(commands::audit::Args),
    Init(commands::init::Args),
    Score(commands::score::Args),
    Gate(commands::gate::Args),
    Merge(commands::merge::Args),
    Export(commands::export::Args),
    Compare(commands::compare::Args),
    Runs(commands::runs::Args),
    Schema(commands::schema::Args),
    Serve(commands::serve::Args),
    Shadow(Box<commands::shadow::Args>),
    Online(commands::online::Args),
    View(commands::view::Args),
    Drift(commands::drift::Args),
    Harvest(commands::harvest::Args),
    Import(commands::import::Args),
    Report(commands::report::Args),
    Calibrate(commands::calibrate::Args),
}

impl Command {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        match self {
            Command::Run(args) => args.exec(),
            Command::Check(args) => args.exec(),
            Command::Audit(args) => args.exec(),
            Command::Init(args) => args.exec(),
            Command::Score(args) => args.exec(),
            Command::Gate(args) => args.exec(),
            Command::Merge(args) => args.exec(),
            Command::Export(args) => args.exec(),
            Command::Compare(args) => args.exec(),
            Command::Runs(args) => args.exec(),
            Command::Schema(args) => args.exec(),
            Command::Serve(args) => args.exec(),
            Command::Shadow(args) => args.exec(),
            Command::Online(args) => args.exec(),
            Command::View(args) => args.exec(),
            Command::Drift(args) => args.exec(),
            Command::Harvest(args) => args.exec(),
            Command::Import(args) => args.exec(),
            Command::Report(args) => args.exec(),
            Command::Calibrate(args) => args.exec(),
        }
    }
}
