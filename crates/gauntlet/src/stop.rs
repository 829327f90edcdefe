//! Stopping a run on SIGINT or SIGTERM: every running agent killed, the trial's services and
//! scratch folders removed, and the command that resumes the run (the caller's words) printed.

/// On SIGINT or SIGTERM: kills every running agent (they sit in process groups of their own,
/// which a terminal's Ctrl-C does not reach), says how to resume, and exits 130 or 143. The
/// trials already finished are stored; the run resumes from them.
/// The handlers are installed before this returns (a signal that comes before the task first
/// runs is not lost to the default action, which would skip the clean-up).
pub fn stop_on_signal(
    runtime: &tokio::runtime::Runtime,
    resume: String,
) -> impl Future<Output = ()> + use<> {
    use tokio::signal::unix::{SignalKind, signal};
    let _entered = runtime.enter();
    let signals = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    );
    async move {
        let (Ok(mut int), Ok(mut term)) = signals else {
            return;
        };
        stop_on(&mut int, &mut term, resume).await;
    }
}

async fn stop_on(
    int: &mut tokio::signal::unix::Signal,
    term: &mut tokio::signal::unix::Signal,
    resume: String,
) {
    let code = tokio::select! {
        _ = int.recv() => 130,
        _ = term.recv() => 143,
    };
    let killed = gauntlet_agent::kill_all_agents();
    // The trials' real services: their servers die with this process; their folders go now.
    gauntlet_services::remove_own();
    gauntlet_process::scratch::remove_own();
    eprintln!(
        "\nstopped: {killed} running agent(s) killed; finished trials are stored. \
         Resume with: {resume}"
    );
    std::process::exit(code);
}
