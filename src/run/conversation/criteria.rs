//! EvalStudio's evaluation loop for a dynamic case with criteria: the seed messages,
//! then user message, agent reply, an evaluation of the conversation against the
//! success and failure criteria, until success, a failure under `every_turn`, or
//! `max_messages` (user and assistant messages) — when the last evaluation decides.
//! Without a model for the judge, the seed's fallback: one exchange, passed when the
//! agent answered.

use crate::agent::{CaseScope, Session};
use crate::case::{Case, Criteria, FailureMode, Input};
use crate::check::EvalEnv;
use crate::errors::{SetupError, StepError};
use crate::protocol::{Message, Request, Role};
use crate::record::{CaseReport, CriteriaEvaluation, RunResult, Status};
use crate::run::context::Context;
use crate::run::conversation::turn::{exchange, merged_options, new_session_id, replied_turn};
use crate::run::outcome::{simulator_stop, Party, Stop};
use crate::run::roles::criteria::evaluate;
use crate::run::roles::simulator::{SimInput, Simulator};

/// What the loop needs from the case's lifecycle.
pub(crate) struct Loop<'a> {
    pub(crate) case: &'a Case,
    pub(crate) criteria: &'a Criteria,
    pub(crate) input: Option<&'a Input>,
    pub(crate) spec: &'a crate::case::Simulator,
    /// `--simulator`, when given.
    pub(crate) chosen: Option<&'a str>,
    pub(crate) ctx: &'a Context,
    pub(crate) scope: &'a CaseScope,
    pub(crate) env: &'a EvalEnv<'a>,
}

/// How the conversation ended.
struct Ended {
    last: Option<CriteriaEvaluation>,
    termination: &'static str,
}

