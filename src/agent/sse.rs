//! `text/event-stream` answers: a small parser of the SSE wire format (the WHATWG
//! "event stream interpretation", minus `id`/`retry`, which a one-shot answer has no use
//! for), and the OpenAI `chat.completion.chunk` deltas joined into one reply.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::protocol::{Reply, ToolCall, Usage};

/// One event: its `event:` name (empty when none) and its `data:` lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) event: String,
    pub(crate) data: String,
}

/// Splits a byte stream into events, fed chunk by chunk as they arrive.
#[derive(Default)]
pub(crate) struct Parser {
    /// The bytes of an unfinished line.
    line: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
}

impl Parser {
    /// The events that `chunk` completes.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<Event> {
        let mut events = Vec::new();
        for &b in chunk {
            if b == b'\n' {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if let Some(e) = self.line_done(&String::from_utf8_lossy(&line)) {
                    events.push(e);
                }
            } else {
                self.line.push(b);
            }
        }
        events
    }

    /// The last event, when the stream ended without the blank line after it.
    pub(crate) fn finish(&mut self) -> Option<Event> {
        let line = std::mem::take(&mut self.line);
        let last = (!line.is_empty())
            .then(|| self.line_done(String::from_utf8_lossy(&line).trim_end_matches('\r')))
            .flatten();
        last.or_else(|| self.line_done(""))
    }

    fn line_done(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            if !self.has_data {
                self.event.clear();
                return None;
            }
            self.has_data = false;
            let mut data = std::mem::take(&mut self.data);
            data.pop(); // the `\n` after the last data line
            return Some(Event {
                event: std::mem::take(&mut self.event),
                data,
            });
        }
        if line.starts_with(':') {
            return None; // a comment (keep-alive)
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "event" => self.event = value.to_string(),
            _ => {}
        }
        None
    }
}

/// An OpenAI chat stream's deltas, joined.
#[derive(Default)]
pub(crate) struct ChatStream {
    content: String,
    /// Tool-call fragments by their `index`: name, arguments.
    calls: BTreeMap<u64, (String, String)>,
    usage: Option<Usage>,
    truncated: bool,
    /// Whether any chunk had `choices`: a stream without is no chat completion.
    chunks: bool,
}

impl ChatStream {
    /// Adds one `chat.completion.chunk`.
    pub(crate) fn add(&mut self, chunk: &Value) {
        if let Some(usage) = super::wire::chat_usage(&chunk["usage"]) {
            self.usage = Some(usage);
        }
        let Some(choices) = chunk["choices"].as_array() else {
            return;
        };
        self.chunks = true;
        let Some(choice) = choices.first() else {
            return; // the final usage chunk has no choices
        };
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str() {
            self.content.push_str(text);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap_or(0);
            let (name, arguments) = self.calls.entry(index).or_default();
            if let Some(n) = call["function"]["name"].as_str() {
                name.push_str(n);
            }
            if let Some(a) = call["function"]["arguments"].as_str() {
                arguments.push_str(a);
            }
        }
        if choice["finish_reason"] == "length" {
            self.truncated = true;
        }
    }

    /// The reply, or `None` when no event was a `chat.completion.chunk`.
    pub(crate) fn finish(self) -> Option<Reply> {
        if !self.chunks {
            return None;
        }
        Some(Reply {
            content: Value::String(self.content),
            tool_calls: self
                .calls
                .into_values()
                .map(|(name, arguments)| ToolCall::new(name, Value::String(arguments)))
                .collect(),
            usage: self.usage,
            truncated: self.truncated.then_some(true),
            ..Reply::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> Event {
        Event {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_split_across_chunks_and_line_endings() {
        let mut p = Parser::default();
        assert_eq!(p.push(b"data: {\"a\""), vec![]);
        assert_eq!(
            p.push(b": 1}\r\n\r\n: keep-alive\n\nevent: x\ndata: one\ndata:two\n"),
            vec![ev("", "{\"a\": 1}")]
        );
        assert_eq!(p.push(b"\n"), vec![ev("x", "one\ntwo")]);
        assert_eq!(p.push(b"data: [DONE]"), vec![]);
        assert_eq!(p.finish(), Some(ev("", "[DONE]")));
        assert_eq!(p.finish(), None);
    }
}
