//! Finding suite files under a suites root: what is searched, what is not, and that a
//! tree with symbolic links neither hangs nor lists a suite twice.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use agentest::__private::suite::{discover, discover_excluding, load_file};

/// A fresh empty directory under the system's temporary directory, removed (without
/// following links) when dropped, also when the test fails.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("agentest-discovery-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "{\"id\": \"T001\", \"input\": \"hi\"}\n").unwrap();
}

/// `discover`, failing the test instead of hanging when it does not return.
fn discover_within(root: &Path, exclude: &[PathBuf]) -> Vec<PathBuf> {
    let (tx, rx) = mpsc::channel();
    let (root, exclude) = (root.to_path_buf(), exclude.to_vec());
    std::thread::spawn(move || {
        let _ = tx.send(discover_excluding(&root, &exclude).map_err(|e| e.to_string()));
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("discover did not return within 20 s")
        .unwrap_or_else(|e| panic!("discover failed: {e}"))
}

/// The found files, relative to `root`, `/`-separated.
fn relative(root: &Path, found: &[PathBuf]) -> Vec<String> {
    found
        .iter()
        .map(|f| {
            f.strip_prefix(root)
                .unwrap_or_else(|_| panic!("{} is not under {}", f.display(), root.display()))
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect()
}

fn hidden_golden_target_and_node_modules_folders_are_not_searched() {
    let root = TempDir::new("skipped");
    write(&root.join("smoke.jsonl"));
    write(&root.join("billing/refunds.jsonl"));
    write(&root.join(".cassettes/recorded.jsonl"));
    write(&root.join("smoke.golden/T001.jsonl"));
    // A report written under the suites root is not a suite.
    write(&root.join("target/report.jsonl"));
    write(&root.join("billing/target/agentest/report.jsonl"));
    write(&root.join("node_modules/pkg/fixtures.jsonl"));
    // Only folders with those names are skipped, not files.
    write(&root.join("target.jsonl"));
    write(&root.join("targets/a.jsonl"));
    std::fs::write(root.join("notes.txt"), "not a suite").unwrap();
    let found = discover(&root).unwrap();
    assert_eq!(
        relative(&root, &found),
        [
            "billing/refunds.jsonl",
            "smoke.jsonl",
            "target.jsonl",
            "targets/a.jsonl"
        ]
    );
}

fn excluded_files_are_left_out_however_they_are_spelled() {
    let root = TempDir::new("exclude");
    write(&root.join("smoke.jsonl"));
    write(&root.join("reports/run.jsonl"));
    write(&root.join("billing/refunds.jsonl"));
    let exclude = vec![
        // Another spelling of reports/run.jsonl.
        root.join("billing/../reports/./run.jsonl"),
        // A report that does not exist yet excludes nothing and is no error.
        root.join("reports/next.jsonl"),
    ];
    let found = discover_within(&root, &exclude);
    assert_eq!(
        relative(&root, &found),
        ["billing/refunds.jsonl", "smoke.jsonl"]
    );
    // Without exclusions, the same tree lists every suite.
    assert_eq!(discover_within(&root, &[]), discover(&root).unwrap());
    assert_eq!(discover(&root).unwrap().len(), 3);
}

fn missing_root_is_an_error() {
    let dir = TempDir::new("missing");
    let e = discover(&dir.join("nope")).unwrap_err().to_string();
    assert!(e.contains("does not exist"), "{e}");
}

#[cfg(unix)]
mod links {
    use super::*;
    use std::os::unix::fs::symlink;

    pub(super) fn directory_links_back_up_the_tree_neither_hang_nor_duplicate() {
        let root = TempDir::new("loop");
        write(&root.join("a.jsonl"));
        write(&root.join("dir/b.jsonl"));
        symlink("..", root.join("dir/up")).unwrap();
        symlink(".", root.join("dir/self")).unwrap();
        let found = discover_within(&root, &[]);
        assert_eq!(relative(&root, &found), ["a.jsonl", "dir/b.jsonl"]);
    }

    pub(super) fn a_link_to_a_directory_is_not_followed_but_a_link_to_a_suite_file_is() {
        let base = TempDir::new("links");
        let root = base.join("agent-tests");
        write(&root.join("own.jsonl"));
        write(&base.join("shared/common.jsonl"));
        write(&base.join("shared/nested/deep.jsonl"));
        symlink("../shared", root.join("shared-dir")).unwrap();
        symlink("../shared/common.jsonl", root.join("common.jsonl")).unwrap();
        // A link named like a suite that leads to a directory is not a suite.
        symlink("../shared", root.join("dir.jsonl")).unwrap();
        // A dangling link is listed, to fail to load rather than vanish unseen.
        symlink("../missing.jsonl", root.join("gone.jsonl")).unwrap();
        let found = discover_within(&root, &[]);
        assert_eq!(
            relative(&root, &found),
            ["common.jsonl", "gone.jsonl", "own.jsonl"]
        );
        let gone = load_file(&root, &found[1]);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].trial, "gone::unreadable-file");
        // The linked file is read like any other suite, named after the link.
        let loaded = load_file(&root, &found[0]);
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].trial, "common::T001");
        assert!(loaded[0].entry.is_ok());
        // Excluding through the link's target excludes the link.
        let found = discover_within(&root, &[base.join("shared/common.jsonl")]);
        assert_eq!(relative(&root, &found), ["gone.jsonl", "own.jsonl"]);
    }

    pub(super) fn a_root_that_is_itself_a_link_is_searched() {
        let base = TempDir::new("root-link");
        write(&base.join("real/smoke.jsonl"));
        symlink("real", base.join("agent-tests")).unwrap();
        let root = base.join("agent-tests");
        let found = discover_within(&root, &[]);
        assert_eq!(relative(&root, &found), ["smoke.jsonl"]);
    }
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        hidden_golden_target_and_node_modules_folders_are_not_searched,
        excluded_files_are_left_out_however_they_are_spelled,
        missing_root_is_an_error,
        #[cfg(unix)]
        links::directory_links_back_up_the_tree_neither_hang_nor_duplicate,
        #[cfg(unix)]
        links::a_link_to_a_directory_is_not_followed_but_a_link_to_a_suite_file_is,
        #[cfg(unix)]
        links::a_root_that_is_itself_a_link_is_searched,
    ]
}
