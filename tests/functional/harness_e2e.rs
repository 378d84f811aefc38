//! End-to-end tests of the libtest harness: builds the demo crate in
//! `tests/fixtures/demo` (a user of agentest with an in-process `echo` agent) and runs
//! it with the real `cargo test`, `cargo nextest` and its test binary.
//!
//! The fixture builds into the outer target directory with the same profile and lock
//! file, so it reuses every dependency `cargo test` has just built (two crates
//! compile: agentest as its dependency, and its test); cargo releases the target
//! directory's lock while the outer tests run. Its suites (`agent-tests/`):
//!
//! | trial                 | outcome                                                   |
//! |-----------------------|-----------------------------------------------------------|
//! | `billing/refunds::R1` | passes                                                    |
//! | `billing/refunds::R2` | passes                                                    |
//! | `chat::endless`       | dynamic, scripted simulator: the echo of "Anything else?" |
//! |                       | awaits input, checkpoint `refund` never matches: fails on |
//! |                       | `max turns (2) exceeded`                                  |
//! | `chat::simulated`     | dynamic, scripted simulator: checkpoint `greet` reached   |
//! |                       | on turn 1 (`all_checkpoints_reached`): passes             |
//! | `smoke::hello`        | passes                                                    |
//! | `smoke::later`        | `skip: true`: listed as ignored; runs under `--ignored`   |
//! | `smoke::line-7`       | invalid JSON without an id: fails                         |
//! | `smoke::two-turns`    | passes (two turns)                                        |
//! | `smoke::typo`         | unknown key `asserts`: fails                              |
//! | `smoke::wrong-reply`  | assertion failure: fails                                  |
//!
//! A second root, `faults/` (selected with `DEMO_SUITES`, so the counts above never
//! change), holds cases whose agent or hook misbehaves:
//!
//! | trial                | outcome                                                   |
//! |----------------------|-----------------------------------------------------------|
//! | `faults::fine`       | passes (the run survives the others)                      |
//! | `faults::panics`     | agent `boom` panics: `error`                              |
//! | `faults::slow-agent` | sync agent `sleepy` sleeps 3 s, case timeout 1 s: timeout |
//! | `faults::slow-hook`  | `before` hook `slow` sleeps 3 s, timeout 1 s: timeout     |

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::{need, Needs};
use serde_json::{json, Value};

/// Every trial of the fixture, sorted.
const TRIALS: [&str; 10] = [
    "billing/refunds::R1",
    "billing/refunds::R2",
    "chat::endless",
    "chat::simulated",
    "smoke::hello",
    "smoke::later",
    "smoke::line-7",
    "smoke::two-turns",
    "smoke::typo",
    "smoke::wrong-reply",
];
const PASSING: [&str; 5] = [
    "billing/refunds::R1",
    "billing/refunds::R2",
    DYNAMIC_CASE,
    "smoke::hello",
    "smoke::two-turns",
];
const FAILING: [&str; 4] = [
    MAX_TURNS_CASE,
    "smoke::line-7",
    "smoke::typo",
    "smoke::wrong-reply",
];
/// Listed as ignored (`skip: true`): the only such trial; runs under `--ignored`.
const SKIP_CASE: &str = "smoke::later";
/// Dynamic mode: reaches its one checkpoint on turn 1 and passes.
const DYNAMIC_CASE: &str = "chat::simulated";
/// Dynamic mode: its checkpoint never matches and the agent keeps awaiting input, so it
/// fails when its 2 turns run out.
const MAX_TURNS_CASE: &str = "chat::endless";
/// The trials a nextest run executes (everything not listed as ignored).
const NEXTEST_RUNS: [&str; 9] = [
    "billing/refunds::R1",
    "billing/refunds::R2",
    MAX_TURNS_CASE,
    DYNAMIC_CASE,
    "smoke::hello",
    "smoke::line-7",
    "smoke::two-turns",
    "smoke::typo",
    "smoke::wrong-reply",
];
/// Where the broken lines are, as the harness shows them (relative to the fixture).
const TYPO_AT: &str = "agent-tests/smoke.jsonl:6:31";
const BROKEN_JSON_AT: &str = "agent-tests/smoke.jsonl:7:38";
const DYNAMIC_AT: &str = "agent-tests/chat.jsonl:4:1";
const MAX_TURNS_AT: &str = "agent-tests/chat.jsonl:5:1";
/// What the max-turns failure says, in the report and in the trial's failure message.
const MAX_TURNS_FAILURE: &str = "max turns (2) exceeded; required checkpoints missing: refund (last: expected the reply to contain \"refund issued\")";

/// How long a cargo command may take (a cold fixture build is a few minutes on 2 cores).
const CARGO_LIMIT: Duration = Duration::from_secs(20 * 60);
/// How long a direct run of the fixture's test binary may take.
const RUN_LIMIT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------
// Processes

/// What a finished (or killed) process left.
#[derive(Debug)]
struct Output {
    /// `None` when killed.
    code: Option<i32>,
    stdout: String,
    stderr: String,
    timed_out: bool,
}

impl Output {
    fn both(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }

    #[track_caller]
    fn expect_code(&self, code: i32) -> &Self {
        assert!(!self.timed_out, "timed out\n{self}");
        assert_eq!(self.code, Some(code), "unexpected exit code\n{self}");
        self
    }

    /// The names of the trials run, sorted (with several threads they finish in any order).
    fn names_run(&self) -> Vec<String> {
        let mut names: Vec<String> = self.trials_run().into_iter().map(|(n, _)| n).collect();
        names.sort();
        names
    }

    /// The names and outcomes on `test NAME ... OUTCOME` lines, in the order printed.
    fn trials_run(&self) -> Vec<(String, String)> {
        self.stdout
            .lines()
            .filter_map(|l| l.strip_prefix("test "))
            .filter_map(|l| l.split_once(" ... "))
            .map(|(name, outcome)| (name.trim().to_string(), outcome.to_string()))
            .collect()
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit: {:?}{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code,
            if self.timed_out {
                " (killed after the time limit)"
            } else {
                ""
            },
            self.stdout,
            self.stderr
        )
    }
}

fn drain(mut r: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Runs `cmd`, killing it after `limit`.
fn run(cmd: &mut Command, limit: Duration) -> Output {
    let mut child: Child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("failed to start {cmd:?}: {e}"));
    let out = drain(child.stdout.take().unwrap());
    let err = drain(child.stderr.take().unwrap());
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("failed to wait for a child") {
            return Output {
                code: status.code(),
                stdout: out.join().unwrap(),
                stderr: err.join().unwrap(),
                timed_out: false,
            };
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            // A grandchild may still hold the pipes open, so the readers are not joined.
            return Output {
                code: None,
                stdout: String::new(),
                stderr: String::new(),
                timed_out: true,
            };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------------
// The fixture

/// The fixture crate, built, with its test binary.
struct Fixture {
    dir: PathBuf,
    target: PathBuf,
    binary: PathBuf,
    /// The packages other than agentest and the fixture that its build compiled.
    rebuilt: Vec<String>,
}

/// Starts building the fixture on a thread of its own, for a run that has tests of this
/// module to run. On a fresh clone that build compiles agentest again (a dependency of a
/// crate of another workspace is a unit of its own to cargo), mostly on one core: started
/// when the first of these tests asks for it, it held both test threads waiting; started
/// early, it overlaps the tests that come before them.
pub fn build_early() {
    std::thread::spawn(|| {
        // A failed build panics here, and again in each test that asks for the fixture,
        // which reports it.
        fixture();
    });
}

/// Builds the fixture once (copying the repository's `Cargo.lock` into it, so it
/// resolves offline to the same versions) and finds its test binary.
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = manifest.join("tests/fixtures/demo");
        let target = crate::common::outer_target_dir();
        sync_lock_file(&manifest.join("Cargo.lock"), &dir.join("Cargo.lock"));
        let fx = Fixture {
            dir,
            target,
            binary: PathBuf::new(),
            rebuilt: Vec::new(),
        };
        let started = Instant::now();
        let out = fx.cargo([
            "test",
            "--offline",
            "--test",
            "agent_tests",
            "--no-run",
            "--message-format=json",
        ]);
        out.expect_code(0);
        let binary = out
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "agent_tests")
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .unwrap_or_else(|| panic!("no agent_tests executable in the build output\n{out}"));
        let rebuilt = out
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| m["reason"] == "compiler-artifact" && m["fresh"] == false)
            .filter_map(|m| Some(m["target"]["name"].as_str()?.to_string()))
            .filter(|name| {
                !["agentest", "agent_tests", "build_script_build"].contains(&name.as_str())
            })
            .collect();
        eprintln!(
            "fixture built in {:.1?}: {}",
            started.elapsed(),
            binary.display()
        );
        Fixture {
            binary,
            rebuilt,
            ..fx
        }
    })
}

