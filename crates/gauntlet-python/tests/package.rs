//! The Python package as users get it: `pip install ./python` into a fresh virtual environment
//! (maturin builds the wheel; the development profile, so it reuses the test build's
//! artifacts), then the package's own tests (`python/tests`, pytest) from that environment: the
//! API, the pytest plugin, and the `gauntlet` command the wheel installs.
//!
//! The environment sees the machine's packages (`--system-site-packages`: pytest, mcp, pandas)
//! but gets gauntlet only from the wheel.
//!
//! With `GAUNTLET_WHEEL=dist/gauntlet_harness-....whl` the test installs that wheel instead of
//! building one (the release wheel `scripts/build-wheel.sh` makes; CI runs the same tests on it
//! through `scripts/test-wheel.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs a command, failing the test with its output if it fails.
fn run(cmd: &mut Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[cfg_attr(
    not(all(have_py_maturin, have_py_pytest)),
    ignore = "needs the Python packages maturin and pytest"
)]
fn the_wheel_installs_and_its_python_tests_pass() {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-venv");
    let _ = std::fs::remove_dir_all(&venv);
    run(
        Command::new("python3")
            .args(["-m", "venv", "--system-site-packages"])
            .arg(&venv),
        "python3 -m venv",
    );
    let python = venv.join("bin/python");
    match std::env::var_os("GAUNTLET_WHEEL") {
        Some(wheel) => run(
            Command::new(&python)
                .args(["-m", "pip", "install", "--quiet"])
                .arg("--disable-pip-version-check")
                .arg(&wheel)
                .current_dir(repo()),
            "pip install $GAUNTLET_WHEEL",
        ),
        None => run(
            Command::new(&python)
                .args(["-m", "pip", "install", "--quiet", "--no-build-isolation"])
                .args(["--disable-pip-version-check", "./python"])
                .env("MATURIN_PEP517_ARGS", "--profile dev --strip")
                .current_dir(repo()),
            "pip install ./python",
        ),
    }
    run(
        Command::new(&python)
            .args([
                "-m",
                "pytest",
                "python/tests",
                "-q",
                "-p",
                "no:cacheprovider",
                "-rs",
            ])
            .current_dir(repo()),
        "the Python package's tests (python/tests)",
    );
}
