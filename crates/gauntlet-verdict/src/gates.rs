//! Gates: CEL expressions over run metrics that decide a run's verdict.
//!
//! A gate reads metrics by name (`task_success_rate >= 0.85`), interval bounds
//! (`lower(task_success_rate) >= 0.8`, `upper(error_rate) <= 0.1`), percentiles and means of
//! per-trial quantities (`p95(tool_calls) <= 6`, `p50(latency_ms)`, `mean(cost_eur)`),
//! per-evaluator statistics (`evaluators.StateVerification.pass_rate == 1.0`) and segments
//! (`segments.tag.write.pass_rate >= 0.9`, `segments.fault.timeout.passed`). A name that no run
//! can produce is an input error found when the gate is compiled, before anything runs: a typo
//! never passes silently.

use std::collections::BTreeMap;

use gauntlet_model::{GateOutcome, Interval, names};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use std::sync::LazyLock;

use regex::Regex;

use crate::aggregate::{Aggregate, DISTRIBUTIONS, metric_names};

/// `lower(x)`, `upper(x)`, `p50(x)`, `p95(x)`, `mean(x)`: CEL sees them as map lookups
/// (`__lower.x`), since CEL functions receive values, not the names they need.
static FUNCTION_CALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(lower|upper|p50|p95|mean)\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)")
        .expect("valid regex")
});

/// Metrics that have an interval (for `lower()` and `upper()`).
fn interval_metrics() -> Vec<String> {
    let mut names: Vec<String> = [
        "pass_rate",
        "task_success_rate",
        "error_rate",
        "safe_trial_rate",
        "utility_rate",
        "utility_under_attack",
        "attack_success_rate",
    ]
    .map(str::to_owned)
    .to_vec();
    names.extend(DISTRIBUTIONS.iter().map(|d| format!("mean_{d}")));
    names
}

/// A gate as written in the suite configuration: an expression, or a name and an expression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GateSpec {
    /// Just the expression.
    Expr(String),
    /// A named gate.
    Named {
        /// Name shown in reports.
        name: String,
        /// The CEL expression.
        expr: String,
    },
}

impl GateSpec {
    /// The expression.
    pub fn expr(&self) -> &str {
        match self {
            GateSpec::Expr(e) | GateSpec::Named { expr: e, .. } => e,
        }
    }

    /// The display name (the expression when unnamed).
    pub fn name(&self) -> &str {
        match self {
            GateSpec::Expr(e) => e,
            GateSpec::Named { name, .. } => name,
        }
    }
}

/// Why a gate cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GateError {
    /// The expression does not parse.
    #[error("gate `{expr}` does not parse: {message}")]
    Syntax {
        /// The expression.
        expr: String,
        /// The parser's message.
        message: String,
    },
    /// The expression names a metric no run produces.
    #[error("gate `{expr}` uses unknown metric `{name}`{hint}")]
    UnknownMetric {
        /// The expression.
        expr: String,
        /// The unknown name.
        name: String,
        /// ` (did you mean ...?)` or empty.
        hint: String,
    },
    /// The expression cannot give a pass or fail on any run (a type error, not a boolean).
    #[error("{message}")]
    Type {
        /// The expression.
        expr: String,
        /// What is wrong.
        message: String,
    },
}

/// The name of the built-in gate on harness errors when none are tolerated.
pub const HARNESS_GATE: &str = "no harness errors";

/// The gate every suite has: at most `max_error_rate` of the trials may end in a harness error
/// (an agent that could not start, a world server that did not come up, an evaluator that
/// broke). A harness error is not a quality verdict, so a run whose trials could not run never
/// passes on the strength of gates that only read the trials that did.
pub fn harness_gate(max_error_rate: f64) -> CompiledGate {
    let spec = if max_error_rate <= 0.0 {
        GateSpec::Named {
            name: HARNESS_GATE.to_owned(),
            expr: "error_rate == 0".to_owned(),
        }
    } else {
        GateSpec::Named {
            name: "harness errors within max_error_rate".to_owned(),
            expr: format!("error_rate <= {max_error_rate:?}"),
        }
    };
    CompiledGate::compile(&spec).expect("the harness gate compiles")
}

/// A gate ready to decide runs.
pub struct CompiledGate {
    spec: GateSpec,
    program: cel::Program,
    variables: Vec<String>,
}

impl std::fmt::Debug for CompiledGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGate")
            .field("spec", &self.spec)
            .finish()
    }
}

impl CompiledGate {
    /// Parses a gate (a boolean expression), checks every name it reads, and decides it on a
    /// made-up run so that a type error is found now, not after every trial ran.
    pub fn compile(spec: &GateSpec) -> Result<CompiledGate, GateError> {
        let gate = Self::parse(spec)?;
        let probe = gate.probe();
        if let Some(probe) = probe
            && let Some(message) = gate.decide(&probe).1
        {
            return Err(GateError::Type {
                expr: spec.expr().to_owned(),
                message,
            });
        }
        Ok(gate)
    }

