//! `before` / `after` hooks: config commands or functions registered in the Rust builder.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::command::CommandSpec;
use crate::config::{CommandConfig, Config};
use crate::duration::parse_duration;

/// A hook registered from Rust: receives the case as JSON; `Err` fails the hook.
pub type HookFn = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// The hooks one config and the builder define.
#[derive(Clone, Default)]
pub struct Hooks {
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

    /// Runs hook `name` with the case JSON on stdin. Errors say what failed and where to define it.
    pub async fn run(
        &self,
        name: &str,
        case: &Value,
        deadline: tokio::time::Instant,
    ) -> Result<(), String> {
        if let Some(f) = self.functions.get(name) {
            let f = f.clone();
            let case = case.clone();
            return tokio::task::spawn_blocking(move || f(&case))
                .await
                .map_err(|e| format!("hook `{name}` panicked: {e}"))?
                .map_err(|e| format!("hook `{name}` failed: {e}"));
        }
        let Some(cmd) = self.commands.get(name) else {
            return Err(format!(
                "hook `{name}` is not defined; add [hooks.\"{name}\"] with `command = [...]` to {} or register it with Harness::hook",
                self.config.describe()
            ));
        };
        let spec = command_spec(&self.config, cmd, &format!("[hooks.\"{name}\"]"))?;
        let deadline = own_deadline(cmd, deadline, &format!("[hooks.\"{name}\"].timeout"))?;
        let out = spec
            .run(case.to_string().as_bytes(), deadline)
            .await
            .map_err(|e| format!("hook `{name}`: {e}"))?;
        if out.success {
            Ok(())
        } else {
            Err(format!(
                "hook `{name}` failed ({}){}",
                out.status,
                if out.stderr_tail.is_empty() {
                    String::new()
                } else {
                    format!("; stderr:\n{}", out.stderr_tail)
                }
            ))
        }
    }
}

/// Builds a runnable command from a config entry, expanding `${VAR}`s.
pub(crate) fn command_spec(
    config: &Config,
    cmd: &CommandConfig,
    what: &str,
) -> Result<CommandSpec, String> {
    if cmd.command.is_empty() {
        return Err(format!("{what}.command is empty in {}", config.describe()));
    }
    let argv = cmd
        .command
        .iter()
        .map(|a| crate::config::expand_env(a, &format!("{what}.command")))
        .collect::<Result<Vec<_>, _>>()?;
    let env = cmd
        .env
        .iter()
        .map(|(k, v)| {
            Ok((
                k.clone(),
                crate::config::expand_env(v, &format!("{what}.env.{k}"))?,
            ))
        })
        .collect::<Result<BTreeMap<_, _>, String>>()?;
    let cwd = match &cmd.cwd {
        Some(c) => config.dir.join(c),
        None => config.dir.clone(),
    };
    Ok(CommandSpec { argv, cwd, env })
}

/// The earlier of the case's deadline and the command's own timeout.
pub(crate) fn own_deadline(
    cmd: &CommandConfig,
    deadline: tokio::time::Instant,
    what: &str,
) -> Result<tokio::time::Instant, String> {
    match &cmd.timeout {
        Some(t) => {
            let d = parse_duration(t).map_err(|e| format!("{what}: {e}"))?;
            Ok(deadline.min(tokio::time::Instant::now() + d))
        }
        None => Ok(deadline),
    }
}
