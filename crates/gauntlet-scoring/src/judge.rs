//! Running a suite's LLM judges on a trial: after the deterministic checks, through the gateway,
//! with the judge cache in front, under a concurrency limit, retried like other calls.
//!
//! What a judge sees and says is [`gauntlet_eval::judge`] (pure); this module decides whether a
//! trial is judged, asks the model (or the cache), and writes the outcome. A judge may gate only
//! when a trusted calibration file names its exact model and rubric hash; otherwise its scores
//! are advisory and never fail a trial.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gauntlet_agent::ModelCallRecorder;
use gauntlet_agent::gateway::{Gateway, JudgeCallError};
use gauntlet_eval::judge::{
    TrialView, combine, parse_reply, render_prompt, request, rubric_hash, weigh,
    without_response_format,
};
use gauntlet_eval::pairwise::{
    pairwise_request, parse_pairwise, render_pairwise_prompt, resolve, summarise,
};
use gauntlet_model::compare::{PairPreference, PairwiseItem, PairwiseReport};
use gauntlet_model::judge::{JudgeRubric, JudgeSample, RunOn, default_rubric};
use gauntlet_model::labels::trial_item;
use gauntlet_model::{
    CalibrationFile, Event, FaultKind, JudgeHeader, JudgeOutcome, JudgeSpec, JudgeStatus, Score,
    ToolError, Trajectory, TrialStatus,
};
use gauntlet_store::{CachedReply, JudgeCache};
use tokio::sync::Semaphore;

use gauntlet_model::{Classified, ErrorKind};

/// Why a suite's judges cannot be used as declared. Every variant is the user's input.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// The judges' declarations have problems (each with where it is).
    #[error("{0}")]
    Declared(String),
    /// The judge cache cannot be opened.
    #[error("{0}")]
    Cache(#[source] gauntlet_store::StoreError),
    /// A gate or rubric dimension reads a judge that may not gate.
    #[error("{what} reads judge `{judge}`, which may not gate: its {calibration}")]
    AdvisoryGate {
        /// The gate or dimension.
        what: String,
        /// The judge.
        judge: String,
        /// Why it may not gate.
        calibration: String,
    },
    /// `--evaluator NAME` names no judge of the suite.
    #[error("the suite has no judge `{name}`; its judges: {known}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The suite's judges.
        known: String,
    },
    /// The suite has several judges and none was named.
    #[error("the suite has several judges ({known}): pick one with --evaluator NAME")]
    Ambiguous {
        /// The suite's judges.
        known: String,
    },
}

impl Classified for JudgeError {
    fn kind(&self) -> ErrorKind {
        match self {
            JudgeError::Cache(e) => e.kind(),
            _ => ErrorKind::InvalidInput,
        }
    }
}

/// Why a calibration file does not let a judge gate (the judge stays advisory and says so).
#[derive(Debug, thiserror::Error)]
enum NotCalibrated {
    #[error("{0}")]
    Unreadable(#[source] std::io::Error),
    #[error("not a calibration file: {0}")]
    NotAFile(#[source] serde_json::Error),
    #[error("it names no judge (calibrate against a run folder's verdicts)")]
    NoJudge,
    #[error("it is for judge `{name}` on {model}, not `{want_name}` on {want_model}")]
    OtherJudge {
        name: String,
        model: String,
        want_name: String,
        want_model: String,
    },
    #[error("it is for another rubric or template (the rubric changed since: calibrate again)")]
    OtherRubric,
    #[error(
        "not trusted: kappa {kappa:.3} on {n} items, below the thresholds (kappa {min_kappa}, {min_items} items)"
    )]
    Untrusted {
        kappa: f64,
        n: usize,
        min_kappa: f64,
        min_items: usize,
    },
}

/// Why a judge's model gave no reply (the sample records it; the trial is not failed by it).
#[derive(Debug, thiserror::Error)]
enum NoReply {
    #[error(
        "no model endpoint and no cached reply: give --gateway-upstream URL (or the suite's gateway.upstream) or --replay-cassette CASSETTE"
    )]
    NoEndpoint,
    #[error("{0}")]
    Closed(#[source] tokio::sync::AcquireError),
    #[error("{0}")]
    Upstream(String),
    #[error(
        "{first}; asked again with the json_object response format: {second}; and without one: {third}"
    )]
    EveryFormat {
        first: String,
        second: String,
        third: String,
    },
}

