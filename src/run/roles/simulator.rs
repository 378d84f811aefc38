//! User simulators for dynamic cases: a script, a named agent, or the built-in simulator
//! on the `[llm]` model. Each answers `{message, goal_achieved, reasoning}`.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio::time::Instant;

use crate::agent::{CaseScope, Session};
use crate::case::{ModelSettings, ScriptRule};
use crate::errors::StepError;
use crate::llm::{Endpoint, ModelCalls};
use crate::protocol::{Message, Role};
use crate::record::Termination;
use crate::run::context::Context;
use crate::run::roles::ask::{ask, role_request, Answer, Question, Respondent};
use crate::util::value_text;

/// What the simulator knows when it speaks.
pub(crate) struct SimInput<'a> {
    pub(crate) test_id: &'a str,
    pub(crate) session_id: &'a str,
    /// The conversation so far.
    pub(crate) conversation: &'a [Message],
    /// The agent's last reply ("" before the first turn).
    pub(crate) last_response: &'a str,
    /// The turn about to be played, 1-based.
    pub(crate) turn_number: u32,
    pub(crate) max_turns: u32,
    pub(crate) reached: Vec<String>,
    /// Shown only when the case sets `show_checkpoints`.
    pub(crate) pending: Option<Vec<String>>,
    /// persona, goal, style, ... and the rest of the simulator's metadata.
    pub(crate) profile: &'a Map<String, Value>,
}

impl SimInput<'_> {
    /// The seed's simulator input, as a named simulator agent receives it.
    pub(crate) fn to_json(&self) -> Value {
        let mut v = Map::new();
        v.insert("test_mode".into(), json!("simulator"));
        v.insert("test_id".into(), json!(self.test_id));
        for (k, val) in self.profile {
            v.insert(k.clone(), val.clone());
        }
        v.insert("conversation".into(), json!(self.conversation));
        v.insert("last_response".into(), json!(self.last_response));
        v.insert("turn_number".into(), json!(self.turn_number));
        v.insert("max_turns".into(), json!(self.max_turns));
        v.insert("checkpoints_reached".into(), json!(self.reached));
        v.insert(
            "checkpoints_pending".into(),
            json!(self.pending.clone().unwrap_or_default()),
        );
        Value::Object(v)
    }
}

/// The simulator's next move.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SimTurn {
    /// What the user says; `None` when the goal is achieved and nothing more is said.
    pub(crate) message: Option<String>,
    pub(crate) goal_achieved: bool,
    pub(crate) reasoning: Option<String>,
    /// The user ended the conversation without reaching its goal (then `message` is
    /// `None`): [`Termination::Transfer`] or [`Termination::OutOfScope`].
    pub(crate) ending: Option<Termination>,
}

/// tau2-bench's stop signals, understood in any simulator's message.
const STOP: &str = "###STOP###";
const TRANSFER: &str = "###TRANSFER###";
const OUT_OF_SCOPE: &str = "###OUT-OF-SCOPE###";

/// `turn` with tau2's signals read: `###STOP###` is the goal achieved (with whatever
/// else was said), `###TRANSFER###` and `###OUT-OF-SCOPE###` end the conversation.
fn signals(mut turn: SimTurn) -> SimTurn {
    let Some(message) = &turn.message else {
        return turn;
    };
    if !message.contains("###") {
        return turn;
    }
    if message.contains(TRANSFER) {
        turn.ending = Some(Termination::Transfer);
    } else if message.contains(OUT_OF_SCOPE) {
        turn.ending = Some(Termination::OutOfScope);
    }
    if message.contains(STOP) {
        turn.goal_achieved = true;
    }
    let rest = [STOP, TRANSFER, OUT_OF_SCOPE]
        .iter()
        .fold(message.clone(), |m, s| m.replace(s, ""));
    turn.message = match rest.trim() {
        _ if turn.ending.is_some() => None,
        "" => None,
        said => Some(said.to_string()),
    };
    turn
}

