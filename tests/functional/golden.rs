//! End-to-end tests of golden transcripts and the commands around them: the real
//! `agentest` binary runs scratch suites against the example expense agent (or a tiny
//! agent written here), and the tests check the golden files it reads and writes, the
//! failure messages and reports, `AGENTEST_UPDATE`, `agentest review` / `accept` (piped
//! and on a pseudo-terminal), `agentest freeze` and `agentest report`.
//!
//! Every child runs without `CI`, `NO_COLOR` and `AGENTEST_*` from our environment,
//! unless a test sets them.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::common::{
    clean, expense_agent_section, finish, on_a_terminal, python_pty, Needs, Report, Run, Scratch,
    Watch, BIN,
};
use serde_json::{json, Value};

/// The line every golden failure ends with, after what was written.
const HOW_TO_UPDATE: &str = "review it with `agentest review`, accept all with `agentest accept`, or rerun with AGENTEST_UPDATE=always";

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A scratch directory whose `[agent]` is the example expense agent, plus `extra`.
fn scratch(tag: &str, extra: &str) -> Scratch {
    let s = Scratch::bare(tag);
    s.write(
        "agentest.toml",
        &format!("{}{extra}", expense_agent_section()),
    );
    s
}

impl Scratch {
    fn bare(tag: &str) -> Scratch {
        Scratch::named("golden", tag)
    }

    /// Every file under the root except the config, the report, the helper scripts and
    /// the run store (`.agentest/`), relative and sorted.
    fn written(&self) -> Vec<String> {
        let mut found = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("list scratch dir").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let rel = path
                    .strip_prefix(&self.root)
                    .expect("under the root")
                    .to_string_lossy()
                    .into_owned();
                if !rel.ends_with(".toml")
                    && !rel.ends_with(".py")
                    && !rel.starts_with("report")
                    && !rel.starts_with(".agentest/")
                {
                    found.push(rel);
                }
            }
        }
        found.sort();
        found
    }

    /// Sets a file's modification time far in the past, so a rewrite shows.
    fn age(&self, rel: &str) -> SystemTime {
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        std::fs::File::options()
            .write(true)
            .open(self.join(rel))
            .and_then(|f| f.set_modified(old))
            .expect("set the modification time");
        old
    }

    fn modified(&self, rel: &str) -> SystemTime {
        std::fs::metadata(self.join(rel))
            .and_then(|m| m.modified())
            .expect("modification time")
    }
}

/// Runs `agentest <args>` in `dir` with `envs`, stdin empty.
fn agentest(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Run {
    let mut cmd = clean(Command::new(BIN));
    cmd.current_dir(dir).args(args).stdin(Stdio::null());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    finish(&mut cmd)
}

/// Runs `agentest <args>` in `dir` with `input` piped on stdin (not a terminal).
fn agentest_piped(dir: &Path, args: &[&str], input: &str) -> Run {
    let mut cmd = clean(Command::new(BIN));
    cmd.current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run the agentest binary");
    let mut stdin = child.stdin.take().expect("piped stdin");
    // The binary may exit without reading it all.
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    let out = child
        .wait_with_output()
        .expect("wait for the agentest binary");
    Run::of(out)
}

impl Report {
    /// The record's `golden` object (`Value::Null` when the case was not pinned).
    fn golden(&self, trial: &str) -> &Value {
        &self.case(trial)["golden"]
    }
}

/// Runs `agentest test -i <input> --color never -o report.jsonl` in the scratch dir.
fn run_suite(s: &Scratch, input: &str, envs: &[(&str, &str)]) -> (Run, Report) {
    run_suite_args(s, input, &[], envs)
}

fn run_suite_args(
    s: &Scratch,
    input: &str,
    extra: &[&str],
    envs: &[(&str, &str)],
) -> (Run, Report) {
    let mut args = vec![
        "test",
        "-i",
        input,
        "--color",
        "never",
        "-o",
        "report.jsonl",
    ];
    args.extend_from_slice(extra);
    let run = agentest(&s.root, &args, envs);
    let report = Report::read(&s.join("report.jsonl"));
    (run, report)
}

/// A single-turn greeting case; the example agent answers
/// "Hello! I'm the expense assistant. <input> to you too. How can I help?".
fn greet(id: &str, input: &str, extra: &str) -> String {
    format!(
        r#"{{"id": "{id}", "input": "{input}"{extra}, "assertions": [{{"type": "contains", "value": "expense assistant"}}]}}"#
    )
}

/// The golden rendering of [`greet`] in `suite`.
fn greet_golden(suite: &str, id: &str, input: &str) -> String {
    format!(
        "case: {suite}::{id}\nmode: single\n\n--- turn 1 (static)\nuser: {input}\nagent: Hello! I'm the expense assistant. {input} to you too. How can I help?\nawaiting input\n✓ contains \"expense assistant\"\n"
    )
}

/// The console lines of a failure message, as the case block shows them.
fn indented(message: &str) -> String {
    message
        .lines()
        .map(|l| format!("     {l}\n"))
        .collect::<String>()
}

/// The console block of one case: from its `► [label]` line up to the next case's block
/// or the summary rule (a failure message may itself hold blank lines), without the
/// blank line that ends it.
fn block<'a>(out: &'a str, label: &str) -> &'a str {
    let start = out
        .find(&format!("► [{label}]"))
        .unwrap_or_else(|| panic!("no block for {label} in:\n{out}"));
    let rest = &out[start..];
    let first = rest.find('\n').map_or(rest.len(), |i| i + 1);
    let end = [rest[first..].find("\n► ["), rest[first..].find("\n───")]
        .into_iter()
        .flatten()
        .min()
        .map_or(rest.len(), |i| first + i + 1);
    rest[..end].trim_end_matches('\n')
}

/// Replaces durations like `(12ms)` with `(<dur>)`.
fn no_durations(text: &str) -> String {
    regex::Regex::new(r"\(\d+(\.\d+)?m?s\)")
        .unwrap()
        .replace_all(text, "(<dur>)")
        .into_owned()
}

// ---------------------------------------------------------------------------------------
// 1. A matching golden file passes and nothing is written
// ---------------------------------------------------------------------------------------

