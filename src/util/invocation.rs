//! How this run was started, for hints that tell the user what to run again
//! (`AGENTEST_CASSETTES=record agentest test -i suites`, or `... cargo test --test agent_tests`).

use std::sync::OnceLock;

static INVOCATION: OnceLock<String> = OnceLock::new();

/// Remembers the command that started the run (the first call wins).
pub(crate) fn set(command: String) {
    let _ = INVOCATION.set(command);
}

/// The command that started the run; `cargo test` when nothing said otherwise.
pub(crate) fn get() -> &'static str {
    INVOCATION.get().map(String::as_str).unwrap_or("cargo test")
}

/// Whether the run is a test harness under `cargo test` (not the `agentest` binary).
pub(crate) fn is_harness() -> bool {
    get().starts_with("cargo ")
}

/// The `cargo test` command that runs this test binary: `cargo test --test agent_tests`
/// (cargo names the file `agent_tests-<hash>`).
pub(crate) fn cargo_test_for_this_binary() -> String {
    let name = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()));
    match name.as_deref().and_then(|n| n.rsplit_once('-')) {
        Some((test, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            format!("cargo test --test {test}")
        }
        _ => "cargo test".to_string(),
    }
}
