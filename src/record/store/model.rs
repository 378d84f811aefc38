//! What the store is told and answers, whichever the backend: an execution and the runs
//! it plans, a claim's answer, a resumed execution, runs as `runs list` shows them, an
//! execution with its ended runs, what `runs delete` removes, and the flaky cases.

use std::path::PathBuf;

use crate::record::CaseReport;

/// What an execution is, for its row.
pub(crate) struct ExecutionInfo {
    /// The command line.
    pub(crate) command: Vec<String>,
    /// The suites' root or input, as shown.
    pub(crate) root: String,
    /// The key every process of the execution gives (see
    /// [`crate::settings::Settings::execution_key`]): the first to start it makes the
    /// row, the rest join it. None: an execution of its own.
    pub(crate) key: Option<String>,
    /// `NEXTEST_RUN_ID`, kept in its own column as before keys.
    pub(crate) nextest_run_id: Option<String>,
    /// How long this process's claimed runs hold without a heartbeat, and how long it
    /// takes another's to be abandoned (`[store] lease`).
    pub(crate) lease: std::time::Duration,
    /// A new execution that no other process joins (no key; not a resume, a worker or
    /// an enqueue): its cases start without waiting for a claim of their runs (each is
    /// marked `running` with the wave's other writes), and a `--resume` of it waits
    /// for this process to be gone (see [`super::Backend::take_over`]).
    pub(crate) exclusive: bool,
    /// Where to look for the git commit and branch (the suites' folder).
    pub(crate) git_from: PathBuf,
    /// The CI's run, when a CI says one (see [`crate::settings::ExecutionKeys::ci`]).
    pub(crate) ci_run: Option<String>,
    /// The CI's branch, for a checkout whose HEAD names none.
    pub(crate) ci_branch: Option<String>,
}

/// A trial the run will run.
pub(crate) struct Planned<'a> {
    pub(crate) trial: &'a str,
    pub(crate) suite: &'a str,
    pub(crate) case_id: &'a str,
    pub(crate) file: &'a str,
    /// The run this one retries.
    pub(crate) retry_of: Option<i64>,
    /// Queued for workers, a case run more than once: how many times. Each repeat is
    /// then a unit of work of its own, which any worker may claim.
    pub(crate) repeats: Option<u32>,
}

/// A unit of an execution's queued work that a worker claimed: a case's run, or one
/// repeat of a case whose repeats spread over workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Work {
    pub(crate) trial: String,
    /// The repeat (from 1), when the case's repeats spread over workers.
    pub(crate) repeat: Option<u32>,
}

/// A repeat of a case whose repeats spread over workers, as the store holds it.
#[derive(Debug, Clone)]
pub(crate) struct StoredRepeat {
    /// From 1.
    pub(crate) index: u32,
    /// Whether it ended: then its record (JSON).
    pub(crate) ended: Option<String>,
    /// Whether a worker is running it.
    pub(crate) running: bool,
}

/// What a spread case's repeats as stored come to (see [`super::Backend::end_repeat`]).
#[derive(Debug)]
pub(crate) enum Decision {
    /// The case's record: its gate is decided, or no more repeats may start and none
    /// is running. Its queued repeats are cancelled.
    Record(Box<crate::record::CaseReport>),
    /// No more repeats may start (the case's budget is spent), but some still run: the
    /// queued ones are cancelled, and the last one to end makes the record.
    Halt,
    /// More repeats are needed.
    Open,
}

/// What ending a spread repeat came to (see [`super::Backend::end_repeat`]).
#[derive(Debug)]
pub(crate) enum RepeatEnd {
    /// It decided its case's gate: the case's record, now the run's.
    Decided(Box<crate::record::CaseReport>),
    /// Counted; the gate is not decided yet.
    Counted,
    /// The case was decided (or ended) before: this repeat's result is not counted.
    Late,
}

/// The store's answer to a claim of a trial's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// The run is this process's: the case runs here.
    Granted,
    /// Another process of the execution has the run, or ran it (a nextest run, or a
    /// `--resume` of the same execution in another terminal).
    Elsewhere,
    /// This very process claimed the run before: the trial was planned twice, which
    /// planning rules out (trial names are unique). A bug, never a skip.
    Twice,
}

/// What a resumed execution already holds.
#[derive(Default)]
pub(crate) struct Resumed {
    /// The records of its runs that ended (`completed` or `error`) and are kept: their
    /// case is still there, with the same `input_hash`.
    pub(crate) ended: Vec<CaseReport>,
    /// The trials of ended runs whose case is no longer in the suites: left out of the
    /// report (their runs stay in the store).
    pub(crate) gone: Vec<String>,
    /// The trials of ended runs whose case changed since (or whose record cannot be
    /// read): queued again, to run.
    pub(crate) stale: Vec<String>,
}

