//! The JUnit XML report (`-o junit.xml`), for CI systems that read JUnit: one
//! `<testsuite>` per suite, one `<testcase>` per case.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::common::{
    clean, first_line, sorted, span_tree_text, spans_count, tool_call_label, tool_call_text,
    total_ms, traced, transcript,
};
use crate::case::OnInconclusive;
use crate::record::RunInfo;
use crate::record::{CaseReport, Status, Summary};

/// JUnit XML:
///
/// ```text
/// <testsuites name="agentest" tests failures errors skipped time timestamp>
///   <testsuite name="SUITE" tests failures errors skipped time timestamp>
///     <properties> agent, input, agentest.version, command </properties>
///     <testcase name="ID" classname="SUITE" time="SECONDS">
///       <failure message="..." type="failed|timeout">transcript</failure>   failed, timeout
///       <error message="..." type="error">transcript</error>                error
///       <skipped message="reason"/>                                         skipped
///       <flakyFailure message="repeat N: ...">transcript</flakyFailure>     a passing
///                                           repeated case's failed repeats (nextest's form)
///       <rerunFailure message="repeat N: ...">transcript</rerunFailure>     a failing one's
///       <system-out>span trees</system-out>                                 traced turns
///     </testcase>
///   </testsuite>
/// </testsuites>
/// ```
///
/// Suites are sorted by name and cases by trial name. Counts are computed from `cases`
/// (a timeout is a failure), so each suite's attributes add up to the root's. A suite's
/// `time` is the sum of its cases' durations; the root's is the run's wall time. The
/// timestamp is the run's start without its zone (UTC), as the JUnit schema wants it.
/// A case whose agent was traced has a `<system-out>`: for each traced turn its span
/// count, the tool calls read from its spans (`tool call (from trace): ...`) and its
/// span tree, one span a line, indented by depth, with duration, start offset, status and
/// the tool or model it stands for. Tool calls read from spans are marked `(from trace)`
/// in the transcripts too. Text is plain: ANSI escapes are removed and characters XML 1.0
/// forbids are replaced by U+FFFD.
pub fn render(run: &RunInfo, summary: &Summary, cases: &[CaseReport]) -> String {
    let mut suites: BTreeMap<&str, Vec<&CaseReport>> = BTreeMap::new();
    for c in sorted(cases) {
        suites.entry(c.suite.as_str()).or_default().push(c);
    }
    let timestamp = junit_timestamp(&run.started_at);
    let all = Counts::of(cases.iter());
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = write!(s, "<testsuites name=\"agentest\"");
    all.attrs(&mut s);
    let _ = write!(s, " time=\"{}\"", seconds(total_ms(run, summary)));
    if let Some(ts) = &timestamp {
        let _ = write!(s, " timestamp=\"{}\"", attr(ts));
    }
    s.push_str(">\n");
    for (i, (name, list)) in suites.iter().enumerate() {
        let counts = Counts::of(list.iter().copied());
        let time: u64 = list.iter().map(|c| c.duration_ms).sum();
        let _ = write!(s, "  <testsuite name=\"{}\"", attr(name));
        counts.attrs(&mut s);
        let _ = write!(s, " time=\"{}\" id=\"{i}\"", seconds(time));
        if let Some(ts) = &timestamp {
            let _ = write!(s, " timestamp=\"{}\"", attr(ts));
        }
        s.push_str(">\n    <properties>\n");
        let command = super::common::command_line(&run.command);
        for (key, value) in [
            ("agent", run.agent.as_str()),
            ("input", run.input.as_str()),
            ("agentest.version", run.agentest_version.as_str()),
            ("command", command.as_str()),
        ] {
            if !value.is_empty() {
                let _ = writeln!(
                    s,
                    "      <property name=\"{key}\" value=\"{}\"/>",
                    attr(value)
                );
            }
        }
        s.push_str("    </properties>\n");
        for c in list {
            testcase(&mut s, c);
        }
        s.push_str("  </testsuite>\n");
    }
    s.push_str("</testsuites>\n");
    s
}

