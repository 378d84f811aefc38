//! Generated cases: `-i "agents:NAME?..."`, `-i "scripts:NAME?..."` and suite lines
//! `{"generate": ...}`, through the real binary, with the example generator agent and
//! script in `examples/case-generator` (real child processes), the example expense agent
//! under test, and a loopback model server for a model-backed generator recorded into a
//! cassette and replayed offline.

use std::process::Command;

use serde_json::{json, Value};

use crate::common::chat::ChatServer;
use crate::common::{clean, finish, Report, Run, Scratch, BIN};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        an_agent_generator_gets_its_input_and_its_cases_run,
        a_script_generator_gets_its_parameters_on_stdin,
        bad_generated_cases_are_located_errors_and_the_rest_run,
        taken_ids_are_made_unique_and_said,
        fewer_cases_than_asked_warn_and_none_is_an_error,
        a_generator_that_answers_prose_is_asked_once_more,
        bad_generator_references_say_what_to_write,
        a_suite_line_generates_cases_and_a_recording_replays_them_offline,
    ]
}

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");

/// A project whose agent is the example expense assistant, with the example generator
/// agent (`generator`) and script (`expense-cases`), and `extra` config.
fn project(tag: &str, extra: &str) -> Scratch {
    let s = Scratch::named("generators", tag);
    s.write(
        "agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"{EXAMPLES}/expense-agent/agent.py\"]\n\n\
             [agents.generator]\ntype = \"process\"\ncommand = [\"python3\", \"{EXAMPLES}/case-generator/agent.py\"]\n\n\
             [scripts.expense-cases]\ncommand = [\"python3\", \"{EXAMPLES}/case-generator/script.py\"]\n{extra}"
        ),
    );
    s
}

/// `agentest test -i INPUT -o report.jsonl` (or `more`, which may name its own `-o`)
/// in the project.
fn run(s: &Scratch, input: &str, more: &[&str]) -> (Run, Option<Report>) {
    let report = s.join("report.jsonl");
    let _ = std::fs::remove_file(&report);
    let output: &[&str] = if more.contains(&"-o") {
        &[]
    } else {
        &["-o", "report.jsonl"]
    };
    let r = finish(
        clean(Command::new(BIN))
            .current_dir(s.path())
            .args(["test", "-i", input, "--color", "never"])
            .args(output)
            .args(more),
    );
    let report = report.exists().then(|| Report::read(&report));
    (r, report)
}

fn record<'a>(report: &'a Report, trial: &str) -> &'a Value {
    report
        .cases
        .iter()
        .find(|c| c["trial"] == trial)
        .unwrap_or_else(|| panic!("no record of {trial}:\n{}", report.text))
}

fn trials(report: &Report) -> Vec<String> {
    let mut t: Vec<String> = report
        .cases
        .iter()
        .map(|c| c["trial"].as_str().unwrap_or_default().to_string())
        .collect();
    t.sort();
    t
}

