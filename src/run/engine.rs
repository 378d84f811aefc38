//! The engine: runs one loaded case against its agent and produces its report.
//! The libtest harness and the `agentest` binary both drive it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::agent::{Agent, AgentDef, BoxFuture, CaseScope, Session, TurnError};
use crate::case::{Assertion, Kind};
use crate::case::{Case, Mode};
use crate::check::judge::{JudgeError, JudgeRequest, JudgeVerdict, Judges};
use crate::check::{evaluate, EvalEnv, EvalError, Subject};
use crate::check::{ScriptFn, Scripts};
use crate::config::Config;
use crate::llm::{CassetteMode, Endpoint, ModelCalls};
use crate::protocol::Message;
use crate::protocol::{Reply, Request};
use crate::protocol::{Role, TokenUsage};
use crate::record::{AssertionReport, CaseReport, Status, TurnReport};
use crate::run::hooks::{HookFn, Hooks};
use crate::run::roles::person::People;
use crate::run::roles::simulator::Simulator;
use crate::source::Loaded;
use crate::util::value_text;
use crate::util::{format_duration, parse_duration};

/// The case timeout when neither the case, the command line nor the config sets one.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long an `after` hook may run once the case's own deadline has passed.
const AFTER_HOOK_GRACE: Duration = Duration::from_secs(30);

/// What the Rust builder registered: in-process agents, hooks and scripts.
#[derive(Clone, Default)]
pub(crate) struct Registry {
    pub(crate) agents: HashMap<String, Arc<dyn Agent>>,
    pub(crate) default_agent: Option<Arc<dyn Agent>>,
    pub(crate) hooks: HashMap<String, HookFn>,
    pub(crate) scripts: HashMap<String, ScriptFn>,
}

/// Run-wide choices: which agent, which timeout.
#[derive(Clone, Default)]
pub(crate) struct Settings {
    /// `-n NAME` / the builder's choice, used by cases without `agent`.
    pub(crate) agent_name: Option<String>,
    /// `--timeout`, for cases without `timeout`.
    pub(crate) timeout: Option<Duration>,
    /// `--ignored` / `--include-ignored`: run `skip: true` cases too.
    pub(crate) run_skipped: bool,
    /// `--live` / `AGENTEST_LIVE=1`: tool calls go to the real tools, not the mocks.
    pub(crate) live: bool,
    /// `--simulator NAME`: the simulator of dynamic cases that name none.
    pub(crate) simulator: Option<String>,
    /// `--interactive`, `--skip-interactive`, `--on-missing-input`.
    pub(crate) people: People,
    /// `AGENTEST_UPDATE`: what a golden mismatch may write.
    pub(crate) update: crate::record::golden::UpdateMode,
}

/// A resolved agent and its label, or why it cannot be used; cached per agent name.
type AgentSlot = Result<(AgentDef, String), String>;

/// Everything that depends on one config file.
struct Context {
    config: Arc<Config>,
    hooks: Hooks,
    scripts: Scripts,
    agents: Mutex<HashMap<Option<String>, AgentSlot>>,
    /// `AGENTEST_CASSETTES`, else `[run] cassettes`, else auto.
    cassettes: CassetteMode,
    /// `AGENTEST_SEED`, else `[run] seed`, else 0.
    seed: u64,
    /// Tools whose call means the agent awaits the user (`[run] input_tools`).
    input_tools: Vec<String>,
    /// The `[llm]` endpoint, built on first use.
    llm: OnceLock<Result<Arc<Endpoint>, String>>,
    /// `[[golden.redactions]]`, compiled.
    redactions: Vec<crate::record::golden::Redaction>,
}

impl Context {
    /// The default model endpoint (`[llm]`), for the built-in simulator and judge.
    fn llm(&self) -> Result<Arc<Endpoint>, String> {
        self.llm
            .get_or_init(|| match &self.config.file.llm {
                Some(cfg) => Endpoint::from_config(cfg, None).map(Arc::new),
                None => Err(format!(
                    "the built-in simulator and judge need a model: add an [llm] section (base_url, model, api_key_env) to {}, or use a scripted or named simulator",
                    self.config.describe()
                )),
            })
            .clone()
    }
}

/// Runs cases. Configs and agents are resolved once and shared by all cases.
pub(crate) struct Engine {
    registry: Registry,
    settings: Settings,
    contexts: Mutex<HashMap<PathBuf, Result<Arc<Context>, String>>>,
}

static SESSIONS: AtomicU64 = AtomicU64::new(0);

impl Engine {
    pub(crate) fn new(registry: Registry, settings: Settings) -> Self {
        Engine {
            registry,
            settings,
            contexts: Mutex::new(HashMap::new()),
        }
    }

