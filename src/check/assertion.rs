//! Evaluating compiled assertions against a reply.

use serde_json::{json, Value};

use crate::case::{
    Assertion, JsonPath, JsonType, Kind, SpanCount, SpanStatusWanted, ToolScope, ValueMatcher,
};
use crate::check::Scripts;
use crate::errors::{SelectError, StepError};
use crate::protocol::Message;
use crate::protocol::{Reply, ToolCall};
use crate::record::Judgment;
use crate::util::{clip, compact};
use crate::util::{json_eq, json_subset, tool_name_matches};

/// What an assertion looks at: one reply, in its conversation.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The reply under test.
    pub reply: &'a Reply,
    /// The user message that produced it.
    pub input: &'a str,
    /// The whole conversation, ending with the reply.
    pub conversation: &'a [Message],
    /// How long the agent took: for a turn's checks that turn's reply, for final
    /// checks every reply of the conversation. Empty when nothing was timed.
    pub latency: &'a [Latency],
}

/// How long the agent took over one reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    /// The turn.
    pub turn: u32,
    /// From sending the turn to the reply's first byte (or first token).
    pub first_token_ms: u64,
    /// From sending the turn to the whole reply.
    pub reply_ms: u64,
}

/// What evaluation may need beyond the reply: scripts, and the case's metadata for them.
pub struct EvalEnv<'a> {
    /// Script assertions resolve here.
    pub scripts: &'a Scripts,
    /// The case's metadata, passed to scripts.
    pub metadata: &'a Value,
    /// When the case must end.
    pub deadline: tokio::time::Instant,
    /// Judges for `agent` / `llm_judge` assertions.
    pub judges: Option<&'a dyn crate::check::jury::Judges>,
}

/// The outcome of one assertion.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Whether it held (after `negate`); `None`: its judge could not decide.
    pub passed: Option<bool>,
    /// A short description, like `contains "submitted"`.
    pub label: String,
    /// Why it failed (the custom `message` when given), with expected and actual.
    pub detail: Option<String>,
    /// A judge's reason, score and suggestions, pass or fail.
    pub judgment: Option<Judgment>,
    /// Why it could not be evaluated after all, when a jury could not decide: the
    /// check's error, with its jurors' votes in `judgment`.
    pub broken: Option<StepError>,
}

/// What a `script` assertion's script reads on stdin: the reply, the conversation, the
/// assertion's value, and the case's metadata with the assertion's own over it.
fn script_input(assertion: &Assertion, subject: Subject<'_>, env: &EvalEnv<'_>) -> Value {
    let raw = assertion.raw.value();
    let mut metadata = env.metadata.clone();
    if let (Some(Value::Object(extra)), Value::Object(m)) = (
        raw.get("options")
            .and_then(|o| o.get("metadata"))
            .or_else(|| raw.get("metadata")),
        &mut metadata,
    ) {
        for (k, v) in extra {
            m.insert(k.clone(), v.clone());
        }
    }
    serde_json::json!({
        "output": subject.reply.output_value(),
        "input": subject.input,
        "response": subject.reply,
        "conversation": subject.conversation,
        "value": raw.get("value").cloned().unwrap_or(Value::Null),
        "metadata": metadata,
    })
}

