//! [`StoreError`]: what can go wrong reading or writing a run, naming the file.

use std::path::PathBuf;

use gauntlet_model::{Classified, ErrorKind};

/// A store failure, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is not what the format says.
    #[error("{path}:{line}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The line (1 for whole-file documents).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The output folder already holds a run.
    #[error("{0} already holds a run; choose another --out or remove it")]
    Exists(PathBuf),
    /// A run to resume has already finished.
    #[error("{0} holds a finished run (it has results.json): there is nothing to resume")]
    Finished(PathBuf),
}

impl Classified for StoreError {
    /// A file that cannot be read or written is the harness's failure; a file that is not what
    /// the format says, or a folder that cannot take the run, is the user's input.
    fn kind(&self) -> ErrorKind {
        match self {
            StoreError::Io { .. } => ErrorKind::Harness,
            StoreError::Format { .. } | StoreError::Exists(_) | StoreError::Finished(_) => {
                ErrorKind::InvalidInput
            }
        }
    }
}

/// Turns an I/O error on `path` into a [`StoreError::Io`] naming it.
pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_owned(),
        source,
    }
}
