//! The text of a failing trial: libtest-mimic captures no output, so everything a
//! user needs to see goes into the failure message.

use std::fmt::Write;

use crate::record::{AssertionReport, CaseReport, Status, TurnReport};
use crate::util::compact;
use crate::util::value_text;

/// The message for a case that did not pass: status, location, the failing turn's
/// input and reply, and every assertion of that turn with expected and actual.
pub fn failure_message(r: &CaseReport) -> String {
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
        .any(|a| !a.passed);
    if let (Some(e), false) = (&r.error, r.status == Status::Failed && assertion_failed) {
        let _ = writeln!(s, "  {e}");
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
    if let Some(e) = &t.error {
        let _ = writeln!(s, "  turn error: {e}");
    }
    if !(t.output.is_null() && t.error.is_some()) {
        let _ = writeln!(s, "  reply: {}", quote(&value_text(&t.output)));
    }
    for c in &t.tool_calls {
        let mut line = format!("  tool call: {}({})", c.name, compact(&c.arguments_json()));
        if let Some(r) = &c.result {
            let _ = write!(line, " -> {}", compact(r));
        }
        let _ = writeln!(s, "{line}");
    }
    if let Some(d) = &t.data {
        let _ = writeln!(s, "  data: {}", compact(d));
    }
    write_assertions(s, &t.assertions);
}

fn write_assertions(s: &mut String, list: &[AssertionReport]) {
    for a in list {
        if a.passed {
            let _ = writeln!(s, "    ✓ {}", a.label);
        } else {
            let _ = writeln!(s, "    ✗ {}: {}", a.label, a.message);
        }
    }
}

fn quote(text: &str) -> String {
    serde_json::Value::String(crate::util::clip(text)).to_string()
}