/// Who plays the user.
pub(crate) enum Simulator {
    Script {
        rules: Vec<ScriptRule>,
        used: Vec<bool>,
    },
    Agent {
        name: String,
        session: Box<Session>,
        options: Value,
        stop_signals: bool,
    },
    Model {
        endpoint: Arc<Endpoint>,
        calls: Arc<ModelCalls>,
        show_checkpoints: bool,
        /// Whether its instructions name tau2's stop signals.
        stop_signals: bool,
        /// The case's model settings.
        settings: ModelSettings,
    },
}

impl Simulator {
    /// Who plays the user: `chosen` is the case's `simulator.use`, else `--simulator`:
    /// `script`, or a named agent of any kind; none is the built-in simulator on `[llm]`.
    pub(crate) async fn start(
        ctx: &Context,
        spec: &crate::case::Simulator,
        chosen: Option<&str>,
        scope: &CaseScope,
    ) -> Result<Simulator, StepError> {
        match chosen {
            Some("script") => Ok(Simulator::Script {
                used: vec![false; spec.script.len()],
                rules: spec.script.clone(),
            }),
            Some(name) => {
                let (def, label) = ctx
                    .agent(Some(name))
                    .map_err(|e| StepError::from(e).context("simulator"))?;
                let scope = CaseScope {
                    role: Role::Simulator,
                    // The environment folder is the agent's, not the simulated user's.
                    workdir: None,
                    ..scope.clone()
                };
                let session = def
                    .start(&scope)
                    .await
                    .map_err(|e| StepError::from(e).context(format!("simulator `{label}`")))?;
                Ok(Simulator::Agent {
                    name: label,
                    session: Box::new(session),
                    options: spec.raw.get("options").cloned().unwrap_or(Value::Null),
                    stop_signals: spec.stop_signals,
                })
            }
            None => Ok(Simulator::Model {
                endpoint: ctx.llm(
                    Role::Simulator,
                    spec.model.llm.as_deref(),
                    scope.source_llms.as_deref(),
                )?,
                calls: scope.calls.clone(),
                show_checkpoints: spec.show_checkpoints,
                stop_signals: spec.stop_signals,
                settings: spec.model.clone(),
            }),
        }
    }

    /// A short name for reports: `script`, the agent's name, or `model`.
    pub(crate) fn label(&self) -> String {
        match self {
            Simulator::Script { .. } => "script".into(),
            Simulator::Agent { name, .. } => name.clone(),
            Simulator::Model { endpoint, .. } => format!("model {}", endpoint.model()),
        }
    }

    /// The next user message. `Err` is a simulator error (the case's status is
    /// `error`), or a model that cannot be reached (`StepError::Unavailable`).
    pub(crate) async fn next(
        &mut self,
        input: &SimInput<'_>,
        deadline: Instant,
    ) -> Result<SimTurn, StepError> {
        self.answer(input, deadline).await.map(signals)
    }

    async fn answer(
        &mut self,
        input: &SimInput<'_>,
        deadline: Instant,
    ) -> Result<SimTurn, StepError> {
        match self {
            Simulator::Script { rules, used } => script_next(rules, used, input.last_response),
            Simulator::Agent {
                name,
                session,
                options,
                stop_signals,
            } => {
                let who = format!("simulator agent `{name}`");
                let template = role_request(
                    format!("{}-simulator", input.session_id),
                    input.test_id,
                    input.turn_number,
                    options.clone(),
                );
                let mut respondent = Respondent::Agent {
                    session,
                    template: Box::new(template),
                };
                // A model-backed agent must answer JSON like the built-in simulator;
                // another agent may answer with plain text, which is its message.
                let plain_text = !respondent.is_model();
                ask(
                    &mut respondent,
                    &who,
                    &question(input, true, *stop_signals),
                    |a| read_answer(a, plain_text),
                )
                .await
            }
            Simulator::Model {
                endpoint,
                calls,
                show_checkpoints,
                stop_signals,
                settings,
            } => {
                let mut respondent = Respondent::Model {
                    endpoint,
                    calls,
                    role: Role::Simulator,
                    deadline,
                };
                let mut question = question(input, *show_checkpoints, *stop_signals);
                question.model = settings.clone();
                ask(&mut respondent, "simulator", &question, |a| {
                    read_answer(a, false)
                })
                .await
            }
        }
    }