/// A judge ready to run: its spec, its rubric, its hash and whether it may gate.
#[derive(Debug, Clone)]
pub struct PreparedJudge {
    /// As the suite declares it.
    pub spec: JudgeSpec,
    /// Its rubric (the default when the suite gives none).
    pub rubric: JudgeRubric,
    /// As the run header records it.
    pub header: JudgeHeader,
}

impl PreparedJudge {
    /// An outcome of this judge with `status` and nothing else yet.
    fn outcome(&self, status: JudgeStatus) -> JudgeOutcome {
        JudgeOutcome {
            judge: self.spec.name.clone(),
            rubric_hash: self.header.rubric_hash.clone(),
            status,
            reason: None,
            criteria: BTreeMap::new(),
            score: None,
            passed: None,
            split: false,
            advisory: self.header.advisory,
            over_budget: false,
            samples: Vec::new(),
        }
    }

    /// Every model that judges, in order.
    pub fn models(&self) -> Vec<&str> {
        std::iter::once(self.spec.model.as_str())
            .chain(self.spec.also.iter().map(String::as_str))
            .collect()
    }
}

/// Prepares a suite's judges: resolves rubrics, hashes them, and reads each calibration file
/// to decide whether the judge may gate. A calibration that does not exist, does not parse, is
/// for another model or rubric, or is not trusted leaves the judge advisory, and says why.
pub fn prepare_judges(
    suite_dir: &Path,
    specs: &[JudgeSpec],
) -> Result<Vec<PreparedJudge>, JudgeError> {
    let mut out: Vec<PreparedJudge> = Vec::new();
    for spec in specs {
        let rubric = spec.rubric.clone().unwrap_or_else(default_rubric);
        let hash = rubric_hash(&rubric);
        let mut models = vec![spec.model.clone()];
        models.extend(spec.also.iter().cloned());
        let model = models.join(",");
        let (advisory, calibration) = match &spec.calibration {
            None => (
                true,
                "advisory: no calibration file (run `gauntlet calibrate --out FILE` and name it in the judge's `calibration:`)".to_owned(),
            ),
            Some(file) => {
                let path = suite_dir.join(file);
                match calibration_verdict(&path, &spec.name, &model, &hash) {
                    Ok(()) => (false, format!("calibrated: {file}")),
                    Err(why) => (true, format!("advisory: {}: {why}", path.display())),
                }
            }
        };
        out.push(PreparedJudge {
            header: JudgeHeader {
                name: spec.name.clone(),
                model,
                rubric_hash: hash,
                advisory,
                calibration,
                budget_eur: spec.budget_eur,
            },
            spec: spec.clone(),
            rubric,
        });
    }
    Ok(out)
}

/// Whether a calibration file lets this judge gate; why not otherwise.
fn calibration_verdict(
    path: &Path,
    name: &str,
    model: &str,
    hash: &str,
) -> Result<(), NotCalibrated> {
    let text = std::fs::read_to_string(path).map_err(NotCalibrated::Unreadable)?;
    let file: CalibrationFile = serde_json::from_str(&text).map_err(NotCalibrated::NotAFile)?;
    let Some(judge) = &file.judge else {
        return Err(NotCalibrated::NoJudge);
    };
    if judge.name != name || judge.model != model {
        return Err(NotCalibrated::OtherJudge {
            name: judge.name.clone(),
            model: judge.model.clone(),
            want_name: name.to_owned(),
            want_model: model.to_owned(),
        });
    }
    if judge.rubric_hash != hash {
        return Err(NotCalibrated::OtherRubric);
    }
    if !file.trusted {
        return Err(NotCalibrated::Untrusted {
            kappa: file.cohen_kappa,
            n: file.n,
            min_kappa: file.thresholds.min_kappa,
            min_items: file.thresholds.min_items,
        });
    }
    Ok(())
}

