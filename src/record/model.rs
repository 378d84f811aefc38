//! The report model: what a case run produced, and the run it belonged to.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use std::collections::BTreeMap;

use crate::protocol::{Role, TokenUsage, ToolCall, Usage};
use crate::record::Termination;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How a case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every check held.
    #[default]
    Passed,
    /// A check failed.
    Failed,
    /// The case could not run properly: bad input, agent error, broken hook or script.
    Error,
    /// Not run, with a reason.
    Skipped,
    /// The case's deadline passed.
    Timeout,
    /// No check failed, and a judge (or a jury) could not decide one: never a pass.
    /// What it does to the run is the record's `on_inconclusive`.
    Inconclusive,
}

impl Status {
    /// Upper-case label for consoles.
    pub fn label(self) -> &'static str {
        match self {
            Status::Passed => "PASSED",
            Status::Failed => "FAILED",
            Status::Error => "ERROR",
            Status::Skipped => "SKIPPED",
            Status::Timeout => "TIMEOUT",
            Status::Inconclusive => "INCONCLUSIVE",
        }
    }
}

/// One assertion's verdict: the assertion as written, plus `passed` and `message`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AssertionReport {
    /// The assertion as written (`type`, `value`, ...).
    #[serde(flatten)]
    pub spec: Map<String, Value>,
    /// Whether it held; `null` when its judge could not decide (inconclusive).
    pub passed: Option<bool>,
    /// A short description (`contains "x"`).
    #[serde(default)]
    pub label: String,
    /// Why it failed, with expected and actual; for a pass, the label again.
    #[serde(default)]
    pub message: String,
    /// What a judge said, kept for every verdict, pass or fail, so that a pass can be
    /// audited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgment: Option<Judgment>,
}

impl AssertionReport {
    /// Whether it held.
    pub fn held(&self) -> bool {
        self.passed == Some(true)
    }

    /// Whether it failed (not held, and not inconclusive).
    pub fn failed(&self) -> bool {
        self.passed == Some(false)
    }

    /// Whether its judge could not decide.
    pub fn inconclusive(&self) -> bool {
        self.passed.is_none()
    }
}

/// A judge's reason, score and suggestions; for a jury, every juror's too.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Judgment {
    /// Why the judge decided so (for a jury: the tally under its rule).
    #[serde(default)]
    pub reason: String,
    /// A score from 0 to 1, when the judge gave one (for a jury: the mean of its
    /// jurors' that decided and gave one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// How the reply could be better.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
    /// Who judged: `llm`, `agents:NAME`, `judges:NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// A jury's rule (`majority`, `unanimous`, `mean_score >= 0.7`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// A jury's jurors, each with its verdict, or the error that made it abstain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jurors: Vec<JurorVote>,
    /// Why the verdict does not count: its judge has no calibration meeting its bar
    /// (under `[run] require_calibrated_judges`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncalibrated: Option<String>,
}

/// A case's blame: the party and what shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blame {
    /// Whose fault.
    pub party: crate::case::Party,
    /// What shows it, in words.
    pub evidence: String,
}

/// One juror's vote.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct JurorVote {
    /// The juror: `llm`, `agents:NAME`, `judges:NAME`.
    pub judge: String,
    /// Its verdict; `null` when it could not decide, abstained or is not calibrated.
    pub passed: Option<bool>,
    /// Its score, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Its reason.
    #[serde(default)]
    pub reason: String,
    /// The error that made it abstain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why its vote does not count (no calibration meeting its bar).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncalibrated: Option<String>,
}

/// What made a result, so that it can be told apart from another run's and run again
/// as it ran (the case's own fingerprint is the record's `input_hash`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Provenance {
    /// The agentest version that ran the case.
    pub agentest: String,
    /// A fingerprint of the case's `agentest.toml` and the personas it names (SHA-256,
    /// 16 hex digits); empty for a case without a config.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub config_hash: String,
    /// The cassette mode the case ran in (`auto`, `replay`, `strict`, `record`, `off`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cassettes: String,
    /// The run's seed (`AGENTEST_SEED`, else `[run] seed`, else 0).
    #[serde(default)]
    pub seed: u64,
    /// Every model the case's roles called, once per role, endpoint and settings, in
    /// the order first called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelUse>,
}