/// The seed's run statuses.
pub(crate) const LIFECYCLE: [&str; 5] = ["queued", "pending", "running", "completed", "error"];
/// agentest's verdicts, also accepted by `--status`.
pub(crate) const VERDICTS: [&str; 6] = [
    "passed",
    "failed",
    "error",
    "skipped",
    "timeout",
    "inconclusive",
];

/// A judge's calibration as the store keeps it: the latest for its name and
/// fingerprint (`agentest calibrate`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredCalibration {
    /// The `[judges.NAME]` name.
    pub(crate) judge: String,
    /// What the judge was when calibrated (endpoint, model, prompt, temperature, schema).
    pub(crate) fingerprint: String,
    /// When, RFC 3339.
    pub(crate) calibrated_at: String,
    pub(crate) items: u64,
    pub(crate) runs: u64,
    pub(crate) accuracy: f64,
    pub(crate) kappa: Option<f64>,
    pub(crate) flip_rate: Option<f64>,
    /// The whole calibration report, JSON.
    pub(crate) report: String,
}

/// One stored run, as `runs list` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct RunRow {
    pub(crate) id: i64,
    pub(crate) execution: i64,
    pub(crate) trial: String,
    pub(crate) status: String,
    pub(crate) verdict: Option<String>,
    pub(crate) started_at: Option<String>,
    pub(crate) completed_at: Option<String>,
    pub(crate) reason: Option<String>,
    pub(crate) latency_ms: Option<i64>,
    pub(crate) retry_of: Option<i64>,
    pub(crate) suite: String,
    /// Whose fault it was that it did not pass.
    pub(crate) blame: Option<String>,
    /// Its turns (the conversation's user messages), once it ended.
    pub(crate) turns: Option<i64>,
    /// Tokens its model calls spent (replayed ones not counted).
    pub(crate) tokens: Option<i64>,
    /// What its model calls cost, in `currency`.
    pub(crate) cost: Option<f64>,
    /// Its pricing's currency, when it was priced.
    pub(crate) currency: Option<String>,
    /// A repeated case's counted repeats that passed and that failed.
    pub(crate) repeats_passed: Option<i64>,
    pub(crate) repeats_failed: Option<i64>,
}

impl RunRow {
    /// Its verdict, or its lifecycle status before it has one (`queued`, `running`).
    pub(crate) fn verdict(&self) -> &str {
        self.verdict.as_deref().unwrap_or(&self.status)
    }
}

/// An execution as the viewer lists it: when and what it ran, and its runs by verdict.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct ExecutionRow {
    pub(crate) id: i64,
    /// Its key (a CI's run, `nextest:ID`), when it has one.
    pub(crate) key: Option<String>,
    pub(crate) started_at: String,
    pub(crate) duration_ms: Option<i64>,
    /// Its command line.
    pub(crate) command: Vec<String>,
    /// What it ran.
    pub(crate) root: String,
    pub(crate) git_commit: Option<String>,
    /// The git branch it ran on (a CI's branch when the checkout is detached).
    pub(crate) git_branch: Option<String>,
    /// The CI's run (`github:RUN:ATTEMPT`, `gitlab:PIPELINE`), when it ran on one.
    pub(crate) ci_run: Option<String>,
    /// Its runs by verdict (`queued` and the like for runs without one yet).
    pub(crate) counts: std::collections::BTreeMap<String, u64>,
    pub(crate) total: u64,
    /// Its repeated cases whose repeats both passed and failed.
    pub(crate) flaky: u64,
    /// Tokens and cost by role (roles that made no call left out).
    pub(crate) usage: std::collections::BTreeMap<crate::protocol::Role, RoleTotals>,
    /// The pricing currency of its costs, when one was priced.
    pub(crate) currency: Option<String>,
}

/// The roles a run's usage is kept for, one `run_usage` row each (see
/// [`super::backend::usage_rows_sql`]).
pub(crate) const ROLES: [crate::protocol::Role; 3] = [
    crate::protocol::Role::Agent,
    crate::protocol::Role::Simulator,
    crate::protocol::Role::Judge,
];

/// What one role spent across runs, and what was replayed from cassettes instead.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub(crate) struct RoleTotals {
    pub(crate) tokens: u64,
    pub(crate) replayed_tokens: u64,
    pub(crate) cost: f64,
    pub(crate) replayed_cost: f64,
}

impl RoleTotals {
    /// `self` and `other` together.
    pub(crate) fn add(&mut self, other: &RoleTotals) {
        self.tokens += other.tokens;
        self.replayed_tokens += other.replayed_tokens;
        self.cost += other.cost;
        self.replayed_cost += other.replayed_cost;
    }
}

