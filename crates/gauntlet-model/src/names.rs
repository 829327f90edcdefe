//! The names of built-in evaluators and run metrics, as they appear in scores, `results.json`,
//! gates and reports. Every crate matches on these constants, never on a bare string, so a
//! rename is one change here (and a format change for stored runs).

// Outcome.
/// Share of expected state paths that hold in the final state.
pub const STATE_VERIFICATION: &str = "StateVerification";
/// The final answer's assertions (contains, not contains, regex).
pub const OUTPUT_ASSERTIONS: &str = "output_assertions";
/// Every claim the final answer makes (by the world's claim rules) holds in the final state.
pub const CLAIMS_SUPPORTED: &str = "claims_supported";
/// The case's primary metric passed, or else every outcome score passed.
pub const TASK_SUCCESS: &str = "task_success";
/// The agent finished its task rather than running out of steps (only where it did not).
pub const AGENT_FINISHED: &str = "agent_finished";
/// The agent ran to its end rather than crashing (it raised, or exited non-zero or on a signal,
/// after it reached the world); only present where it crashed.
pub const AGENT_COMPLETED: &str = "agent_completed";
/// An imported benchmark's own reward for the trial, by the benchmark's rule (informational).
pub const BENCHMARK_REWARD: &str = "benchmark_reward";
/// The user's task done, judged by its effect (AgentDojo's `utility`: 1 or 0); with `security`
/// for cases with an attack or a utility check.
pub const UTILITY: &str = "utility";
/// The attacker's goal reached, judged by its effect (AgentDojo's `security`: 1 when reached in an
/// attacked trial, and 1 in a trial without an attack); a reached goal is critical.
pub const SECURITY: &str = "security";
/// Glass-box checkpoints: the share of a case's checkpoints that held at their point.
pub const CHECKPOINTS: &str = "checkpoints";
/// The agent step of the earliest failed checkpoint: where the trajectory went wrong.
pub const FIRST_WRONG_STEP: &str = "first_wrong_step";
/// The scores whose details run metrics read: the benchmark's name, tool precision and recall
/// per segment, and the attack and vectors of an attacked trial.
pub const DETAILS_AGGREGATED: [&str; 3] = [BENCHMARK_REWARD, TOOL_SELECTION_ACCURACY, SECURITY];

// Trajectory.
/// Share of required tools called at least once.
pub const REQUIRED_TOOL_RECALL: &str = "required_tool_recall";
/// A forbidden tool was called (critical); also the run metric counting such trials.
pub const FORBIDDEN_TOOL_USED: &str = "forbidden_tool_used";
/// Tool calls within `max_tool_calls`.
pub const WITHIN_CALL_BUDGET: &str = "within_call_budget";
/// Identical calls repeated.
pub const DUPLICATE_CALLS: &str = "duplicate_calls";
/// Precision, recall and F1 of the tools used against the expected tools.
pub const TOOL_SELECTION_ACCURACY: &str = "ToolSelectionAccuracy";
/// `min(1, optimal / actual)` steps.
pub const STEP_EFFICIENCY: &str = "StepEfficiency";
/// Share of repeated identical calls (loops).
pub const LOOP_DETECTION: &str = "LoopDetection";
/// At least one tool of each `one_of` group was called.
pub const ONE_OF: &str = "one_of";
/// The partial order `order` held.
pub const TOOL_ORDER: &str = "tool_order";

// Tools and arguments.
/// Share of calls whose arguments validated against the tool's schema.
pub const ARGUMENT_SCHEMA_VALIDITY: &str = "ArgumentSchemaValidity";
/// Field-level accuracy of arguments against the reference.
pub const ARGUMENT_ACCURACY: &str = "argument_accuracy";
/// Share of calls corrected after a validation error.
pub const CORRECTED_AFTER_VALIDATION: &str = "corrected_after_validation";
/// The right tool called with the wrong entity.
pub const RIGHT_TOOL_WRONG_ENTITY: &str = "right_tool_wrong_entity";
/// Calls the reference does not need.
pub const UNNECESSARY_CALLS: &str = "unnecessary_calls";
/// BFCL's AST matcher against the reference calls.
pub const BFCL_AST_MATCH: &str = "bfcl_ast_match";
/// A replayed trajectory's outputs agree with the recorded ones.
pub const REPLAY_AGREEMENT: &str = "replay_agreement";
/// Why a failed trial failed: harness, execution, selection, argument or other.
pub const ERROR_ATTRIBUTION: &str = "error_attribution";
/// The agent's questions the scripted simulated user had no reply for (informational, only
/// where there were some): a failure that may be the case's user's, not the agent's.
pub const USER_UNANSWERED: &str = "user_unanswered";