    /// Ends the simulator's own conversation (a simulator agent's process).
    pub(crate) async fn close(self) {
        if let Simulator::Agent { session, .. } = self {
            session.close().await;
        }
    }
}

/// The first unused rule whose `when` matches the reply (or that has none) answers.
fn script_next(rules: &[ScriptRule], used: &mut [bool], last: &str) -> Result<SimTurn, StepError> {
    let found = rules
        .iter()
        .enumerate()
        .find(|(i, r)| !used[*i] && r.when.as_ref().is_none_or(|w| w.is_match(last)));
    match found {
        Some((i, rule)) => {
            used[i] = true;
            Ok(SimTurn {
                message: rule.say.clone(),
                goal_achieved: rule.goal_achieved,
                reasoning: Some(match &rule.when {
                    Some(w) => format!("script rule {} (when /{}/)", i + 1, w.as_str()),
                    None => format!("script rule {}", i + 1),
                }),
                ending: None,
            })
        }
        None => Err(StepError::Broken(format!(
            "the simulator script has no unused rule for the agent's reply {}; add a rule whose `when` matches it, or a final {{\"goal_achieved\": true}}",
            json!(crate::util::clip(last))
        ))),
    }
}

/// The example texts of the simulator's instructions: a message that repeats them was
/// not written by a user.
const EXAMPLE_MESSAGE: &str = "what you say next";

/// Reads `{message | input, goal_achieved, reasoning}`. `Err` says why the answer
/// cannot be the user's next turn: cut off at the token limit, not JSON (plain text is
/// the message only from an agent that is not a model, when `plain_text`), a message
/// that is not a non-empty string, or the instructions' example given back.
pub(crate) fn read_answer(answer: &Answer, plain_text: bool) -> Result<SimTurn, String> {
    if answer.truncated {
        return Err("the answer was cut off at the token limit".into());
    }
    let parsed = match &answer.value {
        Value::String(s) => match serde_json::from_str::<Value>(s.trim()) {
            Ok(obj @ Value::Object(_)) => obj,
            _ if plain_text && !s.trim().is_empty() => {
                return Ok(SimTurn {
                    message: Some(s.trim().to_string()),
                    goal_achieved: false,
                    reasoning: None,
                    ending: None,
                })
            }
            _ => return Err("the answer is not a JSON object".into()),
        },
        obj @ Value::Object(_) => obj.clone(),
        _ => return Err("the answer is not a JSON object".into()),
    };
    let goal_achieved = match parsed.get("goal_achieved") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("`goal_achieved` is not true or false".into()),
    };
    let message = match parsed.get("message").or_else(|| parsed.get("input")) {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if m.trim().is_empty() => None,
        Some(Value::String(m)) => Some(m.trim().to_string()),
        Some(_) => return Err("its `message` is not a string".into()),
    };
    if message.as_deref().is_some_and(|m| {
        m.trim_end_matches(['.', '!'])
            .eq_ignore_ascii_case(EXAMPLE_MESSAGE)
    }) {
        return Err("its message repeats the instructions' example text".into());
    }
    if message.is_none() && !goal_achieved {
        return Err("it has no message".into());
    }
    Ok(SimTurn {
        message,
        goal_achieved,
        reasoning: parsed.get("reasoning").map(value_text),
        ending: None,
    })
}

