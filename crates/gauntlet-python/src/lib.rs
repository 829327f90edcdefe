//! `gauntlet._native`: the Rust half of the Python package (`python/`). It calls the library,
//! not the command line: a run ([`gauntlet_runner::Run`]) with a Python callable as its agent
//! and a Python callback on its event stream, a score of recorded trajectories, a suite's
//! check, a stored run's results and its terminal summary, and the command line itself for the
//! `gauntlet` command. The GIL is released whenever the harness works. The Python half
//! (`gauntlet/__init__.py`) wraps these in typed objects.

mod agent;
mod convert;
mod errors;
mod in_progress;
mod named;
mod resume;
mod stop;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gauntlet_model::{ErrorKind, RunEvent};
use gauntlet_runner::{Finished, Notice, Observer, Run, RunOptions};
use gauntlet_suite::Suite;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use stop::Stop;

/// Runs the command line (`args` without the program's name) in this process; its exit code.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<String>) -> i32 {
    let argv = std::iter::once("gauntlet".to_owned()).chain(args);
    py.detach(|| gauntlet::main_with(argv))
}

/// Loads a suite; every problem (`file:line:col: message`) in one `InvalidInputError`.
fn load_suite(py: Python<'_>, path: &Path) -> PyResult<Suite> {
    py.detach(|| Suite::load(path)).map_err(|problems| {
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        errors::of_kind(py, ErrorKind::InvalidInput, &lines)
    })
}

/// A suite's problems, each `{file, line, col, message}`; empty when it loads.
#[pyfunction]
fn check<'py>(py: Python<'py>, suite: PathBuf) -> PyResult<Bound<'py, PyAny>> {
    let problems = match py.detach(|| Suite::load(&suite)) {
        Ok(_) => Vec::new(),
        Err(problems) => problems,
    };
    Ok(pythonize::pythonize(py, &problems)?)
}

/// A suite's cases, in order: `{case_id, tags}` (an `InvalidInputError` if it does not load).
#[pyfunction]
fn cases<'py>(py: Python<'py>, suite: PathBuf) -> PyResult<Bound<'py, PyAny>> {
    let suite = load_suite(py, &suite)?;
    let cases: Vec<serde_json::Value> = suite
        .cases
        .iter()
        .map(|c| serde_json::json!({"case_id": c.case.case_id, "tags": c.case.tags}))
        .collect();
    Ok(pythonize::pythonize(py, &cases)?)
}

/// A stored run's results (`results.json` and `summaries.jsonl`), checked as `gauntlet report`
/// reads them, as `{results, run_dir, errors, trials_on_disk}`.
#[pyfunction]
fn read_results<'py>(py: Python<'py>, run_dir: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let (results, trials_on_disk) = stored_results(py, &run_dir)?;
    let out = finished(py, &results, &run_dir, &[])?;
    out.set_item("trials_on_disk", trials_on_disk)?;
    Ok(out)
}

/// A finished run folder's results, and whether its summaries stayed on disk: a large run's
/// summaries stay there, as `run` leaves them (past the number a run holds, `KEPT_SUMMARIES`,
/// `Results` reads them from the folder when asked, and the summary lists no trial).
fn stored_results(py: Python<'_>, run_dir: &Path) -> PyResult<(gauntlet_model::RunResults, bool)> {
    let file = run_dir.join("results.json");
    if !file.is_file() {
        let message = format!(
            "{} is not a finished run folder (it has no results.json)",
            run_dir.display()
        );
        return Err(errors::of_kind(py, ErrorKind::InvalidInput, &[message]));
    }
    py.detach(|| {
        let mut results = gauntlet_store::read_results_head(&file)?;
        let mut kept = Vec::new();
        for summary in gauntlet_store::read_summaries(&file)? {
            if kept.len() == gauntlet_runner::offline::KEPT_SUMMARIES {
                return Ok((results, true));
            }
            kept.push(summary?);
        }
        results.trials = kept;
        Ok::<_, gauntlet_store::StoreError>((results, false))
    })
    .map_err(|e| errors::classified(py, &e))
}

