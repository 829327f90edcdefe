//! Wrong trajectories derived from a case's reference: the mutants a checker should kill. Pure:
//! a case, its world's tools and state, who the agent acts for and a seed in; plans out.

use std::collections::BTreeMap;

use gauntlet_model::{Case, Context, ReferenceStep, ToolKind, WorldSpec};
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use serde_json::Value;

/// What a mutation does to the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MutationKind {
    /// Nothing at all: no call, no answer.
    DoNothing,
    /// Only the reference's final answer, claiming success in its own words.
    AnswerOnly,
    /// One write left out.
    DropWrite,
    /// One write done twice.
    RepeatWrite,
    /// Two consecutive writes in the other order.
    SwapWrites,
    /// One argument of one write changed (another record, another value of the same type).
    ChangeArgument,
    /// An extra write on a record the case does not name.
    ExtraWrite,
    /// The confirmations the reference asks for, skipped.
    SkipConfirmation,
    /// The questions the reference asks the user, skipped.
    SkipQuestion,
    /// One write on another tenant's record instead.
    OtherTenant,
}

impl MutationKind {
    /// Its name, as in JSON and in `audit.accept` (`skip_question`).
    pub fn name(self) -> &'static str {
        match self {
            MutationKind::DoNothing => "do_nothing",
            MutationKind::AnswerOnly => "answer_only",
            MutationKind::DropWrite => "drop_write",
            MutationKind::RepeatWrite => "repeat_write",
            MutationKind::SwapWrites => "swap_writes",
            MutationKind::ChangeArgument => "change_argument",
            MutationKind::ExtraWrite => "extra_write",
            MutationKind::SkipConfirmation => "skip_confirmation",
            MutationKind::SkipQuestion => "skip_question",
            MutationKind::OtherTenant => "other_tenant",
        }
    }

    /// Whether a survivor of this kind can be equivalent to the reference. A skipped question or
    /// confirmation changes nothing in the world when the scripted mutant already knows the
    /// answer, yet an agent that acts without asking is exactly the hole such a case exists
    /// to find: its survivor is never equivalent.
    pub fn can_be_equivalent(self) -> bool {
        !matches!(
            self,
            MutationKind::SkipConfirmation | MutationKind::SkipQuestion
        )
    }
}

/// One wrong trajectory: what was changed, and the plan a scripted agent plays.
#[derive(Debug, Clone, PartialEq)]
pub struct Mutant {
    /// What was changed, for people (`drop write 2 (close_incident)`).
    pub mutation: String,
    /// The kind of change.
    pub kind: MutationKind,
    /// The plan.
    pub steps: Vec<ReferenceStep>,
}

/// The world a case plays in, as mutations need it.
#[derive(Debug, Clone, Copy)]
pub struct WorldView<'a> {
    /// Its tools (which are writes) and records' tenant field.
    pub spec: &'a WorldSpec,
    /// The state the case starts from.
    pub initial_state: &'a Value,
    /// Who the agent acts for.
    pub context: &'a Context,
}

/// A collection of records in the state: an object whose values are all objects.
struct Collection<'a> {
    records: &'a serde_json::Map<String, Value>,
}

/// Every collection of records in the state, to depth 3.
fn collections(state: &Value) -> Vec<Collection<'_>> {
    fn walk<'a>(v: &'a Value, depth: usize, out: &mut Vec<Collection<'a>>) {
        let Value::Object(map) = v else { return };
        if map.len() >= 2 && map.values().all(Value::is_object) {
            out.push(Collection { records: map });
        }
        if depth < 3 {
            for child in map.values() {
                walk(child, depth + 1, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(state, 0, &mut out);
    out
}

impl WorldView<'_> {
    fn is_write(&self, tool: &str) -> bool {
        self.spec
            .tool(tool)
            .is_some_and(|t| matches!(t.kind, ToolKind::Write))
    }

    /// The tenant of a record, when the world has a tenant field.
    fn tenant_of<'v>(&self, record: &'v Value) -> Option<&'v str> {
        let field = self.spec.tenant_field.as_deref()?;
        record.get(field).and_then(Value::as_str)
    }

    /// Other record ids of the collection holding record `id`: those of the same tenant as the
    /// agent's context (`same_tenant`), or those of another tenant.
    fn other_records(&self, id: &str, same_tenant: bool) -> Vec<String> {
        let mine = self.context.tenant.as_deref();
        for c in collections(self.initial_state) {
            if !c.records.contains_key(id) {
                continue;
            }
            return c
                .records
                .iter()
                .filter(|(k, _)| k.as_str() != id)
                .filter(|(_, r)| {
                    let theirs = self.tenant_of(r);
                    match (same_tenant, theirs, mine) {
                        (true, Some(t), Some(m)) => t == m,
                        (true, _, _) => true,
                        (false, Some(t), Some(m)) => t != m,
                        (false, _, _) => false,
                    }
                })
                .map(|(k, _)| k.clone())
                .collect();
        }
        Vec::new()
    }
}

