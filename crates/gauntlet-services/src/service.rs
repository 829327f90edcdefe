//! A world's real service for one trial: its folder made from the fixture, its MCP server
//! started in the folder (in its own process group, dying with gauntlet), its state read back as
//! JSON, and everything removed when the trial ends.
//!
//! Calls are blocking (the simulator's tool path is synchronous): the server's client lives on a
//! thread of its own with its own runtime, and a call waits for its answer there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use gauntlet_model::ToolError;
use gauntlet_model::service::{ContentMode, ServiceKind, ServiceSpec};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::upstream::{
    CallFailure, Target, Upstream, UpstreamError, UpstreamSpec, call, outcome_of,
};

/// Seconds a server may take to start, and to answer a call, unless the world says otherwise.
const START_TIMEOUT_S: f64 = 60.0;
const CALL_TIMEOUT_S: f64 = 30.0;

/// How long a trial's end waits for its killed servers to be gone.
const SERVER_GONE: Duration = Duration::from_secs(2);

/// Where per-trial folders live: `$TMPDIR/gauntlet-trials/p<PID>-...`.
fn trials_root() -> PathBuf {
    std::env::temp_dir().join("gauntlet-trials")
}

/// Removes the per-trial folders of gauntlet processes that no longer run (killed outright).
pub fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir(trials_root()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix('p')
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            // Its servers, should any have outlived it (a sandbox does not die with a killed
            // parent): every process whose command line names the folder.
            kill_naming_until_gone(&e.path(), SERVER_GONE);
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// SIGKILL to every process whose command line names `path`, until none is left (at most
/// `patience`): a killed process lingers a moment, and a sandboxed server dies only after its
/// sandbox does.
fn kill_naming_until_gone(path: &Path, patience: Duration) {
    let deadline = std::time::Instant::now() + patience;
    while kill_naming(path) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SIGKILL to every process whose command line names `path`; how many there were.
fn kill_naming(path: &Path) -> usize {
    let needle = path.display().to_string();
    let mut found = 0;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(raw) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&raw).contains(&needle)
        {
            found += 1;
            // SAFETY: kill only sends a signal.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
    found
}

/// Held while a trial's folder is made and filled; `true` once gauntlet is stopping, after
/// which no folder is made (a setup racing the stop would leave one behind).
static SETTING_UP: std::sync::Mutex<bool> = std::sync::Mutex::new(false);

/// Stops every server, removes this process's per-trial folders and lets no new one be made
/// (on SIGINT or SIGTERM, before exiting).
pub fn remove_own() {
    let mut stopping = SETTING_UP.lock().unwrap_or_else(|p| p.into_inner());
    *stopping = true;
    crate::upstream::kill_all();
    let own = format!("p{}-", std::process::id());
    let mut folders: Vec<PathBuf> = std::fs::read_dir(trials_root())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&own))
        .map(|e| e.path())
        .collect();
    for f in &folders {
        kill_naming_until_gone(f, SERVER_GONE);
    }
    // A server may still be writing into its folder as it dies: try again a few times.
    for _ in 0..20 {
        folders.retain(|f| std::fs::remove_dir_all(f).is_err() && f.exists());
        if folders.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

enum Request {
    Call {
        tool: String,
        args: Value,
        reply: mpsc::Sender<Result<Value, ToolError>>,
    },
}

/// Why a trial's service cannot be made, started or read. A fixture, a command or a repository
/// the world describes wrongly is the user's input; a disk, a process or a thread that fails
/// is the harness's.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// gauntlet is stopping, and makes no new trial folder.
    #[error("gauntlet is stopping")]
    Stopping,
    /// A folder could not be created.
    #[error("cannot create {path}: {source}")]
    CreateFolder {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The trial's own temporary folder could not be made.
    #[error("cannot make the trial's folder: {0}")]
    TrialFolder(#[source] std::io::Error),
    /// A file operation in the trial's folder failed.
    #[error("{0}")]
    Io(#[source] std::io::Error),
    /// A path found under the trial's folder is not under it.
    #[error("{0}")]
    OutsideFolder(#[source] std::path::StripPrefixError),
    /// A folder of the fixture cannot be read.
    #[error("cannot read the fixture {path}: {source}")]
    ReadFixtureFolder {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The fixture's SQL script cannot be read.
    #[error("cannot read {path}: {source}")]
    ReadFixture {
        /// The script.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file or folder of the trial's folder cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file cannot be copied into the trial's folder.
    #[error("cannot copy {path}: {source}")]
    Copy {
        /// The file copied.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The fixture's SQL script fails.
    #[error("{path}: {source}")]
    FixtureSql {
        /// The script.
        path: PathBuf,
        /// The cause.
        source: rusqlite::Error,
    },
    /// The trial's database cannot be opened.
    #[error("cannot open {path}: {source}")]
    OpenDatabase {
        /// The database.
        path: PathBuf,
        /// The cause.
        source: rusqlite::Error,
    },
    /// The trial's database cannot be made or read.
    #[error("{0}")]
    Database(#[source] rusqlite::Error),
    /// git cannot be run.
    #[error("cannot run git: {0}")]
    RunGit(#[source] std::io::Error),
    /// git refused a command: the world's `branches` or `uncommitted` name what cannot be, or
    /// the agent left the repository unreadable.
    #[error("git {args} failed: {stderr}")]
    Git {
        /// Its arguments.
        args: String,
        /// What it wrote on stderr.
        stderr: String,
    },
    /// `sh` cannot be run.
    #[error("cannot run `{command}`: {source}")]
    RunCommand {
        /// The command.
        command: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The world's `setup`, `snapshot` or `teardown` command failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    CommandFailed {
        /// The command.
        command: String,
        /// How it ended.
        status: std::process::ExitStatus,
        /// What it wrote on stderr.
        stderr: String,
    },
    /// The snapshot command printed something other than JSON.
    #[error("the snapshot command did not print JSON ({source}): {start}")]
    SnapshotNotJson {
        /// The cause.
        source: serde_json::Error,
        /// The first 200 characters it printed.
        start: String,
    },
    /// The snapshot command printed JSON that is not an object.
    #[error("the snapshot command must print one JSON object")]
    SnapshotNotAnObject,
    /// The service's thread could not make its runtime.
    #[error("cannot start a runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The service's thread could not be started.
    #[error("cannot start the service's thread: {0}")]
    Thread(#[source] std::io::Error),
    /// The service's thread ended before saying whether its server started.
    #[error("the service's thread ended before its server started")]
    ThreadEnded,
    /// The world's MCP server could not be started or reached.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The service did not start (for one of the reasons above).
    #[error("the world's service did not start: {0}")]
    DidNotStart(#[source] Box<ServiceError>),
    /// The service started but its state could not be read.
    #[error("the service's state could not be read: {0}")]
    StateUnreadable(#[source] Box<ServiceError>),
}

impl gauntlet_model::Classified for ServiceError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        use gauntlet_model::ErrorKind::{Harness, InvalidInput};
        match self {
            ServiceError::ReadFixtureFolder { .. }
            | ServiceError::ReadFixture { .. }
            | ServiceError::FixtureSql { .. }
            | ServiceError::Git { .. }
            | ServiceError::CommandFailed { .. }
            | ServiceError::SnapshotNotJson { .. }
            | ServiceError::SnapshotNotAnObject => InvalidInput,
            // A fixture file that is not there is the world's mistake; any other failure to
            // copy is the disk's.
            ServiceError::Copy { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                InvalidInput
            }
            ServiceError::Stopping
            | ServiceError::CreateFolder { .. }
            | ServiceError::TrialFolder(_)
            | ServiceError::Io(_)
            | ServiceError::OutsideFolder(_)
            | ServiceError::Read { .. }
            | ServiceError::Copy { .. }
            | ServiceError::OpenDatabase { .. }
            | ServiceError::Database(_)
            | ServiceError::RunGit(_)
            | ServiceError::RunCommand { .. }
            | ServiceError::Runtime(_)
            | ServiceError::Thread(_)
            | ServiceError::ThreadEnded => Harness,
            ServiceError::Upstream(e) => e.kind(),
            ServiceError::DidNotStart(e) | ServiceError::StateUnreadable(e) => e.kind(),
        }
    }
}

/// One trial's service. Dropping it stops the server, runs `teardown` and removes the folder.
pub struct RealService {
    spec: ServiceSpec,
    dir: Option<tempfile::TempDir>,
    work: PathBuf,
    requests: Option<tokio::sync::mpsc::UnboundedSender<Request>>,
    thread: Option<std::thread::JoinHandle<()>>,
    call_timeout: Duration,
}

impl RealService {
    /// Makes the trial's folder from the fixture, starts the server in it and connects; with a
    /// sandbox, the server runs in it, the trial's folder the one it may write.
    pub fn start(
        spec: &ServiceSpec,
        sandbox: Option<&gauntlet_process::Sandbox>,
    ) -> Result<RealService, ServiceError> {
        let stopping = SETTING_UP.lock().unwrap_or_else(|p| p.into_inner());
        if *stopping {
            return Err(ServiceError::Stopping);
        }
        std::fs::create_dir_all(trials_root()).map_err(|source| ServiceError::CreateFolder {
            path: trials_root(),
            source,
        })?;
        let dir = tempfile::Builder::new()
            .prefix(&format!("p{}-", std::process::id()))
            .tempdir_in(trials_root())
            .map_err(ServiceError::TrialFolder)?;
        let work = dir.path().join("work");
        let fixture = spec.fixture.as_deref().map(Path::new);
        match spec.kind {
            ServiceKind::Directory => copy_tree(fixture.unwrap_or(Path::new(".")), &work)?,
            ServiceKind::Git => {
                copy_tree(fixture.unwrap_or(Path::new(".")), &work)?;
                make_repository(&work, &spec.branches, &spec.uncommitted)?;
            }
            ServiceKind::Sqlite => {
                std::fs::create_dir_all(&work).map_err(ServiceError::Io)?;
                make_database(fixture.unwrap_or(Path::new(".")), &work.join(DATABASE))?;
            }
            ServiceKind::Command => {
                std::fs::create_dir_all(&work).map_err(ServiceError::Io)?;
                if let Some(setup) = &spec.setup {
                    run_shell(setup, &work, fixture)?;
                }
            }
        }
        drop(stopping);
        let seconds = |s: f64| Duration::from_secs_f64(s);
        let call_timeout = seconds(
            spec.timeout_s
                .filter(|t| *t > 0.0)
                .unwrap_or(CALL_TIMEOUT_S),
        );
        let start_timeout = seconds(
            spec.timeout_s
                .filter(|t| *t > 0.0)
                .map_or(START_TIMEOUT_S, |t| t.max(START_TIMEOUT_S)),
        );
        let upstream = UpstreamSpec {
            name: Some("service".to_owned()),
            target: Target::Command(
                spec.server
                    .replace("{dir}", &shell_quote(&work))
                    .replace("{db}", &shell_quote(&work.join(DATABASE))),
            ),
            dir: Some(work.clone()),
            wrapper: sandbox.and_then(|s| s.wrapper(&work)).unwrap_or_default(),
            echo_stderr: false,
        };
        let (requests, mut inbox) = tokio::sync::mpsc::unbounded_channel::<Request>();
        let (ready, started) = mpsc::channel::<Result<(), ServiceError>>();
        let thread = std::thread::Builder::new()
            .name("gauntlet-service".to_owned())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = ready.send(Err(ServiceError::Runtime(e)));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let mut server = match Upstream::connect(&upstream, start_timeout).await {
                        Ok(u) => u,
                        Err(e) => {
                            let _ = ready.send(Err(e.into()));
                            return;
                        }
                    };
                    let _ = ready.send(Ok(()));
                    let Some(peer) = server.peer() else { return };
                    while let Some(Request::Call { tool, args, reply }) = inbox.recv().await {
                        let args = args.as_object().cloned().unwrap_or_default();
                        let outcome = match call(&peer, &tool, args, call_timeout).await {
                            Ok(r) => outcome_of(&r),
                            Err(CallFailure::Timeout(t)) => Err(ToolError {
                                status: 504,
                                message: format!("the service did not answer within {t:?}"),
                                retry_after_s: None,
                            }),
                            Err(CallFailure::Broken(e)) => Err(ToolError {
                                status: 502,
                                message: format!("the service's MCP server failed: {e}"),
                                retry_after_s: None,
                            }),
                        };
                        let _ = reply.send(outcome);
                    }
                    server.stop();
                });
            })
            .map_err(ServiceError::Thread)?;
        let mut service = RealService {
            spec: spec.clone(),
            dir: Some(dir),
            work,
            requests: Some(requests),
            thread: Some(thread),
            call_timeout,
        };
        match started.recv() {
            Ok(Ok(())) => Ok(service),
            Ok(Err(e)) => {
                service.stop();
                Err(e)
            }
            Err(_) => {
                service.stop();
                Err(ServiceError::ThreadEnded)
            }
        }
    }

    /// Starts the service and reads its initial state back: the two steps every trial takes,
    /// each failure said as such.
    pub fn start_and_read(
        spec: &ServiceSpec,
        sandbox: Option<&gauntlet_process::Sandbox>,
    ) -> Result<(RealService, Value), ServiceError> {
        let service = RealService::start(spec, sandbox)
            .map_err(|e| ServiceError::DidNotStart(Box::new(e)))?;
        let state = snapshot(spec, &service.work)
            .map_err(|e| ServiceError::StateUnreadable(Box::new(e)))?;
        Ok((service, state))
    }

    /// The trial's folder.
    pub fn dir(&self) -> &Path {
        &self.work
    }

    fn stop(&mut self) {
        // Closing the channel ends the thread's loop; the server's process group is killed.
        self.requests.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // Gone before the trial is over, sandbox and all (so none outlives a run).
        kill_naming_until_gone(&self.work, SERVER_GONE);
        if let (ServiceKind::Command, Some(teardown)) = (self.spec.kind, &self.spec.teardown) {
            let fixture = self.spec.fixture.clone();
            let _ = run_shell(teardown, &self.work, fixture.as_deref().map(Path::new));
        }
        if let Some(d) = self.dir.take() {
            let _ = d.close();
        }
    }
}

impl Drop for RealService {
    fn drop(&mut self) {
        self.stop();
    }
}

impl gauntlet_world::Service for RealService {
    fn call(&mut self, tool: &str, args: &Value) -> Result<Value, ToolError> {
        let gone = || ToolError {
            status: 502,
            message: "the service has stopped".to_owned(),
            retry_after_s: None,
        };
        let (reply, answer) = mpsc::channel();
        let request = Request::Call {
            tool: tool.to_owned(),
            args: args.clone(),
            reply,
        };
        self.requests
            .as_ref()
            .ok_or_else(gone)?
            .send(request)
            .map_err(|_| gone())?;
        answer
            .recv_timeout(self.call_timeout + Duration::from_secs(5))
            .map_err(|_| gone())?
    }

    // The world's trait says its errors in words.
    fn snapshot(&mut self) -> Result<Value, gauntlet_world::ServiceFailed> {
        snapshot(&self.spec, &self.work).map_err(gauntlet_world::ServiceFailed::new)
    }
}

/// The state of a service's folder, as its kind reads it.
pub fn snapshot(spec: &ServiceSpec, dir: &Path) -> Result<Value, ServiceError> {
    let mode = spec.content.unwrap_or(ContentMode::Text);
    match spec.kind {
        ServiceKind::Directory => tree_state(dir, mode),
        ServiceKind::Git => git_state(dir, mode),
        ServiceKind::Sqlite => database_state(&dir.join(DATABASE)),
        ServiceKind::Command => {
            let cmd = spec.snapshot.as_deref().unwrap_or("echo {}");
            let out = shell(cmd, dir, spec.fixture.as_deref().map(Path::new))?;
            let v: Value =
                serde_json::from_str(&out).map_err(|source| ServiceError::SnapshotNotJson {
                    source,
                    start: out.chars().take(200).collect(),
                })?;
            if v.is_object() {
                Ok(v)
            } else {
                Err(ServiceError::SnapshotNotAnObject)
            }
        }
    }
}

/// A `sqlite` world's database, in the trial's folder.
const DATABASE: &str = "db.sqlite";

/// The fixture database copied, or a fresh one made by the fixture's SQL script.
fn make_database(fixture: &Path, db: &Path) -> Result<(), ServiceError> {
    let script = fixture
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("sql"));
    if script {
        let sql = std::fs::read_to_string(fixture).map_err(|source| ServiceError::ReadFixture {
            path: fixture.to_owned(),
            source,
        })?;
        let conn = rusqlite::Connection::open(db).map_err(ServiceError::Database)?;
        conn.execute_batch(&sql)
            .map_err(|source| ServiceError::FixtureSql {
                path: fixture.to_owned(),
                source,
            })?;
    } else {
        std::fs::copy(fixture, db).map_err(|source| ServiceError::Copy {
            path: fixture.to_owned(),
            source,
        })?;
    }
    Ok(())
}

/// `{tables: {NAME: [ROW, ...]}}`: every table's rows as objects, ordered by their first column.
fn database_state(db: &Path) -> Result<Value, ServiceError> {
    use rusqlite::types::ValueRef;
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|source| ServiceError::OpenDatabase {
                path: db.to_owned(),
                source,
            })?;
    let names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .map_err(ServiceError::Database)?;
    let mut tables = Map::new();
    for name in names {
        let quoted = format!("\"{}\"", name.replace('"', "\"\""));
        let mut st = conn
            .prepare(&format!("SELECT * FROM {quoted} ORDER BY 1"))
            .map_err(ServiceError::Database)?;
        let columns: Vec<String> = st.column_names().map(str::to_owned).collect();
        let rows: Vec<Value> = st
            .query_map([], |r| {
                let mut row = Map::new();
                for (i, c) in columns.iter().enumerate() {
                    let v = match r.get_ref(i)? {
                        ValueRef::Null => Value::Null,
                        ValueRef::Integer(n) => json!(n),
                        ValueRef::Real(x) => json!(x),
                        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
                        ValueRef::Blob(b) => Value::String(hash(b)),
                    };
                    row.insert(c.clone(), v);
                }
                Ok(Value::Object(row))
            })
            .and_then(|rows| rows.collect())
            .map_err(ServiceError::Database)?;
        tables.insert(name, Value::Array(rows));
    }
    Ok(json!({"tables": tables}))
}

/// `{files: {PATH: TEXT}, dirs: [PATH]}` of a folder (`.git` left out), paths with `/`.
fn tree_state(dir: &Path, mode: ContentMode) -> Result<Value, ServiceError> {
    let mut files = BTreeMap::new();
    let mut dirs = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|source| ServiceError::Read {
            path: d.clone(),
            source,
        })?;
        for e in entries.flatten() {
            let p = e.path();
            if e.file_name() == ".git" {
                continue;
            }
            let rel = p
                .strip_prefix(dir)
                .map_err(ServiceError::OutsideFolder)?
                .to_string_lossy()
                .into_owned();
            let ft = e.file_type().map_err(ServiceError::Io)?;
            if ft.is_dir() {
                dirs.push(rel);
                stack.push(p);
            } else if ft.is_file() {
                let bytes = std::fs::read(&p).map_err(|source| ServiceError::Read {
                    path: p.clone(),
                    source,
                })?;
                let text = match (mode, String::from_utf8(bytes)) {
                    (ContentMode::Text, Ok(t)) => t,
                    (_, Ok(t)) => hash(t.as_bytes()),
                    (_, Err(e)) => hash(e.as_bytes()),
                };
                files.insert(rel, Value::String(text));
            }
        }
    }
    dirs.sort();
    Ok(json!({"files": Map::from_iter(files), "dirs": dirs}))
}

fn hash(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    format!(
        "sha256:{}",
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// The work tree, `head`, `branches` with their logs (`{subject, files}`, newest first) and
/// `status` of a repository.
fn git_state(dir: &Path, mode: ContentMode) -> Result<Value, ServiceError> {
    let mut state = tree_state(dir, mode)?;
    let head = git(dir, &["rev-parse", "--abbrev-ref", "HEAD"])?
        .trim()
        .to_owned();
    let mut branches = Map::new();
    for b in git(
        dir,
        &["for-each-ref", "--format=%(refname:short)", "refs/heads"],
    )?
    .lines()
    {
        let log = git(dir, &["log", "--format=%x1e%s", "--name-only", b])?;
        let commits: Vec<Value> = log
            .split('\u{1e}')
            .filter(|c| !c.trim().is_empty())
            .map(|c| {
                let mut lines = c.lines();
                let subject = lines.next().unwrap_or_default();
                let files: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
                json!({"subject": subject, "files": files})
            })
            .collect();
        branches.insert(b.to_owned(), json!({"log": commits}));
    }
    let (mut staged, mut unstaged, mut untracked) = (Vec::new(), Vec::new(), Vec::new());
    for entry in git(dir, &["status", "--porcelain=v1", "-z"])?.split('\0') {
        if entry.len() < 4 {
            continue;
        }
        let (x, y, path) = (&entry[0..1], &entry[1..2], entry[3..].to_owned());
        if x == "?" {
            untracked.push(path);
            continue;
        }
        if x != " " {
            staged.push(path.clone());
        }
        if y != " " {
            unstaged.push(path);
        }
    }
    state["head"] = json!(head);
    state["branches"] = Value::Object(branches);
    state["status"] = json!({"staged": staged, "unstaged": unstaged, "untracked": untracked});
    Ok(state)
}

/// Runs git in `dir` with a fixed identity and no user or system configuration.
fn git(dir: &Path, args: &[&str]) -> Result<String, ServiceError> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "gauntlet")
        .env("GIT_AUTHOR_EMAIL", "gauntlet@example.invalid")
        .env("GIT_COMMITTER_NAME", "gauntlet")
        .env("GIT_COMMITTER_EMAIL", "gauntlet@example.invalid")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .output()
        .map_err(ServiceError::RunGit)?;
    if !out.status.success() {
        return Err(ServiceError::Git {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The fixture's files as a repository: one commit on `main` (fixed identity and date, so every
/// trial starts from the same commit), the given branches at it, and an identity for the agent's
/// own commits.
fn make_repository(
    dir: &Path,
    branches: &[String],
    uncommitted: &[String],
) -> Result<(), ServiceError> {
    git(dir, &["init", "-q", "-b", "main"])?;
    git(dir, &["config", "user.name", "gauntlet-agent"])?;
    git(dir, &["config", "user.email", "agent@example.invalid"])?;
    git(dir, &["add", "-A"])?;
    for path in uncommitted {
        git(dir, &["rm", "-q", "--cached", "--", path])?;
    }
    git(dir, &["commit", "-q", "--allow-empty", "-m", "initial"])?;
    for b in branches {
        git(dir, &["branch", b])?;
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), ServiceError> {
    std::fs::create_dir_all(to).map_err(|source| ServiceError::CreateFolder {
        path: to.to_owned(),
        source,
    })?;
    let entries = std::fs::read_dir(from).map_err(|source| ServiceError::ReadFixtureFolder {
        path: from.to_owned(),
        source,
    })?;
    for e in entries.flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ft = e.file_type().map_err(ServiceError::Io)?;
        if ft.is_dir() {
            copy_tree(&src, &dst)?;
        } else if ft.is_file() {
            std::fs::copy(&src, &dst).map_err(|source| ServiceError::Copy {
                path: src.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// Runs a command with `sh -c` in `dir` (`$GAUNTLET_DIR`, `$GAUNTLET_FIXTURE` set): its stdout.
fn shell(cmd: &str, dir: &Path, fixture: Option<&Path>) -> Result<String, ServiceError> {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .env("GAUNTLET_DIR", dir);
    if let Some(f) = fixture {
        c.env("GAUNTLET_FIXTURE", f);
    }
    let out = c.output().map_err(|source| ServiceError::RunCommand {
        command: cmd.to_owned(),
        source,
    })?;
    if !out.status.success() {
        return Err(ServiceError::CommandFailed {
            command: cmd.to_owned(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn run_shell(cmd: &str, dir: &Path, fixture: Option<&Path>) -> Result<(), ServiceError> {
    shell(cmd, dir, fixture).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: ServiceKind, fixture: &Path) -> ServiceSpec {
        ServiceSpec {
            kind,
            fixture: Some(fixture.display().to_string()),
            server: "true".to_owned(),
            branches: vec!["fix".to_owned()],
            uncommitted: Vec::new(),
            setup: None,
            snapshot: None,
            teardown: None,
            content: None,
            timeout_s: None,
        }
    }

    #[test]
    fn a_repository_reads_back_its_tree_branches_log_and_status() {
        let tmp = tempfile::tempdir().unwrap();
        let fixture = tmp.path().join("fixture");
        std::fs::create_dir_all(fixture.join("src")).unwrap();
        std::fs::write(fixture.join("README.md"), "hello\n").unwrap();
        std::fs::write(fixture.join("src/lib.rs"), "fn main() {}\n").unwrap();
        let work = tmp.path().join("work");
        copy_tree(&fixture, &work).unwrap();
        make_repository(&work, &["fix".to_owned()], &[]).unwrap();
        let s = spec(ServiceKind::Git, &fixture);
        let first = snapshot(&s, &work).unwrap();
        assert_eq!(first["head"], "main");
        assert_eq!(first["files"]["src/lib.rs"], "fn main() {}\n");
        assert_eq!(first["dirs"], json!(["src"]));
        assert_eq!(
            first["branches"]["fix"]["log"],
            json!([{"subject": "initial", "files": ["README.md", "src/lib.rs"]}])
        );
        // Another trial's repository starts from the very same state.
        let again = tmp.path().join("again");
        copy_tree(&fixture, &again).unwrap();
        make_repository(&again, &["fix".to_owned()], &[]).unwrap();
        assert_eq!(snapshot(&s, &again).unwrap(), first);
        assert_eq!(
            git(&work, &["rev-parse", "HEAD"]).unwrap(),
            git(&again, &["rev-parse", "HEAD"]).unwrap()
        );
        std::fs::write(work.join("README.md"), "bye\n").unwrap();
        std::fs::write(work.join("new.txt"), "x").unwrap();
        let now = snapshot(&s, &work).unwrap();
        assert_eq!(
            now["status"],
            json!({"staged": [], "unstaged": ["README.md"], "untracked": ["new.txt"]})
        );
        git(&work, &["checkout", "-q", "fix"]).unwrap_or_default();
        git(&work, &["add", "README.md"]).unwrap();
        git(&work, &["commit", "-q", "-m", "say bye"]).unwrap();
        let done = snapshot(&s, &work).unwrap();
        assert_eq!(done["head"], "fix");
        assert_eq!(
            done["branches"]["fix"]["log"][0],
            json!({"subject": "say bye", "files": ["README.md"]})
        );
        assert_eq!(done["branches"]["main"]["log"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn a_database_reads_back_its_tables_as_json() {
        let tmp = tempfile::tempdir().unwrap();
        let sql = tmp.path().join("shop.sql");
        std::fs::write(
            &sql,
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT, qty INTEGER, price REAL, note TEXT);\n\
             INSERT INTO orders VALUES (2, 'pen', 3, 1.5, NULL), (1, 'ink', 1, 4.0, 'gift');\n\
             CREATE TABLE \"odd \"\"name\" (x BLOB);\nINSERT INTO \"odd \"\"name\" VALUES (x'00ff');\n",
        )
        .unwrap();
        let db = tmp.path().join("db.sqlite");
        make_database(&sql, &db).unwrap();
        let v = database_state(&db).unwrap();
        assert_eq!(
            v["tables"]["orders"],
            json!([
                {"id": 1, "item": "ink", "qty": 1, "price": 4.0, "note": "gift"},
                {"id": 2, "item": "pen", "qty": 3, "price": 1.5, "note": null}
            ])
        );
        assert_eq!(v["tables"]["odd \"name"][0]["x"], hash(&[0x00, 0xff]));
        // A database file as the fixture is copied as it is.
        let copy = tmp.path().join("copy.sqlite");
        make_database(&db, &copy).unwrap();
        assert_eq!(database_state(&copy).unwrap(), v);
    }

    #[test]
    fn a_directory_reads_back_text_and_hashes() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "hi").unwrap();
        std::fs::write(tmp.path().join("b.bin"), [0xff, 0xfe, 0]).unwrap();
        let s = spec(ServiceKind::Directory, tmp.path());
        let v = snapshot(&s, tmp.path()).unwrap();
        assert_eq!(v["files"]["a.txt"], "hi");
        assert!(v["files"]["b.bin"].as_str().unwrap().starts_with("sha256:"));
        let hashed = ServiceSpec {
            content: Some(ContentMode::Hash),
            ..s
        };
        assert_eq!(
            snapshot(&hashed, tmp.path()).unwrap()["files"]["a.txt"],
            hash(b"hi")
        );
    }
}
