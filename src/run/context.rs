//! What a case runs with, resolved once per config file and shared by its cases: the
//! config, hooks, scripts, cassette mode, seed, the `[llm]` endpoint and the agents.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::agent::{Agent, AgentDef};
use crate::case::{Case, Kind, Mode, PersonaRef, SourceLlms};
use crate::check::{ScriptFn, Scripts};
use crate::config::CassetteMode;
use crate::config::Redaction;
use crate::config::{AgentConfig, Config, ConfigChoice, LangGraphAgentConfig, LlmConfig, Loader};
use crate::errors::{SetupError, SetupErrors};
use crate::llm::Endpoint;
use crate::protocol::Role;
use crate::run::hooks::{HookFn, Hooks};
use crate::source::{suite_name, Loaded};
use crate::util::parse_duration;

/// The case timeout when neither the case, the command line nor the config sets one.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// A config file, or an agent it gives, that cannot be used: said once (a
/// `CONFIG::config` trial under `cargo test`, exit code 2 in the binary); the cases it
/// stops point to it.
pub(crate) struct SetupProblem {
    /// The config file (with none, the folder searched), as trial names show it.
    pub(crate) label: String,
    /// What is wrong, each once.
    pub(crate) errors: Vec<SetupError>,
    /// The trials of the cases it stops.
    pub(crate) trials: HashSet<String>,
}

impl SetupProblem {
    /// The trial that reports it: `agent-tests/agentest.toml::config`.
    pub(crate) fn trial(&self) -> String {
        format!("{}::config", self.label)
    }

    /// The whole diagnostic.
    pub(crate) fn message(&self) -> String {
        self.errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// What the Rust builder registered: in-process agents, hooks and scripts.
#[derive(Clone, Default)]
pub(crate) struct Registry {
    pub(crate) agents: HashMap<String, Arc<dyn Agent>>,
    pub(crate) default_agent: Option<Arc<dyn Agent>>,
    pub(crate) hooks: HashMap<String, HookFn>,
    pub(crate) scripts: HashMap<String, ScriptFn>,
    /// Case generators registered with `Harness::generator` (`-i scripts:NAME`).
    pub(crate) generators: HashMap<String, GeneratorFn>,
}

/// A case generator registered from Rust: given the parameters, the cases as JSON.
pub(crate) type GeneratorFn =
    Arc<dyn Fn(&serde_json::Value) -> Result<Vec<serde_json::Value>, String> + Send + Sync>;

/// A resolved agent and its label for reports, or why it cannot be used.
pub(crate) type AgentSlot = Result<(AgentDef, String), SetupError>;

/// An EvalStudio connector's id and a persona's id.
type ConnectorKey = (Option<String>, Option<String>);

/// Everything that depends on one config file.
pub(crate) struct Context {
    pub(crate) config: Arc<Config>,
    pub(crate) hooks: Hooks,
    pub(crate) scripts: Scripts,
    /// Case generators registered in the harness.
    pub(crate) generators: HashMap<String, GeneratorFn>,
    /// `AGENTEST_CASSETTES`, else `[run] cassettes`, else auto.
    pub(crate) cassettes: CassetteMode,
    /// `AGENTEST_SEED`, else `[run] seed`, else 0.
    pub(crate) seed: u64,
    /// Tools whose call means the agent awaits the user (`[run] input_tools`).
    pub(crate) input_tools: Vec<String>,
    /// `[[golden.redactions]]`, compiled.
    pub(crate) redactions: Vec<Redaction>,
    /// What of the config decides verdicts, as one digest for the cases' `input_hash`:
    /// `agentest.toml` as written and the personas of its `personas_file`.
    pub(crate) fingerprint: String,
    /// The pricing currency of the config's endpoints; `None` when no endpoint has a
    /// price (then cases report no cost at all rather than an unknown one).
    pub(crate) currency: Option<String>,
    /// `[run] max_cost` / `max_tokens`: what every case under this config spends.
    pub(crate) run_meter: Option<Arc<crate::llm::Meter>>,
    registry: Arc<Registry>,
    /// `-n NAME` / `AGENTEST_AGENT` / `Harness::use_agent`, for cases that name none.
    run_agent: Option<String>,
    /// `-c/--connector`: for an `openai` agent under test, the `[llms.NAME]` it calls.
    connector: Option<String>,
    agents: Mutex<HashMap<Option<String>, AgentSlot>>,
    /// Agents under test moved onto the connector's endpoint, by name.
    connected: Mutex<HashMap<String, AgentSlot>>,
    /// EvalStudio `langgraph` connectors as agents, by connector id and persona id (the
    /// persona's headers make it another agent).
    from_connectors: Mutex<HashMap<ConnectorKey, AgentSlot>>,
    /// The model endpoints of the built-in roles, built on first use.
    /// Endpoints by role and `[llms.NAME]` (`None`: `[llm]`).
    #[expect(
        clippy::type_complexity,
        reason = "a cache keyed by connector and persona, read in one place"
    )]
    llms: Mutex<HashMap<(Role, Option<String>), Result<Arc<Endpoint>, SetupError>>>,
    /// Judges' calibrations as checked against their bars, by name and fingerprint:
    /// `None` when it meets its bar, else why not. Read from the store once per run.
    pub(crate) calibration_checks: Mutex<HashMap<(String, String), Option<String>>>,
}

