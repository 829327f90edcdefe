//! The terminal view of a paired comparison.

use std::fmt::Write;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gauntlet_model::compare::{Comparison, Direction};
use owo_colors::OwoColorize;

use crate::terminal::SummaryOptions;

fn num(x: f64) -> String {
    if x.is_nan() {
        "n/a".to_owned()
    } else {
        format!("{x:.3}")
    }
}

/// Renders a comparison of run B against run A.
pub fn render_comparison(c: &Comparison, opts: SummaryOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "A {}  →  B {}  ({} paired trials)",
        c.run_a, c.run_b, c.pairs
    );
    if !c.changed.is_empty() {
        let _ = writeln!(out, "changed: {}", c.changed.join("; "));
    }
    let p = &c.pass;
    let _ = writeln!(
        out,
        "pass rate A {} → B {}  diff {:+.3} [{:+.3}, {:+.3}]  A-only passes {}  B-only passes {}  McNemar p={:.4}  Cohen's h {:+.3}",
        num(p.a_rate),
        num(p.b_rate),
        p.diff,
        p.interval.lower,
        p.interval.upper,
        p.a_only,
        p.b_only,
        p.p_value,
        p.cohens_h
    );
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header([
        "quantity",
        "A mean",
        "B mean",
        "B − A",
        "95% interval",
        "effect (d_z)",
    ]);
    for m in &c.metrics {
        table.add_row([
            m.name.clone(),
            num(m.a_mean),
            num(m.b_mean),
            format!("{:+.3}", m.diff),
            format!("[{:+.3}, {:+.3}]", m.interval.lower, m.interval.upper),
            num(m.effect_size),
        ]);
    }
    let _ = writeln!(out, "{table}");
    let moved: Vec<String> = c
        .segments
        .iter()
        .filter(|s| s.diff != 0.0)
        .take(8)
        .map(|s| {
            format!(
                "{} {} {:+.0} points ({} pairs, p={:.3})",
                s.kind,
                s.value,
                s.diff * 100.0,
                s.pairs,
                s.p_value
            )
        })
        .collect();
    if !moved.is_empty() {
        let _ = writeln!(
            out,
            "segments that moved (worst first): {}",
            moved.join(", ")
        );
    }
    if let Some(pw) = &c.pairwise {
        let _ = writeln!(
            out,
            "pairwise judge {} ({}): {} pairs judged in both orders, {} skipped{} · A preferred {}, B preferred {}, ties {} (of which {} flipped with the order: position bias), invalid {} · B win rate {} · sign test p={:.4} · judge cost €{}",
            pw.judge,
            pw.model,
            pw.judged,
            pw.skipped,
            if pw.over_budget > 0 {
                format!(" ({} over the judge's budget)", pw.over_budget)
            } else {
                String::new()
            },
            pw.a_wins,
            pw.b_wins,
            pw.ties,
            pw.position_bias,
            pw.invalid,
            pw.b_win_rate.map_or("n/a".to_owned(), num),
            pw.sign_test_p,
            num(pw.cost_eur)
        );
    }
    for w in &c.warnings {
        let line = format!("warning: {w}");
        let _ = writeln!(
            out,
            "{}",
            if opts.color {
                line.yellow().to_string()
            } else {
                line
            }
        );
    }
    let verdict = format!("verdict: {}", c.verdict);
    let painted = match (opts.color, c.direction) {
        (false, _) | (true, Direction::NoDifference) => verdict,
        (true, Direction::Better) => verdict.green().to_string(),
        (true, Direction::Worse) => verdict.red().bold().to_string(),
    };
    let _ = writeln!(out, "{painted}");
    out
}
