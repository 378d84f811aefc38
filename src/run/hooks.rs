//! `before` / `after` hooks: config commands or functions registered in the Rust builder.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::config::{command_spec, own_deadline};
use crate::config::{CommandConfig, Config};
use crate::errors::HookError;
use crate::util::panic_text;

/// A hook registered from Rust: receives the case as JSON; `Err` fails the hook.
pub(crate) type HookFn = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// The hooks one config and the builder define.
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    commands: BTreeMap<String, CommandConfig>,
    functions: HashMap<String, HookFn>,
    config: Arc<Config>,
}

impl Hooks {
    pub(crate) fn new(config: Arc<Config>, functions: HashMap<String, HookFn>) -> Self {
        Hooks {
            commands: config.file.hooks.clone(),
            functions,
            config,
        }
    }

    /// Whether a hook of that name is defined (in the config or the builder).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.functions.contains_key(name) || self.commands.contains_key(name)
    }

    /// The error for an undefined hook: where to define it.
    pub(crate) fn undefined(&self, name: &str) -> HookError {
        HookError::Undefined {
            name: name.to_string(),
            config: self.config.describe(),
        }
    }

    /// Runs hook `name` with the case JSON on stdin. Errors say what failed and where to define it.
    pub(crate) async fn run(
        &self,
        name: &str,
        case: &Value,
        deadline: tokio::time::Instant,
    ) -> Result<(), HookError> {
        if let Some(f) = self.functions.get(name) {
            let f = f.clone();
            let case = case.clone();
            // Off the async threads, and under the deadline: a slow hook must not
            // hold the case past it.
            let joined =
                tokio::time::timeout_at(deadline, tokio::task::spawn_blocking(move || f(&case)))
                    .await
                    .map_err(|_| HookError::Deadline {
                        name: name.to_string(),
                    })?;
            return joined
                .map_err(|e| HookError::Panicked {
                    name: name.to_string(),
                    message: panic_text(e),
                })?
                .map_err(|message| HookError::Returned {
                    name: name.to_string(),
                    message,
                });
        }
        let Some(cmd) = self.commands.get(name) else {
            return Err(self.undefined(name));
        };
        let spec = command_spec(&self.config, cmd, &format!("[hooks.\"{name}\"]"))?;
        let deadline = own_deadline(cmd, deadline, &format!("[hooks.\"{name}\"].timeout"))?;
        let out = spec
            .run(case.to_string().as_bytes(), deadline)
            .await
            .map_err(|source| HookError::Command {
                name: name.to_string(),
                source,
            })?;
        if out.success {
            Ok(())
        } else {
            Err(HookError::Exit {
                name: name.to_string(),
                status: out.status,
                stderr: out.stderr_tail,
            })
        }
    }
}
