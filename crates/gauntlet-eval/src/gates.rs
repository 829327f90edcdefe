//! Gates: CEL expressions over run metrics that decide a run's verdict.
//!
//! A gate reads metrics by name (`task_success_rate >= 0.85`), per-evaluator statistics
//! (`evaluators.StateVerification.pass_rate == 1.0`) and tag segments
//! (`segments.write.pass_rate >= 0.9`). A name that no run can produce is an input error found
//! when the gate is compiled, before anything runs: a typo never passes silently.

use std::collections::BTreeMap;

use gauntlet_model::GateOutcome;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::aggregate::{Aggregate, metric_names};

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
    /// Parses the expression and checks every name it reads.
    pub fn compile(spec: &GateSpec) -> Result<CompiledGate, GateError> {
        let expr = spec.expr();
        let program = cel::Program::compile(expr).map_err(|e| GateError::Syntax {
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
            if v == "evaluators" || v == "segments" || known.contains(v) {
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

    /// Decides the gate on a run's metrics. An evaluation error (a missing evaluator or
    /// segment, a non-boolean result) fails the gate and is reported in its outcome.
    pub fn decide(&self, agg: &Aggregate) -> (GateOutcome, Option<String>) {
        let mut context = cel::Context::default();
        let mut inputs = BTreeMap::new();
        for (name, value) in &agg.metrics {
            context.add_variable_from_value(name.clone(), *value);
            if self.variables.contains(name) {
                inputs.insert(name.clone(), number(*value));
            }
        }
        let evaluators = serde_json::to_value(&agg.evaluators).unwrap_or(Value::Null);
        let segments = serde_json::to_value(&agg.segments).unwrap_or(Value::Null);
        for (name, value) in [("evaluators", &evaluators), ("segments", &segments)] {
            if let Ok(v) = cel::to_value(value) {
                context.add_variable_from_value(name, v);
            }
        }
        let (passed, error) = match self.program.execute(&context) {
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
