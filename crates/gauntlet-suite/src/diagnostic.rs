//! A problem in an input file, located so that editors can jump to it.

use std::fmt;
use std::path::PathBuf;

/// One problem: `file:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Diagnostic {
    /// The file at fault.
    pub file: PathBuf,
    /// 1-based line (0 when unknown).
    pub line: usize,
    /// 1-based column (0 when unknown).
    pub col: usize,
    /// What is wrong and, where possible, what to do.
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic at a position.
    pub fn at(
        file: impl Into<PathBuf>,
        line: usize,
        col: usize,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            file: file.into(),
            line,
            col,
            message: message.into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file.display(),
            self.line.max(1),
            self.col.max(1),
            self.message
        )
    }
}
