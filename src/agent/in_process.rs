//! Agents that live in the test binary: the [`Agent`] trait, plain functions and
//! async functions as agents, and catching their panics.

use crate::errors::AgentError;
use crate::protocol::{Reply, Request};
use crate::util::BoxFuture;
use std::future::Future;
use std::pin::Pin;

/// An agent that lives in the test binary: no process, no socket.
///
/// Every request carries the whole conversation in `messages`, so an implementation
/// can be stateless. A plain function or closure `Fn(&Request) -> Result<Reply, String>`
/// is an `Agent` already; an async function becomes one with [`async_agent`], and a type
/// of your own implements the trait.
///
/// # Blocking, timeouts and panics
///
/// A plain function is *blocking* ([`Agent::is_blocking`]): each turn runs on tokio's
/// blocking thread pool, so the case's timeout still fires while it computes (the case
/// ends as `timeout`; the call itself cannot be interrupted and finishes in the
/// background), and a panic becomes an agent error `agent panicked: <message>`.
///
/// An async agent (`is_blocking` false, the default) runs on the async threads: it must
/// not block them (use `tokio::task::spawn_blocking` for heavy work inside), and it can
/// be timed out only at its `.await` points. Its panics are caught too.
pub trait Agent: Send + Sync + 'static {
    /// Answers one turn. `Err` is an agent error (the case's status becomes `error`).
    fn respond<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<Reply, String>>;

    /// Whether [`respond`](Agent::respond) does its work synchronously, before returning
    /// the future; such agents are run on the blocking thread pool. `false` by default;
    /// `true` for plain functions and closures.
    fn is_blocking(&self) -> bool {
        false
    }
}

/// An async function as an [`Agent`], with no boxed future to write:
///
/// ```no_run
/// use agentest::{async_agent, Harness, Reply, Request};
///
/// async fn greeter(req: Request) -> Result<Reply, String> {
///     Ok(Reply::text(format!("Hello, {}!", req.input)))
/// }
///
/// fn main() -> std::process::ExitCode {
///     Harness::new("agent-tests").default_agent(async_agent(greeter)).run()
/// }
/// ```
///
/// The function receives its own copy of the request, so the future it returns may
/// hold it across `.await`s.
pub fn async_agent<F, Fut>(f: F) -> impl Agent
where
    F: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply, String>> + Send + 'static,
{
    AsyncAgent(f)
}

struct AsyncAgent<F>(F);

impl<F, Fut> Agent for AsyncAgent<F>
where
    F: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply, String>> + Send + 'static,
{
    fn respond<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<Reply, String>> {
        Box::pin((self.0)(request.clone()))
    }
}

impl<F> Agent for F
where
    F: Fn(&Request) -> Result<Reply, String> + Send + Sync + 'static,
{
    fn respond<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<Reply, String>> {
        let r = self(request);
        Box::pin(async move { r })
    }

    fn is_blocking(&self) -> bool {
        true
    }
}

/// The agent error for a panic, with its message when it has one.
pub(super) fn panicked(payload: &(dyn std::any::Any + Send)) -> AgentError {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    AgentError::Panicked(message.to_string())
}

/// Polls a future, turning a panic into `Err(payload)`.
pub(super) struct CatchUnwind<F>(pub(super) F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn std::any::Any + Send>>;

    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(std::task::Poll::Ready(v)) => std::task::Poll::Ready(Ok(v)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(payload) => std::task::Poll::Ready(Err(payload)),
        }
    }
}
