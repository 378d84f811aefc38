//! The `agentest` command: runs agent test suites without any Rust code.

fn main() -> std::process::ExitCode {
    agentest::cli_main()
}
