//! `gauntlet run --events PATH`: the run event stream as NDJSON, one line an event, written
//! and flushed as each happens (a consumer follows a run live); `gauntlet report RUN --format
//! events` replays a stored run as the same lines. The lines are
//! [`gauntlet_model::RunEvent::wire`]'s.

use std::io::Write;
use std::path::Path;

use gauntlet_model::RunEvent;

use crate::exit::ExpectedError;

/// Where the event lines go; a reader that goes away (a closed pipe) ends the stream, not the
/// run. Any other failure to write (a full disk, `/dev/full`) ends the stream with one warning
/// and fails the run at its end ([`EventLines::failure`]): a consumer must not take a cut
/// stream for a whole one.
pub struct EventLines {
    out: Option<Box<dyn Write + Send>>,
    path: std::path::PathBuf,
    failure: Option<String>,
}

impl EventLines {
    /// A file (made or truncated), or stdout for `-`; refused inside `run_folder`, whose own
    /// files it would truncate.
    pub fn open_beside(
        path: &Path,
        run_folder: Option<&Path>,
    ) -> Result<EventLines, ExpectedError> {
        if let Some(folder) = run_folder
            && path != Path::new("-")
            && resolved(path).starts_with(resolved(folder))
        {
            return Err(ExpectedError::input(format!(
                "--events {}: inside the run folder {}, whose files it would overwrite: write \
                 the events elsewhere",
                path.display(),
                folder.display()
            )));
        }
        Self::open(path)
    }

    /// A file (made or truncated), or stdout for `-`.
    pub fn open(path: &Path) -> Result<EventLines, ExpectedError> {
        let out: Box<dyn Write + Send> =
            if path == Path::new("-") {
                Box::new(std::io::stdout())
            } else {
                Box::new(std::fs::File::create(path).map_err(|e| {
                    ExpectedError::input(format!("--events {}: {e}", path.display()))
                })?)
            };
        Ok(EventLines {
            out: Some(out),
            path: path.to_owned(),
            failure: None,
        })
    }

    /// Why the stream stopped before the run's end, if writing it failed (not a closed pipe).
    pub fn failure(&self) -> Option<String> {
        self.failure.as_ref().map(|e| {
            format!(
                "failed to write the events to {}: {e}; the stream stopped there",
                self.path.display()
            )
        })
    }

    /// Writes one event.
    pub fn event(&mut self, event: &RunEvent) {
        self.line(&event.wire());
    }

    /// Writes one line already made (the run's last, `run_finished`).
    pub fn line(&mut self, value: &serde_json::Value) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        let written = serde_json::to_writer(&mut *out, value)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            self.out = None;
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                eprintln!(
                    "warning: --events {}: {e}; no more events are written, and the run will \
                     exit 3",
                    self.path.display()
                );
                self.failure = Some(e.to_string());
            }
        }
    }
}

/// `path` as it resolves: symlinks followed where it exists, or its folder's where it does not
/// yet, so that `RUN/../RUN/x` and a link into the folder are told inside it.
fn resolved(path: &Path) -> std::path::PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    if let Ok(real) = absolute.canonicalize() {
        return real;
    }
    match (absolute.parent(), absolute.file_name()) {
        (Some(parent), Some(name)) => resolved(parent).join(name),
        _ => absolute,
    }
}

/// A stored run's event stream as NDJSON lines into `out` (see [`gauntlet_store::replay`]).
pub fn replay(dir: &Path, out: &mut dyn Write) -> Result<(), ExpectedError> {
    let read = |e: gauntlet_store::StoreError| {
        ExpectedError::input(format!("failed to read the run: {e}"))
    };
    for event in
        gauntlet_store::replay_kept(dir, gauntlet_runner::offline::KEPT_SUMMARIES).map_err(read)?
    {
        let line = event.map_err(read)?.wire();
        let written = serde_json::to_writer(&mut *out, &line)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"));
        if let Err(e) = written {
            crate::exit::exit_if_closed_pipe(&e);
            return Err(ExpectedError::harness(format!(
                "failed to write the events: {e}"
            )));
        }
    }
    out.flush().map_err(|e| {
        crate::exit::exit_if_closed_pipe(&e);
        ExpectedError::harness(format!("failed to write the events: {e}"))
    })
}

/// A stored run's event stream into a file (made or truncated), or stdout for `-`.
pub fn replay_to(dir: &Path, path: &Path) -> Result<(), ExpectedError> {
    if path == Path::new("-") {
        return replay(dir, &mut std::io::BufWriter::new(std::io::stdout().lock()));
    }
    let file = std::fs::File::create(path)
        .map_err(|e| ExpectedError::harness(format!("failed to write {}: {e}", path.display())))?;
    replay(dir, &mut std::io::BufWriter::new(file))
}
