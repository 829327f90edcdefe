//! The progress bar: a consumer of the run event stream, and the only place that draws while
//! trials run (on stderr, hidden with --quiet or --json).

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
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} trials  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        Progress { bar }
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
            RunEvent::RunFinished { .. } => {}
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
