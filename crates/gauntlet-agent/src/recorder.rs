//! What the LLM gateway needs of a trial: its clock, the model-call faults scheduled for it, and
//! a place to record each model call.
//!
//! A trait rather than the environment itself, so the gateway knows nothing of tools, users or
//! simulators (and the environment, which plays the simulated user through the gateway, does
//! not sit in an import circle with it).

use gauntlet_model::{Event, FaultKind, ToolError};

/// A trial as the gateway sees it.
pub trait ModelCallRecorder: Send + Sync {
    /// The trial clock, in milliseconds since the user's request.
    fn now_ms(&self) -> f64;
    /// Counts one model call of the agent; the injected fault that hits it, if any.
    fn model_call_fault(&self) -> Option<(FaultKind, ToolError)>;
    /// Records a `model_call` event in the trial's trajectory.
    fn record(&self, event: Event);
}
