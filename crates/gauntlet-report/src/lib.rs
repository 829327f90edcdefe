//! Rendering results for people: the terminal summary, the comparison view, and the stored-run
//! formats (single-file HTML, JUnit XML, Markdown).
//!
//! Reports read only the canonical [`gauntlet_model::RunResults`] (plus the trial records for the
//! HTML trajectory viewer), so a stored run renders exactly as the live run did.
#![warn(missing_docs)]

mod calibration;
mod compare;
mod html;
mod junit;
mod markdown;
mod svg;
mod terminal;
mod transcript;

pub use calibration::render_calibration;
pub use compare::{render_comparison, render_markdown_comparison};
pub use html::{PlotTrial, ReportError, render_html, run_plots};
pub use junit::render_junit;
pub use markdown::{MarkdownTrials, render_markdown, render_markdown_with};
pub use terminal::{
    SummaryOptions, TerminalReporter, attack_groups, attack_line, benchmark_line, render_summary,
};
pub use transcript::{
    CasePanel, Change, Review, TRANSCRIPT_SCRIPT, TRANSCRIPT_STYLE, Verdict, diff as state_diff,
    review,
};
