//! One module per subcommand, each with its arguments (`Args`) and what it does
//! (`Args::exec`); `Command::exec` (in `cli`) picks it. No command uses another: what several share is in
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
