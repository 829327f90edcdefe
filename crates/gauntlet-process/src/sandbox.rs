//! Where a command agent runs: in a bubblewrap sandbox of its own, or, where bubblewrap cannot
//! run, as a plain child process with a loud warning.
//!
//! In the sandbox (`bwrap`, Debian's `bubblewrap`) an agent has its own user, PID, IPC and UTS
//! namespaces and its own `/proc`: it cannot see the harness's or any sibling agent's processes,
//! so it cannot read their environment (the upstream API key, other trials' MCP tokens). The
//! file system is the host's, read-only, but for a fresh scratch folder per trial (its `TMPDIR`
//! and `HOME`'s stand-in, `GAUNTLET_SCRATCH`), removed when the trial ends; the network is
//! shared, because the agent reaches its world and the gateway on loopback. The sandbox dies with its parent
//! (`--die-with-parent`), and everything inside it dies with the sandbox's first process (PID
//! namespace), so a `setsid` child or a double fork ends with its trial and with gauntlet,
//! whatever stops gauntlet, `kill -9` included.
//!
//! Without bubblewrap the agent runs unisolated in its own process group, which the trial's end
//! kills, and with `PR_SET_PDEATHSIG`, which kills its first process when gauntlet dies; a
//! process that leaves the group escapes both, and the agent can read the harness's environment.

use std::path::{Path, PathBuf};
use std::process::Stdio;

/// What the user asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// bubblewrap when it runs here, otherwise unisolated with a warning.
    #[default]
    Auto,
    /// bubblewrap, or refuse to run.
    Bubblewrap,
    /// No sandbox (the agent needs to write outside `/tmp`, say), with a warning.
    None,
}

/// Why bubblewrap cannot sandbox agents here.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    /// It is not installed.
    #[error("bwrap is not on PATH")]
    NotOnPath,
    /// It cannot be started.
    #[error("cannot start {}: {source}", .bwrap.display())]
    CannotStart {
        /// The program.
        bwrap: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It runs but cannot create namespaces (in a container, say).
    #[error("{} cannot create a sandbox here: {stderr}", .bwrap.display())]
    CannotSandbox {
        /// The program.
        bwrap: PathBuf,
        /// What it said.
        stderr: String,
    },
}

