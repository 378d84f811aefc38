//! Files agentest writes (reports, golden files) on a system that refuses them: a full
//! disk (`/dev/full`, where every write fails with ENOSPC), a file size limit
//! (`ulimit -f` in a shell that ignores SIGXFSZ, so a write fails with EFBIG), and a
//! folder that is a file. Each failure is the run's error, with the system's reason,
//! no "wrote" line and no temporary file left; nothing is announced as written.

use std::path::Path;
use std::process::Command;

use crate::common::{clean, expense_agent_section, finish, Run, Scratch, BIN};

fn scratch(tag: &str) -> Scratch {
    let s = Scratch::named("writes", tag);
    s.write("suites/agentest.toml", &expense_agent_section());
    let cases: Vec<String> = (1..=12)
        .map(|i| {
            format!(
                r#"{{"id": "c{i}", "input": "Hello {i}", "assertions": [{{"type": "contains", "value": "Hello"}}]}}"#
            )
        })
        .collect();
    let lines: Vec<&str> = cases.iter().map(String::as_str).collect();
    s.write_suite("suites/s.jsonl", &lines);
    s
}

/// `agentest test -i suites ARGS` in `dir`, without the run store (its own write
/// failures are not these tests' subject).
fn agentest(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = clean(Command::new(BIN));
    cmd.current_dir(dir)
        .args(["test", "-i", "suites"])
        .args(args)
        .env("AGENTEST_STORE", "off");
    cmd
}

/// The same run under a file size limit of 2 KiB: `ulimit -f 2` (1 KiB blocks in bash),
/// SIGXFSZ ignored so that an oversized write fails with EFBIG instead of killing the
/// process.
fn agentest_limited(dir: &Path, args: &[&str]) -> Run {
    agentest_limited_to(dir, 2, args, "no")
}

/// [`agentest_limited`] with a limit of `kib` KiB and `AGENTEST_UPDATE=update`.
fn agentest_limited_to(dir: &Path, kib: u32, args: &[&str], update: &str) -> Run {
    let cmd = agentest(dir, args);
    let mut shell = clean(Command::new("bash"));
    shell
        .current_dir(dir)
        .env("AGENTEST_STORE", "off")
        .env("AGENTEST_UPDATE", update)
        .arg("-c")
        .arg(format!(r#"trap '' XFSZ; ulimit -f {kib}; exec "$@""#))
        .arg("bash")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    finish(&mut shell)
}

#[track_caller]
fn expect_refused(run: &Run, report: &str, why: &str) {
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains(report) && run.stderr.contains(why),
        "stderr should name {report} and {why:?}:\n{run:?}"
    );
    assert!(!run.stderr.contains("wrote"), "{run:?}");
}

/// Files left in `dir` by an atomic write that did not finish.
fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(".tmp-"))
                .collect()
        })
        .unwrap_or_default()
}

/// A JSONL report on a full disk: every case still runs and is shown, then the run
/// ends in error naming ENOSPC, not "wrote".
fn a_jsonl_report_on_a_full_disk_is_an_error_of_the_run() {
    let s = scratch("full");
    std::os::unix::fs::symlink("/dev/full", s.join("r.jsonl")).expect("symlink to /dev/full");
    let run = finish(&mut agentest(s.path(), &["-o", "r.jsonl"]));
    expect_refused(
        &run,
        "failed to write the record of `s::",
        "to the report r.jsonl: No space left on device (os error 28); the report holds only the records written before it, and no summary line",
    );
    // Every case ran and was shown: only the report failed.
    assert!(run.stdout.contains("Passed:  12"), "{run:?}");
    assert_eq!(
        run.stderr.matches("error:").count(),
        1,
        "said once: {run:?}"
    );
}

/// A rendered report over the file size limit: the run is an error naming EFBIG, and
/// neither the report nor its temporary file is left.
fn a_rendered_report_over_the_size_limit_is_an_error_and_leaves_no_temp_file() {
    let s = scratch("efbig-json");
    let run = agentest_limited(s.path(), &["-o", "out/r.json"]);
    expect_refused(
        &run,
        "failed to write the report out/r.json",
        "File too large (os error 27)",
    );
    assert!(!s.exists("out/r.json"), "{run:?}");
    assert_eq!(temp_files(&s.join("out")), Vec::<String>::new(), "{run:?}");
}

/// A JSONL report cut by the file size limit holds whole records only (a half-written
/// line is cut off again), and says it is incomplete.
fn a_jsonl_report_cut_by_the_size_limit_holds_whole_records() {
    let s = scratch("efbig-jsonl");
    let run = agentest_limited(s.path(), &["-o", "r.jsonl"]);
    expect_refused(
        &run,
        "to the report r.jsonl: File too large (os error 27)",
        "the report holds only the records written before it, and no summary line",
    );
    let text = s.read("r.jsonl");
    assert!(text.ends_with('\n') && !text.is_empty(), "{text:?}");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}\n{run:?}")))
        .collect();
    assert!(lines.len() < 12, "{run:?}");
    assert!(lines.iter().all(|v| v["type"] != "summary"), "{text}");
}

/// A report whose folder is a file (`/dev/full/r.json`, `notes.txt/r.json`) is refused
/// before any case runs, naming the file that is not a folder (`mkdir` says "File
/// exists", which blames nothing).
fn a_report_below_a_file_is_refused_before_anything_runs() {
    let s = scratch("not-a-folder");
    s.write("notes.txt", "mine\n");
    for (report, file) in [
        ("/dev/full/r.json", "/dev/full"),
        ("notes.txt/r.jsonl", "notes.txt"),
        ("notes.txt/deeper/r.md", "notes.txt"),
    ] {
        let run = finish(&mut agentest(s.path(), &["-o", report]));
        expect_refused(
            &run,
            &format!("error: failed to open the report {report}"),
            &format!("{file} is not a folder"),
        );
        assert!(!run.stdout.contains("s::c1"), "nothing runs: {run:?}");
    }
    assert_eq!(s.read("notes.txt"), "mine\n");
}

/// A golden file that cannot be written (a file size limit of 0 refuses every write)
/// is the case's `error` with the system's reason, not a failure of the agent's nor an
/// "updated" golden, and leaves no temporary file.
fn a_golden_file_that_cannot_be_written_is_an_error() {
    let s = scratch("golden");
    s.write(
        "suites/agentest.toml",
        &format!("{}\n[golden]\nenabled = true\n", expense_agent_section()),
    );
    for (update, file) in [
        (
            "always",
            "failed to write the golden file suites/s.golden/c1.txt",
        ),
        ("new", "failed to write suites/s.golden/c1.txt.new"),
    ] {
        let run = agentest_limited_to(s.path(), 0, &["--run", "^s::c1$"], update);
        assert_eq!(run.code, 1, "{update}: {run:?}");
        assert!(
            run.stdout
                .contains(&format!("{file}: File too large (os error 27)"))
                && run.stdout.contains("Errors:  1"),
            "{update}: {run:?}"
        );
        assert_eq!(temp_files(&s.join("suites/s.golden")), Vec::<String>::new());
    }
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials!(
        a_jsonl_report_on_a_full_disk_is_an_error_of_the_run,
        a_rendered_report_over_the_size_limit_is_an_error_and_leaves_no_temp_file,
        a_jsonl_report_cut_by_the_size_limit_holds_whole_records,
        a_report_below_a_file_is_refused_before_anything_runs,
        a_golden_file_that_cannot_be_written_is_an_error,
    )
}