fn testcase(s: &mut String, c: &CaseReport) {
    let _ = write!(
        s,
        "    <testcase name=\"{}\" classname=\"{}\" time=\"{}\"",
        attr(&c.id),
        attr(&c.suite),
        seconds(c.duration_ms)
    );
    let reason = || {
        let e = c.error.as_deref().unwrap_or_default();
        first_line(e, 500)
    };
    // A repeated case's repeats that did not pass, as nextest writes retried tests: a
    // passing case's are `flakyFailure` / `flakyError`, a failing case's (after the
    // first, which is the `failure` itself) `rerunFailure` / `rerunError`.
    let others: Vec<&CaseReport> = c
        .repeats
        .iter()
        .filter(|r| r.status != Status::Passed && r.status != Status::Skipped)
        .collect();
    let reruns = |s: &mut String, prefix: &str, skip_first: bool| {
        for r in others.iter().skip(usize::from(skip_first)) {
            let (tag, kind) = match r.status {
                Status::Error => ("Error", "error"),
                Status::Timeout => ("Failure", "timeout"),
                Status::Inconclusive => ("Failure", "inconclusive"),
                _ => ("Failure", "failed"),
            };
            let message = format!(
                "repeat {}: {}",
                r.repeat.unwrap_or(1),
                first_line(r.error.as_deref().unwrap_or(kind), 500)
            );
            let _ = writeln!(
                s,
                "      <{prefix}{tag} message=\"{}\" type=\"{kind}\">{}</{prefix}{tag}>",
                attr(&message),
                text(&transcript(r))
            );
        }
    };
    let out = system_out(c);
    match c.status {
        Status::Passed if others.is_empty() && out.is_none() => {
            s.push_str("/>\n");
            return;
        }
        Status::Passed if others.is_empty() => s.push_str(">\n"),
        Status::Passed => {
            s.push_str(">\n");
            reruns(s, "flaky", false);
        }
        Status::Skipped => {
            let _ = writeln!(s, ">\n      <skipped message=\"{}\"/>", attr(&reason()));
        }
        // `ignore`: neither a pass nor a failure, as JUnit says of a skipped test.
        Status::Inconclusive if c.on_inconclusive == Some(OnInconclusive::Ignore) => {
            let _ = writeln!(
                s,
                ">\n      <skipped message=\"{}\"/>",
                attr(&format!("inconclusive: {}", reason()))
            );
        }
        Status::Failed | Status::Timeout | Status::Error | Status::Inconclusive => {
            let (tag, kind, fallback) = match c.status {
                Status::Error => ("error", "error", "error"),
                Status::Timeout => ("failure", "timeout", "timed out"),
                Status::Inconclusive if c.on_inconclusive == Some(OnInconclusive::Error) => {
                    ("error", "inconclusive", "inconclusive")
                }
                Status::Inconclusive => ("failure", "inconclusive", "inconclusive"),
                _ => ("failure", "failed", "failed"),
            };
            let mut message = reason();
            if message.is_empty() {
                message = fallback.to_string();
            } else if c.status == Status::Inconclusive {
                // Its own message: no reader should take it for the agent's failure.
                message = format!("inconclusive: {message}");
            }
            let _ = writeln!(
                s,
                ">\n      <{tag} message=\"{}\" type=\"{kind}\">{}</{tag}>",
                attr(&message),
                text(&transcript(c))
            );
            reruns(s, "rerun", true);
        }
    }
    if let Some(out) = out {
        let _ = writeln!(s, "      <system-out>{}</system-out>", text(&out));
    }
    s.push_str("    </testcase>\n");
}

