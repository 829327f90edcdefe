//! Which agent may resume a run: the one it started with ([`check_agent`]). The run's header
//! names it (`python:MODULE:FUNCTION` for a Python function); the library takes the header's
//! agent when resuming and would set aside the one given, so `gauntlet.run` compares them
//! here, before the run starts, as the command refuses `--agent` with `--resume`.

use std::path::Path;

/// The agent `gauntlet.run` was given for a resumed run.
pub enum Given<'a> {
    /// None: the run's own.
    Nothing,
    /// A spec string (`script:reference`, `cmd:…`).
    Spec(&'a str),
    /// A Python function, by its label (`python:MODULE:FUNCTION`).
    Function(&'a str),
}

/// Whether a run's agent is a Python function (`python:MODULE:FUNCTION`, or `python` alone for
/// a callable with no name).
fn is_python(agent: &str) -> bool {
    agent == "python" || agent.starts_with("python:")
}

/// Refuses to resume the run in `dir` with another agent than the one it started with (the
/// message says which was recorded and which is given); a run of a Python function resumes
/// from Python, with that function. A folder whose header cannot be read is left to the run,
/// which says why.
pub fn check_agent(dir: &Path, given: Given<'_>) -> Result<(), String> {
    let Ok(header) = gauntlet_store::read_header(dir) else {
        return Ok(());
    };
    let recorded = header.agent.as_str();
    let dir = dir.display();
    match given {
        Given::Nothing => Ok(()),
        Given::Function(label) | Given::Spec(label) if label == recorded => Ok(()),
        Given::Function(label) if is_python(recorded) => Err(format!(
            "{dir} was run with the agent {recorded}, not {label}: a run resumes with the agent \
             it started with (pass that function as agent=, or start a new run)"
        )),
        Given::Spec(spec) if is_python(recorded) => Err(format!(
            "{dir} was run with the Python function {recorded}, not {spec}: resume it from \
             Python, with gauntlet.run(suite, agent=<that function>, resume=...)"
        )),
        Given::Function(given) | Given::Spec(given) => Err(format!(
            "{dir} was run with the agent {recorded}, not {given}: a run resumes with the agent \
             it started with (agent={recorded:?}, or leave agent out)"
        )),
    }
}
