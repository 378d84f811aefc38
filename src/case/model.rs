//! The case model: what one line of a suite file means once it has been read.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::case::{Assertion, ModelSettings};
use crate::protocol::Message;

/// Where something sits in a suite file: `file:line:column`, 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The suite file, as the user named it (relative to the working directory when possible).
    pub file: Arc<PathBuf>,
    /// 1-based line number.
    pub line: usize,
    /// 1-based column; 1 when the whole line is meant.
    pub column: usize,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// What the user says in one turn: one message, or a history that ends with the new one.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// The messages to append to the conversation; the last one is the new user message.
    pub messages: Vec<Message>,
}

impl Input {
    /// The new message's text (the last message of the input).
    pub fn text(&self) -> String {
        self.messages.last().map(Message::text).unwrap_or_default()
    }
}

/// One scripted turn of a static multi-turn case.
#[derive(Debug, Clone)]
pub struct Turn {
    /// What the user says.
    pub input: Input,
    /// Checked against this turn's reply.
    pub assertions: Vec<Assertion>,
    /// Per-turn options, merged over the case's `options`.
    pub options: Option<Value>,
    /// Attachments passed to the agent in the request's `attachments`.
    pub attachments: Vec<Value>,
}

/// A persona a simulated user impersonates: written on the case, or the name of a
/// `[personas.NAME]` in the config (resolved when the case runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonaRef {
    /// Its name (the trial's last part).
    pub name: String,
    /// What it is like.
    pub description: Option<String>,
    /// The instructions that make the simulated user this persona.
    pub system_prompt: Option<String>,
    /// Written on the case (`false`: a name to look up in the config).
    pub inline: bool,
}

/// What an EvalStudio project says of one of its runs: the records' ids (kept so
/// that exported runs point at them), the connector the eval names (mapped to an agent
/// by `[connectors]`), and the project's model endpoints.
#[derive(Debug, Clone)]
pub struct EvalStudioRef {
    /// The eval's `id` (absent for a scenario read without an eval).
    pub eval_id: Option<String>,
    /// The scenario's `id`.
    pub scenario_id: Option<String>,
    /// The persona's `id`.
    pub persona_id: Option<String>,
    /// The eval's `connectorId`.
    pub connector_id: Option<String>,
    /// That connector's `name`, when `connectors.json` has it.
    pub connector_name: Option<String>,
    /// The agent that connector stands for, when it is a `langgraph` one with its server
    /// and graph (with the persona's headers over its own); `[connectors]` wins over it.
    pub connector_agent: Option<Arc<ConnectorAgent>>,
    /// The project's `llmSettings`.
    pub llms: Option<Arc<SourceLlms>>,
}

/// What a case's format says of it beyond the case model: one field on [`Case`], so a
/// format's own facts stay out of the model's other fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Origin {
    /// An EvalStudio project's eval, scenario and persona.
    EvalStudio(EvalStudioRef),
}

/// A LangGraph server and graph that an EvalStudio connector names: an agent as it
/// stands, which the run makes a `langgraph` agent. The case holds what the file says;
/// agents are the config's and the run's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConnectorAgent {
    /// The server's base URL (`baseUrl`).
    pub url: String,
    /// The graph (`config.assistantId`).
    pub assistant_id: String,
    /// Request headers (the persona's over the connector's).
    pub headers: std::collections::BTreeMap<String, String>,
    /// Sent as each run's `config` (`{"configurable": ...}`).
    pub config: Option<Value>,
}

/// The model endpoints a case's source gives its built-in judge and simulator, used
/// where `agentest.toml` sets none: an EvalStudio project's `llmSettings`, as written
/// (the run makes them endpoints, with the provider's API and `OPENAI_BASE_URL` /
/// `ANTHROPIC_BASE_URL`).
#[derive(Debug, Clone)]
pub struct SourceLlms {
    /// Where they were written, as messages name it (`shop/evalstudio.config.json
    /// llmSettings`); also what tells two projects' endpoints apart.
    pub label: String,
    /// Whose API is called.
    pub provider: Provider,
    /// The judge's model (EvalStudio's `evaluation` model); `None`: the provider's default.
    pub judge: Option<String>,
    /// The simulated user's model (EvalStudio's `persona` model); `None`: the provider's
    /// default.
    pub simulator: Option<String>,
    /// The key written in the file, when there is one (else the provider's variable
    /// holds it).
    pub api_key: Option<crate::util::ApiKey>,
}

/// A model provider EvalStudio calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// `openai`.
    OpenAi,
    /// `anthropic` (called through its OpenAI-compatible API).
    Anthropic,
}

impl Provider {
    /// The provider EvalStudio names `name`, if it is one it has.
    pub fn parse(name: &str) -> Option<Provider> {
        match name {
            "openai" => Some(Provider::OpenAi),
            "anthropic" => Some(Provider::Anthropic),
            _ => None,
        }
    }
}

