//! The environment, read once. Every `AGENTEST_*` variable agentest knows (and `CI`,
//! `NO_COLOR`, `RUST_TEST_THREADS` and nextest's own) is read into one typed [`Settings`]
//! value when a run starts; an invalid value is an error that names the variable and
//! the values it allows (exit code 2 for the binary, one failing trial under
//! `cargo test`), never a silent default.
//!
//! Variables that name user secrets (`api_key_env`, `${VAR}` in the config) are not
//! settings: they are read where they are used and never stored.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use crate::config::{CassetteMode, ConfigChoice, UpdateMode};
use crate::errors::SettingsError;
use crate::util::StoreAddress;

/// The process's variables, read by name. An empty variable is the same as an unset
/// one, as for most Unix tools.
struct Vars(BTreeMap<String, String>);

impl Vars {
    fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    /// `name`'s value is not one of those `expected`.
    fn invalid(&self, name: &str, expected: &str) -> SettingsError {
        SettingsError {
            name: name.to_string(),
            value: self.0.get(name).cloned().unwrap_or_default(),
            expected: expected.to_string(),
        }
    }

    /// A yes-or-no variable; unset is no.
    fn flag(&self, name: &str) -> Result<bool, SettingsError> {
        match self.get(name).map(str::to_ascii_lowercase).as_deref() {
            None | Some("0" | "false" | "no" | "off") => Ok(false),
            Some("1" | "true" | "yes" | "on") => Ok(true),
            Some(_) => Err(self.invalid(name, "1, true, yes or on; or 0, false, no or off")),
        }
    }

    /// `AGENTEST_SEED`.
    fn seed(&self) -> Result<Option<u64>, SettingsError> {
        self.get("AGENTEST_SEED")
            .map(|v| {
                v.parse()
                    .map_err(|_| self.invalid("AGENTEST_SEED", "a whole number from 0 to 2^64-1"))
            })
            .transpose()
    }

    /// `AGENTEST_RUNS`.
    fn runs(&self) -> Result<Option<u32>, SettingsError> {
        self.get("AGENTEST_RUNS")
            .map(|v| {
                v.parse::<u64>()
                    .ok()
                    .and_then(|n| crate::case::check_runs(n).ok())
                    .ok_or_else(|| {
                        self.invalid(
                            "AGENTEST_RUNS",
                            &format!("a whole number of runs from 1 to {}", crate::case::MAX_RUNS),
                        )
                    })
            })
            .transpose()
    }

    /// `RUST_TEST_THREADS`.
    fn test_threads(&self) -> Result<Option<usize>, SettingsError> {
        match self.get("RUST_TEST_THREADS") {
            None => Ok(None),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(self.invalid("RUST_TEST_THREADS", "a whole number above 0")),
            },
        }
    }

    /// `AGENTEST_LLM_BASE_URL`, `AGENTEST_LLMS_<NAME>_MODEL`, ...: every endpoint override.
    fn llm_overrides(&self) -> BTreeMap<String, String> {
        self.0
            .iter()
            .filter(|(k, v)| {
                (k.starts_with("AGENTEST_LLM_") || k.starts_with("AGENTEST_LLMS_"))
                    && (k.ends_with("_BASE_URL") || k.ends_with("_MODEL"))
                    && !v.trim().is_empty()
            })
            .map(|(k, v)| (k.clone(), v.trim().to_string()))
            .collect()
    }

    /// `AGENTEST_SLOW_NOTICE_MIN`.
    fn slow_notice_min(&self) -> Result<Option<Duration>, SettingsError> {
        self.get("AGENTEST_SLOW_NOTICE_MIN")
            .map(|v| {
                crate::util::parse_duration(v).map_err(|_| {
                    self.invalid("AGENTEST_SLOW_NOTICE_MIN", "a duration such as 500ms or 5s")
                })
            })
            .transpose()
    }

    /// `AGENTEST_RATE_WINDOW`.
    fn rate_window(&self) -> Result<Duration, SettingsError> {
        match self.get("AGENTEST_RATE_WINDOW") {
            None => Ok(Duration::from_secs(60)),
            Some(v) => crate::util::parse_duration(v)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    self.invalid("AGENTEST_RATE_WINDOW", "a duration above zero such as 60s")
                }),
        }
    }

    /// `AGENTEST_STORE`.
    fn store(&self) -> Result<StoreChoice, SettingsError> {
        match self.get("AGENTEST_STORE") {
            None => Ok(StoreChoice::Default),
            Some(v) if ["off", "0", "false", "no"].contains(&v.to_ascii_lowercase().as_str()) => {
                Ok(StoreChoice::Off)
            }
            Some(v) => StoreAddress::parse(v).map(StoreChoice::At).map_err(|e| {
                // The value as shown, without credentials: never the password.
                SettingsError {
                    name: "AGENTEST_STORE".into(),
                    value: e.shown.clone(),
                    expected: format!(
                        "a file path (the embedded SQLite store), a postgres:// or postgresql:// URL, or off; `{}:` is no scheme agentest supports",
                        e.scheme
                    ),
                }
            }),
        }
    }
}

