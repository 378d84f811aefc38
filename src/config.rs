//! `agentest.toml`: agents, hooks, scripts and run settings, found in the suite's
//! directory or its nearest ancestor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::errors::ConfigError;
use crate::util::command::CommandSpec;
use crate::util::parse_duration;
use serde::Deserialize;
use toml::Spanned;

/// The file name searched for.
pub const CONFIG_FILE: &str = "agentest.toml";

/// The parsed contents of `agentest.toml`. Unknown keys are errors, so a typo never
/// silently falls back to a default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The default agent under test, as written.
    agent: Option<Spanned<RawAgent>>,
    /// Named agents, as written.
    #[serde(default)]
    agents: BTreeMap<String, Spanned<RawAgent>>,
    /// Run settings.
    #[serde(default)]
    pub run: RunConfig,
    /// Hooks named by cases' `before` / `after`.
    #[serde(default)]
    pub hooks: BTreeMap<String, CommandConfig>,
    /// Scripts named by `script` assertions (`use: "scripts:NAME"`).
    #[serde(default)]
    pub scripts: BTreeMap<String, CommandConfig>,
    /// The default model endpoint.
    pub llm: Option<crate::config::LlmConfig>,
    /// Named model endpoints.
    #[serde(default)]
    pub llms: BTreeMap<String, crate::config::LlmConfig>,
    /// Golden transcripts: which suites are pinned, and redactions.
    #[serde(default)]
    pub golden: GoldenConfig,
}

/// The kinds of agent a config can define.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum AgentKind {
    Process,
    Http,
    #[serde(rename = "openai")]
    OpenAi,
}

/// An agent table as written: every kind's keys, checked against the kind afterwards.
/// (A serde-tagged enum would lose the line of an unknown key; this keeps it.)
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    #[serde(rename = "type")]
    kind: AgentKind,
    command: Option<Vec<String>>,
    cwd: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    timeout: Option<String>,
    llm: Option<String>,
    model: Option<String>,
    system: Option<String>,
    system_file: Option<String>,
    tools: Option<Vec<serde_json::Value>>,
    tools_file: Option<String>,
    tools_url: Option<String>,
    max_tool_rounds: Option<u32>,
    mocks: Option<Vec<serde_json::Value>>,
}

/// An `openai` agent: a model, a system prompt and tools, with the tool loop run by the
/// harness against mocks (or, with `--live`, the real tool endpoint).
#[derive(Debug, Clone, Default)]
pub struct OpenAiAgentConfig {
    /// `[llms.NAME]` to use (default `[llm]`).
    pub llm: Option<String>,
    /// Overrides the endpoint's model.
    pub model: Option<String>,
    /// The system prompt, inline.
    pub system: Option<String>,
    /// The system prompt, from a file relative to the config.
    pub system_file: Option<String>,
    /// OpenAI tool schemas, inline.
    pub tools: Vec<serde_json::Value>,
    /// OpenAI tool schemas, from a JSON file (an array) relative to the config.
    pub tools_file: Option<String>,
    /// Where tool calls go in live mode: each call is POSTed as `{name, arguments}`.
    pub tools_url: Option<String>,
    /// Model calls per turn before the tool loop gives up (default 8).
    pub max_tool_rounds: Option<u32>,
    /// Mocks for this agent's tools (a case's `setup.mocks` come first).
    pub mocks: Vec<serde_json::Value>,
}

/// One agent under test, checked against its kind.
#[derive(Debug, Clone)]
pub enum AgentConfig {
    /// A child process speaking JSON lines on stdin/stdout, one process per case.
    Process {
        /// Program and arguments.
        command: Vec<String>,
        /// Working directory, relative to the config file's directory.
        cwd: Option<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// How long one reply may take, like `"30s"` (default: the case's deadline).
        timeout: Option<String>,
    },
    /// An HTTP endpoint receiving one POST per turn.
    Http {
        /// The endpoint.
        url: String,
        /// Extra request headers.
        headers: BTreeMap<String, String>,
        /// Per-request timeout, like `"30s"`.
        timeout: Option<String>,
    },
    /// A model with a system prompt and tools; the harness runs the tool loop.
    OpenAi(OpenAiAgentConfig),
}