/// Which executions the viewer lists, newest first.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExecutionFilter {
    pub(crate) limit: usize,
    /// This execution only.
    pub(crate) id: Option<i64>,
    /// Executions older than this one.
    pub(crate) below: Option<i64>,
    /// Executions that ran a case of this suite (or of a suite under it).
    pub(crate) suite: Option<String>,
    /// Executions with a run of this verdict or lifecycle status (with `suite`: in it).
    pub(crate) status: Option<String>,
    /// Text found (any case) in the branch, the commit, the CI run, the key or the
    /// command line.
    pub(crate) text: Option<String>,
}

impl ExecutionFilter {
    /// The filter as a `WHERE` clause over `executions e` (empty without one) and its
    /// values in order; `placeholder(n)` writes the backend's n-th parameter.
    pub(crate) fn where_clause(
        &self,
        placeholder: impl Fn(usize) -> String,
    ) -> (String, Vec<FilterValue>) {
        let mut clauses = Vec::new();
        // The runs' own conditions, in a subquery of the runs of `e`: unqualified
        // columns there are the runs'.
        let runs = Filter {
            status: self.status.clone(),
            suite: self.suite.clone(),
            ..Filter::default()
        };
        let (inner, mut values) = runs.where_clause(&placeholder);
        // `text` is one value the clause names five times: placeholders are numbered.
        if !inner.is_empty() {
            clauses.push(format!(
                "EXISTS (SELECT 1 FROM runs {inner} AND execution_id = e.id)"
            ));
        }
        for (id, op) in [(self.id, "="), (self.below, "<")] {
            if let Some(id) = id {
                values.push(FilterValue::Id(id));
                clauses.push(format!("e.id {op} {}", placeholder(values.len())));
            }
        }
        if let Some(t) = self.text.as_deref().filter(|t| !t.trim().is_empty()) {
            values.push(FilterValue::Text(format!(
                "%{}%",
                like_escaped(&t.trim().to_lowercase())
            )));
            let p = placeholder(values.len());
            let any: Vec<String> = [
                "e.git_branch",
                "e.git_commit",
                "e.ci_run",
                "e.execution_key",
                "e.command",
            ]
            .iter()
            .map(|c| format!("LOWER(COALESCE({c}, '')) LIKE {p} ESCAPE '\\'"))
            .collect();
            clauses.push(format!("({})", any.join(" OR ")));
        }
        let clause = match clauses.is_empty() {
            true => String::new(),
            false => format!("WHERE {}", clauses.join(" AND ")),
        };
        (clause, values)
    }
}

/// `s` with `LIKE`'s wildcards and its escape (`\`) escaped.
fn like_escaped(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// Which runs to list.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    /// A lifecycle status, or one of agentest's verdicts.
    pub(crate) status: Option<String>,
    /// A suite: the runs of it and of the suites under it (`billing` takes
    /// `billing/refunds`).
    pub(crate) suite: Option<String>,
    pub(crate) execution: Option<i64>,
    /// Whose fault (`agent`, `simulator`, `judge`, `infrastructure`).
    pub(crate) blame: Option<String>,
    /// One trial's runs.
    pub(crate) trial: Option<String>,
    pub(crate) limit: usize,
}

/// A value a [`Filter`] compares a column with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FilterValue {
    Text(String),
    Id(i64),
}

impl Filter {
    /// The filter as a `WHERE` clause (empty without one) and its values in order;
    /// `placeholder(n)` writes the backend's n-th parameter (`?`, `$n`).
    pub(crate) fn where_clause(
        &self,
        placeholder: impl Fn(usize) -> String,
    ) -> (String, Vec<FilterValue>) {
        let mut clauses = Vec::new();
        let mut values = Vec::new();
        let next = |v: FilterValue, values: &mut Vec<FilterValue>| {
            values.push(v);
            placeholder(values.len())
        };
        if let Some(s) = &self.status {
            let column = match LIFECYCLE.contains(&s.as_str()) {
                true => "status",
                false => "verdict",
            };
            let p = next(FilterValue::Text(s.clone()), &mut values);
            clauses.push(format!("{column} = {p}"));
        }
        if let Some(s) = &self.suite {
            // The suite, and the suites under it (`LIKE` escaped with `\`).
            let escaped = like_escaped(s);
            let same = next(FilterValue::Text(s.clone()), &mut values);
            let under = next(FilterValue::Text(format!("{escaped}/%")), &mut values);
            clauses.push(format!(
                "(suite = {same} OR suite LIKE {under} ESCAPE '\\')"
            ));
        }
        if let Some(e) = self.execution {
            let p = next(FilterValue::Id(e), &mut values);
            clauses.push(format!("execution_id = {p}"));
        }
        if let Some(b) = &self.blame {
            let p = next(FilterValue::Text(b.clone()), &mut values);
            clauses.push(format!("blame = {p}"));
        }
        if let Some(t) = &self.trial {
            let p = next(FilterValue::Text(t.clone()), &mut values);
            clauses.push(format!("trial = {p}"));
        }
        let clause = match clauses.is_empty() {
            true => String::new(),
            false => format!("WHERE {}", clauses.join(" AND ")),
        };
        (clause, values)
    }
}