/// How this process finds and reads configs: the file `AGENTEST_CONFIG` or `--config`
/// chose (`chosen`, from the settings), `personas_file`s read as the source layer reads EvalStudio's
/// personas, and agents' wire keys checked by the agent layer's compiler.
pub(crate) fn config_loader(chosen: Option<&ConfigChoice>) -> Loader<'_> {
    Loader {
        chosen,
        personas: crate::source::read_personas_file,
        agent: crate::agent::check_http_wire,
    }
}

impl Context {
    fn new(
        dir: &Path,
        registry: Arc<Registry>,
        run_agent: Option<String>,
        connector: Option<String>,
    ) -> Result<Context, SetupError> {
        let config = Arc::new(Config::discover(
            dir,
            &config_loader(crate::settings::get().config.as_ref()),
        )?);
        let cassettes = CassetteMode::resolve(
            crate::settings::get().cassettes,
            config.file.run.cassettes.as_deref(),
        )?;
        let seed = crate::settings::get()
            .seed
            .or(config.file.run.seed)
            .unwrap_or(0);
        let currency = config
            .file
            .llm
            .iter()
            .chain(config.file.llms.values())
            .find_map(|l| l.pricing.as_ref().map(|p| p.currency.clone()));
        let budget = config.file.run.budget();
        let run_meter = budget
            .is_set()
            .then(|| crate::llm::Meter::for_run(budget, currency.as_deref()));
        Ok(Context {
            fingerprint: fingerprint(&config),
            currency,
            run_meter,
            cassettes,
            seed,
            input_tools: config.file.run.input_tools.clone().unwrap_or_default(),
            redactions: Redaction::compile_all(&config.file.golden)?,
            hooks: Hooks::new(config.clone(), registry.hooks.clone()),
            scripts: Scripts::new(config.clone(), registry.scripts.clone()),
            generators: registry.generators.clone(),
            config,
            registry,
            run_agent,
            connector,
            agents: Mutex::new(HashMap::new()),
            connected: Mutex::new(HashMap::new()),
            from_connectors: Mutex::new(HashMap::new()),
            llms: Mutex::new(HashMap::new()),
            calibration_checks: Mutex::new(HashMap::new()),
        })
    }

