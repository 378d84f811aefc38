//! Golden transcripts: a finished case rendered as stable text and compared with a file
//! beside its suite, the way insta and trybuild pin output. `AGENTEST_UPDATE` decides
//! what happens on a difference: `new` writes `<file>.new` for review, `always`
//! overwrites, `no` never writes, and `auto` (the default) is `no` on CI and `new`
//! elsewhere.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use regex::Regex;

use crate::config::Redaction;
use crate::config::UpdateMode;
use crate::errors::{GoldenError, NewFile};
// The outcome has a file of its own: the report model holds it, and this file reads
// the report model.
pub(crate) use crate::record::golden_check::GoldenCheck;
use crate::record::{AssertionReport, CaseReport, CodeRun, TurnReport};
use crate::util::value_text;

/// The golden file of a case: beside its suite file, `<dir>/<suite>.golden/<id>.txt`
/// (`agent-tests/expense.golden/T001.txt`), the id made safe for file names.
pub(crate) fn path_for(suite_file: &Path, id: &str) -> PathBuf {
    crate::util::beside(
        suite_file,
        |stem| PathBuf::from(format!("{stem}.golden")),
        id,
        ".txt",
    )
}

/// Volatile text that never belongs in a golden file, whatever the agent says.
fn builtin_redactions() -> &'static [(Regex, &'static str)] {
    static BUILTIN: std::sync::OnceLock<Vec<(Regex, &'static str)>> = std::sync::OnceLock::new();
    BUILTIN.get_or_init(|| {
        // A scenario's environment folder (`Workdir`), with the temp folder it is in.
        let temp = regex::escape(&std::env::temp_dir().display().to_string());
        let temp = temp.trim_end_matches('/');
        let environment = format!(r"(?:{temp}/)?agentest-env-[A-Za-z0-9-]*?-\d+-\d+");
        vec![
            (Regex::new(&environment).expect("valid"), "[environment]"),
            (Regex::new(r"agentest-\d+-\d+").expect("valid"), "[session]"),
            (
                Regex::new(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")
                    .expect("valid"),
                "[timestamp]",
            ),
            (
                Regex::new(r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
                    .expect("valid"),
                "[uuid]",
            ),
        ]
    })
}

/// Applies the built-in and the suite's redactions (a suite may go by several names).
pub(crate) fn normalise(text: &str, suite: &[&str], redactions: &[Redaction]) -> String {
    let mut out = text.to_string();
    for (re, with) in builtin_redactions() {
        out = re.replace_all(&out, *with).into_owned();
    }
    for r in redactions
        .iter()
        .filter(|r| r.suite.as_deref().is_none_or(|s| suite.contains(&s)))
    {
        out = r.regex.replace_all(&out, r.replace.as_str()).into_owned();
    }
    out
}

/// The stable rendering of a finished case: each turn's input (and where it came from),
/// the reply, tool calls with arguments and results, and every verdict. No durations,
/// timestamps, session ids or token counts. A traced turn's span tree (its timings) is
/// left out, and tool calls read from its spans read like the ones a reply lists: the
/// golden pins what the agent did, not how agentest learned of it.
pub(crate) fn render(r: &CaseReport) -> String {
    let mut s = String::new();
    // The case as its file names it: the same whichever folder the run started from.
    let file = r.suite.rsplit('/').next().unwrap_or(&r.suite);
    let _ = writeln!(s, "case: {file}::{}", r.id);
    if r.name != r.id {
        let _ = writeln!(s, "name: {}", r.name);
    }
    if let Some(mode) = &r.mode {
        let _ = writeln!(s, "mode: {mode}");
    }
    if let Some(sim) = &r.simulator {
        let _ = writeln!(s, "simulator: {sim}");
    }
    let mut step = None;
    for t in &r.turns {
        if t.step.is_some() && t.step != step {
            step = t.step.clone();
            if let Some(st) = &step {
                let _ = writeln!(s, "\n=== {st}: {}", st.kind);
            }
        }
        let _ = writeln!(s, "\n--- turn {} ({})", t.turn, t.input_source);
        match &t.code {
            Some(code) => code_step(&mut s, t, code),
            None => exchange(&mut s, t),
        }
    }
    if !r.final_assertions.is_empty() {
        let _ = writeln!(s, "\n--- final assertions");
        verdicts(&mut s, &r.final_assertions);
    }
    if !r.checkpoints.is_empty() {
        checkpoints(&mut s, r);
    }
    if let Some(t) = &r.termination {
        let _ = writeln!(s, "\ntermination: {t}");
    }
    s
}

/// A code step: its code, output, exit code and the files it left.
fn code_step(s: &mut String, t: &TurnReport, code: &CodeRun) {
    block(s, &format!("code ({})", code.lang), &t.input);
    block(s, "stdout", &value_text(&t.output));
    let _ = writeln!(s, "{}", code.exit_text());
    if !code.stderr.is_empty() {
        block(s, "stderr", &code.stderr);
    }
    if !code.files.is_empty() {
        let _ = writeln!(s, "files: {}", code.files.join(", "));
    }
    verdicts(s, &t.assertions);
    if let Some(e) = &t.error {
        let _ = writeln!(s, "error: {e}");
    }
}

/// A turn of conversation: the user's input, the tool calls, the reply and verdicts.
fn exchange(s: &mut String, t: &TurnReport) {
    block(s, "user", &t.input);
    for c in &t.tool_calls {
        let mut line = format!("tool {}({})", c.name, c.arguments_json());
        if let Some(res) = &c.result {
            let _ = write!(line, " -> {res}");
        }
        if let Some(err) = &c.error {
            let _ = write!(line, " -> error {err}");
        }
        let _ = writeln!(s, "{line}");
    }
    block(s, "agent", &value_text(&t.output));
    if let Some(d) = &t.data {
        let _ = writeln!(s, "data: {d}");
    }
    if t.awaiting_input {
        let _ = writeln!(s, "awaiting input");
    }
    verdicts(s, &t.assertions);
    verdicts(s, &t.checkpoints);
    if let Some(e) = &t.ending {
        let _ = writeln!(s, "ended: {e}");
    }
    if let Some(e) = &t.error {
        let _ = writeln!(s, "error: {e}");
    }
}

/// A scenario's checkpoints, each reached or not and on which turn.
fn checkpoints(s: &mut String, r: &CaseReport) {
    let _ = writeln!(s, "\n--- checkpoints");
    for c in &r.checkpoints {
        let mark = if c.reached != c.forbidden {
            "✓"
        } else {
            "✗"
        };
        let at = c
            .reached_at_turn
            .map(|t| format!(" at turn {t}"))
            .unwrap_or_default();
        let _ = writeln!(s, "{mark} {}{at}", c.id);
    }
}

fn block(s: &mut String, who: &str, text: &str) {
    let mut lines = text.lines();
    let _ = writeln!(s, "{who}: {}", lines.next().unwrap_or_default());
    for line in lines {
        let _ = writeln!(s, "{:width$}  {line}", "", width = who.len());
    }
}

fn verdicts(s: &mut String, list: &[AssertionReport]) {
    for a in list {
        let mark = match a.passed {
            Some(true) => "✓",
            Some(false) => "✗",
            None => "?",
        };
        let _ = writeln!(s, "{mark} {}", a.label);
    }
}

/// Compares `actual` with the golden file and writes what `mode` allows. `Err` is a
/// failure whose message holds the diff and how to update.
pub(crate) fn check(
    path: &Path,
    actual: &str,
    mode: UpdateMode,
) -> (GoldenCheck, Result<(), GoldenError>) {
    let shown = crate::util::display_path(path).display().to_string();
    let new_path = pending_path(path);
    let expected = match std::fs::read_to_string(path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            let check = GoldenCheck {
                file: shown.clone(),
                outcome: "error".into(),
                pending: None,
            };
            return (check, Err(GoldenError::Read { shown, source: e }));
        }
    };
    // Line endings are not compared (as insta does): git's `autocrlf` checks a golden
    // file out with CRLF, which would otherwise differ on every line, invisibly.
    let expected = expected.map(|t| lf_only(&t));
    let lf_actual = lf_only(actual);
    if expected.as_deref() == Some(lf_actual.as_str()) {
        // A stale `.new` from an earlier mismatch no longer applies.
        let _ = std::fs::remove_file(&new_path);
        return (
            GoldenCheck {
                file: shown,
                outcome: "matched".into(),
                pending: None,
            },
            Ok(()),
        );
    }
    let outcome = if expected.is_some() {
        "mismatch"
    } else {
        "missing"
    };
    match mode {
        UpdateMode::Always => overwrite(path, &new_path, shown, actual),
        UpdateMode::New | UpdateMode::No => {
            let new_file = match mode {
                UpdateMode::New => write_pending(new_path, actual),
                _ => NewFile::Skipped,
            };
            let pending = match &new_file {
                NewFile::Written(p) => Some(p.clone()),
                _ => None,
            };
            let check = GoldenCheck {
                file: shown.clone(),
                outcome: outcome.into(),
                pending,
            };
            let e = match &expected {
                Some(golden) => GoldenError::Mismatch {
                    shown,
                    diff: diff(golden, &lf_actual),
                    new_file,
                },
                None => GoldenError::Missing { shown, new_file },
            };
            (check, Err(e))
        }
    }
}

/// `--update always`: the golden file becomes `actual`.
fn overwrite(
    path: &Path,
    new_path: &Path,
    shown: String,
    actual: &str,
) -> (GoldenCheck, Result<(), GoldenError>) {
    let result = crate::util::write_atomically(path, actual).map_err(|source| GoldenError::Write {
        shown: shown.clone(),
        source,
    });
    // The golden file is current now; an older pending version must not come back.
    let _ = std::fs::remove_file(new_path);
    let outcome = if result.is_ok() { "updated" } else { "error" };
    (
        GoldenCheck {
            file: shown,
            outcome: outcome.into(),
            pending: None,
        },
        result,
    )
}

/// `--update new`: `actual` goes to `<golden>.new`, for review.
fn write_pending(new_path: PathBuf, actual: &str) -> NewFile {
    match crate::util::write_atomically(&new_path, actual) {
        Ok(()) => NewFile::Written(crate::util::display_path(&new_path).display().to_string()),
        Err(source) => NewFile::Failed {
            path: new_path,
            source,
        },
    }
}

/// `text` with CRLF line endings as LF.
fn lf_only(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// `<golden>.new`.
pub(crate) fn pending_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_os_string();
    p.push(".new");
    PathBuf::from(p)
}

/// A unified diff, `--- golden` / `+++ actual`, three lines of context.
pub(crate) fn diff(golden: &str, actual: &str) -> String {
    similar::TextDiff::from_lines(golden, actual)
        .unified_diff()
        .context_radius(3)
        .header("golden", "actual")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{GoldenConfig, RedactionConfig};

    #[test]
    fn volatile_text_is_normalised_and_user_redactions_apply_per_suite() {
        let cfg = GoldenConfig {
            redactions: vec![
                RedactionConfig {
                    suite: Some("expense".into()),
                    pattern: r"EXP-\d+".into(),
                    replace: "EXP-<n>".into(),
                },
                RedactionConfig {
                    suite: None,
                    pattern: r"(\d+) ms".into(),
                    replace: "<n> ms".into(),
                },
            ],
            ..GoldenConfig::default()
        };
        let r = Redaction::compile_all(&cfg).unwrap();
        let text = "agentest-12-3 at 2026-11-22T01:02:03Z id 123e4567-e89b-12d3-a456-426614174000 EXP-42 in 17 ms";
        assert_eq!(
            normalise(text, &["expense"], &r),
            "[session] at [timestamp] id [uuid] EXP-<n> in <n> ms"
        );
        assert_eq!(
            normalise(text, &["other"], &r),
            "[session] at [timestamp] id [uuid] EXP-42 in <n> ms"
        );
        let bad = GoldenConfig {
            redactions: vec![RedactionConfig {
                suite: None,
                pattern: "(".into(),
                replace: String::new(),
            }],
            ..GoldenConfig::default()
        };
        assert!(matches!(
            Redaction::compile_all(&bad),
            Err(crate::errors::ConfigValueError::Redaction { number: 1, .. })
        ));
    }

    /// A traced turn's golden text has its calls, in their order, and nothing of its
    /// spans: no span names, durations or offsets; other timings of the spans, or none,
    /// give the same text.
    #[test]
    fn traced_turns_render_without_spans() {
        let mut r = crate::record::format::common::traced_sample();
        let text = render(&r);
        assert_eq!(
            text,
            "case: traced::weather\nmode: single\n\n--- turn 1 (static)\nuser: weather in Paris\n\
             tool lookup({\"q\":\"Paris\"})\n\
             tool get_weather({\"city\":\"Paris\"}) -> error \"no such city\"\n\
             agent: Sunny in Paris.\n✗ tool_called \"book_flight\"\n"
        );
        assert!(!text.contains("ms") && !text.contains("gpt-4o"), "{text}");
        let spans = &mut r.turns[0].spans;
        spans[0].duration_ms = 9_999;
        spans[0].children[1].start_ms = 7;
        assert_eq!(render(&r), text);
        r.turns[0].spans.clear();
        r.turns[0].spans_note = None;
        r.turns[0].usage_traced = false;
        r.turns[0].tool_calls[1].source = None;
        assert_eq!(render(&r), text, "a traced call reads as a listed one");
    }

    #[test]
    fn diffs_say_golden_and_actual() {
        let d = diff("a\nb\nc\n", "a\nB\nc\n");
        assert!(d.starts_with("--- golden\n+++ actual\n"), "{d}");
        assert!(d.contains("-b\n+B\n"), "{d}");
    }
}
