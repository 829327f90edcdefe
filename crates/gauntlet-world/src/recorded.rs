//! A recorded world: every tool answers from the case's recording of a real session (the
//! shadow proxy's, or a production trace's), matched by tool and canonical arguments, in order;
//! an unrecorded call is a clear tool error. Harvested suites replay offline with it.

use gauntlet_model::{ToolCall, WorldSpec};
use serde_json::{Value, json};

/// The world's name in a harvested suite.
pub const WORLD: &str = "recorded";

/// The script every harvested world runs (its tool table is prepended).
const SCRIPT: &str = r#"
// Every tool answers from the case's recording (its initial state's `answers`): the k-th call
// of a tool with the same arguments (in any key order) gets the k-th recorded answer, or the
// last one when the session made fewer. A write that was answered is appended to `writes`, the
// state the case's expected outcome checks.
function canonical(v) {
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  if (v !== null && typeof v === "object") {
    return "{" + Object.keys(v).sort().map(function (k) { return JSON.stringify(k) + ":" + canonical(v[k]); }).join(",") + "}";
  }
  return JSON.stringify(v);
}

function answer(tool, kind, args, ctx) {
  const key = tool + canonical(args);
  const mine = ctx.state.answers.filter(function (a) { return a.tool + canonical(a.arguments) === key; });
  if (mine.length === 0) {
    throw ctx.error(404, "no recorded answer for `" + tool + "` with arguments " + canonical(args) +
      ": the recorded session never made this call (harvest one that did, or add it to this case's answers)");
  }
  const seen = ctx.state.seen[key] || 0;
  ctx.state.seen[key] = seen + 1;
  const a = mine[Math.min(seen, mine.length - 1)];
  if (a.error) throw ctx.error(a.error.status, a.error.message);
  if (kind === "write") ctx.state.writes.push({ tool: tool, arguments: args });
  return a.result;
}

for (const name of Object.keys(TOOLS)) {
  globalThis[name] = function (args, ctx) { return answer(name, TOOLS[name], args, ctx); };
}
"#;

/// Each call's recorded answer (its result, or its error), for a case's initial state.
pub fn answers(calls: &[&ToolCall]) -> Vec<Value> {
    calls
        .iter()
        .map(|c| {
            let mut a = json!({"tool": c.tool, "arguments": c.arguments});
            match (&c.result, &c.error) {
                (_, Some(e)) => a["error"] = json!({"status": e.status, "message": e.message}),
                (Some(r), None) => a["result"] = r.clone(),
                (None, None) => a["result"] = Value::Null,
            }
            a
        })
        .collect()
}

/// A case's initial state in the recorded world.
pub fn initial_state(answers: Vec<Value>) -> Value {
    json!({"answers": answers, "seen": {}, "writes": []})
}

/// The recorded world with `tools` (their names and kinds; the rest of `base` is kept): its
/// spec (script `recorded.js`) and the script's text, headed by `origin` as a comment.
pub fn world(base: &WorldSpec, origin: &str) -> (WorldSpec, String) {
    let tools: serde_json::Map<String, Value> = base
        .tools
        .iter()
        .map(|t| {
            let kind = match t.kind {
                gauntlet_model::ToolKind::Read => "read",
                gauntlet_model::ToolKind::Write => "write",
            };
            (t.name.clone(), json!(kind))
        })
        .collect();
    let mut spec = base.clone();
    spec.name = WORLD.to_owned();
    spec.script = Some(format!("{WORLD}.js"));
    spec.state = json!({"answers": [], "seen": {}, "writes": []})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let script = format!(
        "// {origin}\nconst TOOLS = {};\n{SCRIPT}",
        Value::Object(tools)
    );
    (spec, script)
}
