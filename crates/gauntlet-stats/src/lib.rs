//! The statistics gauntlet reports: intervals, paired tests and pass^k
//! ([`wilson`], [`bootstrap_mean`], [`mcnemar_exact`], [`pass_hat_k`], …), agreement between
//! raters ([`agreement`]: Cohen's kappa, Krippendorff's alpha), a judge's calibration against
//! human labels ([`calibration`]), and drift between two windows of production traces
//! ([`drift`]).
//!
//! Pure functions over numbers and labels: no I/O, no runtime. Each is checked against the
//! reference implementation (SciPy, statsmodels, scikit-learn, krippendorff) on random inputs.
#![warn(missing_docs)]

pub mod agreement;
pub mod calibration;
pub mod drift;
mod stats;

pub use stats::*;