/// A finished run's summary as `gauntlet run` prints it (the trials table, why each failed
/// trial did not pass, the metrics, gates and verdict): `color` for ANSI colours, `width` the
/// terminal's columns when known.
#[pyfunction]
#[pyo3(signature = (run_dir, *, color=false, width=None))]
fn summary(py: Python<'_>, run_dir: PathBuf, color: bool, width: Option<u16>) -> PyResult<String> {
    let (results, _) = stored_results(py, &run_dir)?;
    let options = gauntlet_report::SummaryOptions {
        color,
        width,
        ..Default::default()
    };
    Ok(py.detach(|| gauntlet_report::render_summary(&results, options)))
}

/// A stored run's trial records, one at a time (large states restored from `states/`), as
/// dicts in the form `trials.jsonl` holds them.
#[pyclass(module = "gauntlet._native", unsendable)]
struct TrialRecords {
    records:
        Box<dyn Iterator<Item = Result<gauntlet_model::TrialRecord, gauntlet_store::StoreError>>>,
}

#[pymethods]
impl TrialRecords {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.records.next() {
            None => Ok(None),
            Some(Ok(record)) => Ok(Some(pythonize::pythonize(py, &record)?)),
            Some(Err(e)) => Err(errors::classified(py, &e)),
        }
    }
}

/// A stored run's trial summaries, one at a time, in plan order, as dicts in the form
/// `summaries.jsonl` holds them: a large run's `Results` reads them from disk when asked.
#[pyclass(module = "gauntlet._native", unsendable)]
struct TrialSummaries {
    summaries:
        Box<dyn Iterator<Item = Result<gauntlet_model::TrialSummary, gauntlet_store::StoreError>>>,
}

#[pymethods]
impl TrialSummaries {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.summaries.next() {
            None => Ok(None),
            Some(Ok(summary)) => Ok(Some(pythonize::pythonize(py, &summary)?)),
            Some(Err(e)) => Err(errors::classified(py, &e)),
        }
    }
}

/// Streams a finished run's trial summaries (see [`TrialSummaries`]).
#[pyfunction]
fn read_summaries(py: Python<'_>, run_dir: PathBuf) -> PyResult<TrialSummaries> {
    let summaries =
        gauntlet_store::read_summaries(&run_dir).map_err(|e| errors::classified(py, &e))?;
    Ok(TrialSummaries { summaries })
}

/// Streams a stored run's trial records (see [`TrialRecords`]).
#[pyfunction]
fn read_trials(py: Python<'_>, run_dir: PathBuf) -> PyResult<TrialRecords> {
    let records = gauntlet_store::read_trials(&run_dir).map_err(|e| errors::classified(py, &e))?;
    Ok(TrialRecords {
        records: Box::new(records),
    })
}

/// Follows a run for Python: each event, in the wire form `--events` writes, to a callback;
/// warnings as Python warnings. The callback's first exception stops the run (Ctrl-C's
/// `KeyboardInterrupt` arrives that way when the signal lands while the callback runs), and is
/// raised.
struct PyObserver {
    on_event: Option<Py<PyAny>>,
    trial_events: bool,
    failed: Option<PyErr>,
    /// Set when the callback fails: the run's wait ends the run.
    stop: Stop,
    /// The run folder, once it exists.
    folder: Option<PathBuf>,
}

impl PyObserver {
    fn send(&mut self, wire: &serde_json::Value) {
        let (Some(callback), None) = (&self.on_event, &self.failed) else {
            return;
        };
        let sent = Python::attach(|py| {
            let event = pythonize::pythonize(py, wire)?;
            callback.call1(py, (event,)).map(drop)
        });
        if let Err(e) = sent {
            self.fail(e);
        }
    }

    fn fail(&mut self, e: PyErr) {
        self.failed.get_or_insert(e);
        self.stop.stop();
    }
}

impl Observer for PyObserver {
    fn follows_trials(&self) -> bool {
        self.on_event.is_some() && self.trial_events
    }

    fn notice(&mut self, notice: Notice) {
        if let Notice::Folder { dir, .. } = &notice {
            self.folder = Some(dir.clone());
        }
        if let Notice::Warning(w) = notice {
            Python::attach(|py| {
                let warned = py.import("warnings").and_then(|m| {
                    m.call_method1(
                        "warn",
                        (w, py.get_type::<pyo3::exceptions::PyUserWarning>()),
                    )
                });
                if let Err(e) = warned {
                    self.fail(e);
                }
            });
        }
    }

