//! `agentest.toml`: agents, hooks, scripts and run settings, found in the suite's
//! directory or its nearest ancestor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::agents::RawAgent;
use super::{AgentConfig, CassetteMode, CommandConfig, GoldenConfig, Redaction};
use crate::case::PersonaRef;
use crate::errors::{AgentSetupError, CaseError, ConfigError, ConfigValueError, SetupError};
use crate::util::command::CommandSpec;
use crate::util::StoreAddress;
use serde::Deserialize;
use toml::Spanned;

/// The file name searched for.
pub(crate) const CONFIG_FILE: &str = "agentest.toml";

/// The folder of suites in a crate (`<crate>/agent-tests`), also searched for the config.
pub(crate) const SUITES_DIR: &str = "agent-tests";

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
    /// The run store.
    #[serde(default)]
    pub store: StoreConfig,
    /// Personas cases name in `personas`.
    #[serde(default)]
    pub personas: BTreeMap<String, PersonaConfig>,
    /// A JSON file of more personas (EvalStudio's `personas.json` shape, or agentest's
    /// `{name, description, system_prompt}`), relative to the config file.
    pub personas_file: Option<String>,
    /// EvalStudio connectors (by id or name) and the agents that stand for them.
    #[serde(default)]
    pub connectors: BTreeMap<String, String>,
    /// The OpenTelemetry trace receiver.
    #[serde(default)]
    pub traces: TracesConfig,
    /// Judges and juries defined once, named as `judges:NAME`.
    #[serde(default)]
    pub judges: BTreeMap<String, super::JudgeConfig>,
}

/// `[traces]`: the OTLP/HTTP receiver agents send their spans to.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracesConfig {
    /// Every agent's traces are read (an agent table's `traces = true` turns on one).
    #[serde(default)]
    pub enabled: bool,
    /// Where the receiver listens (default `127.0.0.1:0`, a free port).
    pub listen: Option<String>,
    /// The quiet period after a reply before its spans are taken (default 300ms).
    pub settle: Option<String>,
    /// The longest wait for a turn's spans after its reply (default 5s).
    pub settle_max: Option<String>,
    /// Span attributes that carry the conversation's id, for agents that do not
    /// propagate `traceparent` (default `gen_ai.conversation.id`, `session.id`).
    pub session_attributes: Option<Vec<String>>,
    /// Attributes kept in the turn record's span tree besides the ones read.
    #[serde(default)]
    pub keep_attributes: Vec<String>,
    /// The most spans kept per turn (default 2,000).
    pub max_spans: Option<usize>,
}

/// `[personas.NAME]`: a persona the simulated user impersonates.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonaConfig {
    /// What the persona is like.
    pub description: Option<String>,
    /// The instructions that make the simulated user this persona.
    pub system_prompt: Option<String>,
}

/// `[store]`: where runs are recorded.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// The store's file, relative to the config file (`AGENTEST_STORE` wins).
    pub path: Option<String>,
    /// A PostgreSQL database's URL (`${VAR}` expanded when the store opens, so the
    /// password can stay in the environment; `AGENTEST_STORE` wins).
    pub url: Option<String>,
    /// How long a claimed run holds without its process's heartbeat before another
    /// process takes it back, like "30s" (heartbeats come three times per lease).
    pub lease: Option<String>,
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
    /// The endpoint (`[llms.NAME]`) the built-in simulator calls (default `[llm]`).
    pub simulator_llm: Option<String>,
    /// The endpoint (`[llms.NAME]`) the built-in judge calls (default `[llm]`).
    pub judge_llm: Option<String>,
    /// Repeats of every case that sets no `runs` (`--runs` / `AGENTEST_RUNS` win; default 1).
    pub runs: Option<u64>,
    /// The gate of cases that set none: k of the runs must pass.
    pub min_pass: Option<u64>,
    /// The gate of cases that set none: the share of runs that must pass.
    pub pass_rate: Option<f64>,
    /// With `pass_rate`: judge the rate by the Wilson interval at this confidence.
    pub confidence: Option<f64>,
    /// The run's budget: no case starts, and no model is called, once the run has spent
    /// this much (in the pricing currency).
    pub max_cost: Option<f64>,
    /// The run's token budget, over every case and role.
    pub max_tokens: Option<u64>,
    /// The judge of every judgment that names none: `"llm"`, `"agents:NAME"` or
    /// `"judges:NAME"` (default: the built-in judge).
    pub judge: Option<String>,
    /// What an inconclusive verdict does to its case: `fail`, `error` or `ignore`
    /// (default: `fail` on CI, `error` elsewhere).
    pub on_inconclusive: Option<String>,
    /// A verdict of a `[judges.NAME]` with a calibration bar that its current
    /// fingerprint does not meet is inconclusive.
    #[serde(default)]
    pub require_calibrated_judges: bool,
    /// Cases that fail by these parties' fault (`simulator`, `infrastructure`, `judge`,
    /// `agent`) are run again, up to `max_reruns` times, every attempt kept.
    pub rerun_on: Option<Vec<String>>,
    /// How many times a case may be run again under `rerun_on` (default 1).
    pub max_reruns: Option<u32>,
    /// The run fails when more than this share of its cases failed by the simulated
    /// user's fault (from 0 to 1): a simulator that spoils the run is no measure of the
    /// agent.
    pub max_simulator_blame: Option<f64>,
    /// The judge asked, of a failed case whose simulated user played a persona, whether
    /// the user stayed in it (`"llm"`, `"agents:NAME"`, `"judges:NAME"`); one that broke
    /// it is blamed for the failure.
    pub persona_judge: Option<String>,
}

