//! `gauntlet run --events PATH`: the run event stream as NDJSON, one line an event, written
//! and flushed as each happens (a consumer follows a run live). The lines are
//! [`gauntlet_model::RunEvent::wire`]'s.

use std::io::Write;
use std::path::Path;

use gauntlet_model::RunEvent;

use crate::exit::ExpectedError;

/// Where the event lines go; a reader that goes away (a closed pipe) ends the stream, not the
/// run.
pub struct EventLines {
    out: Option<Box<dyn Write + Send>>,
}

impl EventLines {
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
        Ok(EventLines { out: Some(out) })
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
        if written.is_err() {
            self.out = None;
        }
    }
}
