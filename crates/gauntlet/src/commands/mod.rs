//! One module per subcommand, each with its arguments (`Args`) and what it does
//! (`Args::exec`); `dispatch` picks it. No command uses another: what several share is in
//! `crate::shared`, the reports in `crate::reports`, the audit's words in `crate::audits`.

pub mod audit;
pub mod calibrate;
pub mod check;
pub mod compare;
pub mod drift;
pub mod export;
pub mod gate;
pub mod harvest;
pub mod import;
pub mod init;
pub mod merge;
pub mod online;
pub mod report;
pub mod run;
pub mod runs;
pub mod schema;
pub mod score;
pub mod serve;
pub mod shadow;
pub mod view;

use crate::cli::{Cli, Command};
use crate::exit::ExpectedError;

/// Runs the command; the exit code, or an error carrying one.
pub fn dispatch(cli: Cli) -> Result<i32, ExpectedError> {
    crate::say::set_quiet(cli.quiet);
    match cli.command {
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
