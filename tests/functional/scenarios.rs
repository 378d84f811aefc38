//! ElizaOS scenarios through the real binary: steps in order in a fresh environment
//! folder (virtual_fs, code steps, file evaluators, the agent told where it is), the
//! judgment over every evaluation, and what cannot run said plainly.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::{finish, toml_str, Report, Run, Scratch, BIN};

fn read_report(path: &Path) -> Report {
    Report::read(path)
}

/// The record of `trial` in `report`; it must be there.
#[track_caller]
fn record<'a>(report: &'a Report, trial: &str) -> &'a Value {
    report
        .cases
        .iter()
        .find(|c| c["trial"] == trial)
        .unwrap_or_else(|| panic!("no record of {trial} in\n{}", report.text))
}

/// An agent that answers with where it runs and what it was told: `cwd=<dir>
/// env=<metadata.environment_dir> said=<input> mocks=<how many setup.mocks>`, and calls the tool `github.create_issue`
/// when asked to file an issue, reporting the action `REPLY`.
const AGENT: &str = r#"
import json, os, sys
for line in sys.stdin:
    req = json.loads(line)
    mocks = len((req.get("setup") or {}).get("mocks", []))
    reply = {"content": "cwd=%s env=%s said=%s mocks=%d" % (os.getcwd(), req["metadata"].get("environment_dir"), req["input"], mocks), "actions": ["REPLY"]}
    if "issue" in req["input"]:
        reply["tool_calls"] = [{"name": "github.create_issue", "arguments": {"title": "x"}}]
    print(json.dumps(reply))
"#;

fn project(tag: &str) -> Scratch {
    let s = Scratch::named("scenarios", tag);
    s.write("agent.py", AGENT);
    s.write(
        "agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n",
            toml_str("agent.py")
        ),
    );
    s
}

fn run(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(args)
        .args(["--color", "never"])
        .env_remove("AGENTEST_KEEP_ENV")
        .stdin(Stdio::null());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    finish(&mut cmd)
}

const FILES: &str = r#"name: 'Files and code'
description: 'steps in order in one environment'
plugins: ['@elizaos/plugin-bootstrap']
environment:
  type: local
setup:
  virtual_fs:
    "config.json": '{"setting": "value"}'
    "data/notes.txt": "remember me"
  mocks:
    - service: github
      method: create_issue
      when: {input: {title: x}}
      response: {number: 7}
    - method: search
      response: []
run:
  - name: 'greets'
    input: 'Hello there'
    evaluations:
      - type: string_contains
        value: 'HELLO THERE'
      - type: execution_time
        max_duration_ms: 20000
      - type: trajectory_contains_action
        action: reply
  - name: 'reads and writes files'
    lang: python
    code: |
      import json
      print(json.load(open("config.json"))["setting"], open("data/notes.txt").read())
      open("out.txt", "w").write("done")
    evaluations:
      - type: regex_match
        pattern: '^value remember me'
      - type: file_exists
        path: out.txt
      - type: file_contains
        path: out.txt
        value: done
      - type: command_exit_code_is
        command: 'test -f config.json'
        expected_code: 0
  - input: 'please file an issue'
    evaluations:
      - type: trajectory_contains_action
        action: CREATE_ISSUE
judgment:
  strategy: all_pass
"#;

