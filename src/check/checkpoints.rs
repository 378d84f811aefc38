//! A dynamic case's checkpoints: where each stands, the checks of one reply against the
//! pending ones, and the case's verdict when its conversation ends.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::case::Checkpoint;
use crate::check::each::check_all;
use crate::check::{EvalEnv, Subject};
use crate::errors::StepError;
use crate::record::{AssertionReport, CheckpointReport, Status, Termination};

/// Where a checkpoint stands.
#[derive(Default, Clone)]
struct State {
    reached_at: Option<u32>,
    message: String,
    /// Its last check was inconclusive (a judge could not decide): not reached, and a
    /// conversation that ends with it missing is inconclusive, not failed.
    undecided: bool,
}

/// The case's checkpoints and where each stands.
pub(crate) struct Checkpoints<'a> {
    list: &'a [Checkpoint],
    states: HashMap<&'a str, State>,
    /// The forbidden checkpoint that matched, if one did.
    forbidden: Option<&'a str>,
}

/// How a conversation ended, with what the verdict's message says of it.
pub(crate) struct End<'r> {
    pub(crate) termination: Termination,
    /// The turn it ended at (the last one played).
    pub(crate) turn: u32,
    /// The simulated user's reasoning, when it ended the conversation.
    pub(crate) reasoning: Option<&'r str>,
    pub(crate) max_turns: u32,
}

/// A check that could not be evaluated: where (`checkpoint `x``), why, and the
/// verdicts of the turn so far (the broken check's among them, with a jury's votes).
pub(crate) type Broken = (String, StepError, Vec<AssertionReport>);

impl<'a> Checkpoints<'a> {
    /// None reached yet.
    pub(crate) fn new(list: &'a [Checkpoint]) -> Self {
        Checkpoints {
            list,
            states: list
                .iter()
                .map(|c| (c.id.as_str(), State::default()))
                .collect(),
            forbidden: None,
        }
    }

    /// Checks the pending checkpoints against one reply, in array order; a checkpoint
    /// whose `after` ids are reached earlier in the same turn counts, so passes repeat
    /// until nothing new is reached. Each checkpoint is evaluated at most once per turn.
    /// Returns the verdicts and whether a forbidden checkpoint matched.
    pub(crate) async fn check_turn(
        &mut self,
        turn: u32,
        subject: Subject<'_>,
        env: &EvalEnv<'_>,
    ) -> Result<(Vec<AssertionReport>, bool), Broken> {
        let mut verdicts = Vec::new();
        let mut evaluated: Vec<&str> = Vec::new();
        loop {
            let mut progressed = false;
            for c in self.list {
                let id = c.id.as_str();
                if self.states[id].reached_at.is_some() || evaluated.contains(&id) {
                    continue;
                }
                if let Some(waiting) = self.waiting_for(c) {
                    self.state(id).message = format!("waiting for {waiting} to be reached first");
                    continue;
                }
                evaluated.push(id);
                let (results, broken) = check_all(&c.assertions, subject, env).await;
                if let Some(e) = broken {
                    verdicts.extend(results);
                    return Err((format!("checkpoint `{id}`"), e, verdicts));
                }
                let label = if c.forbidden {
                    format!("forbidden checkpoint {id}")
                } else {
                    format!("checkpoint {id}")
                };
                let state = self.state(id);
                let failed = results.iter().find(|r| r.failed());
                let undecided = results.iter().find(|r| r.inconclusive());
                state.undecided = failed.is_none() && undecided.is_some();
                match failed.or(undecided) {
                    None => {
                        state.reached_at = Some(turn);
                        // What matched; the turn is `reached_at_turn`, said once by each format.
                        state.message = labels(&results);
                        verdicts.push(verdict(
                            id,
                            label,
                            Some(!c.forbidden),
                            state.message.clone(),
                        ));
                        if c.forbidden {
                            self.forbidden = Some(id);
                            return Ok((verdicts, true));
                        }
                        progressed = true;
                    }
                    Some(not_held) => {
                        // Not reached, and the conversation goes on: a checkpoint whose
                        // judge could not decide never ends it.
                        state.message = not_held.message.clone();
                        if !c.forbidden {
                            let passed = not_held.passed;
                            verdicts.push(verdict(id, label, passed, not_held.message.clone()));
                        }
                    }
                }
            }
            if !progressed {
                return Ok((verdicts, false));
            }
        }
    }

    fn state(&mut self, id: &str) -> &mut State {
        self.states
            .get_mut(id)
            .expect("every checkpoint has a state")
    }

    /// The `after` ids of `c` not reached yet, joined, if any.
    fn waiting_for(&self, c: &Checkpoint) -> Option<String> {
        let waiting: Vec<&str> = c
            .after
            .iter()
            .map(String::as_str)
            .filter(|a| self.states.get(a).is_none_or(|s| s.reached_at.is_none()))
            .collect();
        (!waiting.is_empty()).then(|| waiting.join(", "))
    }

