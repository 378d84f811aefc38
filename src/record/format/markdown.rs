//! The Markdown report (`-o report.md`): a summary people read, in a pull request, a
//! job summary (`$GITHUB_STEP_SUMMARY`) or a terminal.

use std::fmt::Write;

use super::common::{
    avg_turns, clean, command_line, first_line, is_failing, secs, sorted, span_name, span_rows,
    span_status, spans_count, status_name, summary_for, tokens_line, tool_call_label,
    tool_call_text, traced, transcript, turns_label,
};
use crate::record::RunInfo;
use crate::record::{CaseReport, Status, Summary, TurnReport};

/// Markdown: a title with the verdict, the run's environment, a counts table, a table of
/// every case (status, trial, name, mode, turns, duration; sorted by trial name), then
/// for every failed, errored or timed-out case its transcript (each turn's input, reply,
/// tool calls, assertion verdicts with the failures' messages, checkpoints, error) in a
/// fenced block followed by each traced turn's span tree as a nested list, the span
/// trees of the other traced cases (with the tool calls read from their spans, marked
/// "from trace"), and the skipped cases with their reasons. User text outside fenced
/// blocks is escaped, so a reply cannot add markup; ANSI escapes are removed.
pub fn render(run: &RunInfo, summary: &Summary, cases: &[CaseReport]) -> String {
    let sum = summary_for(run, summary, cases);
    let cases = sorted(cases);
    let mut s = String::new();
    heading(&mut s, run, &sum);
    summary_section(&mut s, &sum);
    cases_table(&mut s, &cases);
    failures(&mut s, &cases);
    other_traces(&mut s, &cases);
    skipped(&mut s, &cases);
    let mut s = s.trim_end().to_string();
    s.push('\n');
    s
}

/// The title, the verdict line and the run's environment.
fn heading(s: &mut String, run: &RunInfo, sum: &Summary) {
    let verdict = if sum.ok() {
        "✅ **PASSED**"
    } else {
        "❌ **FAILED**"
    };
    let _ = writeln!(s, "# agentest report\n");
    let mut line = format!("{verdict}: {} passed, {} failed", sum.passed, sum.failed);
    if sum.timeouts > 0 {
        let _ = write!(line, " ({} timed out)", sum.timeouts);
    }
    if sum.inconclusive > 0 {
        let _ = write!(line, ", {} inconclusive", sum.inconclusive);
    }
    let _ = write!(
        line,
        ", {}, {} skipped of {} in {}",
        crate::util::count(sum.errors, "error", "errors"),
        sum.skipped,
        crate::util::count(sum.total, "case", "cases"),
        secs(sum.duration_ms)
    );
    let _ = writeln!(s, "{line}\n");
    for (label, value) in [
        ("Agent", run.agent.clone()),
        ("Input", run.input.clone()),
        ("Started", run.started_at.clone()),
        ("Command", command_line(&run.command)),
    ] {
        if !value.is_empty() {
            let _ = writeln!(s, "- {label}: {}", code(&value));
        }
    }
    let _ = writeln!(
        s,
        "- Version: agentest {} ({}/{})\n",
        inline(&run.agentest_version),
        std::env::consts::OS,
        std::env::consts::ARCH
    );
}

/// The counts table and the run-wide lines under it (tokens, calls, cost, stops).
fn summary_section(s: &mut String, sum: &Summary) {
    let _ = writeln!(s, "## Summary\n");
    let _ = writeln!(
        s,
        "| Total | Passed | Failed | Timed out | Errors | Skipped | Turns | Avg turns | Time |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let _ = writeln!(
        s,
        "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {} |\n",
        sum.total,
        sum.passed,
        sum.failed,
        sum.timeouts,
        sum.errors,
        sum.skipped,
        sum.total_turns,
        avg_turns(sum),
        secs(sum.duration_ms)
    );
    if let Some(tokens) = tokens_line(&sum.usage) {
        let _ = writeln!(s, "Tokens: {tokens}\n");
    }
    if let Some(tokens) = tokens_line(&sum.replayed_usage) {
        let _ = writeln!(s, "Replayed from cassettes (not spent): {tokens}\n");
    }
    if sum.model_calls > 0 {
        let _ = writeln!(
            s,
            "Model calls: {} ({} retried)\n",
            sum.model_calls, sum.retries
        );
    }
    if let Some(cost) = &sum.cost {
        let _ = writeln!(
            s,
            "Cost: {}\n",
            crate::record::format::common::cost_line(cost)
        );
    }
    if let Some(line) = crate::record::format::common::stability_summary(sum) {
        let _ = writeln!(s, "Stability: {line}\n");
    }
    if sum.stopped_early {
        let _ = writeln!(
            s,
            "Stopped early (`--fail-fast`): cases after the first failure were not run.\n"
        );
    }
    if sum.over_budget {
        let _ = writeln!(
            s,
            "Stopped by the run's budget: cases not started are reported as not run.\n"
        );
    }
}

