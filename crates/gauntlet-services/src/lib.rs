//! Real services behind tools: MCP servers reached as commands or over HTTP (`upstream`, used by
//! the shadow proxy too, with a byte `relay` beside the client on a command's pipes), and worlds that are real services made fresh for every trial: a
//! directory, a git repository, or any service behind commands (`service`).

pub mod relay;
pub mod service;
pub mod upstream;

pub use service::{RealService, ServiceError, remove_own, sweep_stale};
pub use upstream::UpstreamError;
