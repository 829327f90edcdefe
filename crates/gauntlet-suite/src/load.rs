//! Loading and checking a whole suite.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gauntlet_model::matcher::state_expectations;
use gauntlet_model::{FaultKind, FaultSpec, Matcher, ToolKind, WorldSpec};
use gauntlet_verdict::{CompiledGate, CompiledRubric};
use gauntlet_world::{World, merge_state};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::{DatasetEntry, EvaluatorSource, RubricConfig, SuiteConfig};
use crate::dataset::{LoadedCase, load_cases};
use crate::diagnostic::Diagnostic;
use crate::document::{is_json, parse};
use crate::spans::{SpanIndex, dotted_to_pointer};

/// A world as loaded from its file.
pub struct LoadedWorld {
    /// The compiled world, shared by trials.
    pub world: Arc<World>,
    /// The file it came from.
    pub file: PathBuf,
    /// SHA-256 of the file's bytes.
    pub hash: String,
}

/// A suite that loaded and checked cleanly.
pub struct Suite {
    /// The suite folder.
    pub root: PathBuf,
    /// The configuration file.
    pub config_file: PathBuf,
    /// The configuration.
    pub config: SuiteConfig,
    /// SHA-256 of the configuration file.
    pub config_hash: String,
    /// Worlds by name.
    pub worlds: BTreeMap<String, LoadedWorld>,
    /// Cases in dataset order; every case's `world` is resolved.
    pub cases: Vec<LoadedCase>,
    /// SHA-256 over every case, in order.
    pub dataset_hash: String,
    /// Compiled gates, in configuration order.
    pub gates: Vec<CompiledGate>,
    /// The compiled rubric, if the suite has one.
    pub rubric: Option<CompiledRubric>,
}

use gauntlet_model::digest::sha256_hex;

const CONFIG_NAMES: [&str; 3] = ["gauntlet.yaml", "gauntlet.yml", "gauntlet.json"];