/// EvalStudio's evaluation loop for a dynamic case: after every reply a judge says
/// whether the success criteria and the failure criteria are met.
#[derive(Debug, Clone, PartialEq)]
pub struct Criteria {
    /// `success_criteria`: met, the case passes.
    pub success: Option<String>,
    /// `failure_criteria`: met, the case fails (at once under `every_turn`).
    pub failure: Option<String>,
    /// `failure_criteria_mode`.
    pub mode: FailureMode,
    /// `max_messages`: user and assistant messages at most, seed messages included
    /// (default 10).
    pub max_messages: u32,
    /// `instructions`: what the simulated user wants.
    pub instructions: Option<String>,
    /// `messages`: the conversation so far, sent before the first generated turn.
    pub seed: Vec<crate::protocol::Message>,
}

/// When the failure criteria end a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailureMode {
    /// Only the last evaluation counts, when `max_messages` is reached (the default).
    #[default]
    OnMaxMessages,
    /// Any evaluation that finds them met fails the case at once.
    EveryTurn,
}

/// A checkpoint of a dynamic case.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// Unique within the case.
    pub id: String,
    /// Human-readable description.
    pub description: Option<String>,
    /// What must hold for the checkpoint to be reached.
    pub assertions: Vec<Assertion>,
    /// Checkpoints that must be reached first.
    pub after: Vec<String>,
    /// Whether the case needs it (default true).
    pub required: bool,
    /// A checkpoint that fails the case as soon as it matches.
    pub forbidden: bool,
}

/// The user-simulator settings of a dynamic case, kept as written.
#[derive(Debug, Clone)]
pub struct Simulator {
    /// `use`: a named simulator agent, or `"script"`; none means the built-in model simulator.
    pub use_: Option<String>,
    /// The rules of a scripted simulator.
    pub script: Vec<ScriptRule>,
    /// Whether the simulator may see the pending checkpoints (default: it may not, so it
    /// cannot coach the agent).
    pub show_checkpoints: bool,
    /// Whether the built-in simulator is told tau2-bench's stop signals (`###STOP###`,
    /// `###TRANSFER###`, `###OUT-OF-SCOPE###`); they are understood from any simulator.
    pub stop_signals: bool,
    /// Who the simulator plays: `simulator.options.metadata`, then `simulator.metadata`,
    /// then the [`Simulator::PROFILE_KEYS`] written directly on `simulator`.
    pub profile: serde_json::Map<String, Value>,
    /// Model settings of the built-in simulator for this case.
    pub model: ModelSettings,
    /// The whole `simulator` object.
    pub raw: Value,
}

impl Simulator {
    /// The seed's persona fields a simulator may carry directly.
    pub const PROFILE_KEYS: [&'static str; 11] = [
        "persona",
        "goal",
        "objective",
        "style",
        "constraints",
        "emotional_state",
        "knowledge_level",
        "task_instructions",
        "known_info",
        "unknown_info",
        "domain",
    ];
}

/// A case's `interactive` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interactive {
    /// A person answers when the agent awaits input and no scripted turn is left.
    pub enabled: bool,
    /// How long to wait for the person (default 5m).
    pub timeout: Option<Duration>,
}

/// One rule of a scripted simulator.
#[derive(Debug, Clone)]
pub struct ScriptRule {
    /// Applies when this matches the agent's last reply; `None` applies always.
    pub when: Option<regex::Regex>,
    /// What the simulated user says.
    pub say: Option<String>,
    /// The rule ends the conversation: the user's goal is achieved.
    pub goal_achieved: bool,
}

/// How a case talks to the agent; the seed's mode table, with the invalid row unrepresentable.
#[derive(Debug, Clone)]
pub enum Mode {
    /// One user message (or a history ending in one), one reply.
    Single {
        /// What is sent.
        input: Input,
        /// Checked against the reply.
        assertions: Vec<Assertion>,
    },
    /// A fixed script of turns in one conversation.
    Static {
        /// The turns, in order.
        turns: Vec<Turn>,
        /// Checked against the last reply.
        final_assertions: Vec<Assertion>,
    },
    /// A simulated user drives the conversation until every checkpoint is reached.
    Dynamic {
        /// The first message, when given.
        input: Option<Input>,
        /// Who plays the user.
        simulator: Box<Simulator>,
        /// What must be reached.
        checkpoints: Vec<Checkpoint>,
        /// Turn limit (default 20).
        max_turns: u32,
    },
    /// A simulated user drives the conversation, and EvalStudio's success and failure
    /// criteria are judged after every reply (its evaluation loop).
    Criteria {
        /// The first message, when given.
        input: Option<Input>,
        /// Who plays the user.
        simulator: Box<Simulator>,
        /// What is judged, the limit in messages and the seed conversation.
        criteria: Box<Criteria>,
    },
    /// An ElizaOS scenario: steps in order, evaluations, a judgment.
    Scenario(Box<crate::case::scenario::Scenario>),
}