    fn context(&self, file: &Path) -> Result<Arc<Context>, String> {
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut map = self.contexts.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(dir.clone())
            .or_insert_with(|| {
                let config = Arc::new(Config::discover(&dir).map_err(|e| e.to_string())?);
                let cassettes = CassetteMode::resolve(config.file.run.cassettes.as_deref())?;
                let seed = match std::env::var("AGENTEST_SEED")
                    .ok()
                    .filter(|v| !v.is_empty())
                {
                    Some(v) => v
                        .parse()
                        .map_err(|_| format!("AGENTEST_SEED \"{v}\" is not a whole number"))?,
                    None => config.file.run.seed.unwrap_or(0),
                };
                Ok(Arc::new(Context {
                    cassettes,
                    seed,
                    input_tools: config.file.run.input_tools.clone().unwrap_or_default(),
                    llm: OnceLock::new(),
                    redactions: config.file.golden.redactions()?,
                    hooks: Hooks::new(config.clone(), self.registry.hooks.clone()),
                    scripts: Scripts::new(config.clone(), self.registry.scripts.clone()),
                    config,
                    agents: Mutex::new(HashMap::new()),
                }))
            })
            .clone()
    }

    /// The agent a case runs against, and its label for reports.
    fn agent(&self, ctx: &Context, case_agent: Option<&str>) -> AgentSlot {
        let name = case_agent
            .map(str::to_string)
            .or_else(|| self.settings.agent_name.clone());
        let mut cache = ctx.agents.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(name.clone())
            .or_insert_with(|| {
                let cfg = &ctx.config;
                match &name {
                    Some(n) => {
                        if let Some(a) = self.registry.agents.get(n) {
                            return Ok((AgentDef::InProcess(a.clone()), n.clone()));
                        }
                        match cfg.agents.get(n) {
                            Some(a) => AgentDef::from_config(a, cfg, &format!("[agents.\"{n}\"]")).map(|d| (d, n.clone())),
                            None => {
                                let known: Vec<&str> = cfg
                                    .agents
                                    .keys()
                                    .map(String::as_str)
                                    .chain(self.registry.agents.keys().map(String::as_str))
                                    .collect();
                                let hint = match crate::source::fields::suggest(n, &known) {
                                    Some(s) => format!("; did you mean `{s}`?"),
                                    None if known.is_empty() => String::new(),
                                    None => format!("; known agents: {}", known.join(", ")),
                                };
                                Err(format!(
                                    "agent `{n}` is not defined; add [agents.\"{n}\"] to {} or register it with Harness::agent{hint}",
                                    cfg.describe()
                                ))
                            }
                        }
                    }
                    None => {
                        if let Some(a) = &self.registry.default_agent {
                            return Ok((AgentDef::InProcess(a.clone()), "default".into()));
                        }
                        match &cfg.agent {
                            Some(a) => AgentDef::from_config(a, cfg, "[agent]").map(|d| (d, "default".into())),
                            None => Err(format!(
                                "no agent to test: add an [agent] section to {} (type = \"process\" or \"http\"), pass -n NAME, or give the case an `agent`",
                                cfg.describe()
                            )),
                        }
                    }
                }
            })
            .clone()
    }

    /// Checks what a run depends on before it starts: every suite's config loads, and
    /// the run-level agent (`-n`, or the default) resolves for the cases that name none.
    /// An error here is a usage or config error, not a case failure.
    pub(crate) fn check_setup(&self, loaded: &[Loaded]) -> Result<(), String> {
        let mut checked = std::collections::HashSet::new();
        for l in loaded {
            let Ok(case) = &l.entry else { continue };
            let ctx = self.context(&l.file)?;
            let uses_run_agent = case.agent.is_none() || self.settings.agent_name.is_some();
            let dir = l.file.parent().map(Path::to_path_buf).unwrap_or_default();
            if uses_run_agent && checked.insert(dir) {
                self.agent(&ctx, None)?;
            }
        }
        Ok(())
    }

    /// A description of the agent a run without a case-level choice uses, for headers.
    pub(crate) fn describe_agent(&self, file: &Path) -> String {
        match self.context(file).and_then(|ctx| self.agent(&ctx, None)) {
            Ok((def, name)) => format!("{name} ({})", def.describe()),
            Err(_) => self
                .settings
                .agent_name
                .clone()
                .unwrap_or_else(|| "(none configured)".into()),
        }
    }

    /// Runs a case as its own task on the current runtime, so that a panic anywhere in it
    /// (an in-process agent, a bug of ours) becomes an `error` record instead of a lost case.
    pub(crate) async fn run_guarded(self: Arc<Self>, loaded: Arc<Loaded>) -> CaseReport {
        let task = {
            let loaded = loaded.clone();
            tokio::spawn(async move { self.run(&loaded).await })
        };
        // Dropped (a cancelled run), the case's task goes too, and with it its agents.
        let _abort_on_drop = AbortOnDrop(task.abort_handle());
        match task.await {
            Ok(report) => report,
            Err(e) => {
                let mut report = not_run(&loaded, String::new());
                report.status = Status::Error;
                report.error = Some(format!("the case panicked: {}", crate::util::panic_text(e)));
                report
            }
        }
    }