impl Suite {
    /// The suite's state folder (`SUITE/.gauntlet`): its runs, run index and judge cache.
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(".gauntlet")
    }

    /// Loads a suite from its folder (or its configuration file) and checks everything.
    pub fn load(path: &Path) -> Result<Suite, Vec<Diagnostic>> {
        let config_file = if path.is_dir() {
            match CONFIG_NAMES
                .iter()
                .map(|n| path.join(n))
                .find(|p| p.exists())
            {
                Some(p) => p,
                None => {
                    return Err(vec![Diagnostic::at(
                        path,
                        0,
                        0,
                        "no gauntlet.yaml in this folder (a suite folder holds gauntlet.yaml, worlds/ and cases/)",
                    )]);
                }
            }
        } else {
            path.to_owned()
        };
        let root = config_file.parent().unwrap_or(Path::new(".")).to_owned();
        let text = std::fs::read_to_string(&config_file).map_err(|e| {
            vec![Diagnostic::at(
                &config_file,
                0,
                0,
                format!("cannot read suite configuration: {e}"),
            )]
        })?;
        let doc = parse::<SuiteConfig>(&config_file, &text, is_json(&config_file), 0)
            .map_err(|d| vec![d])?;
        let config = doc.value;
        let config_spans = doc.spans;
        let mut problems = Vec::new();

        let gates = compile_gates(&config, &config_file, &config_spans, &mut problems);
        let rubric = compile_rubric(&config, &config_file, &config_spans, &mut problems);
        let before = problems.len();
        let worlds = load_worlds(&config, &root, &config_file, &config_spans, &mut problems);
        // A world that failed to load would make every case of it look wrong; say it once.
        let worlds_complete = problems.len() == before;

        let datasets = if config.datasets.is_empty() {
            vec![DatasetEntry {
                path: "cases".to_owned(),
                world: None,
            }]
        } else {
            config.datasets.clone()
        };
        if let Some(w) = &config.default_world
            && worlds_complete
            && !worlds.contains_key(w)
        {
            let (line, col) = config_spans.locate("/default_world");
            let known: Vec<&str> = worlds.keys().map(String::as_str).collect();
            problems.push(Diagnostic::at(
                &config_file,
                line,
                col,
                format!(
                    "unknown default_world `{w}` (the suite has: {})",
                    known.join(", ")
                ),
            ));
        }
        let default_world = config.default_world.clone().or_else(|| {
            (worlds.len() == 1)
                .then(|| worlds.keys().next().cloned())
                .flatten()
        });
        let mut cases = Vec::new();
        for (i, d) in datasets.iter().enumerate() {
            let dir = root.join(&d.path);
            if !dir.exists() {
                let (line, col) = config_spans.locate(&format!("/datasets/{i}/path"));
                problems.push(Diagnostic::at(
                    &config_file,
                    line,
                    col,
                    format!("dataset `{}` does not exist", dir.display()),
                ));
                continue;
            }
            let (loaded, p) = load_cases(&dir, d.world.as_deref().or(default_world.as_deref()));
            problems.extend(p);
            cases.extend(loaded);
        }
        if cases.is_empty() && problems.is_empty() {
            problems.push(Diagnostic::at(&config_file, 1, 1, "the suite has no cases"));
        }
        // Custom evaluators and judges give scores of names known only when they run.
        let open_names = !config.evaluators.is_empty() || !config.judges.is_empty();
        check_cases(&cases, &worlds, worlds_complete, open_names, &mut problems);
        check_fault_profiles(&config, &worlds, &config_file, &config_spans, &mut problems);
        check_config_attacks(&config, &worlds, &config_file, &config_spans, &mut problems);
        check_audit_accepts(&config, &cases, &config_file, &config_spans, &mut problems);
        for (i, e) in config.evaluators.iter().enumerate() {
            let at = |field: &str| config_spans.locate(&format!("/evaluators/{i}{field}"));
            let problem = match e.source() {
                Err(why) => Some((at(""), why.to_string())),
                Ok(EvaluatorSource::Script(file)) if !root.join(file).is_file() => Some((
                    at("/script"),
                    format!(
                        "evaluator `{}`: no script file {file} in the suite folder",
                        e.name
                    ),
                )),
                // Loaded now as a trial would load it: a syntax error or a missing function
                // would otherwise fail every trial.
                Ok(EvaluatorSource::Script(file)) => {
                    let function = e.function.as_deref().unwrap_or("evaluate");
                    std::fs::read_to_string(root.join(file))
                        .map_err(|err| format!("cannot read {file}: {err}"))
                        .and_then(|source| {
                            gauntlet_world::check_function(file, &source, function)
                                .map_err(|e| e.to_string())
                        })
                        .err()
                        .map(|why| {
                            let field = if why.contains("defines no function") {
                                "/function"
                            } else {
                                "/script"
                            };
                            (at(field), format!("evaluator `{}`: {why}", e.name))
                        })
                }
                _ => None,
            };
            if let Some(((line, col), message)) = problem {
                problems.push(Diagnostic::at(&config_file, line, col, message));
            }
        }
        if let Some(prompt) = &config.user_prompt
            && !prompt.contains("{persona}")
        {
            let (line, col) = config_spans.locate("/user_prompt");
            problems.push(Diagnostic::at(
                &config_file,
                line,
                col,
                "`user_prompt` needs `{persona}` where each case's persona goes",
            ));
        }
        let priced = |model: &str| config.priced(model);
        for (pointer, message) in gauntlet_model::judge::judge_problems(&config.judges, &priced) {
            let (line, col) = config_spans.locate(&pointer);
            problems.push(Diagnostic::at(&config_file, line, col, message));
        }
        if config.epochs == Some(0) {
            let (line, col) = config_spans.locate("/epochs");
            problems.push(Diagnostic::at(
                &config_file,
                line,
                col,
                "`epochs` must be at least 1",
            ));
        }

        if !problems.is_empty() {
            problems.sort();
            problems.dedup();
            return Err(problems);
        }
        let mut hasher = Sha256::new();
        for c in &cases {
            hasher.update(serde_json::to_vec(&c.case).unwrap_or_default());
            hasher.update(c.world.as_deref().unwrap_or_default());
        }
        let dataset_hash = gauntlet_model::digest::hex(&hasher.finalize());
        // Every path of a case in one spelling, the JSON Pointer, from here on (the hash above
        // is of the cases as written, so a run made before this is still resumable).
        let mut states: BTreeMap<&str, Value> = BTreeMap::new();
        for c in &mut cases {
            let Some(name) = c.world.as_deref() else {
                continue;
            };
            let Some((name, world)) = worlds.get_key_value(name) else {
                continue;
            };
            let state = states
                .entry(name.as_str())
                .or_insert_with(|| Value::Object(world.world.spec().state.clone()));
            c.case.normalize_paths(state);
        }
        Ok(Suite {
            root,
            config_hash: sha256_hex(text.as_bytes()),
            config_file,
            config,
            worlds,
            cases,
            dataset_hash,
            gates,
            rubric,
        })
    }

    /// The world a case runs in.
    pub fn world_of(&self, case: &LoadedCase) -> &LoadedWorld {
        // Resolved and checked at load time.
        &self.worlds[case.world.as_deref().unwrap_or_default()]
    }

    /// A case's initial state: the world's default state with the case's merged over it.
    pub fn initial_state(&self, case: &LoadedCase) -> Value {
        self.initial_state_of(case, &case.case)
    }

    /// The initial state of a loaded case played as `case` (the same case under a suite-wide
    /// attack): its world's state, the case's own merged over it, attacks placed.
    pub fn initial_state_of(&self, loaded: &LoadedCase, case: &gauntlet_model::Case) -> Value {
        let spec = self.world_of(loaded).world.spec();
        let mut state = Value::Object(spec.state.clone());
        merge_state(&mut state, &Value::Object(case.initial_state.clone()));
        // Attacker text (or each vector's default) at the `{NAME}` placeholders of the state;
        // an attack that cannot be rendered was reported when the suite was checked.
        if !spec.injection_vectors.is_empty()
            && let Ok(texts) =
                gauntlet_model::attack::vector_texts(&spec.injection_vectors, case.attack.as_ref())
        {
            gauntlet_model::attack::place_in_state(&mut state, &spec.injection_vectors, &texts);
        }
        state
    }
}

/// Why a case's `primary_metric` names no score its evaluators give: the built-in evaluators
/// are run on an empty trial of the case to learn the names it gets (fault verdicts, named
/// `fault_KIND`, depend on the trial and are always accepted).
fn unknown_primary_metric(case: &gauntlet_model::Case, metric: &str) -> Option<String> {
    if metric.starts_with("fault_") || metric == gauntlet_model::names::MODEL_FAULTS {
        return None;
    }
    let mut known: Vec<String> = gauntlet_eval::evaluate(
        case,
        &gauntlet_model::Trajectory::default(),
        &Value::Object(Default::default()),
    )
    .into_iter()
    .map(|s| s.name)
    .collect();
    known.sort();
    known.dedup();
    if known.iter().any(|k| k == metric) {
        return None;
    }
    let near = known
        .iter()
        .min_by_key(|k| strsim::levenshtein(k, metric))
        .map(|k| format!("; did you mean `{k}`?"))
        .unwrap_or_default();
    Some(format!(
        "unknown primary_metric `{metric}`: this case's evaluators give {}{near}",
        known.join(", ")
    ))
}

