//! Production in the loop.
//!
//! `judge`: an imported trace judged through the library's trial-scoring entry point with the
//! evaluators that need no expected state, against a policy (tools and their schemas,
//! constraints, canaries), then redacted.
//!
//! `lake`: the Parquet trace lake (Arrow's crates), partitioned by day, with retention.
//!
//! `receiver`: the OTLP/HTTP receiver (`gauntlet online`), with `monitor`, its sequential drift
//! detectors.
pub mod judge;
pub mod lake;
pub mod monitor;
pub mod receiver;
