//! Running a scenario's steps in order, in its environment, on one conversation, then
//! its judgment over every evaluation of every step.

use serde_json::{json, Value};

use crate::case::scenario::{Action, Evaluation, Scenario, Step};
use crate::check::evaluators::StepResult;
use crate::check::scenario::{evaluate_all, judge, trajectory};
use crate::check::{EvalEnv, Subject};
use crate::protocol::{Message, Reply};
use crate::record::{CodeRun, Ending, StepRef, Termination, TurnReport};
use crate::run::conversation::conditions::Conditions;
use crate::run::conversation::driver::{Conversation, Once, Said};
use crate::run::conversation::turn::latencies;
use crate::run::outcome::{Party, Stop};

use super::workdir::Workdir;

/// What the scenario runner is given by the case's lifecycle.
pub(crate) struct Run<'a> {
    pub(crate) scenario: &'a Scenario,
    pub(crate) env: &'a EvalEnv<'a>,
    pub(crate) workdir: &'a Workdir,
    /// `--live`: the mocks are not sent.
    pub(crate) live: bool,
    /// `--simulator`, for conversation steps.
    pub(crate) simulator: Option<&'a str>,
}

/// Runs every step, then decides the case by the scenario's judgment.
pub(crate) async fn run(r: &Run<'_>, conv: &mut Conversation<'_>) -> Result<(), Stop> {
    for (i, step) in r.scenario.steps.iter().enumerate() {
        let step_ref = StepRef {
            index: i as u32 + 1,
            name: step.name.clone(),
            kind: match step.action {
                Action::Message(_) => "message",
                Action::Code { .. } => "code",
                Action::Conversation { .. } => "conversation",
            }
            .into(),
        };
        let first_turn = conv.next_turn();
        let outcome = play_step(r, step, &step_ref.to_string(), conv).await;
        // Every turn the step played is its, also when the step broke off.
        for t in conv
            .report
            .turns
            .iter_mut()
            .filter(|t| t.turn >= first_turn)
        {
            t.step = Some(step_ref.clone());
        }
        let played = outcome?;
        evaluate_step(r, step, &step_ref.to_string(), first_turn, played, conv).await?;
    }
    judge(r.scenario.judgment, conv.report);
    Ok(())
}

/// What a step left: its last reply, how long it took, and a conversation's agent turns.
struct Played {
    reply: Reply,
    took_ms: u64,
    conversation: Option<u32>,
}

async fn play_step(
    r: &Run<'_>,
    step: &Step,
    at: &str,
    conv: &mut Conversation<'_>,
) -> Result<Played, Stop> {
    match &step.action {
        Action::Message(input) => {
            let said = Said::new(vec![Message::user(input.clone())], "static");
            conv.play(&mut Once::new(said, Termination::ScriptDone))
                .await?;
            let took_ms = conv.report.turns.last().map_or(0, |t| t.duration_ms);
            Ok(Played {
                reply: conv.last_reply.clone().unwrap_or_default(),
                took_ms,
                conversation: None,
            })
        }
        Action::Code { lang, code } => {
            *conv.phase = format!("running the {} code of {at}", lang.name());
            let out = crate::check::code::run(*lang, code, r.workdir.path(), r.env.deadline)
                .await
                .map_err(|e| Stop::step(at, e))?;
            conv.push_other(TurnReport {
                input: code.clone(),
                input_source: "code".into(),
                output: Value::String(out.stdout.clone()),
                code: Some(CodeRun {
                    lang: lang.name().into(),
                    exit_code: out.exit_code,
                    stderr: out.stderr.clone(),
                    files: r.workdir.files(),
                }),
                duration_ms: out.duration_ms,
                ..TurnReport::default()
            });
            Ok(Played {
                reply: Reply::text(out.stdout),
                took_ms: out.duration_ms,
                conversation: None,
            })
        }
        Action::Conversation {
            input,
            conversation: spec,
        } => {
            let started = std::time::Instant::now();
            let mut rules = Conditions::new(spec, input.as_deref(), r.env, r.workdir.path());
            conv.set_at(Some(at.to_string()));
            // The step's own conversation: its last reply is the step's.
            conv.last_reply = None;
            let played = match conv.start_simulator(&rules.simulator(), r.simulator).await {
                Ok(()) => conv.play(&mut rules).await,
                Err(e) => Err(Stop::step(at, e).by(Party::Simulator)),
            };
            conv.close_simulator().await;
            conv.set_at(None);
            let termination = played?;
            conv.report.termination = Some(termination);
            if let Some(last) = conv.report.turns.last_mut() {
                last.ending = Some(Ending {
                    termination,
                    turns: rules.turns,
                    max_turns: spec.max_turns,
                    ended_early: rules.turns < spec.max_turns,
                });
            }
            Ok(Played {
                reply: conv.last_reply.clone().unwrap_or_default(),
                took_ms: started.elapsed().as_millis() as u64,
                conversation: Some(rules.turns),
            })
        }
    }
}

/// The step's evaluations (a conversation's final ones first), on its last reply; they
/// join the step's last turn in the report.
async fn evaluate_step(
    r: &Run<'_>,
    step: &Step,
    at: &str,
    first_turn: u32,
    played: Played,
    conv: &mut Conversation<'_>,
) -> Result<(), Stop> {
    *conv.phase = format!("evaluating {at}");
    let finals: &[Evaluation] = match &step.action {
        Action::Conversation {
            conversation: c, ..
        } => &c.final_evaluations,
        _ => &[],
    };
    let list: Vec<Evaluation> = finals.iter().chain(&step.evaluations).cloned().collect();
    if list.is_empty() {
        return Ok(());
    }
    let turns = &conv.report.turns;
    let input = turns.last().map(|t| t.input.clone()).unwrap_or_default();
    let trajectory = trajectory(turns, first_turn);
    let step_turns: Vec<TurnReport> = turns
        .iter()
        .filter(|t| t.turn >= first_turn)
        .cloned()
        .collect();
    let latency = latencies(&step_turns);
    let subject = Subject {
        reply: &played.reply,
        input: &input,
        conversation: &conv.history,
        latency: &latency,
    };
    let result = StepResult {
        duration_ms: played.took_ms,
        trajectory: &trajectory,
    };
    let (verdicts, broken) = evaluate_all(
        &list,
        subject,
        &result,
        r.workdir.path(),
        r.env,
        played
            .conversation
            .map(|turns| (conv.history.as_slice(), turns)),
    )
    .await;
    if let Some(last) = conv.report.turns.last_mut() {
        last.assertions.extend(verdicts);
        if let Some(e) = &broken {
            last.error.get_or_insert_with(|| e.to_string());
        }
    }
    match broken {
        Some(e) => Err(Stop::step(at, e)),
        None => Ok(()),
    }
}

/// The request's `setup`: the scenario's mocks, unless `--live` ignores them as
/// ElizaOS's `--live` does.
pub(crate) fn setup(scenario: &Scenario, live: bool) -> Option<Value> {
    (!scenario.mocks.is_empty() && !live).then(|| json!({ "mocks": scenario.mocks }))
}
