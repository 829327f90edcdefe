//! Worlds at run time: compiled tool schemas, tool handlers, and the per-trial simulator.
//!
//! [`World`] is built once per world definition and shared by every trial; [`Simulator`] holds
//! one trial's state and event log. Handlers sit behind the [`ToolHandler`] trait so that the
//! declarative handlers of today and script handlers later are interchangeable.
#![warn(missing_docs)]

mod declarative;
mod handler;
mod log;
pub mod recorded;
mod script;
mod simulator;
mod state;
mod world;

pub use declarative::DeclarativeHandler;
pub use handler::{HandlerContext, ToolHandler};
pub use log::EventTap;
pub use script::{
    CALL_TIME_LIMIT, LOAD_TIME_LIMIT, MEMORY_LIMIT, Pool, ScriptEngine, ScriptError, call_function,
    check_function,
};
pub use simulator::{
    FaultPlan, FaultRule, FinalStateError, Injections, MODEL, Service, ServiceFailed, Simulator,
    Trap, TrapCheck,
};
pub use state::merge_state;
pub use world::{ScriptSource, World, WorldError};
