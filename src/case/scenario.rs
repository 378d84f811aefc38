//! ElizaOS scenarios in the case model: an environment, setup, steps run in order
//! (a message, a code snippet, a simulated conversation), evaluations on each, and a
//! judgment over all of them.

use std::time::Duration;

use serde_json::Value;

use crate::case::{Assertion, ModelSettings};

/// A scenario, read from a `*.scenario.yaml` file (or one combination of a matrix).
#[derive(Debug, Clone)]
pub struct Scenario {
    /// `description`.
    pub description: String,
    /// Where code steps and file evaluators run.
    pub environment: Environment,
    /// `setup.virtual_fs`: files written into the environment first, by relative path.
    pub virtual_fs: Vec<(String, String)>,
    /// `setup.mocks`, as written.
    pub mocks: Vec<Value>,
    /// `run`, in order.
    pub steps: Vec<Step>,
    /// `judgment.strategy`.
    pub judgment: Judgment,
    /// For a matrix combination: each axis's parameter path and the value it took.
    pub parameters: Vec<(String, Value)>,
}

impl Scenario {
    /// Every evaluation of every step (a conversation's turn and final ones included).
    pub fn evaluations(&self) -> impl Iterator<Item = &Evaluation> {
        self.steps.iter().flat_map(|s| {
            let conversation: Box<dyn Iterator<Item = &Evaluation>> = match &s.action {
                Action::Conversation { conversation, .. } => Box::new(
                    conversation
                        .turn_evaluations
                        .iter()
                        .chain(&conversation.final_evaluations),
                ),
                _ => Box::new(std::iter::empty()),
            };
            s.evaluations.iter().chain(conversation)
        })
    }

    /// The conversations of its conversation steps.
    pub fn conversations(&self) -> impl Iterator<Item = &Conversation> {
        self.steps.iter().filter_map(|s| match &s.action {
            Action::Conversation { conversation, .. } => Some(conversation.as_ref()),
            _ => None,
        })
    }

    /// Whether anything but its `llm_judge` evaluations asks the built-in judge: a
    /// `custom_condition`, or a judged conversation evaluator.
    pub fn needs_judge(&self) -> bool {
        let judged = self.evaluations().any(|e| match &e.check {
            Evaluator::ConversationFlow { .. } | Evaluator::ContextRetention { .. } => true,
            Evaluator::UserSatisfaction { method, .. } => {
                *method != SatisfactionMethod::KeywordAnalysis
            }
            _ => false,
        });
        judged
            || self
                .conversations()
                .any(|c| c.termination.iter().any(|t| t.judge.is_some()))
    }

    /// The evaluations that are agentest assertions (`string_contains`, `regex_match`,
    /// `llm_judge`).
    pub fn assertions(&self) -> impl Iterator<Item = &Assertion> {
        self.evaluations().filter_map(|e| match &e.check {
            Evaluator::Assertion(a) => Some(a.as_ref()),
            _ => None,
        })
    }
}

/// `environment.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    /// A fresh working folder under the system's temp folder.
    Local,
    /// E2B's remote sandboxes: not supported here.
    E2b,
}

/// `judgment.strategy`: over every evaluation of every step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judgment {
    /// Every evaluation passes.
    AllPass,
    /// At least one evaluation passes.
    AnyPass,
}

/// One `run[]` step.
#[derive(Debug, Clone)]
pub struct Step {
    /// `name`, when given.
    pub name: Option<String>,
    /// What the step does.
    pub action: Action,
    /// `evaluations`: checked on the step's result.
    pub evaluations: Vec<Evaluation>,
}

/// What a step does.
#[derive(Debug, Clone)]
pub enum Action {
    /// `input`: one message to the agent.
    Message(String),
    /// `lang` + `code`: a snippet run in the environment.
    Code {
        /// The interpreter.
        lang: Lang,
        /// The source.
        code: String,
    },
    /// `conversation`: a simulated user talks to the agent, starting from `input`.
    Conversation {
        /// The first message (`input`), when given.
        input: Option<String>,
        /// How the conversation goes and ends.
        conversation: Box<Conversation>,
    },
}

/// A code step's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// `bash` / `sh`.
    Shell,
    /// `python` / `python3`.
    Python,
    /// `node` / `javascript` / `js`.
    Node,
    /// `typescript` / `ts`: run with `node --experimental-strip-types`.
    TypeScript,
}

impl Lang {
    /// The name messages use.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Shell => "shell",
            Lang::Python => "python",
            Lang::Node => "javascript",
            Lang::TypeScript => "typescript",
        }
    }
}

/// A `conversation` block.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// `max_turns` (2 to 20).
    pub max_turns: u32,
    /// `timeout_per_turn_ms` (default 30 s).
    pub timeout_per_turn: Duration,
    /// `total_timeout_ms` (default 5 min).
    pub total_timeout: Duration,
    /// `user_simulator`.
    pub simulator: UserSimulator,
    /// `termination_conditions`, checked after each agent turn.
    pub termination: Vec<EndCondition>,
    /// `turn_evaluations`: after every agent reply.
    pub turn_evaluations: Vec<Evaluation>,
    /// `final_evaluations`: once the conversation ended.
    pub final_evaluations: Vec<Evaluation>,
}

/// `user_simulator`.
#[derive(Debug, Clone)]
pub struct UserSimulator {
    /// Who the simulated user is.
    pub persona: String,
    /// What they want.
    pub objective: String,
    /// `style`, `constraints`, `emotional_state`, `knowledge_level`, as written.
    pub profile: serde_json::Map<String, Value>,
    /// `model_type` (an `[llms.NAME]`), `temperature` (default 0.7), `max_tokens`
    /// (default 200).
    pub model: ModelSettings,
}