    /// Runs one loaded case to its report. Never panics on bad input; every failure is a status.
    pub(crate) async fn run(&self, loaded: &Loaded) -> CaseReport {
        let started = Instant::now();
        let case = match &loaded.entry {
            Ok(c) => c,
            Err(e) => return broken(loaded, e),
        };
        let mut report = new_report(loaded, case);
        // `--ignored` asks for the `skip: true` cases, as it does for `#[ignore]` tests.
        let reason = if self.settings.run_skipped {
            None
        } else {
            skip_reason(case)
        };
        if let Some(reason) = reason {
            report.status = Status::Skipped;
            report.error = Some(reason);
            return report;
        }
        self.run_case(case, loaded, &mut report).await;
        report.total_turns = report.turns.len() as u32;
        self.pin(case, loaded, &mut report);
        report.duration_ms = started.elapsed().as_millis() as u64;
        report
    }

    async fn run_case(&self, case: &Case, loaded: &Loaded, report: &mut CaseReport) {
        let ctx = match self.context(&loaded.file) {
            Ok(c) => c,
            Err(e) => return fail(report, Status::Error, e),
        };
        let (def, label) = match self.agent(&ctx, case.agent.as_deref()) {
            Ok(a) => a,
            Err(e) => return fail(report, Status::Error, e),
        };
        report.agent = Some(label);
        let timeout = match self.timeout(case, &ctx.config) {
            Ok(t) => t,
            Err(e) => return fail(report, Status::Error, e),
        };
        let deadline = tokio::time::Instant::now() + timeout;
        let raw = case.raw.as_ref();

        // What the case is doing, for the timeout message.
        let mut phase = String::from("starting");
        // `after` runs whenever `before` ran (and always when there is no `before`).
        let mut before_ran = case.before.is_none();
        let calls = Arc::new(ModelCalls::new(
            crate::llm::cassette::path_for(&loaded.file, &case.id),
            ctx.cassettes,
        ));
        let scope = CaseScope {
            calls: calls.clone(),
            mocks: case.mocks.clone(),
            seed: ctx.seed,
            salt: loaded.trial.clone(),
            live: self.settings.live,
            deadline,
            role: Role::Agent,
            stderr: Default::default(),
        };
        let judges = CaseJudges {
            engine: self,
            ctx: &ctx,
            scope: &scope,
        };
        let work = async {
            if let Some(hook) = &case.before {
                if !ctx.hooks.has(hook) {
                    return Err(Stop::from(format!(
                        "before hook: {}",
                        ctx.hooks.undefined(hook)
                    )));
                }
                phase = format!("running the before hook `{hook}`");
                before_ran = true;
                ctx.hooks
                    .run(hook, raw, deadline)
                    .await
                    .map_err(|e| format!("before hook: {e}"))?;
            }
            phase = "starting the agent".into();
            let mut session = def.start(&scope).await?;
            let result = match &case.mode {
                Mode::Dynamic {
                    input,
                    simulator,
                    checkpoints,
                    max_turns,
                } => {
                    phase = "starting the simulator".into();
                    let mut sim = self.simulator(&ctx, simulator, &scope).await?;
                    let metadata = request_metadata(case);
                    let env = EvalEnv {
                        scripts: &ctx.scripts,
                        metadata: &metadata,
                        deadline,
                        judges: Some(&judges),
                    };
                    let run = crate::run::conversation::dynamic::DynamicRun {
                        test_id: &case.id,
                        session_id: new_session_id(),
                        initial: input.as_ref(),
                        checkpoints,
                        max_turns: *max_turns,
                        profile: simulator_profile(&simulator.raw),
                        show_checkpoints: simulator.show_checkpoints,
                        options: merged_options(&case.options, &None),
                        metadata: metadata.clone(),
                        input_tools: &ctx.input_tools,
                        deadline,
                        person: {
                            let enabled = case.interactive.is_some_and(|i| i.enabled);
                            let people = self.settings.people;
                            crate::run::roles::person::availability(
                                people.forced,
                                enabled,
                                people.skip,
                            )
                            .ok()
                            .map(|()| {
                                case.interactive
                                    .and_then(|i| i.timeout)
                                    .unwrap_or(crate::run::roles::person::DEFAULT_TIMEOUT)
                            })
                        },
                    };
                    let r = crate::run::conversation::dynamic::run(
                        run,
                        &mut session,
                        &mut sim,
                        &env,
                        report,
                        &mut phase,
                    )
                    .await;
                    sim.close().await;
                    r
                }
                _ => {
                    let with = With {
                        ctx: &ctx,
                        judges: &judges,
                        people: self.settings.people,
                        deadline,
                    };
                    converse(case, &mut session, with, report, &mut phase).await
                }
            };
            session.close().await;
            result
        };
        let outcome = tokio::time::timeout_at(deadline, work).await;
        let timed_out = |phase: &str| {
            format!(
                "timeout after {} (while {phase}; the agent was stopped)",
                format_duration(timeout)
            )
        };
        match outcome {
            Ok(Ok(())) => {}
            // A hook or script that gave up at the deadline is the case timing out.
            Ok(Err(_)) if tokio::time::Instant::now() >= deadline => {
                fail(report, Status::Timeout, timed_out(&phase))
            }
            Ok(Err(stop)) => fail(report, stop.status, stop.message),
            Err(_) => {
                // A silent agent's last words are on its stderr.
                let stderr = scope
                    .stderr
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                let tail = stderr
                    .map(|b| crate::agent::describe_stderr(&b))
                    .unwrap_or_default();
                fail(
                    report,
                    Status::Timeout,
                    format!("{}{tail}", timed_out(&phase)),
                )
            }
        }
        self.account(&calls, report);

        // `after` runs whenever `before` ran, even when it failed: it is the cleanup for
        // whatever `before` may have set up.
        if let (Some(hook), true) = (&case.after, before_ran) {
            let grace = tokio::time::Instant::now() + AFTER_HOOK_GRACE.min(timeout);
            if let Err(e) = ctx.hooks.run(hook, raw, deadline.max(grace)).await {
                let msg = format!("after hook: {e}");
                match report.status {
                    Status::Passed => fail(report, Status::Error, msg),
                    _ => {
                        let prev = report.error.take().unwrap_or_default();
                        report.error = Some(format!("{prev}\n{msg}").trim().to_string());
                    }
                }
            }
        }
    }

