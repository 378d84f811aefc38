//! The functional tests of agentest: one test binary (a libtest-mimic harness) with one
//! module per area. Each module lists its tests in a `trials()` function built with
//! [`trials!`]; a test is named `module::function`, e.g. `cli::bad_regex_is_a_usage_error`.
//!
//! A test function returns `()` (a panic fails it) or [`common::Needs`] when it needs
//! something a machine may lack (see [`common::need`]): then it is reported as ignored
//! with the reason, or as failed when `CI` is set.
//!
//! ```text
//! cargo test --test functional                  # everything
//! cargo test --test functional -- llm::         # one module
//! cargo test --test functional -- --list        # the names
//! cargo nextest run --test functional
//! ```

use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// Registers test functions as trials named `module::function` (the module being the
/// one the macro is used in, below the crate root). Items are paths to functions, each
/// optionally preceded by `#[cfg(...)]` attributes.
macro_rules! trials {
    ($( $(#[$attr:meta])* $head:ident $(:: $tail:ident)* ),* $(,)?) => {{
        let module = crate::module_of(module_path!());
        #[allow(unused_mut)]
        let mut trials: Vec<libtest_mimic::Trial> = Vec::new();
        $(
            $(#[$attr])*
            trials.push(crate::trial(
                format!("{module}::{}", concat!(stringify!($head) $(, "::", stringify!($tail))*)),
                || crate::TestResult::outcome($head $(:: $tail)* ()),
            ));
        )*
        trials
    }};
}
pub(crate) use trials;

mod common;

#[cfg(unix)]
mod agent_faults;
mod cli;
mod corpus;
mod discovery;
mod dynamic;
#[cfg(unix)]
mod faults;
mod fuzz;
mod golden;
mod harness_e2e;
mod llm;
mod parse_errors;
mod reports;

/// What a test function may return.
pub(crate) trait TestResult {
    fn outcome(self) -> Result<Completion, Failed>;
}

impl TestResult for () {
    fn outcome(self) -> Result<Completion, Failed> {
        Ok(Completion::Completed)
    }
}

impl TestResult for common::Needs {
    fn outcome(self) -> Result<Completion, Failed> {
        match self {
            Ok(()) => Ok(Completion::Completed),
            Err(missing) => missing.outcome(),
        }
    }
}

/// `functional::cli` -> `cli`.
fn module_of(path: &'static str) -> &'static str {
    path.split_once("::").map_or(path, |(_, rest)| rest)
}

fn trial(name: String, run: impl FnOnce() -> Result<Completion, Failed> + Send + 'static) -> Trial {
    Trial::ignorable_test(name, run)
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    #[cfg(unix)]
    trials.extend(agent_faults::tests());
    trials.extend(cli::tests());
    trials.extend(corpus::tests());
    trials.extend(discovery::tests());
    trials.extend(dynamic::tests());
    #[cfg(unix)]
    trials.extend(faults::tests());
    trials.extend(fuzz::tests());
    trials.extend(golden::tests());
    trials.extend(harness_e2e::tests());
    trials.extend(llm::tests());
    trials.extend(parse_errors::tests());
    trials.extend(reports::tests());
    libtest_mimic::run(&args, trials).exit();
}
