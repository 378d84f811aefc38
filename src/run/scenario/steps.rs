//! Running a scenario's steps in order, in its environment, then its judgment over
//! every evaluation of every step.

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::agent::{CaseScope, Session};
use crate::case::scenario::{Action, Evaluation, Evaluator, Judgment, Scenario};
use crate::case::Case;
use crate::check::{EvalEnv, Subject};
use crate::errors::StepError;
use crate::protocol::{Message, Reply, Request};
use crate::record::{AssertionReport, CaseReport, CodeRun, Status, StepRef, TurnReport};
use crate::run::context::Context;
use crate::run::conversation::turn::{
    check_all, exchange, latencies, new_session_id, replied_turn,
};
use crate::run::outcome::Stop;

use super::conversation::{self, Talk};
use super::evaluators::{self, StepResult};
use super::workdir::Workdir;

/// What the scenario runner is given by the case's lifecycle.
pub(crate) struct Run<'a> {
    pub(crate) case: &'a Case,
    pub(crate) scenario: &'a Scenario,
    pub(crate) ctx: &'a Context,
    pub(crate) scope: &'a CaseScope,
    pub(crate) env: &'a EvalEnv<'a>,
    pub(crate) workdir: &'a Workdir,
    /// `--live`: the mocks are not sent.
    pub(crate) live: bool,
    /// `--simulator`, for conversation steps.
    pub(crate) simulator: Option<&'a str>,
}

