//! What each viewer URL answers: the JSON API under `/api/` and the pages, both read
//! from the store the same way (the pages show what the API returns).
//!
//! - `GET /api/executions?limit&suite&status&q`: the newest executions that match;
//! - `GET /api/executions/ID?q&status&blame&suite`: an execution and its runs;
//! - `GET /api/runs/ID`: a run, with its whole record;
//! - `GET /api/cases/TRIAL`: a case's runs, oldest first, and its history;
//! - `GET /api/compare?before=A&after=B&alpha`: two executions compared.
//!
//! Pages: `/`, `/executions/ID`, `/executions/ID/report`, `/cases/TRIAL`, `/runs/ID`,
//! `/compare?before=A&after=B`; and `/assets/view.js` (the copy buttons).

use hyper::StatusCode;
use serde_json::{json, Value};

use super::pages;
use super::query::{decoded, Query};
use crate::case::Party;
use crate::check::compare::{self, History};
use crate::record::store::{
    Backend, ExecutionFilter, ExecutionRow, Filter, RunRow, LIFECYCLE, VERDICTS,
};

/// An answer, before it is a response.
pub(super) enum Reply {
    Json(StatusCode, Value),
    Html(StatusCode, String),
    /// A file embedded in the binary: its content type and text.
    Asset(&'static str, &'static str),
}

/// What went wrong: the status and the message a user reads.
type Failure = (StatusCode, String);

/// How many executions a list shows unless `limit` says.
const EXECUTIONS: usize = 50;
/// How many runs of a case its history reads.
const CASE_RUNS: usize = 1_000;
/// The runs an execution's page reads at most.
const EXECUTION_RUNS: usize = 100_000;

pub(super) fn route(db: &mut dyn Backend, path: &str, query: &Query) -> Reply {
    // Split before decoding: a trial's `/` arrives as `%2F` inside one segment.
    let parts: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .map(|p| decoded(p, false))
        .collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    match parts.as_slice() {
        ["assets", "view.js"] => {
            Reply::Asset("text/javascript; charset=utf-8", include_str!("view.js"))
        }
        ["api", rest @ ..] => match api(db, rest, query) {
            Ok(v) => Reply::Json(StatusCode::OK, v),
            Err((status, message)) => Reply::Json(status, json!({"error": message})),
        },
        _ => match page(db, &parts, query) {
            Ok(html) => Reply::Html(StatusCode::OK, html),
            Err((status, message)) => Reply::Html(status, pages::not_here(&message)),
        },
    }
}

fn api(db: &mut dyn Backend, parts: &[&str], q: &Query) -> Result<Value, Failure> {
    match parts {
        ["executions"] => Ok(json!(executions(db, q)?)),
        ["executions", id] => {
            let head = execution(db, id)?;
            let runs = execution_runs(db, head.id, q)?;
            Ok(json!({"execution": head, "runs": runs}))
        }
        ["runs", id] => {
            let id = id_of(id, "a run")?;
            match db.show(id) {
                Ok(Some((row, record))) => Ok(json!({
                    "run": row,
                    "record": record.and_then(|r| serde_json::from_str::<Value>(&r).ok()),
                })),
                Ok(None) => Err(not_found(format!("no run {id}"))),
                Err(e) => Err(failed(e)),
            }
        }
        ["cases", trial] => {
            let mut runs = case_runs(db, trial)?;
            let history = history_of(&runs);
            runs.reverse();
            Ok(json!({"trial": trial, "history": history, "runs": runs}))
        }
        ["compare"] => {
            let (c, _, _) = comparison(db, q)?;
            Ok(json!(c))
        }
        _ => Err(not_found(format!("nothing at /api/{}", parts.join("/")))),
    }
}

fn page(db: &mut dyn Backend, parts: &[&str], q: &Query) -> Result<String, Failure> {
    match parts {
        [""] => Ok(pages::executions(&executions(db, q)?, q)),
        ["executions", id] => {
            let head = execution(db, id)?;
            let before = db
                .executions(&ExecutionFilter {
                    below: Some(head.id),
                    limit: 1,
                    ..ExecutionFilter::default()
                })
                .map_err(failed)?
                .first()
                .map(|e| e.id);
            let runs = execution_runs(db, head.id, q)?;
            Ok(pages::execution(&head, before, &runs, q))
        }
        ["executions", id, "report"] => {
            let id = id_of(id, "an execution")?;
            let stored = db
                .stored(Some(id))
                .map_err(failed)?
                .ok_or_else(|| not_found(format!("no execution {id}")))?;
            let mut run = crate::record::RunInfo::new(
                "(from the run store)",
                stored.root.clone(),
                stored.command.clone(),
            );
            run.started_at = stored.started_at.clone();
            run.duration_ms = stored.duration_ms;
            let mut summary = crate::record::Summary::new();
            for c in &stored.cases {
                summary.add(c);
            }
            Ok(crate::record::format::html::render_framed(
                &run,
                &summary,
                &stored.cases,
                &pages::report_banner(id),
                pages::SCRIPT,
            ))
        }
        ["cases", trial] => {
            let runs = case_runs(db, trial)?;
            Ok(pages::case(trial, &history_of(&runs), &runs))
        }
        ["runs", id] => {
            let id = id_of(id, "a run")?;
            let (row, record) = db
                .show(id)
                .map_err(failed)?
                .ok_or_else(|| not_found(format!("no run {id}")))?;
            let record = record.ok_or_else(|| {
                not_found(format!("run {id} has no record yet (it has not ended)"))
            })?;
            let case = serde_json::from_str::<crate::record::CaseReport>(&record)
                .map_err(|e| failed(format!("run {id}'s record cannot be read: {e}")))?;
            let mut run = crate::record::RunInfo::new(
                "(from the run store)",
                format!("run {id} of execution {}", row.execution),
                vec!["agentest".into(), "rerun".into(), id.to_string()],
            );
            run.started_at = row.started_at.clone().unwrap_or(run.started_at);
            run.duration_ms = case.duration_ms;
            let mut summary = crate::record::Summary::new();
            summary.add(&case);
            Ok(crate::record::format::html::render_framed(
                &run,
                &summary,
                &[case],
                &pages::run_banner(&row),
                pages::SCRIPT,
            ))
        }
        ["compare"] => {
            let (c, a, b) = comparison(db, q)?;
            Ok(pages::comparison(&c, a, b))
        }
        _ => Err(not_found(format!("nothing at /{}", parts.join("/")))),
    }
}