/// Evaluates one assertion. `Err` means it could not be evaluated (a script crashed, a
/// judge could not answer): that is never a pass or a fail.
pub async fn evaluate(
    a: &Assertion,
    subject: Subject<'_>,
    env: &EvalEnv<'_>,
) -> Result<Verdict, StepError> {
    let mut judgment = None;
    let (holds, label, why) = match &a.kind {
        Kind::Script { name } => {
            let input = script_input(a, subject, env);
            let (passed, message) = env.scripts.run(name, input, env.deadline).await?;
            (Some(passed), format!("script {name}"), message)
        }
        Kind::Judge { type_name, spec } => match judged(type_name, spec, subject, env).await? {
            Judged::Decided(passed, label, why, verdict) => {
                judgment = Some(verdict);
                (passed, label, why)
            }
            // A jury that lost too many jurors: an error, its votes kept.
            Judged::Broken(error, label, verdict) => {
                return Ok(Verdict {
                    passed: Some(false),
                    detail: Some(error.to_string()),
                    label,
                    judgment: Some(verdict),
                    broken: Some(error),
                })
            }
        },
        _ => {
            if let Some(why) = unevaluable(&a.kind, subject) {
                // A check that cannot look at the reply fails, negated or not: `negate`
                // must never turn "the reply has no JSON" into a pass.
                let label = a.kind.type_name().to_string();
                let detail = match &a.message {
                    Some(m) => format!("{m} ({why})"),
                    None => why,
                };
                return Ok(Verdict {
                    passed: Some(false),
                    label,
                    detail: Some(detail),
                    judgment: None,
                    broken: None,
                });
            }
            let (holds, label, why) = check(&a.kind, subject);
            (Some(holds), label, why)
        }
    };
    // Negating "cannot tell" still cannot tell.
    let passed = holds.map(|h| h != a.negate);
    let label = if a.negate {
        format!("not {label}")
    } else {
        label
    };
    let detail = match passed {
        Some(true) => None,
        Some(false) => Some(match &a.message {
            Some(m) => format!("{m} ({why})"),
            None if a.negate => format!("expected the opposite, but it held: {why}"),
            None => why,
        }),
        None => Some(format!("inconclusive: {why}")),
    };
    Ok(Verdict {
        passed,
        label,
        detail,
        judgment,
        broken: None,
    })
}

/// A judge assertion's outcome: a decision (whether it passed, the label, why, the
/// judgment), or a jury that could not decide (the error, the label, its votes).
enum Judged {
    Decided(Option<bool>, String, String, Judgment),
    Broken(StepError, String, Judgment),
}

/// A judge's (or a jury's) verdict on the reply (`agent` and `llm_judge` assertions):
/// whether it passed (`None`: inconclusive), the label, why, and the judgment the
/// report keeps.
async fn judged(
    type_name: &str,
    spec: &crate::case::JudgeSpec,
    subject: Subject<'_>,
    env: &EvalEnv<'_>,
) -> Result<Judged, StepError> {
    let crate::case::JudgeSpec {
        judges: choice,
        criteria,
        metadata,
        expected,
        capabilities,
        json_schema,
        model,
    } = spec;
    let Some(judges) = env.judges else {
        return Err(StepError::Broken(format!(
            "`{type_name}` assertions need a judge, and none is available here"
        )));
    };
    let request = crate::check::judge::JudgeRequest {
        criteria: criteria.clone(),
        output: subject.reply.output_text(),
        input: subject.input.to_string(),
        conversation: subject.conversation.to_vec(),
        metadata: metadata.clone(),
        expected: expected.clone(),
        capabilities: capabilities.clone(),
        json_schema: json_schema.clone(),
        model: model.clone(),
        // Only a traced turn's: what a judge of an untraced agent is asked (and
        // so its recorded calls) stays as it was.
        tool_calls: if subject.reply.traced {
            subject.reply.tool_calls.clone()
        } else {
            Vec::new()
        },
        trace: subject.reply.trace_summary.clone(),
    };
    let panel = judges.panel(choice, model).await?;
    let label = format!("{type_name} {}", quote(&clip(criteria)));
    let decision = match crate::check::jury::decide(judges, &panel, &request).await {
        Ok(d) => d,
        Err(crate::check::jury::Undecided {
            error,
            judgment: Some(j),
        }) => return Ok(Judged::Broken(error, label, *j)),
        Err(u) => return Err(u.error),
    };
    let why = explain(&decision);
    Ok(Judged::Decided(
        decision.passed,
        label,
        why,
        decision.judgment,
    ))
}

