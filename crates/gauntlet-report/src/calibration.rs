//! The terminal view of a judge's calibration against human labels.

use std::fmt::Write;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gauntlet_model::labels::{CalibrationReport, Figures};

fn num(x: Option<f64>) -> String {
    match x {
        Some(x) if x.is_finite() => format!("{x:.3}"),
        _ => "n/a".to_owned(),
    }
}

/// A p-value: three decimals, or `<0.001` when smaller (a tiny p is not zero).
fn p_value(x: Option<f64>) -> String {
    match x {
        Some(x) if x.is_finite() && x < 0.001 => "<0.001".to_owned(),
        _ => num(x),
    }
}

fn count(x: Option<u64>) -> String {
    x.map_or_else(|| "n/a".to_owned(), |x| x.to_string())
}

fn row(name: &str, f: &Figures) -> Vec<String> {
    vec![
        name.to_owned(),
        f.n.to_string(),
        format!(
            "{}/{}/{}/{}",
            count(f.tp),
            count(f.fp),
            count(f.fn_),
            count(f.tn)
        ),
        num(Some(f.accuracy)),
        num(f.precision),
        num(f.recall),
        num(f.f1),
        format!(
            "{} [{}, {}]",
            num(Some(f.cohen_kappa)),
            num(Some(f.kappa_ci95[0])),
            num(Some(f.kappa_ci95[1]))
        ),
        num(Some(f.krippendorff_alpha)),
        format!(
            "{} vs {}",
            num(f.judge_positive_rate),
            num(f.human_positive_rate)
        ),
        p_value(f.mcnemar_p),
    ]
}

/// Renders a calibration: the overall figures, the confusion matrix, agreement within each
/// side, and a row per segment value.
pub fn render_calibration(r: &CalibrationReport) -> String {
    let mut out = String::new();
    let f = &r.figures;
    let _ = writeln!(
        out,
        "{} items matched ({} labelled only, {} judged only, {} ties left out)",
        f.n, r.unmatched.labels_only, r.unmatched.verdicts_only, r.unmatched.ties
    );
    if !r.unmatched.items.is_empty() {
        let _ = writeln!(out, "unmatched: {}", r.unmatched.items.join(", "));
    }
    let mut matrix = Table::new();
    matrix.load_preset(UTF8_FULL_CONDENSED);
    let mut header = vec!["human \\ judge".to_owned()];
    header.extend(r.categories.iter().map(ToString::to_string));
    matrix.set_header(header);
    for (c, counts) in r.categories.iter().zip(&r.confusion_matrix) {
        let mut cells = vec![c.to_string()];
        cells.extend(counts.iter().map(ToString::to_string));
        matrix.add_row(cells);
    }
    let _ = writeln!(out, "{matrix}");
    let _ = writeln!(
        out,
        "Cohen's kappa {} (SE {}, 95% [{}, {}]); Krippendorff's alpha ({}) {}{}",
        num(Some(f.cohen_kappa)),
        num(Some(f.kappa_se)),
        num(Some(f.kappa_ci95[0])),
        num(Some(f.kappa_ci95[1])),
        r.level.as_str(),
        num(Some(f.krippendorff_alpha)),
        f.weighted_kappa
            .map(|w| format!("; weighted kappa {}", num(Some(w))))
            .unwrap_or_default()
    );
    if let Some(gap) = f.rate_gap {
        let _ = writeln!(
            out,
            "judge positive rate {} vs humans {} (gap {gap:+.3}); McNemar p={}",
            num(f.judge_positive_rate),
            num(f.human_positive_rate),
            p_value(f.mcnemar_p)
        );
    }
    for (side, within) in [
        ("human-human", &r.human_agreement),
        ("judge-judge", &r.judge_agreement),
    ] {
        if let Some(w) = within {
            let _ = writeln!(
                out,
                "{side}: {} items labelled twice or more by {} raters: alpha {}, kappa {}, {:.1}% agree",
                w.items,
                w.raters,
                num(Some(w.krippendorff_alpha)),
                num(Some(w.cohen_kappa)),
                w.percent_agreement * 100.0
            );
        }
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header([
        "segment",
        "n",
        "tp/fp/fn/tn",
        "accuracy",
        "precision",
        "recall",
        "F1",
        "kappa [95%]",
        "alpha",
        "positive rate judge vs human",
        "McNemar p",
    ]);
    table.add_row(row("all", f));
    for (name, values) in &r.segments {
        for (value, figures) in values {
            table.add_row(row(&format!("{name}={value}"), figures));
        }
    }
    let _ = writeln!(out, "{table}");
    out
}

#[cfg(test)]
mod tests {
    use super::p_value;

    #[test]
    fn a_tiny_p_value_is_not_printed_as_zero() {
        assert_eq!(p_value(Some(3e-12)), "<0.001");
        assert_eq!(p_value(Some(0.0421)), "0.042");
        assert_eq!(p_value(None), "n/a");
    }
}
