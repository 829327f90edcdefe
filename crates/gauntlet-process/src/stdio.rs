//! Standard input and output for a stdio server, as the runtime's own pipes when they are pipes
//! (as an MCP client spawns its servers): a message is read and written where it is handled,
//! not handed to a blocking thread and back as `tokio::io::stdin`/`stdout` do (two thread
//! hand-offs a message each way, most of what a forwarded call cost the shadow proxy).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::net::unix::pipe;
use tokio_util::either::Either;

/// A reader of standard input.
pub type Input = Either<pipe::Receiver, tokio::io::Stdin>;
/// A writer of standard output.
pub type Output = Either<pipe::Sender, tokio::io::Stdout>;

/// Standard input and output: each as a non-blocking pipe when it is a pipe, else tokio's.
/// Standard output stays tokio's when standard error is the same pipe (non-blocking is shared
/// by both, and the error messages written to it expect to block). Dropping the guard puts
/// the pipes back in blocking mode, for whatever runs after.
pub fn async_stdio() -> (Input, Output, BlockingAgain) {
    let mut guard = BlockingAgain(Vec::new());
    let stdin = std::io::stdin();
    let input: Input =
        match own_pipe(stdin.as_fd()).and_then(|fd| pipe::Receiver::from_owned_fd(fd).ok()) {
            Some(r) => {
                guard.0.push(stdin.as_raw_fd());
                Either::Left(r)
            }
            None => Either::Right(tokio::io::stdin()),
        };
    let stdout = std::io::stdout();
    let shared_with_stderr = same_pipe(stdout.as_fd(), std::io::stderr().as_fd());
    let output: Output = match (!shared_with_stderr)
        .then(|| own_pipe(stdout.as_fd()))
        .flatten()
        .and_then(|fd| pipe::Sender::from_owned_fd(fd).ok())
    {
        Some(w) => {
            guard.0.push(stdout.as_raw_fd());
            Either::Left(w)
        }
        None => Either::Right(tokio::io::stdout()),
    };
    (input, output, guard)
}

/// A copy of `fd` when it is a pipe.
fn own_pipe(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    use std::os::unix::fs::FileTypeExt;
    let copy = fd.try_clone_to_owned().ok()?;
    let file = std::fs::File::from(copy);
    file.metadata()
        .ok()?
        .file_type()
        .is_fifo()
        .then(|| file.into())
}

/// Whether two descriptors are the same pipe.
fn same_pipe(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    use std::os::unix::fs::MetadataExt;
    let id = |fd: BorrowedFd<'_>| {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let m = file.metadata().ok()?;
        Some((m.dev(), m.ino()))
    };
    matches!((id(a), id(b)), (Some(x), Some(y)) if x == y)
}

/// Puts standard input and output back in blocking mode when dropped (non-blocking is a flag
/// of the open pipe, which their copies made non-blocking share).
pub struct BlockingAgain(Vec<std::os::fd::RawFd>);

impl Drop for BlockingAgain {
    fn drop(&mut self) {
        for &fd in &self.0 {
            blocking(fd);
        }
    }
}

fn blocking(fd: std::os::fd::RawFd) {
    // SAFETY: fcntl(2) on a descriptor number only reads and sets its flags; an invalid one
    // makes it fail with EBADF, which is ignored.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 && flags & libc::O_NONBLOCK != 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
}

/// The lines of an input, each with its newline kept, until the input ends or breaks.
pub struct Lines<R> {
    from: BufReader<R>,
    line: Vec<u8>,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    /// Reads `from` a line at a time.
    pub fn new(from: R) -> Self {
        Lines {
            from: BufReader::new(from),
            line: Vec::new(),
        }
    }

    /// The next line; `None` once the input has ended or broken.
    pub async fn next(&mut self) -> Option<&[u8]> {
        self.line.clear();
        match self.from.read_until(b'\n', &mut self.line).await {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(&self.line),
        }
    }
}