    /// The model endpoint of a built-in role: the case's `llm` (`chosen`), else
    /// `AGENTEST_SIMULATOR_LLM` / `AGENTEST_JUDGE_LLM`, else `[run] simulator_llm` /
    /// `judge_llm` (each an `[llms.NAME]`), else `[llm]`, else what the case's source
    /// gives (`source`: an EvalStudio project's `llmSettings`).
    pub(crate) fn llm(
        &self,
        role: Role,
        chosen: Option<&str>,
        source: Option<&SourceLlms>,
    ) -> Result<Arc<Endpoint>, SetupError> {
        let named = self.llm_name(role, chosen);
        let from_source = source.filter(|_| named.is_none() && self.config.file.llm.is_none());
        // Two projects' settings are two endpoints: keyed by where they were written.
        let key = match from_source {
            Some(s) => Some(format!("\0{}", s.label)),
            None => named.clone(),
        };
        let mut llms = self.llms.lock().unwrap_or_else(|e| e.into_inner());
        llms.entry((role, key))
            .or_insert_with(|| {
                if let Some(s) = from_source {
                    return Ok(Arc::new(Endpoint::from_source(s, role)?));
                }
                let cfg = self.llm_config(role, named.as_deref())?;
                Ok(Arc::new(
                    Endpoint::from_config(cfg, named.as_deref())
                        .map_err(|e| e.in_config(self.config.describe()))?,
                ))
            })
            .clone()
    }

    /// The `[llms.NAME]` a role uses (`None`: `[llm]`); see [`Context::llm`].
    fn llm_name(&self, role: Role, chosen: Option<&str>) -> Option<String> {
        let settings = crate::settings::get();
        let run = &self.config.file.run;
        match role {
            _ if chosen.is_some() => chosen.map(str::to_string),
            Role::Simulator => settings
                .simulator_llm
                .clone()
                .or_else(|| run.simulator_llm.clone()),
            Role::Judge => settings.judge_llm.clone().or_else(|| run.judge_llm.clone()),
            Role::Agent => None,
        }
    }

    /// The endpoint config a role's choice (`[llms.NAME]`, or `[llm]` for `None`) names.
    fn llm_config(&self, role: Role, named: Option<&str>) -> Result<&LlmConfig, SetupError> {
        match named {
            Some(n) => self
                .config
                .file
                .llms
                .get(n)
                .ok_or_else(|| SetupError::UndefinedLlm {
                    role: role.name(),
                    name: n.to_string(),
                    config: self.config.describe(),
                }),
            None => self
                .config
                .file
                .llm
                .as_ref()
                .ok_or_else(|| SetupError::NoLlm {
                    role,
                    config: self.config.describe(),
                }),
        }
    }

    /// What stops `case` from running here, found without running it: agents (the
    /// case's, its simulator's, its judges') that are not defined or cannot be built,
    /// hooks and scripts that are not defined, model endpoints that are not there. Each
    /// problem is said with where the case uses the name. `simulator` is the run's
    /// `--simulator`.
    /// `persona` with what the config says of it, when it is a name.
    pub(crate) fn persona(&self, persona: &PersonaRef) -> Result<PersonaRef, SetupError> {
        if persona.inline {
            return Ok(persona.clone());
        }
        if let Some(found) = self.config.file.personas.get(&persona.name) {
            return Ok(PersonaRef {
                description: found.description.clone(),
                system_prompt: found.system_prompt.clone(),
                ..persona.clone()
            });
        }
        match self
            .config
            .file_personas
            .iter()
            .find(|p| p.name == persona.name)
        {
            Some(found) => Ok(PersonaRef {
                inline: false,
                ..found.clone()
            }),
            None => Err(SetupError::UndefinedPersona {
                name: persona.name.clone(),
                config: self.config.describe(),
            }),
        }
    }

