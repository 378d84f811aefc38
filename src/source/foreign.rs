//! Files that are not suites: a YAML file, a JSON document spread over many lines (an
//! EvalStudio store under a name EvalStudio does not give it, a tau2-bench task file, a
//! pretty-printed case), or a report agentest wrote. Read line by line, each would be
//! dozens of "invalid JSON" trials; recognised, it is one error that says what the file
//! is.

use std::path::Path;

use serde_json::Value;

/// What `file` is, when it is recognisably not a JSON Lines suite: a sentence that
/// names the format and what to do. `None` for anything that may be a suite (its lines
/// are then checked one by one as usual).
pub(crate) fn not_a_suite(file: &Path, bytes: &[u8]) -> Option<String> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if name.ends_with(".yaml") || name.ends_with(".yml") {
        return Some("this is a YAML file, not a suite: agentest reads YAML only as ElizaOS scenarios and matrices, named `*.scenario.yaml` and `*.matrix.yaml`; suites are JSON Lines files (.jsonl), one case per line".to_string());
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("//"))?;
    // One record per line with a trial and a status: a report agentest wrote.
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(first) {
        let report = (o.contains_key("trial") && o.contains_key("status"))
            || o.get("type").and_then(Value::as_str) == Some("summary");
        if report {
            return Some(
                "this is an agentest report (one record per case, written by -o or AGENTEST_REPORT), not a suite; write reports outside the suites folder, or pass the path as -o so the run skips it"
                    .into(),
            );
        }
        return None;
    }
    // A whole JSON document over several lines.
    if !(first.starts_with('[') || first.starts_with('{')) {
        return None;
    }
    let whole: Value = serde_json::from_str(text).ok()?;
    let lines = match text.lines().count() {
        1 => "1 line".to_string(),
        n => format!("{n} lines"),
    };
    let first_item = match &whole {
        Value::Array(items) => items.first(),
        other => Some(other),
    };
    let keys = |names: &[&str]| {
        first_item
            .and_then(Value::as_object)
            .is_some_and(|o| names.iter().any(|k| o.contains_key(*k)))
    };
    let evalstudio = "agentest reads EvalStudio projects from `evalstudio.config.json` or a store's `evals.json` (with `scenarios.json` and `personas.json` beside it), and a `scenarios.json` alone: run `-i` on the folder, or name the file as EvalStudio does";
    let known = if keys(&["evalId", "executionId"]) {
        Some(format!("an EvalStudio run store (results, not cases): `agentest runs export --format evalstudio` writes this shape; {evalstudio}"))
    } else if keys(&["successCriteria", "failureCriteria", "maxMessages"]) {
        Some(format!(
            "an EvalStudio scenario store, not a suite: {evalstudio}"
        ))
    } else if keys(&["scenarioIds"]) {
        Some(format!(
            "an EvalStudio eval store, not a suite: {evalstudio}"
        ))
    } else if keys(&["systemPrompt"]) {
        Some(format!("an EvalStudio persona store, not a suite: it is read with its project's scenarios, or named by `personas_file` in agentest.toml; {evalstudio}"))
    } else if keys(&["user_scenario", "evaluation_criteria"]) {
        Some(format!("a tau2-bench task file under a name that is not a suite's: agentest reads tau2 tasks from `.json` files (found in folders when named tasks.json, tasks_*.json or task_*.json); rename it, or convert it with `agentest import tau2 {} -o suite.jsonl`", file.display()))
    } else {
        None
    };
    if let Some(what) = known {
        return Some(format!("this is {what}"));
    }
    Some(match whole {
        Value::Array(items) => format!(
            "this file is one JSON array of {} item(s) over {lines}, not JSON Lines: a suite has one case per line (`jq -c '.[]' {} > cases.jsonl` converts it)",
            items.len(),
            file.display()
        ),
        _ => format!(
            "this file is one JSON value over {lines}, not JSON Lines: a suite has one case per line (`jq -c . {} > cases.jsonl` puts it on one)",
            file.display()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn what(name: &str, text: &str) -> Option<String> {
        not_a_suite(Path::new(name), text.as_bytes())
    }

    #[test]
    fn suites_are_not_recognised_as_anything_else() {
        assert_eq!(
            what("s.jsonl", "{\"id\": \"a\", \"input\": \"hi\"}\n"),
            None
        );
        assert_eq!(what("s.jsonl", "// note\n{\"id\": \"a\"}\n{bad\n"), None);
        assert_eq!(what("s.jsonl", "{bad\n"), None);
        assert_eq!(what("s.jsonl", ""), None);
    }

    #[test]
    fn each_foreign_kind_is_named() {
        for (name, text, expected) in [
            ("a.yaml", "x: 1\n", "a YAML file"),
            (
                "r.jsonl",
                "{\"id\":\"a\",\"trial\":\"s::a\",\"status\":\"passed\"}\n",
                "an agentest report",
            ),
            (
                "r.jsonl",
                "{\"type\":\"summary\",\"total\":1}\n",
                "an agentest report",
            ),
            (
                "scenarios.json",
                "[\n {\"id\": \"1\", \"maxMessages\": 4}\n]\n",
                "an EvalStudio scenario store",
            ),
            (
                "runs.json",
                "[\n {\"id\": \"r\", \"evalId\": \"e\", \"executionId\": 1}\n]\n",
                "an EvalStudio run store (results, not cases)",
            ),
            (
                "people.json",
                "[\n {\"name\": \"p\", \"systemPrompt\": \"x\"}\n]\n",
                "an EvalStudio persona store",
            ),
            (
                "tasks.json",
                "[\n {\"id\": \"0\", \"user_scenario\": {}}\n]",
                "a tau2-bench task file",
            ),
            (
                "s.jsonl",
                "[\n {\"id\": \"a\"},\n {\"id\": \"b\"}\n]\n",
                "one JSON array of 2 item(s) over 4 lines",
            ),
            (
                "s.jsonl",
                "{\n \"id\": \"a\"\n}\n",
                "one JSON value over 3 lines",
            ),
        ] {
            let got = what(name, text).unwrap_or_default();
            assert!(got.contains(expected), "{name}: {got}");
        }
    }
}
