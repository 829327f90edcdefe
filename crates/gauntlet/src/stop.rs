//! Stopping a run on SIGINT or SIGTERM: every running agent killed, the trial's services and
//! scratch folders removed, and the command that resumes the run printed.

use crate::commands::run::Args as RunArgs;

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

/// The command that finishes this run, to paste into the same shell: the suite, the run folder,
/// and the flags given that `--resume` accepts (the rest come from the run's header).
pub fn resume_command(args: &RunArgs, out: &std::path::Path) -> String {
    let quote = |s: &str| {
        shlex::try_quote(s)
            .map(|q| q.into_owned())
            .unwrap_or_else(|_| s.to_owned())
    };
    let path = |p: &std::path::Path| quote(&p.to_string_lossy());
    let mut command = format!("gauntlet run {} --resume {}", path(&args.suite), path(out));
    let mut flag = |name: &str, value: String| {
        command.push_str(&format!(" --{name} {}", quote(&value)));
    };
    let r = &args.request;
    if let Some(n) = r.concurrency {
        flag("concurrency", n.to_string());
    }
    if let Some(t) = r.trial_timeout {
        flag("trial-timeout", t.to_string());
    }
    if r.retry_errors > 0 {
        flag("retry-errors", r.retry_errors.to_string());
    }
    if let Some(eur) = r.max_cost_eur {
        flag("max-cost-eur", eur.to_string());
    }
    if let Some(u) = &r.gateway_upstream {
        flag("gateway-upstream", u.clone());
    }
    if let Some(c) = &r.replay_cassette {
        flag("replay-cassette", c.to_string_lossy().into_owned());
    }
    if let Some(m) = &r.user_model {
        flag("user-model", m.clone());
    }
    if let Some(i) = &r.isolation {
        flag("isolation", i.clone());
    }
    command
}
