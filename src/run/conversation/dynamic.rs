//! Dynamic mode: a simulated user talks to the agent until every required checkpoint is
//! reached, or the conversation ends another way (the seed's termination table).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::agent::Session;
use crate::case::{Checkpoint, Input};
use crate::check::EvalEnv;
use crate::protocol::Message;
use crate::protocol::Request;
use crate::record::{AssertionReport, CaseReport, CheckpointReport, Status};
use crate::run::engine::{check_all, exchange, replied_turn, Stop};
use crate::run::roles::simulator::{SimInput, Simulator};

/// Everything one dynamic conversation needs.
pub(crate) struct DynamicRun<'a> {
    pub(crate) test_id: &'a str,
    pub(crate) session_id: String,
    pub(crate) initial: Option<&'a Input>,
    pub(crate) checkpoints: &'a [Checkpoint],
    pub(crate) max_turns: u32,
    pub(crate) profile: Map<String, Value>,
    pub(crate) show_checkpoints: bool,
    pub(crate) options: Value,
    pub(crate) metadata: Value,
    pub(crate) input_tools: &'a [String],
    pub(crate) deadline: tokio::time::Instant,
    /// A person may answer instead of the simulator (`--interactive`), with this much time.
    pub(crate) person: Option<std::time::Duration>,
}

/// Where a checkpoint stands.
#[derive(Default, Clone)]
struct State {
    reached_at: Option<u32>,
    message: String,
}

