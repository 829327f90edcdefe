//! Inline SVG charts, drawn by us: small, no script, no network, every label escaped.

use std::fmt::Write;

use minijinja::HtmlEscape;

/// One bar: a label, a value in [0, max], an optional interval, and a CSS class.
pub struct Bar {
    /// Label on the left.
    pub label: String,
    /// The value.
    pub value: f64,
    /// Interval whiskers, when known.
    pub interval: Option<(f64, f64)>,
    /// Text on the right.
    pub note: String,
    /// `ok`, `bad` or `neutral`.
    pub class: &'static str,
}

const W: f64 = 640.0;
const LABEL_W: f64 = 220.0;
const NOTE_W: f64 = 90.0;
const ROW: f64 = 22.0;

/// Horizontal bars (values in [0, `max`]) with optional interval whiskers.
pub fn bars(title: &str, bars: &[Bar], max: f64) -> String {
    let plot_w = W - LABEL_W - NOTE_W;
    let h = ROW * bars.len() as f64 + 30.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" role="img" aria-label="{t}" viewBox="0 0 {W} {h}" width="{W}" height="{h}" xmlns="http://www.w3.org/2000/svg"><title>{t}</title>"#,
        t = HtmlEscape(title)
    );
    let x = |v: f64| LABEL_W + plot_w * (v / max).clamp(0.0, 1.0);
    for (i, b) in bars.iter().enumerate() {
        let y = 4.0 + ROW * i as f64;
        let _ = write!(
            s,
            r#"<text x="{lx}" y="{ty}" class="label" text-anchor="end">{label}</text><rect class="track" x="{LABEL_W}" y="{y}" width="{plot_w}" height="14"/><rect class="bar {class}" x="{LABEL_W}" y="{y}" width="{bw:.1}" height="14"/>"#,
            lx = LABEL_W - 6.0,
            ty = y + 11.0,
            label = HtmlEscape(&truncate(&b.label, 34)),
            class = b.class,
            bw = x(b.value) - LABEL_W,
        );
        if let Some((lo, hi)) = b.interval {
            let (x1, x2, yc) = (x(lo), x(hi), y + 7.0);
            let _ = write!(
                s,
                r#"<path class="whisker" d="M{x1:.1} {yc} H{x2:.1} M{x1:.1} {a} V{b} M{x2:.1} {a} V{b}"/>"#,
                a = yc - 5.0,
                b = yc + 5.0
            );
        }
        let _ = write!(
            s,
            r#"<text x="{nx}" y="{ty}" class="note">{note}</text>"#,
            nx = W - NOTE_W + 6.0,
            ty = y + 11.0,
            note = HtmlEscape(&b.note)
        );
    }
    // Axis: 0 and max.
    let ay = ROW * bars.len() as f64 + 8.0;
    let _ = write!(
        s,
        r#"<text x="{LABEL_W}" y="{ty}" class="axis">0</text><text x="{xe}" y="{ty}" class="axis" text-anchor="end">{m}</text></svg>"#,
        ty = ay + 12.0,
        xe = LABEL_W + plot_w,
        m = fmt(max)
    );
    s
}

