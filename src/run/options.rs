//! Run-wide choices: what the command line or the harness, and the settings, ask of
//! every case in a run.

use std::time::Duration;

use serde_json::Value;

use crate::case::{Case, Mode};
use crate::config::UpdateMode;
use crate::run::roles::person::People;

/// Run-wide choices, from the command line or the harness and the settings.
#[derive(Clone, Default)]
pub(crate) struct RunOptions {
    /// `-n NAME` / `AGENTEST_AGENT` / `Harness::use_agent`, for cases without `agent`.
    pub(crate) agent_name: Option<String>,
    /// `--timeout`, for cases without `timeout`.
    pub(crate) timeout: Option<Duration>,
    /// `--ignored` / `--include-ignored`: run `skip: true` cases too.
    pub(crate) run_skipped: bool,
    /// `--live` / `AGENTEST_LIVE`: tool calls go to the real tools, not the mocks.
    pub(crate) live: bool,
    /// `--simulator NAME` / `AGENTEST_SIMULATOR`: the simulator of dynamic cases that name none.
    pub(crate) simulator: Option<String>,
    /// `--interactive`, `--skip-interactive`, `--on-missing-input`.
    pub(crate) people: People,
    /// `AGENTEST_UPDATE`: what a golden mismatch may write.
    pub(crate) update: UpdateMode,
    /// `--keep-env` / `AGENTEST_KEEP_ENV`: keep scenarios' environment folders.
    pub(crate) keep_env: bool,
    /// `--runs` / `AGENTEST_RUNS`: repeats of cases that set no `runs`.
    pub(crate) runs: Option<u32>,
    /// `-c`, `-u`, `-t`: set in every request to the agent under test.
    pub(crate) overrides: Overrides,
}

/// What `-c/--connector`, `-u/--user` and `-t/--team` set in every request to the agent
/// under test, over what the cases say (as the Yao tool's flags do). Simulators, judges
/// and generators are not the agent under test and do not get them.
#[derive(Clone, Default, Debug)]
pub(crate) struct Overrides {
    /// Sent as `options.connector`; for an `openai` agent, an `[llms.NAME]` to call.
    pub(crate) connector: Option<String>,
    /// Sent as `metadata.user`, over the case's `user`.
    pub(crate) user: Option<String>,
    /// Sent as `metadata.team`, over the case's `team`.
    pub(crate) team: Option<String>,
}

impl Overrides {
    /// The case as the agent under test sees it: borrowed when nothing is overridden.
    pub(crate) fn apply<'c>(&self, case: &'c Case) -> std::borrow::Cow<'c, Case> {
        if self.connector.is_none() && self.user.is_none() && self.team.is_none() {
            return std::borrow::Cow::Borrowed(case);
        }
        let mut case = case.clone();
        if let Some(u) = &self.user {
            case.user = Some(Box::new(Value::String(u.clone())));
        }
        if let Some(t) = &self.team {
            case.team = Some(Box::new(Value::String(t.clone())));
        }
        if let Some(c) = &self.connector {
            let set = |options: Option<&mut Value>| match options {
                Some(Value::Object(m)) => {
                    m.insert("connector".into(), Value::String(c.clone()));
                    true
                }
                _ => false,
            };
            // A turn without options takes the case's, which now carry it.
            if !set(case.options.as_deref_mut()) {
                case.options = Some(Box::new(serde_json::json!({"connector": c})));
            }
            // A turn's own `connector` would win over the case's in the merge.
            if let Mode::Static { turns, .. } = &mut case.mode {
                for t in turns {
                    if t.options
                        .as_ref()
                        .is_some_and(|o| o.get("connector").is_some())
                    {
                        set(t.options.as_mut());
                    }
                }
            }
        }
        std::borrow::Cow::Owned(case)
    }
}