/// One row per case, in the sorted order.
fn cases_table(s: &mut String, cases: &[&CaseReport]) {
    let _ = writeln!(s, "## Cases\n");
    if cases.is_empty() {
        let _ = writeln!(s, "No cases ran.\n");
    } else {
        let _ = writeln!(s, "| Status | Case | Name | Mode | Turns | Duration |");
        let _ = writeln!(s, "|---|---|---|---|---:|---:|");
        for c in cases {
            let name = if c.name != c.id {
                cell(&c.name)
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "| {} {} | {} | {name} | {} | {} | {} |",
                icon(c.status),
                status_name(c.status),
                if c.flaky() {
                    format!("{} (flaky)", cell(&c.trial))
                } else {
                    cell(&c.trial)
                },
                c.mode.as_deref().map(cell).unwrap_or_else(|| "—".into()),
                c.total_turns,
                secs(c.duration_ms)
            );
        }
        s.push('\n');
    }
}

/// Every failed, errored, timed-out or inconclusive case with its facts, transcript and
/// traces.
fn failures(s: &mut String, cases: &[&CaseReport]) {
    let failing: Vec<&&CaseReport> = cases.iter().filter(|c| is_failing(c.status)).collect();
    if !failing.is_empty() {
        let _ = writeln!(s, "## Failures\n");
        for c in failing {
            let title = if c.name != c.id {
                format!("{} — {}", inline(&c.trial), inline(&c.name))
            } else {
                inline(&c.trial)
            };
            let _ = writeln!(s, "### {} {title}\n", icon(c.status));
            let mut facts = vec![format!("**{}**", status_name(c.status))];
            if let Some(m) = &c.mode {
                facts.push(inline(m));
                facts.push(turns_label(c.total_turns));
            }
            facts.push(secs(c.duration_ms));
            facts.push(code(&c.location));
            let _ = writeln!(s, "{}\n", facts.join(" · "));
            if let Some(e) = &c.error {
                let _ = writeln!(s, "> {}\n", inline(&first_line(e, 300)));
            }
            if let Some(line) = crate::record::format::common::stability_line(c) {
                let _ = writeln!(s, "Repeats: {}\n", inline(&line));
            }
            let _ = writeln!(s, "{}\n", fenced(&transcript(c)));
            for t in &c.turns {
                trace_block(s, t, false);
            }
        }
    }
}

/// The span trees of the cases that did not fail.
fn other_traces(s: &mut String, cases: &[&CaseReport]) {
    // The other cases' traces: a failed case's are with its transcript.
    let traced: Vec<&&CaseReport> = cases
        .iter()
        .filter(|c| !is_failing(c.status) && c.turns.iter().any(has_trace))
        .collect();
    if !traced.is_empty() {
        let _ = writeln!(s, "## Traces\n");
        for c in traced {
            let _ = writeln!(s, "### {} {}\n", icon(c.status), inline(&c.trial));
            for t in &c.turns {
                trace_block(s, t, true);
            }
        }
    }
}

/// The skipped cases with their reasons.
fn skipped(s: &mut String, cases: &[&CaseReport]) {
    let skipped: Vec<&&CaseReport> = cases
        .iter()
        .filter(|c| c.status == Status::Skipped)
        .collect();
    if !skipped.is_empty() {
        let _ = writeln!(s, "## Skipped\n");
        for c in skipped {
            let reason = c
                .error
                .as_deref()
                .map(|e| format!(": {}", inline(&first_line(e, 300))))
                .unwrap_or_default();
            let _ = writeln!(s, "- {}{reason}", inline(&c.trial));
        }
        s.push('\n');
    }
}

/// Whether a turn has anything from the agent's traces to show.
fn has_trace(t: &TurnReport) -> bool {
    !t.spans.is_empty() || t.spans_note.is_some() || t.tool_calls.iter().any(traced)
}

