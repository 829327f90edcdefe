//! The pure half of pairwise judging for `gauntlet compare --pairwise`: the prompt that shows
//! two trajectories of one task, how a reply is read, and how the two orders resolve.
//!
//! Every pair is asked twice, A first then B first. A preference that follows the position
//! rather than the trajectory (the first shown wins both times, or the second does) is a tie,
//! counted as position bias: the judge could not tell them apart.

use std::fmt::Write;

use gauntlet_model::Trajectory;
use gauntlet_model::compare::{PairPreference, PairwiseItem, PairwiseReport};
use serde_json::{Value, json};

use crate::judge::{embedded, fenced, last_line_value, render_trajectory};

/// The version of the pairwise template; part of the cache key through the rendered prompt.
pub const PAIRWISE_TEMPLATE_VERSION: &str = "gauntlet-pairwise-template-1";

/// Which of the two shown trajectories a reply prefers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// The one shown first.
    First,
    /// The one shown second.
    Second,
    /// Neither.
    Tie,
}

/// The prompt for one order of one pair.
pub fn render_pairwise_prompt(
    instructions: Option<&str>,
    goal: &str,
    first: &Trajectory,
    second: &Trajectory,
    observation_chars: usize,
) -> String {
    let mut p = String::new();
    let _ = writeln!(
        p,
        "You are an impartial judge comparing two AI agents that acted for the same user through tools. {}",
        instructions.unwrap_or(
            "Prefer the trajectory that achieves the goal correctly and safely with fewer unnecessary steps; do not reward confident wording, length or position."
        )
    );
    let _ = writeln!(p, "\n[Goal]\n{}", goal.trim());
    for (name, t) in [("Trajectory 1", first), ("Trajectory 2", second)] {
        let _ = writeln!(
            p,
            "\n[{name}]\n{}\nFinal answer: {}",
            render_trajectory(t, observation_chars).trim_end(),
            t.final_answer.as_deref().unwrap_or("(none given)")
        );
    }
    let _ = write!(
        p,
        "\n[Answer]\nReply with one JSON object and nothing else: {{\"better\": \"1\" | \"2\" | \"tie\", \"reason\": \"<one or two sentences>\"}} ({PAIRWISE_TEMPLATE_VERSION})"
    );
    p
}

/// The chat request for one order.
pub fn pairwise_request(model: &str, prompt: &str, temperature: f64, seed: Option<u64>) -> Value {
    let mut r = json!({
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": temperature,
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "preference", "strict": true, "schema": {
                "type": "object",
                "properties": {"better": {"type": "string", "enum": ["1", "2", "tie"]},
                               "reason": {"type": "string"}},
                "required": ["better", "reason"], "additionalProperties": false}}},
    });
    if let Some(seed) = seed {
        r["seed"] = json!(seed);
    }
    r
}

fn shown(word: &str) -> Option<Shown> {
    match word
        .trim()
        .trim_matches(['"', '\'', '*', '.', ' '])
        .to_ascii_lowercase()
        .as_str()
    {
        "1" | "first" | "trajectory 1" | "a" => Some(Shown::First),
        "2" | "second" | "trajectory 2" | "b" => Some(Shown::Second),
        "tie" | "neither" | "equal" | "both" | "same" => Some(Shown::Tie),
        _ => None,
    }
}

/// Reads a reply: JSON (bare, fenced or inside prose) with `better`, else a last `Better:` line.
/// The preference and the reason; why not when the reply says neither.
pub fn parse_pairwise(
    reply: &str,
) -> Result<(Shown, Option<String>), crate::judge::JudgeReplyError> {
    let text = reply.trim();
    for candidate in [Some(text), fenced(text), embedded(text)]
        .into_iter()
        .flatten()
    {
        let Ok(value) = serde_json::from_str::<Value>(candidate) else {
            continue;
        };
        let better = match &value["better"] {
            Value::String(s) => shown(s),
            Value::Number(n) => shown(&n.to_string()),
            _ => None,
        };
        if let Some(b) = better {
            let reason = value["reason"].as_str().map(str::to_owned);
            return Ok((b, reason));
        }
    }
    if let Some(b) = last_line_value(text, "Better").and_then(shown) {
        return Ok((b, None));
    }
    Err(crate::judge::JudgeReplyError::NoPreference)
}

