//! `gauntlet audit SUITE`: how much the suite's checks can be fooled, by mutants of each case's
//! reference trajectory (`gauntlet_audit`), and `check --audit`.

use std::path::PathBuf;

use crate::audits::{audit_suite, nothing_audited, render, verdict};
use crate::exit::ExpectedError;

/// Audit a suite's checks: mutants of each case's reference trajectory that still pass
///
/// Example:
///   gauntlet audit examples/incident-desk
///
/// For every case with a reference_trajectory, wrong trajectories are derived from it and
/// each is played in a fresh world and judged by the case's evaluators: do nothing; the
/// answer only, in the reference's own words; each write dropped, repeated, or with one
/// argument changed (another record, another value of its type); consecutive writes
/// swapped; an extra write on another record; the confirmation or question skipped; and,
/// where records carry a tenant, a write on another tenant's record. A mutant that still
/// passes survives: the case cannot tell it from the reference, it is hackable. A survivor
/// that ends in the reference's own final state with its own answer is equivalent, not a
/// hole, unless it skipped a question or a confirmation (always a hole). Survivors named in
/// gauntlet.yaml's `audit: {accept: [{case, mutation, why}]}` are accepted, with the reason.
/// Deterministic for a seed.
///
/// Exit codes: 0 no case is hackable, 1 some are or nothing could be audited, 2 invalid input.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The suite folder (holding gauntlet.yaml) or its configuration file.
    pub suite: PathBuf,
    /// Print one JSON object: `{"suite", "seed", "cases": [{"case_id", "mutants",
    /// "killed", "survivors": [{"mutation", "kind"}], "accepted": [{"mutation", "kind",
    /// "why"}], "equivalent", "hackable", "kill_rate", "skipped"}], "hackable_cases",
    /// "audited_cases", "mutants", "kill_rate", "unmatched_accepts": [{"case",
    /// "mutation"}]}`.
    #[arg(long)]
    pub json: bool,
    /// Seeds the choice of other records and values.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Only cases whose id contains this text.
    #[arg(long)]
    pub filter: Option<String>,
}

impl Args {
    /// Audits the suite; exit 0 when no case is hackable, 1 when some are or when nothing could
    /// be audited.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        let suite = crate::shared::load_suite(&self.suite)?;
        let report = audit_suite(&suite, self.seed, self.filter)?;
        if self.json {
            let text = serde_json::to_string_pretty(&report).map_err(|e| {
                ExpectedError::harness(format!("failed to serialize the audit: {e}"))
            })?;
            println!("{text}");
            if report.audited_cases == 0 {
                crate::note!("{}", nothing_audited(&report));
            }
        } else {
            crate::say!("{}", render(&report));
        }
        Ok(verdict(&report))
    }
}
