//! Why a run cannot be planned (or its judges prepared): the user's input, but for a judge
//! cache that cannot be opened.

use gauntlet_model::{Classified, ErrorKind};

/// Why a run cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// `--epochs 0`.
    #[error("`epochs` must be at least 1")]
    NoEpochs,
    /// No case id contains the filter.
    #[error("no case id contains `{0}`")]
    NoCaseMatches(String),
    /// The fault profile is not in the suite.
    #[error("no fault profile `{name}` in {file} (it has: {known})")]
    UnknownFaultProfile {
        /// The profile asked for.
        name: String,
        /// The suite's configuration file.
        file: String,
        /// The profiles it has.
        known: String,
    },
    /// `--attack` names an attack the suite does not define.
    #[error("--attack `{name}`: {file} defines no such attack under `attacks` (it has: {known})")]
    UnknownAttack {
        /// The attack asked for.
        name: String,
        /// The suite's configuration file.
        file: String,
        /// The attacks it has.
        known: String,
    },
    /// A run id with characters that do not belong in a folder name.
    #[error(
        "--run-id `{0}`: use letters, digits, `.`, `_` and `-` only, not dots alone (`.` and `..` name other folders)"
    )]
    BadRunId(String),
    /// A run name that could be taken for a path, or is not one word.
    #[error(
        "--name `{0}`: use letters, digits, `.`, `_` and `-` only (at most 100), starting with a letter or digit"
    )]
    BadRunName(String),
    /// A plan too large to be meant (and to fit in memory).
    #[error(
        "the plan has {trials} trials ({cases} cases x {epochs} epochs), more than the {max} a run may have: lower --epochs or --filter the cases"
    )]
    TooManyTrials {
        /// Trials planned.
        trials: u64,
        /// Cases.
        cases: usize,
        /// Epochs.
        epochs: u32,
        /// The most a run may have.
        max: u64,
    },
    /// The suite changed since the resumed run started.
    #[error("cannot resume the run: the {0} changed since it started; start a new run")]
    ChangedSinceStart(String),
    /// A custom evaluator cannot be read.
    #[error("{0}")]
    Evaluator(String),
    /// The agent cannot be made, or plays none of the cases.
    #[error("{0}")]
    Agent(String),
    /// A judge is declared wrongly, or a gate reads an uncalibrated judge.
    #[error(transparent)]
    Judge(#[from] gauntlet_scoring::JudgeError),
}

impl Classified for PlanError {
    fn kind(&self) -> ErrorKind {
        match self {
            PlanError::Judge(e) => e.kind(),
            _ => ErrorKind::InvalidInput,
        }
    }
}