    pub(crate) fn unresolved(&self, case: &Case, simulator: Option<&str>) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(Err(e)) = case.persona.as_ref().map(|p| self.persona(p)) {
            problems.push(e.to_string());
        }
        if let Err(e) = self.case_agent(case) {
            problems.push(e.to_string());
        }
        for (when, hook) in [("before", &case.before), ("after", &case.after)] {
            if let Some(name) = hook.as_deref().filter(|n| !self.hooks.has(n)) {
                problems.push(format!("{when} hook: {}", self.hooks.undefined(name)));
            }
        }
        // Who plays the user: a dynamic case's simulator, a scenario's user simulators.
        let simulators: Vec<(Option<&str>, Option<&str>)> = match &case.mode {
            // Criteria without a model fall back to one exchange: no simulator needed.
            Mode::Criteria { simulator: sim, .. }
                if sim.use_.is_none()
                    && simulator.is_none()
                    && self.config.file.llm.is_none()
                    && case.source_llms().is_none() =>
            {
                Vec::new()
            }
            Mode::Dynamic { simulator: sim, .. } | Mode::Criteria { simulator: sim, .. } => {
                vec![(sim.use_.as_deref(), sim.model.llm.as_deref())]
            }
            Mode::Scenario(sc) => sc
                .conversations()
                .map(|c| (None, c.simulator.model.llm.as_deref()))
                .collect(),
            _ => Vec::new(),
        };
        for (use_, llm) in simulators {
            let problem = match use_.or(simulator) {
                Some("script") => None,
                Some(name) => self.agent(Some(name)).err(),
                None => self
                    .llm_choice(Role::Simulator, llm, case.source_llms())
                    .err(),
            };
            if let Some(e) = problem {
                let p = format!("simulator: {e}");
                if !problems.contains(&p) {
                    problems.push(p);
                }
            }
        }
        // A scenario's judged conversation checks and conditions use the built-in judge.
        if let Mode::Scenario(sc) = &case.mode {
            if sc.needs_judge() {
                let default = crate::case::JudgeChoice::default();
                if let Some(e) = self.judge_problem(&default, None, case.source_llms()) {
                    problems.push(format!("judged conversation checks: {e}"));
                }
            }
        }
        for a in case.assertions() {
            let problem = match &a.kind {
                Kind::Script { name } if !self.scripts.has(name) => {
                    Some(self.scripts.undefined(name).to_string())
                }
                Kind::Judge { spec, .. } => self
                    .judge_problem(&spec.judges, spec.model.llm.as_deref(), case.source_llms())
                    .or_else(|| self.settings_problem(&spec.judges, &spec.model)),
                _ => None,
            };
            if let Some(p) = problem {
                let p = format!("{} assertion: {p}", a.type_name());
                if !problems.contains(&p) {
                    problems.push(p);
                }
            }
        }
        problems
    }

    /// What stops the judges `choice` names (the run's default judge when it names
    /// none) from judging: an agent, a `[judges.NAME]` or an endpoint that is not
    /// there, or a `[judges.NAME]` jury sitting on another jury. `llm`: the
    /// assertion's own endpoint for the built-in judge.
    fn judge_problem(
        &self,
        choice: &crate::case::JudgeChoice,
        llm: Option<&str>,
        source: Option<&SourceLlms>,
    ) -> Option<String> {
        use crate::case::JudgeRef;
        use crate::config::JudgeDef;
        let refs = &self.config.judges_of(choice);
        let one = |j: &JudgeRef, in_jury: bool| -> Option<String> {
            match j {
                JudgeRef::Builtin => self
                    .llm_choice(Role::Judge, llm, source)
                    .err()
                    .map(|e| e.to_string()),
                JudgeRef::Agent(a) => self.agent(Some(a)).err().map(|e| e.to_string()),
                JudgeRef::Named(n) => match self.config.judges.get(n).map(|d| &d.def) {
                    None => Some(format!(
                        "no [judges.\"{n}\"] table in {} defines `{j}`; add one",
                        self.config.describe()
                    )),
                    Some(JudgeDef::Builtin(ms)) => self
                        .llm_choice(Role::Judge, llm.or(ms.llm.as_deref()), source)
                        .err()
                        .map(|e| e.to_string()),
                    Some(JudgeDef::Agent(a)) => {
                        self.agent(Some(a)).err().map(|e| format!("`{j}`: {e}"))
                    }
                    Some(JudgeDef::Jury(_)) if in_jury => Some(format!(
                        "`{j}` is a jury, and a juror is one judge; list its judges instead"
                    )),
                    Some(JudgeDef::Jury(_)) => None,
                },
            }
        };
        for j in refs {
            if let Some(p) = one(j, refs.len() > 1) {
                return Some(p);
            }
            if let (JudgeRef::Named(n), 1) = (j, refs.len()) {
                if let Some(JudgeDef::Jury(jury)) = self.config.judges.get(n).map(|d| &d.def) {
                    if let Some(p) = jury.judges.iter().find_map(|m| one(m, true)) {
                        return Some(format!("`{j}`: {p}"));
                    }
                }
            }
        }
        None
    }

    /// A judge assertion's own model settings when none of its judges is the built-in
    /// one to take them (a `judges:NAME` that is an agent).
    fn settings_problem(
        &self,
        choice: &crate::case::JudgeChoice,
        model: &crate::case::ModelSettings,
    ) -> Option<String> {
        use crate::case::JudgeRef;
        use crate::config::JudgeDef;
        if model.is_empty() {
            return None;
        }
        let builtin = |j: &JudgeRef| match j {
            JudgeRef::Builtin => true,
            JudgeRef::Agent(_) => false,
            JudgeRef::Named(n) => match self.config.judges.get(n).map(|d| &d.def) {
                Some(JudgeDef::Builtin(_)) | None => true,
                Some(JudgeDef::Agent(_)) => false,
                Some(JudgeDef::Jury(jury)) => jury.judges.iter().any(|m| match m {
                    JudgeRef::Named(x) => !matches!(
                        self.config.judges.get(x).map(|d| &d.def),
                        Some(JudgeDef::Agent(_))
                    ),
                    other => matches!(other, JudgeRef::Builtin),
                }),
            },
        };
        let refs = self.config.judges_of(choice);
        (!refs.iter().any(builtin)).then(|| {
            let names: Vec<String> = refs.iter().map(ToString::to_string).collect();
            format!(
                "`llm`, `model`, `temperature`, `max_tokens` and `seed` set the built-in judge's request, and {} has none (its judges are agents); remove them",
                names.join(", ")
            )
        })
    }

    /// Whether a role's endpoint is configured, without building it (that needs the
    /// environment a dry run may not have).
    fn llm_choice(
        &self,
        role: Role,
        chosen: Option<&str>,
        source: Option<&SourceLlms>,
    ) -> Result<(), SetupError> {
        let named = self.llm_name(role, chosen);
        if named.is_none() && self.config.file.llm.is_none() && source.is_some() {
            return Ok(());
        }
        self.llm_config(role, named.as_deref()).map(|_| ())
    }

    /// The agent a case runs against: its `agent`; for a case from an EvalStudio eval,
    /// the agent `[connectors]` maps the eval's connector to (by id, else by name);
    /// else the run's agent.
    /// An EvalStudio eval's `langgraph` connector that `[connectors]` does not map is
    /// that agent itself, unless `-n` names one.
    pub(crate) fn case_agent(&self, case: &Case) -> AgentSlot {
        let named = self.case_agent_name(case);
        if named.is_none() && self.run_agent.is_none() {
            if let Some(slot) = self.connector_agent(case) {
                return self.under_test(slot);
            }
        }
        self.under_test(self.agent(named))
    }

    /// The agent an EvalStudio case's connector stands for by itself, built once per
    /// connector and persona; named by the connector's name.
    fn connector_agent(&self, case: &Case) -> Option<AgentSlot> {
        let e = case.evalstudio()?;
        let cfg = e.connector_agent.as_ref()?;
        let mut cache = self
            .from_connectors
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let key = (e.connector_id.clone(), e.persona_id.clone());
        let slot = cache.entry(key).or_insert_with(|| {
            let name = e
                .connector_name
                .clone()
                .or_else(|| e.connector_id.clone())
                .unwrap_or_default();
            let what = format!("connectors.json's connector \"{name}\"");
            let cfg = AgentConfig::LangGraph(LangGraphAgentConfig {
                url: cfg.url.clone(),
                assistant_id: cfg.assistant_id.clone(),
                headers: cfg.headers.clone(),
                config: cfg.config.clone(),
                ..LangGraphAgentConfig::default()
            });
            let def = AgentDef::from_config(&cfg, &self.config, &what)?;
            Ok((def, name))
        });
        Some(slot.clone())
    }

    /// The tracer of the case's agent, when its spans are read (`[traces] enabled`, or
    /// its table's `traces = true`); the process's receiver starts with the first.
    pub(crate) fn tracer(
        &self,
        case: &Case,
    ) -> Result<Option<Arc<crate::trace::Tracer>>, SetupError> {
        let name = self.case_agent_name(case).or(self.run_agent.as_deref());
        if !self.config.traced(name) {
            return Ok(None);
        }
        crate::trace::Tracer::new(&self.config.file.traces)
            .map(Some)
            .map_err(|e| SetupError::Traces(Arc::new(e)))
    }

    /// The agent a case names (its `agent`, or the one `[connectors]` maps its eval's
    /// connector to); `None` for the run's agent.
    pub(crate) fn case_agent_name<'a>(&'a self, case: &'a Case) -> Option<&'a str> {
        if case.agent.is_some() {
            return case.agent.as_deref();
        }
        let connectors = &self.config.file.connectors;
        case.evalstudio().and_then(|e| {
            e.connector_id
                .as_ref()
                .and_then(|id| connectors.get(id))
                .or_else(|| e.connector_name.as_ref().and_then(|n| connectors.get(n)))
                .map(String::as_str)
        })
    }

    /// An agent as the agent under test: with `-c/--connector`, an `openai` agent calls
    /// the connector's `[llms.NAME]` instead of its own endpoint. Other kinds receive
    /// the connector as `options.connector` (see [`crate::run::options::Overrides`]).
    pub(crate) fn under_test(&self, slot: AgentSlot) -> AgentSlot {
        let (Some(connector), Ok((AgentDef::OpenAi(spec), name))) = (&self.connector, &slot) else {
            return slot;
        };
        let mut cache = self.connected.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(name.clone())
            .or_insert_with(|| {
                let Some(llm) = self.config.file.llms.get(connector) else {
                    return Err(SetupError::UnknownConnector {
                        connector: connector.clone(),
                        agent: name.clone(),
                        config: self.config.describe(),
                        known: self.config.file.llms.keys().cloned().collect(),
                    });
                };
                let endpoint = crate::llm::Endpoint::from_config(llm, Some(connector))
                    .map_err(|e| SetupError::Agent(Arc::new(e)))?;
                Ok((
                    AgentDef::OpenAi(Arc::new(spec.on_endpoint(endpoint))),
                    name.clone(),
                ))
            })
            .clone()
    }

    /// The agent named `name` (a case's `agent`, a simulator or a judge), or for `None`
    /// the run's agent; cached per name.
    pub(crate) fn agent(&self, name: Option<&str>) -> AgentSlot {
        let name = name.map(str::to_string).or_else(|| self.run_agent.clone());
        let mut cache = self.agents.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(name.clone())
            .or_insert_with(|| match &name {
                Some(n) => self.named_agent(n),
                None => self.default_agent(),
            })
            .clone()
    }

    fn named_agent(&self, name: &str) -> AgentSlot {
        if let Some(a) = self.registry.agents.get(name) {
            return Ok((AgentDef::InProcess(a.clone()), name.to_string()));
        }
        let cfg = &self.config;
        if let Some(a) = cfg.agents.get(name) {
            let def = AgentDef::from_config(a, cfg, &format!("[agents.\"{name}\"]"))?;
            return Ok((def, name.to_string()));
        }
        let known: Vec<&str> = cfg
            .agents
            .keys()
            .map(String::as_str)
            .chain(self.registry.agents.keys().map(String::as_str))
            .collect();
        Err(SetupError::UndefinedAgent {
            name: name.to_string(),
            config: cfg.describe(),
            suggestion: crate::source::fields::suggest(name, &known).map(str::to_string),
            known: known.iter().map(|k| k.to_string()).collect(),
        })
    }

    fn default_agent(&self) -> AgentSlot {
        if let Some(a) = &self.registry.default_agent {
            return Ok((AgentDef::InProcess(a.clone()), "default".into()));
        }
        match &self.config.agent {
            Some(a) => {
                let def = AgentDef::from_config(a, &self.config, "[agent]")?;
                Ok((def, "default".into()))
            }
            None => Err(SetupError::NoAgent {
                where_: match &self.config.path {
                    Some(p) => format!(
                        "{} has no [agent] section",
                        crate::util::display_path(p).display()
                    ),
                    None => {
                        let dir = crate::util::display_path(&self.config.dir);
                        let dir = if dir.as_os_str().is_empty() {
                            std::path::PathBuf::from(".")
                        } else {
                            dir
                        };
                        format!(
                            "no agentest.toml in {}, any folder above it or {}",
                            dir.display(),
                            dir.join(crate::config::SUITES_DIR).display()
                        )
                    }
                },
                create: self.config.path.is_none().then(|| {
                    crate::util::display_path(&self.config.dir.join(crate::config::CONFIG_FILE))
                        .display()
                        .to_string()
                }),
                harness: crate::util::invocation::is_harness(),
            }),
        }
    }

    /// The case's timeout: its own, else `--timeout`, else `[run] timeout`, else 5 minutes.
    pub(crate) fn timeout(
        &self,
        case: &Case,
        run_timeout: Option<Duration>,
    ) -> Result<Duration, SetupError> {
        match case.timeout {
            Some(t) => Ok(t),
            None => self.run_timeout(run_timeout),
        }
    }

    /// The timeout of what names none (a case without `timeout`, a generator):
    /// `--timeout`, else `[run] timeout`, else 5 minutes.
    pub(crate) fn run_timeout(
        &self,
        run_timeout: Option<Duration>,
    ) -> Result<Duration, SetupError> {
        if let Some(t) = run_timeout {
            return Ok(t);
        }
        match &self.config.file.run.timeout {
            Some(t) => parse_duration(t).map_err(|source| SetupError::RunTimeout {
                config: self.config.describe(),
                source,
            }),
            None => Ok(DEFAULT_TIMEOUT),
        }
    }

    /// A suite's name as seen from this config's folder (`billing/refunds` for
    /// `agent-tests/billing/refunds.jsonl` under `agent-tests/agentest.toml`), so that
    /// `[golden] suites` and redactions apply however the run was started; the run's own
    /// suite name when the file is not under the config's folder.
    pub(crate) fn suite_name(&self, loaded: &Loaded) -> String {
        let config = &self.config;
        let file = std::path::absolute(&loaded.file).unwrap_or_else(|_| loaded.file.clone());
        match (&config.path, file.strip_prefix(&config.dir)) {
            (Some(_), Ok(_)) => suite_name(&config.dir, &file),
            _ => loaded.suite.clone(),
        }
    }
}