impl RunConfig {
    /// `[run]`'s gate, once [`Config::load`] checked it.
    pub(crate) fn gate(&self) -> Option<crate::case::Gate> {
        crate::case::Gate::from_fields(self.min_pass, self.pass_rate, self.confidence, None)
            .ok()
            .flatten()
    }

    /// `[run]`'s budget, once checked.
    pub(crate) fn budget(&self) -> crate::case::Budget {
        crate::case::Budget {
            max_cost: self.max_cost,
            max_tokens: self.max_tokens,
        }
    }
}

/// A config file chosen by name rather than found, and who chose it (for messages).
#[derive(Debug, Clone)]
pub(crate) struct ConfigChoice {
    /// The file, as given.
    pub(crate) path: PathBuf,
    /// `AGENTEST_CONFIG` or `--config`.
    pub(crate) from: &'static str,
}

/// What finding and reading a config takes from the layers above this one, which
/// whoever loads a config passes in (`crate::run::context::config_loader`): the file
/// chosen by name (a setting), how a `personas_file` is read (EvalStudio's personas
/// records, a source format) and the check of an agent's wire keys (the agent layer
/// compiles them), done at load so that a mistake names its table.
#[derive(Debug, Clone, Copy)]
pub struct Loader<'a> {
    /// `AGENTEST_CONFIG` or `--config`: the config every suite uses, wherever it is.
    pub(crate) chosen: Option<&'a ConfigChoice>,
    /// Reads the personas a `personas_file` holds.
    pub(crate) personas: fn(&Path) -> Result<Vec<PersonaRef>, CaseError>,
    /// Checks what an agent's table says beyond its keys (an `http` agent's body
    /// template, reply paths and `[session]`).
    pub(crate) agent: fn(&AgentConfig) -> Result<(), AgentSetupError>,
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
    /// The personas of `personas_file`.
    pub(crate) file_personas: Vec<PersonaRef>,
    /// `[judges.NAME]`, checked.
    pub judges: BTreeMap<String, super::Judge>,
    /// `[run] judge`, checked.
    pub default_judge: Option<crate::case::JudgeRef>,
    /// `[run] on_inconclusive`, checked (`None`: unset).
    pub on_inconclusive: Option<crate::case::OnInconclusive>,
    /// `[run] rerun_on`, checked.
    pub rerun_on: Vec<crate::case::Party>,
    /// `[run] persona_judge`, checked.
    pub persona_judge: Option<crate::case::JudgeRef>,
}

impl Config {
    /// The judges `choice` names, else the run's default judge (`[run] judge`, else the
    /// built-in one).
    pub(crate) fn judges_of(
        &self,
        choice: &crate::case::JudgeChoice,
    ) -> Vec<crate::case::JudgeRef> {
        if choice.judges.is_empty() {
            vec![self
                .default_judge
                .clone()
                .unwrap_or(crate::case::JudgeRef::Builtin)]
        } else {
            choice.judges.clone()
        }
    }

    /// `[store] lease`, checked when the config loaded.
    pub(crate) fn store_lease(&self) -> Option<std::time::Duration> {
        self.file
            .store
            .lease
            .as_deref()
            .and_then(|l| crate::util::parse_duration(l).ok())
    }

