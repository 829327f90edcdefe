//! A Python callable as an agent: `agent(case, tools, user) -> str`. Each trial calls it on a
//! thread of the runtime's blocking pool, with the trial's tools and user in process: a tool
//! call goes straight to the trial's environment (the same path an MCP call takes), with the
//! GIL released while the world works, so Python agents run side by side.

use std::ffi::c_long;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use gauntlet_agent::{
    Agent, AgentError, AgentInput, AgentOutput, BoxFuture, SharedEnv, conversation, lock,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tokio::runtime::Handle;

use crate::errors::tool_error;

/// A Python callable, wrapped by `gauntlet.run` so that it is synchronous and returns a string
/// or `None`.
pub struct PyAgent {
    callable: Arc<Py<PyAny>>,
}

impl PyAgent {
    pub fn new(callable: Py<PyAny>) -> Self {
        PyAgent {
            callable: Arc::new(callable),
        }
    }
}

impl Agent for PyAgent {
    fn run<'a>(
        &'a self,
        input: &'a AgentInput,
        env: SharedEnv,
    ) -> BoxFuture<'a, Result<AgentOutput, AgentError>> {
        let callable = Arc::clone(&self.callable);
        let input = input.clone();
        let handle = Handle::current();
        let thread = Arc::new(AtomicU64::new(0));
        let over = Arc::new(AtomicBool::new(false));
        let watch = Interrupt {
            thread: Arc::clone(&thread),
            over: Arc::clone(&over),
        };
        Box::pin(async move {
            let task = tokio::task::spawn_blocking(move || {
                play(&callable, input, env, handle, &thread, over)
            });
            let played = task.await;
            // The trial ended on its own: nothing to interrupt.
            watch.thread.store(0, Ordering::SeqCst);
            played.map_err(|e| AgentError(format!("the Python agent's thread failed: {e}")))?
        })
    }
}

/// Interrupts the agent's Python code with `TimeoutError` when the trial is dropped before the
/// agent returned (its time ran out, or the run was stopped), and ends the trial for the tools
/// and the user the agent holds.
struct Interrupt {
    /// The agent's thread's Python identity, or 0 once the agent returned.
    thread: Arc<AtomicU64>,
    /// Whether the trial is over (see [`Tools`]).
    over: Arc<AtomicBool>,
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        self.over.store(true, Ordering::SeqCst);
        if self.thread.load(Ordering::SeqCst) == 0 {
            return;
        }
        Python::attach(|_py| {
            // Read again under the GIL: the agent's thread clears it under the GIL too, so the
            // exception never reaches a thread that has moved on to another trial.
            let ident = self.thread.load(Ordering::SeqCst);
            if ident != 0 {
                // SAFETY: the GIL is held; the exception type is a static Python object.
                unsafe {
                    pyo3::ffi::PyThreadState_SetAsyncExc(
                        ident as c_long,
                        pyo3::ffi::PyExc_TimeoutError,
                    );
                }
            }
        });
    }
}

/// One trial of the Python agent on this (blocking) thread.
fn play(
    callable: &Py<PyAny>,
    input: AgentInput,
    env: SharedEnv,
    handle: Handle,
    thread: &AtomicU64,
    over: Arc<AtomicBool>,
) -> Result<AgentOutput, AgentError> {
    Python::attach(|py| {
        let ident = py
            .import("threading")
            .and_then(|t| t.call_method0("get_ident"))
            .and_then(|i| i.extract::<u64>())
            .unwrap_or(0);
        thread.store(ident, Ordering::SeqCst);
        let steps = Arc::new(AtomicU32::new(0));
        let trial = format!("{} (epoch {})", input.case_id, input.epoch);
        let called = (|| {
            let case = Py::new(py, Case::from(input))?;
            let tools = Py::new(
                py,
                Tools {
                    env: Arc::clone(&env),
                    steps: Arc::clone(&steps),
                    over: Arc::clone(&over),
                },
            )?;
            let user = Py::new(
                py,
                User {
                    env,
                    steps,
                    handle,
                    over: Arc::clone(&over),
                },
            )?;
            callable
                .call1(py, (case, tools, user))?
                .extract::<Option<String>>(py)
        })();
        // Whether the trial was dropped while the agent ran (its time ran out, the run stopped):
        // then what it raised is the interruption, and the trial is not recorded from here.
        let dropped = over.load(Ordering::SeqCst);
        // The agent returned: a thread it left behind that calls a tool or the user hears that
        // the trial is over, and nothing more lands in its trajectory.
        over.store(true, Ordering::SeqCst);
        // Done with Python for this trial: no interrupt may reach this thread any more, and one
        // that arrived too late is dropped.
        thread.store(0, Ordering::SeqCst);
        if ident != 0 {
            // SAFETY: the GIL is held; NULL clears the thread's pending asynchronous exception.
            unsafe {
                pyo3::ffi::PyThreadState_SetAsyncExc(ident as c_long, std::ptr::null_mut());
            }
        }
        // The function was called: whatever it raises is the agent's crash, its trial failed
        // (`agent_completed`), never a harness error.
        match called {
            Ok(final_answer) => Ok(AgentOutput {
                final_answer,
                unfinished: None,
                crashed: None,
            }),
            Err(e) => {
                let crashed = crate::errors::describe(py, &e);
                if !dropped {
                    say_crash(py, &trial, &crashed);
                }
                Ok(AgentOutput {
                    final_answer: None,
                    unfinished: None,
                    crashed: Some(crashed),
                })
            }
        }
    })
}