/// The contexts of a run, one per suite folder, built on first use.
pub(crate) struct Contexts {
    registry: Arc<Registry>,
    run_agent: Option<String>,
    connector: Option<String>,
    by_dir: Mutex<HashMap<PathBuf, Result<Arc<Context>, SetupError>>>,
}

impl Contexts {
    pub(crate) fn new(
        registry: Registry,
        run_agent: Option<String>,
        connector: Option<String>,
    ) -> Contexts {
        Contexts {
            registry: Arc::new(registry),
            run_agent,
            connector,
            by_dir: Mutex::new(HashMap::new()),
        }
    }

    /// The context of a suite file's folder.
    pub(crate) fn of(&self, file: &Path) -> Result<Arc<Context>, SetupError> {
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut map = self.by_dir.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(dir.clone())
            .or_insert_with(|| {
                Context::new(
                    &dir,
                    self.registry.clone(),
                    self.run_agent.clone(),
                    self.connector.clone(),
                )
                .map(Arc::new)
            })
            .clone()
    }

    /// Checks what a run depends on before it starts: every suite's config loads, the
    /// run-level agent (`-n`, or the default) resolves for the cases that name none, and
    /// every process agent the cases use can be found. An error here is a usage or config
    /// error, not a case failure: each said once (every broken config, not only the
    /// first), not once per case.
    pub(crate) fn check_setup(&self, loaded: &[Loaded]) -> Result<(), SetupErrors> {
        let problems = self.setup_problems(loaded);
        if problems.is_empty() {
            return Ok(());
        }
        Err(SetupErrors(
            problems.into_iter().map(|p| p.errors).collect(),
        ))
    }