    fn event(&mut self, event: &RunEvent) {
        if self.on_event.is_some() {
            self.send(&event.wire());
        }
    }
}

/// Why a run ended before its work did.
enum Interrupted {
    /// A signal Python must see (Ctrl-C's `KeyboardInterrupt`): its exception.
    Signal(PyErr),
    /// Its [`Stop`] was set.
    Stopped,
}

/// Runs a future on the runtime with the GIL released, checking every 100 ms for a signal
/// Python must see (Ctrl-C's `KeyboardInterrupt`) and waking at once when `stop` is set; on
/// either, the run is dropped (its folder keeps every trial finished, to resume).
fn block_on_interruptible<T: Send, F: std::future::Future<Output = T>>(
    py: Python<'_>,
    runtime: &tokio::runtime::Runtime,
    stop: &Stop,
    work: impl FnOnce() -> F + Send,
) -> Result<T, Interrupted> {
    py.detach(|| {
        runtime.block_on(async {
            let work = work();
            let signals = async {
                loop {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        return e;
                    }
                }
            };
            tokio::select! {
                done = work => Ok(done),
                interrupted = signals => Err(Interrupted::Signal(interrupted)),
                () = stop.wait() => Err(Interrupted::Stopped),
            }
        })
    })
}

fn new_runtime(py: Python<'_>) -> PyResult<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            errors::of_kind(
                py,
                ErrorKind::Harness,
                &[format!("failed to start the async runtime: {e}")],
            )
        })
}

/// Runs a suite through the library's run. `request` is the run's options as a dict, the
/// library's `RunRequest` (the keys of `gauntlet run`'s flags: `epochs`, `trial_timeout`,
/// `max_cost_eur`, ...; an unknown key is refused); `agent` is a synchronous callable
/// `agent(case, tools, user) -> str | None` (`gauntlet.run` wraps coroutines), or `None` for the
/// request's `agent` spec. Returns `{results, run_dir, errors}`.
#[pyfunction]
#[pyo3(signature = (suite, request, *, agent=None, agent_label=None, on_event=None, trial_events=true, stop=None))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    suite: PathBuf,
    request: Bound<'py, PyAny>,
    agent: Option<Bound<'py, PyAny>>,
    agent_label: Option<String>,
    on_event: Option<Py<PyAny>>,
    trial_events: bool,
    stop: Option<Bound<'py, Stop>>,
) -> PyResult<Bound<'py, PyDict>> {
    let invalid = |m: String| errors::of_kind(py, ErrorKind::InvalidInput, &[m]);
    let suite = load_suite(py, &suite)?;
    let request: gauntlet_runner::RunRequest =
        pythonize::depythonize(&request).map_err(|e| invalid(format!("the run's options: {e}")))?;
    let callable = match agent {
        None => None,
        Some(a) if a.is_callable() => Some(a.unbind()),
        Some(_) => {
            return Err(invalid(
                "agent must be a callable agent(case, tools, user) or a string such as \"script:reference\"".into(),
            ));
        }
    };
    if let Some(dir) = &request.resume {
        let given = match (&request.agent, &callable) {
            (Some(spec), _) => resume::Given::Spec(spec),
            (None, Some(_)) => resume::Given::Function(agent_label.as_deref().unwrap_or("python")),
            (None, None) => resume::Given::Nothing,
        };
        resume::check_agent(dir, given).map_err(invalid)?;
    }
    let _claim = in_progress::claim(
        request
            .out
            .iter()
            .chain(&request.resume)
            .map(PathBuf::as_path),
    )
    .map_err(invalid)?;
    let mut run = Run::from_request(&suite, request).map_err(|e| errors::classified(py, &e))?;
    if let Some(callable) = callable {
        let label = agent_label.unwrap_or_else(|| "python".to_owned());
        run = run.agent(label, Arc::new(agent::PyAgent::new(callable)));
    }
    let stop = stop.map(|s| s.get().clone()).unwrap_or_default();
    let mut observer = PyObserver {
        on_event,
        trial_events,
        failed: None,
        stop: stop.clone(),
        folder: None,
    };
    let runtime = new_runtime(py)?;
    let executed = block_on_interruptible(py, &runtime, &stop, || run.execute(&mut observer));
    // An agent that will not return (blocked outside Python) must not hold the caller; the GIL
    // is released meanwhile, since a trial dropped now may take it to interrupt its agent.
    py.detach(|| runtime.shutdown_timeout(Duration::from_millis(500)));
    if let (Err(_), Some(dir)) = (&executed, &observer.folder) {
        let note = format!(
            "gauntlet: the run stopped; its finished trials are in {dir}: run again with resume={dir:?} to go on\n",
            dir = dir.display()
        );
        py.import("sys")?
            .getattr("stderr")?
            .call_method1("write", (note,))?;
    }
    let executed = match executed {
        Ok(done) => done,
        Err(Interrupted::Signal(e)) => return Err(e),
        // The callback's exception, or the stop Python set (a stream's consumer left).
        Err(Interrupted::Stopped) => {
            return Err(observer.failed.take().unwrap_or_else(|| {
                pyo3::exceptions::PyInterruptedError::new_err("the run was stopped")
            }));
        }
    };
    let Finished {
        results,
        gate_errors,
        dir,
        shard: _,
        spill,
    } = executed.map_err(|e| errors::classified(py, &e))?;
    // A run too large to hold its summaries kept them on disk, and there they stay, as the
    // command keeps them: `Results` reads them from the run folder when asked.
    let trials_on_disk = spill.is_some();
    drop(spill);
    observer.send(&gauntlet_model::events::run_finished_wire(
        &results,
        &gauntlet_runner::now(),
    ));
    if let Some(e) = observer.failed.take() {
        return Err(e);
    }
    if let Err(e) = gauntlet_store::Index::record_run(&suite.state_dir(), &results, &dir) {
        py.import("warnings")?
            .call_method1("warn", (e.to_string(),))?;
    }
    let out = finished(py, &results, &dir, &gate_errors)?;
    out.set_item("trials_on_disk", trials_on_disk)?;
    Ok(out)
}

