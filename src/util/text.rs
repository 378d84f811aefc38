//! Text for messages: values as text, long texts clipped.

use serde_json::Value;

/// Compact JSON for messages, clipped.
pub(crate) fn compact(v: &Value) -> String {
    clip(&v.to_string())
}

/// Long texts are cut in messages; the report keeps them whole.
pub(crate) fn clip(s: &str) -> String {
    const MAX: usize = 400;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head}… ({} chars)", s.chars().count())
    }
}

/// Text of a JSON value: a string as it is, anything else as compact JSON, null as "".
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The message of a panic caught by `spawn_blocking`.
pub(crate) fn panic_text(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-text panic".into()),
        Err(e) => e.to_string(),
    }
}
