//! A case's lifecycle: resolve what it runs with, the `before` hook, the agent, the
//! conversation, all under the case's deadline; then the accounting of its model calls
//! and the `after` hook.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::agent::{AgentDef, CaseScope};
use crate::case::{Case, Mode};
use crate::check::EvalEnv;
use crate::errors::{SetupError, StepError};
use crate::llm::ModelCalls;
use crate::protocol::{Role, TokenUsage};
use crate::record::{CaseReport, Status};
use crate::run::context::Context;
use crate::run::context::Contexts;
use crate::run::conversation::checkpoints::Dynamic;
use crate::run::conversation::driver::{Conversation, Parts};
use crate::run::conversation::{criteria, scripted, turn::request_metadata};
use crate::run::options::RunOptions;
use crate::run::outcome::{add_error, fail, Stop};
use crate::run::repeats::Repeat;
use crate::run::roles::judge::CaseJudges;
use crate::source::Loaded;
use crate::util::format_duration;

/// How long an `after` hook may run once the case's own deadline has passed.
const AFTER_HOOK_GRACE: Duration = Duration::from_secs(30);

/// What one case runs with, once resolved.
struct Setup {
    ctx: Arc<Context>,
    agent: AgentDef,
    timeout: Duration,
    deadline: Instant,
    calls: Arc<ModelCalls>,
    scope: CaseScope,
    /// An ElizaOS scenario's `local` environment, removed when the case ends.
    workdir: Option<crate::run::scenario::Workdir>,
    /// Which repeat this is, when the case runs more than once.
    repeat: Option<u32>,
}

/// What a case's lifecycle takes from the run.
pub(crate) struct Given<'a> {
    pub(crate) options: &'a RunOptions,
    pub(crate) contexts: &'a Contexts,
    /// The scenario's environment folder, when the run made it ahead.
    pub(crate) prepared: Option<std::io::Result<crate::run::scenario::Workdir>>,
}

/// Runs a loaded case into `report`. Every problem ends as a status on the report.
pub(crate) async fn run_case(
    mut given: Given<'_>,
    case: &Case,
    loaded: &Loaded,
    repeat: &Repeat,
    report: &mut CaseReport,
) {
    // `-c`, `-u`, `-t`: the case as the agent under test is to see it.
    let case = &*given.options.overrides.apply(case);
    let setup = match prepare(&given, case, loaded, repeat) {
        Ok(s) => s,
        Err(e) => return fail(report, Status::Error, e.to_string()),
    };
    report.agent = Some(setup.1);
    let mut setup = setup.0;
    if let Mode::Scenario(sc) = &case.mode {
        if sc.environment == crate::case::scenario::Environment::E2b {
            // A remote sandbox service, like a model that cannot be reached: skipped
            // with the reason here, a failure on CI.
            let why = StepError::Unavailable(
                "environment type e2b (E2B's remote sandboxes) is not supported by agentest; use `environment: {type: local}`".into(),
            );
            let status = crate::run::outcome::status_of(&why, crate::settings::on_ci());
            return fail(report, status, why.to_string());
        }
        let made = match given.prepared.take() {
            Some(made) => made,
            None => {
                crate::run::scenario::Workdir::create_off_thread(
                    loaded.trial.clone(),
                    sc.virtual_fs.clone(),
                    given.options.keep_env,
                )
                .await
            }
        };
        match made {
            Ok(dir) => {
                setup.scope.workdir = Some(dir.path().to_path_buf());
                setup.workdir = Some(dir);
            }
            Err(e) => {
                return fail(
                    report,
                    Status::Error,
                    format!("failed to create the scenario's environment folder: {e}"),
                )
            }
        }
    }
    // What the case is doing, for the timeout message.
    let mut phase = String::from("starting");
    // `after` runs whenever `before` ran (and always when there is no `before`).
    let mut before_ran = case.before.is_none();
    let work = body(&given, case, &setup, report, &mut phase, &mut before_ran);
    let outcome = tokio::time::timeout_at(setup.deadline, work).await;
    settle(outcome.ok(), &setup, &phase, report);
    account(&setup.calls, setup.ctx.currency.as_deref(), report);
    after_hook(case, &setup, before_ran, report).await;
}