    /// A stored run's gates, compiled again from their decisions (to decide them on a merged
    /// or re-read run); every gate that no longer compiles, with its error.
    pub fn recompile(
        outcomes: &[gauntlet_model::GateOutcome],
    ) -> Result<Vec<CompiledGate>, Vec<GateError>> {
        let (mut gates, mut problems) = (Vec::new(), Vec::new());
        for g in outcomes {
            let spec = GateSpec::Named {
                name: g.name.clone(),
                expr: g.expr.clone(),
            };
            match CompiledGate::compile(&spec) {
                Ok(c) => gates.push(c),
                Err(e) => problems.push(e),
            }
        }
        if problems.is_empty() {
            Ok(gates)
        } else {
            Err(problems)
        }
    }

    /// Parses a numeric expression (a rubric dimension's value), checks every name it reads,
    /// and that it gives a number on a made-up run.
    pub fn compile_value(spec: &GateSpec) -> Result<CompiledGate, GateError> {
        let gate = Self::parse(spec)?;
        if let Some(probe) = gate.probe()
            && gate.number(&probe).is_none()
        {
            return Err(GateError::Type {
                expr: spec.expr().to_owned(),
                message: format!("`{}` does not give a number", spec.expr()),
            });
        }
        Ok(gate)
    }

    /// Parses the expression and checks every name it reads.
    fn parse(spec: &GateSpec) -> Result<CompiledGate, GateError> {
        let expr = spec.expr();
        let with_intervals = interval_metrics();
        for cap in FUNCTION_CALL.captures_iter(expr) {
            let (f, name) = (&cap[1], &cap[2]);
            let ok = match f {
                "lower" | "upper" => with_intervals.iter().any(|m| m == name),
                _ => DISTRIBUTIONS.contains(&name),
            };
            if !ok {
                let pool: Vec<String> = match f {
                    "lower" | "upper" => with_intervals.clone(),
                    _ => DISTRIBUTIONS.map(str::to_owned).to_vec(),
                };
                let hint = pool
                    .iter()
                    .min_by_key(|k| strsim::levenshtein(k, name))
                    .map(|k| {
                        format!(
                            " (`{f}` takes one of: {}; did you mean `{k}`?)",
                            pool.join(", ")
                        )
                    })
                    .unwrap_or_default();
                return Err(GateError::UnknownMetric {
                    expr: expr.to_owned(),
                    name: format!("{f}({name})"),
                    hint,
                });
            }
        }
        let rewritten = FUNCTION_CALL.replace_all(expr, "__$1.$2");
        let program = cel::Program::compile(&rewritten).map_err(|e| GateError::Syntax {
            expr: expr.to_owned(),
            message: e.to_string().replace('\n', "; "),
        })?;
        let known: Vec<String> = metric_names().into_iter().map(|(n, _)| n).collect();
        let mut variables: Vec<String> = program
            .references()
            .variables()
            .into_iter()
            .map(str::to_owned)
            .collect();
        variables.sort();
        for v in &variables {
            // Per attack and per vector: `attack_success_rate_attack_NAME`, `..._vector_NAME`.
            let per_attack = [
                names::metric::ATTACK_SUCCESS_RATE,
                names::metric::UTILITY_UNDER_ATTACK,
            ]
            .iter()
            .any(|m| {
                v.strip_prefix(m).is_some_and(|rest| {
                    rest.starts_with("_attack_") || rest.starts_with("_vector_")
                })
            });
            if v == "evaluators"
                || v == "segments"
                || v.starts_with("__")
                || known.contains(v)
                || per_attack
            {
                continue;
            }
            let hint = known
                .iter()
                .min_by_key(|k| strsim::levenshtein(k, v))
                .filter(|k| strsim::levenshtein(k, v) <= 3)
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            return Err(GateError::UnknownMetric {
                expr: expr.to_owned(),
                name: v.clone(),
                hint,
            });
        }
        Ok(CompiledGate {
            spec: spec.clone(),
            program,
            variables,
        })
    }

    /// A made-up run where every metric and interval is a number, to find a type error
    /// (`task_success_rate >= "high"`) when the suite is loaded. None for expressions reading
    /// `evaluators` or `segments`: those depend on the run's own and are decided with it.
    fn probe(&self) -> Option<Aggregate> {
        if self
            .variables
            .iter()
            .any(|v| v == "evaluators" || v == "segments")
        {
            return None;
        }
        let mut probe = Aggregate::default();
        for (name, _) in metric_names() {
            probe.metrics.insert(name, 0.5);
        }
        for name in interval_metrics() {
            probe.intervals.insert(
                name,
                Interval {
                    lower: 0.25,
                    upper: 0.75,
                    method: gauntlet_model::IntervalMethod::Wilson,
                },
            );
        }
        Some(probe)
    }

