//! tau2-bench task files, through the real binary: tau2's mock domain (its tasks file as
//! tau2 wrote it, in `examples/tau2-mock`) run offline against the example agent (a real
//! child process that owns the domain's environment) with the scripted simulated user
//! and the judge's recorded answers; `agentest import tau2` giving the same verdicts;
//! the built-in simulator's stop signals against a loopback model server; and bad task
//! files as located errors.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::chat::ChatServer;
use crate::common::{clean, finish, line_column, Report, Run, Scratch, BIN};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        the_mock_domain_runs_offline_with_the_example_agent,
        an_imported_suite_gives_the_same_trials_and_verdicts,
        the_built_in_simulator_ends_on_tau2_stop_signals,
        bad_task_files_are_located_errors_and_ignored_fields_are_said_once,
        a_large_tasks_file_loads_in_seconds_with_its_errors_located,
    ]
}

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tau2-mock");

/// The example, copied (the run writes nothing into the repository).
fn example(tag: &str) -> Scratch {
    let s = Scratch::named("tau2", tag);
    for f in ["tasks.json", "agent.py", "user.py", "agentest.toml"] {
        s.write(
            f,
            &std::fs::read_to_string(Path::new(EXAMPLE).join(f)).expect("example file"),
        );
    }
    let recorded = Path::new(EXAMPLE).join(".cassettes/tasks");
    for e in std::fs::read_dir(&recorded).expect("the recorded judge answers") {
        let p = e.expect("entry").path();
        let name = p.file_name().expect("name").to_string_lossy().to_string();
        s.write(
            &format!(".cassettes/tasks/{name}"),
            &std::fs::read_to_string(&p).expect("cassette"),
        );
    }
    s
}

/// `agentest test -i INPUT --simulator user -o report.jsonl` on CI (replay only: no
/// model is called).
fn run(s: &Scratch, input: &str) -> (Run, Report) {
    let r = finish(
        clean(Command::new(BIN))
            .current_dir(s.path())
            .env("CI", "true")
            .args([
                "test",
                "-i",
                input,
                "--simulator",
                "user",
                "--color",
                "never",
            ])
            .args(["-o", "report.jsonl"]),
    );
    let report = Report::read(&s.join("report.jsonl"));
    (r, report)
}

/// Each case's (status, termination), by id.
fn verdicts(report: &Report) -> BTreeMap<String, (String, String)> {
    report
        .cases
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_string(),
                (
                    c["status"].as_str().unwrap_or_default().to_string(),
                    c["termination"].as_str().unwrap_or_default().to_string(),
                ),
            )
        })
        .collect()
}

fn expected_verdicts() -> BTreeMap<String, (String, String)> {
    let v = |id: &str, status: &str, termination: &str| {
        (
            id.to_string(),
            (status.to_string(), termination.to_string()),
        )
    };
    [
        v("create_task_1", "passed", "all_checkpoints_reached"),
        v("create_task_1_nl_eval", "passed", "goal_achieved"),
        v(
            "create_task_1_with_env_assertions",
            "passed",
            "all_checkpoints_reached",
        ),
        v("impossible_task_1", "passed", "all_checkpoints_reached"),
        v("update_task_1", "passed", "all_checkpoints_reached"),
        v(
            "update_task_with_history_and_env_assertions",
            "passed",
            "all_checkpoints_reached",
        ),
        v(
            "update_task_with_initialization_actions",
            "passed",
            "all_checkpoints_reached",
        ),
        v(
            "update_task_with_initialization_data",
            "failed",
            "agent_completed",
        ),
        v(
            "update_task_with_message_history",
            "passed",
            "all_checkpoints_reached",
        ),
        v(
            "update_task_with_user_tools",
            "passed",
            "all_checkpoints_reached",
        ),
    ]
    .into_iter()
    .collect()
}

/// The ten mock tasks: the actions reached as tool calls with their arguments, the env
/// assertion the agent reports (its environment set up from `metadata.tau2`), the task
/// without a required checkpoint decided by the user's `###STOP###`, and the task whose
/// `communicate_info` is not said failing on it, by name.
fn the_mock_domain_runs_offline_with_the_example_agent() {
    let s = example("run");
    let (r, report) = run(&s, "tasks.json");
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(verdicts(&report), expected_verdicts(), "{}", report.text);
    assert!(
        report.error("tasks::update_task_with_initialization_data").contains(
            "required checkpoints missing: communicate-1 (last: expected the reply to contain \"The agent acknowledged the previous context\")"
        ),
        "{}",
        report.text
    );
    // Reported, not gating: an assertion on the user's environment.
    let tools = report.case("tasks::update_task_with_user_tools");
    let env = tools["checkpoints"]
        .as_array()
        .expect("checkpoints")
        .iter()
        .find(|c| c["id"] == "env-1")
        .expect("env-1");
    assert_eq!(
        (&env["required"], &env["reached"]),
        (&Value::Bool(false), &Value::Bool(false))
    );
    // The user decided: two turns, then ###STOP###.
    let nl = report.case("tasks::create_task_1_nl_eval");
    assert_eq!(nl["turns"].as_array().map(Vec::len), Some(2), "{nl}");
    assert!(r.stdout.contains("Replayed from cassettes"), "{r:?}");
}

