//! The labelled corpus of answers for `claims_supported` (`tests/claims_corpus/*.yaml`): each
//! file names an example world, situations (the calls made and the state they left) and
//! answers with the claims each makes and whether each holds. Shared by the test that holds
//! the acceptance bar and the bench that prints precision and recall per category.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gauntlet_eval::claims::{self, ClaimKind, Vocabulary};
use gauntlet_model::trajectory::{ToolCall, ToolError};
use gauntlet_model::{ClaimRule, Event, ToolKind, Trajectory, WorldSpec};
use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusFile {
    /// The world file, relative to the repository's root.
    pub world: String,
    /// The rules the world shipped before claims were derived (for the "before" measure).
    #[serde(default)]
    pub rules_before: Vec<ClaimRule>,
    pub situations: BTreeMap<String, Situation>,
    pub answers: Vec<Answer>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Situation {
    #[serde(default)]
    pub calls: Vec<Call>,
    /// Paths (JSON Pointers) set in the final state.
    #[serde(default)]
    pub changes: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    pub tool: String,
    #[serde(default)]
    pub args: Value,
    /// The error status the call got.
    #[serde(default)]
    pub error: Option<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub cat: String,
    #[serde(rename = "in")]
    pub situation: String,
    pub text: String,
    /// `w TOOL ENTITY|- [field=value] [!failure]` or `r ENTITY field=value [!state]`.
    #[serde(default)]
    pub claims: Vec<String>,
}

/// One expected claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    pub write: bool,
    pub tool: Option<String>,
    pub entity: Option<String>,
    pub field_value: Option<(String, String)>,
    pub failed: Option<String>,
}

pub fn parse_expected(s: &str) -> Expected {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let write = parts[0] == "w";
    let mut e = Expected {
        write,
        tool: None,
        entity: None,
        field_value: None,
        failed: None,
    };
    let mut rest = &parts[1..];
    if write {
        e.tool = Some(rest[0].to_owned());
        rest = &rest[1..];
    }
    if let Some(ent) = rest.first() {
        if *ent != "-" {
            e.entity = Some(ent.to_lowercase());
        }
        rest = &rest[1..];
    }
    for p in rest {
        if let Some(f) = p.strip_prefix('!') {
            e.failed = Some(f.to_owned());
        } else if let Some((f, v)) = p.split_once('=') {
            e.field_value = Some((f.to_owned(), v.to_lowercase()));
        } else {
            panic!("bad expected claim `{s}`");
        }
    }
    e
}

/// A claim as read and checked, in the corpus's terms.
#[derive(Debug, Clone)]
pub struct Got {
    pub write: bool,
    pub tool: Option<String>,
    pub entity: Option<String>,
    pub field_value: Option<(String, String)>,
    pub failed: Option<String>,
}

fn matches(e: &Expected, g: &Got) -> bool {
    e.write == g.write
        && (!e.write || e.tool == g.tool)
        && e.entity == g.entity
        && e.field_value
            .as_ref()
            .is_none_or(|fv| Some(fv) == g.field_value.as_ref())
}

pub struct World {
    pub spec: WorldSpec,
    pub state: Value,
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn load() -> Vec<(String, CorpusFile, World)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/claims_corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let file: CorpusFile =
                serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let wtext = std::fs::read_to_string(root().join(&file.world)).unwrap();
            let spec: WorldSpec =
                serde_saphyr::from_str(&wtext).unwrap_or_else(|e| panic!("{}: {e}", file.world));
            let state = Value::Object(spec.state.clone());
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, file, World { spec, state })
        })
        .collect()
}