/// The fixture, built into the outer target directory, compiles only agentest again
/// (a path dependency of another workspace is a unit of its own to cargo), not the
/// dependencies `cargo test` has already built. Cargo reuses a dependency only when its
/// features are the same in both builds: when agentest's dev-dependencies turn on a
/// feature of a shared crate (proptest once did, of getrandom's), the fixture's build
/// compiles that crate and all it reaches again, half a minute on a fresh clone.
fn the_fixture_reuses_the_dependencies_cargo_test_built() {
    let fx = fixture();
    // This binary is <target>/<profile>/deps/functional-<hash>; the fixture builds in
    // the dev profile, so under another one there is nothing of the outer build to reuse.
    let outer = std::env::current_exe().unwrap();
    let profile = outer
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name);
    if profile.is_some_and(|p| p != "debug") {
        eprintln!("the outer build is not the dev profile's: nothing to compare");
        return;
    }
    assert!(
        fx.rebuilt.is_empty(),
        "building tests/fixtures/demo compiled again {:?}: their features differ from \
         the outer build's. Compare `cargo tree -e features --prefix none` here and in \
         the fixture, and ask the fixture for the feature it lacks",
        fx.rebuilt
    );
}

/// Copies the lock file when the fixture has none or an older one. The copy is renamed
/// into place, so a concurrent cargo never reads half of it.
fn sync_lock_file(from: &Path, to: &Path) {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if modified(to).is_some_and(|t| modified(from).is_some_and(|f| t >= f)) {
        return;
    }
    let tmp = to.with_extension(format!("lock.{}", std::process::id()));
    std::fs::copy(from, &tmp).expect("failed to copy Cargo.lock into the fixture");
    std::fs::rename(&tmp, to).expect("failed to move Cargo.lock into the fixture");
}

impl Fixture {
    /// A command with an environment free of the outer run's test settings.
    fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = crate::common::clean_command(program, &self.dir);
        cmd.env_remove("DEMO_SUITES")
            .env("CARGO_TARGET_DIR", &self.target);
        cmd
    }

    /// Runs cargo in the fixture.
    fn cargo<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cargo_with(args, &[])
    }

    fn cargo_with<I, S>(&self, args: I, env: &[(&str, &OsStr)]) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = self.command(cargo);
        cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
        // Not serialized: once [`fixture`] has built it (and written its lock file),
        // cargo only checks that the build is fresh, under its own lock, and runs the
        // tests without holding it; so two tests' runs overlap, as under nextest.
        run(&mut cmd, CARGO_LIMIT)
    }

    /// `cargo test --test agent_tests -- <args>`.
    fn cargo_test(&self, args: &[&str]) -> Output {
        self.cargo_test_with(args, &[])
    }

    fn cargo_test_with(&self, args: &[&str], env: &[(&str, &OsStr)]) -> Output {
        let cargo_args = ["test", "--offline", "--test", "agent_tests", "--"];
        self.cargo_with(cargo_args.iter().chain(args), env)
    }

    /// `cargo nextest <command> --test agent_tests <args>`.
    fn nextest(&self, command: &str, args: &[&str], env: &[(&str, &OsStr)]) -> Output {
        let cargo_args = [
            "nextest",
            command,
            "--offline",
            "--test",
            "agent_tests",
            "--color",
            "never",
        ];
        self.cargo_with(cargo_args.iter().chain(args), env)
    }

    /// Runs the test binary directly, from the fixture's directory as cargo does.
    fn binary(&self, args: &[&str], env: &[(&str, &OsStr)], limit: Duration) -> Output {
        let mut cmd = self.command(&self.binary);
        cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
        run(&mut cmd, limit)
    }
}

impl Fixture {
    /// Runs the test binary directly, as [`Fixture::binary`] does, until it exits or
    /// opens one of `pipes` (FIFOs nothing writes to) to read it, where it would wait
    /// for good: then `None`, once it is killed. It has opened one when a writer can
    /// open it without waiting (`O_NONBLOCK` fails with ENXIO while no reader has it
    /// open), so this takes as long as the run, not a time limit.
    #[cfg(unix)]
    fn binary_unless_blocked(
        &self,
        args: &[&str],
        env: &[(&str, &OsStr)],
        pipes: &[PathBuf],
    ) -> Option<Output> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut cmd = self.command(&self.binary);
        cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
        let mut child: Child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("failed to start {cmd:?}: {e}"));
        let out = drain(child.stdout.take().unwrap());
        let err = drain(child.stderr.take().unwrap());
        let deadline = Instant::now() + RUN_LIMIT;
        loop {
            if let Some(status) = child.try_wait().expect("failed to wait for a child") {
                return Some(Output {
                    code: status.code(),
                    stdout: out.join().unwrap(),
                    stderr: err.join().unwrap(),
                    timed_out: false,
                });
            }
            let reading = pipes.iter().find_map(|p| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(p)
                    .ok()
            });
            if reading.is_some() || Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                let output = Output {
                    code: None,
                    stdout: out.join().unwrap(),
                    stderr: err.join().unwrap(),
                    timed_out: true,
                };
                assert!(
                    reading.is_some(),
                    "neither finished nor opened a pipe within {RUN_LIMIT:?}\n{output}"
                );
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A scratch directory under the fixture's target directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = fixture()
            .target
            .join("harness-e2e")
            .join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("failed to create a scratch directory");
        Scratch(dir)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------
// Assertions on output

/// The `test result:` counts (`passed`, `failed`, `ignored`, `filtered out`).
fn counts(out: &Output) -> BTreeMap<String, u64> {
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("test result:"))
        .unwrap_or_else(|| panic!("no `test result:` line\n{out}"));
    line.split(['.', ';'])
        .filter_map(|part| {
            let (n, what) = part.trim().split_once(' ')?;
            Some((what.to_string(), n.parse().ok()?))
        })
        .collect()
}

#[track_caller]
fn expect_counts(out: &Output, passed: u64, failed: u64, ignored: u64, filtered: Option<u64>) {
    let c = counts(out);
    let got = (c["passed"], c["failed"], c["ignored"]);
    assert_eq!(
        got,
        (passed, failed, ignored),
        "passed/failed/ignored counts\n{out}"
    );
    if let Some(f) = filtered {
        assert_eq!(c["filtered out"], f, "filtered-out count\n{out}");
    }
}

/// The failure message libtest printed for a trial (`---- NAME ----` block).
fn failure_of<'a>(out: &'a Output, trial: &str) -> &'a str {
    let header = format!("---- {trial} ----\n");
    let start = out
        .stdout
        .find(&header)
        .unwrap_or_else(|| panic!("no failure block for {trial}\n{out}"))
        + header.len();
    let rest = &out.stdout[start..];
    let end = rest.find("\n\n").unwrap_or(rest.len());
    &rest[..end]
}

