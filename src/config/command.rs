//! Hooks and scripts: commands run from the config's directory with JSON on stdin.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::Config;
use crate::errors::SetupError;
use crate::util::command::CommandSpec;
use crate::util::parse_duration;

/// A hook or script: a command run from the config's directory with JSON on stdin.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandConfig {
    /// Program and arguments.
    pub command: Vec<String>,
    /// Working directory, relative to the config file's directory.
    pub cwd: Option<String>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How long it may take, like `"30s"` (default: the case's remaining time).
    pub timeout: Option<String>,
}

/// Builds a runnable command from a config entry, expanding `${VAR}`s.
pub(crate) fn command_spec(
    config: &Config,
    cmd: &CommandConfig,
    what: &str,
) -> Result<CommandSpec, SetupError> {
    if cmd.command.is_empty() {
        return Err(SetupError::EmptyCommand {
            what: what.to_string(),
            config: config.describe(),
        });
    }
    let argv = cmd
        .command
        .iter()
        .map(|a| crate::util::expand_env(a, &format!("{what}.command")))
        .collect::<Result<Vec<_>, _>>()?;
    let env = cmd
        .env
        .iter()
        .map(|(k, v)| {
            Ok((
                k.clone(),
                crate::util::expand_secret(v, &format!("{what}.env.{k}"))?,
            ))
        })
        .collect::<Result<BTreeMap<_, _>, SetupError>>()?;
    let cwd = match &cmd.cwd {
        Some(c) => config.dir.join(c),
        None => config.dir.clone(),
    };
    Ok(CommandSpec {
        argv,
        cwd,
        env,
        shown: cmd.command.join(" "),
    })
}

/// The earlier of the case's deadline and the command's own timeout.
pub(crate) fn own_deadline(
    cmd: &CommandConfig,
    deadline: tokio::time::Instant,
    what: &str,
) -> Result<tokio::time::Instant, SetupError> {
    match &cmd.timeout {
        Some(t) => {
            let d = parse_duration(t).map_err(|source| SetupError::Duration {
                key: what.to_string(),
                source,
            })?;
            Ok(deadline.min(tokio::time::Instant::now() + d))
        }
        None => Ok(deadline),
    }
}