    /// Compares a passing case's transcript with its golden file, when it is pinned (the
    /// case's `golden`, else `[golden]` in the config).
    fn pin(&self, case: &Case, loaded: &Loaded, report: &mut CaseReport) {
        if report.status != Status::Passed {
            return;
        }
        let Ok(ctx) = self.context(&loaded.file) else {
            return;
        };
        // Named as in the config's folder, whatever folder the run started from.
        let from_config = config_suite_name(&ctx.config, loaded);
        let names = [from_config.as_str(), loaded.suite.as_str()];
        let pinned = case
            .golden
            .unwrap_or_else(|| ctx.config.file.golden.covers(&names));
        if !pinned {
            return;
        }
        let text = crate::record::golden::normalise(
            &crate::record::golden::render(report),
            &names,
            &ctx.redactions,
        );
        let path = crate::record::golden::path_for(&loaded.file, &case.id);
        let (check, result) = crate::record::golden::check(&path, &text, self.settings.update);
        report.golden = Some(check);
        if let Err(message) = result {
            fail(report, Status::Failed, message);
        }
    }

    /// Who plays the user: the case's `simulator.use` (`script`, or a named agent), else
    /// `--simulator`, else the built-in simulator on `[llm]`.
    async fn simulator(
        &self,
        ctx: &Context,
        sim: &crate::case::Simulator,
        scope: &CaseScope,
    ) -> Result<Simulator, String> {
        match sim.use_.as_deref().or(self.settings.simulator.as_deref()) {
            Some("script") => Ok(Simulator::Script {
                used: vec![false; sim.script.len()],
                rules: sim.script.clone(),
            }),
            Some(name) => {
                let (def, label) = self
                    .agent(ctx, Some(name))
                    .map_err(|e| format!("simulator: {e}"))?;
                let scope = CaseScope {
                    role: Role::Simulator,
                    ..scope.clone()
                };
                let session = def
                    .start(&scope)
                    .await
                    .map_err(|e| format!("simulator `{label}`: {e}"))?;
                Ok(Simulator::Agent {
                    name: label,
                    session: Box::new(session),
                    options: sim.raw.get("options").cloned().unwrap_or(Value::Null),
                })
            }
            None => Ok(Simulator::Model {
                endpoint: ctx.llm()?,
                calls: scope.calls.clone(),
                show_checkpoints: sim.show_checkpoints,
            }),
        }
    }

