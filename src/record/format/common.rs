//! What every report format shares: the plain-text transcript, time and text-cleaning
//! helpers the renderers use.

use std::fmt::Write;

use crate::protocol::SpanNode;
use crate::protocol::SpanRole;
use crate::record::{
    AssertionReport, CaseReport, CheckpointReport, RunInfo, Status, Summary, TurnReport,
};
use crate::util::value_text;

/// The summary as reports show it: `type` set, counted from the cases when the summary
/// counted none (a report collected under nextest has no summary line), and the run's
/// wall time when the summary has none.
pub(crate) fn summary_for(run: &RunInfo, summary: &Summary, cases: &[CaseReport]) -> Summary {
    let mut s = summary.clone();
    if s.total == 0 && !cases.is_empty() {
        let mut counted = Summary::new();
        cases.iter().for_each(|c| counted.add(c));
        counted.duration_ms = s.duration_ms;
        counted.stopped_early = s.stopped_early;
        s = counted;
    }
    s.kind = "summary".into();
    if s.duration_ms == 0 {
        s.duration_ms = run.duration_ms;
    }
    s
}

/// Wall time of the run: the run's own, else the summary's.
pub(crate) fn total_ms(run: &RunInfo, summary: &Summary) -> u64 {
    if run.duration_ms > 0 {
        run.duration_ms
    } else {
        summary.duration_ms
    }
}

/// The cases sorted by trial name (stable, so equal names keep their order).
pub(crate) fn sorted(cases: &[CaseReport]) -> Vec<&CaseReport> {
    let mut v: Vec<&CaseReport> = cases.iter().collect();
    v.sort_by(|a, b| a.trial.cmp(&b.trial));
    v
}

/// Whether a case is shown as not passed: failed, timed out, errored or inconclusive.
pub(crate) fn is_failing(status: Status) -> bool {
    matches!(
        status,
        Status::Failed | Status::Timeout | Status::Error | Status::Inconclusive
    )
}

/// Lowercase status name, as in the JSONL report.
pub(crate) fn status_name(status: Status) -> &'static str {
    match status {
        Status::Passed => "passed",
        Status::Failed => "failed",
        Status::Error => "error",
        Status::Skipped => "skipped",
        Status::Timeout => "timeout",
        Status::Inconclusive => "inconclusive",
    }
}

/// Seconds with one decimal (`2.1s`), or milliseconds under one second (`15ms`).
pub(crate) fn secs(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", std::time::Duration::from_millis(ms).as_secs_f64())
    }
}

/// A turn's reply time, with the time to its first byte when that came apart from the
/// whole: `2.1s, first byte 350ms`.
pub(crate) fn turn_time(t: &TurnReport) -> String {
    // A first byte within a few milliseconds of the whole reply (a reply written in one
    // go, read a moment later) says nothing: the report's fields keep the exact figures.
    const SHOWN_GAP_MS: u64 = 10;
    match t.first_token_ms {
        Some(first) if first + SHOWN_GAP_MS <= t.duration_ms => {
            format!("{}, first byte {}", secs(t.duration_ms), secs(first))
        }
        _ => secs(t.duration_ms),
    }
}

