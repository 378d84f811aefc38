//! The engine: runs one loaded case to its report. The scheduler (for the binary and the
//! libtest harness alike) drives it, one task per case.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::case::scenario::Environment;
use crate::case::{Case, Mode};
use crate::run::scenario::{wait_for_every_folder, Job, Preparer, Workdir};

use crate::case::Gate;
use crate::case::OnInconclusive;
use crate::errors::GateError;
use crate::record::golden;
use crate::record::{CaseReport, Status};
use crate::run::context::{Contexts, Registry};
use crate::run::options::RunOptions;
use crate::run::outcome::{broken, fail, new_report, not_run, skip_reason};
use crate::run::repeats::{Plan, Repeat};
use crate::source::Loaded;
use crate::util::panic_text;

/// Runs cases. Configs and agents are resolved once and shared by all cases.
pub(crate) struct Engine {
    pub(crate) contexts: Contexts,
    pub(crate) options: RunOptions,
    /// Scenario environment folders made ahead of their cases, for the run under way.
    environments: Mutex<Option<Arc<Preparer>>>,
}

/// How long the end of a run waits for scenario environment folders to be removed.
const REMOVAL_WAIT: Duration = Duration::from_secs(30);

impl Engine {
    pub(crate) fn new(registry: Registry, options: RunOptions) -> Self {
        Engine {
            contexts: Contexts::new(
                registry,
                options.agent_name.clone(),
                options.overrides.connector.clone(),
            ),
            options,
            environments: Mutex::new(None),
        }
    }