/// Runs the loop; the report gets every turn, every checkpoint and the termination
/// reason. `Err` stops the case with that status (the simulator or the agent failed).
pub(crate) async fn run(
    run: DynamicRun<'_>,
    session: &mut Session,
    simulator: &mut Simulator,
    env: &EvalEnv<'_>,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<(), Stop> {
    report.simulator = Some(simulator.label());
    let mut states: HashMap<&str, State> = run
        .checkpoints
        .iter()
        .map(|c| (c.id.as_str(), State::default()))
        .collect();
    let mut history: Vec<Message> = Vec::new();
    let mut last_response = String::new();
    let mut last_hint: Option<String> = None;
    let outcome = async {
        for turn in 1..=run.max_turns {
            // 1. The user's message: the case's first input, else the simulator.
            let (messages, source, reasoning) = match (turn, run.initial) {
                (1, Some(input)) => (input.messages.clone(), "initial", None),
                _ => {
                    // A person may answer instead of the simulator (`--interactive`).
                    let mut from_person = None;
                    if let (Some(wait), true) = (run.person, turn > 1) {
                        *phase = format!("waiting for a person's answer for turn {turn}");
                        let prompt = "your reply (empty line: let the simulator answer):";
                        from_person = crate::run::roles::person::ask(
                            run.test_id,
                            &last_response,
                            last_hint.as_deref(),
                            prompt,
                            wait,
                        )
                        .await
                        .map_err(|e| Stop::from(format!("turn {turn}: interactive input: {e}")))?;
                    }
                    match from_person {
                        Some(text) => (vec![Message::user(text)], "human", None),
                        None => {
                            *phase = format!("waiting for the simulator's message for turn {turn}");
                            let sim_input = SimInput {
                                test_id: run.test_id,
                                session_id: &run.session_id,
                                conversation: &history,
                                last_response: &last_response,
                                turn_number: turn,
                                max_turns: run.max_turns,
                                reached: reached(run.checkpoints, &states),
                                pending: run
                                    .show_checkpoints
                                    .then(|| pending(run.checkpoints, &states)),
                                profile: &run.profile,
                            };
                            let next = simulator.next(&sim_input, run.deadline).await.map_err(
                                |e| match e {
                                    // No model to be had: skipped (outside CI), like the agent's own calls.
                                    crate::agent::TurnError::Unavailable(_) => Stop::turn(turn, e),
                                    other => {
                                        Stop::from(format!("turn {turn}: simulator error: {other}"))
                                    }
                                },
                            )?;
                            match next.message {
                                Some(m) if !next.goal_achieved => {
                                    (vec![Message::user(m)], "simulated", next.reasoning)
                                }
                                _ => {
                                    return Ok(Ending::GoalAchieved {
                                        turn: turn - 1,
                                        reasoning: next.reasoning,
                                    })
                                }
                            }
                        }
                    }
                }
            };
            history.extend(messages.iter().cloned());
            let request = Request {
                session_id: run.session_id.clone(),
                test_id: run.test_id.to_string(),
                turn,
                input: messages.last().map(Message::text).unwrap_or_default(),
                messages: history.clone(),
                options: run.options.clone(),
                metadata: run.metadata.clone(),
                attachments: Vec::new(),
            };

            // 2. The agent's reply.
            let (reply, duration_ms) = exchange(session, &request, source, report, phase).await?;
            history.push(reply.to_message());
            last_response = reply.output_text();
            last_hint = reply.input_hint.clone();
            let mut record = replied_turn(
                turn,
                &request.input,
                source,
                &reply,
                duration_ms,
                run.input_tools,
            );
            record.reasoning = reasoning;

            // 3. The checkpoints, against this reply.
            *phase = format!("checking the checkpoints of turn {turn}");
            let subject = crate::check::Subject {
                reply: &reply,
                input: &request.input,
                conversation: &history,
            };
            let (verdicts, forbidden) =
                check_turn(run.checkpoints, &mut states, turn, subject, env).await?;
            record.checkpoints = verdicts;
            let awaiting = record.awaiting_input;
            report.turns.push(record);
            if let Some(id) = forbidden {
                return Ok(Ending::Forbidden { id, turn });
            }

            // 4. Termination.
            if missing(run.checkpoints, &states).is_empty() {
                return Ok(Ending::AllReached);
            }
            if !awaiting {
                return Ok(Ending::AgentCompleted { turn });
            }
        }
        Ok::<Ending, Stop>(Ending::MaxTurns)
    }
    .await;
    report.checkpoints = run
        .checkpoints
        .iter()
        .map(|c| {
            let s = &states[c.id.as_str()];
            CheckpointReport {
                id: c.id.clone(),
                description: c.description.clone(),
                required: c.required,
                forbidden: c.forbidden,
                reached: s.reached_at.is_some(),
                reached_at_turn: s.reached_at,
                message: if s.message.is_empty() {
                    "never checked".into()
                } else {
                    s.message.clone()
                },
            }
        })
        .collect();
    let ending = match outcome {
        Ok(e) => e,
        Err(stop) => {
            report.termination = Some(
                if stop.message.contains("simulator error") {
                    "simulator_error"
                } else {
                    "agent_error"
                }
                .into(),
            );
            return Err(stop);
        }
    };
    let missing_text = || describe_missing(run.checkpoints, &states);
    let (termination, status, message) = match ending {
        Ending::AllReached => ("all_checkpoints_reached", Status::Passed, None),
        Ending::Forbidden { id, turn } => (
            "forbidden_checkpoint",
            Status::Failed,
            Some(format!("turn {turn}: forbidden checkpoint `{id}` matched: {}", states[id.as_str()].message)),
        ),
        Ending::AgentCompleted { turn } => (
            "agent_completed",
            Status::Failed,
            Some(format!("the agent completed at turn {turn} (it is not awaiting input) with required checkpoints missing: {}", missing_text())),
        ),
        Ending::GoalAchieved { turn, reasoning } => (
            "goal_achieved",
            Status::Failed,
            Some(format!(
                "the simulator reported its goal achieved after turn {turn}{} with required checkpoints missing: {}",
                reasoning.map(|r| format!(" ({r})")).unwrap_or_default(),
                missing_text()
            )),
        ),
        Ending::MaxTurns => (
            "max_turns",
            Status::Failed,
            Some(format!("max turns ({}) exceeded; required checkpoints missing: {}", run.max_turns, missing_text())),
        ),
    };
    report.termination = Some(termination.into());
    if status != Status::Passed {
        report.status = status;
        report.error = message;
    }
    Ok(())
}

/// How the conversation ended, when no error stopped it.
enum Ending {
    AllReached,
    Forbidden {
        id: String,
        turn: u32,
    },
    AgentCompleted {
        turn: u32,
    },
    GoalAchieved {
        turn: u32,
        reasoning: Option<String>,
    },
    MaxTurns,
}