/// Why a case id could be mistaken for another: invisible characters (zero-width, bidi
/// controls, other format and control characters) or a form Unicode normalisation changes (an
/// NFD `é` beside an NFC one looks the same and is another id). Ids name trials in reports,
/// filters and comparisons; two that look alike must not be two.
fn confusable_id(id: &str) -> Option<String> {
    use unicode_general_category::{GeneralCategory, get_general_category};
    use unicode_normalization::UnicodeNormalization;
    if let Some(c) = id.chars().find(|c| {
        matches!(
            get_general_category(*c),
            GeneralCategory::Format | GeneralCategory::Control
        )
    }) {
        return Some(format!(
            "case id {id:?} holds the invisible character U+{:04X}: ids must read as they are (remove it)",
            u32::from(c)
        ));
    }
    let nfc: String = id.nfc().collect();
    (nfc != id).then(|| {
        format!(
            "case id {id:?} is not in Unicode NFC form: it looks like {nfc:?} and would be another id (write it as {nfc:?})"
        )
    })
}

fn compile_gates(
    config: &SuiteConfig,
    file: &Path,
    spans: &SpanIndex,
    problems: &mut Vec<Diagnostic>,
) -> Vec<CompiledGate> {
    let mut gates = Vec::new();
    let mut names = HashSet::new();
    for (i, g) in config.gates.iter().enumerate() {
        if !names.insert(g.name()) || g.name() == gauntlet_verdict::HARNESS_GATE {
            let (line, col) = spans.locate(&format!("/gates/{i}"));
            let why = if g.name() == gauntlet_verdict::HARNESS_GATE {
                format!(
                    "the gate name `{}` is the built-in gate on harness errors (set `max_error_rate` instead, or choose another name)",
                    g.name()
                )
            } else {
                format!(
                    "two gates are named `{}`: reports and JUnit tell gates apart by name (rename one)",
                    g.name()
                )
            };
            problems.push(Diagnostic::at(file, line, col, why));
        }
        match CompiledGate::compile(g) {
            Ok(c) => gates.push(c),
            Err(e) => {
                let (line, col) = spans.locate(&format!("/gates/{i}"));
                problems.push(Diagnostic::at(file, line, col, e.to_string()));
            }
        }
    }
    let max_error_rate = config.max_error_rate.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&max_error_rate) {
        let (line, col) = spans.locate("/max_error_rate");
        problems.push(Diagnostic::at(
            file,
            line,
            col,
            format!("max_error_rate must be a share of trials from 0 to 1, not {max_error_rate}"),
        ));
    } else {
        gates.push(gauntlet_verdict::harness_gate(max_error_rate));
    }
    gates
}

fn compile_rubric(
    config: &SuiteConfig,
    file: &Path,
    spans: &SpanIndex,
    problems: &mut Vec<Diagnostic>,
) -> Option<CompiledRubric> {
    let def = match config.rubric.as_ref()? {
        RubricConfig::Preset(name) => match gauntlet_model::rubric::preset(name) {
            Some(d) => d,
            None => {
                let (line, col) = spans.locate("/rubric");
                problems.push(Diagnostic::at(
                    file,
                    line,
                    col,
                    format!(
                        "unknown rubric preset `{name}` (presets: {}; or give name and dimensions)",
                        gauntlet_model::rubric::PRESETS.join(", ")
                    ),
                ));
                return None;
            }
        },
        RubricConfig::Custom(def) => def.clone(),
    };
    match CompiledRubric::compile(&def) {
        Ok(r) => Some(r),
        Err(e) => {
            let (line, col) = spans.locate("/rubric");
            problems.push(Diagnostic::at(file, line, col, format!("rubric: {e}")));
            None
        }
    }
}

fn load_worlds(
    config: &SuiteConfig,
    root: &Path,
    config_file: &Path,
    config_spans: &SpanIndex,
    problems: &mut Vec<Diagnostic>,
) -> BTreeMap<String, LoadedWorld> {
    let mut files: Vec<(PathBuf, Option<usize>)> = Vec::new();
    if config.worlds.is_empty() {
        let dir = root.join("worlds");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        found.retain(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| ["yaml", "yml", "json"].contains(&e))
        });
        found.sort();
        if found.is_empty() {
            problems.push(Diagnostic::at(
                config_file,
                1,
                1,
                format!(
                    "no worlds: list world files under `worlds:` or put them in {}",
                    dir.display()
                ),
            ));
        }
        files.extend(found.into_iter().map(|p| (p, None)));
    } else {
        files.extend(
            config
                .worlds
                .iter()
                .enumerate()
                .map(|(i, w)| (root.join(w), Some(i))),
        );
    }
    let mut worlds = BTreeMap::new();
    for (file, index) in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) => {
                let (line, col) =
                    index.map_or((0, 0), |i| config_spans.locate(&format!("/worlds/{i}")));
                problems.push(Diagnostic::at(
                    config_file,
                    line,
                    col,
                    format!("cannot read world file {}: {e}", file.display()),
                ));
                continue;
            }
        };
        if let Some((name, world)) =
            load_world_file(&file, &text, problems, &|n| worlds.contains_key(n))
        {
            worlds.insert(name, world);
        }
    }
    worlds
}