/// What a report says of a judgment: `judge: reason (score s); suggestions: ...`, and
/// why a verdict that does not count was set aside.
pub(crate) fn explain(decision: &crate::check::jury::Decision) -> String {
    let j = &decision.judgment;
    // The built-in judge keeps its old name in messages; others say who they are.
    let judge = match j.judge.as_deref() {
        None | Some("llm") => "judge",
        Some(other) => other.strip_prefix("agents:").unwrap_or(other),
    };
    let reason = if j.reason.is_empty() {
        "no reason given"
    } else {
        &j.reason
    };
    // A jury's reason names it already.
    let mut why = if j.jurors.is_empty() {
        format!("{judge}: {reason}")
    } else {
        reason.to_string()
    };
    if let Some(score) = j.score {
        why.push_str(&format!(" (score {score})"));
    }
    if !j.suggestions.is_empty() {
        why.push_str(&format!("; suggestions: {}", j.suggestions.join("; ")));
    }
    if let Some(u) = &j.uncalibrated {
        why.push_str(&format!("; the verdict does not count: {u}"));
    }
    for v in j.jurors.iter().filter(|v| v.uncalibrated.is_some()) {
        why.push_str(&format!(
            "; {}'s vote does not count: {}",
            v.judge,
            v.uncalibrated.as_deref().unwrap_or_default()
        ));
    }
    why
}

/// Why a structured check cannot be made on this reply at all, when it cannot.
fn unevaluable(kind: &Kind, subject: Subject<'_>) -> Option<String> {
    match kind {
        Kind::JsonPath { path, .. }
        | Kind::Type {
            path: Some(path), ..
        } => select(path, subject.reply).err().map(|e| e.to_string()),
        Kind::Latency { .. } if subject.latency.is_empty() => {
            Some("cannot evaluate latency: no reply of the agent was timed here".into())
        }
        _ => None,
    }
}

/// `latency`: the slowest of the subject's replies against each bound given, as
/// (holds, label, what was measured). Over a conversation, the slowest reply is named
/// by its turn.
fn check_latency(
    max_ms: Option<u64>,
    max_first_token_ms: Option<u64>,
    latency: &[Latency],
) -> (bool, String, String) {
    type Measure = fn(&Latency) -> u64;
    let bounds: [(&str, Option<u64>, &str, Measure); 2] = [
        ("max_ms", max_ms, "reply took", |l| l.reply_ms),
        (
            "max_first_token_ms",
            max_first_token_ms,
            "first byte came after",
            |l| l.first_token_ms,
        ),
    ];
    let mut label = "latency".to_string();
    let (mut over, mut within) = (Vec::new(), Vec::new());
    for (key, bound, what, measure) in bounds {
        let (Some(bound), Some(slowest)) = (bound, latency.iter().max_by_key(|l| measure(l)))
        else {
            continue;
        };
        label.push_str(&format!(" {key} {bound}"));
        let took = measure(slowest);
        let (whose, of) = match latency.len() {
            1 => (String::new(), String::new()),
            n => (
                format!("turn {}'s ", slowest.turn),
                format!(" (the slowest of {n} replies)"),
            ),
        };
        let (list, relation) = if took > bound {
            (&mut over, "more than")
        } else {
            (&mut within, "within")
        };
        list.push(format!(
            "{whose}{what} {} ms, {relation} {key} {}{of}",
            crate::util::grouped(took),
            crate::util::grouped(bound)
        ));
    }
    let holds = over.is_empty();
    let why = if holds { within } else { over }.join("; ");
    (holds, label, why)
}

