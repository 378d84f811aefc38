//! The one interface to a store's database. SQLite ([`super::sqlite`]) and PostgreSQL
//! implement it; the writer, the recorder and the `runs` commands see only this trait,
//! never which database is behind it. What both need the same way (a run's row from its
//! report, who owns a claim, which runs a dead process left, sorting a resumed
//! execution's runs) is decided once, in [`super::row`], and the backends only move rows;
//! the types they exchange are [`super::model`]'s.

use std::collections::HashMap;

use crate::errors::{DbError, StoreError};
use crate::record::CaseReport;
use crate::util::StoreAddress;

use super::model::{
    Claim, Decision, Doomed, ExecutionFilter, ExecutionInfo, ExecutionRow, Filter, FlakyCase,
    FlakyRow, Planned, RepeatEnd, Resumed, RoleTotals, RunRow, Stored, StoredCalibration,
    StoredRepeat, Work, ROLES,
};

/// One write of the writer thread, applied with the others of its wave in one
/// transaction.
pub(crate) enum Write<'a> {
    /// Claim the run of a trial for this process.
    Claim(&'a str),
    /// Mark the run of a trial of an execution of this process's own as running (a
    /// claim nobody waits on; see [`super::ExecutionInfo::exclusive`]).
    Start(&'a str),
    /// A case ended (any status).
    Done(&'a CaseReport),
    /// A case this process claimed did not end: queue its run again.
    Release(&'a str),
    /// A model request wants to start at the endpoint `endpoint`, where no `window`
    /// may hold more than `limit` starts across the execution: recorded as started, or
    /// how long until a start is free.
    StartRequest {
        endpoint: &'a str,
        limit: u32,
        window: std::time::Duration,
    },
    /// This process spent `tokens` and `cost` on models.
    Spend { tokens: u64, cost: f64 },
    /// What the execution's other processes spent on models so far.
    SpentElsewhere,
    /// The structured-output form a model endpoint took, as a run learned it.
    LearnForm {
        endpoint: &'a str,
        model: &'a str,
        form: &'static str,
    },
    /// The form the store knows a model endpoint takes.
    KnownForm { endpoint: &'a str, model: &'a str },
}

/// The structured-output forms the store keeps (`structured_output`'s values but
/// `auto`); anything else read from it is taken as unknown.
pub(crate) const FORMS: [&str; 4] = ["json_schema", "json_object_schema", "json_object", "off"];

/// `text` as one of [`FORMS`].
pub(crate) fn known_form(text: &str) -> Option<&'static str> {
    FORMS.into_iter().find(|f| *f == text)
}

/// What a [`Write`] answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Answer {
    /// Nothing to say (an end, a release).
    Done,
    /// A claim's answer.
    Claim(Claim),
    /// A request start: `None` it started, else wait this long and ask again.
    Start(Option<std::time::Duration>),
    /// Tokens and cost spent by the other processes.
    Spent(u64, f64),
    /// The form the store knows a model endpoint takes (see [`Write::KnownForm`]).
    Form(Option<&'static str>),
}

/// Where a run that another process of the execution held stands (see
/// [`Backend::settle`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Settled {
    /// It was queued again (its process is gone) and is now this process's to run.
    Claimed,
    /// It ended there: its record, as JSON, when the store has one.
    Ended(Option<String>),
    /// Still running there.
    Running,
}

/// An execution's owner as its row names it: pid, host and last heartbeat.
pub(crate) type ExecutionOwner = (Option<i64>, Option<String>, Option<String>);

/// A store's database, opened and at the current schema.
pub(crate) trait Backend: Send {
    /// Where it is, for messages (a URL without its credentials).
    fn address(&self) -> &StoreAddress;

    /// Queues again the runs a dead process left `running`: gone from this host, or no
    /// heartbeat within `lease` (see [`super::row::abandoned`]); returns how many.
    fn recover(&mut self, lease: std::time::Duration) -> Result<usize, DbError>;

    /// A new execution's id, or the id of the one this run joins (every process of a
    /// nextest run shares one).
    fn start_execution(&mut self, info: &ExecutionInfo) -> Result<i64, DbError>;

    /// The newest execution that did not finish, for `--resume`.
    fn unfinished_execution(&mut self) -> Result<Option<i64>, DbError>;

    /// Whether the process that ran `execution` as its own (see
    /// [`ExecutionInfo::exclusive`]) is still alive (on this host, its process exists;
    /// elsewhere, it marked the row within `lease`): then its pid and host. Else its
    /// mark is cleared, so that processes may join the execution (`--resume`).
    fn take_over(
        &mut self,
        execution: i64,
        lease: std::time::Duration,
    ) -> Result<Option<(i64, String)>, DbError> {
        let (Some(pid), Some(host), beat) = self.execution_owner(execution)? else {
            return Ok(None);
        };
        let cutoff = super::row::lease_cutoff(lease);
        if !super::row::abandoned(Some(pid), Some(&host), beat.as_deref(), &cutoff) {
            return Ok(Some((pid, host)));
        }
        self.clear_execution_owner(execution)?;
        Ok(None)
    }

    /// The process that runs `execution` as its own, as the row names it: its pid, its
    /// host and its last heartbeat.
    fn execution_owner(&mut self, execution: i64) -> Result<ExecutionOwner, DbError>;

    /// Clears the process `execution` names as its own (see [`Backend::take_over`]).
    fn clear_execution_owner(&mut self, execution: i64) -> Result<(), DbError>;

    /// Queues a run for each of `planned` the execution lacks.
    fn queue(&mut self, execution: i64, planned: &[Planned<'_>]) -> Result<(), DbError>;

    /// Sorts a resumed execution's ended runs by the cases `present` now (see
    /// [`super::row::sort_ended`]), queuing again those whose case changed, in one
    /// transaction.
    fn sort_ended(
        &mut self,
        execution: i64,
        present: &HashMap<String, Option<String>>,
    ) -> Result<Resumed, DbError>;

    /// Applies `writes` in one transaction; when that transaction cannot be had or
    /// committed (why, in the pair's first half), each write alone. Each
    /// write's answer, in order.
    fn write_batch(
        &mut self,
        execution: i64,
        writes: &[Write<'_>],
    ) -> (Option<DbError>, Vec<Result<Answer, DbError>>);

    /// Claims for this process up to `n` units of the execution's queued work: first
    /// up to `repeats` queued repeats of cases whose repeats spread over workers and
    /// that are not decided yet (oldest case first, in repeat order; few at a time, so
    /// that the other workers get some and a decision stops the rest early), then whole
    /// runs, oldest first; each `queued` to `running` in a way no other claimer can also
    /// win (PostgreSQL skips rows another claimer has locked).
    fn claim_queued(
        &mut self,
        execution: i64,
        n: usize,
        repeats: usize,
    ) -> Result<Vec<Work>, DbError>;

    /// Records the end of repeat `index` of the spread case `trial`, which this process
    /// ran, then, in the same transaction (so that two workers ending its last repeats
    /// at once decide it once), asks `decide` what the case's repeats as stored now come
    /// to: a record becomes its run's, and with it or a halt its repeats still queued
    /// are cancelled.
    fn end_repeat(
        &mut self,
        execution: i64,
        trial: &str,
        index: u32,
        record: &CaseReport,
        decide: &mut dyn FnMut(&[StoredRepeat]) -> Decision,
    ) -> Result<RepeatEnd, DbError>;

    /// How many of the execution's runs are still to run (`queued` or `pending`) and
    /// how many are `running`.
    fn open_runs(&mut self, execution: i64) -> Result<(u64, u64), DbError>;

    /// The status of the run of `trial` in the execution and its record (JSON), when
    /// it has one; `None` when the execution has no such run.
    fn run_state(
        &mut self,
        execution: i64,
        trial: &str,
    ) -> Result<Option<(String, Option<String>)>, DbError>;

    /// Where the runs of `trials`, which other processes of the execution held, stand
    /// now: runs a dead process left are taken back first (see [`Backend::recover`]),
    /// then each one queued is claimed for this process; the others have ended (with
    /// their record) or are still running.
    fn settle(
        &mut self,
        execution: i64,
        trials: &[String],
        lease: std::time::Duration,
    ) -> Result<Vec<Settled>, DbError> {
        self.recover(lease)?;
        let mut settled = Vec::with_capacity(trials.len());
        for trial in trials {
            let (_, mut answers) = self.write_batch(execution, &[Write::Claim(trial)]);
            match answers.pop() {
                Some(Ok(Answer::Claim(Claim::Granted))) => {
                    settled.push(Settled::Claimed);
                    continue;
                }
                Some(Err(e)) => return Err(e),
                _ => {}
            }
            settled.push(match self.run_state(execution, trial)? {
                Some((status, record)) if super::row::ended(&status) => Settled::Ended(record),
                _ => Settled::Running,
            });
        }
        Ok(settled)
    }

    /// Ends as `error`, with `reason`, the runs of `trials` that this process claimed
    /// and that are still `running` (a worker's claimed run whose case was not run:
    /// gone from the suites); returns how many.
    fn end_claimed(
        &mut self,
        execution: i64,
        trials: &[String],
        reason: &str,
    ) -> Result<usize, DbError>;

    /// How many executions the store holds, and its runs by lifecycle status.
    fn counts(&mut self) -> Result<(u64, Vec<(String, u64)>), DbError>;

    /// Marks this process's running runs alive.
    fn heartbeat(&mut self, execution: i64) -> Result<(), DbError>;

    /// Adds this invocation's time to the execution's, and marks it finished when none
    /// of its runs is left to run (a nextest run's stays open).
    fn finish(&mut self, execution: i64, duration_ms: u64) -> Result<(), DbError>;

    /// Closes the database, then checks that what was written is still there (an SQLite
    /// file deleted, replaced or overwritten while the run wrote to it).
    fn close(self: Box<Self>) -> Result<(), StoreError>;

    /// The newest runs that match `filter`, newest first.
    fn list(&mut self, filter: &Filter) -> Result<Vec<RunRow>, DbError>;

    /// One run and its case record (the JSON of a report line), when it has ended.
    fn show(&mut self, id: i64) -> Result<Option<(RunRow, Option<String>)>, DbError>;

    /// The runs to retry, by trial, with their ids: of `execution`, its runs that ended
    /// in `error`; without one, each trial's last run that ended, when that was an
    /// `error`.
    fn errored(&mut self, execution: Option<i64>) -> Result<HashMap<String, i64>, DbError>;

    /// An execution's id and input (the suites it ran): `id`, else the newest one not
    /// of a nextest run; `None` when there is none.
    fn execution_root(&mut self, id: Option<i64>) -> Result<Option<(i64, String)>, DbError>;

    /// The execution with this key (see [`ExecutionInfo::key`]).
    fn execution_by_key(&mut self, key: &str) -> Result<Option<i64>, DbError>;

    /// Execution `id` (the newest without one) and its ended runs.
    fn stored(&mut self, id: Option<i64>) -> Result<Option<Stored>, DbError>;

    /// Deletes what `doomed` names; returns how many runs went.
    fn delete(&mut self, doomed: &Doomed) -> Result<usize, DbError>;

    /// The passed and failed runs of the last `last` executions, by trial then
    /// execution, for [`Backend::flaky`].
    fn verdicts(&mut self, last: usize) -> Result<Vec<FlakyRow>, DbError>;

    /// The newest executions that `filter` takes, newest first, with their runs
    /// counted by verdict and their tokens and cost by role (from the indexes of `runs` and `run_usage`).
    fn executions(&mut self, filter: &ExecutionFilter) -> Result<Vec<ExecutionRow>, DbError>;

    /// Keeps a judge's calibration, over the one of the same judge and fingerprint.
    fn save_calibration(&mut self, c: &StoredCalibration) -> Result<(), DbError>;

    /// The calibration kept for `judge` at `fingerprint`, if any.
    fn calibration(
        &mut self,
        judge: &str,
        fingerprint: &str,
    ) -> Result<Option<StoredCalibration>, DbError>;

    /// The cases of the last `last` executions whose verdict changed on the same inputs.
    fn flaky(&mut self, last: usize) -> Result<Vec<FlakyCase>, DbError> {
        Ok(super::row::flaky(self.verdicts(last)?))
    }
}

/// One row of an executions query: `(id, key, started_at, duration_ms, command, root,
/// commit, branch, CI run)`.
pub(crate) type ExecutionHeadRow = (
    i64,
    Option<String>,
    String,
    Option<i64>,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// Executions from [`ExecutionHeadRow`]s, in their order, nothing counted yet.
pub(crate) fn executions_of(rows: Vec<ExecutionHeadRow>) -> Vec<ExecutionRow> {
    rows.into_iter()
        .map(
            |(id, key, started_at, duration_ms, command, root, git_commit, git_branch, ci_run)| {
                ExecutionRow {
                    id,
                    key,
                    started_at,
                    duration_ms,
                    command: serde_json::from_str(&command).unwrap_or_default(),
                    root,
                    git_commit,
                    git_branch,
                    ci_run,
                    counts: Default::default(),
                    total: 0,
                    flaky: 0,
                    usage: Default::default(),
                    currency: None,
                }
            },
        )
        .collect()
}

/// How a dialect reads a run's metadata in [`usage_rows_sql`]: `number(head, tail)` is
/// the number at `head.<role>.tail` (the role being the column `r.role`; NULL when
/// absent), `text(path)` the text at `path`; `from` is what follows `FROM runs` for
/// both to work (PostgreSQL parses the metadata there once).
pub(crate) struct MetadataReader<'a> {
    pub(crate) number: &'a dyn Fn(&str, &str) -> String,
    pub(crate) text: &'a dyn Fn(&str) -> String,
    pub(crate) from: &'a str,
}

/// The statement that writes the `run_usage` rows of the runs `filter` takes (a
/// `WHERE` clause over `runs`), from their metadata: a row per role of [`ROLES`] that
/// spent or replayed anything, with its tokens and cost spent and replayed and the
/// run's currency. The store's migration fills the table with it once; every run's end
/// writes its own rows with it, after deleting the old ones.
pub(crate) fn usage_rows_sql(m: &MetadataReader<'_>, filter: &str) -> String {
    let roles = ROLES
        .map(|r| format!("SELECT '{}' AS role", r.name()))
        .join(" UNION ALL ");
    let tokens = |head: &str| {
        format!(
            "CAST(COALESCE({}, 0) + COALESCE({}, 0) AS BIGINT)",
            (m.number)(head, "prompt_tokens"),
            (m.number)(head, "completion_tokens")
        )
    };
    format!(
        "INSERT INTO run_usage (run_id, execution_id, role, tokens, replayed_tokens, cost,
                                replayed_cost, currency)
         SELECT id, execution_id, role, tokens, replayed_tokens, cost, replayed_cost, currency
         FROM (SELECT runs.id, runs.execution_id, r.role, {} AS tokens, {} AS replayed_tokens,
                      CAST({} AS DOUBLE PRECISION) AS cost,
                      CAST({} AS DOUBLE PRECISION) AS replayed_cost, {} AS currency
               FROM runs {} CROSS JOIN ({roles}) r {filter}) u
         WHERE tokens > 0 OR replayed_tokens > 0 OR cost > 0 OR replayed_cost > 0",
        tokens("usage"),
        tokens("replayed_usage"),
        (m.number)("cost.by_role", "spent"),
        (m.number)("cost.by_role", "replayed"),
        (m.text)("cost.currency"),
        m.from,
    )
}

/// One row of an execution's runs counted: `(execution, verdict or status, runs, flaky
/// runs)`.
pub(crate) type CountRow = (i64, String, i64, i64);

/// One row of an execution's usage: `(execution, role, tokens, replayed tokens, cost,
/// replayed cost, currency)`.
pub(crate) type UsageRow = (i64, String, i64, i64, f64, f64, Option<String>);

/// Adds `counts` and `usage` (see [`CountRow`], [`UsageRow`]) to the executions they
/// name.
pub(crate) fn add_totals(
    executions: &mut [ExecutionRow],
    counts: Vec<CountRow>,
    usage: Vec<UsageRow>,
) {
    for (id, verdict, n, flaky) in counts {
        let Some(e) = executions.iter_mut().find(|e| e.id == id) else {
            continue;
        };
        if n > 0 {
            *e.counts.entry(verdict).or_default() += n as u64;
            e.total += n as u64;
        }
        e.flaky += flaky.max(0) as u64;
    }
    for (id, role, tokens, replayed_tokens, cost, replayed_cost, currency) in usage {
        let (Some(e), Some(role)) = (
            executions.iter_mut().find(|e| e.id == id),
            ROLES.into_iter().find(|r| r.name() == role),
        ) else {
            continue;
        };
        e.currency = e.currency.take().or(currency);
        e.usage.entry(role).or_default().add(&RoleTotals {
            tokens: tokens.max(0) as u64,
            replayed_tokens: replayed_tokens.max(0) as u64,
            cost,
            replayed_cost,
        });
    }
}