/// Runs every step, then decides the case by the scenario's judgment.
pub(crate) async fn run(
    r: &Run<'_>,
    session: &mut Session,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<(), Stop> {
    let scenario = r.scenario;
    let session_id = new_session_id();
    let mut history: Vec<Message> = Vec::new();
    // Live mode ignores the mocks, as ElizaOS's `--live` does.
    let setup = (!scenario.mocks.is_empty() && !r.live).then(|| json!({ "mocks": scenario.mocks }));
    let mut next_turn = 1u32;
    for (i, step) in scenario.steps.iter().enumerate() {
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
        let at = step_ref.to_string();
        let first_turn = next_turn;
        // The step's last reply and its time; a conversation's whole history.
        let outcome: Result<(Reply, u64, Option<u32>), Stop> = async {
            Ok(match &step.action {
                Action::Message(input) => {
                    history.push(Message::user(input.clone()));
                    let request = Request {
                        session_id: session_id.clone(),
                        test_id: r.case.id.clone(),
                        turn: next_turn,
                        input: input.clone(),
                        messages: history.clone(),
                        options: crate::run::conversation::turn::merged_options(
                            &r.case.options,
                            &None,
                        ),
                        metadata: r.env.metadata.clone(),
                        attachments: Vec::new(),
                        setup: setup.clone(),
                    };
                    let (reply, latency) =
                        exchange(session, &request, "static", report, phase).await?;
                    history.push(reply.to_message());
                    let record = replied_turn(
                        next_turn,
                        input,
                        "static",
                        &reply,
                        latency,
                        &r.ctx.input_tools,
                    );
                    report.turns.push(record);
                    next_turn += 1;
                    (reply, latency.reply_ms, None)
                }
                Action::Code { lang, code } => {
                    *phase = format!("running the {} code of {at}", lang.name());
                    let out = super::code::run(*lang, code, r.workdir.path(), r.env.deadline)
                        .await
                        .map_err(|e| Stop::step(&at, e))?;
                    report.turns.push(TurnReport {
                        turn: next_turn,
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
                    next_turn += 1;
                    (Reply::text(out.stdout), out.duration_ms, None)
                }
                Action::Conversation {
                    input,
                    conversation: conv,
                } => {
                    let talk = Talk {
                        case: r.case,
                        session_id: &session_id,
                        at: &at,
                        ctx: r.ctx,
                        scope: r.scope,
                        env: r.env,
                        simulator: r.simulator,
                        setup: setup.clone(),
                        workdir: r.workdir.path(),
                    };
                    let started = std::time::Instant::now();
                    let ended = conversation::run(
                        &talk,
                        conv,
                        input.as_deref(),
                        session,
                        &mut history,
                        &mut next_turn,
                        report,
                        phase,
                    )
                    .await?;
                    report.termination = Some(ended.reason.clone());
                    if let Some(last) = report.turns.last_mut() {
                        last.ending = Some(conversation::ending(&ended, conv.max_turns));
                    }
                    let took = started.elapsed().as_millis() as u64;
                    let turns = ended.turns;
                    (ended.last, took, Some(turns))
                }
            })
        }
        .await;
        // Every turn the step played is its, also when the step broke off.
        for t in report.turns.iter_mut().filter(|t| t.turn >= first_turn) {
            t.step = Some(step_ref.clone());
        }
        let (reply, took, conversation) = outcome?;
        // The step's evaluations (a conversation's final ones first), on its last
        // reply; they join the step's last turn in the report.
        *phase = format!("evaluating {at}");
        let finals: Vec<Evaluation> = match &step.action {
            Action::Conversation {
                conversation: c, ..
            } => c.final_evaluations.clone(),
            _ => Vec::new(),
        };
        let list: Vec<Evaluation> = finals
            .into_iter()
            .chain(step.evaluations.iter().cloned())
            .collect();
        if list.is_empty() {
            continue;
        }
        let input = report
            .turns
            .last()
            .map(|t| t.input.clone())
            .unwrap_or_default();
        let trajectory = trajectory(&report.turns, first_turn);
        let step_turns: Vec<TurnReport> = report
            .turns
            .iter()
            .filter(|t| t.turn >= first_turn)
            .cloned()
            .collect();
        let latency = latencies(&step_turns);
        let subject = Subject {
            reply: &reply,
            input: &input,
            conversation: &history,
            latency: &latency,
        };
        let result = StepResult {
            duration_ms: took,
            trajectory: &trajectory,
        };
        let (verdicts, broken) = evaluate_all(
            &list,
            subject,
            &result,
            r.workdir.path(),
            r.env,
            conversation.map(|turns| (history.as_slice(), turns)),
        )
        .await;
        if let Some(last) = report.turns.last_mut() {
            last.assertions.extend(verdicts);
            if let Some(e) = &broken {
                last.error.get_or_insert_with(|| e.to_string());
            }
        }
        if let Some(e) = broken {
            return Err(Stop::step(&at, e));
        }
    }
    judge(scenario.judgment, report);
    Ok(())
}

/// Evaluates every evaluation of a step (all of them, so the report shows each). The
/// second value is set when one could not be evaluated. `conversation` is the whole
/// conversation and its agent turns, for the conversation evaluators.
pub(super) async fn evaluate_all(
    list: &[Evaluation],
    subject: Subject<'_>,
    result: &StepResult<'_>,
    dir: &Path,
    env: &EvalEnv<'_>,
    conversation: Option<(&[Message], u32)>,
) -> (Vec<AssertionReport>, Option<StepError>) {
    let mut out = Vec::with_capacity(list.len());
    let mut broken = None;
    for e in list {
        let spec = match &e.raw {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        let verdict = match &e.check {
            Evaluator::Assertion(a) => {
                let (mut verdicts, b) = check_all(std::slice::from_ref(a), subject, env).await;
                for v in &mut verdicts {
                    // Reported as the scenario wrote it (`string_contains`, not `contains`).
                    v.spec = spec.clone();
                    if let Some(rest) = v.label.strip_prefix(a.type_name()) {
                        v.label = format!("{}{rest}", e.type_name);
                    }
                }
                out.extend(verdicts);
                if let Some(b) = b {
                    broken.get_or_insert(b);
                }
                continue;
            }
            Evaluator::ConversationLength { .. }
            | Evaluator::ConversationFlow { .. }
            | Evaluator::UserSatisfaction { .. }
            | Evaluator::ContextRetention { .. } => match conversation {
                Some((history, turns)) => {
                    conversation::evaluate_conversation(e, env, history, turns).await
                }
                None => Err(StepError::Broken(format!(
                    "`{}` judges a conversation, and this step has none",
                    e.type_name
                ))),
            },
            other => evaluators::check(other, result, dir, env.deadline).await,
        };
        match verdict {
            Ok(v) => out.push(AssertionReport {
                spec,
                passed: v.passed,
                label: v.label,
                message: v.message,
                judgment: v.judgment,
            }),
            Err(err) => {
                out.push(AssertionReport {
                    spec,
                    passed: false,
                    label: e.type_name.clone(),
                    message: err.to_string(),
                    judgment: None,
                });
                broken.get_or_insert(err);
            }
        }
    }
    (out, broken)
}

/// The tools called and actions reported in the turns from `first` on.
pub(super) fn trajectory(turns: &[TurnReport], first: u32) -> Vec<String> {
    turns
        .iter()
        .filter(|t| t.turn >= first)
        .flat_map(|t| {
            t.tool_calls
                .iter()
                .map(|c| c.name.clone())
                .chain(t.actions.iter().cloned())
        })
        .collect()
}

/// `judgment.strategy` over every evaluation of every step: `all_pass` fails on the
/// first failed one; `any_pass` passes when one passed (and fails with none to pass).
fn judge(judgment: Judgment, report: &mut CaseReport) {
    let at = |t: &TurnReport| {
        t.step
            .as_ref()
            .map_or_else(|| format!("turn {}", t.turn), ToString::to_string)
    };
    let all: Vec<(&TurnReport, &AssertionReport)> = report
        .turns
        .iter()
        .flat_map(|t| t.assertions.iter().map(move |a| (t, a)))
        .collect();
    let failure = match judgment {
        Judgment::AllPass => all
            .iter()
            .find(|(_, a)| !a.passed)
            .map(|(t, a)| format!("{}: {}: {} (judgment: all_pass)", at(t), a.label, a.message)),
        Judgment::AnyPass if all.iter().any(|(_, a)| a.passed) => None,
        Judgment::AnyPass => Some(match all.first() {
            Some((t, a)) => format!(
                "no evaluation passed (judgment: any_pass); the first, {}: {}: {}",
                at(t),
                a.label,
                a.message
            ),
            None => "no evaluation passed (judgment: any_pass): the scenario has none".into(),
        }),
    };
    if let Some(f) = failure {
        report.status = Status::Failed;
        report.error = Some(f);
    }
}
