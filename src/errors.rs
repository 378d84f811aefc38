//! Errors, in two tiers, the way nextest-runner keeps them.
//!
//! User-facing errors (a bad case line, a bad config, an agent that breaks, a model that
//! cannot be reached) are values: they become a case's status (through one function,
//! `run::outcome::status_of`), or the run's exit code. A broken invariant of agentest's own is a bug: it panics, and
//! the case's panic guard reports it as that case's `error`.
//!
//! Messages are lowercase fragments that read well after "failed to" or a location, and
//! never contain a secret (settings are shown as written, before `${VAR}` expansion).

use std::path::PathBuf;

use crate::case::Location;

/// A case that could not be read: where, which field, what is wrong and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {}{message}", field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct CaseError {
    /// `file:line:column` of the problem.
    pub location: Location,
    /// The case id, when the line got far enough to have one.
    pub id: Option<String>,
    /// The field's path (`turns[1].assertions[0].type`), when one field is to blame.
    pub field: Option<String>,
    /// What is wrong and what is expected.
    pub message: String,
}

/// A problem with one field; the parser turns it into a located [`CaseError`](super::CaseError).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field's path from the case root, like `turns[1].assertions[0].type`.
    pub path: String,
    /// What is wrong and what is expected.
    pub message: String,
}

impl FieldError {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// A suites root that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The root does not exist or is not a directory.
    #[error("failed to find the suites root {path}: {reason}")]
    Root {
        /// The root.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A directory under the root could not be listed.
    #[error("failed to list {path}: {source}")]
    List {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// A config file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("failed to read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not fit the schema.
    #[error("invalid config {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
}

/// A model call that did not produce an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// No recording and no way to call the model (no API key, or replay-only mode).
    /// Outside CI such a case is ignored with this reason; on CI it fails.
    #[error("{0}")]
    Unavailable(String),
    /// The endpoint refused or failed, after any retries.
    #[error("{0}")]
    Failed(String),
    /// A call that must be replayed (on CI, or in `replay` mode) has no recording.
    #[error("{0}")]
    NotRecorded(String),
    /// A cassette file could not be read or written.
    #[error("{0}")]
    Cassette(String),
}

/// Why a step of a case (an agent's turn, a model call, a judge, a simulator, a script,
/// a hook) gave no usable answer. One type for every step, so that one function,
/// `run::outcome::status_of`, decides what it does to the case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// Something broke: the agent crashed or broke the protocol, a judge or simulator
    /// answered nonsense twice, a script crashed. The case is an `error`.
    #[error("{0}")]
    Broken(String),
    /// Something the test demands did not hold (a tool call no mock answers, a model call
    /// with no recording on CI): the case `failed`.
    #[error("{0}")]
    Failed(String),
    /// A model is needed and cannot be reached (no recording, no API key): outside CI the
    /// case is skipped with this reason, on CI it fails.
    #[error("{0}")]
    Unavailable(String),
}

impl StepError {
    /// The same error with `what` before its message (`judge \`critic\`: ...`).
    pub(crate) fn context(self, what: impl std::fmt::Display) -> StepError {
        let wrap = |m: String| format!("{what}: {m}");
        match self {
            StepError::Broken(m) => StepError::Broken(wrap(m)),
            StepError::Failed(m) => StepError::Failed(wrap(m)),
            StepError::Unavailable(m) => StepError::Unavailable(wrap(m)),
        }
    }
}

impl From<LlmError> for StepError {
    /// The one place a failed model call becomes a step's error.
    fn from(e: LlmError) -> StepError {
        match e {
            LlmError::Unavailable(m) => StepError::Unavailable(m),
            LlmError::NotRecorded(m) => StepError::Failed(m),
            LlmError::Failed(m) | LlmError::Cassette(m) => {
                StepError::Broken(format!("model call failed: {m}"))
            }
        }
    }
}

/// Why a judge gave no verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeError {
    /// The judge could not be built: no config, no `[llm]`, an invalid setting.
    #[error("{0}")]
    Setup(String),
    /// No model to be had (no recording, no API key): skipped outside CI, failed on CI.
    #[error("{0}")]
    Unavailable(String),
    /// The judge broke: it could not be reached, or answered twice without a verdict.
    #[error("{0}")]
    Broken(String),
}

impl From<StepError> for JudgeError {
    fn from(e: StepError) -> JudgeError {
        match e {
            StepError::Unavailable(m) => JudgeError::Unavailable(m),
            StepError::Broken(m) | StepError::Failed(m) => JudgeError::Broken(m),
        }
    }
}

/// An environment variable with a value agentest cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("environment variable {name}={value:?} is not valid; use {expected}")]
pub(crate) struct SettingsError {
    /// The variable.
    pub(crate) name: String,
    /// Its value, as set.
    pub(crate) value: String,
    /// What it may be.
    pub(crate) expected: String,
}
