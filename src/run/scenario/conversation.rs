//! A scenario's `conversation` step: a simulated user (from `user_simulator`) talks to
//! the agent, turn by turn, until a termination condition holds or `max_turns` is
//! reached; `turn_evaluations` check every reply, `final_evaluations` the whole
//! conversation.

use serde_json::{json, Map, Value};

use crate::agent::{CaseScope, Session};
use crate::case::scenario::{
    Conversation, Evaluation, Evaluator, SatisfactionMethod, Termination, TerminationKind,
};
use crate::check::judge::JudgeRequest;
use crate::check::EvalEnv;
use crate::errors::StepError;
use crate::protocol::{Message, Reply, Request};
use crate::record::{CaseReport, TurnReport};
use crate::run::context::Context;
use crate::run::conversation::turn::{exchange, replied_turn};
use crate::run::outcome::{simulator_stop, Party, Stop};
use crate::run::roles::simulator::{SimInput, Simulator};

use super::evaluators::Verdict;

/// The words that end a conversation when a keyword condition lists none.
const SATISFIED: [&str; 6] = [
    "thank you",
    "thanks",
    "that helps",
    "perfect",
    "great",
    "resolved",
];
const SOLVED: [&str; 5] = [
    "follow these steps",
    "here's how",
    "here is how",
    "the solution",
    "to fix this",
];
const ESCALATE: [&str; 6] = [
    "escalate",
    "supervisor",
    "manager",
    "human agent",
    "specialist",
    "transfer you",
];

/// How a conversation ended.
pub(super) struct Ended {
    /// The agent's last reply.
    pub(super) last: Reply,
    /// Agent turns played.
    pub(super) turns: u32,
    /// The termination condition that held, or `max_turns`.
    pub(super) reason: String,
    /// Whether it ended before `max_turns`.
    pub(super) early: bool,
}

/// What the conversation step needs from the scenario runner.
pub(super) struct Talk<'a> {
    pub(super) case: &'a crate::case::Case,
    pub(super) session_id: &'a str,
    pub(super) at: &'a str,
    pub(super) ctx: &'a Context,
    pub(super) scope: &'a CaseScope,
    pub(super) env: &'a EvalEnv<'a>,
    /// `--simulator`, when given.
    pub(super) simulator: Option<&'a str>,
    /// The request's `setup` (the scenario's mocks), when sent.
    pub(super) setup: Option<Value>,
    /// The environment folder, where file evaluators look.
    pub(super) workdir: &'a std::path::Path,
}

/// Plays the conversation. Every agent turn is pushed to `report` (numbered from
/// `next_turn`), with its turn evaluations; `history` is the whole conversation.
#[expect(
    clippy::too_many_arguments,
    reason = "the scenario loop threads its state; issue 27 makes one conversation driver own it"
)]
pub(super) async fn run(
    talk: &Talk<'_>,
    conv: &Conversation,
    first: Option<&str>,
    session: &mut Session,
    history: &mut Vec<Message>,
    next_turn: &mut u32,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<Ended, Stop> {
    let spec = crate::case::Simulator {
        use_: None,
        script: Vec::new(),
        show_checkpoints: false,
        stop_signals: false,
        profile: profile(conv),
        model: conv.simulator.model.clone(),
        raw: Value::Null,
    };
    *phase = format!("starting the simulator of {}", talk.at);
    let mut sim = Simulator::start(talk.ctx, &spec, talk.simulator, talk.scope)
        .await
        .map_err(|e| Stop::step(talk.at, e).by(Party::Simulator))?;
    let ended = play(
        talk,
        conv,
        first,
        &spec.profile,
        &mut sim,
        session,
        history,
        next_turn,
        report,
        phase,
    )
    .await;
    sim.close().await;
    ended
}

/// The simulated user's profile, as the simulator reads it.
fn profile(conv: &Conversation) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("persona".into(), json!(conv.simulator.persona));
    p.insert("objective".into(), json!(conv.simulator.objective));
    for (k, v) in &conv.simulator.profile {
        p.insert(k.clone(), v.clone());
    }
    p
}

