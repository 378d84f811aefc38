//! Structured output against the real model (`structured_real`, opt-in: it needs
//! `AGENTEST_REALLLM_URL`, a server from `../shared/realllm/serve.sh`): for each form of
//! `structured_output`, how often the built-in judge and simulator needed their one
//! repair, and how often they failed twice (an `error`), over the same cases.

use std::time::Duration;

use serde_json::{json, Value};

use crate::{agentest, fixtures, project, run, Bench, Goal, Row, Unit};

/// Judge cases and simulator cases per form.
const JUDGES: usize = 20;
const SIMULATORS: usize = 10;

/// The forms measured, `auto` last (it settles on one of the others).
const FORMS: [&str; 5] = [
    "json_schema",
    "json_object_schema",
    "json_object",
    "off",
    "auto",
];

/// The rows: per form and role, the share of cases that ended in `error` (the role
/// answered twice without a usable answer), with the share repaired in the detail.
pub fn structured_real(b: &Bench, notes: &mut Vec<String>) -> Vec<Row> {
    let url = std::env::var("AGENTEST_REALLLM_URL").unwrap_or_default();
    if url.trim().is_empty() {
        return FORMS
            .iter()
            .flat_map(|f| ["judge", "simulator"].map(|role| (f, role)))
            .map(|(f, role)| Row {
                figure: figure(f, role),
                unit: Unit::Count,
                value: f64::NAN,
                goal: Goal::Report,
                detail: String::new(),
                invalid: Some(
                    "skipped: no real model (set AGENTEST_REALLLM_URL; ../shared/realllm/serve.sh 8089)"
                        .into(),
                ),
            })
            .collect();
    }
    let mut rows = Vec::new();
    for form in FORMS {
        let dir = project(b, &format!("structured-{form}"), Duration::ZERO);
        let config = std::fs::read_to_string(dir.join("agentest.toml")).expect("the config");
        fixtures::write(
            &dir,
            "agentest.toml",
            &format!(
                "{config}\n[llm]\nbase_url = \"{url}\"\nmodel = \"smollm2\"\nmax_tokens = 200\n\
                 timeout = \"60s\"\nmax_retries = 1\nstructured_output = \"{form}\"\n\n[run]\nconcurrency = 1\n"
            ),
        );
        let judges = (0..JUDGES).map(|i| {
            json!({"id": format!("j{i:02}"), "input": format!("hello {i}"),
                   "assert": {"type": "llm_judge", "prompt": format!("The reply repeats \"hello {i}\"")}})
        });
        let simulators = (0..SIMULATORS).map(|i| {
            json!({"id": format!("s{i:02}"), "mode": "dynamic", "input": format!("hello {i}"),
                   "simulator": {"persona": "A customer", "goal": format!("Get a refund for order {i}")},
                   "max_turns": 2,
                   "checkpoints": [{"id": "never", "assert": {"type": "contains", "value": "turn 9"}}]})
        });
        fixtures::write(
            &dir,
            "cases.jsonl",
            &fixtures::suite(judges.chain(simulators)),
        );
        let mut cmd = agentest(
            &dir,
            &[
                "test",
                "-i",
                "cases.jsonl",
                "-o",
                "report.jsonl",
                "--color",
                "never",
            ],
        );
        cmd.env("AGENTEST_CASSETTES", "off");
        let r = run(cmd, &dir.join("logs"), false);
        let report = std::fs::read_to_string(dir.join("report.jsonl")).unwrap_or_default();
        let records: Vec<Value> = report
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["type"] != "summary")
            .collect();
        let settled = std::fs::read_to_string(dir.join("logs/stderr.txt"))
            .unwrap_or_default()
            .lines()
            .find(|l| l.contains("takes structured output as"))
            .map(str::to_string);
        if let Some(line) = settled {
            notes.push(format!("structured_real ({form}): {line}"));
        }
        for (role, prefix, n) in [("judge", "j", JUDGES), ("simulator", "s", SIMULATORS)] {
            let mine: Vec<&Value> = records
                .iter()
                .filter(|v| {
                    v["trial"]
                        .as_str()
                        .is_some_and(|t| t.starts_with(&format!("cases::{prefix}")))
                })
                .collect();
            let errors = mine
                .iter()
                .filter(|v| {
                    v["status"] == "error"
                        && v["error"]
                            .as_str()
                            .is_some_and(|e| e.contains("answered twice without"))
                })
                .count();
            let other_errors = mine.iter().filter(|v| v["status"] == "error").count() - errors;
            // One call a case when the first answer was usable (the judge once, the
            // simulator for its one turn); two when it was repaired.
            let repaired = mine
                .iter()
                .filter(|v| v["status"] != "error" && v["model_calls"].as_u64() == Some(2))
                .count();
            let invalid = if mine.len() != n {
                Some(format!(
                    "{} of {n} records; {}",
                    mine.len(),
                    r.failure().unwrap_or_default()
                ))
            } else {
                None
            };
            rows.push(Row {
                figure: figure(form, role),
                unit: Unit::Count,
                value: errors as f64,
                goal: Goal::Report,
                detail: format!(
                    "of {n} cases: {errors} errors after the repair ({:.0}%), {repaired} repaired ({:.0}%), {other_errors} other errors (the server refused the form, a timeout)",
                    100.0 * errors as f64 / n as f64,
                    100.0 * repaired as f64 / n as f64,
                ),
                invalid,
            });
        }
    }
    rows
}

fn figure(form: &str, role: &str) -> String {
    format!("structured_real: {role} answers unusable twice, structured_output = {form}")
}
