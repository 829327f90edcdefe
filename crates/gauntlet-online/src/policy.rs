//! One production trace checked against the policy (the deterministic evaluators that need no
//! expected state, and the policy's tools, schemas and budgets; no LLM judge), then anonymised.
//!
//! The trace is judged as it came (the secrets evaluator must see what leaked), then every
//! string of the record is redacted before the caller writes anything.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gauntlet_eval::redact::Redactor;
use gauntlet_model::online::Policy;
use gauntlet_model::{Event, ToolKind, TrialRecord, WorldSpec};
use gauntlet_otel::ImportedTrace;
use gauntlet_scoring::{CustomEvaluators, TrialEvidence, evaluate_trial};
use serde_json::Value;

/// Declared schemas whose validators are kept.
const DECLARED: usize = 1_024;

/// A policy that cannot be checked against: the user's input.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A tool's parameters are not a JSON Schema.
    #[error("tool `{tool}`: parameters are not a JSON Schema: {source}")]
    ToolSchema {
        /// The tool.
        tool: String,
        /// Why.
        source: Box<jsonschema::ValidationError<'static>>,
    },
    /// The redaction settings (a pattern, a canary) do not compile; the redactor's words.
    #[error(transparent)]
    Redaction(#[from] gauntlet_eval::redact::RedactionError),
}

impl gauntlet_model::Classified for PolicyError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

/// Checks traces against one policy (not an LLM judge: rules only).
pub struct PolicyCheck {
    policy: Policy,
    world: WorldSpec,
    /// Argument validators by tool, from the policy.
    validators: HashMap<String, jsonschema::Validator>,
    /// Tool kinds from the policy.
    kinds: HashMap<String, ToolKind>,
    /// Validators of schemas traces declared, by the schema's text: traces repeat the same
    /// declarations, so each is compiled once (at most `DECLARED` kept).
    declared: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
    redactor: Redactor,
    custom: CustomEvaluators,
}

/// A checked trace: the record (redacted) and what the lake keeps beside it.
#[derive(Debug, Clone)]
pub struct Checked {
    pub record: TrialRecord,
    pub service: Option<String>,
    pub agent: String,
    /// Feedback carried on the trace's spans (redacted).
    pub feedback: Vec<Value>,
    /// Whether the trace's root span arrived (else it was judged after going idle).
    pub complete: bool,
    /// The root span's id, to hang the verdicts under in the trace's own backend.
    pub root_span_id: Option<Vec<u8>>,
}

impl PolicyCheck {
    /// The check of the policy; `key` keys redaction hashes. A bad tool schema or redaction
    /// pattern is named in the error.
    pub fn new(policy: Policy, key: &str) -> Result<PolicyCheck, PolicyError> {
        let mut validators = HashMap::new();
        for t in &policy.tools {
            let v =
                jsonschema::validator_for(&t.parameters).map_err(|e| PolicyError::ToolSchema {
                    tool: t.name.clone(),
                    source: Box::new(e),
                })?;
            validators.insert(t.name.clone(), v);
        }
        let redactor = Redactor::new(&policy.redaction, &policy.canaries, key)
            .map_err(PolicyError::Redaction)?;
        let kinds = policy
            .tools
            .iter()
            .map(|t| (t.name.clone(), t.kind))
            .collect();
        let world = WorldSpec {
            name: "production".to_owned(),
            tools: policy.tools.clone(),
            canaries: policy.canaries.clone(),
            ..WorldSpec::default()
        };
        Ok(PolicyCheck {
            policy,
            world,
            validators,
            kinds,
            declared: Mutex::new(HashMap::new()),
            redactor,
            custom: CustomEvaluators {
                evaluators: Vec::new(),
                dir: ".".into(),
            },
        })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Judges a trace as it came (nothing redacted: see [`PolicyCheck::anonymise`]).
    pub async fn judge(&self, mut t: ImportedTrace) -> Checked {
        self.annotate(&mut t);
        let evaluation = evaluate_trial(
            &TrialEvidence {
                case_id: &t.case_id,
                case: None,
                epoch: t.epoch,
                trajectory: &t.trajectory,
                initial_state: Some(&t.initial_state),
                final_state: (&t.final_state).into(),
                world: Some(&self.world),
                benchmark: None,
                harness_failed: t.error.is_some(),
                policy: Some(&self.policy.constraints),
            },
            &self.custom,
            None,
        )
        .await;
        let record = TrialRecord::new(
            gauntlet_model::Observed {
                case_id: t.case_id,
                epoch: t.epoch,
                seed: t.seed,
                trace_id: t.trace_id,
                tags: t.tags,
                difficulty: t.difficulty,
                initial_state: t.initial_state,
                final_state: t.final_state,
                trajectory: t.trajectory,
                duration_ms: t.duration_ms,
                started_at: t.started_at,
                error: t.error,
            },
            evaluation,
        );
        Checked {
            record,
            service: t.service,
            agent: t.agent,
            feedback: t.feedback,
            complete: t.complete,
            root_span_id: t.root_span_id,
        }
    }

    /// Takes secrets and personal data out of a judged trace, before anything is written.
    pub fn anonymise(&self, j: &mut Checked) {
        self.redact(&mut j.record);
        for f in &mut j.feedback {
            self.redactor.value(f);
        }
        j.agent = self.redactor.text(&j.agent).into_owned();
        if let Some(s) = &mut j.service {
            *s = self.redactor.text(s).into_owned();
        }
    }

    /// The redactor, for what arrives apart from traces (feedback).
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Each call's kind (from the policy) and schema validity (policy's schema, else the one
    /// the trace declared to its model).
    fn annotate(&self, t: &mut ImportedTrace) {
        let declared: HashMap<&str, Arc<jsonschema::Validator>> = t
            .tools
            .iter()
            .filter(|d| !self.validators.contains_key(&d.name))
            .filter_map(|d| {
                self.declared_validator(&d.parameters)
                    .map(|v| (d.name.as_str(), v))
            })
            .collect();
        for e in &mut t.trajectory.events {
            if let Event::ToolCall(c) = e {
                if c.kind.is_none() {
                    c.kind = self.kinds.get(&c.tool).copied();
                }
                if c.schema_valid.is_none() {
                    c.schema_valid = self
                        .validators
                        .get(&c.tool)
                        .or_else(|| declared.get(c.tool.as_str()).map(|v| &**v))
                        .map(|v| v.is_valid(&c.arguments));
                }
            }
        }
    }

    /// The compiled validator of a declared schema (`None` when it is not a JSON Schema).
    fn declared_validator(&self, schema: &Value) -> Option<Arc<jsonschema::Validator>> {
        let key = schema.to_string();
        let mut cache = self.declared.lock().expect("the schema cache lock");
        if let Some(v) = cache.get(&key) {
            return Some(v.clone());
        }
        let v = Arc::new(jsonschema::validator_for(schema).ok()?);
        if cache.len() >= DECLARED {
            cache.clear();
        }
        cache.insert(key, v.clone());
        Some(v)
    }

    /// Every string of the record that could hold a secret or personal data: messages,
    /// arguments, results, errors, answers, states, score details.
    pub fn redact(&self, r: &mut TrialRecord) {
        self.redactor.trajectory(&mut r.trajectory);
        self.redactor.value(&mut r.initial_state);
        self.redactor.value(&mut r.final_state);
        for s in &mut r.scores {
            self.redactor.value(&mut s.details);
        }
        if let Some(e) = &mut r.error {
            *e = self.redactor.text(e).into_owned();
        }
        r.case_id = self.redactor.text(&r.case_id).into_owned();
    }
}
