//! Opening what gauntlet reads: regular files only, and lines of bounded length.
//!
//! A reader handed a FIFO blocks for good on `open`, and one handed `/dev/zero` reads until
//! memory runs out; a run folder, a lake or a label file is written by hand as often as by
//! gauntlet, so every reader opens through [`open_regular`] and reads JSON lines through
//! [`BoundedLines`], and a planted FIFO or device is an error naming the file.

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::Path;

/// The longest line a JSON-lines reader takes (256 MiB): a longer one is an error, not a
/// process that runs out of memory.
pub const MAX_LINE_BYTES: usize = 256 << 20;

/// Opens `path` for reading if it is a regular file (symlinks followed); a FIFO, a device, a
/// socket or a folder is refused with [`io::ErrorKind::InvalidInput`], without blocking.
pub fn open_regular(path: &Path) -> io::Result<File> {
    open_regular_with(std::fs::OpenOptions::new().read(true), path)
}

/// Opens `path` with `options` (to write a lock file, say) if it is, or becomes, a regular
/// file: as [`open_regular`], a FIFO or a device is refused without blocking.
pub fn open_regular_with(options: &mut std::fs::OpenOptions, path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking, so that opening a FIFO with no writer (or no reader) returns at once;
        // it changes nothing for a regular file, which is all that is kept.
        match options.custom_flags(libc::O_NONBLOCK).open(path) {
            Ok(f) => f,
            // What a FIFO opened to write with no reader answers.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => return Err(not_regular()),
            Err(e) => return Err(e),
        }
    };
    #[cfg(not(unix))]
    let file = {
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(not_regular());
        }
        options.open(path)?
    };
    if !file.metadata()?.is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

/// Reads a regular file whole (see [`open_regular`]).
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    let mut file = open_regular(path)?;
    let mut bytes = Vec::with_capacity(file.metadata().map_or(0, |m| m.len() as usize));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Reads a regular file whole as text (see [`open_regular`]).
pub fn read_regular_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read_regular(path)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "the file is not UTF-8 text"))
}

fn not_regular() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file (a FIFO, a device or a folder): gauntlet reads regular files only",
    )
}

/// The lines of a reader, each at most [`MAX_LINE_BYTES`] (its newline, and a `\r` before
/// it, removed): `BufRead::lines` but for a line without end, which is an error here.
pub struct BoundedLines<R> {
    reader: R,
    limit: usize,
    failed: bool,
}

impl<R: BufRead> BoundedLines<R> {
    /// The lines of `reader`, each at most [`MAX_LINE_BYTES`].
    pub fn new(reader: R) -> Self {
        Self::with_limit(reader, MAX_LINE_BYTES)
    }

    /// The lines of `reader`, each at most `limit` bytes.
    pub fn with_limit(reader: R, limit: usize) -> Self {
        BoundedLines {
            reader,
            limit,
            failed: false,
        }
    }

    /// The reader, to move it (a seek): reading goes on from there, a line too long before
    /// forgotten.
    pub fn get_mut(&mut self) -> &mut R {
        self.failed = false;
        &mut self.reader
    }

    /// The next line as bytes into `line` (cleared first), its newline kept; the bytes read, 0
    /// at the end. A line longer than the limit is an error, and so is every call after it.
    pub fn read_line_bytes(&mut self, line: &mut Vec<u8>) -> io::Result<usize> {
        line.clear();
        if self.failed {
            return Ok(0);
        }
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                return Ok(line.len());
            }
            let (take, done) = match available.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            line.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if line.len() > self.limit.saturating_add(1) || (!done && line.len() > self.limit) {
                self.failed = true;
                let limit = self.limit;
                line.clear();
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a line is longer than {limit} bytes, the most gauntlet reads"),
                ));
            }
            if done {
                return Ok(line.len());
            }
        }
    }
}

impl<R: BufRead> Iterator for BoundedLines<R> {
    type Item = io::Result<String>;

    fn next(&mut self) -> Option<io::Result<String>> {
        let mut line = Vec::new();
        match self.read_line_bytes(&mut line) {
            Ok(0) => None,
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                }
                Some(String::from_utf8(line).map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidData, "a line is not UTF-8 text")
                }))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_fifo_planted_as_a_run_file_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("summaries.jsonl");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = open_regular(&fifo).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("regular files only"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn dev_zero_behind_a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("summaries.jsonl");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(open_regular(&link).is_err());
        assert!(read_regular(&link).is_err());
        assert!(open_regular(dir.path()).is_err(), "a folder is no file");
    }

    #[test]
    fn a_line_without_end_stops_at_the_limit() {
        let text = format!("{{\"a\":1}}\r\n{}\n{{}}\n", "x".repeat(100));
        let mut lines = BoundedLines::with_limit(text.as_bytes(), 50);
        assert_eq!(lines.next().unwrap().unwrap(), "{\"a\":1}");
        let e = lines.next().unwrap().unwrap_err();
        assert!(e.to_string().contains("longer than 50 bytes"), "{e}");
        assert!(lines.next().is_none(), "nothing after a line too long");
        let endless = std::io::repeat(b'0').take(10_000);
        let mut lines = BoundedLines::with_limit(io::BufReader::new(endless), 1000);
        assert!(lines.next().unwrap().is_err());
    }

    #[test]
    fn lines_read_as_std_reads_them() {
        let text = "a\nbb\r\n\nlast";
        let ours: Vec<String> = BoundedLines::new(text.as_bytes())
            .map(Result::unwrap)
            .collect();
        let std: Vec<String> = text.lines().map(str::to_owned).collect();
        assert_eq!(ours, std);
    }
}
