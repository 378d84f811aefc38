//! Dynamic mode: a simulated user talks to the agent until every required checkpoint is
//! reached, or the conversation ends another way (the seed's termination table). When
//! no checkpoint is required (a tau2 task whose `reward_basis` gates none of them), the
//! simulated user decides: the case passes when it reaches its goal, and fails when it
//! leaves (`###TRANSFER###`, `###OUT-OF-SCOPE###`) or runs out of turns.

use crate::case::{Checkpoint, Input};
use crate::check::checkpoints::{Checkpoints, End};
use crate::check::{EvalEnv, Subject};
use crate::record::Termination;
use crate::run::conversation::driver::{Conversation, Exchanged, Policy, Said, SimView, UserSide};
use crate::run::outcome::{Party, Stop};
use crate::run::roles::simulator::SimTurn;

/// A dynamic case's rules: its first input, checkpoints and turn limit.
pub(crate) struct Dynamic<'a> {
    initial: Option<&'a Input>,
    checkpoints: Checkpoints<'a>,
    max_turns: u32,
    show_checkpoints: bool,
    /// Who plays the user: persona, goal, style, ... for the simulator.
    spec: crate::case::Simulator,
    /// The turn the conversation ended at, and the simulated user's reasoning then.
    ended_at: u32,
    reasoning: Option<String>,
}

impl<'a> Dynamic<'a> {
    /// The rules of a dynamic case played by `spec`'s simulated user.
    pub(crate) fn new(
        initial: Option<&'a Input>,
        checkpoints: &'a [Checkpoint],
        max_turns: u32,
        spec: &crate::case::Simulator,
    ) -> Self {
        Dynamic {
            initial,
            checkpoints: Checkpoints::new(checkpoints),
            max_turns,
            show_checkpoints: spec.show_checkpoints,
            spec: spec.clone(),
            ended_at: 0,
            reasoning: None,
        }
    }

    /// Plays the conversation into the report, with the simulated user `chosen` (the
    /// case's `simulator.use`, else `--simulator`; none: the built-in one): every turn,
    /// every checkpoint, the termination, and the failure unless every required
    /// checkpoint was reached.
    pub(crate) async fn run(
        mut self,
        conv: &mut Conversation<'_>,
        chosen: Option<&str>,
    ) -> Result<(), Stop> {
        conv.start_simulator(&self.spec, chosen).await?;
        conv.report.simulator = conv.simulator_label();
        let played = conv.play(&mut self).await;
        conv.close_simulator().await;
        conv.report.checkpoints = self.checkpoints.reports();
        let termination = played?;
        conv.report.termination = Some(termination);
        let end = End {
            termination,
            turn: self.ended_at,
            reasoning: self.reasoning.as_deref(),
            max_turns: self.max_turns,
        };
        if let Some((status, message)) = self.checkpoints.verdict(&end) {
            conv.report.status = status;
            conv.report.error = Some(message);
        }
        Ok(())
    }
}

impl Policy for Dynamic<'_> {
    async fn before_turn(
        &mut self,
        _conv: &mut Conversation<'_>,
        k: u32,
    ) -> Result<Option<Termination>, Stop> {
        Ok((k > self.max_turns).then_some(Termination::MaxTurns))
    }

    fn scripted(&mut self, k: u32) -> Option<Said> {
        let input = self.initial.filter(|_| k == 1)?;
        Some(Said::new(input.messages.clone(), "initial"))
    }

    fn simulator_view(&self, _k: u32, env: &EvalEnv<'_>) -> SimView<'_> {
        SimView {
            max_turns: self.max_turns,
            reached: self.checkpoints.reached(),
            pending: self.show_checkpoints.then(|| self.checkpoints.pending()),
            profile: &self.spec.profile,
            deadline: env.deadline,
        }
    }

    fn read_simulator(&mut self, k: u32, next: SimTurn) -> UserSide {
        self.ended_at = k - 1;
        if let Some(left) = next.ending {
            self.reasoning = next.reasoning;
            return UserSide::Ends(left);
        }
        match next.message {
            Some(m) if !next.goal_achieved => UserSide::Says(Said {
                reasoning: next.reasoning,
                ..Said::new(vec![crate::protocol::Message::user(m)], "simulated")
            }),
            _ => {
                self.reasoning = next.reasoning;
                UserSide::Ends(Termination::GoalAchieved)
            }
        }
    }

    /// The checkpoints, against this reply; then the termination rules.
    async fn after_reply(
        &mut self,
        conv: &mut Conversation<'_>,
        k: u32,
        turn: &mut Exchanged,
    ) -> Result<Option<Termination>, Stop> {
        self.ended_at = k;
        *conv.phase = format!("checking the checkpoints of turn {k}");
        let subject = Subject {
            reply: &turn.reply,
            input: &turn.input,
            conversation: &conv.history,
            latency: std::slice::from_ref(&turn.latency),
        };
        let (verdicts, forbidden) = match self.checkpoints.check_turn(k, subject, conv.env).await {
            Ok(checked) => checked,
            Err((at, e, so_far)) => {
                turn.record.error = Some(e.to_string());
                turn.record.checkpoints = so_far;
                return Err(Stop::step(&format!("turn {k}: {at}"), e));
            }
        };
        turn.record.checkpoints = verdicts;
        if forbidden {
            return Ok(Some(Termination::ForbiddenCheckpoint));
        }
        // With no checkpoint required, the simulated user decides when it is over.
        if self.checkpoints.user_decides() {
            return Ok(None);
        }
        if self.checkpoints.all_reached() {
            return Ok(Some(Termination::AllCheckpointsReached));
        }
        // A reply cut off at the token limit is not the agent finishing.
        let finished = !turn.record.awaiting_input && !turn.record.truncated;
        Ok(finished.then_some(Termination::AgentCompleted))
    }

    fn on_error(&self, stop: &Stop) -> Option<Termination> {
        Some(match stop.by {
            Party::Simulator => Termination::SimulatorError,
            Party::Agent => Termination::AgentError,
        })
    }
}