/// A model a role called, with the settings it was called with.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModelUse {
    /// Who called it.
    pub role: Role,
    /// The endpoint's URL, without credentials.
    pub endpoint: String,
    /// The model asked for.
    pub model: String,
    /// The sampling temperature sent, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The sampling seed sent, when one was (a repeat's simulator has its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The structured-output form sent (`json_schema`, `json_object_schema`,
    /// `json_object`), when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<String>,
    /// A fingerprint of the instructions (the system message) of the role's first call
    /// with these settings: it changes when agentest's prompt template does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prompt: String,
}

/// One turn of a conversation.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TurnReport {
    /// 1-based.
    pub turn: u32,
    /// The user message's text.
    pub input: String,
    /// Where the input came from: `initial`, `static`, `simulated` or `human`.
    pub input_source: String,
    /// The reply (text, or the JSON an agent answered).
    pub output: Value,
    /// Tools the agent called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Actions the agent reported that are not tool calls (`actions` in its reply).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
    /// What the agent said it thought before answering (an ElizaOS `thought`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    /// Files the reply carried (A2A file parts): name, media type, and where or how big.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<crate::protocol::FileRef>,
    /// The spans the agent exported for the turn, as a tree (when its traces are read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<crate::protocol::SpanNode>,
    /// Spans of the turn not kept (over `[traces] max_spans` or the byte limit), and
    /// whether they had not settled when `settle_max` ran out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spans_note: Option<String>,
    /// Whether `usage` was read from the agent's model spans.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub usage_traced: bool,
    /// Whether the agent waits for the user.
    pub awaiting_input: bool,
    /// Why `awaiting_input` is what it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awaiting_reason: Option<AwaitReason>,
    /// What the simulator said about its move (dynamic cases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The agent's structured data, when it sent some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Verdicts for this turn.
    #[serde(default)]
    pub assertions: Vec<AssertionReport>,
    /// Checkpoints checked against this turn's reply (dynamic cases).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<AssertionReport>,
    /// How long the agent took: from sending the turn to its whole reply.
    pub duration_ms: u64,
    /// How long the first byte of the reply took (an HTTP agent's response head, the
    /// first token of a stream, the start of a process agent's reply line, an `openai`
    /// agent's first model answer); the whole reply time for an in-process agent.
    /// Absent when the agent did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_ms: Option<u64>,
    /// Token usage the agent reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The reply was cut off at a token limit: incomplete, and never the agent finishing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// What went wrong in this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Scenarios: the `run[]` step this turn belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepRef>,
    /// Cases with criteria: the judge's evaluation of the conversation after this reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criteria: Option<CriteriaEvaluation>,
    /// Scenarios: a code step's result (the turn's `output` is its stdout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeRun>,
    /// Scenarios: on a conversation step's last turn, how the conversation ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending: Option<Ending>,
}

/// The ids of the EvalStudio records a case came from, as EvalStudio names them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EvalStudioIds {
    /// The eval's `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_id: Option<String>,
    /// The scenario's `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_id: Option<String>,
    /// The persona's `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona_id: Option<String>,
    /// The eval's `connectorId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_id: Option<String>,
}

/// EvalStudio's `evaluateCriteria` answer: whether the success and the failure criteria
/// are met by the conversation so far, how sure the judge is, and why.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CriteriaEvaluation {
    /// The success criteria are met.
    pub success_met: bool,
    /// The failure criteria are met.
    pub failure_met: bool,
    /// From 0 to 1.
    pub confidence: f64,
    /// The judge's reasons.
    pub reasoning: String,
}

/// EvalStudio's run result: the verdict, its score and why.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    /// The case passed.
    pub success: bool,
    /// From 0 to 1: the last evaluation's confidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Why: the judge's reasoning, prefixed with what ended the conversation.
    pub reason: String,
}

/// A scenario's `run[]` step, as the turns that belong to it name it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct StepRef {
    /// 1-based position in `run[]`.
    pub index: u32,
    /// The step's `name`, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `message`, `code` or `conversation`.
    pub kind: String,
}

impl std::fmt::Display for StepRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            Some(name) => write!(f, "step {} ({name})", self.index),
            None => write!(f, "step {}", self.index),
        }
    }
}

/// What a scenario's code step did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CodeRun {
    /// The language it ran as (`bash`, `python`, `node`, ...).
    pub lang: String,
    /// Its exit code; absent when a signal ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The end of what it wrote on stderr.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// The files in the environment folder after it ran, relative to the folder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