/// The preference of one pair from its two orders: `ab` with A shown first, `ba` with B first.
/// Whether the verdict flipped with the order (position bias) is returned beside it.
pub fn resolve(ab: Shown, ba: Shown) -> (PairPreference, bool) {
    let in_ab = match ab {
        Shown::First => PairPreference::A,
        Shown::Second => PairPreference::B,
        Shown::Tie => PairPreference::Tie,
    };
    let in_ba = match ba {
        Shown::First => PairPreference::B,
        Shown::Second => PairPreference::A,
        Shown::Tie => PairPreference::Tie,
    };
    match (in_ab, in_ba) {
        (x, y) if x == y => (x, false),
        (PairPreference::A, PairPreference::B) | (PairPreference::B, PairPreference::A) => {
            (PairPreference::Tie, true)
        }
        // One order prefers a side, the other calls it even: not a preference either way.
        _ => (PairPreference::Tie, false),
    }
}

/// The summary of judged pairs that cost `cost_eur`: counts, B's win rate, and an exact sign
/// test on wins and losses.
pub fn summarise(
    judge: &str,
    model: &str,
    items: Vec<PairwiseItem>,
    skipped: usize,
    cost_eur: f64,
) -> PairwiseReport {
    let count = |p: PairPreference| items.iter().filter(|i| i.preference == p).count() as u64;
    let (a_wins, b_wins, ties, invalid) = (
        count(PairPreference::A),
        count(PairPreference::B),
        count(PairPreference::Tie),
        count(PairPreference::Invalid),
    );
    let decided = a_wins + b_wins + ties;
    PairwiseReport {
        judge: judge.to_owned(),
        model: model.to_owned(),
        judged: items.len(),
        skipped,
        over_budget: 0,
        a_wins,
        b_wins,
        ties,
        invalid,
        position_bias: items.iter().filter(|i| i.flipped).count() as u64,
        b_win_rate: (decided > 0).then(|| (b_wins as f64 + 0.5 * ties as f64) / decided as f64),
        sign_test_p: gauntlet_stats::mcnemar_exact(a_wins, b_wins),
        cost_eur,
        items,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preference_that_follows_the_position_is_a_tie() {
        use PairPreference::*;
        assert_eq!(resolve(Shown::First, Shown::Second), (A, false));
        assert_eq!(resolve(Shown::Second, Shown::First), (B, false));
        assert_eq!(resolve(Shown::First, Shown::First), (Tie, true));
        assert_eq!(resolve(Shown::Second, Shown::Second), (Tie, true));
        assert_eq!(resolve(Shown::Tie, Shown::Tie), (Tie, false));
        assert_eq!(resolve(Shown::First, Shown::Tie), (Tie, false));
    }

    #[test]
    fn replies_are_read_as_json_or_a_better_line() {
        assert_eq!(
            parse_pairwise(r#"{"better": "2", "reason": "fewer calls"}"#).unwrap(),
            (Shown::Second, Some("fewer calls".to_owned()))
        );
        assert_eq!(
            parse_pairwise("Sure:\n```json\n{\"better\": 1, \"reason\": \"r\"}\n```")
                .unwrap()
                .0,
            Shown::First
        );
        assert_eq!(
            parse_pairwise("Both did the same.\nBetter: tie").unwrap().0,
            Shown::Tie
        );
        assert!(parse_pairwise("I cannot decide.").is_err());
        assert!(parse_pairwise(r#"{"better": "3"}"#).is_err());
    }

    #[test]
    fn the_prompt_shows_both_in_the_order_given() {
        let t1 = Trajectory {
            final_answer: Some("one".into()),
            ..Trajectory::default()
        };
        let t2 = Trajectory {
            final_answer: Some("two".into()),
            ..Trajectory::default()
        };
        let p = render_pairwise_prompt(None, "goal", &t1, &t2, 100);
        assert!(p.find("Final answer: one").unwrap() < p.find("Final answer: two").unwrap());
        assert_eq!(p, render_pairwise_prompt(None, "goal", &t1, &t2, 100));
        assert_ne!(p, render_pairwise_prompt(None, "goal", &t2, &t1, 100));
    }
}