/// A traced turn's span tree as a nested list, each span an item under its parent
/// (name, duration, start offset, status, and the tool or model it stands for), after a
/// line with its count; with `calls`, the tool calls read from its spans before it.
fn trace_block(s: &mut String, t: &TurnReport, calls: bool) {
    if !has_trace(t) {
        return;
    }
    let count = spans_count(&t.spans).unwrap_or_else(|| "no spans".into());
    let _ = writeln!(s, "**Turn {}** · trace: {}\n", t.turn, inline(&count));
    if calls {
        for c in t.tool_calls.iter().filter(|c| traced(c)) {
            let _ = writeln!(
                s,
                "{}: {}\n",
                inline(tool_call_label(c)),
                code(&first_line(&tool_call_text(c), 300))
            );
        }
    }
    let rows = span_rows(&t.spans);
    for row in &rows {
        let mut line = format!(
            "{}- {} {} at +{}",
            "  ".repeat(row.depth),
            code(&span_name(row.node)),
            secs(row.node.duration_ms),
            secs(row.node.start_ms)
        );
        match span_status(row.node) {
            Some(status) if status.starts_with("error") => {
                let _ = write!(line, " · **{}**", inline(&status));
            }
            Some(status) => {
                let _ = write!(line, " · {}", inline(&status));
            }
            None => {}
        }
        if !row.detail.is_empty() {
            let _ = write!(line, " · {}", inline(&row.detail));
        }
        let _ = writeln!(s, "{line}");
    }
    if !rows.is_empty() {
        s.push('\n');
    }
    if let Some(note) = &t.spans_note {
        let _ = writeln!(s, "_{}_\n", inline(&first_line(note, 300)));
    }
}

fn icon(status: Status) -> &'static str {
    match status {
        Status::Passed => "✅",
        Status::Failed => "❌",
        Status::Error => "💥",
        Status::Timeout => "⏱️",
        Status::Skipped => "⏭️",
        Status::Inconclusive => "❔",
    }
}

/// Text on one line with every character Markdown (or the HTML it allows) could read as
/// markup backslash-escaped.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in clean(text).chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '#' | '&' | '!' | '{'
            | '}' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Text for a table cell: inline-escaped (which escapes `|` too).
fn cell(text: &str) -> String {
    inline(text)
}

/// A code span: backticks one longer than the longest run inside, on one line.
fn code(text: &str) -> String {
    let one_line: String = clean(text)
        .chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect();
    let ticks = "`".repeat(longest_run(&one_line, '`') + 1);
    let pad = if one_line.starts_with('`') || one_line.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{one_line}{pad}{ticks}")
}

/// A fenced `text` block whose fence is longer than any backtick run in `text`.
fn fenced(text: &str) -> String {
    let fence = "`".repeat((longest_run(text, '`') + 1).max(3));
    format!("{fence}text\n{text}\n{fence}")
}

