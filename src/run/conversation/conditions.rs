//! An ElizaOS scenario's `conversation` step: a simulated user (from `user_simulator`)
//! talks to the agent, turn by turn, until a termination condition holds or `max_turns`
//! is reached; `turn_evaluations` check every reply. (The step's `final_evaluations`
//! are the scenario runner's, with its other evaluations.)

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::time::Instant;

use crate::case::scenario::Conversation as Spec;
use crate::check::evaluators::StepResult;
use crate::check::scenario::{evaluate_all, first_condition, trajectory, AfterTurn};
use crate::check::{EvalEnv, Subject};
use crate::record::Termination;
use crate::run::conversation::driver::{Conversation, Exchanged, Policy, Said, SimView, UserSide};
use crate::run::outcome::Stop;
use crate::run::roles::simulator::SimTurn;

/// A conversation step's rules.
pub(crate) struct Conditions<'a> {
    spec: &'a Spec,
    /// The step's `input`, said first.
    first: Option<String>,
    profile: Map<String, Value>,
    /// The conversation's own limit, within the case's.
    deadline: Instant,
    /// The environment folder, where file evaluators look.
    workdir: &'a Path,
    /// The agent's replies so far, for `conversation_stuck`.
    replies: Vec<String>,
    /// Agent turns played.
    pub(crate) turns: u32,
}

impl<'a> Conditions<'a> {
    /// The rules of `spec`, started now.
    pub(crate) fn new(
        spec: &'a Spec,
        first: Option<&str>,
        env: &EvalEnv<'_>,
        workdir: &'a Path,
    ) -> Self {
        Conditions {
            spec,
            first: first.map(str::to_string),
            profile: profile(spec),
            deadline: env.deadline.min(Instant::now() + spec.total_timeout),
            workdir,
            replies: Vec::new(),
            turns: 0,
        }
    }

    /// The simulated user, as the scenario's `user_simulator` describes it.
    pub(crate) fn simulator(&self) -> crate::case::Simulator {
        crate::case::Simulator {
            use_: None,
            script: Vec::new(),
            show_checkpoints: false,
            stop_signals: false,
            profile: self.profile.clone(),
            model: self.spec.simulator.model.clone(),
            raw: Value::Null,
        }
    }
}

/// The simulated user's profile, as the simulator reads it.
fn profile(spec: &Spec) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("persona".into(), json!(spec.simulator.persona));
    p.insert("objective".into(), json!(spec.simulator.objective));
    for (k, v) in &spec.simulator.profile {
        p.insert(k.clone(), v.clone());
    }
    p
}

impl Policy for Conditions<'_> {
    async fn before_turn(
        &mut self,
        _conv: &mut Conversation<'_>,
        k: u32,
    ) -> Result<Option<Termination>, Stop> {
        Ok((k > self.spec.max_turns).then_some(Termination::MaxTurns))
    }

    fn scripted(&mut self, _k: u32) -> Option<Said> {
        let text = self.first.take()?;
        Some(Said::new(
            vec![crate::protocol::Message::user(text)],
            "initial",
        ))
    }

    fn simulator_view(&self, _k: u32, _env: &EvalEnv<'_>) -> SimView<'_> {
        SimView {
            max_turns: self.spec.max_turns,
            reached: Vec::new(),
            pending: None,
            profile: &self.profile,
            deadline: self.deadline,
        }
    }

    /// The user has nothing more to say: their goal is met.
    fn read_simulator(&mut self, _k: u32, next: SimTurn) -> UserSide {
        match next.message {
            Some(m) => UserSide::Says(Said {
                reasoning: next.reasoning,
                goal_achieved: next.goal_achieved,
                ..Said::new(vec![crate::protocol::Message::user(m)], "simulated")
            }),
            None => UserSide::Ends(Termination::GoalAchieved),
        }
    }

    fn turn_timeout(&self) -> Option<Duration> {
        Some(self.spec.timeout_per_turn)
    }

    /// This reply's turn evaluations, then the termination conditions in the order
    /// written.
    async fn after_reply(
        &mut self,
        conv: &mut Conversation<'_>,
        k: u32,
        turn: &mut Exchanged,
    ) -> Result<Option<Termination>, Stop> {
        self.turns = k;
        let at = conv.turn_at(k);
        let place = conv.place().to_string();
        *conv.phase = format!("evaluating turn {k} of {place}");
        let subject = Subject {
            reply: &turn.reply,
            input: &turn.input,
            conversation: &conv.history,
            latency: std::slice::from_ref(&turn.latency),
        };
        let names = trajectory(std::slice::from_ref(&turn.record), turn.record.turn);
        let result = StepResult {
            duration_ms: turn.latency.reply_ms,
            trajectory: &names,
        };
        let (verdicts, broken) = evaluate_all(
            &self.spec.turn_evaluations,
            subject,
            &result,
            self.workdir,
            conv.env,
            Some((conv.history.as_slice(), k)),
        )
        .await;
        turn.record.assertions = verdicts;
        turn.record.error = broken.as_ref().map(ToString::to_string);
        if let Some(e) = broken {
            return Err(Stop::step(&at, e));
        }
        let text = turn.reply.output_text();
        *conv.phase = format!("checking the termination conditions after turn {k} of {place}");
        let after = AfterTurn {
            k,
            max: self.spec.max_turns,
            user: &turn.input,
            agent: &text,
            goal: turn.goal_achieved,
            earlier: &self.replies,
            history: &conv.history,
        };
        let ends = first_condition(&self.spec.termination, &after, conv.env)
            .await
            .map_err(|e| Stop::step(&format!("{at}: termination"), e))?;
        self.replies.push(text);
        Ok(ends)
    }
}
