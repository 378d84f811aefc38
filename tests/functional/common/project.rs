//! Projects of the `llm` and `dynamic` tests: a scratch directory whose cases are in one
//! suite, [`SUITE`], run with `agentest test -i suites -o report.jsonl` ([`agentest`]),
//! with what the run leaves ([`ReportedRun`]).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

use super::{clean, on_a_terminal, Scratch, Watch, BIN};

/// The suite file the projects write their cases to: trials are `s::ID`.
pub const SUITE: &str = "suites/s.jsonl";

/// The cassette file of case `id` of [`SUITE`].
pub fn cassette(id: &str) -> String {
    format!("suites/.cassettes/s/{id}.jsonl")
}

/// What one run of the binary left, with its JSONL report (trials named `s::ID`) and
/// how long it took.
pub struct ReportedRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub report: Option<String>,
    pub took: std::time::Duration,
}

impl std::fmt::Debug for ReportedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit code {} after {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}\n--- report ---\n{}",
            self.code,
            self.took,
            self.stdout,
            self.stderr,
            self.report.as_deref().unwrap_or("(none)")
        )
    }
}

impl ReportedRun {
    /// The record of case `id` (trial `s::ID`); exactly one must exist.
    #[track_caller]
    pub fn case(&self, id: &str) -> serde_json::Value {
        self.record(&format!("s::{id}"))
    }

