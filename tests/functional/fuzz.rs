//! Fuzzing the input readers with proptest: the JSONL case parser, the config parser,
//! the cassette reader, the assertion evaluators, durations and tool mocks must never
//! panic (or hang) on any input, and must locate what they reject.
//!
//! Inputs are arbitrary bytes and text, and near-valid ones built from the readers' own
//! vocabulary (known keys with values of the right and the wrong type, nested assertions,
//! turns, checkpoints and mocks, valid configs and cassettes), then edited: characters
//! deleted, repeated, inserted or swapped, lines truncated, keys repeated or escaped,
//! very long strings, nesting past the parsers' depth limits.
//!
//! Each property runs a few hundred to a few thousand cases, so the whole file takes about
//! ten seconds under `cargo test` (debug build, two cores). `PROPTEST_CASES` (proptest's
//! own variable) runs every property that many times instead, for a longer hunt:
//!
//! ```text
//! PROPTEST_CASES=20000 cargo test --test functional -- fuzz::    # about 3.5 minutes on two cores
//! ```
//!
//! Other proptest variables apply too, notably `PROPTEST_RNG_SEED` to replay a run.
//! Failures are not persisted by proptest: an input that once broke a reader is kept by
//! hand as a file under `tests/fuzz-regressions/` (see its README and [`regressions`]),
//! and one that still breaks it has its own test, described by its doc comment and
//! registered as ignored (`bug_... (ignore)` in [`tests`]) until the bug is fixed.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentest::__private::assertion::{evaluate, EvalEnv, Latency, Subject};
use agentest::__private::case::{parse_case, Location, Message, Mode, CASE_KEYS};
use agentest::__private::config::{Config, ConfigFile};
use agentest::__private::duration::{format_duration, parse_duration};
use agentest::__private::llm::cassette::{canonical, key_of, Cassette, Entry};
use agentest::__private::llm::{CassetteMode, LlmError, Role, SeededRng};
use agentest::__private::mocks::{parse_mocks, MockSet};
use agentest::__private::scripts::Scripts;
use agentest::__private::suite::{display_path, parse_suite_bytes};
use agentest::{Reply, ToolCall};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------

/// `cases` runs, unless `PROPTEST_CASES` says otherwise; no failure files are written.
fn config(cases: u32) -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = cases;
    }
    c.failure_persistence = None;
    c
}

/// A scratch directory for one property, under cargo's per-target temp directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("fuzz")
        .join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    dir
}

// ---------------------------------------------------------------------------------------
// JSON with room for mistakes: repeated keys, escaped key spellings, raw tokens
// ---------------------------------------------------------------------------------------

/// A JSON value as text will spell it, including what `serde_json::Value` cannot hold.
#[derive(Clone, Debug)]
enum J {
    Null,
    Bool(bool),
    Num(&'static str),
    Str(String),
    Arr(Vec<J>),
    /// Members in order; a key may repeat, and `true` spells its first letter as `\u00XX`.
    Obj(Vec<(String, bool, J)>),
    /// Written as is (broken tokens, deep nesting).
    Raw(String),
}

fn obj(members: Vec<(&str, J)>) -> J {
    J::Obj(
        members
            .into_iter()
            .map(|(k, v)| (k.to_string(), false, v))
            .collect(),
    )
}

/// How a line spaces its tokens.
#[derive(Clone, Copy, Debug)]
struct Style {
    comma: &'static str,
    colon: &'static str,
}

fn render(v: &J, style: Style, out: &mut String) {
    match v {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Num(n) => out.push_str(n),
        J::Str(t) => out.push_str(&serde_json::to_string(t).expect("a string serialises")),
        J::Raw(t) => out.push_str(t),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(style.comma);
                }
                render(item, style, out);
            }
            out.push(']');
        }
        J::Obj(members) => {
            out.push('{');
            for (i, (k, escaped, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(style.comma);
                }
                let key = serde_json::to_string(k).expect("a key serialises");
                match k.chars().next() {
                    Some(c) if *escaped && c.is_ascii_alphanumeric() => {
                        let _ = write!(out, "\"\\u{:04x}{}", c as u32, &key[2..]);
                    }
                    _ => out.push_str(&key),
                }
                out.push_str(style.colon);
                render(item, style, out);
            }
            out.push('}');
        }
    }
}

fn to_text(v: &J, style: Style) -> String {
    let mut out = String::new();
    render(v, style, &mut out);
    out
}

/// The value serde_json reads from the text (the last of repeated keys wins), or null.
fn to_value(v: &J) -> Value {
    serde_json::from_str(&to_text(
        v,
        Style {
            comma: ",",
            colon: ":",
        },
    ))
    .unwrap_or(Value::Null)
}

fn style() -> impl Strategy<Value = Style> {
    prop::sample::select(vec![
        Style {
            comma: ",",
            colon: ":",
        },
        Style {
            comma: ", ",
            colon: ": ",
        },
        Style {
            comma: " ,\t",
            colon: " :",
        },
    ])
}

// ---------------------------------------------------------------------------------------
// Strategies: text, values, and the parts of a case
// ---------------------------------------------------------------------------------------

/// Words the readers care about, so generated fields collide with real names and values.
const WORDS: &[&str] = &[
    "",
    " ",
    "x",
    "T001",
    "a",
    "b",
    "c",
    "refund",
    "Refund",
    "submitted",
    "user",
    "assistant",
    "system",
    "tool",
    "script",
    "static",
    "dynamic",
    "single",
    "line-1",
    "line-2",
    "line-3",
    "line-2-invalid",
    "a::b",
    " padded ",
    "tab\there",
    "nul\u{0}",
    "é",
    "日本語",
    "😀",
    "\u{202e}rtl",
    "e\u{301}",
    "search",
    "create_expense",
    "mcp__create_expense",
    "expense.create_expense",
    "scripts:check",
    "scripts:",
    "agents:judge",
    "agents:",
    "regex:^a",
    "regex:(",
    "{\"a\": 1}",
    "[1, 2]",
    "```json\n{\"a\": 1}\n```",
    "30s",
    "-1",
];

fn text() -> BoxedStrategy<String> {
    prop_oneof![
        6 => prop::sample::select(WORDS).prop_map(str::to_string),
        3 => "[a-zA-Z0-9 _.:-]{0,12}",
        2 => any::<String>(),
        1 => "\\PC{0,20}",
        1 => (0usize..3, 1_000usize..20_000).prop_map(|(c, n)| ["x", "é", "😀"][c].repeat(n)),
    ]
    .boxed()
}

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "20",
    "0.5",
    "1.5",
    "2.5",
    "-0",
    "-0.0",
    "10000",
    "10001",
    "600000",
    "600001",
    "1e-400",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "3.0",
    "5",
];

fn scalar() -> BoxedStrategy<J> {
    prop_oneof![
        1 => Just(J::Null),
        1 => any::<bool>().prop_map(J::Bool),
        2 => prop::sample::select(NUMBERS).prop_map(J::Num),
        4 => text().prop_map(J::Str),
    ]
    .boxed()
}

fn key() -> BoxedStrategy<String> {
    prop_oneof![
        3 => prop::sample::select(CASE_KEYS.to_vec()).prop_map(str::to_string),
        2 => prop::sample::select(ALL_ASSERTION_KEYS).prop_map(str::to_string),
        2 => text(),
    ]
    .boxed()
}

/// Any JSON, a few levels deep.
fn json() -> BoxedStrategy<J> {
    scalar()
        .prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(J::Arr),
                prop::collection::vec((key(), any::<bool>(), inner), 0..4).prop_map(J::Obj),
            ]
        })
        .boxed()
}

/// Nesting past the parser's recursion limit, or just under it.
fn deep() -> BoxedStrategy<J> {
    (1usize..300, 0usize..3)
        .prop_map(|(n, kind)| {
            J::Raw(match kind {
                0 => format!("{}1{}", "[".repeat(n), "]".repeat(n)),
                1 => format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n)),
                _ => format!("{}{{}}{}", "[{\"a\":".repeat(n), "}]".repeat(n)),
            })
        })
        .boxed()
}

/// Broken or unusual tokens.
fn raw() -> BoxedStrategy<J> {
    prop::sample::select(vec![
        "1e400",
        "-1e400",
        "\"\\ud800\"",
        "\"\\udc00\\ud800\"",
        "\"\\x\"",
        "\"unterminated",
        "\"é",
        "\"éé",
        "\"日本",
        "tru",
        "nul",
        "NaN",
        "Infinity",
        "-",
        "1.",
        ".5",
        "01",
        "1e",
        "\"\\u00\"",
        "{",
        "[",
        "}",
        "]",
        "{\"a\"}",
        "{\"a\":}",
        "[1,]",
        "{,}",
        "\"\t\"",
        "\"\u{7f}\"",
        "//",
        "",
    ])
    .prop_map(|t| J::Raw(t.to_string()))
    .boxed()
}

/// A value for a field: usually `good`, now and then another type or a broken token.
fn field(good: BoxedStrategy<J>) -> BoxedStrategy<J> {
    prop_oneof![
        80 => good,
        1 => json(),
        1 => raw(),
    ]
    .boxed()
}

fn pick(items: &'static [&'static str]) -> BoxedStrategy<J> {
    prop::sample::select(items)
        .prop_map(|t| J::Str(t.to_string()))
        .boxed()
}