/// A run's judges and what they call.
pub struct JudgePanel {
    judges: Vec<PreparedJudge>,
    gateway: Option<Arc<Gateway>>,
    cache: Option<JudgeCache>,
    /// Ask the model even when the cache has the reply (recording a cassette must be complete).
    bypass_cache: bool,
    limit: Arc<Semaphore>,
    /// What each judge (in order) has spent on model calls so far, in euros.
    spent: Vec<Mutex<f64>>,
}

/// How many times a judge call is tried.
const ATTEMPTS: u32 = 3;

impl JudgePanel {
    /// A panel; `gateway` is where calls go (none: only cached replies), `cache` the suite's
    /// judge cache.
    pub fn new(
        judges: Vec<PreparedJudge>,
        gateway: Option<Arc<Gateway>>,
        cache: Option<JudgeCache>,
        bypass_cache: bool,
    ) -> JudgePanel {
        let limit = judges
            .iter()
            .map(|j| j.spec.concurrency)
            .max()
            .unwrap_or(1)
            .max(1);
        JudgePanel {
            spent: judges.iter().map(|_| Mutex::new(0.0)).collect(),
            judges,
            gateway,
            cache,
            bypass_cache,
            limit: Arc::new(Semaphore::new(limit)),
        }
    }

    /// A warning when no model can be reached: then only verdicts already in the judge cache
    /// count, and every other judged trial is `invalid`.
    pub fn endpoint_warning(&self) -> Option<String> {
        self.gateway.is_none().then(|| {
            let names: Vec<&str> = self.judges.iter().map(|j| j.spec.name.as_str()).collect();
            let who = match names.as_slice() {
                [one] => format!("judge {one} has"),
                _ => format!("judges {} have", names.join(", ")),
            };
            format!(
                "{who} no model endpoint (give --gateway-upstream URL, the suite's `gateway.upstream`, or --replay-cassette CASSETTE): only verdicts already in the judge cache count, every other judged trial is `invalid`"
            )
        })
    }

    /// The judges' headers, for the run header.
    pub fn headers(&self) -> Vec<JudgeHeader> {
        self.judges.iter().map(|j| j.header.clone()).collect()
    }

    /// Judges one trial whose deterministic status is `status`. Returns each judge's outcome
    /// and the scores of those that scored.
    pub async fn judge(
        &self,
        case_id: &str,
        epoch: u32,
        goal: &str,
        trajectory: &Trajectory,
        status: TrialStatus,
    ) -> (Vec<JudgeOutcome>, Vec<Score>) {
        let mut outcomes = Vec::new();
        let mut scores = Vec::new();
        for (judge, spent) in self.judges.iter().zip(&self.spent) {
            let skip = match (status, judge.spec.run_on) {
                (TrialStatus::Error, _) => Some("the trial is a harness error".to_owned()),
                (TrialStatus::Failed, RunOn::Passed) => Some(
                    "a deterministic check failed (the judge runs only where they all passed; `run_on: all` to judge every trial)".to_owned(),
                ),
                _ => None,
            };
            let so_far = || spent.lock().map(|s| *s).unwrap_or(f64::INFINITY);
            let over = judge.spec.budget_eur.filter(|b| so_far() >= *b);
            let outcome = match (skip, over) {
                (Some(reason), _) => JudgeOutcome {
                    reason: Some(reason),
                    ..judge.outcome(JudgeStatus::Skipped)
                },
                (None, Some(budget)) => JudgeOutcome {
                    reason: Some(format!(
                        "the judge's budget of €{budget} is spent (€{:.4} so far; raise `budget_eur` to judge more)",
                        so_far()
                    )),
                    over_budget: true,
                    ..judge.outcome(JudgeStatus::Skipped)
                },
                (None, None) => {
                    let outcome = self
                        .run_judge(judge, case_id, epoch, goal, trajectory)
                        .await;
                    let cost: f64 = outcome
                        .samples
                        .iter()
                        .filter(|s| s.answered_by_model())
                        .map(|s| s.cost_eur)
                        .sum();
                    if let Ok(mut s) = spent.lock() {
                        *s += cost;
                    }
                    outcome
                }
            };
            scores.extend(gauntlet_eval::judge::scores(&judge.rubric, &outcome));
            outcomes.push(outcome);
        }
        (outcomes, scores)
    }

