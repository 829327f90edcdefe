//! Rendering results for people: the terminal summary (more formats grow here).
//!
//! Reports read only the canonical [`gauntlet_model::RunResults`], so a stored run renders
//! exactly as the live run did.
#![warn(missing_docs)]

mod compare;
mod terminal;

pub use compare::render_comparison;
pub use terminal::{SummaryOptions, render_summary};