    /// Puts a case's model calls into its record: usage by role, calls, retries, and
    /// the cassette (written now). In strict mode unused recordings fail a passing case.
    fn account(&self, calls: &ModelCalls, report: &mut CaseReport) {
        let stats = calls.stats();
        let mut usage = stats.usage;
        // The agent's usage is what its replies report (an openai agent's replies
        // carry its model calls' usage), so it is counted from the turns.
        usage.remove(&Role::Agent);
        let mut agent = TokenUsage::default();
        for u in report.turns.iter().filter_map(|t| t.usage) {
            agent.add(TokenUsage {
                prompt_tokens: u.input_tokens,
                completion_tokens: u.output_tokens,
            });
        }
        if agent != TokenUsage::default() {
            usage.insert(Role::Agent, agent);
        }
        report.usage = usage;
        report.model_calls = stats.calls;
        report.retries = stats.retries;
        match calls.finish() {
            Ok(Some(cassette)) => {
                if cassette.unused > 0 && report.status == Status::Passed {
                    let msg = format!(
                        "{} recorded model call(s) in {} were not used by this run; re-record the cassette (AGENTEST_CASSETTES=record)",
                        cassette.unused, cassette.file
                    );
                    if cassette.mode == "strict" {
                        fail(
                            report,
                            Status::Failed,
                            format!("strict cassette mode: {msg}"),
                        );
                    } else {
                        eprintln!("agentest: {}: {msg}", report.trial);
                    }
                }
                report.cassette = Some(cassette);
            }
            Ok(None) => {}
            Err(e) => {
                let msg = format!("cassette: {e}");
                if report.status == Status::Passed {
                    fail(report, Status::Error, msg);
                } else {
                    let prev = report.error.take().unwrap_or_default();
                    report.error = Some(format!("{prev}\n{msg}").trim().to_string());
                }
            }
        }
    }

    fn timeout(&self, case: &Case, config: &Config) -> Result<Duration, String> {
        if let Some(t) = case.timeout.or(self.settings.timeout) {
            return Ok(t);
        }
        match &config.file.run.timeout {
            Some(t) => parse_duration(t)
                .map_err(|e| format!("[run].timeout in {}: {e}", config.describe())),
            None => Ok(DEFAULT_TIMEOUT),
        }
    }
}

/// The judges of one case: the built-in one on `[llm]` (recorded in the case's
/// cassette), or a configured agent that speaks the validator contract.
struct CaseJudges<'a> {
    engine: &'a Engine,
    ctx: &'a Context,
    scope: &'a CaseScope,
}

impl Judges for CaseJudges<'_> {
    fn judge<'a>(
        &'a self,
        agent: Option<&'a str>,
        request: &'a JudgeRequest,
    ) -> BoxFuture<'a, Result<JudgeVerdict, JudgeError>> {
        Box::pin(async move {
            let Some(name) = agent else {
                let endpoint = self.ctx.llm().map_err(JudgeError::Broken)?;
                return crate::check::judge::model_judge(
                    &endpoint,
                    &self.scope.calls,
                    request,
                    self.scope.deadline,
                )
                .await;
            };
            let (def, label) = self
                .engine
                .agent(self.ctx, Some(name))
                .map_err(|e| JudgeError::Broken(format!("judge: {e}")))?;
            let scope = CaseScope {
                role: Role::Judge,
                ..self.scope.clone()
            };
            let mut session = def
                .start(&scope)
                .await
                .map_err(|e| JudgeError::Broken(format!("judge `{label}`: {e}")))?;
            let mut metadata = request.to_json();
            let mut result = Err(JudgeError::Broken(String::new()));
            // One repair attempt: the second request says what was wrong with the first answer.
            for attempt in 0..2 {
                let judged = Request {
                    session_id: new_session_id(),
                    test_id: "judge".into(),
                    turn: attempt + 1,
                    input: request.output.clone(),
                    messages: vec![
                        Message::user(request.input.clone()),
                        Message::assistant(Value::String(request.output.clone()), None),
                    ],
                    options: Value::Object(Map::new()),
                    metadata: metadata.clone(),
                    attachments: Vec::new(),
                };
                let reply = match session.send(&judged).await {
                    Ok(r) => r,
                    Err(e) => {
                        result = Err(JudgeError::Broken(format!("judge `{label}`: {e}")));
                        break;
                    }
                };
                let answer = reply.data.clone().unwrap_or_else(|| reply.content.clone());
                match crate::check::judge::read_verdict(&answer) {
                    Some(v) => {
                        result = Ok(v);
                        break;
                    }
                    None => {
                        result = Err(JudgeError::Broken(format!(
                            "judge `{label}` answered twice without a verdict {{passed, reason}}; last answer: {}",
                            crate::util::compact(&answer)
                        )));
                        metadata["repair"] = Value::String(
                            "Your last answer was not a verdict. Answer with JSON: {\"passed\": bool, \"reason\": string}".into(),
                        );
                    }
                }
            }
            session.close().await;
            result
        })
    }
}

/// Why a case stopped early: the status it ends with and the reason.
#[derive(Debug)]
pub(crate) struct Stop {
    pub(crate) status: Status,
    pub(crate) message: String,
}

impl From<String> for Stop {
    fn from(message: String) -> Stop {
        Stop {
            status: Status::Error,
            message,
        }
    }
}

impl Stop {
    /// An assertion that could not be evaluated, with the status its kind calls for.
    pub(crate) fn eval(at: &str, e: EvalError) -> Stop {
        let status = match &e {
            EvalError::Broken(_) => Status::Error,
            EvalError::Unavailable(_) if crate::llm::on_ci() => Status::Failed,
            EvalError::Unavailable(_) => Status::Skipped,
        };
        Stop {
            status,
            message: format!("{at}: {e}"),
        }
    }