/// Deterministic checks: (holds, label, explanation of the actual value).
fn check(kind: &Kind, s: Subject<'_>) -> (bool, String, String) {
    let reply = s.reply;
    match kind {
        Kind::Contains {
            value,
            case_sensitive,
        }
        | Kind::NotContains {
            value,
            case_sensitive,
        } => {
            let text = reply.output_text();
            let found = if *case_sensitive {
                text.contains(value.as_str())
            } else {
                text.to_lowercase().contains(&value.to_lowercase())
            };
            let positive = matches!(kind, Kind::Contains { .. });
            let holds = found == positive;
            let label = format!("{} {}", kind.type_name(), quote(value));
            // The reply itself is shown with the turn (console, failure message,
            // reports): the message says only what was expected, and for a word that
            // must not be there, where it was found.
            let why = if positive {
                format!("expected the reply to contain {}", quote(value))
            } else {
                format!(
                    "expected the reply not to contain {}; found in {}",
                    quote(value),
                    quote(&around(&text, value, *case_sensitive))
                )
            };
            (holds, label, why)
        }
        Kind::Equals { value } => {
            let actual = match value {
                Value::String(_) => reply.output_value(),
                _ => structured(reply).unwrap_or_else(|| reply.output_value()),
            };
            let holds = json_eq(value, &actual);
            (
                holds,
                format!("equals {}", compact(value)),
                format!("expected {}, got {}", compact(value), compact(&actual)),
            )
        }
        Kind::Regex { regex } => {
            let text = reply.output_text();
            (
                regex.is_match(&text),
                format!("regex {}", quote(regex.as_str())),
                format!("expected the reply to match /{}/", regex.as_str()),
            )
        }
        Kind::JsonPath { path, value } => {
            let label = format!("{} = {}", path.text, compact(value));
            match select(path, reply) {
                Err(why) => (false, label, why.to_string()),
                Ok(actual) => {
                    let holds = match (value, &actual) {
                        (Value::Array(options), a) if !a.is_array() => {
                            options.iter().any(|o| json_eq(o, a))
                        }
                        (e, a) => json_eq(e, a),
                    };
                    let why = if value.is_array() && !actual.is_array() {
                        format!(
                            "expected {} to be one of {}, got {}",
                            path.text,
                            compact(value),
                            compact(&actual)
                        )
                    } else {
                        format!(
                            "expected {} to be {}, got {}",
                            path.text,
                            compact(value),
                            compact(&actual)
                        )
                    };
                    (holds, label, why)
                }
            }
        }
        Kind::Type { expected, path } => {
            let target = match path {
                Some(p) => match select(p, reply) {
                    Ok(v) => v,
                    Err(why) => {
                        return (false, format!("type {}", expected.name()), why.to_string())
                    }
                },
                None => reply.data.clone().unwrap_or_else(|| reply.content.clone()),
            };
            let actual = JsonType::of(&target);
            let at = path
                .as_ref()
                .map(|p| format!("{} ", p.text))
                .unwrap_or_default();
            (
                actual == *expected,
                format!("type {at}{}", expected.name()),
                format!(
                    "expected {at}to be {}, got {} ({})",
                    expected.name(),
                    actual.name(),
                    compact(&target)
                ),
            )
        }
        Kind::ToolCalled { names, arguments } => {
            let label = if names.is_empty() {
                "tool_called (any)".to_string()
            } else {
                format!(
                    "tool_called {}",
                    names
                        .iter()
                        .map(|n| quote(n))
                        .collect::<Vec<_>>()
                        .join(" | ")
                )
            };
            let holds = reply.tool_calls.iter().any(|c| {
                (names.is_empty() || names.iter().any(|n| tool_name_matches(&c.name, n)))
                    && arguments
                        .as_ref()
                        .is_none_or(|m| matches(m, &c.arguments_json()))
            });
            let expected = match arguments {
                Some(_) => " with the expected arguments",
                None => "",
            };
            (
                holds,
                label,
                format!(
                    "expected a call to {}{expected}; {}",
                    names_text(names),
                    calls_text(&reply.tool_calls)
                ),
            )
        }
        Kind::ToolResult { tool, result } => {
            let holds = reply.tool_calls.iter().any(|c| {
                tool_name_matches(&c.name, tool)
                    && c.result.as_ref().is_some_and(|r| matches(result, r))
            });
            (
                holds,
                format!("tool_result {}", quote(tool)),
                format!(
                    "expected {} to return a matching result; {}",
                    quote(tool),
                    calls_text(&reply.tool_calls)
                ),
            )
        }
        Kind::ToolSequence {
            names,
            strict,
            scope,
        } => {
            let called = called_names(s, *scope);
            let holds = if *strict {
                called.len() == names.len()
                    && called
                        .iter()
                        .zip(names)
                        .all(|(c, n)| tool_name_matches(c, n))
            } else {
                // A subsequence: each expected name after the previous one's match.
                let mut rest = called.iter();
                names.iter().all(|n| rest.any(|c| tool_name_matches(c, n)))
            };
            let sequence = names
                .iter()
                .map(|n| quote(n))
                .collect::<Vec<_>>()
                .join(" → ");
            let how = if *strict { "exactly" } else { "in this order" };
            (
                holds,
                format!("tool_sequence {sequence}"),
                format!(
                    "expected {how} {sequence}{}; {}",
                    scope_text(*scope),
                    sequence_text(&called)
                ),
            )
        }
        Kind::ToolCount {
            name,
            min,
            max,
            scope,
        } => {
            let called = called_names(s, *scope);
            let count = called
                .iter()
                .filter(|c| name.as_ref().is_none_or(|n| tool_name_matches(c, n)))
                .count() as u64;
            let holds = min.is_none_or(|m| count >= m) && max.is_none_or(|m| count <= m);
            let what = name
                .as_ref()
                .map_or_else(|| "any tool".to_string(), |n| quote(n));
            let bounds = match (min, max) {
                (Some(lo), Some(hi)) if lo == hi => format!("exactly {lo}"),
                (Some(lo), Some(hi)) => format!("{lo} to {hi}"),
                (Some(lo), None) => format!("at least {lo}"),
                (None, Some(hi)) => format!("at most {hi}"),
                (None, None) => "any number of".into(),
            };
            (
                holds,
                format!("tool_count {what} {bounds}"),
                format!(
                    "expected {bounds} call(s) of {what}{}, got {count}; {}",
                    scope_text(*scope),
                    sequence_text(&called)
                ),
            )
        }
        Kind::Span {
            name,
            attributes,
            status,
            max_duration_ms,
            count,
        } => check_spans(
            &reply.spans,
            name.as_ref(),
            attributes.as_ref(),
            *status,
            *max_duration_ms,
            *count,
        ),
        Kind::Latency {
            max_ms,
            max_first_token_ms,
        } => check_latency(*max_ms, *max_first_token_ms, s.latency),
        Kind::Script { .. } | Kind::Judge { .. } => unreachable!("handled by evaluate"),
    }
}