/// The requested count of cases, generated for the agent named by `-n`, with the query
/// parameters and the target in the generator's input; they run and pass. `--dry-run -o`
/// writes them in normal form and runs nothing.
fn an_agent_generator_gets_its_input_and_its_cases_run() {
    let s = project("agent", "");
    let (r, report) = run(&s, "agents:generator?count=3&focus=policy&tone=terse", &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let report = report.expect("a report");
    assert_eq!(
        trials(&report),
        [
            "generated/generator::G1",
            "generated/generator::G2",
            "generated/generator::G3"
        ],
        "{r:?}"
    );
    assert!(
        r.stdout.contains("Input: agents:generator (3 test cases)"),
        "{r:?}"
    );
    assert_eq!(report.summary["passed"], 3, "{}", report.text);

    let (r, _) = run(
        &s,
        "agents:generator?count=2&focus=policy&tone=terse",
        &["--dry-run", "-o", "generated.jsonl"],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("2 cases, 0 with errors"), "{r:?}");
    assert!(
        r.stderr.contains("wrote generated.jsonl (2 cases)"),
        "{r:?}"
    );
    let lines: Vec<Value> = s
        .read("generated.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(lines.len(), 2);
    // What the generator was given: the seed's GeneratorInput with every parameter.
    assert_eq!(
        lines[0]["metadata"]["generated_from"],
        json!({"test_mode": "generator", "target_agent": "default", "count": 2, "focus": "policy", "tone": "terse"})
    );
    assert_eq!(lines[1]["input"], "What is the receipt policy?");
    // The written suite runs as any other.
    let (r, report) = run(&s, "generated.jsonl", &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(report.expect("a report").summary["passed"], 2);
}

/// `[scripts.NAME]` receives the parameters (`count` a number) as JSON on stdin and
/// prints JSON Lines; a script that fails says so with its stderr.
fn a_script_generator_gets_its_parameters_on_stdin() {
    let s = project("script", "");
    let (r, report) = run(&s, "scripts:expense-cases?scenario=travel&count=2", &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let report = report.expect("a report");
    assert_eq!(
        trials(&report),
        [
            "generated/expense-cases::travel-1",
            "generated/expense-cases::travel-2"
        ]
    );
    let (r, _) = run(
        &s,
        "scripts:expense-cases?scenario=travel&count=1",
        &["--dry-run", "-o", "g.jsonl"],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let line: Value = serde_json::from_str(s.read("g.jsonl").trim()).expect("JSON");
    assert_eq!(
        line["metadata"]["params"],
        json!({"scenario": "travel", "count": 1})
    );

    let (r, report) = run(&s, "scripts:expense-cases?scenario=space", &[]);
    assert_eq!(r.code, 1, "{r:?}");
    let rec = record(
        report.as_ref().expect("a report"),
        "generated/expense-cases::generator",
    );
    let error = rec["error"].as_str().unwrap_or_default();
    assert!(error.contains("scripts:expense-cases"), "{error}");
    assert!(error.contains("unknown scenario 'space'"), "{error}");
}

/// A generated case with a mistake is one failing trial, located by the generator and
/// the case's index, naming the field and the fix; the others run.
fn bad_generated_cases_are_located_errors_and_the_rest_run() {
    let s = project("broken", "");
    let (r, report) = run(&s, "agents:generator?count=3&broken=1", &[]);
    assert_eq!(r.code, 1, "{r:?}");
    let report = report.expect("a report");
    let bad = record(&report, "generated/generator::G2");
    assert_eq!(bad["status"], "error");
    let error = bad["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("agents:generator:2:"),
        "located at the generator's case 2: {error}"
    );
    assert!(
        error.contains("field `asserts`: generated case 2: unknown key `asserts` in a case; did you mean `assert`?"),
        "{error}"
    );
    assert_eq!(
        record(&report, "generated/generator::G1")["status"],
        "passed"
    );
    assert_eq!(
        record(&report, "generated/generator::G3")["status"],
        "passed"
    );
}

/// Ids that collide are made unique (`G1-2`, `G1-3`); stderr and the records say so.
fn taken_ids_are_made_unique_and_said() {
    let s = project("collide", "");
    let (r, report) = run(&s, "agents:generator?count=3&collide=1", &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let report = report.expect("a report");
    assert_eq!(
        trials(&report),
        [
            "generated/generator::G1",
            "generated/generator::G1-2",
            "generated/generator::G1-3"
        ]
    );
    let note =
        "agents:generator: generated case 2 has the id \"G1\", which is taken; it runs as \"G1-2\"";
    assert!(r.stderr.contains(note), "{r:?}");
    assert_eq!(record(&report, "generated/generator::G1-2")["note"], note);
    assert!(record(&report, "generated/generator::G1")
        .get("note")
        .is_none());
}

/// Fewer cases than `count` is a warning and the cases run; none is a failing trial.
fn fewer_cases_than_asked_warn_and_none_is_an_error() {
    let s = project("count", "");
    let (r, report) = run(&s, "agents:generator?count=3&fewer=1", &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr
            .contains("agents:generator generated 2 cases of the 3 asked (count=3)"),
        "{r:?}"
    );
    assert_eq!(report.expect("a report").summary["passed"], 2);

    let (r, report) = run(&s, "agents:generator?none=1", &[]);
    assert_eq!(r.code, 1, "{r:?}");
    let report = report.expect("a report");
    assert_eq!(trials(&report), ["generated/generator::generator"]);
    let rec = record(&report, "generated/generator::generator");
    assert_eq!(rec["status"], "error");
    assert!(
        rec["error"]
            .as_str()
            .unwrap_or_default()
            .contains("agents:generator generated no cases"),
        "{}",
        report.text
    );
}

/// An answer that is not cases is asked for once more (with `metadata.repair`); the
/// generator here answers prose first, then cases.
fn a_generator_that_answers_prose_is_asked_once_more() {
    let s = project("prose", "");
    let (r, report) = run(&s, "agents:generator?count=2&prose=1", &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(report.expect("a report").summary["passed"], 2);
}

/// A malformed reference, or a generator that is not defined, is a clear error.
fn bad_generator_references_say_what_to_write() {
    let s = project("refs", "");
    let (r, _) = run(&s, "agents:gen?count=0", &[]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains(
            "failed to read the generator `agents:gen?count=0`: `count=0` is not a number of cases from 1 to 10000"
        ),
        "{r:?}"
    );
    let (r, _) = run(&s, "agent:generator", &[]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("`agent:` is no kind of generator; did you mean `agents:`?"),
        "{r:?}"
    );
    // Generator lines in a suite: each mistake located at its line and field; the
    // suite's case still runs.
    s.write(
        "bad.jsonl",
        "{\"id\": \"ok\", \"input\": \"What is the expense policy?\", \"assert\": {\"type\": \"contains\", \"value\": \"reimbursed\"}}\n\
         {\"generate\": \"agent:generator\"}\n\
         {\"generate\": \"agents:generator?count=2\", \"id\": \"x\"}\n\
         {\"generate\": 5}\n",
    );
    let (r, report) = run(&s, "bad.jsonl", &[]);
    assert_eq!(r.code, 1, "{r:?}");
    let report = report.expect("a report");
    let error = |t: &str| {
        record(&report, t)["error"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        error("bad::generate-2"),
        "bad.jsonl:2:2: field `generate`: expected a generator like \"agents:NAME?count=5\" or \"scripts:NAME\", found \"agent:generator\""
    );
    assert_eq!(
        error("bad::generate-3"),
        "bad.jsonl:3:42: field `id`: a generator line holds only `generate`; the generated cases carry their own fields"
    );
    assert!(
        error("bad::generate-4").ends_with("found a number"),
        "{}",
        error("bad::generate-4")
    );
    assert_eq!(record(&report, "bad::ok")["status"], "passed");

    let (r, report) = run(&s, "agents:generater", &[]);
    assert_eq!(r.code, 1, "{r:?}");
    let report = report.expect("a report");
    let error = record(&report, "generated/generater::generator")["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        error.starts_with(
            "agents:generater:1:1: agent `generater` is not defined; add [agents.\"generater\"]"
        ),
        "{error}"
    );
    assert!(error.ends_with("did you mean `generator`?"), "{error}");
    let (r, report) = run(&s, "scripts:nothing", &[]);
    assert_eq!(r.code, 1, "{r:?}");
    let error = record(
        report.as_ref().expect("a report"),
        "generated/nothing::generator",
    )["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        error.starts_with(
            "scripts:nothing:1:1: script `nothing` is not defined; add [scripts.\"nothing\"]"
        ),
        "{error}"
    );
}

/// A suite line `{"generate": ...}` naming a model-backed generator (`type = "openai"`):
/// its cases join the suite; its model call is recorded, so on CI (replay only) the
/// same cases come back with the model server gone; without a recording, CI fails
/// the generator as any missing recording.
fn a_suite_line_generates_cases_and_a_recording_replays_them_offline() {
    let server = ChatServer::start();
    let cases = json!({"cases": [
        {"id": "M1", "input": "What is the meal limit?", "assert": {"type": "contains", "value": "75"}},
        {"id": "own", "input": "What is the approval limit?", "assert": {"type": "contains", "value": "5000"}},
    ]});
    server.answer("Generate 2 test cases.", &[cases.to_string()]);
    let s = project(
        "suite-line",
        &format!(
            "\n[llm]\nbase_url = \"{}\"\nmodel = \"gen-model\"\napi_key_env = \"GEN_TEST_KEY\"\ntimeout = \"5s\"\nmax_retries = 0\n\n\
             [agents.llm-gen]\ntype = \"openai\"\nsystem = \"You write test cases.\"\n",
            server.url()
        ),
    );
    s.write(
        "suite.jsonl",
        "{\"id\": \"own\", \"input\": \"What is the policy?\", \"assert\": {\"type\": \"contains\", \"value\": \"reimbursed\"}}\n\
         {\"generate\": \"agents:llm-gen?count=2&focus=limits\"}\n",
    );
    let live = |extra_env: &[(&str, &str)]| {
        let report = s.join("report.jsonl");
        let _ = std::fs::remove_file(&report);
        let r = finish(
            clean(Command::new(BIN))
                .current_dir(s.path())
                .env("GEN_TEST_KEY", "sk-gen")
                .envs(extra_env.iter().copied())
                .args([
                    "test",
                    "-i",
                    "suite.jsonl",
                    "-o",
                    "report.jsonl",
                    "--color",
                    "never",
                ]),
        );
        (r, report.exists().then(|| Report::read(&report)))
    };
    let (r, report) = live(&[]);
    assert_eq!(r.code, 0, "{r:?}");
    let report = report.expect("a report");
    // The generated `own` collides with the suite's own case.
    assert_eq!(
        trials(&report),
        ["suite::M1", "suite::own", "suite::own-2"],
        "{r:?}"
    );
    assert_eq!(server.count(), 1, "one model call");
    let body = &server.bodies("Generate 2 test cases.")[0];
    // The agent's own instructions, then the generator prompt.
    assert_eq!(
        body["messages"][0]["content"], "You write test cases.",
        "{body}"
    );
    let system = body["messages"][1]["content"].as_str().unwrap_or_default();
    assert!(
        system.contains("You are a test case generator for AI agents."),
        "{body}"
    );
    assert!(system.contains("focus on: limits"), "{body}");
    let cassette = s.join(".cassettes/suite/generate-2-llm-gen.jsonl");
    assert!(cassette.exists(), "the generator's call is recorded");
    assert!(
        !s.read(".cassettes/suite/generate-2-llm-gen.jsonl")
            .contains("sk-gen"),
        "no key in the cassette"
    );

    // Offline on CI: the same cases, from the recording.
    drop(server);
    let (r, report) = live(&[("CI", "true")]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        trials(&report.expect("a report")),
        ["suite::M1", "suite::own", "suite::own-2"]
    );

    // Without the recording, CI fails the generator and still runs the suite's own case.
    std::fs::remove_file(&cassette).expect("remove the cassette");
    let (r, report) = live(&[("CI", "true")]);
    assert_eq!(r.code, 1, "{r:?}");
    let report = report.expect("a report");
    assert_eq!(
        trials(&report),
        ["suite::generate-2", "suite::own"],
        "{r:?}"
    );
    let error = record(&report, "suite::generate-2")["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(error.starts_with("suite.jsonl:2:1: "), "{error}");
    assert!(error.contains("recording"), "{error}");
    assert_eq!(record(&report, "suite::own")["status"], "passed");
}