/// Every step runs in one fresh folder holding `virtual_fs`; the process agent runs
/// there and is told its path; code sees and leaves files; each evaluator's verdict is
/// in the report; the folder is gone afterwards unless --keep-env.
fn steps_run_in_a_fresh_environment_and_every_evaluator_holds() {
    let s = project("files");
    s.write("suites/files.scenario.yaml", FILES);
    let run1 = run(s.path(), &["test", "-i", "suites", "-o", "r.jsonl"], &[]);
    assert_eq!(run1.code, 0, "{run1:?}");
    let report = read_report(&s.join("r.jsonl"));
    let case = &report.cases[0];
    assert_eq!(case["trial"], "files::files-and-code", "{case}");
    assert_eq!(case["mode"], "scenario");
    let turns = case["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3);
    // The agent ran in the environment and was told where it is.
    let said = turns[0]["output"].as_str().unwrap();
    let cwd = said
        .split_whitespace()
        .next()
        .unwrap()
        .trim_start_matches("cwd=");
    assert!(cwd.contains("agentest-env-files--files-and-code"), "{said}");
    assert!(said.contains(&format!("env={cwd} ")), "{said}");
    assert!(
        !Path::new(cwd).exists(),
        "the environment is removed after the case"
    );
    // The code step: its output, exit code and the files it left.
    assert_eq!(turns[1]["input_source"], "code");
    assert_eq!(turns[1]["output"], "value remember me\n");
    assert_eq!(turns[1]["code"]["exit_code"], 0);
    assert_eq!(
        turns[1]["code"]["files"],
        serde_json::json!(["config.json", "data/notes.txt", "out.txt"])
    );
    let labels: Vec<&str> = turns
        .iter()
        .flat_map(|t| t["assertions"].as_array().unwrap())
        .map(|a| {
            assert_eq!(a["passed"], true, "{a}");
            a["label"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        labels,
        [
            "string_contains \"HELLO THERE\"",
            "execution_time at most 20000 ms",
            "trajectory_contains_action \"reply\"",
            "regex_match \"^value remember me\"",
            "file_exists \"out.txt\"",
            "file_contains \"out.txt\" \"done\"",
            "command_exit_code_is `test -f config.json` 0",
            "trajectory_contains_action \"CREATE_ISSUE\"",
        ]
    );
    // --keep-env keeps the folder and says where.
    let kept = run(s.path(), &["test", "-i", "suites", "--keep-env"], &[]);
    assert_eq!(kept.code, 0, "{kept:?}");
    let line = kept
        .stderr
        .lines()
        .find(|l| l.starts_with("agentest: kept the environment at "))
        .unwrap_or_else(|| panic!("{kept:?}"));
    let dir = Path::new(line.trim_start_matches("agentest: kept the environment at "));
    assert!(dir.join("out.txt").is_file(), "{kept:?}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `all_pass` fails on the first failed evaluation, naming its step; `any_pass` passes
/// with one; every evaluation is reported either way.
fn the_judgment_decides_over_every_evaluation() {
    let s = project("judgment");
    let scenario = |strategy: &str| {
        format!(
            "name: Mixed\ndescription: d\nenvironment: {{type: local}}\nrun:\n  - input: hi\n    evaluations:\n      - type: string_contains\n        value: nowhere\n  - lang: sh\n    code: 'echo ok; exit 3'\n    evaluations:\n      - type: string_contains\n        value: ok\n      - type: file_exists\n        path: missing.txt\njudgment:\n  strategy: {strategy}\n"
        )
    };
    s.write("suites/all.scenario.yaml", &scenario("all_pass"));
    s.write("suites/any.scenario.yaml", &scenario("any_pass"));
    let r = run(s.path(), &["test", "-i", "suites", "-o", "r.jsonl"], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    let report = read_report(&s.join("r.jsonl"));
    let by = |t: &str| record(&report, t);
    let all = by("all::mixed");
    assert_eq!(all["status"], "failed");
    assert_eq!(
        all["error"],
        "step 1: string_contains \"nowhere\": expected the reply to contain \"nowhere\" (judgment: all_pass)"
    );
    // Every step ran and every evaluation is in the record.
    assert_eq!(all["turns"].as_array().unwrap().len(), 2);
    assert_eq!(all["turns"][1]["code"]["exit_code"], 3);
    assert_eq!(
        all["turns"][1]["assertions"][1]["message"],
        "no file missing.txt in the environment"
    );
    let any = by("any::mixed");
    assert_eq!(any["status"], "passed", "{any}");
}

/// ElizaOS's `when.matcher` is JavaScript: a load error with what to write instead,
/// never a regex read differently or a condition dropped.
fn a_javascript_matcher_is_a_load_error() {
    let s = project("matcher");
    s.write(
        "suites/m.scenario.yaml",
        "name: M\ndescription: d\nenvironment: {type: local}\nsetup:\n  mocks:\n    - method: search\n      when:\n        matcher: \"args[0].includes('x')\"\n      response: []\nrun:\n  - input: hi\n    evaluations: []\njudgment: {strategy: all_pass}\n",
    );
    let r = run(s.path(), &["test", "-i", "suites", "--dry-run"], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("m::m  error: suites/m.scenario.yaml:8:9: field `setup.mocks[0].when.matcher`: `matcher` is JavaScript in ElizaOS, which agentest does not run; match with `args`, `partialArgs` or `input` instead"),
        "{r:?}"
    );
}

/// What is wrong with a scenario file, said in the file's terms (not the YAML parser's
/// budget or API), located: a second document, nesting past the parser's limit, an
/// alias bomb, a `virtual_fs` key naming a folder, file evaluators pointing out of the
/// environment.
fn bad_files_are_said_in_the_users_terms() {
    let s = project("unclear");
    let scenario = |setup: &str, evaluation: &str| {
        format!("name: S\ndescription: d\nenvironment: {{type: local}}\n{setup}run:\n  - input: hi\n    evaluations:\n{evaluation}judgment: {{strategy: all_pass}}\n")
    };
    let contains = "      - type: string_contains\n        value: hi\n";
    s.write(
        "suites/two.scenario.yaml",
        &format!("{}---\nname: second\n", scenario("", contains)),
    );
    let mut deep = String::from("name: deep\nrun:\n");
    for level in 0..100 {
        deep.push_str(&format!("{}- \n", "  ".repeat(level + 1)));
    }
    s.write("suites/deep.scenario.yaml", &deep);
    s.write(
        "suites/flow.scenario.yaml",
        &format!(
            "name: flow\nrun: {}{}\n",
            "[".repeat(5000),
            "]".repeat(5000)
        ),
    );
    let mut bomb =
        String::from("name: bomb\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (k, prev) in ["b", "c", "d", "e", "f", "g", "h", "i"]
        .iter()
        .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
    {
        bomb.push_str(&format!(
            "{k}: &{k} [{}]\n",
            vec![format!("*{prev}"); 9].join(", ")
        ));
    }
    s.write("suites/bomb.scenario.yaml", &bomb);
    s.write(
        "suites/folder.scenario.yaml",
        &scenario("setup:\n  virtual_fs:\n    'notes/': 'x'\n", contains),
    );
    s.write(
        "suites/up.scenario.yaml",
        &scenario(
            "",
            "      - type: file_exists\n        path: ../../../../etc/passwd\n",
        ),
    );
    s.write(
        "suites/abs.scenario.yaml",
        &scenario(
            "",
            "      - type: file_contains\n        path: /etc/passwd\n        value: root\n",
        ),
    );
    let r = run(s.path(), &["test", "-i", "suites", "--dry-run"], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    for expected in [
        "error: suites/two.scenario.yaml:10:1: invalid YAML: the file holds a second YAML document (`---` at line 10); a scenario file holds one: remove the `---` and what follows, or move the second scenario to a file of its own",
        "error: suites/deep.scenario.yaml:66:",
        ": invalid YAML: lists and mappings nested deeper than 64 levels at line 66; a scenario needs a few",
        "error: suites/flow.scenario.yaml:2:261: invalid YAML: lists and mappings nested deeper than 64 levels at line 2; a scenario needs a few",
        ": invalid YAML: aliases (`*name`) expand to more than 250,000 nodes (a YAML alias bomb?); a scenario needs far fewer: write the values out, or repeat an alias less",
        "error: suites/folder.scenario.yaml:6:5: field `setup.virtual_fs.notes/`: \"notes/\" ends in `/`, so it names a folder; a `virtual_fs` key names a file (its folders are made for it): give the file's name after it",
        "error: suites/up.scenario.yaml:8:9: field `run[0].evaluations[0].path`: \"../../../../etc/passwd\" must be a relative path inside the environment, without `..`",
        "error: suites/abs.scenario.yaml:8:9: field `run[0].evaluations[0].path`: \"/etc/passwd\" must be a relative path inside the environment, without `..`",
    ] {
        assert!(r.stdout.contains(expected), "{expected:?} not in {r:?}");
    }
    for unclear in ["budget", "from_str_multiple", "Depth", "Nodes"] {
        assert!(!r.stdout.contains(unclear), "{unclear:?} in {r:?}");
    }
}

/// A file the run leaves pointing out of the environment (a symlink to /etc/passwd) is
/// not read: the evaluator is an error saying so, and the file's text is nowhere.
fn file_evaluators_never_look_outside_the_environment() {
    let s = project("symlink");
    s.write(
        "suites/link.scenario.yaml",
        "name: Link\ndescription: d\nenvironment: {type: local}\nrun:\n  - name: links out\n    lang: python\n    code: |\n      import os\n      os.symlink('/etc/passwd', 'link.txt')\n    evaluations:\n      - type: file_contains\n        path: link.txt\n        value: root\njudgment: {strategy: all_pass}\n",
    );
    let r = run(s.path(), &["test", "-i", "suites", "-o", "r.jsonl"], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    let report = read_report(&s.join("r.jsonl"));
    let case = record(&report, "link::link");
    assert_eq!(case["status"], "error", "{case}");
    let error = case["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(
            "\"link.txt\" is outside the environment folder; file evaluators look inside it only"
        ),
        "{case}"
    );
    assert!(!report.text.contains("root:x:0"), "{}", report.text);
}

/// An e2b environment is a service agentest cannot reach: skipped with the reason off
/// CI, a failure on CI. A code step in a language it cannot run is an error naming it.
fn what_cannot_run_is_said_plainly() {
    let s = project("unsupported");
    s.write(
        "suites/remote.scenario.yaml",
        "name: Remote\ndescription: d\nenvironment: {type: e2b}\nrun:\n  - input: hi\n    evaluations: []\njudgment: {strategy: all_pass}\n",
    );
    let off_ci = run(
        s.path(),
        &["test", "-i", "suites", "-o", "r.jsonl"],
        &[("CI", "")],
    );
    assert_eq!(off_ci.code, 0, "{off_ci:?}");
    let report = read_report(&s.join("r.jsonl"));
    assert_eq!(report.cases[0]["status"], "skipped");
    assert!(
        report.cases[0]["error"].as_str().unwrap().contains("environment type e2b (E2B's remote sandboxes) is not supported by agentest; use `environment: {type: local}`"),
        "{}",
        report.cases[0]
    );
    let on_ci = run(
        s.path(),
        &["test", "-i", "suites", "-o", "r.jsonl"],
        &[("CI", "true")],
    );
    assert_eq!(on_ci.code, 1, "{on_ci:?}");
    assert_eq!(read_report(&s.join("r.jsonl")).cases[0]["status"], "failed");
}

/// A matrix: one trial per combination and run, each a scenario with the axes' values
/// set, its report recording them; an axis that points nowhere is one located error.
fn a_matrix_is_a_trial_per_combination_and_run() {
    let s = project("matrix");
    s.write(
        "suites/base.scenario.yaml",
        "name: Base\ndescription: d\nenvironment: {type: local}\nrun:\n  - input: hello\n    evaluations:\n      - type: regex_match\n        pattern: said=hello\njudgment: {strategy: all_pass}\n",
    );
    s.write(
        "suites/grid.matrix.yaml",
        "name: Grid\nbase_scenario: base.scenario.yaml\nruns_per_combination: 2\nmatrix:\n  - parameter: run[0].input\n    values: ['hello world', 'bye']\n  - parameter: run[0].evaluations[0].pattern\n    values: ['said=hello', 'said=bye']\n",
    );
    let r = run(
        s.path(),
        &["test", "-i", "suites/grid.matrix.yaml", "-o", "r.jsonl"],
        &[],
    );
    assert_eq!(r.code, 1, "{r:?}");
    let report = read_report(&s.join("r.jsonl"));
    let mut got: Vec<(String, String)> = report
        .cases
        .iter()
        .map(|c| {
            (
                c["trial"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let expected: Vec<(String, String)> = [
        ("input=bye,pattern=said-bye::run-1", "passed"),
        ("input=bye,pattern=said-bye::run-2", "passed"),
        ("input=bye,pattern=said-hello::run-1", "failed"),
        ("input=bye,pattern=said-hello::run-2", "failed"),
        ("input=hello-world,pattern=said-bye::run-1", "failed"),
        ("input=hello-world,pattern=said-bye::run-2", "failed"),
        ("input=hello-world,pattern=said-hello::run-1", "passed"),
        ("input=hello-world,pattern=said-hello::run-2", "passed"),
    ]
    .iter()
    .map(|(t, st)| (format!("grid::{t}"), st.to_string()))
    .collect();
    assert_eq!(got, expected);
    let one = report
        .cases
        .iter()
        .find(|c| c["trial"] == "grid::input=bye,pattern=said-hello::run-2")
        .unwrap();
    assert_eq!(
        one["parameters"],
        serde_json::json!({"run[0].input": "bye", "run[0].evaluations[0].pattern": "said=hello"})
    );
    assert_eq!(one["name"], "Grid [input=bye,pattern=said-hello] run 2");
    assert!(
        r.stdout
            .contains("► [input=bye,pattern=said-hello::run-2] Grid"),
        "{r:?}"
    );
    // An axis that points at nothing in the base scenario: one located error.
    s.write(
        "suites/grid.matrix.yaml",
        "name: Grid\nbase_scenario: base.scenario.yaml\nmatrix:\n  - parameter: run[0].conversation.max_turns\n    values: [2, 3]\n",
    );
    let r = run(
        s.path(),
        &["test", "-i", "suites/grid.matrix.yaml", "--dry-run"],
        &[],
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.starts_with("grid::matrix  error: suites/grid.matrix.yaml:4:5: field `matrix[0].parameter`: the base scenario has no `run[0].conversation`; an axis can only vary a field the base scenario sets\n"),
        "{r:?}"
    );
}

/// `agentest scenario run FILE` does what `elizaos scenario run` does: exit 0 when the
/// scenario passes, 1 when it fails, the transcript shown; `--live` sends no mocks;
/// `--env-file` sets the variables the config uses before anything reads them.
fn scenario_run_is_the_elizaos_command() {
    let s = project("scenario-run");
    s.write(
        "agentest.toml",
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"${AGENT_FILE}\"]\n",
    );
    s.write(".env", "# the agent\nexport AGENT_FILE='agent.py'\n");
    let scenario = |value: &str| {
        format!("name: Mocked\ndescription: d\nenvironment: {{type: local}}\nsetup:\n  mocks:\n    - method: search\n      response: []\nrun:\n  - input: hi\n    evaluations:\n      - type: string_contains\n        value: '{value}'\njudgment: {{strategy: all_pass}}\n")
    };
    s.write("ok.scenario.yaml", &scenario("mocks=1"));
    s.write("live.scenario.yaml", &scenario("mocks=0"));
    let ok = run(
        s.path(),
        &["scenario", "run", "ok.scenario.yaml", "--env-file", ".env"],
        &[],
    );
    assert_eq!(ok.code, 0, "{ok:?}");
    assert!(
        ok.stdout.contains("Agent: \"cwd="),
        "the transcript is shown: {ok:?}"
    );
    assert!(
        ok.stdout.contains("✓ string_contains \"mocks=1\""),
        "{ok:?}"
    );
    let failed = run(
        s.path(),
        &[
            "scenario",
            "run",
            "live.scenario.yaml",
            "--env-file",
            ".env",
        ],
        &[],
    );
    assert_eq!(failed.code, 1, "{failed:?}");
    let live = run(
        s.path(),
        &[
            "scenario",
            "run",
            "live.scenario.yaml",
            "--env-file",
            ".env",
            "--live",
        ],
        &[],
    );
    assert_eq!(live.code, 0, "live mode sends no mocks: {live:?}");
    // Without the env file the config's variable is unset: a config error, exit 2.
    let missing = run(s.path(), &["scenario", "run", "ok.scenario.yaml"], &[]);
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(missing.stderr.contains("AGENT_FILE"), "{missing:?}");
    s.write("bad.env", "AGENT_FILE agent.py\n");
    let bad = run(
        s.path(),
        &[
            "scenario",
            "run",
            "ok.scenario.yaml",
            "--env-file",
            "bad.env",
        ],
        &[],
    );
    assert_eq!(bad.code, 2, "{bad:?}");
    assert_eq!(
        bad.stderr,
        "error: bad.env:1: expected KEY=VALUE, found a line without `=`\n"
    );
}

/// A simulated user played by an agent, by persona: `satisfied` thanks the agent,
/// `repeater` says the same thing again, `counter` says a new thing every turn, `done`
/// says its goal is achieved.
const USER: &str = r#"
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    meta = req.get("metadata") or {}
    persona, turn = meta.get("persona"), meta.get("turn_number")
    if persona == "satisfied":
        answer = {"message": "thank you, that helps", "goal_achieved": False}
    elif persona == "repeater":
        answer = {"message": "same", "goal_achieved": False}
    elif persona == "done":
        answer = {"message": "all good", "goal_achieved": True}
    else:
        answer = {"message": "message %d" % turn, "goal_achieved": False}
    print(json.dumps({"content": json.dumps(answer)}))
"#;

/// A conversation step: the user simulator (here an agent, `--simulator user`) talks
/// until a termination condition holds (satisfaction, a stuck agent, the goal, the turn
/// limit), turn evaluations check every reply, final evaluations the conversation; the
/// record says why and whether it ended early.
/// A project whose config also has `[agents.user]`, the [`USER`] simulator, and `extra`.
fn with_user(tag: &str, extra: &str) -> Scratch {
    let s = project(tag);
    s.write("user.py", USER);
    s.write(
        "agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n\n[agents.user]\ntype = \"process\"\ncommand = [\"python3\", {}]\n{extra}",
            toml_str("agent.py"),
            toml_str("user.py")
        ),
    );
    s
}

/// `agentest test -i suites --simulator user -o r.jsonl` in `s`, which must fail (some
/// scenario does), and its report.
#[track_caller]
fn run_with_user(s: &Scratch) -> Report {
    let r = run(
        s.path(),
        &[
            "test",
            "-i",
            "suites",
            "--simulator",
            "user",
            "-o",
            "r.jsonl",
        ],
        &[],
    );
    assert_eq!(r.code, 1, "{r:?}");
    read_report(&s.join("r.jsonl"))
}

fn conversation_steps_end_by_their_conditions() {
    let s = with_user("conversation", "");
    let scenario = |persona: &str, condition: &str| {
        format!(
            "name: {persona}\ndescription: d\nenvironment: {{type: local}}\nrun:\n  - input: 'Hi'\n    conversation:\n      max_turns: 3\n      user_simulator: {{persona: {persona}, objective: get help}}\n      termination_conditions:\n        - type: {condition}\n      turn_evaluations:\n        - type: string_contains\n          value: 'said='\n      final_evaluations:\n        - type: conversation_length\n          max_turns: 2\n        - type: user_satisfaction\n          measurement_method: keyword_analysis\n          satisfaction_threshold: 0.6\njudgment: {{strategy: all_pass}}\n"
        )
    };
    s.write(
        "suites/satisfied.scenario.yaml",
        &scenario("satisfied", "user_expresses_satisfaction"),
    );
    s.write(
        "suites/repeater.scenario.yaml",
        &scenario("repeater", "conversation_stuck"),
    );
    s.write(
        "suites/done.scenario.yaml",
        &scenario("done", "goal_achieved"),
    );
    s.write(
        "suites/counter.scenario.yaml",
        &scenario("counter", "escalation_needed"),
    );
    let report = run_with_user(&s);
    let by = |t: &str| record(&report, t);
    for (trial, status, termination, turns, early) in [
        (
            "satisfied::satisfied",
            "passed",
            "user_expresses_satisfaction",
            2,
            true,
        ),
        // "same" twice: the agent's reply repeats its previous one.
        (
            "repeater::repeater",
            "failed",
            "conversation_stuck",
            3,
            false,
        ),
        ("done::done", "failed", "goal_achieved", 2, true),
        ("counter::counter", "failed", "max_turns", 3, false),
    ] {
        let c = by(trial);
        assert_eq!(c["status"], status, "{trial}: {c}");
        assert_eq!(c["termination"], termination, "{trial}: {c}");
        let all = c["turns"].as_array().unwrap();
        assert_eq!(all.len(), turns, "{trial}: {c}");
        assert_eq!(all[0]["input_source"], "initial");
        assert_eq!(all[1]["input_source"], "simulated");
        let last = all.last().unwrap();
        assert_eq!(last["ending"]["ended_early"], early, "{trial}: {c}");
        // Every reply got its turn evaluation; the last also the final ones.
        for t in all {
            assert_eq!(
                t["assertions"][0]["label"], "string_contains \"said=\"",
                "{trial}: {t}"
            );
        }
        assert_eq!(
            last["assertions"][1]["label"],
            "conversation_length at most 2 turns"
        );
    }
    // The failures say which evaluation, in which step, under which judgment.
    assert_eq!(
        by("counter::counter")["error"],
        "step 1: conversation_length at most 2 turns: the conversation took 3 turn(s) (judgment: all_pass)"
    );
    assert!(
        by("done::done")["error"].as_str().unwrap().starts_with("step 1: user_satisfaction ≥ 0.6 (keyword_analysis): 0 positive and 0 negative indicator(s)"),
        "{}",
        by("done::done")
    );
}

/// Routes the built-in judge's requests (by its system prompt) to `judge`.
fn judge_route(body: &Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    if system.starts_with("You are a strict, fair evaluator") {
        "judge".into()
    } else {
        "other".into()
    }
}

/// `custom_condition` ends the conversation when the judge's score reaches its
/// threshold; the judged conversation evaluators pass or fail by their score; the judge
/// sees the conversation. (The server answers in the order the judge is asked.)
fn judged_conditions_and_evaluators_go_by_the_judge_score() {
    use crate::common::chat::ChatServer;
    let server = ChatServer::routed(judge_route);
    let verdict = |passed: bool, score: f64, reason: &str| {
        serde_json::json!({"passed": passed, "score": score, "reason": reason}).to_string()
    };
    server.answer(
        "judge",
        &[
            verdict(false, 0.3, "not yet"),
            verdict(true, 0.9, "understood"),
            verdict(true, 0.8, "asks and answers"),
            verdict(false, 0.4, "lukewarm"),
            verdict(true, 0.9, "remembers"),
        ],
    );
    let s = with_user(
        "judged",
        &format!(
            "\n[llm]\nbase_url = \"{}\"\nmodel = \"test-model\"\nmax_retries = 0\n\n[run]\ncassettes = \"off\"\n",
            server.url()
        ),
    );
    s.write(
        "suites/judged.scenario.yaml",
        "name: Judged\ndescription: d\nenvironment: {type: local}\nrun:\n  - input: 'Teach me'\n    conversation:\n      max_turns: 4\n      user_simulator: {persona: counter, objective: learn}\n      termination_conditions:\n        - type: custom_condition\n          llm_judge: {prompt: 'Does the user understand?', threshold: 0.8}\n      final_evaluations:\n        - type: conversation_flow\n          required_patterns: [question_then_answer]\n        - type: user_satisfaction\n          measurement_method: llm_judge\n        - type: context_retention\n          test_memory_of: ['Teach me']\n          memory_accuracy_threshold: 0.85\njudgment: {strategy: all_pass}\n",
    );
    let report = run_with_user(&s);
    let c = &report.cases[0];
    assert_eq!(c["termination"], "custom_condition", "{c}");
    let turns = c["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{c}");
    assert_eq!(turns[1]["ending"]["ended_early"], true);
    let verdicts: Vec<(bool, String)> = turns[1]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["passed"].as_bool().unwrap(),
                a["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            (true, "score 0.80: asks and answers".to_string()),
            (false, "score 0.40: lukewarm".to_string()),
            (
                true,
                "score 0.90: remembers; mentioned later: 1/1".to_string()
            ),
        ]
    );
    assert_eq!(
        c["error"],
        "step 1: user_satisfaction ≥ 0.7 (llm_judge): score 0.40: lukewarm (judgment: all_pass)"
    );
    // The judge was asked about the conversation, the condition's question first.
    let bodies = server.bodies("judge");
    assert_eq!(bodies.len(), 5);
    let asked = bodies[0].to_string();
    assert!(
        asked.contains("Does the user understand?") && asked.contains("Teach me"),
        "{asked}"
    );
}

/// The ElizaOS scenarios as their authors wrote them (`tests/eliza-corpus`), against the
/// example agent, offline: every model call replayed from the committed cassettes
/// (`strict`: an unrecorded call fails), each scenario's verdict as its file means it.
fn the_elizaos_examples_run_offline_from_cassettes() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/eliza-corpus");
    let out = Scratch::named("scenarios", "corpus");
    let report_path = out.join("r.jsonl");
    let r = run(
        &corpus,
        &[
            "test",
            "-i",
            ".",
            "--compact",
            "-o",
            report_path.to_str().unwrap(),
        ],
        &[("AGENTEST_CASSETTES", "strict")],
    );
    assert_eq!(r.code, 1, "{r:?}");
    let report = read_report(&report_path);
    let mut got: Vec<(String, String)> = report
        .cases
        .iter()
        .filter(|c| {
            !c["trial"]
                .as_str()
                .unwrap()
                .starts_with("conversation-matrix::")
        })
        .map(|c| {
            let suite = c["trial"]
                .as_str()
                .unwrap()
                .split("::")
                .next()
                .unwrap()
                .to_string();
            (suite, c["status"].as_str().unwrap().to_string())
        })
        .collect();
    got.sort();
    let expected = [
        ("basic-conversation", "passed"),
        // The example agent apologises, which the recorded judge marks down.
        ("customer-support-conversation", "failed"),
        // Two of its steps are meant to fail.
        ("execution-time-test", "failed"),
        // Meant to fail under all_pass: "Missing" is not in the output.
        ("failing-test", "failed"),
        // Meant to fail validation.
        ("invalid-missing-fields", "error"),
        // The recorded judge ends the lesson at once, under the 6 turns it asks for.
        ("knowledge-transfer", "failed"),
        // Its pattern '"setting":\\s*"value"' wants a backslash, as a RegExp would too.
        ("legacy-compatibility", "failed"),
        ("mock-test", "passed"),
        // any_pass: "help" is there, "assist" is not.
        ("natural-language-test", "passed"),
        ("test-github-issues", "passed"),
    ]
    .map(|(a, b)| (a.to_string(), b.to_string()));
    assert_eq!(got, expected, "{r:?}");
    let matrix: Vec<&Value> = report
        .cases
        .iter()
        .filter(|c| {
            c["trial"]
                .as_str()
                .unwrap()
                .starts_with("conversation-matrix::")
        })
        .collect();
    assert_eq!(matrix.len(), 16, "2×2×2×2 combinations");
    assert!(matrix.iter().all(|c| c["status"] == "passed"), "{r:?}");
    // Nothing was spent: every model call came from a cassette.
    let s = &report.summary;
    assert!(s["model_calls"].as_u64().unwrap() > 0, "{}", report.text);
    assert_eq!(s["model_calls"], s["replayed_calls"], "{}", report.text);
    // The natural-language test passes on one evaluation of two.
    let nl = report
        .cases
        .iter()
        .find(|c| {
            c["trial"]
                .as_str()
                .unwrap()
                .starts_with("natural-language-test::")
        })
        .unwrap();
    let verdicts: Vec<bool> = nl["turns"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(verdicts, [true, false]);
    // Code steps saw the virtual files.
    let legacy = report
        .cases
        .iter()
        .find(|c| {
            c["trial"]
                .as_str()
                .unwrap()
                .starts_with("legacy-compatibility::")
        })
        .unwrap();
    assert!(
        legacy["turns"][1]["output"]
            .as_str()
            .unwrap()
            .contains("Config setting: value"),
        "{legacy}"
    );
}

/// agentest's own example scenarios (`agent-tests/eliza`), offline from their
/// cassettes: together they use every evaluator, every termination condition, both
/// judgments and a matrix, and each holds the verdict it was written for.
fn the_example_scenarios_cover_every_evaluator_and_ending() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Scratch::named("scenarios", "examples");
    // The examples, offline and strict, with a report of the format `name` asks for.
    let run_examples = |name: &str| {
        let path = out.join(name);
        let r = run(
            root,
            &[
                "test",
                "-i",
                "agent-tests/eliza",
                "-o",
                path.to_str().unwrap(),
            ],
            &[("AGENTEST_CASSETTES", "strict")],
        );
        assert_eq!(r.code, 0, "{r:?}");
        path
    };
    let report = read_report(&run_examples("r.jsonl"));
    // In the order they ended; sorted here.
    let mut trials: Vec<&str> = report
        .cases
        .iter()
        .map(|c| c["trial"].as_str().unwrap())
        .collect();
    trials.sort_unstable();
    assert_eq!(
        trials,
        [
            "any-pass::any-of-the-checks",
            "endings::every-way-a-conversation-ends",
            "expense-chat::files-a-travel-expense-in-conversation",
            "phrasing::input=is-there-a-limit-on-meal::run-1",
            "phrasing::input=what-is-the-meal-policy::run-1",
            "policy::meal-policy-and-receipts",
        ]
    );
    assert!(
        report.cases.iter().all(|c| c["status"] == "passed"),
        "{}",
        report.text
    );
    // Every evaluator type and every termination condition is used.
    let mut evaluators = std::collections::BTreeSet::new();
    let mut endings = Vec::new();
    for c in &report.cases {
        for t in c["turns"].as_array().unwrap() {
            for a in t["assertions"].as_array().unwrap() {
                evaluators.insert(a["type"].as_str().unwrap().to_string());
            }
            if !t["ending"].is_null() {
                let e = &t["ending"];
                endings.push((
                    c["trial"]
                        .as_str()
                        .unwrap()
                        .split("::")
                        .next()
                        .unwrap()
                        .to_string(),
                    t["step"]["name"].as_str().unwrap().to_string(),
                    e["termination"].as_str().unwrap().to_string(),
                    e["turns"].as_u64().unwrap(),
                    e["ended_early"].as_bool().unwrap(),
                ));
            }
        }
    }
    let all_evaluators = [
        "command_exit_code_is",
        "context_retention",
        "conversation_flow",
        "conversation_length",
        "execution_time",
        "file_contains",
        "file_exists",
        "llm_judge",
        "regex_match",
        "string_contains",
        "trajectory_contains_action",
        "user_satisfaction",
    ];
    assert_eq!(evaluators.into_iter().collect::<Vec<_>>(), all_evaluators);
    // By file, each in its steps' order.
    endings.sort_by(|a, b| a.0.cmp(&b.0));
    let ending = |suite: &str, step: &str, why: &str, turns: u64, early: bool| {
        (
            suite.to_string(),
            step.to_string(),
            why.to_string(),
            turns,
            early,
        )
    };
    assert_eq!(
        endings,
        [
            ending("endings", "stuck", "conversation_stuck", 2, true),
            ending("endings", "out of turns", "max_turns_reached", 2, false),
            ending("endings", "escalated", "escalation_needed", 1, true),
            ending("endings", "solved", "agent_provides_solution", 3, true),
            ending(
                "endings",
                "satisfied",
                "user_expresses_satisfaction",
                4,
                true
            ),
            ending("endings", "judged", "custom_condition", 1, true),
            ending(
                "expense-chat",
                "files the expense",
                "goal_achieved",
                4,
                true
            ),
        ]
    );
    // any_pass: the scenario passed on one evaluation of two.
    let any = record(&report, "any-pass::any-of-the-checks");
    let verdicts: Vec<(String, bool)> = any["turns"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["label"].as_str().unwrap().to_string(),
                a["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("string_contains \"refund\"".to_string(), false),
            ("string_contains \"per day\"".to_string(), true)
        ]
    );
    // The judged conversation evaluators keep the judge's words, pass or fail.
    let endings_case = record(&report, "endings::every-way-a-conversation-ends");
    let satisfied = endings_case["turns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["step"]["name"] == "satisfied" && !t["ending"].is_null())
        .unwrap();
    let judged: Vec<(String, f64)> = satisfied["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["label"].as_str().unwrap().to_string(),
                a["judgment"]["score"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        judged,
        [
            (
                "conversation_flow question_then_answer, problem_then_solution ≥ 0.7".to_string(),
                0.9
            ),
            (
                "context_retention of \"training\", \"$80\" ≥ 0.8".to_string(),
                0.9
            ),
            (
                "user_satisfaction ≥ 0.7 (sentiment_analysis)".to_string(),
                0.9
            ),
            ("user_satisfaction ≥ 0.7 (llm_judge)".to_string(), 0.9),
        ]
    );
    assert!(
        satisfied["assertions"][1]["message"]
            .as_str()
            .unwrap()
            .ends_with("mentioned later: 2/2"),
        "{satisfied}"
    );
    // The code step's result, with the virtual file and the one it wrote.
    let policy = record(&report, "policy::meal-policy-and-receipts");
    let code = &policy["turns"][1]["code"];
    assert_eq!(code["lang"], "python");
    assert_eq!(code["exit_code"], 0);
    assert_eq!(
        code["files"],
        serde_json::json!(["receipts/lunch.json", "verdict.txt"])
    );
    assert_eq!(policy["turns"][1]["step"]["name"], "checks a receipt");
    // The matrix records the value each trial ran with.
    let m = record(&report, "phrasing::input=is-there-a-limit-on-meal::run-1");
    assert_eq!(
        m["parameters"]["run[0].input"],
        "Is there a limit on meals?"
    );
    // Nothing was spent: every model call came from a cassette.
    let s = &report.summary;
    assert!(s["model_calls"].as_u64().unwrap() > 0, "{}", report.text);
    assert_eq!(s["model_calls"], s["replayed_calls"], "{}", report.text);
    // The HTML report shows the steps, the code step's result, how each conversation
    // ended and the judge's reason for a pass.
    let html = std::fs::read_to_string(run_examples("r.html")).unwrap();
    for part in [
        "<span class=\"step-name\">step 2 (checks a receipt)</span><span class=\"pill\">code</span>",
        "<div class=\"who\">Code (python)</div>",
        "<div class=\"who\">Result: exit code 0</div><div class=\"kv\"><div class=\"k\">stdout</div><pre>approved\n</pre></div>",
        "<div class=\"k\">files</div><pre>receipts/lunch.json\nverdict.txt</pre>",
        "<div class=\"note ending\">Ended: conversation_stuck after 2 of 4 turns, early</div>",
        "<span class=\"label\">user_satisfaction ≥ 0.7 (llm_judge)</span> <span class=\"muted\">the reply answers the request (score 0.9)</span>",
    ] {
        assert!(html.contains(part), "{part} not in the HTML report");
    }
}

/// Environment folders are made ahead of their cases; when `--fail-fast` stops the run,
/// the ones made for cases that never ran are removed, `--keep-env` or not, and only
/// the folder of a case that ran is kept.
fn folders_made_ahead_for_cases_that_never_ran_are_removed() {
    let s = project("ahead");
    for i in 0..6 {
        // The first fails; the rest would pass.
        let want = if i == 0 { "nowhere" } else { "said" };
        s.write(
            &format!("suites/s{i}.scenario.yaml"),
            &format!("name: n{i}\ndescription: d\nenvironment: {{type: local}}\nsetup:\n  virtual_fs: {{'a.txt': 'x'}}\nrun:\n  - input: 'hi'\n    evaluations:\n      - type: string_contains\n        value: {want}\njudgment: {{strategy: all_pass}}\n"),
        );
    }
    let tmp = s.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let tmp_str = tmp.to_str().unwrap();
    let left = || std::fs::read_dir(&tmp).unwrap().count();
    let args = ["test", "-i", "suites", "--fail-fast", "--parallel", "1"];
    let r = run(s.path(), &args, &[("TMPDIR", tmp_str)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("--fail-fast stopped the run"), "{r:?}");
    assert_eq!(left(), 0, "every folder removed: {r:?}");
    let kept = run(
        s.path(),
        &[&args[..], &["--keep-env"]].concat(),
        &[("TMPDIR", tmp_str)],
    );
    assert_eq!(kept.code, 1, "{kept:?}");
    let names: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names.len(),
        1,
        "only the case that ran keeps its folder: {names:?}"
    );
    assert!(names[0].starts_with("agentest-env-s0--n0-"), "{names:?}");
    assert_eq!(
        kept.stderr
            .matches("agentest: kept the environment at ")
            .count(),
        1,
        "{kept:?}"
    );
}

/// A scenario pinned as a golden transcript: its steps, a code step's code, output,
/// exit code and files are in the file (the environment folder's path, different in
/// every run, as `[environment]`), and a changed output fails with the diff.
fn a_scenario_transcript_is_pinned_as_a_golden_file() {
    let s = project("golden");
    s.write(
        "agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n\n[golden]\nsuites = [\"g\"]\n",
            toml_str("agent.py")
        ),
    );
    let scenario = |word: &str| {
        format!("name: pinned\ndescription: d\nenvironment: {{type: local}}\nrun:\n  - name: greet\n    input: 'hi'\n    evaluations: []\n  - lang: bash\n    code: 'echo {word} > out.txt; cat out.txt'\n    evaluations:\n      - type: file_exists\n        path: out.txt\njudgment: {{strategy: all_pass}}\n")
    };
    s.write("suites/g.scenario.yaml", &scenario("first"));
    let wrote = run(
        s.path(),
        &["test", "-i", "suites"],
        &[("AGENTEST_UPDATE", "always")],
    );
    assert_eq!(wrote.code, 0, "{wrote:?}");
    let golden = std::fs::read_to_string(s.join("suites/g.scenario.golden/pinned.txt")).unwrap();
    for part in [
        "case: g::pinned\nmode: scenario\n\n=== step 1 (greet): message\n\n--- turn 1 (static)\nuser: hi\nagent: cwd=[environment] env=[environment] said=hi mocks=0\n",
        "\n=== step 2: code\n\n--- turn 2 (code)\ncode (shell): echo first > out.txt; cat out.txt\nstdout: first\nexit code 0\nfiles: out.txt\n✓ file_exists \"out.txt\"\n",
    ] {
        assert!(golden.contains(part), "{part:?} not in\n{golden}");
    }
    let same = run(
        s.path(),
        &["test", "-i", "suites"],
        &[("AGENTEST_UPDATE", "no")],
    );
    assert_eq!(same.code, 0, "{same:?}");
    s.write("suites/g.scenario.yaml", &scenario("second"));
    let changed = run(
        s.path(),
        &["test", "-i", "suites"],
        &[("AGENTEST_UPDATE", "no")],
    );
    assert_eq!(changed.code, 1, "{changed:?}");
    assert!(
        changed
            .stdout
            .contains("the transcript differs from the golden file")
            && changed.stdout.contains("-stdout: first")
            && changed.stdout.contains("+stdout: second"),
        "{changed:?}"
    );
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        steps_run_in_a_fresh_environment_and_every_evaluator_holds,
        the_judgment_decides_over_every_evaluation,
        what_cannot_run_is_said_plainly,
        a_matrix_is_a_trial_per_combination_and_run,
        a_javascript_matcher_is_a_load_error,
        bad_files_are_said_in_the_users_terms,
        file_evaluators_never_look_outside_the_environment,
        scenario_run_is_the_elizaos_command,
        conversation_steps_end_by_their_conditions,
        judged_conditions_and_evaluators_go_by_the_judge_score,
        the_elizaos_examples_run_offline_from_cassettes,
        the_example_scenarios_cover_every_evaluator_and_ending,
        folders_made_ahead_for_cases_that_never_ran_are_removed,
        a_scenario_transcript_is_pinned_as_a_golden_file,
    ]
}
