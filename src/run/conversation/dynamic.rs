//! Dynamic mode: a simulated user talks to the agent until every required checkpoint is
//! reached, or the conversation ends another way (the seed's termination table). When
//! no checkpoint is required (a tau2 task whose `reward_basis` gates none of them), the
//! simulated user decides: the case passes when it reaches its goal, and fails when it
//! leaves (`###TRANSFER###`, `###OUT-OF-SCOPE###`) or runs out of turns.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::agent::Session;
use crate::case::{Case, Checkpoint, Input, Mode};
use crate::check::{EvalEnv, Subject};
use crate::protocol::{Message, Request};
use crate::record::{AssertionReport, CaseReport, CheckpointReport, Status};
use crate::run::context::Context;
use crate::run::conversation::turn::{
    check_all, exchange, merged_options, new_session_id, replied_turn,
};
use crate::run::outcome::{simulator_stop, Party, Stop};
use crate::run::roles::person::Person;
use crate::run::roles::simulator::{SimInput, Simulator, UserEnding};

/// Where a checkpoint stands.
#[derive(Default, Clone)]
struct State {
    reached_at: Option<u32>,
    message: String,
}

/// One dynamic conversation: the case's settings and where the conversation stands.
struct Dialogue<'a> {
    case: &'a Case,
    ctx: &'a Context,
    env: &'a EvalEnv<'a>,
    session_id: String,
    initial: Option<&'a Input>,
    checkpoints: &'a [Checkpoint],
    max_turns: u32,
    /// persona, goal, style, ... for the simulator.
    profile: Map<String, Value>,
    show_checkpoints: bool,
    options: Value,
    /// A person who may answer instead of the simulator (`--interactive`).
    person: Option<Person>,
    states: HashMap<&'a str, State>,
    history: Vec<Message>,
    last_response: String,
    last_hint: Option<String>,
}

