//! Runs the example suites in `agent-tests/` as libtest trials, against the example
//! expense assistant configured in `agent-tests/agentest.toml`.

agentest::main!();