/// `agentest import tau2 tasks.json -o tasks.jsonl`, run in a folder of its own, gives
/// the trials and verdicts of the tasks file; every line is a case the suite parser
/// reads.
fn an_imported_suite_gives_the_same_trials_and_verdicts() {
    let s = example("import");
    let imported = example("imported");
    let r = finish(clean(Command::new(BIN)).current_dir(s.path()).args([
        "import",
        "tau2",
        "tasks.json",
        "-o",
        &imported.join("tasks.jsonl").display().to_string(),
    ]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("(10 cases from 10 tau2 tasks)"), "{r:?}");
    std::fs::remove_file(imported.join("tasks.json")).expect("only the import remains");
    let lines: Vec<Value> = imported
        .read("tasks.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 10);
    assert_eq!(lines[0]["id"], "create_task_1");
    assert_eq!(
        lines[0]["checkpoints"][0]["assertions"][0],
        serde_json::json!({"type": "tool_called", "name": "create_task", "arguments": {"user_id": "user_1", "title": "Important Meeting"}})
    );

    let (_, direct) = run(&s, "tasks.json");
    let (r, from_import) = run(&imported, "tasks.jsonl");
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(verdicts(&from_import), verdicts(&direct));
    let trials = |rep: &Report| -> Vec<String> {
        let mut t: Vec<String> = rep
            .cases
            .iter()
            .map(|c| c["trial"].as_str().unwrap_or_default().to_string())
            .collect();
        t.sort();
        t
    };
    assert_eq!(trials(&from_import), trials(&direct));
}

/// The built-in simulator, on a model: told the stop signals and what it does not
/// know; `###TRANSFER###` ends the case as `transfer`, a failure that says so.
fn the_built_in_simulator_ends_on_tau2_stop_signals() {
    let server = ChatServer::start();
    let first =
        "(The conversation has not started yet: write your first message to the assistant.)";
    server.answer(
        first,
        &[r#"{"message": "I want to cancel reservation EHGLP3.", "goal_achieved": false}"#.into()],
    );
    server.answer(
        "ok",
        &[r####"{"message": "###TRANSFER###", "goal_achieved": false}"####.into()],
    );
    let s = Scratch::named("tau2", "signals");
    s.write(
        "agent.py",
        "import json, sys\nfor line in sys.stdin:\n    print(json.dumps({\"content\": \"ok\", \"awaiting_input\": True}), flush=True)\n",
    );
    s.write(
        "agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n\n\
             [llm]\nbase_url = \"{}\"\nmodel = \"sim\"\n\n[run]\ncassettes = \"off\"\n",
            server.url()
        ),
    );
    s.write(
        "tasks.json",
        r#"[{"id": "0", "user_scenario": {"persona": null, "instructions": {"domain": "airline", "reason_for_call": "You want to cancel reservation EHGLP3.", "known_info": "You are Emma Kim.", "unknown_info": "Your booking date.", "task_instructions": "Insist on a refund."}}, "evaluation_criteria": {"actions": [{"action_id": "cancel", "name": "cancel_reservation", "arguments": {"reservation_id": "EHGLP3"}}], "reward_basis": ["DB"]}}]"#,
    );
    let r = finish(clean(Command::new(BIN)).current_dir(s.path()).args([
        "test",
        "-i",
        "tasks.json",
        "--color",
        "never",
        "-o",
        "report.jsonl",
    ]));
    assert_eq!(r.code, 1, "{r:?}");
    let report = Report::read(&s.join("report.jsonl"));
    let case = report.case("tasks::0");
    assert_eq!(case["termination"], "transfer", "{}", report.text);
    assert_eq!(
        report.error("tasks::0"),
        "the simulated user ended the conversation with ###TRANSFER### after turn 1 with required checkpoints missing: cancel (last: expected a call to \"cancel_reservation\" with the expected arguments; no tool was called)"
    );
    let prompt = server.bodies(first)[0]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for part in [
        "Goal: You want to cancel reservation EHGLP3.",
        "Instructions: Insist on a refund.",
        "What you know: You are Emma Kim.",
        "What you do not know (if the assistant asks for it, say you do not know; never invent it): Your booking date.",
        "your message is ###STOP###",
    ] {
        assert!(prompt.contains(part), "{part:?} not in {prompt}");
    }
}

/// A bad task is one located error (file:line:column, the field, the fix) and one
/// failing trial; the other tasks load; fields agentest does not read are said once for
/// the file, however many tasks have them.
fn bad_task_files_are_located_errors_and_ignored_fields_are_said_once() {
    let s = Scratch::named("tau2", "bad");
    s.write(
        "tasks.json",
        "[\n\
         {\"id\": \"good\", \"annotations\": {\"x\": 1}, \"user_scenario\": {\"instructions\": \"Ask for task_1 to be completed.\"}, \"evaluation_criteria\": {\"nl_assertions\": [\"done\"]}},\n\
         {\"id\": \"basis\", \"annotations\": {\"x\": 2}, \"user_scenario\": {\"instructions\": \"x\"}, \"evaluation_criteria\": {\"nl_assertions\": [\"done\"], \"reward_basis\": [\"DBX\"]}},\n\
         {\"id\": \"nogoal\", \"user_scenario\": {\"persona\": \"p\"}, \"evaluation_criteria\": {\"nl_assertions\": [\"done\"]}},\n\
         {\"id\": \"empty\", \"user_scenario\": {\"instructions\": \"x\"}, \"evaluation_criteria\": {}},\n\
         {\"id\": \"good\", \"user_scenario\": {\"instructions\": \"x\"}, \"evaluation_criteria\": {\"nl_assertions\": [\"done\"]}}\n\
         ]\n",
    );
    let r = finish(clean(Command::new(BIN)).current_dir(s.path()).args([
        "test",
        "-i",
        "tasks.json",
        "--dry-run",
        "--color",
        "never",
    ]));
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("5 cases, 4 with errors"), "{r:?}");
    for expected in [
        "tasks::basis   error: tasks.json:3:150: field `[1].evaluation_criteria.reward_basis[0]`: tau2 task \"basis\": unknown reward type \"DBX\"; tau2's are DB, ENV_ASSERTION, NL_ASSERTION, ACTION, COMMUNICATE",
        "tasks::nogoal  error: tasks.json:4:18: field `[2].user_scenario.instructions`: tau2 task \"nogoal\": expected the user's instructions (a string, or an object with reason_for_call, known_info, unknown_info, task_instructions), found nothing",
        "tasks::empty   error: tasks.json:5:57: field `[3].evaluation_criteria`: tau2 task \"empty\": the task has nothing to check: its evaluation_criteria list no actions, env_assertions, communicate_info or nl_assertions",
        "tasks::good    dynamic",
        "tasks::task-5  error: tasks.json:6:2: field `[4].id`: tau2 task \"task-5\": duplicate task id \"good\"; each task needs its own",
    ] {
        assert!(r.stdout.contains(expected), "{expected:?} not in {r:?}");
    }
    assert_eq!(
        r.stderr
            .matches("tau2 fields agentest does not read, ignored: annotations (2 tasks)")
            .count(),
        1,
        "{r:?}"
    );
}

/// 10,000 tasks in one indented file (as tau2 writes them), multi-byte text throughout:
/// it loads in seconds (locating each task once rescanned the file: minutes), and the
/// errors of tasks deep in it point at their fields.
fn a_large_tasks_file_loads_in_seconds_with_its_errors_located() {
    let s = Scratch::named("tau2", "large");
    s.write(
        "agentest.toml",
        "[agent]\ntype = \"http\"\nurl = \"http://127.0.0.1:9/\"\n\n[llm]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
    );
    let n = 10_000;
    let tasks: Vec<Value> = (0..n)
        .map(|i| {
            let mut criteria =
                serde_json::json!({"nl_assertions": [format!("the agent answers café № {i} 😀")]});
            match i {
                8321 => criteria["reward_basis"] = serde_json::json!(["NL_ASSERTION", "DBX"]),
                9998 => criteria = serde_json::json!({}),
                _ => {}
            }
            serde_json::json!({
                "id": format!("t-{i}"),
                "description": {"purpose": "ünïcödé"},
                "user_scenario": {"instructions": format!("Ask for the refund № {i} — politely")},
                "evaluation_criteria": criteria,
            })
        })
        .collect();
    let text = serde_json::to_string_pretty(&tasks).unwrap();
    s.write("tasks.json", &text);
    let started = std::time::Instant::now();
    let r = finish(clean(Command::new(BIN)).current_dir(s.path()).args([
        "test",
        "-i",
        "tasks.json",
        "--dry-run",
        "--color",
        "never",
    ]));
    let took = started.elapsed();
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains(&format!("{n} cases, 2 with errors")),
        "{r:?}"
    );
    let dbx = line_column(&text, "\"DBX\"");
    let empty = line_column(&text, "\"evaluation_criteria\": {}");
    for expected in [
        format!("tasks::t-8321  error: tasks.json:{dbx}: field `[8321].evaluation_criteria.reward_basis[1]`: tau2 task \"t-8321\": unknown reward type \"DBX\""),
        format!("tasks::t-9998  error: tasks.json:{empty}: field `[9998].evaluation_criteria`: tau2 task \"t-9998\": the task has nothing to check"),
    ] {
        assert!(r.stdout.contains(&expected), "{expected:?} not in {}", &r.stdout[r.stdout.len().saturating_sub(3000)..]);
    }
    // Generous for a debug build on a loaded machine (it takes about 3 s); the quadratic
    // locator took over a minute.
    assert!(took.as_secs() < 30, "the dry run took {took:?}");
}
