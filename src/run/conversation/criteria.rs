//! EvalStudio's evaluation loop for a case with criteria: the seed messages, then user
//! message, agent reply, an evaluation of the conversation against the success and
//! failure criteria, until success, a failure under `every_turn`, or `max_messages`
//! (user and assistant messages), when the last evaluation decides. Without a model for
//! the judge, the seed's fallback: one exchange, passed when the agent answered.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::case::{Criteria, FailureMode, Input};
use crate::check::criteria::{conclude, conclude_fallback};
use crate::check::EvalEnv;
use crate::errors::{SetupError, StepError};
use crate::llm::Endpoint;
use crate::protocol::{Message, Role};
use crate::record::{CriteriaEvaluation, Termination};
use crate::run::conversation::driver::{
    Conversation, Exchanged, Once, Policy, Said, SimView, UserSide,
};
use crate::run::outcome::{Party, Stop};
use crate::run::roles::criteria::evaluate;
use crate::run::roles::simulator::SimTurn;

/// A case judged against EvalStudio's criteria after every reply.
pub(crate) struct Judged<'a> {
    criteria: &'a Criteria,
    endpoint: Arc<Endpoint>,
    /// The judge's model settings: `[run] judge`'s, when it names a built-in
    /// `[judges.NAME]`.
    model: crate::case::ModelSettings,
    profile: &'a Map<String, Value>,
    /// The first user message, sent before the simulator speaks: the seed's last
    /// message when it is the user's, else the case's `input`.
    first: Option<Said>,
    /// User and assistant messages so far, against `max_messages`.
    counted: u32,
    last: Option<CriteriaEvaluation>,
}

/// The seed messages without `system` ones (the agent has its own), and the first user
/// message: the seed's last when it is the user's (then it is not in the history yet),
/// else the case's `input`.
fn seeded(criteria: &Criteria, input: Option<&Input>) -> (Vec<Message>, Option<Said>) {
    let mut history: Vec<Message> = criteria
        .seed
        .iter()
        .filter(|m| m.role != "system")
        .cloned()
        .collect();
    let first = match history.last() {
        Some(m) if m.role == "user" => {
            let m = history.pop().expect("a last message");
            Some(Said::new(vec![m], "seed"))
        }
        _ => input.map(|i| Said::new(i.messages.clone(), "initial")),
    };
    (history, first)
}

fn counted(messages: &[Message]) -> u32 {
    messages
        .iter()
        .filter(|m| m.role == "user" || m.role == "assistant")
        .count() as u32
}

/// Plays the loop into the report: every turn with its evaluation, the termination and
/// the result `{success, score, reason}`.
pub(crate) async fn run(
    conv: &mut Conversation<'_>,
    criteria: &Criteria,
    input: Option<&Input>,
    spec: &crate::case::Simulator,
    chosen: Option<&str>,
) -> Result<(), Stop> {
    let model = criteria_judge(conv.ctx)?;
    let endpoint = match conv.ctx.llm(
        Role::Judge,
        model.llm.as_deref().or(spec.model.llm.as_deref()),
        conv.case.source_llms(),
    ) {
        Ok(e) => e,
        // No model at all: one exchange, as EvalStudio's documentation says.
        Err(SetupError::NoLlm { .. }) => return fallback(conv, criteria, input).await,
        Err(e) => return Err(Stop::step("judge", StepError::from(e))),
    };
    let (history, first) = seeded(criteria, input);
    let mut judged = Judged {
        criteria,
        endpoint,
        model,
        profile: &spec.profile,
        counted: counted(&history),
        first,
        last: None,
    };
    conv.history = history;
    conv.start_simulator(spec, spec.use_.as_deref().or(chosen))
        .await
        .map_err(|e| Stop::step("simulator", e).by(Party::Simulator))?;
    conv.report.simulator = conv.simulator_label();
    let played = conv.play(&mut judged).await;
    conv.close_simulator().await;
    conclude(criteria, played?, judged.last, conv.report);
    refuse_uncalibrated(conv).await;
    Ok(())
}

/// Under `require_calibrated_judges`, the criteria's verdict counts only from a
/// calibrated judge: from another it is inconclusive, with the reason.
async fn refuse_uncalibrated(conv: &mut Conversation<'_>) {
    use crate::record::Status;
    if !conv.ctx.config.file.run.require_calibrated_judges
        || !matches!(conv.report.status, Status::Passed | Status::Failed)
    {
        return;
    }
    let Some(judges) = conv.env.judges else {
        return;
    };
    let (choice, model) = (
        crate::case::JudgeChoice::default(),
        crate::case::ModelSettings::default(),
    );
    let why = match judges.panel(&choice, &model).await {
        Ok(panel) => panel
            .uncalibrated
            .or_else(|| panel.jurors.iter().find_map(|j| j.uncalibrated.clone())),
        Err(e) => Some(format!("its judge cannot be told: {e}")),
    };
    if let Some(why) = why {
        let was = conv.report.status.label().to_lowercase();
        conv.report.status = Status::Inconclusive;
        conv.report.error = Some(format!(
            "the criteria's verdict ({was}) does not count: {why}"
        ));
    }
}