/// How a scenario's conversation step ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Ending {
    /// The termination condition that held (`user_expresses_satisfaction`, ...), or
    /// `max_turns` when none did before the step's limit.
    pub termination: Termination,
    /// Agent turns the step played.
    pub turns: u32,
    /// The step's `max_turns`.
    pub max_turns: u32,
    /// Whether it ended before `max_turns`.
    pub ended_early: bool,
}

impl std::fmt::Display for Ending {
    /// `conversation_stuck after 2 of 4 turns, early`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let early = if self.ended_early { ", early" } else { "" };
        write!(
            f,
            "{} after {} of {} turns{early}",
            self.termination, self.turns, self.max_turns
        )
    }
}

impl CodeRun {
    /// `exit code 0`, or that a signal ended it.
    pub fn exit_text(&self) -> String {
        self.exit_code.map_or_else(
            || "killed by a signal".to_string(),
            |c| format!("exit code {c}"),
        )
    }
}

impl TurnReport {
    /// True when every assertion held and there was no error.
    pub fn ok(&self) -> bool {
        self.error.is_none() && self.assertions.iter().all(AssertionReport::held)
    }
}

/// One case's record, as written to the JSONL report.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CaseReport {
    /// The case id (for a line that failed to load without one, `line-N`).
    pub id: String,
    /// The case name, else the id.
    pub name: String,
    /// The suite (`billing/refunds`).
    pub suite: String,
    /// The trial name (`billing/refunds::T001`).
    pub trial: String,
    /// How it ended.
    pub status: Status,
    /// `single`, `static`, `dynamic`, or absent when the case did not load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The agent it ran against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The conversation.
    #[serde(default)]
    pub turns: Vec<TurnReport>,
    /// Verdicts on the last reply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub final_assertions: Vec<AssertionReport>,
    /// Number of turns run.
    pub total_turns: u32,
    /// The persona the simulated user impersonated (`personas` on the case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// The EvalStudio records the case came from, by id, so that exported runs point
    /// at them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evalstudio: Option<EvalStudioIds>,
    /// What planning changed about the case: a generated case whose id was taken runs
    /// under a new one, and this says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// A scenario matrix combination's values, by the field each axis sets.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub parameters: serde_json::Map<String, serde_json::Value>,
    /// The turns a static script has, when it stopped before its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_turns: Option<u32>,
    /// Wall time of the whole case, hooks included.
    pub duration_ms: u64,
    /// How long starting the agent took (spawning its process, waiting for its HTTP
    /// server to listen), apart from turn 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_ms: Option<u64>,
    /// Why the case did not pass (failure summary, error or skip reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `file:line:column` of the case.
    pub location: String,
    /// Free-form labels from the case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Token usage by role (agent, simulator, judge) of the calls sent to a model: what
    /// the case spent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub usage: BTreeMap<Role, TokenUsage>,
    /// Model calls the harness made for this case (replayed ones included).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub model_calls: u32,
    /// Of those, the calls answered from the cassette.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replayed_calls: u32,
    /// Token usage by role of the replayed calls: recorded once, not spent by this run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replayed_usage: BTreeMap<Role, TokenUsage>,
    /// Retries those calls needed, and an HTTP agent's retried turns.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// What the case did with its cassette.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cassette: Option<CassetteStats>,
    /// Dynamic cases: every checkpoint and whether it was reached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<CheckpointReport>,
    /// Dynamic cases: who played the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulator: Option<String>,
    /// The golden-transcript comparison, when the case is pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub golden: Option<crate::record::golden::GoldenCheck>,
    /// Cases with criteria: the result `{success, score, reason}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<RunResult>,
    /// Dynamic cases: why the conversation ended (`all_checkpoints_reached`,
    /// `agent_completed`, `goal_achieved`, `max_turns`, `forbidden_checkpoint`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination: Option<Termination>,
    /// What the case's model calls cost, by role (over all its repeats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// A fingerprint of the case as written (SHA-256 of its definition, 16 hex digits),
    /// so that runs on the same inputs can be compared across executions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_hash: Option<String>,
    /// A repeat's record: which repeat it is, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// What made the result: agentest's version, the config's fingerprint, the cassette
    /// mode, the seed, and every model the case's roles called, with their settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// Whose fault it was that the case did not pass, with the evidence; decided while
    /// the run goes on, so that `rerun_on` can run it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blame: Option<Blame>,
    /// The earlier attempts of a case run again under `[run] rerun_on`, in order; this
    /// record is the last attempt's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<CaseReport>,
    /// For an `inconclusive` case: what the run made of it (`[run] on_inconclusive`):
    /// `fail` and `error` fail the run, `ignore` does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_inconclusive: Option<crate::case::OnInconclusive>,
    /// A repeated case: how its repeats ended and how steady they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stability: Option<crate::record::Stability>,
    /// A repeated case: each counted repeat's own record. The case's `turns` are those
    /// of the repeat that shows its verdict (the first failing one of a failed case).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<CaseReport>,
}