    /// Every checkpoint as the report shows it.
    pub(crate) fn reports(&self) -> Vec<CheckpointReport> {
        self.list
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
                    inconclusive: s.reached_at.is_none() && s.undecided,
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
    pub(crate) fn user_decides(&self) -> bool {
        !self.list.iter().any(|c| c.required && !c.forbidden)
    }

    /// The ids reached, for the simulator.
    pub(crate) fn reached(&self) -> Vec<String> {
        self.list
            .iter()
            .filter(|c| !c.forbidden && self.states[c.id.as_str()].reached_at.is_some())
            .map(|c| c.id.clone())
            .collect()
    }

    /// What is still to be reached, described, for a simulator shown the checkpoints.
    pub(crate) fn pending(&self) -> Vec<String> {
        self.list
            .iter()
            .filter(|c| !c.forbidden && self.states[c.id.as_str()].reached_at.is_none())
            .map(|c| c.description.clone().unwrap_or_else(|| c.id.clone()))
            .collect()
    }

    fn missing(&self) -> Vec<&'a Checkpoint> {
        self.list
            .iter()
            .filter(|c| {
                c.required && !c.forbidden && self.states[c.id.as_str()].reached_at.is_none()
            })
            .collect()
    }

    /// Whether every required checkpoint is reached.
    pub(crate) fn all_reached(&self) -> bool {
        self.missing().is_empty()
    }

    /// `ask_size (last: expected ...); confirm (waiting for ask_size to be reached first)`.
    fn describe_missing(&self) -> String {
        self.missing()
            .iter()
            .map(|c| {
                let s = &self.states[c.id.as_str()];
                let last = if s.message.is_empty() {
                    "never checked"
                } else {
                    s.message.as_str()
                };
                format!("{} (last: {last})", c.id)
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Whether every required checkpoint missing was last checked inconclusive: then a
    /// conversation that ends short of them cannot be called failed.
    fn missing_undecided(&self) -> bool {
        let missing = self.missing();
        !missing.is_empty() && missing.iter().all(|c| self.states[c.id.as_str()].undecided)
    }

    /// The case's status and message when the conversation ended as `end` says; `None`
    /// is a pass. Ending short of required checkpoints whose judges could not decide is
    /// `inconclusive`; a forbidden checkpoint or the agent's own ending is a failure.
    pub(crate) fn verdict(&self, end: &End<'_>) -> Option<(Status, String)> {
        let message = self.failure(end)?;
        let status = match end.termination {
            Termination::ForbiddenCheckpoint => Status::Failed,
            _ if self.missing_undecided() => Status::Inconclusive,
            _ => Status::Failed,
        };
        Some((status, message))
    }

    /// The case's failure, when the conversation ended as `end` says; `None` is a pass.
    fn failure(&self, end: &End<'_>) -> Option<String> {
        let turn = end.turn;
        let why = end.reasoning.map(|r| format!(" ({r})")).unwrap_or_default();
        let missing = || self.describe_missing();
        let short_of_goal = |what: String| {
            if self.user_decides() {
                format!("{what}; no checkpoint is required, so the case passes only when the simulated user reaches its goal")
            } else {
                format!("{what} with required checkpoints missing: {}", missing())
            }
        };
        match end.termination {
            Termination::ForbiddenCheckpoint => {
                let id = self.forbidden.unwrap_or_default();
                let matched = self.states.get(id).map_or("", |s| s.message.as_str());
                Some(format!(
                    "turn {turn}: forbidden checkpoint `{id}` matched: {matched}"
                ))
            }
            Termination::AgentCompleted => Some(format!("the agent completed at turn {turn} (it is not awaiting input) with required checkpoints missing: {}", missing())),
            Termination::GoalAchieved if self.all_reached() => None,
            Termination::GoalAchieved => Some(format!(
                "the simulator reported its goal achieved after turn {turn}{why} with required checkpoints missing: {}",
                missing()
            )),
            Termination::Transfer | Termination::OutOfScope => Some(short_of_goal(format!(
                "the simulated user ended the conversation with {} after turn {turn}{why}",
                end.termination.signal().unwrap_or_default(),
            ))),
            Termination::MaxTurns if self.user_decides() => Some(short_of_goal(format!(
                "max turns ({}) exceeded without the simulated user reaching its goal",
                end.max_turns
            ))),
            Termination::MaxTurns => Some(format!(
                "max turns ({}) exceeded; required checkpoints missing: {}",
                end.max_turns,
                missing()
            )),
            _ => None,
        }
    }
}

fn verdict(id: &str, label: String, passed: Option<bool>, message: String) -> AssertionReport {
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