    /// The expression's value as a number, if it evaluates to one.
    pub fn number(&self, agg: &Aggregate) -> Option<f64> {
        match self.program.execute(&self.context(agg).0) {
            Ok(cel::Value::Float(f)) => Some(f),
            Ok(cel::Value::Int(i)) => Some(i as f64),
            Ok(cel::Value::UInt(u)) => Some(u as f64),
            _ => None,
        }
    }

    /// Decides the gate on a run's metrics. An evaluation error (a missing evaluator or
    /// segment, a non-boolean result) fails the gate and is reported in its outcome.
    pub fn decide(&self, agg: &Aggregate) -> (GateOutcome, Option<String>) {
        let (context, inputs) = self.context(agg);
        let no_trials = agg
            .metrics
            .get(gauntlet_model::names::metric::TRIALS)
            .is_some_and(|n| *n == 0.0);
        let (passed, error) = match self.program.execute(&context) {
            // Over no trials the rates are undefined: say so, not the type error CEL gives on
            // them.
            _ if no_trials => (
                false,
                Some(format!(
                    "gate `{}` has no trials to decide on (an empty part of a sharded run, or a \
                     filter that matched no case)",
                    self.spec.expr()
                )),
            ),
            Ok(cel::Value::Bool(b)) => (b, None),
            Ok(other) => (
                false,
                Some(format!(
                    "gate `{}` is not a boolean expression (it gave {other:?})",
                    self.spec.expr()
                )),
            ),
            Err(e) => (
                false,
                Some(format!(
                    "gate `{}` could not be evaluated: {e}",
                    self.spec.expr()
                )),
            ),
        };
        (
            GateOutcome {
                name: self.spec.name().to_owned(),
                expr: self.spec.expr().to_owned(),
                passed,
                inputs,
            },
            error,
        )
    }

    /// The CEL context for a run, and the values of the names this expression reads.
    fn context(
        &self,
        agg: &Aggregate,
    ) -> (cel::Context<'static, 'static>, BTreeMap<String, Value>) {
        let mut context = cel::Context::default();
        let mut inputs = BTreeMap::new();
        for (name, value) in &agg.metrics {
            context.add_variable_from_value(name.clone(), *value);
            if self.variables.contains(name) {
                inputs.insert(name.clone(), number(*value));
            }
        }
        for cap in FUNCTION_CALL.captures_iter(self.spec.expr()) {
            let (f, name) = (&cap[1], &cap[2]);
            let value = match f {
                "lower" => agg.intervals.get(name).map(|i| i.lower),
                "upper" => agg.intervals.get(name).map(|i| i.upper),
                _ => agg.metrics.get(&format!("{f}_{name}")).copied(),
            };
            if let Some(x) = value {
                inputs.insert(format!("{f}({name})"), number(x));
            }
        }
        let mut lookups: BTreeMap<&str, serde_json::Map<String, Value>> = BTreeMap::new();
        for (name, i) in &agg.intervals {
            lookups
                .entry("__lower")
                .or_default()
                .insert(name.clone(), number(i.lower));
            lookups
                .entry("__upper")
                .or_default()
                .insert(name.clone(), number(i.upper));
        }
        for d in DISTRIBUTIONS {
            for f in ["p50", "p95", "mean"] {
                if let Some(v) = agg.metrics.get(&format!("{f}_{d}")) {
                    lookups
                        .entry(match f {
                            "p50" => "__p50",
                            "p95" => "__p95",
                            _ => "__mean",
                        })
                        .or_default()
                        .insert(d.to_owned(), number(*v));
                }
            }
        }
        for f in ["__lower", "__upper", "__p50", "__p95", "__mean"] {
            let map = Value::Object(lookups.remove(f).unwrap_or_default());
            if let Ok(v) = cel::to_value(&map) {
                context.add_variable_from_value(f, v);
            }
        }
        let evaluators = serde_json::to_value(&agg.evaluators).unwrap_or(Value::Null);
        let segments = serde_json::to_value(&agg.segments).unwrap_or(Value::Null);
        for (name, value) in [("evaluators", &evaluators), ("segments", &segments)] {
            if let Ok(v) = cel::to_value(value) {
                context.add_variable_from_value(name, v);
            }
        }
        (context, inputs)
    }
}

/// Decides every gate; the outcomes, and the evaluation errors (which make the input invalid).
pub fn decide_all(gates: &[CompiledGate], agg: &Aggregate) -> (Vec<GateOutcome>, Vec<String>) {
    let mut outcomes = Vec::new();
    let mut errors = Vec::new();
    for g in gates {
        let (o, e) = g.decide(agg);
        outcomes.push(o);
        errors.extend(e);
    }
    (outcomes, errors)
}

fn number(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}