/// The model settings of the judge of criteria: `[run] judge`'s when it names a
/// built-in `[judges.NAME]`; a jury or an agent judge cannot answer EvalStudio's
/// evaluation, and says so.
fn criteria_judge(ctx: &crate::run::context::Context) -> Result<crate::case::ModelSettings, Stop> {
    use crate::case::JudgeRef;
    use crate::config::JudgeDef;
    let def = match &ctx.config.default_judge {
        None | Some(JudgeRef::Builtin) => return Ok(Default::default()),
        Some(JudgeRef::Named(n)) => ctx.config.judges.get(n).map(|d| (n, &d.def)),
        Some(JudgeRef::Agent(_)) => None,
    };
    match def {
        Some((_, JudgeDef::Builtin(model))) => Ok(model.clone()),
        _ => Err(Stop::error(format!(
            "criteria are evaluated by the built-in judge, and [run] judge in {} names {}; name a [judges.NAME] with `use = \"llm\"` (or none) for cases with criteria",
            ctx.config.describe(),
            ctx.config
                .default_judge
                .as_ref()
                .map_or_else(String::new, |j| format!("`{j}`"))
        ))),
    }
}

impl Policy for Judged<'_> {
    async fn before_turn(
        &mut self,
        _conv: &mut Conversation<'_>,
        _k: u32,
    ) -> Result<Option<Termination>, Stop> {
        // A user message and a reply must fit.
        Ok((self.counted + 2 > self.criteria.max_messages).then_some(Termination::MaxMessages))
    }

    fn scripted(&mut self, _k: u32) -> Option<Said> {
        self.first.take()
    }

    fn simulator_view(&self, _k: u32, env: &EvalEnv<'_>) -> SimView<'_> {
        SimView {
            max_turns: self.criteria.max_messages.div_ceil(2),
            reached: Vec::new(),
            pending: None,
            profile: self.profile,
            deadline: env.deadline,
        }
    }

    /// The user has nothing more to say: the last evaluation decides.
    fn read_simulator(&mut self, _k: u32, next: SimTurn) -> UserSide {
        match next.message {
            Some(m) => UserSide::Says(Said {
                reasoning: next.reasoning,
                ..Said::new(vec![Message::user(m)], "simulated")
            }),
            None => UserSide::Ends(Termination::SimulatorDone),
        }
    }

    /// The evaluation of the whole conversation, and what it decides.
    async fn after_reply(
        &mut self,
        conv: &mut Conversation<'_>,
        k: u32,
        turn: &mut Exchanged,
    ) -> Result<Option<Termination>, Stop> {
        // The user's messages of this turn and the reply.
        self.counted += turn.user_messages + 1;
        *conv.phase = format!("evaluating the criteria after turn {k}");
        let evaluation = evaluate(
            &self.endpoint,
            &conv.scope.calls,
            self.criteria,
            &conv.history,
            &self.model,
            conv.env.deadline,
        )
        .await;
        let evaluation = match evaluation {
            Ok(e) => e,
            Err(e) => {
                turn.record.error = Some(e.to_string());
                return Err(Stop::step(&format!("turn {k}: judge"), e));
            }
        };
        turn.record.criteria = Some(evaluation.clone());
        let decided = if evaluation.success_met {
            Some(Termination::SuccessCriteriaMet)
        } else if evaluation.failure_met && self.criteria.mode == FailureMode::EveryTurn {
            Some(Termination::FailureCriteriaMet)
        } else {
            None
        };
        self.last = Some(evaluation);
        Ok(decided)
    }
}

/// No model for the judge: one request and its reply; passed when the agent answered.
async fn fallback(
    conv: &mut Conversation<'_>,
    criteria: &Criteria,
    input: Option<&Input>,
) -> Result<(), Stop> {
    let (history, first) = seeded(criteria, input);
    let Some(first) = first else {
        return Err(Stop::error(
            "no model for the judge and simulator ([llm]), so the case runs once as EvalStudio does without one, but it has no first message: give it `input`, or seed `messages` ending with the user's",
        ));
    };
    conv.history = history;
    conv.play(&mut Once::new(first, Termination::SingleTurnFallback))
        .await?;
    let answered = conv
        .last_reply
        .as_ref()
        .is_some_and(|r| !r.output_text().trim().is_empty());
    conclude_fallback(answered, conv.report);
    Ok(())
}
