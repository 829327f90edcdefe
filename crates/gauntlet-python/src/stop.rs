//! Stopping a run before it ends, from Python: [`Stop`], which the run's wait watches beside
//! Ctrl-C. The event callback's exception sets it (the run stops at once, not at its end), and
//! so does `gauntlet.stream` when its consumer leaves.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::prelude::*;
use tokio::sync::Notify;

/// A run's stop: set once, from any thread; the run's wait wakes at once.
#[pyclass(module = "gauntlet._native", frozen)]
#[derive(Clone, Default)]
pub struct Stop {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    stopped: AtomicBool,
    wake: Notify,
}

#[pymethods]
impl Stop {
    #[new]
    fn py_new() -> Self {
        Stop::default()
    }

    /// Stops the run: it ends as Ctrl-C ends it, its folder kept to resume.
    pub fn stop(&self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        // A permit is kept when nobody waits yet, so a stop set before the wait is not lost.
        self.inner.wake.notify_one();
    }

    /// Whether the run was stopped.
    #[getter]
    pub fn stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::SeqCst)
    }
}

impl Stop {
    /// Returns once the run is stopped.
    pub async fn wait(&self) {
        while !self.stopped() {
            self.inner.wake.notified().await;
        }
    }
}