    /// `[store] path`, resolved against the config's folder, or `[store] url` with its
    /// `${VAR}`s expanded (each a secret).
    pub(crate) fn store_address(&self) -> Result<Option<StoreAddress>, ConfigValueError> {
        let store = &self.file.store;
        if let Some(p) = &store.path {
            return Ok(Some(StoreAddress::File(self.dir.join(p))));
        }
        let Some(url) = &store.url else {
            return Ok(None);
        };
        let url = crate::util::expand_secret(url, "[store].url")?;
        match StoreAddress::parse(&url) {
            Ok(a @ StoreAddress::Postgres(_)) => Ok(Some(a)),
            Ok(StoreAddress::File(_)) => Err(ConfigValueError::StoreUrl {
                problem: "expected a postgres:// or postgresql:// URL; for a file, write `path`"
                    .into(),
            }),
            Err(e) => Err(ConfigValueError::StoreUrl {
                problem: e.to_string(),
            }),
        }
    }

    /// The config `chosen` names (`AGENTEST_CONFIG` / `--config`), else the
    /// `agentest.toml` in `start` or its nearest ancestor, if there is one.
    pub(crate) fn locate(start: &Path, chosen: Option<&ConfigChoice>) -> Option<PathBuf> {
        if let Some(chosen) = chosen {
            return Some(std::path::absolute(&chosen.path).unwrap_or_else(|_| chosen.path.clone()));
        }
        let start = Config::absolute_start(start);
        start
            .ancestors()
            .map(|d| d.join(CONFIG_FILE))
            .find(|c| c.is_file())
            // The README puts the config in `agent-tests/`; a run from the crate root
            // (`agentest test -i "a message"`) finds it there too.
            .or_else(|| Some(start.join(SUITES_DIR).join(CONFIG_FILE)).filter(|c| c.is_file()))
    }

