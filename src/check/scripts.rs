//! `script` assertions: config commands or functions registered in the Rust builder.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::config::{command_spec, own_deadline};
use crate::config::{CommandConfig, Config};
use crate::errors::{ScriptAnswerError, ScriptError};

/// A script's verdict: [`Check::pass`] or [`Check::fail`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Check {
    /// Whether the reply is acceptable.
    pub passed: bool,
    /// Why, shown when it fails.
    pub message: Option<String>,
}

impl Check {
    /// The reply is acceptable.
    pub fn pass() -> Self {
        Check {
            passed: true,
            message: None,
        }
    }

    /// The reply is not acceptable, and why.
    pub fn fail(message: impl Into<String>) -> Self {
        Check {
            passed: false,
            message: Some(message.into()),
        }
    }
}

/// A script registered from Rust: receives `{output, input, response, conversation, value,
/// metadata}`; `Err` means the script itself broke (a case error, not a failure).
pub(crate) type ScriptFn = Arc<dyn Fn(&Value) -> Result<Check, String> + Send + Sync>;

/// The scripts one config and the builder define.
#[derive(Clone, Default)]
pub struct Scripts {
    commands: BTreeMap<String, CommandConfig>,
    functions: HashMap<String, ScriptFn>,
    config: Arc<Config>,
}

impl Scripts {
    pub(crate) fn new(config: Arc<Config>, functions: HashMap<String, ScriptFn>) -> Self {
        Scripts {
            commands: config.file.scripts.clone(),
            functions,
            config,
        }
    }

    /// Whether a script of that name is defined (in the config or the builder).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.functions.contains_key(name) || self.commands.contains_key(name)
    }

    /// The error for an undefined script: where to define it.
    pub(crate) fn undefined(&self, name: &str) -> ScriptError {
        ScriptError::Undefined {
            name: name.to_string(),
            config: self.config.describe(),
        }
    }

    /// Runs script `name` on `input` (the reply, the conversation, the assertion's
    /// value and metadata): `Ok((passed, why))`, or `Err` when the script broke.
    pub(crate) async fn run(
        &self,
        name: &str,
        input: Value,
        deadline: tokio::time::Instant,
    ) -> Result<(bool, String), ScriptError> {
        if let Some(f) = self.functions.get(name) {
            let f = f.clone();
            let joined =
                tokio::time::timeout_at(deadline, tokio::task::spawn_blocking(move || f(&input)))
                    .await
                    .map_err(|_| ScriptError::Deadline {
                        name: name.to_string(),
                    })?;
            let check = joined
                .map_err(|e| ScriptError::Panicked {
                    name: name.to_string(),
                    message: crate::util::panic_text(e),
                })?
                .map_err(|message| ScriptError::Returned {
                    name: name.to_string(),
                    message,
                })?;
            return Ok((
                check.passed,
                check
                    .message
                    .unwrap_or_else(|| format!("script `{name}` rejected the reply")),
            ));
        }
        let out = self.command(name, &input, deadline).await?;
        parse_answer(&out.stdout).map_err(|source| ScriptError::BadAnswer {
            name: name.to_string(),
            source,
            stderr: out.stderr_tail,
        })
    }

    /// Runs `[scripts.NAME]` with `input` as JSON on stdin, to its end; its stdout
    /// (a generator's cases). Only configured scripts: a registered function answers
    /// assertions, not this.
    pub(crate) async fn run_raw(
        &self,
        name: &str,
        input: &Value,
        deadline: tokio::time::Instant,
    ) -> Result<String, ScriptError> {
        Ok(self.command(name, input, deadline).await?.stdout)
    }

    /// Runs the command of `[scripts.NAME]`; a non-zero exit is an error with its stderr.
    async fn command(
        &self,
        name: &str,
        input: &Value,
        deadline: tokio::time::Instant,
    ) -> Result<crate::util::command::CommandOutput, ScriptError> {
        let Some(cmd) = self.commands.get(name) else {
            return Err(self.undefined(name));
        };
        let what = format!("[scripts.\"{name}\"]");
        let spec = command_spec(&self.config, cmd, &what)?;
        let deadline = own_deadline(cmd, deadline, &format!("{what}.timeout"))?;
        let out = spec
            .run(input.to_string().as_bytes(), deadline)
            .await
            .map_err(|source| ScriptError::Command {
                name: name.to_string(),
                source,
            })?;
        if !out.success {
            return Err(ScriptError::Crashed {
                name: name.to_string(),
                status: out.status,
                stderr: out.stderr_tail,
            });
        }
        Ok(out)
    }
}

/// Reads `{"pass" or "passed": bool, "message": "..."}` from a script's stdout (the last non-empty line).
fn parse_answer(stdout: &str) -> Result<(bool, String), ScriptAnswerError> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .ok_or(ScriptAnswerError::Nothing)?;
    let v: Value =
        serde_json::from_str(line.trim()).map_err(|source| ScriptAnswerError::NotJson {
            line: crate::util::clip(line),
            source,
        })?;
    let passed = v
        .get("pass")
        .or_else(|| v.get("passed"))
        .and_then(Value::as_bool)
        .ok_or_else(|| ScriptAnswerError::NoVerdict {
            line: crate::util::clip(line),
        })?;
    let message = v
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or(if passed {
            "passed"
        } else {
            "the script rejected the reply"
        });
    Ok((passed, message.to_string()))
}

#[cfg(test)]
mod tests {
    use super::parse_answer;
    use crate::errors::ScriptAnswerError;

    #[test]
    fn reads_both_spellings_and_rejects_garbage() {
        assert!(parse_answer("{\"pass\": true}\n").unwrap().0);
        assert_eq!(
            parse_answer("log\n{\"passed\": false, \"message\": \"too low\"}").unwrap(),
            (false, "too low".into())
        );
        assert!(matches!(parse_answer(""), Err(ScriptAnswerError::Nothing)));
        assert!(matches!(
            parse_answer("nope"),
            Err(ScriptAnswerError::NotJson { .. })
        ));
        assert!(matches!(
            parse_answer("{\"ok\": 1}"),
            Err(ScriptAnswerError::NoVerdict { .. })
        ));
    }
}
