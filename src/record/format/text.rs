//! The text of a failing trial: libtest-mimic captures no output, so everything a
//! user needs to see goes into the failure message.

use std::fmt::Write;

use crate::record::{AssertionReport, CaseReport, Status, TurnReport};
use crate::util::compact;
use crate::util::value_text;

/// The message for a case that did not pass: status, location, the failing turn's
/// input and reply, and every assertion of that turn with expected and actual.
pub(crate) fn failure_message(r: &CaseReport) -> String {
    let mut s = String::new();
    if r.mode.is_none() {
        // The case never loaded: the located parse error says it all.
        let _ = write!(
            s,
            "failed to load the case: {}",
            r.error.as_deref().unwrap_or_default()
        );
        return s;
    }
    let what = match r.status {
        Status::Failed => "failed",
        Status::Error => "errored",
        Status::Timeout => "timed out",
        Status::Skipped => "was skipped",
        Status::Passed => "passed",
        Status::Inconclusive => "is inconclusive",
    };
    let _ = write!(s, "case {} ", r.id);
    if r.name != r.id {
        let _ = write!(s, "({}) ", r.name);
    }
    let _ = write!(s, "{what}");
    let failing = r.turns.iter().find(|t| !t.ok()).or(r.turns.last());
    if let Some(t) = failing {
        let _ = write!(s, " at turn {}", t.turn);
    }
    let _ = writeln!(s, " [{}]", r.location);
    // A failed assertion is shown with its turn below; anything else needs its reason.
    let assertion_failed = r
        .turns
        .iter()
        .flat_map(|t| &t.assertions)
        .chain(&r.final_assertions)
        .any(|a| !a.held());
    // A repeated case's error is its gate's verdict, which no turn shows.
    let said_below = |e: &str| {
        r.stability.is_none()
            && ((r.status == Status::Failed && assertion_failed)
                || crate::record::format::common::shown_with_its_turn(r, e))
    };
    if let Some(e) = r.error.as_deref().filter(|e| !said_below(e)) {
        let _ = writeln!(s, "  {e}");
    }
    if let Some(line) = crate::record::format::common::stability_line(r) {
        let flaky = if r.flaky() { "FLAKY " } else { "" };
        let _ = writeln!(s, "  {flaky}repeats: {line}");
        if let Some(shown) = r.repeats.iter().find(|x| x.turns == r.turns) {
            let _ = writeln!(s, "  turns of repeat {}:", shown.repeat.unwrap_or(1));
        }
    }
    if let Some(t) = failing {
        write_turn(&mut s, t);
    }
    if !r.final_assertions.is_empty() {
        let _ = writeln!(s, "  final assertions:");
        write_assertions(&mut s, &r.final_assertions);
    }
    s.trim_end().to_string()
}

fn write_turn(s: &mut String, t: &TurnReport) {
    let _ = writeln!(s, "  turn {} input: {}", t.turn, quote(&t.input));
    // An assertion that could not be evaluated (a broken judge) shows its error itself.
    let shown_below = |e: &str| t.assertions.iter().any(|a| !a.held() && a.message == e);
    if let Some(e) = t.error.as_deref().filter(|e| !shown_below(e)) {
        let _ = writeln!(s, "  turn error: {e}");
    }
    if !(t.output.is_null() && t.error.is_some()) {
        let _ = writeln!(s, "  reply: {}", quote(&value_text(&t.output)));
    }
    for c in &t.tool_calls {
        let mut line = format!(
            "  {}: {}({})",
            crate::record::format::common::tool_call_label(c),
            c.name,
            compact(&c.arguments_json())
        );
        if let Some(r) = &c.result {
            let _ = write!(line, " -> {}", compact(r));
        }
        if let Some(e) = &c.error {
            let _ = write!(line, " !! error: {}", compact(e));
        }
        let _ = writeln!(s, "{line}");
    }
    if let Some(count) = crate::record::format::common::spans_count(&t.spans) {
        let _ = writeln!(s, "  trace: {count}");
    }
    if let Some(d) = &t.data {
        let _ = writeln!(s, "  data: {}", compact(d));
    }
    write_assertions(s, &t.assertions);
}

fn write_assertions(s: &mut String, list: &[AssertionReport]) {
    for a in list {
        match a.passed {
            Some(true) => {
                let _ = writeln!(s, "    ✓ {}", a.label);
            }
            Some(false) => {
                let _ = writeln!(s, "    ✗ {}: {}", a.label, a.message);
            }
            None => {
                let _ = writeln!(s, "    ? {}: {}", a.label, a.message);
            }
        }
    }
}

fn quote(text: &str) -> String {
    serde_json::Value::String(crate::util::clip(text)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::format::common::sample;

    /// A crash with its stderr tail, as the engine records it: the case's error is the
    /// turn's, so the message says it once; an error the turn does not show stays.
    #[test]
    fn each_fact_once() {
        let (_, _, cases) = sample();
        let mut crash = cases
            .into_iter()
            .find(|c| c.id == "crash")
            .expect("the sample has a crash");
        let tail = "agent process exited before replying (exit status: 3); agent stderr (last lines):\nfatal: the agent crashed on purpose";
        crash.turns[0].error = Some(tail.into());
        crash.error = Some(format!("turn 1: {tail}"));
        let message = failure_message(&crash);
        assert_eq!(
            message.matches("fatal: the agent crashed").count(),
            1,
            "{message}"
        );
        crash.turns[0].error = Some("agent process exited before replying (exit status: 3)".into());
        let message = failure_message(&crash);
        assert_eq!(
            message.matches("fatal: the agent crashed").count(),
            1,
            "{message}"
        );
        assert_eq!(message.matches("exit status: 3").count(), 2, "{message}");
    }

    /// A call read from spans is marked, with its error; the turn's spans are counted.
    #[test]
    fn traced_calls_are_marked() {
        let message = failure_message(&crate::record::format::common::traced_sample());
        assert!(
            message.contains(
                "\n  tool call: lookup({\"q\":\"Paris\"})\n  tool call (from trace): get_weather({\"city\":\"Paris\"}) !! error: \"no such city\"\n  trace: 4 spans (1 tool, 1 model call)\n"
            ),
            "{message}"
        );
    }

    /// A judge that cannot judge: its error once, with the assertion it stopped.
    #[test]
    fn a_broken_judge_is_said_once() {
        let (_, _, cases) = sample();
        let mut r = cases.into_iter().find(|c| c.id == "crash").unwrap();
        let why = "the built-in judge needs a model: add an [llm] section";
        r.turns[0].error = Some(why.into());
        r.turns[0].output = serde_json::json!("Hello");
        r.turns[0].assertions = vec![AssertionReport {
            passed: Some(false),
            label: "llm_judge".into(),
            message: why.into(),
            ..serde_json::from_value(serde_json::json!({"type": "llm_judge", "passed": false, "label": "", "message": ""})).unwrap()
        }];
        r.error = Some(format!("turn 1: {why}"));
        let message = failure_message(&r);
        assert_eq!(message.matches(why).count(), 1, "{message}");
        assert!(
            message.contains(&format!("✗ llm_judge: {why}")),
            "{message}"
        );
        assert!(!message.contains("simulator"), "{message}");
    }
}
