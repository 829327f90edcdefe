//! The progress bars: a consumer of the run event stream, the only place that draws while
//! trials run, and the bar of a file being scored (on stderr, hidden with --quiet or --json).

use gauntlet_model::RunEvent;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Trials done out of trials to run, and the case that started last.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar on stderr, or a hidden one.
    pub fn new(visible: bool) -> Progress {
        if !visible {
            return Progress {
                bar: ProgressBar::hidden(),
            };
        }
        Progress {
            bar: drawn(0, "{pos}/{len} trials"),
        }
    }

    /// A bar of bytes done out of `total` (a file scored), or a hidden one.
    pub fn bytes(visible: bool, total: u64) -> ProgressBar {
        if visible {
            drawn(total, "{bytes}/{total_bytes} scored")
        } else {
            ProgressBar::hidden()
        }
    }

    /// Moves the bar for one event.
    pub fn report(&self, event: &RunEvent) {
        match event {
            RunEvent::RunStarted {
                planned,
                already_done,
                ..
            } => self.bar.set_length((planned - already_done) as u64),
            RunEvent::TrialStarted { case_id, .. } => self.bar.set_message(case_id.clone()),
            RunEvent::TrialFinished { .. } => self.bar.inc(1),
            RunEvent::TrialEvent { .. }
            | RunEvent::TrialScored { .. }
            | RunEvent::RunFinished { .. } => {}
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A bar on stderr of `len` steps, counted as `count` says.
fn drawn(len: u64, count: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(&format!("{{spinner}} [{{bar:30}}] {count}  {{msg}}"))
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}
