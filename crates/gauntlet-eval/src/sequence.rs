//! `score_tool_sequence`, with the reference implementation's names and semantics exactly.
//!
//! ```python
//! seen = set(actual)
//! required_recall = len(required & seen) / len(required) if required else 1.0
//! forbidden_used = bool(forbidden & seen)
//! duplicate_calls = sum(count - 1 for count in Counter(actual).values() if count > 1)
//! within_call_budget = len(actual) <= max_calls
//! ```

use std::collections::{BTreeSet, HashMap};

/// What `score_tool_sequence` returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSequenceScores {
    /// Share of required tools called at least once (1.0 when nothing is required).
    pub required_tool_recall: f64,
    /// Whether any forbidden tool was called.
    pub forbidden_tool_used: bool,
    /// Whether the number of calls is at most the budget (always, without a budget).
    pub within_call_budget: bool,
    /// Calls beyond the first of each tool name.
    pub duplicate_calls: f64,
}

/// Scores a sequence of tool names. `max_calls: None` means no budget.
pub fn score_tool_sequence<S: AsRef<str>>(
    actual: &[S],
    required: &BTreeSet<&str>,
    forbidden: &BTreeSet<&str>,
    max_calls: Option<u32>,
) -> ToolSequenceScores {
    let seen: BTreeSet<&str> = actual.iter().map(AsRef::as_ref).collect();
    let required_tool_recall = if required.is_empty() {
        1.0
    } else {
        required.intersection(&seen).count() as f64 / required.len() as f64
    };
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for name in actual {
        *counts.entry(name.as_ref()).or_default() += 1;
    }
    let duplicate_calls = counts
        .values()
        .filter(|c| **c > 1)
        .map(|c| c - 1)
        .sum::<usize>();
    ToolSequenceScores {
        required_tool_recall,
        forbidden_tool_used: forbidden.intersection(&seen).next().is_some(),
        within_call_budget: max_calls.is_none_or(|m| actual.len() <= m as usize),
        duplicate_calls: duplicate_calls as f64,
    }
}
