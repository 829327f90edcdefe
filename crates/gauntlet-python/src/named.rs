//! A Python agent named as `python:MODULE:FUNCTION`, the one spelling the command line
//! (`gauntlet run --agent`), `gauntlet.run(agent="...")`, the pytest plugin and run records
//! share. The module is imported from the current folder first (as pytest's rootdir and
//! `python -m` do), then the Python path; the function is called as a callable agent is.

use std::path::Path;
use std::sync::Arc;

use gauntlet_agent::Agent;
use pyo3::prelude::*;

use crate::agent::PyAgent;

/// The agent `python:MODULE:FUNCTION` names, its module imported from `workdir` first; why not,
/// in one line, when the module does not import or has no such callable.
pub fn import(module: &str, function: &str, workdir: &Path) -> Result<Arc<dyn Agent>, String> {
    Python::attach(|py| {
        let found = (|| -> PyResult<Bound<'_, PyAny>> {
            let path = py.import("sys")?.getattr("path")?;
            let dir = workdir.to_string_lossy().into_owned();
            if !path.contains(&dir)? {
                path.call_method1("insert", (0, &dir))?;
            }
            let mut found = py.import(module)?.into_any();
            for part in function.split('.') {
                found = found.getattr(part)?;
            }
            Ok(found)
        })()
        .map_err(|e| {
            format!(
                "cannot load {function} from module {module} (looked in {} and the Python path): {}",
                workdir.display(),
                one_line(py, &e)
            )
        })?;
        if !found.is_callable() {
            return Err(format!(
                "{module}:{function} is a {}, not a function agent(case, tools, user)",
                found
                    .get_type()
                    .name()
                    .map_or_else(|_| "value".to_owned(), |n| n.to_string())
            ));
        }
        // The same wrapper `gauntlet.run` puts around a callable: coroutines are awaited, the
        // answer must be a string.
        let wrapped = py
            .import("gauntlet")
            .and_then(|g| g.getattr("_synchronous"))
            .and_then(|w| w.call1((found,)))
            .map_err(|e| format!("cannot wrap {module}:{function}: {}", one_line(py, &e)))?;
        Ok(Arc::new(PyAgent::new(wrapped.unbind())) as Arc<dyn Agent>)
    })
}

/// `ModuleNotFoundError: No module named 'x'`.
fn one_line(py: Python<'_>, e: &PyErr) -> String {
    let class = e
        .get_type(py)
        .name()
        .map_or_else(|_| "Exception".to_owned(), |n| n.to_string());
    let what = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    match what.lines().next() {
        Some(line) if !line.is_empty() => format!("{class}: {line}"),
        _ => class,
    }
}