/// A histogram of values in `bins` equal bins (integer bins when the values are small integers).
pub fn histogram(title: &str, unit: &str, values: &[f64], bins: usize) -> String {
    let h = 150.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" role="img" aria-label="{t}" viewBox="0 0 {W} {h}" width="{W}" height="{h}" xmlns="http://www.w3.org/2000/svg"><title>{t}</title>"#,
        t = HtmlEscape(title)
    );
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() {
        let _ = write!(
            s,
            r#"<text x="10" y="20" class="note">no data</text></svg>"#
        );
        return s;
    }
    let (lo, hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    let integer = finite.iter().all(|v| v.fract() == 0.0) && hi - lo < 40.0;
    let (start, width, n) = if integer {
        (lo, 1.0, (hi - lo) as usize + 1)
    } else if hi > lo {
        (lo, (hi - lo) / bins as f64, bins)
    } else {
        (lo, 1.0, 1)
    };
    let mut counts = vec![0usize; n];
    for v in &finite {
        let i = (((v - start) / width).floor() as usize).min(n - 1);
        counts[i] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let (left, plot_w, plot_h) = (40.0, W - 60.0, h - 40.0);
    let bw = plot_w / n as f64;
    for (i, c) in counts.iter().enumerate() {
        let bh = plot_h * *c as f64 / top;
        let _ = write!(
            s,
            r#"<rect class="bar neutral" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{bh:.1}"><title>{label}: {c}</title></rect>"#,
            x = left + bw * i as f64 + 1.0,
            y = 10.0 + plot_h - bh,
            w = (bw - 2.0).max(1.0),
            label = HtmlEscape(&if integer {
                fmt(start + i as f64)
            } else {
                format!(
                    "{}–{}",
                    fmt(start + width * i as f64),
                    fmt(start + width * (i + 1) as f64)
                )
            }),
        );
    }
    let _ = write!(
        s,
        r#"<text x="{left}" y="{ay}" class="axis">{a}</text><text x="{xe}" y="{ay}" class="axis" text-anchor="end">{b} {u}</text><text x="4" y="18" class="axis">{top}</text></svg>"#,
        ay = h - 12.0,
        a = fmt(lo),
        xe = left + plot_w,
        b = fmt(hi),
        u = HtmlEscape(unit),
        top = top as usize
    );
    s
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// A number for labels: integers as integers, else three significant decimals.
pub fn fmt(x: f64) -> String {
    if x.is_nan() {
        "n/a".to_owned()
    } else if (x.fract() == 0.0 && x.abs() < 1e12) || x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// Bars that grow left (negative) or right (positive) from a centre line at zero; values and
/// intervals in [-`max`, `max`].
pub fn diverging(title: &str, bars: &[Bar], max: f64) -> String {
    let plot_w = W - LABEL_W - NOTE_W;
    let h = ROW * bars.len() as f64 + 30.0;
    let mid = LABEL_W + plot_w / 2.0;
    let x = |v: f64| mid + plot_w / 2.0 * (v / max).clamp(-1.0, 1.0);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" role="img" aria-label="{t}" viewBox="0 0 {W} {h}" width="{W}" height="{h}" xmlns="http://www.w3.org/2000/svg"><title>{t}</title>"#,
        t = HtmlEscape(title)
    );
    for (i, b) in bars.iter().enumerate() {
        let y = 4.0 + ROW * i as f64;
        let (x0, x1) = if b.value < 0.0 {
            (x(b.value), mid)
        } else {
            (mid, x(b.value))
        };
        let _ = write!(
            s,
            r#"<text x="{lx}" y="{ty}" class="label" text-anchor="end">{label}</text><rect class="track" x="{LABEL_W}" y="{y}" width="{plot_w}" height="14"/><rect class="bar {class}" x="{x0:.1}" y="{y}" width="{bw:.1}" height="14"/>"#,
            lx = LABEL_W - 6.0,
            ty = y + 11.0,
            label = HtmlEscape(&truncate(&b.label, 34)),
            class = b.class,
            bw = (x1 - x0).max(1.0),
        );
        if let Some((lo, hi)) = b.interval {
            let (a, c, yc) = (x(lo), x(hi), y + 7.0);
            let _ = write!(
                s,
                r#"<path class="whisker" d="M{a:.1} {yc} H{c:.1} M{a:.1} {t} V{u} M{c:.1} {t} V{u}"/>"#,
                t = yc - 5.0,
                u = yc + 5.0
            );
        }
        let _ = write!(
            s,
            r#"<text x="{nx}" y="{ty}" class="note">{n}</text>"#,
            nx = W - NOTE_W + 6.0,
            ty = y + 11.0,
            n = HtmlEscape(&b.note)
        );
    }
    let ay = ROW * bars.len() as f64 + 20.0;
    let _ = write!(
        s,
        r#"<path class="whisker" d="M{mid} 0 V{zero}"/><text x="{LABEL_W}" y="{ay}" class="axis">−{m}</text><text x="{mid}" y="{ay}" class="axis" text-anchor="middle">0</text><text x="{xe}" y="{ay}" class="axis" text-anchor="end">+{m}</text></svg>"#,
        zero = ROW * bars.len() as f64 + 4.0,
        xe = LABEL_W + plot_w,
        m = fmt(max)
    );
    s
}
