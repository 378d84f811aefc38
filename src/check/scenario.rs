//! An ElizaOS scenario's checks: every evaluation of a step (agentest assertions under
//! the scenario's names, the file, command, trajectory and time evaluators, and the
//! conversation evaluators), the termination conditions of a conversation step, and the
//! scenario's judgment over all of them.

use std::path::Path;

use serde_json::{Map, Value};

use crate::case::scenario::{
    EndCondition, Evaluation, Evaluator, Judgment, SatisfactionMethod, TerminationKind,
};
use crate::case::{JudgeChoice, ModelSettings};
use crate::check::each::check_all;
use crate::check::evaluators::{self, StepResult};
use crate::check::judge::JudgeRequest;
use crate::check::jury::Decision;
use crate::check::{EvalEnv, Subject, Verdict};
use crate::errors::StepError;
use crate::protocol::Message;
use crate::record::{AssertionReport, CaseReport, Status, Termination, TurnReport};

/// The words that end a conversation when a keyword condition lists none.
const SATISFIED: [&str; 6] = [
    "thank you",
    "thanks",
    "that helps",
    "perfect",
    "great",
    "resolved",
];
/// The words that read as a dissatisfied user when `negative_indicators` lists none.
const DISSATISFIED: [&str; 6] = [
    "frustrated",
    "annoyed",
    "not helpful",
    "useless",
    "angry",
    "disappointed",
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

/// Evaluates every evaluation of a step (all of them, so the report shows each). The
/// second value is set when one could not be evaluated. `conversation` is the whole
/// conversation and its agent turns, for the conversation evaluators.
pub(crate) async fn evaluate_all(
    list: &[Evaluation],
    subject: Subject<'_>,
    result: &StepResult<'_>,
    dir: &Path,
    env: &EvalEnv<'_>,
    conversation: Option<(&[Message], u32)>,
) -> (Vec<AssertionReport>, Option<StepError>) {
    let mut out = Vec::with_capacity(list.len());
    let mut broken = None;
    for e in list {
        let spec = match &e.raw {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        let verdict = match &e.check {
            Evaluator::Assertion(a) => {
                let (mut verdicts, b) = check_all(std::slice::from_ref(a), subject, env).await;
                for v in &mut verdicts {
                    // Reported as the scenario wrote it (`string_contains`, not `contains`).
                    v.spec = spec.clone();
                    if let Some(rest) = v.label.strip_prefix(a.type_name()) {
                        v.label = format!("{}{rest}", e.type_name);
                    }
                }
                out.extend(verdicts);
                if let Some(b) = b {
                    broken.get_or_insert(b);
                }
                continue;
            }
            Evaluator::ConversationLength { .. }
            | Evaluator::ConversationFlow { .. }
            | Evaluator::UserSatisfaction { .. }
            | Evaluator::ContextRetention { .. } => match conversation {
                Some((history, turns)) => evaluate_conversation(e, env, history, turns).await,
                None => Err(StepError::Broken(format!(
                    "`{}` judges a conversation, and this step has none",
                    e.type_name
                ))),
            },
            other => evaluators::check(other, result, dir, env.deadline).await,
        };
        match verdict {
            Ok(v) => out.push(AssertionReport {
                spec,
                passed: v.passed,
                message: v.detail.unwrap_or_else(|| v.label.clone()),
                label: v.label,
                judgment: v.judgment,
            }),
            Err(err) => {
                out.push(AssertionReport {
                    spec,
                    passed: Some(false),
                    label: e.type_name.clone(),
                    message: err.to_string(),
                    judgment: None,
                });
                broken.get_or_insert(err);
            }
        }
    }
    (out, broken)
}

/// The tools called and actions reported in the turns from `first` on.
pub(crate) fn trajectory(turns: &[TurnReport], first: u32) -> Vec<String> {
    turns
        .iter()
        .filter(|t| t.turn >= first)
        .flat_map(|t| {
            t.tool_calls
                .iter()
                .map(|c| c.name.clone())
                .chain(t.actions.iter().cloned())
        })
        .collect()
}

/// `judgment.strategy` over every evaluation of every step: `all_pass` fails on the
/// first failed one; `any_pass` passes when one passed (and fails with none to pass).
pub(crate) fn judge(judgment: Judgment, report: &mut CaseReport) {
    let at = |t: &TurnReport| {
        t.step
            .as_ref()
            .map_or_else(|| format!("turn {}", t.turn), ToString::to_string)
    };
    let all: Vec<(&TurnReport, &AssertionReport)> = report
        .turns
        .iter()
        .flat_map(|t| t.assertions.iter().map(move |a| (t, a)))
        .collect();
    let failure = match judgment {
        Judgment::AllPass => all
            .iter()
            .find(|(_, a)| a.failed())
            .map(|(t, a)| format!("{}: {}: {} (judgment: all_pass)", at(t), a.label, a.message)),
        Judgment::AnyPass if all.iter().any(|(_, a)| a.held()) => None,
        // An undecided evaluation may be the one that passes: the case is inconclusive.
        Judgment::AnyPass if all.iter().any(|(_, a)| a.inconclusive()) => None,
        Judgment::AnyPass => Some(match all.first() {
            Some((t, a)) => format!(
                "no evaluation passed (judgment: any_pass); the first, {}: {}: {}",
                at(t),
                a.label,
                a.message
            ),
            None => "no evaluation passed (judgment: any_pass): the scenario has none".into(),
        }),
    };
    if let Some(f) = failure {
        report.status = Status::Failed;
        report.error = Some(f);
        return;
    }
    // Nothing failed; under `all_pass` an undecided evaluation, under `any_pass` an
    // undecided one with none passed, leaves the case inconclusive.
    let decided_by_a_pass =
        matches!(judgment, Judgment::AnyPass) && all.iter().any(|(_, a)| a.held());
    if let (false, true, Some((t, a))) = (
        decided_by_a_pass,
        report.status == Status::Passed,
        all.iter().find(|(_, a)| a.inconclusive()),
    ) {
        report.status = Status::Inconclusive;
        report.error = Some(format!("{}: {}: {}", at(t), a.label, a.message));
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

/// The run's judge's (or jury's) verdict on `criteria` over the conversation.
async fn judged_by(
    env: &EvalEnv<'_>,
    criteria: &str,
    last: &str,
    history: &[Message],
) -> Result<Decision, StepError> {
    let Some(judges) = env.judges else {
        return Err(StepError::Broken("no judge is available here".into()));
    };
    let request = JudgeRequest {
        conversation: history.to_vec(),
        ..JudgeRequest::new(criteria, last)
    };
    let (choice, model) = (JudgeChoice::default(), ModelSettings::default());
    let panel = judges.panel(&choice, &model).await?;
    crate::check::jury::decide(judges, &panel, &request)
        .await
        .map_err(|u| u.error)
}

/// A verdict's confidence: its score, else 1 for a pass and 0 for a fail; `None` when
/// the judge could not decide.
fn verdict_score(v: &Decision) -> Option<f64> {
    v.passed
        .map(|p| v.judgment.score.unwrap_or(if p { 1.0 } else { 0.0 }))
}

/// What the conversation evaluators read: the user's and the agent's words, and the
/// judge over the whole conversation.
struct Talk<'a> {
    env: &'a EvalEnv<'a>,
    history: &'a [Message],
    user_words: Vec<String>,
    agent_words: Vec<String>,
}

impl<'a> Talk<'a> {
    fn new(env: &'a EvalEnv<'a>, history: &'a [Message]) -> Self {
        let words = |role: &str| -> Vec<String> {
            history
                .iter()
                .filter(|m| m.role == role)
                .map(Message::text)
                .collect()
        };
        Talk {
            env,
            history,
            user_words: words("user"),
            agent_words: words("assistant"),
        }
    }

    /// The judge's verdict on `criteria`, over the conversation and its last reply.
    async fn judged(&self, criteria: String) -> Result<Decision, StepError> {
        let last = self.agent_words.last().cloned().unwrap_or_default();
        judged_by(self.env, &criteria, &last, self.history).await
    }
}

/// The conversation evaluators, over the whole conversation (`turns` agent turns).
async fn evaluate_conversation(
    e: &Evaluation,
    env: &EvalEnv<'_>,
    history: &[Message],
    turns: u32,
) -> Result<Verdict, StepError> {
    let talk = Talk::new(env, history);
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
            conversation_length(turns, (lo, hi), *optimal)
        }
        Evaluator::UserSatisfaction {
            threshold,
            positive,
            negative,
            method: SatisfactionMethod::KeywordAnalysis,
        } => keyword_satisfaction(&talk.user_words, *threshold, positive, negative),
        Evaluator::UserSatisfaction {
            threshold, method, ..
        } => judged_satisfaction(&talk, *method, *threshold).await?,
        Evaluator::ConversationFlow {
            patterns,
            threshold,
        } => conversation_flow(&talk, patterns, *threshold).await?,
        Evaluator::ContextRetention {
            memory_of,
            retention_turns,
            threshold,
        } => context_retention(&talk, memory_of, *retention_turns, *threshold).await?,
        _ => return Err(StepError::Broken("not a conversation evaluator".into())),
    })
}

