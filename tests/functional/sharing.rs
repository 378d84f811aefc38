//! Several `agentest test` processes given one execution key (`AGENTEST_EXECUTION`, a
//! CI's run id) share the execution's queue: each runs what it planned that no other
//! process holds, waits for the cases another process runs and reports them with the
//! record they ended with there, and runs itself any that goes back to the queue when
//! the process that held it dies. On SQLite (processes of one machine) and PostgreSQL.

use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::{fresh_postgres, Needs, Report, Scratch, BIN};
use crate::store::{kill_after, requests, slow_project};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        test_processes_with_one_key_share_the_cases_on_sqlite,
        test_processes_with_one_key_share_the_cases_on_postgres(needs crate::common::postgres),
        a_test_process_takes_over_the_cases_of_one_killed_on_sqlite,
        a_test_process_takes_over_the_cases_of_one_killed_on_postgres(needs crate::common::postgres),
    ]
}

/// Starts `agentest test -i suites --parallel 8 -o <report>` in `s` for the execution
/// `key` in the store at `store`.
fn start(s: &Scratch, store: &str, key: &str, report: &str) -> Child {
    Command::new(BIN)
        .current_dir(s.path())
        .args([
            "test",
            "-i",
            "suites",
            "--parallel",
            "8",
            "--compact",
            "-o",
            report,
        ])
        .env_remove("CARGO_TARGET_DIR")
        .env("AGENTEST_STORE", store)
        .env("AGENTEST_EXECUTION", key)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start agentest test")
}

/// The trials of a report with their status.
fn statuses(report: &Report) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = report
        .cases
        .iter()
        .map(|c| {
            (
                c["trial"].as_str().unwrap_or_default().to_string(),
                c["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Every one of `n` cases passed, once each, in `report`.
fn all_passed(report: &Report, n: usize, who: &str) {
    let got = statuses(report);
    let want: Vec<(String, String)> = (0..n)
        .map(|i| (format!("s::c{i:03}"), "passed".to_string()))
        .collect();
    assert_eq!(got.len(), n, "{who}: one record per case\n{}", report.text);
    assert_eq!(got, want, "{who}: every case passed\n{}", report.text);
    assert_eq!(report.summary["passed"], Value::from(n), "{}", report.text);
}

/// Three processes on one key and the same suites: each case reached the agent exactly
/// once, and each process's report holds every case, passed (its own and the others').
fn three_processes_share(store: &str, tag: &str) {
    let n = 120;
    let (s, _agent) = slow_project(tag, n);
    let children: Vec<Child> = (0..3)
        .map(|k| start(&s, store, "share-1", &format!("r{k}.jsonl")))
        .collect();
    let mut waited = 0;
    for (k, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "process {k}: {stderr}");
        waited += usize::from(stderr.contains("that another process of this execution is running"));
        all_passed(
            &Report::read(&s.join(&format!("r{k}.jsonl"))),
            n,
            &format!("process {k}"),
        );
    }
    let by_case = requests(&s);
    assert_eq!(by_case.len(), n, "every case reached the agent");
    assert!(
        by_case.values().all(|c| *c == 1),
        "no case ran twice: {by_case:?}"
    );
    // Three processes at once on 120 cases of 0.1 s: some cases were the others'.
    assert!(waited >= 1, "no process waited for another's cases");
}

fn test_processes_with_one_key_share_the_cases_on_sqlite() {
    let s = Scratch::named("sharing", "sqlite-store");
    let store = s.join("runs.db");
    three_processes_share(store.to_str().unwrap(), "share-sqlite");
}

fn test_processes_with_one_key_share_the_cases_on_postgres() -> Needs {
    let db = fresh_postgres()?;
    three_processes_share(db.url(), "share-pg");
    Ok(())
}

/// Two processes on one key; one is killed with SIGKILL mid-run. The other waits for
/// the cases the killed one held, takes them back once it sees that process gone, and
/// its report holds every case, passed; only what the killed one had in flight reached
/// the agent twice.
fn one_killed(store: &str, tag: &str) {
    let n = 200;
    let (s, _agent) = slow_project(tag, n);
    let survivor = start(&s, store, "share-2", "kept.jsonl");
    let doomed = start(&s, store, "share-2", "lost.jsonl");
    kill_after(&s, doomed, n / 4);
    let out = survivor.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    all_passed(&Report::read(&s.join("kept.jsonl")), n, "the survivor");
    let by_case = requests(&s);
    assert_eq!(by_case.len(), n, "every case reached the agent");
    let twice = by_case.values().filter(|c| **c > 1).count();
    // In flight in the killed process: its 8 running cases and ends not yet written.
    assert!(
        by_case.values().all(|c| *c <= 2) && twice <= 16,
        "only the killed process's cases in flight ran again: {twice}\n{by_case:?}"
    );
}

fn a_test_process_takes_over_the_cases_of_one_killed_on_sqlite() {
    let s = Scratch::named("sharing", "sqlite-kill-store");
    let store = s.join("runs.db");
    one_killed(store.to_str().unwrap(), "kill-sqlite");
}

fn a_test_process_takes_over_the_cases_of_one_killed_on_postgres() -> Needs {
    let db = fresh_postgres()?;
    one_killed(db.url(), "kill-pg");
    Ok(())
}