/// Says on Python's `sys.stderr` that the agent raised, as it happens, in the words of the
/// trial's `agent_completed` reason: `gauntlet: lookup-status (epoch 0): agent_completed: the
/// Python agent raised KeyError: 'assigne' (agent.py:3 in agent)`. An exception is otherwise
/// silent (it is the trial's failure, not the run's), and a user's first question is why.
fn say_crash(py: Python<'_>, trial: &str, crashed: &str) {
    let line = format!(
        "gauntlet: {trial}: {}: {crashed}\n",
        gauntlet_model::names::AGENT_COMPLETED
    );
    // Nowhere to say it (stderr closed or replaced by something without `write`): the trial's
    // record still has it.
    let _ = py
        .import("sys")
        .and_then(|sys| sys.getattr("stderr"))
        .and_then(|err| err.call_method1("write", (line,)));
}

/// The trial as the agent sees it: the user's request and which repetition it is. It never
/// holds the expected outcome.
#[pyclass(module = "gauntlet._native", frozen, get_all)]
pub struct Case {
    /// The case's id.
    case_id: String,
    /// The user's request.
    user_input: String,
    /// The repetition, from 0.
    epoch: u32,
    /// The trial's seed.
    seed: u64,
}

impl From<AgentInput> for Case {
    fn from(input: AgentInput) -> Self {
        Case {
            case_id: input.case_id,
            user_input: input.user_input,
            epoch: input.epoch,
            seed: input.seed,
        }
    }
}

#[pymethods]
impl Case {
    fn __repr__(&self) -> String {
        format!(
            "Case(case_id={:?}, epoch={}, user_input={:?})",
            self.case_id, self.epoch, self.user_input
        )
    }
}

/// The world's tools of one trial, in process.
#[pyclass(module = "gauntlet._native", frozen)]
pub struct Tools {
    env: SharedEnv,
    steps: Arc<AtomicU32>,
    /// Set once the agent returned or its trial was dropped: every call then raises
    /// `ToolError(503, "the trial is over")`.
    over: Arc<AtomicBool>,
}

#[pymethods]
impl Tools {
    /// The tools the agent may call: `name`, `description`, `parameters` (a JSON Schema) and
    /// `read_only`.
    fn list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let tools = py.detach(|| lock(&self.env).tools());
        let listed: Vec<serde_json::Value> = tools
            .into_iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "read_only": t.kind == gauntlet_model::ToolKind::Read,
                })
            })
            .collect();
        Ok(pythonize::pythonize(py, &listed)?)
    }

    /// Calls a tool with keyword arguments; its result, or `gauntlet.ToolError`.
    #[pyo3(signature = (name, /, **arguments))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        arguments: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let args = match arguments {
            Some(a) => crate::convert::to_json(a.as_any())?,
            None => serde_json::Value::Object(Default::default()),
        };
        self.call_tool(py, name, args, None)
    }

    /// Calls a tool with its arguments as a dict and, optionally, an idempotency key.
    #[pyo3(signature = (name, arguments=None, idempotency_key=None))]
    fn call_with<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        arguments: Option<&Bound<'py, PyAny>>,
        idempotency_key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let args = match arguments {
            Some(a) if !a.is_none() => crate::convert::to_json(a)?,
            _ => serde_json::Value::Object(Default::default()),
        };
        self.call_tool(py, name, args, idempotency_key)
    }

    /// Waits before the next action, as a backoff does: the trial clock advances by `seconds`
    /// (every time-based verdict counts it) without the thread sleeping.
    fn sleep(&self, py: Python<'_>, seconds: f64) -> PyResult<()> {
        trial_on(py, &self.over)?;
        if !(seconds >= 0.0 && seconds.is_finite()) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "seconds must be a finite number, 0 or more",
            ));
        }
        let step = self.steps.fetch_add(1, Ordering::SeqCst) + 1;
        py.detach(|| lock(&self.env).wait(step, seconds * 1000.0));
        Ok(())
    }
}

impl Tools {
    fn call_tool<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        args: serde_json::Value,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        trial_on(py, &self.over)?;
        let step = self.steps.fetch_add(1, Ordering::SeqCst) + 1;
        let outcome = py.detach(|| lock(&self.env).call_tool(step, name, args, key));
        match outcome {
            Ok(value) => Ok(pythonize::pythonize(py, &value)?),
            Err(e) => Err(tool_error(py, &e)),
        }
    }
}

/// Raises `ToolError(503, "the trial is over")`, as a tool of an ended trial answers, once the
/// trial is `over`.
fn trial_on(py: Python<'_>, over: &AtomicBool) -> PyResult<()> {
    if !over.load(Ordering::SeqCst) {
        return Ok(());
    }
    Err(tool_error(
        py,
        &gauntlet_model::ToolError {
            status: 503,
            message: "the trial is over".to_owned(),
            retry_after_s: None,
        },
    ))
}

/// The simulated user of one trial.
#[pyclass(module = "gauntlet._native", frozen)]
pub struct User {
    env: SharedEnv,
    steps: Arc<AtomicU32>,
    handle: Handle,
    /// As [`Tools`]'s: once the trial is over, the user answers with `ToolError` too.
    over: Arc<AtomicBool>,
}

#[pymethods]
impl User {
    /// Asks the user to confirm an action; whether they approved.
    fn confirm(&self, py: Python<'_>, action: &str) -> PyResult<bool> {
        trial_on(py, &self.over)?;
        let step = self.steps.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(py.detach(|| {
            self.handle
                .block_on(conversation::confirm(&self.env, step, action))
                .0
        }))
    }

    /// Asks the user a question; the answer.
    fn ask(&self, py: Python<'_>, question: &str) -> PyResult<String> {
        trial_on(py, &self.over)?;
        let step = self.steps.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(py.detach(|| {
            self.handle
                .block_on(conversation::ask(&self.env, step, question))
        }))
    }
}