    async fn run_judge(
        &self,
        judge: &PreparedJudge,
        case_id: &str,
        epoch: u32,
        goal: &str,
        trajectory: &Trajectory,
    ) -> JudgeOutcome {
        let prompt = render_prompt(&judge.rubric, &TrialView { goal, trajectory });
        let mut samples = Vec::new();
        let mut problems = Vec::new();
        for model in judge.models() {
            for sample in 0..judge.spec.samples.max(1) {
                let body = request(
                    model,
                    &prompt,
                    &judge.rubric,
                    judge.spec.temperature,
                    judge.spec.seed,
                );
                let (s, problem) = self
                    .sample(judge, model, sample, &body, case_id, epoch)
                    .await;
                if let Some(p) = problem {
                    problems.push(p);
                }
                samples.push(s);
            }
        }
        let verdicts: Vec<&BTreeMap<String, f64>> = samples
            .iter()
            .filter(|s| !s.verdict.is_empty())
            .map(|s| &s.verdict)
            .collect();
        let base = judge.outcome(JudgeStatus::Invalid);
        if verdicts.is_empty() {
            return JudgeOutcome {
                reason: Some(problems.join("; ")),
                samples,
                ..base
            };
        }
        let (criteria, split) = combine(&judge.rubric, &verdicts, judge.spec.combine);
        let (score, passed) = weigh(&judge.rubric, &criteria);
        JudgeOutcome {
            status: JudgeStatus::Scored,
            reason: (!problems.is_empty()).then(|| problems.join("; ")),
            criteria,
            score: Some(score),
            passed: Some(passed),
            split,
            samples,
            ..base
        }
    }

    /// One sample: from the cache, else through the gateway (retried). The sample, and what went
    /// wrong when it has no verdict.
    async fn sample(
        &self,
        judge: &PreparedJudge,
        model: &str,
        index: u32,
        body: &serde_json::Value,
        case_id: &str,
        epoch: u32,
    ) -> (JudgeSample, Option<String>) {
        let mut sample = JudgeSample {
            model: model.to_owned(),
            verdict: BTreeMap::new(),
            passed: None,
            parse: String::new(),
            reason: None,
            cached: false,
            format_refused: false,
            prompt_tokens: 0,
            completion_tokens: 0,
            cost_eur: 0.0,
            latency_ms: 0.0,
        };
        let content = match self.ask(model, index, body, case_id, epoch).await {
            Ok(reply) => {
                sample.cached = reply.cached;
                sample.format_refused = reply.format_refused;
                sample.prompt_tokens = reply.call.prompt_tokens;
                sample.completion_tokens = reply.call.completion_tokens;
                sample.cost_eur = reply.call.cost_eur;
                sample.latency_ms = reply.call.latency_ms;
                reply.content
            }
            Err(e) => {
                sample.parse = "no_reply".to_owned();
                return (sample, Some(format!("{model}: {e}")));
            }
        };
        match parse_reply(&judge.rubric, &content) {
            Ok(p) => {
                sample.passed = Some(gauntlet_eval::judge::weigh(&judge.rubric, &p.verdict).1);
                sample.verdict = p.verdict;
                sample.reason = p.reason;
                sample.parse = p.how.to_owned();
                (sample, None)
            }
            Err(why) => {
                sample.parse = "invalid".to_owned();
                sample.reason = Some(content.chars().take(500).collect());
                (sample, Some(format!("{model}: unparsable reply: {why}")))
            }
        }
    }

    /// A reply to `body` (sample `index`): from the cache, else through the gateway, retried,
    /// and then cached. A cached reply costs nothing.
    async fn ask(
        &self,
        model: &str,
        index: u32,
        body: &serde_json::Value,
        case_id: &str,
        epoch: u32,
    ) -> Result<Reply, NoReply> {
        let key = JudgeCache::key(body, index);
        let cached = if self.bypass_cache {
            None
        } else {
            self.cache.as_ref().and_then(|c| c.get(&key))
        };
        if let Some(reply) = cached {
            return Ok(Reply {
                content: reply.content,
                cached: true,
                format_refused: false,
                call: CallRecord {
                    prompt_tokens: reply.prompt_tokens,
                    completion_tokens: reply.completion_tokens,
                    ..CallRecord::default()
                },
            });
        }
        let (content, call, format_refused) = self.call(body, case_id, epoch).await?;
        // Cached under the request as asked, so a later run finds it without a refused call.
        if let Some(cache) = &self.cache {
            cache.put(
                &key,
                model,
                &CachedReply {
                    content: content.clone(),
                    prompt_tokens: call.prompt_tokens,
                    completion_tokens: call.completion_tokens,
                },
                &gauntlet_store::clock::now(),
            );
        }
        Ok(Reply {
            content,
            cached: false,
            format_refused,
            call,
        })
    }

