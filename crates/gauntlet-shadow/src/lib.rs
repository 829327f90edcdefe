//! Shadow and canary: gauntlet as an MCP proxy in front of real tool servers.
//!
//! Reads are forwarded to the upstream and their results recorded; writes are recorded and
//! never executed (answered by a responder: a success shaped by the tool's output schema, or a
//! template), unless canary mode allows them within budgets. Each MCP session becomes a
//! trajectory in gauntlet's format ([`proxy::FinishedSession`]), which the CLI judges with the
//! trial-scoring entry point and stores; [`harvest`] turns stored sessions into a suite that
//! replays them offline.

pub mod harvest;
pub mod proxy;
pub mod respond;
pub mod upstream;

pub use proxy::{Catalog, FinishedSession, Proxy, Settings, ShadowServer, serve_stdio};
pub use upstream::{Upstream, UpstreamSpec};