fn longest_run(text: &str, ch: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in text.chars() {
        if c == ch {
            run += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::format::common::{sample, summary_for};

    #[test]
    fn counts_cases_and_failing_transcripts() {
        let (run, summary, cases) = sample();
        let md = render(&run, &summary, &cases);
        assert!(md.starts_with("# agentest report\n\n❌ **FAILED**: 1 passed, 3 failed (1 timed out), 2 errors, 1 skipped of 7 cases in 400ms\n"), "{md}");
        let mut one = summary.clone();
        one.errors = 1;
        let one = render(&run, &one, &cases);
        assert!(
            one.contains(" 1 error, 1 skipped"),
            "one error is not \"1 errors\": {one}"
        );
        assert!(
            md.contains("| 7 | 1 | 3 | 1 | 2 | 1 | 5 | 0.8 | 400ms |"),
            "{md}"
        );
        assert!(md.contains("| ✅ passed | expense::policy | Meal policy | single | 1 | 15ms |"));
        assert!(md.contains("| 💥 error | flow::bad |  | — | 0 | 0ms |"));
        assert!(md.contains("### ❌ expense::xss — Echo \\<b\\>markup\\</b\\> \\& \"quotes\"\n"));
        assert!(md.contains("### ⏱️ flow::slow\n"));
        assert!(md.contains("> turn 1: agent process exited before replying (exit status: 3)\n"));
        // The transcript, fenced.
        assert!(md.contains("```text\nexpense::xss — "));
        assert!(md.contains("  user: <script>alert(1)</script> ]]> \u{fffd} red\n"));
        assert!(md.contains("  ✗ contains \"nope\"\n      expected the reply to contain \"nope\""));
        assert!(md.contains("checkpoints\n  ✓ ask [required]: reached at turn 1: contains \"type\"\n  ✗ drafted (drafts the expense) [required]: not reached: no tool was called\n  ✓ no-policy [forbidden]: never matched"), "{md}");
        assert!(md.contains("## Skipped\n\n- flow::later: skip: true in the case\n"));
        assert!(
            !md.contains("expense::policy\nPASSED"),
            "passing cases have no transcript"
        );
        assert!(!md.contains('\u{1b}'));
        assert!(md.ends_with("```\n\n## Skipped\n\n- flow::later: skip: true in the case\n"));
    }

    /// A failed traced case's spans follow its transcript as a nested list; a passing
    /// one's are under Traces with the calls read from them. Markup in span names is in
    /// code spans, and in other text escaped.
    #[test]
    fn span_trees_as_lists() {
        let (run, summary, _) = sample();
        let failed = crate::record::format::common::traced_sample();
        let mut passed = failed.clone();
        passed.id = "calm".into();
        passed.trial = "traced::calm".into();
        passed.status = Status::Passed;
        passed.error = None;
        let md = render(&run, &summary, &[failed, passed]);
        let tree = "**Turn 1** · trace: 4 spans (1 tool, 1 model call)\n\n";
        let list = "- `invoke_agent weather` 200ms at +0ms · ok\n\
             \x20 - `chat gpt-4o` 50ms at +5ms · model gpt-4o tokens 12/5\n\
             \x20 - `execute_tool get_weather` 100ms at +60ms · **error: no such city**\n\
             \x20 - `<script>alert(1)</script>` 10ms at +170ms\n\n\
             _2 spans not kept (over \\[traces\\] max\\_spans)_\n";
        assert!(
            md.contains(
                "  tool call (from trace): get_weather({\"city\":\"Paris\"}) !! error: no such city\n  trace: 4 spans (1 tool, 1 model call)\n"
            ),
            "{md}"
        );
        assert!(
            md.contains(&format!("\n```\n\n{tree}{list}\n## Traces\n")),
            "the failure's tree after its transcript: {md}"
        );
        assert!(
            md.contains(&format!(
                "## Traces\n\n### ✅ traced::calm\n\n{tree}\
                 tool call (from trace): `get_weather({{\"city\":\"Paris\"}}) !! error: no such city`\n\n{list}"
            )),
            "{md}"
        );
        assert!(!md.contains("### ❌ traced::weather\n\n**Turn"), "{md}");
        assert_eq!(
            md.matches("<script>").count(),
            2,
            "only in code spans: {md}"
        );
        // Without traces, no Traces section.
        let (run, summary, cases) = sample();
        assert!(!render(&run, &summary, &cases).contains("## Traces"));
    }

    #[test]
    fn escaping() {
        assert_eq!(inline("a|b\n<i>*x*</i>"), "a\\|b \\<i\\>\\*x\\*\\</i\\>");
        assert_eq!(code("a `b` c"), "``a `b` c``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(fenced("```\nx"), "````text\n```\nx\n````");
    }

    #[test]
    fn all_passed() {
        let (run, _, cases) = sample();
        let cases: Vec<CaseReport> = cases
            .into_iter()
            .filter(|c| c.status == Status::Passed)
            .collect();
        let mut summary = Summary::new();
        cases.iter().for_each(|c| summary.add(c));
        let md = render(&run, &summary, &cases);
        assert!(
            md.contains(
                "✅ **PASSED**: 1 passed, 0 failed, 0 errors, 0 skipped of 1 case in 410ms"
            ),
            "{md}"
        );
        assert!(!md.contains("## Failures"));
    }

    #[test]
    fn an_empty_summary_is_counted_from_the_cases() {
        let (run, summary, cases) = sample();
        let counted = summary_for(&run, &Summary::new(), &cases);
        assert_eq!(counted.total, summary.total);
        assert_eq!(counted.timeouts, 1);
        assert_eq!(counted.duration_ms, run.duration_ms);
        assert_eq!(counted.kind, "summary");
        let md = render(&run, &Summary::new(), &cases);
        assert!(md.contains("of 7 cases"), "{md}");
    }
}