/// `span`: how many of the turn's spans match every condition given, against the count
/// wanted.
fn check_spans(
    tree: &[crate::protocol::SpanNode],
    name: Option<&regex::Regex>,
    attributes: Option<&Value>,
    status: Option<SpanStatusWanted>,
    max_duration_ms: Option<u64>,
    count: SpanCount,
) -> (bool, String, String) {
    let mut all = Vec::new();
    let mut stack: Vec<&crate::protocol::SpanNode> = tree.iter().rev().collect();
    while let Some(node) = stack.pop() {
        all.push(node);
        stack.extend(node.children.iter().rev());
    }
    let status_of = |n: &crate::protocol::SpanNode| match n.status.as_deref() {
        None => SpanStatusWanted::Unset,
        Some("ok") => SpanStatusWanted::Ok,
        Some(_) => SpanStatusWanted::Error,
    };
    let matching = all
        .iter()
        .filter(|n| name.is_none_or(|re| re.is_match(&n.name)))
        .filter(|n| {
            attributes.is_none_or(|want| json_subset(want, &Value::Object(n.attributes.clone())))
        })
        .filter(|n| status.is_none_or(|st| status_of(n) == st))
        .filter(|n| max_duration_ms.is_none_or(|max| n.duration_ms <= max))
        .count() as u64;
    let holds = matching >= count.min && count.max.is_none_or(|max| matching <= max);
    let mut what = Vec::new();
    if let Some(re) = name {
        what.push(format!("named /{}/", re.as_str()));
    }
    if let Some(a) = attributes {
        what.push(format!("with {}", compact(a)));
    }
    if let Some(st) = status {
        what.push(format!("status {}", format!("{st:?}").to_lowercase()));
    }
    if let Some(max) = max_duration_ms {
        what.push(format!("at most {max} ms"));
    }
    let what = what.join(", ");
    let wanted = match (count.min, count.max) {
        (lo, Some(hi)) if lo == hi => format!("exactly {lo}"),
        (0, Some(hi)) => format!("at most {hi}"),
        (lo, Some(hi)) => format!("{lo} to {hi}"),
        (lo, None) => format!("at least {lo}"),
    };
    let seen = if all.is_empty() {
        "the turn has no spans (are the agent's traces read and exported?)".to_string()
    } else {
        let names: Vec<&str> = all.iter().map(|n| n.name.as_str()).take(20).collect();
        format!(
            "{} span(s): {}{}",
            all.len(),
            names.join(", "),
            if all.len() > 20 { ", …" } else { "" }
        )
    };
    let (label, wanted) = if what.is_empty() {
        ("span (any)".to_string(), format!("{wanted} span(s)"))
    } else {
        (format!("span {what}"), format!("{wanted} span(s) {what}"))
    };
    (
        holds,
        label,
        format!("expected {wanted}, found {matching}; {seen}"),
    )
}

