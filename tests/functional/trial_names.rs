//! Trial names through the real binary: a name two cases share is one located load
//! error (never a case silently skipped as "run by another process"), however the two
//! came to share it.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::common::{expense_agent_section, finish, Report, Run, Scratch, BIN};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        a_trial_name_defined_twice_is_one_located_error_and_the_rest_runs,
        a_trial_name_defined_twice_fails_the_run_without_a_store_too,
        a_long_name_is_cut_with_a_warning_and_pads_no_other_failure,
    ]
}

/// `agentest test -i suites -o r.jsonl` in `dir`, with the run store at `store`.
fn test_run(dir: &Path, store: &str) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(["test", "-i", "suites", "-o", "r.jsonl", "--color", "never"])
        .env("AGENTEST_STORE", store)
        .env_remove("NO_COLOR")
        .env_remove("CI")
        .stdin(Stdio::null());
    finish(&mut cmd)
}

/// A scenario named `name` asking "hello" and expecting `expected` in the reply.
fn scenario(name: &str, expected: &str) -> String {
    format!(
        "name: {name}\ndescription: d\nenvironment: {{type: local}}\nrun:\n  - input: hello\n    evaluations:\n      - type: string_contains\n        value: '{expected}'\njudgment: {{strategy: all_pass}}\n"
    )
}

/// A suites folder where every way two cases come to share a trial name is present,
/// beside cases that do not: `foo.jsonl`'s `x` and the scenario `foo.scenario.yaml`
/// named `x` (which fails: without the check, its failure hid behind the other's pass),
/// `a.scenario.yaml` and `a.scenario.yml`, `tasks.json` and `tasks.jsonl` (one task
/// id), and an EvalStudio workspace listing one project twice.
fn project(tag: &str) -> Scratch {
    let s = Scratch::named("names", tag);
    s.write("suites/agentest.toml", &expense_agent_section());
    let case = |id: &str| {
        json!({"id": id, "input": "hello", "assertions": [{"type": "contains", "value": "Hello"}]})
            .to_string()
    };
    s.write(
        "suites/foo.jsonl",
        &format!("{}\n{}\n", case("x"), case("y")),
    );
    s.write(
        "suites/foo.scenario.yaml",
        &scenario("x", "NOT IN THE REPLY"),
    );
    s.write("suites/a.scenario.yaml", &scenario("s", "Hello"));
    s.write("suites/a.scenario.yml", &scenario("s", "Hello"));
    s.write("suites/ok.jsonl", &format!("{}\n", case("ok")));
    let task = json!({"id": "t1", "user_scenario": {"instructions": "Say hello."},
        "evaluation_criteria": {"nl_assertions": ["The agent greets the user"]}});
    s.write("suites/tasks.json", &json!([task]).to_string());
    s.write("suites/tasks.jsonl", &format!("{}\n", case("t1")));
    s.write(
        "suites/ws/evalstudio.config.json",
        &json!({"version": 3, "name": "ws",
            "projects": [{"id": "p-1", "name": "Alpha"}, {"id": "p-1", "name": "Alpha"}]})
        .to_string(),
    );
    s.write(
        "suites/ws/projects/p-1/data/scenarios.json",
        &json!([{"id": "s-1", "name": "expense", "instructions": "File a travel expense of $120",
            "successCriteria": "The assistant drafts the expense", "maxMessages": 4}])
        .to_string(),
    );
    s.write(
        "suites/ws/projects/p-1/data/evals.json",
        &json!([{"id": "e-1", "name": "Eval A", "scenarioIds": ["s-1"]}]).to_string(),
    );
    s
}

/// Checks the run of [`project`]: each shared name is one error record naming every
/// place and the fix, the other cases pass, nothing is "run by another process", exit 1.
#[track_caller]
fn check(r: &Run, s: &Scratch) {
    assert_eq!(r.code, 1, "{r:?}");
    assert!(!r.stdout.contains("another process"), "{r:?}");
    let report = Report::read(&s.join("r.jsonl"));
    let mut trials: Vec<&str> = report
        .cases
        .iter()
        .map(|c| c["trial"].as_str().unwrap())
        .collect();
    trials.sort_unstable();
    assert_eq!(
        trials,
        [
            "a::s",
            "foo::x",
            "foo::y",
            "ok::ok",
            "tasks::t1",
            "ws/alpha/eval-a::expense"
        ],
        "{r:?}"
    );
    for passing in ["foo::y", "ok::ok"] {
        assert_eq!(report.status(passing), "passed", "{passing}: {r:?}");
    }
    let two_files = |trial: &str, here: &str, there: &str, suite: &str| {
        format!(
            "{here}: the trial name `{trial}` is defined twice, here and at {there}, so neither runs; `suites/{suite}{}` and `suites/{suite}{}` both make the suite `{suite}`: rename one of the files (a suite is named after its file's path without the extension), or give one of the cases another id",
            &here[here.find('.').unwrap()..here.find(':').unwrap()],
            &there[there.find('.').unwrap()..there.find(':').unwrap()],
        )
    };
    let expected = [
        (
            "foo::x",
            two_files("foo::x", "suites/foo.jsonl:1:1", "suites/foo.scenario.yaml:1:1", "foo"),
        ),
        (
            "a::s",
            two_files("a::s", "suites/a.scenario.yaml:1:1", "suites/a.scenario.yml:1:1", "a"),
        ),
        (
            "tasks::t1",
            two_files("tasks::t1", "suites/tasks.json:1:2", "suites/tasks.jsonl:1:1", "tasks"),
        ),
        (
            "ws/alpha/eval-a::expense",
            "suites/ws/projects/p-1/data/scenarios.json:1:2: the case `ws/alpha/eval-a::expense` is loaded twice from here, so it does not run; suites/ws/evalstudio.config.json lists it more than once (one EvalStudio project id given twice?): list it once".to_string(),
        ),
    ];
    for (trial, error) in expected {
        assert_eq!(report.status(trial), "error", "{trial}: {r:?}");
        assert_eq!(report.error(trial), error, "{trial}: {r:?}");
    }
}

