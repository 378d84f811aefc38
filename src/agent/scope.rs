//! What a case gives the agent sessions it starts.

use std::sync::Arc;

use tokio::time::Instant;

use crate::case::Mock;
use crate::llm::ModelCalls;
use crate::protocol::Role;

/// What a case gives the sessions it starts: its model calls (cassette and counters),
/// its own mocks, the seeded generator's seed, live mode and the deadline.
#[derive(Clone)]
pub(crate) struct CaseScope {
    pub(crate) calls: Arc<ModelCalls>,
    pub(crate) mocks: Vec<Mock>,
    pub(crate) seed: u64,
    pub(crate) salt: String,
    pub(crate) live: bool,
    pub(crate) deadline: Instant,
    /// Whose model calls these are: the agent's, or a simulator's or judge's that
    /// happens to be an `openai` agent.
    pub(crate) role: Role,
    /// Where the case's process agent leaves its trace (stderr, stdout progress), so a
    /// timeout can say what it was doing.
    pub(crate) trace: TraceSlot,
    /// The case's environment folder (an ElizaOS scenario's `local` environment): the
    /// working directory of a process agent whose config sets no `cwd`.
    pub(crate) workdir: Option<std::path::PathBuf>,
    /// The model endpoints the case's source gives (an EvalStudio project's
    /// `llmSettings`), used where `agentest.toml` sets none.
    pub(crate) source_llms: Option<Arc<crate::case::SourceLlms>>,
    /// The tracer, when the agent's spans are read (`traces = true`, `[traces]`).
    pub(crate) tracer: Option<Arc<crate::trace::Tracer>>,
}

/// The case's process agent's trace, once the agent has started.
pub(crate) type TraceSlot = Arc<std::sync::Mutex<Option<Arc<crate::agent::process::Trace>>>>;