/// What a case that needs a person does when none can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum MissingInput {
    /// Skipped with the reason.
    #[default]
    Skip,
    /// Failed.
    Fail,
}

/// The process's environment, typed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    /// `AGENTEST_REPORT`: the report file under `cargo test`.
    pub(crate) report: Option<PathBuf>,
    /// `AGENTEST_AGENT`: the agent of cases that name none.
    pub(crate) agent: Option<String>,
    /// `AGENTEST_CONFIG` (or the binary's `--config`): the config every suite uses,
    /// instead of the `agentest.toml` found from the suite's folder.
    pub(crate) config: Option<ConfigChoice>,
    /// `AGENTEST_UPDATE`: what a golden mismatch may write (`auto` resolved with `CI`).
    pub(crate) update: UpdateMode,
    /// `AGENTEST_CASSETTES`: overrides `[run] cassettes`.
    pub(crate) cassettes: Option<CassetteMode>,
    /// `AGENTEST_SEED`: overrides `[run] seed`.
    pub(crate) seed: Option<u64>,
    /// `AGENTEST_RUNS`: repeats of cases that set no `runs` (overrides `[run] runs`).
    pub(crate) runs: Option<u32>,
    /// `AGENTEST_LIVE`: tool calls go to `tools_url`.
    pub(crate) live: bool,
    /// `AGENTEST_KEEP_ENV`: keep scenarios' environment folders after the run.
    pub(crate) keep_env: bool,
    /// `AGENTEST_SIMULATOR`: the simulator of dynamic cases that name none.
    pub(crate) simulator: Option<String>,
    /// `AGENTEST_SIMULATOR_LLM`: the `[llms.NAME]` the built-in simulator calls.
    pub(crate) simulator_llm: Option<String>,
    /// `AGENTEST_JUDGE_LLM`: the `[llms.NAME]` the built-in judge calls.
    pub(crate) judge_llm: Option<String>,
    /// `AGENTEST_INTERACTIVE`: ask a person whenever input is missing.
    pub(crate) interactive: bool,
    /// `AGENTEST_SKIP_INTERACTIVE`: never ask a person.
    pub(crate) skip_interactive: bool,
    /// `AGENTEST_ON_MISSING_INPUT`: `skip` or `fail`.
    pub(crate) on_missing_input: MissingInput,
    /// `AGENTEST_LLM_BASE_URL`, `AGENTEST_LLMS_<NAME>_MODEL`, ...: endpoint overrides by
    /// variable name.
    llm_overrides: BTreeMap<String, String>,
    /// `CI`: set to anything but empty, `false` or `0`.
    pub(crate) ci: bool,
    /// `NO_COLOR`: set and not empty.
    pub(crate) no_color: bool,
    /// `RUST_TEST_THREADS`: libtest's default for `--test-threads`.
    pub(crate) test_threads: Option<usize>,
    /// Running under nextest (`NEXTEST` or `NEXTEST_EXECUTION_MODE`), with its run id.
    pub(crate) nextest: Option<Nextest>,
    /// `AGENTEST_STORE`: the run store's file or URL, or `off`.
    pub(crate) store: StoreChoice,
    /// `AGENTEST_EXECUTION` and the CI's run id: what joins processes into one
    /// execution (see [`Settings::execution_key`]).
    pub(crate) execution: ExecutionKeys,
    /// `AGENTEST_SLOW_NOTICE_MIN`: the least wait before an agent much slower than usual
    /// is said on stderr (default 5 s). Agentest's own tests lower it, so that the test
    /// of the notice does not wait five seconds.
    pub(crate) slow_notice_min: Option<Duration>,
    /// `AGENTEST_RATE_WINDOW`: the window `requests_per_minute` counts starts in (60 s;
    /// agentest's own tests shorten it, so that the test of the rule does not take
    /// minutes).
    pub(crate) rate_window: Duration,
    /// `OPENAI_BASE_URL`: where an EvalStudio project's `openai` models are called
    /// (as OpenAI's SDKs honour it; default `https://api.openai.com/v1`).
    pub(crate) openai_base_url: Option<String>,
    /// `ANTHROPIC_BASE_URL`: the same for `anthropic` (default
    /// `https://api.anthropic.com`).
    pub(crate) anthropic_base_url: Option<String>,
}

