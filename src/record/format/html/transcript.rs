//! One case in the HTML report: its conversation as chat bubbles, tool calls,
//! verdicts and checkpoints, and each traced turn's spans as a waterfall.

use super::escape::esc;
use crate::protocol::{SpanRole, ToolCall};
use crate::record::format::common::{
    juror_said, secs, span_name, span_rows, span_status, spans_count, spans_end_ms, traced,
    turns_label, SpanRow,
};
use crate::record::AwaitReason;
use crate::record::{AssertionReport, CaseReport, CheckpointReport, Status, TurnReport};
use serde_json::Value;
use std::fmt::Write;

pub(super) fn case_detail(s: &mut String, id: &str, c: &CaseReport) {
    facts(s, c);
    if let Some(e) = &c.error {
        problem(s, c, e);
    }
    if !c.turns.is_empty() {
        chat(s, id, c);
    } else if c.mode.is_some() && c.status != Status::Skipped {
        s.push_str("<p class=\"muted\">No turn completed.</p>\n");
    }
    if !c.final_assertions.is_empty() {
        s.push_str("<div class=\"block\"><h4>Final assertions</h4>");
        verdicts(s, &c.final_assertions);
        s.push_str("</div>\n");
    }
    if !c.checkpoints.is_empty() {
        checkpoints(s, &c.checkpoints);
    }
}

/// The case's facts in a row: trial, location, agent, mode, duration, usage, repeats.
fn facts(s: &mut String, c: &CaseReport) {
    s.push_str("<div class=\"facts\">");
    let mut fact = |label: &str, value_html: String| {
        let _ = write!(s, "<span><b>{label}</b> {value_html}</span>");
    };
    fact("Trial", format!("<code>{}</code>", esc(&c.trial)));
    fact("Location", format!("<code>{}</code>", esc(&c.location)));
    if let Some(a) = &c.agent {
        fact("Agent", esc(a));
    }
    if let Some(m) = &c.mode {
        fact("Mode", esc(m));
        fact("Turns", esc(&turns_label(c.total_turns)));
    }
    fact("Duration", secs(c.duration_ms));
    if let Some(sim) = &c.simulator {
        fact("Simulator", esc(sim));
    }
    if let Some(t) = &c.termination {
        fact("Ended", esc(t.name()));
    }
    if let Some(tokens) = crate::record::format::common::tokens_line(&c.usage) {
        fact("Tokens", esc(&tokens));
    }
    if let Some(tokens) = crate::record::format::common::tokens_line(&c.replayed_usage) {
        fact("Replayed (not spent)", esc(&tokens));
    }
    if let Some(cost) = &c.cost {
        fact("Cost", esc(&crate::record::format::common::cost_line(cost)));
    }
    if let Some(line) = crate::record::format::common::stability_line(c) {
        let flaky = if c.flaky() { "FLAKY · " } else { "" };
        fact("Repeats", esc(&format!("{flaky}{line}")));
    }
    if c.model_calls > 0 {
        fact(
            "Model calls",
            format!("{} ({} retried)", c.model_calls, c.retries),
        );
    }
    if let Some(k) = &c.cassette {
        fact(
            "Cassette",
            format!(
                "<code>{}</code> ({}: {} replayed, {} recorded, {} unused)",
                esc(&k.file),
                esc(&k.mode),
                k.replayed,
                k.recorded,
                k.unused
            ),
        );
    }
    s.push_str("</div>\n");
}

/// The case's error, titled by what it means for the case's status.
fn problem(s: &mut String, c: &CaseReport, e: &str) {
    let (title, class) = match (c.mode.is_none(), c.status) {
        (true, _) => ("Failed to load", "error"),
        (_, Status::Failed) => ("Why it failed", "failed"),
        (_, Status::Timeout) => ("Timed out", "timeout"),
        (_, Status::Error) => ("Error", "error"),
        (_, Status::Skipped) => ("Skipped", "skipped"),
        (_, Status::Passed) => ("Note", "passed"),
        (_, Status::Inconclusive) => ("Why it is inconclusive", "inconclusive"),
    };
    let _ = writeln!(
        s,
        "<div class=\"problem {class}\"><div class=\"problem-title\">{title}</div>\
             <pre class=\"error-text\">{}</pre></div>",
        diff_html(e)
    );
}