/// The command line as one string, arguments with spaces or quotes quoted.
pub(crate) fn command_line(command: &[String]) -> String {
    command
        .iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` with ANSI escape sequences removed and every control character other than tab,
/// newline and carriage return (and the non-characters U+FFFE, U+FFFF) replaced by
/// U+FFFD: what XML 1.0 and HTML accept, and what a reader can see.
pub(crate) fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // CSI: ESC [ parameters intermediates final (0x40..=0x7E).
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                } else if chars.peek() == Some(&']') {
                    // OSC: ESC ] ... (BEL | ESC \).
                    chars.next();
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                } else {
                    out.push('\u{fffd}');
                }
            }
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The first line of `text`, cut to `max` characters with an ellipsis.
pub(crate) fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default().trim_end();
    if line.chars().count() <= max {
        line.to_string()
    } else {
        let head: String = line.chars().take(max).collect();
        format!("{head}…")
    }
}

/// A reply as text: a string as is, other JSON pretty-printed.
pub(crate) fn reply_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(_) | serde_json::Value::Null => value_text(v),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// A tool call's arguments or result on one line.
pub(crate) fn compact_json(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `1 turn`, `3 turns`.
pub(crate) fn turns_label(n: u32) -> String {
    crate::util::count(n, "turn", "turns")
}

/// Token usage by role: `agent 12 in / 9 out, judge 3 in / 1 out`, or `None` when none.
pub(crate) fn tokens_line(
    usage: &std::collections::BTreeMap<crate::protocol::Role, crate::protocol::TokenUsage>,
) -> Option<String> {
    if usage.is_empty() {
        return None;
    }
    Some(
        usage
            .iter()
            .map(|(role, u)| {
                format!(
                    "{} {} in / {} out",
                    role.name(),
                    u.prompt_tokens,
                    u.completion_tokens
                )
            })
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// Average turns per case that ran (skipped cases excluded).
pub(crate) fn avg_turns(summary: &Summary) -> f64 {
    let ran = summary.total.saturating_sub(summary.skipped);
    if ran == 0 {
        0.0
    } else {
        summary.total_turns as f64 / ran as f64
    }
}

/// Whether a checkpoint verdict on a turn is one that matched there (reached, or, for a
/// forbidden checkpoint, hit).
fn turn_checkpoint_hit(a: &AssertionReport) -> bool {
    a.held()
}

/// The plain-text transcript of a case, for JUnit and Markdown: a header (status, mode,
/// turns, duration, location, tags), the error, each turn's input, reply, tool calls,
/// verdicts, checkpoints reached and error, the final assertions and the checkpoints.
/// Texts are whole (not clipped) and cleaned of ANSI escapes and control characters.
pub(crate) fn transcript(r: &CaseReport) -> String {
    let mut s = String::new();
    let title = if r.name != r.id {
        format!("{} — {}", r.trial, r.name)
    } else {
        r.trial.clone()
    };
    let _ = writeln!(s, "{title}");
    let mut facts = vec![r.status.label().to_string()];
    if let Some(m) = &r.mode {
        facts.push(m.clone());
    }
    if let Some(a) = &r.agent {
        facts.push(format!("agent {a}"));
    }
    if r.mode.is_some() {
        facts.push(turns_label(r.total_turns));
    }
    facts.push(secs(r.duration_ms));
    let _ = writeln!(s, "{}", facts.join(" · "));
    let _ = writeln!(s, "location: {}", r.location);
    if !r.tags.is_empty() {
        let _ = writeln!(s, "tags: {}", r.tags.join(", "));
    }
    if let Some(sim) = &r.simulator {
        let _ = writeln!(s, "simulator: {sim}");
    }
    if let Some(t) = &r.termination {
        let _ = writeln!(s, "termination: {t}");
    }
    if let Some(e) = &r.error {
        let label = match (r.mode.is_none(), r.status) {
            (true, _) => "failed to load",
            (_, Status::Skipped) => "skipped",
            (_, Status::Passed) => "note",
            _ => "error",
        };
        field(&mut s, "", label, e);
    }
    for t in &r.turns {
        s.push('\n');
        turn_text(&mut s, t);
    }
    if !r.final_assertions.is_empty() {
        let _ = writeln!(s, "\nfinal assertions");
        verdicts(&mut s, "  ", &r.final_assertions);
    }
    if !r.checkpoints.is_empty() {
        let _ = writeln!(s, "\ncheckpoints");
        for c in &r.checkpoints {
            checkpoint_text(&mut s, c);
        }
    }
    clean(s.trim_end())
}

/// One checkpoint of the case: its kind, whether and on which turn it was reached, and
/// its message.
fn checkpoint_text(s: &mut String, c: &CheckpointReport) {
    let kind = if c.forbidden {
        "forbidden"
    } else if c.required {
        "required"
    } else {
        "optional"
    };
    let ok = if c.forbidden { !c.reached } else { c.reached };
    let mark = if ok { "✓" } else { "✗" };
    let what = match (c.forbidden, c.reached, c.reached_at_turn) {
        (true, false, _) => "never matched".to_string(),
        (true, true, Some(n)) => format!("matched at turn {n}"),
        (true, true, None) => "matched".to_string(),
        (false, true, Some(n)) => format!("reached at turn {n}"),
        (false, true, None) => "reached".to_string(),
        (false, false, _) => "not reached".to_string(),
    };
    let desc = c
        .description
        .as_deref()
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    let head = format!("{mark} {}{desc} [{kind}]: {what}", c.id);
    if c.message.is_empty() {
        let _ = writeln!(s, "  {head}");
    } else {
        field(s, "  ", &head, &c.message);
    }
}

fn turn_text(s: &mut String, t: &TurnReport) {
    let verdict = if t.error.is_some() {
        "ERROR"
    } else if t.ok() {
        "PASSED"
    } else if t.assertions.iter().any(AssertionReport::failed) {
        "FAILED"
    } else {
        "INCONCLUSIVE"
    };
    let step = t
        .step
        .as_ref()
        .map(|st| format!("{st} · "))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "turn {} · {step}{} · {} · {verdict}{}",
        t.turn,
        if t.input_source.is_empty() {
            "static"
        } else {
            &t.input_source
        },
        turn_time(t),
        if t.truncated {
            " · reply cut off at the token limit"
        } else {
            ""
        }
    );
    if let Some(code) = &t.code {
        field(s, "  ", &format!("code ({})", code.lang), &t.input);
        field(s, "  ", "stdout", &reply_text(&t.output));
        field(s, "  ", "result", &code.exit_text());
        if !code.stderr.is_empty() {
            field(s, "  ", "stderr", &code.stderr);
        }
        if !code.files.is_empty() {
            field(s, "  ", "files", &code.files.join(", "));
        }
    } else {
        field(s, "  ", "user", &t.input);
    }
    if let Some(r) = &t.reasoning {
        field(s, "  ", "simulator's reasoning", r);
    }
    if t.code.is_none() && (!t.output.is_null() || t.error.is_none()) {
        field(s, "  ", "agent", &reply_text(&t.output));
    }
    for c in &t.tool_calls {
        field(s, "  ", tool_call_label(c), &tool_call_text(c));
    }
    if let Some(count) = spans_count(&t.spans) {
        let _ = writeln!(s, "  trace: {count}");
    }
    if let Some(d) = &t.data {
        field(s, "  ", "data", &d.to_string());
    }
    if t.awaiting_input {
        let _ = writeln!(s, "  (awaiting input)");
    }
    verdicts(s, "  ", &t.assertions);
    if let Some(e) = &t.ending {
        let _ = writeln!(s, "  ended: {e}");
    }
    for c in t.checkpoints.iter().filter(|c| turn_checkpoint_hit(c)) {
        field(s, "  ", &format!("◆ {}", c.label), &c.message);
    }
    if let Some(e) = &t.error {
        field(s, "  ", "error", e);
    }
}

fn verdicts(s: &mut String, indent: &str, list: &[AssertionReport]) {
    for a in list {
        if a.held() {
            let _ = writeln!(s, "{indent}✓ {}", a.label);
        } else {
            let mark = if a.inconclusive() { "?" } else { "✗" };
            let _ = writeln!(s, "{indent}{mark} {}", a.label);
            if !a.message.is_empty() && a.message != a.label {
                for line in a.message.lines() {
                    let _ = writeln!(s, "{indent}    {line}");
                }
            }
        }
        // A jury's every juror, so its verdict can be checked juror by juror.
        for v in a.judgment.iter().flat_map(|j| &j.jurors) {
            let _ = writeln!(s, "{indent}    · {}: {}", v.judge, juror_said(v));
        }
    }
}

/// What one juror said: `pass: reason`, `fail: reason`, `undecided: reason`, or
/// `abstained: error`.
pub(crate) fn juror_said(v: &crate::record::JurorVote) -> String {
    match (&v.error, v.passed) {
        (Some(e), _) => format!("abstained: {e}"),
        (None, Some(true)) => format!("pass: {}", v.reason),
        (None, Some(false)) => format!("fail: {}", v.reason),
        (None, None) => format!("undecided: {}", v.reason),
    }
}

/// `label: text`, continuation lines indented under the text.
fn field(s: &mut String, indent: &str, label: &str, text: &str) {
    let mut lines = text.lines();
    let _ = writeln!(s, "{indent}{label}: {}", lines.next().unwrap_or_default());
    let pad = " ".repeat(label.chars().count() + 2);
    for line in lines {
        let _ = writeln!(s, "{indent}{pad}{line}");
    }
}

/// Whether agentest learned of a tool call from the agent's spans rather than its reply.
pub(crate) fn traced(call: &crate::protocol::ToolCall) -> bool {
    call.source.as_deref() == Some("trace")
}

/// A tool call on one line: `name(arguments) -> result !! error: why`.
pub(crate) fn tool_call_text(c: &crate::protocol::ToolCall) -> String {
    let mut line = format!("{}({})", c.name, compact_json(&c.arguments));
    if let Some(r) = &c.result {
        let _ = write!(line, " -> {}", compact_json(r));
    }
    if let Some(e) = &c.error {
        let _ = write!(line, " !! error: {}", compact_json(e));
    }
    line
}

/// How reports label a tool call: `tool call`, or `tool call (from trace)`.
pub(crate) fn tool_call_label(call: &crate::protocol::ToolCall) -> &'static str {
    if traced(call) {
        "tool call (from trace)"
    } else {
        "tool call"
    }
}

/// One span of a turn's tree, in the order the tree lists them (depth first), with what
/// it stands for.
pub(crate) struct SpanRow<'a> {
    /// 0 for a root.
    pub(crate) depth: usize,
    /// The span.
    pub(crate) node: &'a SpanNode,
    /// Tool, model call or other.
    pub(crate) role: SpanRole,
    /// `tool get_weather`, `model gpt-4o tokens 12/5`, or empty.
    pub(crate) detail: String,
}

/// A turn's span tree, flattened depth first.
pub(crate) fn span_rows(spans: &[SpanNode]) -> Vec<SpanRow<'_>> {
    fn walk<'a>(nodes: &'a [SpanNode], depth: usize, out: &mut Vec<SpanRow<'a>>) {
        for node in nodes {
            let (role, detail) = (node.role, node.label.clone());
            out.push(SpanRow {
                depth,
                node,
                role,
                detail,
            });
            walk(&node.children, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    walk(spans, 0, &mut out);
    out
}

/// A turn's spans counted: `6 spans (2 tools, 2 model calls)`; `None` without spans.
pub(crate) fn spans_count(spans: &[SpanNode]) -> Option<String> {
    if spans.is_empty() {
        return None;
    }
    let rows = span_rows(spans);
    let of = |role| rows.iter().filter(|r| r.role == role).count();
    let count = |n: usize, one: &str, many: &str| crate::util::count(n as u64, one, many);
    Some(format!(
        "{} ({}, {})",
        count(rows.len(), "span", "spans"),
        count(of(SpanRole::Tool), "tool", "tools"),
        count(of(SpanRole::Model), "model call", "model calls")
    ))
}

/// When a turn's last span ended, from its first span's start: the waterfall's width.
pub(crate) fn spans_end_ms(spans: &[SpanNode]) -> u64 {
    span_rows(spans)
        .iter()
        .map(|r| r.node.start_ms.saturating_add(r.node.duration_ms))
        .max()
        .unwrap_or(0)
}

/// A span's name for one line: line breaks as spaces, cut to 200 characters.
pub(crate) fn span_name(node: &SpanNode) -> String {
    let one_line: String = node
        .name
        .chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect();
    first_line(&one_line, 200)
}

/// A span's status for one line (`error: no such city`), cut to 200 characters; `None`
/// when unset.
pub(crate) fn span_status(node: &SpanNode) -> Option<String> {
    node.status
        .as_deref()
        .map(|s| first_line(&s.replace(['\n', '\r'], " "), 200))
}

/// One span on a line: `execute_tool get_weather (3ms at +12ms) · error: no such city ·
/// tool get_weather`.
pub(crate) fn span_line(row: &SpanRow<'_>) -> String {
    let mut line = format!(
        "{} ({} at +{})",
        span_name(row.node),
        secs(row.node.duration_ms),
        secs(row.node.start_ms)
    );
    if let Some(status) = span_status(row.node) {
        let _ = write!(line, " · {status}");
    }
    if !row.detail.is_empty() {
        let _ = write!(line, " · {}", row.detail);
    }
    line
}

/// A turn's span tree as indented text, one span a line, two spaces a level under
/// `indent`, then its `spans_note`.
pub(crate) fn span_tree_text(s: &mut String, indent: &str, t: &TurnReport) {
    for row in span_rows(&t.spans) {
        let _ = writeln!(s, "{indent}{}{}", "  ".repeat(row.depth), span_line(&row));
    }
    if let Some(note) = &t.spans_note {
        let _ = writeln!(s, "{indent}({})", first_line(note, 300));
    }
}

/// Whether the case's error is what its failing turn already shows: `turn N: ` and
/// the turn's own error word for word, or a failed assertion's label (shown with its
/// message). Each fact is said once, and nothing the turn does not show is dropped.
pub(crate) fn shown_with_its_turn(r: &CaseReport, error: &str) -> bool {
    // A golden diff is only in the case's error.
    if r.golden.is_some() {
        return false;
    }
    r.turns.iter().filter(|t| !t.ok()).any(|t| {
        let Some(rest) = error.strip_prefix(&format!("turn {}: ", t.turn)) else {
            return false;
        };
        match &t.error {
            Some(e) => rest == e,
            None => t
                .assertions
                .iter()
                .chain(&t.checkpoints)
                .any(|a| !a.held() && rest.starts_with(&a.label)),
        }
    })
}

/// A failed case whose agent was traced, for the renderers' unit tests: one turn with a
/// tool call read from its spans (`get_weather`, which failed) and one its reply listed,
/// tokens from its model span, and a span tree of four (an agent span over a model call,
/// the tool and a span whose name and attribute are markup), two more left out.
#[cfg(test)]
pub(crate) fn traced_sample() -> CaseReport {
    serde_json::from_value(serde_json::json!({
        "id": "weather", "name": "weather", "suite": "traced", "trial": "traced::weather",
        "status": "failed", "mode": "single", "agent": "default",
        "turns": [{
            "turn": 1, "input": "weather in Paris", "input_source": "static",
            "output": "Sunny in Paris.",
            "tool_calls": [
                {"name": "lookup", "arguments": {"q": "Paris"}},
                {"name": "get_weather", "arguments": {"city": "Paris"},
                 "error": "no such city", "source": "trace"}
            ],
            "spans": [{
                "name": "invoke_agent weather", "kind": "internal", "start_ms": 0,
                "duration_ms": 200, "status": "ok",
                "children": [
                    {"name": "chat gpt-4o", "kind": "client", "start_ms": 5, "duration_ms": 50,
                     "role": "model", "label": "model gpt-4o tokens 12/5",
                     "attributes": {"gen_ai.operation.name": "chat",
                                    "gen_ai.request.model": "gpt-4o",
                                    "gen_ai.usage.input_tokens": 12,
                                    "gen_ai.usage.output_tokens": 5}},
                    {"name": "execute_tool get_weather", "start_ms": 60, "duration_ms": 100,
                     "status": "error: no such city",
                     "role": "tool",
                     "attributes": {"gen_ai.operation.name": "execute_tool",
                                    "gen_ai.tool.name": "get_weather",
                                    "gen_ai.tool.call.arguments": "{\"city\":\"Paris\"}"}},
                    {"name": "<script>alert(1)</script>", "start_ms": 170, "duration_ms": 10,
                     "attributes": {"note": "<img src=x onerror=alert(2)>"}}
                ]
            }],
            "spans_note": "2 spans not kept (over [traces] max_spans)",
            "usage_traced": true,
            "usage": {"input_tokens": 12, "output_tokens": 5},
            "awaiting_input": false,
            "assertions": [{"type": "tool_called", "value": "book_flight", "passed": false,
                            "label": "tool_called \"book_flight\"",
                            "message": "expected a call to \"book_flight\"; called: lookup, get_weather"}],
            "duration_ms": 230
        }],
        "total_turns": 1, "duration_ms": 240, "location": "traced.jsonl:1:1",
        "error": "turn 1: tool_called \"book_flight\": expected a call to \"book_flight\""
    }))
    .expect("traced sample record")
}

/// Records of a small run, for the renderers' unit tests: a pass with a tool call, a
/// failure whose reply holds markup and control characters, an agent crash, a load
/// error, a timeout, a skip and a dynamic case that missed a checkpoint.
#[cfg(test)]
pub(crate) fn sample() -> (RunInfo, Summary, Vec<CaseReport>) {
    let lines = [
        r#"{"id":"policy","name":"Meal policy","suite":"expense","trial":"expense::policy","status":"passed","mode":"single","agent":"default","turns":[{"turn":1,"input":"What is the meal policy?","input_source":"static","output":"Meals are reimbursed up to $75 per day.","tool_calls":[{"name":"get_policy","arguments":{"topic":"expenses"},"result":{"meal_limit_per_day":75}}],"awaiting_input":false,"assertions":[{"type":"tool_called","name":"get_policy","passed":true,"label":"tool_called \"get_policy\"","message":"tool_called \"get_policy\""}],"duration_ms":12,"usage":{"input_tokens":12,"output_tokens":9}}],"total_turns":1,"duration_ms":15,"location":"expense.jsonl:1:1","tags":["smoke"],"usage":{"agent":{"prompt_tokens":12,"completion_tokens":9}}}"#,
        r#"{"id":"xss","name":"Echo <b>markup</b> & \"quotes\"","suite":"expense","trial":"expense::xss","status":"failed","mode":"single","agent":"default","turns":[{"turn":1,"input":"<script>alert(1)</script> ]]> \u0007 \u001b[31mred\u001b[0m","input_source":"static","output":"You said: <script>alert(1)</script> ]]> \u0007 \u001b[31mred\u001b[0m","awaiting_input":false,"assertions":[{"type":"contains","value":"nope","passed":false,"label":"contains \"nope\"","message":"expected the reply to contain \"nope\"; reply: \"You said: <script>alert(1)</script>\""}],"duration_ms":20}],"total_turns":1,"duration_ms":21,"error":"turn 1: contains \"nope\": expected the reply to contain \"nope\"\n--- golden\n+++ actual\n-old | line\n+new </pre> line","location":"expense.jsonl:2:1","tags":["security","smoke"]}"#,
        r#"{"id":"crash","name":"crash","suite":"flow","trial":"flow::crash","status":"error","mode":"single","agent":"default","turns":[{"turn":1,"input":"CRASH now","input_source":"static","output":null,"awaiting_input":false,"assertions":[],"duration_ms":5,"error":"agent process exited before replying (exit status: 3)"}],"total_turns":1,"duration_ms":6,"error":"turn 1: agent process exited before replying (exit status: 3)\nfatal: the agent crashed on purpose","location":"flow.jsonl:1:1"}"#,
        r#"{"id":"bad","name":"bad","suite":"flow","trial":"flow::bad","status":"error","turns":[],"total_turns":0,"duration_ms":0,"error":"flow.jsonl:2:46: field `assertions[0].type`: unknown assertion type \"contians\"; did you mean \"contains\"?","location":"flow.jsonl:2:46"}"#,
        r#"{"id":"slow","name":"slow","suite":"flow","trial":"flow::slow","status":"timeout","mode":"single","agent":"default","turns":[],"total_turns":0,"duration_ms":302,"error":"timeout after 300ms (while waiting for the reply to turn 1; the agent was stopped)","location":"flow.jsonl:3:1"}"#,
        r#"{"id":"later","name":"Not ready","suite":"flow","trial":"flow::later","status":"skipped","mode":"single","turns":[],"total_turns":0,"duration_ms":0,"error":"skip: true in the case","location":"flow.jsonl:4:1"}"#,
        r#"{"id":"endless","name":"endless","suite":"chat/dynamic","trial":"chat/dynamic::endless","status":"failed","mode":"dynamic","agent":"default","turns":[{"turn":1,"input":"I want to submit an expense","input_source":"initial","output":"What type of expense?","awaiting_input":true,"awaiting_reason":"agent_declared","assertions":[],"checkpoints":[{"checkpoint":"ask","passed":true,"label":"checkpoint ask","message":"reached at turn 1: contains \"type\""},{"checkpoint":"drafted","passed":false,"label":"checkpoint drafted","message":"no tool was called"}],"duration_ms":86},{"turn":2,"input":"hmm","input_source":"simulated","output":{"status":"ok"},"awaiting_input":false,"reasoning":"script rule 1","assertions":[],"duration_ms":1}],"total_turns":2,"duration_ms":94,"error":"the agent completed at turn 2 with required checkpoints missing: drafted","location":"chat/dynamic.jsonl:1:1","checkpoints":[{"id":"ask","required":true,"reached":true,"reached_at_turn":1,"message":"contains \"type\""},{"id":"drafted","description":"drafts the expense","required":true,"reached":false,"message":"no tool was called"},{"id":"no-policy","required":false,"forbidden":true,"reached":false,"message":""}],"simulator":"script","termination":"agent_completed"}"#,
    ];
    let cases: Vec<CaseReport> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("sample record"))
        .collect();
    let mut summary = Summary::new();
    for c in &cases {
        summary.add(c);
    }
    summary.duration_ms = 400;
    let run = RunInfo {
        started_at: "2025-01-31T12:00:00Z".into(),
        duration_ms: 410,
        agentest_version: "0.1.0".into(),
        agent: "default (process: python3 agent.py)".into(),
        input: "agent-tests".into(),
        command: ["agentest", "test", "-i", "agent-tests", "-o", "r.html"]
            .map(String::from)
            .to_vec(),
    };
    (run, summary, cases)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::rfc3339;
    use std::time::{Duration, UNIX_EPOCH};

    /// A traced turn's span tree as text: depth-first, two spaces a level, durations,
    /// start offsets, status and the model a span stands for; then what was left out.
    #[test]
    fn span_tree_as_text() {
        let c = traced_sample();
        let t = &c.turns[0];
        assert_eq!(
            spans_count(&t.spans).as_deref(),
            Some("4 spans (1 tool, 1 model call)")
        );
        assert_eq!(spans_count(&[]), None);
        assert_eq!(spans_end_ms(&t.spans), 200);
        let mut s = String::new();
        span_tree_text(&mut s, "  ", t);
        assert_eq!(
            s,
            "  invoke_agent weather (200ms at +0ms) · ok\n\
             \x20   chat gpt-4o (50ms at +5ms) · model gpt-4o tokens 12/5\n\
             \x20   execute_tool get_weather (100ms at +60ms) · error: no such city\n\
             \x20   <script>alert(1)</script> (10ms at +170ms)\n\
             \x20 (2 spans not kept (over [traces] max_spans))\n"
        );
        // A tool span's label (its tool, when its name does not say it, as the trace
        // reader writes it) follows; a name's line breaks go.
        let mut node = t.spans[0].children[1].clone();
        node.name = "run\ntool".into();
        node.label = "tool get_weather".into();
        node.status = None;
        let rows = span_rows(std::slice::from_ref(&node));
        assert_eq!(
            span_line(&rows[0]),
            "run tool (100ms at +60ms) · tool get_weather"
        );
    }

    /// The transcript marks the calls read from spans and counts the spans.
    #[test]
    fn transcript_marks_traced_calls() {
        let text = transcript(&traced_sample());
        assert!(
            text.contains("\n  tool call: lookup({\"q\":\"Paris\"})\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "\n  tool call (from trace): get_weather({\"city\":\"Paris\"}) !! error: no such city\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("\n  trace: 4 spans (1 tool, 1 model call)\n"),
            "{text}"
        );
        // Times and names of spans are not in the transcript: the tree is shown apart.
        assert!(!text.contains("chat gpt-4o"), "{text}");
    }

    #[test]
    fn rfc3339_formats_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400 + 3_661); // 2000-02-29
        assert_eq!(rfc3339(t), "2000-02-29T01:01:01Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_735_689_599);
        assert_eq!(rfc3339(t), "2024-12-31T23:59:59Z");
    }

    #[test]
    fn clean_strips_ansi_and_controls() {
        assert_eq!(clean("\u{1b}[31mred\u{1b}[0m ok"), "red ok");
        assert_eq!(clean("a\u{7}b\u{0}c\td\ne"), "a\u{fffd}b\u{fffd}c\td\ne");
        assert_eq!(clean("\u{1b}]0;title\u{7}x"), "x");
        assert_eq!(clean("x\u{1b}"), "x\u{fffd}");
        assert_eq!(clean("é ✓ 漢"), "é ✓ 漢");
    }

    #[test]
    fn command_line_quotes_what_needs_it() {
        let c = ["agentest", "test", "-i", "a message", "it's"].map(String::from);
        assert_eq!(command_line(&c), "agentest test -i 'a message' 'it'\\''s'");
    }
}

/// A percentage for people: `60%`, `83.9%`.
pub(crate) fn percent(share: f64) -> String {
    let p = share * 100.0;
    if (p - p.round()).abs() < 0.05 {
        format!("{}%", p.round())
    } else {
        format!("{p:.1}%")
    }
}

/// A repeated case in one line: `5 runs, min_pass 3 of 5: 3 passed, 2 failed, 0
/// errors; pass rate 60% (95% Wilson 23.1%–88.2%), unstable, consistency 60%`.
pub(crate) fn stability_line(r: &CaseReport) -> Option<String> {
    let st = r.stability.as_ref()?;
    let mut s = format!(
        "{} of {} runs ({}): {} passed, {} failed, {} errors",
        st.runs, st.planned, st.gate, st.passed, st.failed, st.errors
    );
    if let Some(rate) = st.pass_rate {
        s.push_str(&format!("; pass rate {}", percent(rate)));
        if let Some([lo, hi]) = st.wilson {
            s.push_str(&format!(
                " ({} Wilson {}–{})",
                percent(st.confidence),
                percent(lo),
                percent(hi)
            ));
        }
    }
    if let Some(class) = st.class {
        s.push_str(&format!(", {}", class.name()));
    }
    s.push_str(&format!(", consistency {}", percent(st.consistency)));
    if st.saved > 0 {
        s.push_str(&format!("; {} saved by early stopping", st.saved));
        let early = st.started.saturating_sub(st.runs);
        if early > 0 {
            s.push_str(&format!(" ({early} of them already started)"));
        }
    }
    Some(s)
}

/// What a case or run cost: `0.0123 USD spent (simulator 0.01, judge 0.0023, agent
/// unknown); 0.05 USD replayed, not spent`.
pub(crate) fn cost_line(cost: &crate::record::Cost) -> String {
    let amount = |a: Option<f64>| match a {
        Some(a) => money(a),
        None => "unknown".into(),
    };
    let roles: Vec<String> = cost
        .by_role
        .iter()
        .filter(|(_, c)| c.spent != Some(0.0))
        .map(|(role, c)| format!("{} {}", role.name(), amount(c.spent)))
        .collect();
    let mut s = format!("{} {} spent", amount(cost.spent), cost.currency);
    if !roles.is_empty() {
        s.push_str(&format!(" ({})", roles.join(", ")));
    }
    if cost.replayed != Some(0.0) {
        s.push_str(&format!(
            "; {} {} replayed, not spent",
            amount(cost.replayed),
            cost.currency
        ));
    }
    s
}

/// The run's repeats in one line, when some case was repeated: `2 stable, 3 unstable
/// (1 flaky); overall pass rate 83.9%; 31 repeats run, 19 saved by early stopping`.
pub(crate) fn stability_summary(sum: &Summary) -> Option<String> {
    if sum.repeats_run == 0 {
        return None;
    }
    let mut s = format!(
        "{} stable, {} unstable ({} flaky)",
        sum.stable_cases, sum.unstable_cases, sum.flaky_cases
    );
    if let Some(rate) = sum.overall_pass_rate {
        s.push_str(&format!("; overall pass rate {}", percent(rate)));
    }
    s.push_str(&format!("; {} repeats run", sum.repeats_run));
    if sum.repeats_saved > 0 {
        s.push_str(&format!(", {} saved by early stopping", sum.repeats_saved));
    }
    Some(s)
}

/// An amount for messages: up to six decimals, no trailing zeros (`0.0125`).
pub(crate) fn money(amount: f64) -> String {
    let s = format!("{amount:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod money_tests {
    use super::money;

    #[test]
    fn money_reads_well() {
        assert_eq!(money(0.0125), "0.0125");
        assert_eq!(money(2.0), "2");
        assert_eq!(money(0.0), "0");
        assert_eq!(money(0.000_000_4), "0");
    }
}
