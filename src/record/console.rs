//! The binary's console output: the seed's tree of cases and turns, and the summary block.

use std::fmt::Write;

use crate::record::format::common::{secs, turn_time};
use crate::record::{AssertionReport, CaseReport, Status, Summary, TurnReport};
use crate::util::value_text;

const HEAVY: &str = "═══════════════════════════════════════════════════════════════";
const LIGHT: &str = "───────────────────────────────────────────────────────────────";

/// How the console renders.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    /// ANSI colours on.
    pub(crate) color: bool,
    /// `-v`: replies and every assertion.
    pub(crate) verbose: bool,
    /// Show trial names (`suite::id`) instead of bare ids, when several suites run.
    pub(crate) qualified: bool,
    /// One line per passing (or skipped) case instead of its tree; failures keep theirs.
    pub(crate) compact: bool,
}

/// Runs of more cases than this print one line per passing case unless `-v` asks for
/// the tree: a passing case's tree takes four lines, so this many fill a screen.
pub(crate) const COMPACT_ABOVE: usize = 20;

impl Style {
    fn paint(&self, status: Status, text: &str) -> String {
        if !self.color {
            return text.to_string();
        }
        let code = match status {
            Status::Passed => "32",
            Status::Skipped | Status::Inconclusive => "33",
            _ => "31",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }

    fn dim(&self, text: &str) -> String {
        if self.color {
            format!("\x1b[2m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

/// The header: title, agent, config, input and case count.
pub(crate) fn header(agent: &str, config: &str, input: &str, cases: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{HEAVY}\n  Agent Test\n{HEAVY}");
    let _ = writeln!(s, "ℹ Agent: {agent}");
    let _ = writeln!(s, "ℹ Config: {config}");
    let cases = crate::util::count(cases as u64, "test case", "test cases");
    let _ = writeln!(s, "ℹ Input: {input} ({cases})");
    let _ = writeln!(s, "\n{LIGHT}\n  Running Tests\n{LIGHT}");
    s
}

fn quote(text: &str) -> String {
    let one_line = text.replace('\n', " ");
    let clipped: String = one_line.chars().take(80).collect();
    let ell = if one_line.chars().count() > 80 {
        "…"
    } else {
        ""
    };
    serde_json::Value::String(format!("{clipped}{ell}")).to_string()
}

/// Prints cases one after another in the style's layout, keeping the blank lines
/// right: a tree stands apart, one-line cases run together.
#[derive(Debug)]
pub(crate) struct Console {
    style: Style,
    /// Whether the last case printed was a one-liner (`None` before the first).
    last_one_line: Option<bool>,
}

impl Console {
    pub(crate) fn new(style: Style) -> Console {
        Console {
            style,
            last_one_line: None,
        }
    }

    /// The next case's block.
    pub(crate) fn case(&mut self, r: &CaseReport) -> String {
        let one_line = self.style.compact
            && matches!(r.status, Status::Passed | Status::Skipped)
            && r.mode.is_some();
        let after_tree = self.last_one_line != Some(true);
        self.last_one_line = Some(one_line);
        if !one_line {
            return tree_block(r, &self.style);
        }
        let line = compact_line(r, &self.style);
        if after_tree {
            format!("\n{line}")
        } else {
            line
        }
    }
}

/// The case's `[label] name (N turns)`.
fn title(r: &CaseReport, style: &Style) -> String {
    let label = if style.qualified {
        r.trial.as_str()
    } else {
        // The id: everything after the suite (a matrix's ids hold `::` too).
        r.trial.split_once("::").map_or(r.id.as_str(), |(_, id)| id)
    };
    let turns = match (r.total_turns, r.planned_turns) {
        (n, Some(of)) => format!(" ({n} of {of} turns)"),
        (0, None) => String::new(),
        (1, None) => " (1 turn)".into(),
        (n, None) => format!(" ({n} turns)"),
    };
    let name = if r.name != r.id {
        // Clipped: a name may be as long as a file (a 1 MB scenario `name`).
        format!(" {}", crate::util::clip(&r.name))
    } else {
        String::new()
    };
    format!("[{label}]{name}{turns}")
}

/// A passing or skipped case in the compact layout.
fn compact_line(r: &CaseReport, style: &Style) -> String {
    let (mark, tail) = match r.status {
        Status::Passed => {
            let repeats = match &r.stability {
                Some(st) if st.flaky => {
                    format!(", FLAKY: {} of {} runs passed", st.passed, st.runs)
                }
                Some(st) => format!(", {} of {} runs passed", st.passed, st.runs),
                None => String::new(),
            };
            ("✓", format!("PASSED ({}{repeats})", secs(r.duration_ms)))
        }
        _ => (
            "○",
            format!(
                "SKIPPED: {}",
                r.error
                    .as_deref()
                    .unwrap_or_default()
                    .lines()
                    .next()
                    .unwrap_or_default()
            ),
        ),
    };
    format!(
        "{} {} {}\n",
        style.paint(r.status, mark),
        title(r, style),
        style.paint(r.status, &tail)
    )
}

/// One case's tree: a line per turn, failures with expected and actual, the result.
fn tree_block(r: &CaseReport, style: &Style) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n► {}", title(r, style));
    if r.mode.is_none() {
        load_failed_lines(&mut s, r, style);
        return s;
    }
    if r.status == Status::Skipped {
        skipped_lines(&mut s, r, style);
        return s;
    }
    repeats_lines(&mut s, r, style);
    // A start that took no noticeable time is not worth a line.
    if let (true, Some(ms @ 10..)) = (style.verbose, r.startup_ms) {
        let _ = writeln!(
            s,
            "  ├─ {}",
            style.dim(&format!("Agent started ({})", secs(ms)))
        );
    }
    let mut step = None;
    for t in &r.turns {
        // A scenario's turns, under the step they belong to.
        if t.step.is_some() && t.step != step {
            step = t.step.clone();
            if let Some(st) = &step {
                let mut head = st.to_string();
                head[..1].make_ascii_uppercase();
                let _ = writeln!(s, "  ├─ {head}: {}", st.kind);
            }
        }
        turn_lines(&mut s, t, style);
    }
    if !r.final_assertions.is_empty() {
        let st = checks_status(&r.final_assertions);
        let _ = writeln!(s, "  ├─ Final Assertions: {}", style.paint(st, st.label()));
        assertion_lines(&mut s, &r.final_assertions, style, "  │  ");
        let _ = writeln!(s, "  │");
    }
    if !r.checkpoints.is_empty() {
        checkpoints_lines(&mut s, r, style);
    }
    result_lines(&mut s, r, style);
    s
}

/// A case whose file did not load: the error under the title, nothing else.
fn load_failed_lines(s: &mut String, r: &CaseReport, style: &Style) {
    let _ = writeln!(
        s,
        "  └─ {}: failed to load",
        style.paint(Status::Error, "ERROR")
    );
    let _ = writeln!(s, "     {}", r.error.as_deref().unwrap_or_default());
}

/// A skipped case: its reason, and the reason's hints capitalised.
fn skipped_lines(s: &mut String, r: &CaseReport, style: &Style) {
    let _ = writeln!(s, "  └─ {}", style.paint(Status::Skipped, "SKIPPED"));
    let reason = r.error.as_deref().unwrap_or_default();
    let mut lines = reason.lines();
    let _ = writeln!(s, "     Reason: {}", lines.next().unwrap_or_default());
    for line in lines {
        let line = line
            .strip_prefix("hint: ")
            .map(|h| format!("Hint: {h}"))
            .unwrap_or_else(|| line.to_string());
        let _ = writeln!(s, "     {line}");
    }
}

/// A repeated case: how its repeats went, and which repeat's turns follow.
fn repeats_lines(s: &mut String, r: &CaseReport, style: &Style) {
    if let Some(line) = crate::record::format::common::stability_line(r) {
        let flaky = if r.flaky() {
            format!("{} ", style.paint(Status::Failed, "FLAKY"))
        } else {
            String::new()
        };
        let _ = writeln!(s, "  ├─ {flaky}Repeats: {line}");
        if let Some(shown) = r
            .repeats
            .iter()
            .find(|x| x.turns == r.turns)
            .and_then(|x| x.repeat)
        {
            let _ = writeln!(
                s,
                "  ├─ {}",
                style.dim(&format!("Turns of repeat {shown}:"))
            );
        }
    }
}

/// A scenario's checkpoints: how many were reached, and the required ones missed.
fn checkpoints_lines(s: &mut String, r: &CaseReport, style: &Style) {
    let reached = r
        .checkpoints
        .iter()
        .filter(|c| c.reached && !c.forbidden)
        .count();
    let wanted = r.checkpoints.iter().filter(|c| !c.forbidden).count();
    let all_required = r
        .checkpoints
        .iter()
        .all(|c| c.reached || !c.required || c.forbidden);
    // Optional ones missed: the count alone would read as a shortfall.
    let required = if all_required && reached < wanted {
        ", all required"
    } else {
        ""
    };
    let _ = writeln!(
        s,
        "  ├─ Checkpoints: {reached}/{wanted} reached{required}{}",
        r.termination.map(|t| format!(" ({t})")).unwrap_or_default()
    );
    for c in r
        .checkpoints
        .iter()
        .filter(|c| !c.reached && c.required && !c.forbidden)
    {
        let _ = writeln!(
            s,
            "  │  {} {}: {}",
            if c.inconclusive {
                style.paint(Status::Inconclusive, "?")
            } else {
                style.paint(Status::Failed, "✗")
            },
            c.id,
            c.message
        );
    }
    let _ = writeln!(s, "  │");
}

/// The case's verdict, and its error when no turn showed it already.
fn result_lines(s: &mut String, r: &CaseReport, style: &Style) {
    let _ = writeln!(
        s,
        "  └─ Result: {} ({})",
        style.paint(r.status, r.status.label()),
        secs(r.duration_ms)
    );
    if r.status != Status::Passed {
        if let Some(e) = r
            .error
            .as_deref()
            .filter(|e| !crate::record::format::common::shown_with_its_turn(r, e))
        {
            // A golden mismatch carries a diff: coloured on a terminal.
            let text = match &r.golden {
                Some(_) => crate::record::review::paint_diff(e, style.color),
                None => e.to_string(),
            };
            for line in text.lines() {
                let _ = writeln!(s, "     {line}");
            }
        }
    }
}

fn turn_lines(s: &mut String, t: &TurnReport, style: &Style) {
    let status = if t.error.is_some() {
        Status::Error
    } else {
        checks_status(&t.assertions)
    };
    // Where the input came from, when it is not the script: the seed's markers.
    let source = match t.input_source.as_str() {
        "initial" => "[Initial] ",
        "simulated" => "[Simulated] ",
        "human" => "[Human] ",
        "code" => "[Code] ",
        _ => "",
    };
    let truncated = if t.truncated {
        " (reply cut off at the token limit)"
    } else {
        ""
    };
    let _ = writeln!(
        s,
        "  ├─ Turn {}: {source}{} → {} ({}){truncated}",
        t.turn,
        quote(&t.input),
        style.paint(status, status.label()),
        if style.verbose {
            turn_time(t)
        } else {
            secs(t.duration_ms)
        }
    );
    let pad = "  │          ";
    if style.verbose || !t.ok() {
        // What the agent said and did shows even when the turn then failed (a judge that
        // broke, a tool loop that ran out of rounds).
        turn_activity(s, t, style, pad);
    }
    let shown: Vec<AssertionReport> = t
        .assertions
        .iter()
        .filter(|a| style.verbose || !a.held())
        .cloned()
        .collect();
    assertion_lines(s, &shown, style, pad);
    turn_verdict_lines(s, t, style, pad);
    let _ = writeln!(s, "  │");
}

/// What the agent said and did on a turn: its reply, a code step's run, its tool calls,
/// its trace's size, the turn's error.
fn turn_activity(s: &mut String, t: &TurnReport, style: &Style, pad: &str) {
    let reply = value_text(&t.output);
    if !reply.is_empty() || (t.tool_calls.is_empty() && t.error.is_none()) {
        // A code step's output is its own, not the agent's.
        let who = if t.input_source == "code" {
            "Output"
        } else {
            "Agent"
        };
        let _ = writeln!(s, "{pad}{who}: {}", style.dim(&quote(&reply)));
    }
    if let Some(code) = &t.code {
        let exit = code.exit_text();
        let files = if code.files.is_empty() {
            String::new()
        } else {
            format!("; files: {}", code.files.join(", "))
        };
        let _ = writeln!(
            s,
            "{pad}{}",
            style.dim(&format!("{} {exit}{files}", code.lang))
        );
        for line in code.stderr.lines() {
            let _ = writeln!(s, "{pad}{}", style.dim(&format!("stderr: {line}")));
        }
    }
    for c in &t.tool_calls {
        let args = c.arguments_json().to_string();
        let from = if crate::record::format::common::traced(c) {
            " (from trace)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "{pad}Agent: [tool: {}({})]{from}",
            c.name,
            crate::util::clip(&args)
        );
    }
    if style.verbose {
        if let Some(count) = crate::record::format::common::spans_count(&t.spans) {
            let _ = writeln!(s, "{pad}{}", style.dim(&format!("Trace: {count}")));
        }
    }
    // An assertion that could not be evaluated (a broken judge) shows its error
    // itself, below: once is enough.
    let shown_below = |e: &str| t.assertions.iter().any(|a| !a.held() && a.message == e);
    if let Some(e) = t.error.as_deref().filter(|e| !shown_below(e)) {
        let mut lines = e.lines();
        let _ = writeln!(s, "{pad}Error: {}", lines.next().unwrap_or_default());
        for line in lines {
            let _ = writeln!(s, "{pad}       {line}");
        }
    }
}

/// The judge's criteria, how a scenario ended and the checkpoints, under a turn's
/// assertions.
fn turn_verdict_lines(s: &mut String, t: &TurnReport, style: &Style, pad: &str) {
    if let Some(c) = &t.criteria {
        // The judge's evaluation: always with -v; a failing one explains the verdict.
        if style.verbose || c.failure_met {
            let met = |m: bool| if m { "met" } else { "not met" };
            let _ = writeln!(
                s,
                "{pad}Criteria: success {}, failure {} (confidence {}): {}",
                met(c.success_met),
                met(c.failure_met),
                c.confidence,
                c.reasoning
            );
        }
    }
    if let Some(e) = &t.ending {
        let _ = writeln!(s, "{pad}Ended: {e}");
    }
    // Checkpoints: the ones reached always; with -v the others too, as pending (not
    // reached on this turn is not a failure: a later turn may reach them).
    for c in &t.checkpoints {
        if c.held() {
            assertion_lines(s, std::slice::from_ref(c), style, pad);
        } else if style.verbose {
            let _ = writeln!(
                s,
                "{pad}{}",
                style.dim(&format!("○ {} (not reached yet)", c.label))
            );
        }
    }
}

/// How a list of checks stands: failed if one failed, else inconclusive if one could
/// not be decided, else passed.
fn checks_status(list: &[AssertionReport]) -> Status {
    if list.iter().any(AssertionReport::failed) {
        Status::Failed
    } else if list.iter().any(AssertionReport::inconclusive) {
        Status::Inconclusive
    } else {
        Status::Passed
    }
}

fn assertion_lines(s: &mut String, list: &[AssertionReport], style: &Style, pad: &str) {
    for a in list {
        match a.passed {
            Some(true) => {
                let _ = writeln!(s, "{pad}{} {}", style.paint(Status::Passed, "✓"), a.label);
                // A judge's pass keeps its reason: a false pass must be auditable.
                if let Some(j) = &a.judgment {
                    let score = j.score.map(|v| format!(" (score {v})")).unwrap_or_default();
                    let _ = writeln!(s, "{pad}  {}", style.dim(&format!("{}{score}", j.reason)));
                }
            }
            Some(false) | None => {
                let (status, mark) = match a.passed {
                    None => (Status::Inconclusive, "?"),
                    _ => (Status::Failed, "✗"),
                };
                let _ = writeln!(s, "{pad}{} {}", style.paint(status, mark), a.label);
                for line in a.message.lines() {
                    let _ = writeln!(s, "{pad}  {line}");
                }
            }
        }
        // Every juror's vote, so a jury's verdict can be checked juror by juror.
        for v in a.judgment.iter().flat_map(|j| &j.jurors) {
            let said = crate::record::format::common::juror_said(v);
            let _ = writeln!(s, "{pad}  · {}: {said}", v.judge);
        }
    }
}

/// The "Failures" block after the summary: every case that failed, errored or timed
/// out, by trial name (to rerun it with `--run`), with the first line of its reason.
pub(crate) fn failures(failed: &[(String, String)]) -> String {
    let mut s = String::new();
    if failed.is_empty() {
        return s;
    }
    let _ = writeln!(s, "\n  Failures:");
    let width = name_width(failed.iter().map(|(t, _)| t.as_str()));
    for (trial, reason) in failed {
        let first = reason.lines().next().unwrap_or_default();
        let clipped: String = first.chars().take(120).collect();
        let ell = if first.chars().count() > 120 {
            "…"
        } else {
            ""
        };
        let _ = writeln!(s, "    {trial:<width$}  {clipped}{ell}");
    }
    s
}

/// The widest a column of trial names is padded to: a longer name is printed whole (it
/// is what reruns the case) but pushes no other line's text to the right.
pub(crate) const NAME_COLUMN: usize = 48;

/// The width to pad a column of `names` to: the longest, at most [`NAME_COLUMN`].
pub(crate) fn name_width<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    names
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(0)
        .min(NAME_COLUMN)
}

/// A failed case's line in [`failures`]: its trial name and first reason.
pub(crate) fn failure_line(r: &CaseReport) -> Option<(String, String)> {
    if matches!(r.status, Status::Passed | Status::Skipped) {
        return None;
    }
    let reason = r
        .error
        .clone()
        .unwrap_or_else(|| r.status.label().to_lowercase());
    Some((r.trial.clone(), reason))
}

/// The summary block.
pub(crate) fn summary(sum: &Summary) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n{LIGHT}\n  Summary\n{LIGHT}");
    let total = crate::util::count(sum.total, "test", "tests");
    let _ = writeln!(s, "  Total:   {total}");
    let _ = writeln!(s, "  Passed:  {}", sum.passed);
    let timeouts = if sum.timeouts > 0 {
        format!(" ({} timed out)", sum.timeouts)
    } else {
        String::new()
    };
    let _ = writeln!(s, "  Failed:  {}{timeouts}", sum.failed);
    let _ = writeln!(s, "  Errors:  {}", sum.errors);
    let _ = writeln!(s, "  Skipped: {}", sum.skipped);
    if sum.inconclusive > 0 {
        // Apart from the rest: a judge that could not decide is no verdict on the agent.
        let effect = match sum.inconclusive_failing {
            0 => "ignored (on_inconclusive = \"ignore\")".to_string(),
            n if n == sum.inconclusive => "they fail the run".to_string(),
            n => format!("{n} fail the run"),
        };
        let _ = writeln!(s, "  Inconclusive: {}: {effect}", sum.inconclusive);
    }
    // Said when another party than the agent failed a case: then a failure is not
    // always the agent's.
    if sum.blame.keys().any(|p| *p != crate::case::Party::Agent) {
        let by: Vec<String> = sum
            .blame
            .iter()
            .map(|(p, n)| format!("{} {n}", p.name()))
            .collect();
        let _ = writeln!(s, "  Not passed, by fault: {}", by.join(", "));
    }
    if let Some(why) = sum.simulator_blame_over() {
        let _ = writeln!(s, "  Run failed: {why}");
    }
    let avg = crate::record::format::common::avg_turns(sum);
    let _ = writeln!(s, "\n  Total turns: {}", sum.total_turns);
    let _ = writeln!(s, "  Avg turns/test: {avg:.1}");
    let _ = writeln!(s, "  Total time: {}", secs(sum.duration_ms));
    if let Some(tokens) = crate::record::format::common::tokens_line(&sum.usage) {
        let _ = writeln!(s, "  Tokens: {tokens}");
    }
    if let Some(tokens) = crate::record::format::common::tokens_line(&sum.replayed_usage) {
        let _ = writeln!(s, "  Replayed from cassettes (not spent): {tokens}");
    }
    if let Some(cost) = &sum.cost {
        let _ = writeln!(
            s,
            "  Cost: {}",
            crate::record::format::common::cost_line(cost)
        );
    }
    if let Some(line) = crate::record::format::common::stability_summary(sum) {
        let _ = writeln!(s, "  Stability: {line}");
    }
    if sum.model_calls > 0 {
        let replayed = if sum.replayed_calls > 0 {
            format!(", {} replayed", sum.replayed_calls)
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  Model calls: {} ({} retried{replayed})",
            sum.model_calls, sum.retries
        );
    }
    if sum.interrupted {
        let by = match sum.signal.as_deref() {
            None | Some("SIGINT") => "Ctrl-C",
            Some(other) => other,
        };
        let _ = writeln!(
            s,
            "\n  Interrupted ({by}): running agents were stopped; unfinished cases are reported as not run"
        );
    }
    if sum.stopped_early {
        let _ = writeln!(
            s,
            "\n  Stopped early (--fail-fast): cases after the first failure were not run"
        );
    }
    if sum.over_budget {
        let _ = writeln!(
            s,
            "\n  Stopped by the run's budget ([run] max_cost / max_tokens): cases not started are reported as not run"
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn style(verbose: bool) -> Style {
        Style {
            color: false,
            verbose,
            qualified: false,
            compact: false,
        }
    }

    /// `-v` counts a traced turn's spans; a call read from spans is marked, with or
    /// without `-v` (a failing turn shows its calls).
    #[test]
    fn traced_turns() {
        let c = crate::record::format::common::traced_sample();
        let verbose = Console::new(style(true)).case(&c);
        let pad = "  │          ";
        assert!(
            verbose.contains(&format!(
                "{pad}Agent: [tool: lookup({{\"q\":\"Paris\"}})]\n\
                 {pad}Agent: [tool: get_weather({{\"city\":\"Paris\"}})] (from trace)\n\
                 {pad}Trace: 4 spans (1 tool, 1 model call)\n"
            )),
            "{verbose}"
        );
        let quiet = Console::new(style(false)).case(&c);
        assert!(
            quiet.contains("Agent: [tool: get_weather({\"city\":\"Paris\"})] (from trace)\n"),
            "{quiet}"
        );
        assert!(!quiet.contains("Trace:"), "{quiet}");
        // No span names or timings on the console.
        assert!(!verbose.contains("chat gpt-4o"), "{verbose}");
    }
}