/// The user's side of one turn.
enum UserTurn {
    /// A message to send, where it came from, and the simulator's reasoning.
    Says(Vec<Message>, &'static str, Option<String>),
    /// The simulator says its goal is achieved.
    Done(Option<String>),
    /// The simulated user left short of its goal (tau2's `###TRANSFER###`, ...).
    Left(UserEnding, Option<String>),
}

/// Runs the loop; the report gets every turn, every checkpoint and the termination
/// reason. `Err` stops the case with that status (the simulator or the agent failed).
#[expect(
    clippy::too_many_arguments,
    reason = "the dynamic loop threads its state; issue 27 makes one conversation driver own it"
)]
pub(crate) async fn run(
    case: &Case,
    ctx: &Context,
    session: &mut Session,
    simulator: &mut Simulator,
    env: &EvalEnv<'_>,
    person: Option<Person>,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<(), Stop> {
    let Mode::Dynamic {
        input,
        simulator: spec,
        checkpoints,
        max_turns,
        ..
    } = &case.mode
    else {
        return Ok(());
    };
    let mut dialogue = Dialogue {
        case,
        ctx,
        env,
        session_id: new_session_id(),
        initial: input.as_ref(),
        checkpoints,
        max_turns: *max_turns,
        profile: spec.profile.clone(),
        show_checkpoints: spec.show_checkpoints,
        options: merged_options(&case.options, &None),
        person,
        states: checkpoints
            .iter()
            .map(|c| (c.id.as_str(), State::default()))
            .collect(),
        history: Vec::new(),
        last_response: String::new(),
        last_hint: None,
    };
    report.simulator = Some(simulator.label());
    let outcome = dialogue.play(session, simulator, report, phase).await;
    report.checkpoints = dialogue.checkpoint_reports();
    match outcome {
        Ok(ending) => {
            dialogue.conclude(ending, report);
            Ok(())
        }
        Err(stop) => {
            let termination = match stop.by {
                Party::Simulator => "simulator_error",
                Party::Agent => "agent_error",
            };
            report.termination = Some(termination.into());
            Err(stop)
        }
    }
}

impl Dialogue<'_> {
    /// The turns: the user's message, the agent's reply, the checkpoints, then the
    /// termination rules, until one ends the conversation.
    async fn play(
        &mut self,
        session: &mut Session,
        simulator: &mut Simulator,
        report: &mut CaseReport,
        phase: &mut String,
    ) -> Result<Ending, Stop> {
        for turn in 1..=self.max_turns {
            // 1. The user's message: the case's first input, else a person or the simulator.
            let (messages, source, reasoning) = match self.user_turn(turn, simulator, phase).await?
            {
                UserTurn::Says(m, source, reasoning) => (m, source, reasoning),
                UserTurn::Done(reasoning) => {
                    return Ok(Ending::GoalAchieved {
                        turn: turn - 1,
                        reasoning,
                    })
                }
                UserTurn::Left(how, reasoning) => {
                    return Ok(Ending::UserLeft {
                        how,
                        turn: turn - 1,
                        reasoning,
                    })
                }
            };
            // 2. The agent's reply.
            self.history.extend(messages.iter().cloned());
            let request = Request {
                session_id: self.session_id.clone(),
                test_id: self.case.id.clone(),
                turn,
                input: messages.last().map(Message::text).unwrap_or_default(),
                messages: self.history.clone(),
                options: self.options.clone(),
                metadata: self.env.metadata.clone(),
                attachments: Vec::new(),
                setup: None,
            };
            let (reply, latency) = exchange(session, &request, source, report, phase).await?;
            self.history.push(reply.to_message());
            self.last_response = reply.output_text();
            self.last_hint = reply.input_hint.clone();
            let mut record = replied_turn(
                turn,
                &request.input,
                source,
                &reply,
                latency,
                &self.ctx.input_tools,
            );
            record.reasoning = reasoning;

            // 3. The checkpoints, against this reply.
            *phase = format!("checking the checkpoints of turn {turn}");
            let subject = Subject {
                reply: &reply,
                input: &request.input,
                conversation: &self.history,
                latency: std::slice::from_ref(&latency),
            };
            let (verdicts, forbidden) =
                check_turn(self.checkpoints, &mut self.states, turn, subject, self.env).await?;
            record.checkpoints = verdicts;
            // A reply cut off at the token limit is not the agent finishing.
            let finished = !record.awaiting_input && !record.truncated;
            report.turns.push(record);

            // 4. Termination.
            if let Some(id) = forbidden {
                return Ok(Ending::Forbidden { id, turn });
            }
            // With no checkpoint required, the simulated user decides when it is over.
            if !self.user_decides() {
                if missing(self.checkpoints, &self.states).is_empty() {
                    return Ok(Ending::AllReached);
                }
                if finished {
                    return Ok(Ending::AgentCompleted { turn });
                }
            }
        }
        Ok(Ending::MaxTurns)
    }

    /// Who speaks for the user this turn: the case's first input, a person (who may
    /// leave it to the simulator with an empty line), or the simulator.
    async fn user_turn(
        &self,
        turn: u32,
        simulator: &mut Simulator,
        phase: &mut String,
    ) -> Result<UserTurn, Stop> {
        if let (1, Some(input)) = (turn, self.initial) {
            return Ok(UserTurn::Says(input.messages.clone(), "initial", None));
        }
        if let (Some(person), true) = (&self.person, turn > 1) {
            *phase = format!("waiting for a person's answer for turn {turn}");
            let prompt = "your reply (empty line: let the simulator answer):";
            if let Some(text) = person
                .answer(turn, &self.last_response, self.last_hint.as_deref(), prompt)
                .await?
            {
                return Ok(UserTurn::Says(vec![Message::user(text)], "human", None));
            }
        }
        *phase = format!("waiting for the simulator's message for turn {turn}");
        let input = SimInput {
            test_id: &self.case.id,
            session_id: &self.session_id,
            conversation: &self.history,
            last_response: &self.last_response,
            turn_number: turn,
            max_turns: self.max_turns,
            reached: reached(self.checkpoints, &self.states),
            pending: self
                .show_checkpoints
                .then(|| pending(self.checkpoints, &self.states)),
            profile: &self.profile,
        };
        let next = simulator
            .next(&input, self.env.deadline)
            .await
            .map_err(|e| simulator_stop(&format!("turn {turn}"), e))?;
        if let Some(how) = next.ending {
            return Ok(UserTurn::Left(how, next.reasoning));
        }
        match next.message {
            Some(m) if !next.goal_achieved => Ok(UserTurn::Says(
                vec![Message::user(m)],
                "simulated",
                next.reasoning,
            )),
            _ => Ok(UserTurn::Done(next.reasoning)),
        }
    }

    /// Every checkpoint as the report shows it.
    fn checkpoint_reports(&self) -> Vec<CheckpointReport> {
        self.checkpoints
            .iter()
            .map(|c| {
                let s = &self.states[c.id.as_str()];
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
            .collect()
    }

    /// Whether no checkpoint is required (all are reported only, as a tau2 task's
    /// outside its `reward_basis`): then the simulated user's goal decides the case.
    fn user_decides(&self) -> bool {
        !self.checkpoints.iter().any(|c| c.required && !c.forbidden)
    }

    /// The termination and, unless every required checkpoint was reached, the failure.
    fn conclude(&self, ending: Ending, report: &mut CaseReport) {
        let missing_text = || describe_missing(self.checkpoints, &self.states);
        let user_decides = self.user_decides();
        let short_of_goal = |what: String| {
            if user_decides {
                format!("{what}; no checkpoint is required, so the case passes only when the simulated user reaches its goal")
            } else {
                format!(
                    "{what} with required checkpoints missing: {}",
                    missing_text()
                )
            }
        };
        let (termination, message) = match ending {
            Ending::AllReached => ("all_checkpoints_reached", None),
            Ending::Forbidden { id, turn } => (
                "forbidden_checkpoint",
                Some(format!("turn {turn}: forbidden checkpoint `{id}` matched: {}", self.states[id.as_str()].message)),
            ),
            Ending::AgentCompleted { turn } => (
                "agent_completed",
                Some(format!("the agent completed at turn {turn} (it is not awaiting input) with required checkpoints missing: {}", missing_text())),
            ),
            Ending::GoalAchieved { .. } if missing(self.checkpoints, &self.states).is_empty() => {
                ("goal_achieved", None)
            }
            Ending::GoalAchieved { turn, reasoning } => (
                "goal_achieved",
                Some(format!(
                    "the simulator reported its goal achieved after turn {turn}{} with required checkpoints missing: {}",
                    reasoning.map(|r| format!(" ({r})")).unwrap_or_default(),
                    missing_text()
                )),
            ),
            Ending::UserLeft { how, turn, reasoning } => (
                how.termination(),
                Some(short_of_goal(format!(
                    "the simulated user ended the conversation with {} after turn {turn}{}",
                    how.signal(),
                    reasoning.map(|r| format!(" ({r})")).unwrap_or_default(),
                ))),
            ),
            Ending::MaxTurns if user_decides => (
                "max_turns",
                Some(short_of_goal(format!(
                    "max turns ({}) exceeded without the simulated user reaching its goal",
                    self.max_turns
                ))),
            ),
            Ending::MaxTurns => (
                "max_turns",
                Some(format!("max turns ({}) exceeded; required checkpoints missing: {}", self.max_turns, missing_text())),
            ),
        };
        report.termination = Some(termination.into());
        if let Some(message) = message {
            report.status = Status::Failed;
            report.error = Some(message);
        }
    }
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
    UserLeft {
        how: UserEnding,
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
                return Err(Stop::step(&format!("turn {turn}: checkpoint `{id}`"), e));
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
                    // What matched; the turn is `reached_at_turn`, said once by each format.
                    state.message = labels(&results);
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
        judgment: None,
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