    /// A turn's error, with the status its kind calls for.
    pub(crate) fn turn(turn: u32, e: TurnError) -> Stop {
        let status = match &e {
            TurnError::Agent(_) => Status::Error,
            TurnError::Failed(_) => Status::Failed,
            // No model to be had: skipped with the reason, except on CI where it must fail.
            TurnError::Unavailable(_) if crate::llm::on_ci() => Status::Failed,
            TurnError::Unavailable(_) => Status::Skipped,
        };
        Stop {
            status,
            message: format!("turn {turn}: {e}"),
        }
    }
}

fn fail(report: &mut CaseReport, status: Status, message: String) {
    report.status = status;
    report.error = Some(message);
}

/// A suite's name as seen from its config's folder (`billing/refunds` for
/// `agent-tests/billing/refunds.jsonl` under `agent-tests/agentest.toml`), so that
/// `[golden] suites` and redactions apply however the run was started; the run's own
/// suite name when the file is not under the config's folder.
fn config_suite_name(config: &Config, loaded: &Loaded) -> String {
    let file = std::path::absolute(&loaded.file).unwrap_or_else(|_| loaded.file.clone());
    match (&config.path, file.strip_prefix(&config.dir)) {
        (Some(_), Ok(_)) => crate::source::suite_name(&config.dir, &file),
        _ => loaded.suite.clone(),
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A fresh record for a case, status `passed` until something says otherwise.
pub(crate) fn new_report(loaded: &Loaded, case: &Case) -> CaseReport {
    CaseReport {
        id: case.id.clone(),
        name: case.display_name().to_string(),
        suite: loaded.suite.clone(),
        trial: loaded.trial.clone(),
        status: Status::Passed,
        mode: Some(case.mode.name().into()),
        agent: None,
        turns: Vec::new(),
        location: case.location.to_string(),
        tags: case.tags.clone(),
        ..CaseReport::default()
    }
}

/// The record of a case that was not run: a load error, or `skipped` with `reason`.
pub(crate) fn not_run(loaded: &Loaded, reason: String) -> CaseReport {
    match &loaded.entry {
        Ok(case) => CaseReport {
            status: Status::Skipped,
            error: Some(reason),
            ..new_report(loaded, case)
        },
        Err(e) => broken(loaded, e),
    }
}

/// The record of a line that did not load.
pub(crate) fn broken(loaded: &Loaded, e: &crate::source::CaseError) -> CaseReport {
    // Without a usable id, the trial's own name (`line-N`) stands in for it.
    let id = e.id.clone().unwrap_or_else(|| {
        let tail = loaded.trial.rsplit(crate::source::SEPARATOR).next();
        tail.unwrap_or_default().to_string()
    });
    CaseReport {
        name: id.clone(),
        id,
        suite: loaded.suite.clone(),
        trial: loaded.trial.clone(),
        status: Status::Error,
        mode: None,
        agent: None,
        turns: Vec::new(),
        error: Some(e.to_string()),
        location: e.location.to_string(),
        ..CaseReport::default()
    }
}

/// Why a case is not run: `skip: true`.
pub(crate) fn skip_reason(case: &Case) -> Option<String> {
    case.skip.then(|| "skip: true in the case".to_string())
}

/// Shallow merge of the case's options with a turn's.
fn merged_options(case: &Option<Value>, turn: &Option<Value>) -> Value {
    match (case, turn) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut m = a.clone();
            for (k, v) in b {
                m.insert(k.clone(), v.clone());
            }
            Value::Object(m)
        }
        (_, Some(t)) => t.clone(),
        (Some(c), None) => c.clone(),
        (None, None) => Value::Object(Map::new()),
    }
}

fn request_metadata(case: &Case) -> Value {
    let mut m = match &case.metadata {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    if let Some(u) = &case.user {
        m.insert("user".into(), u.clone());
    }
    if let Some(t) = &case.team {
        m.insert("team".into(), t.clone());
    }
    Value::Object(m)
}

/// What a scripted conversation works with.
#[derive(Clone, Copy)]
struct With<'a> {
    ctx: &'a Context,
    judges: &'a dyn Judges,
    people: People,
    deadline: tokio::time::Instant,
}