    fn absolute_start(start: &Path) -> PathBuf {
        let start = if start.as_os_str().is_empty() {
            Path::new(".")
        } else {
            start
        };
        std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf())
    }

    /// The config of suites in `start`: the file `AGENTEST_CONFIG` / `--config` names,
    /// else `agentest.toml` in `start` or its nearest ancestor, else
    /// `start/agent-tests/agentest.toml`; an empty config when there is none.
    pub fn discover(start: &Path, loader: &Loader) -> Result<Config, ConfigError> {
        if let Some(chosen) = loader.chosen {
            if !chosen.path.is_file() {
                return Err(ConfigError::Chosen {
                    path: chosen.path.clone(),
                    from: chosen.from,
                });
            }
        }
        if let Some(found) = Config::locate(start, loader.chosen) {
            return Config::load(&found, loader);
        }
        let start = Config::absolute_start(start);
        Ok(Config {
            path: None,
            dir: start.clone(),
            ..Config::default()
        })
    }

    /// Reads one config file.
    pub fn load(path: &Path, loader: &Loader) -> Result<Config, ConfigError> {
        let path = &std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let file: ConfigFile = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: with_suggestion(e.to_string().trim_end()),
        })?;
        let check = |raw: &Spanned<RawAgent>, table: String| {
            raw.get_ref()
                .clone()
                .check(loader.agent)
                .map_err(|source| ConfigError::Agent {
                    path: path.to_path_buf(),
                    table,
                    line: text[..raw.span().start.min(text.len())]
                        .lines()
                        .count()
                        .max(1),
                    source: Box::new(source),
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
        let file_personas = match &file.personas_file {
            None => Vec::new(),
            Some(p) => {
                let personas = (loader.personas)(&dir.join(p)).map_err(|source| {
                    ConfigError::PersonasFile {
                        path: path.to_path_buf(),
                        source,
                    }
                })?;
                if let Some(twice) = personas
                    .iter()
                    .find(|q| file.personas.contains_key(&q.name))
                {
                    return Err(ConfigError::Parse {
                        path: path.to_path_buf(),
                        message: format!(
                            "persona \"{}\" is both a [personas.\"{0}\"] table and in {p}; keep one of them",
                            twice.name
                        ),
                    });
                }
                personas
            }
        };
        let invalid = |source| ConfigError::Invalid {
            path: path.to_path_buf(),
            source,
        };
        let judges = file
            .judges
            .iter()
            .map(|(name, j)| {
                let checked = j.check(name, &file.judges, &|l| file.llms.contains_key(l));
                Ok((name.clone(), checked.map_err(invalid)?))
            })
            .collect::<Result<_, ConfigError>>()?;
        let default_judge =
            super::judges::named_judge("judge", file.run.judge.as_deref(), &file.judges)
                .map_err(invalid)?;
        let on_inconclusive =
            super::judges::on_inconclusive(file.run.on_inconclusive.as_deref()).map_err(invalid)?;
        let persona_judge = super::judges::named_judge(
            "persona_judge",
            file.run.persona_judge.as_deref(),
            &file.judges,
        )
        .map_err(invalid)?;
        let rerun_on = super::judges::rerun_on(
            file.run.rerun_on.as_deref(),
            file.run.max_reruns,
            file.run.max_simulator_blame,
        )
        .map_err(invalid)?;
        let config = Config {
            path: Some(path.to_path_buf()),
            dir,
            file,
            agent,
            agents,
            file_personas,
            judges,
            default_judge,
            on_inconclusive,
            rerun_on,
            persona_judge,
        };
        config
            .check_values()
            .map_err(|source| ConfigError::Invalid {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(config)
    }

    /// Checks the values TOML cannot: durations, counts, URLs (those without `${VAR}`,
    /// which can only be checked once the environment is known).
    fn check_values(&self) -> Result<(), ConfigValueError> {
        self.check_store()?;
        check_timeout(&self.file.run.timeout, "[run].timeout")?;
        Redaction::compile_all(&self.file.golden)?;
        if let Some(mode) = &self.file.run.cassettes {
            CassetteMode::parse(mode).map_err(ConfigValueError::CassetteMode)?;
        }
        self.check_llms()?;
        for (key, name) in [
            ("simulator_llm", &self.file.run.simulator_llm),
            ("judge_llm", &self.file.run.judge_llm),
        ] {
            if let Some(n) = name.as_ref().filter(|n| !self.file.llms.contains_key(*n)) {
                return Err(ConfigValueError::UndefinedLlm {
                    table: format!("[run].{key}"),
                    name: n.clone(),
                });
            }
        }
        if self.file.run.concurrency == Some(0) {
            return Err(ConfigValueError::ZeroConcurrency);
        }
        self.check_traces()?;
        self.check_repeats()?;
        check_prices(&self.file)?;
        self.check_agents()?;
        self.check_commands()?;
        Ok(())
    }

    /// `[llm]` and each `[llms.NAME]`: timeout, in-flight cap, sampling settings.
    /// `[store]`: a file or a database, and a URL of a scheme agentest reads. The URL's
    /// variables are expanded when the store opens, not here.
    fn check_store(&self) -> Result<(), ConfigValueError> {
        let store = &self.file.store;
        if let Some(lease) = &store.lease {
            match crate::util::parse_duration(lease) {
                Err(source) => {
                    return Err(ConfigValueError::Duration {
                        key: "[store].lease".into(),
                        source,
                    })
                }
                Ok(d) if d < std::time::Duration::from_secs(3) => {
                    return Err(ConfigValueError::StoreUrl {
                        problem: format!("lease: {lease} is too short for heartbeats three times per lease over a network; give 3s or more, like \"30s\""),
                    })
                }
                Ok(_) => {}
            }
        }
        match (&store.path, &store.url) {
            (Some(_), Some(_)) => Err(ConfigValueError::StoreUrl {
                problem: "give `path` (a file) or `url` (a PostgreSQL database), not both".into(),
            }),
            (None, Some(url)) if !url.trim_start().to_ascii_lowercase().starts_with("postgres") => {
                Err(ConfigValueError::StoreUrl {
                    problem: format!(
                        "expected a postgres:// or postgresql:// URL, found `{}`; for a file, write `path`",
                        crate::util::shown_url(url)
                    ),
                })
            }
            _ => Ok(()),
        }
    }

    fn check_llms(&self) -> Result<(), ConfigValueError> {
        let llms = self.file.llm.iter().map(|l| ("[llm]".to_string(), l));
        let llms = llms.chain(
            self.file
                .llms
                .iter()
                .map(|(n, l)| (format!("[llms.\"{n}\"]"), l)),
        );
        for (what, l) in llms {
            check_timeout(&l.timeout, &format!("{what}.timeout"))?;
            if l.max_in_flight == Some(0) {
                return Err(ConfigValueError::ZeroInFlight { table: what });
            }
            if let Some(value) = l.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
                return Err(ConfigValueError::Temperature { table: what, value });
            }
            if let Some(value) = l.top_p.filter(|p| !(*p > 0.0 && *p <= 1.0)) {
                return Err(ConfigValueError::TopP { table: what, value });
            }
        }
        Ok(())
    }

    /// `[agent]` and each `[agents.NAME]`: the LLM an OpenAI agent names exists, and
    /// timeouts and URLs (those without `${VAR}`) are valid.
    fn check_agents(&self) -> Result<(), ConfigValueError> {
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
                        return Err(ConfigValueError::UndefinedLlm {
                            table: what,
                            name: n.clone(),
                        });
                    }
                    None if self.file.llm.is_none() => {
                        return Err(ConfigValueError::NoLlm { table: what });
                    }
                    _ => {}
                },
                AgentConfig::Process { timeout: t, .. } => {
                    check_timeout(t, &format!("{what}.timeout"))?
                }
                AgentConfig::Http {
                    url, timeout: t, ..
                }
                | AgentConfig::LangGraph(crate::config::LangGraphAgentConfig {
                    url,
                    timeout: t,
                    ..
                })
                | AgentConfig::Eliza(crate::config::ElizaAgentConfig {
                    url, timeout: t, ..
                }) => {
                    check_timeout(t, &format!("{what}.timeout"))?;
                    if !url.contains("${") {
                        reqwest::Url::parse(url).map_err(|source| ConfigValueError::Url {
                            table: what.clone(),
                            url: url.clone(),
                            source,
                        })?;
                    }
                }
                AgentConfig::A2a(a) => check_timeout(&a.timeout, &format!("{what}.timeout"))?,
            }
        }
        Ok(())
    }

    /// `[hooks.NAME]` and `[scripts.NAME]`: a timeout that reads and a command.
    fn check_commands(&self) -> Result<(), ConfigValueError> {
        for (kind, table) in [("hooks", &self.file.hooks), ("scripts", &self.file.scripts)] {
            for (name, cmd) in table {
                check_timeout(&cmd.timeout, &format!("[{kind}.\"{name}\"].timeout"))?;
                if cmd.command.is_empty() {
                    return Err(ConfigValueError::EmptyCommand {
                        kind,
                        name: name.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// `[traces]`: durations, the address, the span cap.
    fn check_traces(&self) -> Result<(), ConfigValueError> {
        let t = &self.file.traces;
        for (key, value) in [("settle", &t.settle), ("settle_max", &t.settle_max)] {
            if let Some(v) = value {
                crate::util::parse_duration(v).map_err(|source| ConfigValueError::Duration {
                    key: format!("[traces].{key}"),
                    source,
                })?;
            }
        }
        if let Some(listen) = &t.listen {
            if listen.parse::<std::net::SocketAddr>().is_err() {
                return Err(ConfigValueError::TracesListen {
                    value: listen.clone(),
                });
            }
        }
        if t.max_spans == Some(0) {
            return Err(ConfigValueError::Repeats {
                key: "[traces].max_spans".into(),
                message: "expected a whole number of spans above 0, found 0".into(),
            });
        }
        Ok(())
    }

    /// Whether the agent of table `name` (`None`: `[agent]`) has its traces read:
    /// `[traces] enabled`, or the table's `traces = true`.
    pub(crate) fn traced(&self, name: Option<&str>) -> bool {
        let raw = match name {
            None => self.file.agent.as_ref(),
            Some(n) => self.file.agents.get(n),
        };
        self.file.traces.enabled || raw.is_some_and(|a| a.get_ref().traces())
    }

    /// `[run]`'s runs, gate and budget.
    fn check_repeats(&self) -> Result<(), ConfigValueError> {
        let run = &self.file.run;
        let bad = |key: &str, message: String| ConfigValueError::Repeats {
            key: format!("[run].{key}"),
            message,
        };
        let runs = run
            .runs
            .map(crate::case::check_runs)
            .transpose()
            .map_err(|e| bad("runs", e.to_string()))?;
        crate::case::Gate::from_fields(run.min_pass, run.pass_rate, run.confidence, runs)
            .map_err(|e| bad(e.field(), e.to_string()))?;
        if let Some(c) = run.max_cost {
            crate::case::check_cost(c).map_err(|e| bad("max_cost", e.to_string()))?;
        }
        if run.max_tokens == Some(0) {
            return Err(bad(
                "max_tokens",
                "expected a whole number of tokens above 0, found 0".into(),
            ));
        }
        Ok(())
    }

    /// Which config a run uses, for the console's header: the file (relative to the
    /// current folder when under it), or where none was found.
    pub(crate) fn label(&self) -> String {
        match &self.path {
            Some(p) => crate::util::display_path(p).display().to_string(),
            None => format!(
                "none found in {}, its parents or its {SUITES_DIR} folder",
                crate::util::display_path(&self.dir).display()
            ),
        }
    }

    /// Where this config is, for messages: the file, or where one would be searched.
    pub fn describe(&self) -> String {
        match &self.path {
            Some(p) => crate::util::display_path(p).display().to_string(),
            // Messages say "add [llm] to {this}": a sentence either way.
            None => format!(
                "a new {CONFIG_FILE} in {} (none was found there, in its parents or in its {SUITES_DIR} folder)",
                crate::util::display_path(&self.dir).display()
            ),
        }
    }
}

/// A timeout, when given: a duration above zero.
fn check_timeout(value: &Option<String>, key: &str) -> Result<(), ConfigValueError> {
    match value {
        Some(t) => match crate::util::parse_duration(t) {
            Ok(d) if d.is_zero() => Err(ConfigValueError::ZeroTimeout {
                key: key.to_string(),
            }),
            Ok(_) => Ok(()),
            Err(source) => Err(ConfigValueError::Duration {
                key: key.to_string(),
                source,
            }),
        },
        None => Ok(()),
    }
}

/// The parser's "unknown field `X`, expected one of `a`, `b`" gets the same "did you
/// mean" as case keys (serde says which keys it knows, not which one was meant).
fn with_suggestion(message: &str) -> String {
    let Some(rest) = message.split("unknown field `").nth(1) else {
        return message.to_string();
    };
    let Some((unknown, known)) = rest.split_once("`, expected ") else {
        return message.to_string();
    };
    let known: Vec<&str> = known
        .lines()
        .next()
        .unwrap_or_default()
        .split('`')
        .skip(1)
        .step_by(2)
        .collect();
    match crate::util::suggest(unknown, &known) {
        Some(s) => format!("{message}\nhint: did you mean `{s}`?"),
        None => message.to_string(),
    }
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

/// Checks every pricing table of a config: prices are amounts of at least 0, and
/// one currency throughout (costs of different currencies cannot be added up).
fn check_prices(file: &ConfigFile) -> Result<(), ConfigValueError> {
    let tables = file
        .llm
        .iter()
        .map(|l| ("[llm]".to_string(), l))
        .chain(
            file.llms
                .iter()
                .map(|(n, l)| (format!("[llms.\"{n}\"]"), l)),
        )
        .filter_map(|(t, l)| l.pricing.as_ref().map(|p| (t, p)));
    let mut first: Option<(String, String)> = None;
    for (table, p) in tables {
        let bad = |message: String| ConfigValueError::Pricing {
            table: table.clone(),
            message,
        };
        for (key, v) in [
            ("input_per_million", Some(p.input_per_million)),
            ("output_per_million", Some(p.output_per_million)),
            ("cached_input_per_million", p.cached_input_per_million),
        ] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(bad(format!(
                    "{key} {v} is not a price; give the price of a million tokens, 0 or more, like 2.5"
                )));
            }
        }
        if p.currency.trim().is_empty() {
            return Err(bad(
                "currency is empty; leave it out for USD, or name one like \"EUR\"".into(),
            ));
        }
        match &first {
            None => first = Some((table.clone(), p.currency.clone())),
            Some((t, c)) if c != &p.currency => {
                return Err(bad(format!(
                    "currency \"{}\" differs from {t}'s \"{c}\"; costs in two currencies cannot be added up, so convert the prices to one",
                    p.currency
                )))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::expand_env;

    #[test]
    fn unknown_keys_get_a_suggestion() {
        let e = toml::from_str::<ConfigFile>("[run]\nconcurency = 4\n").unwrap_err();
        let m = with_suggestion(e.to_string().trim_end());
        assert!(m.ends_with("hint: did you mean `concurrency`?"), "{m}");
        let e = toml::from_str::<ConfigFile>("[run]\nzzzzzz = 4\n").unwrap_err();
        assert!(!with_suggestion(&e.to_string()).contains("did you mean"));
    }

    #[test]
    fn expands_variables_and_names_missing_ones() {
        std::env::set_var("AGENTEST_TEST_VAR", "v");
        assert_eq!(
            expand_env("a-${AGENTEST_TEST_VAR}-b", "x").unwrap(),
            "a-v-b"
        );
        let e = expand_env("${AGENTEST_SURELY_UNSET}", "[agent].url").unwrap_err();
        assert_eq!(
            e,
            crate::errors::EnvError::Unset {
                name: "AGENTEST_SURELY_UNSET".into(),
                what: "[agent].url".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "environment variable `AGENTEST_SURELY_UNSET` is not set (used in [agent].url)"
        );
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