    /// The judge named `name` (or the only one), for pairwise judging.
    pub fn pick(&self, name: Option<&str>) -> Result<&PreparedJudge, JudgeError> {
        let names = || {
            self.judges
                .iter()
                .map(|j| j.spec.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match name {
            Some(n) => self
                .judges
                .iter()
                .find(|j| j.spec.name == n)
                .ok_or_else(|| JudgeError::Unknown {
                    name: n.to_owned(),
                    known: names(),
                }),
            None => match self.judges.as_slice() {
                [only] => Ok(only),
                _ => Err(JudgeError::Ambiguous { known: names() }),
            },
        }
    }

    /// One pair judged in both orders by `judge`'s first model. Returns the pair and the cost
    /// of the calls made.
    pub async fn pairwise(&self, judge: &PreparedJudge, pair: &Pair) -> (PairwiseItem, f64) {
        let model = judge.spec.model.as_str();
        let budget = judge.rubric.show.observation_chars;
        let instructions = judge.rubric.instructions.as_deref();
        let mut shown = Vec::new();
        let mut reasons = Vec::new();
        let mut cost = 0.0;
        for (first, second) in [(&pair.a, &pair.b), (&pair.b, &pair.a)] {
            let prompt = render_pairwise_prompt(instructions, &pair.goal, first, second, budget);
            let body = pairwise_request(model, &prompt, judge.spec.temperature, judge.spec.seed);
            match self.ask(model, 0, &body, &pair.case_id, pair.epoch).await {
                Ok(reply) => {
                    cost += reply.call.cost_eur;
                    match parse_pairwise(&reply.content) {
                        Ok((s, reason)) => {
                            shown.push(s);
                            reasons.extend(reason);
                        }
                        Err(why) => reasons.push(format!("unparsable reply: {why}")),
                    }
                }
                Err(e) => reasons.push(format!("{model}: {e}")),
            }
        }
        let (preference, flipped) = match shown.as_slice() {
            [ab, ba] => resolve(*ab, *ba),
            _ => (PairPreference::Invalid, false),
        };
        (
            PairwiseItem {
                item: trial_item(&pair.case_id, pair.epoch),
                preference,
                flipped,
                reasons,
            },
            cost,
        )
    }

    /// Asks the model through the gateway. An upstream that refuses the `json_schema` response
    /// format (HTTP 400 or 422, or any error naming `response_format`) is asked again for a JSON
    /// object, then without a format, and the reply marked so; the
    /// prompt itself asks for the JSON verdict. Every call is asked the same way, so a cassette
    /// replays what was recorded whatever the order of trials.
    async fn call(
        &self,
        body: &serde_json::Value,
        case_id: &str,
        epoch: u32,
    ) -> Result<(String, CallRecord, bool), NoReply> {
        let Some(gateway) = &self.gateway else {
            return Err(NoReply::NoEndpoint);
        };
        let _permit = self.limit.acquire().await.map_err(NoReply::Closed)?;
        let e = match Self::attempts(gateway, body, case_id, epoch).await {
            Ok((content, call)) => return Ok((content, call, false)),
            Err(e) => e,
        };
        let (Some(object), Some(plain)) = (
            gauntlet_eval::judge::with_json_object_format(body),
            without_response_format(body),
        ) else {
            return Err(NoReply::Upstream(e.message));
        };
        if !gauntlet_eval::judge::refuses_format(e.status, &e.message) {
            return Err(NoReply::Upstream(e.message));
        }
        // What the server accepts: a JSON object, else no format (the prompt asks for JSON).
        match Self::attempts(gateway, &object, case_id, epoch).await {
            Ok((content, call)) => Ok((content, call, true)),
            Err(second) => {
                let (content, call) = Self::attempts(gateway, &plain, case_id, epoch)
                    .await
                    .map_err(|again| NoReply::EveryFormat {
                        first: e.message,
                        second: second.message,
                        third: again.message,
                    })?;
                Ok((content, call, true))
            }
        }
    }

    /// Up to [`ATTEMPTS`] tries of one request, on a retryable error.
    async fn attempts(
        gateway: &Gateway,
        body: &serde_json::Value,
        case_id: &str,
        epoch: u32,
    ) -> Result<(String, CallRecord), JudgeCallError> {
        let mut last = None;
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(250 << attempt)).await;
            }
            let recorder = Arc::new(JudgeRecorder::default());
            match gateway
                .judge_call(recorder.clone(), case_id, epoch, body)
                .await
            {
                Ok(response) => {
                    let content = response["choices"][0]["message"]["content"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    let call = recorder.total();
                    return Ok((content, call));
                }
                Err(e) => {
                    // A refused response format is not a passing trouble: asking the same
                    // again gets the same answer.
                    let retryable =
                        e.retryable && !gauntlet_eval::judge::refuses_format(e.status, &e.message);
                    last = Some(e);
                    if !retryable {
                        break;
                    }
                }
            }
        }
        Err(last.unwrap_or(JudgeCallError {
            message: "no attempt was made".to_owned(),
            retryable: false,
            status: None,
        }))
    }
}