    /// The record of `trial`; exactly one must exist.
    #[track_caller]
    pub fn record(&self, trial: &str) -> serde_json::Value {
        let text = self
            .report
            .as_deref()
            .unwrap_or_else(|| panic!("no report:\n{self:?}"));
        let found: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("report line is JSON"))
            .filter(|v| v["trial"] == trial)
            .collect();
        assert_eq!(found.len(), 1, "one record for {trial}:\n{self:?}");
        found.into_iter().next().expect("one record")
    }

    /// The report's summary line.
    #[track_caller]
    pub fn summary(&self) -> Value {
        self.report
            .as_deref()
            .unwrap_or_else(|| panic!("no report:\n{self:?}"))
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("report line is JSON"))
            .find(|v| v["type"] == "summary")
            .unwrap_or_else(|| panic!("no summary line:\n{self:?}"))
    }

    #[track_caller]
    pub fn error(&self, id: &str) -> String {
        self.case(id)["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{id} has no error:\n{self:?}"))
            .to_string()
    }

    #[track_caller]
    pub fn expect(&self, code: i32) -> &ReportedRun {
        assert_eq!(self.code, code, "{self:?}");
        self
    }

    #[track_caller]
    pub fn expect_status(&self, id: &str, status: &str) -> &ReportedRun {
        assert_eq!(self.case(id)["status"], status, "status of {id}:\n{self:?}");
        self
    }

    #[track_caller]
    pub fn expect_error(&self, id: &str, parts: &[&str]) -> &ReportedRun {
        let e = self.error(id);
        for p in parts {
            assert!(
                e.contains(p),
                "{id}'s error should contain {p:?}, it is {e:?}\n{self:?}"
            );
        }
        self
    }

    #[track_caller]
    pub fn expect_termination(&self, id: &str, termination: &str) -> &ReportedRun {
        assert_eq!(
            self.case(id)["termination"],
            termination,
            "termination of {id}:\n{self:?}"
        );
        self
    }

    #[track_caller]
    pub fn expect_stdout(&self, part: &str) -> &ReportedRun {
        assert!(
            self.stdout.contains(part),
            "stdout should contain {part:?}:\n{self:?}"
        );
        self
    }

    #[track_caller]
    pub fn expect_stderr(&self, part: &str) -> &ReportedRun {
        assert!(
            self.stderr.contains(part),
            "stderr should contain {part:?}:\n{self:?}"
        );
        self
    }

    /// Each turn's `(input, input_source)`.
    pub fn inputs(&self, id: &str) -> Vec<(String, String)> {
        self.case(id)["turns"]
            .as_array()
            .expect("turns")
            .iter()
            .map(|t| {
                (
                    t["input"].as_str().unwrap_or_default().to_string(),
                    t["input_source"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    /// The record of checkpoint `cp` of case `id`.
    #[track_caller]
    pub fn checkpoint(&self, id: &str, cp: &str) -> serde_json::Value {
        let case = self.case(id);
        case["checkpoints"]
            .as_array()
            .and_then(|a| a.iter().find(|c| c["id"] == cp).cloned())
            .unwrap_or_else(|| panic!("{id} has no checkpoint {cp}:\n{self:?}"))
    }

    /// The summary line's counts: (total, passed, failed, errors, skipped).
    #[track_caller]
    pub fn counts(&self) -> [u64; 5] {
        let text = self.report.as_deref().expect("a report");
        let summary: serde_json::Value =
            serde_json::from_str(text.lines().last().expect("a summary")).expect("JSON");
        assert_eq!(summary["type"], "summary", "{self:?}");
        ["total", "passed", "failed", "errors", "skipped"].map(|k| summary[k].as_u64().unwrap())
    }
}

impl Scratch {
    /// Writes the cases to [`SUITE`], one line each.
    pub fn cases(&self, cases: &[Value]) {
        let text: String = cases.iter().map(|c| format!("{c}\n")).collect();
        self.write(SUITE, &text);
    }
}

// ---------------------------------------------------------------------------------------
// Runs
// ---------------------------------------------------------------------------------------

/// What the test feeds the binary's stdin.
enum Stdin {
    Null,
    Text(String),
    /// A pseudo-terminal on which these lines are typed, each once the binary has asked
    /// that many questions.
    Pty(Vec<(usize, String)>),
}

/// A run of `agentest test -i suites -o report.jsonl --color never` in a clean
/// environment: no `CI`, no `AGENTEST_*`, the key set unless told otherwise.
pub struct Cmd<'a> {
    dir: &'a Path,
    args: Vec<String>,
    envs: Vec<(String, String)>,
    /// The API key's variable and value.
    key: (&'static str, &'static str),
    with_key: bool,
    stdin: Stdin,
}

/// A run in `dir` whose API key `key.1` is in the variable `key.0`.
pub fn agentest<'a>(dir: &'a Path, key: (&'static str, &'static str)) -> Cmd<'a> {
    Cmd {
        dir,
        args: Vec::new(),
        envs: Vec::new(),
        key,
        with_key: true,
        stdin: Stdin::Null,
    }
}

impl Cmd<'_> {
    pub fn arg(mut self, a: &str) -> Self {
        self.args.push(a.into());
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.envs.push((k.into(), v.into()));
        self
    }

    pub fn without_key(mut self) -> Self {
        self.with_key = false;
        self
    }

    /// Pipes `text` into stdin (then closes it).
    pub fn stdin(mut self, text: &str) -> Self {
        self.stdin = Stdin::Text(text.into());
        self
    }

    /// Runs with stdin on a pseudo-terminal where `lines` are typed, the first after the
    /// first question, the second after the second, ...
    pub fn pty(self, lines: &[&str]) -> Self {
        let script: Vec<(usize, &str)> =
            lines.iter().enumerate().map(|(i, l)| (i + 1, *l)).collect();
        self.pty_script(&script)
    }

    /// Runs with stdin on a pseudo-terminal where each line is typed once the binary has
    /// asked that many questions.
    pub fn pty_script(mut self, script: &[(usize, &str)]) -> Self {
        self.stdin = Stdin::Pty(script.iter().map(|(n, l)| (*n, l.to_string())).collect());
        self
    }

    pub fn run(self) -> ReportedRun {
        let report = self.dir.join("report.jsonl");
        let _ = std::fs::remove_file(&report);
        let mut cmd = clean(match &self.stdin {
            Stdin::Pty(lines) => {
                let script: Vec<(usize, &str)> =
                    lines.iter().map(|(n, l)| (*n, l.as_str())).collect();
                on_a_terminal(BIN, Watch::Stderr, "the agent asks:", &script)
            }
            _ => Command::new(BIN),
        });
        cmd.current_dir(self.dir)
            .args([
                "test",
                "-i",
                "suites",
                "-o",
                "report.jsonl",
                "--color",
                "never",
            ])
            .args(&self.args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if self.with_key {
            cmd.env(self.key.0, self.key.1);
        }
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        cmd.stdin(match self.stdin {
            Stdin::Text(_) => Stdio::piped(),
            _ => Stdio::null(),
        });
        let started = Instant::now();
        let mut child = cmd.spawn().expect("run the agentest binary");
        if let (Stdin::Text(text), Some(mut pipe)) = (&self.stdin, child.stdin.take()) {
            // The binary may exit without reading it all: a broken pipe is fine.
            let _ = pipe.write_all(text.as_bytes());
        }
        let out = child.wait_with_output().expect("wait for the binary");
        ReportedRun {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            report: std::fs::read_to_string(&report).ok(),
            took: started.elapsed(),
        }
    }
}