/// Where runs are recorded, as `AGENTEST_STORE` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum StoreChoice {
    /// Unset: the config's `[store] path`, else the default place.
    #[default]
    Default,
    /// `off` (or `0`, `false`, `no`): no store.
    Off,
    /// A file or a database URL.
    At(StoreAddress),
}

/// What may name the execution a process joins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ExecutionKeys {
    /// `AGENTEST_EXECUTION`, as given.
    pub(crate) given: Option<String>,
    /// The CI's own run: `github:<GITHUB_RUN_ID>:<GITHUB_RUN_ATTEMPT>` on GitHub Actions,
    /// `gitlab:<CI_PIPELINE_ID>` on GitLab CI.
    pub(crate) ci: Option<String>,
    /// The branch the CI says it runs (`GITHUB_HEAD_REF` on a pull request, else
    /// `GITHUB_REF_NAME`; `CI_COMMIT_REF_NAME` on GitLab), for a detached checkout.
    pub(crate) ci_branch: Option<String>,
}

impl Vars {
    /// `AGENTEST_EXECUTION`, and the CI's run id when a CI says one.
    fn execution(&self) -> ExecutionKeys {
        // Blank is unset, as for every variable here.
        let given = self.get("AGENTEST_EXECUTION").map(str::to_string);
        let github = match (self.get("GITHUB_RUN_ID"), self.get("GITHUB_RUN_ATTEMPT")) {
            (Some(id), attempt) if self.get("GITHUB_ACTIONS") == Some("true") => {
                Some(format!("github:{id}:{}", attempt.unwrap_or("1")))
            }
            _ => None,
        };
        let gitlab = match self.get("CI_PIPELINE_ID") {
            Some(id) if self.get("GITLAB_CI").is_some() => Some(format!("gitlab:{id}")),
            _ => None,
        };
        let ci_branch = match (self.get("GITHUB_ACTIONS"), self.get("GITLAB_CI")) {
            (Some("true"), _) => self
                .get("GITHUB_HEAD_REF")
                .or_else(|| self.get("GITHUB_REF_NAME")),
            (_, Some(_)) => self.get("CI_COMMIT_REF_NAME"),
            _ => None,
        };
        ExecutionKeys {
            given,
            ci: github.or(gitlab),
            ci_branch: ci_branch.map(str::to_string),
        }
    }
}

/// What nextest tells the processes it starts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Nextest {
    /// `NEXTEST_RUN_ID`: the same for every test process of one run.
    pub(crate) run_id: Option<String>,
}