/// The mutants of a case's reference trajectory, in a fixed order; choices among records and
/// values follow `seed`. Empty when the case has no reference.
pub fn mutants(case: &Case, world: WorldView<'_>, seed: u64) -> Vec<Mutant> {
    let reference = &case.reference_trajectory;
    if reference.is_empty() {
        return Vec::new();
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ fnv(&case.case_id));
    let mut pick = |options: &[String]| -> Option<String> {
        (!options.is_empty()).then(|| options[rng.random_range(0..options.len())].clone())
    };
    let mut out = Vec::new();
    let mut push = |mutation: String, kind: MutationKind, steps: Vec<ReferenceStep>| {
        if &steps != reference && !out.iter().any(|m: &Mutant| m.steps == steps) {
            out.push(Mutant {
                mutation,
                kind,
                steps,
            });
        }
    };
    push("do nothing".into(), MutationKind::DoNothing, Vec::new());
    let answer = reference.iter().rev().find_map(|s| s.answer.clone());
    push(
        match &answer {
            Some(a) => format!("answer only: {a:?}"),
            None => "answer only".into(),
        },
        MutationKind::AnswerOnly,
        vec![ReferenceStep {
            answer: Some(answer.clone().unwrap_or_else(|| "Done.".into())),
            ..ReferenceStep::default()
        }],
    );
    let writes: Vec<usize> = reference
        .iter()
        .enumerate()
        .filter(|(_, s)| s.tool.as_deref().is_some_and(|t| world.is_write(t)))
        .map(|(i, _)| i)
        .collect();
    let tool = |i: usize| reference[i].tool.clone().unwrap_or_default();
    for (n, &i) in writes.iter().enumerate() {
        let mut steps = reference.clone();
        steps.remove(i);
        push(
            format!("drop write {} ({})", n + 1, tool(i)),
            MutationKind::DropWrite,
            steps,
        );
        let mut steps = reference.clone();
        steps.insert(i + 1, reference[i].clone());
        push(
            format!("repeat write {} ({})", n + 1, tool(i)),
            MutationKind::RepeatWrite,
            steps,
        );
    }
    for (n, pair) in writes.windows(2).enumerate() {
        let (a, b) = (pair[0], pair[1]);
        let mut steps = reference.clone();
        steps.swap(a, b);
        push(
            format!(
                "swap writes {} and {} ({}, {})",
                n + 1,
                n + 2,
                tool(a),
                tool(b)
            ),
            MutationKind::SwapWrites,
            steps,
        );
    }
    for (n, &i) in writes.iter().enumerate() {
        let Some(Value::Object(args)) = &reference[i].args else {
            continue;
        };
        let schema = world.spec.tool(&tool(i)).map(|t| &t.parameters);
        let keys: Vec<&String> = args.keys().collect();
        for key in keys {
            let value = &args[key.as_str()];
            let property = schema
                .and_then(|s| s.get("properties"))
                .and_then(|p| p.get(key));
            let Some((changed, said)) = changed_value(value, property, &world, &mut pick) else {
                continue;
            };
            let mut steps = reference.clone();
            if let Some(Value::Object(a)) = &mut steps[i].args {
                a.insert(key.clone(), changed);
            }
            push(
                format!("write {} ({}): {key} {said}", n + 1, tool(i)),
                MutationKind::ChangeArgument,
                steps,
            );
        }
    }
    // An extra write on another record, and the same write on another tenant's record.
    let answer_at = reference
        .iter()
        .position(|s| s.answer.is_some())
        .unwrap_or(reference.len());
    for (n, &i) in writes.iter().enumerate() {
        let Some((key, id)) = record_argument(&reference[i], &world) else {
            continue;
        };
        if n == 0
            && let Some(other) = pick(&world.other_records(&id, true))
        {
            let mut extra = reference[i].clone();
            set_arg(&mut extra, &key, &other);
            let mut steps = reference.clone();
            steps.insert(answer_at, extra);
            push(
                format!("extra write {} on {other}", tool(i)),
                MutationKind::ExtraWrite,
                steps,
            );
        }
        if world.spec.tenant_field.is_some()
            && let Some(other) = pick(&world.other_records(&id, false))
        {
            let mut steps = reference.clone();
            set_arg(&mut steps[i], &key, &other);
            push(
                format!(
                    "write {} ({}) on another tenant's record {other}",
                    n + 1,
                    tool(i)
                ),
                MutationKind::OtherTenant,
                steps,
            );
        }
    }
    if reference.iter().any(|s| s.confirm.is_some()) {
        let steps = reference
            .iter()
            .filter(|s| s.confirm.is_none())
            .cloned()
            .collect();
        push(
            "skip the confirmation".into(),
            MutationKind::SkipConfirmation,
            steps,
        );
    }
    if reference.iter().any(|s| s.ask.is_some()) {
        let steps = reference
            .iter()
            .filter(|s| s.ask.is_none())
            .cloned()
            .collect();
        push(
            "skip the question".into(),
            MutationKind::SkipQuestion,
            steps,
        );
    }
    out
}