fn list_lines(names: &[&str]) -> String {
    names.iter().map(|n| format!("{n}: test\n")).collect()
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The given fields of a JSON object (missing ones as null), for whole-object comparisons.
fn pick(v: &Value, keys: &[&str]) -> Value {
    keys.iter()
        .map(|k| (k.to_string(), v[*k].clone()))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Report records by trial name; panics on a duplicate.
fn records_by_trial(records: &[Value]) -> BTreeMap<String, &Value> {
    let mut map = BTreeMap::new();
    for r in records {
        let trial = r["trial"]
            .as_str()
            .unwrap_or_else(|| panic!("record without a trial: {r}"));
        assert!(
            map.insert(trial.to_string(), r).is_none(),
            "two records for {trial}"
        );
    }
    map
}

/// The status every executed case should have in a report.
fn expected_status(trial: &str) -> &'static str {
    match trial {
        "smoke::wrong-reply" | MAX_TURNS_CASE => "failed",
        "smoke::typo" | "smoke::line-7" => "error",
        SKIP_CASE => "skipped",
        _ => "passed",
    }
}

#[track_caller]
fn check_records(records: &BTreeMap<String, &Value>) {
    for (trial, r) in records {
        assert_eq!(
            r["status"],
            expected_status(trial),
            "status of {trial}: {r}"
        );
    }
    assert_eq!(records["smoke::typo"]["location"], TYPO_AT);
    assert_eq!(records["smoke::line-7"]["location"], BROKEN_JSON_AT);
    let typo_error = records["smoke::typo"]["error"].as_str().unwrap();
    assert!(
        typo_error.contains("did you mean `assert`?"),
        "{typo_error}"
    );
    assert_eq!(records["smoke::two-turns"]["total_turns"], 2);
    check_dynamic_records(records);
}

/// The records of the two dynamic cases: how each conversation went and ended.
#[track_caller]
fn check_dynamic_records(records: &BTreeMap<String, &Value>) {
    let keys = [
        "status",
        "mode",
        "location",
        "simulator",
        "termination",
        "total_turns",
        "error",
    ];
    let sources = |r: &Value| -> Vec<Value> {
        let turns = r["turns"].as_array().cloned().unwrap_or_default();
        turns.iter().map(|t| t["input_source"].clone()).collect()
    };

    let passed = records[DYNAMIC_CASE];
    assert_eq!(
        pick(passed, &keys),
        json!({"status": "passed", "mode": "dynamic", "location": DYNAMIC_AT, "simulator": "script", "termination": "all_checkpoints_reached", "total_turns": 1, "error": null}),
        "{passed}"
    );
    assert_eq!(
        passed["checkpoints"],
        json!([{"id": "greet", "required": true, "reached": true, "reached_at_turn": 1, "message": "contains \"echo\""}]),
        "{passed}"
    );
    assert_eq!(sources(passed), [json!("initial")], "{passed}");
    assert_eq!(
        pick(&passed["turns"][0], &["input", "output", "awaiting_input"]),
        json!({"input": "Hi, I need help", "output": "echo: Hi, I need help", "awaiting_input": false}),
        "{passed}"
    );

    let failed = records[MAX_TURNS_CASE];
    assert_eq!(
        pick(failed, &keys),
        json!({"status": "failed", "mode": "dynamic", "location": MAX_TURNS_AT, "simulator": "script", "termination": "max_turns", "total_turns": 2, "error": MAX_TURNS_FAILURE}),
        "{failed}"
    );
    assert_eq!(
        pick(
            &failed["checkpoints"][0],
            &["id", "required", "reached", "reached_at_turn"]
        ),
        json!({"id": "refund", "required": true, "reached": false, "reached_at_turn": null}),
        "{failed}"
    );
    assert_eq!(
        failed["checkpoints"].as_array().map(Vec::len),
        Some(1),
        "{failed}"
    );
    // The case's input, then the script's; the echo of each is a question.
    assert_eq!(
        sources(failed),
        [json!("initial"), json!("simulated")],
        "{failed}"
    );
    for t in failed["turns"].as_array().unwrap() {
        assert_eq!(
            pick(t, &["input", "output", "awaiting_input", "awaiting_reason"]),
            json!({"input": "Anything else?", "output": "echo: Anything else?", "awaiting_input": true, "awaiting_reason": "content_is_question"}),
            "{failed}"
        );
    }
}

// ---------------------------------------------------------------------------------
// cargo test

fn list_prints_exactly_the_sorted_trial_names() {
    let fx = fixture();
    let out = fx.cargo_test(&["--list"]);
    out.expect_code(0);
    assert_eq!(out.stdout, list_lines(&TRIALS), "{out}");

    // What nextest asks for.
    let terse = fx.cargo_test(&["--list", "--format", "terse"]);
    terse.expect_code(0);
    assert_eq!(terse.stdout, list_lines(&TRIALS), "{terse}");

    // Only the `skip: true` case is listed as ignored; the dynamic ones are ordinary
    // trials.
    let ignored = fx.cargo_test(&["--list", "--format", "terse", "--ignored"]);
    ignored.expect_code(0);
    assert_eq!(ignored.stdout, list_lines(&[SKIP_CASE]), "{ignored}");
}

fn cargo_test_fails_with_located_messages_and_counts() {
    let fx = fixture();
    let out = fx.cargo_test(&[]);
    out.expect_code(101);
    expect_counts(&out, 5, 4, 1, Some(0));

    let run: BTreeMap<String, String> = out.trials_run().into_iter().collect();
    assert_eq!(
        run.keys().map(String::as_str).collect::<Vec<_>>(),
        TRIALS,
        "{out}"
    );
    for t in PASSING {
        assert_eq!(run[t], "ok", "{t}\n{out}");
    }
    for t in FAILING {
        assert_eq!(run[t], "FAILED", "{t}\n{out}");
    }
    // Listed as ignored, so libtest never starts it (and shows no reason).
    assert_eq!(run[SKIP_CASE], "ignored", "{out}");

    let typo = failure_of(&out, "smoke::typo");
    assert!(typo.contains(TYPO_AT), "file:line:column\n{typo}");
    assert!(typo.contains("field `asserts`"), "the field\n{typo}");
    assert!(
        typo.contains("did you mean `assert`?"),
        "the suggestion\n{typo}"
    );

    let broken = failure_of(&out, "smoke::line-7");
    assert!(
        broken.contains(BROKEN_JSON_AT) && broken.contains("invalid JSON"),
        "{broken}"
    );

    let wrong = failure_of(&out, "smoke::wrong-reply");
    assert!(wrong.contains("agent-tests/smoke.jsonl:4:1"), "{wrong}");
    assert!(
        wrong.contains(r#"expected "Goodbye", got "echo: Hello""#),
        "expected vs actual\n{wrong}"
    );

    // The dynamic failure is located at its case and shows the last turn (its message
    // is checked in a_dynamic_case_out_of_turns_fails_naming_the_missing_checkpoint).
    let endless = failure_of(&out, MAX_TURNS_CASE);
    assert!(
        endless.contains(&format!("failed at turn 2 [{MAX_TURNS_AT}]")),
        "{endless}"
    );
    assert!(
        endless.contains(r#"reply: "echo: Anything else?""#),
        "{endless}"
    );

    // The closing list of failures names exactly the failing trials (in the order they
    // finished).
    let tail = out.stdout.rsplit("failures:\n").next().unwrap();
    let mut listed: Vec<&str> = tail
        .lines()
        .filter_map(|l| l.strip_prefix("    "))
        .collect();
    listed.sort();
    assert_eq!(listed, FAILING, "{out}");
}

fn name_filter_runs_one_suite() {
    let out = fixture().cargo_test(&["billing/"]);
    out.expect_code(0);
    let names = out.names_run();
    assert_eq!(
        names,
        ["billing/refunds::R1", "billing/refunds::R2"],
        "{out}"
    );
    expect_counts(&out, 2, 0, 0, Some(8));
}

fn dynamic_cases_run_with_the_scripted_simulator() {
    let out = fixture().cargo_test(&["chat::"]);
    out.expect_code(101);
    let run: BTreeMap<String, String> = out.trials_run().into_iter().collect();
    assert_eq!(
        run.iter()
            .map(|(n, o)| (n.as_str(), o.as_str()))
            .collect::<Vec<_>>(),
        [(MAX_TURNS_CASE, "FAILED"), (DYNAMIC_CASE, "ok")],
        "{out}"
    );
    expect_counts(&out, 1, 1, 0, Some(8));
    // The passing one alone: the run succeeds.
    let alone = fixture().cargo_test(&["--exact", DYNAMIC_CASE]);
    alone.expect_code(0);
    assert_eq!(
        alone.trials_run(),
        [(DYNAMIC_CASE.to_string(), "ok".to_string())],
        "{alone}"
    );
}

/// The reason a dynamic case failed is in the trial's failure message, since it fails
/// with no failed assertion to show: the turn limit and the checkpoint still missing,
/// with its last failure.
fn a_dynamic_case_out_of_turns_fails_naming_the_missing_checkpoint() {
    let out = fixture().cargo_test(&["--exact", MAX_TURNS_CASE]);
    out.expect_code(101);
    expect_counts(&out, 0, 1, 0, None);
    let message = failure_of(&out, MAX_TURNS_CASE);
    assert!(
        message.contains(&format!("failed at turn 2 [{MAX_TURNS_AT}]")),
        "{message}"
    );
    assert!(
        message.contains("max turns (2) exceeded"),
        "the failure names the turn limit\n{message}"
    );
    assert!(
        message.contains("required checkpoints missing: refund"),
        "the failure names the missing checkpoint\n{message}"
    );
    assert!(message.contains(MAX_TURNS_FAILURE), "{message}");
}

fn exact_filter_runs_one_trial() {
    let out = fixture().cargo_test(&["--exact", "billing/refunds::R1"]);
    out.expect_code(0);
    assert_eq!(
        out.trials_run(),
        [("billing/refunds::R1".to_string(), "ok".to_string())],
        "{out}"
    );
    // Only the suite's own file is read, so just R2 counts as filtered out.
    expect_counts(&out, 1, 0, 0, None);

    // A prefix is no exact match.
    let none = fixture().cargo_test(&["--exact", "billing/refunds::R"]);
    none.expect_code(0);
    assert!(none.trials_run().is_empty(), "{none}");
    expect_counts(&none, 0, 0, 0, None);
}

fn skip_filter_leaves_out_matching_trials() {
    let out = fixture().cargo_test(&["--skip", "smoke::", "--skip", "R2", "--skip", "endless"]);
    out.expect_code(0);
    let names = out.names_run();
    assert_eq!(names, ["billing/refunds::R1", DYNAMIC_CASE], "{out}");
    expect_counts(&out, 2, 0, 0, Some(8));
}

fn ignored_flag_runs_only_the_skip_case() {
    // libtest runs #[ignore] tests under --ignored; a skip:true case (which passes
    // against the echo agent) runs and passes the same way. The dynamic cases are not
    // ignored, so --ignored leaves them out.
    let out = fixture().cargo_test(&["--ignored"]);
    out.expect_code(0);
    assert_eq!(
        out.trials_run(),
        [(SKIP_CASE.to_string(), "ok".to_string())],
        "{out}"
    );
    expect_counts(&out, 1, 0, 0, Some(9));
}

fn json_format_emits_libtest_events() {
    let out = fixture().cargo_test(&["--format", "json", "-Z", "unstable-options"]);
    out.expect_code(101);
    let events = json_lines(&out.stdout);
    assert_eq!(
        events[0],
        json!({"type": "suite", "event": "started", "test_count": 10}),
        "{out}"
    );
    let last = events.last().unwrap();
    assert_eq!(
        pick(
            last,
            &[
                "type",
                "event",
                "passed",
                "failed",
                "ignored",
                "filtered_out"
            ]
        ),
        json!({"type": "suite", "event": "failed", "passed": 5, "failed": 4, "ignored": 1, "filtered_out": 0}),
        "{out}"
    );

    let mut started = Vec::new();
    let mut results = BTreeMap::new();
    for e in events.iter().filter(|e| e["type"] == "test") {
        let name = e["name"].as_str().unwrap().to_string();
        match e["event"].as_str().unwrap() {
            "started" => started.push(name),
            outcome => {
                results.insert(
                    name,
                    (
                        outcome.to_string(),
                        e["stdout"].as_str().unwrap_or_default().to_string(),
                    ),
                );
            }
        }
    }
    started.sort();
    assert_eq!(started, TRIALS, "{out}");
    assert_eq!(
        results.keys().map(String::as_str).collect::<Vec<_>>(),
        TRIALS,
        "{out}"
    );
    for t in TRIALS {
        let want = match expected_status(t) {
            "passed" => "ok",
            "skipped" => "ignored",
            _ => "failed",
        };
        assert_eq!(results[t].0, want, "{t}\n{out}");
    }
    assert!(
        results["smoke::typo"].1.contains(TYPO_AT),
        "a failure's message is in its event\n{out}"
    );
    assert!(results[MAX_TURNS_CASE].1.contains(MAX_TURNS_AT), "{out}");
}

fn one_test_thread_runs_in_name_order() {
    let out = fixture().cargo_test(&["--test-threads", "1"]);
    out.expect_code(101);
    let names: Vec<String> = out.trials_run().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, TRIALS, "{out}");
    expect_counts(&out, 5, 4, 1, Some(0));
}

/// ElizaOS's example scenarios (`tests/eliza-corpus`) under a user's `cargo test`:
/// trials named by file and scenario (a matrix's by combination), offline from the
/// committed cassettes, each with the verdict its file means.
fn the_elizaos_examples_run_under_cargo_test() {
    let fx = fixture();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/eliza-corpus");
    let env = [
        ("DEMO_SUITES", corpus.as_os_str()),
        ("AGENTEST_AGENT", OsStr::new("eliza")),
        ("AGENTEST_CASSETTES", OsStr::new("strict")),
    ];
    let out = fx.cargo_test_with(&[], &env);
    out.expect_code(101);
    let outcomes: BTreeMap<String, String> = out.trials_run().into_iter().collect();
    let of = |suite: &str| -> Vec<&String> {
        outcomes
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("{suite}::")))
            .map(|(_, v)| v)
            .collect()
    };
    for (suite, outcome) in [
        ("basic-conversation", "ok"),
        ("failing-test", "FAILED"),
        ("invalid-missing-fields", "FAILED"),
        ("natural-language-test", "ok"),
        ("test-github-issues", "ok"),
        ("mock-test", "ok"),
        ("legacy-compatibility", "FAILED"),
    ] {
        assert_eq!(of(suite), [outcome], "{suite}\n{out}");
    }
    let matrix = of("conversation-matrix");
    assert_eq!(matrix.len(), 16, "{out}");
    assert!(matrix.iter().all(|o| *o == "ok"), "{out}");
}