/// The names of the tools called, in order: the reply's, or (`Conversation`) every
/// assistant message's in the conversation before it and then the reply's.
fn called_names(s: Subject<'_>, scope: ToolScope) -> Vec<String> {
    let mine = s.reply.tool_calls.iter().map(|c| c.name.clone());
    match scope {
        ToolScope::Turn => mine.collect(),
        ToolScope::Conversation => {
            // The conversation ends with the reply's own message: its calls come from
            // the reply, once.
            let before = match s.conversation.split_last() {
                Some((last, rest)) if last.role == "assistant" => rest,
                _ => s.conversation,
            };
            before
                .iter()
                .filter(|m| m.role == "assistant")
                .filter_map(|m| m.tool_calls.as_ref()?.as_array().cloned())
                .flatten()
                .filter_map(|c| {
                    c["name"]
                        .as_str()
                        .or_else(|| c["function"]["name"].as_str())
                        .map(str::to_string)
                })
                .chain(mine)
                .collect()
        }
    }
}

fn scope_text(scope: ToolScope) -> &'static str {
    match scope {
        ToolScope::Turn => "",
        ToolScope::Conversation => " over the conversation",
    }
}

fn sequence_text(called: &[String]) -> String {
    if called.is_empty() {
        "no tool was called".into()
    } else {
        format!("called, in order: {}", called.join(", "))
    }
}

fn names_text(names: &[String]) -> String {
    if names.is_empty() {
        "any tool".into()
    } else {
        names
            .iter()
            .map(|n| quote(n))
            .collect::<Vec<_>>()
            .join(" or ")
    }
}

fn calls_text(calls: &[ToolCall]) -> String {
    if calls.is_empty() {
        return "no tool was called".into();
    }
    let list: Vec<String> = calls
        .iter()
        .map(|c| {
            let mut s = format!("{}({})", c.name, compact(&c.arguments_json()));
            if let Some(r) = &c.result {
                s.push_str(&format!(" -> {}", compact(r)));
            }
            s
        })
        .collect();
    format!("called: {}", list.join(", "))
}

