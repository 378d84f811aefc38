//! Regexes and JSONPaths, compiled once per distinct text, so a large suite loads fast
//! and a bad one is a load error on its line.

use crate::case::JsonPath;
use crate::errors::FieldError;
use crate::source::fields::{join, opt_str};
use jsonpath_rust::parser::model::JpQuery;
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Suites repeat the same patterns and paths on many lines; compiling each once keeps
/// loading a large suite fast (a compiled `Regex` clones cheaply, the path is shared).
pub(super) fn cached<T: Clone>(
    cache: &'static OnceLock<Mutex<HashMap<String, T>>>,
    key: &str,
    make: impl FnOnce() -> Result<T, FieldError>,
) -> Result<T, FieldError> {
    const MAX_ENTRIES: usize = 4096;
    let map = cache.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = map.lock().unwrap_or_else(|e| e.into_inner()).get(key) {
        return Ok(hit.clone());
    }
    let made = make()?;
    let mut m = map.lock().unwrap_or_else(|e| e.into_inner());
    if m.len() < MAX_ENTRIES {
        m.insert(key.to_string(), made.clone());
    }
    Ok(made)
}

pub(crate) fn compile_regex(pattern: &str, path: &str) -> Result<Regex, FieldError> {
    static CACHE: OnceLock<Mutex<HashMap<String, Regex>>> = OnceLock::new();
    cached(&CACHE, pattern, || new_regex(pattern, path))
}

pub(super) fn new_regex(pattern: &str, path: &str) -> Result<Regex, FieldError> {
    Regex::new(pattern).map_err(|e| {
        let detail = e.to_string();
        let last = detail.lines().last().unwrap_or("").trim();
        let last = last.strip_prefix("error: ").unwrap_or(last).to_string();
        FieldError::new(path, format!("invalid regex \"{pattern}\": {last}"))
    })
}

pub(super) fn compile_path(
    obj: &Map<String, Value>,
    path: &str,
) -> Result<Option<JsonPath>, FieldError> {
    let Some(raw) = opt_str(obj, "path", path)? else {
        return Ok(None);
    };
    Ok(Some(compile_json_path(&raw, &join(path, "path"))?))
}

/// Compiles a JSONPath, accepting Yao's shorthand without `$` (`result.count`, `items[0].name`).
pub(crate) fn compile_json_path(raw: &str, path: &str) -> Result<JsonPath, FieldError> {
    let text = raw.trim();
    let (normalised, added) = if text.starts_with('$') {
        (text.to_string(), 0)
    } else if text.starts_with('[') {
        (format!("${text}"), 1)
    } else {
        (format!("$.{text}"), 2)
    };
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<JpQuery>>>> = OnceLock::new();
    let query = cached(&CACHE, &normalised, || {
        parse_path(&normalised, raw, added, path)
    })?;
    Ok(JsonPath {
        text: raw.to_string(),
        query,
    })
}

pub(super) fn parse_path(
    normalised: &str,
    raw: &str,
    added: usize,
    path: &str,
) -> Result<Arc<JpQuery>, FieldError> {
    let query = jsonpath_rust::parser::parse_json_path(normalised).map_err(|e| {
        // pest reports `--> 1:COL`; the column is all a user needs from it.
        let msg = e.to_string();
        let at = msg
            .split("-->")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.rsplit(':').next())
            .and_then(|c| c.parse::<usize>().ok())
            .map(|c| format!(" (parse error at character {})", c.saturating_sub(added).max(1)))
            .unwrap_or_default();
        FieldError::new(
            path,
            format!("invalid JSONPath \"{raw}\"{at}; write an RFC 9535 path such as \"$.items[0].name\""),
        )
    })?;
    Ok(Arc::new(query))
}
