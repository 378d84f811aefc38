//! Cassettes: every model call a case makes, recorded to a file beside the suites and
//! replayed on later runs, so CI runs offline, for free, and the same every time.
//!
//! One file per case, `<suites root>/.cassettes/<suite>/<id>.jsonl`, one entry per line
//! in call order: `{"key", "role", "request", "response"}`. Keys are a SHA-256 of the
//! normalised request (object keys sorted), so a request that changes misses its old
//! recording. Files hold no secrets (no headers, no keys), use sorted keys so diffs read
//! well, and are written atomically (temp file, then rename).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::config::CassetteMode;
use crate::errors::LlmError;
use crate::protocol::Role;
use crate::record::CassetteStats;
use crate::util::write_atomically;

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// SHA-256 of the normalised request, hex.
    pub key: String,
    /// Who made the call.
    pub role: Role,
    /// The normalised request.
    pub request: Value,
    /// The response body, without volatile fields.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub response: Value,
    /// The error the endpoint answered instead (a refusal no retry changes), replayed as
    /// that error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Entry {
    /// What the recorded call gave: the response, or the endpoint's refusal.
    pub fn outcome(&self) -> Result<Value, String> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(self.response.clone()),
        }
    }
}

/// A case's cassette.
#[derive(Debug)]
pub struct Cassette {
    path: PathBuf,
    mode: CassetteMode,
    entries: Vec<Entry>,
    used: Vec<bool>,
    fresh: Vec<Entry>,
    replayed: u32,
}