#[expect(
    clippy::too_many_arguments,
    reason = "the scenario loop threads its state; issue 27 makes one conversation driver own it"
)]
async fn play(
    talk: &Talk<'_>,
    conv: &Conversation,
    first: Option<&str>,
    profile: &Map<String, Value>,
    sim: &mut Simulator,
    session: &mut Session,
    history: &mut Vec<Message>,
    next_turn: &mut u32,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<Ended, Stop> {
    let at = talk.at;
    // The conversation's own limit, within the case's.
    let deadline = talk
        .env
        .deadline
        .min(tokio::time::Instant::now() + conv.total_timeout);
    let mut replies: Vec<String> = Vec::new();
    let mut last: Option<Reply> = None;
    let mut pending_first = first.map(str::to_string);
    for k in 1..=conv.max_turns {
        // 1. The user speaks: the step's `input` first, then the simulator.
        let (said, source, goal, reasoning) = match pending_first.take() {
            Some(text) => (text, "initial", false, None),
            None => {
                *phase = format!("waiting for the simulator's message for turn {k} of {at}");
                let input = SimInput {
                    test_id: &talk.case.id,
                    session_id: talk.session_id,
                    conversation: history,
                    last_response: replies.last().map(String::as_str).unwrap_or(""),
                    turn_number: k,
                    max_turns: conv.max_turns,
                    reached: Vec::new(),
                    pending: None,
                    profile,
                };
                let next = sim
                    .next(&input, deadline)
                    .await
                    .map_err(|e| simulator_stop(&format!("{at}: turn {k}"), e))?;
                match next.message {
                    Some(m) => (m, "simulated", next.goal_achieved, next.reasoning),
                    // The user has nothing more to say: their goal is met.
                    None => {
                        return Ok(ended(last, k - 1, "goal_achieved", conv));
                    }
                }
            }
        };
        // 2. The agent answers, within the per-turn limit.
        history.push(Message::user(said.clone()));
        let turn = *next_turn;
        let request = Request {
            session_id: talk.session_id.to_string(),
            test_id: talk.case.id.clone(),
            turn,
            input: said.clone(),
            messages: history.clone(),
            options: crate::run::conversation::turn::merged_options(&talk.case.options, &None),
            metadata: talk.env.metadata.clone(),
            attachments: Vec::new(),
            setup: talk.setup.clone(),
        };
        let answer = tokio::time::timeout(
            conv.timeout_per_turn,
            exchange(session, &request, source, report, phase),
        )
        .await;
        let (reply, latency) = match answer {
            Ok(r) => r?,
            Err(_) => {
                report.turns.push(TurnReport {
                    turn,
                    input: said,
                    input_source: source.into(),
                    duration_ms: conv.timeout_per_turn.as_millis() as u64,
                    error: Some(format!(
                        "the agent did not reply within timeout_per_turn_ms ({} ms)",
                        conv.timeout_per_turn.as_millis()
                    )),
                    ..TurnReport::default()
                });
                return Err(Stop::error(format!(
                    "{at}: turn {k}: the agent did not reply within timeout_per_turn_ms ({} ms)",
                    conv.timeout_per_turn.as_millis()
                )));
            }
        };
        *next_turn += 1;
        history.push(reply.to_message());
        let mut record = replied_turn(turn, &said, source, &reply, latency, &talk.ctx.input_tools);
        record.reasoning = reasoning;
        // 3. This reply's turn evaluations.
        *phase = format!("evaluating turn {k} of {at}");
        let subject = crate::check::Subject {
            reply: &reply,
            input: &said,
            conversation: history,
            latency: std::slice::from_ref(&latency),
        };
        let names = super::steps::trajectory(std::slice::from_ref(&record), turn);
        let result = super::evaluators::StepResult {
            duration_ms: latency.reply_ms,
            trajectory: &names,
        };
        let (verdicts, broken) = super::steps::evaluate_all(
            &conv.turn_evaluations,
            subject,
            &result,
            talk.workdir,
            talk.env,
            Some((history.as_slice(), k)),
        )
        .await;
        record.assertions = verdicts;
        record.error = broken.as_ref().map(ToString::to_string);
        report.turns.push(record);
        if let Some(e) = broken {
            return Err(Stop::step(&format!("{at}: turn {k}"), e));
        }
        // 4. The termination conditions, in the order written.
        let text = reply.output_text();
        *phase = format!("checking the termination conditions after turn {k} of {at}");
        let stop = terminates(
            talk,
            &conv.termination,
            k,
            conv.max_turns,
            &said,
            &text,
            goal,
            &replies,
            history,
        )
        .await
        .map_err(|e| Stop::step(&format!("{at}: turn {k}: termination"), e))?;
        replies.push(text);
        last = Some(reply);
        if let Some(reason) = stop {
            return Ok(ended(last, k, reason, conv));
        }
    }
    Ok(ended(last, conv.max_turns, "max_turns", conv))
}

fn ended(last: Option<Reply>, turns: u32, reason: &str, conv: &Conversation) -> Ended {
    Ended {
        last: last.unwrap_or_default(),
        turns,
        reason: reason.to_string(),
        early: turns < conv.max_turns,
    }
}

fn mentions(text: &str, words: &[String], defaults: &[&str]) -> bool {
    let low = text.to_lowercase();
    if words.is_empty() {
        defaults.iter().any(|w| low.contains(w))
    } else {
        words.iter().any(|w| low.contains(&w.to_lowercase()))
    }
}

/// Text with its case and spacing made alike, to tell a repeated reply.
fn same_text(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    norm(a) == norm(b)
}

/// The first condition that holds after turn `k`, by its type's name.
#[expect(
    clippy::too_many_arguments,
    reason = "the scenario loop threads its state; issue 27 makes one conversation driver own it"
)]
async fn terminates(
    talk: &Talk<'_>,
    conditions: &[Termination],
    k: u32,
    max: u32,
    user: &str,
    agent: &str,
    goal: bool,
    earlier: &[String],
    history: &[Message],
) -> Result<Option<&'static str>, StepError> {
    for c in conditions {
        let holds = match c.kind {
            TerminationKind::MaxTurnsReached => k >= max,
            TerminationKind::UserExpressesSatisfaction => mentions(user, &c.keywords, &SATISFIED),
            TerminationKind::AgentProvidesSolution => mentions(agent, &c.keywords, &SOLVED),
            TerminationKind::EscalationNeeded => mentions(agent, &c.keywords, &ESCALATE),
            TerminationKind::GoalAchieved => goal,
            // The agent said the same as in one of its two replies before.
            TerminationKind::ConversationStuck => {
                earlier.iter().rev().take(2).any(|e| same_text(e, agent))
            }
            TerminationKind::CustomCondition => {
                let Some((prompt, threshold)) = &c.judge else {
                    continue;
                };
                let verdict = judge(talk.env, prompt, agent, history).await?;
                verdict_score(&verdict) >= *threshold
            }
        };
        if holds {
            return Ok(Some(name(c.kind)));
        }
    }
    Ok(None)
}

