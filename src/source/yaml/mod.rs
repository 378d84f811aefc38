//! YAML formats: ElizaOS scenarios (`*.scenario.yaml`) and scenario matrices
//! (`*.matrix.yaml`).

mod matrix;
mod node;
mod scenario;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::case::{Case, Location, Mode};
use crate::errors::FieldError;
use crate::source::{CaseError, Loaded, SEPARATOR};

/// The endings of an ElizaOS scenario's file name.
pub(crate) const SCENARIO_ENDINGS: [&str; 2] = [".scenario.yaml", ".scenario.yml"];

/// The endings of a scenario matrix's file name.
pub(crate) const MATRIX_ENDINGS: [&str; 2] = [".matrix.yaml", ".matrix.yml"];

/// Whether `name` (a file name) is an ElizaOS scenario or scenario matrix.
pub(crate) fn is_scenario(name: &str) -> bool {
    SCENARIO_ENDINGS.iter().any(|e| name.ends_with(e)) || is_matrix(name)
}

/// Whether `name` is a scenario matrix.
pub(crate) fn is_matrix(name: &str) -> bool {
    MATRIX_ENDINGS.iter().any(|e| name.ends_with(e))
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
            generation: None,
            suite: suite.to_string(),
            trial,
            file: file.to_path_buf(),
            entry: Err(Box::new(CaseError {
                location,
                id: None,
                field,
                message,
            })),
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
        .map(crate::util::slug)
        .filter(|s| !s.is_empty());
    let trial = named
        .as_ref()
        .map(|s| format!("{suite}{SEPARATOR}{s}"))
        .unwrap_or(fallback);
    match scenario::read(&json) {
        Err(e) => {
            let pos = root.locate(&e.path);
            let field = (!e.path.is_empty()).then(|| e.path.clone());
            broken(trial, located(pos.line, pos.column), field, e.message)
        }
        Ok((name, scenario, mocks)) => Loaded {
            generation: None,
            suite: suite.to_string(),
            trial,
            file: file.to_path_buf(),
            entry: Ok(Box::new(Case {
                name: Some(name),
                location: located(root.pos.line, root.pos.column),
                mocks,
                ..scenario_case(named.unwrap_or_else(|| "scenario".into()), scenario, json)
            })),
        },
    }
}

/// Reads a matrix file: one trial per combination and run,
/// `<suite>::<axis>=<value>,...::run-<n>`, each a scenario checked like one. A mistake
/// in the matrix or its base scenario is one broken trial, `<suite>::matrix`.
pub(crate) fn load_matrix(
    suite: &str,
    file: &Path,
    shown: Arc<PathBuf>,
    text: &str,
) -> Vec<Loaded> {
    let entry = |trial: String, entry: Result<Case, CaseError>| Loaded {
        generation: None,
        suite: suite.to_string(),
        trial,
        file: file.to_path_buf(),
        entry: entry.map(Box::new).map_err(Box::new),
    };
    let read = match read_matrix(file, &shown, text) {
        Ok(read) => read,
        Err(e) => return vec![entry(format!("{suite}{SEPARATOR}matrix"), Err(e))],
    };
    let mut out = Vec::new();
    for picks in matrix::combinations(&read.matrix.axes) {
        for (id, case) in read.combination(&shown, &picks) {
            out.push(entry(format!("{suite}{SEPARATOR}{id}"), case));
        }
    }
    out
}

/// A matrix file and its base scenario, read and checked against each other.
struct ReadMatrix {
    /// The matrix file's YAML, to locate its mistakes.
    root: node::Node,
    matrix: matrix::Matrix,
    /// The base scenario's YAML, to locate its mistakes, and as JSON.
    base: node::Node,
    base_json: serde_json::Value,
    base_shown: Arc<PathBuf>,
}

/// A matrix's error at `line`, `column` of `file` (the matrix file or its base).
fn matrix_error(
    file: &Arc<PathBuf>,
    pos: node::Pos,
    field: Option<String>,
    message: String,
) -> CaseError {
    CaseError {
        location: Location {
            file: file.clone(),
            line: pos.line.max(1),
            column: pos.column.max(1),
        },
        id: None,
        field,
        message,
    }
}

