//! The viewer's server: the hyper the trace receiver already uses, on loopback unless
//! told otherwise, over a store opened read only (never created, migrated or written).
//! It checks every request's token (when there is one) and its method, then hands it to
//! [`super::routes`] off the runtime's threads (the store's calls block).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, COOKIE, SET_COOKIE};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::json;

use super::query::Query;
use super::routes::{self, Reply};
use crate::record::store::{self, Backend};

#[derive(clap::Args)]
pub(in crate::cli) struct ViewArgs {
    /// The store (default: as `agentest test` finds it from the current folder).
    // Read as text and parsed later: clap's own error would print a URL's password.
    #[arg(long)]
    store: Option<String>,
    /// Where to listen (default 127.0.0.1:0, a free port on loopback). Another address
    /// than loopback needs --token.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// A secret every request must carry (`Authorization: Bearer TOKEN`, or `?token=`,
    /// which a browser then keeps in a cookie).
    #[arg(long)]
    token: Option<String>,
    /// Open the viewer in the desktop's browser once it listens.
    #[arg(long)]
    open: bool,
}

/// Runs `agentest view` until stopped.
pub(in crate::cli) fn view(args: ViewArgs) -> Result<ExitCode, String> {
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
    let address = super::super::locate::existing_store(super::super::locate::parse_store(
        args.store.as_deref(),
    )?)?;
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
        let url = format!("http://{bound}/");
        println!("{url}");
        eprintln!("agentest view: serving {address} read only; Ctrl-C stops it");
        if args.open {
            open_browser(&url);
        }
        serve(listener, state).await;
        Ok::<_, String>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Opens `url` with the desktop's opener (`xdg-open`, `open` on macOS, `start` on
/// Windows); when there is none, says so on stderr: the URL is printed anyway.
fn open_browser(url: &str) {
    let mut opener = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = std::process::Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    let started = opener
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match started {
        // Reaped on a thread of its own: the opener returns once the browser has it.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => eprintln!(
            "agentest view: could not open a browser ({:?}: {e}); open {url} yourself",
            opener.get_program()
        ),
    }
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

async fn answer(
    state: &Arc<State>,
    request: Request<hyper::body::Incoming>,
) -> Response<Full<Bytes>> {
    let query = Query::parse(request.uri().query().unwrap_or(""));
    // A browser given `?token=` once keeps it in a cookie, so that the pages' links
    // (which do not carry it) work.
    let mut remember = None;
    if let Some(token) = &state.token {
        let headers = request.headers();
        let bearer = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let cookie = headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .find_map(|c| c.trim().strip_prefix(TOKEN_COOKIE)?.strip_prefix('='));
        let in_query = query.get("token");
        let given = bearer.or(cookie).or(in_query);
        if !given.is_some_and(|g| same_token(g, token)) {
            return response(Reply::Json(
                StatusCode::UNAUTHORIZED,
                json!({"error": "this viewer needs its token: Authorization: Bearer TOKEN, or ?token=TOKEN"}),
            ));
        }
        if bearer.is_none() && cookie.is_none() {
            remember =
                in_query.map(|t| format!("{TOKEN_COOKIE}={t}; Path=/; HttpOnly; SameSite=Strict"));
        }
    }
    if request.method() != Method::GET {
        return response(Reply::Json(
            StatusCode::METHOD_NOT_ALLOWED,
            json!({"error": "the viewer is read only: GET only"}),
        ));
    }
    let path = request.uri().path().to_string();
    let state = Arc::clone(state);
    let reply = tokio::task::spawn_blocking(move || {
        let mut db = state.db.lock().unwrap_or_else(|e| e.into_inner());
        routes::route(db.as_mut(), &path, &query)
    })
    .await
    .unwrap_or_else(|e| {
        Reply::Json(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": format!("the request failed: {e}")}),
        )
    });
    let mut answer = response(reply);
    if let Some(cookie) = remember.and_then(|c| HeaderValue::from_str(&c).ok()) {
        answer.headers_mut().insert(SET_COOKIE, cookie);
    }
    answer
}

/// The cookie a browser keeps the token in.
const TOKEN_COOKIE: &str = "agentest_view_token";

fn response(reply: Reply) -> Response<Full<Bytes>> {
    let (status, kind, body) = match reply {
        Reply::Json(status, value) => (
            status,
            "application/json; charset=utf-8",
            Bytes::from(value.to_string()),
        ),
        Reply::Html(status, page) => (status, "text/html; charset=utf-8", Bytes::from(page)),
        Reply::Asset(kind, text) => (StatusCode::OK, kind, Bytes::from_static(text.as_bytes())),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    // The store changes under the viewer: every answer is read afresh.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    response
}