/// Resolves the case's context, agent (and its label), timeout and model-call scope.
fn prepare(
    given: &Given<'_>,
    case: &Case,
    loaded: &Loaded,
    repeat: &Repeat,
) -> Result<(Setup, String), SetupError> {
    let ctx = given.contexts.of(&loaded.file)?;
    let (agent, label) = ctx.case_agent(case)?;
    let timeout = ctx.timeout(case, given.options.timeout)?;
    let deadline = Instant::now() + timeout;
    // Each repeat has its own recording, so a replay reproduces each one.
    let calls = Arc::new(
        ModelCalls::new(
            repeat.cassette(&loaded.file, &case.trial_id()),
            ctx.cassettes,
        )
        .spending(repeat.meters.clone(), repeat.index),
    );
    let scope = CaseScope {
        calls: calls.clone(),
        mocks: case.mocks.clone(),
        seed: ctx.seed,
        salt: repeat.key(&loaded.trial),
        live: given.options.live,
        deadline,
        role: Role::Agent,
        trace: Default::default(),
        workdir: None,
        source_llms: case.evalstudio().and_then(|e| e.llms.clone()),
        tracer: ctx.tracer(case)?,
    };
    let setup = Setup {
        ctx,
        agent,
        timeout,
        deadline,
        calls,
        scope,
        workdir: None,
        repeat: (repeat.of > 1).then_some(repeat.index),
    };
    Ok((setup, label))
}

/// The part of a case under its deadline: the `before` hook, the agent and the conversation.
async fn body(
    given: &Given<'_>,
    case: &Case,
    setup: &Setup,
    report: &mut CaseReport,
    phase: &mut String,
    before_ran: &mut bool,
) -> Result<(), Stop> {
    before_hook(case, setup, phase, before_ran).await?;
    *phase = "starting the agent".into();
    let started = std::time::Instant::now();
    let mut session = setup
        .agent
        .start(&setup.scope)
        .await
        .map_err(StepError::from)?;
    // Not part of turn 1: an HTTP agent's server may take seconds to listen.
    report.startup_ms = Some(started.elapsed().as_millis() as u64);
    let ctx = &setup.ctx;
    let judges = CaseJudges {
        ctx,
        scope: &setup.scope,
        check_calibration: true,
    };
    let metadata = case_metadata(case, setup);
    let env = EvalEnv {
        scripts: &ctx.scripts,
        metadata: &metadata,
        deadline: setup.deadline,
        judges: Some(&judges),
    };
    let user = simulated_user(case, ctx, report)?;
    let conv = Conversation::new(Parts {
        case,
        ctx,
        scope: &setup.scope,
        env: &env,
        session: &mut session,
        report,
        phase,
    });
    let result = converse(given, setup, user.as_ref(), conv).await;
    if result.is_ok() && report.status == Status::Failed {
        // A failure the simulated user may have caused by leaving its persona.
        let persona = persona_of(case, user.as_ref());
        if let (Some(judge), Some(persona)) = (&ctx.config.persona_judge, persona) {
            *phase = "asking the persona judge".into();
            report.blame =
                crate::check::blame::persona_broken(&judges, judge, &persona, report).await;
        }
    }
    let finished = session.finish(setup.deadline).await;
    // Replies out of step make the conversation's verdict unreliable: the error wins.
    result.and(finished.map_err(|e| Stop::from(StepError::from(e))))
}

/// The case's `before` hook, when it names one.
async fn before_hook(
    case: &Case,
    setup: &Setup,
    phase: &mut String,
    before_ran: &mut bool,
) -> Result<(), Stop> {
    let Some(hook) = &case.before else {
        return Ok(());
    };
    let hooks = &setup.ctx.hooks;
    if !hooks.has(hook) {
        return Err(Stop::error(format!(
            "before hook: {}",
            hooks.undefined(hook)
        )));
    }
    *phase = format!("running the before hook `{hook}`");
    *before_ran = true;
    hooks
        .run(hook, &case.raw.value(), setup.deadline)
        .await
        .map_err(|e| Stop::error(format!("before hook: {e}")))
}

/// The request's `metadata`: the case's, the repeat's number and the scenario's folder.
fn case_metadata(case: &Case, setup: &Setup) -> Value {
    let mut metadata = request_metadata(case);
    if let (Some(n), Value::Object(m)) = (setup.repeat, &mut metadata) {
        // Which repeat this is, from 1: an agent may seed its own randomness with it.
        m.insert("repeat".into(), Value::from(n));
    }
    if let (Some(dir), Value::Object(m)) = (&setup.workdir, &mut metadata) {
        // Where the scenario's files are: the agent may read and write there.
        m.insert(
            "environment_dir".into(),
            Value::String(dir.path().display().to_string()),
        );
    }
    metadata
}

