//! Deciding a rubric on a run: each dimension's value and gate, and the weighted score.

use gauntlet_model::{RubricDef, RubricDimensionOutcome, RubricOutcome};

use crate::aggregate::Aggregate;
use crate::gates::{CompiledGate, GateError, GateSpec};

/// A rubric whose expressions are compiled.
#[derive(Debug)]
pub struct CompiledRubric {
    def: RubricDef,
    values: Vec<CompiledGate>,
    gates: Vec<Option<CompiledGate>>,
}

impl CompiledRubric {
    /// Compiles every value and gate expression; the first bad one is the error.
    pub fn compile(def: &RubricDef) -> Result<CompiledRubric, GateError> {
        let mut values = Vec::new();
        let mut gates = Vec::new();
        for d in &def.dimensions {
            values.push(CompiledGate::compile_value(&GateSpec::Expr(
                d.value.clone(),
            ))?);
            gates.push(
                d.gate
                    .as_ref()
                    .map(|g| {
                        CompiledGate::compile(&GateSpec::Named {
                            name: format!("rubric {}: {}", def.name, d.name),
                            expr: g.clone(),
                        })
                    })
                    .transpose()?,
            );
        }
        Ok(CompiledRubric {
            def: def.clone(),
            values,
            gates,
        })
    }

    /// The definition.
    pub fn def(&self) -> &RubricDef {
        &self.def
    }

    /// Decides the rubric; whether every rubric gate (and the minimum score) held.
    pub fn decide(&self, agg: &Aggregate) -> (RubricOutcome, bool) {
        let mut dims = Vec::new();
        let mut unmeasured = Vec::new();
        let mut all_passed = true;
        let (mut weighted, mut weights) = (0.0, 0.0);
        for ((d, value), gate) in self
            .def
            .dimensions
            .iter()
            .zip(&self.values)
            .zip(&self.gates)
        {
            let v = value.number(agg).filter(|v| v.is_finite());
            match v {
                Some(x) => {
                    weighted += d.weight * x;
                    weights += d.weight;
                }
                None => unmeasured.push(d.name.clone()),
            }
            let passed = gate.as_ref().map(|g| {
                let (o, err) = g.decide(agg);
                o.passed && err.is_none()
            });
            all_passed &= passed.unwrap_or(true);
            dims.push(RubricDimensionOutcome {
                name: d.name.clone(),
                weight: d.weight,
                value: v,
                gate: d.gate.clone(),
                passed,
            });
        }
        let score = (weights > 0.0).then(|| weighted / weights);
        if let Some(min) = self.def.min_score {
            all_passed &= score.is_some_and(|s| s >= min);
        }
        (
            RubricOutcome {
                name: self.def.name.clone(),
                score,
                dimensions: dims,
                unmeasured,
            },
            all_passed,
        )
    }
}