impl CaseReport {
    /// Whether some repeats passed and others failed.
    pub fn flaky(&self) -> bool {
        self.stability.as_ref().is_some_and(|s| s.flaky)
    }
}

/// A checkpoint of a dynamic case, at the end of the conversation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckpointReport {
    /// The checkpoint's id.
    pub id: String,
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the case needs it.
    pub required: bool,
    /// Whether it must never match.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forbidden: bool,
    /// Whether it was reached (for a forbidden one: whether it matched).
    pub reached: bool,
    /// The turn that reached it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reached_at_turn: Option<u32>,
    /// What reached it, or its last failure.
    pub message: String,
    /// Not reached, and its last check was inconclusive (its judge could not decide).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inconclusive: bool,
}

/// What one role's model calls cost a case: spent by this run, and what the replayed
/// ones cost when they were recorded. `None` (`null`) is unknown: a call with tokens had
/// no price in the config. Never shown as 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoleCost {
    /// Spent by this run.
    pub spent: Option<f64>,
    /// Replayed from cassettes: not spent.
    pub replayed: Option<f64>,
}

impl Default for RoleCost {
    fn default() -> Self {
        RoleCost {
            spent: Some(0.0),
            replayed: Some(0.0),
        }
    }
}

impl RoleCost {
    /// Adds a spent call's cost (`None`: it had no price).
    pub fn add_spent(&mut self, cost: Option<f64>) {
        self.spent = self.spent.zip(cost).map(|(a, b)| a + b);
    }

    /// Adds a replayed call's cost.
    pub fn add_replayed(&mut self, cost: Option<f64>) {
        self.replayed = self.replayed.zip(cost).map(|(a, b)| a + b);
    }

    /// Adds another's costs.
    pub fn add(&mut self, other: RoleCost) {
        self.spent = self.spent.zip(other.spent).map(|(a, b)| a + b);
        self.replayed = self.replayed.zip(other.replayed).map(|(a, b)| a + b);
    }
}

/// What a case (or a run) cost, by role, in the config's pricing currency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// The pricing currency (`USD` unless the config's pricing names another).
    pub currency: String,
    /// Spent by this run over every role; `null` when unknown.
    pub spent: Option<f64>,
    /// What the replayed calls cost when recorded; `null` when unknown.
    pub replayed: Option<f64>,
    /// By role.
    pub by_role: BTreeMap<Role, RoleCost>,
}

impl Cost {
    /// The cost of `by_role`, in `currency`.
    pub fn of(currency: &str, by_role: BTreeMap<Role, RoleCost>) -> Cost {
        let mut total = RoleCost::default();
        for c in by_role.values() {
            total.add(*c);
        }
        Cost {
            currency: currency.to_string(),
            spent: total.spent,
            replayed: total.replayed,
            by_role,
        }
    }

