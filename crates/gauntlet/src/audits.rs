//! What an audit of a suite's checks says (`gauntlet audit`, `check --audit`): run on a runtime
//! of its own, rendered for people, and its exit code.

use gauntlet_audit::{AuditOptions, AuditReport, audit as run_audit};

use crate::exit::{ExpectedError, GATE_FAILED, GATES_PASSED};

/// Runs the audit on a runtime of its own.
pub fn audit_suite(
    suite: &gauntlet_suite::Suite,
    seed: u64,
    filter: Option<String>,
) -> Result<AuditReport, ExpectedError> {
    let runtime = crate::shared::runtime()?;
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
pub fn nothing_audited(report: &AuditReport) -> String {
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