    /// Starts making the environment folders of `cases`' local scenarios, in order, up
    /// to `ahead` beyond the cases that started (see [`Preparer`]).
    pub(crate) fn prepare_environments(&self, cases: &[Arc<Loaded>], ahead: usize) {
        let jobs: Vec<Job> = cases
            .iter()
            .filter_map(|l| match l.entry.as_deref() {
                Ok(Case {
                    mode: Mode::Scenario(sc),
                    ..
                }) if sc.environment == Environment::Local => Some(Job {
                    trial: l.trial.clone(),
                    files: sc.virtual_fs.clone(),
                }),
                _ => None,
            })
            .collect();
        if jobs.is_empty() {
            return;
        }
        let preparer = Preparer::start(jobs, ahead.max(1), self.options.keep_env);
        *self.environments.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(preparer));
    }

    /// The environment folder made ahead for `trial`, if one was planned.
    pub(crate) async fn prepared_environment(
        &self,
        trial: &str,
    ) -> Option<std::io::Result<Workdir>> {
        let preparer = self
            .environments
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        preparer.take(trial).await
    }

    /// The end of a run: no more folders are made, the ones no case took are removed,
    /// and every folder's removal is waited for (up to 30 s), those of cases a signal
    /// stopped included.
    pub(crate) fn finish_environments(&self) {
        let preparer = self
            .environments
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(preparer);
        wait_for_every_folder(REMOVAL_WAIT);
        crate::trace::report_unmatched();
    }

    /// Runs a case as its own task on the current runtime, so that a panic anywhere in it
    /// (an in-process agent, a bug of ours) becomes an `error` record instead of a lost case.
    pub(crate) async fn run_guarded(
        self: Arc<Self>,
        loaded: Arc<Loaded>,
        repeat: Repeat,
    ) -> CaseReport {
        let task = {
            let loaded = loaded.clone();
            tokio::spawn(async move { self.run(&loaded, &repeat).await })
        };
        // Dropped (a cancelled run), the case's task goes too, and with it its agents.
        let _abort_on_drop = AbortOnDrop(task.abort_handle());
        match task.await {
            Ok(report) => report,
            Err(e) => {
                let mut report = not_run(&loaded, String::new());
                fail(
                    &mut report,
                    Status::Error,
                    format!("the case panicked: {}", panic_text(e)),
                );
                report
            }
        }
    }

    /// Runs one loaded case to its report. Never panics on bad input; every failure is a
    /// status. A case that did not pass by the fault of a party `[run] rerun_on` names
    /// is run again, up to `max_reruns` times while the budgets last; the record is the
    /// last attempt's, with the earlier ones in its `attempts`.
    pub(crate) async fn run(&self, loaded: &Loaded, repeat: &Repeat) -> CaseReport {
        let mut report = self.attempt(loaded, repeat).await;
        let Ok(ctx) = self.contexts.of(&loaded.file) else {
            return report;
        };
        let (rerun_on, max) = (
            &ctx.config.rerun_on,
            ctx.config.file.run.max_reruns.unwrap_or(1),
        );
        let mut earlier: Vec<CaseReport> = Vec::new();
        while let Some(b) = report
            .blame
            .as_ref()
            .filter(|b| rerun_on.contains(&b.party))
        {
            if earlier.len() as u32 >= max {
                break;
            }
            if let Some(spent) = repeat.meters.exhausted() {
                eprintln!("agentest: {}: not run again ({spent})", loaded.trial);
                break;
            }
            eprintln!(
                "agentest: {}: attempt {} did not pass by the {}'s fault ({}); running it again",
                loaded.trial,
                earlier.len() + 1,
                b.party.name(),
                crate::util::clip(&b.evidence)
            );
            let next = self
                .attempt(loaded, &repeat.attempt(earlier.len() as u32 + 2))
                .await;
            earlier.push(std::mem::replace(&mut report, next));
        }
        report.attempts = earlier;
        report
    }

    /// One attempt at a case: its record, with its blame when it did not pass.
    async fn attempt(&self, loaded: &Loaded, repeat: &Repeat) -> CaseReport {
        let started = Instant::now();
        let case = match &loaded.entry {
            Ok(c) => c,
            Err(e) => {
                let mut report = broken(loaded, e);
                self.note_provenance(loaded, &mut report);
                return report;
            }
        };
        let mut report = new_report(loaded, case);
        report.input_hash = self.input_hash(loaded);
        self.note_provenance(loaded, &mut report);
        // `--ignored` asks for the `skip: true` cases, as it does for `#[ignore]` tests.
        let reason = if self.options.run_skipped {
            None
        } else {
            skip_reason(case)
        };
        if let Some(reason) = reason {
            report.status = Status::Skipped;
            report.error = Some(reason);
            return report;
        }
        if repeat.of > 1 {
            report.repeat = Some(repeat.index);
        }
        let prepared = match &case.mode {
            crate::case::Mode::Scenario(_) => self.prepared_environment(&loaded.trial).await,
            _ => None,
        };
        let given = crate::run::lifecycle::Given {
            options: &self.options,
            contexts: &self.contexts,
            prepared,
        };
        crate::run::lifecycle::run_case(given, case, loaded, repeat, &mut report).await;
        if report.status == Status::Inconclusive {
            // What the run makes of it goes with the record, so every report, the
            // trial and the exit code read it alike.
            let configured = self
                .contexts
                .of(&loaded.file)
                .ok()
                .and_then(|c| c.config.on_inconclusive);
            report.on_inconclusive =
                Some(configured.unwrap_or(OnInconclusive::default_for(crate::settings::on_ci())));
        }
        report.total_turns = report.turns.len() as u32;
        if let crate::case::Mode::Static { turns, .. } = &case.mode {
            // "(1 turn)" would misdescribe a 3-turn script that stopped at turn 1.
            let planned = turns.len() as u32;
            report.planned_turns = (planned > report.total_turns).then_some(planned);
        }
        // Before the golden file sees it: nothing written may hold a secret.
        let mut report = crate::record::without_secrets(report);
        self.pin(loaded, &mut report);
        // Last, once the golden file had its say.
        report.blame = crate::check::blame::blame(&report, case);
        report.duration_ms = started.elapsed().as_millis() as u64;
        report
    }

    /// `[run] max_simulator_blame` of the config of `suite`'s folder.
    pub(crate) fn max_simulator_blame(&self, suite: &std::path::Path) -> Option<f64> {
        let ctx = self.contexts.of(suite).ok()?;
        ctx.config.file.run.max_simulator_blame
    }

    /// Fills in the record's `provenance`: agentest's version, the config's fingerprint,
    /// the cassette mode and the seed (its `models`, the case's model calls, are added
    /// when they are accounted), for every record, a line that did not load included.
    fn note_provenance(&self, loaded: &Loaded, report: &mut CaseReport) {
        let p = report.provenance.get_or_insert_with(Default::default);
        p.agentest = env!("CARGO_PKG_VERSION").to_string();
        if let Ok(ctx) = self.contexts.of(&loaded.file) {
            p.config_hash = ctx.fingerprint.clone();
            p.cassettes = ctx.cassettes.name().to_string();
            p.seed = ctx.seed;
        }
    }

    /// The case's `input_hash` (see [`crate::run::outcome::input_hash`]), with what of
    /// the run decides its verdict: its config (the context's `fingerprint`) and the
    /// options that change what runs or how it is judged (`-n`, `--runs`, `--timeout`,
    /// `--live`, `--simulator`, `-c`, `-u`, `-t`). `None` for a line that did not load.
    pub(crate) fn input_hash(&self, loaded: &Loaded) -> Option<String> {
        let case = loaded.entry.as_ref().ok()?;
        let config = self
            .contexts
            .of(&loaded.file)
            .map(|c| c.fingerprint.clone())
            .unwrap_or_default();
        let o = &self.options;
        let setting = format!(
            "{config}\n{:?}\n{:?}\n{:?}\n{}\n{:?}\n{:?}\n{:?}\n{:?}",
            o.agent_name,
            o.runs,
            o.timeout,
            o.live,
            o.simulator,
            o.overrides.connector,
            o.overrides.user,
            o.overrides.team
        );
        Some(crate::run::outcome::input_hash(case, &setting))
    }

    /// How a case is repeated: its `runs`, else `--runs` / `AGENTEST_RUNS`, else
    /// `[run] runs`, else once; its gate, else `[run]`'s, else all must pass; and the
    /// budgets it spends under. A gate the runs cannot meet is the case's error.
    pub(crate) fn plan(&self, loaded: &Loaded) -> Result<Plan, GateError> {
        let (Ok(case), Ok(ctx)) = (&loaded.entry, self.contexts.of(&loaded.file)) else {
            return Ok(Plan::single());
        };
        if !self.options.run_skipped && skip_reason(case).is_some() {
            return Ok(Plan::single());
        }
        let run = &ctx.config.file.run;
        let runs = case
            .repeats
            .runs
            .or(self.options.runs)
            .or(run.runs.map(|n| n as u32))
            .unwrap_or(1);
        let gate = case
            .repeats
            .gate
            .or_else(|| run.gate())
            .unwrap_or(Gate::All);
        if let Gate::MinPass(k) = gate {
            if k > runs {
                let from = if case.repeats.gate.is_some() {
                    "the case's"
                } else {
                    "[run]"
                };
                return Err(GateError {
                    from,
                    min_pass: k,
                    runs,
                });
            }
        }
        Ok(Plan {
            runs,
            gate,
            case_meter: Plan::case_meter(case.repeats.budget, ctx.currency.as_deref()),
            run_meter: ctx.run_meter.clone(),
        })
    }

    /// A repeat's transcript as its golden file would hold it, so repeats can be
    /// compared whatever their session ids and timestamps.
    pub(crate) fn transcript(&self, loaded: &Loaded, report: &CaseReport) -> String {
        let Ok(ctx) = self.contexts.of(&loaded.file) else {
            return golden::render(report);
        };
        let from_config = ctx.suite_name(loaded);
        let names = [from_config.as_str(), loaded.suite.as_str()];
        golden::normalise(&golden::render(report), &names, &ctx.redactions)
    }

    /// Compares a passing case's transcript with its golden file, when it is pinned (the
    /// case's `golden`, else `[golden]` in the config).
    fn pin(&self, loaded: &Loaded, report: &mut CaseReport) {
        let (Status::Passed, Ok(case), Ok(ctx)) =
            (report.status, &loaded.entry, self.contexts.of(&loaded.file))
        else {
            return;
        };
        // Named as in the config's folder, whatever folder the run started from.
        let from_config = ctx.suite_name(loaded);
        let names = [from_config.as_str(), loaded.suite.as_str()];
        let pinned = case
            .golden
            .unwrap_or_else(|| ctx.config.file.golden.covers(&names));
        if !pinned {
            return;
        }
        let text = golden::normalise(&golden::render(report), &names, &ctx.redactions);
        let path = golden::path_for(&loaded.file, &case.trial_id());
        let (check, result) = golden::check(&path, &text, self.options.update);
        report.golden = Some(check);
        if let Err(e) = result {
            let status = if e.is_file_error() {
                Status::Error
            } else {
                Status::Failed
            };
            fail(report, status, e.to_string());
        }
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
