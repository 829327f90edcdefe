//! Reading a suite folder: its configuration, worlds and cases, checked together.
//!
//! Every problem becomes a [`Diagnostic`] with `file:line:col`; loading goes on after a bad file
//! so that one `gauntlet check` reports every problem at once. [`Suite`] is the checked result:
//! nothing runs on a suite that did not load cleanly.
#![warn(missing_docs)]

mod config;
mod dataset;
mod diagnostic;
mod document;
mod load;
mod spans;
mod warnings;

pub use config::{
    AcceptedSurvivor, AuditConfig, CustomEvaluatorSpec, DatasetEntry, EvaluatorSource,
    EvaluatorSourceError, RubricConfig, SuiteConfig,
};
pub use dataset::{LoadedCase, load_cases};
pub use diagnostic::Diagnostic;
pub use load::{LoadedWorld, Suite, load_document, load_gates_file, load_world};
pub use warnings::warnings;