/// Parses and compiles one world file (its state file and script beside it); `taken` says
/// whether a world of that name is already loaded (a duplicate is a problem at `/name`).
fn load_world_file(
    file: &Path,
    text: &str,
    problems: &mut Vec<Diagnostic>,
    taken: &dyn Fn(&str) -> bool,
) -> Option<(String, LoadedWorld)> {
    let mut doc = match parse::<WorldSpec>(file, text, is_json(file), 0) {
        Ok(d) => d,
        Err(d) => {
            problems.push(d);
            return None;
        }
    };
    let name = doc.value.name.clone();
    if taken(&name) {
        let (line, col) = doc.spans.locate("/name");
        problems.push(Diagnostic::at(
            file,
            line,
            col,
            format!("world `{name}` is defined twice"),
        ));
        return None;
    }
    if let Some(rel) = doc.value.state_file.clone() {
        let path = file.parent().unwrap_or(Path::new(".")).join(&rel);
        let loaded = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read state file {}: {e}", path.display()))
            .and_then(|text| {
                serde_json::from_str::<serde_json::Value>(&text)
                    .map_err(|e| format!("state file {}: {e}", path.display()))
            })
            .and_then(|v| match v {
                serde_json::Value::Object(m) => Ok(m),
                _ => Err(format!(
                    "state file {} must hold a JSON object",
                    path.display()
                )),
            });
        match loaded {
            Ok(mut base) => {
                // Inline `state` wins over the file, key by key at the top level.
                base.extend(std::mem::take(&mut doc.value.state));
                doc.value.state = base;
            }
            Err(message) => {
                let (line, col) = doc.spans.locate("/state_file");
                problems.push(Diagnostic::at(file, line, col, message));
                return None;
            }
        }
    }
    // Claim rules: each pattern a regular expression the evaluator's engine takes that cannot
    // match empty text, each `$n` in `holds` a group of the pattern, each state condition a
    // valid expectation.
    for (i, rule) in doc.value.claims.iter().enumerate() {
        for p in gauntlet_eval::claims::rule_problems(rule) {
            let (line, col) = doc.spans.locate(&format!("/claims/{i}/{}", p.field));
            problems.push(Diagnostic::at(file, line, col, p.message));
        }
        if let Err(errors) =
            gauntlet_model::matcher::state_expectations(&Default::default(), &rule.holds)
        {
            let (line, col) = doc.spans.locate(&format!("/claims/{i}/holds"));
            for e in errors {
                problems.push(Diagnostic::at(
                    file,
                    line,
                    col,
                    format!("claim {}: `{}`: {}", i + 1, e.path, e.message),
                ));
            }
        }
    }
    // A service's fixture is found beside the world file; its content is part of the world's
    // version.
    let mut fixture_hash = String::new();
    if let Some(rel) = doc
        .value
        .service
        .as_ref()
        .and_then(|svc| svc.fixture.clone())
    {
        let path = file.parent().unwrap_or(Path::new(".")).join(&rel);
        if !path.exists() {
            let (line, col) = doc.spans.locate("/service/fixture");
            problems.push(Diagnostic::at(
                file,
                line,
                col,
                format!("the fixture {} does not exist", path.display()),
            ));
            return None;
        }
        let absolute = path.canonicalize().unwrap_or(path);
        fixture_hash = fixture_digest(&absolute);
        if let Some(svc) = doc.value.service.as_mut() {
            svc.fixture = Some(absolute.display().to_string());
        }
    }
    let script = match &doc.value.script {
        None => None,
        Some(rel) => {
            let path = file.parent().unwrap_or(Path::new(".")).join(rel);
            match std::fs::read_to_string(&path) {
                Ok(source) => Some(gauntlet_world::ScriptSource {
                    file: path.display().to_string(),
                    source,
                }),
                Err(e) => {
                    let (line, col) = doc.spans.locate("/script");
                    problems.push(Diagnostic::at(
                        file,
                        line,
                        col,
                        format!("cannot read script {}: {e}", path.display()),
                    ));
                    return None;
                }
            }
        }
    };
    let script_text = script
        .as_ref()
        .map(|s| s.source.clone())
        .unwrap_or_default();
    match World::compile_with(doc.value, script) {
        Ok(world) => Some((
            name,
            LoadedWorld {
                world: Arc::new(world),
                file: file.to_path_buf(),
                hash: sha256_hex(format!("{text}{script_text}{fixture_hash}").as_bytes()),
            },
        )),
        Err(errors) => {
            for e in errors {
                let (line, col) = doc.spans.locate(&e.field);
                problems.push(Diagnostic::at(file, line, col, e.message));
            }
            None
        }
    }
}