/// An execution's ended runs, for reports rendered from the store.
pub(crate) struct Stored {
    pub(crate) execution: i64,
    /// What it ran (the input).
    pub(crate) root: String,
    /// Its command line.
    pub(crate) command: Vec<String>,
    /// When it started (RFC 3339).
    pub(crate) started_at: String,
    pub(crate) duration_ms: u64,
    /// The records of its runs that ended, in trial order.
    pub(crate) cases: Vec<crate::record::CaseReport>,
    /// Each run as stored, in the same order as `cases`.
    pub(crate) runs: Vec<StoredRun>,
}

/// A run's columns an export needs.
pub(crate) struct StoredRun {
    pub(crate) id: i64,
    pub(crate) status: String,
    pub(crate) started_at: Option<String>,
    pub(crate) completed_at: Option<String>,
    pub(crate) success: Option<bool>,
    pub(crate) reason: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) messages: Option<String>,
    pub(crate) latency_ms: Option<i64>,
    pub(crate) persona: Option<String>,
    pub(crate) case_id: String,
}

impl Stored {
    /// An execution from its row and its ended runs (each with its record, the JSON of
    /// a report line), in trial order; a run whose record cannot be read is left out.
    pub(crate) fn assemble(
        execution: i64,
        root: String,
        command: &str,
        started_at: String,
        duration_ms: Option<i64>,
        rows: Vec<(StoredRun, Option<String>)>,
    ) -> Stored {
        let mut cases = Vec::new();
        let mut runs = Vec::new();
        for (run, record) in rows {
            if let Some(case) = record.and_then(|j| serde_json::from_str(&j).ok()) {
                cases.push(case);
                runs.push(run);
            }
        }
        Stored {
            execution,
            root,
            command: serde_json::from_str(command).unwrap_or_default(),
            started_at,
            duration_ms: duration_ms.unwrap_or(0).max(0) as u64,
            cases,
            runs,
        }
    }
}

/// What `runs delete` removes.
#[derive(Debug, Clone)]
pub(crate) enum Doomed {
    Run(i64),
    Execution(i64),
    /// Runs (and then empty executions) that started before this RFC 3339 time.
    Before(String),
}

/// A case whose verdict changed between executions on the same inputs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FlakyCase {
    pub(crate) trial: String,
    /// Oldest first: the execution, its verdict, and the case's pass rate in it (a
    /// repeated case's share of passing repeats; 1 or 0 for a case run once).
    pub(crate) history: Vec<(i64, String, f64)>,
}

/// A passed or failed run, for [`flaky`]: its execution, trial, the case's
/// `input_hash`, its verdict and, for a repeated case, its pass rate.
pub(crate) type FlakyRow = (i64, String, Option<String>, String, Option<f64>);

#[cfg(test)]
mod tests {
    use super::*;

    /// Each backend's placeholders, in order; a suite's own `%` and `_` are matched as
    /// themselves, not as `LIKE` wildcards.
    #[test]
    fn a_filter_is_one_where_clause_for_either_backend() {
        let f = Filter {
            status: Some("failed".into()),
            suite: Some("a_b%".into()),
            execution: Some(7),
            blame: Some("simulator".into()),
            trial: None,
            limit: 5,
        };
        let (clause, values) = f.where_clause(|n| format!("${n}"));
        assert_eq!(
            clause,
            "WHERE verdict = $1 AND (suite = $2 OR suite LIKE $3 ESCAPE '\\') AND execution_id = $4 AND blame = $5"
        );
        assert_eq!(
            values,
            [
                FilterValue::Text("failed".into()),
                FilterValue::Text("a_b%".into()),
                FilterValue::Text("a\\_b\\%/%".into()),
                FilterValue::Id(7),
                FilterValue::Text("simulator".into()),
            ]
        );
        let lifecycle = Filter {
            status: Some("queued".into()),
            ..Default::default()
        };
        assert_eq!(lifecycle.where_clause(|_| "?".into()).0, "WHERE status = ?");
        assert_eq!(Filter::default().where_clause(|_| "?".into()).0, "");
    }
}
