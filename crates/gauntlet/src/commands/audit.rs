//! `gauntlet audit SUITE`: how much the suite's checks can be fooled, by mutants of each case's
//! reference trajectory (`gauntlet_audit`), and `check --audit`.

use std::path::Path;

use gauntlet_audit::{AuditOptions, AuditReport, audit as run_audit};

use crate::exit::{ExpectedError, GATE_FAILED, GATES_PASSED};

/// `gauntlet audit` as the command line asks for it.
pub struct AuditArgs<'a> {
    /// The suite.
    pub suite: &'a Path,
    /// Print the report as JSON.
    pub json: bool,
    /// The seed.
    pub seed: u64,
    /// Only cases whose id contains it.
    pub filter: Option<String>,
}

/// Audits the suite; exit 0 when no case is hackable, 1 when some are or when nothing could be
/// audited.
pub fn audit(args: AuditArgs<'_>) -> Result<i32, ExpectedError> {
    let suite = crate::commands::shared::load_suite(args.suite)?;
    let report = audit_suite(&suite, args.seed, args.filter)?;
    if args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| ExpectedError::harness(format!("failed to serialize the audit: {e}")))?;
        println!("{text}");
        if report.audited_cases == 0 {
            crate::note!("{}", nothing_audited(&report));
        }
    } else {
        crate::say!("{}", render(&report));
    }
    Ok(verdict(&report))
}

/// Runs the audit on a runtime of its own.
pub fn audit_suite(
    suite: &gauntlet_suite::Suite,
    seed: u64,
    filter: Option<String>,
) -> Result<AuditReport, ExpectedError> {
    let runtime = crate::commands::shared::runtime()?;
    let options = AuditOptions {
        seed,
        filter,
        concurrency: None,
    };
    Ok(runtime.block_on(run_audit(suite, &options))?)
}

/// 1 when a case is hackable, or when no case could be audited (a vacuous audit proves nothing,
/// so `check --audit` in CI cannot pass on it).
pub fn verdict(report: &AuditReport) -> i32 {
    if report.passed() {
        GATES_PASSED
    } else {
        GATE_FAILED
    }
}

/// Why an audit of no case fails.
fn nothing_audited(report: &AuditReport) -> String {
    let why = if report.cases.is_empty() {
        "no case matches"
    } else {
        "no case has a reference_trajectory that passes its own checks"
    };
    format!("nothing audited: {why}")
}

/// The audit for people: one line per case, its survivors, accepted survivors and equivalent
/// mutants named.
pub fn render(report: &AuditReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let rate = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{:.0}%", r * 100.0));
    let width = report
        .cases
        .iter()
        .map(|c| c.case_id.len())
        .max()
        .unwrap_or(4);
    for c in &report.cases {
        if let Some(why) = &c.skipped {
            let _ = writeln!(out, "  {:<width$}  not audited: {why}", c.case_id);
            continue;
        }
        let mark = if c.hackable { "HACKABLE" } else { "ok" };
        let _ = write!(
            out,
            "  {:<width$}  {mark:<8}  {:>3} mutants, {:>3} killed ({})",
            c.case_id,
            c.mutants,
            c.killed,
            rate(c.kill_rate)
        );
        if !c.accepted.is_empty() {
            let _ = write!(out, ", {} accepted", c.accepted.len());
        }
        if !c.equivalent.is_empty() {
            let _ = write!(out, ", {} equivalent", c.equivalent.len());
        }
        out.push('\n');
        for s in &c.survivors {
            let _ = writeln!(out, "  {:<width$}    survives: {}", "", s.mutation);
        }
        for a in &c.accepted {
            let _ = writeln!(
                out,
                "  {:<width$}    accepted: {} (why: {})",
                "", a.mutation, a.why
            );
        }
        for s in &c.equivalent {
            let _ = writeln!(out, "  {:<width$}    equivalent: {}", "", s.mutation);
        }
    }
    for u in &report.unmatched_accepts {
        let _ = writeln!(
            out,
            "note: audit.accept for `{}`, `{}`, matches no survivor (remove it, or name the mutation as the audit does)",
            u.case, u.mutation
        );
    }
    let _ = write!(
        out,
        "audit of `{}` (seed {}): {} of {} cases hackable; {} mutants, kill rate {}",
        report.suite,
        report.seed,
        report.hackable_cases,
        report.audited_cases,
        report.mutants,
        rate(report.kill_rate)
    );
    let accepted: usize = report.cases.iter().map(|c| c.accepted.len()).sum();
    if accepted > 0 {
        let s = if accepted == 1 { "" } else { "s" };
        let _ = write!(out, "; {accepted} accepted survivor{s}");
    }
    if report.audited_cases == 0 {
        let _ = write!(out, "\n{}", nothing_audited(report));
    }
    out
}
