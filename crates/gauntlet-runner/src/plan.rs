//! Planning a run: from a suite, the user's options and (when resuming) the stored header, to
//! the run's settings, its header and its trials in plan order. `run`, `--resume`, `--shard`,
//! `merge` and `serve` all plan through here, so the same options always give the same trials.
//!
//! Precedence: a resumed run keeps everything it started with; a new run takes the options,
//! then the suite's configuration, then the defaults.

use std::collections::HashMap;
use std::sync::Arc;

use gauntlet_model::digest::sha256_hex;
use gauntlet_model::{RunHeader, Shard, Versions};
use gauntlet_suite::{EvaluatorSource, LoadedCase, Suite};
use gauntlet_world::{FaultPlan, FaultRule};
use serde_json::Value;

pub use crate::error::PlanError;

use crate::ids::{trace_id, trial_seed};
use crate::run::TrialPlan;
use gauntlet_scoring::CustomEvaluators;
use gauntlet_scoring::{CustomEvaluator, CustomKind};

/// The most trials a run may plan: refused up front, before anything is allocated for them.
pub const MAX_TRIALS: u64 = 10_000_000;

/// The agent a run plays when neither the options nor the suite name one.
pub const DEFAULT_AGENT: &str = "script:reference";

/// What the user asked for on the command line; `None` defers to the suite.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `--agent`.
    pub agent: Option<String>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--epochs`.
    pub epochs: Option<u32>,
    /// `--filter`: only cases whose id contains it.
    pub filter: Option<String>,
    /// `--faults`: a fault profile of the suite, or `none`.
    pub faults: Option<String>,
    /// `--attack`: one of the suite's attacks, placed in every case.
    pub attack: Option<String>,
    /// `--shard I/N`.
    pub shard: Option<Shard>,
    /// `--run-id`.
    pub run_id: Option<String>,
    /// `--name`: what the run is called besides its id.
    pub name: Option<String>,
}

/// A run's settings, resolved once: what its header records and its trials follow.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The agent spec (`script:reference`, `cmd:...`, ...).
    pub agent: String,
    /// The run seed.
    pub seed: u64,
    /// Repetitions per case.
    pub epochs: u32,
    /// The case filter.
    pub filter: Option<String>,
    /// The fault profile's name.
    pub fault_profile: Option<String>,
    /// Its rules.
    pub profile_rules: Vec<FaultRule>,
    /// The suite-wide attack (`--attack`) and its definition, named by its key.
    pub attack: Option<(String, gauntlet_model::Attack)>,
    /// The run id.
    pub run_id: String,
    /// When the run started (RFC 3339).
    pub started_at: String,
    /// The part of a sharded run.
    pub shard: Option<Shard>,
    /// The run's name (`--name`).
    pub name: Option<String>,
}

impl Settings {
    /// Resolves the settings: `resumed`'s when resuming, else the options', else the suite's.
    /// `now` and `new_run_id` give the start time and a fresh run id (the caller's clock).
    pub fn resolve(
        suite: &Suite,
        options: &RunOptions,
        resumed: Option<&RunHeader>,
        now: impl FnOnce() -> String,
        new_run_id: impl FnOnce() -> String,
    ) -> Result<Settings, PlanError> {
        let cfg = &suite.config;
        let agent = resumed.map(|h| h.agent.clone()).unwrap_or_else(|| {
            options
                .agent
                .clone()
                .or_else(|| cfg.agent.clone())
                .unwrap_or_else(|| DEFAULT_AGENT.to_owned())
        });
        let seed = resumed.map_or_else(|| options.seed.or(cfg.seed).unwrap_or(0), |h| h.seed);
        let epochs =
            resumed.map_or_else(|| options.epochs.or(cfg.epochs).unwrap_or(1), |h| h.epochs);
        if epochs == 0 {
            return Err(PlanError::NoEpochs);
        }
        let filter = resumed.map_or_else(|| options.filter.clone(), |h| h.filter.clone());
        let fault_profile = match (resumed, options.faults.as_deref()) {
            (Some(h), _) => h.fault_profile.clone(),
            (None, Some("none")) => None,
            (None, Some(name)) => Some(name.to_owned()),
            (None, None) => cfg.fault_profile.clone(),
        };
        let profile_rules = match &fault_profile {
            None => Vec::new(),
            Some(name) => match cfg.fault_profiles.get(name) {
                Some(rules) => rules
                    .iter()
                    .map(|spec| FaultRule {
                        spec: spec.clone(),
                        source: format!("profile:{name}"),
                    })
                    .collect(),
                None => {
                    return Err(PlanError::UnknownFaultProfile {
                        name: name.clone(),
                        file: suite.config_file.display().to_string(),
                        known: names_or_none(cfg.fault_profiles.keys()),
                    });
                }
            },
        };
        let attack = match resumed.map_or(options.attack.as_deref(), |h| h.attack.as_deref()) {
            None => None,
            Some(name) => match cfg.attacks.get(name) {
                Some(a) => {
                    let mut a = a.clone();
                    if a.name.is_empty() {
                        a.name = name.to_owned();
                    }
                    Some((name.to_owned(), a))
                }
                None => {
                    return Err(PlanError::UnknownAttack {
                        name: name.to_owned(),
                        file: suite.config_file.display().to_string(),
                        known: names_or_none(cfg.attacks.keys()),
                    });
                }
            },
        };
        // `.` and `..` are made of allowed characters but name the runs folder or its parent.
        if let Some(id) = &options.run_id
            && (id.is_empty()
                || id.chars().all(|c| c == '.')
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        {
            return Err(PlanError::BadRunId(id.clone()));
        }
        if let Some(name) = &options.name
            && !gauntlet_model::run::is_run_name(name)
        {
            return Err(PlanError::BadRunName(name.clone()));
        }
        Ok(Settings {
            agent,
            seed,
            epochs,
            filter,
            fault_profile,
            profile_rules,
            attack,
            run_id: resumed.map_or_else(
                || options.run_id.clone().unwrap_or_else(new_run_id),
                |h| h.run_id.clone(),
            ),
            started_at: resumed.map_or_else(now, |h| h.started_at.clone()),
            shard: resumed.map_or(options.shard, |h| h.shard),
            name: resumed.map_or_else(|| options.name.clone(), |h| h.name.clone()),
        })
    }

    /// The suite's cases the filter keeps, in dataset order.
    pub fn cases<'s>(&self, suite: &'s Suite) -> Result<Vec<&'s LoadedCase>, PlanError> {
        let cases: Vec<&LoadedCase> = suite
            .cases
            .iter()
            .filter(|c| {
                self.filter
                    .as_deref()
                    .is_none_or(|f| c.case.case_id.contains(f))
            })
            .collect();
        if cases.is_empty() {
            return Err(PlanError::NoCaseMatches(
                self.filter.clone().unwrap_or_default(),
            ));
        }
        let trials = cases.len() as u64 * u64::from(self.epochs);
        if trials > MAX_TRIALS {
            return Err(PlanError::TooManyTrials {
                trials,
                cases: cases.len(),
                epochs: self.epochs,
                max: MAX_TRIALS,
            });
        }
        Ok(cases)
    }

    /// The run's header: the settings and the versions of everything it depends on.
    pub fn header(&self, suite: &Suite) -> RunHeader {
        let mut header = RunHeader::new(
            &self.run_id,
            &suite.config.name,
            &self.agent,
            &self.started_at,
        );
        header.seed = self.seed;
        header.epochs = self.epochs;
        header.versions = versions(suite, sha256_hex(self.agent.as_bytes()));
        header.fault_profile = self.fault_profile.clone();
        header.attack = self.attack.as_ref().map(|(n, _)| n.clone());
        header.rubric = suite.rubric.as_ref().map(|r| r.def().clone());
        header.filter = self.filter.clone();
        header.shard = self.shard;
        header.name = self.name.clone();
        header
    }

    /// Every trial of `cases` (each case's epochs in turn), or this shard's share of them, in
    /// plan order.
    pub fn trials(&self, suite: &Suite, cases: &[&LoadedCase]) -> Vec<TrialPlan> {
        self.plans(suite, cases).iter().collect()
    }

    /// The trials of `cases` as [`Settings::trials`] lists them, made one at a time when
    /// wanted: what a plan holds grows with its cases, not its trials.
    pub fn plans(&self, suite: &Suite, cases: &[&LoadedCase]) -> TrialPlans {
        // Cases without their own initial_state share their world's state.
        let mut world_states: HashMap<String, Arc<Value>> = HashMap::new();
        let cases: Vec<CasePlan> = cases
            .iter()
            .map(|lc| {
                let mut case = lc.case.clone();
                if let Some((_, attack)) = &self.attack {
                    case.attack = Some(attack.clone());
                }
                let case = Arc::new(case);
                let world = suite.world_of(lc);
                let initial_state = if case.initial_state.is_empty() && case.attack.is_none() {
                    let name = world.world.spec().name.clone();
                    Arc::clone(
                        world_states
                            .entry(name)
                            .or_insert_with(|| Arc::new(suite.initial_state(lc))),
                    )
                } else {
                    Arc::new(suite.initial_state_of(lc, &case))
                };
                CasePlan {
                    case,
                    world: Arc::clone(&world.world),
                    initial_state,
                    context: context_of(suite, lc),
                    rules: case_rules(lc)
                        .into_iter()
                        .chain(self.profile_rules.iter().cloned())
                        .collect(),
                }
            })
            .collect();
        let at = cases
            .iter()
            .enumerate()
            .map(|(i, c)| (c.case.case_id.clone(), i))
            .collect();
        TrialPlans {
            inner: Arc::new(PlansInner {
                cases,
                at,
                epochs: self.epochs,
                seed: self.seed,
                run_id: self.run_id.clone(),
                shard: self.shard,
            }),
        }
    }
}

/// The trials of a run in plan order (each case's epochs in turn; a shard's share of them),
/// each made when it is wanted from what its case shares: a million trials are never held at
/// once. Positions are in the unsharded plan, so a part's and the whole's agree.
#[derive(Clone)]
pub struct TrialPlans {
    inner: Arc<PlansInner>,
}

struct PlansInner {
    cases: Vec<CasePlan>,
    /// Each case's place in `cases`, by id.
    at: HashMap<String, usize>,
    epochs: u32,
    seed: u64,
    run_id: String,
    shard: Option<Shard>,
}

/// What every trial of a case shares.
struct CasePlan {
    case: Arc<gauntlet_model::Case>,
    world: Arc<gauntlet_world::World>,
    initial_state: Arc<Value>,
    context: gauntlet_model::Context,
    rules: Vec<FaultRule>,
}

impl TrialPlans {
    /// Trials in the unsharded plan.
    fn whole(&self) -> usize {
        self.inner.cases.len() * self.inner.epochs as usize
    }

    /// Trials in this plan (a shard's share).
    pub fn len(&self) -> usize {
        let whole = self.whole();
        match self.inner.shard {
            // Positions p < whole with p mod count = index - 1.
            Some(s) => (whole + s.count as usize - s.index as usize) / s.count as usize,
            None => whole,
        }
    }

    /// Whether the plan has no trial.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The unsharded plan positions of this plan's trials, in order.
    pub fn positions(&self) -> impl Iterator<Item = usize> + Send + 'static {
        let (whole, shard) = (self.whole(), self.inner.shard);
        let (first, step) = shard.map_or((0, 1), |s| ((s.index - 1) as usize, s.count as usize));
        (first..whole).step_by(step.max(1))
    }

    /// The plan position of `case_id`'s `epoch`, if this plan holds it.
    pub fn position_of(&self, case_id: &str, epoch: u32) -> Option<usize> {
        let i = *self.inner.at.get(case_id)?;
        let p = i * self.inner.epochs as usize + epoch as usize;
        (epoch < self.inner.epochs && self.inner.shard.is_none_or(|s| s.holds(p))).then_some(p)
    }

    /// The trial at plan position `position` (see [`TrialPlans::positions`]).
    pub fn trial(&self, position: usize) -> TrialPlan {
        let p = &*self.inner;
        let c = &p.cases[position / p.epochs as usize];
        let epoch = (position % p.epochs as usize) as u32;
        let seed = trial_seed(p.seed, &c.case.case_id, epoch);
        TrialPlan {
            case: Arc::clone(&c.case),
            world: Arc::clone(&c.world),
            initial_state: Arc::clone(&c.initial_state),
            context: c.context.clone(),
            epoch,
            seed,
            faults: FaultPlan {
                rules: c.rules.clone(),
                seed,
            },
            trace_id: trace_id(&p.run_id, &c.case.case_id, epoch),
        }
    }

    /// This plan's trials, in order.
    pub fn iter(&self) -> impl Iterator<Item = TrialPlan> + Send + 'static {
        let plans = self.clone();
        self.positions().map(move |p| plans.trial(p))
    }

    /// Whether any trial runs in a real-service world.
    pub fn has_services(&self) -> bool {
        self.inner
            .cases
            .iter()
            .any(|c| c.world.spec().service.is_some())
    }
}

/// The names, comma-separated, or `none`.
fn names_or_none<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let all: Vec<&str> = names.map(String::as_str).collect();
    if all.is_empty() {
        "none".to_owned()
    } else {
        all.join(", ")
    }
}

/// One case's trial outside a run (`serve`): epoch 0, seed 0, the case's own faults only.
pub fn single_trial(suite: &Suite, lc: &LoadedCase) -> TrialPlan {
    let world = suite.world_of(lc);
    TrialPlan {
        case: Arc::new(lc.case.clone()),
        world: Arc::clone(&world.world),
        initial_state: Arc::new(suite.initial_state(lc)),
        context: context_of(suite, lc),
        epoch: 0,
        seed: 0,
        faults: FaultPlan {
            rules: case_rules(lc),
            seed: 0,
        },
        // Deterministic, as a run's: one id per suite and case.
        trace_id: trace_id(&format!("serve:{}", suite.config.name), &lc.case.case_id, 0),
    }
}

/// Who the agent acts for in a case: its own context, else its world's default.
fn context_of(suite: &Suite, lc: &LoadedCase) -> gauntlet_model::Context {
    lc.case
        .context
        .clone()
        .unwrap_or_else(|| suite.world_of(lc).world.spec().default_context.clone())
}

/// A case's own fault rules.
pub fn case_rules(lc: &LoadedCase) -> Vec<FaultRule> {
    lc.case
        .faults
        .iter()
        .map(|spec| FaultRule {
            spec: spec.clone(),
            source: "case".to_owned(),
        })
        .collect()
}

/// The versions of the suite's parts, with the agent's hash.
pub fn versions(suite: &Suite, agent: String) -> Versions {
    Versions {
        harness: env!("CARGO_PKG_VERSION").to_owned(),
        worlds: suite
            .worlds
            .iter()
            .map(|(n, w)| (n.clone(), w.hash.clone()))
            .collect(),
        dataset: suite.dataset_hash.clone(),
        agent,
        config: suite.config_hash.clone(),
    }
}

/// Checks that a resumed run's parts are unchanged since it started.
pub fn check_unchanged(then: &RunHeader, now: &RunHeader) -> Result<(), PlanError> {
    let (a, b) = (&then.versions, &now.versions);
    let changed: Vec<&str> = [
        ("harness", a.harness == b.harness),
        ("worlds", a.worlds == b.worlds),
        ("dataset", a.dataset == b.dataset),
        ("agent", a.agent == b.agent),
        ("suite configuration", a.config == b.config),
    ]
    .into_iter()
    .filter(|(_, same)| !same)
    .map(|(name, _)| name)
    .collect();
    if changed.is_empty() {
        Ok(())
    } else {
        Err(PlanError::ChangedSinceStart(changed.join(", ")))
    }
}

/// The suite's custom evaluators, their scripts read.
pub fn custom_evaluators(suite: &Suite) -> Result<CustomEvaluators, PlanError> {
    let evaluators = suite
        .config
        .evaluators
        .iter()
        .map(|e| {
            let runs = match e
                .source()
                .map_err(|e| PlanError::Evaluator(e.to_string()))?
            {
                EvaluatorSource::Command(c) => CustomKind::Command(c.to_owned()),
                EvaluatorSource::Script(file) => {
                    let path = suite.root.join(file);
                    let source = std::fs::read_to_string(&path).map_err(|err| {
                        PlanError::Evaluator(format!(
                            "evaluator `{}`: {}: {err}",
                            e.name,
                            path.display()
                        ))
                    })?;
                    CustomKind::Script {
                        file: file.to_owned(),
                        source,
                        function: e.function.clone().unwrap_or_else(|| "evaluate".to_owned()),
                    }
                }
            };
            Ok(CustomEvaluator {
                name: e.name.clone(),
                runs,
                timeout_s: e.timeout_s,
            })
        })
        .collect::<Result<Vec<_>, PlanError>>()?;
    Ok(CustomEvaluators {
        evaluators,
        dir: suite.root.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_model::{Classified, ErrorKind};

    fn example() -> Suite {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/incident-desk");
        Suite::load(&root).unwrap_or_else(|p| panic!("{p:?}"))
    }

    fn resolve(
        suite: &Suite,
        options: &RunOptions,
        resumed: Option<&RunHeader>,
    ) -> Result<Settings, PlanError> {
        Settings::resolve(
            suite,
            options,
            resumed,
            || "2026-12-01T10:00:00Z".into(),
            || "fresh".into(),
        )
    }

    #[test]
    fn options_win_over_the_suite_and_a_resumed_run_keeps_what_it_started_with() {
        let suite = example();
        let defaults = resolve(&suite, &RunOptions::default(), None).unwrap();
        assert_eq!((defaults.seed, defaults.epochs), (42, 1), "the suite's own");
        assert_eq!(defaults.agent, "script:reference");
        assert_eq!(defaults.run_id, "fresh");
        let asked = RunOptions {
            agent: Some("script:loop".into()),
            seed: Some(7),
            epochs: Some(3),
            faults: Some("flaky-network".into()),
            run_id: Some("mine".into()),
            ..RunOptions::default()
        };
        let s = resolve(&suite, &asked, None).unwrap();
        assert_eq!((s.seed, s.epochs, s.agent.as_str()), (7, 3, "script:loop"));
        assert_eq!(s.fault_profile.as_deref(), Some("flaky-network"));
        assert!(!s.profile_rules.is_empty());
        let header = s.header(&suite);
        // Resuming ignores today's options: the run goes on as it started.
        let other = RunOptions {
            seed: Some(99),
            epochs: Some(9),
            ..RunOptions::default()
        };
        let resumed = resolve(&suite, &other, Some(&header)).unwrap();
        assert_eq!((resumed.seed, resumed.epochs), (7, 3));
        assert_eq!(resumed.run_id, "mine");
        assert_eq!(resumed.started_at, header.started_at);
        check_unchanged(&header, &resumed.header(&suite)).unwrap();
    }

    #[test]
    fn bad_options_are_the_users_input_and_say_what_is_wrong() {
        let suite = example();
        let cases = [
            (
                RunOptions {
                    epochs: Some(0),
                    ..RunOptions::default()
                },
                "`epochs` must be at least 1",
            ),
            (
                RunOptions {
                    faults: Some("nope".into()),
                    ..RunOptions::default()
                },
                "flaky-network",
            ),
            (
                RunOptions {
                    run_id: Some("a/b".into()),
                    ..RunOptions::default()
                },
                "letters, digits",
            ),
            // Issue 48: these wrote into `.gauntlet/` itself.
            (
                RunOptions {
                    run_id: Some("..".into()),
                    ..RunOptions::default()
                },
                "letters, digits",
            ),
            (
                RunOptions {
                    run_id: Some(".".into()),
                    ..RunOptions::default()
                },
                "letters, digits",
            ),
        ];
        for (options, says) in cases {
            let e = resolve(&suite, &options, None).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
            assert!(e.to_string().contains(says), "{e}");
        }
        let filtered = resolve(
            &suite,
            &RunOptions {
                filter: Some("no-such-case".into()),
                ..RunOptions::default()
            },
            None,
        )
        .unwrap();
        assert!(matches!(
            filtered.cases(&suite),
            Err(PlanError::NoCaseMatches(_))
        ));
    }

    #[test]
    fn shards_partition_the_plan_in_its_order() {
        let suite = example();
        let options = RunOptions {
            epochs: Some(2),
            ..RunOptions::default()
        };
        let whole = resolve(&suite, &options, None).unwrap();
        let cases = whole.cases(&suite).unwrap();
        let all: Vec<(String, u32)> = whole
            .trials(&suite, &cases)
            .iter()
            .map(|t| (t.case.case_id.clone(), t.epoch))
            .collect();
        assert_eq!(all.len(), cases.len() * 2);
        let mut from_parts: Vec<(usize, (String, u32))> = Vec::new();
        for index in 1..=3 {
            let part = resolve(
                &suite,
                &RunOptions {
                    shard: Some(Shard { index, count: 3 }),
                    ..options.clone()
                },
                None,
            )
            .unwrap();
            for (i, t) in part.trials(&suite, &cases).iter().enumerate() {
                // The part's i-th trial is the plan's (i * 3 + index - 1)-th.
                from_parts.push((
                    i * 3 + index as usize - 1,
                    (t.case.case_id.clone(), t.epoch),
                ));
            }
        }
        from_parts.sort();
        assert_eq!(
            from_parts.into_iter().map(|(_, t)| t).collect::<Vec<_>>(),
            all
        );
    }

    #[test]
    fn a_plan_made_one_trial_at_a_time_is_the_plan_listed() {
        let suite = example();
        for shard in [
            None,
            Some(Shard { index: 2, count: 3 }),
            Some(Shard { index: 5, count: 5 }),
        ] {
            let s = resolve(
                &suite,
                &RunOptions {
                    epochs: Some(3),
                    shard,
                    ..RunOptions::default()
                },
                None,
            )
            .unwrap();
            let cases = s.cases(&suite).unwrap();
            let plans = s.plans(&suite, &cases);
            let listed = s.trials(&suite, &cases);
            assert_eq!(plans.len(), listed.len());
            assert_eq!(plans.positions().count(), listed.len());
            for (p, t) in plans.positions().zip(&listed) {
                let made = plans.trial(p);
                assert_eq!(plans.position_of(&t.case.case_id, t.epoch), Some(p));
                assert_eq!(
                    (&made.case.case_id, made.epoch, made.seed, &made.trace_id),
                    (&t.case.case_id, t.epoch, t.seed, &t.trace_id)
                );
                assert_eq!(made.faults.rules.len(), t.faults.rules.len());
            }
            // A trial another part holds, or no plan has, has no position in this one.
            let first = &cases[0].case.case_id;
            let held = (0..3)
                .filter(|e| plans.position_of(first, *e).is_some())
                .count();
            assert_eq!(
                held,
                listed.iter().filter(|t| &t.case.case_id == first).count()
            );
            assert_eq!(plans.position_of(first, 3), None);
            assert_eq!(plans.position_of("no-such-case", 0), None);
        }
    }
}