/// An object member.
type Member = (String, bool, J);

/// Members an object must have, and those it may have with their probabilities.
type Shape = (
    Vec<BoxedStrategy<Member>>,
    Vec<(f64, BoxedStrategy<Member>)>,
);

fn member(key: &'static str, value: BoxedStrategy<J>) -> BoxedStrategy<Member> {
    value.prop_map(move |v| (key.to_string(), false, v)).boxed()
}

/// Each member with its own probability.
fn some_of(members: Vec<(f64, BoxedStrategy<Member>)>) -> BoxedStrategy<Vec<Member>> {
    members
        .into_iter()
        .map(|(p, m)| prop::option::weighted(p, m))
        .collect::<Vec<_>>()
        .prop_map(|ms| ms.into_iter().flatten().collect())
        .boxed()
}

/// An object of `required`, then `optional`, then rare noise; one key may be spelled
/// with a `\u` escape.
fn object(
    required: Vec<BoxedStrategy<Member>>,
    optional: Vec<(f64, BoxedStrategy<Member>)>,
) -> BoxedStrategy<J> {
    (
        required,
        some_of(optional),
        prop::option::weighted(0.02, (key(), json())),
        prop::option::weighted(0.03, any::<usize>()),
    )
        .prop_map(|(mut members, optional, extra, escape)| {
            members.extend(optional);
            if let Some((k, v)) = extra {
                members.push((k, false, v));
            }
            if let (Some(i), false) = (escape, members.is_empty()) {
                let n = members.len();
                members[i % n].1 = true;
            }
            J::Obj(members)
        })
        .boxed()
}

fn boolean() -> BoxedStrategy<J> {
    field(any::<bool>().prop_map(J::Bool).boxed())
}

fn string() -> BoxedStrategy<J> {
    field(text().prop_map(J::Str).boxed())
}

const DURATIONS: &[&str] = &[
    "30s",
    "2m",
    "1m30s",
    "500ms",
    "1.5s",
    "1h",
    "10s",
    "0s",
    "0ms",
    "30",
    "5 minutes",
    "-1s",
    ".s",
    "1..2s",
    "1e3s",
    "99999999h",
    "8761h",
    "1h1h",
    "",
    " 2m ",
    "0.0001s",
    "1.2345s",
    "59.96s",
];

fn duration_text() -> BoxedStrategy<J> {
    field(
        prop_oneof![
            6 => prop::sample::select(&DURATIONS[..7]).prop_map(|t| J::Str(t.to_string())),
            3 => pick(DURATIONS),
            1 => text().prop_map(J::Str),
        ]
        .boxed(),
    )
}

const ROLES: &[&str] = &["user", "assistant", "system", "tool", "User", "bot", ""];

fn message() -> BoxedStrategy<J> {
    let role = prop_oneof![6 => Just(J::Str("user".into())), 1 => pick(ROLES)].boxed();
    object(
        vec![member("role", field(role))],
        vec![
            (0.9, member("content", string())),
            (0.1, member("name", string())),
            (0.1, member("tool_call_id", string())),
            (0.1, member("tool_calls", json())),
        ],
    )
}

fn input() -> BoxedStrategy<J> {
    field(
        prop_oneof![
            6 => text().prop_map(J::Str),
            2 => message(),
            2 => prop::collection::vec(
                prop_oneof![text().prop_map(J::Str), message()],
                1..4
            )
            .prop_map(J::Arr),
        ]
        .boxed(),
    )
}

const ASSERTION_TYPES: &[&str] = &[
    "contains",
    "not_contains",
    "equals",
    "regex",
    "json_path",
    "type",
    "tool_called",
    "tool_result",
    "script",
    "agent",
    "llm_judge",
    "latency",
    "contians",
    "",
];

const ALL_ASSERTION_KEYS: &[&str] = &[
    "type",
    "negate",
    "message",
    "description",
    "id",
    "value",
    "case_sensitive",
    "pattern",
    "path",
    "name",
    "arguments",
    "tool",
    "result",
    "use",
    "options",
    "metadata",
    "prompt",
    "expected",
    "capabilities",
    "json_schema",
    "temperature",
];

const PATTERNS: &[&str] = &[
    "refund",
    "(?i)REFUND",
    "^$",
    "a+",
    "\\d+",
    "(?P<n>x)",
    ".*",
    "(",
    "[z-a]",
    "a{99999999}",
    "\\",
    "é|😀",
    "",
];

/// A regex: usually one that compiles.
fn pattern() -> BoxedStrategy<J> {
    prop_oneof![
        10 => prop::sample::select(&PATTERNS[..5]).prop_map(|t| J::Str(t.to_string())),
        2 => pick(PATTERNS),
        1 => "[a-z()\\[\\]{}*+?|^$\\\\.0-9,:<>=!-]{0,12}".prop_map(J::Str),
    ]
    .boxed()
}

const JSON_PATHS: &[&str] = &[
    "$",
    "$.a",
    "a",
    "a.b",
    "$.a[0]",
    "[0]",
    "$..a",
    "$.*",
    "$[?@.a > 1]",
    "$[-1]",
    "$[0:2]",
    "items[0].name",
    "$['a']",
    "$[?length(@) > 1]",
    "$[?search(@, 'a')]",
    "$[1:0:-1]",
    "$..*",
    "$..[?@]",
    "$[?(@.a == 'x')]",
    "$[?match(@.a, '[')]",
    "$[::0]",
    "$[9223372036854775807]",
    "$[-9223372036854775808]",
    "$.",
    "$[",
    "$.a[",
    "",
    " ",
];

/// A JSONPath: usually one that compiles.
fn json_path() -> BoxedStrategy<J> {
    prop_oneof![
        10 => prop::sample::select(&JSON_PATHS[..18]).prop_map(|t| J::Str(t.to_string())),
        2 => pick(JSON_PATHS),
        1 => "[$@.\\[\\]?*:'\"a-z0-9 ()=<>!&|,-]{0,16}".prop_map(J::Str),
    ]
    .boxed()
}

fn pick_num(items: &'static [&'static str]) -> BoxedStrategy<J> {
    prop::sample::select(items).prop_map(J::Num).boxed()
}

const TOOL_NAMES: &[&str] = &[
    "search",
    "create_expense",
    "expense.create_expense",
    "mcp__create_expense",
    "",
    "x",
];

const TYPE_NAMES: &[&str] = &[
    "string", "number", "boolean", "array", "object", "null", "nothing", "String",
];

/// An expected value for tool arguments or results: JSON, or with `regex:` patterns.
fn matcher_value() -> BoxedStrategy<J> {
    prop_oneof![
        3 => json(),
        1 => pick(&["regex:^a", "regex:(", "regex:", "regex:\\d"]),
        1 => (text(), json()).prop_map(|(t, v)| obj(vec![("q", J::Str(format!("regex:{t}"))), ("n", v)])),
    ]
    .boxed()
}

/// The members an assertion of type `t` needs, and those it may have.
fn assertion_members(t: &'static str) -> Shape {
    let criteria = || {
        text()
            .prop_map(|c| obj(vec![("criteria", J::Str(c))]))
            .boxed()
    };
    match t {
        "contains" | "not_contains" => (
            vec![member(
                "value",
                field(
                    prop_oneof![
                        3 => text().prop_map(J::Str),
                        1 => prop::sample::select(NUMBERS).prop_map(J::Num),
                        1 => any::<bool>().prop_map(J::Bool),
                    ]
                    .boxed(),
                ),
            )],
            vec![(0.3, member("case_sensitive", boolean()))],
        ),
        "equals" => (
            vec![member(
                "value",
                prop_oneof![json(), text().prop_map(J::Str)].boxed(),
            )],
            vec![],
        ),
        "regex" => (
            vec![prop_oneof![
                3 => member("pattern", field(pattern())),
                1 => member("value", field(pattern())),
            ]
            .boxed()],
            vec![],
        ),
        "json_path" => (
            vec![member("path", field(json_path())), member("value", json())],
            vec![],
        ),
        "type" => (
            vec![member("value", field(pick(TYPE_NAMES)))],
            vec![(0.5, member("path", field(json_path())))],
        ),
        "tool_called" => (
            vec![],
            vec![
                (0.5, member("name", field(pick(TOOL_NAMES)))),
                (
                    0.4,
                    member(
                        "value",
                        field(
                            prop_oneof![
                                pick(TOOL_NAMES),
                                prop::collection::vec(pick(TOOL_NAMES), 0..3).prop_map(J::Arr),
                                (pick(TOOL_NAMES), matcher_value()).prop_map(|(n, a)| {
                                    obj(vec![("name", n), ("arguments", a)])
                                }),
                            ]
                            .boxed(),
                        ),
                    ),
                ),
                (0.3, member("arguments", matcher_value())),
            ],
        ),
        "tool_result" => (
            vec![prop_oneof![
                (pick(TOOL_NAMES), matcher_value()).prop_map(|(t, r)| (
                    "value".to_string(),
                    false,
                    obj(vec![("tool", t), ("result", r)])
                )),
                member("tool", field(pick(TOOL_NAMES))),
            ]
            .boxed()],
            vec![(0.9, member("result", matcher_value()))],
        ),
        "script" => (
            vec![member(
                "use",
                field(
                    prop_oneof![6 => pick(&["scripts:check"]), 1 => pick(&["scripts:", "check"])]
                        .boxed(),
                ),
            )],
            vec![
                (0.3, member("value", json())),
                (0.2, member("metadata", json())),
                (
                    0.1,
                    member(
                        "options",
                        json().prop_map(|m| obj(vec![("metadata", m)])).boxed(),
                    ),
                ),
            ],
        ),
        "agent" => (
            vec![prop_oneof![
                3 => member(
                    "options",
                    criteria().prop_map(|m| obj(vec![("metadata", m)])).boxed()
                ),
                1 => member("metadata", field(criteria())),
                1 => member("value", string()),
            ]
            .boxed()],
            vec![(
                0.5,
                member(
                    "use",
                    field(
                        prop_oneof![6 => pick(&["agents:judge"]), 1 => pick(&["agents:", "judge"])]
                            .boxed(),
                    ),
                ),
            )],
        ),
        "llm_judge" => (
            vec![member("prompt", string())],
            vec![
                (0.2, member("expected", json())),
                (
                    0.2,
                    member(
                        "capabilities",
                        field(
                            prop::collection::vec(text().prop_map(J::Str), 0..3)
                                .prop_map(J::Arr)
                                .boxed(),
                        ),
                    ),
                ),
                (0.2, member("json_schema", json())),
                (
                    0.2,
                    member(
                        "temperature",
                        prop_oneof![
                            4 => pick_num(&["0", "0.5", "1", "2", "1.5"]),
                            1 => prop::sample::select(NUMBERS).prop_map(J::Num),
                        ]
                        .boxed(),
                    ),
                ),
            ],
        ),
        "latency" => (
            vec![],
            vec![
                (
                    0.7,
                    member("max_ms", pick_num(&["0", "1000", "-1", "1.5", "1e3"])),
                ),
                (
                    0.5,
                    member("max_first_token_ms", pick_num(&["0", "250", "-5", "2.5"])),
                ),
            ],
        ),
        _ => (vec![], vec![(0.5, member("value", json()))]),
    }
}