    /// Adds another case's cost (a currency that differs makes the total unknown).
    pub fn add(&mut self, other: &Cost) {
        if self.currency.is_empty() {
            self.currency = other.currency.clone();
        }
        let same = self.currency == other.currency;
        for (role, c) in &other.by_role {
            let mine = self.by_role.entry(*role).or_default();
            if same {
                mine.add(*c);
            } else {
                *mine = RoleCost {
                    spent: None,
                    replayed: None,
                };
            }
        }
        let mut total = RoleCost::default();
        for c in self.by_role.values() {
            total.add(*c);
        }
        self.spent = total.spent;
        self.replayed = total.replayed;
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Counts over a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// Always `"summary"`, so the line can be told from case records.
    #[serde(rename = "type")]
    pub kind: String,
    /// Cases reported.
    pub total: u64,
    /// Passed.
    pub passed: u64,
    /// Failed, timeouts included.
    pub failed: u64,
    /// Errors (load errors included).
    pub errors: u64,
    /// Skipped.
    pub skipped: u64,
    /// Of the failed, how many timed out.
    pub timeouts: u64,
    /// Inconclusive: a judge could not decide, and nothing failed.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub inconclusive: u64,
    /// Of the inconclusive, those that fail the run (`on_inconclusive` `fail` or `error`).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub inconclusive_failing: u64,
    /// The attempts that did not pass, by whose fault: each case's last, and those
    /// `rerun_on` ran again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub blame: BTreeMap<crate::case::Party, u64>,
    /// Attempts run again under `[run] rerun_on`.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub reruns: u64,
    /// `[run] max_simulator_blame`: the run fails when a larger share of its cases
    /// failed by the simulated user's fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_simulator_blame: Option<f64>,
    /// Turns run over all cases.
    pub total_turns: u64,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// Token usage over all cases, by role: what the run spent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub usage: BTreeMap<Role, TokenUsage>,
    /// Model calls over all cases, and the retries they needed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub model_calls: u32,
    /// Of those, the calls answered from cassettes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replayed_calls: u32,
    /// Token usage of the replayed calls, by role: not spent by this run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replayed_usage: BTreeMap<Role, TokenUsage>,
    /// Retries over all model calls and HTTP agent turns.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// Whether a signal (Ctrl-C, SIGTERM, SIGHUP) stopped the run: cases it did not
    /// finish are reported as not run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The signal that stopped the run: `SIGINT`, `SIGTERM` or `SIGHUP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// Whether the run stopped early (`--fail-fast`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_early: bool,
    /// Whether the run's budget stopped it: cases it did not start are reported not run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_budget: bool,
    /// What the run's model calls cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// Repeated cases (`runs` above 1) whose pass rate was 100 %.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub stable_cases: u64,
    /// Repeated cases whose pass rate was below 100 %.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub unstable_cases: u64,
    /// Repeated cases that both passed and failed.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub flaky_cases: u64,
    /// Passed over passed and failed repeats of every case (a case run once is one
    /// repeat), when some case was repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overall_pass_rate: Option<f64>,
    /// Repeats counted over all cases.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub repeats_run: u64,
    /// Repeats early stopping saved over all cases.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub repeats_saved: u64,
    /// Passed and failed repeats so far, for `overall_pass_rate`.
    #[serde(skip)]
    tallies: Tallies,
}

/// The passed and failed repeats a summary has counted: bookkeeping for
/// `overall_pass_rate`, not part of what a summary says (two summaries that say the
/// same are equal whatever they counted from).
#[derive(Debug, Clone, Copy, Default)]
struct Tallies {
    passed: u64,
    failed: u64,
}

impl PartialEq for Tallies {
    fn eq(&self, _: &Tallies) -> bool {
        true
    }
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl Summary {
    /// An empty summary.
    pub fn new() -> Self {
        Summary {
            kind: "summary".into(),
            ..Summary::default()
        }
    }

    /// Counts one case.
    pub fn add(&mut self, r: &CaseReport) {
        self.total += 1;
        for b in r
            .attempts
            .iter()
            .chain([r])
            .filter_map(|a| a.blame.as_ref())
        {
            *self.blame.entry(b.party).or_default() += 1;
        }
        self.reruns += r.attempts.len() as u64;
        // A repeated case's turns are those of every repeat.
        self.total_turns += match r.repeats.is_empty() {
            true => u64::from(r.total_turns),
            false => r.repeats.iter().map(|x| u64::from(x.total_turns)).sum(),
        };
        for (role, u) in &r.usage {
            self.usage.entry(*role).or_default().add(*u);
        }
        for (role, u) in &r.replayed_usage {
            self.replayed_usage.entry(*role).or_default().add(*u);
        }
        self.model_calls += r.model_calls;
        self.replayed_calls += r.replayed_calls;
        self.retries += r.retries;
        if let Some(c) = &r.cost {
            self.cost.get_or_insert_with(Cost::default).add(c);
        }
        match &r.stability {
            Some(s) => {
                self.tallies.passed += u64::from(s.passed);
                self.tallies.failed += u64::from(s.failed);
                self.repeats_run += u64::from(s.runs);
                self.repeats_saved += u64::from(s.saved);
                match s.class {
                    Some(crate::record::StabilityClass::Stable) => self.stable_cases += 1,
                    Some(_) => self.unstable_cases += 1,
                    None => {}
                }
                self.flaky_cases += u64::from(s.flaky);
            }
            None => match r.status {
                Status::Passed => self.tallies.passed += 1,
                Status::Failed => self.tallies.failed += 1,
                _ => {}
            },
        }
        let (p, f) = (self.tallies.passed, self.tallies.failed);
        self.overall_pass_rate =
            (self.repeats_run > 0 && p + f > 0).then(|| p as f64 / (p + f) as f64);
        match r.status {
            Status::Passed => self.passed += 1,
            Status::Failed => self.failed += 1,
            Status::Timeout => {
                self.failed += 1;
                self.timeouts += 1
            }
            Status::Error => self.errors += 1,
            Status::Skipped => self.skipped += 1,
            Status::Inconclusive => {
                self.inconclusive += 1;
                if r.on_inconclusive != Some(crate::case::OnInconclusive::Ignore) {
                    self.inconclusive_failing += 1;
                }
            }
        }
    }

    /// True when nothing failed or errored, no inconclusive case fails the run, and the
    /// simulated user spoiled no more of it than `max_simulator_blame` allows.
    pub fn ok(&self) -> bool {
        self.failed == 0
            && self.errors == 0
            && self.inconclusive_failing == 0
            && self.simulator_blame_over().is_none()
    }

    /// Why the simulated user spoiled too much of the run, when it did: the share of
    /// the attempts run (skipped cases aside, reruns included) that failed by its
    /// fault, over the limit. Reruns can rescue such cases; this says the run's
    /// conversations were too often not a test of the agent.
    pub fn simulator_blame_over(&self) -> Option<String> {
        let limit = self.max_simulator_blame?;
        let n = self
            .blame
            .get(&crate::case::Party::Simulator)
            .copied()
            .unwrap_or(0);
        let ran = self.total.saturating_sub(self.skipped) + self.reruns;
        if n == 0 || ran == 0 {
            return None;
        }
        let share = n as f64 / ran as f64;
        (share > limit).then(|| {
            format!(
                "{n} of {ran} attempts failed by the simulated user's fault ({:.1} %), over [run] max_simulator_blame {limit}: fix the simulator before judging the agent",
                share * 100.0
            )
        })
    }
}

/// Why a reply was judged to await input, or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AwaitReason {
    /// The reply's `awaiting_input` said so (true or false).
    AgentDeclared,
    /// It called a tool that asks the user.
    ToolRequiresConfirmation,
    /// Its text reads as a question.
    ContentIsQuestion,
    /// None of the above: the agent is done.
    Completed,
}

/// The run a report describes: when it started, how long it took, and what ran against
/// what. The renderers take it with the [`Summary`] and the case records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInfo {
    /// When the run started, RFC 3339 in UTC (`2025-01-31T12:00:00Z`); see [`rfc3339`].
    pub started_at: String,
    /// Wall time of the run. When 0, the summary's `duration_ms` is shown instead.
    pub duration_ms: u64,
    /// The agentest version that ran the cases.
    pub agentest_version: String,
    /// The agent, as the console header names it (`default (process: python3 agent.py)`).
    pub agent: String,
    /// What was run: the `-i` argument (a file, a folder or a message).
    pub input: String,
    /// The command line, one argument per element.
    pub command: Vec<String>,
}

impl RunInfo {
    /// A run starting now, run by this version of agentest; set
    /// [`duration_ms`](RunInfo::duration_ms) when it ends.
    pub fn new(agent: impl Into<String>, input: impl Into<String>, command: Vec<String>) -> Self {
        RunInfo {
            started_at: rfc3339(SystemTime::now()),
            duration_ms: 0,
            agentest_version: env!("CARGO_PKG_VERSION").to_string(),
            agent: agent.into(),
            input: input.into(),
            command,
        }
    }
}

/// `t` as RFC 3339 in UTC with whole seconds: `2025-01-31T12:00:00Z`. Times before 1970
/// are shown as the epoch.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Year, month, day of a count of days since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// What a case did with its cassette, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CassetteStats {
    /// The file, relative to the working directory when possible.
    pub file: String,
    /// The mode in force.
    pub mode: String,
    /// Calls answered from the file.
    pub replayed: u32,
    /// Calls sent to the model and recorded.
    pub recorded: u32,
    /// Entries in the file that this run did not use.
    pub unused: u32,
}