/// `{results, run_dir, errors}` for the Python half: `errors` says why the run earns no verdict
/// (no trial could run, then the gates that could not be decided).
fn finished<'py>(
    py: Python<'py>,
    results: &gauntlet_model::RunResults,
    dir: &Path,
    gate_errors: &[String],
) -> PyResult<Bound<'py, PyDict>> {
    let errors: Vec<String> = results
        .nothing_ran()
        .into_iter()
        .chain(gate_errors.iter().cloned())
        .collect();
    let out = PyDict::new(py);
    out.set_item("results", pythonize::pythonize(py, results)?)?;
    out.set_item("run_dir", dir.display().to_string())?;
    out.set_item("errors", errors)?;
    Ok(out)
}

/// What a run of `suite` with these options would plan, without running it: `{trials,
/// epochs, seed, agent}` (the suite's defaults filled in), or the planning error.
#[pyfunction]
#[pyo3(signature = (suite, *, agent=None, epochs=None, seed=None, filter=None, attack=None))]
fn plan<'py>(
    py: Python<'py>,
    suite: PathBuf,
    agent: Option<String>,
    epochs: Option<u32>,
    seed: Option<u64>,
    filter: Option<String>,
    attack: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let suite = load_suite(py, &suite)?;
    let options = RunOptions {
        agent,
        seed,
        epochs,
        filter,
        attack,
        ..RunOptions::default()
    };
    let settings = gauntlet_runner::Settings::resolve(
        &suite,
        &options,
        None,
        gauntlet_runner::now,
        gauntlet_runner::new_run_id,
    )
    .map_err(|e| errors::classified(py, &e))?;
    let cases = settings
        .cases(&suite)
        .map_err(|e| errors::classified(py, &e))?;
    let out = PyDict::new(py);
    out.set_item("trials", cases.len() * settings.epochs as usize)?;
    out.set_item("epochs", settings.epochs)?;
    out.set_item("seed", settings.seed)?;
    out.set_item("agent", settings.agent)?;
    out.set_item("run_id", settings.run_id)?;
    Ok(out)
}