/// One assertion: a type, what that type needs and may have, `negate` and `message`.
fn assertion() -> BoxedStrategy<J> {
    let name = prop_oneof![
        12 => prop::sample::select(&ASSERTION_TYPES[..12]),
        1 => prop::sample::select(ASSERTION_TYPES),
    ];
    let typed = name.prop_flat_map(|t| {
        let (required, mut optional) = assertion_members(t);
        optional.extend([
            (0.4, member("negate", boolean())),
            (0.1, member("message", string())),
            (0.05, member("description", string())),
            (0.05, member("id", string())),
        ]);
        let mut all = vec![member("type", Just(J::Str(t.to_string())).boxed())];
        all.extend(required);
        object(all, optional)
    });
    prop_oneof![
        20 => typed,
        1 => pick(ASSERTION_TYPES),
        1 => json(),
    ]
    .boxed()
}

fn assertions() -> BoxedStrategy<J> {
    prop_oneof![
        6 => prop::collection::vec(assertion(), 1..4).prop_map(J::Arr),
        1 => Just(J::Arr(Vec::new())),
        2 => assertion(),
        1 => Just(J::Null),
    ]
    .boxed()
}

/// A checkpoint's check: one assertion or a non-empty list.
fn some_assertions() -> BoxedStrategy<J> {
    prop_oneof![
        3 => assertion(),
        3 => prop::collection::vec(assertion(), 1..3).prop_map(J::Arr),
        1 => assertions(),
    ]
    .boxed()
}

fn turn() -> BoxedStrategy<J> {
    field(object(
        vec![member("input", input())],
        vec![
            (0.6, member("assertions", assertions())),
            (0.05, member("assert", assertions())),
            (0.1, member("options", json())),
            (0.1, member("attachments", json())),
            (0.1, member("name", string())),
        ],
    ))
}

const CHECKPOINT_IDS: &[&str] = &["a", "b", "c", "d", ""];

/// The `i`th checkpoint of a list: usually with its own id, and `after` naming earlier ones.
fn checkpoint(i: usize) -> BoxedStrategy<J> {
    let own = CHECKPOINT_IDS[i];
    let earlier = &CHECKPOINT_IDS[..i.max(1)];
    let after = prop_oneof![
        3 => prop::sample::select(earlier).prop_map(|t| J::Str(t.to_string())),
        2 => prop::collection::vec(prop::sample::select(earlier).prop_map(|t| J::Str(t.to_string())), 0..3).prop_map(J::Arr),
        1 => pick(CHECKPOINT_IDS),
        1 => prop::collection::vec(pick(CHECKPOINT_IDS), 0..3).prop_map(J::Arr),
    ]
    .boxed();
    let check = prop_oneof![
        6 => member("assertion", some_assertions()),
        1 => member("assertions", some_assertions()),
        1 => member("assert", assertions()),
    ]
    .boxed();
    field(object(
        vec![
            member(
                "id",
                field(
                    prop_oneof![8 => Just(J::Str(own.to_string())), 1 => pick(CHECKPOINT_IDS)]
                        .boxed(),
                ),
            ),
            check,
        ],
        vec![
            (0.3, member("after", field(after))),
            (0.1, member("required", boolean())),
            (0.1, member("forbidden", boolean())),
            (0.1, member("description", string())),
        ],
    ))
}

fn checkpoints() -> BoxedStrategy<J> {
    field(
        prop_oneof![
            8 => (1usize..5).prop_flat_map(|n| (0..n).map(checkpoint).collect::<Vec<_>>()),
            1 => prop::collection::vec(checkpoint(0), 0..3),
        ]
        .prop_map(J::Arr)
        .boxed(),
    )
}

fn simulator() -> BoxedStrategy<J> {
    let rule = prop_oneof![
        6 => (pattern(), text()).prop_map(|(w, t)| obj(vec![("when", w), ("say", J::Str(t))])),
        4 => text().prop_map(|t| obj(vec![("say", J::Str(t))])),
        2 => prop::bool::weighted(0.9).prop_map(|b| obj(vec![("goal_achieved", J::Bool(b))])),
        1 => json(),
    ];
    let scripted = object(
        vec![
            member("use", Just(J::Str("script".into())).boxed()),
            member(
                "script",
                field(prop::collection::vec(rule, 1..4).prop_map(J::Arr).boxed()),
            ),
        ],
        vec![(0.2, member("show_checkpoints", boolean()))],
    );
    let modelled = object(
        vec![],
        vec![
            (
                0.5,
                member("use", field(pick(&["llm", "agents:sim", "script"]))),
            ),
            (0.5, member("persona", string())),
            (0.5, member("goal", string())),
            (0.2, member("options", json())),
            (0.2, member("show_checkpoints", boolean())),
        ],
    );
    field(prop_oneof![3 => scripted, 1 => modelled].boxed())
}

/// One tool mock, mostly in the shape `setup.mocks` takes.
fn mock() -> BoxedStrategy<J> {
    let when = object(
        vec![],
        vec![
            (0.3, member("args", json())),
            (0.3, member("partialArgs", json())),
            (0.2, member("input", json())),
            (0.3, member("matcher", field(pattern()))),
            (0.02, member("context", json())),
        ],
    );
    let metadata = object(
        vec![],
        vec![
            (
                0.5,
                member(
                    "delay",
                    prop::sample::select(NUMBERS).prop_map(J::Num).boxed(),
                ),
            ),
            (
                0.5,
                member(
                    "probability",
                    prop::sample::select(NUMBERS).prop_map(J::Num).boxed(),
                ),
            ),
        ],
    );
    let answer = prop_oneof![
        4 => member("response", json()),
        1 => member(
            "error",
            prop_oneof![
                text().prop_map(J::Str),
                (text(), text()).prop_map(|(c, m)| obj(vec![("code", J::Str(c)), ("message", J::Str(m))])),
                json(),
            ]
            .boxed(),
        ),
    ]
    .boxed();
    field(object(
        vec![member("method", field(pick(TOOL_NAMES))), answer],
        vec![
            (0.4, member("when", field(when))),
            (0.2, member("metadata", field(metadata))),
            (0.1, member("service", string())),
            (0.1, member("response", json())),
            (0.02, member("responseFn", json())),
        ],
    ))
}

fn mocks() -> BoxedStrategy<J> {
    field(prop::collection::vec(mock(), 0..4).prop_map(J::Arr).boxed())
}

const IDS: &[&str] = &[
    "T001",
    "T002",
    "a",
    "line-1",
    "line-2",
    "line-3",
    "line-4",
    "line-2-invalid",
    "line-3-invalid",
    "é",
];

const BAD_IDS: &[&str] = &["", " T001", "a::b", "tab\t", "\u{7f}"];

fn id() -> BoxedStrategy<J> {
    field(prop_oneof![20 => pick(IDS), 1 => pick(BAD_IDS)].boxed())
}

