//! Scripted conversations: a single turn, or a static script of turns. When the script
//! runs out while the agent awaits the user, a person may go on (interactive input).

use serde_json::Value;

use crate::agent::Session;
use crate::case::{Assertion, Case, Input, Kind, Mode};
use crate::check::{EvalEnv, Subject};
use crate::protocol::{Message, Reply, Request};
use crate::record::{CaseReport, Status};
use crate::run::context::Context;
use crate::run::conversation::turn::{
    check_all, exchange, first_failure, latencies, merged_options, new_session_id, replied_turn,
};
use crate::run::outcome::Stop;
use crate::run::roles::person::{People, Person};
use crate::settings::MissingInput;
use crate::util::{clip, value_text};

/// One scripted turn: what the user says, what the reply must satisfy, the turn's options
/// and attachments.
struct Step<'a> {
    input: &'a Input,
    assertions: Vec<Assertion>,
    options: Value,
    attachments: &'a [Value],
}

/// The state of one scripted conversation.
struct Script<'a> {
    case: &'a Case,
    ctx: &'a Context,
    env: &'a EvalEnv<'a>,
    session_id: String,
    history: Vec<Message>,
    last_reply: Option<Reply>,
}

/// Plays a single or static case: each turn, then a person if one should go on, then the
/// final assertions.
pub(crate) async fn run(
    case: &Case,
    ctx: &Context,
    session: &mut Session,
    env: &EvalEnv<'_>,
    people: People,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<(), Stop> {
    let mut script = Script {
        case,
        ctx,
        env,
        session_id: new_session_id(),
        history: Vec::new(),
        last_reply: None,
    };
    for (i, step) in steps(case).into_iter().enumerate() {
        let turn = i as u32 + 1;
        if !script.play(turn, step, session, report, phase).await? {
            return Ok(());
        }
    }
    script
        .person_goes_on(people, session, report, phase)
        .await?;
    script.final_assertions(report, phase).await
}

/// The turns of a single or static case. A single case's `expected` is checked as an
/// `equals` next to its assertions: never silently ignored.
fn steps(case: &Case) -> Vec<Step<'_>> {
    match &case.mode {
        Mode::Single { input, assertions } => {
            let expected = case.expected.as_ref().map(|v| Assertion {
                kind: Kind::Equals { value: v.clone() },
                negate: false,
                message: None,
                raw: serde_json::json!({"type": "equals", "value": v}),
            });
            vec![Step {
                input,
                assertions: assertions.iter().cloned().chain(expected).collect(),
                options: merged_options(&case.options, &None),
                attachments: &[],
            }]
        }
        Mode::Static { turns, .. } => turns
            .iter()
            .map(|t| Step {
                input: &t.input,
                assertions: t.assertions.clone(),
                options: merged_options(&case.options, &t.options),
                attachments: t.attachments.as_slice(),
            })
            .collect(),
        // The engine sends dynamic cases and scenarios elsewhere; none has turns here.
        Mode::Dynamic { .. } | Mode::Scenario(_) => Vec::new(),
    }
}

