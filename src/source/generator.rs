//! A generator reference, `agents:NAME?count=10&focus=edge-cases` or `scripts:NAME?…`:
//! what a suite line (`{"generate": …}`) and `-i` name. Apart from generate.rs, which
//! turns a generator's answer into cases, so that a [`crate::source::Loaded`] entry can
//! name the generator it waits for without the entry's file and the generated cases'
//! file importing each other.

use serde_json::{Map, Value};

use crate::errors::GeneratorSpecError;

/// The most cases one generator may be asked for.
pub(crate) const MAX_COUNT: u64 = 10_000;

/// Who generates the cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneratorKind {
    /// `agents:NAME`: an agent of any kind, sent the seed's `GeneratorInput`.
    Agent,
    /// `scripts:NAME`: `[scripts.NAME]` or a generator registered in the harness, given
    /// the parameters as JSON on stdin.
    Script,
}

impl GeneratorKind {
    /// `agents` or `scripts`, as written before the colon.
    pub fn prefix(self) -> &'static str {
        match self {
            GeneratorKind::Agent => "agents",
            GeneratorKind::Script => "scripts",
        }
    }
}

/// A generator reference: `agents:NAME?count=10&focus=edge-cases`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratorSpec {
    /// Agent or script.
    pub kind: GeneratorKind,
    /// The agent's or script's name.
    pub name: String,
    /// The query parameters, in order, percent-decoded.
    pub params: Vec<(String, String)>,
    /// `count`, when given (checked: 1 to [`MAX_COUNT`]).
    pub count: Option<u64>,
}

impl GeneratorSpec {
    /// Reads `text` when it starts with `agents:` or `scripts:`; `None` when it does not
    /// (a path or a message), `Some(Err)` with what is wrong when it does but is malformed.
    pub fn parse(text: &str) -> Option<Result<GeneratorSpec, GeneratorSpecError>> {
        let text = text.trim();
        let (kind, rest) = if let Some(rest) = text.strip_prefix("agents:") {
            (GeneratorKind::Agent, rest)
        } else if let Some(rest) = text.strip_prefix("scripts:") {
            (GeneratorKind::Script, rest)
        } else {
            return None;
        };
        Some(Self::parse_rest(kind, rest))
    }

    fn parse_rest(kind: GeneratorKind, rest: &str) -> Result<GeneratorSpec, GeneratorSpecError> {
        let prefix = kind.prefix();
        let (name, query) = rest.split_once('?').unwrap_or((rest, ""));
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(GeneratorSpecError::Name { prefix });
        }
        let mut params = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (k, v) = (decode(k)?, decode(v)?);
            if k.is_empty() {
                return Err(GeneratorSpecError::Unnamed(pair.to_string()));
            }
            if params.iter().any(|(seen, _)| *seen == k) {
                return Err(GeneratorSpecError::Twice(k));
            }
            params.push((k, v));
        }
        let count = match params.iter().find(|(k, _)| k == "count") {
            None => None,
            Some((_, v)) => match v.parse::<u64>() {
                Ok(n @ 1..=MAX_COUNT) => Some(n),
                _ => {
                    return Err(GeneratorSpecError::Count {
                        given: v.clone(),
                        max: MAX_COUNT,
                    })
                }
            },
        };
        Ok(GeneratorSpec {
            kind,
            name: name.to_string(),
            params,
            count,
        })
    }

    /// `agents:NAME`, for messages.
    pub fn label(&self) -> String {
        format!("{}:{}", self.kind.prefix(), self.name)
    }

    /// The parameters as JSON: `count` as a number, the rest as the strings given.
    pub fn params_json(&self) -> Map<String, Value> {
        self.params
            .iter()
            .map(|(k, v)| {
                let value = match (k.as_str(), self.count) {
                    ("count", Some(n)) => Value::from(n),
                    _ => Value::String(v.clone()),
                };
                (k.clone(), value)
            })
            .collect()
    }
}

/// `%XX` and `+` (a space) decoded, as in a URL's query.
fn decode(s: &str) -> Result<String, GeneratorSpecError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| GeneratorSpecError::Escape(s.to_string()))?;
                out.push(hex);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| GeneratorSpecError::Utf8(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_read_with_their_parameters() {
        let s = GeneratorSpec::parse("agents:workers.test.generator?count=10&focus=edge-cases")
            .expect("a generator")
            .expect("valid");
        assert_eq!(s.kind, GeneratorKind::Agent);
        assert_eq!(s.name, "workers.test.generator");
        assert_eq!(s.count, Some(10));
        assert_eq!(
            Value::Object(s.params_json()),
            serde_json::json!({"count": 10, "focus": "edge-cases"})
        );
        let s = GeneratorSpec::parse("scripts:gen?scenario=approval%20flow&note=a+b")
            .unwrap()
            .unwrap();
        assert_eq!(s.kind, GeneratorKind::Script);
        assert_eq!(
            s.params,
            vec![
                ("scenario".into(), "approval flow".into()),
                ("note".into(), "a b".into())
            ]
        );
        assert!(GeneratorSpec::parse("agent-tests/x.jsonl").is_none());
        assert!(GeneratorSpec::parse("Hello there").is_none());
    }

    #[test]
    fn malformed_references_say_what_to_write() {
        let err = |t: &str| GeneratorSpec::parse(t).unwrap().unwrap_err().to_string();
        assert!(
            err("agents:").contains("needs a name"),
            "{}",
            err("agents:")
        );
        assert!(
            err("agents:g?count=0").contains("`count=0` is not a number of cases from 1 to 10000")
        );
        assert!(err("agents:g?count=ten").contains("`count=ten`"));
        assert!(err("agents:g?a=1&a=2").contains("`a` is given twice"));
        assert!(err("agents:g?x=%zz").contains("two hex digits"));
    }
}