/// The members any case may have besides its mode's.
fn case_extras() -> Vec<(f64, BoxedStrategy<Member>)> {
    vec![
        (0.1, member("name", string())),
        (0.1, member("description", string())),
        (
            0.1,
            member(
                "tags",
                field(
                    prop::collection::vec(text().prop_map(J::Str), 0..3)
                        .prop_map(J::Arr)
                        .boxed(),
                ),
            ),
        ),
        (0.15, member("timeout", duration_text())),
        (0.05, member("skip", boolean())),
        (0.05, member("golden", boolean())),
        (0.05, member("agent", string())),
        (0.05, member("before", string())),
        (0.05, member("after", string())),
        (0.05, member("options", field(json()))),
        (0.05, member("metadata", field(json()))),
        (0.03, member("user", json())),
        (0.03, member("team", json())),
        (
            0.05,
            member(
                "interactive",
                field(object(
                    vec![],
                    vec![
                        (0.8, member("enabled", boolean())),
                        (0.5, member("timeout", duration_text())),
                    ],
                )),
            ),
        ),
        (
            0.1,
            member(
                "setup",
                field(mocks().prop_map(|m| obj(vec![("mocks", m)])).boxed()),
            ),
        ),
    ]
}

/// A case in one of the three modes, with its usual members.
fn shaped_case() -> BoxedStrategy<J> {
    let single = {
        let mut optional = vec![
            (0.6, member("assertions", assertions())),
            (0.03, member("assert", assertions())),
            (0.05, member("expected", json())),
            (0.05, member("mode", field(pick(&["single", "static"])))),
        ];
        optional.extend(case_extras());
        object(vec![member("id", id()), member("input", input())], optional)
    };
    let static_ = {
        let mut optional = vec![
            (0.5, member("final_assertions", assertions())),
            (0.1, member("mode", field(pick(&["static", "single"])))),
        ];
        optional.extend(case_extras());
        object(
            vec![
                member("id", id()),
                member(
                    "turns",
                    field(prop::collection::vec(turn(), 1..4).prop_map(J::Arr).boxed()),
                ),
            ],
            optional,
        )
    };
    let dynamic = {
        let mut optional = vec![
            (
                0.3,
                member(
                    "max_turns",
                    field(prop::sample::select(NUMBERS).prop_map(J::Num).boxed()),
                ),
            ),
            (0.3, member("input", input())),
            (0.1, member("mode", field(pick(&["dynamic", "static"])))),
        ];
        optional.extend(case_extras());
        object(
            vec![
                member("id", id()),
                member("simulator", simulator()),
                member("checkpoints", checkpoints()),
            ],
            optional,
        )
    };
    prop_oneof![3 => single, 2 => static_, 2 => dynamic].boxed()
}

/// Free-form: known keys in any mix, repeated, with any values, deep or broken.
fn free_case() -> BoxedStrategy<J> {
    let any_member = prop_oneof![
        3 => prop::sample::select(CASE_KEYS.to_vec()).prop_flat_map(|k| {
            let v = match k {
                "id" => id(),
                "input" => input(),
                "assertions" | "assert" | "final_assertions" => assertions(),
                "turns" => prop::collection::vec(turn(), 0..3).prop_map(J::Arr).boxed(),
                "simulator" => simulator(),
                "checkpoints" => checkpoints(),
                "timeout" => duration_text(),
                _ => json(),
            };
            prop_oneof![4 => v, 1 => json(), 1 => raw(), 1 => deep()]
                .prop_map(move |v| (k.to_string(), false, v))
        }),
        1 => prop::sample::select(vec![
            "imput", "assertion", "asserts", "turn", "checkpoint", "simulater", "id ", "ID", "zzzzzz",
        ])
        .prop_flat_map(|k| json().prop_map(move |v| (k.to_string(), false, v))),
        1 => (key(), any::<bool>(), json()),
    ];
    prop::collection::vec(any_member, 0..6)
        .prop_map(J::Obj)
        .boxed()
}

/// A whole case: usually shaped like a real one, sometimes free-form.
fn case() -> BoxedStrategy<J> {
    prop_oneof![12 => shaped_case(), 2 => free_case(), 1 => json()].boxed()
}

/// A text edit: at a position (taken modulo the length), one small change.
#[derive(Clone, Debug)]
enum Edit {
    Delete(usize),
    Duplicate(usize),
    Insert(usize, char),
    Swap(usize),
    Truncate(usize),
}

fn edit() -> BoxedStrategy<Edit> {
    let c = prop_oneof![
        4 => prop::sample::select(vec!['"', '{', '}', '[', ']', ',', ':', '\\', ' ', '\t', '0', 'e', '-']),
        1 => any::<char>(),
    ];
    prop_oneof![
        3 => any::<usize>().prop_map(Edit::Delete),
        2 => any::<usize>().prop_map(Edit::Duplicate),
        3 => (any::<usize>(), c).prop_map(|(i, c)| Edit::Insert(i, c)),
        1 => any::<usize>().prop_map(Edit::Swap),
        1 => any::<usize>().prop_map(Edit::Truncate),
    ]
    .boxed()
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for e in edits {
        let n = chars.len();
        match *e {
            Edit::Delete(i) if n > 0 => {
                chars.remove(i % n);
            }
            Edit::Duplicate(i) if n > 0 => {
                let c = chars[i % n];
                chars.insert(i % n, c);
            }
            Edit::Insert(i, c) => chars.insert(i % (n + 1), c),
            Edit::Swap(i) if n > 1 => chars.swap(i % (n - 1), i % (n - 1) + 1),
            Edit::Truncate(i) => chars.truncate(i % (n + 1)),
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// A case line as text: rendered, sometimes edited, never containing a line break.
fn case_line() -> BoxedStrategy<String> {
    (
        case(),
        style(),
        prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(edit(), 1..4)],
    )
        .prop_map(|(c, st, edits)| {
            apply(&to_text(&c, st), &edits)
                .replace(['\n', '\r'], " ")
                .replace(['\u{2028}'], "\\u2028")
        })
        .boxed()
}

/// One line of a suite file, as bytes.
fn suite_line() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        12 => case_line().prop_map(String::into_bytes),
        1 => pick(&["", "   ", "\t", "\u{feff}", "\u{a0}"]).prop_map(|j| match j {
            J::Str(t) => t.into_bytes(),
            _ => Vec::new(),
        }),
        1 => ("[^\n]{0,20}").prop_map(|t| format!("  // {t}").into_bytes()),
        1 => (case_line(), any::<usize>(), prop::sample::select(vec![
            &b"\xff"[..], b"\xc3", b"\xe6\x97", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf",
        ]))
            .prop_map(|(line, at, bad)| {
                let mut bytes = line.into_bytes();
                let at = at % (bytes.len() + 1);
                bytes.splice(at..at, bad.iter().copied());
                bytes
            }),
        1 => prop::collection::vec(any::<u8>(), 0..40)
            .prop_map(|b| b.into_iter().filter(|&c| c != b'\n').collect()),
        1 => (any::<usize>(), 0usize..3).prop_map(|(at, k)| {
            // A comment with bytes that are not UTF-8 after the slashes.
            let mut b = b"// note ".to_vec();
            b.insert(8.min(at % 9), [0xff, 0xc3, 0x80][k]);
            b
        }),
    ]
    .boxed()
}

/// A suite file: lines joined by LF or CRLF, maybe a byte order mark and a final newline.
fn suite_file() -> BoxedStrategy<Vec<u8>> {
    (
        prop::collection::vec(suite_line(), 0..8),
        any::<bool>(),
        prop::bool::weighted(0.1),
        any::<bool>(),
    )
        .prop_map(|(lines, crlf, bom, final_newline)| {
            let mut out = Vec::new();
            if bom {
                out.extend_from_slice(b"\xEF\xBB\xBF");
            }
            let sep: &[u8] = if crlf { b"\r\n" } else { b"\n" };
            for (i, l) in lines.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(sep);
                }
                out.extend_from_slice(l);
            }
            if final_newline && !lines.is_empty() {
                out.extend_from_slice(sep);
            }
            out
        })
        .boxed()
}

/// File contents, shown as text with bad bytes escaped when a property fails.
#[derive(Clone)]
struct Bytes(Vec<u8>);

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        for chunk in self.0.utf8_chunks() {
            out.push_str(chunk.valid());
            for b in chunk.invalid() {
                let _ = write!(out, "\\x{b:02X}");
            }
        }
        write!(f, "b{out:?}")
    }
}

fn bytes(st: BoxedStrategy<Vec<u8>>) -> BoxedStrategy<Bytes> {
    st.prop_map(Bytes).boxed()
}

// ---------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------

/// The lines a suite reader sees: split at `\n`, one `\r` before it dropped, no empty line
/// after a final line break; each with its text (bad bytes shown as U+FFFD).
fn suite_lines(bytes: &[u8]) -> Vec<String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.is_empty() {
        return Vec::new();
    }
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let parts: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    let last = parts.len() - 1;
    parts
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            // A `\r` counts as part of the last line when no `\n` follows it.
            let ended = i < last || body.len() < bytes.len();
            let l = if ended {
                l.strip_suffix(b"\r").unwrap_or(l)
            } else {
                l
            };
            String::from_utf8_lossy(l).into_owned()
        })
        .collect()
}

/// Whether the reader skips the line: blank, or a `//` comment.
fn skipped(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with("//")
}

