//! The suite configuration file, `gauntlet.yaml`.

use gauntlet_verdict::GateSpec;
use serde::{Deserialize, Serialize};

/// A suite's `gauntlet.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteConfig {
    /// The suite's name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// The agent used when `--agent` is not given (`script:reference` when absent).
    #[serde(default)]
    pub agent: Option<String>,
    /// The seed used when `--seed` is not given (0 when absent).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Repetitions of each case when `--epochs` is not given (1 when absent).
    #[serde(default)]
    pub epochs: Option<u32>,
    /// World files, relative to the suite folder (every file in `worlds/` when absent).
    #[serde(default)]
    pub worlds: Vec<String>,
    /// The world of cases that name none and whose dataset names none.
    #[serde(default)]
    pub default_world: Option<String>,
    /// Case files and folders (the folder `cases/` when absent).
    #[serde(default)]
    pub datasets: Vec<DatasetEntry>,
    /// Gates: CEL expressions over run metrics; a failing gate fails the run.
    #[serde(default)]
    pub gates: Vec<GateSpec>,
    /// The share of trials that may end in a harness error (the agent could not be started, a
    /// world's server did not come up, an evaluator broke) and the run still pass: 0 when
    /// absent. Harness errors are not a quality verdict; a run is gated on them by the built-in
    /// gate `no harness errors` (`error_rate <= max_error_rate`).
    #[serde(default)]
    pub max_error_rate: Option<f64>,
    /// A rubric: a preset name (`lesson`, `article`) or a definition.
    #[serde(default)]
    pub rubric: Option<RubricConfig>,
    /// Named suite-wide fault profiles: rules applied to every case (`--faults NAME`).
    #[serde(default)]
    pub fault_profiles: std::collections::BTreeMap<String, Vec<gauntlet_model::FaultSpec>>,
    /// The profile used when `--faults` is not given (none when absent).
    #[serde(default)]
    pub fault_profile: Option<String>,
    /// Named suite-wide attacks, applied to every case with `--attack NAME` (each case's own
    /// attack, if any, is replaced).
    #[serde(default)]
    pub attacks: std::collections::BTreeMap<String, gauntlet_model::Attack>,
    /// Custom evaluators: commands that score each trial (JSON in, JSON out).
    #[serde(default)]
    pub evaluators: Vec<CustomEvaluatorSpec>,
    /// LLM judges: a model and a rubric each, run after the deterministic checks (through the
    /// gateway, cached); advisory until calibrated against human labels.
    #[serde(default)]
    pub judges: Vec<gauntlet_model::JudgeSpec>,
    /// The LLM gateway: upstream and price table.
    #[serde(default)]
    pub gateway: Option<GatewaySpec>,
    /// The system prompt of the built-in `openai:MODEL` agent.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// The most model calls the built-in agent makes per trial (20 when absent).
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// The model that plays users with an LLM `persona` when their case names none
    /// (`--user-model` overrides it).
    #[serde(default)]
    pub user_model: Option<String>,
    /// The system prompt of persona users, with `{persona}` where a case's persona goes
    /// (gauntlet's own when absent).
    #[serde(default)]
    pub user_prompt: Option<String>,
    /// The benchmark the suite was imported from, whose own reward and headline are reported
    /// beside gauntlet's verdicts (`gauntlet import` writes it).
    #[serde(default)]
    pub benchmark: Option<gauntlet_model::BenchmarkSpec>,
    /// The checker audit's settings (`gauntlet audit`, `gauntlet check --audit`).
    #[serde(default)]
    pub audit: AuditConfig,
}

/// The checker audit's settings: survivors the suite's authors accept on purpose.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// Survivors that are not holes, each with the reason: a deliberately loose check (free
    /// text matched with `$contains`) would otherwise fail the audit forever.
    #[serde(default)]
    pub accept: Vec<AcceptedSurvivor>,
}

/// One accepted survivor: a case's mutant that may pass its checks, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcceptedSurvivor {
    /// The case's id.
    pub case: String,
    /// The mutation as the audit names it (`drop write 1 (add_note)`), or its kind
    /// (`change_argument`) for every mutant of that kind.
    pub mutation: String,
    /// Why the survivor is not a hole, for the next reader.
    pub why: String,
}

