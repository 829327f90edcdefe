//! The two kinds of failure every library error belongs to, so that the CLI decides exit codes
//! in one place from the kind, never from the call site.

/// Whose failure an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The user's input is wrong: a case, world, configuration, argument or stored file
    /// (exit code 2).
    InvalidInput,
    /// The harness itself could not run: a disk, a socket, a runtime (exit code 3).
    Harness,
}

/// An error that knows its [`ErrorKind`].
pub trait Classified: std::error::Error {
    /// Whose failure it is.
    fn kind(&self) -> ErrorKind;
}
