//! The one conversation driver. A [`Conversation`] owns what every mode shares: the
//! session with the agent under test, the history, the request's options, the simulated
//! user (started and closed here), a person who may answer, and the turn records. It is
//! the one place that chooses the next user message (the mode's scripted turn, else a
//! person, else the simulator), the one place that builds the agent's [`Request`] and
//! the simulator's [`SimInput`]. What a mode decides after each reply is its
//! [`Policy`].

use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::agent::{CaseScope, Session};
use crate::case::Case;
use crate::check::{EvalEnv, Latency};
use crate::errors::StepError;
use crate::protocol::{Message, Reply, Request};
use crate::record::{CaseReport, Termination, TurnReport};
use crate::run::context::Context;
use crate::run::conversation::turn::{exchange, merged_options, new_session_id, replied_turn};
use crate::run::outcome::{simulator_stop, Stop};
use crate::run::roles::person::Person;
use crate::run::roles::simulator::{SimInput, SimTurn, Simulator};
use crate::util::value_text;

/// What a conversation is given by the case's lifecycle.
pub(crate) struct Parts<'a> {
    pub(crate) case: &'a Case,
    pub(crate) ctx: &'a Context,
    pub(crate) scope: &'a CaseScope,
    pub(crate) env: &'a EvalEnv<'a>,
    pub(crate) session: &'a mut Session,
    pub(crate) report: &'a mut CaseReport,
    /// What the case is doing, for a deadline's message.
    pub(crate) phase: &'a mut String,
}

/// A user message about to be sent.
#[derive(Debug, Clone)]
pub(crate) struct Said {
    /// The messages the user adds (a scripted turn may add several; the last is the input).
    pub(crate) messages: Vec<Message>,
    /// Where it came from: `static`, `initial`, `seed`, `human`, `simulated`.
    pub(crate) source: &'static str,
    /// The simulator's reasoning, kept in the turn record.
    pub(crate) reasoning: Option<String>,
    /// The simulator said its goal is achieved with this message.
    pub(crate) goal_achieved: bool,
    /// The turn's own options, over the case's.
    pub(crate) options: Option<Value>,
    pub(crate) attachments: Vec<Value>,
}

impl Said {
    /// `messages` from `source`, with nothing else.
    pub(crate) fn new(messages: Vec<Message>, source: &'static str) -> Said {
        Said {
            messages,
            source,
            reasoning: None,
            goal_achieved: false,
            options: None,
            attachments: Vec::new(),
        }
    }

    /// The text the agent's `input` carries: the last message's.
    fn input(&self) -> String {
        self.messages.last().map(Message::text).unwrap_or_default()
    }
}

/// The user's side of a turn: a message, or the end of the conversation.
pub(crate) enum UserSide {
    Says(Said),
    Ends(Termination),
}

/// What the simulator is shown, from the mode.
pub(crate) struct SimView<'p> {
    pub(crate) max_turns: u32,
    pub(crate) reached: Vec<String>,
    /// Shown only when the case sets `show_checkpoints`.
    pub(crate) pending: Option<Vec<String>>,
    pub(crate) profile: &'p Map<String, Value>,
    /// When the simulator must have answered.
    pub(crate) deadline: Instant,
}

/// One answered turn, before its record joins the report: the policy adds its checks.
pub(crate) struct Exchanged {
    pub(crate) reply: Reply,
    pub(crate) latency: Latency,
    /// The user's message as the agent received it.
    pub(crate) input: String,
    /// The simulator said its goal is achieved with this turn's message.
    pub(crate) goal_achieved: bool,
    /// How many user messages the turn added to the conversation.
    pub(crate) user_messages: u32,
    pub(crate) record: TurnReport,
}

/// What a mode decides. Each method is called by [`Conversation::play`] at its point of
/// the turn; the defaults are a mode that scripts nothing and never ends early.
pub(crate) trait Policy {
    /// Before turn `k` (1-based, within this conversation): a limit reached ends it.
    async fn before_turn(
        &mut self,
        _conv: &mut Conversation<'_>,
        _k: u32,
    ) -> Result<Option<Termination>, Stop> {
        Ok(None)
    }

