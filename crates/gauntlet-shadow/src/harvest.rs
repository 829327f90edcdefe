//! Stored shadow sessions into a suite that replays them offline: a recorded world (each tool
//! answers from the session's recording, matched by tool and canonical arguments, in order;
//! an unrecorded call is a clear tool error), and one case per session whose input is the
//! user's request and whose expected outcome is the writes it made. Pure: records in, files
//! out.

use std::path::PathBuf;

use gauntlet_model::{Event, TrialRecord, WorldSpec};
use gauntlet_world::recorded::{self, WORLD};
use serde_json::{Value, json};

/// A harvested suite: its files (paths relative to the suite folder) and what was left out.
#[derive(Debug, Default)]
pub struct Harvest {
    /// Files to write.
    pub files: Vec<(PathBuf, String)>,
    /// Cases written.
    pub cases: usize,
    /// Sessions left out, with why.
    pub skipped: Vec<String>,
}

/// The suite for the sessions of one shadow run (`world`: the tools the proxy served).
pub fn harvest(
    run_id: &str,
    world: &WorldSpec,
    trials: impl IntoIterator<Item = TrialRecord>,
) -> Harvest {
    let mut out = Harvest::default();
    let mut lines = String::new();
    for t in trials {
        if let Some(e) = &t.error {
            out.skipped.push(format!(
                "{}: it ended early ({e}); its replay would differ",
                t.case_id
            ));
            continue;
        }
        let calls: Vec<&gauntlet_model::ToolCall> = t.trajectory.tool_calls().collect();
        if calls.is_empty() {
            out.skipped
                .push(format!("{}: it made no tool calls", t.case_id));
            continue;
        }
        let answers = recorded::answers(&calls);
        let writes = t.final_state.get("writes").cloned().unwrap_or(json!([]));
        let reference: Vec<Value> = calls
            .iter()
            .map(|c| {
                let mut step = json!({"tool": c.tool, "args": c.arguments});
                if let Some(k) = &c.idempotency_key {
                    step["idempotency_key"] = json!(k);
                }
                step
            })
            .collect();
        let user_input = t
            .trajectory
            .events
            .iter()
            .find_map(|e| match e {
                Event::UserMessage { text } => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_else(|| format!("(the request of shadow session {})", t.case_id));
        let n_writes = writes.as_array().map_or(0, Vec::len);
        let case = json!({
            "case_id": t.case_id,
            "description": format!(
                "Shadow session {} of run {run_id}: {} calls, {n_writes} writes, replayed from its recording.",
                t.case_id, calls.len()
            ),
            "user_input": user_input,
            "world": WORLD,
            "initial_state": recorded::initial_state(answers),
            "expected_outcome": {"writes": {"$equals": writes}},
            "reference_trajectory": reference,
            "tags": ["shadow"],
        });
        lines.push_str(&serde_json::to_string(&case).expect("a case serialises"));
        lines.push('\n');
        out.cases += 1;
    }
    let (spec, script) = recorded::world(
        world,
        &format!(
            "Recorded by `gauntlet shadow` (run {run_id}); written by `gauntlet shadow harvest`."
        ),
    );
    let config = format!(
        "# Sessions recorded by `gauntlet shadow` (run {run_id}), replayed offline from their recording.\n\
         # Run them: gauntlet run . (each case's reference trajectory is the session's calls)\n\
         # Replay the agent's own calls: gauntlet run . --agent replay:RUN_DIR\n\
         name: {run_id}\n\
         agent: script:reference\n\
         epochs: 1\n\
         worlds:\n  - worlds/{WORLD}.json\n\
         datasets:\n  - path: cases/sessions.jsonl\n    world: {WORLD}\n\
         # Gates decide the exit code; edit them. A run with harness errors never passes\n\
         # (max_error_rate tolerates some).\n\
         max_error_rate: 0\n\
         gates:\n  - name: no critical policy violations\n    expr: critical_policy_violations == 0\n"
    );
    out.files = vec![
        (PathBuf::from("gauntlet.yaml"), config),
        (
            PathBuf::from(format!("worlds/{WORLD}.json")),
            serde_json::to_string_pretty(&spec).expect("a world serialises"),
        ),
        (PathBuf::from(format!("worlds/{WORLD}.js")), script),
        (PathBuf::from("cases/sessions.jsonl"), lines),
    ];
    out
}