/// The suite reader's contract on any bytes.
fn check_suite(bytes: &[u8]) -> Result<(), TestCaseError> {
    let shown = Arc::new(PathBuf::from("agent-tests/fuzz.jsonl"));
    let loaded = parse_suite_bytes("fuzz", Path::new("agent-tests/fuzz.jsonl"), shown, bytes);
    let lines = suite_lines(bytes);
    let expected: Vec<(usize, &String)> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !skipped(l))
        .collect();
    prop_assert_eq!(
        loaded.len(),
        expected.len(),
        "one entry per case line; lines: {:?}",
        lines
    );
    let mut names = HashSet::new();
    for (l, (n, line)) in loaded.iter().zip(&expected) {
        prop_assert_eq!(&l.suite, "fuzz");
        prop_assert!(
            l.trial.starts_with("fuzz::") && l.trial.len() > "fuzz::".len(),
            "trial name {:?}",
            l.trial
        );
        match &l.entry {
            Ok(c) => {
                prop_assert_eq!(c.location.line, *n);
                prop_assert_eq!(c.location.column, 1);
                prop_assert_eq!(&l.trial, &format!("fuzz::{}", c.id));
            }
            Err(e) => {
                let width = line.chars().count() + 1;
                prop_assert_eq!(e.location.line, *n, "line of {}", e);
                prop_assert!(
                    (1..=width).contains(&e.location.column),
                    "column {} outside 1..={} for line {:?}: {}",
                    e.location.column,
                    width,
                    line,
                    e
                );
                prop_assert!(!e.message.is_empty());
                let shown = e.to_string();
                let prefix = format!("agent-tests/fuzz.jsonl:{n}:{}: ", e.location.column);
                prop_assert!(shown.starts_with(&prefix), "{}", shown);
            }
        }
        if !names.insert(l.trial.clone()) {
            return Err(TestCaseError::fail(format!(
                "two trials are named {:?}; lines: {lines:?}",
                l.trial
            )));
        }
    }
    Ok(())
}

fn at_line(n: usize) -> Location {
    Location {
        file: Arc::new(PathBuf::from("fuzz.jsonl")),
        line: n,
        column: 1,
    }
}

/// A case line holding one assertion, parsed: its assertions, when it parses.
fn parse_assertion(a: &J) -> Option<Vec<agentest::__private::assertion::Assertion>> {
    let line = format!(
        "{{\"id\":\"a\",\"input\":\"x\",\"assertions\":[{}]}}",
        to_text(
            a,
            Style {
                comma: ",",
                colon: ":"
            }
        )
    );
    match parse_case(&line, at_line(1)) {
        Ok(c) => match c.mode {
            Mode::Single { assertions, .. } => Some(assertions),
            other => panic!("a line with input only parsed as {}", other.name()),
        },
        Err(_) => None,
    }
}

/// The same assertion with `negate` flipped, when its `negate` is a boolean or absent.
fn negated(a: &J) -> Option<J> {
    let J::Obj(members) = a else { return None };
    let mut current = false;
    let mut kept = Vec::new();
    for (k, esc, v) in members {
        if k == "negate" {
            match v {
                J::Bool(b) => current = *b,
                _ => return None,
            }
        } else {
            kept.push((k.clone(), *esc, v.clone()));
        }
    }
    kept.push(("negate".to_string(), false, J::Bool(!current)));
    Some(J::Obj(kept))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
}

/// Evaluation's contract for one assertion (as JSON) against one reply.
fn check_evaluation(
    rt: &tokio::runtime::Runtime,
    a: &J,
    reply: &Reply,
) -> Result<(), TestCaseError> {
    let Some(parsed) = parse_assertion(a) else {
        return Ok(());
    };
    let flipped = negated(a).and_then(|n| parse_assertion(&n));
    let scripts = Scripts::default();
    let conversation = vec![Message::user("x"), reply.to_message()];
    let subject = Subject {
        reply,
        input: "x",
        conversation: &conversation,
        latency: &[Latency {
            turn: 1,
            first_token_ms: 250,
            reply_ms: 1000,
        }],
    };
    rt.block_on(async {
        let env = EvalEnv {
            scripts: &scripts,
            metadata: &Value::Null,
            deadline: tokio::time::Instant::now() + Duration::from_secs(5),
            judges: None,
        };
        for (i, assertion) in parsed.iter().enumerate() {
            let verdict = evaluate(assertion, subject, &env).await;
            let deterministic = !matches!(assertion.type_name(), "script" | "agent" | "llm_judge");
            let Ok(verdict) = verdict else {
                prop_assert!(
                    !deterministic,
                    "a {} assertion could not be evaluated: {:?}",
                    assertion.type_name(),
                    verdict
                );
                continue;
            };
            prop_assert!(
                deterministic,
                "{} evaluated without a judge or script",
                assertion.type_name()
            );
            // Without a judge, every check decides: never inconclusive.
            prop_assert_eq!(
                verdict.passed,
                Some(verdict.detail.is_none()),
                "{:?}",
                verdict
            );
            let Some(flipped) = flipped.as_ref().and_then(|f| f.get(i)) else {
                continue;
            };
            prop_assert_eq!(flipped.negate, !assertion.negate);
            let other = evaluate(flipped, subject, &env)
                .await
                .map_err(|e| TestCaseError::fail(format!("the negated twin failed to run: {e}")))?;
            let unevaluable = verdict.passed == Some(false)
                && verdict
                    .detail
                    .as_deref()
                    .is_some_and(|d| d.contains("cannot evaluate"))
                && matches!(assertion.type_name(), "json_path" | "type");
            if unevaluable {
                // A check that cannot look at the reply fails either way.
                prop_assert!(
                    other.passed == Some(false),
                    "negate turned an unevaluable check into a pass: {:?}",
                    other
                );
            } else {
                prop_assert_eq!(
                    other.passed,
                    verdict.passed.map(|p| !p),
                    "negate did not invert {:?} / {:?}",
                    verdict,
                    other
                );
            }
        }
        Ok(())
    })
}

/// `Cassette::open`'s contract for one file's bytes.
fn check_cassette(dir: &Path, bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = dir.join("case.jsonl");
    std::fs::write(&path, bytes).expect("write the cassette");
    let shown = display_path(&path).display().to_string();
    // What the reader should find: the first line that is not a valid entry.
    let text = std::str::from_utf8(bytes).ok();
    let first_bad = text.and_then(|t| {
        t.lines().enumerate().find_map(|(i, l)| {
            if l.trim().is_empty() {
                return None;
            }
            match serde_json::from_str::<Entry>(l) {
                Ok(e) if e.key == key_of(&canonical(&e.request)) => None,
                _ => Some(i + 1),
            }
        })
    });
    for mode in [
        CassetteMode::Auto,
        CassetteMode::Replay,
        CassetteMode::Strict,
        CassetteMode::Record,
        CassetteMode::Off,
    ] {
        let result = Cassette::open(&path, mode);
        let reads = !matches!(mode, CassetteMode::Record | CassetteMode::Off);
        match result {
            Ok(mut c) => {
                prop_assert!(
                    !reads || (text.is_some() && first_bad.is_none()),
                    "{:?} accepted a bad cassette (first bad line {:?})",
                    mode,
                    first_bad
                );
                if reads {
                    // Every entry replays, in order.
                    for l in text.unwrap_or_default().lines() {
                        if l.trim().is_empty() {
                            continue;
                        }
                        let e: Entry = serde_json::from_str(l).expect("checked above");
                        let got = c
                            .replay(&e.key, &e.request)
                            .map_err(|err| TestCaseError::fail(err.to_string()))?;
                        prop_assert!(got.is_some(), "entry {} did not replay", e.key);
                    }
                }
            }
            Err(LlmError::Cassette(m)) => {
                prop_assert!(reads, "{:?} read the file: {}", mode, m);
                prop_assert!(
                    m.contains(&shown),
                    "the error does not name the file: {}",
                    m
                );
                match (text, first_bad) {
                    (Some(_), Some(n)) => prop_assert!(
                        m.contains(&format!("{shown}:{n}: ")),
                        "the error does not name line {}: {}",
                        n,
                        m
                    ),
                    (Some(_), None) => {
                        return Err(TestCaseError::fail(format!(
                            "{mode:?} rejected a good cassette: {m}"
                        )))
                    }
                    // Not UTF-8: see `bug_cassette_not_utf8_names_no_line`.
                    (None, _) => {}
                }
            }
            Err(other) => {
                return Err(TestCaseError::fail(format!(
                    "not a cassette error: {other:?}"
                )))
            }
        }
    }
    Ok(())
}

/// Strict: a cassette error names `file:line` even when the file is not UTF-8.
fn check_cassette_line_named(dir: &Path, bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = dir.join("case.jsonl");
    std::fs::write(&path, bytes).expect("write the cassette");
    let shown = display_path(&path).display().to_string();
    match Cassette::open(&path, CassetteMode::Replay) {
        Ok(_) => Err(TestCaseError::fail("a bad cassette was accepted")),
        Err(e) => {
            let m = e.to_string();
            prop_assert!(m.contains(&format!("{shown}:")), "no file:line in: {}", m);
            let after = &m[m.find(&shown).unwrap_or(0) + shown.len()..];
            prop_assert!(
                after.starts_with(':') && after[1..].starts_with(|c: char| c.is_ascii_digit()),
                "no line number in: {}",
                m
            );
            Ok(())
        }
    }
}