/// Reads the matrix file `file` (shown as `shown`) and its base scenario; the error is
/// the trial `<suite>::matrix`'s.
fn read_matrix(file: &Path, shown: &Arc<PathBuf>, text: &str) -> Result<ReadMatrix, CaseError> {
    let root = node::parse(text)
        .map_err(|(m, p)| matrix_error(shown, p, None, format!("invalid YAML: {m}")))?;
    let field_error = |e: FieldError| {
        let field = (!e.path.is_empty()).then(|| e.path.clone());
        matrix_error(shown, root.locate(&e.path), field, e.message)
    };
    let m = matrix::read(&root.to_json()).map_err(field_error)?;
    let base_file = file.parent().unwrap_or(Path::new(".")).join(&m.base);
    let base_shown = Arc::new(crate::util::display_path(&base_file));
    let base_text = std::fs::read_to_string(&base_file).map_err(|e| {
        matrix_error(
            shown,
            root.locate("base_scenario"),
            Some("base_scenario".into()),
            format!(
                "failed to read {}: {e}; the path is relative to the matrix file",
                base_file.display()
            ),
        )
    })?;
    let base = node::parse(&base_text).map_err(|(msg, p)| {
        matrix_error(
            &base_shown,
            p,
            None,
            format!("invalid YAML in the base scenario: {msg}"),
        )
    })?;
    let base_json = base.to_json();
    // Every axis must point at a field the base scenario has.
    for (i, axis) in m.axes.iter().enumerate() {
        let mut probe = base_json.clone();
        if let Err(why) = matrix::set(&mut probe, &axis.parameter, axis.values[0].clone()) {
            let path = format!("matrix[{i}].parameter");
            return Err(matrix_error(
                shown,
                root.locate(&path),
                Some(path.clone()),
                format!("{why}; an axis can only vary a field the base scenario sets"),
            ));
        }
    }
    Ok(ReadMatrix {
        root,
        matrix: m,
        base,
        base_json,
        base_shown,
    })
}

impl ReadMatrix {
    /// The runs of the combination `picks` (a value's index on each axis): each run's
    /// id and its case, or the error located in the matrix (a value an axis set) or in
    /// the base scenario.
    fn combination(
        &self,
        shown: &Arc<PathBuf>,
        picks: &[usize],
    ) -> Vec<(String, Result<Case, CaseError>)> {
        let m = &self.matrix;
        let combo = matrix::combination_name(&m.axes, picks);
        let mut json = self.base_json.clone();
        let mut parameters = Vec::new();
        for (axis, &i) in m.axes.iter().zip(picks) {
            let value = axis.values[i].clone();
            // Checked by `read_matrix` for every axis: the field exists.
            let _ = matrix::set(&mut json, &axis.parameter, value.clone());
            parameters.push((axis.parameter.clone(), value));
        }
        let mut out = Vec::new();
        for run in 1..=m.runs {
            let id = format!("{combo}{SEPARATOR}run-{run}");
            let entry = match scenario::read(&json) {
                Ok((name, mut sc, mocks)) => {
                    sc.parameters = parameters.clone();
                    let title = if m.name.is_empty() {
                        name
                    } else {
                        m.name.clone()
                    };
                    Ok(Case {
                        name: Some(format!("{title} [{combo}] run {run}")),
                        location: Location {
                            file: shown.clone(),
                            line: self.root.pos.line.max(1),
                            column: self.root.pos.column.max(1),
                        },
                        mocks,
                        ..scenario_case(id.clone(), sc, json.clone())
                    })
                }
                Err(e) => Err(self.located(shown, picks, &id, e)),
            };
            out.push((id, entry));
        }
        out
    }

    /// A combination's error: a value an axis set is located in the matrix; the rest in
    /// the base.
    fn located(&self, shown: &Arc<PathBuf>, picks: &[usize], id: &str, e: FieldError) -> CaseError {
        let axis = self.matrix.axes.iter().position(|a| {
            e.path == a.parameter || e.path.starts_with(&format!("{}.", a.parameter))
        });
        let (at, pos) = match axis {
            Some(i) => (
                shown,
                self.root
                    .locate(&format!("matrix[{i}].values[{}]", picks[i])),
            ),
            None => (&self.base_shown, self.base.locate(&e.path)),
        };
        CaseError {
            id: Some(id.to_string()),
            ..matrix_error(at, pos, Some(e.path.clone()), e.message)
        }
    }
}

/// The case of a scenario (or a matrix combination).
fn scenario_case(
    id: String,
    scenario: crate::case::scenario::Scenario,
    raw: serde_json::Value,
) -> Case {
    Case {
        id,
        name: None,
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
        personas: Vec::new(),
        persona: None,
        origin: None,
        repeats: Default::default(),
        location: Location {
            file: Arc::new(PathBuf::new()),
            line: 1,
            column: 1,
        },
        raw: crate::case::Raw::new(&raw),
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
            Err(e) => e.to_string(),
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
            (&GOOD.replace("judgment:", "setup:\n  mocks:\n    - method: m\n      responseFn: \"() => 1\"\njudgment:"), "13:7: field `setup.mocks[0].responseFn`: `responseFn` is not supported (no JavaScript here); give a static `response`"),
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
