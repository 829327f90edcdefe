//! Production in the loop.
//!
//! `judge`: an imported trace judged through the library's trial-scoring entry point with the
//! evaluators that need no expected state, against a policy (tools and their schemas,
//! constraints, canaries), then redacted.
pub mod judge;
