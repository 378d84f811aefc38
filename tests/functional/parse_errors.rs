//! The case parser's contract for bad input: one test per kind of mistake, each
//! checking the rendered error (`file:line:column: field `path`: message`), plus the
//! inputs it must accept and the trial names a suite gets.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentest::__private::case::{parse_case, Case, CaseError, Location, Message, Mode};
use agentest::__private::suite::{load_file, parse_suite, parse_suite_bytes, Loaded};
use serde_json::json;

const FILE: &str = "agent-tests/billing.jsonl";
const LINE: usize = 7;

fn at() -> Location {
    Location {
        file: Arc::new(PathBuf::from(FILE)),
        line: LINE,
        column: 1,
    }
}

fn parse(line: &str) -> Case {
    parse_case(line, at()).unwrap_or_else(|e| panic!("expected {line} to parse, got: {e}"))
}

fn error(line: &str) -> CaseError {
    match parse_case(line, at()) {
        Ok(c) => panic!("expected an error for {line}, got a {} case", c.mode.name()),
        Err(e) => e,
    }
}

/// The 1-based character column of the `nth` (0-based) occurrence of `"key":` in `line`.
fn key_col(line: &str, key: &str, nth: usize) -> usize {
    let needle = format!("\"{key}\":");
    let (byte, _) = line
        .match_indices(&needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("{needle} occurs fewer than {} times in {line}", nth + 1));
    line[..byte].chars().count() + 1
}

/// The 1-based character column where `needle` first occurs in `line`: where an error
/// about an array element, or about a key missing from an object, points.
fn col_of(line: &str, needle: &str) -> usize {
    let byte = line
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} does not occur in {line}"));
    line[..byte].chars().count() + 1
}

/// Asserts the exact rendered error and its parts.
fn expect(line: &str, column: usize, field: Option<&str>, message: &str) -> CaseError {
    let e = error(line);
    let rendered = match field {
        Some(f) => format!("{FILE}:{LINE}:{column}: field `{f}`: {message}"),
        None => format!("{FILE}:{LINE}:{column}: {message}"),
    };
    assert_eq!(e.to_string(), rendered, "for the line {line}");
    assert_eq!(e.location.line, LINE);
    assert_eq!(e.location.column, column);
    assert_eq!(e.field.as_deref(), field);
    assert_eq!(e.message, message);
    e
}

/// Asserts file:line:column, the field, and that the message holds every given part.
fn expect_parts(line: &str, column: usize, field: &str, parts: &[&str]) -> CaseError {
    let e = error(line);
    let prefix = format!("{FILE}:{LINE}:{column}: field `{field}`: ");
    let rendered = e.to_string();
    assert!(
        rendered.starts_with(&prefix),
        "expected the error to start with {prefix:?}, got {rendered:?}"
    );
    for part in parts {
        assert!(
            e.message.contains(part),
            "expected the message to contain {part:?}, got {:?}",
            e.message
        );
    }
    e
}

fn suite(text: &str) -> Vec<Loaded> {
    parse_suite(
        "billing/refunds",
        Path::new("/abs/agent-tests/billing/refunds.jsonl"),
        Arc::new(PathBuf::from("agent-tests/billing/refunds.jsonl")),
        text,
    )
}

fn trials(loaded: &[Loaded]) -> Vec<(&str, bool)> {
    loaded
        .iter()
        .map(|l| (l.trial.as_str(), l.entry.is_ok()))
        .collect()
}

/// A dynamic case with the given checkpoints (a JSON array's text).
fn dynamic(checkpoints: &str) -> String {
    format!(
        r#"{{"id": "d", "input": "hi", "simulator": {{"use": "script", "script": [{{"say": "ok"}}]}}, "checkpoints": {checkpoints}}}"#
    )
}

// ---------------------------------------------------------------- JSON and shape