/// A reply and what it cost.
struct Reply {
    content: String,
    cached: bool,
    format_refused: bool,
    call: CallRecord,
}

/// Two runs' trajectories of one (case, epoch), for pairwise judging.
#[derive(Debug, Clone)]
pub struct Pair {
    /// The case.
    pub case_id: String,
    /// The epoch.
    pub epoch: u32,
    /// The user's request.
    pub goal: String,
    /// The baseline's trajectory.
    pub a: Trajectory,
    /// The candidate's.
    pub b: Trajectory,
}

/// Judges `pairs` pairwise with the panel's judge `name` (or its only judge), concurrently under
/// the panel's limit. `skipped` pairs (not judged) are counted in the report.
pub async fn pairwise_report(
    panel: &JudgePanel,
    name: Option<&str>,
    pairs: &[Pair],
    skipped: usize,
) -> Result<PairwiseReport, JudgeError> {
    let judge = panel.pick(name)?;
    // With a budget, pairs go in batches of the judge's concurrency, the budget checked before
    // each batch; without one, all at once under the panel's limit.
    let batch = match judge.spec.budget_eur {
        Some(_) => judge.spec.concurrency.max(1),
        None => pairs.len().max(1),
    };
    let mut items = Vec::with_capacity(pairs.len());
    let mut cost = 0.0;
    let mut over_budget = 0;
    for (i, chunk) in pairs.chunks(batch).enumerate() {
        if judge.spec.budget_eur.is_some_and(|b| cost >= b) {
            over_budget = pairs.len() - i * batch;
            break;
        }
        let set = chunk.iter().map(|pair| panel.pairwise(judge, pair));
        for (item, c) in futures_util::future::join_all(set).await {
            items.push(item);
            cost += c;
        }
    }
    Ok(PairwiseReport {
        over_budget,
        ..summarise(
            &judge.spec.name,
            &judge.spec.model,
            items,
            skipped + over_budget,
            cost,
        )
    })
}

/// What the gateway recorded of a judge's call.
#[derive(Debug, Clone, Copy, Default)]
struct CallRecord {
    prompt_tokens: u64,
    completion_tokens: u64,
    cost_eur: f64,
    latency_ms: f64,
}

/// Collects the model calls the gateway records for a judge (never the trial's trajectory).
#[derive(Default)]
struct JudgeRecorder {
    calls: Mutex<Vec<CallRecord>>,
}

impl JudgeRecorder {
    fn total(&self) -> CallRecord {
        let calls = self.calls.lock().map(|c| c.clone()).unwrap_or_default();
        calls.iter().fold(CallRecord::default(), |a, c| CallRecord {
            prompt_tokens: a.prompt_tokens + c.prompt_tokens,
            completion_tokens: a.completion_tokens + c.completion_tokens,
            cost_eur: a.cost_eur + c.cost_eur,
            latency_ms: a.latency_ms + c.latency_ms,
        })
    }
}