/// The config reader's contract on one file's text.
fn check_config(dir: &Path, text: &str) -> Result<(), TestCaseError> {
    let parsed = toml::from_str::<ConfigFile>(text);
    let path = dir.join("agentest.toml");
    std::fs::write(&path, text).expect("write the config");
    match Config::load(&path, &agentest::__private::config::loader()) {
        Ok(c) => {
            prop_assert!(
                parsed.is_ok(),
                "load accepted what toml rejects: {:?}",
                parsed.err()
            );
            prop_assert_eq!(c.path.as_deref(), Some(path.as_path()));
        }
        Err(e) => {
            let m = e.to_string();
            prop_assert!(
                m.contains(&path.display().to_string()),
                "the error does not name the file: {}",
                m
            );
            // An agent's line, when given, is a line of the file.
            if let Some(i) = m.find(" (line ") {
                let n: usize = m[i + 7..]
                    .split(')')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                let lines = text.lines().count().max(1);
                prop_assert!((1..=lines).contains(&n), "line {} of {}: {}", n, lines, m);
            }
        }
    }
    Ok(())
}

/// `parse_duration` on any text; what it reads survives `format_duration` and back.
fn check_duration(text: &str) -> Result<(), TestCaseError> {
    check_duration_strictly(text)
}

fn check_duration_strictly(text: &str) -> Result<(), TestCaseError> {
    let Ok(d) = parse_duration(text) else {
        return Ok(());
    };
    prop_assert!(d <= Duration::from_secs(365 * 24 * 3600));
    let shown = format_duration(d);
    let back = parse_duration(&shown)
        .map_err(|e| TestCaseError::fail(format!("{text:?} -> {shown:?}: {e}")))?;
    let gap = back.abs_diff(d);
    prop_assert!(
        gap <= Duration::from_millis(51),
        "{:?} is {:?} but shows as {:?} ({:?})",
        text,
        d,
        shown,
        back
    );
    prop_assert_eq!(
        format_duration(back),
        shown.clone(),
        "{:?} -> {:?} -> {:?}",
        text,
        d,
        shown
    );
    Ok(())
}

