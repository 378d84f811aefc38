//! `agentest.toml`: agents, hooks, scripts and run settings, found in the suite's
//! directory or its nearest ancestor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The file name searched for.
pub const CONFIG_FILE: &str = "agentest.toml";

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

/// The parsed contents of `agentest.toml`. Unknown keys are errors, so a typo never
/// silently falls back to a default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The default agent under test.
    pub agent: Option<AgentConfig>,
    /// Named agents, chosen by `-n NAME`, the case's `agent` or the builder.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentConfig>,
    /// Run settings.
    #[serde(default)]
    pub run: RunConfig,
    /// Hooks named by cases' `before` / `after`.
    #[serde(default)]
    pub hooks: BTreeMap<String, CommandConfig>,
    /// Scripts named by `script` assertions (`use: "scripts:NAME"`).
    #[serde(default)]
    pub scripts: BTreeMap<String, CommandConfig>,
}

/// One agent under test.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum AgentConfig {
    /// A child process speaking JSON lines on stdin/stdout, one process per case.
    Process {
        /// Program and arguments.
        command: Vec<String>,
        /// Working directory, relative to the config file's directory.
        cwd: Option<String>,
        /// Extra environment variables.
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
    /// An HTTP endpoint receiving one POST per turn.
    Http {
        /// The endpoint.
        url: String,
        /// Extra request headers.
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// Per-request timeout, like `"30s"`.
        timeout: Option<String>,
    },
}

/// `[run]`: how cases are run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Cases in flight at once when `--test-threads` / `--parallel` is not given.
    pub concurrency: Option<usize>,
    /// Default case timeout, like `"5m"`.
    pub timeout: Option<String>,
    /// A JSONL report path (relative to the config file) written under `cargo test`.
    pub report: Option<String>,
}

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

/// A loaded config with the directory relative paths resolve against.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The file, when one was found.
    pub path: Option<PathBuf>,
    /// The directory relative paths in the file resolve against.
    pub dir: PathBuf,
    /// The contents.
    pub file: ConfigFile,
}

impl Config {
    /// Finds `agentest.toml` in `start` or its nearest ancestor; an empty config when none.
    pub fn discover(start: &Path) -> Result<Config, ConfigError> {
        let start = if start.as_os_str().is_empty() {
            Path::new(".")
        } else {
            start
        };
        let start = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
        let mut dir = Some(start.as_path());
        while let Some(d) = dir {
            let candidate = d.join(CONFIG_FILE);
            if candidate.is_file() {
                return Config::load(&candidate);
            }
            dir = d.parent();
        }
        Ok(Config {
            path: None,
            dir: start.clone(),
            file: ConfigFile::default(),
        })
    }

    /// Reads one config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let path = &std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let file: ConfigFile = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Config {
            path: Some(path.to_path_buf()),
            dir,
            file,
        })
    }

    /// Where this config is, for messages: the file, or where one would be searched.
    pub fn describe(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => format!("no {CONFIG_FILE} found from {} upwards", self.dir.display()),
        }
    }
}

/// Expands `${VAR}` references from the environment. `what` names the setting for errors;
/// the value itself is never put in an error, since it may be a secret.
pub fn expand_env(text: &str, what: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!(
                "unclosed `${{` in {what}; write variables as ${{NAME}}"
            ));
        };
        let name = &after[..end];
        match std::env::var(name) {
            Ok(v) => out.push_str(&v),
            Err(_) => {
                return Err(format!(
                    "environment variable `{name}` is not set (used in {what})"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_variables_and_names_missing_ones() {
        std::env::set_var("AGENTEST_TEST_VAR", "v");
        assert_eq!(
            expand_env("a-${AGENTEST_TEST_VAR}-b", "x").unwrap(),
            "a-v-b"
        );
        let e = expand_env("${AGENTEST_SURELY_UNSET}", "[agent].url").unwrap_err();
        assert!(e.contains("AGENTEST_SURELY_UNSET") && e.contains("[agent].url"));
    }

    #[test]
    fn unknown_keys_are_errors() {
        let e =
            toml::from_str::<ConfigFile>("[agent]\ntype = \"http\"\nurll = \"x\"\n").unwrap_err();
        assert!(e.to_string().contains("urll"), "{e}");
        let e = toml::from_str::<ConfigFile>("[run]\nconcurency = 3\n").unwrap_err();
        assert!(e.to_string().contains("concurency"), "{e}");
    }
}