fn report_under_cargo_test_has_every_case_then_a_summary() {
    let fx = fixture();
    let scratch = Scratch::new("report-cargo-test");
    let report = scratch.path("out/report.jsonl");
    let env = [("AGENTEST_REPORT", report.as_os_str())];

    // Listing writes no report.
    fx.cargo_test_with(&["--list"], &env).expect_code(0);
    assert!(!report.exists(), "--list created the report");

    let out = fx.cargo_test_with(&[], &env);
    out.expect_code(101);
    assert!(
        out.stderr.contains(&format!(
            "agentest: wrote {} ({} cases)",
            report.display(),
            TRIALS.len()
        )),
        "{out}"
    );
    let text = std::fs::read_to_string(&report).expect("no report written");
    let mut lines = json_lines(&text);
    let summary = lines.pop().expect("empty report");
    assert_eq!(
        summary["type"], "summary",
        "the last line is the summary\n{text}"
    );
    let records = records_by_trial(&lines);
    assert_eq!(
        records.keys().map(String::as_str).collect::<Vec<_>>(),
        TRIALS,
        "one record per case\n{text}"
    );
    check_records(&records);
    // Listed as ignored and never started, the skip case still has its record, with
    // the reason.
    assert_eq!(records[SKIP_CASE]["error"], "skip: true in the case");

    let keys = [
        "type",
        "total",
        "passed",
        "failed",
        "errors",
        "skipped",
        "timeouts",
        "total_turns",
    ];
    assert_eq!(
        pick(&summary, &keys),
        json!({"type": "summary", "total": 10, "passed": 5, "failed": 2, "errors": 2, "skipped": 1, "timeouts": 0, "total_turns": 9}),
        "{text}"
    );

    // A second run starts a new report instead of appending.
    fx.cargo_test_with(&["billing/"], &env).expect_code(0);
    let text = std::fs::read_to_string(&report).unwrap();
    let mut lines = json_lines(&text);
    let summary = lines.pop().unwrap();
    assert_eq!(records_by_trial(&lines).len(), 2, "{text}");
    assert_eq!(
        pick(&summary, &["total", "passed"]),
        json!({"total": 2, "passed": 2}),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------
// The test binary, run directly

/// A report that cannot be written (here on a full disk) is one more failing trial,
/// `agentest::report`, after the cases, naming the system's reason; no "wrote" line.
/// Under nextest, where every case's process appends its own record, the case's trial
/// fails instead.
#[cfg(unix)]
fn a_report_that_cannot_be_written_is_a_failing_trial() {
    let fx = fixture();
    let scratch = Scratch::new("report-full-disk");
    let report = scratch.path("report.jsonl");
    std::os::unix::fs::symlink("/dev/full", &report).expect("symlink to /dev/full");
    let env = [("AGENTEST_REPORT", report.as_os_str())];
    let out = fx.binary(&["--exact", "smoke::hello"], &env, RUN_LIMIT);
    out.expect_code(101);
    assert!(out.stdout.contains("test smoke::hello ... ok"), "{out}");
    assert!(
        failure_of(&out, "agentest::report").contains(&format!(
            "failed to write the record of `smoke::hello` to the report {}: No space left on device (os error 28)",
            report.display()
        )),
        "{out}"
    );
    assert!(!out.stderr.contains("wrote"), "{out}");
    let under_nextest = [
        ("AGENTEST_REPORT", report.as_os_str()),
        ("NEXTEST_RUN_ID", OsStr::new("full-disk-run")),
        ("NEXTEST", OsStr::new("1")),
    ];
    let out = fx.binary(&["--exact", "smoke::hello"], &under_nextest, RUN_LIMIT);
    out.expect_code(101);
    assert!(
        // Starting a nextest run's report truncates it, which a device refuses (EINVAL).
        failure_of(&out, "smoke::hello")
            .contains("failed to write the record of `smoke::hello` to the report"),
        "{out}"
    );
}

/// A run store that cannot record the runs (writes past a real file size limit fail
/// with EFBIG) is a failing trial `agentest::store` after the cases, naming the runs
/// not recorded and the system's reason: a run whose results were not kept does not pass.
#[cfg(unix)]
fn a_store_that_cannot_record_is_a_failing_trial() {
    use std::os::unix::process::CommandExt;
    let fx = fixture();
    let scratch = Scratch::new("store-fsize");
    let mut cmd = fx.command(&fx.binary);
    cmd.env("AGENTEST_STORE", scratch.path("runs.db"));
    // SAFETY: between fork and exec, only async-signal-safe calls.
    unsafe {
        cmd.pre_exec(|| {
            // Enough for the store's start (its migrations, in one transaction, and
            // the queued runs: about 150 kB of write-ahead log at schema 10), not for
            // the suite's transcripts (it no longer fails from 260 kB).
            let max = libc::rlimit {
                rlim_cur: 200_000,
                rlim_max: 200_000,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &max);
            // A write past the limit then fails with EFBIG instead of killing.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let out = run(&mut cmd, RUN_LIMIT);
    out.expect_code(101);
    let failure = failure_of(&out, "agentest::store");
    assert!(
        failure.contains(" did not record ")
            && failure.contains("File too large (os error 27)")
            && failure.contains("under `cargo test`, run the trials again"),
        "{out}"
    );
}

/// `AGENTEST_REPORT` naming a file that is not an agentest report (a suite, kept
/// elsewhere) is refused before any case runs, as `-o` is: the file is left as it was.
fn a_report_path_onto_a_file_that_is_not_a_report_is_refused() {
    let fx = fixture();
    let scratch = Scratch::new("report-over-suite");
    let suite = scratch.path("cases.jsonl");
    let cases = "{\"id\": \"a\", \"input\": \"hi\"}\n";
    std::fs::write(&suite, cases).expect("write the suite");
    let env = [("AGENTEST_REPORT", suite.as_os_str())];
    let out = fx.binary(&["--exact", "smoke::hello"], &env, RUN_LIMIT);
    out.expect_code(2);
    assert!(
        out.stderr.contains(&format!(
            "error: refusing to write the report over {}: the file exists and is not an agentest JSONL report (whose first line is a case record (with `trial` and `status`) or a summary line); give AGENTEST_REPORT (or `[run] report`) another path",
            suite.display()
        )),
        "{out}"
    );
    assert!(!out.stdout.contains("smoke::hello"), "{out}");
    assert_eq!(std::fs::read_to_string(&suite).unwrap(), cases);
}

/// A suites root beside the fixture's, holding a named pipe `blocker.jsonl`: reading
/// it blocks until a writer opens it, which nobody does. A discovery that takes any
/// `*.jsonl` for a suite makes a run that reads every suite hang; one that takes only
/// regular files (and links to them) skips the pipes. Either way, a run with
/// `--exact SUITE::ID` must read only `SUITE.jsonl` and finish, and its filtered-out
/// count shows that no other suite was loaded.
#[cfg(unix)]
fn exact_opens_only_the_named_suite() {
    let fx = fixture();
    let scratch = Scratch::new("exact-fifo");
    let root = scratch.path("suites");
    crate::common::copy_dir(&fx.dir.join("agent-tests"), &root);
    for pipe in ["blocker.jsonl", "billing/blocker.jsonl"] {
        let status = Command::new("mkfifo")
            .arg(root.join(pipe))
            .status()
            .expect("failed to run mkfifo");
        assert!(status.success(), "mkfifo {pipe} failed");
    }
    let env = [("DEMO_SUITES", root.as_os_str())];

    // What nextest runs for each test.
    let started = Instant::now();
    let out = fx.binary(
        &["--exact", "billing/refunds::R1", "--nocapture"],
        &env,
        RUN_LIMIT,
    );
    out.expect_code(0);
    assert_eq!(
        out.trials_run(),
        [("billing/refunds::R1".to_string(), "ok".to_string())],
        "{out}"
    );
    // Only billing/refunds.jsonl was loaded: R2 is the one trial filtered out.
    expect_counts(&out, 1, 0, 0, Some(1));
    eprintln!(
        "--exact run with a blocking suite beside it took {:.1?}",
        started.elapsed()
    );

    let failing = fx.binary(&["--exact", "smoke::typo", "--nocapture"], &env, RUN_LIMIT);
    failing.expect_code(101);
    assert!(failing.stdout.contains("smoke.jsonl:6:31"), "{failing}");
    // smoke.jsonl holds 6 trials.
    expect_counts(&failing, 0, 1, 0, Some(5));

    // The control: reading every suite either blocks on the pipes or, with a discovery
    // that skips what is not a regular file, lists exactly the fixture's trials.
    let pipes = [
        root.join("blocker.jsonl"),
        root.join("billing/blocker.jsonl"),
    ];
    let listing = fx.binary_unless_blocked(&["--list"], &env, &pipes);
    if let Some(listing) = listing {
        listing.expect_code(0);
        assert_eq!(
            listing.stdout,
            list_lines(&TRIALS),
            "a full listing should block on blocker.jsonl or skip it\n{listing}"
        );
    }
    // An --exact name whose suite file does not exist falls back to reading everything.
    let unknown = fx.binary_unless_blocked(&["--exact", "nowhere::X"], &env, &pipes);
    if let Some(unknown) = unknown {
        unknown.expect_code(0);
        assert!(unknown.trials_run().is_empty(), "{unknown}");
        expect_counts(&unknown, 0, 0, 0, Some(TRIALS.len() as u64));
    }
}

/// The `faults/` root: a panicking agent, a slow agent and a slow hook.
fn faults_root() -> PathBuf {
    fixture().dir.join("faults")
}

/// How long the slow agent and hook of `faults/` sleep; their cases time out after 1 s.
const SLOW: Duration = Duration::from_secs(3);
/// A case that times out after 1 s must end well before the agent or hook wakes up.
const WELL_UNDER_SLOW: Duration = Duration::from_secs(2);

fn faults_are_error_and_timeout_records_and_no_case_is_lost() {
    let fx = fixture();
    let scratch = Scratch::new("faults");
    let report = scratch.path("report.jsonl");
    let root = faults_root();
    let env = [
        ("DEMO_SUITES", root.as_os_str()),
        ("AGENTEST_REPORT", report.as_os_str()),
    ];
    let started = Instant::now();
    let out = fx.binary(&[], &env, RUN_LIMIT);
    let took = started.elapsed();
    out.expect_code(101);
    eprintln!("the faults run took {took:.1?}");

    // Every case has its trial and its outcome, the panicking one included.
    let run: BTreeMap<String, String> = out.trials_run().into_iter().collect();
    let want = [
        ("faults::fine", "ok"),
        ("faults::panics", "FAILED"),
        ("faults::slow-agent", "FAILED"),
        ("faults::slow-hook", "FAILED"),
    ];
    assert_eq!(
        run.iter()
            .map(|(n, o)| (n.as_str(), o.as_str()))
            .collect::<Vec<_>>(),
        want,
        "{out}"
    );
    expect_counts(&out, 1, 3, 0, Some(0));

    let panics = failure_of(&out, "faults::panics");
    assert!(
        panics.contains("panicked") && panics.contains("boom"),
        "{panics}"
    );
    let hook = failure_of(&out, "faults::slow-hook");
    assert!(
        hook.contains("timeout after 1s (while running the before hook `slow`;"),
        "{hook}"
    );

    let text = std::fs::read_to_string(&report).expect("no report written");
    let mut lines = json_lines(&text);
    let summary = lines.pop().expect("empty report");
    let records = records_by_trial(&lines);
    let statuses: Vec<(&str, &Value)> = records
        .iter()
        .map(|(t, r)| (t.as_str(), &r["status"]))
        .collect();
    assert_eq!(
        statuses,
        [
            ("faults::fine", &json!("passed")),
            ("faults::panics", &json!("error")),
            ("faults::slow-agent", &json!("timeout")),
            ("faults::slow-hook", &json!("timeout")),
        ],
        "{text}"
    );
    let error = |t: &str| records[t]["error"].as_str().unwrap_or_default().to_string();
    assert!(error("faults::panics").contains("panicked: boom"), "{text}");
    assert!(
        error("faults::slow-agent")
            .starts_with("timeout after 1s (while waiting for the reply to turn 1"),
        "{text}"
    );
    assert_eq!(
        error("faults::slow-hook"),
        "timeout after 1s (while running the before hook `slow`; the agent was stopped)",
        "{text}"
    );
    // Timeouts count as failures too.
    assert_eq!(
        pick(
            &summary,
            &["type", "total", "passed", "failed", "errors", "skipped", "timeouts"]
        ),
        json!({"type": "summary", "total": 4, "passed": 1, "failed": 2, "errors": 1, "skipped": 0, "timeouts": 2}),
        "{text}"
    );
    // The slow cases run side by side and are cut off at their deadline.
    assert!(took < WELL_UNDER_SLOW, "the run took {took:?}\n{out}");
}

/// Runs one `faults/` case the way nextest does and times it.
fn run_fault(trial: &str) -> (Output, Duration) {
    let root = faults_root();
    let started = Instant::now();
    let out = fixture().binary(
        &["--exact", trial, "--nocapture"],
        &[("DEMO_SUITES", root.as_os_str())],
        RUN_LIMIT,
    );
    let took = started.elapsed();
    eprintln!("{trial} took {took:.1?}");
    (out, took)
}

fn a_slow_before_hook_times_out_at_the_deadline() {
    let (out, took) = run_fault("faults::slow-hook");
    out.expect_code(101);
    assert!(
        failure_of(&out, "faults::slow-hook").contains("while running the before hook `slow`"),
        "{out}"
    );
    assert!(
        took < WELL_UNDER_SLOW,
        "the hook sleeps {SLOW:?}; the case should end at its 1 s deadline, took {took:?}\n{out}"
    );
}

fn a_slow_sync_agent_times_out_at_the_deadline() {
    let (out, took) = run_fault("faults::slow-agent");
    out.expect_code(101);
    assert!(
        failure_of(&out, "faults::slow-agent").contains("timeout after 1s"),
        "{out}"
    );
    assert!(
        took < WELL_UNDER_SLOW,
        "the agent sleeps {SLOW:?}; the case should end at its 1 s deadline, took {took:?}\n{out}"
    );
}

/// Under `cargo test`, a setting agentest cannot use is one failing trial that names
/// the variable and the allowed values; no case runs against a half-understood setting.
fn an_invalid_setting_is_one_failing_trial_naming_it() {
    let fx = fixture();
    let bogus = std::ffi::OsStr::new("bogus");
    let out = fx.binary(&[], &[("AGENTEST_ON_MISSING_INPUT", bogus)], RUN_LIMIT);
    assert_eq!(out.code, Some(101), "{out}");
    expect_counts(&out, 0, 1, 0, None);
    assert!(
        failure_of(&out, "agentest::settings").contains(
            "environment variable AGENTEST_ON_MISSING_INPUT=\"bogus\" is not valid; use skip or fail"
        ),
        "{out}"
    );
    let listed = fx.binary(
        &["--list"],
        &[("AGENTEST_ON_MISSING_INPUT", bogus)],
        RUN_LIMIT,
    );
    assert_eq!(listed.stdout, "agentest::settings: test\n", "{listed}");
    // A filter that leaves the trial out (nextest runs `--exact NAME`) does not make
    // the run pass: it fails the same way.
    let filtered = fx.binary(
        &["--exact", "smoke::hello"],
        &[("AGENTEST_ON_MISSING_INPUT", bogus)],
        RUN_LIMIT,
    );
    assert_eq!(filtered.code, Some(101), "{filtered}");
    assert!(
        failure_of(&filtered, "agentest::settings").contains("AGENTEST_ON_MISSING_INPUT"),
        "{filtered}"
    );
}

/// A config that cannot be used is said once, in a trial of its own; every case it
/// stops fails with a one-line pointer to it (not the whole diagnostic per case).
fn a_config_error_is_one_trial_and_each_case_points_to_it() {
    let fx = fixture();
    let scratch = Scratch::new("broken-config");
    let root = scratch.path("suites");
    std::fs::create_dir_all(&root).unwrap();
    // The fixture's run agent is in-process; these cases name the config's.
    let cases: String = (1..=5)
        .map(|i| format!("{{\"id\": \"T{i}\", \"input\": \"hi\", \"agent\": \"local\"}}\n"))
        .collect();
    std::fs::write(root.join("s.jsonl"), cases).unwrap();
    let config = root.join("agentest.toml");
    for (toml, said) in [
        (
            "[agents.local]\ntype = \"process\"\ncommand = [\"python3\", \"a.py\"]\n[run]\nconcurency = 4\n",
            "hint: did you mean `concurrency`?",
        ),
        (
            "[agents.local]\ntype = \"process\"\ncommand = [\"no-such-agent-x1\", \"a.py\"]\n",
            "`no-such-agent-x1` not found on PATH; install it, or give its path",
        ),
    ] {
        std::fs::write(&config, toml).unwrap();
        let out = fx.binary(&[], &[("DEMO_SUITES", root.as_os_str())], RUN_LIMIT);
        assert_eq!(out.code, Some(101), "{out}");
        expect_counts(&out, 0, 6, 0, None);
        let trial = format!("{}::config", config.display());
        let whole = failure_of(&out, &trial);
        assert!(whole.contains(said), "{whole}\n{out}");
        assert_eq!(out.stdout.matches(said).count(), 1, "said once\n{out}");
        for i in 1..=5 {
            assert_eq!(
                failure_of(&out, &format!("s::T{i}")),
                format!("not run: {} cannot be used; see the trial `{trial}`", config.display()),
                "{out}"
            );
        }
    }
}

fn empty_suites_root_is_an_error_naming_the_root() {
    let fx = fixture();
    let scratch = Scratch::new("empty-root");
    let root = scratch.path("suites");
    std::fs::create_dir_all(&root).unwrap();
    for args in [&[][..], &["--list"][..]] {
        let out = fx.binary(args, &[("DEMO_SUITES", root.as_os_str())], RUN_LIMIT);
        assert!(
            !out.timed_out && out.code.is_some_and(|c| c != 0),
            "{args:?} should fail\n{out}"
        );
        assert!(out.stderr.contains("no test cases found"), "{out}");
        assert!(
            out.stderr.contains(&root.display().to_string()),
            "the error names the root\n{out}"
        );
        assert!(out.stdout.is_empty(), "{out}");
    }

    let missing = scratch.path("missing");
    let out = fx.binary(&[], &[("DEMO_SUITES", missing.as_os_str())], RUN_LIMIT);
    assert!(out.code.is_some_and(|c| c != 0), "{out}");
    assert!(
        out.stderr.contains(&missing.display().to_string())
            && out.stderr.contains("does not exist"),
        "{out}"
    );
}

// ---------------------------------------------------------------------------------
// cargo nextest

/// `cargo nextest`, which the nextest tests need (see [`need`]).
fn nextest() -> Needs {
    static HAVE: OnceLock<Result<(), String>> = OnceLock::new();
    let have = HAVE.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = Command::new(cargo)
            .args(["nextest", "--version"])
            .stdin(Stdio::null())
            .output();
        match out {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let said = stderr.lines().find(|l| !l.trim().is_empty());
                Err(format!(
                    "`cargo nextest --version` failed ({}: {})",
                    out.status,
                    said.unwrap_or("no output").trim()
                ))
            }
            Err(e) => Err(format!("cannot run cargo: {e}")),
        }
    });
    match have {
        Ok(()) => Ok(()),
        Err(reason) => need(
            "cargo-nextest",
            format!("{reason}; install it with `cargo install cargo-nextest --locked`"),
        ),
    }
}

fn nextest_lists_the_trials() -> Needs {
    nextest()?;
    let fx = fixture();
    let out = fx.nextest("list", &[], &[]);
    out.expect_code(0);
    // The case listed as ignored is left out of nextest's default listing; the dynamic
    // ones are in it.
    let want: String = NEXTEST_RUNS
        .iter()
        .map(|t| format!("agentest-demo::agent_tests {t}\n"))
        .collect();
    assert_eq!(out.stdout, want, "{out}");

    let json = fx.nextest("list", &["--message-format", "json"], &[]);
    json.expect_code(0);
    let list: Value = serde_json::from_str(&json.stdout).unwrap_or_else(|e| panic!("{e}\n{json}"));
    let cases = list["rust-suites"]["agentest-demo::agent_tests"]["testcases"]
        .as_object()
        .expect("no testcases");
    let names: Vec<&str> = cases.keys().map(String::as_str).collect();
    assert_eq!(names, TRIALS, "{json}");
    for (name, case) in cases {
        assert_eq!(case["ignored"], name == SKIP_CASE, "{name}: {case}");
    }
    Ok(())
}

fn nextest_run_fails_and_appends_a_record_per_case() -> Needs {
    nextest()?;
    let fx = fixture();
    let scratch = Scratch::new("report-nextest");
    let report = scratch.path("report.jsonl");
    let env = [("AGENTEST_REPORT", report.as_os_str())];
    let out = fx.nextest("run", &["--no-fail-fast"], &env);
    // 100: nextest's exit code for failing tests.
    out.expect_code(100);

    let all = out.both();
    // The skip case is listed as ignored, so nextest skips it; the dynamic cases run.
    assert!(
        all.contains("9 tests run: 5 passed, 4 failed, 1 skipped"),
        "{out}"
    );
    assert!(
        !all.lines().any(|l| l.contains(SKIP_CASE)),
        "nextest never runs the skip case\n{out}"
    );
    for t in FAILING {
        assert!(
            all.lines()
                .any(|l| l.trim_start().starts_with("FAIL") && l.trim_end().ends_with(t)),
            "no FAIL line for {t}\n{out}"
        );
    }
    for t in PASSING {
        assert!(
            all.lines()
                .any(|l| l.trim_start().starts_with("PASS") && l.trim_end().ends_with(t)),
            "no PASS line for {t}\n{out}"
        );
    }
    assert!(
        all.contains("did you mean `assert`?"),
        "the failure message is shown\n{out}"
    );

    // Each test process appended its case; nobody wrote a summary, and the case listed
    // as ignored never ran.
    let text = std::fs::read_to_string(&report).expect("no report written");
    let lines = json_lines(&text);
    assert!(
        lines.iter().all(|l| l["type"] != "summary"),
        "no summary under nextest\n{text}"
    );
    let records = records_by_trial(&lines);
    assert_eq!(
        records.keys().map(String::as_str).collect::<Vec<_>>(),
        NEXTEST_RUNS,
        "{text}"
    );
    check_records(&records);
    Ok(())
}

/// The report of a nextest run: one record per executed case, checked to have no
/// duplicates.
fn nextest_report(report: &Path) -> (String, Vec<Value>) {
    let text = std::fs::read_to_string(report).expect("no report written");
    let lines = json_lines(&text);
    let trials: Vec<String> = records_by_trial(&lines).into_keys().collect();
    assert_eq!(trials.len(), lines.len(), "{text}");
    (text, lines)
}

fn nextest_runs_start_the_report_afresh() -> Needs {
    nextest()?;
    let fx = fixture();
    let scratch = Scratch::new("report-nextest-twice");
    let report = scratch.path("report.jsonl");
    let marker = scratch.path("report.jsonl.run-id");
    let env = [("AGENTEST_REPORT", report.as_os_str())];
    let run_id = || std::fs::read_to_string(&marker).expect("no run id marker beside the report");

    fx.nextest("run", &["--no-fail-fast"], &env)
        .expect_code(100);
    let (first, lines) = nextest_report(&report);
    assert_eq!(lines.len(), NEXTEST_RUNS.len(), "{first}");
    let first_run = run_id();

    // The same run again: the first record of the new run truncates the file, so it
    // holds each case once (records_by_trial panics on a duplicate).
    fx.nextest("run", &["--no-fail-fast"], &env)
        .expect_code(100);
    let (second, lines) = nextest_report(&report);
    let records = records_by_trial(&lines);
    assert_eq!(
        records.keys().map(String::as_str).collect::<Vec<_>>(),
        NEXTEST_RUNS,
        "one record per executed case\n{second}"
    );
    check_records(&records);
    let second_run = run_id();
    assert!(
        !second_run.is_empty() && second_run != first_run,
        "each run has its own id: {first_run:?}, {second_run:?}"
    );

    // A smaller run leaves nothing of the previous one behind.
    fx.nextest("run", &["billing/"], &env).expect_code(0);
    let (third, lines) = nextest_report(&report);
    let records = records_by_trial(&lines);
    assert_eq!(
        records.keys().map(String::as_str).collect::<Vec<_>>(),
        ["billing/refunds::R1", "billing/refunds::R2"],
        "{third}"
    );
    assert_ne!(run_id(), second_run);
    Ok(())
}

/// The run store under nextest: every process of one `cargo nextest run` (one per
/// test) records into one execution, each case once, with its verdict; a second run is
/// a second execution; a plain `cargo test` run is one more.
fn a_nextest_run_is_one_execution_in_the_store() -> Needs {
    nextest()?;
    let fx = fixture();
    let scratch = Scratch::new("store-nextest");
    let db = scratch.path("runs.db");
    let env = [("AGENTEST_STORE", db.as_os_str())];
    fx.nextest("run", &["--no-fail-fast"], &env)
        .expect_code(100);
    fx.nextest("run", &["--no-fail-fast"], &env)
        .expect_code(100);
    fx.cargo_test_with(&["billing/"], &env).expect_code(0);
    let conn = rusqlite::Connection::open(&db).expect("the store");
    let executions: Vec<(i64, Option<String>)> = conn
        .prepare("SELECT id, nextest_run_id FROM executions ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(executions.len(), 3, "{executions:?}");
    assert!(executions[0].1.is_some() && executions[1].1.is_some());
    assert_ne!(executions[0].1, executions[1].1);
    assert_eq!(executions[2].1, None, "cargo test is not nextest");
    for (id, _) in &executions[..2] {
        let runs: Vec<(String, String, Option<String>)> = conn
            .prepare(
                "SELECT trial, status, verdict FROM runs WHERE execution_id = ?1 ORDER BY trial",
            )
            .unwrap()
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let trials: Vec<&str> = runs.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(trials, NEXTEST_RUNS, "execution {id}: one run per case");
        for (trial, status, verdict) in &runs {
            let want = expected_status(trial);
            assert_eq!(verdict.as_deref(), Some(want), "{trial}");
            let lifecycle = if want == "error" {
                "error"
            } else {
                "completed"
            };
            assert_eq!(status, lifecycle, "{trial}");
        }
    }
    let billing: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM runs WHERE execution_id = ?1 AND status = 'completed'",
            [executions[2].0],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(billing, 2);
    Ok(())
}

/// Two nextest partitions (two `cargo nextest run` processes, as on two CI machines)
/// with one `AGENTEST_EXECUTION` and a PostgreSQL store record one execution: every case
/// once, with its verdict; `agentest report --execution KEY` renders it whole from the
/// store.
fn nextest_partitions_with_one_key_are_one_execution_in_postgres() -> Needs {
    nextest()?;
    let db = crate::common::fresh_postgres()?;
    let fx = fixture();
    let env = [
        ("AGENTEST_STORE", OsStr::new(db.url())),
        ("AGENTEST_EXECUTION", OsStr::new("ci-run-7")),
    ];
    for k in 1..=2 {
        let partition = format!("hash:{k}/2");
        let out = fx.nextest("run", &["--no-fail-fast", "--partition", &partition], &env);
        assert!(
            matches!(out.code, Some(0 | 100)),
            "partition {k}: unexpected exit code\n{out}"
        );
    }
    let mut client = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    let executions: Vec<(i64, Option<String>)> = client
        .query("SELECT id, execution_key FROM executions", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(executions.len(), 1, "{executions:?}");
    assert_eq!(executions[0].1.as_deref(), Some("ci-run-7"));
    let runs: Vec<(String, String, Option<String>)> = client
        .query(
            "SELECT trial, status, verdict FROM runs ORDER BY trial COLLATE \"C\"",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let trials: Vec<&str> = runs.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(trials, NEXTEST_RUNS, "each case once");
    for (trial, _, verdict) in &runs {
        assert_eq!(verdict.as_deref(), Some(expected_status(trial)), "{trial}");
    }
    let scratch = Scratch::new("pg-partitions");
    let report = scratch.path("whole.jsonl");
    let out = Command::new(crate::common::BIN)
        .args(["report", "--execution", "ci-run-7", "-o"])
        .arg(&report)
        .env("AGENTEST_STORE", db.url())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&report).unwrap();
    let mut lines = json_lines(&text);
    lines.retain(|l| l["type"] != "summary");
    let records = records_by_trial(&lines);
    assert_eq!(
        records.keys().map(String::as_str).collect::<Vec<_>>(),
        NEXTEST_RUNS,
        "{text}"
    );
    Ok(())
}

/// The trials `AGENTEST_RUNS` is tried on: two that pass and one that fails.
const REPEATED: [&str; 3] = [
    "billing/refunds::R1",
    "billing/refunds::R2",
    "smoke::wrong-reply",
];

/// The records of [`REPEATED`] in a report: each passing one ran its 3 repeats, and
/// the failing one stopped after its first (the default gate needs every repeat).
#[track_caller]
fn check_repeated(text: &str) {
    let mut lines = json_lines(text);
    lines.retain(|l| l["type"] != "summary");
    let records = records_by_trial(&lines);
    assert_eq!(
        records.keys().map(String::as_str).collect::<Vec<_>>(),
        REPEATED,
        "one record per trial, not per repeat\n{text}"
    );
    for t in &REPEATED[..2] {
        let r = records[*t];
        assert_eq!(r["status"], "passed", "{t}\n{text}");
        assert_eq!(
            pick(&r["stability"], &["planned", "runs", "passed", "saved"]),
            json!({"planned": 3, "runs": 3, "passed": 3, "saved": 0}),
            "{t}\n{text}"
        );
        assert_eq!(
            r["repeats"].as_array().map(Vec::len),
            Some(3),
            "{t}\n{text}"
        );
    }
    let r = records["smoke::wrong-reply"];
    assert_eq!(r["status"], "failed", "{text}");
    assert_eq!(
        pick(&r["stability"], &["planned", "runs", "failed", "saved"]),
        json!({"planned": 3, "runs": 1, "failed": 1, "saved": 2}),
        "{text}"
    );
}

/// `AGENTEST_RUNS=3` under `cargo test` and `cargo nextest run`: each case stays one
/// trial (its repeats run inside it), its failure message says what the gate saw, and
/// the report has one record per case with its repeats. A value out of range is one
/// failing trial naming the variable.
fn agentest_runs_repeats_each_case_inside_its_trial() -> Needs {
    let fx = fixture();
    let scratch = Scratch::new("runs-env");
    let report = scratch.path("report.jsonl");
    let three = OsStr::new("3");
    let env = [
        ("AGENTEST_REPORT", report.as_os_str()),
        ("AGENTEST_RUNS", three),
    ];
    // libtest takes one filter: `re` is in the names of [`REPEATED`] and no others.
    let filter = "re";

    let out = fx.cargo_test_with(&[filter], &env);
    out.expect_code(101);
    assert_eq!(out.names_run(), REPEATED, "{out}");
    expect_counts(&out, 2, 1, 0, Some(7));
    assert!(
        failure_of(&out, "smoke::wrong-reply")
            .contains("gate all 3 runs pass failed: 0 passed, 1 failed, 0 errors; repeat 1: "),
        "{out}"
    );
    let text = std::fs::read_to_string(&report).expect("no report written");
    check_repeated(&text);
    let summary = json_lines(&text).pop().expect("a summary");
    assert_eq!(
        pick(&summary, &["total", "repeats_run", "repeats_saved"]),
        json!({"total": 3, "repeats_run": 7, "repeats_saved": 2}),
        "{text}"
    );

    nextest()?;
    let out = fx.nextest("run", &["--no-fail-fast", filter], &env);
    out.expect_code(100);
    let all = out.both();
    assert!(all.contains("3 tests run: 2 passed, 1 failed"), "{out}");
    assert!(
        all.contains("gate all 3 runs pass failed: 0 passed, 1 failed, 0 errors"),
        "{out}"
    );
    let (text, _) = nextest_report(&report);
    check_repeated(&text);

    let zero = OsStr::new("0");
    let out = fx.binary(&["billing/"], &[("AGENTEST_RUNS", zero)], RUN_LIMIT);
    assert_eq!(out.code, Some(101), "{out}");
    expect_counts(&out, 0, 1, 0, None);
    assert!(
        failure_of(&out, "agentest::settings").contains(
            "environment variable AGENTEST_RUNS=\"0\" is not valid; use a whole number of runs from 1 to 10000"
        ),
        "{out}"
    );
    Ok(())
}

/// A suite line `{"generate": "scripts:echo-cases?count=2"}` under the harness: the
/// generator the demo registers (`Harness::generator`) makes its cases when the suites
/// load, so they are listed, filtered and run as trials of the suite, by `cargo test`
/// and by nextest (whose every test process expands the line again).
fn a_generator_line_expands_into_trials_under_cargo_test_and_nextest() -> Needs {
    let fx = fixture();
    let scratch = Scratch::new("generator-line");
    let root = scratch.path("suites");
    std::fs::create_dir_all(&root).expect("create the suites root");
    std::fs::write(
        root.join("gen.jsonl"),
        "{\"id\": \"own\", \"input\": \"x\", \"assert\": {\"type\": \"contains\", \"value\": \"echo: x\"}}\n\
         {\"generate\": \"scripts:echo-cases?count=2\"}\n",
    )
    .expect("write the suite");
    let env = [("DEMO_SUITES", root.as_os_str())];
    let listed = fx.binary(&["--list"], &env, RUN_LIMIT);
    assert_eq!(
        listed.stdout,
        list_lines(&["gen::E1", "gen::E2", "gen::own"]),
        "{listed}"
    );
    let out = fx.binary(&[], &env, RUN_LIMIT);
    assert_eq!(out.code, Some(0), "{out}");
    expect_counts(&out, 3, 0, 0, None);
    let out = fx.binary(&["--exact", "gen::E2"], &env, RUN_LIMIT);
    assert_eq!(out.names_run(), ["gen::E2"], "{out}");

    nextest()?;
    let out = fx.nextest("run", &[], &env);
    out.expect_code(0);
    assert!(out.both().contains("3 tests run: 3 passed"), "{out}");
    Ok(())
}

/// A tau2-bench tasks file under the suites root is read by the harness: one trial per
/// task (`tasks::ID`), `--exact` finds the file from the trial name, and the verdicts are
/// those of `agentest test` (the example mock domain, its judge answers replayed on CI).
fn a_tau2_tasks_file_runs_under_cargo_test_and_nextest() -> Needs {
    let fx = fixture();
    let scratch = Scratch::new("tau2");
    let root = scratch.path("suites");
    crate::common::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tau2-mock"),
        &root,
    );
    // The harness runs its own registered agent unless told another: name the example's.
    let config = std::fs::read_to_string(root.join("agentest.toml")).expect("config");
    std::fs::write(
        root.join("agentest.toml"),
        format!(
            "{config}\n[agents.mock]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n"
        ),
    )
    .expect("write the config");
    let env = [
        ("DEMO_SUITES", root.as_os_str()),
        ("AGENTEST_AGENT", OsStr::new("mock")),
        ("AGENTEST_SIMULATOR", OsStr::new("user")),
        ("CI", OsStr::new("true")),
    ];
    let listed = fx.binary(&["--list"], &env, RUN_LIMIT);
    assert!(
        listed.stdout.starts_with("tasks::create_task_1: test\n"),
        "{listed}"
    );
    assert_eq!(listed.stdout.lines().count(), 10, "{listed}");
    let out = fx.binary(&[], &env, RUN_LIMIT);
    assert_eq!(out.code, Some(101), "{out}");
    expect_counts(&out, 9, 1, 0, None);
    assert!(
        out.stdout
            .contains("tasks::update_task_with_initialization_data"),
        "{out}"
    );
    let out = fx.binary(&["--exact", "tasks::update_task_1"], &env, RUN_LIMIT);
    assert_eq!(out.names_run(), ["tasks::update_task_1"], "{out}");
    assert_eq!(out.code, Some(0), "{out}");

    nextest()?;
    let out = fx.nextest("run", &["--no-fail-fast"], &env);
    out.expect_code(100);
    assert!(
        out.both().contains("10 tests run: 9 passed, 1 failed"),
        "{out}"
    );
    Ok(())
}

/// Two suite files that make one suite (`foo.jsonl`, `foo.scenario.yaml`) and define the
/// trial `foo::x` twice: one failing trial naming both places, under `cargo test` and
/// under nextest, whose process for `--exact foo::x` must read both files to know (the
/// scenario fails: read alone, `foo.jsonl`'s `x` would pass in its place).
fn a_trial_name_defined_twice_fails_under_cargo_test_and_nextest() -> Needs {
    let fx = fixture();
    let scratch = Scratch::new("twice");
    let root = scratch.path("suites");
    std::fs::create_dir_all(&root).expect("create the suites root");
    std::fs::write(
        root.join("foo.jsonl"),
        "{\"id\": \"x\", \"input\": \"hi\", \"assert\": {\"type\": \"contains\", \"value\": \"echo: hi\"}}\n\
         {\"id\": \"y\", \"input\": \"hi\", \"assert\": {\"type\": \"contains\", \"value\": \"echo: hi\"}}\n",
    )
    .expect("write the suite");
    std::fs::write(
        root.join("foo.scenario.yaml"),
        "name: x\ndescription: d\nenvironment: {type: local}\nrun:\n  - input: hi\n    evaluations:\n      - type: string_contains\n        value: 'not echoed'\njudgment: {strategy: all_pass}\n",
    )
    .expect("write the scenario");
    let env = [("DEMO_SUITES", root.as_os_str())];
    let shown = |f: &str| root.join(f).display().to_string();
    let error = format!(
        "{}:1:1: the trial name `foo::x` is defined twice, here and at {}:1:1, so neither runs; `{}` and `{}` both make the suite `foo`",
        shown("foo.jsonl"),
        shown("foo.scenario.yaml"),
        shown("foo.jsonl"),
        shown("foo.scenario.yaml"),
    );
    let out = fx.cargo_test_with(&[], &env);
    out.expect_code(101);
    assert_eq!(
        out.trials_run(),
        [
            ("foo::x".to_string(), "FAILED".to_string()),
            ("foo::y".to_string(), "ok".to_string())
        ],
        "{out}"
    );
    assert!(failure_of(&out, "foo::x").contains(&error), "{out}");
    assert!(!out.both().contains("another process"), "{out}");

    nextest()?;
    let out = fx.nextest("run", &["--no-fail-fast"], &env);
    out.expect_code(100);
    let all = out.both();
    assert!(all.contains("2 tests run: 1 passed, 1 failed"), "{out}");
    assert!(all.contains(&error), "{out}");
    Ok(())
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        the_fixture_reuses_the_dependencies_cargo_test_built,
        an_invalid_setting_is_one_failing_trial_naming_it,
        a_config_error_is_one_trial_and_each_case_points_to_it,
        list_prints_exactly_the_sorted_trial_names,
        cargo_test_fails_with_located_messages_and_counts,
        name_filter_runs_one_suite,
        dynamic_cases_run_with_the_scripted_simulator,
        a_dynamic_case_out_of_turns_fails_naming_the_missing_checkpoint,
        exact_filter_runs_one_trial,
        skip_filter_leaves_out_matching_trials,
        ignored_flag_runs_only_the_skip_case,
        json_format_emits_libtest_events,
        one_test_thread_runs_in_name_order,
        report_under_cargo_test_has_every_case_then_a_summary,
        the_elizaos_examples_run_under_cargo_test,
        #[cfg(unix)]
        a_report_that_cannot_be_written_is_a_failing_trial,
        a_report_path_onto_a_file_that_is_not_a_report_is_refused,
        #[cfg(unix)]
        a_store_that_cannot_record_is_a_failing_trial,
        #[cfg(unix)]
        exact_opens_only_the_named_suite,
        faults_are_error_and_timeout_records_and_no_case_is_lost,
        a_slow_before_hook_times_out_at_the_deadline,
        a_slow_sync_agent_times_out_at_the_deadline,
        empty_suites_root_is_an_error_naming_the_root,
        nextest_lists_the_trials (needs nextest),
        nextest_run_fails_and_appends_a_record_per_case (needs nextest),
        a_nextest_run_is_one_execution_in_the_store (needs nextest),
        nextest_partitions_with_one_key_are_one_execution_in_postgres (needs crate::common::postgres),
        nextest_runs_start_the_report_afresh (needs nextest),
        agentest_runs_repeats_each_case_inside_its_trial (needs nextest),
        a_generator_line_expands_into_trials_under_cargo_test_and_nextest (needs nextest),
        a_tau2_tasks_file_runs_under_cargo_test_and_nextest (needs nextest),
        a_trial_name_defined_twice_fails_under_cargo_test_and_nextest (needs nextest),
    ]
}
