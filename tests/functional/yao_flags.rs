//! The rest of the Yao command line, through the real binary: `-c/--connector`,
//! `-u/--user`, `-t/--team` in every request to the agent under test (a real child
//! process, and an `openai` agent against loopback model servers), and `-r/--reporter`
//! (a reporter agent, a real child process, whose answer is the report file).

use std::process::Command;

use serde_json::{json, Value};

use crate::common::chat::ChatServer;
use crate::common::{clean, finish, Report, Run, Scratch, BIN};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        connector_user_and_team_reach_every_request,
        an_openai_agent_calls_the_endpoint_the_connector_names,
        a_reporter_agent_writes_the_report_file,
        a_reporter_without_a_report_is_an_error_and_writes_nothing,
        without_output_no_report_file_is_written,
    ]
}

/// An agent that answers, as `data`, what it received: the connector, user and team,
/// and the rest of the options.
const ECHO_AGENT: &str = r#"import json, sys
for line in sys.stdin:
    req = json.loads(line)
    o, m = req.get("options") or {}, req.get("metadata") or {}
    print(json.dumps({"content": "ok", "data": {"connector": o.get("connector"), "x": o.get("x"), "user": m.get("user"), "team": m.get("team")}}), flush=True)
"#;

/// A reporter: a Markdown page from the report it receives, naming what it was given.
const REPORTER: &str = r##"import json, sys
for line in sys.stdin:
    req = json.loads(line)
    m = req["metadata"]
    r = m["report"]
    s = r["summary"]
    lines = ["# %s report (%s)" % (m["format"], m["test_mode"]), "",
             "%d passed, %d failed of %d" % (s["passed"], s["failed"], s["total"]),
             "user %s, team %s" % (r["metadata"].get("user"), r["metadata"].get("team")),
             "options %s" % json.dumps(m["options"], sort_keys=True), ""]
    for c in r["results"]:
        lines.append("- %s: %s" % (c["trial"], c["status"]))
    print(json.dumps({"content": "\n".join(lines) + "\n"}), flush=True)
"##;

/// A reporter that has nothing to say.
const SILENT_REPORTER: &str = r#"import json, sys
for line in sys.stdin:
    print(json.dumps({"content": "   "}), flush=True)
"#;

fn project(tag: &str) -> Scratch {
    let s = Scratch::named("yao-flags", tag);
    s.write("echo.py", ECHO_AGENT);
    s.write("reporter.py", REPORTER);
    s.write("silent.py", SILENT_REPORTER);
    s.write(
        "agentest.toml",
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"echo.py\"]\n\n\
         [agents.reporter]\ntype = \"process\"\ncommand = [\"python3\", \"reporter.py\"]\n\n\
         [agents.silent]\ntype = \"process\"\ncommand = [\"python3\", \"silent.py\"]\n",
    );
    s.write_suite(
        "suite.jsonl",
        &[
            r#"{"id": "one", "input": "hi", "user": "alice", "team": "t1", "options": {"connector": "case-conn", "x": 1}, "assert": {"type": "contains", "value": "ok"}}"#,
            r#"{"id": "two", "turns": [{"input": "a"}, {"input": "b", "options": {"connector": "turn-conn"}}]}"#,
            r#"{"id": "three", "input": "hi", "assert": {"type": "contains", "value": "not said"}}"#,
        ],
    );
    s
}

fn run(s: &Scratch, args: &[&str]) -> Run {
    finish(
        clean(Command::new(BIN))
            .current_dir(s.path())
            .args(["test", "-i", "suite.jsonl", "--color", "never"])
            .args(args),
    )
}

/// What each turn of `trial` received: (connector, x, user, team) per turn.
fn received(report: &Report, trial: &str) -> Vec<Value> {
    report.case(trial)["turns"]
        .as_array()
        .expect("turns")
        .iter()
        .map(|t| t["data"].clone())
        .collect()
}

/// Without the flags each request carries the case's own values (a turn's options over
/// the case's); with `-c -u -t` every request of every case carries the flags', over the
/// case's and the turn's, and the other options are kept.
fn connector_user_and_team_reach_every_request() {
    let s = project("echo");
    let r = run(&s, &["-o", "plain.jsonl"]);
    assert_eq!(r.code, 1, "{r:?}");
    let plain = Report::read(&s.join("plain.jsonl"));
    assert_eq!(
        received(&plain, "suite::one"),
        [json!({"connector": "case-conn", "x": 1, "user": "alice", "team": "t1"})]
    );
    assert_eq!(
        received(&plain, "suite::two"),
        [
            json!({"connector": null, "x": null, "user": null, "team": null}),
            json!({"connector": "turn-conn", "x": null, "user": null, "team": null}),
        ]
    );

    let r = run(
        &s,
        &[
            "-c",
            "fast",
            "-u",
            "bob",
            "--team",
            "ops",
            "-o",
            "flags.jsonl",
        ],
    );
    assert_eq!(r.code, 1, "{r:?}");
    let flagged = Report::read(&s.join("flags.jsonl"));
    let all = |x: Value| json!({"connector": "fast", "x": x, "user": "bob", "team": "ops"});
    assert_eq!(received(&flagged, "suite::one"), [all(json!(1))]);
    assert_eq!(
        received(&flagged, "suite::two"),
        [all(Value::Null), all(Value::Null)]
    );
    assert_eq!(received(&flagged, "suite::three"), [all(Value::Null)]);

    // An empty value is a usage error, not an empty user.
    let r = run(&s, &["-u", ""]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("'--user <ID>'"), "{r:?}");
}