/// What the agent's traces showed, for `<system-out>`: per traced turn, its span count,
/// the tool calls read from its spans, and its span tree (indented, with durations,
/// start offsets, status and the tool or model each span stands for); `None` when no
/// turn was traced.
fn system_out(c: &CaseReport) -> Option<String> {
    let mut s = String::new();
    for t in &c.turns {
        let calls: Vec<_> = t.tool_calls.iter().filter(|c| traced(c)).collect();
        if t.spans.is_empty() && calls.is_empty() && t.spans_note.is_none() {
            continue;
        }
        let count = spans_count(&t.spans).unwrap_or_else(|| "no spans".into());
        let _ = writeln!(s, "turn {} · trace: {count}", t.turn);
        for call in calls {
            let _ = writeln!(s, "  {}: {}", tool_call_label(call), tool_call_text(call));
        }
        span_tree_text(&mut s, "  ", t);
    }
    (!s.is_empty()).then(|| s.trim_end().to_string())
}

/// Cases by outcome, as JUnit counts them.
#[derive(Default)]
struct Counts {
    tests: u64,
    failures: u64,
    errors: u64,
    skipped: u64,
}

impl Counts {
    fn of<'a>(cases: impl Iterator<Item = &'a CaseReport>) -> Counts {
        let mut n = Counts::default();
        for c in cases {
            n.tests += 1;
            match (c.status, c.on_inconclusive) {
                (Status::Inconclusive, Some(OnInconclusive::Ignore)) => n.skipped += 1,
                (Status::Inconclusive, Some(OnInconclusive::Error)) => n.errors += 1,
                (Status::Failed | Status::Timeout | Status::Inconclusive, _) => n.failures += 1,
                (Status::Error, _) => n.errors += 1,
                (Status::Skipped, _) => n.skipped += 1,
                (Status::Passed, _) => {}
            }
        }
        n
    }

    fn attrs(&self, s: &mut String) {
        let _ = write!(
            s,
            " tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\"",
            self.tests, self.failures, self.errors, self.skipped
        );
    }
}

/// Milliseconds as seconds with three decimals.
fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// `2025-01-31T12:00:00Z` → `2025-01-31T12:00:00` (the JUnit schema's timestamp has no
/// zone); `None` when it does not start with a date and time.
fn junit_timestamp(rfc3339: &str) -> Option<String> {
    let head = rfc3339.get(..19)?;
    let ok = head.char_indices().all(|(i, c)| match i {
        4 | 7 => c == '-',
        10 => c == 'T',
        13 | 16 => c == ':',
        _ => c.is_ascii_digit(),
    });
    ok.then(|| head.to_string())
}

/// Character data: `&`, `<`, `>` and carriage returns escaped, the rest cleaned.
fn text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in clean(raw).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
    out
}