/// The structured reply: `data`, else non-text content, else the text parsed as JSON
/// (a fenced ```json block inside the text is accepted).
pub(crate) fn structured(reply: &Reply) -> Option<Value> {
    if let Some(d) = &reply.data {
        return Some(d.clone());
    }
    match &reply.content {
        Value::Null => None,
        Value::String(text) => parse_json_text(text),
        other => Some(other.clone()),
    }
}

/// JSON in a text: the whole text, else a fenced ```json block in it.
pub(crate) fn parse_json_text(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
        return Some(v);
    }
    let start = trimmed.find("```")?;
    let after = &trimmed[start + 3..];
    let body_start = after.find('\n')?;
    let (lang, rest) = after.split_at(body_start);
    if !(lang.trim().is_empty() || lang.trim().eq_ignore_ascii_case("json")) {
        return None;
    }
    let end = rest.find("```")?;
    serde_json::from_str(rest[..end].trim()).ok()
}

fn select(path: &JsonPath, reply: &Reply) -> Result<Value, SelectError> {
    let Some(doc) = structured(reply) else {
        return Err(SelectError::NotJson {
            path: path.text.clone(),
            reply: quote(&clip(&reply.output_text())),
        });
    };
    match jsonpath_rust::query::js_path_process(&path.query, &doc) {
        Ok(found) => Ok(match found.len() {
            0 => Value::Null,
            1 => found[0].clone().val().clone(),
            _ => Value::Array(found.into_iter().map(|r| r.val().clone()).collect()),
        }),
        Err(source) => Err(SelectError::Query {
            path: path.text.clone(),
            source,
        }),
    }
}

fn matches(m: &ValueMatcher, actual: &Value) -> bool {
    match m {
        ValueMatcher::Subset(v) => json_subset(v, actual),
        ValueMatcher::Pattern(re) => match actual {
            Value::String(s) => re.is_match(s),
            other => re.is_match(&other.to_string()),
        },
        ValueMatcher::Object(fields) => match actual {
            Value::Object(a) => fields
                .iter()
                .all(|(k, m)| a.get(k).is_some_and(|v| matches(m, v))),
            _ => false,
        },
    }
}

fn quote(s: &str) -> String {
    json!(s).to_string()
}

