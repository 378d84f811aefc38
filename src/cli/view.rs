//! `agentest view`: a read-only web viewer over the run store, on loopback.
//!
//! The server is the hyper the trace receiver already uses; the store is opened read
//! only (never created, migrated or written). It listens on 127.0.0.1 (any free port
//! by default) and prints its URL; another address needs `--token`, which every
//! request must then carry (`Authorization: Bearer TOKEN`, or `?token=TOKEN` for a
//! browser's first page).
//!
//! Its pages ([`super::view_pages`]): `/`, `/executions/ID`, `/cases/TRIAL`, `/runs/ID`
//! (the HTML report of the run's record), `/compare?before=A&after=B`.
//!
//! The JSON API, under `/api/`:
//! - `GET /api/executions?limit=N`: the newest executions, runs counted by verdict;
//! - `GET /api/executions/ID`: an execution's runs;
//! - `GET /api/runs/ID`: a run, with its whole record;
//! - `GET /api/cases/TRIAL`: a case's runs, oldest first, and its history (pass rate,
//!   Wilson interval, the first execution whose verdict changed);
//! - `GET /api/compare?before=A&after=B`: two executions compared (`runs compare`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

use crate::record::store::{self, Backend, Filter};

#[derive(clap::Args)]
pub(super) struct ViewArgs {
    /// The store (default: as `agentest test` finds it from the current folder).
    // Read as text and parsed later: clap's own error would print a URL's password.
    #[arg(long)]
    store: Option<String>,
    /// Where to listen (default 127.0.0.1:0, a free port on loopback). Another address
    /// than loopback needs --token.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// A secret every request must carry (`Authorization: Bearer TOKEN`, or `?token=`).
    #[arg(long)]
    token: Option<String>,
}

/// Runs `agentest view` until stopped.
pub(super) fn view(args: ViewArgs) -> Result<ExitCode, String> {
    let listen: SocketAddr = args.listen.parse().map_err(|_| {
        format!(
            "--listen {}: expected an address and port like 127.0.0.1:8080 (port 0: a free one)",
            args.listen
        )
    })?;
    let token = args.token.filter(|t| !t.is_empty());
    if !listen.ip().is_loopback() && token.is_none() {
        return Err(format!(
            "--listen {listen} is not a loopback address: anyone who reaches it would read the store; give --token SECRET (every request must then carry it), or listen on 127.0.0.1"
        ));
    }
    let address =
        super::locate::existing_store(super::locate::parse_store(args.store.as_deref())?)?;
    let db = store::open_read_only(&address).map_err(|e| e.to_string())?;
    let state = Arc::new(State {
        db: Mutex::new(db),
        token,
    });
    crate::run::runtime().block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| format!("failed to listen on {listen}: {e}"))?;
        let bound = listener
            .local_addr()
            .map_err(|e| format!("failed to listen on {listen}: {e}"))?;
        // The URL is the command's output; the token is the user's own, not printed.
        println!("http://{bound}/");
        eprintln!("agentest view: serving {address} read only; Ctrl-C stops it");
        serve(listener, state).await;
        Ok::<_, String>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

struct State {
    /// The store, read by one request at a time (its connection is not shared).
    db: Mutex<Box<dyn Backend>>,
    token: Option<String>,
}

async fn serve(listener: tokio::net::TcpListener, state: Arc<State>) {
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                };
                let state = Arc::clone(&state);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let state = Arc::clone(&state);
                        async move { Ok::<_, Infallible>(answer(&state, request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        }
    }
}

/// Whether `given` is the token, compared in constant time.
fn same_token(given: &str, token: &str) -> bool {
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn query_param<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

async fn answer(
    state: &Arc<State>,
    request: Request<hyper::body::Incoming>,
) -> Response<Full<Bytes>> {
    let query = request.uri().query().unwrap_or("").to_string();
    if let Some(token) = &state.token {
        let bearer = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let given = bearer.or_else(|| query_param(&query, "token"));
        if !given.is_some_and(|g| same_token(g, token)) {
            return json_response(
                StatusCode::UNAUTHORIZED,
                &json!({"error": "this viewer needs its token: Authorization: Bearer TOKEN, or ?token=TOKEN"}),
            );
        }
    }
    if request.method() != Method::GET {
        return json_response(
            StatusCode::METHOD_NOT_ALLOWED,
            &json!({"error": "the viewer is read only: GET only"}),
        );
    }
    let path = request.uri().path().to_string();
    let state = Arc::clone(state);
    // The store's calls block: off the runtime's threads.
    tokio::task::spawn_blocking(move || route(&state, &path, &query))
        .await
        .unwrap_or_else(|e| {
            json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({"error": format!("the request failed: {e}")}),
            )
        })
}