// Robustness and efficiency.
/// Writes applied more than once for one logical operation; also the run metric summing them.
pub const DUPLICATE_SIDE_EFFECTS: &str = "duplicate_side_effects";
/// Retries of a failed call of one tool within `max_retries_per_tool`.
pub const MAX_RETRIES_PER_TOOL: &str = "max_retries_per_tool";
/// Steps, tokens, cost, latency and time to first token within the case's budgets.
pub const WITHIN_BUDGET: &str = "within_budget";
/// Faults injected into the trial (informational); also the run metric summing them.
pub const FAULTS_INJECTED: &str = "faults_injected";
/// Retries of faulted calls (informational).
pub const FAULT_RETRIES: &str = "fault_retries";
/// Time from each fault to the tool's next success (informational).
pub const FAULT_TIME_LOST_MS: &str = "fault_time_lost_ms";
/// The prefix of the per-fault-kind verdicts (`fault_timeout`, `fault_rate_limited`, ...).
pub const FAULT_PREFIX: &str = "fault_";
/// Injected model-call faults handled as expected.
pub const MODEL_FAULTS: &str = "model_faults";

/// A question to the user before the first write, where the case requires one
/// (`question_required`).
pub const QUESTION_ASKED: &str = "question_asked";

// Safety.
/// Confirmation asked before every write.
pub const CONFIRMATION_BEFORE_WRITE: &str = "confirmation_before_write";
/// No secret, canary or PII in outputs or arguments.
pub const SECRETS_AND_PII: &str = "secrets_and_pii";
/// Reads or writes of another tenant's records; also the run metric summing them.
pub const CROSS_TENANT_ACCESS: &str = "cross_tenant_access";

/// Run metrics that reports and gates refer to by name.
pub mod metric {
    /// Trials in the run.
    pub const TRIALS: &str = "trials";
    /// Trials that passed.
    pub const PASSED: &str = "passed";
    /// Trials that failed.
    pub const FAILED: &str = "failed";
    /// Trials the harness could not run.
    pub const ERRORS: &str = "errors";
    /// Share of trials that passed.
    pub const PASS_RATE: &str = "pass_rate";
    /// Share of trials whose task succeeded.
    pub const TASK_SUCCESS_RATE: &str = "task_success_rate";
    /// Share of trials the harness could not run.
    pub const ERROR_RATE: &str = "error_rate";
    /// Share of trials without a critical violation.
    pub const SAFE_TRIAL_RATE: &str = "safe_trial_rate";
    /// Failed critical scores, summed over trials (a safety gate).
    pub const CRITICAL_POLICY_VIOLATIONS: &str = "critical_policy_violations";
    /// Cases whose verdict changed across epochs.
    pub const FLAKY_CASES: &str = "flaky_cases";
    /// Total cost over trials whose task succeeded.
    pub const COST_PER_SUCCESS_EUR: &str = "cost_per_success_eur";
    /// What the simulated users' personas cost.
    pub const USER_COST_EUR: &str = "user_cost_eur";
    /// Retries of a faulted call per injected fault.
    pub const RETRIES_PER_FAULT: &str = "retries_per_fault";
    /// Time lost to faults, summed.
    pub const TIME_LOST_TO_FAULTS_MS: &str = "time_lost_to_faults_ms";
    /// Share of trials with a valid W3C trace id.
    pub const TRACE_ID_COVERAGE: &str = "trace_id_coverage";
    /// Share of trials with a `utility` score whose user task was done.
    pub const UTILITY_RATE: &str = "utility_rate";
    /// Share of attacked trials whose user task was still done.
    pub const UTILITY_UNDER_ATTACK: &str = "utility_under_attack";
    /// Share of attacked trials whose attacker's goal was reached (targeted attack success).
    pub const ATTACK_SUCCESS_RATE: &str = "attack_success_rate";
    /// Attacked trials.
    pub const ATTACKED_TRIALS: &str = "attacked_trials";
}
