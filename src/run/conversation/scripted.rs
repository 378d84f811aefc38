//! Scripted conversations: a single turn, or a static script of turns, each checked by
//! its assertions. When the script runs out while the agent awaits the user, a person
//! may go on (interactive input).

use serde_json::Value;

use crate::case::{Assertion, Case, Kind, Mode};
use crate::check::{check_all, first_failure, first_inconclusive, EvalEnv, Subject};
use crate::record::{Status, Termination};
use crate::run::conversation::driver::{Conversation, Exchanged, Policy, Said, SimView, UserSide};
use crate::run::conversation::turn::{latencies, merged_options};
use crate::run::outcome::{Party, Stop};
use crate::run::roles::person::People;
use crate::run::roles::simulator::SimTurn;
use crate::settings::MissingInput;
use crate::util::{clip, value_text};

/// One scripted turn: what the user says, what the reply must satisfy, the turn's
/// options and attachments.
struct Step {
    said: Said,
    assertions: Vec<Assertion>,
}

/// A single or static case's script.
pub(crate) struct Scripted {
    steps: Vec<Step>,
    people: People,
}

impl Scripted {
    /// The script of a single or static case. A single case's `expected` is checked as
    /// an `equals` next to its assertions: never silently ignored.
    pub(crate) fn new(case: &Case, people: People) -> Self {
        let step = |input: &crate::case::Input, options: Value, attachments: &[Value]| Said {
            options: Some(options),
            attachments: attachments.to_vec(),
            ..Said::new(input.messages.clone(), "static")
        };
        let steps = match &case.mode {
            Mode::Single { input, assertions } => {
                let expected = case.expected.as_ref().map(|v| Assertion {
                    kind: Kind::Equals {
                        value: Value::clone(v),
                    },
                    negate: false,
                    message: None,
                    raw: serde_json::json!({"type": "equals", "value": v}).into(),
                });
                vec![Step {
                    said: step(input, merged_options(case.options.as_deref(), None), &[]),
                    assertions: assertions.iter().cloned().chain(expected).collect(),
                }]
            }
            Mode::Static { turns, .. } => turns
                .iter()
                .map(|t| Step {
                    said: step(
                        &t.input,
                        merged_options(case.options.as_deref(), t.options.as_ref()),
                        &t.attachments,
                    ),
                    assertions: t.assertions.clone(),
                })
                .collect(),
            // The lifecycle gives other modes their own policies.
            _ => Vec::new(),
        };
        Scripted { steps, people }
    }

    fn len(&self) -> u32 {
        self.steps.len() as u32
    }
}

impl Policy for Scripted {
    /// After the script, a person goes on while the agent awaits the user; a case that
    /// wants a person and cannot have one is skipped (or fails with
    /// `--on-missing-input fail`).
    async fn before_turn(
        &mut self,
        conv: &mut Conversation<'_>,
        k: u32,
    ) -> Result<Option<Termination>, Stop> {
        if k <= self.len() {
            return Ok(None);
        }
        let Some(question) = conv
            .report
            .turns
            .last()
            .filter(|t| t.awaiting_input)
            .map(|t| value_text(&t.output))
        else {
            return Ok(Some(Termination::ScriptDone));
        };
        if k > self.len() + 1 {
            // A person is already answering.
            return Ok(None);
        }
        match self.people.for_case(conv.case) {
            Ok(Some(person)) => {
                conv.person = Some(person);
                Ok(None)
            }
            Ok(None) => Ok(Some(Termination::ScriptDone)),
            Err(why) if conv.case.interactive.is_some_and(|i| i.enabled) => Err(Stop {
                status: match self.people.on_missing_input {
                    MissingInput::Fail => Status::Failed,
                    MissingInput::Skip => Status::Skipped,
                },
                message: format!(
                    "the agent awaits input after turn {} (it asked: {}) and no scripted turn is left, but {why}\nhint: add more turns, run with --interactive, or use a simulator",
                    conv.report.turns.len(),
                    Value::String(clip(&question))
                ),
                by: Party::Agent,
                infrastructure: false,
            }),
            // Only `--interactive` wanted a person, and none can answer: nothing to do.
            Err(_) => Ok(Some(Termination::ScriptDone)),
        }
    }

