//! The case parser's contract for bad input, plus the inputs it must accept and the
//! trial names a suite gets.
//!
//! Bad lines are rows of [`ROWS`], one trial each, named after the row: each checks the
//! rendered error (`file:line:column: field `path`: message`) of one line, exactly or by
//! the parts its message must hold. Tests that check more than an error (what still
//! parses, what a suite loads) are ordinary tests below the table.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentest::__private::case::{parse_case, Case, CaseError, Location, Message, Mode};
use agentest::__private::suite::{load_file, parse_suite, parse_suite_bytes, Loaded};
use libtest_mimic::{Completion, Trial};
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

/// A dynamic case with the given checkpoints (a JSON array's text), as a literal.
macro_rules! dynamic {
    ($checkpoints:literal) => {
        concat!(
            r#"{"id": "d", "input": "hi", "simulator": {"use": "script", "script": [{"say": "ok"}]}, "checkpoints": "#,
            $checkpoints,
            "}"
        )
    };
}

// ---------------------------------------------------------------------------------------
// The table of bad lines
// ---------------------------------------------------------------------------------------

/// Where an error must point.
#[derive(Debug, Clone, Copy)]
enum At {
    /// This column.
    Col(usize),
    /// The `nth` (0-based) `"key":` of the line.
    Key(&'static str, usize),
    /// Where this text first occurs, plus an offset.
    Find(&'static str, usize),
    /// Anywhere: the column is not checked.
    Any,
}

/// What the message must say.
#[derive(Debug, Clone, Copy)]
enum Says {
    /// Exactly this; the whole rendered error is checked too.
    Exactly(&'static str),
    /// Each of these; the rendered error must start with its location and field.
    Contains(&'static [&'static str]),
}

/// What the error must give as the case's id (which names the trial).
#[derive(Debug, Clone, Copy)]
enum Id {
    Unchecked,
    /// No id: the trial is named after the line.
    Unread,
    Is(&'static str),
}

/// One bad line and the error it must give.
struct Row {
    name: &'static str,
    line: &'static str,
    at: At,
    field: Option<&'static str>,
    says: Says,
    id: Id,
}

/// A row whose error is exactly `message`.
const fn exact(
    name: &'static str,
    line: &'static str,
    at: At,
    field: Option<&'static str>,
    message: &'static str,
) -> Row {
    Row {
        name,
        line,
        at,
        field,
        says: Says::Exactly(message),
        id: Id::Unchecked,
    }
}

/// A row whose error, at field `field`, holds each of `parts`.
const fn parts(
    name: &'static str,
    line: &'static str,
    at: At,
    field: &'static str,
    parts: &'static [&'static str],
) -> Row {
    Row {
        name,
        line,
        at,
        field: Some(field),
        says: Says::Contains(parts),
        id: Id::Unchecked,
    }
}

impl Row {
    /// The same row, also checking the id the error gives.
    const fn id(self, id: Id) -> Row {
        Row { id, ..self }
    }

    fn check(&self) {
        let line = self.line;
        let e = error(line);
        let column = match self.at {
            At::Col(c) => c,
            At::Key(key, nth) => key_col(line, key, nth),
            At::Find(needle, plus) => col_of(line, needle) + plus,
            At::Any => e.location.column,
        };
        let rendered = e.to_string();
        match self.says {
            Says::Exactly(message) => {
                let want = match self.field {
                    Some(f) => format!("{FILE}:{LINE}:{column}: field `{f}`: {message}"),
                    None => format!("{FILE}:{LINE}:{column}: {message}"),
                };
                assert_eq!(rendered, want, "for the line {line}");
                assert_eq!(e.location.line, LINE);
                assert_eq!(e.location.column, column);
                assert_eq!(e.field.as_deref(), self.field);
                assert_eq!(e.message, message);
            }
            Says::Contains(parts) => {
                let field = self.field.expect("a row with parts names its field");
                let prefix = format!("{FILE}:{LINE}:{column}: field `{field}`: ");
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
            }
        }
        assert!(
            !rendered.contains('\n'),
            "an error stays on one line: {rendered:?}"
        );
        match self.id {
            Id::Unchecked => {}
            Id::Unread => assert_eq!(e.id, None, "{rendered}"),
            Id::Is(id) => assert_eq!(e.id.as_deref(), Some(id), "{rendered}"),
        }
    }
}

/// Every bad line with the error it must give, in the order of the parser's checks: JSON
/// and shape, ids, unknown keys and types, compiled values, modes, messages, field types.
const ROWS: &[Row] = &[
    // ------------------------------------------------------------ JSON and shape
    // A byte-order mark where a line starts: files concatenated (the first file's is
    // ignored, each following one's lands mid-file).
    exact(
        "a_byte_order_mark_mid_file_is_named",
        "\u{feff}{\"id\": \"a\", \"input\": \"x\"}",
        At::Col(1),
        None,
        "a byte-order mark (U+FEFF) in the middle of the file at line 7, column 1; files concatenated? remove it",
    )
    .id(Id::Unread),
    // The `}` after the trailing comma is character 26.
    exact(
        "invalid_json_gives_serdes_column::trailing_comma",
        r#"{"id": "a", "input": "x",}"#,
        At::Col(26),
        None,
        "invalid JSON: trailing comma; each line must be one complete JSON object",
    )
    .id(Id::Unread),
    // A missing value: the `}` where the value should be is character 22.
    exact(
        "invalid_json_gives_serdes_column::missing_value",
        r#"{"id": "a", "input": }"#,
        At::Col(22),
        None,
        "invalid JSON: expected value; each line must be one complete JSON object",
    ),
    // `é` is one character but two bytes: the `}` is character 25 (byte 26).
    exact(
        "invalid_json_column_counts_characters_not_bytes::two_byte",
        r#"{"id": "café", "input": }"#,
        At::Col(25),
        None,
        "invalid JSON: expected value; each line must be one complete JSON object",
    ),
    // Three-byte characters, as in Chinese test files: `}` is character 23 (byte 27).
    exact(
        "invalid_json_column_counts_characters_not_bytes::three_byte",
        r#"{"id": "问候", "input": }"#,
        At::Col(23),
        None,
        "invalid JSON: expected value; each line must be one complete JSON object",
    ),
    exact(
        "a_line_that_is_not_an_object::array",
        r#"["a", "b"]"#,
        At::Col(1),
        None,
        "expected a JSON object for the case, found an array",
    ),
    exact(
        "a_line_that_is_not_an_object::string",
        r#""just text""#,
        At::Col(1),
        None,
        "expected a JSON object for the case, found a string",
    ),
    exact(
        "a_line_that_is_not_an_object::number",
        "42",
        At::Col(1),
        None,
        "expected a JSON object for the case, found a number",
    ),
    // serde_json alone keeps the last `assertions`, and the case would pass with none.
    // The rest of the line is readable, so the id still names the trial.
    exact(
        "duplicate_key_is_an_error_at_its_second_occurrence",
        r#"{"id":"c","input":"Hello","assertions":[{"type":"contains","value":"ZZZ"}],"assertions":[]}"#,
        At::Key("assertions", 1),
        Some("assertions"),
        "duplicate key `assertions` (first given at column 27); only one of them would count, so remove one or merge them into one `assertions`",
    )
    .id(Id::Is("c")),
    parts(
        "duplicate_key_deep_inside_is_named_by_its_path::in_an_assertion",
        r#"{"id": "s", "turns": [{"input": "a"}, {"input": "b", "assertions": [{"type": "contains", "value": "x", "value": "y"}]}]}"#,
        At::Key("value", 1),
        "turns[1].assertions[0].value",
        &["duplicate key `value`"],
    ),
    parts(
        "duplicate_key_deep_inside_is_named_by_its_path::in_metadata",
        r#"{"id": "m", "input": "x", "metadata": {"user": {"id": 1, "id": 2}}}"#,
        At::Key("id", 2),
        "metadata.user.id",
        &["duplicate key `id`", "first given at column"],
    ),
    // A third occurrence: the error points at the second.
    parts(
        "duplicate_key_deep_inside_is_named_by_its_path::third_occurrence",
        r#"{"id": "t", "input": "x", "tags": [], "tags": [], "tags": []}"#,
        At::Key("tags", 1),
        "tags",
        &["duplicate key `tags`"],
    ),
    // An escaped spelling of the same key is the same key.
    parts(
        "duplicate_key_deep_inside_is_named_by_its_path::escaped_spelling",
        r#"{"id": "u", "input": "x", "\u0069nput": "y"}"#,
        At::Find(r#""\u0069nput""#, 0),
        "input",
        &["duplicate key `input`"],
    ),
    parts(
        "duplicate_id_key_is_an_error",
        r#"{"id": "a", "input": "x", "id": "b"}"#,
        At::Key("id", 1),
        "id",
        &["duplicate key `id`"],
    )
    .id(Id::Unread),
    // ------------------------------------------------------------ ids
    exact(
        "missing_id",
        r#"{"input": "x"}"#,
        At::Col(1),
        Some("id"),
        r#"missing `id`; every case needs an id unique within its file, like "T001""#,
    )
    .id(Id::Unread),
    exact(
        "id_of_the_wrong_type::number",
        r#"{"id": 7, "input": "x"}"#,
        At::Col(2),
        Some("id"),
        r#"expected a string id like "T001", found a number"#,
    )
    .id(Id::Unread),
    exact(
        "id_of_the_wrong_type::null",
        r#"{"input": "x", "id": null}"#,
        At::Col(16),
        Some("id"),
        r#"expected a string id like "T001", found null"#,
    ),
    exact(
        "empty_id::empty",
        r#"{"id": "", "input": "x"}"#,
        At::Col(2),
        Some("id"),
        r#"the id is empty; give the case an id unique within its file, like "T001""#,
    ),
    exact(
        "empty_id::spaces",
        r#"{"id": "   ", "input": "x"}"#,
        At::Col(2),
        Some("id"),
        r#"the id is empty; give the case an id unique within its file, like "T001""#,
    ),
    exact(
        "id_containing_the_trial_separator::separator",
        r#"{"id": "a::b", "input": "x"}"#,
        At::Col(2),
        Some("id"),
        "the id \"a::b\" contains `::`, which separates suite and id in trial names; use `-` or `.` instead",
    ),
    exact(
        "id_containing_the_trial_separator::leading_space",
        r#"{"id": " a", "input": "x"}"#,
        At::Col(2),
        Some("id"),
        r#"the id " a" has leading or trailing spaces; remove them"#,
    ),
    // A newline in a trial name would split nextest's one-name-per-line test list (and
    // the message itself stays on one line, as every row checks).
    exact(
        "id_with_a_control_character::newline",
        r#"{"id": "a\nb", "input": "x"}"#,
        At::Col(2),
        Some("id"),
        r#"the id "a\nb" contains the control character U+000A; an id names a trial on one line of the test list, so use printable characters only"#,
    )
    .id(Id::Unread),
    parts(
        "id_with_a_control_character::tab",
        r#"{"id": "a\tb", "input": "x"}"#,
        At::Col(2),
        "id",
        &["U+0009"],
    ),
    parts(
        "id_with_a_control_character::bell",
        r#"{"id": "bell\u0007", "input": "x"}"#,
        At::Col(2),
        "id",
        &[r#""bell\u{7}""#, "U+0007"],
    ),
    parts(
        "id_with_a_control_character::next_line",
        r#"{"id": "x\u0085y", "input": "x"}"#,
        At::Col(2),
        "id",
        &["U+0085"],
    ),
    // Leading or trailing whitespace of any kind, not only spaces.
    parts(
        "id_with_a_control_character::no_break_space",
        r#"{"id": "T001\u00a0", "input": "x"}"#,
        At::Col(2),
        "id",
        &["has leading or trailing spaces; remove them"],
    ),
    // ------------------------------------------------------------ unknown keys and types
    exact(
        "unknown_top_level_key_suggests_the_known_one::assertion",
        r#"{"id": "a", "input": "x", "assertion": {"type": "contains", "value": "y"}}"#,
        At::Key("assertion", 0),
        Some("assertion"),
        "unknown key `assertion` in a case; did you mean `assertions`?",
    )
    .id(Id::Is("a")),
    exact(
        "unknown_top_level_key_suggests_the_known_one::imput",
        r#"{"id": "a", "imput": "x"}"#,
        At::Col(13),
        Some("imput"),
        "unknown key `imput` in a case; did you mean `input`?",
    ),
    parts(
        "unknown_key_far_from_every_known_one_lists_them",
        r#"{"id": "a", "input": "x", "zzzzzzzz": 1}"#,
        At::Key("zzzzzzzz", 0),
        "zzzzzzzz",
        &[
            "unknown key `zzzzzzzz` in a case; known keys are: id, name",
            "simulator, checkpoints, max_turns",
        ],
    ),
    exact(
        "unknown_assertion_type_suggests_the_known_one::contians",
        r#"{"id": "a", "input": "x", "assertions": [{"type": "contians", "value": "y"}]}"#,
        At::Key("type", 0),
        Some("assertions[0].type"),
        r#"unknown assertion type "contians"; did you mean "contains"?"#,
    ),
    // In a turn, with the Yao spelling `assert`.
    exact(
        "unknown_assertion_type_suggests_the_known_one::in_a_turn",
        r#"{"id": "a", "turns": [{"input": "x", "assert": {"type": "tool_caled"}}]}"#,
        At::Key("type", 0),
        Some("turns[0].assert.type"),
        r#"unknown assertion type "tool_caled"; did you mean "tool_called"?"#,
    ),
    exact(
        "unknown_key_inside_an_assertion",
        r#"{"id": "a", "input": "x", "assertions": [{"type": "regex", "patern": "\\d+"}]}"#,
        At::Key("patern", 0),
        Some("assertions[0].patern"),
        "unknown key `patern` in a `regex` assertion; did you mean `pattern`?",
    ),
    // A bare string that is no type gets the same suggestion as an object.
    exact(
        "a_bare_assert_string_that_is_no_type",
        r#"{"id": "a", "input": "x", "assert": "tool_caled"}"#,
        At::Key("assert", 0),
        Some("assert.type"),
        r#"unknown assertion type "tool_caled"; did you mean "tool_called"?"#,
    ),
    // ------------------------------------------------------------ latency bounds
    exact(
        "latency_bounds::negative",
        r#"{"id": "a", "input": "x", "assert": {"type": "latency", "max_ms": -5}}"#,
        At::Key("max_ms", 0),
        Some("assert.max_ms"),
        "expected a whole number of milliseconds (0 or more), such as 2000; found -5",
    ),
    exact(
        "latency_bounds::not_whole",
        r#"{"id": "a", "turns": [{"input": "x", "assertions": [{"type": "latency", "max_first_token_ms": 1.5}]}]}"#,
        At::Key("max_first_token_ms", 0),
        Some("turns[0].assertions[0].max_first_token_ms"),
        "expected a whole number of milliseconds (0 or more), such as 2000; found 1.5",
    ),
    exact(
        "latency_bounds::a_string",
        r#"{"id": "a", "input": "x", "assert": {"type": "latency", "max_ms": "2s"}}"#,
        At::Key("max_ms", 0),
        Some("assert.max_ms"),
        "expected a whole number of milliseconds (0 or more), such as 2000; found a string",
    ),
    exact(
        "latency_bounds::neither_given",
        r#"{"id": "a", "input": "x", "assert": {"type": "latency"}}"#,
        At::Key("assert", 0),
        Some("assert.max_ms"),
        "a `latency` assertion needs `max_ms` (the whole reply), `max_first_token_ms` (its first byte) or both, in milliseconds",
    ),
    exact(
        "latency_bounds::unknown_key",
        r#"{"id": "a", "turns": [{"input": "x"}], "final_assertions": [{"type": "latency", "max_ms": 100, "max_first_byte_ms": 10}]}"#,
        At::Key("max_first_byte_ms", 0),
        Some("final_assertions[0].max_first_byte_ms"),
        "unknown key `max_first_byte_ms` in a `latency` assertion; did you mean `max_first_token_ms`?",
    ),
    // ------------------------------------------------------------ compiled values
    parts(
        "invalid_regex_fails_at_load_time::unclosed",
        r#"{"id": "a", "input": "x", "assert": {"type": "regex", "pattern": "(unclosed"}}"#,
        At::Key("pattern", 0),
        "assert.pattern",
        &[r#"invalid regex "(unclosed""#, "unclosed group"],
    )
    .id(Id::Is("a")),
    // Yao writes the pattern in `value`.
    parts(
        "invalid_regex_fails_at_load_time::yao_value",
        r#"{"id": "a", "input": "x", "assert": {"type": "regex", "value": "a{2,1}"}}"#,
        At::Key("value", 0),
        "assert.value",
        &[r#"invalid regex "a{2,1}""#],
    ),
    exact(
        "invalid_json_path_fails_at_load_time::full_path",
        r#"{"id": "a", "input": "x", "assert": {"type": "json_path", "path": "$.items[", "value": 1}}"#,
        At::Key("path", 0),
        Some("assert.path"),
        r#"invalid JSONPath "$.items[" (parse error at character 9); write an RFC 9535 path such as "$.items[0].name""#,
    ),
    // Yao's shorthand without `$`, when invalid, is named as written.
    parts(
        "invalid_json_path_fails_at_load_time::shorthand",
        r#"{"id": "a", "input": "x", "assert": {"type": "json_path", "path": "items[", "value": 1}}"#,
        At::Key("path", 0),
        "assert.path",
        &[r#"invalid JSONPath "items[""#],
    ),
    // "$.items[" fails at character 9, one past its end; "items[" as written is two
    // characters shorter, so the same failure is at its character 7.
    exact(
        "json_path_error_position_refers_to_the_path_as_written",
        r#"{"id": "a", "input": "x", "assert": {"type": "json_path", "path": "items[", "value": 1}}"#,
        At::Key("path", 0),
        Some("assert.path"),
        r#"invalid JSONPath "items[" (parse error at character 7); write an RFC 9535 path such as "$.items[0].name""#,
    ),
    exact(
        "bad_durations::no_unit",
        r#"{"id": "a", "input": "x", "timeout": "30"}"#,
        At::Key("timeout", 0),
        Some("timeout"),
        r#"invalid duration "30": a unit is missing; write "30s" for seconds or "30ms" for milliseconds"#,
    ),
    parts(
        "bad_durations::unknown_unit",
        r#"{"id": "a", "input": "x", "timeout": "5 minutes"}"#,
        At::Key("timeout", 0),
        "timeout",
        &[
            r#"invalid duration "5 minutes""#,
            "unknown unit",
            "use ms, s, m or h",
        ],
    ),
    exact(
        "bad_durations::number",
        r#"{"id": "a", "input": "x", "timeout": 30}"#,
        At::Key("timeout", 0),
        Some("timeout"),
        r#"expected a duration string like "30s" or "2m", found a number"#,
    ),
    exact(
        "zero_timeouts::seconds",
        r#"{"id": "a", "input": "x", "timeout": "0s"}"#,
        At::Key("timeout", 0),
        Some("timeout"),
        r#"a timeout of "0s" ends before anything can happen; give a positive duration like "30s" or "2m", or leave the timeout out for the default"#,
    ),
    parts(
        "zero_timeouts::milliseconds",
        r#"{"id": "a", "input": "x", "timeout": "0ms"}"#,
        At::Key("timeout", 0),
        "timeout",
        &[r#"a timeout of "0ms""#],
    ),
    parts(
        "zero_timeouts::interactive",
        r#"{"id": "a", "input": "x", "interactive": {"enabled": true, "timeout": "0m"}}"#,
        At::Key("timeout", 0),
        "interactive.timeout",
        &[r#"a timeout of "0m" ends before anything can happen"#],
    ),
    // ------------------------------------------------------------ modes
    exact(
        "turns_and_simulator_together",
        r#"{"id": "a", "turns": [{"input": "x"}], "simulator": {"use": "script"}, "checkpoints": [{"id": "c", "assert": "tool_called"}]}"#,
        At::Key("simulator", 0),
        Some("simulator"),
        "a case has either `turns` (static mode) or `simulator` + `checkpoints` (dynamic mode), not both; split it into two cases",
    ),
    exact(
        "dynamic_mode_without_simulator::mode",
        r#"{"id": "a", "mode": "dynamic", "input": "x"}"#,
        At::Col(1),
        Some("simulator"),
        r#"a dynamic case needs `simulator`, such as {"use": "script", "script": [...]}"#,
    ),
    // Checkpoints alone make a case dynamic, which then lacks its simulator.
    exact(
        "dynamic_mode_without_simulator::checkpoints_alone",
        r#"{"id": "a", "input": "x", "checkpoints": [{"id": "c", "assert": "tool_called"}]}"#,
        At::Col(1),
        Some("simulator"),
        r#"a dynamic case needs `simulator`, such as {"use": "script", "script": [...]}"#,
    ),
    exact(
        "unknown_mode::multi",
        r#"{"id": "a", "mode": "multi", "input": "x"}"#,
        At::Col(13),
        Some("mode"),
        r#"unknown mode "multi"; expected "static" (with `turns`), "dynamic" (with `simulator` + `checkpoints`) or "single" (with `input`)"#,
    ),
    parts(
        "unknown_mode::static_with_a_simulator",
        r#"{"id": "a", "mode": "static", "simulator": {"use": "script"}, "checkpoints": [{"id": "c", "assert": "tool_called"}]}"#,
        At::Col(13),
        "mode",
        &[r#"`mode` is "static" but the case has `simulator`/`checkpoints`"#],
    ),
    exact(
        "static_mode_with_input_and_no_turns",
        r#"{"id": "a", "mode": "static", "input": "x", "assertions": [{"type": "contains", "value": "y"}]}"#,
        At::Key("mode", 0),
        Some("mode"),
        r#"`mode` is "static" but the case has no `turns`; write the conversation as `turns: [{"input": ...}, ...]`, or drop `mode` for a single-turn case"#,
    ),
    exact(
        "simulator_without_checkpoints::missing",
        r#"{"id": "a", "input": "x", "simulator": {"use": "script", "script": []}}"#,
        At::Col(1),
        Some("checkpoints"),
        "a dynamic case needs `checkpoints`: what the agent must reach",
    ),
    exact(
        "simulator_without_checkpoints::empty",
        dynamic!("[]"),
        At::Key("checkpoints", 0),
        Some("checkpoints"),
        "`checkpoints` is empty; give at least one",
    ),
    exact(
        "checkpoint_after_an_unknown_id::unknown",
        dynamic!(
            r#"[{"id": "c1", "assert": "tool_called"}, {"id": "c2", "after": ["c0"], "assert": {"type": "contains", "value": "ok"}}]"#
        ),
        At::Find(r#""c0""#, 0),
        Some("checkpoints[1].after[0]"),
        r#"`after` names "c0", which is not a checkpoint of this case; known: c1, c2"#,
    ),
    // A single id may be given as a string.
    exact(
        "checkpoint_after_an_unknown_id::itself",
        dynamic!(r#"[{"id": "c1", "after": "c1", "assert": "tool_called"}]"#),
        At::Key("after", 0),
        Some("checkpoints[0].after[0]"),
        r#"checkpoint "c1" cannot come after itself"#,
    ),
    exact(
        "checkpoint_after_cycle::two",
        dynamic!(
            r#"[{"id": "a", "after": ["b"], "assert": "tool_called"}, {"id": "b", "after": ["a"], "assert": "tool_called"}]"#
        ),
        At::Find(r#"["a"]"#, 1),
        Some("checkpoints[1].after[0]"),
        r#"the `after` order makes a cycle: "a" after "b" after "a", so none of them can be reached first; remove one of these `after` entries"#,
    ),
    // A longer cycle, entered from a checkpoint outside it: it closes at y's `after`, a
    // single id given as a string.
    parts(
        "checkpoint_after_cycle::longer",
        dynamic!(
            r#"[{"id": "start", "assert": "tool_called"}, {"id": "x", "after": ["start", "z"], "assert": "tool_called"}, {"id": "y", "after": "x", "assert": "tool_called"}, {"id": "z", "after": ["y"], "assert": "tool_called"}]"#
        ),
        At::Key("after", 1),
        "checkpoints[2].after[0]",
        &[r#""x" after "z" after "y" after "x""#],
    ),
    parts(
        "duplicate_checkpoint_id",
        dynamic!(
            r#"[{"id": "c1", "assert": "tool_called"}, {"id": "c1", "assert": {"type": "contains", "value": "ok"}}]"#
        ),
        At::Any,
        "checkpoints[1].id",
        &[r#"duplicate checkpoint id "c1""#],
    ),
    exact(
        "duplicate_checkpoint_id_points_at_the_second_checkpoint",
        dynamic!(
            r#"[{"id": "c1", "assert": "tool_called"}, {"id": "c1", "assert": {"type": "contains", "value": "ok"}}]"#
        ),
        At::Key("id", 2),
        Some("checkpoints[1].id"),
        r#"duplicate checkpoint id "c1""#,
    ),
    exact(
        "error_in_the_second_assertion_points_at_it",
        r#"{"id": "a", "input": "x", "assertions": [{"type": "contains", "value": "y"}, {"type": "contians", "value": "z"}]}"#,
        At::Key("type", 1),
        Some("assertions[1].type"),
        r#"unknown assertion type "contians"; did you mean "contains"?"#,
    ),
    exact(
        "assertions_and_assert_together::top_level",
        r#"{"id": "a", "input": "x", "assertions": [], "assert": []}"#,
        At::Key("assert", 0),
        Some("assert"),
        "both `assertions` and `assert` are given; use one of them",
    ),
    exact(
        "assertions_and_assert_together::in_a_turn",
        r#"{"id": "a", "turns": [{"input": "x", "assertions": [], "assert": []}]}"#,
        At::Key("assert", 0),
        Some("turns[0].assert"),
        "both `assertions` and `assert` are given; use one of them",
    ),
    exact(
        "static_case_with_top_level_input::input",
        r#"{"id": "a", "input": "x", "turns": [{"input": "y"}]}"#,
        At::Col(13),
        Some("input"),
        "a static case with `turns` takes no top-level `input`; put the first message in turns[0].input",
    ),
    parts(
        "static_case_with_top_level_input::assertions",
        r#"{"id": "a", "turns": [{"input": "y"}], "assertions": []}"#,
        At::Key("assertions", 0),
        "assertions",
        &[
            "a static case with `turns` takes no top-level `assertions`",
            "final_assertions",
        ],
    ),
    exact(
        "static_case_with_top_level_input_after_turns_points_at_it",
        r#"{"id": "a", "turns": [{"input": "y"}], "input": "x"}"#,
        At::Key("input", 1),
        Some("input"),
        "a static case with `turns` takes no top-level `input`; put the first message in turns[0].input",
    ),
    exact(
        "empty_turns::empty",
        r#"{"id": "a", "turns": []}"#,
        At::Col(13),
        Some("turns"),
        r#"`turns` is empty; give at least one {"input": ...}"#,
    ),
    exact(
        "empty_turns::turn_without_input",
        r#"{"id": "a", "turns": [{"assertions": []}]}"#,
        At::Find(r#"{"assertions""#, 0),
        Some("turns[0].input"),
        "each turn needs `input`: what the user says",
    ),
    exact(
        "missing_input",
        r#"{"id": "a"}"#,
        At::Col(1),
        Some("input"),
        "missing `input`; a case needs `input` (single turn), `turns` (static) or `simulator` + `checkpoints` (dynamic)",
    ),
    // ------------------------------------------------------------ messages
    parts(
        "input_whose_last_message_is_not_from_the_user::array",
        r#"{"id": "a", "input": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}"#,
        At::Any,
        "input[1].role",
        &[r#"the last input message must have role "user": the agent answers it"#],
    ),
    exact(
        "input_whose_last_message_is_not_from_the_user::object",
        r#"{"id": "a", "input": {"role": "system", "content": "be terse"}}"#,
        At::Key("role", 0),
        Some("input.role"),
        r#"the last input message must have role "user": the agent answers it"#,
    ),
    exact(
        "last_message_error_points_at_the_last_message",
        r#"{"id": "a", "input": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}"#,
        At::Key("role", 1),
        Some("input[1].role"),
        r#"the last input message must have role "user": the agent answers it"#,
    ),
    exact(
        "unknown_role::bot",
        r#"{"id": "a", "input": {"role": "bot", "content": "x"}}"#,
        At::Key("role", 0),
        Some("input.role"),
        r#"unknown role "bot"; expected user, assistant, system or tool"#,
    ),
    exact(
        "unknown_role::missing_role",
        r#"{"id": "a", "input": {"content": "x"}}"#,
        At::Key("input", 0),
        Some("input.role"),
        "a message needs `role`: user, assistant, system or tool",
    ),
    exact(
        "unknown_role::missing_content",
        r#"{"id": "a", "input": {"role": "user"}}"#,
        At::Key("input", 0),
        Some("input.content"),
        "a user message needs `content`",
    ),
    // `name` and `tool_call_id` are strings.
    exact(
        "tool_call_id_of_the_wrong_type",
        r#"{"id": "a", "input": [{"role": "tool", "content": "4", "tool_call_id": 1}, "ok"]}"#,
        At::Key("tool_call_id", 0),
        Some("input[0].tool_call_id"),
        "expected a string, found a number",
    ),
    // ------------------------------------------------------------ field types
    exact(
        "skip_of_the_wrong_type",
        r#"{"id": "a", "input": "x", "skip": "yes"}"#,
        At::Key("skip", 0),
        Some("skip"),
        "expected true or false, found a string",
    ),
    exact(
        "tags_that_are_not_strings::element",
        r#"{"id": "a", "input": "x", "tags": ["smoke", 1]}"#,
        At::Find("1]", 0),
        Some("tags[1]"),
        "expected a string tag, found a number",
    ),
    exact(
        "tags_that_are_not_strings::not_an_array",
        r#"{"id": "a", "input": "x", "tags": "smoke"}"#,
        At::Key("tags", 0),
        Some("tags"),
        "expected an array of strings, found a string",
    ),
    exact(
        "max_turns_zero::zero",
        r#"{"id": "d", "input": "hi", "simulator": {"use": "script", "script": [{"say": "ok"}]}, "checkpoints": [{"id": "c", "assert": "tool_called"}], "max_turns": 0}"#,
        At::Key("max_turns", 0),
        Some("max_turns"),
        "expected a whole number from 1 to 10000, found 0",
    ),
    exact(
        "max_turns_zero::string",
        r#"{"id": "d", "input": "hi", "simulator": {"use": "script", "script": [{"say": "ok"}]}, "checkpoints": [{"id": "c", "assert": "tool_called"}], "max_turns": "5"}"#,
        At::Key("max_turns", 0),
        Some("max_turns"),
        "expected a whole number, found a string",
    ),
    // EvalStudio's criteria on a dynamic case.
    exact(
        "criteria_with_checkpoints::both",
        r#"{"id": "d", "input": "hi", "success_criteria": "helps", "checkpoints": [{"id": "c", "assert": "tool_called"}]}"#,
        At::Key("checkpoints", 0),
        Some("checkpoints"),
        "a case is decided by `checkpoints` or by `success_criteria`/`failure_criteria`, not both; split it into two cases",
    ),
    exact(
        "criteria_mode_unknown::always",
        r#"{"id": "d", "input": "hi", "success_criteria": "helps", "failure_criteria_mode": "always"}"#,
        At::Key("failure_criteria_mode", 0),
        Some("failure_criteria_mode"),
        "unknown mode \"always\"; expected \"on_max_messages\" (the default: the last evaluation decides) or \"every_turn\" (failure met at any turn fails the case)",
    ),
    exact(
        "criteria_max_messages::one",
        r#"{"id": "d", "input": "hi", "success_criteria": "helps", "max_messages": 1}"#,
        At::Key("max_messages", 0),
        Some("max_messages"),
        "expected a whole number from 2 to 1000 (user and assistant messages), found 1",
    ),
    exact(
        "criteria_without_criteria::instructions_only",
        r#"{"id": "d", "input": "hi", "instructions": "cancel a booking"}"#,
        At::Key("instructions", 0),
        Some("instructions"),
        "give `success_criteria` (what the agent must achieve), `failure_criteria`, or both",
    ),
    exact(
        "criteria_with_max_turns::max_turns",
        r#"{"id": "d", "input": "hi", "success_criteria": "helps", "max_turns": 3}"#,
        At::Key("max_turns", 0),
        Some("max_turns"),
        "a case with criteria ends by `max_messages` (user and assistant messages, default 10)",
    ),
    exact(
        "personas_on_a_single_case::single",
        r#"{"id": "d", "input": "hi", "personas": ["impatient"]}"#,
        At::Key("personas", 0),
        Some("personas"),
        "`personas` apply to dynamic cases, where a simulated user impersonates each; this case has no simulated user",
    ),
    exact(
        "personas_twice::same_name",
        r#"{"id": "d", "input": "hi", "success_criteria": "helps", "personas": ["Calm", {"name": "calm"}]}"#,
        At::Find("{\"name\": \"calm\"}", 0),
        Some("personas[1]"),
        "two personas named \"calm\": each names a trial, so names must differ",
    ),
    exact(
        "personas_unnamed::object",
        r#"{"id": "d", "input": "hi", "success_criteria": "helps", "personas": [{"system_prompt": "You are calm"}]}"#,
        At::Find("{\"system_prompt\"", 0),
        Some("personas[0]"),
        "a persona needs a `name` (it names the trial)",
    ),
    // Not a dynamic case: `max_turns` has no meaning.
    exact(
        "max_turns_zero::not_dynamic",
        r#"{"id": "a", "input": "x", "max_turns": 3}"#,
        At::Key("max_turns", 0),
        Some("max_turns"),
        "`max_turns` only applies to dynamic cases (with `simulator` + `checkpoints`)",
    ),
];

// ---------------------------------------------------------------------------------------
// Errors that a row cannot say: a line cut short, and what a suite loads around bad lines
// ---------------------------------------------------------------------------------------

fn a_line_cut_short_is_an_error_at_its_end() {
    let e = error(r#"{"id": "a""#);
    assert!(
        e.message
            .starts_with("invalid JSON: EOF while parsing an object"),
        "{e}"
    );
    assert!(e.location.column >= 10, "{e}");
}

fn duplicate_id_key_does_not_name_the_trial() {
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

// ---------------------------------------------------------------------------------------
// Accepted inputs
// ---------------------------------------------------------------------------------------

/// The same key in sibling objects is not a duplicate.
fn the_same_key_in_sibling_objects_is_no_duplicate() {
    parse(
        r#"{"id": "v", "input": "x", "assertions": [{"type": "contains", "value": "a"}, {"type": "contains", "value": "b"}]}"#,
    );
}

/// Inner spaces and non-ASCII letters are fine in an id.
fn inner_spaces_and_non_ascii_letters_make_an_id() {
    assert_eq!(
        parse(r#"{"id": "refund é 1", "input": "x"}"#).id,
        "refund é 1"
    );
}

/// Yao's shorthand without `$` is accepted when valid.
fn json_path_shorthand_without_dollar_is_accepted() {
    parse(
        r#"{"id": "a", "input": "x", "assert": {"type": "json_path", "path": "items[0].name", "value": 1}}"#,
    );
}

fn durations_combine_units() {
    assert_eq!(
        parse(r#"{"id": "a", "input": "x", "timeout": "1m30s"}"#).timeout,
        Some(Duration::from_secs(90))
    );
}

fn the_smallest_timeouts_are_accepted() {
    assert_eq!(
        parse(r#"{"id": "a", "input": "x", "timeout": "1ms"}"#).timeout,
        Some(Duration::from_millis(1))
    );
    parse(r#"{"id": "a", "input": "x", "interactive": {"enabled": true, "timeout": "5m"}}"#);
}

/// `single` agrees with `input`, and no mode is a single turn too.
fn single_mode_agrees_with_input() {
    let case = parse(r#"{"id": "a", "mode": "single", "input": "x"}"#);
    assert_eq!(case.mode.name(), "single");
    assert_eq!(parse(r#"{"id": "a", "input": "x"}"#).mode.name(), "single");
}

/// A diamond is an order, not a cycle.
fn a_diamond_is_an_order_not_a_cycle() {
    parse(dynamic!(
        r#"[{"id": "a", "assert": "tool_called"}, {"id": "b", "after": "a", "assert": "tool_called"}, {"id": "c", "after": ["a", "b"], "assert": "tool_called"}, {"id": "d", "after": ["c", "b"], "assert": "tool_called"}]"#
    ));
}

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
    assert_eq!(assertions[0].raw.value(), json!({"type": "tool_called"}));
}

fn dynamic_case_defaults() {
    let case = parse(dynamic!(
        r#"[{"id": "c1", "assertion": "tool_called"}, {"id": "c2", "after": "c1", "forbidden": true, "assert": {"type": "contains", "value": "refund"}}]"#
    ));
    let Mode::Dynamic {
        input,
        checkpoints,
        max_turns,
        simulator,
        ..
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

// ---------------------------------------------------------------------------------------
// Suites
// ---------------------------------------------------------------------------------------

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

/// Files joined with `cat` keep each one's byte-order mark, mid-file: the binary names
/// it, where it is, in JSONL, a JSON file read whole and a scenario.
fn concatenated_files_name_the_byte_order_mark_in_the_middle() {
    let s = crate::common::Scratch::named("parse", "bom");
    s.write(
        "agentest.toml",
        "[agent]\ntype = \"http\"\nurl = \"http://127.0.0.1:9/\"\n",
    );
    let case = "{\"id\": \"%\", \"input\": \"hi\", \"assert\": {\"type\": \"contains\", \"value\": \"x\"}}\n";
    s.write(
        "s/joined.jsonl",
        &format!(
            "\u{feff}{}\u{feff}{}",
            case.replace('%', "a"),
            case.replace('%', "b")
        ),
    );
    s.write(
        "s/scenarios.json",
        "\u{feff}[{\"id\": \"s1\", \"name\": \"a\", \"successCriteria\": \"x\"},\n  \u{feff}{\"id\": \"s2\", \"name\": \"b\", \"successCriteria\": \"x\"}]\n",
    );
    s.write(
        "s/joined.scenario.yaml",
        "name: a\nenvironment: {type: local}\nrun:\n  - input: hi\n    evaluations: []\n\u{feff}judgment: {strategy: all_pass}\n",
    );
    let r = crate::common::finish(
        crate::common::clean(std::process::Command::new(crate::common::BIN))
            .current_dir(s.path())
            .args(["test", "-i", "s", "--dry-run", "--color", "never"]),
    );
    assert_eq!(r.code, 1, "{r:?}");
    for expected in [
        "joined::line-2                   error: s/joined.jsonl:2:1: a byte-order mark (U+FEFF) in the middle of the file at line 2, column 1; files concatenated? remove it",
        "error: s/scenarios.json:2:3: a byte-order mark (U+FEFF) in the middle of the file at line 2, column 3; files concatenated? remove it",
        "error: s/joined.scenario.yaml:6:1: invalid YAML: a byte-order mark (U+FEFF) in the middle of the file at line 6, column 1; files concatenated? remove it",
    ] {
        assert!(r.stdout.contains(expected), "{expected:?} not in {r:?}");
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

pub fn tests() -> Vec<Trial> {
    let rows = ROWS.iter().map(|row| {
        crate::trial(
            format!("{}::{}", crate::module_of(module_path!()), row.name),
            move || {
                row.check();
                Ok(Completion::Completed)
            },
        )
    });
    let mut tests: Vec<Trial> = rows.collect();
    tests.extend(crate::trials![
        a_line_cut_short_is_an_error_at_its_end,
        duplicate_id_key_does_not_name_the_trial,
        a_rejected_id_does_not_name_the_trial,
        duplicate_id_names_the_first_line_and_the_trial_by_line,
        the_same_key_in_sibling_objects_is_no_duplicate,
        inner_spaces_and_non_ascii_letters_make_an_id,
        json_path_shorthand_without_dollar_is_accepted,
        durations_combine_units,
        the_smallest_timeouts_are_accepted,
        single_mode_agrees_with_input,
        a_diamond_is_an_order_not_a_cycle,
        string_input,
        message_object_input,
        message_array_input_is_a_history,
        message_name_and_tool_call_id_reach_the_agent,
        static_case_with_final_assertions,
        assert_as_a_bare_type_string,
        dynamic_case_defaults,
        comments_and_blank_lines_are_skipped_and_lines_keep_their_numbers,
        a_byte_order_mark_is_ignored_or_named,
        concatenated_files_name_the_byte_order_mark_in_the_middle,
        windows_line_endings_are_read,
        invalid_utf8_is_an_error_for_its_line_only,
        invalid_utf8_at_the_end_of_the_last_line,
        trial_names_are_suite_and_id,
    ]);
    tests
}
