//! YAML formats: ElizaOS scenarios (`*.scenario.yaml`); matrices come next (issue 12,
//! in progress).

mod node;
mod scenario;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::case::{Case, Location, Mode};
use crate::source::{CaseError, Loaded, SEPARATOR};

/// The endings of the YAML files agentest reads: scenario and matrix files.
pub(crate) const SCENARIO_ENDINGS: [&str; 2] = [".scenario.yaml", ".scenario.yml"];

/// Whether `name` (a file name) is an ElizaOS scenario.
pub(crate) fn is_scenario(name: &str) -> bool {
    SCENARIO_ENDINGS.iter().any(|e| name.ends_with(e))
}

/// Reads one scenario file: one trial, `<suite>::<slug of its name>`, or its error
/// (`<suite>::scenario` when it has no usable name).
pub(crate) fn load_scenario(suite: &str, file: &Path, shown: Arc<PathBuf>, text: &str) -> Loaded {
    let located = |line: usize, column: usize| Location {
        file: shown.clone(),
        line: line.max(1),
        column: column.max(1),
    };
    let broken =
        |trial: String, location: Location, field: Option<String>, message: String| Loaded {
            suite: suite.to_string(),
            trial,
            file: file.to_path_buf(),
            entry: Err(CaseError {
                location,
                id: None,
                field,
                message,
            }),
        };
    let fallback = format!("{suite}{SEPARATOR}scenario");
    let root = match node::parse(text) {
        Ok(root) => root,
        Err((message, pos)) => {
            return broken(
                fallback,
                located(pos.line, pos.column),
                None,
                format!("invalid YAML: {message}"),
            )
        }
    };
    let json = root.to_json();
    // The trial is named after `name` whenever there is one, even when the rest fails.
    let named = json
        .get("name")
        .and_then(|n| n.as_str())
        .map(slug)
        .filter(|s| !s.is_empty());
    let trial = named
        .as_ref()
        .map(|s| format!("{suite}{SEPARATOR}{s}"))
        .unwrap_or(fallback);
    match scenario::read(&json) {
        Err(e) => {
            let pos = root.locate(&e.path);
            let field = (!e.path.is_empty()).then(|| e.path.clone());
            let message = match &field {
                Some(f) => format!("field `{f}`: {}", e.message),
                None => e.message,
            };
            broken(trial, located(pos.line, pos.column), field, message)
        }
        Ok((name, scenario)) => Loaded {
            suite: suite.to_string(),
            trial,
            file: file.to_path_buf(),
            entry: Ok(Case {
                id: named.unwrap_or_else(|| "scenario".into()),
                name: Some(name),
                skip: false,
                timeout: None,
                agent: None,
                options: None,
                expected: None,
                tags: Vec::new(),
                user: None,
                team: None,
                metadata: None,
                before: None,
                after: None,
                mode: Mode::Scenario(Box::new(scenario)),
                golden: None,
                interactive: None,
                mocks: Vec::new(),
                location: located(root.pos.line, root.pos.column),
                raw: Arc::new(json),
            }),
        },
    }
}

/// A scenario's `name` as a trial id: lower case, words joined by `-`
/// (`Basic Multi-Turn Conversation Test` is `basic-multi-turn-conversation-test`).
pub(crate) fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_stable_words() {
        assert_eq!(
            slug("Basic Multi-Turn Conversation Test"),
            "basic-multi-turn-conversation-test"
        );
        assert_eq!(slug("  GitHub: issues (v2)!"), "github-issues-v2");
        assert_eq!(slug("Été à Zürich"), "été-à-zürich");
        assert_eq!(slug("!!!"), "");
    }
}

#[cfg(test)]
mod bad_input {
    use super::*;

    /// Loads `text` as `s.scenario.yaml`; the error as `line:column: message`.
    fn error_of(text: &str) -> String {
        let l = load_scenario(
            "s",
            Path::new("s.scenario.yaml"),
            Arc::new("s.scenario.yaml".into()),
            text,
        );
        match l.entry {
            Ok(_) => panic!("loaded:\n{text}"),
            Err(e) => format!("{}:{}: {}", e.location.line, e.location.column, e.message),
        }
    }

    const GOOD: &str = "name: Greets\ndescription: d\nenvironment:\n  type: local\nrun:\n  - input: hi\n    evaluations:\n      - type: string_contains\n        value: hello\njudgment:\n  strategy: all_pass\n";

    #[test]
    fn a_good_scenario_loads_under_its_name() {
        let l = load_scenario(
            "dir/s",
            Path::new("s.scenario.yaml"),
            Arc::new("s.scenario.yaml".into()),
            GOOD,
        );
        assert_eq!(l.trial, "dir/s::greets");
        let case = l.entry.unwrap();
        assert_eq!(case.mode.name(), "scenario");
        assert_eq!(case.assertions().count(), 1);
    }

    #[test]
    fn each_mistake_is_located_with_its_field_and_fix() {
        for (text, expected) in [
            ("name: x\nrun: [a, b\n", "invalid YAML"),
            ("name: x\ndescription: d\n", "1:1: missing required fields `environment`, `run`, `judgment`"),
            (&GOOD.replace("strategy: all_pass", "strategy: all_passes"), "11:3: field `judgment.strategy`: unknown strategy \"all_passes\"; did you mean \"all_pass\"?"),
            (&GOOD.replace("string_contains", "string_contain"), "8:9: field `run[0].evaluations[0].type`: unknown type \"string_contain\"; did you mean \"string_contains\"?"),
            (&GOOD.replace("    evaluations:", "    evaluation:"), "7:5: field `run[0].evaluation`: unknown key `evaluation` in a step; did you mean `evaluations`?"),
            (&GOOD.replace("  - input: hi\n", "  - lang: cobol\n    code: x\n"), "6:5: field `run[0].lang`: unknown language \"cobol\""),
            (&GOOD.replace("type: local", "type: 7"), "4:3: field `environment.type`: expected a string"),
            (&GOOD.replace("  - input: hi\n", "  - input: hi\n    conversation:\n      max_turns: 30\n      user_simulator: {persona: p, objective: o}\n"), "8:7: field `run[0].conversation.max_turns`: expected a whole number from 2 to 20, found 30"),
            (&GOOD.replace("judgment:", "setup:\n  mocks:\n    - method: m\n      responseFn: \"() => 1\"\njudgment:"), "field `setup.mocks[0].responseFn`: `responseFn` is JavaScript, which agentest does not run"),
        ] {
            let got = error_of(text);
            assert!(got.contains(expected), "expected {expected:?}\n got {got:?}\nfor:\n{text}");
        }
    }

    #[test]
    fn keys_real_files_carry_for_elizaos_are_accepted() {
        let text = GOOD
            .replace(
                "environment:",
                "plugins:\n  - '@elizaos/plugin-bootstrap'\nenvironment:",
            )
            .replace(
                "        value: hello\n",
                "        value: hello\n        description: says hello\n",
            );
        let l = load_scenario(
            "s",
            Path::new("s.scenario.yaml"),
            Arc::new("s.scenario.yaml".into()),
            &text,
        );
        assert!(l.entry.is_ok(), "{:?}", l.entry.err());
    }
}