/// The words around the first place `value` occurs in `text` (30 characters either
/// side, `…` where cut), for a `not_contains` that found it.
fn around(text: &str, value: &str, case_sensitive: bool) -> String {
    let at = if case_sensitive {
        text.find(value)
    } else {
        // Lower-casing can change byte lengths; search char by char instead.
        let lower: Vec<char> = value.chars().flat_map(char::to_lowercase).collect();
        text.char_indices().map(|(i, _)| i).find(|&i| {
            let mut rest = text[i..].chars().flat_map(char::to_lowercase);
            lower.iter().all(|c| rest.next() == Some(*c))
        })
    };
    let Some(at) = at else {
        return clip(text);
    };
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let pos = chars.iter().position(|(i, _)| *i == at).unwrap_or(0);
    let len = value.chars().count();
    let start = pos.saturating_sub(30);
    let end = (pos + len + 30).min(chars.len());
    let mut s: String = chars[start..end].iter().map(|(_, c)| c).collect();
    if start > 0 {
        s.insert(0, '…');
    }
    if end < chars.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_match_by_suffix_after_a_separator() {
        assert!(tool_name_matches("create_expense", "create_expense"));
        assert!(tool_name_matches(
            "expense.create_expense",
            "create_expense"
        ));
        assert!(tool_name_matches("mcp__create_expense", "create_expense"));
        assert!(!tool_name_matches("recreate_expense", "create_expense"));
    }

    #[test]
    fn structured_reads_fenced_json() {
        let r = Reply::text("Here:\n```json\n{\"a\": 1}\n```\nDone");
        assert_eq!(structured(&r), Some(json!({"a": 1})));
        assert_eq!(structured(&Reply::text("plain")), None);
    }

    #[test]
    fn equality_ignores_key_order_and_number_form() {
        assert!(json_eq(&json!({"a": 1, "b": 2}), &json!({"b": 2, "a": 1})));
        assert!(json_eq(&json!(5), &json!(5.0)));
        assert!(!json_eq(&json!([1, 2]), &json!([2, 1])));
        assert!(json_subset(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!json_subset(&json!({"c": 1}), &json!({"a": 1})));
    }

    /// The verdict of `assertion` (JSON) against `reply` after `earlier` replies.
    fn verdict_of(assertion: Value, earlier: &[Reply], reply: &Reply) -> (bool, String) {
        let a = crate::source::parse_assertions(&assertion, "assert")
            .expect("a valid assertion")
            .remove(0);
        let mut conversation: Vec<Message> = earlier.iter().map(Reply::to_message).collect();
        conversation.push(reply.to_message());
        let subject = Subject {
            reply,
            input: "",
            conversation: &conversation,
            latency: &[],
        };
        let (holds, label, why) = check(&a.kind, subject);
        (holds != a.negate, format!("{label}: {why}"))
    }

    #[test]
    fn tool_sequences_and_counts_hold_over_a_turn_or_the_conversation() {
        let calls = |names: &[&str]| {
            names.iter().fold(Reply::text("ok"), |r, n| {
                r.with_tool_call(*n, json!({}), None)
            })
        };
        let turn = calls(&["search", "lookup", "book"]);
        let seq = |v: Value| verdict_of(v, &[], &turn);
        assert!(seq(json!({"type": "tool_sequence", "value": ["search", "book"]})).0);
        assert!(!seq(json!({"type": "tool_sequence", "value": ["book", "search"]})).0);
        let (holds, why) =
            seq(json!({"type": "tool_sequence", "value": ["search", "book"], "strict": true}));
        assert!(!holds);
        assert_eq!(why, "tool_sequence \"search\" → \"book\": expected exactly \"search\" → \"book\"; called, in order: search, lookup, book");
        let earlier = [calls(&["search"])];
        let later = calls(&["book"]);
        let conv = |v: Value| verdict_of(v, &earlier, &later);
        assert!(!conv(json!({"type": "tool_sequence", "value": ["search", "book"]})).0);
        assert!(conv(json!({"type": "tool_sequence", "value": ["search", "book"], "scope": "conversation", "strict": true})).0);
        assert!(conv(json!({"type": "tool_count", "min": 2, "scope": "conversation"})).0);
        let (holds, why) = conv(json!({"type": "tool_count", "name": "book", "max": 0}));
        assert!(!holds);
        assert_eq!(
            why,
            "tool_count \"book\" at most 0: expected at most 0 call(s) of \"book\", got 1; called, in order: book"
        );
        assert!(seq(json!({"type": "tool_count", "value": "lookup", "min": 1, "max": 1})).0);
        assert!(seq(json!({"type": "tool_count", "name": "lookup", "max": 0, "negate": true})).0);
    }

    #[test]
    fn latency_names_each_bound_it_was_given() {
        let one = [Latency {
            turn: 1,
            first_token_ms: 120,
            reply_ms: 1500,
        }];
        assert_eq!(
            check_latency(Some(2000), Some(100), &one),
            (
                false,
                "latency max_ms 2000 max_first_token_ms 100".into(),
                "first byte came after 120 ms, more than max_first_token_ms 100".into()
            )
        );
        assert_eq!(
            check_latency(Some(2000), None, &one),
            (
                true,
                "latency max_ms 2000".into(),
                "reply took 1,500 ms, within max_ms 2,000".into()
            )
        );
        let two = [
            one[0],
            Latency {
                turn: 2,
                first_token_ms: 900,
                reply_ms: 900,
            },
        ];
        assert_eq!(
            check_latency(Some(1000), Some(500), &two).2,
            "turn 1's reply took 1,500 ms, more than max_ms 1,000 (the slowest of 2 replies); \
             turn 2's first byte came after 900 ms, more than max_first_token_ms 500 (the slowest of 2 replies)"
        );
    }
}