fn name(kind: TerminationKind) -> &'static str {
    let i = [
        TerminationKind::MaxTurnsReached,
        TerminationKind::UserExpressesSatisfaction,
        TerminationKind::AgentProvidesSolution,
        TerminationKind::ConversationStuck,
        TerminationKind::EscalationNeeded,
        TerminationKind::GoalAchieved,
        TerminationKind::CustomCondition,
    ]
    .iter()
    .position(|k| *k == kind)
    .unwrap_or(0);
    TerminationKind::NAMES[i]
}

/// A judge's verdict on `criteria` over the conversation.
async fn judge(
    env: &EvalEnv<'_>,
    criteria: &str,
    last: &str,
    history: &[Message],
) -> Result<crate::check::judge::JudgeVerdict, StepError> {
    let Some(judges) = env.judges else {
        return Err(StepError::Broken("no judge is available here".into()));
    };
    let request = JudgeRequest {
        conversation: history.to_vec(),
        ..JudgeRequest::new(criteria, last)
    };
    judges.judge(None, &request).await
}

/// A verdict's confidence: its score, else 1 for a pass and 0 for a fail.
fn verdict_score(v: &crate::check::judge::JudgeVerdict) -> f64 {
    v.score.unwrap_or(if v.passed { 1.0 } else { 0.0 })
}