impl Settings {
    /// Reads the settings from `vars` (the process's environment, or a test's).
    pub(crate) fn from_vars<I, K, V>(vars: I) -> Result<Settings, SettingsError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let vars = Vars(
            vars.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        );
        let get = |name: &str| vars.get(name);
        let flag = |name: &str| vars.flag(name);
        let ci = get("CI").is_some_and(|v| v != "false" && v != "0");
        let update = match get("AGENTEST_UPDATE") {
            None | Some("auto") if ci => UpdateMode::No,
            None | Some("auto") | Some("new") => UpdateMode::New,
            Some("always") => UpdateMode::Always,
            Some("no") => UpdateMode::No,
            Some(_) => return Err(vars.invalid("AGENTEST_UPDATE", "auto, new, always or no")),
        };
        let cassettes = match get("AGENTEST_CASSETTES") {
            None => None,
            Some(v) => Some(CassetteMode::parse(v).map_err(|_| {
                vars.invalid("AGENTEST_CASSETTES", "auto, replay, strict, record or off")
            })?),
        };
        let on_missing_input = match get("AGENTEST_ON_MISSING_INPUT") {
            None | Some("skip") => MissingInput::Skip,
            Some("fail") => MissingInput::Fail,
            Some(_) => return Err(vars.invalid("AGENTEST_ON_MISSING_INPUT", "skip or fail")),
        };
        let nextest =
            (get("NEXTEST").is_some() || get("NEXTEST_EXECUTION_MODE").is_some()).then(|| {
                Nextest {
                    run_id: get("NEXTEST_RUN_ID").map(str::to_string),
                }
            });
        Ok(Settings {
            report: get("AGENTEST_REPORT").map(PathBuf::from),
            agent: get("AGENTEST_AGENT").map(str::to_string),
            config: get("AGENTEST_CONFIG").map(|p| ConfigChoice {
                path: PathBuf::from(p),
                from: "AGENTEST_CONFIG",
            }),
            update,
            cassettes,
            seed: vars.seed()?,
            runs: vars.runs()?,
            live: flag("AGENTEST_LIVE")?,
            keep_env: flag("AGENTEST_KEEP_ENV")?,
            simulator: get("AGENTEST_SIMULATOR").map(str::to_string),
            simulator_llm: get("AGENTEST_SIMULATOR_LLM").map(str::to_string),
            judge_llm: get("AGENTEST_JUDGE_LLM").map(str::to_string),
            interactive: flag("AGENTEST_INTERACTIVE")?,
            skip_interactive: flag("AGENTEST_SKIP_INTERACTIVE")?,
            on_missing_input,
            llm_overrides: vars.llm_overrides(),
            ci,
            no_color: get("NO_COLOR").is_some(),
            test_threads: vars.test_threads()?,
            nextest,
            store: vars.store()?,
            execution: vars.execution(),
            slow_notice_min: vars.slow_notice_min()?,
            rate_window: vars.rate_window()?,
            openai_base_url: get("OPENAI_BASE_URL").map(str::to_string),
            anthropic_base_url: get("ANTHROPIC_BASE_URL").map(str::to_string),
        })
    }

    /// The key of the execution this process joins, if any: `AGENTEST_EXECUTION`; else,
    /// when the store is `shared` by machines (a database server), the CI's run id, so
    /// that the jobs of one CI run (nextest partitions on n machines) make one
    /// execution; else, for a test binary (`harness`) under nextest, nextest's run id
    /// (`nextest:<id>`), shared by the processes of one `cargo nextest run`. None: a
    /// new execution of its own. A CI's id is not used with a store of one machine (an
    /// SQLite file): no other machine can join it, and a second `agentest test` in the
    /// same job would find its cases run already. The binary never takes nextest's id:
    /// run inside a test, it is that test's own run.
    pub(crate) fn execution_key(&self, shared: bool, harness: bool) -> Option<String> {
        let nextest = || {
            self.nextest
                .as_ref()
                .filter(|_| harness)
                .and_then(|n| n.run_id.as_ref())
                .map(|id| format!("nextest:{id}"))
        };
        self.execution
            .given
            .clone()
            .or_else(|| self.execution.ci.clone().filter(|_| shared))
            .or_else(nextest)
    }

    /// The override of `key` (`BASE_URL`, `MODEL`) for the endpoint `[llm]` (`name`
    /// None) or `[llms.NAME]`: `AGENTEST_LLM_BASE_URL`, `AGENTEST_LLMS_JUDGE_MODEL`.
    pub(crate) fn llm_override(&self, name: Option<&str>, key: &str) -> Option<&str> {
        self.llm_overrides
            .get(&override_var(name, key))
            .map(String::as_str)
    }
}

/// The variable that overrides `key` of the endpoint `name` (non-alphanumerics of the
/// name become `_`, letters are upper-cased).
pub(crate) fn override_var(name: Option<&str>, key: &str) -> String {
    let scope = match name {
        None => "LLM".to_string(),
        Some(n) => format!(
            "LLMS_{}",
            n.chars()
                .map(|c| if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                })
                .collect::<String>()
        ),
    };
    format!("AGENTEST_{scope}_{key}")
}

static SETTINGS: OnceLock<Result<Settings, SettingsError>> = OnceLock::new();

/// The process's settings, read from the environment on the first call. Entry points
/// (the harness, the binary, [`crate::judge::Judge`]) call this first and report an
/// error; the same error comes back on every later call.
pub(crate) fn load() -> Result<&'static Settings, SettingsError> {
    load_with(|_| {})
}