/// `conversation_length`: the agent turns within `lo..hi`.
fn conversation_length(
    turns: u32,
    (lo, hi): (Option<u32>, Option<u32>),
    optimal: Option<u32>,
) -> Verdict {
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
        passed: Some(ok),
        label: format!("conversation_length {bounds} turns"),
        detail: Some(format!("the conversation took {turns} turn(s){optimal}")),
        judgment: None,
        broken: None,
    }
}

/// `user_satisfaction` by `keyword_analysis`: the share of positive indicators among
/// all indicators in the user's words (none either way reads as neutral, 0.5).
fn keyword_satisfaction(
    user_words: &[String],
    threshold: f64,
    positive: &[String],
    negative: &[String],
) -> Verdict {
    let or_default = |given: &[String], default: &[&str]| -> Vec<String> {
        if given.is_empty() {
            default.iter().map(|s| s.to_string()).collect()
        } else {
            given.to_vec()
        }
    };
    let pos = or_default(positive, &SATISFIED);
    let neg = or_default(negative, &DISSATISFIED);
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
    let score = if p + n == 0 {
        0.5
    } else {
        p as f64 / (p + n) as f64
    };
    Verdict {
        passed: Some(score >= threshold),
        label: format!("user_satisfaction ≥ {threshold} (keyword_analysis)"),
        detail: Some(format!(
            "{p} positive and {n} negative indicator(s) in the user's words: score {score:.2}"
        )),
        judgment: None,
        broken: None,
    }
}