/// The case's turns as a chat, a scenario's under the steps they belong to.
fn chat(s: &mut String, id: &str, c: &CaseReport) {
    s.push_str("<ol class=\"chat\">\n");
    let mut step = None;
    for t in &c.turns {
        // A scenario's turns, under the step they belong to.
        if t.step.is_some() && t.step != step {
            step = t.step.clone();
            if let Some(st) = &step {
                let _ = writeln!(
                    s,
                    "<li class=\"step\"><span class=\"step-name\">{}</span>\
                         <span class=\"pill\">{}</span></li>",
                    esc(&st.to_string()),
                    esc(&st.kind)
                );
            }
        }
        turn(s, id, t);
    }
    s.push_str("</ol>\n");
}

fn turn(s: &mut String, case_id: &str, t: &TurnReport) {
    let (class, label) = if t.error.is_some() {
        ("error", "error")
    } else if t.ok() {
        ("passed", "passed")
    } else {
        ("failed", "failed")
    };
    // Where the input came from, when not the script (a one-turn case has no script to
    // speak of): the console's [Initial] / [Simulated] / [Human] markers.
    let source = match t.input_source.as_str() {
        "" | "static" => String::new(),
        other => format!("<span class=\"pill\">{}</span>", esc(other)),
    };
    let _ = write!(
        s,
        "<li class=\"turn {class}\" id=\"{case_id}-turn-{0}\"><div class=\"turn-head\">\
         <span class=\"turn-no\">Turn {0}</span>{source}\
         <span class=\"dur\">{1}</span>",
        t.turn,
        crate::record::format::common::turn_time(t)
    );
    if let Some(u) = &t.usage {
        let traced = if t.usage_traced {
            " <span title=\"read from the agent's model spans\">(traced)</span>"
        } else {
            ""
        };
        let _ = write!(
            s,
            "<span class=\"dur\">{} in / {} out tokens{traced}</span>",
            u.input_tokens, u.output_tokens
        );
    }
    let _ = writeln!(
        s,
        "<span class=\"turn-verdict {class}\">{label}</span></div>"
    );
    if let Some(code) = &t.code {
        code_run(s, t, code);
    } else {
        exchange(s, t);
    }
    waterfall(s, t);
    if !t.assertions.is_empty() {
        verdicts(s, &t.assertions);
    }
    if let Some(e) = &t.ending {
        let _ = write!(
            s,
            "<div class=\"note ending\">Ended: {}</div>",
            esc(&e.to_string())
        );
    }
    let hits: Vec<&AssertionReport> = t.checkpoints.iter().filter(|a| a.held()).collect();
    if !hits.is_empty() {
        s.push_str("<ul class=\"verdicts\">");
        for a in hits {
            let _ = write!(
                s,
                "<li class=\"v cp\"><span class=\"mark\">◆</span><div><span class=\"label\">{}</span> \
                 <span class=\"muted\">{}</span></div></li>",
                esc(&a.label),
                esc(&a.message)
            );
        }
        s.push_str("</ul>");
    }
    if let Some(e) = &t.error {
        let _ = write!(
            s,
            "<div class=\"problem error\"><div class=\"problem-title\">Turn error</div>\
             <pre class=\"error-text\">{}</pre></div>",
            diff_html(e)
        );
    }
    s.push_str("</li>\n");
}

