//! A short Markdown summary for a pull-request comment: verdict, gates, top regressions.
//! Link-free, and every piece of run text is escaped so it cannot become markup or HTML.

use gauntlet_model::names;
use std::collections::BTreeMap;
use std::fmt::Write;

use gauntlet_model::{RunResults, TrialStatus, TrialSummary, Verdict};

use crate::svg::fmt;

/// Escapes text for Markdown (inline and table cells): no markup, no HTML, one line.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '{' | '}' | '[' | ']' | '(' | ')' | '#' | '+' | '!' | '|'
            | '~' | '>' | '<' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    // GitHub turns bare URLs, `www.` names and e-mail addresses into live links even in escaped
    // text: a zero-width space breaks each, so agent and tool text never becomes a link.
    out.replace("://", ":\u{200B}//")
        .replace("www.", "www\u{200B}.")
        .replace("WWW.", "WWW\u{200B}.")
        .replace('@', "@\u{200B}")
}

/// What the Markdown summary reads of the trials, tallied as they stream by in plan order and
/// bounded whatever their number: each failing evaluator's count and first three trials, the
/// first failed trials' reasons and the first harness errors.
#[derive(Debug, Default)]
pub struct MarkdownTrials {
    failures: BTreeMap<String, (usize, Vec<String>)>,
    why: Vec<String>,
    errors: Vec<String>,
}

impl MarkdownTrials {
    /// Tallies the next trial.
    pub fn push(&mut self, t: &TrialSummary) {
        for s in t.scores.iter().filter(|s| s.fails_trial()) {
            let (n, examples) = self.failures.entry(s.name.clone()).or_default();
            *n += 1;
            if examples.len() < 3 {
                examples.push(format!("{}#{}", t.case_id, t.epoch));
            }
        }
        if t.status == TrialStatus::Failed
            && self.why.len() < crate::terminal::EXPLAINED
            && let Some(w) = crate::terminal::why_line(t)
        {
            self.why.push(format!(
                "- {}#{}: {}",
                escape(&t.case_id),
                t.epoch,
                escape(&w)
            ));
        }
        if t.status == TrialStatus::Error && self.errors.len() < 5 {
            self.errors.push(format!(
                "- {}#{}: {}",
                escape(&t.case_id),
                t.epoch,
                escape(t.error.as_deref().unwrap_or(""))
            ));
        }
    }
}

/// Renders the Markdown summary.
pub fn render_markdown(results: &RunResults) -> String {
    let mut trials = MarkdownTrials::default();
    for t in &results.trials {
        trials.push(t);
    }
    render_markdown_with(results, &trials)
}

/// Renders the Markdown summary of a run (its `trials` are not read) whose trials were tallied
/// as they streamed by: the same text as [`render_markdown`] of the run with them.
pub fn render_markdown_with(results: &RunResults, trials: &MarkdownTrials) -> String {
    let mut out = String::new();
    let h = &results.header;
    let verdict = match results.verdict {
        Verdict::Passed => "✅ passed",
        Verdict::Failed => "❌ failed",
    };
    let m = |name: &str| {
        results
            .metrics
            .get(name)
            .copied()
            .flatten()
            .map_or("n/a".to_owned(), fmt)
    };
    let ci = |name: &str| {
        results
            .intervals
            .get(name)
            .map(|i| format!(" \\[{}, {}\\]", fmt(i.lower), fmt(i.upper)))
            .unwrap_or_default()
    };
    let _ = writeln!(out, "## gauntlet · {} · {verdict}\n", escape(&h.suite));
    let _ = writeln!(
        out,
        "{} trials ({} passed, {} failed, {} errors) · pass rate {}{} · task success {}{} · critical violations {} · agent {} · seed {}\n",
        m(names::metric::TRIALS),
        m(names::metric::PASSED),
        m(names::metric::FAILED),
        m(names::metric::ERRORS),
        m(names::metric::PASS_RATE),
        ci("pass_rate"),
        m(names::metric::TASK_SUCCESS_RATE),
        ci("task_success_rate"),
        m(names::metric::CRITICAL_POLICY_VIOLATIONS),
        escape(&h.agent),
        h.seed
    );
    if let Some(line) = crate::terminal::benchmark_line(results, fmt) {
        let _ = writeln!(out, "{}\n", escape(&line));
    }
    if let Some(line) = crate::terminal::attack_line(results, fmt) {
        let _ = writeln!(out, "{}\n", escape(&line));
    }
    if !results.gates.is_empty() {
        let _ = writeln!(out, "| gate | result | values |\n|---|---|---|");
        for g in &results.gates {
            let values: Vec<String> = g
                .inputs
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{} = {}",
                        escape(k),
                        v.as_f64().map_or_else(|| escape(&v.to_string()), fmt)
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                escape(&g.name),
                if g.passed { "pass" } else { "**FAIL**" },
                values.join(", ")
            );
        }
        let _ = writeln!(out);
    }
    for line in crate::terminal::judge_lines(results, fmt) {
        let _ = writeln!(out, "{}\n", escape(&line));
    }
    if let Some(r) = &results.rubric {
        let failed: Vec<String> = r
            .dimensions
            .iter()
            .filter(|d| d.passed == Some(false))
            .map(|d| escape(&d.name))
            .collect();
        let _ = writeln!(
            out,
            "Rubric {}: weighted score {}{}\n",
            escape(&r.name),
            r.score.map_or("n/a".to_owned(), fmt),
            if failed.is_empty() {
                String::new()
            } else {
                format!(" · failed gates: {}", failed.join(", "))
            }
        );
    }
    if !trials.failures.is_empty() {
        let mut top: Vec<(&String, &(usize, Vec<String>))> = trials.failures.iter().collect();
        top.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
        let _ = writeln!(
            out,
            "### Top failures\n\n| evaluator | failed trials | for example |\n|---|---|---|"
        );
        for (name, (n, examples)) in top.iter().take(8) {
            let examples: Vec<String> = examples.iter().map(|t| escape(t)).collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                escape(name),
                n,
                examples.join(", ")
            );
        }
        let _ = writeln!(out);
        // Why each failed trial failed, the first ones: its most severe failing reason.
        let why = &trials.why;
        if !why.is_empty() {
            let _ = writeln!(
                out,
                "### Why

{}
",
                why.join("\n")
            );
        }
    }
    let weak: Vec<String> = results
        .segments
        .iter()
        .flat_map(|(kind, values)| values.iter().map(move |(v, s)| (kind, v, s)))
        .filter(|(_, _, s)| s.passed < s.trials)
        .map(|(kind, v, s)| format!("{} {} {}/{}", escape(kind), escape(v), s.passed, s.trials))
        .collect();
    if !weak.is_empty() {
        let _ = writeln!(out, "Segments with failures: {}\n", weak.join(", "));
    }
    let errors = &trials.errors;
    if !errors.is_empty() {
        let _ = writeln!(out, "### Harness errors\n\n{}\n", errors.join("\n"));
    }
    let _ = writeln!(
        out,
        "<sub>run {} · gauntlet {}</sub>",
        escape(&h.run_id),
        escape(&h.versions.harness)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_and_html_are_neutralised() {
        assert_eq!(
            escape("<script>x</script> | [a](javascript:b)"),
            "\\<script\\>x\\</script\\> \\| \\[a\\]\\(javascript:b\\)"
        );
        assert_eq!(escape("a\nb"), "a b");
    }
}