fn a_trial_name_defined_twice_is_one_located_error_and_the_rest_runs() {
    let s = project("store");
    let store = s.join("runs.db").display().to_string();
    let r = test_run(s.path(), &store);
    check(&r, &s);
}

fn a_trial_name_defined_twice_fails_the_run_without_a_store_too() {
    let s = project("no-store");
    let r = test_run(s.path(), "off");
    check(&r, &s);
}

/// A 1 MB scenario `name` and 300-character ids: their trial names are cut to 200
/// characters after the suite (the start, `-`, 16 hex digits of a hash), the same on
/// every run and apart when only their ends differ, with a warning naming the file and
/// the field; and the console's Failures list pads no other entry to their width.
fn a_long_name_is_cut_with_a_warning_and_pads_no_other_failure() {
    let s = Scratch::named("names", "long");
    s.write("suites/agentest.toml", &expense_agent_section());
    s.write(
        "suites/big.scenario.yaml",
        &scenario(&"A".repeat(1 << 20), "NOT IN THE REPLY"),
    );
    let failing = |id: &str| {
        json!({"id": id, "input": "hello", "assert": {"type": "contains", "value": "NOT IN THE REPLY"}}).to_string()
    };
    let (long, longer) = ("x".repeat(300), format!("{}y", "x".repeat(299)));
    s.write(
        "suites/s.jsonl",
        &format!(
            "{}\n{}\n{}\n",
            failing(&long),
            failing(&longer),
            failing("short")
        ),
    );
    let mut names = Vec::new();
    for _ in 0..2 {
        let r = test_run(s.path(), "off");
        assert_eq!(r.code, 1, "{r:?}");
        assert!(
            r.stdout.len() < 20_000,
            "the console shows no 1 MB name: {} bytes",
            r.stdout.len()
        );
        let report = Report::read(&s.join("r.jsonl"));
        let mut trials: Vec<String> = report
            .cases
            .iter()
            .map(|c| c["trial"].as_str().unwrap().to_string())
            .collect();
        trials.sort();
        assert_eq!(trials.len(), 4, "{trials:?}");
        let cut = |suite: &str, start: &str, trial: &str| {
            let id = trial
                .strip_prefix(&format!("{suite}::"))
                .unwrap_or_else(|| panic!("{trial}"));
            let (kept, hash) = id.rsplit_once('-').unwrap();
            assert_eq!(id.chars().count(), 200, "{trial}");
            assert_eq!(kept, start.repeat(183), "{trial}");
            assert!(
                hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()),
                "{trial}"
            );
        };
        cut("big", "a", &trials[0]);
        cut("s", "x", &trials[2]);
        cut("s", "x", &trials[3]);
        assert_ne!(
            trials[2], trials[3],
            "ids alike but for their end stay apart"
        );
        assert_eq!(trials[1], "s::short");
        for (at, field, length, suite, trial) in [
            (
                "suites/big.scenario.yaml:1:1",
                "the scenario's `name`",
                1 << 20,
                "big",
                &trials[0],
            ),
            (
                "suites/s.jsonl:1:1",
                "the case's `id`",
                300,
                "s",
                &trials[2],
            ),
        ] {
            let warning = format!(
                "agentest: warning: {at}: the trial name made from {field} is {length} characters after `{suite}::`; it is cut to 200 (its start and a hash of the whole): `{trial}`; shorten {field} to keep a readable name"
            );
            assert!(r.stderr.lines().any(|l| l == warning), "{warning}\n{r:?}");
        }
        let short = format!(
            "    {:<48}  turn 1: contains \"NOT IN THE REPLY\": expected the reply to contain \"NOT IN THE REPLY\"",
            "s::short"
        );
        assert!(r.stdout.lines().any(|l| l == short), "{short}\n{r:?}");
        names.push(trials);
    }
    assert_eq!(names[0], names[1], "the same names on every run");
}