fn invalid_json_gives_serdes_column() {
    // The `}` after the trailing comma is character 26.
    let e = expect(
        r#"{"id": "a", "input": "x",}"#,
        26,
        None,
        "invalid JSON: trailing comma; each line must be one complete JSON object",
    );
    assert_eq!(e.id, None);
    // A missing value: the `}` where the value should be is character 22.
    expect(
        r#"{"id": "a", "input": }"#,
        22,
        None,
        "invalid JSON: expected value; each line must be one complete JSON object",
    );
    // A line cut short: the error is at its end.
    let e = error(r#"{"id": "a""#);
    assert!(
        e.message
            .starts_with("invalid JSON: EOF while parsing an object"),
        "{e}"
    );
    assert!(e.location.column >= 10, "{e}");
}

fn invalid_json_column_counts_characters_not_bytes() {
    // `é` is one character but two bytes: the `}` is character 25 (byte 26).
    expect(
        r#"{"id": "café", "input": }"#,
        25,
        None,
        "invalid JSON: expected value; each line must be one complete JSON object",
    );
    // Three-byte characters, as in Chinese test files: `}` is character 23 (byte 27).
    let line = r#"{"id": "问候", "input": }"#;
    assert_eq!(line.chars().position(|c| c == '}'), Some(22));
    expect(
        line,
        23,
        None,
        "invalid JSON: expected value; each line must be one complete JSON object",
    );
}

fn a_line_that_is_not_an_object() {
    expect(
        r#"["a", "b"]"#,
        1,
        None,
        "expected a JSON object for the case, found an array",
    );
    expect(
        r#""just text""#,
        1,
        None,
        "expected a JSON object for the case, found a string",
    );
    expect(
        "42",
        1,
        None,
        "expected a JSON object for the case, found a number",
    );
}

fn duplicate_key_is_an_error_at_its_second_occurrence() {
    // serde_json alone keeps the last `assertions`, and the case would pass with none.
    let line = r#"{"id":"c","input":"Hello","assertions":[{"type":"contains","value":"ZZZ"}],"assertions":[]}"#;
    let e = expect(
        line,
        key_col(line, "assertions", 1),
        Some("assertions"),
        &format!(
            "duplicate key `assertions` (first given at column {}); only one of them would count, so remove one or merge them into one `assertions`",
            key_col(line, "assertions", 0)
        ),
    );
    // The rest of the line is readable, so the id still names the trial.
    assert_eq!(e.id.as_deref(), Some("c"));
}

fn duplicate_key_deep_inside_is_named_by_its_path() {
    let line = r#"{"id": "s", "turns": [{"input": "a"}, {"input": "b", "assertions": [{"type": "contains", "value": "x", "value": "y"}]}]}"#;
    expect_parts(
        line,
        key_col(line, "value", 1),
        "turns[1].assertions[0].value",
        &["duplicate key `value`"],
    );
    let line = r#"{"id": "m", "input": "x", "metadata": {"user": {"id": 1, "id": 2}}}"#;
    expect_parts(
        line,
        key_col(line, "id", 2),
        "metadata.user.id",
        &["duplicate key `id`", "first given at column"],
    );
    // A third occurrence: the error points at the second.
    let line = r#"{"id": "t", "input": "x", "tags": [], "tags": [], "tags": []}"#;
    expect_parts(
        line,
        key_col(line, "tags", 1),
        "tags",
        &["duplicate key `tags`"],
    );
    // An escaped spelling of the same key is the same key.
    let line = r#"{"id": "u", "input": "x", "\u0069nput": "y"}"#;
    expect_parts(
        line,
        col_of(line, r#""\u0069nput""#),
        "input",
        &["duplicate key `input`"],
    );
    // The same key in sibling objects is not a duplicate.
    parse(
        r#"{"id": "v", "input": "x", "assertions": [{"type": "contains", "value": "a"}, {"type": "contains", "value": "b"}]}"#,
    );
}

fn duplicate_id_key_does_not_name_the_trial() {
    let line = r#"{"id": "a", "input": "x", "id": "b"}"#;
    let e = expect_parts(line, key_col(line, "id", 1), "id", &["duplicate key `id`"]);
    assert_eq!(e.id, None);
    let loaded = suite(concat!(
        "{\"id\": \"a\", \"input\": \"x\", \"id\": \"b\"}\n",
        "{\"id\": \"c\", \"input\": \"x\", \"input\": \"y\"}\n",
        "{\"id\": \"d\", \"input\": \"x\"}\n",
    ));
    assert_eq!(
        trials(&loaded),
        [
            ("billing/refunds::line-1", false),
            ("billing/refunds::c", false),
            ("billing/refunds::d", true),
        ]
    );
}

// ---------------------------------------------------------------- ids

fn missing_id() {
    let e = expect(
        r#"{"input": "x"}"#,
        1,
        Some("id"),
        r#"missing `id`; every case needs an id unique within its file, like "T001""#,
    );
    assert_eq!(e.id, None);
}

fn id_of_the_wrong_type() {
    let e = expect(
        r#"{"id": 7, "input": "x"}"#,
        2,
        Some("id"),
        r#"expected a string id like "T001", found a number"#,
    );
    assert_eq!(e.id, None);
    expect(
        r#"{"input": "x", "id": null}"#,
        16,
        Some("id"),
        r#"expected a string id like "T001", found null"#,
    );
}

fn empty_id() {
    let message = r#"the id is empty; give the case an id unique within its file, like "T001""#;
    expect(r#"{"id": "", "input": "x"}"#, 2, Some("id"), message);
    expect(r#"{"id": "   ", "input": "x"}"#, 2, Some("id"), message);
}

fn id_containing_the_trial_separator() {
    expect(
        r#"{"id": "a::b", "input": "x"}"#,
        2,
        Some("id"),
        "the id \"a::b\" contains `::`, which separates suite and id in trial names; use `-` or `.` instead",
    );
    expect(
        r#"{"id": " a", "input": "x"}"#,
        2,
        Some("id"),
        r#"the id " a" has leading or trailing spaces; remove them"#,
    );
}

fn id_with_a_control_character() {
    // A newline in a trial name would split nextest's one-name-per-line test list.
    let e = expect(
        r#"{"id": "a\nb", "input": "x"}"#,
        2,
        Some("id"),
        r#"the id "a\nb" contains the control character U+000A; an id names a trial on one line of the test list, so use printable characters only"#,
    );
    assert_eq!(e.id, None);
    assert!(
        !e.to_string().contains('\n'),
        "the message itself must stay on one line"
    );
    expect_parts(r#"{"id": "a\tb", "input": "x"}"#, 2, "id", &["U+0009"]);
    expect_parts(
        r#"{"id": "bell\u0007", "input": "x"}"#,
        2,
        "id",
        &[r#""bell\u{7}""#, "U+0007"],
    );
    expect_parts(r#"{"id": "x\u0085y", "input": "x"}"#, 2, "id", &["U+0085"]);
    // Leading or trailing whitespace of any kind, not only spaces.
    expect_parts(
        r#"{"id": "T001\u00a0", "input": "x"}"#,
        2,
        "id",
        &["has leading or trailing spaces; remove them"],
    );
    // Inner spaces and non-ASCII letters are fine.
    assert_eq!(
        parse(r#"{"id": "refund é 1", "input": "x"}"#).id,
        "refund é 1"
    );
}

fn a_rejected_id_does_not_name_the_trial() {
    let loaded = suite(concat!(
        "{\"id\": \"a::b\", \"input\": \"x\"}\n",
        "{\"id\": \"\", \"input\": \"x\"}\n",
        "{\"id\": \" c \", \"input\": \"x\"}\n",
        "{\"id\": \"d\\ne\", \"input\": \"x\"}\n",
        "{\"id\": \"f\", \"input\": \"x\"}\n",
    ));
    assert_eq!(
        trials(&loaded),
        [
            ("billing/refunds::line-1", false),
            ("billing/refunds::line-2", false),
            ("billing/refunds::line-3", false),
            ("billing/refunds::line-4", false),
            ("billing/refunds::f", true),
        ]
    );
}

fn duplicate_id_names_the_first_line_and_the_trial_by_line() {
    let text = concat!(
        "{\"id\": \"a\", \"input\": \"x\"}\n",
        "{\"id\": \"b\", \"input\": \"y\"}\n",
        "{\"input\": \"z\", \"id\": \"a\"}\n",
    );
    let loaded = suite(text);
    assert_eq!(
        trials(&loaded),
        [
            ("billing/refunds::a", true),
            ("billing/refunds::b", true),
            ("billing/refunds::line-3", false),
        ]
    );
    let e = loaded[2].entry.as_ref().unwrap_err();
    assert_eq!(
        e.to_string(),
        "agent-tests/billing/refunds.jsonl:3:16: field `id`: duplicate id \"a\" (first used on line 1); ids must be unique within a file"
    );
    assert_eq!(e.id.as_deref(), Some("a"));
    assert_eq!(loaded[2].suite, "billing/refunds");
    assert_eq!(
        loaded[2].file,
        Path::new("/abs/agent-tests/billing/refunds.jsonl")
    );
}

// ---------------------------------------------------------------- unknown keys and types

fn unknown_top_level_key_suggests_the_known_one() {
    let line = r#"{"id": "a", "input": "x", "assertion": {"type": "contains", "value": "y"}}"#;
    let e = expect(
        line,
        key_col(line, "assertion", 0),
        Some("assertion"),
        "unknown key `assertion` in a case; did you mean `assertions`?",
    );
    assert_eq!(e.id.as_deref(), Some("a"));
    let line = r#"{"id": "a", "imput": "x"}"#;
    expect(
        line,
        13,
        Some("imput"),
        "unknown key `imput` in a case; did you mean `input`?",
    );
}

fn unknown_key_far_from_every_known_one_lists_them() {
    let line = r#"{"id": "a", "input": "x", "zzzzzzzz": 1}"#;
    let e = expect_parts(
        line,
        key_col(line, "zzzzzzzz", 0),
        "zzzzzzzz",
        &["unknown key `zzzzzzzz` in a case; known keys are: id, name"],
    );
    assert!(e.message.contains("simulator, checkpoints, max_turns"));
}

fn unknown_assertion_type_suggests_the_known_one() {
    let line = r#"{"id": "a", "input": "x", "assertions": [{"type": "contians", "value": "y"}]}"#;
    expect(
        line,
        key_col(line, "type", 0),
        Some("assertions[0].type"),
        r#"unknown assertion type "contians"; did you mean "contains"?"#,
    );
    // In a turn, with the Yao spelling `assert`.
    let line = r#"{"id": "a", "turns": [{"input": "x", "assert": {"type": "tool_caled"}}]}"#;
    expect(
        line,
        key_col(line, "type", 0),
        Some("turns[0].assert.type"),
        r#"unknown assertion type "tool_caled"; did you mean "tool_called"?"#,
    );
}

fn unknown_key_inside_an_assertion() {
    let line = r#"{"id": "a", "input": "x", "assertions": [{"type": "regex", "patern": "\\d+"}]}"#;
    expect(
        line,
        key_col(line, "patern", 0),
        Some("assertions[0].patern"),
        "unknown key `patern` in a `regex` assertion; did you mean `pattern`?",
    );
}

// ---------------------------------------------------------------- compiled values

fn invalid_regex_fails_at_load_time() {
    let line = r#"{"id": "a", "input": "x", "assert": {"type": "regex", "pattern": "(unclosed"}}"#;
    let e = expect_parts(
        line,
        key_col(line, "pattern", 0),
        "assert.pattern",
        &[r#"invalid regex "(unclosed""#, "unclosed group"],
    );
    assert_eq!(e.id.as_deref(), Some("a"));
    // Yao writes the pattern in `value`.
    let line = r#"{"id": "a", "input": "x", "assert": {"type": "regex", "value": "a{2,1}"}}"#;
    expect_parts(
        line,
        key_col(line, "value", 0),
        "assert.value",
        &[r#"invalid regex "a{2,1}""#],
    );
}

fn invalid_json_path_fails_at_load_time() {
    let line = r#"{"id": "a", "input": "x", "assert": {"type": "json_path", "path": "$.items[", "value": 1}}"#;
    expect(
        line,
        key_col(line, "path", 0),
        Some("assert.path"),
        r#"invalid JSONPath "$.items[" (parse error at character 9); write an RFC 9535 path such as "$.items[0].name""#,
    );
    // Yao's shorthand without `$` is accepted when valid ...
    parse(
        r#"{"id": "a", "input": "x", "assert": {"type": "json_path", "path": "items[0].name", "value": 1}}"#,
    );
    // ... and named as written when not.
    let line = r#"{"id": "a", "input": "x", "assert": {"type": "json_path", "path": "items[", "value": 1}}"#;
    expect_parts(
        line,
        key_col(line, "path", 0),
        "assert.path",
        &[r#"invalid JSONPath "items[""#],
    );
}

fn json_path_error_position_refers_to_the_path_as_written() {
    // "$.items[" fails at character 9, one past its end; "items[" as written is
    // two characters shorter, so the same failure is at its character 7.
    let line = r#"{"id": "a", "input": "x", "assert": {"type": "json_path", "path": "items[", "value": 1}}"#;
    expect(
        line,
        key_col(line, "path", 0),
        Some("assert.path"),
        r#"invalid JSONPath "items[" (parse error at character 7); write an RFC 9535 path such as "$.items[0].name""#,
    );
}

fn bad_durations() {
    let line = r#"{"id": "a", "input": "x", "timeout": "30"}"#;
    expect(
        line,
        key_col(line, "timeout", 0),
        Some("timeout"),
        r#"invalid duration "30": a unit is missing; write "30s" for seconds or "30ms" for milliseconds"#,
    );
    let line = r#"{"id": "a", "input": "x", "timeout": "5 minutes"}"#;
    expect_parts(
        line,
        key_col(line, "timeout", 0),
        "timeout",
        &[
            r#"invalid duration "5 minutes""#,
            "unknown unit",
            "use ms, s, m or h",
        ],
    );
    let line = r#"{"id": "a", "input": "x", "timeout": 30}"#;
    expect(
        line,
        key_col(line, "timeout", 0),
        Some("timeout"),
        r#"expected a duration string like "30s" or "2m", found a number"#,
    );
    assert_eq!(
        parse(r#"{"id": "a", "input": "x", "timeout": "1m30s"}"#).timeout,
        Some(Duration::from_secs(90))
    );
}

fn zero_timeouts() {
    let message = r#"a timeout of "0s" ends before anything can happen; give a positive duration like "30s" or "2m", or leave the timeout out for the default"#;
    let line = r#"{"id": "a", "input": "x", "timeout": "0s"}"#;
    expect(line, key_col(line, "timeout", 0), Some("timeout"), message);
    let line = r#"{"id": "a", "input": "x", "timeout": "0ms"}"#;
    expect_parts(
        line,
        key_col(line, "timeout", 0),
        "timeout",
        &[r#"a timeout of "0ms""#],
    );
    let line = r#"{"id": "a", "input": "x", "interactive": {"enabled": true, "timeout": "0m"}}"#;
    expect_parts(
        line,
        key_col(line, "timeout", 0),
        "interactive.timeout",
        &[r#"a timeout of "0m" ends before anything can happen"#],
    );
    assert_eq!(
        parse(r#"{"id": "a", "input": "x", "timeout": "1ms"}"#).timeout,
        Some(Duration::from_millis(1))
    );
    parse(r#"{"id": "a", "input": "x", "interactive": {"enabled": true, "timeout": "5m"}}"#);
}

// ---------------------------------------------------------------- modes

fn turns_and_simulator_together() {
    let line = r#"{"id": "a", "turns": [{"input": "x"}], "simulator": {"use": "script"}, "checkpoints": [{"id": "c", "assert": "tool_called"}]}"#;
    expect(
        line,
        key_col(line, "simulator", 0),
        Some("simulator"),
        "a case has either `turns` (static mode) or `simulator` + `checkpoints` (dynamic mode), not both; split it into two cases",
    );
}

fn dynamic_mode_without_simulator() {
    expect(
        r#"{"id": "a", "mode": "dynamic", "input": "x"}"#,
        1,
        Some("simulator"),
        r#"a dynamic case needs `simulator`, such as {"use": "script", "script": [...]}"#,
    );
    // Checkpoints alone make a case dynamic, which then lacks its simulator.
    expect(
        r#"{"id": "a", "input": "x", "checkpoints": [{"id": "c", "assert": "tool_called"}]}"#,
        1,
        Some("simulator"),
        r#"a dynamic case needs `simulator`, such as {"use": "script", "script": [...]}"#,
    );
}

fn unknown_mode() {
    let line = r#"{"id": "a", "mode": "multi", "input": "x"}"#;
    expect(
        line,
        13,
        Some("mode"),
        r#"unknown mode "multi"; expected "static" (with `turns`), "dynamic" (with `simulator` + `checkpoints`) or "single" (with `input`)"#,
    );
    let line = r#"{"id": "a", "mode": "static", "simulator": {"use": "script"}, "checkpoints": [{"id": "c", "assert": "tool_called"}]}"#;
    expect_parts(
        line,
        13,
        "mode",
        &[r#"`mode` is "static" but the case has `simulator`/`checkpoints`"#],
    );
}

fn static_mode_with_input_and_no_turns() {
    let line = r#"{"id": "a", "mode": "static", "input": "x", "assertions": [{"type": "contains", "value": "y"}]}"#;
    expect(
        line,
        key_col(line, "mode", 0),
        Some("mode"),
        r#"`mode` is "static" but the case has no `turns`; write the conversation as `turns: [{"input": ...}, ...]`, or drop `mode` for a single-turn case"#,
    );
    // `single` agrees with `input`, and no mode is a single turn too.
    let case = parse(r#"{"id": "a", "mode": "single", "input": "x"}"#);
    assert_eq!(case.mode.name(), "single");
    assert_eq!(parse(r#"{"id": "a", "input": "x"}"#).mode.name(), "single");
}

fn simulator_without_checkpoints() {
    expect(
        r#"{"id": "a", "input": "x", "simulator": {"use": "script", "script": []}}"#,
        1,
        Some("checkpoints"),
        "a dynamic case needs `checkpoints`: what the agent must reach",
    );
    let line = dynamic("[]");
    expect(
        &line,
        key_col(&line, "checkpoints", 0),
        Some("checkpoints"),
        "`checkpoints` is empty; give at least one",
    );
}

fn checkpoint_after_an_unknown_id() {
    let line = dynamic(
        r#"[{"id": "c1", "assert": "tool_called"}, {"id": "c2", "after": ["c0"], "assert": {"type": "contains", "value": "ok"}}]"#,
    );
    expect(
        &line,
        col_of(&line, r#""c0""#),
        Some("checkpoints[1].after[0]"),
        r#"`after` names "c0", which is not a checkpoint of this case; known: c1, c2"#,
    );
    // A single id may be given as a string.
    let line = dynamic(r#"[{"id": "c1", "after": "c1", "assert": "tool_called"}]"#);
    expect(
        &line,
        key_col(&line, "after", 0),
        Some("checkpoints[0].after[0]"),
        r#"checkpoint "c1" cannot come after itself"#,
    );
}

fn checkpoint_after_cycle() {
    let line = dynamic(
        r#"[{"id": "a", "after": ["b"], "assert": "tool_called"}, {"id": "b", "after": ["a"], "assert": "tool_called"}]"#,
    );
    expect(
        &line,
        col_of(&line, r#"["a"]"#) + 1,
        Some("checkpoints[1].after[0]"),
        r#"the `after` order makes a cycle: "a" after "b" after "a", so none of them can be reached first; remove one of these `after` entries"#,
    );
    // A longer cycle, entered from a checkpoint outside it.
    let line = dynamic(
        r#"[{"id": "start", "assert": "tool_called"}, {"id": "x", "after": ["start", "z"], "assert": "tool_called"}, {"id": "y", "after": "x", "assert": "tool_called"}, {"id": "z", "after": ["y"], "assert": "tool_called"}]"#,
    );
    // It closes at y's `after`, a single id given as a string.
    expect_parts(
        &line,
        key_col(&line, "after", 1),
        "checkpoints[2].after[0]",
        &[r#""x" after "z" after "y" after "x""#],
    );
    // A diamond is an order, not a cycle.
    parse(&dynamic(
        r#"[{"id": "a", "assert": "tool_called"}, {"id": "b", "after": "a", "assert": "tool_called"}, {"id": "c", "after": ["a", "b"], "assert": "tool_called"}, {"id": "d", "after": ["c", "b"], "assert": "tool_called"}]"#,
    ));
}

fn duplicate_checkpoint_id() {
    let line = dynamic(
        r#"[{"id": "c1", "assert": "tool_called"}, {"id": "c1", "assert": {"type": "contains", "value": "ok"}}]"#,
    );
    expect_parts(
        &line,
        error(&line).location.column,
        "checkpoints[1].id",
        &[r#"duplicate checkpoint id "c1""#],
    );
}

fn duplicate_checkpoint_id_points_at_the_second_checkpoint() {
    let line = dynamic(
        r#"[{"id": "c1", "assert": "tool_called"}, {"id": "c1", "assert": {"type": "contains", "value": "ok"}}]"#,
    );
    expect(
        &line,
        key_col(&line, "id", 2),
        Some("checkpoints[1].id"),
        r#"duplicate checkpoint id "c1""#,
    );
}

fn error_in_the_second_assertion_points_at_it() {
    let line = r#"{"id": "a", "input": "x", "assertions": [{"type": "contains", "value": "y"}, {"type": "contians", "value": "z"}]}"#;
    expect(
        line,
        key_col(line, "type", 1),
        Some("assertions[1].type"),
        r#"unknown assertion type "contians"; did you mean "contains"?"#,
    );
}

fn assertions_and_assert_together() {
    let line = r#"{"id": "a", "input": "x", "assertions": [], "assert": []}"#;
    expect(
        line,
        key_col(line, "assert", 0),
        Some("assert"),
        "both `assertions` and `assert` are given; use one of them",
    );
    let line = r#"{"id": "a", "turns": [{"input": "x", "assertions": [], "assert": []}]}"#;
    expect(
        line,
        key_col(line, "assert", 0),
        Some("turns[0].assert"),
        "both `assertions` and `assert` are given; use one of them",
    );
}

fn static_case_with_top_level_input() {
    let line = r#"{"id": "a", "input": "x", "turns": [{"input": "y"}]}"#;
    expect(
        line,
        13,
        Some("input"),
        "a static case with `turns` takes no top-level `input`; put the first message in turns[0].input",
    );
    let line = r#"{"id": "a", "turns": [{"input": "y"}], "assertions": []}"#;
    expect_parts(
        line,
        key_col(line, "assertions", 0),
        "assertions",
        &[
            "a static case with `turns` takes no top-level `assertions`",
            "final_assertions",
        ],
    );
}

fn static_case_with_top_level_input_after_turns_points_at_it() {
    let line = r#"{"id": "a", "turns": [{"input": "y"}], "input": "x"}"#;
    expect(
        line,
        key_col(line, "input", 1),
        Some("input"),
        "a static case with `turns` takes no top-level `input`; put the first message in turns[0].input",
    );
}

fn empty_turns() {
    let line = r#"{"id": "a", "turns": []}"#;
    expect(
        line,
        13,
        Some("turns"),
        r#"`turns` is empty; give at least one {"input": ...}"#,
    );
    let line = r#"{"id": "a", "turns": [{"assertions": []}]}"#;
    expect(
        line,
        col_of(line, r#"{"assertions""#),
        Some("turns[0].input"),
        "each turn needs `input`: what the user says",
    );
}

fn missing_input() {
    expect(
        r#"{"id": "a"}"#,
        1,
        Some("input"),
        "missing `input`; a case needs `input` (single turn), `turns` (static) or `simulator` + `checkpoints` (dynamic)",
    );
}

// ---------------------------------------------------------------- messages

fn input_whose_last_message_is_not_from_the_user() {
    let line = r#"{"id": "a", "input": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}"#;
    expect_parts(
        line,
        error(line).location.column,
        "input[1].role",
        &[r#"the last input message must have role "user": the agent answers it"#],
    );
    let line = r#"{"id": "a", "input": {"role": "system", "content": "be terse"}}"#;
    expect(
        line,
        key_col(line, "role", 0),
        Some("input.role"),
        r#"the last input message must have role "user": the agent answers it"#,
    );
}

fn last_message_error_points_at_the_last_message() {
    let line = r#"{"id": "a", "input": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}"#;
    expect(
        line,
        key_col(line, "role", 1),
        Some("input[1].role"),
        r#"the last input message must have role "user": the agent answers it"#,
    );
}

fn unknown_role() {
    let line = r#"{"id": "a", "input": {"role": "bot", "content": "x"}}"#;
    expect(
        line,
        key_col(line, "role", 0),
        Some("input.role"),
        r#"unknown role "bot"; expected user, assistant, system or tool"#,
    );
    let line = r#"{"id": "a", "input": {"content": "x"}}"#;
    expect(
        line,
        key_col(line, "input", 0),
        Some("input.role"),
        "a message needs `role`: user, assistant, system or tool",
    );
    let line = r#"{"id": "a", "input": {"role": "user"}}"#;
    expect(
        line,
        key_col(line, "input", 0),
        Some("input.content"),
        "a user message needs `content`",
    );
}

// ---------------------------------------------------------------- field types

fn skip_of_the_wrong_type() {
    let line = r#"{"id": "a", "input": "x", "skip": "yes"}"#;
    expect(
        line,
        key_col(line, "skip", 0),
        Some("skip"),
        "expected true or false, found a string",
    );
}

fn tags_that_are_not_strings() {
    let line = r#"{"id": "a", "input": "x", "tags": ["smoke", 1]}"#;
    expect(
        line,
        col_of(line, "1]"),
        Some("tags[1]"),
        "expected a string tag, found a number",
    );
    let line = r#"{"id": "a", "input": "x", "tags": "smoke"}"#;
    expect(
        line,
        key_col(line, "tags", 0),
        Some("tags"),
        "expected an array of strings, found a string",
    );
}

fn max_turns_zero() {
    let line = r#"{"id": "d", "input": "hi", "simulator": {"use": "script", "script": [{"say": "ok"}]}, "checkpoints": [{"id": "c", "assert": "tool_called"}], "max_turns": 0}"#;
    expect(
        line,
        key_col(line, "max_turns", 0),
        Some("max_turns"),
        "expected a whole number from 1 to 10000, found 0",
    );
    let line = r#"{"id": "d", "input": "hi", "simulator": {"use": "script", "script": [{"say": "ok"}]}, "checkpoints": [{"id": "c", "assert": "tool_called"}], "max_turns": "5"}"#;
    expect(
        line,
        key_col(line, "max_turns", 0),
        Some("max_turns"),
        "expected a whole number, found a string",
    );
    // Not a dynamic case: `max_turns` has no meaning.
    let line = r#"{"id": "a", "input": "x", "max_turns": 3}"#;
    expect(
        line,
        key_col(line, "max_turns", 0),
        Some("max_turns"),
        "`max_turns` only applies to dynamic cases (with `simulator` + `checkpoints`)",
    );
}

// ---------------------------------------------------------------- accepted inputs

fn string_input() {
    let case = parse(r#"{"id": "T001", "input": "Submit my taxi receipt"}"#);
    let Mode::Single { input, assertions } = &case.mode else {
        panic!("expected single, got {}", case.mode.name());
    };
    assert_eq!(input.messages, [Message::user("Submit my taxi receipt")]);
    assert!(assertions.is_empty());
    assert_eq!(case.id, "T001");
    assert_eq!(case.display_name(), "T001");
    assert_eq!(case.location, at());
    assert_eq!(case.scripted_turns(), 1);
}

fn message_object_input() {
    let case =
        parse(r#"{"id": "a", "name": "Object", "input": {"role": "user", "content": "hi"}}"#);
    let Mode::Single { input, .. } = &case.mode else {
        panic!("expected single");
    };
    assert_eq!(input.messages, [Message::user("hi")]);
    assert_eq!(case.display_name(), "Object");
    // Structured content is kept as JSON.
    let case = parse(r#"{"id": "a", "input": {"role": "user", "content": {"amount": 5}}}"#);
    let Mode::Single { input, .. } = &case.mode else {
        panic!("expected single");
    };
    assert_eq!(input.messages[0].content, json!({"amount": 5}));
    assert_eq!(input.text(), r#"{"amount":5}"#);
}

fn message_array_input_is_a_history() {
    let case = parse(
        r#"{"id": "a", "input": [{"role": "system", "content": "be terse"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello", "tool_calls": [{"name": "t"}]}, "and now?"]}"#,
    );
    let Mode::Single { input, .. } = &case.mode else {
        panic!("expected single");
    };
    let roles: Vec<&str> = input.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(input.text(), "and now?");
    assert_eq!(input.messages[2].tool_calls, Some(json!([{"name": "t"}])));
}

fn message_name_and_tool_call_id_reach_the_agent() {
    let case = parse(
        r#"{"id": "a", "input": [{"role": "user", "content": "2+2?", "name": "ann"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "name": "calc"}]}, {"role": "tool", "content": "4", "name": "calc", "tool_call_id": "call_1"}, "thanks"]}"#,
    );
    let Mode::Single { input, .. } = &case.mode else {
        panic!("expected single");
    };
    let m = &input.messages;
    assert_eq!(m[0].name.as_deref(), Some("ann"));
    assert_eq!(m[0].tool_call_id, None);
    assert_eq!(m[2].name.as_deref(), Some("calc"));
    assert_eq!(m[2].tool_call_id.as_deref(), Some("call_1"));
    // The request carries them, and leaves them out when a message has none.
    let sent: Vec<serde_json::Value> = m.iter().map(|m| serde_json::to_value(m).unwrap()).collect();
    assert_eq!(
        sent[2],
        json!({"role": "tool", "content": "4", "name": "calc", "tool_call_id": "call_1"})
    );
    assert_eq!(sent[3], json!({"role": "user", "content": "thanks"}));
    // They are strings.
    let line =
        r#"{"id": "a", "input": [{"role": "tool", "content": "4", "tool_call_id": 1}, "ok"]}"#;
    expect(
        line,
        key_col(line, "tool_call_id", 0),
        Some("input[0].tool_call_id"),
        "expected a string, found a number",
    );
}

fn static_case_with_final_assertions() {
    let case = parse(
        r#"{"id": "flow", "turns": [{"input": "start", "assertions": [{"type": "contains", "value": "ok"}]}, {"input": "go on", "assert": "tool_called", "options": {"k": 1}}], "final_assertions": [{"type": "equals", "value": {"done": true}}, {"type": "type", "value": "object"}]}"#,
    );
    let Mode::Static {
        turns,
        final_assertions,
    } = &case.mode
    else {
        panic!("expected static, got {}", case.mode.name());
    };
    assert_eq!(turns.len(), 2);
    assert_eq!(case.scripted_turns(), 2);
    assert_eq!(turns[0].input.text(), "start");
    assert_eq!(turns[0].assertions[0].type_name(), "contains");
    assert_eq!(turns[1].assertions[0].type_name(), "tool_called");
    assert_eq!(turns[1].options, Some(json!({"k": 1})));
    let types: Vec<&str> = final_assertions.iter().map(|a| a.type_name()).collect();
    assert_eq!(types, ["equals", "type"]);
    // `mode: "static"` is accepted as well.
    let case = parse(r#"{"id": "s", "mode": "static", "turns": [{"input": "x"}]}"#);
    assert_eq!(case.mode.name(), "static");
}

fn assert_as_a_bare_type_string() {
    let case = parse(r#"{"id": "a", "input": "x", "assert": "tool_called"}"#);
    let Mode::Single { assertions, .. } = &case.mode else {
        panic!("expected single");
    };
    assert_eq!(assertions.len(), 1);
    assert_eq!(assertions[0].type_name(), "tool_called");
    assert!(!assertions[0].negate);
    assert_eq!(assertions[0].raw, json!({"type": "tool_called"}));
    // A bare string that is no type gets the same suggestion as an object.
    let line = r#"{"id": "a", "input": "x", "assert": "tool_caled"}"#;
    expect(
        line,
        key_col(line, "assert", 0),
        Some("assert.type"),
        r#"unknown assertion type "tool_caled"; did you mean "tool_called"?"#,
    );
}

fn dynamic_case_defaults() {
    let case = parse(&dynamic(
        r#"[{"id": "c1", "assertion": "tool_called"}, {"id": "c2", "after": "c1", "forbidden": true, "assert": {"type": "contains", "value": "refund"}}]"#,
    ));
    let Mode::Dynamic {
        input,
        checkpoints,
        max_turns,
        simulator,
    } = &case.mode
    else {
        panic!("expected dynamic");
    };
    assert_eq!(input.as_ref().map(|i| i.text()).as_deref(), Some("hi"));
    assert_eq!(*max_turns, 20);
    assert_eq!(simulator.use_.as_deref(), Some("script"));
    assert_eq!(checkpoints[0].after, Vec::<String>::new());
    assert!(checkpoints[0].required && !checkpoints[0].forbidden);
    assert_eq!(checkpoints[1].after, ["c1"]);
    assert!(checkpoints[1].forbidden);
    assert_eq!(case.scripted_turns(), 0);
}

// ---------------------------------------------------------------- suites

fn comments_and_blank_lines_are_skipped_and_lines_keep_their_numbers() {
    let text = concat!(
        "// refunds: the happy path first\n",
        "\n",
        "{\"id\": \"T001\", \"input\": \"refund order 1\"}\n",
        "   // an indented comment\n",
        "   \n",
        "{\"id\": \"T002\", \"imput\": \"x\"}\n",
        "{\"input\": \"no id\"}\n",
        "{oops\n",
        "{\"id\": \"T003\", \"input\": \"last\", \"skip\": true}",
    );
    let loaded = suite(text);
    assert_eq!(
        trials(&loaded),
        [
            ("billing/refunds::T001", true),
            ("billing/refunds::T002", false),
            ("billing/refunds::line-7", false),
            ("billing/refunds::line-8", false),
            ("billing/refunds::T003", true),
        ]
    );
    assert_eq!(loaded[0].entry.as_ref().unwrap().location.line, 3);
    let errors: Vec<String> = loaded
        .iter()
        .filter_map(|l| l.entry.as_ref().err().map(ToString::to_string))
        .collect();
    assert_eq!(
        errors,
        [
            "agent-tests/billing/refunds.jsonl:6:16: field `imput`: unknown key `imput` in a case; did you mean `input`?",
            "agent-tests/billing/refunds.jsonl:7:1: field `id`: missing `id`; every case needs an id unique within its file, like \"T001\"",
            "agent-tests/billing/refunds.jsonl:8:2: invalid JSON: key must be a string; each line must be one complete JSON object",
        ]
    );
    let last = loaded[4].entry.as_ref().unwrap();
    assert_eq!(last.location.line, 9);
    assert!(last.skip);
}

fn a_byte_order_mark_is_ignored_or_named() {
    // RFC 8259 lets parsers ignore a BOM; failing is acceptable only if the message says why.
    let loaded = suite("\u{feff}{\"id\": \"a\", \"input\": \"x\"}\n");
    if let Err(e) = &loaded[0].entry {
        assert!(
            e.message.contains("byte order mark") || e.message.contains("BOM"),
            "the error does not name the BOM: {e}"
        );
    }
}

fn windows_line_endings_are_read() {
    let loaded = suite(
        "// c\r\n{\"id\": \"a\", \"input\": \"x\"}\r\n\r\n{\"id\": \"b\", \"imput\": \"y\"}\r\n",
    );
    assert_eq!(
        trials(&loaded),
        [("billing/refunds::a", true), ("billing/refunds::b", false)]
    );
    assert_eq!(loaded[1].entry.as_ref().unwrap_err().location.line, 4);
}

/// A fresh empty directory under the system's temporary directory.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agentest-parse-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn invalid_utf8_is_an_error_for_its_line_only() {
    let dir = temp_dir("utf8");
    let file = dir.join("latin1.jsonl");
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"{\"id\": \"a\", \"input\": \"x\"}\n");
    bytes.extend_from_slice(b"{\"id\": \"b\", \"input\": \"caf\xE9\"}\n");
    bytes.extend_from_slice(b"// a comment in Latin-1: caf\xE9\n");
    bytes.extend_from_slice("{\"id\": \"é\", \"input\": \"".as_bytes());
    bytes.extend_from_slice(b"\xFF\xFE\"}\r\n");
    bytes.extend_from_slice(b"{\"id\": \"c\", \"input\": \"y\"}\n");
    std::fs::write(&file, &bytes).unwrap();
    let loaded = load_file(&dir, &file);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        trials(&loaded),
        [
            ("latin1::a", true),
            ("latin1::line-2", false),
            ("latin1::line-4", false),
            ("latin1::c", true),
        ]
    );
    let e = loaded[1].entry.as_ref().unwrap_err();
    assert_eq!((e.location.line, e.location.column), (2, 26));
    assert_eq!(e.field, None);
    assert_eq!(
        e.message,
        "invalid UTF-8: the byte 0xE9 cannot start or continue a character here; save the file as UTF-8"
    );
    assert_eq!(
        e.to_string(),
        format!("{}:2:26: {}", e.location.file.display(), e.message)
    );
    // The column counts the characters before the bad byte: `é` is one.
    let e = loaded[2].entry.as_ref().unwrap_err();
    let prefix = "{\"id\": \"é\", \"input\": \"";
    assert_eq!(
        (e.location.line, e.location.column),
        (4, prefix.chars().count() + 1)
    );
    assert!(e.message.contains("0xFF"), "{e}");
}

fn invalid_utf8_at_the_end_of_the_last_line() {
    // A character cut short at the very end of the file.
    let loaded = parse_suite_bytes(
        "s",
        Path::new("s.jsonl"),
        Arc::new(PathBuf::from("s.jsonl")),
        b"{\"id\": \"a\", \"input\": \"x\"}\n{\"id\": \"b\", \"input\": \"x\"} \xE2\x82",
    );
    assert_eq!(trials(&loaded), [("s::a", true), ("s::line-2", false)]);
    assert_eq!(
        loaded[1].entry.as_ref().unwrap_err().to_string(),
        "s.jsonl:2:27: invalid UTF-8: the line ends inside a character (bytes 0xE2 0x82); save the file as UTF-8"
    );
    // The bytes and the text of a valid file read the same.
    let text =
        "\u{feff}// c\r\n{\"id\": \"a\", \"input\": \"é\"}\r\n\n{\"id\": \"b\", \"imput\": \"y\"}";
    let from_bytes = parse_suite_bytes(
        "s",
        Path::new("s.jsonl"),
        Arc::new(PathBuf::from("s.jsonl")),
        text.as_bytes(),
    );
    let from_text = parse_suite(
        "s",
        Path::new("s.jsonl"),
        Arc::new(PathBuf::from("s.jsonl")),
        text,
    );
    assert_eq!(trials(&from_bytes), trials(&from_text));
    assert_eq!(trials(&from_bytes), [("s::a", true), ("s::b", false)]);
}

fn trial_names_are_suite_and_id() {
    let loaded = parse_suite(
        "smoke",
        Path::new("agent-tests/smoke.jsonl"),
        Arc::new(PathBuf::from("agent-tests/smoke.jsonl")),
        "{\"id\": \"T001\", \"input\": \"x\"}\n{\"id\": \"expense.create-1\", \"input\": \"y\"}\n",
    );
    let names: Vec<&str> = loaded.iter().map(|l| l.trial.as_str()).collect();
    assert_eq!(names, ["smoke::T001", "smoke::expense.create-1"]);
    assert!(loaded.iter().all(|l| l.suite == "smoke"));
    assert!(suite("").is_empty());
    assert!(suite("// only a comment\n\n").is_empty());
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        invalid_json_gives_serdes_column,
        invalid_json_column_counts_characters_not_bytes,
        a_line_that_is_not_an_object,
        duplicate_key_is_an_error_at_its_second_occurrence,
        duplicate_key_deep_inside_is_named_by_its_path,
        duplicate_id_key_does_not_name_the_trial,
        missing_id,
        id_of_the_wrong_type,
        empty_id,
        id_containing_the_trial_separator,
        id_with_a_control_character,
        a_rejected_id_does_not_name_the_trial,
        duplicate_id_names_the_first_line_and_the_trial_by_line,
        unknown_top_level_key_suggests_the_known_one,
        unknown_key_far_from_every_known_one_lists_them,
        unknown_assertion_type_suggests_the_known_one,
        unknown_key_inside_an_assertion,
        invalid_regex_fails_at_load_time,
        invalid_json_path_fails_at_load_time,
        json_path_error_position_refers_to_the_path_as_written,
        bad_durations,
        zero_timeouts,
        turns_and_simulator_together,
        dynamic_mode_without_simulator,
        unknown_mode,
        static_mode_with_input_and_no_turns,
        simulator_without_checkpoints,
        checkpoint_after_an_unknown_id,
        checkpoint_after_cycle,
        duplicate_checkpoint_id,
        duplicate_checkpoint_id_points_at_the_second_checkpoint,
        error_in_the_second_assertion_points_at_it,
        assertions_and_assert_together,
        static_case_with_top_level_input,
        static_case_with_top_level_input_after_turns_points_at_it,
        empty_turns,
        missing_input,
        input_whose_last_message_is_not_from_the_user,
        last_message_error_points_at_the_last_message,
        unknown_role,
        skip_of_the_wrong_type,
        tags_that_are_not_strings,
        max_turns_zero,
        string_input,
        message_object_input,
        message_array_input_is_a_history,
        message_name_and_tool_call_id_reach_the_agent,
        static_case_with_final_assertions,
        assert_as_a_bare_type_string,
        dynamic_case_defaults,
        comments_and_blank_lines_are_skipped_and_lines_keep_their_numbers,
        a_byte_order_mark_is_ignored_or_named,
        windows_line_endings_are_read,
        invalid_utf8_is_an_error_for_its_line_only,
        invalid_utf8_at_the_end_of_the_last_line,
        trial_names_are_suite_and_id,
    ]
}