impl RawAgent {
    fn check(self) -> Result<AgentConfig, String> {
        let given = [
            ("command", self.command.is_some()),
            ("cwd", self.cwd.is_some()),
            ("env", !self.env.is_empty()),
            ("url", self.url.is_some()),
            ("headers", !self.headers.is_empty()),
            ("timeout", self.timeout.is_some()),
            ("llm", self.llm.is_some()),
            ("model", self.model.is_some()),
            ("system", self.system.is_some()),
            ("system_file", self.system_file.is_some()),
            ("tools", self.tools.is_some()),
            ("tools_file", self.tools_file.is_some()),
            ("tools_url", self.tools_url.is_some()),
            ("max_tool_rounds", self.max_tool_rounds.is_some()),
            ("mocks", self.mocks.is_some()),
        ];
        let (kind, allowed): (&str, &[&str]) = match self.kind {
            AgentKind::Process => ("process", &["command", "cwd", "env", "timeout"]),
            AgentKind::Http => ("http", &["url", "headers", "timeout"]),
            AgentKind::OpenAi => (
                "openai",
                &[
                    "llm",
                    "model",
                    "system",
                    "system_file",
                    "tools",
                    "tools_file",
                    "tools_url",
                    "max_tool_rounds",
                    "mocks",
                ],
            ),
        };
        if let Some((key, _)) = given
            .iter()
            .find(|(k, present)| *present && !allowed.contains(k))
        {
            return Err(format!(
                "`{key}` does not apply to {kind} agents; remove it or change `type`"
            ));
        }
        match self.kind {
            AgentKind::Process => {
                let command = self
                    .command
                    .ok_or("a process agent needs `command = [\"program\", \"arg\", ...]`")?;
                if command.is_empty() {
                    return Err("`command` is empty; give the program and its arguments".into());
                }
                Ok(AgentConfig::Process {
                    command,
                    cwd: self.cwd,
                    env: self.env,
                    timeout: self.timeout,
                })
            }
            AgentKind::Http => {
                let url = self
                    .url
                    .ok_or("an http agent needs `url = \"http://...\"`")?;
                Ok(AgentConfig::Http {
                    url,
                    headers: self.headers,
                    timeout: self.timeout,
                })
            }
            AgentKind::OpenAi => {
                if self.system.is_some() && self.system_file.is_some() {
                    return Err("give `system` or `system_file`, not both".into());
                }
                if self.tools.is_some() && self.tools_file.is_some() {
                    return Err("give `tools` or `tools_file`, not both".into());
                }
                if self.max_tool_rounds == Some(0) {
                    return Err("`max_tool_rounds` must be at least 1".into());
                }
                Ok(AgentConfig::OpenAi(OpenAiAgentConfig {
                    llm: self.llm,
                    model: self.model,
                    system: self.system,
                    system_file: self.system_file,
                    tools: self.tools.unwrap_or_default(),
                    tools_file: self.tools_file,
                    tools_url: self.tools_url,
                    max_tool_rounds: self.max_tool_rounds,
                    mocks: self.mocks.unwrap_or_default(),
                }))
            }
        }
    }
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
    /// Cassette mode: auto, replay, strict, record or off (`AGENTEST_CASSETTES` wins).
    pub cassettes: Option<String>,
    /// Seed for mock failure rates (`AGENTEST_SEED` wins; default 0).
    pub seed: Option<u64>,
    /// Tools whose call means the agent waits for the user (default: request_confirmation,
    /// ask_user, get_user_input).
    pub input_tools: Option<Vec<String>>,
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
    /// `[agent]`, checked.
    pub agent: Option<AgentConfig>,
    /// `[agents.NAME]`, checked.
    pub agents: BTreeMap<String, AgentConfig>,
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
            ..Config::default()
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
        let check = |raw: &Spanned<RawAgent>, what: String| {
            raw.get_ref().clone().check().map_err(|e| {
                let line = text[..raw.span().start.min(text.len())]
                    .lines()
                    .count()
                    .max(1);
                ConfigError::Parse {
                    path: path.to_path_buf(),
                    message: format!("{what} (line {line}): {e}"),
                }
            })
        };
        let agent = file
            .agent
            .as_ref()
            .map(|a| check(a, "[agent]".into()))
            .transpose()?;
        let agents = file
            .agents
            .iter()
            .map(|(name, a)| Ok((name.clone(), check(a, format!("[agents.\"{name}\"]"))?)))
            .collect::<Result<_, ConfigError>>()?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let config = Config {
            path: Some(path.to_path_buf()),
            dir,
            file,
            agent,
            agents,
        };
        config
            .check_values()
            .map_err(|message| ConfigError::Parse {
                path: path.to_path_buf(),
                message,
            })?;
        Ok(config)
    }

    /// Checks the values TOML cannot: durations, counts, URLs (those without `${VAR}`,
    /// which can only be checked once the environment is known).
    fn check_values(&self) -> Result<(), String> {
        let timeout = |value: &Option<String>, what: &str| {
            match value {
            Some(t) => match crate::util::parse_duration(t) {
                Ok(d) if d.is_zero() => Err(format!("{what}: a timeout of zero would fail every case; remove it or give a duration like \"30s\"")),
                Ok(_) => Ok(()),
                Err(e) => Err(format!("{what}: {e}")),
            },
            None => Ok(()),
        }
        };
        timeout(&self.file.run.timeout, "[run].timeout")?;
        Redaction::compile_all(&self.file.golden)?;
        if let Some(mode) = &self.file.run.cassettes {
            CassetteMode::parse(mode).map_err(|e| format!("[run].cassettes: {e}"))?;
        }
        let llms = self.file.llm.iter().map(|l| ("[llm]".to_string(), l));
        let llms = llms.chain(
            self.file
                .llms
                .iter()
                .map(|(n, l)| (format!("[llms.\"{n}\"]"), l)),
        );
        for (what, l) in llms {
            timeout(&l.timeout, &format!("{what}.timeout"))?;
            if l.max_in_flight == Some(0) {
                return Err(format!("{what}.max_in_flight must be at least 1"));
            }
            if let Some(t) = l.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
                return Err(format!("{what}.temperature {t} is outside 0..=2"));
            }
        }
        if self.file.run.concurrency == Some(0) {
            return Err("[run].concurrency: must be at least 1".into());
        }
        let named = self.agent.iter().map(|a| ("[agent]".to_string(), a));
        let named = named.chain(
            self.agents
                .iter()
                .map(|(n, a)| (format!("[agents.\"{n}\"]"), a)),
        );
        for (what, agent) in named {
            match agent {
                AgentConfig::OpenAi(o) => match &o.llm {
                    Some(n) if !self.file.llms.contains_key(n) => {
                        return Err(format!("{what}.llm names \"{n}\", which is not defined; add [llms.\"{n}\"] with base_url, model and api_key_env"));
                    }
                    None if self.file.llm.is_none() => {
                        return Err(format!("{what} is an openai agent but there is no model endpoint: add an [llm] section (base_url, model, api_key_env) or name one with llm = \"NAME\""));
                    }
                    _ => {}
                },
                AgentConfig::Process { timeout: t, .. } => timeout(t, &format!("{what}.timeout"))?,
                AgentConfig::Http {
                    url, timeout: t, ..
                } => {
                    timeout(t, &format!("{what}.timeout"))?;
                    if !url.contains("${") {
                        reqwest::Url::parse(url)
                            .map_err(|e| format!("{what}.url \"{url}\" is not a valid URL: {e}"))?;
                    }
                }
            }
        }
        for (kind, table) in [("hooks", &self.file.hooks), ("scripts", &self.file.scripts)] {
            for (name, cmd) in table {
                timeout(&cmd.timeout, &format!("[{kind}.\"{name}\"].timeout"))?;
                if cmd.command.is_empty() {
                    return Err(format!(
                        "[{kind}.\"{name}\"].command is empty; give the program and its arguments"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Where this config is, for messages: the file, or where one would be searched.
    pub fn describe(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => format!("no {CONFIG_FILE} found from {} upwards", self.dir.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::expand_env;

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
        let e =
            toml::from_str::<ConfigFile>("\n[agent]\ntype = \"http\"\nurll = \"x\"\n").unwrap_err();
        assert!(e.to_string().contains("line 4"), "{e}");
    }
}

/// `[llm]` / `[llms.NAME]`: one OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// Base URL up to `/chat/completions`, like `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// The name of the environment variable that holds the API key (never the key).
    pub api_key_env: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Completion token limit.
    pub max_tokens: Option<u32>,
    /// Per-request timeout, like `"60s"`.
    pub timeout: Option<String>,
    /// Extra headers (values may use `${VAR}`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Retries after the first try on 429, 5xx, timeouts and dropped connections (default 4).
    pub max_retries: Option<u32>,
    /// Requests in flight at once to this endpoint, per process (default 16).
    pub max_in_flight: Option<usize>,
    /// Requests started per minute, per process (default: no limit).
    pub requests_per_minute: Option<u32>,
}

/// `[[golden.redactions]]`: text replaced before comparing, for one suite or all.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactionConfig {
    /// The suite it applies to (`expense`, `billing/refunds`); all suites when absent.
    pub suite: Option<String>,
    /// A regex.
    pub pattern: String,
    /// Its replacement (`$1` refers to groups).
    pub replace: String,
}

/// `[golden]` in `agentest.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoldenConfig {
    /// Pin every case of every suite.
    #[serde(default)]
    pub enabled: bool,
    /// Pin every case of these suites.
    #[serde(default)]
    pub suites: Vec<String>,
    /// Redactions, applied in order.
    #[serde(default)]
    pub redactions: Vec<RedactionConfig>,
}

impl GoldenConfig {
    /// Whether a suite's cases are pinned by the config. A suite may go by several names
    /// (from the config's folder, and from the folder the run started in); any counts.
    pub fn covers(&self, names: &[&str]) -> bool {
        self.enabled || self.suites.iter().any(|s| names.contains(&s.as_str()))
    }
}

/// A compiled redaction.
#[derive(Debug, Clone)]
pub struct Redaction {
    pub(crate) suite: Option<String>,
    pub(crate) regex: regex::Regex,
    pub(crate) replace: String,
}

impl Redaction {
    /// Compiles the config's redactions; an invalid regex names its entry.
    pub(crate) fn compile_all(golden: &GoldenConfig) -> Result<Vec<Redaction>, String> {
        golden
            .redactions
            .iter()
            .enumerate()
            .map(|(i, r)| {
                Ok(Redaction {
                    suite: r.suite.clone(),
                    regex: regex::Regex::new(&r.pattern).map_err(|e| {
                        format!(
                            "[[golden.redactions]] #{}: invalid regex \"{}\": {e}",
                            i + 1,
                            r.pattern
                        )
                    })?,
                    replace: r.replace.clone(),
                })
            })
            .collect()
    }
}

/// How cassettes are used, from `AGENTEST_CASSETTES` or `[run] cassettes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CassetteMode {
    /// Replay what is recorded; on a miss call the model and record, except on CI,
    /// where a miss fails the case.
    #[default]
    Auto,
    /// Never call a model; a miss fails the case.
    Replay,
    /// Replay only, and fail a passing case that left recorded entries unused.
    Strict,
    /// Always call the model and rewrite the file.
    Record,
    /// No files at all: every call goes to the model.
    Off,
}

impl CassetteMode {
    /// Reads a mode name.
    pub fn parse(text: &str) -> Result<CassetteMode, String> {
        match text.trim() {
            "auto" => Ok(CassetteMode::Auto),
            "replay" => Ok(CassetteMode::Replay),
            "strict" => Ok(CassetteMode::Strict),
            "record" => Ok(CassetteMode::Record),
            "off" => Ok(CassetteMode::Off),
            other => Err(format!(
                "unknown cassette mode \"{other}\"; expected auto, replay, strict, record or off"
            )),
        }
    }

    /// The mode in force: `AGENTEST_CASSETTES`, else the config's, else `auto`.
    pub fn resolve(config: Option<&str>) -> Result<CassetteMode, String> {
        match crate::settings::get().cassettes {
            Some(mode) => Ok(mode),
            None => config
                .map(CassetteMode::parse)
                .transpose()
                .map(Option::unwrap_or_default),
        }
    }

    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            CassetteMode::Auto => "auto",
            CassetteMode::Replay => "replay",
            CassetteMode::Strict => "strict",
            CassetteMode::Record => "record",
            CassetteMode::Off => "off",
        }
    }
}

/// What a golden mismatch may write (`AGENTEST_UPDATE`, read in [`crate::settings`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpdateMode {
    /// Write `<golden>.new` and fail.
    #[default]
    New,
    /// Overwrite the golden file and pass.
    Always,
    /// Never write; fail.
    No,
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
        .map(|a| crate::util::expand_env(a, &format!("{what}.command")))
        .collect::<Result<Vec<_>, _>>()?;
    let env = cmd
        .env
        .iter()
        .map(|(k, v)| {
            Ok((
                k.clone(),
                crate::util::expand_env(v, &format!("{what}.env.{k}"))?,
            ))
        })
        .collect::<Result<BTreeMap<_, _>, String>>()?;
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
) -> Result<tokio::time::Instant, String> {
    match &cmd.timeout {
        Some(t) => {
            let d = parse_duration(t).map_err(|e| format!("{what}: {e}"))?;
            Ok(deadline.min(tokio::time::Instant::now() + d))
        }
        None => Ok(deadline),
    }
}