/// The persona the case's simulated user plays, as text: a persona's (`personas`), else
/// its simulator's `persona`.
fn persona_of(case: &Case, user: Option<&crate::case::Simulator>) -> Option<String> {
    let spec = match (&case.mode, user) {
        (_, Some(u)) => u,
        (Mode::Dynamic { simulator, .. } | Mode::Criteria { simulator, .. }, None) => simulator,
        _ => return None,
    };
    spec.profile
        .get("persona")
        .map(crate::util::value_text)
        .filter(|p| !p.trim().is_empty())
}

/// The simulated user of a case run once per persona: the case's simulator
/// impersonating it.
fn simulated_user(
    case: &Case,
    ctx: &Context,
    report: &mut CaseReport,
) -> Result<Option<crate::case::Simulator>, Stop> {
    let (Mode::Dynamic { simulator, .. } | Mode::Criteria { simulator, .. }, Some(p)) =
        (&case.mode, &case.persona)
    else {
        return Ok(None);
    };
    let persona = ctx
        .persona(p)
        .map_err(|e| Stop::step("persona", StepError::from(e)))?;
    report.persona = Some(persona.name.clone());
    Ok(Some(impersonate(simulator, &persona)))
}

/// The conversation, played by the case's mode; `user` is a persona's simulated user.
async fn converse(
    given: &Given<'_>,
    setup: &Setup,
    user: Option<&crate::case::Simulator>,
    mut conv: Conversation<'_>,
) -> Result<(), Stop> {
    let people = given.options.people;
    let chosen = given.options.simulator.as_deref();
    let case = conv.case;
    match &case.mode {
        Mode::Criteria {
            input,
            simulator,
            criteria,
        } => {
            let spec = user.unwrap_or(simulator);
            criteria::run(&mut conv, criteria, input.as_ref(), spec, chosen).await
        }
        Mode::Dynamic {
            input,
            simulator,
            checkpoints,
            max_turns,
        } => {
            let spec = user.unwrap_or(simulator);
            conv.person = people.for_case(case).ok().flatten();
            Dynamic::new(input.as_ref(), checkpoints, *max_turns, spec)
                .run(&mut conv, spec.use_.as_deref().or(chosen))
                .await
        }
        Mode::Single { .. } | Mode::Static { .. } => scripted::run(&mut conv, people).await,
        Mode::Scenario(sc) => {
            let Some(dir) = &setup.workdir else {
                return Err(Stop::error("the scenario has no environment folder"));
            };
            let run = crate::run::scenario::Run {
                scenario: sc,
                env: conv.env,
                workdir: dir,
                live: given.options.live,
                simulator: chosen,
            };
            let mut conv = conv.with_setup(crate::run::scenario::setup(sc, run.live));
            crate::run::scenario::run(&run, &mut conv).await
        }
    }
}

/// `spec` playing `persona`: its system prompt (else its description) becomes the
/// simulated user's `persona`, over what the case's simulator says.
fn impersonate(
    spec: &crate::case::Simulator,
    persona: &crate::case::PersonaRef,
) -> crate::case::Simulator {
    let mut spec = spec.clone();
    let text = persona
        .system_prompt
        .clone()
        .or_else(|| persona.description.clone())
        .unwrap_or_else(|| persona.name.clone());
    spec.profile
        .insert("persona".into(), serde_json::Value::String(text));
    spec.profile.insert(
        "persona_name".into(),
        serde_json::Value::String(persona.name.clone()),
    );
    spec
}