fn a_pinned_case_matching_its_hand_written_golden_file_passes_and_writes_nothing() {
    let s = scratch("match", "");
    s.write_suite(
        "s.jsonl",
        &[
            &greet("pinned", "Hello", r#", "golden": true"#),
            &greet("free", "Hi", ""),
        ],
    );
    s.write("s.golden/pinned.txt", &greet_golden("s", "pinned", "Hello"));

    for mode in ["", "new", "always", "no", "auto"] {
        let aged = s.age("s.golden/pinned.txt");
        let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", mode)]);
        assert_eq!(run.code, 0, "AGENTEST_UPDATE={mode:?}: {run:?}");
        assert_eq!(report.status("s::pinned"), "passed", "{}", report.text);
        assert_eq!(
            report.golden("s::pinned"),
            &json!({"file": "s.golden/pinned.txt", "outcome": "matched"}),
            "AGENTEST_UPDATE={mode:?}"
        );
        assert_eq!(report.status("s::free"), "passed");
        assert!(
            report.case("s::free").get("golden").is_none(),
            "an unpinned case has no golden record:\n{}",
            report.text
        );
        // Nothing written: no `.new`, no golden file for the unpinned case, and the
        // golden file itself untouched (not even rewritten with the same text).
        assert_eq!(s.written(), ["s.golden/pinned.txt", "s.jsonl"]);
        assert_eq!(
            s.read("s.golden/pinned.txt"),
            greet_golden("s", "pinned", "Hello")
        );
        assert_eq!(
            s.modified("s.golden/pinned.txt"),
            aged,
            "AGENTEST_UPDATE={mode:?} rewrote a matching golden file"
        );
        // A matching case prints nothing about goldens.
        assert!(!run.stdout.contains("golden"), "{run:?}");
    }
}

/// Runs `suites` twice (the first run writes `.new` files, `accept` accepts them, the
/// second run matches) and returns each trial's golden outcome per run.
fn pinned_outcomes(s: &Scratch) -> [BTreeMap<String, Option<String>>; 2] {
    let outcomes = |report: &Report| {
        report
            .cases
            .iter()
            .map(|c| {
                (
                    c["trial"].as_str().expect("trial").to_string(),
                    c["golden"]["outcome"].as_str().map(str::to_string),
                )
            })
            .collect::<BTreeMap<_, _>>()
    };
    let (first, report) = run_suite(s, "suites", &[]);
    assert_eq!(first.code, 1, "{first:?}");
    let before = outcomes(&report);
    let accepted = agentest(&s.root, &["accept", "suites"], &[]);
    assert_eq!(accepted.code, 0, "{accepted:?}");
    let (second, report) = run_suite(s, "suites", &[]);
    assert_eq!(second.code, 0, "{second:?}");
    assert_eq!(report.summary["failed"], 0, "{}", report.text);
    [before, outcomes(&report)]
}

fn outcome_map(pairs: &[(&str, Option<&str>)]) -> BTreeMap<String, Option<String>> {
    pairs
        .iter()
        .map(|(t, o)| (t.to_string(), o.map(str::to_string)))
        .collect()
}

fn golden_suites_in_the_config_pin_a_whole_suite_and_golden_false_opts_out() {
    let s = scratch("suites", "[golden]\nsuites = [\"pinned\"]\n");
    s.write_suite(
        "suites/pinned.jsonl",
        &[
            &greet("a", "Hello", ""),
            &greet("b", "Hi", r#", "golden": false"#),
        ],
    );
    s.write_suite(
        "suites/other.jsonl",
        &[
            &greet("c", "Hey", ""),
            &greet("d", "Good morning", r#", "golden": true"#),
        ],
    );
    let [first, second] = pinned_outcomes(&s);
    assert_eq!(
        first,
        outcome_map(&[
            ("other::c", None),
            ("other::d", Some("missing")),
            ("pinned::a", Some("missing")),
            ("pinned::b", None),
        ])
    );
    assert_eq!(
        second,
        outcome_map(&[
            ("other::c", None),
            ("other::d", Some("matched")),
            ("pinned::a", Some("matched")),
            ("pinned::b", None),
        ])
    );
    assert_eq!(
        s.written(),
        [
            "suites/other.golden/d.txt",
            "suites/other.jsonl",
            "suites/pinned.golden/a.txt",
            "suites/pinned.jsonl",
        ]
    );
    assert_eq!(
        s.read("suites/pinned.golden/a.txt"),
        greet_golden("pinned", "a", "Hello")
    );
    // A top-level suite is the same suite whether the folder or the file is run.
    let (run, report) = run_suite(&s, "suites/pinned.jsonl", &[("AGENTEST_UPDATE", "no")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(report.golden("pinned::a")["outcome"], "matched");
}

fn golden_enabled_in_the_config_pins_every_suite_but_golden_false() {
    let s = scratch("enabled", "[golden]\nenabled = true\n");
    s.write_suite(
        "suites/one.jsonl",
        &[
            &greet("a", "Hello", ""),
            &greet("b", "Hi", r#", "golden": false"#),
        ],
    );
    s.write_suite("suites/two.jsonl", &[&greet("c", "Hey", "")]);
    let [first, second] = pinned_outcomes(&s);
    assert_eq!(
        first,
        outcome_map(&[
            ("one::a", Some("missing")),
            ("one::b", None),
            ("two::c", Some("missing")),
        ])
    );
    assert_eq!(
        second,
        outcome_map(&[
            ("one::a", Some("matched")),
            ("one::b", None),
            ("two::c", Some("matched")),
        ])
    );
    assert_eq!(
        s.read("suites/two.golden/c.txt"),
        greet_golden("two", "c", "Hey")
    );
}

fn a_failing_pinned_case_is_not_compared_and_writes_nothing() {
    let s = scratch("failing", "");
    s.write_suite(
        "s.jsonl",
        &[r#"{"id": "f", "input": "Hello", "golden": true, "assertions": [{"type": "contains", "value": "Goodbye"}]}"#],
    );
    let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", "always")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(report.status("s::f"), "failed");
    assert!(
        report.case("s::f").get("golden").is_none(),
        "{}",
        report.text
    );
    assert!(!report.error("s::f").contains("golden"), "{}", report.text);
    assert_eq!(s.written(), ["s.jsonl"]);
}

// ---------------------------------------------------------------------------------------
// 2. The rendering
// ---------------------------------------------------------------------------------------

const STATIC_CASE: &str = r#"{"id": "T1", "name": "Draft a travel expense", "golden": true, "turns": [{"input": "I want to submit an expense report\nfor my trip", "assertions": [{"type": "contains", "value": "type of expense"}]}, {"input": "Business travel, $3500", "assertions": [{"type": "tool_called", "name": "create_expense"}, {"type": "contains", "value": "rejected", "negate": true}]}], "final_assertions": [{"type": "json_path", "path": "$.expense.status", "value": "draft"}]}"#;

const STATIC_GOLDEN: &str = r#"case: flow::T1
name: Draft a travel expense
mode: static

--- turn 1 (static)
user: I want to submit an expense report
      for my trip
agent: Sure. What type of expense would you like to submit, and what is the amount?
awaiting input
✓ contains "type of expense"

--- turn 2 (static)
user: Business travel, $3500
tool create_expense({"type":"travel","amount":3500}) -> {"id":"EXP-0001","type":"travel","amount":3500,"status":"draft"}
agent: I've drafted a travel expense of $3500. Shall I submit it? Please confirm.
data: {"expense":{"id":"EXP-0001","type":"travel","amount":3500,"status":"draft"}}
awaiting input
✓ tool_called "create_expense"
✓ not contains "rejected"

--- final assertions
✓ $.expense.status = "draft"
"#;

fn a_static_case_renders_as_the_expected_text() {
    let s = scratch("render", "");
    s.write_suite("flow.jsonl", &[STATIC_CASE]);
    let (run, report) = run_suite(&s, "flow.jsonl", &[("AGENTEST_UPDATE", "always")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        report.golden("flow::T1"),
        &json!({"file": "flow.golden/T1.txt", "outcome": "updated"})
    );
    let golden = s.read("flow.golden/T1.txt");
    assert_eq!(golden, STATIC_GOLDEN);

    // The record holds what the golden file must not: durations, the session, tokens.
    let record = report.case("flow::T1");
    assert!(record["duration_ms"].is_u64(), "{}", report.text);
    assert_eq!(record["turns"][1]["usage"]["input_tokens"], 12);
    for volatile in [
        "ms",
        "duration",
        "token",
        "usage",
        "agentest-",
        "session",
        "12 in",
    ] {
        assert!(!golden.contains(volatile), "{volatile:?} in:\n{golden}");
    }

    // The same transcript matches on the next run, under every mode.
    let (run, report) = run_suite(&s, "flow.jsonl", &[("AGENTEST_UPDATE", "no")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(report.golden("flow::T1")["outcome"], "matched");
}

const DYNAMIC_SUITE: &str = r#"{"id": "expense-dynamic", "name": "Expense submission coverage", "mode": "dynamic", "input": "Hi, I need to file an expense", "simulator": {"use": "script", "script": [{"when": "(?i)type", "say": "Travel, $500"}, {"when": "(?i)confirm", "say": "Yes, confirm"}]}, "checkpoints": [{"id": "ask", "description": "asks for the expense type", "assertion": {"type": "contains", "value": "type"}}, {"id": "create", "after": ["ask"], "assertion": {"type": "tool_called", "name": "create_expense"}}, {"id": "done", "after": ["create"], "assert": {"type": "contains", "value": "submitted"}}], "max_turns": 6, "timeout": "1m"}
{"id": "optional-and-forbidden", "name": "Optional checkpoints may be missed; forbidden ones must never match", "input": "I want to submit an expense", "simulator": {"use": "script", "script": [{"when": "(?i)amount", "say": "Meal, $40"}, {"when": "(?i)confirm", "say": "confirm"}]}, "checkpoints": [{"id": "drafted", "assert": {"type": "json_path", "path": "$.expense.status", "value": "draft"}}, {"id": "submitted", "after": ["drafted"], "assert": {"type": "contains", "value": "Reference"}}, {"id": "upsell", "required": false, "assert": {"type": "contains", "value": "premium card"}}, {"id": "no-policy-lookup", "forbidden": true, "assert": {"type": "tool_called", "name": "get_policy"}}], "max_turns": 5}
{"id": "same-turn-chain", "name": "A checkpoint whose `after` is reached earlier in the same turn counts", "input": "Equipment, $80", "simulator": {"use": "script", "script": [{"say": "yes, confirm"}]}, "checkpoints": [{"id": "second", "after": ["first"], "assert": {"type": "tool_called", "name": "create_expense"}}, {"id": "first", "assert": {"type": "contains", "value": "drafted"}}, {"id": "closed", "after": ["second"], "assert": {"type": "contains", "value": "submitted"}}], "max_turns": 3}
"#;

const DYNAMIC_GOLDEN: &str = r#"case: dynamic::optional-and-forbidden
name: Optional checkpoints may be missed; forbidden ones must never match
mode: dynamic
simulator: script

--- turn 1 (initial)
user: I want to submit an expense
agent: Sure. What type of expense would you like to submit, and what is the amount?
awaiting input
✗ checkpoint drafted
✗ checkpoint upsell

--- turn 2 (simulated)
user: Meal, $40
tool create_expense({"type":"meal","amount":40}) -> {"id":"EXP-0001","type":"meal","amount":40,"status":"draft"}
agent: I've drafted a meal expense of $40. Shall I submit it? Please confirm.
data: {"expense":{"id":"EXP-0001","type":"meal","amount":40,"status":"draft"}}
awaiting input
✓ checkpoint drafted
✗ checkpoint submitted
✗ checkpoint upsell

--- turn 3 (simulated)
user: confirm
agent: Expense submitted. Reference: EXP-2025-001
data: {"expense":{"id":"EXP-0001","type":"meal","amount":40,"status":"submitted","reference":"EXP-2025-001"}}
✓ checkpoint submitted
✗ checkpoint upsell

--- checkpoints
✓ drafted at turn 2
✓ submitted at turn 3
✗ upsell
✓ no-policy-lookup

termination: all_checkpoints_reached
"#;

fn a_dynamic_case_renders_its_checkpoints_and_termination() {
    let s = scratch("render-dyn", "[golden]\nsuites = [\"dynamic\"]\n");
    s.write("dynamic.jsonl", DYNAMIC_SUITE);
    let (run, report) = run_suite_args(
        &s,
        "dynamic.jsonl",
        &["--run", "optional"],
        &[("AGENTEST_UPDATE", "always")],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        report.golden("dynamic::optional-and-forbidden")["outcome"],
        "updated"
    );
    assert_eq!(
        s.read("dynamic.golden/optional-and-forbidden.txt"),
        DYNAMIC_GOLDEN
    );
    let (run, _) = run_suite_args(
        &s,
        "dynamic.jsonl",
        &["--run", "optional"],
        &[("AGENTEST_UPDATE", "no")],
    );
    assert_eq!(run.code, 0, "the dynamic transcript is stable: {run:?}");
}

// ---------------------------------------------------------------------------------------
// 3. A mismatch: the diff and how to update, coloured only on the console
// ---------------------------------------------------------------------------------------

/// `s.jsonl` with one pinned greeting whose golden file says "Howdy" where the agent
/// says "Hello".
fn mismatching() -> Scratch {
    let s = scratch("mismatch", "");
    s.write_suite(
        "s.jsonl",
        &[&greet("hello", "Hello", r#", "golden": true"#)],
    );
    s.write("s.golden/hello.txt", &edited_hello());
    s
}

fn edited_hello() -> String {
    greet_golden("s", "hello", "Hello").replace("Hello to you", "Howdy to you")
}

/// The diff part of the mismatch message.
const HELLO_DIFF: &str = r#"--- golden
+++ actual
@@ -3,6 +3,6 @@
 
 --- turn 1 (static)
 user: Hello
-agent: Hello! I'm the expense assistant. Howdy to you too. How can I help?
+agent: Hello! I'm the expense assistant. Hello to you too. How can I help?
 awaiting input
 ✓ contains "expense assistant"
"#;

/// The whole failure message of [`mismatching`]; `wrote` when a `.new` was written.
fn hello_mismatch(wrote: bool) -> String {
    let note = if wrote {
        "wrote s.golden/hello.txt.new; "
    } else {
        ""
    };
    format!(
        "the transcript differs from the golden file s.golden/hello.txt:\n{HELLO_DIFF}\n{note}{HOW_TO_UPDATE}"
    )
}

fn a_mismatch_fails_with_a_unified_diff_and_says_how_to_update() {
    let s = mismatching();
    let (run, report) = run_suite(&s, "s.jsonl", &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(report.status("s::hello"), "failed");
    assert_eq!(report.error("s::hello"), hello_mismatch(true));
    assert_eq!(
        report.golden("s::hello"),
        &json!({"file": "s.golden/hello.txt", "outcome": "mismatch", "pending": "s.golden/hello.txt.new"})
    );
    let expected_block = format!(
        "► [hello] (1 turn)\n  ├─ Turn 1: \"Hello\" → PASSED (<dur>)\n  │\n  └─ Result: FAILED (<dur>)\n{}",
        indented(&hello_mismatch(true))
    );
    assert_eq!(
        no_durations(block(&run.stdout, "hello")),
        expected_block.trim_end_matches('\n')
    );
    assert!(!run.stdout.contains('\x1b'), "{run:?}");
    // The golden file is untouched; the actual transcript waits beside it.
    assert_eq!(s.read("s.golden/hello.txt"), edited_hello());
    assert_eq!(
        s.read("s.golden/hello.txt.new"),
        greet_golden("s", "hello", "Hello")
    );
}

/// A golden file checked out with CRLF line endings (git's `autocrlf`) matches: line
/// endings are not compared. When it does differ, the diff shows the line that differs,
/// not every line removed and added again with the same text.
fn a_golden_file_with_crlf_line_endings_is_compared_line_by_line() {
    let s = scratch("crlf", "");
    s.write_suite(
        "s.jsonl",
        &[&greet("hello", "Hello", r#", "golden": true"#)],
    );
    let crlf = |text: String| text.replace('\n', "\r\n");
    s.write(
        "s.golden/hello.txt",
        &crlf(greet_golden("s", "hello", "Hello")),
    );
    let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", "no")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(report.golden("s::hello")["outcome"], "matched");

    s.write("s.golden/hello.txt", &crlf(edited_hello()));
    let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", "no")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(report.status("s::hello"), "failed");
    assert_eq!(
        report.error("s::hello"),
        format!(
            "the transcript differs from the golden file s.golden/hello.txt:\n{HELLO_DIFF}\n{HOW_TO_UPDATE}"
        )
    );
}

/// A golden file that cannot be read (not UTF-8, or a case id too long for a file name)
/// is the case's `error`, saying why and what to do, not a failure of the agent's.
fn a_golden_file_that_cannot_be_read_is_an_error() {
    let s = scratch("unreadable", "");
    let long = "x".repeat(300);
    s.write_suite(
        "s.jsonl",
        &[
            &greet("latin1", "Hello", r#", "golden": true"#),
            &greet(&long, "Hi", r#", "golden": true"#),
        ],
    );
    std::fs::create_dir_all(s.join("s.golden")).expect("create the golden folder");
    std::fs::write(s.join("s.golden/latin1.txt"), b"case: s::latin1\ncaf\xe9\n")
        .expect("write a Latin-1 golden file");
    let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", "no")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(report.status("s::latin1"), "error", "{}", report.text);
    assert_eq!(
        report.error("s::latin1"),
        "failed to read the golden file s.golden/latin1.txt: stream did not contain valid UTF-8; a golden file is UTF-8 text: fix it, or delete it and accept the transcript the next run writes for review"
    );
    assert_eq!(report.golden("s::latin1")["outcome"], "error");
    // The trial name is cut to 200 characters (with a hash); the id is kept whole.
    let trial = report
        .text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["id"] == long.as_str())
        .and_then(|r| r["trial"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no record of the long id in {}", report.text));
    assert!(trial.len() < 220, "{trial}");
    assert_eq!(report.status(&trial), "error", "{}", report.text);
    assert!(
        report.error(&trial).ends_with(
            ": File name too long (os error 36); the case's id makes a file name longer than the system allows: give the case a shorter id"
        ),
        "{}",
        report.error(&trial)
    );
}

fn with_color_always_the_console_diff_is_coloured_and_every_report_stays_plain() {
    let s = mismatching();
    for ext in ["jsonl", "json", "md", "xml", "html"] {
        let out = format!("report.{ext}");
        let run = agentest(
            &s.root,
            &["test", "-i", "s.jsonl", "--color", "always", "-o", &out],
            &[("AGENTEST_UPDATE", "no")],
        );
        assert_eq!(run.code, 1, "{run:?}");
        // The console: every diff line painted, the rest plain.
        for line in [
            "     \x1b[1m--- golden\x1b[0m",
            "     \x1b[1m+++ actual\x1b[0m",
            "     \x1b[36m@@ -3,6 +3,6 @@\x1b[0m",
            "     \x1b[31m-agent: Hello! I'm the expense assistant. Howdy to you too. How can I help?\x1b[0m",
            "     \x1b[32m+agent: Hello! I'm the expense assistant. Hello to you too. How can I help?\x1b[0m",
            "      user: Hello",
            "     the transcript differs from the golden file s.golden/hello.txt:",
        ] {
            assert!(
                run.stdout.lines().any(|l| l == line),
                "expected the line {line:?} in:\n{run:?}"
            );
        }
        // The report: the plain diff, no escape codes.
        let text = s.read(&out);
        assert!(!text.contains('\x1b'), "escape codes in {out}:\n{text}");
        assert!(
            !text.contains("\\u001b"),
            "escaped escape codes in {out}:\n{text}"
        );
        assert!(!text.contains("[31m"), "colour codes in {out}:\n{text}");
        match ext {
            "jsonl" => {
                let report = Report::read(&s.join(&out));
                assert_eq!(report.error("s::hello"), hello_mismatch(false));
            }
            "json" => {
                let doc: Value = serde_json::from_str(&text).expect("JSON report");
                assert_eq!(doc["results"][0]["error"], hello_mismatch(false));
            }
            _ => {
                for line in [
                    "--- golden",
                    "+++ actual",
                    "@@ -3,6 +3,6 @@",
                    "-agent: Hello! I&#39;m the expense assistant. Howdy to you too.",
                    "+agent: Hello! I&#39;m the expense assistant. Hello to you too.",
                    "rerun with AGENTEST_UPDATE=always",
                ] {
                    // Markdown and JUnit keep the apostrophe; HTML may escape it.
                    let plain = line.replace("&#39;", "'");
                    assert!(
                        text.contains(&plain) || text.contains(line),
                        "{line:?} missing from {out}:\n{text}"
                    );
                }
            }
        }
    }
    assert_eq!(s.written(), ["s.golden/hello.txt", "s.jsonl"]);
}

fn a_removed_turn_header_is_painted_as_a_removed_line() {
    let s = scratch("paint", "");
    s.write_suite(
        "s.jsonl",
        &[&greet("hello", "Hello", r#", "golden": true"#)],
    );
    s.write(
        "s.golden/hello.txt",
        &format!(
            "{}\n--- turn 2 (static)\nuser: Again\n",
            greet_golden("s", "hello", "Hello")
        ),
    );
    let run = agentest(
        &s.root,
        &["test", "-i", "s.jsonl", "--color", "always"],
        &[("AGENTEST_UPDATE", "no")],
    );
    assert_eq!(run.code, 1, "{run:?}");
    for line in [
        "     \x1b[31m-user: Again\x1b[0m",
        "     \x1b[31m---- turn 2 (static)\x1b[0m",
    ] {
        assert!(
            run.stdout.lines().any(|l| l == line),
            "expected the line {line:?} in:\n{run:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// 4. AGENTEST_UPDATE
// ---------------------------------------------------------------------------------------

/// `s.jsonl` with a pinned case whose golden file differs (`hello`) and one with no
/// golden file (`fresh`).
fn pending_pair() -> Scratch {
    let s = mismatching();
    s.write_suite(
        "s.jsonl",
        &[
            &greet("hello", "Hello", r#", "golden": true"#),
            &greet("fresh", "Hi", r#", "golden": true"#),
        ],
    );
    s
}

fn fresh_missing(wrote: bool) -> String {
    let note = if wrote {
        "wrote s.golden/fresh.txt.new; "
    } else {
        ""
    };
    format!("there is no golden file s.golden/fresh.txt yet (a transcript is never accepted silently);\n{note}{HOW_TO_UPDATE}")
}

fn update_new_writes_pending_files_and_fails() {
    let s = pending_pair();
    let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", "new")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(report.summary["failed"], 2, "{}", report.text);
    assert_eq!(report.error("s::hello"), hello_mismatch(true));
    assert_eq!(report.error("s::fresh"), fresh_missing(true));
    assert_eq!(
        report.golden("s::fresh"),
        &json!({"file": "s.golden/fresh.txt", "outcome": "missing", "pending": "s.golden/fresh.txt.new"})
    );
    assert_eq!(
        s.written(),
        [
            "s.golden/fresh.txt.new",
            "s.golden/hello.txt",
            "s.golden/hello.txt.new",
            "s.jsonl"
        ]
    );
    assert_eq!(s.read("s.golden/hello.txt"), edited_hello());
    assert_eq!(
        s.read("s.golden/hello.txt.new"),
        greet_golden("s", "hello", "Hello")
    );
    assert_eq!(
        s.read("s.golden/fresh.txt.new"),
        greet_golden("s", "fresh", "Hi")
    );
    // A missing golden file is never accepted by running again.
    let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", "new")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(report.golden("s::fresh")["outcome"], "missing");
    assert!(!s.exists("s.golden/fresh.txt"));
}

fn update_always_overwrites_and_passes() {
    let s = pending_pair();
    let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", "always")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(report.summary["passed"], 2, "{}", report.text);
    for id in ["hello", "fresh"] {
        assert_eq!(
            report.golden(&format!("s::{id}")),
            &json!({"file": format!("s.golden/{id}.txt"), "outcome": "updated"})
        );
        assert!(report.case(&format!("s::{id}")).get("error").is_none());
    }
    assert_eq!(
        s.written(),
        ["s.golden/fresh.txt", "s.golden/hello.txt", "s.jsonl"]
    );
    assert_eq!(
        s.read("s.golden/hello.txt"),
        greet_golden("s", "hello", "Hello")
    );
    assert_eq!(
        s.read("s.golden/fresh.txt"),
        greet_golden("s", "fresh", "Hi")
    );
}

fn update_no_writes_nothing_and_fails() {
    let s = pending_pair();
    let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", "no")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(report.error("s::hello"), hello_mismatch(false));
    assert_eq!(report.error("s::fresh"), fresh_missing(false));
    assert_eq!(
        report.golden("s::hello"),
        &json!({"file": "s.golden/hello.txt", "outcome": "mismatch"})
    );
    assert_eq!(
        report.golden("s::fresh"),
        &json!({"file": "s.golden/fresh.txt", "outcome": "missing"})
    );
    assert_eq!(s.written(), ["s.golden/hello.txt", "s.jsonl"]);
    assert_eq!(s.read("s.golden/hello.txt"), edited_hello());
}

fn update_auto_is_new_without_ci_and_no_with_ci() {
    // (environment, whether a `.new` is written)
    let cases: &[(&[(&str, &str)], bool)] = &[
        (&[], true),
        (&[("AGENTEST_UPDATE", "auto")], true),
        (&[("AGENTEST_UPDATE", "")], true),
        (&[("CI", "false")], true),
        (&[("CI", "0")], true),
        (&[("CI", "")], true),
        (&[("CI", "true")], false),
        (&[("CI", "1")], false),
        (&[("CI", "true"), ("AGENTEST_UPDATE", "auto")], false),
        (&[("CI", "true"), ("AGENTEST_UPDATE", "")], false),
        // An explicit mode wins over CI.
        (&[("CI", "true"), ("AGENTEST_UPDATE", "new")], true),
    ];
    std::thread::scope(|scope| {
        for (envs, writes) in cases {
            scope.spawn(move || {
                let s = scratch("auto", "");
                s.write_suite("s.jsonl", &[&greet("fresh", "Hi", r#", "golden": true"#)]);
                let (run, report) = run_suite(&s, "s.jsonl", envs);
                assert_eq!(run.code, 1, "{envs:?}: {run:?}");
                assert_eq!(report.error("s::fresh"), fresh_missing(*writes), "{envs:?}");
                let files: &[&str] = if *writes {
                    &["s.golden/fresh.txt.new", "s.jsonl"]
                } else {
                    &["s.jsonl"]
                };
                assert_eq!(s.written(), files, "{envs:?}");
            });
        }
    });
    // With CI set, a mismatch writes nothing either.
    let s = mismatching();
    let (run, report) = run_suite(&s, "s.jsonl", &[("CI", "true")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(report.error("s::hello"), hello_mismatch(false));
    assert_eq!(s.written(), ["s.golden/hello.txt", "s.jsonl"]);
}

fn an_unknown_update_mode_is_a_usage_error() {
    let s = pending_pair();
    for value in ["sometimes", "ALWAYS", "yes"] {
        let run = agentest(
            &s.root,
            &[
                "test",
                "-i",
                "s.jsonl",
                "--color",
                "never",
                "-o",
                "report.jsonl",
            ],
            &[("AGENTEST_UPDATE", value)],
        );
        assert_eq!(run.code, 2, "{run:?}");
        assert_eq!(
            run.stderr,
            format!(
                "error: environment variable AGENTEST_UPDATE=\"{value}\" is not valid; use auto, new, always or no\n"
            )
        );
        assert_eq!(run.stdout, "", "nothing runs");
        assert!(!s.exists("report.jsonl"));
        assert_eq!(s.written(), ["s.golden/hello.txt", "s.jsonl"]);
    }
}

fn a_stale_pending_file_is_removed_once_the_case_matches_again() {
    let s = mismatching();
    let (run, _) = run_suite(&s, "s.jsonl", &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(s.exists("s.golden/hello.txt.new"));
    // The golden file is fixed by hand; the `.new` no longer applies.
    s.write("s.golden/hello.txt", &greet_golden("s", "hello", "Hello"));
    for mode in ["no", "new"] {
        let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", mode)]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(report.golden("s::hello")["outcome"], "matched");
        assert_eq!(s.written(), ["s.golden/hello.txt", "s.jsonl"]);
    }
}

fn update_always_leaves_no_stale_pending_file() {
    let s = mismatching();
    let (run, _) = run_suite(&s, "s.jsonl", &[]);
    assert_eq!(run.code, 1, "{run:?}");
    // Meanwhile the stale `.new` says something else again.
    s.write("s.golden/hello.txt.new", "stale\n");
    let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", "always")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(report.golden("s::hello")["outcome"], "updated");
    assert_eq!(s.written(), ["s.golden/hello.txt", "s.jsonl"]);
    let accept = agentest(&s.root, &["accept", "."], &[]);
    assert_eq!(accept.code, 0, "{accept:?}");
    assert_eq!(
        s.read("s.golden/hello.txt"),
        greet_golden("s", "hello", "Hello")
    );
}

fn ids_that_differ_only_in_punctuation_have_their_own_golden_files() {
    let s = scratch("collide", "");
    s.write_suite(
        "s.jsonl",
        &[
            &greet("a b", "Hello", r#", "golden": true"#),
            &greet("a_b", "Hi", r#", "golden": true"#),
        ],
    );
    let (run, _) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", "always")]);
    assert_eq!(run.code, 0, "{run:?}");
    let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", "no")]);
    assert_eq!(
        run.code, 0,
        "each case matches its own golden file: {run:?}"
    );
    assert_ne!(
        report.golden("s::a b")["file"],
        report.golden("s::a_b")["file"]
    );
}

fn a_nested_suite_matches_its_golden_file_whether_the_folder_or_the_file_is_run() {
    let s = scratch("nested", "");
    s.write_suite(
        "suites/billing/refunds.jsonl",
        &[&greet("T1", "Hello", r#", "golden": true"#)],
    );
    let (run, report) = run_suite(&s, "suites", &[("AGENTEST_UPDATE", "always")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        report.golden("billing/refunds::T1")["file"],
        "suites/billing/refunds.golden/T1.txt"
    );
    let (run, report) = run_suite(
        &s,
        "suites/billing/refunds.jsonl",
        &[("AGENTEST_UPDATE", "no")],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        report.cases[0]["golden"]["outcome"], "matched",
        "{}",
        report.text
    );
}

// ---------------------------------------------------------------------------------------
// 5. Redactions
// ---------------------------------------------------------------------------------------

const REDACTIONS: &str = r#"
[[golden.redactions]]
pattern = "EXP-0001"
replace = "EXP-A"

[[golden.redactions]]
pattern = "EXP-A"
replace = "EXP-B"

[[golden.redactions]]
suite = "alpha"
pattern = "of \\$(\\d+)"
replace = "of [$1 dollars]"
"#;

fn config_redactions_apply_in_order_and_per_suite() {
    let s = scratch("redact", &format!("[golden]\nenabled = true\n{REDACTIONS}"));
    let case = r#"{"id": "meal", "input": "Meal, $40", "assertions": [{"type": "tool_called", "name": "create_expense"}]}"#;
    s.write_suite("suites/alpha.jsonl", &[case]);
    s.write_suite("suites/beta.jsonl", &[case]);
    let (run, report) = run_suite(&s, "suites", &[("AGENTEST_UPDATE", "always")]);
    assert_eq!(run.code, 0, "{run:?}");
    // The reply itself is untouched in the report.
    assert!(report.case("alpha::meal")["turns"][0]["output"]
        .as_str()
        .expect("output")
        .contains("of $40"));
    let expected = |suite: &str, amount: &str| {
        format!(
            r#"case: {suite}::meal
mode: single

--- turn 1 (static)
user: Meal, $40
tool create_expense({{"type":"meal","amount":40}}) -> {{"id":"EXP-B","type":"meal","amount":40,"status":"draft"}}
agent: I've drafted a meal expense {amount}. Shall I submit it? Please confirm.
data: {{"expense":{{"id":"EXP-B","type":"meal","amount":40,"status":"draft"}}}}
awaiting input
✓ tool_called "create_expense"
"#
        )
    };
    // Both suites: the first two redactions, in order (EXP-0001 → EXP-A → EXP-B); only
    // alpha: its own.
    assert_eq!(
        s.read("suites/alpha.golden/meal.txt"),
        expected("alpha", "of [40 dollars]")
    );
    assert_eq!(
        s.read("suites/beta.golden/meal.txt"),
        expected("beta", "of $40")
    );
    let (run, _) = run_suite(&s, "suites", &[("AGENTEST_UPDATE", "no")]);
    assert_eq!(run.code, 0, "{run:?}");
}

/// A process agent whose replies hold its session id, the time and fresh UUIDs.
const STAMP_AGENT: &str = r#"import datetime, json, sys, uuid
for line in sys.stdin:
    if not line.strip():
        continue
    req = json.loads(line)
    sid = req["session_id"]
    now = datetime.datetime.now(datetime.timezone.utc)
    z = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    off = now.isoformat()
    space = now.strftime("%Y-%m-%d %H:%M:%S")
    u = str(uuid.uuid4())
    big = str(uuid.uuid4()).upper()
    reply = {
        "content": f"Session {sid} opened at {z}.\nOrder {u} (ref {big}) logged {space}; next check {off}.",
        "tool_calls": [
            {"name": "lookup", "arguments": {"session": sid, "at": z}, "result": {"order": u}},
            {"name": "audit", "arguments": {}, "error": f"busy until {off}"},
        ],
        "data": {"session": sid, "order": u, "at": z},
    }
    print(json.dumps(reply), flush=True)
"#;

const STAMP_GOLDEN: &str = r#"case: volatile::stamp
mode: single

--- turn 1 (static)
user: Hello
tool lookup({"session":"[session]","at":"[timestamp]"}) -> {"order":"[uuid]"}
tool audit({}) -> error "busy until [timestamp]"
agent: Session [session] opened at [timestamp].
       Order [uuid] (ref [uuid]) logged [timestamp]; next check [timestamp].
data: {"session":"[session]","order":"[uuid]","at":"[timestamp]"}
✓ contains "Order"
"#;

fn session_ids_timestamps_and_uuids_in_replies_are_redacted() {
    let s = Scratch::bare("stamp");
    s.write("stamp.py", STAMP_AGENT);
    s.write(
        "agentest.toml",
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"stamp.py\"]\n",
    );
    s.write_suite(
        "volatile.jsonl",
        &[r#"{"id": "stamp", "input": "Hello", "golden": true, "assertions": [{"type": "contains", "value": "Order"}]}"#],
    );
    let (run, report) = run_suite(&s, "volatile.jsonl", &[("AGENTEST_UPDATE", "always")]);
    assert_eq!(run.code, 0, "{run:?}");
    let reply = report.case("volatile::stamp")["turns"][0]["output"]
        .as_str()
        .expect("output")
        .to_string();
    assert!(reply.contains("Session agentest-"), "{reply}");
    assert_eq!(s.read("volatile.golden/stamp.txt"), STAMP_GOLDEN);
    // Another process, another session, time and UUIDs: the same transcript.
    let (run, report) = run_suite(&s, "volatile.jsonl", &[("AGENTEST_UPDATE", "no")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(report.golden("volatile::stamp")["outcome"], "matched");
    assert_ne!(
        report.case("volatile::stamp")["turns"][0]["output"],
        reply.as_str()
    );
}

fn an_invalid_redaction_regex_is_a_config_error_naming_the_entry() {
    let s = scratch(
        "badregex",
        "[[golden.redactions]]\npattern = \"ok\"\nreplace = \"x\"\n\n[[golden.redactions]]\nsuite = \"s\"\npattern = \"EXP-(\\\\d+\"\nreplace = \"x\"\n",
    );
    s.write_suite("s.jsonl", &[&greet("hello", "Hello", "")]);
    let run = agentest(
        &s.root,
        &[
            "test",
            "-i",
            "s.jsonl",
            "--color",
            "never",
            "-o",
            "report.jsonl",
        ],
        &[],
    );
    assert_eq!(run.code, 2, "{run:?}");
    let config = s.join("agentest.toml");
    assert!(
        run.stderr.starts_with(&format!(
            "error: invalid config {}: [[golden.redactions]] #2: invalid regex \"EXP-(\\d+\": regex parse error:",
            config.display()
        )),
        "{run:?}"
    );
    assert!(run.stderr.contains("unclosed group"), "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(!s.exists("report.jsonl"));
}

// ---------------------------------------------------------------------------------------
// 6. agentest review and agentest accept
// ---------------------------------------------------------------------------------------

/// Three pending files under `agent-tests/s.golden`: `a` and `c` replace golden files,
/// `b` is new. Also `.new` files that are not pending: outside a `*.golden` folder and
/// in a hidden folder.
fn three_pending() -> Scratch {
    let s = Scratch::bare("review");
    for (name, old) in [("a", Some("old a\n")), ("b", None), ("c", Some("old c\n"))] {
        if let Some(old) = old {
            s.write(&format!("agent-tests/s.golden/{name}.txt"), old);
        }
        s.write(
            &format!("agent-tests/s.golden/{name}.txt.new"),
            &format!("new {name}\n"),
        );
    }
    s.write("agent-tests/notes/x.txt.new", "not pending\n");
    s.write("agent-tests/.hidden.golden/y.txt.new", "not pending\n");
    s
}

const DIFF_A: &str = "--- golden\n+++ actual\n@@ -1 +1 @@\n-old a\n+new a\n";
const DIFF_B: &str = "(new golden file)\n--- golden\n+++ actual\n@@ -0,0 +1 @@\n+new b\n";
const DIFF_C: &str = "--- golden\n+++ actual\n@@ -1 +1 @@\n-old c\n+new c\n";

fn untouched(s: &Scratch) {
    assert_eq!(
        s.written(),
        [
            "agent-tests/.hidden.golden/y.txt.new",
            "agent-tests/notes/x.txt.new",
            "agent-tests/s.golden/a.txt",
            "agent-tests/s.golden/a.txt.new",
            "agent-tests/s.golden/b.txt.new",
            "agent-tests/s.golden/c.txt",
            "agent-tests/s.golden/c.txt.new",
        ]
    );
    assert_eq!(s.read("agent-tests/s.golden/a.txt"), "old a\n");
}

fn review_without_a_terminal_lists_every_pending_diff_and_exits_1() {
    let s = three_pending();
    let expected = format!(
        "\n[1/3] agent-tests/s.golden/a.txt\n{DIFF_A}\n[2/3] agent-tests/s.golden/b.txt\n{DIFF_B}\n[3/3] agent-tests/s.golden/c.txt\n{DIFF_C}\n3 pending; run `agentest accept` to accept them all, or `agentest review` on a terminal to go one by one\n"
    );
    // Answers on a pipe are not read: only a person on a terminal decides.
    for args in [
        &["review", "--color", "never"][..],
        &["review", "agent-tests", "--color", "never"][..],
        &["review", "agent-tests"][..],
    ] {
        let run = agentest_piped(&s.root, args, "a\na\na\n");
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert_eq!(run.stdout, expected, "{args:?}");
        assert_eq!(run.stderr, "");
        untouched(&s);
    }
    // Coloured on request.
    let run = agentest_piped(&s.root, &["review", "--color", "always"], "");
    assert_eq!(run.code, 1, "{run:?}");
    for line in [
        "\x1b[1m--- golden\x1b[0m",
        "\x1b[36m@@ -1 +1 @@\x1b[0m",
        "\x1b[31m-old a\x1b[0m",
        "\x1b[32m+new a\x1b[0m",
        "(new golden file)",
    ] {
        assert!(run.stdout.lines().any(|l| l == line), "{line:?}: {run:?}");
    }
    untouched(&s);
}

fn review_all_accepts_everything_shown() {
    let s = three_pending();
    let run = agentest_piped(&s.root, &["review", "--all", "--color", "never"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        format!(
            "\n[1/3] agent-tests/s.golden/a.txt\n{DIFF_A}accepted\n\n[2/3] agent-tests/s.golden/b.txt\n{DIFF_B}accepted\n\n[3/3] agent-tests/s.golden/c.txt\n{DIFF_C}accepted\n"
        )
    );
    assert_eq!(
        s.written(),
        [
            "agent-tests/.hidden.golden/y.txt.new",
            "agent-tests/notes/x.txt.new",
            "agent-tests/s.golden/a.txt",
            "agent-tests/s.golden/b.txt",
            "agent-tests/s.golden/c.txt",
        ]
    );
    for name in ["a", "b", "c"] {
        assert_eq!(
            s.read(&format!("agent-tests/s.golden/{name}.txt")),
            format!("new {name}\n")
        );
    }
}

fn accept_renames_every_pending_file_over_its_golden_file() {
    let s = three_pending();
    let run = agentest(&s.root, &["accept", "agent-tests"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "accepted agent-tests/s.golden/a.txt\naccepted agent-tests/s.golden/b.txt\naccepted agent-tests/s.golden/c.txt\n"
    );
    for name in ["a", "b", "c"] {
        assert_eq!(
            s.read(&format!("agent-tests/s.golden/{name}.txt")),
            format!("new {name}\n")
        );
        assert!(!s.exists(&format!("agent-tests/s.golden/{name}.txt.new")));
    }
    assert_eq!(s.read("agent-tests/notes/x.txt.new"), "not pending\n");
}

fn accepted_transcripts_pass_on_the_next_run() {
    let s = pending_pair();
    let (run, _) = run_suite(&s, "s.jsonl", &[]);
    assert_eq!(run.code, 1, "{run:?}");
    // No PATH and no agent-tests folder: the current directory.
    let run = agentest(&s.root, &["accept"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "accepted ./s.golden/fresh.txt\naccepted ./s.golden/hello.txt\n"
    );
    let (run, report) = run_suite(&s, "s.jsonl", &[("AGENTEST_UPDATE", "no")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(report.golden("s::hello")["outcome"], "matched");
    assert_eq!(report.golden("s::fresh")["outcome"], "matched");
    assert_eq!(
        s.written(),
        ["s.golden/fresh.txt", "s.golden/hello.txt", "s.jsonl"]
    );
}

fn review_and_accept_with_nothing_pending_say_so_and_exit_0() {
    let s = Scratch::bare("nothing");
    s.write("agent-tests/s.golden/a.txt", "old a\n");
    s.write("agent-tests/notes/x.txt.new", "not pending\n");
    for cmd in ["review", "accept"] {
        let run = agentest_piped(&s.root, &[cmd], "");
        assert_eq!(run.code, 0, "{cmd}: {run:?}");
        assert_eq!(run.stdout, "no pending golden files under agent-tests\n");
        let run = agentest_piped(&s.root, &[cmd, "agent-tests/s.golden"], "");
        assert_eq!(run.code, 0, "{cmd}: {run:?}");
        assert_eq!(
            run.stdout,
            "no pending golden files under agent-tests/s.golden\n"
        );
    }
    assert_eq!(s.read("agent-tests/s.golden/a.txt"), "old a\n");
    // A folder that does not exist is an error.
    let run = agentest(&s.root, &["review", "missing"], &[]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.starts_with("error: failed to list missing"),
        "{run:?}"
    );
}

/// `agentest review` on a terminal: the Nth answer is typed once the review prompt has
/// been printed N times.
fn review_on_a_terminal(s: &Scratch, answers: &[&str]) -> Run {
    let script: Vec<(usize, &str)> = answers
        .iter()
        .enumerate()
        .map(|(i, a)| (i + 1, *a))
        .collect();
    let mut cmd = clean(on_a_terminal(BIN, Watch::Stdout, PROMPT, &script));
    cmd.current_dir(&s.root).arg("review").stdin(Stdio::null());
    finish(&mut cmd)
}

const PROMPT: &str = "accept (a), reject (r), skip (s), quit (q)? ";

fn review_on_a_terminal_accepts_rejects_and_skips_one_by_one() -> Needs {
    python_pty()?;
    let s = three_pending();
    // An unknown answer asks again.
    let run = review_on_a_terminal(&s, &["x", "a", "r", "s"]);
    assert_eq!(run.code, 1, "one file is still pending: {run:?}");
    assert_eq!(
        run.stdout,
        format!(
            "\n[1/3] agent-tests/s.golden/a.txt\n{DIFF_A}{PROMPT}{PROMPT}accepted\n\n[2/3] agent-tests/s.golden/b.txt\n{DIFF_B}{PROMPT}rejected\n\n[3/3] agent-tests/s.golden/c.txt\n{DIFF_C}{PROMPT}"
        )
    );
    assert_eq!(
        s.written(),
        [
            "agent-tests/.hidden.golden/y.txt.new",
            "agent-tests/notes/x.txt.new",
            "agent-tests/s.golden/a.txt",
            "agent-tests/s.golden/c.txt",
            "agent-tests/s.golden/c.txt.new",
        ]
    );
    // Accepted: replaced. Rejected: the `.new` deleted, nothing else. Skipped: left.
    assert_eq!(s.read("agent-tests/s.golden/a.txt"), "new a\n");
    assert_eq!(s.read("agent-tests/s.golden/c.txt"), "old c\n");
    assert_eq!(s.read("agent-tests/s.golden/c.txt.new"), "new c\n");

    // The skipped one is what the next review shows.
    let run = review_on_a_terminal(&s, &["accept"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        format!("\n[1/1] agent-tests/s.golden/c.txt\n{DIFF_C}{PROMPT}accepted\n")
    );
    assert_eq!(s.read("agent-tests/s.golden/c.txt"), "new c\n");
    Ok(())
}

fn quitting_an_interactive_review_leaves_the_rest_pending() -> Needs {
    python_pty()?;
    let s = three_pending();
    let run = review_on_a_terminal(&s, &["q"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stdout,
        format!("\n[1/3] agent-tests/s.golden/a.txt\n{DIFF_A}{PROMPT}")
    );
    untouched(&s);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// 7. agentest freeze
// ---------------------------------------------------------------------------------------

/// A scratch dir holding `dynamic.jsonl` and `out/report.jsonl` from a run of it.
fn dynamic_run() -> Scratch {
    let s = scratch("freeze", "");
    s.write("dynamic.jsonl", DYNAMIC_SUITE);
    let run = agentest(
        &s.root,
        &[
            "test",
            "-i",
            "dynamic.jsonl",
            "--color",
            "never",
            "-o",
            "out/report.jsonl",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    s
}

fn frozen_expense() -> Value {
    json!({
        "id": "expense-dynamic-frozen",
        "name": "Expense submission coverage (frozen from a dynamic run)",
        "timeout": "1m",
        "turns": [
            {"input": "Hi, I need to file an expense", "assert": [{"type": "contains", "value": "type"}]},
            // The checkpoint's own tool_called; the call is not asserted twice.
            {"input": "Travel, $500", "assert": [{"type": "tool_called", "name": "create_expense"}]},
            {"input": "Yes, confirm", "assert": [{"type": "contains", "value": "submitted"}]},
        ]
    })
}

fn frozen_forbidden() -> Value {
    let never = json!({"type": "tool_called", "name": "get_policy", "negate": true});
    json!({
        "id": "optional-and-forbidden-frozen",
        "name": "Optional checkpoints may be missed; forbidden ones must never match (frozen from a dynamic run)",
        "turns": [
            {"input": "I want to submit an expense", "assert": [never]},
            {"input": "Meal, $40", "assert": [
                {"type": "json_path", "path": "$.expense.status", "value": "draft"},
                {"type": "tool_called", "name": "create_expense"},
                never,
            ]},
            {"input": "confirm", "assert": [{"type": "contains", "value": "Reference"}, never]},
        ]
    })
}

fn freeze(s: &Scratch, id: &str, extra: &[&str], envs: &[(&str, &str)]) -> Run {
    let mut args = vec!["freeze", "-i", "dynamic.jsonl", "--id", id];
    args.extend_from_slice(extra);
    agentest(&s.root, &args, envs)
}

fn one_json_line(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.lines().count(), 1, "one line: {run:?}");
    assert!(run.stdout.ends_with('\n'));
    serde_json::from_str(&run.stdout).expect("a JSON line")
}

fn freeze_prints_a_static_case_from_a_dynamic_run() {
    let s = dynamic_run();
    let before = s.read("dynamic.jsonl");
    let run = freeze(
        &s,
        "expense-dynamic",
        &["--report", "out/report.jsonl"],
        &[],
    );
    assert_eq!(one_json_line(&run), frozen_expense());
    let run = freeze(
        &s,
        "optional-and-forbidden",
        &["--report", "out/report.jsonl"],
        &[],
    );
    assert_eq!(one_json_line(&run), frozen_forbidden());
    // The report may also come from AGENTEST_REPORT.
    let run = freeze(
        &s,
        "optional-and-forbidden",
        &[],
        &[("AGENTEST_REPORT", "out/report.jsonl")],
    );
    assert_eq!(one_json_line(&run), frozen_forbidden());
    // Printing changes nothing.
    assert_eq!(s.read("dynamic.jsonl"), before);
}

fn a_frozen_case_written_to_the_suite_passes_against_the_same_agent() {
    let s = dynamic_run();
    for id in ["expense-dynamic", "optional-and-forbidden"] {
        let run = freeze(&s, id, &["--report", "out/report.jsonl", "--write"], &[]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stdout, "");
        assert_eq!(
            run.stderr,
            format!("appended {id}-frozen to dynamic.jsonl\n")
        );
    }
    let text = s.read("dynamic.jsonl");
    assert!(
        text.starts_with(DYNAMIC_SUITE),
        "the suite is kept:\n{text}"
    );
    let added: Vec<Value> = text[DYNAMIC_SUITE.len()..]
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(added, [frozen_expense(), frozen_forbidden()]);

    // The round trip: the frozen cases pass against the same agent.
    let (run, report) = run_suite_args(&s, "dynamic.jsonl", &["--run", "frozen"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(report.cases.len(), 2, "{}", report.text);
    let expected: [(&str, &[&[&str]]); 2] = [
        (
            "dynamic::expense-dynamic-frozen",
            &[
                &["contains \"type\""],
                &["tool_called \"create_expense\""],
                &["contains \"submitted\""],
            ],
        ),
        (
            "dynamic::optional-and-forbidden-frozen",
            &[
                &["not tool_called \"get_policy\""],
                &[
                    "$.expense.status = \"draft\"",
                    "tool_called \"create_expense\"",
                    "not tool_called \"get_policy\"",
                ],
                &["contains \"Reference\"", "not tool_called \"get_policy\""],
            ],
        ),
    ];
    for (trial, turns) in expected {
        let record = report.case(trial);
        assert_eq!(record["status"], "passed", "{}", report.text);
        assert_eq!(record["mode"], "static");
        let got: Vec<Vec<(String, bool)>> = record["turns"]
            .as_array()
            .expect("turns")
            .iter()
            .map(|t| {
                assert_eq!(t["input_source"], "static");
                t["assertions"]
                    .as_array()
                    .expect("assertions")
                    .iter()
                    .map(|a| {
                        (
                            a["label"].as_str().expect("label").to_string(),
                            a["passed"].as_bool().expect("passed"),
                        )
                    })
                    .collect()
            })
            .collect();
        let want: Vec<Vec<(String, bool)>> = turns
            .iter()
            .map(|t| t.iter().map(|l| (l.to_string(), true)).collect())
            .collect();
        assert_eq!(got, want, "{trial}");
    }

    // Freezing again: the frozen case exists.
    let run = freeze(
        &s,
        "expense-dynamic",
        &["--report", "out/report.jsonl", "--write"],
        &[],
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(
        run.stderr,
        "error: dynamic.jsonl already has a case \"expense-dynamic-frozen\"\n"
    );
    assert_eq!(s.read("dynamic.jsonl"), text, "nothing appended");
}

fn freeze_errors_say_what_is_missing() {
    let s = dynamic_run();
    // An unknown id: the known ones.
    let run = freeze(&s, "nope", &["--report", "out/report.jsonl"], &[]);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(
        run.stderr,
        "error: dynamic.jsonl has no case with id \"nope\"; its cases are: expense-dynamic, optional-and-forbidden, same-turn-chain\n"
    );
    assert_eq!(run.stdout, "");

    // A report without the case: how to make one.
    let full = s.read("out/report.jsonl");
    let partial: String = full
        .lines()
        .filter(|l| !l.contains("\"trial\":\"dynamic::same-turn-chain\""))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(partial.lines().count(), full.lines().count() - 1);
    s.write("out/partial.jsonl", &partial);
    let run = freeze(
        &s,
        "same-turn-chain",
        &["--report", "out/partial.jsonl"],
        &[],
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(
        run.stderr,
        "error: the report out/partial.jsonl has no record of dynamic::same-turn-chain; run the suite with -o out/partial.jsonl first\n"
    );

    // No report at all.
    let run = freeze(&s, "same-turn-chain", &[], &[]);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(
        run.stderr,
        "error: no report to read: pass --report FILE (a JSONL report written with -o or AGENTEST_REPORT)\n"
    );

    // A suite file that does not exist.
    let run = agentest(
        &s.root,
        &[
            "freeze",
            "-i",
            "nope.jsonl",
            "--id",
            "x",
            "--report",
            "out/report.jsonl",
        ],
        &[],
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(
        run.stderr,
        "error: suite file `nope.jsonl` does not exist\n"
    );
    assert_eq!(s.read("dynamic.jsonl"), DYNAMIC_SUITE);
}

fn freezing_a_nested_suite_uses_its_own_record() {
    let s = scratch("freeze-nested", "");
    let dynamic = |input: &str, check: &str| {
        format!(
            r#"{{"id": "x", "input": "{input}", "simulator": {{"use": "script", "script": [{{"say": "ok"}}]}}, "checkpoints": [{{"id": "c", "assert": {check}}}]}}"#
        )
    };
    s.write_suite(
        "suites/a.jsonl",
        &[&dynamic(
            "Hello",
            r#"{"type": "contains", "value": "Hello"}"#,
        )],
    );
    s.write_suite(
        "suites/sub/b.jsonl",
        &[&dynamic(
            "What is the meal policy?",
            r#"{"type": "tool_called", "name": "get_policy"}"#,
        )],
    );
    // One case at a time: a::x is the first record of the report.
    let run = agentest(
        &s.root,
        &[
            "test",
            "-i",
            "suites",
            "--color",
            "never",
            "--parallel",
            "1",
            "-o",
            "report.jsonl",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let run = agentest(
        &s.root,
        &[
            "freeze",
            "-i",
            "suites/sub/b.jsonl",
            "--id",
            "x",
            "--report",
            "report.jsonl",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let frozen: Value = serde_json::from_str(&run.stdout).expect("a JSON line");
    assert_eq!(
        frozen["turns"],
        json!([{"input": "What is the meal policy?", "assert": [{"type": "tool_called", "name": "get_policy"}]}])
    );
}

// ---------------------------------------------------------------------------------------
// 8. agentest report
// ---------------------------------------------------------------------------------------

/// A scratch dir with `run.jsonl` from a run with every outcome but a timeout.
fn mixed_run() -> Scratch {
    let s = scratch("report", "");
    s.write_suite(
        "suites/a.jsonl",
        &[
            r#"{"id": "ok", "input": "Hello", "assertions": [{"type": "contains", "value": "Hello"}]}"#,
            r#"{"id": "bad", "name": "Fails", "input": "Hi there", "assertions": [{"type": "contains", "value": "Goodbye"}]}"#,
            r#"{"id": "later", "skip": true, "input": "Hi"}"#,
            r#"{"id": "crash", "input": "CRASH now"}"#,
        ],
    );
    s.write_suite(
        "suites/b.jsonl",
        &[r#"{"id": "two", "turns": [{"input": "I want to submit an expense"}, {"input": "Meal, $40", "assert": "tool_called"}]}"#],
    );
    let run = agentest(
        &s.root,
        &[
            "test",
            "-i",
            "suites",
            "--color",
            "never",
            "-o",
            "run.jsonl",
        ],
        &[],
    );
    assert_eq!(run.code, 1, "{run:?}");
    s
}

const TRIALS: [&str; 5] = ["a::bad", "a::crash", "a::later", "a::ok", "b::two"];

/// The summary's counts.
fn counts(summary: &Value) -> Value {
    json!({
        "total": summary["total"], "passed": summary["passed"], "failed": summary["failed"],
        "errors": summary["errors"], "skipped": summary["skipped"],
        "timeouts": summary["timeouts"], "total_turns": summary["total_turns"],
        "usage": summary["usage"],
    })
}

/// Builds every format from `input` and checks each against the run's records.
fn check_formats(s: &Scratch, input: &str, original: &Report) {
    let expected_counts = json!({
        "total": 5, "passed": 2, "failed": 1, "errors": 1, "skipped": 1, "timeouts": 0,
        "total_turns": original.summary["total_turns"],
        "usage": {"agent": {"prompt_tokens": 12, "completion_tokens": 9}},
    });
    assert_eq!(counts(&original.summary), expected_counts);
    for ext in ["json", "jsonl", "md", "xml", "html"] {
        let out = format!("out/report.{ext}");
        let run = agentest(&s.root, &["report", input, "-o", &out], &[]);
        assert_eq!(run.code, 0, "{ext}: {run:?}");
        assert_eq!(run.stdout, "");
        assert_eq!(run.stderr, format!("wrote {out} (5 cases)\n"));
        let text = s.read(&out);
        match ext {
            "json" => {
                let doc: Value = serde_json::from_str(&text).expect("JSON report");
                assert_eq!(counts(&doc["summary"]), expected_counts, "{input}");
                assert_eq!(doc["environment"]["input"], input);
                let trials: Vec<&str> = doc["results"]
                    .as_array()
                    .expect("results")
                    .iter()
                    .map(|r| r["trial"].as_str().expect("trial"))
                    .collect();
                assert_eq!(trials, TRIALS);
                for r in doc["results"].as_array().expect("results") {
                    let trial = r["trial"].as_str().expect("trial");
                    assert_eq!(r, original.case(trial), "{trial} kept whole");
                }
            }
            "jsonl" => {
                let report = Report::read(&s.join(&out));
                assert_eq!(counts(&report.summary), expected_counts);
                assert_eq!(report.cases.len(), 5);
                for trial in TRIALS {
                    assert_eq!(report.case(trial), original.case(trial));
                }
            }
            "md" => {
                assert!(text.starts_with("# agentest report\n"), "{text}");
                assert!(
                    text.contains(
                        "❌ **FAILED**: 2 passed, 1 failed, 1 error, 1 skipped of 5 cases in"
                    ),
                    "{text}"
                );
                assert!(text.contains(&format!("- Input: `{input}`")), "{text}");
                assert!(text.contains("### ❌ a::bad — Fails"), "{text}");
                assert!(
                    text.contains("expected the reply to contain \"Goodbye\""),
                    "{text}"
                );
                for trial in TRIALS {
                    assert!(text.contains(&format!("| {trial} |")), "{trial}: {text}");
                }
            }
            "xml" => {
                assert!(
                    text.contains(
                        r#"<testsuites name="agentest" tests="5" failures="1" errors="1" skipped="1""#
                    ),
                    "{text}"
                );
                assert!(
                    text.contains(
                        r#"<testsuite name="a" tests="4" failures="1" errors="1" skipped="1""#
                    ),
                    "{text}"
                );
                assert!(
                    text.contains(
                        r#"<testsuite name="b" tests="1" failures="0" errors="0" skipped="0""#
                    ),
                    "{text}"
                );
                assert_eq!(text.matches("<testcase ").count(), 5, "{text}");
            }
            "html" => {
                assert!(text.starts_with("<!DOCTYPE html>"), "{text}");
                assert!(
                    text.contains("<title>agentest report: FAILED, 2 of 5 passed</title>"),
                    "{text}"
                );
                for trial in TRIALS {
                    assert!(text.contains(trial), "{trial} missing from the HTML");
                }
            }
            _ => unreachable!(),
        }
    }
}

fn report_builds_every_format_from_a_jsonl_file() {
    let s = mixed_run();
    let original = Report::read(&s.join("run.jsonl"));
    check_formats(&s, "run.jsonl", &original);
    // One file with its summary line: the run's own time is kept.
    let doc: Value = serde_json::from_str(&s.read("out/report.json")).expect("JSON");
    assert_eq!(
        doc["summary"]["duration_ms"],
        original.summary["duration_ms"]
    );
}

/// `folder/` as a nextest run leaves it: one record per file, no summary lines, plus
/// files that are no reports.
fn nextest_folder(s: &Scratch, original: &Report) {
    for (i, case) in original.cases.iter().enumerate() {
        s.write(&format!("nextest/case-{i}.jsonl"), &format!("{case}\n"));
    }
    s.write("nextest/run.jsonl.run-id", "run-1234");
    s.write("nextest/notes.txt", "not a report\n");
}

fn report_recounts_the_summary_from_a_folder_of_jsonl_files() {
    let s = mixed_run();
    let original = Report::read(&s.join("run.jsonl"));
    nextest_folder(&s, &original);
    check_formats(&s, "nextest", &original);

    // A folder without reports is an error.
    s.write("empty/notes.txt", "nothing\n");
    let run = agentest(&s.root, &["report", "empty", "-o", "x.json"], &[]);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stderr, "error: no .jsonl reports in empty\n");
    assert!(!s.exists("x.json"));
}

fn a_recounted_summary_takes_at_least_as_long_as_its_longest_case() {
    let s = mixed_run();
    let original = Report::read(&s.join("run.jsonl"));
    nextest_folder(&s, &original);
    let run = agentest(&s.root, &["report", "nextest", "-o", "out.json"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let doc: Value = serde_json::from_str(&s.read("out.json")).expect("JSON");
    let longest = original
        .cases
        .iter()
        .filter_map(|c| c["duration_ms"].as_u64())
        .max()
        .expect("durations");
    assert!(longest > 0);
    let total = doc["summary"]["duration_ms"].as_u64().expect("duration");
    assert!(total >= longest, "{total}ms < {longest}ms");
}

fn report_with_an_unknown_extension_is_a_usage_error() {
    let s = mixed_run();
    for out in ["out.txt", "out", "out.yaml"] {
        let run = agentest(&s.root, &["report", "run.jsonl", "-o", out], &[]);
        assert_eq!(run.code, 2, "{run:?}");
        assert_eq!(
            run.stderr,
            format!("error: the report {out} has no known extension; use one of: jsonl, json, md, markdown, xml, html, htm\n")
        );
        assert!(!s.exists(out));
    }
    // Missing input.
    let run = agentest(&s.root, &["report", "nope.jsonl", "-o", "out.json"], &[]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.starts_with("error: failed to read nope.jsonl"),
        "{run:?}"
    );
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        a_pinned_case_matching_its_hand_written_golden_file_passes_and_writes_nothing,
        golden_suites_in_the_config_pin_a_whole_suite_and_golden_false_opts_out,
        golden_enabled_in_the_config_pins_every_suite_but_golden_false,
        a_failing_pinned_case_is_not_compared_and_writes_nothing,
        a_static_case_renders_as_the_expected_text,
        a_dynamic_case_renders_its_checkpoints_and_termination,
        a_mismatch_fails_with_a_unified_diff_and_says_how_to_update,
        a_golden_file_with_crlf_line_endings_is_compared_line_by_line,
        a_golden_file_that_cannot_be_read_is_an_error,
        with_color_always_the_console_diff_is_coloured_and_every_report_stays_plain,
        a_removed_turn_header_is_painted_as_a_removed_line,
        update_new_writes_pending_files_and_fails,
        update_always_overwrites_and_passes,
        update_no_writes_nothing_and_fails,
        update_auto_is_new_without_ci_and_no_with_ci,
        an_unknown_update_mode_is_a_usage_error,
        a_stale_pending_file_is_removed_once_the_case_matches_again,
        update_always_leaves_no_stale_pending_file,
        ids_that_differ_only_in_punctuation_have_their_own_golden_files,
        a_nested_suite_matches_its_golden_file_whether_the_folder_or_the_file_is_run,
        config_redactions_apply_in_order_and_per_suite,
        session_ids_timestamps_and_uuids_in_replies_are_redacted,
        an_invalid_redaction_regex_is_a_config_error_naming_the_entry,
        review_without_a_terminal_lists_every_pending_diff_and_exits_1,
        review_all_accepts_everything_shown,
        accept_renames_every_pending_file_over_its_golden_file,
        accepted_transcripts_pass_on_the_next_run,
        review_and_accept_with_nothing_pending_say_so_and_exit_0,
        review_on_a_terminal_accepts_rejects_and_skips_one_by_one (needs python_pty),
        quitting_an_interactive_review_leaves_the_rest_pending (needs python_pty),
        freeze_prints_a_static_case_from_a_dynamic_run,
        a_frozen_case_written_to_the_suite_passes_against_the_same_agent,
        freeze_errors_say_what_is_missing,
        freezing_a_nested_suite_uses_its_own_record,
        report_builds_every_format_from_a_jsonl_file,
        report_recounts_the_summary_from_a_folder_of_jsonl_files,
        a_recounted_summary_takes_at_least_as_long_as_its_longest_case,
        report_with_an_unknown_extension_is_a_usage_error,
    ]
}
