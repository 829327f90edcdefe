// Shared by the build scripts of crates whose tests need more than Rust: they probe, when the
// tests are built, for Python packages (the official clients and libraries used as references),
// Chromium and the shared peer data. A test whose needs are missing is marked `ignore` with the
// reason (`#[cfg_attr(not(CFG), ignore = "...")]`), so `cargo test` counts it as ignored, never
// as passed. Set `GAUNTLET_TEST_REPROBE` to a new value to probe again after installing something.
//
// The probes run when a crate's build script first runs, then again only when the build script,
// this file, `GAUNTLET_TEST_REPROBE` or a watched path that exists changes: cargo reruns a build
// script on every build when a `rerun-if-changed` path is missing, which would recompile the
// crate and everything above it (and relink the CLI) on every `cargo build` or `cargo run` in a
// clone without the peer data or `.venvs/`. So only paths that exist are watched (`watch`); one
// that appears later (the peer data fetched, `.venvs/` made) is found by reprobing.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether `python3` can import `module`.
#[allow(dead_code)]
fn python_has(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether `program` is on the PATH.
#[allow(dead_code)]
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| dir.join(program).is_file())
    })
}

/// Whether bubblewrap can make a sandbox here (it may be installed yet refused namespaces).
#[allow(dead_code)]
fn bwrap_works() -> bool {
    Command::new("bwrap")
        .args(["--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc"])
        .args(["--dev", "/dev", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The shared peer data folder (`../shared/peers` beside the checkout).
#[allow(dead_code)]
fn peers() -> PathBuf {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    Path::new(&manifest).join("../../../shared/peers")
}

/// Reruns the build script when `path` changes, if it exists (a missing path would rerun it on
/// every build).
#[allow(dead_code)]
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo::rerun-if-changed={}", path.display());
    }
}

/// Says which probes held, as `cfg`s the tests can ask for.
fn emit(probes: &[(&str, bool)]) {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../../build/test_probes.rs");
    println!("cargo::rerun-if-env-changed=GAUNTLET_TEST_REPROBE");
    watch(&peers());
    for (cfg, ok) in probes {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if *ok {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