/// [`load`], with the command line's overrides applied to what the environment says
/// (the binary's `--config` over `AGENTEST_CONFIG`). Only the first call's overrides
/// count: entry points call this before anything reads the settings.
pub(crate) fn load_with(
    overrides: impl FnOnce(&mut Settings),
) -> Result<&'static Settings, SettingsError> {
    SETTINGS
        .get_or_init(|| {
            let mut settings = Settings::from_vars(std::env::vars_os().filter_map(|(k, v)| {
                // A variable that is not UTF-8 cannot be one of ours.
                Some((k.into_string().ok()?, v.into_string().ok()?))
            }))?;
            overrides(&mut settings);
            Ok(settings)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Whether we run on CI: the `CI` variable is set to anything but `false` or `0`.
pub(crate) fn on_ci() -> bool {
    get().ci
}

/// The settings for code that runs after an entry point has loaded them. Where no entry
/// point did (agentest's own unit tests), invalid variables read as unset.
pub(crate) fn get() -> &'static Settings {
    static FALLBACK: OnceLock<Settings> = OnceLock::new();
    load().unwrap_or_else(|_| FALLBACK.get_or_init(Settings::default))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        Settings::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    /// The execution key: given, else the CI's run for a shared store, else nextest's.
    #[test]
    fn the_execution_key_comes_from_the_user_the_ci_or_nextest() {
        let gh = [
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_RUN_ID", "987"),
            ("GITHUB_RUN_ATTEMPT", "2"),
            ("NEXTEST", "1"),
            ("NEXTEST_RUN_ID", "abc"),
        ];
        let s = read(&gh).unwrap();
        assert_eq!(s.execution_key(true, true).as_deref(), Some("github:987:2"));
        assert_eq!(s.execution_key(false, true).as_deref(), Some("nextest:abc"));
        assert_eq!(
            s.execution_key(false, false),
            None,
            "the binary is no nextest run's"
        );
        let mut given = gh.to_vec();
        given.push(("AGENTEST_EXECUTION", "pr-12"));
        let s = read(&given).unwrap();
        assert_eq!(s.execution_key(false, true).as_deref(), Some("pr-12"));
        let s = read(&[("GITLAB_CI", "true"), ("CI_PIPELINE_ID", "55")]).unwrap();
        assert_eq!(s.execution_key(true, true).as_deref(), Some("gitlab:55"));
        assert_eq!(s.execution_key(false, true), None);
        // A pipeline id outside GitLab is no key.
        let s = read(&[("CI_PIPELINE_ID", "55")]).unwrap();
        assert_eq!(s.execution_key(true, true), None);
        let s = read(&[("AGENTEST_EXECUTION", " ")]).unwrap();
        assert_eq!(s.execution_key(true, true), None, "blank is unset");
    }

    #[test]
    fn invalid_values_name_the_variable_and_the_allowed_values() {
        for (name, value, allowed) in [
            ("AGENTEST_UPDATE", "bogus", "auto, new, always or no"),
            ("AGENTEST_ON_MISSING_INPUT", "bogus", "skip or fail"),
            (
                "AGENTEST_CASSETTES",
                "replays",
                "auto, replay, strict, record or off",
            ),
            ("AGENTEST_SEED", "-1", "a whole number"),
            ("AGENTEST_LIVE", "maybe", "1, true, yes or on"),
            ("AGENTEST_INTERACTIVE", "2", "1, true, yes or on"),
            ("RUST_TEST_THREADS", "0", "a whole number above 0"),
            (
                "AGENTEST_SLOW_NOTICE_MIN",
                "5",
                "a duration such as 500ms or 5s",
            ),
        ] {
            let e = read(&[(name, value)]).unwrap_err().to_string();
            assert!(
                e.contains(name) && e.contains(value) && e.contains(allowed),
                "{e}"
            );
        }
    }

    #[test]
    fn flags_read_yes_and_no_alike() {
        for yes in ["1", "true", "TRUE", "yes", "on"] {
            assert!(read(&[("AGENTEST_LIVE", yes)]).unwrap().live, "{yes}");
        }
        for no in ["", "0", "false", "no", "off"] {
            assert!(!read(&[("AGENTEST_LIVE", no)]).unwrap().live, "{no}");
        }
    }

    #[test]
    fn update_auto_depends_on_ci() {
        assert_eq!(read(&[]).unwrap().update, UpdateMode::New);
        assert_eq!(read(&[("CI", "true")]).unwrap().update, UpdateMode::No);
        assert_eq!(read(&[("CI", "false")]).unwrap().update, UpdateMode::New);
        let s = read(&[("CI", "1"), ("AGENTEST_UPDATE", "always")]).unwrap();
        assert_eq!(s.update, UpdateMode::Always);
    }

    #[test]
    fn endpoint_overrides_by_name() {
        let s = read(&[
            ("AGENTEST_LLM_MODEL", "m1"),
            ("AGENTEST_LLMS_FAST_ONE_BASE_URL", "http://x"),
        ])
        .unwrap();
        assert_eq!(s.llm_override(None, "MODEL"), Some("m1"));
        assert_eq!(
            s.llm_override(Some("fast-one"), "BASE_URL"),
            Some("http://x")
        );
        assert_eq!(s.llm_override(Some("fast-one"), "MODEL"), None);
    }

    #[test]
    fn override_variables_are_named_after_the_section() {
        assert_eq!(override_var(None, "BASE_URL"), "AGENTEST_LLM_BASE_URL");
        assert_eq!(
            override_var(Some("judge-4o"), "MODEL"),
            "AGENTEST_LLMS_JUDGE_4O_MODEL"
        );
    }
}