/// The conversation evaluators, over the whole conversation (`turns` agent turns).
pub(super) async fn evaluate_conversation(
    e: &Evaluation,
    talk_env: &EvalEnv<'_>,
    history: &[Message],
    turns: u32,
) -> Result<Verdict, StepError> {
    let user_words: Vec<String> = history
        .iter()
        .filter(|m| m.role == "user")
        .map(Message::text)
        .collect();
    let agent_words: Vec<String> = history
        .iter()
        .filter(|m| m.role == "assistant")
        .map(Message::text)
        .collect();
    let last = agent_words.last().cloned().unwrap_or_default();
    let judged = |criteria: String| {
        let last = last.clone();
        async move { judge(talk_env, &criteria, &last, history).await }
    };
    Ok(match &e.check {
        Evaluator::ConversationLength {
            min,
            max,
            optimal,
            target_range,
        } => {
            let (lo, hi) = match target_range {
                Some((a, b)) => (Some(*a), Some(*b)),
                None => (*min, *max),
            };
            let ok = lo.is_none_or(|lo| turns >= lo) && hi.is_none_or(|hi| turns <= hi);
            let bounds = match (lo, hi) {
                (Some(a), Some(b)) => format!("{a}..{b}"),
                (Some(a), None) => format!("at least {a}"),
                (None, Some(b)) => format!("at most {b}"),
                (None, None) => "any".into(),
            };
            let optimal = optimal
                .map(|o| format!(" (optimal {o})"))
                .unwrap_or_default();
            Verdict {
                passed: ok,
                label: format!("conversation_length {bounds} turns"),
                message: format!("the conversation took {turns} turn(s){optimal}"),
                judgment: None,
            }
        }
        Evaluator::UserSatisfaction {
            threshold,
            positive,
            negative,
            method: SatisfactionMethod::KeywordAnalysis,
        } => {
            let pos: Vec<String> = if positive.is_empty() {
                SATISFIED.iter().map(|s| s.to_string()).collect()
            } else {
                positive.clone()
            };
            let neg: Vec<String> = if negative.is_empty() {
                [
                    "frustrated",
                    "annoyed",
                    "not helpful",
                    "useless",
                    "angry",
                    "disappointed",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect()
            } else {
                negative.clone()
            };
            let count = |words: &[String]| {
                user_words
                    .iter()
                    .map(|u| {
                        let low = u.to_lowercase();
                        words
                            .iter()
                            .filter(|w| low.contains(&w.to_lowercase()))
                            .count()
                    })
                    .sum::<usize>()
            };
            let (p, n) = (count(&pos), count(&neg));
            // No indicator either way reads as neutral.
            let score = if p + n == 0 {
                0.5
            } else {
                p as f64 / (p + n) as f64
            };
            Verdict {
                passed: score >= *threshold,
                label: format!("user_satisfaction ≥ {threshold} (keyword_analysis)"),
                message: format!("{p} positive and {n} negative indicator(s) in the user's words: score {score:.2}"),
                judgment: None,
            }
        }
        Evaluator::UserSatisfaction {
            threshold, method, ..
        } => {
            let (how, name) = if *method == SatisfactionMethod::SentimentAnalysis {
                (
                    "Judge how the user's sentiment progresses through the conversation",
                    "sentiment_analysis",
                )
            } else {
                (
                    "Judge how satisfied the user is at the end of the conversation",
                    "llm_judge",
                )
            };
            let v = judged(format!(
                "{how}. Score 1 for fully satisfied, 0 for not at all."
            ))
            .await?;
            by_score(
                v,
                *threshold,
                format!("user_satisfaction ≥ {threshold} ({name})"),
                String::new(),
            )
        }
        Evaluator::ConversationFlow {
            patterns,
            threshold,
        } => {
            let described: Vec<String> = patterns
                .iter()
                .map(|p| format!("{p} ({})", pattern_text(p)))
                .collect();
            let v = judged(format!(
                "The conversation shows each of these patterns: {}. Score the share of them it shows.",
                described.join("; ")
            ))
            .await?;
            by_score(
                v,
                *threshold,
                format!("conversation_flow {} ≥ {threshold}", patterns.join(", ")),
                String::new(),
            )
        }
        Evaluator::ContextRetention {
            memory_of,
            retention_turns,
            threshold,
        } => {
            // Alongside the judge, a count anyone can check: which items the agent's
            // later replies still mention.
            let from = retention_turns.unwrap_or(1).saturating_sub(1) as usize;
            let later = agent_words
                .iter()
                .skip(from.min(agent_words.len().saturating_sub(1)))
                .map(|s| s.to_lowercase())
                .collect::<Vec<_>>()
                .join("\n");
            let mentioned: Vec<&String> = memory_of
                .iter()
                .filter(|m| later.contains(&m.to_lowercase()))
                .collect();
            let v = judged(format!(
                "The assistant keeps in mind, through the conversation, each of: {}. Score the share it retained.",
                memory_of.join("; ")
            ))
            .await?;
            let items: Vec<String> = memory_of.iter().map(|m| format!("{m:?}")).collect();
            by_score(
                v,
                *threshold,
                format!("context_retention of {} ≥ {threshold}", items.join(", ")),
                format!("; mentioned later: {}/{}", mentioned.len(), memory_of.len()),
            )
        }
        _ => return Err(StepError::Broken("not a conversation evaluator".into())),
    })
}

/// A judged evaluator's verdict: its score against `threshold`, the judge's words kept.
fn by_score(
    v: crate::check::judge::JudgeVerdict,
    threshold: f64,
    label: String,
    extra: String,
) -> Verdict {
    let score = verdict_score(&v);
    Verdict {
        passed: score >= threshold,
        label,
        message: format!("score {score:.2}: {}{extra}", v.reason),
        judgment: Some(crate::record::Judgment {
            reason: v.reason,
            score: Some(score),
            suggestions: v.suggestions,
        }),
    }
}

/// What a `conversation_flow` pattern means, for the judge.
fn pattern_text(p: &str) -> &'static str {
    match p {
        "question_then_answer" => "the agent asks a question and the user answers it",
        "problem_then_solution" => "the user states a problem and the agent provides a solution",
        "clarification_cycle" => "several clarification exchanges",
        "empathy_then_solution" => "the agent shows empathy before providing a solution",
        _ => "the agent escalates appropriately when needed",
    }
}

/// The conversation's end, for the step's last turn record.
pub(super) fn ending(e: &Ended, max_turns: u32) -> crate::record::Ending {
    crate::record::Ending {
        termination: e.reason.clone(),
        turns: e.turns,
        max_turns,
        ended_early: e.early,
    }
}