/// Runs the loop into `report`: every turn with its evaluation, the termination and the
/// result `{success, score, reason}`.
pub(crate) async fn run(
    l: &Loop<'_>,
    session: &mut Session,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<(), Stop> {
    let endpoint = match l.ctx.llm(
        Role::Judge,
        l.spec.model.llm.as_deref(),
        l.case.source_llms(),
    ) {
        Ok(e) => e,
        // No model at all: one exchange, as EvalStudio's documentation says.
        Err(SetupError::NoLlm { .. }) => return fallback(l, session, report, phase).await,
        Err(e) => return Err(Stop::step("judge", StepError::from(e))),
    };
    *phase = "starting the simulator".into();
    let chosen = l.spec.use_.as_deref().or(l.chosen);
    let mut sim = Simulator::start(l.ctx, l.spec, chosen, l.scope)
        .await
        .map_err(|e| Stop::step("simulator", e).by(Party::Simulator))?;
    report.simulator = Some(sim.label());
    let ended = play(l, &endpoint, &mut sim, session, report, phase).await;
    sim.close().await;
    let ended = ended?;
    conclude(l.criteria, ended, report);
    Ok(())
}

/// The seed messages without `system` ones (the agent has its own), and the count of
/// user and assistant messages in them.
fn seeded(criteria: &Criteria) -> (Vec<Message>, u32) {
    let history: Vec<Message> = criteria
        .seed
        .iter()
        .filter(|m| m.role != "system")
        .cloned()
        .collect();
    let counted = history
        .iter()
        .filter(|m| m.role == "user" || m.role == "assistant")
        .count() as u32;
    (history, counted)
}

async fn play(
    l: &Loop<'_>,
    endpoint: &crate::llm::Endpoint,
    sim: &mut Simulator,
    session: &mut Session,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<Ended, Stop> {
    let criteria = l.criteria;
    let session_id = new_session_id();
    let options = merged_options(&l.case.options, &None);
    let (mut history, mut counted) = seeded(criteria);
    // A seed that ends with the user's message is sent as it is.
    let mut pending: Option<(Vec<Message>, &'static str)> = match history.last() {
        Some(m) if m.role == "user" => {
            let m = history.pop().expect("a last message");
            counted -= 1;
            Some((vec![m], "seed"))
        }
        _ => l.input.map(|i| (i.messages.clone(), "initial")),
    };
    let mut last: Option<CriteriaEvaluation> = None;
    let mut last_response = String::new();
    let mut turn = 0u32;
    loop {
        if counted + 2 > criteria.max_messages {
            return Ok(Ended {
                last,
                termination: "max_messages",
            });
        }
        turn += 1;
        // 1. The user's message: the seed's or the case's first, else the simulator's.
        let (messages, source, reasoning) = match pending.take() {
            Some((m, source)) => (m, source, None),
            None => {
                *phase = format!("waiting for the simulator's message for turn {turn}");
                let input = SimInput {
                    test_id: &l.case.id,
                    session_id: &session_id,
                    conversation: &history,
                    last_response: &last_response,
                    turn_number: turn,
                    max_turns: criteria.max_messages.div_ceil(2),
                    reached: Vec::new(),
                    pending: None,
                    profile: &l.spec.profile,
                };
                let next = sim
                    .next(&input, l.env.deadline)
                    .await
                    .map_err(|e| simulator_stop(&format!("turn {turn}"), e))?;
                match next.message {
                    Some(m) => (vec![Message::user(m)], "simulated", next.reasoning),
                    // The user has nothing more to say: the last evaluation decides.
                    None => {
                        return Ok(Ended {
                            last,
                            termination: "simulator_done",
                        })
                    }
                }
            }
        };
        // 2. The agent's reply.
        history.extend(messages.iter().cloned());
        counted += messages.iter().filter(|m| m.role == "user").count() as u32;
        let request = Request {
            session_id: session_id.clone(),
            test_id: l.case.id.clone(),
            turn,
            input: messages.last().map(Message::text).unwrap_or_default(),
            messages: history.clone(),
            options: options.clone(),
            metadata: l.env.metadata.clone(),
            attachments: Vec::new(),
            setup: None,
        };
        let (reply, took) = exchange(session, &request, source, report, phase).await?;
        history.push(reply.to_message());
        counted += 1;
        last_response = reply.output_text();
        let mut record = replied_turn(
            turn,
            &request.input,
            source,
            &reply,
            took,
            &l.ctx.input_tools,
        );
        record.reasoning = reasoning;
        // 3. The evaluation of the whole conversation.
        *phase = format!("evaluating the criteria after turn {turn}");
        let evaluation = evaluate(
            endpoint,
            &l.scope.calls,
            criteria,
            &history,
            &crate::case::ModelSettings::default(),
            l.env.deadline,
        )
        .await;
        let evaluation = match evaluation {
            Ok(e) => e,
            Err(e) => {
                record.error = Some(e.to_string());
                report.turns.push(record);
                return Err(Stop::step(&format!("turn {turn}: judge"), e));
            }
        };
        record.criteria = Some(evaluation.clone());
        report.turns.push(record);
        // 4. What it decides.
        if evaluation.success_met {
            return Ok(Ended {
                last: Some(evaluation),
                termination: "success_criteria_met",
            });
        }
        if evaluation.failure_met && criteria.mode == FailureMode::EveryTurn {
            return Ok(Ended {
                last: Some(evaluation),
                termination: "failure_criteria_met",
            });
        }
        last = Some(evaluation);
    }
}

/// The result, as EvalStudio's run processor words it.
fn conclude(criteria: &Criteria, ended: Ended, report: &mut CaseReport) {
    report.termination = Some(ended.termination.into());
    let Some(e) = ended.last else {
        // No reply was evaluated (a seed that already filled max_messages).
        report.status = Status::Failed;
        let reason = format!(
            "max messages ({}) reached before any reply could be evaluated",
            criteria.max_messages
        );
        report.error = Some(reason.clone());
        report.result = Some(RunResult {
            success: false,
            score: None,
            reason,
        });
        return;
    };
    let (success, reason) = match ended.termination {
        "success_criteria_met" => (true, e.reasoning.clone()),
        "failure_criteria_met" => (
            false,
            format!("Failure criteria was triggered. {}", e.reasoning),
        ),
        _ if e.failure_met => (
            false,
            format!("Failure criteria was triggered. {}", e.reasoning),
        ),
        "simulator_done" => (
            false,
            format!(
                "The simulated user ended the conversation without meeting the success criteria. {}",
                e.reasoning
            ),
        ),
        _ => (
            // Only failure criteria: not triggered is a pass.
            criteria.success.is_none(),
            if criteria.success.is_none() {
                e.reasoning.clone()
            } else {
                format!(
                    "Max messages ({}) reached without meeting success criteria. {}",
                    criteria.max_messages, e.reasoning
                )
            },
        ),
    };
    if !success {
        report.status = Status::Failed;
        report.error = Some(reason.clone());
    }
    report.result = Some(RunResult {
        success,
        score: Some(e.confidence),
        reason,
    });
}

/// No model for the judge: one request and its reply; passed when the agent answered.
async fn fallback(
    l: &Loop<'_>,
    session: &mut Session,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<(), Stop> {
    let (mut history, _) = seeded(l.criteria);
    let (messages, source) = match (history.last(), l.input) {
        (Some(m), _) if m.role == "user" => (vec![history.pop().expect("a last message")], "seed"),
        (_, Some(i)) => (i.messages.clone(), "initial"),
        _ => {
            return Err(Stop::error(
                "no model for the judge and simulator ([llm]), so the case runs once as EvalStudio does without one, but it has no first message: give it `input`, or seed `messages` ending with the user's",
            ))
        }
    };
    history.extend(messages.iter().cloned());
    let request = Request {
        session_id: new_session_id(),
        test_id: l.case.id.clone(),
        turn: 1,
        input: messages.last().map(Message::text).unwrap_or_default(),
        messages: history,
        options: merged_options(&l.case.options, &None),
        metadata: l.env.metadata.clone(),
        attachments: Vec::new(),
        setup: None,
    };
    let (reply, took) = exchange(session, &request, source, report, phase).await?;
    let answered = !reply.output_text().trim().is_empty();
    report.turns.push(replied_turn(
        1,
        &request.input,
        source,
        &reply,
        took,
        &l.ctx.input_tools,
    ));
    report.termination = Some("single_turn_fallback".into());
    let reason = if answered {
        "no model for the judge ([llm]): one exchange, and the agent answered".to_string()
    } else {
        "no model for the judge ([llm]): one exchange, and the agent's reply was empty".to_string()
    };
    if !answered {
        report.status = Status::Failed;
        report.error = Some(reason.clone());
    }
    report.result = Some(RunResult {
        success: answered,
        score: None,
        reason,
    });
    Ok(())
}