/// `format_duration`'s text reads back as the same duration, to the millisecond it shows.
fn check_format(d: Duration) -> Result<(), TestCaseError> {
    let shown = format_duration(d);
    let back = parse_duration(&shown).map_err(|e| TestCaseError::fail(format!("{shown}: {e}")))?;
    let gap = back.abs_diff(d);
    prop_assert!(
        gap <= Duration::from_millis(51),
        "{:?} -> {:?} -> {:?}",
        d,
        shown,
        back
    );
    {
        prop_assert_eq!(
            format_duration(back),
            shown.clone(),
            "{:?} -> {:?} -> {:?}",
            d,
            shown,
            back
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Replies for the evaluators
// ---------------------------------------------------------------------------------------

fn reply() -> BoxedStrategy<Reply> {
    let content = prop_oneof![
        1 => Just(Value::Null),
        4 => text().prop_map(Value::String),
        2 => json().prop_map(|j| Value::String(to_text(&j, Style { comma: ", ", colon: ": " }))),
        1 => json().prop_map(|j| Value::String(format!("Here:\n```json\n{}\n```\nDone", to_text(&j, Style { comma: ",", colon: ":" })))),
        2 => json().prop_map(|j| to_value(&j)),
    ];
    let call = (
        prop::sample::select(TOOL_NAMES),
        prop_oneof![
            json().prop_map(|j| to_value(&j)),
            json().prop_map(|j| Value::String(to_text(
                &j,
                Style {
                    comma: ",",
                    colon: ":"
                }
            ))),
        ],
        prop::option::of(json().prop_map(|j| to_value(&j))),
    )
        .prop_map(|(name, arguments, result)| {
            let call = ToolCall::new(name, arguments);
            match result {
                Some(r) => call.with_result(r),
                None => call,
            }
        });
    (
        content,
        prop::collection::vec(call, 0..3),
        prop::option::weighted(0.4, json().prop_map(|j| to_value(&j))),
    )
        .prop_map(|(content, tool_calls, data)| {
            let reply = tool_calls
                .into_iter()
                .fold(Reply::json(content), Reply::with_call);
            match data {
                Some(d) => reply.with_data(d),
                None => reply,
            }
        })
        .boxed()
}

// ---------------------------------------------------------------------------------------
// Configs
// ---------------------------------------------------------------------------------------

const CONFIGS: &[&str] = &[
    include_str!("../../agent-tests/agentest.toml"),
    include_str!("../fixtures/demo/agent-tests/agentest.toml"),
    "[agent]\ntype = \"http\"\nurl = \"http://127.0.0.1:9/turn\"\nheaders = { Authorization = \"Bearer ${TOKEN}\" }\ntimeout = \"10s\"\n",
    "[agents.\"é x\"]\ntype = \"openai\"\nllm = \"fast\"\nmodel = \"m\"\ntools = [{ type = \"function\", function = { name = \"f\" } }]\nmax_tool_rounds = 3\n\n[llms.fast]\nbase_url = \"http://localhost:1/v1\"\nmodel = \"m\"\napi_key_env = \"KEY\"\ntemperature = 0.2\nmax_in_flight = 4\nrequests_per_minute = 60\n",
    "[run]\nconcurrency = 2\ntimeout = \"1m30s\"\ncassettes = \"strict\"\nseed = 7\ninput_tools = [\"ask_user\"]\nreport = \"target/r.jsonl\"\n\n[scripts.s]\ncommand = [\"true\"]\ncwd = \"..\"\nenv = { A = \"1\" }\n",
    "[golden]\nenabled = true\n[[golden.redactions]]\npattern = \"(\\\\d+)\"\nreplace = \"$1\"\n",
];

const CONFIG_HEADERS: &[&str] = &[
    "[agent]",
    "[agents.x]",
    "[agents.\"a b\"]",
    "[run]",
    "[llm]",
    "[llms.m]",
    "[hooks.h]",
    "[scripts.s]",
    "[golden]",
    "[[golden.redactions]]",
    "[[agents]]",
    "[agent.env]",
    "[unknown]",
    "[",
    "[]",
    "[a.b.c.d]",
];

const CONFIG_KEYS: &[&str] = &[
    "type",
    "command",
    "cwd",
    "env",
    "url",
    "headers",
    "timeout",
    "llm",
    "model",
    "system",
    "system_file",
    "tools",
    "tools_file",
    "tools_url",
    "max_tool_rounds",
    "mocks",
    "concurrency",
    "report",
    "cassettes",
    "seed",
    "input_tools",
    "base_url",
    "api_key_env",
    "temperature",
    "max_tokens",
    "max_retries",
    "max_in_flight",
    "requests_per_minute",
    "enabled",
    "suites",
    "redactions",
    "suite",
    "pattern",
    "replace",
    "agent.type",
    "\"quoted key\"",
    "é",
];

const TOML_VALUES: &[&str] = &[
    "\"process\"",
    "\"http\"",
    "\"openai\"",
    "\"\"",
    "\"30s\"",
    "\"0s\"",
    "\"soon\"",
    "\"http://127.0.0.1:1/x\"",
    "\"not a url\"",
    "\"${X}\"",
    "\"auto\"",
    "\"replays\"",
    "\"(\"",
    "0",
    "1",
    "-1",
    "4294967296",
    "18446744073709551616",
    "9223372036854775807",
    "2.5",
    "-0.0",
    "nan",
    "inf",
    "true",
    "[]",
    "[\"python3\", \"a.py\"]",
    "[1, \"x\"]",
    "{}",
    "{ A = \"1\" }",
    "{ method = \"t\", response = 1 }",
    "[{ method = \"t\" }]",
    "1979-05-27T07:32:00Z",
    "'literal'",
    "'''multi\nline'''",
    "\"\"\"multi\nline\"\"\"",
    "\"\\u00e9\"",
    "\"\\uD800\"",
    "\"\\x\"",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
];

/// `key = value` with probability `p`: usually a value of the right kind.
fn kv(p: f64, key: &'static str, good: &'static [&'static str]) -> BoxedStrategy<Option<String>> {
    prop::option::weighted(
        p,
        prop_oneof![
            12 => prop::sample::select(good),
            1 => prop::sample::select(TOML_VALUES),
        ]
        .prop_map(move |v| format!("{key} = {v}")),
    )
    .boxed()
}

fn section(
    header: BoxedStrategy<String>,
    keys: Vec<BoxedStrategy<Option<String>>>,
) -> BoxedStrategy<String> {
    (header, keys)
        .prop_map(|(h, lines)| {
            let mut out = h;
            for l in lines.into_iter().flatten() {
                out.push('\n');
                out.push_str(&l);
            }
            out
        })
        .boxed()
}

const DURATION_VALUES: &[&str] = &[
    "\"30s\"",
    "\"2m\"",
    "\"500ms\"",
    "\"0s\"",
    "\"soon\"",
    "\"30\"",
];
const STRING_VALUES: &[&str] = &["\"x\"", "\"a.py\"", "\"é\"", "\"\""];

/// One `[agent]` / `[agents.NAME]` table, with the keys of its type (and now and then
/// a key of another type).
fn agent_section() -> BoxedStrategy<String> {
    let header = prop::sample::select(vec![
        "[agent]",
        "[agents.x]",
        "[agents.\"a b\"]",
        "[agents.\"é\"]",
        "[agents.x]",
    ])
    .prop_map(str::to_string)
    .boxed();
    prop::sample::select(vec!["\"process\"", "\"http\"", "\"openai\"", "\"grpc\""])
        .prop_flat_map(move |kind| {
            let mut keys = vec![Just(Some(format!("type = {kind}"))).boxed()];
            match kind {
                "\"process\"" => keys.extend([
                    kv(
                        0.95,
                        "command",
                        &["[\"python3\", \"a.py\"]", "[\"x\"]", "[]"],
                    ),
                    kv(0.3, "cwd", STRING_VALUES),
                    kv(0.3, "env", &["{ A = \"1\" }", "{}", "{ A = 1 }"]),
                    kv(0.3, "timeout", DURATION_VALUES),
                ]),
                "\"http\"" => keys.extend([
                    kv(
                        0.95,
                        "url",
                        &[
                            "\"http://127.0.0.1:1/x\"",
                            "\"${URL}/x\"",
                            "\"not a url\"",
                            "\"http://[::1\"",
                        ],
                    ),
                    kv(
                        0.3,
                        "headers",
                        &["{ Authorization = \"Bearer ${T}\" }", "{}"],
                    ),
                    kv(0.3, "timeout", DURATION_VALUES),
                ]),
                _ => keys.extend([
                    kv(0.3, "llm", &["\"m\"", "\"missing\""]),
                    kv(0.3, "model", STRING_VALUES),
                    kv(0.3, "system", STRING_VALUES),
                    kv(0.1, "system_file", STRING_VALUES),
                    kv(
                        0.3,
                        "tools",
                        &[
                            "[{ type = \"function\", function = { name = \"f\" } }]",
                            "[]",
                        ],
                    ),
                    kv(0.1, "tools_file", STRING_VALUES),
                    kv(0.1, "tools_url", STRING_VALUES),
                    kv(0.2, "max_tool_rounds", &["1", "8", "0", "4294967296"]),
                    kv(
                        0.3,
                        "mocks",
                        &[
                            "[{ method = \"t\", response = { a = 1 } }]",
                            "[{ method = \"t\" }]",
                            "[{ method = \"t\", response = 1, when = { matcher = \"(\" } }]",
                            "[]",
                        ],
                    ),
                ]),
            }
            keys.push(kv(0.03, "url", &["\"http://x\""]));
            keys.push(kv(0.03, "command", &["[\"x\"]"]));
            section(header.clone(), keys)
        })
        .boxed()
}

fn config_section() -> BoxedStrategy<String> {
    let fixed = |h: &'static str| Just(h.to_string()).boxed();
    prop_oneof![
        3 => agent_section(),
        2 => section(fixed("[run]"), vec![
            kv(0.5, "concurrency", &["1", "16", "0", "-1"]),
            kv(0.5, "timeout", DURATION_VALUES),
            kv(0.2, "report", STRING_VALUES),
            kv(0.3, "cassettes", &["\"auto\"", "\"replay\"", "\"strict\"", "\"record\"", "\"off\"", "\"replays\""]),
            kv(0.2, "seed", &["0", "7", "18446744073709551615"]),
            kv(0.2, "input_tools", &["[\"ask_user\"]", "[]"]),
        ]),
        2 => section(
            prop::sample::select(vec!["[llm]", "[llms.m]", "[llms.\"other\"]"]).prop_map(str::to_string).boxed(),
            vec![
                kv(0.8, "base_url", &["\"http://127.0.0.1:1/v1\"", "\"x\""]),
                kv(0.8, "model", STRING_VALUES),
                kv(0.5, "api_key_env", &["\"KEY\""]),
                kv(0.3, "temperature", &["0", "0.7", "2", "2.5", "-1", "nan"]),
                kv(0.2, "max_tokens", &["100", "0"]),
                kv(0.3, "timeout", DURATION_VALUES),
                kv(0.2, "headers", &["{ X = \"${Y}\" }"]),
                kv(0.2, "max_retries", &["0", "4"]),
                kv(0.2, "max_in_flight", &["1", "0", "16"]),
                kv(0.2, "requests_per_minute", &["60", "0"]),
            ],
        ),
        1 => section(
            prop::sample::select(vec!["[hooks.h]", "[scripts.s]", "[hooks.\"env.Before\"]"]).prop_map(str::to_string).boxed(),
            vec![
                kv(0.95, "command", &["[\"true\"]", "[\"python3\", \"s.py\"]", "[]"]),
                kv(0.3, "cwd", STRING_VALUES),
                kv(0.3, "env", &["{ A = \"1\" }"]),
                kv(0.3, "timeout", DURATION_VALUES),
            ],
        ),
        1 => section(fixed("[golden]"), vec![
            kv(0.5, "enabled", &["true", "false"]),
            kv(0.5, "suites", &["[\"a\", \"b/c\"]", "[]"]),
        ]),
        1 => section(fixed("[[golden.redactions]]"), vec![
            kv(0.3, "suite", STRING_VALUES),
            kv(0.95, "pattern", &["\"\\\\d+\"", "\"EXP-(\\\\d{4})\"", "\"(\""]),
            kv(0.95, "replace", &["\"N\"", "\"$1\""]),
        ]),
        1 => prop::collection::vec(
            prop_oneof![
                2 => prop::sample::select(CONFIG_HEADERS).prop_map(str::to_string),
                6 => (prop::sample::select(CONFIG_KEYS), prop::sample::select(TOML_VALUES))
                    .prop_map(|(k, v)| format!("{k} = {v}")),
                1 => (1usize..200).prop_map(|n| format!("x = {}1{}", "[".repeat(n), "]".repeat(n))),
                1 => (1usize..200).prop_map(|n| format!("x = {}{}", "{ a = ".repeat(n), "}".repeat(n))),
                1 => "[^\n]{0,30}",
                1 => Just("# comment".to_string()),
            ],
            0..6,
        )
        .prop_map(|lines| lines.join("\n")),
    ]
    .boxed()
}

/// TOML assembled from config sections and their keys, sometimes edited.
fn config_text() -> BoxedStrategy<String> {
    (
        prop::option::weighted(
            0.6,
            Just("[llm]\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n\n[llms.m]\nmodel = \"m\"\n".to_string()),
        ),
        prop::collection::vec(config_section(), 0..4),
        prop_oneof![4 => Just(Vec::new()), 1 => prop::collection::vec(edit(), 1..4)],
        prop::sample::select(vec!["\n", "\n\n", "\r\n"]),
    )
        .prop_map(|(llm, sections, edits, sep)| {
            let mut all: Vec<String> = llm.into_iter().collect();
            all.extend(sections);
            apply(&all.join(sep), &edits)
        })
        .boxed()
}

/// A line-level edit of a config.
fn mutated_config() -> BoxedStrategy<String> {
    (
        prop::sample::select(CONFIGS),
        prop::collection::vec((any::<usize>(), 0u8..4), 0..3),
        prop::collection::vec(edit(), 0..4),
    )
        .prop_map(|(base, line_edits, edits)| {
            let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
            for (at, kind) in line_edits {
                let n = lines.len();
                if n == 0 {
                    break;
                }
                let i = at % n;
                match kind {
                    0 => {
                        lines.remove(i);
                    }
                    1 => {
                        let l = lines[i].clone();
                        lines.insert(i, l);
                    }
                    2 => lines.swap(i, (i + 1) % n),
                    _ => lines[i] = lines[i].replacen(" = ", " = [", 1),
                }
            }
            apply(&lines.join("\n"), &edits)
        })
        .boxed()
}

// ---------------------------------------------------------------------------------------
// Cassettes
// ---------------------------------------------------------------------------------------

/// A valid cassette entry, as the recorder writes it.
fn cassette_entry() -> BoxedStrategy<String> {
    let role = prop::sample::select(vec![Role::Agent, Role::Simulator, Role::Judge]);
    (role, json(), json(), text())
        .prop_map(|(role, req, resp, content)| {
            let request = canonical(&json!({
                "model": "m",
                "messages": [{"role": "user", "content": content}],
                "extra": to_value(&req),
            }));
            let e = Entry {
                key: key_of(&request),
                role,
                request,
                response: to_value(&resp),
                error: None,
            };
            canonical(&serde_json::to_value(e).expect("an entry serialises")).to_string()
        })
        .boxed()
}

/// A cassette line: a valid entry, or one broken in some way.
fn cassette_line() -> BoxedStrategy<String> {
    let entry = cassette_entry();
    prop_oneof![
        8 => entry.clone(),
        1 => Just(String::new()),
        1 => Just("   ".to_string()),
        2 => (entry.clone(), prop::collection::vec(edit(), 1..4))
            .prop_map(|(e, edits)| apply(&e, &edits).replace(['\n', '\r'], " ")),
        1 => entry.clone().prop_map(|e| e.replacen("\"key\":\"", "\"key\":\"0", 1)),
        1 => entry.clone().prop_map(|e| e.replacen('{', "{\"extra\":1,", 1)),
        1 => entry.prop_map(|e| e.replacen("\"role\":\"", "\"role\":\"x", 1)),
        1 => json().prop_map(|j| to_text(&j, Style { comma: ",", colon: ":" }).replace(['\n', '\r'], " ")),
    ]
    .boxed()
}

fn cassette_file() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        6 => (
            prop::collection::vec(cassette_entry(), 0..6),
            prop::option::weighted(0.5, (any::<usize>(), cassette_line())),
            any::<bool>(),
        )
            .prop_map(|(mut lines, odd, crlf)| {
                if let Some((at, line)) = odd {
                    let at = at % (lines.len() + 1);
                    lines.insert(at, line);
                }
                lines.join(if crlf { "\r\n" } else { "\n" }).into_bytes()
            }),
        1 => prop::collection::vec(any::<u8>(), 0..200),
        1 => any::<String>().prop_map(String::into_bytes),
        1 => (prop::collection::vec(cassette_line(), 1..4), any::<usize>()).prop_map(|(lines, at)| {
            let mut b = lines.join("\n").into_bytes();
            let at = at % (b.len() + 1);
            b.insert(at, 0xff);
            b
        }),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(1000))]

    /// Any bytes at all: one entry per case line, each located on its line.
    fn suite_reader_takes_any_bytes(b in bytes(prop::collection::vec(any::<u8>(), 0..400).boxed())) {
        check_suite(&b.0)?;
    }

    /// Any text, including every Unicode scalar value.
    fn suite_reader_takes_any_text(text in any::<String>()) {
        check_suite(text.as_bytes())?;
    }
}

proptest! {
    #![proptest_config(config(1000))]

    /// Suites of near-valid cases: known keys with values of the right and wrong types,
    /// nested assertions, turns, checkpoints and mocks, edited, deep or very long.
    fn suite_reader_takes_near_valid_cases(b in bytes(suite_file())) {
        check_suite(&b.0)?;
    }

    /// One case line alone: parsing is deterministic and every error is located.
    fn case_parser_locates_every_error(line in case_line()) {
        let first = parse_case(&line, at_line(3));
        let second = parse_case(&line, at_line(3));
        match (&first, &second) {
            (Ok(a), Ok(b)) => prop_assert_eq!(&a.id, &b.id),
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            _ => prop_assert!(false, "parsing the same line twice disagreed"),
        }
        check_suite(line.as_bytes())?;
    }
}

proptest! {
    #![proptest_config(config(500))]

    /// Random assertions against random replies: no panic, and `negate` inverts every
    /// deterministic check that could look at the reply.
    fn assertions_evaluate_any_reply(
        assertions in prop::collection::vec(assertion(), 1..4),
        reply in reply(),
    ) {
        let rt = runtime();
        for a in &assertions {
            check_evaluation(&rt, a, &reply)?;
        }
    }

    /// Tool mocks: no panic, errors name a field under the given path, and a parsed set
    /// answers any call.
    fn mocks_parse_any_json(
        m in mocks(),
        name in prop::sample::select(TOOL_NAMES),
        args in json(),
        seed in any::<u64>(),
    ) {
        let v = to_value(&m);
        match parse_mocks(&v, "setup.mocks") {
            Ok(parsed) => {
                prop_assert_eq!(parsed.len(), v.as_array().map_or(0, Vec::len));
                // Answering sleeps for a mock's delay; only answer when none is set.
                let delays = v.as_array().into_iter().flatten().any(|m| {
                    m.pointer("/metadata/delay").and_then(Value::as_u64).is_some_and(|d| d > 0)
                });
                if !delays {
                    let mut rng = SeededRng::new(seed, "fuzz");
                    let _ = runtime().block_on(MockSet(parsed).answer(name, &to_value(&args), &mut rng));
                }
            }
            Err(e) => {
                prop_assert!(e.path.starts_with("setup.mocks"), "{:?}", e);
                prop_assert!(!e.message.is_empty());
            }
        }
    }

    /// Config files from config-like lines: `toml` and `Config::load` never panic.
    fn config_reader_takes_config_like_text(text in config_text()) {
        check_config(&scratch("config-like"), &text)?;
    }

    /// Valid configs, edited a little.
    fn config_reader_takes_edited_configs(text in mutated_config()) {
        check_config(&scratch("config-edited"), &text)?;
    }

    /// Any text as a config.
    fn config_reader_takes_any_text(text in any::<String>()) {
        check_config(&scratch("config-any"), &text)?;
    }

    /// Cassettes, valid and broken, in every mode.
    fn cassette_reader_names_file_and_line(b in bytes(cassette_file())) {
        check_cassette(&scratch("cassette"), &b.0)?;
    }
}

proptest! {
    #![proptest_config(config(2000))]

    /// Any text as a duration.
    fn durations_parse_any_text(text in any::<String>()) {
        check_duration(&text)?;
    }

    /// Duration-like text: numbers and units.
    fn durations_round_trip(
        parts in prop::collection::vec(
            ("[0-9]{0,7}(\\.[0-9]{0,5})?", prop::sample::select(vec!["ms", "s", "m", "h", "", "S", " s", "µs", "d"])),
            1..4,
        ),
        pad in prop::sample::select(vec!["", " ", "\t"]),
    ) {
        let text: String = parts.iter().map(|(n, u)| format!("{n}{u}")).collect();
        check_duration(&format!("{pad}{text}{pad}"))?;
    }

    /// What `format_duration` writes reads back to the same text.
    fn formatted_durations_read_back(
        ms in prop_oneof![0u64..10_000, 0u64..31_536_000_000],
        nanos in prop_oneof![Just(0u32), 0u32..1_000_000],
    ) {
        check_format(Duration::from_millis(ms) + Duration::from_nanos(u64::from(nanos)))?;
    }
}

// ---------------------------------------------------------------------------------------
// Regressions: inputs that once broke a reader, kept as files
// ---------------------------------------------------------------------------------------

fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions")
}