/// Sorts object keys recursively, so equal requests serialise to equal text.
pub fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(
                sorted
                    .into_iter()
                    .map(|(k, v)| (k.clone(), v))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The key of a normalised request.
pub fn key_of(request: &Value) -> String {
    let digest = Sha256::digest(request.to_string().as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The cassette file of a case: `<dir>/.cassettes/<suite>/<id>.jsonl` beside its suite
/// file (`agent-tests/.cassettes/expense/T001.jsonl`), the id made safe for file names by
/// [`crate::util::file_name_for_id`]. It depends only on the file, not on the folder a
/// run started from.
pub(crate) fn path_for(suite_file: &Path, id: &str) -> PathBuf {
    crate::util::beside(
        suite_file,
        |stem| Path::new(".cassettes").join(stem),
        id,
        ".jsonl",
    )
}

impl Cassette {
    /// Opens a case's cassette; a missing file is an empty cassette. A bad line is an
    /// error naming the file and line.
    pub fn open(path: &Path, mode: CassetteMode) -> Result<Cassette, LlmError> {
        let mut entries = Vec::new();
        if mode != CassetteMode::Record && mode != CassetteMode::Off {
            match std::fs::read(path) {
                Ok(bytes) => {
                    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
                        let line = std::str::from_utf8(raw).map_err(|_| {
                            LlmError::Cassette(format!(
                                "{}:{}: the line is not valid UTF-8; delete the file or re-record it with AGENTEST_CASSETTES=record",
                                shown(path),
                                i + 1
                            ))
                        })?;
                        if line.trim().is_empty() {
                            continue;
                        }
                        let entry: Entry = serde_json::from_str(line).map_err(|e| {
                            LlmError::Cassette(format!(
                                "{}:{}: invalid cassette entry ({e}); delete the file or re-record it with AGENTEST_CASSETTES=record",
                                shown(path),
                                i + 1
                            ))
                        })?;
                        // A request whose secrets were masked when it was written keeps
                        // the key of the request as sent, which its text can no longer give.
                        let expected = key_of(&canonical(&entry.request));
                        if entry.key != expected && !crate::util::masks_a_secret(&entry.request) {
                            return Err(LlmError::Cassette(format!(
                                "{}:{}: the entry's key does not match its request (edited by hand?); re-record it with AGENTEST_CASSETTES=record",
                                shown(path),
                                i + 1
                            )));
                        }
                        entries.push(entry);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(LlmError::Cassette(format!(
                        "failed to read cassette {}: {e}",
                        shown(path)
                    )))
                }
            }
        }
        Ok(Cassette {
            path: path.to_path_buf(),
            used: vec![false; entries.len()],
            entries,
            mode,
            fresh: Vec::new(),
            replayed: 0,
        })
    }

    /// The mode.
    pub fn mode(&self) -> CassetteMode {
        self.mode
    }

    /// The file, for messages.
    pub fn shown(&self) -> String {
        shown(&self.path)
    }

    /// The recorded response for a normalised request: the first unused entry with its
    /// key, else the last used one (a conversation may repeat a request). An entry whose
    /// key matches but whose request differs is a hash collision, reported as an error.
    pub fn replay(
        &mut self,
        key: &str,
        request: &Value,
    ) -> Result<Option<Result<Value, String>>, LlmError> {
        let mut last = None;
        for (i, e) in self.entries.iter().enumerate() {
            if e.key != key {
                continue;
            }
            if !same_request(&e.request, request) {
                return Err(LlmError::Cassette(format!(
                    "{}: two different requests share the key {key}; delete the file and record it again",
                    self.shown()
                )));
            }
            if !self.used[i] {
                self.used[i] = true;
                self.replayed += 1;
                return Ok(Some(e.outcome()));
            }
            last = Some(i);
        }
        Ok(last.map(|i| {
            self.replayed += 1;
            self.entries[i].outcome()
        }))
    }

    /// Whether an entry answers `key`, without using it up (see [`Cassette::replay`]).
    pub fn holds(&self, key: &str) -> bool {
        self.entries.iter().any(|e| e.key == key)
    }

    /// Remembers a call to write when the case ends.
    pub fn record(&mut self, entry: Entry) {
        self.fresh.push(entry);
    }

    /// Writes what was recorded (atomically) and returns the case's statistics.
    pub fn finish(self) -> Result<CassetteStats, LlmError> {
        let unused = self.used.iter().filter(|u| !**u).count() as u32;
        let stats = CassetteStats {
            file: self.shown(),
            mode: self.mode.name().into(),
            replayed: self.replayed,
            recorded: self.fresh.len() as u32,
            unused: if self.mode == CassetteMode::Record {
                0
            } else {
                unused
            },
        };
        let write = match self.mode {
            CassetteMode::Off | CassetteMode::Replay | CassetteMode::Strict => false,
            // A run that recorded nothing (no key, endpoint down) keeps the old recording.
            CassetteMode::Record | CassetteMode::Auto => !self.fresh.is_empty(),
        };
        if write {
            let lines: Vec<&Entry> = match self.mode {
                CassetteMode::Record => self.fresh.iter().collect(),
                _ => self.entries.iter().chain(&self.fresh).collect(),
            };
            let mut text = String::new();
            for e in lines {
                let mut v =
                    serde_json::to_value(e).map_err(|e| LlmError::Cassette(e.to_string()))?;
                // A model that echoes a credential (or a conversation that carries one)
                // must not put it in a file that is committed; the key stays that of the
                // request as sent, so the entry still replays.
                crate::util::scrub_json(&mut v);
                let v = canonical(&v);
                text.push_str(&v.to_string());
                text.push('\n');
            }
            write_atomically(&self.path, &text).map_err(|e| {
                LlmError::Cassette(format!(
                    "failed to write cassette {}: {e}",
                    shown(&self.path)
                ))
            })?;
        }
        Ok(stats)
    }
}

/// Whether a recorded request is the one being made: equal, or equal once the secrets
/// masked when it was written are masked in the live one too.
fn same_request(recorded: &Value, live: &Value) -> bool {
    if recorded == live {
        return true;
    }
    if !crate::util::masks_a_secret(recorded) {
        return false;
    }
    let mut live = live.clone();
    crate::util::scrub_json(&mut live);
    &canonical(&live) == recorded
}

fn shown(path: &Path) -> String {
    crate::util::display_path(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_requests_share_a_key_whatever_the_key_order() {
        let a = canonical(&json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}));
        let b = canonical(&json!({"messages": [{"content": "x", "role": "user"}], "model": "m"}));
        assert_eq!(a.to_string(), b.to_string());
        assert_eq!(key_of(&a), key_of(&b));
        assert_eq!(key_of(&a).len(), 32);
    }

    #[test]
    fn paths_are_safe() {
        let p = path_for(Path::new("/r/billing/refunds.jsonl"), "T 1/x");
        assert_eq!(
            p,
            PathBuf::from("/r/billing/.cassettes/refunds/T%201%2Fx.jsonl")
        );
    }

    #[test]
    fn modes_parse_and_reject_unknown_names() {
        assert_eq!(CassetteMode::parse("strict").unwrap(), CassetteMode::Strict);
        assert_eq!(
            CassetteMode::parse(" replays ").unwrap_err(),
            crate::errors::CassetteModeError {
                given: "replays".into()
            }
        );
    }
}