/// The built-in simulator's instructions.
fn system_prompt(
    profile: &Map<String, Value>,
    pending: Option<&[String]>,
    turn: (u32, u32),
    stop_signals: bool,
) -> String {
    let field = |names: &[&str]| names.iter().find_map(|n| profile.get(*n)).map(value_text);
    let mut s = String::from(
        "You are simulating a user who talks to an AI assistant, to test that assistant. Stay in character.\n",
    );
    for (label, names) in [
        ("Persona", &["persona"][..]),
        ("Goal", &["goal", "objective"][..]),
        ("Style", &["style"][..]),
        ("Constraints", &["constraints"][..]),
        ("Emotional state", &["emotional_state"][..]),
        ("Knowledge level", &["knowledge_level"][..]),
        ("Instructions", &["task_instructions"][..]),
        ("What you know", &["known_info"][..]),
    ] {
        if let Some(v) = field(names) {
            s.push_str(&format!("{label}: {v}\n"));
        }
    }
    // Kept apart from what the user knows: the user must not make it up.
    if let Some(v) = field(&["unknown_info"]) {
        s.push_str(&format!(
            "What you do not know (if the assistant asks for it, say you do not know; never invent it): {v}\n"
        ));
    }
    s.push_str(
        "\nRules:\n- Write only the user's next message, as that user would.\n- Reveal facts from your persona and goal only when the assistant asks for them, and never invent facts you were not given.\n- When your goal has been achieved, set goal_achieved to true.\n",
    );
    if stop_signals {
        s.push_str(&format!(
            "- When your goal is reached, your message is {STOP}. If you are transferred to another agent, your message is {TRANSFER}. If the scenario does not tell you enough to go on, your message is {OUT_OF_SCOPE}.\n"
        ));
    }
    if let Some(p) = pending.filter(|p| !p.is_empty()) {
        s.push_str(&format!(
            "- The test still expects the assistant to: {}\n",
            p.join("; ")
        ));
    }
    s.push_str(&format!(
        "\nThe assistant's messages come to you as the user's; you answer as the user. This is turn {} of at most {}.\n",
        turn.0, turn.1
    ));
    s.push_str("\nAnswer with JSON only: {\"message\": \"what you say next\", \"goal_achieved\": false, \"reasoning\": \"why\"}");
    s
}

/// The conversation from the simulated user's side: what the user said is its own
/// (`assistant`, as the JSON it answers with), the agent's replies come to it (`user`),
/// and it answers the last of them.
fn user_side(input: &SimInput<'_>) -> Vec<Message> {
    let mut side = Vec::new();
    for m in input.conversation {
        let text = m.text();
        match m.role.as_str() {
            "user" => side.push(Message::assistant(
                Value::String(json!({"message": text}).to_string()),
                None,
            )),
            "assistant" if !text.trim().is_empty() => side.push(Message::user(text)),
            _ => {}
        }
    }
    if side.last().is_none_or(|m| m.role != "user") {
        side.push(Message::user(if !input.last_response.trim().is_empty() {
            input.last_response.to_string()
        } else if input.conversation.is_empty() {
            "(The conversation has not started yet: write your first message to the assistant.)"
                .to_string()
        } else {
            "(The assistant said nothing.)".to_string()
        }));
    }
    side
}

/// What the simulator is asked: its instructions (persona, goal, rules), the
/// conversation from the user's side ([`user_side`]), and, for an agent, the seed's
/// simulator input.
/// Pending checkpoints are shown only with `show_checkpoints`, so that the simulator
/// cannot coach the agent.
fn question(input: &SimInput<'_>, show_checkpoints: bool, stop_signals: bool) -> Question {
    let pending = if show_checkpoints {
        input.pending.as_deref()
    } else {
        None
    };
    Question {
        instructions: system_prompt(
            input.profile,
            pending,
            (input.turn_number, input.max_turns),
            stop_signals,
        ),
        messages: user_side(input),
        input: input.last_response.to_string(),
        metadata: input.to_json(),
        repair: "Your answer had no message. Answer with JSON that has a non-empty \"message\"."
            .into(),
        wanted: "a message {message, goal_achieved, reasoning}",
        schema: answer_schema(),
        schema_name: "user_turn",
        model: ModelSettings::default(),
    }
}

