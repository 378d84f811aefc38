//! # agentest
//!
//! Conversation tests for AI agents that run as ordinary Rust tests.
//!
//! Cases are JSON Lines under `agent-tests/`; each line is a single turn, a static
//! multi-turn script or a dynamic conversation. The [`Harness`] turns every case into a
//! libtest trial (through libtest-mimic), so `cargo test`, name filters, `--list`,
//! `--exact`, `--ignored`, `--format json` and `cargo nextest run` behave as Rust users
//! expect. The `agentest` binary runs the same engine for agents written in any language.
//!
//! ```no_run
//! // tests/agent_tests.rs, declared in Cargo.toml with
//! // [[test]] name = "agent_tests" harness = false
//! agentest::main!();
//! ```
//!
//! Trials are named `<suite>::<id>`, where the suite is the file's path under the suites
//! root without `.jsonl` (`billing/refunds::T001`). A line that cannot be read becomes a
//! failing trial (named by its id, or `<suite>::line-N`) whose message gives
//! `file:line:column`, the field and the fix; every other case still runs.
//!
//! ## Agents
//! Configured in `agentest.toml` (the suite's directory or its nearest ancestor): a child
//! process speaking JSON lines (`type = "process"`), an HTTP endpoint (`type = "http"`),
//! or an in-process [`Agent`] registered with [`Harness::agent`] / [`Harness::default_agent`].
//! Every kind receives the same [`Request`] and answers a [`Reply`]. An async function
//! becomes an agent with [`async_agent`].
//!
//! ## Models
//! `openai` agents, the built-in user simulator and judges call an OpenAI-compatible
//! endpoint (`[llm]`); every call is recorded in a per-case cassette under
//! `<suites>/.cassettes/` and replayed on later runs, so CI runs offline. The [`judge`]
//! module judges replies in your own tests, with the same cassettes.
//!
//! ## Features
//! - `cli` (default): the `agentest` command line. A crate that only runs the harness
//!   can turn it off (`default-features = false`); clap itself is still built, because
//!   libtest-mimic parses libtest's arguments with it.
//!
//! ## Known limitations
//! - A blocking in-process agent that overruns its deadline is abandoned, not stopped:
//!   Rust cannot interrupt a running function, so its thread finishes in the background.
//! - libtest-mimic captures no output: everything about a failure is in the trial's
//!   failure message, and nothing of agentest's own is printed on stdout.
//! - Under nextest each case runs in its own process, so a JSONL report collects case
//!   records but no summary line, cases listed as ignored leave no record, and a case
//!   ignored at run time (no model, no person to ask) shows as passed.

#![warn(missing_docs)]
// What is `pub` inside a private module says `pub(crate)`: the public surface is what
// this file re-exports, and nothing else claims to be.
#![warn(unreachable_pub)]
// Without the command line, the parts only it uses (the console, review, freeze, the
// binary's planning and Ctrl-C handling) are compiled but unused.
#![cfg_attr(
    not(feature = "cli"),
    expect(
        dead_code,
        unused_imports,
        reason = "without the cli feature, the parts only the command line uses are unused"
    )
)]

mod agent;
mod case;
mod check;
#[cfg(feature = "cli")]
mod cli;
mod config;
mod errors;
mod harness;
mod llm;
mod plan;
mod protocol;
mod record;
mod run;
mod settings;
mod source;
mod trace;
mod util;

pub use agent::{async_agent, Agent};
pub use check::Check;
#[doc(hidden)]
#[cfg(feature = "cli")]
pub use cli::main as cli_main;
pub use harness::Harness;
pub use protocol::{FileRef, Reply, Request, SpanNode, SpanRole, ToolCall, Usage};
pub use run::execution::DEFAULT_CONCURRENCY;
pub use util::BoxFuture;

/// Model judges for your own tests: ask a model whether a reply meets criteria.
pub mod judge {
    pub use crate::check::judge::{JudgeRequest, JudgeVerdict};
    pub use crate::errors::JudgeError;
    pub use crate::run::roles::judge::Judge;
}

/// Internals reachable for agentest's own tests and benchmarks. Not a public API: it
/// may change in any release.
#[doc(hidden)]
pub mod __private {
    /// Assertions.
    pub mod assertion {
        pub use crate::case::Assertion;
        pub use crate::check::{evaluate, EvalEnv, Latency, Subject};
        pub use crate::errors::StepError;
    }
    /// The case model and the JSONL case parser.
    pub mod case {
        pub use crate::case::{Case, Location, Mode, Raw};
        pub use crate::protocol::Message;
        pub use crate::source::{parse_case, CaseError, CASE_KEYS};
    }
    /// `agentest.toml`.
    pub mod config {
        pub use crate::config::{Config, ConfigFile, Loader};

        /// How the harness and the binary read a config, without a file chosen by name.
        pub fn loader() -> Loader<'static> {
            crate::run::context::config_loader(None)
        }
    }
    /// Durations.
    pub mod duration {
        pub use crate::util::{format_duration, parse_duration};
    }
    /// Model calls and cassettes.
    pub mod llm {
        pub use crate::config::CassetteMode;
        pub use crate::errors::LlmError;
        pub use crate::llm::SeededRng;
        pub use crate::protocol::Role;
        /// Cassette files.
        pub mod cassette {
            pub use crate::llm::cassette::{canonical, key_of, Cassette, Entry};
        }
    }
    /// Tool mocks.
    pub mod mocks {
        pub use crate::agent::mocks::MockSet;
        pub use crate::source::parse_mocks;
    }
    /// Script assertions.
    pub mod scripts {
        pub use crate::check::Scripts;
    }
    /// Suites: discovery and loading.
    pub mod suite {
        pub use crate::source::{
            discover, discover_excluding, load_file, parse_suite, parse_suite_bytes, Loaded,
        };
        pub use crate::util::display_path;
    }
    /// Reports.
    pub mod report {
        pub use crate::record::format::{html, json, junit, markdown};
        pub use crate::record::{
            parse_jsonl, rfc3339, CaseReport, Format, RunInfo, Status, Summary,
        };
    }
}

/// Expands to a `main` that runs the harness on `<crate>/agent-tests`, or on the given
/// directory relative to the crate.
///
/// ```no_run
/// agentest::main!();
/// ```
#[macro_export]
macro_rules! main {
    () => {
        $crate::main!("agent-tests");
    };
    ($dir:literal) => {
        fn main() -> ::std::process::ExitCode {
            $crate::Harness::new(concat!(env!("CARGO_MANIFEST_DIR"), "/", $dir)).run()
        }
    };
}