/// The scripted conversation of single and static cases.
async fn converse(
    case: &Case,
    session: &mut Session,
    with: With<'_>,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<(), Stop> {
    let With {
        ctx,
        judges,
        people,
        deadline,
    } = with;
    let session_id = new_session_id();
    let metadata = request_metadata(case);
    let env = EvalEnv {
        scripts: &ctx.scripts,
        metadata: &metadata,
        deadline,
        judges: Some(judges),
    };
    let mut history: Vec<Message> = Vec::new();
    let single_checks: Vec<Assertion>;
    let steps: Vec<(&crate::case::Input, &[Assertion], Value, &[Value])> = match &case.mode {
        Mode::Single { input, assertions } => {
            // `expected` is checked too, next to any assertions: never silently ignored.
            single_checks = assertions
                .iter()
                .cloned()
                .chain(case.expected.as_ref().map(|v| Assertion {
                    kind: Kind::Equals { value: v.clone() },
                    negate: false,
                    message: None,
                    raw: serde_json::json!({"type": "equals", "value": v}),
                }))
                .collect();
            vec![(
                input,
                single_checks.as_slice(),
                merged_options(&case.options, &None),
                &[],
            )]
        }
        Mode::Static { turns, .. } => turns
            .iter()
            .map(|t| {
                (
                    &t.input,
                    t.assertions.as_slice(),
                    merged_options(&case.options, &t.options),
                    t.attachments.as_slice(),
                )
            })
            .collect(),
        Mode::Dynamic { .. } => unreachable!("dynamic cases are skipped before they run"),
    };
    let mut last_reply: Option<Reply> = None;
    for (i, (input, assertions, options, attachments)) in steps.into_iter().enumerate() {
        let turn = i as u32 + 1;
        history.extend(input.messages.iter().cloned());
        let request = Request {
            session_id: session_id.clone(),
            test_id: case.id.clone(),
            turn,
            input: input.text(),
            messages: history.clone(),
            options,
            metadata: metadata.clone(),
            attachments: attachments.to_vec(),
        };
        let (reply, duration_ms) = exchange(session, &request, "static", report, phase).await?;
        history.push(reply.to_message());
        let subject = Subject {
            reply: &reply,
            input: &request.input,
            conversation: &history,
        };
        *phase = format!("checking the assertions of turn {turn}");
        let (verdicts, broken) = check_all(assertions, subject, &env).await;
        let mut turn_report = replied_turn(
            turn,
            &request.input,
            "static",
            &reply,
            duration_ms,
            &ctx.input_tools,
        );
        turn_report.assertions = verdicts;
        turn_report.error = broken.as_ref().map(ToString::to_string);
        let first_failure = turn_report
            .assertions
            .iter()
            .find(|a| !a.passed)
            .map(|a| format!("turn {turn}: {}: {}", a.label, a.message));
        report.turns.push(turn_report);
        if let Some(e) = broken {
            return Err(Stop::eval(&format!("turn {turn}"), e));
        }
        if let Some(f) = first_failure {
            report.status = Status::Failed;
            report.error = Some(f);
            return Ok(());
        }
        last_reply = Some(reply);
    }
    // The script ran out while the agent waits for the user: a person may go on.
    let awaiting = report
        .turns
        .last()
        .filter(|t| t.awaiting_input)
        .map(|t| value_text(&t.output));
    let wants_person = case.interactive.is_some_and(|i| i.enabled) || people.forced;
    if let (Some(question), true) = (awaiting, wants_person) {
        let case_enabled = case.interactive.is_some_and(|i| i.enabled);
        match crate::run::roles::person::availability(people.forced, case_enabled, people.skip) {
            Ok(()) => {
                let wait = case
                    .interactive
                    .and_then(|i| i.timeout)
                    .unwrap_or(crate::run::roles::person::DEFAULT_TIMEOUT);
                let mut question = question;
                let mut hint = last_reply.as_ref().and_then(|r| r.input_hint.clone());
                loop {
                    let turn = report.turns.len() as u32 + 1;
                    *phase = format!("waiting for a person's answer for turn {turn}");
                    let answer = crate::run::roles::person::ask(
                        &case.id,
                        &question,
                        hint.as_deref(),
                        "your reply (empty line to stop):",
                        wait,
                    )
                    .await
                    .map_err(|e| Stop::from(format!("turn {turn}: interactive input: {e}")))?;
                    let Some(text) = answer else { break };
                    history.push(Message::user(text.clone()));
                    let request = Request {
                        session_id: session_id.clone(),
                        test_id: case.id.clone(),
                        turn,
                        input: text.clone(),
                        messages: history.clone(),
                        options: merged_options(&case.options, &None),
                        metadata: metadata.clone(),
                        attachments: Vec::new(),
                    };
                    let (reply, duration_ms) =
                        exchange(session, &request, "human", report, phase).await?;
                    history.push(reply.to_message());
                    let record =
                        replied_turn(turn, &text, "human", &reply, duration_ms, &ctx.input_tools);
                    let go_on = record.awaiting_input;
                    question = value_text(&record.output);
                    hint = reply.input_hint.clone();
                    report.turns.push(record);
                    last_reply = Some(reply);
                    if !go_on {
                        break;
                    }
                }
            }
            Err(why) if case_enabled => {
                let turn = report.turns.len();
                return Err(Stop {
                    status: if people.fail_missing { Status::Failed } else { Status::Skipped },
                    message: format!(
                        "the agent awaits input after turn {turn} (it asked: {}) and no scripted turn is left, but {why}\nhint: add more turns, run with --interactive, or use a simulator",
                        serde_json::Value::String(crate::util::clip(&question))
                    ),
                });
            }
            Err(_) => {}
        }
    }
    if let (
        Mode::Static {
            final_assertions, ..
        },
        Some(reply),
    ) = (&case.mode, &last_reply)
    {
        let input = report
            .turns
            .last()
            .map(|t| t.input.clone())
            .unwrap_or_default();
        let subject = Subject {
            reply,
            input: &input,
            conversation: &history,
        };
        *phase = "checking the final assertions".into();
        let (verdicts, broken) = check_all(final_assertions, subject, &env).await;
        let first_failure = verdicts
            .iter()
            .find(|a| !a.passed)
            .map(|a| format!("final assertions: {}: {}", a.label, a.message));
        report.final_assertions = verdicts;
        if let Some(e) = broken {
            return Err(Stop::eval("final assertions", e));
        }
        if let Some(f) = first_failure {
            report.status = Status::Failed;
            report.error = Some(f);
        }
    }
    Ok(())
}