/// Merges the finished parts of a sharded run into one run folder `out`, as `gauntlet merge`
/// does (streamed; the gates decided on all trials); the merged run joins `suite`'s index when
/// given. Returns `{results, run_dir, errors}` (`results.trials` empty for a run too large to
/// hold: the trials are in the run folder).
#[pyfunction]
#[pyo3(signature = (parts, out, *, suite=None))]
fn merge<'py>(
    py: Python<'py>,
    parts: Vec<PathBuf>,
    out: PathBuf,
    suite: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    use gauntlet_runner::merge::{Merged, merge_parts};
    let suite = suite.map(|s| load_suite(py, &s)).transpose()?;
    let Merged {
        results,
        gate_errors,
        spill,
    } = py
        .detach(|| {
            merge_parts(
                &parts,
                &out,
                gauntlet_runner::offline::KEPT_SUMMARIES,
                gauntlet_runner::stamp,
            )
        })
        .map_err(|e| errors::classified(py, &e))?;
    if let Some(suite) = suite
        && let Err(e) = gauntlet_store::Index::record_run(&suite.state_dir(), &results, &out)
    {
        py.import("warnings")?
            .call_method1("warn", (e.to_string(),))?;
    }
    let done = finished(py, &results, &out, &gate_errors)?;
    done.set_item("trials_on_disk", spill.is_some())?;
    Ok(done)
}

/// Scores a file (or run folder) of recorded trajectories against a suite's cases, writing a
/// run folder (`out`, else one in the suite's `.gauntlet/runs`). Returns `{results, run_dir,
/// errors, problems}`.
#[pyfunction]
#[pyo3(signature = (trajectories, cases, *, out=None, gateway_upstream=None))]
fn score<'py>(
    py: Python<'py>,
    trajectories: PathBuf,
    cases: PathBuf,
    out: Option<PathBuf>,
    gateway_upstream: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    use gauntlet_runner::offline::{
        KEPT_SUMMARIES, OfflineScore, OfflineScoring, default_workers, offline_header,
        offline_judges, score_file,
    };
    let suite = load_suite(py, &cases)?;
    let custom =
        gauntlet_runner::plan::custom_evaluators(&suite).map_err(|e| errors::classified(py, &e))?;
    let judges = py
        .detach(|| offline_judges(&suite, gateway_upstream))
        .map_err(|e| errors::classified(py, &e))?;
    let header = offline_header(&suite, &trajectories, judges.as_ref().map(|j| &*j.panel));
    let dir = out.unwrap_or_else(|| suite.state_dir().join("runs").join(&header.run_id));
    let mut warnings = Vec::new();
    let scored = py.detach(|| {
        score_file(
            OfflineScoring {
                suite: &suite,
                trajectories: &trajectories,
                custom: &custom,
                judges: judges.as_ref().map(|j| &*j.panel),
                header,
                out: Some(&dir),
                summaries_needed: false,
                keep: KEPT_SUMMARIES,
                workers: default_workers(),
                clock: gauntlet_runner::stamp,
            },
            |w| warnings.push(w.to_string()),
            |_| {},
        )
    });
    let warn = py.import("warnings")?;
    for w in warnings {
        warn.call_method1("warn", (w,))?;
    }
    let OfflineScore {
        results,
        gate_errors,
        problems,
        ..
    } = scored.map_err(|e| errors::classified(py, &e))?;
    let out = finished(py, &results, &dir, &gate_errors)?;
    out.set_item("problems", problems)?;
    Ok(out)
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Inside Python, `python:MODULE:FUNCTION` agents can run: the command line's included.
    gauntlet_runner::agents::set_python_agents(named::import);
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(score, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(read_results, m)?)?;
    m.add_function(wrap_pyfunction!(read_trials, m)?)?;
    m.add_function(wrap_pyfunction!(read_summaries, m)?)?;
    m.add_function(wrap_pyfunction!(summary, m)?)?;
    m.add_function(wrap_pyfunction!(cases, m)?)?;
    m.add_class::<agent::Case>()?;
    m.add_class::<agent::Tools>()?;
    m.add_class::<agent::User>()?;
    m.add_class::<Stop>()?;
    Ok(())
}
