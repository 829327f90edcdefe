//! The terminal summary: a table of trials, the headline metrics, the gates and the verdict.

use gauntlet_model::names;
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
    /// Explain every failed trial under the table (`--explain`), not only the first
    /// [`EXPLAINED`].
    pub explain: bool,
}

/// The first line of a message (a JavaScript error carries its stack below it).
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim_end()
}

/// Failed trials explained under the table without `--explain`.
pub const EXPLAINED: usize = 20;

/// Why a trial did not pass, in one line: a harness error's message, or its most severe
/// failing score (critical before error) with its reason, and a `user_unanswered` note when
/// the case's user had no reply (whose failure it may be).
pub fn why_line(t: &gauntlet_model::TrialSummary) -> Option<String> {
    use gauntlet_model::Severity;
    if t.status == TrialStatus::Passed {
        return None;
    }
    if let Some(e) = &t.error {
        return Some(format!("harness error: {}", first_line(e)));
    }
    // The most severe; among equals, the agent's crash, which explains the rest.
    let worst = t
        .scores
        .iter()
        .filter(|s| s.fails_trial())
        .min_by_key(|s| {
            let rank = match s.severity {
                Severity::Critical => 0,
                Severity::Error => 1,
                _ => 2,
            };
            (rank, s.name != names::AGENT_COMPLETED)
        })?;
    let mut line = format!(
        "{}: {}",
        worst.name,
        first_line(worst.reason.as_deref().unwrap_or("failed"))
    );
    let others = t.scores.iter().filter(|s| s.fails_trial()).count() - 1;
    if others > 0 {
        line.push_str(&format!(" (+{others} more)"));
    }
    if let Some(note) = t.scores.iter().find_map(user_unanswered) {
        line.push_str(&format!("; note: {note}"));
    }
    Some(line)
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

/// pass^k is shown for k up to this in the one-line benchmark headline.
const MAX_SHOWN_K: u32 = 8;

/// The attack figures of a run with attacked trials: utility, utility under attack and the
/// targeted attack success rate, each with its interval, then the rate per attack and vector.
pub fn attack_line(results: &RunResults, fmt: fn(f64) -> String) -> Option<String> {
    let m = |name: &str| results.metrics.get(name).copied().flatten();
    let attacked = m(names::metric::ATTACKED_TRIALS).filter(|n| *n > 0.0)?;
    let with_ci = |name: &str| {
        let v = m(name).map_or("n/a".to_owned(), fmt);
        match results.intervals.get(name) {
            Some(i) => format!("{v} [{}, {}]", fmt(i.lower), fmt(i.upper)),
            None => v,
        }
    };
    let per: Vec<String> = attack_groups(results)
        .into_iter()
        .map(|(group, _, rate)| format!("{group} {}", fmt(rate)))
        .collect();
    Some(format!(
        "attacks: {} attacked trials  attack success {}  utility under attack {}  utility {}{}",
        fmt(attacked),
        with_ci(names::metric::ATTACK_SUCCESS_RATE),
        with_ci(names::metric::UTILITY_UNDER_ATTACK),
        with_ci(names::metric::UTILITY_RATE),
        if per.is_empty() {
            String::new()
        } else {
            format!("  (success by {})", per.join(", "))
        }
    ))
}

/// The attack success rate per attack (`attack NAME`) and per vector (`vector NAME`), with the
/// metric's name (its interval's key).
pub fn attack_groups(results: &RunResults) -> Vec<(String, &str, f64)> {
    let prefix = format!("{}_", names::metric::ATTACK_SUCCESS_RATE);
    results
        .metrics
        .iter()
        .filter_map(|(k, v)| {
            let rest = k.strip_prefix(&prefix)?;
            let (kind, name) = rest.split_once('_')?;
            Some((format!("{kind} {name}"), k.as_str(), (*v)?))
        })
        .collect()
}

/// The imported benchmark's headline by its own rule, in one line, beside gauntlet's verdicts.
pub fn benchmark_line(results: &RunResults, fmt: fn(f64) -> String) -> Option<String> {
    let b = results.metrics.benchmark.as_ref()?;
    let hats: Vec<String> = (1..=MAX_SHOWN_K)
        .filter_map(|k| {
            b.pass_k
                .get(&format!("pass_hat_{k}"))
                .map(|v| format!("{k}:{}", fmt(*v)))
        })
        .collect();
    Some(format!(
        "{} by its own rule: {}/{} rewarded  pass^k {}  (gauntlet's verdicts here are its own, stricter checks)",
        b.name,
        b.passed,
        b.trials,
        hats.join(" ")
    ))
}

/// Each LLM judge of the run in one line: whether it may gate, what it judged, what it cost
/// (apart from the agent) and how far its models or samples agree.
pub fn judge_lines(results: &RunResults, fmt: fn(f64) -> String) -> Vec<String> {
    results
        .judges
        .iter()
        .map(|j| {
            let mut line = format!(
                "judge {} ({}, {}): {} scored, {} passed, {} skipped, {} invalid · {} calls, {} cached · judge cost €{}",
                j.header.name,
                j.header.model,
                if j.header.advisory { "advisory" } else { "may gate" },
                j.scored,
                j.passed,
                j.skipped,
                j.invalid,
                j.calls,
                j.cache_hits,
                fmt(j.cost_eur),
            );
            if let Some(budget) = j.header.budget_eur {
                line.push_str(&format!(" of €{} budget", fmt(budget)));
            }
            if j.over_budget > 0 {
                line.push_str(&format!(
                    " · {} skipped over budget",
                    j.over_budget
                ));
            }
            if let Some(a) = j.agreement_alpha {
                line.push_str(&format!(" · agreement α {}", fmt(a)));
            }
            if !j.split_trials.is_empty() {
                line.push_str(&format!(" · split on {}", j.split_trials.len()));
            }
            line
        })
        .collect()
}

/// Renders the summary of a run.
pub fn render_summary(results: &RunResults, opts: SummaryOptions) -> String {
    let mut out = String::new();
    let h = &results.header;
    let _ = writeln!(
        out,
        "suite {}  agent {}  seed {}  epochs {}  run {}{}",
        h.suite,
        h.agent,
        h.seed,
        h.epochs,
        h.run_id,
        h.shard.map(|s| format!(" (part {s})")).unwrap_or_default()
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
            TrialStatus::Passed => paint(names::metric::PASSED, true, opts.color),
            TrialStatus::Failed => paint(names::metric::FAILED, false, opts.color),
            TrialStatus::Error => paint("error", false, opts.color),
        };
        let mut failed: Vec<String> = if t.status == TrialStatus::Error {
            Vec::new()
        } else {
            t.scores.clone()
        }
        .into_iter()
        .filter(|s| s.fails_trial())
        .map(|s| what_failed(&s))
        .collect();
        if t.status == TrialStatus::Failed {
            // Whose failure it may be: a question the case's user could not answer.
            failed.extend(t.scores.iter().filter_map(user_unanswered));
        }
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
    let listed = results.trials.len();
    let total = results
        .metrics
        .get(names::metric::TRIALS)
        .copied()
        .flatten()
        .unwrap_or(0.0) as usize;
    if listed > 0 || total == 0 {
        let _ = writeln!(out, "{table}");
        let why: Vec<(String, String)> = results
            .trials
            .iter()
            .filter_map(|t| {
                let at = if epochs {
                    format!("{} (epoch {})", t.case_id, t.epoch)
                } else {
                    t.case_id.clone()
                };
                why_line(t).map(|w| (at, w))
            })
            .collect();
        // Trials that failed for the same reason share a line (a dead agent fails them all).
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for (at, line) in why {
            match groups.iter_mut().find(|(l, _)| *l == line) {
                Some((_, ats)) => ats.push(at),
                None => groups.push((line, vec![at])),
            }
        }
        let shown = if opts.explain {
            groups.len()
        } else {
            groups.len().min(EXPLAINED)
        };
        if !groups.is_empty() {
            let _ = writeln!(out, "why:");
        }
        for (line, ats) in &groups[..shown] {
            let who = if ats.len() > 3 && !opts.explain {
                format!("{} and {} more", ats[..3].join(", "), ats.len() - 3)
            } else {
                ats.join(", ")
            };
            let _ = writeln!(out, "  {who}: {line}");
        }
        if shown < groups.len() {
            let more: usize = groups[shown..].iter().map(|(_, a)| a.len()).sum();
            let _ = writeln!(
                out,
                "  … and {more} more failed trials (`--explain` lists them all)"
            );
        }
    } else {
        let _ = writeln!(
            out,
            "({total} trials: too many to list here; each one is in the run folder's trials.jsonl, `gauntlet report RUN --format html` browses them)"
        );
    }

    let m = |name: &str| {
        results
            .metrics
            .get(name)
            .copied()
            .flatten()
            .unwrap_or(f64::NAN)
    };
    let ci = |name: &str| {
        results
            .intervals
            .get(name)
            .map(|i| format!(" [{}, {}]", fmt_num(i.lower), fmt_num(i.upper)))
            .unwrap_or_default()
    };
    let _ = writeln!(
        out,
        "trials {}  passed {}  failed {}  errors {}  critical violations {}",
        fmt_num(m(names::metric::TRIALS)),
        fmt_num(m(names::metric::PASSED)),
        fmt_num(m(names::metric::FAILED)),
        fmt_num(m(names::metric::ERRORS)),
        fmt_num(m(names::metric::CRITICAL_POLICY_VIOLATIONS)),
    );
    if results.retried > 0 {
        let _ = writeln!(
            out,
            "retried {} trial(s) after a harness error (--retry-errors); the counts are of their last attempts",
            results.retried
        );
    }
    let _ = writeln!(
        out,
        "pass rate {}{}  task success {}{}  (95% Wilson intervals)",
        fmt_num(m(names::metric::PASS_RATE)),
        ci("pass_rate"),
        fmt_num(m(names::metric::TASK_SUCCESS_RATE)),
        ci("task_success_rate"),
    );
    if let Some(line) = benchmark_line(results, fmt_num) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(line) = attack_line(results, fmt_num) {
        let _ = writeln!(out, "{line}");
    }
    if h.epochs > 1 {
        let ks: Vec<u32> = (1..=h.epochs)
            .filter(|k| results.metrics.contains_key(&format!("pass_at_{k}")))
            .collect();
        let row = |prefix: &str| -> String {
            ks.iter()
                .map(|k| format!("{k}:{}", fmt_num(m(&format!("{prefix}_{k}")))))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let _ = writeln!(
            out,
            "pass@k {}   pass^k {}",
            row("pass_at"),
            row("pass_hat")
        );
        if !results.flaky_cases.is_empty() {
            let list: Vec<String> = results
                .flaky_cases
                .iter()
                .take(5)
                .map(|f| format!("{} {}/{}", f.case_id, f.passed, f.trials))
                .collect();
            let _ = writeln!(
                out,
                "flaky cases ({}): {}",
                results.flaky_cases.len(),
                list.join(", ")
            );
        }
    }
    if !results.first_wrong_steps.is_empty() {
        let list: Vec<String> = results
            .first_wrong_steps
            .iter()
            .take(5)
            .map(|(case, steps)| {
                let mut steps: Vec<(u32, u32)> = steps
                    .iter()
                    .map(|(k, v)| (k.parse().unwrap_or(0), *v))
                    .collect();
                steps.sort_unstable();
                let shown: Vec<String> = steps
                    .iter()
                    .map(|(step, n)| format!("step {step} ×{n}"))
                    .collect();
                format!("{case}: {}", shown.join(", "))
            })
            .collect();
        let _ = writeln!(out, "first wrong step: {}", list.join("; "));
    }
    // A failing segment is shown even when the overall mean passes.
    let weak: Vec<String> = results
        .segments
        .iter()
        .flat_map(|(kind, values)| values.iter().map(move |(v, s)| (kind, v, s)))
        .filter(|(_, _, s)| s.passed < s.trials)
        .map(|(kind, v, s)| format!("{kind} {v} {}/{}", s.passed, s.trials))
        .collect();
    if !weak.is_empty() {
        let _ = writeln!(out, "segments with failures: {}", weak.join(", "));
    }
    for line in judge_lines(results, fmt_num) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(r) = &results.rubric {
        let _ = writeln!(
            out,
            "rubric {}: weighted score {}",
            r.name,
            r.score.map_or("n/a".to_owned(), fmt_num)
        );
        for d in &r.dimensions {
            let mark = match d.passed {
                Some(ok) => paint(if ok { "pass" } else { "FAIL" }, ok, opts.color),
                None => "    ".to_owned(),
            };
            let v = d.value.map_or("not measured".to_owned(), fmt_num);
            let gate = d
                .gate
                .as_ref()
                .map(|g| format!("  gate {g}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {mark}  {} {v} (weight {}){gate}",
                d.name,
                fmt_num(d.weight)
            );
        }
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

/// The terminal reporter as a consumer of the run event stream: it renders the summary when
/// the run finishes. A live run and a stored run replayed through it print the same summary.
/// (Progress while trials run is the CLI's: it owns the terminal.)
pub struct TerminalReporter {
    options: SummaryOptions,
}

impl TerminalReporter {
    /// A reporter that renders with `options`.
    pub fn new(options: SummaryOptions) -> TerminalReporter {
        TerminalReporter { options }
    }

    /// What to print for `event`: the summary when the run finishes, nothing before.
    pub fn report(&mut self, event: &gauntlet_model::RunEvent) -> Option<String> {
        match event {
            gauntlet_model::RunEvent::RunFinished { results, .. } => {
                Some(render_summary(results, self.options))
            }
            _ => None,
        }
    }
}

/// The `user_unanswered` note as the terminal says it: `user had no reply to "..."`.
fn user_unanswered(s: &gauntlet_model::Score) -> Option<String> {
    if s.name != names::USER_UNANSWERED {
        return None;
    }
    let questions: Vec<String> = s.details["questions"]
        .as_array()?
        .iter()
        .filter_map(|q| q.as_str().map(|q| format!("{q:?}")))
        .collect();
    Some(format!("user had no reply to {}", questions.join(", ")))
}

/// A failed score as what went wrong, in one polarity: `forbidden tool used`, `write without
/// confirmation`, `StepEfficiency 0.5` (a score, where 1 is best). A count where more is worse
/// (`forbidden_tool_used=1`) beside a score where more is better (`confirmation_before_write=0`)
/// read as opposites.
pub fn what_failed(s: &gauntlet_model::Score) -> String {
    use gauntlet_model::names as n;
    let phrase = match s.name.as_str() {
        n::FORBIDDEN_TOOL_USED => "forbidden tool used",
        n::CONFIRMATION_BEFORE_WRITE if s.details.get("reason").is_some() => {
            "no confirmation asked"
        }
        n::CONFIRMATION_BEFORE_WRITE => "write without confirmation",
        n::QUESTION_ASKED => "no question asked",
        n::STATE_VERIFICATION => "wrong final state",
        n::OUTPUT_ASSERTIONS => "answer misses what it must say",
        n::AGENT_FINISHED => "did not finish",
        n::AGENT_COMPLETED => "agent crashed",
        n::REQUIRED_TOOL_RECALL => "required tool not called",
        n::WITHIN_CALL_BUDGET => "over the call budget",
        n::WITHIN_BUDGET => "over budget",
        n::LOOP_DETECTION => "loop",
        n::DUPLICATE_SIDE_EFFECTS => "duplicate side effects",
        n::SECRETS_AND_PII => "secret or personal data leaked",
        n::CROSS_TENANT_ACCESS => "another tenant's record touched",
        n::SECURITY => "attack succeeded",
        n::TOOL_ORDER => "tools out of order",
        n::MODEL_FAULTS => "model faults mishandled",
        name if name.starts_with(n::FAULT_PREFIX) => {
            return format!(
                "{} mishandled",
                name[n::FAULT_PREFIX.len()..].replace('_', " ")
            );
        }
        _ if s.score <= 0.0 => return s.name.clone(),
        _ => return format!("{} {}", s.name, fmt_num(s.score)),
    };
    phrase.to_owned()
}