fn regression(name: &str) -> Vec<u8> {
    std::fs::read(regressions_dir().join(name))
        .unwrap_or_else(|e| panic!("tests/fuzz-regressions/{name}: {e}"))
}

/// Every file under `tests/fuzz-regressions/` that is not a known open bug (`bug-*`)
/// still passes its reader's checks: `suite-*` suites, `config-*` configs, `cassette-*`
/// cassettes and `duration-*` durations (one per line).
fn regressions() {
    let mut ran = 0;
    let mut files: Vec<PathBuf> = std::fs::read_dir(regressions_dir())
        .expect("tests/fuzz-regressions exists")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    files.sort();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("bug-") || name.starts_with('.') || name == "README.md" {
            continue;
        }
        let bytes = std::fs::read(&path).expect("read a regression");
        let result = if name.starts_with("suite-") {
            check_suite(&bytes)
        } else if name.starts_with("config-") {
            check_config(
                &scratch("regression-config"),
                &String::from_utf8_lossy(&bytes),
            )
        } else if name.starts_with("cassette-") {
            check_cassette(&scratch("regression-cassette"), &bytes)
        } else if name.starts_with("duration-") {
            String::from_utf8_lossy(&bytes)
                .lines()
                .try_for_each(check_duration)
        } else {
            panic!("tests/fuzz-regressions/{name}: no reader for this prefix");
        };
        if let Err(e) = result {
            panic!("tests/fuzz-regressions/{name}: {e}");
        }
        ran += 1;
    }
    assert!(ran > 0, "no regression ran");
}

/// Runs a check, panicking with its message on failure.
fn must(result: Result<(), TestCaseError>) {
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A broken line is named `line-N-invalid` when a case's id is `line-N`, but another
/// case's id may already be `line-N-invalid`: two trials then share a name.
fn bug_line_name_fallback_collides_with_an_id() {
    must(check_suite(&regression(
        "bug-suite-trial-name-collision.jsonl",
    )));
}

/// A syntax error next to a multi-byte character (an unterminated string ending in one,
/// a bad `\u` escape before one): serde_json's byte column falls inside the character,
/// and the parser then reports the byte column as is, past the end of the line in
/// characters (`{"input":"éé` is 12 characters; the error says column 14).
fn bug_syntax_error_column_past_the_line_end() {
    must(check_suite(&regression(
        "bug-suite-column-past-line-end.jsonl",
    )));
}

/// `format_duration(4.95s)` is `"5.0s"`, which reads back as 5s and then shows as `"5s"`:
/// the text it writes is not its own canonical form (`"60.0s"` for 59.96s, not `"1m"`).
fn bug_format_duration_writes_whole_seconds_as_n_point_0() {
    for line in
        String::from_utf8_lossy(&regression("bug-duration-format-not-canonical.txt")).lines()
    {
        must(check_duration_strictly(line));
    }
}

/// A cassette that is not UTF-8 is rejected as a whole ("stream did not contain valid
/// UTF-8"), naming the file but not the line, unlike every other bad cassette line.
fn bug_cassette_not_utf8_names_no_line() {
    must(check_cassette_line_named(
        &scratch("bug-cassette"),
        &regression("bug-cassette-not-utf8.jsonl"),
    ));
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        suite_reader_takes_any_bytes,
        suite_reader_takes_any_text,
        suite_reader_takes_near_valid_cases,
        case_parser_locates_every_error,
        assertions_evaluate_any_reply,
        mocks_parse_any_json,
        config_reader_takes_config_like_text,
        config_reader_takes_edited_configs,
        config_reader_takes_any_text,
        cassette_reader_names_file_and_line,
        durations_parse_any_text,
        durations_round_trip,
        formatted_durations_read_back,
        regressions,
        bug_line_name_fallback_collides_with_an_id,
        bug_syntax_error_column_past_the_line_end,
        bug_format_duration_writes_whole_seconds_as_n_point_0,
        bug_cassette_not_utf8_names_no_line,
    ]
}
