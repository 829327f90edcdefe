//! The terminal summary: a table of trials, the headline metrics, the gates and the verdict.

use std::fmt::Write;

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use gauntlet_model::{RunResults, TrialStatus, Verdict};
use owo_colors::OwoColorize;

/// How to render.
#[derive(Debug, Clone, Copy, Default)]
pub struct SummaryOptions {
    /// Use ANSI colours.
    pub color: bool,
    /// Terminal width, if known.
    pub width: Option<u16>,
}

fn paint(text: &str, ok: bool, color: bool) -> String {
    match (color, ok) {
        (false, _) => text.to_owned(),
        (true, true) => text.green().to_string(),
        (true, false) => text.red().bold().to_string(),
    }
}

fn fmt_num(x: f64) -> String {
    if x.is_nan() {
        "n/a".to_owned()
    } else if x.fract() == 0.0 && x.abs() < 1e12 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// Renders the summary of a run.
pub fn render_summary(results: &RunResults, opts: SummaryOptions) -> String {
    let mut out = String::new();
    let h = &results.header;
    let _ = writeln!(
        out,
        "suite {}  agent {}  seed {}  epochs {}  run {}",
        h.suite, h.agent, h.seed, h.epochs, h.run_id
    );

    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_content_arrangement(ContentArrangement::Dynamic);
    if let Some(w) = opts.width {
        table.set_width(w);
    }
    let epochs = h.epochs > 1;
    let mut header = vec!["case"];
    if epochs {
        header.push("epoch");
    }
    header.extend(["status", "calls", "failed evaluators"]);
    table.set_header(header);
    for t in &results.trials {
        let status = match t.status {
            TrialStatus::Passed => paint("passed", true, opts.color),
            TrialStatus::Failed => paint("failed", false, opts.color),
            TrialStatus::Error => paint("error", false, opts.color),
        };
        let mut failed: Vec<String> = if t.status == TrialStatus::Error {
            Vec::new()
        } else {
            t.scores.clone()
        }
        .into_iter()
        .filter(|s| s.fails_trial())
        .map(|s| format!("{}={}", s.name, fmt_num(s.value)))
        .collect();
        if let Some(e) = &t.error {
            failed.insert(0, e.clone());
        }
        let mut row = vec![t.case_id.clone()];
        if epochs {
            row.push(t.epoch.to_string());
        }
        row.extend([status, t.tool_calls.to_string(), failed.join(", ")]);
        table.add_row(row);
    }
    let _ = writeln!(out, "{table}");

    let m = |name: &str| {
        results
            .metrics
            .get(name)
            .copied()
            .flatten()
            .unwrap_or(f64::NAN)
    };
    let _ = writeln!(
        out,
        "trials {}  passed {}  failed {}  errors {}  pass rate {}  task success {}  critical violations {}",
        fmt_num(m("trials")),
        fmt_num(m("passed")),
        fmt_num(m("failed")),
        fmt_num(m("errors")),
        fmt_num(m("pass_rate")),
        fmt_num(m("task_success_rate")),
        fmt_num(m("critical_policy_violations")),
    );
    let weak: Vec<String> = results
        .segments
        .iter()
        .filter(|(_, s)| s.passed < s.trials)
        .map(|(tag, s)| format!("{tag} {}/{}", s.passed, s.trials))
        .collect();
    if !weak.is_empty() {
        let _ = writeln!(out, "segments with failures: {}", weak.join(", "));
    }
    if !results.gates.is_empty() {
        let _ = writeln!(out, "gates:");
        for g in &results.gates {
            let mark = paint(if g.passed { "pass" } else { "FAIL" }, g.passed, opts.color);
            let inputs: Vec<String> = g
                .inputs
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_f64().map_or(v.to_string(), fmt_num)))
                .collect();
            let shown = if g.name == g.expr {
                g.expr.clone()
            } else {
                format!("{}: {}", g.name, g.expr)
            };
            if inputs.is_empty() {
                let _ = writeln!(out, "  {mark}  {shown}");
            } else {
                let _ = writeln!(out, "  {mark}  {shown}  ({})", inputs.join(", "));
            }
        }
    }
    let verdict = match results.verdict {
        Verdict::Passed => paint("PASSED", true, opts.color),
        Verdict::Failed => paint("FAILED", false, opts.color),
    };
    let _ = writeln!(out, "verdict: {verdict}");
    out
}