fn route(state: &State, path: &str, query: &str) -> Response<Full<Bytes>> {
    let mut db = state.db.lock().unwrap_or_else(|e| e.into_inner());
    let db = db.as_mut();
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let result: Result<Value, (StatusCode, String)> = match parts.as_slice() {
        ["api", "executions"] => {
            let limit = query_param(query, "limit")
                .and_then(|l| l.parse().ok())
                .unwrap_or(50usize)
                .min(1000);
            db.executions(limit)
                .map(|rows| json!(rows))
                .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
        }
        ["api", "executions", id] => id
            .parse::<i64>()
            .map_err(|_| {
                (
                    StatusCode::BAD_REQUEST,
                    format!("`{id}` is not an execution id"),
                )
            })
            .and_then(|id| {
                let filter = Filter {
                    execution: Some(id),
                    limit: 100_000,
                    ..Filter::default()
                };
                db.list(&filter)
                    .map(|runs| json!({"execution": id, "runs": runs}))
                    .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
            }),
        ["api", "runs", id] => id
            .parse::<i64>()
            .map_err(|_| (StatusCode::BAD_REQUEST, format!("`{id}` is not a run id")))
            .and_then(|id| match db.show(id) {
                Ok(Some((row, record))) => Ok(json!({
                    "run": row,
                    "record": record.and_then(|r| serde_json::from_str::<Value>(&r).ok()),
                })),
                Ok(None) => Err((StatusCode::NOT_FOUND, format!("no run {id}"))),
                Err(e) => Err((StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
            }),
        ["api", "cases", trial] => {
            let trial = percent_decoded(trial);
            let filter = Filter {
                trial: Some(trial.clone()),
                limit: 1_000,
                ..Filter::default()
            };
            db.list(&filter)
                .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
                .and_then(|mut runs| {
                    if runs.is_empty() {
                        return Err((StatusCode::NOT_FOUND, format!("no run of {trial}")));
                    }
                    runs.reverse();
                    let verdicts: Vec<(i64, &str)> = runs
                        .iter()
                        .map(|r| (r.execution, r.verdict.as_deref().unwrap_or(&r.status)))
                        .collect();
                    let history = crate::check::compare::history(&verdicts);
                    Ok(json!({"trial": trial, "history": history, "runs": runs}))
                })
        }
        ["api", "compare"] => {
            let id = |k: &str| {
                query_param(query, k)
                    .and_then(|v| v.parse::<i64>().ok())
                    .ok_or((
                        StatusCode::BAD_REQUEST,
                        format!("give `{k}`, an execution id"),
                    ))
            };
            id("before").and_then(|a| {
                let b = id("after")?;
                let mut stored = |e: i64| match db.stored(Some(e)) {
                    Ok(Some(s)) => Ok(s.cases),
                    Ok(None) => Err((StatusCode::NOT_FOUND, format!("no execution {e}"))),
                    Err(e) => Err((StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
                };
                let (x, y) = (stored(a)?, stored(b)?);
                Ok(json!(crate::check::compare::compare(&x, &y, 0.05)))
            })
        }
        ["api", ..] => Err((StatusCode::NOT_FOUND, format!("nothing at {path}"))),
        _ => return page(db, &parts, query),
    };
    match result {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err((status, message)) => json_response(status, &json!({"error": message})),
    }
}

/// The HTML pages: the executions, an execution's runs, a case's runs, a run's report,
/// a comparison.
fn page(db: &mut dyn Backend, parts: &[&str], query: &str) -> Response<Full<Bytes>> {
    use super::view_pages as pages;
    let fail = |status: StatusCode, message: String| {
        html_response(
            status,
            pages::page(
                "Not here",
                &format!("<p>{}</p>", crate::record::format::html::esc(&message)),
            ),
        )
    };
    let runs_of = |db: &mut dyn Backend, filter: Filter| db.list(&filter);
    match parts {
        [""] => match db.executions(100) {
            Ok(rows) => {
                let lines: Vec<pages::ExecutionLine<'_>> = rows
                    .iter()
                    .map(|e| pages::ExecutionLine {
                        id: e.id,
                        started_at: &e.started_at,
                        duration_ms: e.duration_ms,
                        command: e.command.join(" "),
                        git_commit: e.git_commit.as_deref(),
                        counts: &e.counts,
                        total: e.total,
                    })
                    .collect();
                html_response(StatusCode::OK, pages::executions(&lines))
            }
            Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        },
        ["executions", id] | ["cases", id] => {
            let by_case = parts[0] == "cases";
            let filter = if by_case {
                let trial = percent_decoded(id);
                Filter {
                    trial: Some(trial),
                    limit: 1_000,
                    ..Filter::default()
                }
            } else {
                match id.parse::<i64>() {
                    Ok(e) => Filter {
                        execution: Some(e),
                        limit: 100_000,
                        ..Filter::default()
                    },
                    Err(_) => {
                        return fail(
                            StatusCode::BAD_REQUEST,
                            format!("`{id}` is not an execution id"),
                        )
                    }
                }
            };
            let title = match (&filter.trial, filter.execution) {
                (Some(t), _) => format!("Case {t}"),
                (_, Some(e)) => format!("Execution {e}"),
                _ => String::new(),
            };
            match runs_of(db, filter) {
                Ok(rows) => {
                    let lines: Vec<pages::RunLine<'_>> = rows
                        .iter()
                        .map(|r| pages::RunLine {
                            id: r.id,
                            execution: r.execution,
                            trial: &r.trial,
                            verdict: r.verdict.as_deref().unwrap_or(&r.status),
                            started_at: r.started_at.as_deref().unwrap_or(""),
                            latency_ms: r.latency_ms,
                            reason: r.reason.as_deref().unwrap_or(""),
                        })
                        .collect();
                    let header = if by_case {
                        // The list is newest first; a history reads oldest first.
                        let oldest: Vec<pages::RunLine<'_>> = lines.iter().rev().copied().collect();
                        let verdicts: Vec<(i64, &str)> =
                            oldest.iter().map(|r| (r.execution, r.verdict)).collect();
                        pages::history(&crate::check::compare::history(&verdicts), &oldest)
                    } else {
                        String::new()
                    };
                    html_response(
                        StatusCode::OK,
                        pages::runs(&title, &header, &lines, by_case),
                    )
                }
                Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
            }
        }
        ["runs", id] => {
            let Ok(id) = id.parse::<i64>() else {
                return fail(StatusCode::BAD_REQUEST, format!("`{id}` is not a run id"));
            };
            match db.show(id) {
                Ok(Some((row, Some(record)))) => {
                    match serde_json::from_str::<crate::record::CaseReport>(&record) {
                        Ok(case) => {
                            let mut run = crate::record::RunInfo::new(
                                "(from the run store)",
                                format!("run {id} of execution {}", row.execution),
                                vec!["agentest".into(), "rerun".into(), id.to_string()],
                            );
                            run.duration_ms = case.duration_ms;
                            let mut summary = crate::record::Summary::default();
                            summary.add(&case);
                            html_response(
                                StatusCode::OK,
                                crate::record::format::html::render(&run, &summary, &[case]),
                            )
                        }
                        Err(e) => fail(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            format!("run {id}'s record cannot be read: {e}"),
                        ),
                    }
                }
                Ok(Some((_, None))) => fail(
                    StatusCode::NOT_FOUND,
                    format!("run {id} has no record yet (it has not ended)"),
                ),
                Ok(None) => fail(StatusCode::NOT_FOUND, format!("no run {id}")),
                Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
            }
        }
        ["compare"] => {
            let id = |k: &str| query_param(query, k).and_then(|v| v.trim().parse::<i64>().ok());
            let (Some(a), Some(b)) = (id("before"), id("after")) else {
                return fail(
                    StatusCode::BAD_REQUEST,
                    "give two execution ids, `before` and `after`".into(),
                );
            };
            let stored =
                |db: &mut dyn Backend, e: i64| db.stored(Some(e)).ok().flatten().map(|s| s.cases);
            match (stored(db, a), stored(db, b)) {
                (Some(x), Some(y)) => {
                    let c = crate::check::compare::compare(&x, &y, 0.05);
                    html_response(StatusCode::OK, pages::comparison(&c, a, b))
                }
                _ => fail(StatusCode::NOT_FOUND, format!("no execution {a} or {b}")),
            }
        }
        _ => fail(
            StatusCode::NOT_FOUND,
            format!("nothing at /{}", parts.join("/")),
        ),
    }
}

/// A URL path segment with its `%HH` escapes decoded.
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn html_response(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

fn json_response(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    response
}
