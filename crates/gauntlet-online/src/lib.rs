//! Production in the loop.
//!
//! `policy`: an imported trace checked through the library's trial-scoring entry point with the
//! evaluators that need no expected state, against a policy (tools and their schemas,
//! constraints, canaries), then redacted (`PolicyCheck`; rules only, not an LLM judge).
//!
//! `lake`: the Parquet trace lake (Arrow's crates), partitioned by day, with retention.
//!
//! `receiver`: the OTLP/HTTP receiver (`gauntlet online`), with `monitor`, its sequential drift
//! detectors.
//!
//! `window`: a run or days of the lake as one window of a drift report.
//!
//! `harvest`: the flywheel, failed and negatively rated trajectories into candidate cases.
pub mod harvest;
pub mod lake;
pub mod monitor;
pub mod policy;
pub mod receiver;
pub mod window;