/// An attribute value in double quotes: markup, quotes and whitespace that attribute
/// normalisation would change are escaped.
fn attr(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in clean(raw).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::format::common::sample;

    /// An element: name, attributes, text content.
    type Element = (String, Vec<(String, String)>, String);

    /// A tiny XML reader: checks well-formedness (one root, nesting, quoted attributes,
    /// known entities, no forbidden characters) and returns every element as
    /// (name, attributes, text content).
    fn elements(xml: &str) -> Vec<Element> {
        for c in xml.chars() {
            let ok = matches!(c, '\t' | '\n' | '\r')
                || ('\u{20}'..='\u{d7ff}').contains(&c)
                || ('\u{e000}'..='\u{fffd}').contains(&c)
                || c >= '\u{10000}';
            assert!(ok, "forbidden character {c:?}");
        }
        let body = xml
            .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
            .expect("declaration");
        let mut out: Vec<Element> = Vec::new();
        let mut stack: Vec<usize> = Vec::new();
        let mut rest = body;
        let mut roots = 0;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('<') {
                let end = after.find('>').expect("tag ends");
                let tag = &after[..end];
                rest = &after[end + 1..];
                if let Some(name) = tag.strip_prefix('/') {
                    let i = stack.pop().expect("close without open");
                    assert_eq!(out[i].0, name, "mismatched close");
                    continue;
                }
                let empty = tag.ends_with('/');
                let tag = tag.trim_end_matches('/');
                let (name, mut attrs_src) = tag.split_once(' ').unwrap_or((tag, ""));
                let mut attrs = Vec::new();
                loop {
                    attrs_src = attrs_src.trim_start();
                    if attrs_src.is_empty() {
                        break;
                    }
                    let (k, v) = attrs_src.split_once("=\"").expect("attr=\"");
                    let close = v.find('"').expect("attr closes");
                    assert!(!v[..close].contains('<'), "< in attribute");
                    attrs.push((k.to_string(), unescape(&v[..close])));
                    attrs_src = &v[close + 1..];
                }
                if stack.is_empty() {
                    roots += 1;
                }
                out.push((name.to_string(), attrs, String::new()));
                if !empty {
                    stack.push(out.len() - 1);
                }
            } else {
                let end = rest.find('<').unwrap_or(rest.len());
                let chunk = &rest[..end];
                match stack.last() {
                    Some(&i) => out[i].2.push_str(&unescape(chunk)),
                    None => assert!(chunk.trim().is_empty(), "text outside the root"),
                }
                rest = &rest[end..];
            }
        }
        assert!(stack.is_empty(), "unclosed elements");
        assert_eq!(roots, 1, "one root");
        out
    }

    fn unescape(s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find('&') {
            out.push_str(&rest[..i]);
            let end = rest[i..].find(';').expect("entity ends") + i;
            let ent = &rest[i + 1..end];
            out.push(match ent {
                "amp" => '&',
                "lt" => '<',
                "gt" => '>',
                "quot" => '"',
                "apos" => '\'',
                e if e.starts_with('#') => char::from_u32(e[1..].parse().unwrap()).unwrap(),
                e => panic!("unknown entity &{e};"),
            });
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        out
    }

    fn attr_of<'a>(e: &'a Element, k: &str) -> &'a str {
        e.1.iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("{} has no {k}", e.0))
    }

    #[test]
    fn well_formed_with_consistent_counts() {
        let (run, summary, cases) = sample();
        let xml = render(&run, &summary, &cases);
        let els = elements(&xml);
        assert_eq!(els[0].0, "testsuites");
        let total = |k: &str| attr_of(&els[0], k).parse::<u64>().unwrap();
        assert_eq!(total("tests"), summary.total);
        assert_eq!(total("failures"), summary.failed);
        assert_eq!(total("errors"), summary.errors);
        assert_eq!(total("skipped"), summary.skipped);
        assert_eq!(attr_of(&els[0], "time"), "0.410");
        assert_eq!(attr_of(&els[0], "timestamp"), "2025-01-31T12:00:00");
        let suites: Vec<_> = els.iter().filter(|e| e.0 == "testsuite").collect();
        let names: Vec<&str> = suites.iter().map(|e| attr_of(e, "name")).collect();
        assert_eq!(names, ["chat/dynamic", "expense", "flow"]);
        for k in ["tests", "failures", "errors", "skipped"] {
            let sum: u64 = suites
                .iter()
                .map(|e| attr_of(e, k).parse::<u64>().unwrap())
                .sum();
            assert_eq!(sum, total(k), "{k} adds up");
        }
        let cases_el: Vec<_> = els.iter().filter(|e| e.0 == "testcase").collect();
        assert_eq!(cases_el.len(), cases.len());
        for e in &cases_el {
            attr_of(e, "name");
            attr_of(e, "classname");
            attr_of(e, "time").parse::<f64>().unwrap();
        }
        let kinds: Vec<(&str, &str)> = els
            .iter()
            .filter(|e| matches!(e.0.as_str(), "failure" | "error" | "skipped"))
            .map(|e| (e.0.as_str(), attr_of(e, "message")))
            .collect();
        assert_eq!(kinds.len(), 6);
        assert!(kinds.contains(&("skipped", "skip: true in the case")));
        assert!(kinds.contains(&(
            "failure",
            "timeout after 300ms (while waiting for the reply to turn 1; the agent was stopped)"
        )));
    }

    #[test]
    fn escapes_markup_controls_and_ansi() {
        let (run, summary, cases) = sample();
        let xml = render(&run, &summary, &cases);
        assert!(!xml.contains('\u{7}') && !xml.contains('\u{1b}'));
        assert!(!xml.contains("<script>"));
        assert!(!xml.contains("]]>"), "no raw CDATA end");
        let els = elements(&xml);
        let failure = els
            .iter()
            .find(|e| e.0 == "failure" && e.2.contains("expense::xss"))
            .expect("xss failure");
        assert!(failure
            .2
            .contains("user: <script>alert(1)</script> ]]> \u{fffd} red"));
        assert!(failure.2.contains("✗ contains \"nope\""));
        assert!(failure.2.contains("+new </pre> line"));
        assert_eq!(attr_of(failure, "type"), "failed");
        let error = els
            .iter()
            .find(|e| e.0 == "error" && e.2.starts_with("flow::crash"))
            .unwrap();
        assert!(error.2.contains("agent process exited"), "{}", error.2);
    }

    /// A traced case's testcase has a `<system-out>` with its traced calls and span tree,
    /// after its failure (whose transcript marks the traced call); a passing traced case
    /// has one too. Span names are escaped like the rest.
    #[test]
    fn span_tree_in_system_out() {
        let (run, summary, _) = sample();
        let failed = crate::record::format::common::traced_sample();
        let mut passed = failed.clone();
        passed.id = "calm".into();
        passed.trial = "traced::calm".into();
        passed.status = Status::Passed;
        passed.error = None;
        let xml = render(&run, &summary, &[failed, passed]);
        assert!(!xml.contains("<script>"), "{xml}");
        let els = elements(&xml);
        let els: Vec<&Element> = els
            .iter()
            .filter(|e| matches!(e.0.as_str(), "testcase" | "failure" | "system-out"))
            .collect();
        let names: Vec<&str> = els.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "testcase",
                "system-out",
                "testcase",
                "failure",
                "system-out"
            ],
            "{xml}"
        );
        let expected = "turn 1 · trace: 4 spans (1 tool, 1 model call)\n\
             \x20 tool call (from trace): get_weather({\"city\":\"Paris\"}) !! error: no such city\n\
             \x20 invoke_agent weather (200ms at +0ms) · ok\n\
             \x20   chat gpt-4o (50ms at +5ms) · model gpt-4o tokens 12/5\n\
             \x20   execute_tool get_weather (100ms at +60ms) · error: no such city\n\
             \x20   <script>alert(1)</script> (10ms at +170ms)\n\
             \x20 (2 spans not kept (over [traces] max_spans))";
        assert_eq!(els[1].2, expected);
        assert_eq!(els[4].2, expected);
        assert!(els[3]
            .2
            .contains("tool call (from trace): get_weather({\"city\":\"Paris\"})"));
        assert!(els[3].2.contains("tool call: lookup({\"q\":\"Paris\"})"));
        // An untraced passing case stays one empty element.
        let (run, summary, cases) = sample();
        assert!(render(&run, &summary, &cases)
            .contains("<testcase name=\"policy\" classname=\"expense\" time=\"0.015\"/>"));
    }

    #[test]
    fn helpers() {
        assert_eq!(seconds(0), "0.000");
        assert_eq!(seconds(1234), "1.234");
        assert_eq!(junit_timestamp("nope"), None);
        assert_eq!(attr("a\"b'<\n"), "a&quot;b&apos;&lt;&#10;");
        assert_eq!(text("a\r\nb & c"), "a&#13;\nb &amp; c");
    }
}