    fn scripted(&mut self, k: u32) -> Option<Said> {
        let step = self.steps.get(k as usize - 1)?;
        Some(step.said.clone())
    }

    fn simulator_view(&self, _k: u32, _env: &EvalEnv<'_>) -> SimView<'_> {
        unreachable!("a scripted conversation has no simulator")
    }

    fn read_simulator(&mut self, _k: u32, _next: SimTurn) -> UserSide {
        unreachable!("a scripted conversation has no simulator")
    }

    /// A scripted turn's reply is checked by its assertions; the first that fails ends
    /// the case as `failed`. A person's turns are not checked.
    async fn after_reply(
        &mut self,
        conv: &mut Conversation<'_>,
        k: u32,
        turn: &mut Exchanged,
    ) -> Result<Option<Termination>, Stop> {
        let Some(step) = self.steps.get(k as usize - 1) else {
            return Ok(None);
        };
        let subject = Subject {
            reply: &turn.reply,
            input: &turn.input,
            conversation: &conv.history,
            latency: std::slice::from_ref(&turn.latency),
        };
        *conv.phase = format!("checking the assertions of turn {k}");
        let (verdicts, broken) = check_all(&step.assertions, subject, conv.env).await;
        let failure = first_failure(&format!("turn {k}"), &verdicts);
        turn.record.assertions = verdicts;
        turn.record.error = broken.as_ref().map(ToString::to_string);
        if let Some(e) = broken {
            return Err(Stop::step(&format!("turn {k}"), e));
        }
        if let Some(f) = failure {
            conv.report.status = Status::Failed;
            conv.report.error = Some(f);
            return Ok(Some(Termination::AssertionFailed));
        }
        Ok(None)
    }
}

/// Plays a single or static case: each turn, then a person if one should go on, then
/// the final assertions.
pub(crate) async fn run(conv: &mut Conversation<'_>, people: People) -> Result<(), Stop> {
    let mut script = Scripted::new(conv.case, people);
    match conv.play(&mut script).await? {
        Termination::AssertionFailed => Ok(()),
        _ => {
            final_assertions(conv).await?;
            settle_inconclusive(conv.report);
            Ok(())
        }
    }
}

/// A case nothing failed in, with a check its judge could not decide, is inconclusive:
/// never a pass.
fn settle_inconclusive(report: &mut crate::record::CaseReport) {
    if report.status != Status::Passed {
        return;
    }
    let undecided = report
        .turns
        .iter()
        .find_map(|t| first_inconclusive(&format!("turn {}", t.turn), &t.assertions))
        .or_else(|| first_inconclusive("final assertions", &report.final_assertions));
    if let Some(why) = undecided {
        report.status = Status::Inconclusive;
        report.error = Some(why);
    }
}

/// A static case's `final_assertions`, on the last reply.
async fn final_assertions(conv: &mut Conversation<'_>) -> Result<(), Stop> {
    let (
        Mode::Static {
            final_assertions, ..
        },
        Some(reply),
    ) = (&conv.case.mode, &conv.last_reply)
    else {
        return Ok(());
    };
    let input = conv
        .report
        .turns
        .last()
        .map(|t| t.input.clone())
        .unwrap_or_default();
    // Over the conversation, a `latency` check bounds every reply.
    let latency = latencies(&conv.report.turns);
    let subject = Subject {
        reply,
        input: &input,
        conversation: &conv.history,
        latency: &latency,
    };
    *conv.phase = "checking the final assertions".into();
    let (verdicts, broken) = check_all(final_assertions, subject, conv.env).await;
    let failure = first_failure("final assertions", &verdicts);
    conv.report.final_assertions = verdicts;
    if let Some(e) = broken {
        return Err(Stop::step("final assertions", e));
    }
    if let Some(f) = failure {
        conv.report.status = Status::Failed;
        conv.report.error = Some(f);
    }
    Ok(())
}