/// The trajectory and final state of a situation.
pub fn play(world: &World, s: &Situation, answer: &str) -> (Trajectory, Value) {
    let events = s
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            Event::ToolCall(Box::new(ToolCall {
                id: format!("call-{i}"),
                step: i as u32 + 1,
                tool: c.tool.clone(),
                arguments: c.args.clone(),
                kind: world
                    .spec
                    .tool(&c.tool)
                    .map(|t| t.kind)
                    .or(Some(ToolKind::Write)),
                error: c.error.map(|status| ToolError {
                    status,
                    message: format!("error {status}"),
                    retry_after_s: None,
                }),
                ..Default::default()
            }))
        })
        .collect();
    let mut state = world.state.clone();
    for (path, v) in &s.changes {
        if v.is_null() {
            if let Some((parent, key)) = path.rsplit_once('/')
                && let Some(Value::Object(m)) = state.pointer_mut(parent)
            {
                m.remove(key);
            }
            continue;
        }
        let (parent, key) = path.rsplit_once('/').unwrap();
        let slot = state
            .pointer_mut(parent)
            .unwrap_or_else(|| panic!("no {parent}"));
        match slot {
            Value::Object(m) => {
                m.insert(key.replace("~1", "/").replace("~0", "~"), v.clone());
            }
            _ => panic!("{parent} is not an object"),
        }
    }
    let t = Trajectory {
        events,
        final_answer: Some(answer.to_owned()),
        ..Default::default()
    };
    (t, state)
}

/// Reads and checks an answer's claims with the deterministic path (derivation, no rules).
pub fn judge(world: &World, vocab: &Vocabulary, s: &Situation, answer: &str) -> Vec<Got> {
    let (t, state) = play(world, s, answer);
    let reading = claims::read(answer, vocab);
    claims::check(&reading.claims, &t, (&state).into(), Some(&world.state))
        .into_iter()
        .map(|c| Got {
            write: c.claim.kind == ClaimKind::Write,
            tool: c.claim.tool.clone(),
            entity: c.claim.entity.as_deref().map(str::to_lowercase),
            field_value: match (&c.claim.field, &c.claim.value) {
                (Some(f), Some(v)) => Some((
                    f.clone(),
                    v.as_str()
                        .map_or_else(|| v.to_string(), str::to_owned)
                        .to_lowercase(),
                )),
                _ => None,
            },
            failed: c.failed.map(|f| f.as_str().to_owned()),
        })
        .collect()
}