/// A turn's user message and the agent's reply, tool calls and data.
fn exchange(s: &mut String, t: &TurnReport) {
    let who = match t.input_source.as_str() {
        "simulated" => "Simulated user",
        "human" => "Person",
        _ => "User",
    };
    let _ = write!(
        s,
        "<div class=\"msg user\"><div class=\"who\">{who}</div><div class=\"bubble\">{}</div>",
        esc(&t.input)
    );
    if let Some(r) = &t.reasoning {
        let _ = write!(s, "<div class=\"reasoning\">Simulator: {}</div>", esc(r));
    }
    s.push_str("</div>\n");
    let has_reply = match &t.output {
        Value::Null => false,
        Value::String(text) => !text.is_empty() || t.tool_calls.is_empty(),
        _ => true,
    };
    if has_reply || !t.tool_calls.is_empty() || t.data.is_some() || t.awaiting_input {
        s.push_str("<div class=\"msg agent\"><div class=\"who\">Agent</div>");
        match &t.output {
            Value::String(text) if has_reply => {
                let _ = write!(s, "<div class=\"bubble\">{}</div>", esc(text));
            }
            Value::Null | Value::String(_) => {}
            other => {
                let _ = write!(
                    s,
                    "<div class=\"bubble json\"><pre>{}</pre></div>",
                    esc(&pretty(other))
                );
            }
        }
        for call in &t.tool_calls {
            tool_call(s, call);
        }
        if let Some(d) = &t.data {
            let _ = write!(
                s,
                "<details class=\"data\"><summary>data</summary><pre>{}</pre></details>",
                esc(&pretty(d))
            );
        }
        if t.awaiting_input {
            let why = match t.awaiting_reason {
                Some(AwaitReason::AgentDeclared) => " (the agent said so)",
                Some(AwaitReason::ToolRequiresConfirmation) => " (a tool asks the user)",
                Some(AwaitReason::ContentIsQuestion) => " (the reply asks a question)",
                Some(AwaitReason::Completed) | None => "",
            };
            let _ = write!(s, "<div class=\"note\">waits for the user{why}</div>");
        }
        s.push_str("</div>\n");
    }
}

/// One tool call in the agent's message: its name, arguments, and result or error.
fn tool_call(s: &mut String, call: &ToolCall) {
    let state = if call.error.is_some() {
        "<span class=\"tool-state err\">failed</span>"
    } else if call.result.is_some() {
        "<span class=\"tool-state ok\">returned</span>"
    } else {
        ""
    };
    let from = if traced(call) {
        "<span class=\"tool-src\" title=\"read from the agent's OpenTelemetry spans\">\
                 from trace</span>"
    } else {
        ""
    };
    let _ = write!(
        s,
        "<div class=\"tool\"><div class=\"tool-head\"><span class=\"tool-tag\">tool call</span>\
                 <code class=\"tool-name\">{}</code>{from}{state}</div>\
                 <div class=\"kv\"><div class=\"k\">arguments</div><pre>{}</pre></div>",
        esc(&call.name),
        esc(&pretty(&call.arguments_json()))
    );
    if let Some(r) = &call.result {
        let _ = write!(
            s,
            "<div class=\"kv\"><div class=\"k\">result</div><pre>{}</pre></div>",
            esc(&pretty(r))
        );
    }
    if let Some(e) = &call.error {
        let _ = write!(
            s,
            "<div class=\"kv err\"><div class=\"k\">error</div><pre>{}</pre></div>",
            esc(&pretty(e))
        );
    }
    s.push_str("</div>");
}

/// A traced turn's spans as a waterfall in a collapsed `<details>`: one row per span
/// (depth first), its name indented by depth with what it stands for (tool, model call)
/// and its status, a bar placed by its start and sized by its duration on the turn's
/// time line (from its first span's start to its last span's end), and its duration.
/// A span with attributes or a status opens on a click to a table of them. Everything
/// the agent sent is escaped.
fn waterfall(s: &mut String, t: &TurnReport) {
    let Some(count) = spans_count(&t.spans) else {
        if let Some(note) = &t.spans_note {
            let _ = write!(s, "<div class=\"note\">Trace: {}</div>", esc(note));
        }
        return;
    };
    let end = spans_end_ms(&t.spans);
    let _ = write!(
        s,
        "<details class=\"spans\"><summary>Trace <span class=\"muted\">{} · {}</span></summary>\
         <div class=\"wf\"><div class=\"wf-row wf-head\"><span>Span</span>\
         <span>0 – {}</span><span class=\"wf-dur\">Duration</span></div>",
        esc(&count),
        secs(end),
        secs(end)
    );
    let total = end.max(1) as f64;
    for row in span_rows(&t.spans) {
        span_row(s, &row, total);
    }
    s.push_str("</div>");
    if let Some(note) = &t.spans_note {
        let _ = write!(s, "<div class=\"note\">{}</div>", esc(note));
    }
    s.push_str("</details>\n");
}

