//! The terminal view of a paired comparison.

use std::fmt::Write;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gauntlet_model::TrialStatus;
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
    let _ = write!(out, "{}", render_flips(c, FLIPS_SHOWN));
    let cv = &c.critical_violations;
    if cv.a > 0 || cv.b > 0 {
        let _ = write!(out, "critical violations A {} → B {}", cv.a, cv.b);
        if !cv.new_in_b.is_empty() {
            let _ = write!(
                out,
                "; new in B on {} case(s) where A had none: {}",
                cv.new_in_b.len(),
                cv.new_in_b.join(", ")
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "{}", noise_floor_line(c));
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
        (false, _) => verdict,
        (true, _) if c.regression => verdict.red().bold().to_string(),
        (true, Direction::Better) => verdict.green().to_string(),
        (true, _) => verdict,
    };
    let _ = writeln!(out, "{painted}");
    out
}

/// Flipped pairs listed in the terminal; `--json` has them all.
pub const FLIPS_SHOWN: usize = 20;

fn status(s: TrialStatus) -> &'static str {
    match s {
        TrialStatus::Passed => "passed",
        TrialStatus::Failed => "failed",
        TrialStatus::Error => "error",
    }
}

/// The flipped pairs, worse first, one line each with B's most severe reason (the first
/// `shown`): `  close-mitigated: passed → failed  confirmation_before_write: …`.
pub fn render_flips(c: &Comparison, shown: usize) -> String {
    let mut out = String::new();
    if c.flips.is_empty() {
        return out;
    }
    let epochs = c.flips.iter().any(|f| f.epoch > 0);
    let _ = writeln!(out, "flipped (worse first):");
    for f in c.flips.iter().take(shown) {
        let at = if epochs {
            format!("{} (epoch {})", f.case_id, f.epoch)
        } else {
            f.case_id.clone()
        };
        let _ = write!(out, "  {at}: {} → {}", status(f.a), status(f.b));
        if let Some(first) = f.reasons.first() {
            let _ = write!(out, "  {first}");
            if f.reasons.len() > 1 {
                let _ = write!(out, " (+{} more)", f.reasons.len() - 1);
            }
        }
        let _ = writeln!(out);
    }
    if c.flips.len() > shown {
        let _ = writeln!(
            out,
            "  … and {} more (`--json` lists them all)",
            c.flips.len() - shown
        );
    }
    out
}

/// What differences the suite can tell from chance, in one line.
pub fn noise_floor_line(c: &Comparison) -> String {
    let nf = &c.noise_floor;
    let mut line = format!("noise floor: {} cases", nf.cases);
    if let Some(d) = nf.detectable_difference {
        let _ = write!(
            line,
            ", {} pairs detect a pass-rate difference of {d:.0} points or more (80% power, 5% level){}",
            c.pairs,
            if nf.flip_rate.is_none() {
                " at best"
            } else {
                ""
            }
        );
    }
    match (nf.flip_rate, nf.single_run_difference_95) {
        (Some(f), Some(d)) => {
            let _ = write!(
                line,
                "; between two identical runs {:.0}% of cases would flip, and two single runs differ by up to {d:.0} points by chance (95%)",
                f * 100.0
            );
        }
        _ => line.push_str("; with one epoch the runs cannot say how much cases flip between identical runs (--epochs 2 or more would)"),
    }
    line
}

/// A Markdown cell: pipes escaped, one line.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\r', '\n'], " ")
}

/// The comparison against a baseline as a Markdown section (`report --format md --baseline`):
/// the verdict, critical violations, the noise floor and the flipped cases, worse first.
pub fn render_markdown_comparison(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n## Against the baseline\n");
    let _ = writeln!(
        out,
        "Baseline `{}`, {} paired trials. {}\n",
        cell(&c.run_a),
        c.pairs,
        cell(&c.verdict)
    );
    let cv = &c.critical_violations;
    if cv.a > 0 || cv.b > 0 {
        let _ = writeln!(
            out,
            "Critical violations: baseline {} → this run {}{}\n",
            cv.a,
            cv.b,
            if cv.new_in_b.is_empty() {
                String::new()
            } else {
                format!(
                    "; new on {} case(s) where the baseline had none: {}",
                    cv.new_in_b.len(),
                    cell(&cv.new_in_b.join(", "))
                )
            }
        );
    }
    let _ = writeln!(out, "{}\n", cell(&noise_floor_line(c)));
    if !c.flips.is_empty() {
        let _ = writeln!(
            out,
            "| case | epoch | baseline | this run | why (this run) |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|");
        for f in &c.flips {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cell(&f.case_id),
                f.epoch,
                status(f.a),
                status(f.b),
                cell(&f.reasons.join("; "))
            );
        }
    }
    out
}