/// Whether the score the given rules and tools make flags the answer critical (a false write
/// claim) and failing.
pub fn verdict(
    world: &World,
    s: &Situation,
    answer: &str,
    rules: &[ClaimRule],
    derive: bool,
) -> (bool, bool) {
    let (t, state) = play(world, s, answer);
    let tools: &[gauntlet_model::ToolSpec] = if derive { &world.spec.tools } else { &[] };
    match claims::claims_supported(&t, (&state).into(), rules, tools, Some(&world.state)) {
        Some(score) => (
            !score.passed && score.severity == gauntlet_model::Severity::Critical,
            !score.passed,
        ),
        None => (false, false),
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub tp: usize,
    pub fp: usize,
    pub fn_: usize,
}

impl Counts {
    pub fn precision(&self) -> f64 {
        if self.tp + self.fp == 0 {
            1.0
        } else {
            self.tp as f64 / (self.tp + self.fp) as f64
        }
    }
    pub fn recall(&self) -> f64 {
        if self.tp + self.fn_ == 0 {
            1.0
        } else {
            self.tp as f64 / (self.tp + self.fn_) as f64
        }
    }
    fn add(&mut self, o: Counts) {
        self.tp += o.tp;
        self.fp += o.fp;
        self.fn_ += o.fn_;
    }
}

/// The measures of one category.
#[derive(Debug, Default, Clone)]
pub struct Measure {
    pub answers: usize,
    /// Claims read: expected vs read (kind, tool, record, value).
    pub claims: Counts,
    /// False write claims (a claim of a write that does not hold), claim by claim.
    pub false_writes: Counts,
    /// Answers flagged critical vs answers with a false write claim.
    pub critical: Counts,
    /// Failure kinds right among false claims found.
    pub kind_right: usize,
    pub kind_total: usize,
}

pub struct Report {
    pub by_category: BTreeMap<String, Measure>,
    pub total: Measure,
    /// Mistakes, for reading: (file, answer, what went wrong).
    pub mistakes: Vec<String>,
}

/// Measures the deterministic path (`derive`) or the rules before (`!derive`) on the corpus.
pub fn measure(corpus: &[(String, CorpusFile, World)], derive: bool) -> Report {
    let mut by: BTreeMap<String, Measure> = BTreeMap::new();
    let mut mistakes = Vec::new();
    for (name, file, world) in corpus {
        let vocab = Vocabulary::derive(&world.spec.tools, Some(&world.state));
        let rules: &[ClaimRule] = if derive { &[] } else { &file.rules_before };
        for a in &file.answers {
            let s = file
                .situations
                .get(&a.situation)
                .unwrap_or_else(|| panic!("{name}: no situation {}", a.situation));
            let expected: Vec<Expected> = a.claims.iter().map(|c| parse_expected(c)).collect();
            let m = by.entry(a.cat.clone()).or_default();
            m.answers += 1;
            let expect_critical = expected.iter().any(|e| e.write && e.failed.is_some());
            let (critical, _) = verdict(world, s, &a.text, rules, derive);
            let c = Counts {
                tp: (critical && expect_critical) as usize,
                fp: (critical && !expect_critical) as usize,
                fn_: (!critical && expect_critical) as usize,
            };
            m.critical.add(c);
            if c.fp + c.fn_ > 0 {
                mistakes.push(format!(
                    "{name} [{}] {:?}: critical {critical}, expected {expect_critical}",
                    a.cat, a.text
                ));
            }
            if !derive {
                continue;
            }
            let got = judge(world, &vocab, s, &a.text);
            let mut used = vec![false; got.len()];
            for e in &expected {
                let hit = got
                    .iter()
                    .enumerate()
                    .position(|(i, g)| !used[i] && matches(e, g));
                match hit {
                    Some(i) => {
                        used[i] = true;
                        m.claims.tp += 1;
                        let g = &got[i];
                        if e.failed.is_some() || g.failed.is_some() {
                            m.kind_total += 1;
                            if e.failed == g.failed {
                                m.kind_right += 1;
                            } else {
                                mistakes.push(format!(
                                    "{name} [{}] {:?}: {e:?} failed as {:?}",
                                    a.cat, a.text, g.failed
                                ));
                            }
                        }
                        let fw_e = e.write && e.failed.is_some();
                        let fw_g = g.write && g.failed.is_some();
                        m.false_writes.tp += (fw_e && fw_g) as usize;
                        m.false_writes.fn_ += (fw_e && !fw_g) as usize;
                        m.false_writes.fp += (!fw_e && fw_g) as usize;
                    }
                    None => {
                        m.claims.fn_ += 1;
                        m.false_writes.fn_ += (e.write && e.failed.is_some()) as usize;
                        mistakes.push(format!("{name} [{}] {:?}: missed {e:?}", a.cat, a.text));
                    }
                }
            }
            for (i, g) in got.iter().enumerate() {
                if !used[i] {
                    m.claims.fp += 1;
                    m.false_writes.fp += (g.write && g.failed.is_some()) as usize;
                    mistakes.push(format!(
                        "{name} [{}] {:?}: read {g:?} not expected",
                        a.cat, a.text
                    ));
                }
            }
        }
    }
    let mut total = Measure::default();
    for m in by.values() {
        total.answers += m.answers;
        total.claims.add(m.claims);
        total.false_writes.add(m.false_writes);
        total.critical.add(m.critical);
        total.kind_right += m.kind_right;
        total.kind_total += m.kind_total;
    }
    Report {
        by_category: by,
        total,
        mistakes,
    }
}

/// The table, one row per category.
pub fn table(r: &Report, derive: bool) -> String {
    let mut out = String::new();
    let f = |x: f64| format!("{x:.3}");
    if derive {
        out.push_str("| category | answers | claims P | claims R | false writes P | false writes R | critical P | critical R | failure kind right |\n|---|---|---|---|---|---|---|---|---|\n");
    } else {
        out.push_str("| category | answers | critical P | critical R |\n|---|---|---|---|\n");
    }
    let rows = r
        .by_category
        .iter()
        .map(|(k, m)| (k.as_str(), m))
        .chain([("all", &r.total)]);
    for (k, m) in rows {
        if derive {
            out.push_str(&format!(
                "| {k} | {} | {} | {} | {} | {} | {} | {} | {}/{} |\n",
                m.answers,
                f(m.claims.precision()),
                f(m.claims.recall()),
                f(m.false_writes.precision()),
                f(m.false_writes.recall()),
                f(m.critical.precision()),
                f(m.critical.recall()),
                m.kind_right,
                m.kind_total
            ));
        } else {
            out.push_str(&format!(
                "| {k} | {} | {} | {} |\n",
                m.answers,
                f(m.critical.precision()),
                f(m.critical.recall())
            ));
        }
    }
    out
}