/// `-c NAME` moves an `openai` agent onto `[llms.NAME]`: the request goes to that
/// server with its model, and the agent's own endpoint gets nothing. A connector that
/// names no endpoint is a usage error that lists the ones there are, before any case.
fn an_openai_agent_calls_the_endpoint_the_connector_names() {
    let own = ChatServer::start();
    let fast = ChatServer::start();
    fast.answer("hi", &["hello from fast".to_string()]);
    let s = Scratch::named("yao-flags", "openai");
    s.write(
        "agentest.toml",
        &format!(
            "[llm]\nbase_url = \"{}\"\nmodel = \"own-model\"\n\n\
             [llms.fast]\nbase_url = \"{}\"\nmodel = \"fast-model\"\n\n\
             [agent]\ntype = \"openai\"\n\n[run]\ncassettes = \"off\"\n",
            own.url(),
            fast.url()
        ),
    );
    s.write_suite(
        "suite.jsonl",
        &[r#"{"id": "one", "input": "hi", "assert": {"type": "contains", "value": "fast"}}"#],
    );
    let r = run(&s, &["-c", "fast"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(own.count(), 0, "the agent's own endpoint was called");
    let bodies = fast.bodies("hi");
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert_eq!(bodies[0]["model"], "fast-model");
    assert!(r.stdout.contains("fast-model"), "{r:?}");

    let r = run(&s, &["-c", "slow"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains(
            "the connector `slow` (-c/--connector) is not an [llms.\"slow\"] in agentest.toml, and the agent `default` is an `openai` agent, whose connector is the model endpoint it calls; use one of: fast, or add [llms.\"slow\"]"
        ),
        "{r:?}"
    );
    assert_eq!(own.count() + fast.count(), 1, "a case ran");
}

/// `-r NAME -o FILE`: the reporter receives the whole report (summary, every result,
/// metadata with -u/-t), the format the extension names and the options; its answer is
/// the file, byte for byte. `-r` without `-o` is a usage error.
fn a_reporter_agent_writes_the_report_file() {
    let s = project("reporter");
    let r = run(
        &s,
        &[
            "-r",
            "reporter",
            "-o",
            "report.md",
            "-u",
            "bob",
            "-t",
            "ops",
        ],
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(
        s.read("report.md"),
        "# markdown report (reporter)\n\n\
         2 passed, 1 failed of 3\n\
         user bob, team ops\n\
         options {\"include_outputs\": true, \"verbose\": false}\n\n\
         - suite::one: passed\n\
         - suite::three: failed\n\
         - suite::two: passed\n"
    );
    assert!(
        r.stderr
            .contains("wrote report.md by the reporter `reporter` (3 cases)"),
        "{r:?}"
    );

    let r = run(&s, &["-r", "reporter"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("--output <OUTPUT>"), "{r:?}");
}

/// A reporter that answers nothing usable, twice, is an error with its words; the file
/// is not written, and the cases' results were printed before.
fn a_reporter_without_a_report_is_an_error_and_writes_nothing() {
    let s = project("silent");
    let r = run(&s, &["-r", "silent", "-o", "report.html"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains(
            "error: the report was not written: reporter `silent` answered twice without a report (text, or JSON) (the answer is empty); last answer: \"   \""
        ),
        "{r:?}"
    );
    assert!(r.stdout.contains("suite::three"), "{r:?}");
    assert!(!s.exists("report.html"));

    let r = run(&s, &["-r", "nobody", "-o", "report.html"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("reporter `nobody`: agent `nobody` is not defined"),
        "{r:?}"
    );
}

/// Without `-o` nothing but the run store is written (Yao would write
/// output-TIMESTAMP.jsonl beside the input), and `--help` says how to get a report.
fn without_output_no_report_file_is_written() {
    let s = project("no-output");
    let r = run(&s, &[]);
    assert_eq!(r.code, 1, "{r:?}");
    let written: Vec<String> = s
        .files()
        .iter()
        .map(|p| p.strip_prefix(s.path()).unwrap().display().to_string())
        .filter(|p| !p.ends_with(".py") && !p.starts_with(".agentest"))
        .collect();
    let mut written = written;
    written.sort();
    assert_eq!(written, ["agentest.toml", "suite.jsonl"], "{r:?}");
    let help = finish(clean(Command::new(BIN)).args(["test", "--help"]));
    assert!(
        help.stdout
            .contains("Without -o no report file is written (Yao writes output-TIMESTAMP.jsonl beside the input)"),
        "{help:?}"
    );
}