    /// The user's message the mode itself gives for turn `k` (a script's turn, a seed,
    /// the case's first input); `None` lets a person or the simulator speak.
    fn scripted(&mut self, _k: u32) -> Option<Said> {
        None
    }

    /// What the simulator is shown before it speaks at turn `k`.
    fn simulator_view(&self, k: u32, env: &EvalEnv<'_>) -> SimView<'_>;

    /// The simulator's answer, read by the mode's rules.
    fn read_simulator(&mut self, k: u32, next: SimTurn) -> UserSide;

    /// Neither a script, a person nor a simulator has anything to say at turn `k`.
    fn nobody_speaks(&mut self, _k: u32) -> Termination {
        Termination::ScriptDone
    }

    /// How long the agent may take for one reply, when the mode bounds it.
    fn turn_timeout(&self) -> Option<Duration> {
        None
    }

    /// After the agent's reply at turn `k`: the mode's checks join the turn's record,
    /// and the conversation ends when it returns a termination.
    async fn after_reply(
        &mut self,
        conv: &mut Conversation<'_>,
        k: u32,
        turn: &mut Exchanged,
    ) -> Result<Option<Termination>, Stop>;

    /// The termination written when an error stops the conversation, if the mode
    /// reports one.
    fn on_error(&self, _stop: &Stop) -> Option<Termination> {
        None
    }
}

/// One conversation with the agent under test.
pub(crate) struct Conversation<'a> {
    pub(crate) case: &'a Case,
    pub(crate) ctx: &'a Context,
    pub(crate) scope: &'a CaseScope,
    pub(crate) env: &'a EvalEnv<'a>,
    session: &'a mut Session,
    pub(crate) report: &'a mut CaseReport,
    pub(crate) phase: &'a mut String,
    session_id: String,
    /// The whole conversation so far, as the agent receives it.
    pub(crate) history: Vec<Message>,
    /// The case's options, sent with every turn that has none of its own.
    options: Value,
    /// The request's `setup` (a scenario's mocks), when sent.
    setup: Option<Value>,
    /// Where in the case this conversation is (a scenario's step), for messages.
    at: Option<String>,
    /// The next turn's number in the case's record (a scenario's steps share them).
    next_turn: u32,
    simulator: Option<Simulator>,
    /// A person who may answer for the user (`--interactive`).
    pub(crate) person: Option<Person>,
    pub(crate) last_reply: Option<Reply>,
}