impl ModelCallRecorder for JudgeRecorder {
    fn now_ms(&self) -> f64 {
        0.0
    }

    fn model_call_fault(&self) -> Option<(FaultKind, ToolError)> {
        None
    }

    fn record(&self, event: Event) {
        if let Event::ModelCall {
            prompt_tokens,
            completion_tokens,
            cost_eur,
            latency_ms,
            ..
        } = event
            && let Ok(mut calls) = self.calls.lock()
        {
            calls.push(CallRecord {
                prompt_tokens,
                completion_tokens,
                cost_eur,
                latency_ms,
            });
        }
    }
}

/// The run's judge panel, when the suite has judges: prepared, with the suite's judge cache at
/// `cache` and calls through `gateway`. Refuses (exit 2) a gate or rubric dimension that reads
/// an advisory judge's score.
pub fn judge_panel(
    suite: &gauntlet_suite::Suite,
    gateway: Option<&Arc<Gateway>>,
    cache: &Path,
    recording: bool,
) -> Result<Option<Arc<JudgePanel>>, JudgeError> {
    if suite.config.judges.is_empty() {
        return Ok(None);
    }
    // A loaded suite was checked already; this keeps the panel sound for any other caller.
    let priced = |model: &str| suite.config.priced(model);
    let problems = gauntlet_model::judge::judge_problems(&suite.config.judges, &priced);
    if !problems.is_empty() {
        return Err(JudgeError::Declared(
            problems
                .into_iter()
                .map(|(at, message)| format!("{message} (at {at})"))
                .collect::<Vec<_>>()
                .join("; "),
        ));
    }
    let judges = prepare_judges(&suite.root, &suite.config.judges)?;
    check_judge_gates(suite, &judges)?;
    let cache = JudgeCache::open(cache).map_err(JudgeError::Cache)?;
    Ok(Some(Arc::new(JudgePanel::new(
        judges,
        gateway.cloned(),
        Some(cache),
        recording,
    ))))
}

/// Whether `expr` reads the scores of the judge named `name` (`evaluators.NAME...` or
/// `evaluators.NAME_CRITERION...`).
fn reads_judge(expr: &str, name: &str) -> bool {
    let needle = format!("evaluators.{name}");
    expr.match_indices(&needle).any(|(i, _)| {
        let rest = &expr[i + needle.len()..];
        rest.starts_with('.') || rest.starts_with('_') || rest.starts_with('[')
    })
}

/// Refuses gates and rubric dimensions that read an advisory judge.
pub fn check_judge_gates(
    suite: &gauntlet_suite::Suite,
    judges: &[PreparedJudge],
) -> Result<(), JudgeError> {
    let mut reads: Vec<(String, String)> = suite
        .config
        .gates
        .iter()
        .map(|g| (format!("gate `{}`", g.name()), g.expr().to_owned()))
        .collect();
    if let Some(r) = &suite.rubric {
        for d in &r.def().dimensions {
            reads.push((
                format!("rubric `{}` dimension `{}`", r.def().name, d.name),
                format!("{} {}", d.value, d.gate.as_deref().unwrap_or_default()),
            ));
        }
    }
    for judge in judges.iter().filter(|j| j.header.advisory) {
        if let Some((what, _)) = reads.iter().find(|(_, e)| reads_judge(e, &judge.spec.name)) {
            return Err(JudgeError::AdvisoryGate {
                what: what.clone(),
                judge: judge.spec.name.clone(),
                calibration: judge.header.calibration.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::reads_judge;

    #[test]
    fn a_gate_reads_a_judge_by_its_scores_names_only() {
        assert!(reads_judge("evaluators.Judge.mean >= 0.7", "Judge"));
        assert!(reads_judge(
            "evaluators.Judge_SafetyScore.pass_rate == 1.0",
            "Judge"
        ));
        assert!(!reads_judge("evaluators.JudgeOther.mean > 0", "Judge"));
        assert!(!reads_judge("task_success_rate >= 0.8", "Judge"));
    }
}