impl Script<'_> {
    /// The request for the next turn, with the history so far.
    fn request(
        &self,
        turn: u32,
        input: String,
        options: Value,
        attachments: Vec<Value>,
    ) -> Request {
        Request {
            session_id: self.session_id.clone(),
            test_id: self.case.id.clone(),
            turn,
            input,
            messages: self.history.clone(),
            options,
            metadata: self.env.metadata.clone(),
            attachments,
            setup: None,
        }
    }

    /// Plays one scripted turn and checks its reply. `Ok(false)`: a check failed, and
    /// the case stops there as `failed`.
    async fn play(
        &mut self,
        turn: u32,
        step: Step<'_>,
        session: &mut Session,
        report: &mut CaseReport,
        phase: &mut String,
    ) -> Result<bool, Stop> {
        self.history.extend(step.input.messages.iter().cloned());
        let request = self.request(
            turn,
            step.input.text(),
            step.options,
            step.attachments.to_vec(),
        );
        let (reply, latency) = exchange(session, &request, "static", report, phase).await?;
        self.history.push(reply.to_message());
        let subject = Subject {
            reply: &reply,
            input: &request.input,
            conversation: &self.history,
            latency: std::slice::from_ref(&latency),
        };
        *phase = format!("checking the assertions of turn {turn}");
        let (verdicts, broken) = check_all(&step.assertions, subject, self.env).await;
        let mut record = replied_turn(
            turn,
            &request.input,
            "static",
            &reply,
            latency,
            &self.ctx.input_tools,
        );
        let failure = first_failure(&format!("turn {turn}"), &verdicts);
        record.assertions = verdicts;
        record.error = broken.as_ref().map(ToString::to_string);
        report.turns.push(record);
        if let Some(e) = broken {
            return Err(Stop::step(&format!("turn {turn}"), e));
        }
        if let Some(f) = failure {
            report.status = Status::Failed;
            report.error = Some(f);
            return Ok(false);
        }
        self.last_reply = Some(reply);
        Ok(true)
    }

    /// The script ran out while the agent awaits the user: a person may go on, turn by
    /// turn, until they stop or the agent no longer awaits input. A case that wants a
    /// person and cannot have one is skipped (or fails with `--on-missing-input fail`).
    async fn person_goes_on(
        &mut self,
        people: People,
        session: &mut Session,
        report: &mut CaseReport,
        phase: &mut String,
    ) -> Result<(), Stop> {
        let Some(question) = report
            .turns
            .last()
            .filter(|t| t.awaiting_input)
            .map(|t| value_text(&t.output))
        else {
            return Ok(());
        };
        let person = match people.for_case(self.case) {
            Ok(Some(p)) => p,
            Ok(None) => return Ok(()),
            Err(why) if self.case.interactive.is_some_and(|i| i.enabled) => {
                return Err(Stop {
                    status: match people.on_missing_input {
                        MissingInput::Fail => Status::Failed,
                        MissingInput::Skip => Status::Skipped,
                    },
                    message: format!(
                        "the agent awaits input after turn {} (it asked: {}) and no scripted turn is left, but {why}\nhint: add more turns, run with --interactive, or use a simulator",
                        report.turns.len(),
                        Value::String(clip(&question))
                    ),
                    by: crate::run::outcome::Party::Agent,
                });
            }
            // Only `--interactive` wanted a person, and none can answer: nothing to do.
            Err(_) => return Ok(()),
        };
        self.talk_with(&person, question, session, report, phase)
            .await
    }

    /// The turns a person plays.
    async fn talk_with(
        &mut self,
        person: &Person,
        mut question: String,
        session: &mut Session,
        report: &mut CaseReport,
        phase: &mut String,
    ) -> Result<(), Stop> {
        let mut hint = self.last_reply.as_ref().and_then(|r| r.input_hint.clone());
        loop {
            let turn = report.turns.len() as u32 + 1;
            *phase = format!("waiting for a person's answer for turn {turn}");
            let prompt = "your reply (empty line to stop):";
            let Some(text) = person
                .answer(turn, &question, hint.as_deref(), prompt)
                .await?
            else {
                return Ok(());
            };
            self.history.push(Message::user(text.clone()));
            let options = merged_options(&self.case.options, &None);
            let request = self.request(turn, text.clone(), options, Vec::new());
            let (reply, latency) = exchange(session, &request, "human", report, phase).await?;
            self.history.push(reply.to_message());
            let record = replied_turn(turn, &text, "human", &reply, latency, &self.ctx.input_tools);
            let go_on = record.awaiting_input;
            question = value_text(&record.output);
            hint = reply.input_hint.clone();
            report.turns.push(record);
            self.last_reply = Some(reply);
            if !go_on {
                return Ok(());
            }
        }
    }

    /// A static case's `final_assertions`, on the last reply.
    async fn final_assertions(
        &self,
        report: &mut CaseReport,
        phase: &mut String,
    ) -> Result<(), Stop> {
        let (
            Mode::Static {
                final_assertions, ..
            },
            Some(reply),
        ) = (&self.case.mode, &self.last_reply)
        else {
            return Ok(());
        };
        let input = report
            .turns
            .last()
            .map(|t| t.input.clone())
            .unwrap_or_default();
        // Over the conversation, a `latency` check bounds every reply.
        let latency = latencies(&report.turns);
        let subject = Subject {
            reply,
            input: &input,
            conversation: &self.history,
            latency: &latency,
        };
        *phase = "checking the final assertions".into();
        let (verdicts, broken) = check_all(final_assertions, subject, self.env).await;
        let failure = first_failure("final assertions", &verdicts);
        report.final_assertions = verdicts;
        if let Some(e) = broken {
            return Err(Stop::step("final assertions", e));
        }
        if let Some(f) = failure {
            report.status = Status::Failed;
            report.error = Some(f);
        }
        Ok(())
    }
}