/// The case's status once its deadline-bound part ended (`None`: the deadline passed).
fn settle(outcome: Option<Result<(), Stop>>, setup: &Setup, phase: &str, report: &mut CaseReport) {
    let timed_out = || {
        // Waiting for a model slot counts against the deadline: say how much of it did.
        let waited = match setup.scope.calls.slot_wait() {
            Some((waited, endpoint, limit)) => format!(
                "; {} of it waiting for a free slot at model endpoint {endpoint} ({limit} in flight: raise max_in_flight, or lower --parallel)",
                format_duration(waited)
            ),
            None => String::new(),
        };
        format!(
            "timeout after {} (while {phase}; the agent was stopped{waited})",
            format_duration(setup.timeout)
        )
    };
    // A deadline that passed while the agent under test was starting or answering is its
    // own slowness; anything else (a model endpoint, a hook) is what carries the
    // conversation.
    let blame_timeout = |report: &mut CaseReport| {
        let agents = phase.starts_with("starting the agent")
            || phase.starts_with("waiting for the reply")
            || phase.starts_with("waiting for the spans");
        report.blame = Some(crate::record::Blame {
            party: if agents {
                crate::case::Party::Agent
            } else {
                crate::case::Party::Infrastructure
            },
            evidence: report.error.clone().unwrap_or_default(),
        });
    };
    match outcome {
        Some(Ok(())) => {}
        // A hook or script that gave up at the deadline is the case timing out.
        Some(Err(_)) if Instant::now() >= setup.deadline => {
            fail(report, Status::Timeout, timed_out());
            blame_timeout(report);
        }
        Some(Err(stop)) => {
            report.blame = stop.blame();
            fail(report, stop.status, stop.message)
        }
        None => {
            // A silent agent's last words are on its stderr; an agent that never
            // flushed its reply is the usual first-hour hang.
            let trace = setup
                .scope
                .trace
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let tail = trace.map(|t| t.describe()).unwrap_or_default();
            fail(report, Status::Timeout, format!("{}{tail}", timed_out()));
            blame_timeout(report);
        }
    }
}

/// Puts a case's model calls into its record: usage by role, calls, retries, and
/// the cassette (written now). In strict mode unused recordings fail a passing case.
fn account(calls: &ModelCalls, currency: Option<&str>, report: &mut CaseReport) {
    let stats = calls.stats();
    let mut usage = stats.usage;
    // An `openai` agent's usage is every model call it made, failed turns included (its
    // replies report the same tokens, so those are not added again), spent or replayed;
    // another agent's is what its replies report.
    let model_agent = stats.replayed.contains_key(&Role::Agent);
    if let (std::collections::btree_map::Entry::Vacant(slot), false) =
        (usage.entry(Role::Agent), model_agent)
    {
        let mut agent = TokenUsage::default();
        for u in report.turns.iter().filter_map(|t| t.usage) {
            agent.add(TokenUsage {
                prompt_tokens: u.input_tokens,
                completion_tokens: u.output_tokens,
                cached_tokens: 0,
            });
        }
        if agent != TokenUsage::default() {
            // What the agent reported counts toward `max_tokens`; its price is unknown.
            calls.spend(agent, None);
            slot.insert(agent);
        }
    }
    let mut by_role = stats.cost.clone();
    for role in usage.keys() {
        // Tokens no call of ours priced (an agent's own report): unknown, never 0.
        by_role.entry(*role).or_insert(crate::record::RoleCost {
            spent: None,
            replayed: Some(0.0),
        });
    }
    // Without a price anywhere in the config there is no cost to tell, not an unknown one.
    if let (false, Some(currency)) = (by_role.is_empty(), currency) {
        report.cost = Some(crate::record::Cost::of(currency, by_role));
    }
    report.usage = usage;
    report.replayed_usage = stats.replayed;
    report.replayed_calls = stats.replayed_calls;
    report.model_calls = stats.calls;
    report.retries = stats.retries;
    report
        .provenance
        .get_or_insert_with(Default::default)
        .models = stats.models;
    match calls.finish() {
        Ok(Some(cassette)) => {
            if cassette.unused > 0 && matches!(report.status, Status::Passed | Status::Inconclusive)
            {
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
        Err(e) => add_error(report, format!("cassette: {e}")),
    }
}

/// `after` runs whenever `before` ran, even when it failed: it is the cleanup for
/// whatever `before` may have set up. It gets a grace period past the case's deadline.
async fn after_hook(case: &Case, setup: &Setup, before_ran: bool, report: &mut CaseReport) {
    let (Some(hook), true) = (&case.after, before_ran) else {
        return;
    };
    let grace = Instant::now() + AFTER_HOOK_GRACE.min(setup.timeout);
    let deadline = setup.deadline.max(grace);
    if let Err(e) = setup.ctx.hooks.run(hook, &case.raw.value(), deadline).await {
        add_error(report, format!("after hook: {e}"));
    }
}