/// The JSON schema of the simulator's answer.
fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "message": {"type": "string"},
            "goal_achieved": {"type": "boolean"},
            "reasoning": {"type": "string"}
        },
        "required": ["message", "goal_achieved"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(when: Option<&str>, say: Option<&str>, goal: bool) -> ScriptRule {
        ScriptRule {
            when: when.map(|w| regex::Regex::new(w).unwrap()),
            say: say.map(str::to_string),
            goal_achieved: goal,
        }
    }

    #[test]
    fn script_rules_answer_once_in_order() {
        let rules = vec![
            rule(Some("(?i)type"), Some("Travel, $500"), false),
            rule(None, Some("Yes"), false),
            rule(None, None, true),
        ];
        let mut used = vec![false; 3];
        assert_eq!(
            script_next(&rules, &mut used, "Hello")
                .unwrap()
                .message
                .as_deref(),
            Some("Yes")
        );
        assert_eq!(
            script_next(&rules, &mut used, "What type?")
                .unwrap()
                .message
                .as_deref(),
            Some("Travel, $500")
        );
        assert!(
            script_next(&rules, &mut used, "Done")
                .unwrap()
                .goal_achieved
        );
        assert!(matches!(
            script_next(&rules, &mut used, "More?"),
            Err(StepError::Broken(_))
        ));
    }

    fn answer(v: Value) -> Answer {
        Answer {
            value: v,
            truncated: false,
        }
    }

    #[test]
    fn answers_are_json_or_plain_text_from_agents_that_are_not_models() {
        let t = read_answer(
            &answer(json!(
                "{\"input\": \"The amount is $500\", \"goal_achieved\": false}"
            )),
            false,
        )
        .unwrap();
        assert_eq!(t.message.as_deref(), Some("The amount is $500"));
        let t = read_answer(&answer(json!("Just text")), true).unwrap();
        assert_eq!(t.message.as_deref(), Some("Just text"));
        assert!(
            read_answer(&answer(json!({"goal_achieved": true})), false)
                .unwrap()
                .goal_achieved
        );
    }

    /// What a model says is data: garbage is never a user's turn.
    #[test]
    fn unusable_answers_say_why() {
        let why = |v: Value, plain: bool| read_answer(&answer(v), plain).unwrap_err();
        assert_eq!(
            why(json!("Just text"), false),
            "the answer is not a JSON object"
        );
        assert_eq!(why(json!("{"), false), "the answer is not a JSON object");
        assert_eq!(why(json!("  "), true), "the answer is not a JSON object");
        assert_eq!(
            why(json!({"message": "", "goal_achieved": false}), false),
            "it has no message"
        );
        assert_eq!(
            why(json!({"message": {"action_name": "ask"}}), false),
            "its `message` is not a string"
        );
        assert_eq!(
            why(
                json!({"message": "What you say next", "goal_achieved": false}),
                false
            ),
            "its message repeats the instructions' example text"
        );
        assert_eq!(
            why(json!({"message": "fine", "goal_achieved": "no"}), false),
            "`goal_achieved` is not true or false"
        );
        let cut = Answer {
            value: json!("{\"message\": \"What type of expense is it"),
            truncated: true,
        };
        assert_eq!(
            read_answer(&cut, true).unwrap_err(),
            "the answer was cut off at the token limit"
        );
    }

    /// A model playing the user sees the conversation from its side: its own words as
    /// `assistant` (so it never continues the agent's reply), the agent's as `user`.
    #[test]
    fn the_simulator_sees_the_conversation_from_the_users_side() {
        let profile = Map::new();
        let conversation = vec![
            Message::user("Hi, I need to file an expense"),
            Message::assistant(json!("What type?"), None),
        ];
        let input = SimInput {
            test_id: "t",
            session_id: "s",
            conversation: &conversation,
            last_response: "What type?",
            turn_number: 2,
            max_turns: 5,
            reached: Vec::new(),
            pending: None,
            profile: &profile,
        };
        let side: Vec<(String, String)> = user_side(&input)
            .iter()
            .map(|m| (m.role.clone(), m.text()))
            .collect();
        assert_eq!(
            side,
            vec![
                (
                    "assistant".to_string(),
                    r#"{"message":"Hi, I need to file an expense"}"#.to_string()
                ),
                ("user".to_string(), "What type?".to_string()),
            ]
        );
        let first = SimInput {
            conversation: &[],
            last_response: "",
            turn_number: 1,
            ..input
        };
        let side = user_side(&first);
        assert_eq!(side.len(), 1);
        assert_eq!(side[0].role, "user");
        assert!(side[0].text().contains("has not started yet"));
    }

    #[test]
    fn the_prompt_hides_checkpoints_unless_asked() {
        let mut profile = Map::new();
        profile.insert("persona".into(), json!("New employee"));
        profile.insert("objective".into(), json!("Submit a $500 expense"));
        let p = system_prompt(&profile, None, (1, 5), false);
        assert!(p.contains("Persona: New employee") && p.contains("Goal: Submit a $500 expense"));
        assert!(!p.contains("still expects"));
        assert!(!p.contains("###"), "no stop signals unless asked: {p}");
        let p = system_prompt(
            &profile,
            Some(&["ask for the type".to_string()]),
            (1, 5),
            false,
        );
        assert!(p.contains("still expects the assistant to: ask for the type"));
    }

    #[test]
    fn known_and_unknown_information_are_told_apart_with_the_stop_signals() {
        let mut profile = Map::new();
        profile.insert("goal".into(), json!("Cancel reservation EHGLP3"));
        profile.insert("known_info".into(), json!("You are Emma Kim."));
        profile.insert("unknown_info".into(), json!("Your booking date."));
        profile.insert("task_instructions".into(), json!("Insist on a refund."));
        let p = system_prompt(&profile, None, (1, 30), true);
        assert!(p.contains("Goal: Cancel reservation EHGLP3\n"), "{p}");
        assert!(p.contains("Instructions: Insist on a refund.\n"), "{p}");
        assert!(p.contains("What you know: You are Emma Kim.\n"), "{p}");
        assert!(
            p.contains("What you do not know (if the assistant asks for it, say you do not know; never invent it): Your booking date.\n"),
            "{p}"
        );
        assert!(
            p.contains("your message is ###STOP###. If you are transferred to another agent, your message is ###TRANSFER###. If the scenario does not tell you enough to go on, your message is ###OUT-OF-SCOPE###."),
            "{p}"
        );
    }

    #[test]
    fn stop_signals_end_the_conversation_their_own_way() {
        let said = |m: &str| {
            signals(SimTurn {
                message: Some(m.into()),
                goal_achieved: false,
                reasoning: None,
                ending: None,
            })
        };
        let t = said("###STOP###");
        assert!(t.goal_achieved && t.message.is_none() && t.ending.is_none());
        let t = said("Thanks, that is all. ###STOP###");
        assert!(t.goal_achieved);
        assert_eq!(t.message.as_deref(), Some("Thanks, that is all."));
        let t = said("###TRANSFER###");
        assert_eq!(
            (t.ending, t.message, t.goal_achieved),
            (Some(Termination::Transfer), None, false)
        );
        let t = said("I give up ###OUT-OF-SCOPE###");
        assert_eq!((t.ending, t.message), (Some(Termination::OutOfScope), None));
        assert_eq!(
            said("Use ### for headings").message.as_deref(),
            Some("Use ### for headings")
        );
    }
}