impl Mode {
    /// `single`, `static`, `dynamic` or `scenario`. A case with criteria is a dynamic
    /// case to its reports, as EvalStudio's runs are.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Single { .. } => "single",
            Mode::Static { .. } => "static",
            Mode::Dynamic { .. } | Mode::Criteria { .. } => "dynamic",
            Mode::Scenario(_) => "scenario",
        }
    }
}

/// One test case: one line of a suite file.
#[derive(Debug, Clone)]
pub struct Case {
    /// Unique within its file.
    pub id: String,
    /// Human-readable name.
    pub name: Option<String>,
    /// Listed as ignored when true.
    pub skip: bool,
    /// The case's deadline, when it sets one.
    pub timeout: Option<Duration>,
    /// A named agent to run against.
    pub agent: Option<String>,
    /// Passed to the agent as is.
    pub options: Option<Box<Value>>,
    /// Compared with `equals` when there are no assertions.
    pub expected: Option<Box<Value>>,
    /// Free-form labels.
    pub tags: Vec<String>,
    /// Yao's `user`, passed to the agent in the request's metadata.
    pub user: Option<Box<Value>>,
    /// Yao's `team`, passed to the agent in the request's metadata.
    pub team: Option<Box<Value>>,
    /// Passed to the agent in the request.
    pub metadata: Option<Box<Value>>,
    /// Hook run before the conversation.
    pub before: Option<String>,
    /// Hook run after the conversation whenever `before` ran.
    pub after: Option<String>,
    /// The conversation shape.
    pub mode: Mode,
    /// `golden`: pin the transcript (true), or not even when the suite is pinned (false).
    pub golden: Option<bool>,
    /// `interactive`: whether a person may supply input when the script runs out.
    pub interactive: Option<Interactive>,
    /// Tool mocks from `setup.mocks`, checked before the agent's own.
    pub mocks: Vec<crate::case::Mock>,
    /// `personas`, as written: the case runs once per persona (see [`Case::persona`]).
    pub personas: Vec<PersonaRef>,
    /// The persona this trial's simulated user impersonates.
    pub persona: Option<Box<PersonaRef>>,
    /// Where the case came from, when its format says more than the case model holds
    /// (an EvalStudio eval, scenario and persona).
    pub origin: Option<Arc<Origin>>,
    /// `runs`, the gate over them and the case's budget, as written.
    pub repeats: crate::case::Repeats,
    /// Where the case was written.
    pub location: Location,
    /// The line as written, given to hooks and scripts.
    pub raw: crate::case::Raw,
}

impl Case {
    /// The display name: `name` when given, else the id.
    pub fn display_name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.id)
    }

    /// Every assertion of the case: its turns', final ones and checkpoints'.
    pub fn assertions(&self) -> Box<dyn Iterator<Item = &Assertion> + '_> {
        match &self.mode {
            Mode::Single { assertions, .. } => Box::new(assertions.iter()),
            Mode::Static {
                turns,
                final_assertions,
            } => Box::new(
                turns
                    .iter()
                    .flat_map(|t| &t.assertions)
                    .chain(final_assertions),
            ),
            Mode::Dynamic { checkpoints, .. } => {
                Box::new(checkpoints.iter().flat_map(|c| &c.assertions))
            }
            Mode::Criteria { .. } => Box::new(std::iter::empty()),
            Mode::Scenario(s) => Box::new(s.assertions()),
        }
    }

    /// The case as its trial names it within its file: the id, and the persona's name
    /// when the case runs once per persona (`T001::impatient-user`). Cassettes and
    /// golden files are named after it, so that each persona keeps its own.
    pub fn trial_id(&self) -> String {
        match &self.persona {
            Some(p) => format!("{}::{}", self.id, crate::util::slug(&p.name)),
            None => self.id.clone(),
        }
    }

    /// The EvalStudio eval, scenario and persona this case is, when it came from an
    /// EvalStudio project.
    pub fn evalstudio(&self) -> Option<&EvalStudioRef> {
        match self.origin.as_deref()? {
            Origin::EvalStudio(e) => Some(e),
        }
    }

    /// The model endpoints the case's source gives its judge and simulator, used where
    /// `agentest.toml` sets none.
    pub fn source_llms(&self) -> Option<&SourceLlms> {
        self.evalstudio().and_then(|e| e.llms.as_deref())
    }

    /// The number of turns the case scripts (dynamic cases: 0, they are open-ended).
    pub fn scripted_turns(&self) -> usize {
        match &self.mode {
            Mode::Single { .. } => 1,
            Mode::Static { turns, .. } => turns.len(),
            Mode::Dynamic { .. } | Mode::Criteria { .. } | Mode::Scenario(_) => 0,
        }
    }
}