/// One span's row in the waterfall; `total` is the turn's time line in milliseconds.
fn span_row(s: &mut String, row: &SpanRow<'_>, total: f64) {
    let node = row.node;
    let status = span_status(node);
    let failed = status.as_deref().is_some_and(|st| st.starts_with("error"));
    let (role_class, role_tag) = match row.role {
        SpanRole::Tool => (" tool", "<span class=\"wf-tag\">tool</span>"),
        SpanRole::Model => (" model", "<span class=\"wf-tag\">model</span>"),
        SpanRole::Other => ("", ""),
    };
    let left = (node.start_ms as f64 * 100.0 / total).clamp(0.0, 100.0);
    let width = (node.duration_ms as f64 * 100.0 / total).clamp(0.0, 100.0 - left);
    let mut head = format!(
        "<span class=\"wf-name\" style=\"padding-left:{}px\">{role_tag}\
             <span class=\"wf-n\">{}</span>",
        row.depth * 14,
        esc(&span_name(node))
    );
    if !row.detail.is_empty() {
        let _ = write!(head, " <span class=\"wf-d\">{}</span>", esc(&row.detail));
    }
    if let Some(st) = &status {
        let class = if failed { "err" } else { "ok" };
        let _ = write!(head, " <span class=\"wf-st {class}\">{}</span>", esc(st));
    }
    let _ = write!(
        head,
        "</span><span class=\"wf-track\"><span class=\"wf-bar\" \
             style=\"left:{left:.3}%;width:{width:.3}%\"></span></span>\
             <span class=\"wf-dur\">{}</span>",
        secs(node.duration_ms)
    );
    let class = format!("wf-row{role_class}{}", if failed { " err" } else { "" });
    let title = esc(&format!(
        "{} ({} at +{})",
        span_name(node),
        secs(node.duration_ms),
        secs(node.start_ms)
    ));
    if node.attributes.is_empty() && node.kind.is_empty() && status.is_none() {
        let _ = write!(s, "<div class=\"{class}\" title=\"{title}\">{head}</div>");
        return;
    }
    let _ = write!(
        s,
        "<details class=\"wf-span\"><summary class=\"{class}\" title=\"{title}\">{head}</summary>\
             <table class=\"wf-attrs\"><tbody>"
    );
    let mut attr = |k: &str, v: &str| {
        let _ = write!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    };
    if !node.kind.is_empty() {
        attr("kind", &node.kind);
    }
    if let Some(st) = &node.status {
        attr("status", st);
    }
    for (k, v) in &node.attributes {
        attr(k, &value_text(v));
    }
    s.push_str("</tbody></table></details>");
}

