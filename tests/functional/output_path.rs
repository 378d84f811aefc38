//! Where `-o` may write, through the real binary: never over the user's cases (a suite
//! the run reads, the `-i` file, the tasks file being imported) nor over a file that is
//! not an agentest report, refused with exit code 2 before any agent starts; a report
//! it wrote before is replaced; and the "inside the suites folder" warning only for a
//! report that really is inside.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{finish, toml_str, Report, Run, Scratch, BIN, EXPENSE_AGENT};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        o_never_writes_over_a_suite_or_a_file_that_is_not_a_report,
        o_replaces_a_report_it_wrote_before,
        a_report_outside_the_suites_folder_is_not_said_to_be_inside,
    ]
}

const A: &str = "{\"id\": \"a1\", \"input\": \"hello\", \"assert\": {\"type\": \"contains\", \"value\": \"Hello\"}}\n";
const B: &str = "{\"id\": \"b1\", \"input\": \"hello\", \"assert\": {\"type\": \"contains\", \"value\": \"Hello\"}}\n";

/// `ow/` holds two suites, `a.jsonl` and `b.jsonl`, and a config whose agent leaves
/// `started` in the scratch folder when it starts.
fn project(tag: &str) -> Scratch {
    let s = Scratch::named("output", tag);
    s.write(
        "ow/agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"sh\", \"-c\", {}, {}]\n",
            toml_str("touch ../started; exec python3 \"$0\""),
            toml_str(EXPENSE_AGENT)
        ),
    );
    s.write("ow/a.jsonl", A);
    s.write("ow/b.jsonl", B);
    s
}

/// `agentest <args>` in `dir` (`--color never` for `test`), without a run store.
fn agentest(dir: &Path, args: &[&str]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir).args(args);
    if args[0] == "test" {
        cmd.args(["--color", "never"]);
    }
    cmd.env("AGENTEST_STORE", "off")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    finish(&mut cmd)
}

fn o_never_writes_over_a_suite_or_a_file_that_is_not_a_report() {
    let s = project("refused");
    s.write("notes.md", "# My notes\n");
    s.write("tasks.json", "[{\"id\": \"0\"}]");
    let refused: [(&[&str], String); 6] = [
        (
            &["test", "-i", "ow", "-o", "ow/a.jsonl"],
            "error: refusing to write the report over ow/a.jsonl: it is a suite file under ow (its cases would be lost); give -o a path outside the suites folder".into(),
        ),
        (
            &["test", "-i", "ow/b.jsonl", "-o", "ow/b.jsonl"],
            "error: refusing to write the report over ow/b.jsonl: it is the file the cases are read from; give -o another path".into(),
        ),
        (
            &["test", "-i", "ow/b.jsonl", "-o", "ow/../ow/./b.jsonl"],
            "error: refusing to write the report over ow/../ow/./b.jsonl: it is the file the cases are read from; give -o another path".into(),
        ),
        (
            &["test", "-i", "ow", "--dry-run", "-o", "ow/a.jsonl"],
            "error: refusing to write the cases over ow/a.jsonl: it is a suite file under ow (its cases would be lost); give -o a path outside the suites folder".into(),
        ),
        (
            &["test", "-i", "ow/b.jsonl", "-o", "ow/a.jsonl"],
            "error: refusing to write the report over ow/a.jsonl: the file exists and is not an agentest JSONL report (whose first line is a case record (with `trial` and `status`) or a summary line); give -o another path, or remove the file first if it is not wanted".into(),
        ),
        (
            &["test", "-i", "ow", "-o", "notes.md"],
            "error: refusing to write the report over notes.md: the file exists and is not an agentest Markdown report (whose first line is `# agentest report`); give -o another path, or remove the file first if it is not wanted".into(),
        ),
    ];
    for (args, error) in refused {
        let r = agentest(s.path(), args);
        assert_eq!(r.code, 2, "{args:?}: {r:?}");
        assert_eq!(r.stderr.trim_end(), error, "{args:?}: {r:?}");
        assert_eq!(r.stdout, "", "{args:?}: nothing ran: {r:?}");
        assert!(!s.exists("started"), "{args:?}: no agent started: {r:?}");
    }
    let r = agentest(
        s.path(),
        &["import", "tau2", "tasks.json", "-o", "tasks.json"],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(
        r.stderr.trim_end(),
        "error: refusing to write the suite over tasks.json: it is the file the cases are read from; give -o another path",
        "{r:?}"
    );
    // Every file is as the user wrote it.
    assert_eq!(s.read("ow/a.jsonl"), A);
    assert_eq!(s.read("ow/b.jsonl"), B);
    assert_eq!(s.read("notes.md"), "# My notes\n");
    assert_eq!(s.read("tasks.json"), "[{\"id\": \"0\"}]");
}

fn o_replaces_a_report_it_wrote_before() {
    let s = project("replaced");
    for format in ["jsonl", "json", "md", "xml", "html"] {
        let out = format!("reports/r.{format}");
        for _ in 0..2 {
            let r = agentest(s.path(), &["test", "-i", "ow", "-o", &out]);
            assert_eq!(r.code, 0, "{out}: {r:?}");
            assert!(
                r.stderr.contains(&format!("wrote {out} (2 cases)")),
                "{r:?}"
            );
        }
    }
    // An empty file holds nothing to lose.
    s.write("empty.jsonl", "");
    let r = agentest(s.path(), &["test", "-i", "ow", "-o", "empty.jsonl"]);
    assert_eq!(r.code, 0, "{r:?}");
    // A report written into the suites folder is replaced too (and still warned about).
    for _ in 0..2 {
        let r = agentest(s.path(), &["test", "-i", "ow", "-o", "ow/r.jsonl"]);
        assert_eq!(r.code, 0, "{r:?}");
    }
    assert_eq!(Report::read(&s.join("ow/r.jsonl")).cases.len(), 2);
}

fn a_report_outside_the_suites_folder_is_not_said_to_be_inside() {
    let s = project("inside");
    let ow = s.join("ow");
    let r = agentest(&ow, &["test", "-i", ".", "-o", "../x.jsonl"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stderr.trim_end(), "wrote ../x.jsonl (2 cases)", "{r:?}");
    // The control: one that is inside, however it is spelt, is warned about.
    let r = agentest(&ow, &["test", "-i", ".", "-o", "../ow/reports/x.jsonl"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr.starts_with(
            "warning: the report ../ow/reports/x.jsonl is inside the suites folder .:"
        ),
        "{r:?}"
    );
}
