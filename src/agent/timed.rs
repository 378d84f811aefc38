//! When an answer began to arrive: every agent kind says when the first byte of its
//! reply came (or its first token, when it streams), so that a turn's record and the
//! `latency` assertion can tell the wait for the first byte from the whole reply time.

use std::time::Instant;

/// An agent's answer, with when its first byte arrived.
#[derive(Debug)]
pub(crate) struct Timed<T> {
    /// The answer.
    pub(crate) value: T,
    /// When its first byte arrived: an HTTP agent's response head (a streamed answer's
    /// first token), the first byte of a process agent's reply line, the answer of an
    /// `openai` agent's first model call. `None` when the kind cannot tell it apart
    /// from the whole answer (an in-process agent): the whole reply time stands for it.
    pub(crate) first_byte: Option<Instant>,
}

impl<T> Timed<T> {
    /// An answer whose first byte came at `first_byte`.
    pub(crate) fn at(value: T, first_byte: Instant) -> Timed<T> {
        Timed {
            value,
            first_byte: Some(first_byte),
        }
    }

    /// An answer that came whole.
    pub(crate) fn whole(value: T) -> Timed<T> {
        Timed {
            value,
            first_byte: None,
        }
    }
}