    /// What [`Contexts::check_setup`] finds, by config file: its errors and the cases
    /// they stop, in the order the cases come.
    pub(crate) fn setup_problems(&self, loaded: &[Loaded]) -> Vec<SetupProblem> {
        let mut problems: Vec<SetupProblem> = Vec::new();
        let mut checked = HashSet::new();
        let mut labels: HashMap<PathBuf, String> = HashMap::new();
        for l in loaded {
            let Ok(case) = &l.entry else { continue };
            let error = match self.of(&l.file) {
                Err(e) => Some(e),
                Ok(ctx) => {
                    // The case's own agent: a connector mapped to an agent needs no
                    // default `[agent]`.
                    let named = ctx.case_agent_name(case);
                    match ctx.case_agent(case) {
                        Ok(_) => None,
                        // A case naming an agent that does not exist (itself or through
                        // `[connectors]`) is that case's error.
                        Err(SetupError::UndefinedAgent { .. }) if named.is_some() => None,
                        Err(e) => Some(e),
                    }
                }
            };
            let Some(error) = error else { continue };
            // Looked up once per folder, and only for cases with a problem: it reads the
            // file system.
            let dir = l.file.parent().map(Path::to_path_buf).unwrap_or_default();
            let label = labels
                .entry(dir.clone())
                .or_insert_with(|| {
                    crate::util::display_path(
                        &Config::locate(&dir, crate::settings::get().config.as_ref())
                            .unwrap_or(dir),
                    )
                    .display()
                    .to_string()
                })
                .clone();
            let at = match problems.iter().position(|p| p.label == label) {
                Some(i) => i,
                None => {
                    problems.push(SetupProblem {
                        label: label.clone(),
                        errors: Vec::new(),
                        trials: HashSet::new(),
                    });
                    problems.len() - 1
                }
            };
            let p = &mut problems[at];
            if checked.insert((label, error.to_string())) {
                p.errors.push(error);
            }
            p.trials.insert(l.trial.clone());
        }
        problems
    }

    /// The agent a run without a case-level choice uses, for headers.
    pub(crate) fn describe_agent(&self, file: &Path) -> String {
        match self
            .of(file)
            .and_then(|ctx| ctx.under_test(ctx.agent(None)))
        {
            Ok((def, name)) => format!("{name} ({})", def.describe()),
            Err(_) => self
                .run_agent
                .clone()
                .unwrap_or_else(|| "(none configured)".into()),
        }
    }
}

/// The digest of what in `config` decides verdicts: the file's bytes (an unreadable or
/// absent file counts as empty) and the personas read from its `personas_file`.
fn fingerprint(config: &Config) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    if let Some(bytes) = config.path.as_ref().and_then(|p| std::fs::read(p).ok()) {
        h.update(&bytes);
    }
    for p in &config.file_personas {
        for part in [
            Some(&p.name),
            p.description.as_ref(),
            p.system_prompt.as_ref(),
        ] {
            h.update([0]);
            h.update(part.map(String::as_str).unwrap_or_default().as_bytes());
        }
    }
    let digest = h.finalize();
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}