/// Checks the pending checkpoints against one reply, in array order; a checkpoint whose
/// `after` ids are reached earlier in the same turn counts, so passes repeat until
/// nothing new is reached. Each checkpoint is evaluated at most once per turn. Returns
/// the verdicts and the id of a forbidden checkpoint that matched.
async fn check_turn(
    checkpoints: &[Checkpoint],
    states: &mut HashMap<&str, State>,
    turn: u32,
    subject: crate::check::Subject<'_>,
    env: &EvalEnv<'_>,
) -> Result<(Vec<AssertionReport>, Option<String>), Stop> {
    let mut verdicts = Vec::new();
    let mut evaluated: Vec<&str> = Vec::new();
    loop {
        let mut progressed = false;
        for c in checkpoints {
            let id = c.id.as_str();
            if states[id].reached_at.is_some() || evaluated.contains(&id) {
                continue;
            }
            let waiting: Vec<&str> = c
                .after
                .iter()
                .map(String::as_str)
                .filter(|a| states.get(a).is_none_or(|s| s.reached_at.is_none()))
                .collect();
            if !waiting.is_empty() {
                states.get_mut(id).expect("known").message =
                    format!("waiting for {} to be reached first", waiting.join(", "));
                continue;
            }
            evaluated.push(id);
            let (results, broken) = check_all(&c.assertions, subject, env).await;
            if let Some(e) = broken {
                return Err(Stop::eval(&format!("turn {turn}: checkpoint `{id}`"), e));
            }
            let failure = results
                .iter()
                .find(|r| !r.passed)
                .map(|r| r.message.clone());
            let state = states.get_mut(id).expect("known");
            let label = if c.forbidden {
                format!("forbidden checkpoint {id}")
            } else {
                format!("checkpoint {id}")
            };
            match failure {
                None => {
                    state.reached_at = Some(turn);
                    state.message = format!("reached at turn {turn}: {}", labels(&results));
                    verdicts.push(verdict(id, label, !c.forbidden, state.message.clone()));
                    if c.forbidden {
                        return Ok((verdicts, Some(c.id.clone())));
                    }
                    progressed = true;
                }
                Some(why) => {
                    state.message = why.clone();
                    if !c.forbidden {
                        verdicts.push(verdict(id, label, false, why));
                    }
                }
            }
        }
        if !progressed {
            return Ok((verdicts, None));
        }
    }
}

fn verdict(id: &str, label: String, passed: bool, message: String) -> AssertionReport {
    let mut spec = Map::new();
    spec.insert("checkpoint".into(), Value::String(id.into()));
    AssertionReport {
        spec,
        passed,
        label,
        message,
    }
}

fn labels(results: &[AssertionReport]) -> String {
    results
        .iter()
        .map(|r| r.label.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn reached(checkpoints: &[Checkpoint], states: &HashMap<&str, State>) -> Vec<String> {
    checkpoints
        .iter()
        .filter(|c| !c.forbidden && states[c.id.as_str()].reached_at.is_some())
        .map(|c| c.id.clone())
        .collect()
}

fn pending(checkpoints: &[Checkpoint], states: &HashMap<&str, State>) -> Vec<String> {
    checkpoints
        .iter()
        .filter(|c| !c.forbidden && states[c.id.as_str()].reached_at.is_none())
        .map(|c| c.description.clone().unwrap_or_else(|| c.id.clone()))
        .collect()
}

fn missing<'a>(
    checkpoints: &'a [Checkpoint],
    states: &HashMap<&str, State>,
) -> Vec<&'a Checkpoint> {
    checkpoints
        .iter()
        .filter(|c| c.required && !c.forbidden && states[c.id.as_str()].reached_at.is_none())
        .collect()
}

/// `ask_size (last: expected ...), confirm (waiting for ask_size to be reached first)`.
fn describe_missing(checkpoints: &[Checkpoint], states: &HashMap<&str, State>) -> String {
    missing(checkpoints, states)
        .iter()
        .map(|c| {
            let s = &states[c.id.as_str()];
            let last = if s.message.is_empty() {
                "never checked".to_string()
            } else {
                s.message.clone()
            };
            format!("{} (last: {last})", c.id)
        })
        .collect::<Vec<_>>()
        .join("; ")
}
