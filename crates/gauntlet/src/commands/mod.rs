//! One module per subcommand; `dispatch` picks it.

mod audit;
mod calibrate;
mod check;
mod compare;
mod drift;
mod export;
mod gate;
mod harvest;
pub mod import;
mod import_otlp;
mod init;
mod merge;
mod online;
pub mod report;
pub mod run;
mod runs;
mod schema;
mod score;
mod serve;
mod shadow;
mod shared;
mod view;

use crate::cli::{Cli, Command};
use crate::exit::ExpectedError;

/// Runs the command; the exit code, or an error carrying one.
pub fn dispatch(cli: Cli) -> Result<i32, ExpectedError> {
    crate::say::set_quiet(cli.quiet);
    match cli.command {
        Command::Run(mut args) => {
            args.quiet = cli.quiet;
            shared::set_explain(args.explain);
            run::run(*args)
        }
        Command::Check {
            suite,
            json,
            audit,
            no_play,
            play_services,
        } => check::check(
            &suite,
            json,
            audit,
            check::Play::new(no_play, play_services),
        ),
        Command::Audit {
            suite,
            json,
            seed,
            filter,
        } => audit::audit(audit::AuditArgs {
            suite: &suite,
            json,
            seed,
            filter,
        }),
        Command::Init { dir } => init::init(&dir),
        Command::Score(mut args) => {
            args.quiet = cli.quiet;
            score::score(args)
        }
        Command::Gate { run, gates, json } => gate::gate(&run, gates.as_deref(), json),
        Command::Merge {
            parts,
            out,
            report,
            json,
        } => merge::merge(&parts, &out, &report, json),
        Command::Export { run, out } => export::export(&run, &out),
        Command::Runs {
            suite,
            limit,
            prune,
            json,
        } => runs::runs(&suite, limit, prune, json),
        Command::Compare(args) => compare::compare(args),
        Command::Schema => schema::schema(),
        Command::Import {
            benchmark,
            data_dir,
            policy,
            domain,
            split,
            users,
            tau_bench_data,
            out,
            persona,
            suite,
        } => import::import(
            benchmark,
            import::Request {
                inputs: data_dir,
                policy,
                domain,
                split,
                users,
                tau_bench_data,
                out,
                persona,
                suite,
            },
        ),
        Command::Serve {
            suite,
            case,
            stdio,
            http,
        } => serve::serve(&suite, &case, stdio, http),
        Command::Shadow(args) => shadow::shadow(*args),
        Command::Online(args) => online::online(args),
        Command::View(args) => view::view(args),
        Command::Harvest {
            lake,
            out,
            filter,
            all,
        } => harvest::harvest(&lake, &out, filter.as_deref(), all),
        Command::Drift {
            baseline,
            current,
            alpha,
            min_rate_change,
            min_relative_change,
            min_latency_ms,
            json,
        } => drift::drift(
            &baseline,
            &current,
            alpha,
            gauntlet_stats::drift::Floors {
                rate: min_rate_change,
                relative: min_relative_change,
                latency_ms: min_latency_ms,
                ..Default::default()
            },
            json,
        ),
        Command::Report {
            run,
            format,
            out,
            baseline,
            explain,
        } => {
            shared::set_explain(explain);
            report::report(&run, format, out.as_deref(), baseline.as_deref())
        }
        Command::Calibrate(args) => calibrate::calibrate(&args),
    }
}