/// The executions `q` asks for (`limit`, `suite`, `status`, `q`), newest first.
fn executions(db: &mut dyn Backend, q: &Query) -> Result<Vec<ExecutionRow>, Failure> {
    let filter = ExecutionFilter {
        limit: q.limit(EXECUTIONS, 1_000).map_err(bad)?,
        suite: q.get("suite").map(str::to_string),
        status: status(q)?,
        text: q.get("q").map(str::to_string),
        ..ExecutionFilter::default()
    };
    db.executions(&filter).map_err(failed)
}

/// `status=`: a verdict or a lifecycle status.
fn status(q: &Query) -> Result<Option<String>, Failure> {
    let allowed: Vec<&str> = VERDICTS.iter().chain(LIFECYCLE.iter()).copied().collect();
    q.one_of("status", &allowed).map_err(bad)
}

/// The execution `id` names, with its runs counted.
fn execution(db: &mut dyn Backend, id: &str) -> Result<ExecutionRow, Failure> {
    let id = id_of(id, "an execution")?;
    db.executions(&ExecutionFilter {
        id: Some(id),
        limit: 1,
        ..ExecutionFilter::default()
    })
    .map_err(failed)?
    .into_iter()
    .next()
    .ok_or_else(|| not_found(format!("no execution {id}")))
}

/// An execution's runs that `q` keeps (`status`, `blame`, `suite`, and `q`: text in the
/// case's name or the reason), newest first.
fn execution_runs(db: &mut dyn Backend, id: i64, q: &Query) -> Result<Vec<RunRow>, Failure> {
    let parties = Party::ALL.map(Party::name);
    let filter = Filter {
        execution: Some(id),
        status: status(q)?,
        blame: q.one_of("blame", &parties).map_err(bad)?,
        suite: q.get("suite").map(str::to_string),
        limit: EXECUTION_RUNS,
        ..Filter::default()
    };
    let mut runs = db.list(&filter).map_err(failed)?;
    if let Some(text) = q.get("q").map(str::to_lowercase) {
        runs.retain(|r| {
            r.trial.to_lowercase().contains(&text)
                || r.reason
                    .as_deref()
                    .is_some_and(|m| m.to_lowercase().contains(&text))
        });
    }
    Ok(runs)
}

/// A case's runs, newest first; not found when it has none.
fn case_runs(db: &mut dyn Backend, trial: &str) -> Result<Vec<RunRow>, Failure> {
    let runs = db
        .list(&Filter {
            trial: Some(trial.to_string()),
            limit: CASE_RUNS,
            ..Filter::default()
        })
        .map_err(failed)?;
    if runs.is_empty() {
        return Err(not_found(format!("no run of {trial}")));
    }
    Ok(runs)
}

/// The history of a case's runs (given newest first), read oldest first.
fn history_of(newest_first: &[RunRow]) -> History {
    let runs: Vec<compare::HistoryRun<'_>> = newest_first
        .iter()
        .rev()
        .map(|r| compare::HistoryRun {
            execution: r.execution,
            verdict: r.verdict(),
            repeats: r
                .repeats_passed
                .zip(r.repeats_failed)
                .map(|(p, f)| compare::Counts {
                    passed: p.max(0) as u32,
                    failed: f.max(0) as u32,
                }),
        })
        .collect();
    compare::history(&runs)
}

/// `before` and `after` compared at `alpha` (default 0.05): the comparison and the ids.
fn comparison(db: &mut dyn Backend, q: &Query) -> Result<(compare::Comparison, i64, i64), Failure> {
    let id = |k: &str| {
        q.id(k)
            .map_err(bad)?
            .ok_or_else(|| bad(format!("give `{k}`, an execution id")))
    };
    let (a, b) = (id("before")?, id("after")?);
    let alpha = match q.get("alpha") {
        None => 0.05,
        Some(v) => v
            .parse::<f64>()
            .ok()
            .filter(|a| *a > 0.0 && *a < 1.0)
            .ok_or_else(|| bad(format!("`alpha={v}`: expected a number between 0 and 1")))?,
    };
    let mut stored = |e: i64| match db.stored(Some(e)) {
        Ok(Some(s)) => Ok(s.cases),
        Ok(None) => Err(not_found(format!("no execution {e}"))),
        Err(e) => Err(failed(e)),
    };
    let (x, y) = (stored(a)?, stored(b)?);
    Ok((compare::compare(&x, &y, alpha), a, b))
}

fn id_of(text: &str, what: &str) -> Result<i64, Failure> {
    text.parse::<i64>()
        .map_err(|_| bad(format!("`{text}` is not {what}'s id")))
}

fn bad(message: String) -> Failure {
    (StatusCode::BAD_REQUEST, message)
}

fn not_found(message: String) -> Failure {
    (StatusCode::NOT_FOUND, message)
}

fn failed(e: impl std::fmt::Display) -> Failure {
    (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}