/// A string argument of a call that names a record of the state: its key and the id.
fn record_argument(step: &ReferenceStep, world: &WorldView<'_>) -> Option<(String, String)> {
    let Some(Value::Object(args)) = &step.args else {
        return None;
    };
    let ids: BTreeMap<&String, &str> = args
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|s| (k, s)))
        .collect();
    ids.into_iter().find_map(|(k, id)| {
        collections(world.initial_state)
            .iter()
            .any(|c| c.records.contains_key(id))
            .then(|| (k.clone(), id.to_owned()))
    })
}

fn set_arg(step: &mut ReferenceStep, key: &str, value: &str) {
    if let Some(Value::Object(a)) = &mut step.args {
        a.insert(key.to_owned(), Value::String(value.to_owned()));
    }
}

/// Another value of the same type for an argument, and how it changed: another record for a
/// record id, another member of the schema's enum, a number one up, a boolean flipped, text
/// altered, a list one shorter, an object with its first leaf changed.
fn changed_value(
    value: &Value,
    schema: Option<&Value>,
    world: &WorldView<'_>,
    pick: &mut impl FnMut(&[String]) -> Option<String>,
) -> Option<(Value, String)> {
    let shown = |v: &Value| {
        let s = v.to_string();
        if s.len() > 40 {
            format!("{}…", &s[..s.floor_char_boundary(40)])
        } else {
            s
        }
    };
    let changed = match value {
        Value::String(s) => {
            let options = world.other_records(s, true);
            let enum_others: Vec<String> = schema
                .and_then(|p| p.get("enum"))
                .and_then(Value::as_array)
                .map(|e| {
                    e.iter()
                        .filter_map(Value::as_str)
                        .filter(|o| o != s)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(other) = pick(&options) {
                Value::String(other)
            } else if let Some(other) = pick(&enum_others) {
                Value::String(other)
            } else {
                Value::String(format!("{s} (altered)"))
            }
        }
        Value::Number(n) => match n.as_i64() {
            Some(i) => Value::from(i + 1),
            None => Value::from(n.as_f64().unwrap_or(0.0) * 2.0 + 1.0),
        },
        Value::Bool(b) => Value::Bool(!b),
        Value::Array(items) if !items.is_empty() => Value::Array(items[..items.len() - 1].to_vec()),
        Value::Object(map) => {
            let (key, inner) = map.iter().find(|(_, v)| !v.is_null())?;
            let inner_schema = schema
                .and_then(|s| s.get("properties"))
                .and_then(|p| p.get(key));
            let (changed, _) = changed_value(inner, inner_schema, world, pick)?;
            let mut map = map.clone();
            map.insert(key.clone(), changed);
            Value::Object(map)
        }
        _ => return None,
    };
    let said = format!("{} -> {}", shown(value), shown(&changed));
    Some((changed, said))
}

/// FNV-1a of a text: a case's share of the seed.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn world() -> WorldSpec {
        serde_json::from_value(json!({
            "name": "desk",
            "tenant_field": "tenant",
            "tools": [
                {"name": "get", "description": "read", "kind": "read",
                 "parameters": {"type": "object"}, "handler": [{"get": ""}]},
                {"name": "close", "description": "write", "kind": "write",
                 "parameters": {"type": "object", "properties": {
                     "id": {"type": "string"}, "reason": {"type": "string", "enum": ["fixed", "dup"]}}},
                 "handler": [{"get": ""}]},
                {"name": "note", "description": "write", "kind": "write",
                 "parameters": {"type": "object"}, "handler": [{"get": ""}]}
            ]
        }))
        .unwrap()
    }

    fn case() -> Case {
        serde_json::from_value(json!({
            "case_id": "c",
            "user_input": "close A",
            "reference_trajectory": [
                {"tool": "get", "args": {"id": "A"}},
                {"confirm": "Close A?"},
                {"tool": "close", "args": {"id": "A", "reason": "fixed"}},
                {"tool": "note", "args": {"id": "A", "text": "closed", "n": 1, "urgent": false}},
                {"answer": "A is closed."}
            ]
        }))
        .unwrap()
    }

    #[test]
    fn every_kind_of_mutation_is_derived_once_and_deterministically() {
        let spec = world();
        let state = json!({"items": {
            "A": {"tenant": "t1"}, "B": {"tenant": "t1"}, "C": {"tenant": "t1"}, "Z": {"tenant": "t2"}}});
        let context = Context {
            tenant: Some("t1".into()),
            ..Context::default()
        };
        let view = WorldView {
            spec: &spec,
            initial_state: &state,
            context: &context,
        };
        let all = mutants(&case(), view, 7);
        assert_eq!(all, mutants(&case(), view, 7), "deterministic for a seed");
        let kinds: std::collections::BTreeSet<MutationKind> = all.iter().map(|m| m.kind).collect();
        use MutationKind::*;
        assert_eq!(
            kinds.into_iter().collect::<Vec<_>>(),
            vec![
                DoNothing,
                AnswerOnly,
                DropWrite,
                RepeatWrite,
                SwapWrites,
                ChangeArgument,
                ExtraWrite,
                SkipConfirmation,
                OtherTenant
            ]
        );
        let names: Vec<&str> = all.iter().map(|m| m.mutation.as_str()).collect();
        assert!(names.contains(&"drop write 1 (close)"), "{names:?}");
        assert!(
            names.contains(&"write 1 (close): reason \"fixed\" -> \"dup\""),
            "{names:?}"
        );
        assert!(names.contains(&"write 2 (note): n 1 -> 2"), "{names:?}");
        assert!(
            names.contains(&"write 2 (note): urgent false -> true"),
            "{names:?}"
        );
        assert!(
            names.contains(&"write 1 (close) on another tenant's record Z"),
            "{names:?}"
        );
        // Another record of the same tenant, never the other tenant's, for a changed id.
        let id = all
            .iter()
            .find(|m| m.mutation.starts_with("write 1 (close): id"))
            .unwrap();
        let to = id.steps[2].args.as_ref().unwrap()["id"].as_str().unwrap();
        assert!(to == "B" || to == "C", "{to}");
        // No mutant is the reference, and none twice.
        let plans: std::collections::HashSet<String> =
            all.iter().map(|m| format!("{:?}", m.steps)).collect();
        assert_eq!(plans.len(), all.len());
        assert!(all.iter().all(|m| m.steps != case().reference_trajectory));
    }

    #[test]
    fn a_kind_is_named_as_in_json() {
        use MutationKind::*;
        for kind in [
            DoNothing,
            AnswerOnly,
            DropWrite,
            RepeatWrite,
            SwapWrites,
            ChangeArgument,
            ExtraWrite,
            SkipConfirmation,
            SkipQuestion,
            OtherTenant,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
    }

    #[test]
    fn a_case_without_a_reference_has_no_mutants() {
        let spec = world();
        let state = json!({});
        let context = Context::default();
        let mut c = case();
        c.reference_trajectory.clear();
        let view = WorldView {
            spec: &spec,
            initial_state: &state,
            context: &context,
        };
        assert!(mutants(&c, view, 1).is_empty());
    }
}