/// SHA-256 of a fixture folder's paths and contents (a world's version changes with it).
fn fixture_digest(dir: &Path) -> String {
    let mut h = Sha256::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    if dir.is_file() {
        stack.clear();
        files.push(dir.to_path_buf());
    }
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    for f in files {
        h.update(
            f.strip_prefix(dir)
                .unwrap_or(&f)
                .to_string_lossy()
                .as_bytes(),
        );
        h.update([0]);
        h.update(std::fs::read(&f).unwrap_or_default());
        h.update([0]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads and compiles one world file outside a suite (a shadow proxy's world responder).
pub fn load_world(path: &Path) -> Result<LoadedWorld, Vec<Diagnostic>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![Diagnostic::at(
            path,
            0,
            0,
            format!("cannot read the world file: {e}"),
        )]
    })?;
    let mut problems = Vec::new();
    match load_world_file(path, &text, &mut problems, &|_| false) {
        Some((_, world)) if problems.is_empty() => Ok(world),
        _ => Err(problems),
    }
}

fn check_cases(
    cases: &[LoadedCase],
    worlds: &BTreeMap<String, LoadedWorld>,
    worlds_complete: bool,
    open_names: bool,
    problems: &mut Vec<Diagnostic>,
) {
    let mut ids = HashSet::new();
    let mut world_states: BTreeMap<String, Value> = BTreeMap::new();
    for lc in cases {
        let case = &lc.case;
        if !ids.insert(case.case_id.clone()) {
            problems.push(lc.diagnostic(
                "/case_id",
                format!("case id `{}` is used twice", case.case_id),
            ));
        }
        if let Some(why) = confusable_id(&case.case_id) {
            problems.push(lc.diagnostic("/case_id", why));
        }
        if let Some(metric) = &case.primary_metric
            && !open_names
            && let Some(why) = unknown_primary_metric(case, metric)
        {
            problems.push(lc.diagnostic("/primary_metric", why));
        }
        let persona = case.user.as_ref().is_some_and(|u| u.persona.is_some());
        if case.user_input.trim().is_empty() && !persona {
            problems.push(lc.diagnostic(
                "",
                "the case has no `user_input`: give one, or a `user.persona` that opens the conversation",
            ));
        }
        if let Some(user) = case.user.as_ref().filter(|u| u.persona.is_some()) {
            for (field, set) in [
                ("confirm", user.confirm.is_some()),
                ("default", user.default.is_some()),
            ] {
                if set {
                    problems.push(lc.diagnostic(
                        &format!("/user/{field}"),
                        format!("`user.{field}` is never used: the persona answers what no reply matches (drop one of the two)"),
                    ));
                }
            }
        }
        let Some(world_name) = &lc.world else {
            problems.push(lc.diagnostic(
                "",
                "the case names no world: add `world:` to it, to its dataset in gauntlet.yaml, or set `default_world`",
            ));
            continue;
        };
        let Some(world) = worlds.get(world_name) else {
            if worlds_complete {
                let known: Vec<&str> = worlds.keys().map(String::as_str).collect();
                problems.push(lc.diagnostic(
                    "/world",
                    format!(
                        "unknown world `{world_name}` (the suite has: {})",
                        known.join(", ")
                    ),
                ));
            }
            continue;
        };
        let world = &world.world;
        if world.spec().service.is_some() && !case.initial_state.is_empty() {
            problems.push(lc.diagnostic(
                "/initial_state",
                format!(
                    "world `{world_name}` is a real service, whose state is its fixture: put the case's starting state in the fixture (or a world of its own), not in `initial_state`"
                ),
            ));
        }
        for (field, tool) in case.mentioned_tools() {
            if !world.has_tool(tool) {
                problems.push(lc.diagnostic(
                    &dotted_to_pointer(&field),
                    format!(
                        "`{field}` names tool `{tool}`, which world `{world_name}` does not have (it has: {})",
                        world.spec().tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        attack_problems(case, world.spec(), world_name, lc, problems);
        for (i, c) in case.checkpoints.iter().enumerate() {
            if let Some(p) = c.after.problem() {
                problems.push(lc.diagnostic(&format!("/checkpoints/{i}/after"), p));
            }
            if c.expect.is_empty() {
                problems.push(lc.diagnostic(
                    &format!("/checkpoints/{i}/expect"),
                    "a checkpoint needs at least one path to expect",
                ));
            }
            for (path, want) in &c.expect {
                if let Err(e) = Matcher::from_json(want) {
                    problems.push(lc.diagnostic(
                        &format!("/checkpoints/{i}/expect"),
                        format!("`{path}`: {e}"),
                    ));
                }
            }
        }
        let scripts = std::iter::once((
            "reference_trajectory".to_owned(),
            &case.reference_trajectory,
        ))
        .chain(
            case.scripts
                .iter()
                .map(|(n, s)| (format!("scripts.{n}"), s)),
        );
        for (field, steps) in scripts {
            for (i, step) in steps.iter().enumerate() {
                let at = format!("{}/{i}", dotted_to_pointer(&field));
                if step.action_count() != 1 {
                    problems.push(lc.diagnostic(
                        &at,
                        "a step needs exactly one of `tool`, `confirm`, `ask`, `say`, `answer`",
                    ));
                    continue;
                }
                if let Some(tool) = &step.tool
                    && world.has_tool(tool)
                {
                    let args = step
                        .args
                        .clone()
                        .unwrap_or(Value::Object(Default::default()));
                    if let Err(errs) = world.validate_arguments(tool, &args) {
                        problems.push(lc.diagnostic(
                            &format!("{at}/args"),
                            format!(
                                "arguments of `{tool}` do not match its schema: {}",
                                errs.join("; ")
                            ),
                        ));
                    }
                }
            }
        }
        // `output_regex` patterns are checked here, not first when an answer fails to match.
        if let Some(value) = case.expected_outcome.get("output_regex") {
            let patterns: Vec<&str> = match value {
                Value::String(s) => vec![s.as_str()],
                Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            for re in patterns {
                // The regex crate is the evaluator's engine; check with the same one.
                if let Err(err) = gauntlet_eval::check_regex(re) {
                    problems.push(lc.diagnostic(
                        "/expected_outcome/output_regex",
                        format!("invalid regular expression `{re}`: {err}"),
                    ));
                }
            }
        }
        match state_expectations(&case.expected_final_state, &case.expected_outcome) {
            Ok(expectations) => {
                for e in expectations {
                    if let Matcher::Regex(re) = &e.matcher
                        && let Err(err) = gauntlet_eval::check_regex(re)
                    {
                        problems.push(lc.diagnostic(
                            &format!(
                                "/expected_outcome/{}",
                                gauntlet_model::path::escape_segment(&e.path)
                            ),
                            format!("invalid regular expression: {err}"),
                        ));
                    }
                }
            }
            Err(errors) => {
                for e in errors {
                    problems.push(lc.diagnostic(
                        &format!(
                            "/expected_outcome/{}",
                            gauntlet_model::path::escape_segment(&e.path)
                        ),
                        e.message,
                    ));
                }
            }
        }
        let world_state = world_states
            .entry(world_name.clone())
            .or_insert_with(|| Value::Object(world.spec().state.clone()));
        for (field, key, message) in state_path_problems(case, world.spec(), world_state) {
            problems.push(lc.diagnostic(
                &format!("/{field}/{}", gauntlet_model::path::escape_segment(&key)),
                message,
            ));
        }
        for (i, f) in case.faults.iter().enumerate() {
            let kind = f
                .tool
                .as_deref()
                .and_then(|t| world.spec().tool(t))
                .map(|t| t.kind);
            for (field, message) in fault_problems(f, kind) {
                problems.push(lc.diagnostic(&format!("/faults/{i}{field}"), message));
            }
        }
        for key in [
            "confirmation_required",
            "question_required",
            "state_unchanged_elsewhere",
        ] {
            if let Some(v) = case.expected_outcome.get(key)
                && !v.is_boolean()
            {
                problems.push(lc.diagnostic(
                    &format!("/expected_outcome/{key}"),
                    format!("`{key}` takes true or false"),
                ));
            }
        }
    }
}

/// Expectations no trial of the world can meet, as (field, key as written, message): a path
/// into a collection the state does not have and no tool writes (`/ticket/...` where the state
/// has `tickets`), and a literal no tool can write at its path (`in-progress` where the tool's
/// parameter takes `open, in_progress, resolved, closed`). Only declarative handlers are read:
/// a world whose tools run JavaScript or a real service may write anything.
fn state_path_problems(
    case: &gauntlet_model::Case,
    world: &WorldSpec,
    world_state: &Value,
) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    if world.service.is_some() {
        return out;
    }
    let writers: Vec<&gauntlet_model::ToolSpec> = world
        .tools
        .iter()
        .filter(|t| t.kind == ToolKind::Write)
        .collect();
    // A write tool without a declarative handler runs the world's script: anything goes.
    let opaque = writers.iter().any(|t| t.handler.is_empty());
    let case_state = Value::Object(case.initial_state.clone());
    let layers = [&case_state, world_state];
    let fields = [
        ("expected_outcome", &case.expected_outcome),
        ("expected_final_state", &case.expected_final_state),
    ];
    for (field, map) in fields {
        // Two spellings of one path would be one key once the suite is loaded.
        let mut seen: BTreeMap<String, &String> = BTreeMap::new();
        for key in map.keys() {
            if gauntlet_model::ReservedKey::parse(key).is_some() && field == "expected_outcome" {
                continue;
            }
            let pointer = gauntlet_model::path::to_pointer(&layers, key);
            if let Some(first) = seen.insert(pointer.clone(), key) {
                out.push((
                    field,
                    key.clone(),
                    format!("`{key}` and `{first}` are the same path ({pointer}): keep one"),
                ));
            }
        }
        for (key, want) in map {
            if gauntlet_model::ReservedKey::parse(key).is_some() && field == "expected_outcome" {
                continue;
            }
            let matcher = if field == "expected_final_state" {
                Matcher::Equals(want.clone())
            } else {
                match Matcher::from_json(want) {
                    Ok(m) => m,
                    Err(_) => continue,
                }
            };
            if matches!(matcher, Matcher::Absent) || opaque {
                continue;
            }
            let pointer = gauntlet_model::path::to_pointer(&layers, key);
            let Some(segments) = gauntlet_model::path::pointer_segments(&pointer) else {
                continue;
            };
            let Some(collection) = segments.first() else {
                continue;
            };
            let in_state = layers.iter().any(|l| l.get(collection).is_some());
            let written = writers.iter().flat_map(|t| &t.handler).any(|op| {
                op.path().is_some_and(|p| {
                    gauntlet_model::path::pointer_segments(p)
                        .and_then(|s| s.into_iter().next())
                        .is_some_and(|first| first == *collection || is_template(&first))
                })
            });
            if !in_state && !written {
                let mut names: Vec<&str> = world.state.keys().map(String::as_str).collect();
                names.sort_unstable();
                let hint = names
                    .iter()
                    .min_by_key(|n| strsim::levenshtein(n, collection))
                    .filter(|n| strsim::levenshtein(n, collection) <= 3)
                    .map(|n| format!("did you mean `{n}`? "))
                    .unwrap_or_default();
                out.push((
                    field,
                    key.clone(),
                    format!(
                        "`{key}`: the world's state has no `{collection}` and no tool writes one ({hint}the state has: {})",
                        names.join(", ")
                    ),
                ));
                continue;
            }
            let Matcher::Equals(literal) = &matcher else {
                continue;
            };
            if let Some(message) =
                unwritable_literal(&writers, &layers, &pointer, &segments, literal)
            {
                out.push((field, key.clone(), format!("`{key}`: {message}")));
            }
        }
    }
    out
}

/// Whether a path segment is a handler's `{argument}` placeholder.
fn is_template(segment: &str) -> bool {
    segment.starts_with('{') && segment.ends_with('}')
}

/// Why `literal` can never be at `pointer`: every declarative write there takes it from a
/// parameter with an `enum` (or writes a constant) and none allows it, nor was it there at the
/// start. `None` when some write could put it there, or when what a write puts there is unknown.
fn unwritable_literal(
    writers: &[&gauntlet_model::ToolSpec],
    layers: &[&Value],
    pointer: &str,
    segments: &[String],
    literal: &Value,
) -> Option<String> {
    use gauntlet_model::HandlerOp;
    let matches_path = |template: &str, len: usize| {
        gauntlet_model::path::pointer_segments(template).is_some_and(|t| {
            t.len() == len
                && t.iter()
                    .zip(segments)
                    .all(|(t, s)| is_template(t) || t == s)
        })
    };
    // Each writer's allowed values, named for the message.
    let mut allowed: Vec<(String, Vec<Value>)> = Vec::new();
    for tool in writers {
        for op in &tool.handler {
            let value = match op {
                HandlerOp::Set { path, value } if matches_path(path, segments.len()) => value,
                HandlerOp::Merge { path, value } if matches_path(path, segments.len() - 1) => {
                    match value.get(segments.last()?) {
                        Some(v) => v,
                        None => continue,
                    }
                }
                // A write of a whole record (or more) above the path: its fields are unknown.
                HandlerOp::Set { path, .. }
                | HandlerOp::Merge { path, .. }
                | HandlerOp::Append { path, .. }
                    if gauntlet_model::path::pointer_segments(path).is_some_and(|t| {
                        t.len() < segments.len()
                            && t.iter()
                                .zip(segments)
                                .all(|(t, s)| is_template(t) || t == s)
                    }) =>
                {
                    return None;
                }
                _ => continue,
            };
            match value {
                Value::String(t) if is_template(t) => {
                    let param = &t[1..t.len() - 1];
                    let values = tool
                        .parameters
                        .pointer(&format!(
                            "/properties/{}/enum",
                            gauntlet_model::path::escape_segment(param)
                        ))
                        .and_then(Value::as_array)?;
                    allowed.push((format!("`{}`'s `{param}`", tool.name), values.clone()));
                }
                Value::String(t) if t.contains('{') => return None,
                constant => allowed.push((format!("`{}`", tool.name), vec![constant.clone()])),
            }
        }
    }
    if allowed.is_empty() {
        return None;
    }
    let same = |a: &Value| gauntlet_model::path::json_eq(a, literal);
    let at_start = layers
        .iter()
        .find_map(|l| l.pointer(pointer))
        .is_some_and(same);
    if at_start || allowed.iter().any(|(_, vs)| vs.iter().any(same)) {
        return None;
    }
    let takes = allowed
        .iter()
        .map(|(who, vs)| {
            let vs: Vec<String> = vs
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect();
            if vs.len() == 1 {
                format!("{who} writes {}", vs[0])
            } else {
                format!("{who} is one of {}", vs.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(format!(
        "expects {literal}, which no tool can write there ({takes})"
    ))
}

/// Problems with one fault rule; `tool_kind` is the kind of the tool it names, when known.
fn fault_problems(f: &FaultSpec, tool_kind: Option<ToolKind>) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(p) = f.probability
        && !(0.0..=1.0).contains(&p)
    {
        out.push((
            "/probability",
            format!("probability must be between 0 and 1, not {p}"),
        ));
    }
    if f.retry_after_s.is_some() && f.kind != FaultKind::RateLimited {
        out.push((
            "/retry_after_s",
            "retry_after_s applies to rate_limited faults only".to_owned(),
        ));
    }
    let kind = tool_kind.or(f.on);
    if f.kind == FaultKind::LostResponse && kind == Some(ToolKind::Read) {
        out.push((
            "/kind",
            "a lost response needs a write (a read has no effect to apply)".to_owned(),
        ));
    }
    if f.calls.contains(&0) {
        out.push(("/calls", "call numbers start at 1".to_owned()));
    }
    if f.model {
        if f.tool.is_some() || f.on.is_some() {
            out.push((
                "/model",
                "a model-call fault names no `tool` and no `on`: it hits the agent's model calls"
                    .to_owned(),
            ));
        }
        if !matches!(
            f.kind,
            FaultKind::Timeout | FaultKind::RateLimited | FaultKind::Unavailable
        ) {
            out.push((
                "/kind",
                "a model call can only time out, be rate limited or be unavailable".to_owned(),
            ));
        }
    }
    out
}

fn check_fault_profiles(
    config: &SuiteConfig,
    worlds: &BTreeMap<String, LoadedWorld>,
    file: &Path,
    spans: &SpanIndex,
    problems: &mut Vec<Diagnostic>,
) {
    for (name, rules) in &config.fault_profiles {
        for (i, f) in rules.iter().enumerate() {
            let at = format!(
                "/fault_profiles/{}/{i}",
                gauntlet_model::path::escape_segment(name)
            );
            let mut kind = None;
            if let Some(tool) = &f.tool {
                match worlds.values().find_map(|w| w.world.spec().tool(tool)) {
                    Some(t) => kind = Some(t.kind),
                    None => {
                        let (line, col) = spans.locate(&format!("{at}/tool"));
                        problems.push(Diagnostic::at(
                            file,
                            line,
                            col,
                            format!("no world has tool `{tool}`"),
                        ));
                    }
                }
            }
            for (field, message) in fault_problems(f, kind) {
                let (line, col) = spans.locate(&format!("{at}{field}"));
                problems.push(Diagnostic::at(file, line, col, message));
            }
        }
    }
    if let Some(p) = &config.fault_profile
        && !config.fault_profiles.contains_key(p)
    {
        let (line, col) = spans.locate("/fault_profile");
        problems.push(Diagnostic::at(
            file,
            line,
            col,
            format!("no fault profile `{p}` under fault_profiles"),
        ));
    }
}

/// The audit's accepted survivors, each at its line: a `why` and a case of the suite.
fn check_audit_accepts(
    config: &SuiteConfig,
    cases: &[LoadedCase],
    file: &Path,
    spans: &SpanIndex,
    problems: &mut Vec<Diagnostic>,
) {
    let ids: std::collections::BTreeSet<&str> =
        cases.iter().map(|c| c.case.case_id.as_str()).collect();
    for (pointer, message) in config.audit.problems(&ids) {
        let (line, col) = spans.locate(&pointer);
        problems.push(Diagnostic::at(file, line, col, message));
    }
}

/// The part of a gates file `gauntlet gate --gates` reads: a file of its own with a `gates:`
/// list, or a suite's `gauntlet.yaml` (whose other keys are the suite's business).
#[derive(serde::Deserialize)]
struct GatesFile {
    gates: Vec<gauntlet_verdict::GateSpec>,
    #[serde(default)]
    max_error_rate: Option<f64>,
}

/// Reads and compiles a file holding a `gates:` list, or a suite's `gauntlet.yaml`, for
/// `gauntlet gate --gates FILE`; the built-in gate on harness errors comes last, as in a suite.
pub fn load_gates_file(path: &Path) -> Result<Vec<CompiledGate>, Vec<Diagnostic>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![Diagnostic::at(
            path,
            0,
            0,
            format!("cannot read gates file: {e}"),
        )]
    })?;
    let doc = parse::<GatesFile>(path, &text, is_json(path), 0).map_err(|d| vec![d])?;
    let mut problems = Vec::new();
    let config = SuiteConfig {
        name: String::new(),
        description: None,
        agent: None,
        seed: None,
        epochs: None,
        worlds: Vec::new(),
        default_world: None,
        datasets: Vec::new(),
        gates: doc.value.gates,
        max_error_rate: doc.value.max_error_rate,
        rubric: None,
        fault_profiles: Default::default(),
        fault_profile: None,
        attacks: Default::default(),
        evaluators: Vec::new(),
        judges: Vec::new(),
        gateway: None,
        system_prompt: None,
        user_model: None,
        user_prompt: None,
        max_steps: None,
        benchmark: None,
        audit: Default::default(),
    };
    let gates = compile_gates(&config, path, &doc.spans, &mut problems);
    if problems.is_empty() {
        Ok(gates)
    } else {
        Err(problems)
    }
}

/// What is wrong with a case's attack and utility check: vectors the world lacks, an attack
/// without a template, matchers and CEL expressions that do not parse.
fn attack_problems(
    case: &gauntlet_model::Case,
    world: &gauntlet_model::WorldSpec,
    world_name: &str,
    lc: &LoadedCase,
    problems: &mut Vec<Diagnostic>,
) {
    let known: Vec<&str> = world.injection_vectors.keys().map(String::as_str).collect();
    let found = attack_checks(
        case.attack.as_ref(),
        case.utility.as_ref(),
        &|v| world.injection_vectors.contains_key(v),
        &format!("world `{world_name}`"),
        &known,
    );
    for (at, message) in found {
        problems.push(lc.diagnostic(&at, message));
    }
}

/// The problems of an attack and a utility predicate, as (JSON pointer below the attack's
/// parent, message). `has_vector` says whether `whose` vectors include a name.
fn attack_checks(
    attack: Option<&gauntlet_model::Attack>,
    utility: Option<&gauntlet_model::Predicate>,
    has_vector: &dyn Fn(&str) -> bool,
    whose: &str,
    known: &[&str],
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(a) = attack {
        for (i, v) in a.vectors.iter().enumerate() {
            if !has_vector(v) {
                out.push((
                    format!("/attack/vectors/{i}"),
                    format!(
                        "`attack.vectors[{i}]` names vector `{v}`, which {whose} does not declare (it has: {})",
                        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                    ),
                ));
            }
        }
        if let Err(e) = gauntlet_model::attack::render_attack(a) {
            out.push(("/attack/name".to_owned(), e.to_string()));
        }
        if a.success.is_empty() {
            out.push((
                "/attack/success".to_owned(),
                "`attack.success` needs at least one of `state`, `calls`, `leaks`, `cel`: the attacker's goal is judged by its effect".to_owned(),
            ));
        }
    }
    let predicates = [
        ("/utility", utility),
        ("/attack/success", attack.map(|a| &a.success)),
    ];
    for (at, p) in predicates {
        let Some(p) = p else { continue };
        for (path, want) in &p.state {
            if let Err(e) = gauntlet_model::Matcher::from_json(want) {
                out.push((format!("{at}/state"), format!("`{path}`: {e}")));
            }
        }
        if let Some(expr) = &p.cel
            && let Err(e) = gauntlet_eval::attack::check_cel(expr)
        {
            out.push((format!("{at}/cel"), format!("CEL does not parse: {e}")));
        }
    }
    out
}

/// The suite's `attacks` (for `--attack`): each must render, judge its goal, and name vectors
/// some world declares.
fn check_config_attacks(
    config: &SuiteConfig,
    worlds: &BTreeMap<String, LoadedWorld>,
    file: &Path,
    spans: &SpanIndex,
    problems: &mut Vec<Diagnostic>,
) {
    let mut known: Vec<&str> = worlds
        .values()
        .flat_map(|w| w.world.spec().injection_vectors.keys().map(String::as_str))
        .collect();
    known.sort_unstable();
    known.dedup();
    for (name, attack) in &config.attacks {
        let mut attack = attack.clone();
        if attack.name.is_empty() {
            attack.name = name.clone();
        }
        let found = attack_checks(
            Some(&attack),
            None,
            &|v| known.contains(&v),
            "no world of the suite",
            &known,
        );
        for (at, message) in found {
            let pointer = format!("/attacks/{name}{}", at.trim_start_matches("/attack"));
            let (line, col) = spans.locate(&pointer);
            problems.push(Diagnostic::at(
                file,
                line,
                col,
                format!("attack `{name}`: {message}"),
            ));
        }
    }
}

/// Reads one YAML or JSON file (by extension) into a typed value, every problem as
/// `file:line:col: message` (for files outside a suite, such as `gauntlet shadow --config`).
pub fn load_document<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, Vec<Diagnostic>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![Diagnostic::at(
            path,
            0,
            0,
            format!("cannot read the file: {e}"),
        )]
    })?;
    parse::<T>(path, &text, is_json(path), 0)
        .map(|d| d.value)
        .map_err(|d| vec![d])
}
