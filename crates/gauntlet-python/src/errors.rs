//! Errors as Python sees them: the exception classes of `gauntlet.errors`, of the same kinds as
//! the command's exit codes.

use gauntlet_model::{Classified, ErrorKind, ToolError};
use pyo3::prelude::*;

/// The exception of `gauntlet.errors` named `class`, made with the tuple `args`; a `RuntimeError` if the
/// package's Python half cannot be imported (the extension was loaded on its own).
fn exception<'py, A: pyo3::call::PyCallArgs<'py>>(py: Python<'py>, class: &str, args: A) -> PyErr {
    match py
        .import("gauntlet.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1(args))
    {
        Ok(instance) => PyErr::from_value(instance),
        Err(e) => e,
    }
}

/// An error of a kind: `InvalidInputError` (exit code 2) or `HarnessError` (exit code 3), with
/// one message (lines joined).
pub fn of_kind(py: Python<'_>, kind: ErrorKind, lines: &[String]) -> PyErr {
    let class = match kind {
        ErrorKind::InvalidInput => "InvalidInputError",
        ErrorKind::Harness => "HarnessError",
    };
    exception(py, class, (lines.join("\n"),))
}

/// A library error as its kind's exception.
pub fn classified(py: Python<'_>, e: &impl Classified) -> PyErr {
    of_kind(py, e.kind(), &[e.to_string()])
}

/// A tool's error as `gauntlet.ToolError(status, message, retry_after_s)`.
pub fn tool_error(py: Python<'_>, e: &ToolError) -> PyErr {
    exception(
        py,
        "ToolError",
        (e.status, e.message.as_str(), e.retry_after_s),
    )
}

/// An exception the agent raised, in one line: `NameError: name 'x' is not defined (agent.py:12
/// in solve)`, the place of the innermost frame outside the `gauntlet` package (an exception
/// the package raises about the agent, such as an answer that is no string, names the agent's
/// place in its message).
pub fn describe(py: Python<'_>, e: &PyErr) -> String {
    let what = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    let class = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".to_owned());
    let place = e.traceback(py).and_then(|tb| {
        let frames = py
            .import("traceback")
            .and_then(|t| t.call_method1("extract_tb", (tb,)))
            .ok()?;
        let package = py
            .import("gauntlet")
            .and_then(|g| g.getattr("__file__"))
            .and_then(|f| f.extract::<String>())
            .ok()
            .and_then(|f| Some(std::path::Path::new(&f).parent()?.to_owned()));
        let frames: Vec<Bound<'_, PyAny>> = frames.try_iter().ok()?.flatten().collect();
        let last = frames.into_iter().rev().find(|frame| {
            let file = frame
                .getattr("filename")
                .and_then(|f| f.extract::<String>())
                .unwrap_or_default();
            !package
                .as_deref()
                .is_some_and(|p| std::path::Path::new(&file).starts_with(p))
        })?;
        let file: String = last.getattr("filename").ok()?.extract().ok()?;
        let line: u32 = last.getattr("lineno").ok()?.extract().ok()?;
        let name: String = last.getattr("name").ok()?.extract().ok()?;
        let file = std::path::Path::new(&file)
            .file_name()
            .map_or(file.clone(), |f| f.to_string_lossy().into_owned());
        Some(format!(" ({file}:{line} in {name})"))
    });
    let what = what.lines().next().unwrap_or_default();
    let sep = if what.is_empty() { "" } else { ": " };
    format!(
        "the Python agent raised {class}{sep}{what}{}",
        place.unwrap_or_default()
    )
}