/// One termination condition.
#[derive(Debug, Clone)]
pub struct EndCondition {
    /// `type`.
    pub kind: TerminationKind,
    /// `keywords`, for the keyword kinds (defaults documented in docs/formats/eliza.md).
    pub keywords: Vec<String>,
    /// `custom_condition`'s `llm_judge`: the question and the confidence it needs.
    pub judge: Option<(String, f64)>,
}

/// `termination_conditions[].type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminationKind {
    /// `max_turns_reached`.
    MaxTurnsReached,
    /// `user_expresses_satisfaction`: keywords in the user's words.
    UserExpressesSatisfaction,
    /// `agent_provides_solution`: keywords in the agent's words.
    AgentProvidesSolution,
    /// `conversation_stuck`: the agent repeats itself.
    ConversationStuck,
    /// `escalation_needed`: keywords in the agent's words.
    EscalationNeeded,
    /// `goal_achieved`: the simulator says so.
    GoalAchieved,
    /// `custom_condition`: a judge decides.
    CustomCondition,
}

impl TerminationKind {
    /// Every kind, as written in files.
    pub const NAMES: [&'static str; 7] = [
        "max_turns_reached",
        "user_expresses_satisfaction",
        "agent_provides_solution",
        "conversation_stuck",
        "escalation_needed",
        "goal_achieved",
        "custom_condition",
    ];
}

/// One evaluation, with its type as written.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// `type`, as written.
    pub type_name: String,
    /// The evaluation as written, for reports.
    pub raw: Value,
    /// What it checks.
    pub check: Evaluator,
}

/// Whether `path` names something inside a scenario's environment folder: relative, no
/// `..`, and not the folder itself. `virtual_fs` keys and the file evaluators' paths
/// keep to it, so a scenario never writes or reads outside its folder.
pub(crate) fn inside_environment(path: &str) -> bool {
    use std::path::Component;
    let p = std::path::Path::new(path);
    p.is_relative()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && p.components().any(|c| matches!(c, Component::Normal(_)))
}

/// What an evaluation checks.
#[derive(Debug, Clone)]
pub enum Evaluator {
    /// `string_contains`, `regex_match` and `llm_judge`: checks agentest's own cases
    /// have, on the step's reply (a code step's stdout).
    Assertion(Box<Assertion>),
    /// `file_exists`: `path` exists in the environment.
    FileExists {
        /// Relative to the environment's folder.
        path: String,
    },
    /// `file_contains`: the file at `path` contains `value`.
    FileContains {
        /// Relative to the environment's folder.
        path: String,
        /// The substring.
        value: String,
    },
    /// `command_exit_code_is`: `command` run in the environment exits with
    /// `expected_code`.
    CommandExitCodeIs {
        /// A shell command.
        command: String,
        /// The exit code wanted.
        expected_code: i32,
    },
    /// `trajectory_contains_action`: the agent called a tool, or reported an action,
    /// named `action` (compared across UPPER_SNAKE, snake, kebab and dotted forms).
    TrajectoryContainsAction {
        /// The action.
        action: String,
    },
    /// `execution_time`: the step took between `min` and `max`.
    ExecutionTime {
        /// `max_duration_ms`.
        max: Option<Duration>,
        /// `min_duration_ms`.
        min: Option<Duration>,
        /// `target_duration_ms`: reported, not checked.
        target: Option<Duration>,
    },
    /// `conversation_length`: the number of turns.
    ConversationLength {
        /// `min_turns`.
        min: Option<u32>,
        /// `max_turns`.
        max: Option<u32>,
        /// `optimal_turns`: reported, not checked.
        optimal: Option<u32>,
        /// `target_range: [min, max]`.
        target_range: Option<(u32, u32)>,
    },
    /// `conversation_flow`: patterns a judge must find.
    ConversationFlow {
        /// `required_patterns`.
        patterns: Vec<String>,
        /// `flow_quality_threshold` (default 0.7).
        threshold: f64,
    },
    /// `user_satisfaction`.
    UserSatisfaction {
        /// `satisfaction_threshold` (default 0.7).
        threshold: f64,
        /// `indicators: {positive: [...], negative: [...]}`.
        positive: Vec<String>,
        /// The negative indicators.
        negative: Vec<String>,
        /// `measurement_method`.
        method: SatisfactionMethod,
    },
    /// `context_retention`: what the agent must still remember.
    ContextRetention {
        /// `test_memory_of`.
        memory_of: Vec<String>,
        /// `retention_turns`.
        retention_turns: Option<u32>,
        /// `memory_accuracy_threshold` (default 0.7).
        threshold: f64,
    },
}

/// `user_satisfaction.measurement_method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SatisfactionMethod {
    /// Counted from the indicators, deterministically.
    KeywordAnalysis,
    /// A judge reads the sentiment's progression.
    SentimentAnalysis,
    /// A judge assesses satisfaction.
    LlmJudge,
}

/// Every evaluator type a scenario may use.
pub(crate) const EVALUATOR_TYPES: [&str; 12] = [
    "string_contains",
    "regex_match",
    "file_exists",
    "file_contains",
    "command_exit_code_is",
    "trajectory_contains_action",
    "llm_judge",
    "execution_time",
    "conversation_length",
    "conversation_flow",
    "user_satisfaction",
    "context_retention",
];
