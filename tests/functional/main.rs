//! The functional tests of agentest: one test binary (a libtest-mimic harness) with one
//! module per area. Each module lists its tests in a `tests()` function built with
//! [`trials!`]; a test is named `module::function`, e.g. `cli::exit_0_when_everything_passes`
//! (`parse_errors` adds one trial per row of its table of bad lines).
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

use std::sync::OnceLock;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// Registers test functions as trials named `module::function` (the module being the
/// one the macro is used in, below the crate root). Items are paths to functions, each
/// optionally preceded by `#[cfg(...)]` attributes and followed by one option:
/// `(needs CHECK)`, where `CHECK` is a `fn() -> Needs` that the test itself calls (see
/// [`needing`]), or `(ignore)` for a test that runs only when asked (`--ignored`).
macro_rules! trials {
    ($( $(#[$attr:meta])* $head:ident $(:: $tail:ident)* $(( $($option:tt)* ))? ),* $(,)?) => {{
        let module = crate::module_of(module_path!());
        let mut trials: Vec<libtest_mimic::Trial> = Vec::new();
        $(
            $(#[$attr])*
            {
                let trial = crate::trial(
                    format!("{module}::{}", concat!(stringify!($head) $(, "::", stringify!($tail))*)),
                    || crate::TestResult::outcome($head $(:: $tail)* ()),
                );
                $( let trial = crate::trial_option!(trial, $($option)*); )?
                trials.push(trial);
            }
        )*
        trials
    }};
}
pub(crate) use trials;

/// One option of an item of [`trials!`].
macro_rules! trial_option {
    ($trial:expr, needs $need:path) => {
        crate::needing($trial, $need)
    };
    ($trial:expr, ignore) => {
        $trial.with_ignored_flag(true)
    };
}
pub(crate) use trial_option;

mod common;

#[cfg(unix)]
mod a2a;
mod agent_faults;
mod cli;
mod compare;
mod corpus;
mod criteria;
mod discovery;
mod docs;
mod dynamic;
mod eliza;
mod evalstudio;
#[cfg(unix)]
mod faults;
mod framework_harness;
mod fuzz;
mod generators;
mod golden;
mod harness_e2e;
mod http_formats;
mod langgraph;
mod latency;
mod layers;
mod ledger;
mod llm;
mod machines;
mod output_path;
mod parse_errors;
mod postgres;
mod readme;
mod real_model;
mod repeats;
mod replies;
mod reports;
mod scenarios;
mod secrets;
mod sharing;
mod store;
mod tau2;
mod traces;
mod trial_names;
mod verdicts;
mod view;
#[cfg(unix)]
mod writes;
mod yao_flags;

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

/// What [`needing`] needs to know of the command line.
struct Invocation {
    list: bool,
    filter: Option<String>,
    exact: bool,
}

static INVOCATION: OnceLock<Invocation> = OnceLock::new();

/// `trial`, which needs what `need` checks. A test reports what it lacks when it runs
/// (see [`common::need`]), but nextest reads which tests are ignored from the list, and
/// shows a test ignored at run time as passed. So, off CI, a trial whose need is absent
/// here is flagged ignored when listing, and under nextest also when it is the one trial
/// to run (nextest runs each with `--exact NAME`, adding `--ignored` for one it listed as
/// ignored: the flag must be the same then, and the test then fails, see
/// [`common::Missing::outcome`]). A check that is not cheap remembers its answer.
fn needing(trial: Trial, need: fn() -> common::Needs) -> Trial {
    let Some(run) = INVOCATION.get() else {
        return trial;
    };
    let chosen = run.exact && run.filter.as_deref() == Some(trial.name());
    if !(run.list || (common::under_nextest() && chosen)) || common::on_ci() {
        return trial;
    }
    let have = need().is_ok();
    trial.with_ignored_flag(!have)
}

fn main() {
    let mut args = Arguments::from_args();
    // Several tests at once per core, unless `--test-threads` says otherwise: most of
    // these tests wait (on agents that sleep, on timeouts, on Python and cargo
    // starting), so at one per core the cores sat idle about half the time. On two
    // cores, with the fixture crates built: 61 s at two per core, 57 s at three, 55 s
    // at four. Three where the real model's, the frameworks' or PostgreSQL's tests run
    // (on CI, or with their settings given), since each keeps a core busy for seconds
    // under a timeout; four where those are ignored.
    if args.test_threads.is_none() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let heavy = common::on_ci()
            || [
                "AGENTEST_REALLLM_URL",
                "AGENTEST_PYTHON",
                "AGENTEST_TEST_POSTGRES",
            ]
            .iter()
            .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()));
        let per_core = if heavy { 3 } else { 4 };
        args.test_threads = Some(per_core * cores);
    }
    if !args.list {
        common::python_first_on_path();
    }
    INVOCATION.get_or_init(|| Invocation {
        list: args.list,
        filter: args.filter.clone(),
        exact: args.exact,
    });
    let mut trials = Vec::new();
    #[cfg(unix)]
    trials.extend(agent_faults::tests());
    trials.extend(cli::tests());
    trials.extend(compare::tests());
    trials.extend(corpus::tests());
    trials.extend(criteria::tests());
    trials.extend(discovery::tests());
    trials.extend(docs::tests());
    trials.extend(dynamic::tests());
    trials.extend(eliza::tests());
    trials.extend(evalstudio::tests());
    #[cfg(unix)]
    trials.extend(faults::tests());
    trials.extend(framework_harness::tests());
    trials.extend(fuzz::tests());
    trials.extend(golden::tests());
    trials.extend(harness_e2e::tests());
    trials.extend(http_formats::tests());
    trials.extend(a2a::tests());
    trials.extend(generators::tests());
    trials.extend(yao_flags::tests());
    trials.extend(tau2::tests());
    trials.extend(traces::tests());
    trials.extend(trial_names::tests());
    trials.extend(output_path::tests());
    trials.extend(latency::tests());
    trials.extend(layers::tests());
    trials.extend(ledger::tests());
    trials.extend(langgraph::tests());
    trials.extend(llm::tests());
    trials.extend(machines::tests());
    trials.extend(verdicts::tests());
    trials.extend(view::tests());
    trials.extend(parse_errors::tests());
    trials.extend(postgres::tests());
    trials.extend(readme::tests());
    trials.extend(real_model::tests());
    trials.extend(repeats::tests());
    trials.extend(replies::tests());
    trials.extend(reports::tests());
    trials.extend(scenarios::tests());
    trials.extend(secrets::tests());
    trials.extend(sharing::tests());
    trials.extend(store::tests());
    #[cfg(unix)]
    trials.extend(writes::tests());
    let mut names: Vec<&str> = trials.iter().map(Trial::name).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        panic!("two tests are named {}", w[0]);
    }
    let runs = |t: &Trial| !args.list && !args.is_filtered_out(t) && !args.is_ignored(t);
    if trials
        .iter()
        .any(|t| t.name().starts_with("harness_e2e::") && runs(t))
    {
        harness_e2e::build_early();
    }
    libtest_mimic::run(&args, trials).exit();
}