/// `user_satisfaction` by `sentiment_analysis` or `llm_judge`: the judge's score.
async fn judged_satisfaction(
    talk: &Talk<'_>,
    method: SatisfactionMethod,
    threshold: f64,
) -> Result<Verdict, StepError> {
    let (how, name) = if method == SatisfactionMethod::SentimentAnalysis {
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
    let v = talk
        .judged(format!(
            "{how}. Score 1 for fully satisfied, 0 for not at all."
        ))
        .await?;
    Ok(by_score(
        v,
        threshold,
        format!("user_satisfaction ≥ {threshold} ({name})"),
        String::new(),
    ))
}

/// `conversation_flow`: the judge's score for the share of the patterns it shows.
async fn conversation_flow(
    talk: &Talk<'_>,
    patterns: &[String],
    threshold: f64,
) -> Result<Verdict, StepError> {
    let described: Vec<String> = patterns
        .iter()
        .map(|p| format!("{p} ({})", pattern_text(p)))
        .collect();
    let v = talk
        .judged(format!(
            "The conversation shows each of these patterns: {}. Score the share of them it shows.",
            described.join("; ")
        ))
        .await?;
    Ok(by_score(
        v,
        threshold,
        format!("conversation_flow {} ≥ {threshold}", patterns.join(", ")),
        String::new(),
    ))
}

/// `context_retention`: the judge's score, with a count anyone can check beside it:
/// which items the agent's later replies still mention.
async fn context_retention(
    talk: &Talk<'_>,
    memory_of: &[String],
    retention_turns: Option<u32>,
    threshold: f64,
) -> Result<Verdict, StepError> {
    let agent_words = &talk.agent_words;
    let from = retention_turns.unwrap_or(1).saturating_sub(1) as usize;
    let later = agent_words
        .iter()
        .skip(from.min(agent_words.len().saturating_sub(1)))
        .map(|s| s.to_lowercase())
        .collect::<Vec<_>>()
        .join("\n");
    let mentioned = memory_of
        .iter()
        .filter(|m| later.contains(&m.to_lowercase()))
        .count();
    let v = talk
        .judged(format!(
            "The assistant keeps in mind, through the conversation, each of: {}. Score the share it retained.",
            memory_of.join("; ")
        ))
        .await?;
    let items: Vec<String> = memory_of.iter().map(|m| format!("{m:?}")).collect();
    Ok(by_score(
        v,
        threshold,
        format!("context_retention of {} ≥ {threshold}", items.join(", ")),
        format!("; mentioned later: {mentioned}/{}", memory_of.len()),
    ))
}

/// A judged evaluator's verdict: its score against `threshold` (inconclusive when the
/// judge could not decide), the judge's words kept.
fn by_score(v: Decision, threshold: f64, label: String, extra: String) -> Verdict {
    let score = verdict_score(&v);
    let why = crate::check::assertion::explain(&v);
    let mut judgment = v.judgment;
    judgment.score = score.or(judgment.score);
    Verdict {
        passed: score.map(|s| s >= threshold),
        label,
        detail: Some(match score {
            Some(score) => format!("score {score:.2}: {}{extra}", judgment.reason),
            None => format!("inconclusive: {why}{extra}"),
        }),
        judgment: Some(judgment),
        broken: None,
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

/// What a conversation step's termination conditions see after one of its turns.
pub(crate) struct AfterTurn<'a> {
    /// The turn just played, from 1, and the step's `max_turns`.
    pub(crate) k: u32,
    pub(crate) max: u32,
    /// What the user said, and the agent's reply.
    pub(crate) user: &'a str,
    pub(crate) agent: &'a str,
    /// The simulated user said its goal is achieved.
    pub(crate) goal: bool,
    /// The agent's earlier replies in the step.
    pub(crate) earlier: &'a [String],
    pub(crate) history: &'a [Message],
}

/// The first condition that holds after a turn, in the order written.
pub(crate) async fn first_condition(
    conditions: &[EndCondition],
    turn: &AfterTurn<'_>,
    env: &EvalEnv<'_>,
) -> Result<Option<Termination>, StepError> {
    for c in conditions {
        let holds = match c.kind {
            TerminationKind::MaxTurnsReached => turn.k >= turn.max,
            TerminationKind::UserExpressesSatisfaction => {
                mentions(turn.user, &c.keywords, &SATISFIED)
            }
            TerminationKind::AgentProvidesSolution => mentions(turn.agent, &c.keywords, &SOLVED),
            TerminationKind::EscalationNeeded => mentions(turn.agent, &c.keywords, &ESCALATE),
            TerminationKind::GoalAchieved => turn.goal,
            // The agent said the same as in one of its two replies before.
            TerminationKind::ConversationStuck => turn
                .earlier
                .iter()
                .rev()
                .take(2)
                .any(|e| crate::util::same_words(e, turn.agent)),
            TerminationKind::CustomCondition => {
                let Some((prompt, threshold)) = &c.judge else {
                    continue;
                };
                let verdict = judged_by(env, prompt, turn.agent, turn.history).await?;
                // A judge that cannot tell does not end the conversation.
                verdict_score(&verdict).is_some_and(|s| s >= *threshold)
            }
        };
        if holds {
            return Ok(Some(termination_of(c.kind)));
        }
    }
    Ok(None)
}

/// How a conversation that ends by a condition of this kind is reported.
fn termination_of(kind: TerminationKind) -> Termination {
    match kind {
        TerminationKind::MaxTurnsReached => Termination::MaxTurnsReached,
        TerminationKind::UserExpressesSatisfaction => Termination::UserExpressesSatisfaction,
        TerminationKind::AgentProvidesSolution => Termination::AgentProvidesSolution,
        TerminationKind::ConversationStuck => Termination::ConversationStuck,
        TerminationKind::EscalationNeeded => Termination::EscalationNeeded,
        TerminationKind::GoalAchieved => Termination::GoalAchieved,
        TerminationKind::CustomCondition => Termination::CustomCondition,
    }
}
