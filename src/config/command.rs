//! Hooks and scripts: commands run from the config's directory with JSON on stdin.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::errors::SetupError;
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