impl AuditConfig {
    /// What is wrong with the accepted survivors, as (JSON Pointer, message): an empty field or
    /// a case the suite does not have (`case_ids`: the suite's cases).
    pub fn problems(&self, case_ids: &std::collections::BTreeSet<&str>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, a) in self.accept.iter().enumerate() {
            let at = |field: &str| format!("/audit/accept/{i}/{field}");
            for (field, value) in [("case", &a.case), ("mutation", &a.mutation)] {
                if value.trim().is_empty() {
                    out.push((at(field), format!("`audit.accept` needs a `{field}`")));
                }
            }
            if a.why.trim().is_empty() {
                out.push((
                    at("why"),
                    "`audit.accept` needs a `why`: the reason this survivor is not a hole"
                        .to_owned(),
                ));
            }
            if !a.case.trim().is_empty() && !case_ids.contains(a.case.as_str()) {
                out.push((
                    at("case"),
                    format!("`audit.accept`: the suite has no case `{}`", a.case),
                ));
            }
        }
        out
    }
}

/// The LLM gateway's configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewaySpec {
    /// The upstream base URL (`--gateway-upstream` overrides it).
    #[serde(default)]
    pub upstream: Option<String>,
    /// Prices by model, in euros per 1,000 tokens.
    #[serde(default)]
    pub prices: std::collections::BTreeMap<String, gauntlet_model::Price>,
}

impl SuiteConfig {
    /// Whether the gateway has a price for `model`.
    pub fn priced(&self, model: &str) -> bool {
        self.gateway
            .as_ref()
            .is_some_and(|g| g.prices.contains_key(model))
    }
}

/// A custom evaluator: a command that reads a trial as JSON and writes scores as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomEvaluatorSpec {
    /// Its name.
    pub name: String,
    /// The command, run with `sh -c` in the suite folder (or give `script`).
    #[serde(default)]
    pub command: Option<String>,
    /// A JavaScript file, relative to the suite folder, whose `function` scores a trial in
    /// gauntlet's sandbox (or give `command`).
    #[serde(default)]
    pub script: Option<String>,
    /// The script's function (`evaluate` when absent).
    #[serde(default)]
    pub function: Option<String>,
    /// Seconds before it is stopped (10 by default).
    #[serde(default)]
    pub timeout_s: Option<f64>,
}

/// What runs a custom evaluator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvaluatorSource<'a> {
    /// A shell command.
    Command(&'a str),
    /// A JavaScript file, relative to the suite folder.
    Script(&'a str),
}

/// A custom evaluator that gives both `command` and `script`, or neither: the suite's input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("evaluator `{evaluator}` needs exactly one of `command` and `script`")]
pub struct EvaluatorSourceError {
    /// The evaluator's name.
    pub evaluator: String,
}

impl gauntlet_model::Classified for EvaluatorSourceError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

impl CustomEvaluatorSpec {
    /// What runs it, or why nothing does (it needs exactly one of `command` and `script`).
    pub fn source(&self) -> Result<EvaluatorSource<'_>, EvaluatorSourceError> {
        match (&self.command, &self.script) {
            (Some(c), None) => Ok(EvaluatorSource::Command(c)),
            (None, Some(s)) => Ok(EvaluatorSource::Script(s)),
            _ => Err(EvaluatorSourceError {
                evaluator: self.name.clone(),
            }),
        }
    }
}

/// A rubric in the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RubricConfig {
    /// A preset's name.
    Preset(String),
    /// A full definition.
    Custom(gauntlet_model::RubricDef),
}

/// One dataset: a case file, a folder of case files, or a JSONL file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetEntry {
    /// Relative to the suite folder.
    pub path: String,
    /// The world of this dataset's cases that name none.
    #[serde(default)]
    pub world: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_survivor_needs_a_reason_and_a_case_of_the_suite() {
        let audit: AuditConfig = serde_json::from_value(serde_json::json!({"accept": [
            {"case": "a", "mutation": "do_nothing", "why": "nothing to do"},
            {"case": "a", "mutation": "", "why": " "},
            {"case": "b", "mutation": "skip_question", "why": "typo"},
        ]}))
        .unwrap();
        let ids = ["a"].into_iter().collect();
        assert_eq!(
            audit.problems(&ids),
            [
                (
                    "/audit/accept/1/mutation".to_owned(),
                    "`audit.accept` needs a `mutation`".to_owned()
                ),
                (
                    "/audit/accept/1/why".to_owned(),
                    "`audit.accept` needs a `why`: the reason this survivor is not a hole"
                        .to_owned()
                ),
                (
                    "/audit/accept/2/case".to_owned(),
                    "`audit.accept`: the suite has no case `b`".to_owned()
                ),
            ]
        );
        let missing = serde_json::from_value::<AuditConfig>(
            serde_json::json!({"accept": [{"case": "a", "mutation": "do_nothing"}]}),
        );
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("missing field `why`")
        );
    }
}