impl<'a> Conversation<'a> {
    /// A conversation with no turn played yet.
    pub(crate) fn new(parts: Parts<'a>) -> Conversation<'a> {
        Conversation {
            options: merged_options(parts.case.options.as_deref(), None),
            case: parts.case,
            ctx: parts.ctx,
            scope: parts.scope,
            env: parts.env,
            session: parts.session,
            report: parts.report,
            phase: parts.phase,
            session_id: new_session_id(),
            history: Vec::new(),
            setup: None,
            at: None,
            next_turn: 1,
            simulator: None,
            person: None,
            last_reply: None,
        }
    }

    /// Every request carries `setup` (a scenario's mocks).
    pub(crate) fn with_setup(mut self, setup: Option<Value>) -> Self {
        self.setup = setup;
        self
    }

    /// Where the turns played from now on are, in messages (`step 2 "files"`).
    pub(crate) fn set_at(&mut self, at: Option<String>) {
        self.at = at;
    }

    /// Where in the case this conversation is (`step 2 "files"`), or "".
    pub(crate) fn place(&self) -> &str {
        self.at.as_deref().unwrap_or_default()
    }

    /// The number the next turn record gets.
    pub(crate) fn next_turn(&self) -> u32 {
        self.next_turn
    }

    /// A turn that is not an exchange with the agent (a scenario's code step) joins the
    /// record under the next number.
    pub(crate) fn push_other(&mut self, mut record: TurnReport) {
        record.turn = self.next_turn;
        self.next_turn += 1;
        self.report.turns.push(record);
    }

    /// Starts the simulated user, who speaks when the mode scripts nothing.
    pub(crate) async fn start_simulator(
        &mut self,
        spec: &crate::case::Simulator,
        chosen: Option<&str>,
    ) -> Result<(), StepError> {
        *self.phase = format!("starting the simulator{}", self.of_at());
        self.simulator = Some(Simulator::start(self.ctx, spec, chosen, self.scope).await?);
        Ok(())
    }

    /// The simulator's label, for the report.
    pub(crate) fn simulator_label(&self) -> Option<String> {
        self.simulator.as_ref().map(Simulator::label)
    }

    /// Stops the simulated user, if one runs.
    pub(crate) async fn close_simulator(&mut self) {
        if let Some(sim) = self.simulator.take() {
            sim.close().await;
        }
    }

    /// `turn k`, within this conversation's place in the case.
    pub(crate) fn turn_at(&self, k: u32) -> String {
        match &self.at {
            Some(at) => format!("{at}: turn {k}"),
            None => format!("turn {k}"),
        }
    }

    fn of_at(&self) -> String {
        self.at
            .as_ref()
            .map(|at| format!(" of {at}"))
            .unwrap_or_default()
    }

    /// Plays turns until the policy ends the conversation or an error stops it. Every
    /// turn played is in the report, also the one that broke.
    pub(crate) async fn play<P: Policy>(&mut self, policy: &mut P) -> Result<Termination, Stop> {
        let result = self.turns(policy).await;
        if let Err(stop) = &result {
            if let Some(t) = policy.on_error(stop) {
                self.report.termination = Some(t);
            }
        }
        result
    }

    async fn turns<P: Policy>(&mut self, policy: &mut P) -> Result<Termination, Stop> {
        let mut k = 0;
        loop {
            k += 1;
            if let Some(t) = policy.before_turn(self, k).await? {
                return Ok(t);
            }
            let said = match self.user_turn(policy, k).await? {
                UserSide::Says(said) => said,
                UserSide::Ends(t) => return Ok(t),
            };
            let mut turn = self.send(said, policy.turn_timeout(), k).await?;
            // On an error the policy has put it in the turn's record, which is kept.
            let decided = policy.after_reply(self, k, &mut turn).await;
            self.report.turns.push(turn.record);
            self.last_reply = Some(turn.reply);
            if let Some(t) = decided? {
                return Ok(t);
            }
        }
    }

    /// The one choice of the user's message: the mode's own (a script, a seed, the
    /// first input), else a person, else the simulator.
    async fn user_turn<P: Policy>(&mut self, policy: &mut P, k: u32) -> Result<UserSide, Stop> {
        if let Some(said) = policy.scripted(k) {
            return Ok(UserSide::Says(said));
        }
        let turn = self.next_turn;
        // A person answers the agent's last reply.
        if let (Some(person), true) = (&self.person, self.last_reply.is_some()) {
            *self.phase = format!("waiting for a person's answer for turn {turn}");
            let prompt = if self.simulator.is_some() {
                "your reply (empty line: let the simulator answer):"
            } else {
                "your reply (empty line to stop):"
            };
            let question = self
                .report
                .turns
                .last()
                .map(|t| value_text(&t.output))
                .unwrap_or_default();
            let hint = self.last_reply.as_ref().and_then(|r| r.input_hint.clone());
            if let Some(text) = person
                .answer(turn, &question, hint.as_deref(), prompt)
                .await?
            {
                return Ok(UserSide::Says(Said::new(
                    vec![Message::user(text)],
                    "human",
                )));
            }
        }
        if self.simulator.is_none() {
            return Ok(UserSide::Ends(policy.nobody_speaks(k)));
        }
        *self.phase = format!(
            "waiting for the simulator's message for turn {k}{}",
            self.of_at()
        );
        let view = policy.simulator_view(k, self.env);
        let last_response = self
            .last_reply
            .as_ref()
            .map(Reply::output_text)
            .unwrap_or_default();
        let input = SimInput {
            test_id: &self.case.id,
            session_id: &self.session_id,
            conversation: &self.history,
            last_response: &last_response,
            turn_number: k,
            max_turns: view.max_turns,
            reached: view.reached,
            pending: view.pending,
            profile: view.profile,
        };
        let at = self.turn_at(k);
        let sim = self.simulator.as_mut().expect("checked above");
        let next = sim
            .next(&input, view.deadline)
            .await
            .map_err(|e| simulator_stop(&at, e))?;
        Ok(policy.read_simulator(k, next))
    }

    /// Sends the user's message with the history so far (the one request to the agent
    /// under test), waits for the reply within `limit`, and makes the turn's record.
    async fn send(
        &mut self,
        said: Said,
        limit: Option<Duration>,
        k: u32,
    ) -> Result<Exchanged, Stop> {
        self.history.extend(said.messages.iter().cloned());
        let user_messages = said.messages.iter().filter(|m| m.role == "user").count() as u32;
        let turn = self.next_turn;
        let input = said.input();
        let request = Request {
            session_id: self.session_id.clone(),
            test_id: self.case.id.clone(),
            turn,
            input,
            messages: self.history.clone(),
            options: said.options.unwrap_or_else(|| self.options.clone()),
            metadata: self.env.metadata.clone(),
            attachments: said.attachments,
            setup: self.setup.clone(),
        };
        let source = said.source;
        let exchanged = match limit {
            None => exchange(self.session, &request, source, self.report, self.phase).await,
            Some(limit) => {
                let answer = tokio::time::timeout(
                    limit,
                    exchange(self.session, &request, source, self.report, self.phase),
                )
                .await;
                match answer {
                    Ok(r) => r,
                    Err(_) => return Err(self.timed_out(&request, source, limit, k)),
                }
            }
        };
        let (reply, latency) = exchanged?;
        self.next_turn += 1;
        self.history.push(reply.to_message());
        let mut record = replied_turn(
            turn,
            &request.input,
            source,
            &reply,
            latency,
            &self.ctx.input_tools,
        );
        record.reasoning = said.reasoning;
        Ok(Exchanged {
            reply,
            latency,
            input: request.input,
            goal_achieved: said.goal_achieved,
            user_messages,
            record,
        })
    }

    /// The agent did not reply within the mode's per-turn limit: the turn's record says
    /// so, and the case stops as an error.
    fn timed_out(&mut self, request: &Request, source: &str, limit: Duration, k: u32) -> Stop {
        let why = format!(
            "the agent did not reply within timeout_per_turn_ms ({} ms)",
            limit.as_millis()
        );
        self.report.turns.push(TurnReport {
            turn: request.turn,
            input: request.input.clone(),
            input_source: source.into(),
            duration_ms: limit.as_millis() as u64,
            error: Some(why.clone()),
            ..TurnReport::default()
        });
        Stop::error(format!("{}: {why}", self.turn_at(k)))
    }
}

/// One scripted exchange, unchecked, that ends the conversation with `end`: a
/// scenario's message step, EvalStudio's single-turn fallback.
pub(crate) struct Once {
    said: Option<Said>,
    end: Termination,
}

impl Once {
    pub(crate) fn new(said: Said, end: Termination) -> Self {
        Once {
            said: Some(said),
            end,
        }
    }
}

impl Policy for Once {
    fn scripted(&mut self, _k: u32) -> Option<Said> {
        self.said.take()
    }

    fn simulator_view(&self, _k: u32, _env: &EvalEnv<'_>) -> SimView<'_> {
        unreachable!("one scripted exchange asks no simulator")
    }

    fn read_simulator(&mut self, _k: u32, _next: SimTurn) -> UserSide {
        unreachable!("one scripted exchange asks no simulator")
    }

    async fn after_reply(
        &mut self,
        _conv: &mut Conversation<'_>,
        _k: u32,
        _turn: &mut Exchanged,
    ) -> Result<Option<Termination>, Stop> {
        Ok(Some(self.end))
    }
}
