//! What commands say to people, hushed by the global `--quiet`: `say!` on stdout (summaries,
//! tables, where things were written), `note!` on stderr (progress notes). Errors and warnings
//! are printed whatever `--quiet` says, and so is what was asked for as data (`--json`, `--out
//! -`, `schema`).

use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// Set once, from the command line.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// `println!` unless `--quiet`.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        if !$crate::say::quiet() {
            anstream::println!($($arg)*);
        }
    };
}

/// `eprintln!` unless `--quiet`.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {
        if !$crate::say::quiet() {
            anstream::eprintln!($($arg)*);
        }
    };
}