/// A conversation id, unique within the process.
fn new_session_id() -> String {
    format!(
        "agentest-{}-{}",
        std::process::id(),
        SESSIONS.fetch_add(1, Ordering::Relaxed)
    )
}

/// What the simulator plays: `simulator.options.metadata`, `simulator.metadata`, then
/// the seed's fields written directly on `simulator` (persona, goal, objective, ...).
fn simulator_profile(raw: &Value) -> Map<String, Value> {
    let mut profile = Map::new();
    for source in [&raw["options"]["metadata"], &raw["metadata"]] {
        if let Value::Object(m) = source {
            profile.extend(m.clone());
        }
    }
    for key in [
        "persona",
        "goal",
        "objective",
        "style",
        "constraints",
        "emotional_state",
        "knowledge_level",
    ] {
        if let Some(v) = raw.get(key) {
            profile.insert(key.into(), v.clone());
        }
    }
    profile
}

/// The record of a turn the agent answered, with its awaiting-input verdict.
pub(crate) fn replied_turn(
    turn: u32,
    input: &str,
    source: &str,
    reply: &Reply,
    duration_ms: u64,
    input_tools: &[String],
) -> TurnReport {
    let (awaiting, reason) = crate::run::awaiting::detect(reply, input_tools);
    TurnReport {
        turn,
        input: input.to_string(),
        input_source: source.into(),
        output: reply.output_value(),
        tool_calls: reply.tool_calls.clone(),
        awaiting_input: awaiting,
        awaiting_reason: Some(reason),
        data: reply.data.clone(),
        duration_ms,
        usage: reply.usage,
        ..TurnReport::default()
    }
}

/// Sends one turn and waits for the reply; an agent that does not answer leaves a turn
/// record with the error and stops the case with the status the error calls for.
pub(crate) async fn exchange(
    session: &mut Session,
    request: &Request,
    source: &str,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<(Reply, u64), Stop> {
    *phase = format!("waiting for the reply to turn {}", request.turn);
    let sent = Instant::now();
    let reply = session.send(request).await;
    let duration_ms = sent.elapsed().as_millis() as u64;
    match reply {
        Ok(r) => Ok((r, duration_ms)),
        Err(e) => {
            let turn = request.turn;
            report.turns.push(failed_turn(
                turn,
                request.input.clone(),
                source,
                duration_ms,
                &e,
            ));
            Err(Stop::turn(turn, e))
        }
    }
}

/// The record of a turn the agent did not answer.
fn failed_turn(
    turn: u32,
    input: String,
    source: &str,
    duration_ms: u64,
    error: &TurnError,
) -> TurnReport {
    TurnReport {
        turn,
        input,
        input_source: source.into(),
        duration_ms,
        error: Some(error.to_string()),
        ..TurnReport::default()
    }
}

/// Evaluates every assertion (all of them, so the report shows each verdict).
/// The second value is set when one could not be evaluated.
pub(crate) async fn check_all(
    list: &[Assertion],
    subject: Subject<'_>,
    env: &EvalEnv<'_>,
) -> (Vec<AssertionReport>, Option<EvalError>) {
    let mut out = Vec::with_capacity(list.len());
    let mut broken = None;
    for a in list {
        let mut spec = match &a.raw {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        // A custom `message` is part of the verdict's message; one key, not two.
        spec.remove("message");
        match evaluate(a, subject, env).await {
            Ok(v) => out.push(AssertionReport {
                spec,
                passed: v.passed,
                message: v.detail.unwrap_or_else(|| v.label.clone()),
                label: v.label,
            }),
            Err(e) => {
                out.push(AssertionReport {
                    spec,
                    passed: false,
                    label: a.type_name().to_string(),
                    message: e.to_string(),
                });
                broken.get_or_insert(e);
            }
        }
    }
    (out, broken)
}