/// `--isolation bubblewrap` where bubblewrap cannot sandbox agents. The user asked for what
/// this machine cannot give (their input, as a run planned on it has always said).
#[derive(Debug, thiserror::Error)]
#[error(
    "--isolation bubblewrap: {0}; install bubblewrap (Debian: apt-get install bubblewrap) or choose --isolation auto"
)]
pub struct SandboxError(#[source] pub Unavailable);

impl gauntlet_model::Classified for SandboxError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

/// How command agents are started, decided once per run.
#[derive(Debug, Clone)]
pub struct Sandbox {
    bwrap: Option<PathBuf>,
}

/// What an unisolated agent can do, said whenever agents run without the sandbox.
pub const UNISOLATED: &str = "command agents are NOT isolated: each can read the environment of \
    gauntlet and of sibling agents through /proc (the upstream API key, other trials' MCP \
    tokens), and a process it detaches can outlive its trial. Install bubblewrap (Debian: apt-get \
    install bubblewrap) to run them in a sandbox";

impl Sandbox {
    /// Decides how agents run: probes bubblewrap once (it may be installed yet unable to create
    /// namespaces, in a container). Returns the sandbox and the warning to show, if any.
    pub fn detect(choice: Isolation) -> Result<(Sandbox, Option<String>), SandboxError> {
        if choice == Isolation::None {
            return Ok((
                Sandbox { bwrap: None },
                Some(format!("{UNISOLATED} (--isolation none)")),
            ));
        }
        let probe = find_on_path("bwrap").ok_or(Unavailable::NotOnPath);
        let probe = probe.and_then(|bwrap| {
            let out = std::process::Command::new(&bwrap)
                .args(bwrap_args(Path::new("/"), &std::env::temp_dir()))
                .arg("true")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .map_err(|source| Unavailable::CannotStart {
                    bwrap: bwrap.clone(),
                    source,
                })?;
            if out.status.success() {
                Ok(bwrap)
            } else {
                Err(Unavailable::CannotSandbox {
                    stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
                    bwrap,
                })
            }
        });
        match (probe, choice) {
            (Ok(bwrap), _) => Ok((Sandbox { bwrap: Some(bwrap) }, None)),
            (Err(why), Isolation::Bubblewrap) => Err(SandboxError(why)),
            (Err(why), _) => Ok((
                Sandbox { bwrap: None },
                Some(format!("{UNISOLATED} ({why})")),
            )),
        }
    }

    /// Whether agents run in bubblewrap.
    pub fn isolated(&self) -> bool {
        self.bwrap.is_some()
    }

    /// The command that runs `sh -c SCRIPT` in `dir`, sandboxed if it can be, with `scratch`
    /// the one folder it may write. The caller sets the environment (it starts empty), the
    /// pipes and the process group.
    pub fn shell(&self, script: &str, dir: &Path, scratch: &Path) -> tokio::process::Command {
        let mut cmd = match &self.bwrap {
            Some(bwrap) => {
                let mut cmd = tokio::process::Command::new(bwrap);
                cmd.args(bwrap_args(dir, scratch))
                    .args(["sh", "-c", script]);
                cmd
            }
            None => {
                let mut cmd = tokio::process::Command::new("sh");
                cmd.args(["-c", script]).current_dir(dir);
                // SAFETY: prctl(2) with PR_SET_PDEATHSIG only sets a flag of the calling (child)
                // process; it is async-signal-safe and touches no memory of the parent.
                unsafe {
                    cmd.pre_exec(|| {
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                        Ok(())
                    });
                }
                cmd
            }
        };
        cmd.env_clear();
        cmd
    }
}

impl Sandbox {
    /// The command line that runs a program sandboxed with `dir` the one folder it may write
    /// (and works in), for a world's real-service server; `None` when sandboxes do not run
    /// here. The user's package caches (`~/.npm`, `~/.cache`) stay writable, so `npx` and `uvx`
    /// servers start from their cache.
    pub fn wrapper(&self, dir: &Path) -> Option<Vec<std::ffi::OsString>> {
        let bwrap = self.bwrap.as_ref()?;
        let mut args: Vec<std::ffi::OsString> = vec![bwrap.into()];
        args.extend(bwrap_args(dir, dir));
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
            for cache in [".npm", ".cache"] {
                let p = home.join(cache);
                if p.is_dir() {
                    args.extend(["--bind".into(), p.clone().into(), p.into()]);
                }
            }
        }
        Some(args)
    }
}

/// bubblewrap's arguments: new namespaces but the network, the host read-only but for
/// `scratch`, a /proc of its own, death with the parent, a new session (no terminal injection).
fn bwrap_args(dir: &Path, scratch: &Path) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        // Run as root, bubblewrap keeps every capability unless told: without them root in
        // the sandbox is held by file modes like anyone (another run's scratch folders are
        // enter-only, not listable).
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    .into_iter()
    .map(Into::into)
    .collect();
    // The other trials' scratch folders sit beside this one (and hold their tokens): an empty
    // folder covers them all, then the trial's own is bound back.
    if let Some(siblings) = scratch
        .parent()
        .filter(|p| crate::scratch::parent().is_ok_and(|parent| *p == parent))
    {
        args.extend(["--tmpfs".into(), siblings.into()]);
    }
    args.extend(["--bind".into(), scratch.into(), scratch.into()]);
    args.extend(["--chdir".into(), dir.into()]);
    args
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_required_sandbox_that_cannot_run_says_why_and_what_to_do() {
        let e = SandboxError(Unavailable::NotOnPath);
        assert_eq!(
            e.to_string(),
            "--isolation bubblewrap: bwrap is not on PATH; install bubblewrap (Debian: apt-get install bubblewrap) or choose --isolation auto"
        );
    }
}
