//! Importing peer benchmarks as gauntlet suites.
//!
//! Today: tau-bench's airline domain ([`tau_bench`]). An importer reads the peer's data as it is
//! published, runs its gold actions in gauntlet's own re-implementation of the domain, and writes
//! a suite folder (config, world, state, cases) that `gauntlet run` takes as it is.

pub mod tau_bench;

use std::path::{Path, PathBuf};

/// Why an import failed; every variant names the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is not the JSON it should be.
    #[error("{path}:{line}:{column}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The data is readable but not what the importer expects.
    #[error("{path}: {message}")]
    Invalid {
        /// The file (or folder).
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value, ImportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ImportError::Io {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| ImportError::Json {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

pub(crate) fn write(path: &Path, text: &str) -> Result<(), ImportError> {
    let io = |source| ImportError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(path, text).map_err(io)
}
