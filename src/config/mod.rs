//! `agentest.toml`: the schema (unknown keys are errors), discovery from a suite's folder
//! upwards, and the checks done before any case runs.

mod agents;
mod command;
mod file;
mod golden;
mod judges;
mod llm;
mod modes;

pub(crate) use agents::{
    A2aAgentConfig, A2aBinding, A2aVersion, AgentConfig, ElizaAgentConfig, HttpFormat,
    HttpReplyPaths, HttpSessionRequest, LangGraphAgentConfig, OpenAiAgentConfig,
};
pub(crate) use command::own_deadline;
pub(crate) use command::CommandConfig;
pub(crate) use file::TracesConfig;
pub(crate) use file::{command_spec, ConfigChoice, CONFIG_FILE, SUITES_DIR};
pub use file::{Config, ConfigFile, Loader};
pub(crate) use golden::GoldenConfig;
pub(crate) use golden::Redaction;
#[cfg(test)]
pub(crate) use golden::RedactionConfig;
pub(crate) use judges::{Judge, JudgeConfig, JudgeDef};
pub(crate) use llm::{LlmConfig, Pricing, StructuredOutput};
pub use modes::CassetteMode;
pub(crate) use modes::UpdateMode;
