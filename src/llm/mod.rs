//! Talking to models: an OpenAI-compatible chat-completions client with retries and
//! limits, and cassettes that record and replay every call so CI runs offline.

mod calls;
pub mod cassette;
mod client;
mod limiter;
mod request;
mod rng;
mod spend;

pub use calls::ModelCalls;
pub use client::{ChatOutcome, Endpoint};
pub(crate) use limiter::set_parallelism;
pub use request::ChatRequest;
pub use rng::SeededRng;
pub use spend::{Meter, Meters};