/// A scenario's code step: the code, its output, exit code, stderr and the files.
fn code_run(s: &mut String, t: &TurnReport, code: &crate::record::CodeRun) {
    let _ = writeln!(
        s,
        "<div class=\"msg user\"><div class=\"who\">Code ({})</div>\
         <div class=\"bubble code\"><pre>{}</pre></div></div>",
        esc(&code.lang),
        esc(&t.input)
    );
    let exit = code.exit_text();
    let _ = write!(
        s,
        "<div class=\"msg agent\"><div class=\"who\">Result: {exit}</div>\
         <div class=\"kv\"><div class=\"k\">stdout</div><pre>{}</pre></div>",
        esc(&value_text(&t.output))
    );
    if !code.stderr.is_empty() {
        let _ = write!(
            s,
            "<div class=\"kv err\"><div class=\"k\">stderr</div><pre>{}</pre></div>",
            esc(&code.stderr)
        );
    }
    if !code.files.is_empty() {
        let _ = write!(
            s,
            "<div class=\"kv\"><div class=\"k\">files</div><pre>{}</pre></div>",
            esc(&code.files.join("\n"))
        );
    }
    s.push_str("</div>\n");
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn verdicts(s: &mut String, list: &[AssertionReport]) {
    s.push_str("<ul class=\"verdicts\">");
    for a in list {
        if a.held() {
            let _ = write!(
                s,
                "<li class=\"v pass\"><span class=\"mark\">✓</span><div><span class=\"label\">{}</span>{}</div></li>",
                esc(&a.label),
                // A judge's pass keeps its reason: a false pass must be auditable.
                a.judgment.as_ref().map_or_else(String::new, |j| format!(
                    " <span class=\"muted\">{}{}</span>",
                    esc(&j.reason),
                    j.score.map(|v| format!(" (score {v})")).unwrap_or_default()
                ))
            );
        } else {
            let (class, mark) = if a.inconclusive() {
                ("undecided", "?")
            } else {
                ("fail", "✗")
            };
            let _ = write!(
                s,
                "<li class=\"v {class}\"><span class=\"mark\">{mark}</span><div><span class=\"label\">{}</span>",
                esc(&a.label)
            );
            if !a.message.is_empty() && a.message != a.label {
                let _ = write!(s, "<pre class=\"why\">{}</pre>", esc(&a.message));
            }
            s.push_str("</div></li>");
        }
        // A jury's every juror, so its verdict can be checked juror by juror.
        let jurors = a.judgment.iter().flat_map(|j| &j.jurors);
        for v in jurors {
            let said = juror_said(v);
            let _ = write!(
                s,
                "<li class=\"v juror\"><span class=\"mark\">·</span><div><span class=\"muted\">{}: {}</span></div></li>",
                esc(&v.judge),
                esc(&said)
            );
        }
    }
    s.push_str("</ul>\n");
}

fn checkpoints(s: &mut String, list: &[CheckpointReport]) {
    s.push_str(
        "<div class=\"block\"><h4>Checkpoints</h4><table class=\"checkpoints\"><thead><tr>\
         <th></th><th>Checkpoint</th><th>Kind</th><th>Result</th><th>Detail</th></tr></thead><tbody>",
    );
    for c in list {
        let ok = if c.forbidden { !c.reached } else { c.reached };
        let kind = if c.forbidden {
            "forbidden"
        } else if c.required {
            "required"
        } else {
            "optional"
        };
        let result = match (c.forbidden, c.reached, c.reached_at_turn) {
            (true, false, _) => "never matched".to_string(),
            (true, true, Some(n)) => format!("matched at turn {n}"),
            (true, true, None) => "matched".to_string(),
            (false, true, Some(n)) => format!("reached at turn {n}"),
            (false, true, None) => "reached".to_string(),
            (false, false, _) => "not reached".to_string(),
        };
        let class = match (ok, c.required || c.forbidden) {
            (true, _) => "pass",
            (false, true) => "fail",
            (false, false) => "miss",
        };
        let detail = if c.message.is_empty() {
            String::new()
        } else if ok {
            esc(&c.message)
        } else {
            format!(
                "<span class=\"muted\">last failure:</span> {}",
                esc(&c.message)
            )
        };
        let desc = c
            .description
            .as_deref()
            .map(|d| format!("<div class=\"muted\">{}</div>", esc(d)))
            .unwrap_or_default();
        let _ = write!(
            s,
            "<tr class=\"{class}\"><td class=\"mark\">{}</td><td><code>{}</code>{desc}</td>\
             <td>{kind}</td><td>{}</td><td>{detail}</td></tr>",
            if ok { "✓" } else { "✗" },
            esc(&c.id),
            esc(&result)
        );
    }
    s.push_str("</tbody></table></div>\n");
}

/// JSON pretty-printed; a string holding JSON is parsed first, other strings are shown as
/// they are.
fn pretty(v: &Value) -> String {
    match v {
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(inner @ (Value::Object(_) | Value::Array(_))) => pretty(&inner),
            _ => text.clone(),
        },
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// Escaped text whose unified-diff lines (`--- `, `+++ `, `@@`, `+`, `-`) are coloured
/// when the text holds a diff.
fn diff_html(text: &str) -> String {
    let is_diff =
        text.lines().any(|l| l.starts_with("--- ")) && text.lines().any(|l| l.starts_with("+++ "));
    if !is_diff {
        return esc(text);
    }
    let mut out = String::new();
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let class = if line.starts_with("--- ") || line.starts_with("+++ ") {
            Some("dh")
        } else if line.starts_with("@@") {
            Some("dc")
        } else if line.starts_with('+') {
            Some("da")
        } else if line.starts_with('-') {
            Some("dd")
        } else {
            None
        };
        match class {
            Some(c) => {
                let _ = write!(out, "<span class=\"{c}\">{}</span>", esc(line));
            }
            None => out.push_str(&esc(line)),
        }
    }
    out
}
