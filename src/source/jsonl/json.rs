//! Reading one JSON line into a [`Value`] in a single pass, rejecting duplicate keys.
//!
//! `serde_json::from_str::<Value>` keeps the last of two members with the same name, so
//! `{"assertions": [...], "assertions": []}` would silently drop the first list. The
//! seed here builds the same `Value` (insertion-ordered maps, numbers as serde_json
//! makes them) but stops at the first repeated key. The path to it is collected only
//! while the error unwinds, so the happy path does no extra work per key.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

/// Why a line is not a JSON value the case parser can use.
pub(crate) enum LineError {
    /// Not JSON at all (serde_json's error, with its position).
    Syntax(serde_json::Error),
    /// A key that appears twice in one object.
    Duplicate {
        /// The repeated key's path from the root, like `turns[0].assertions`.
        path: String,
        /// The repeated key.
        key: String,
    },
}

/// One step from the repeated key back to the root, recorded while the error unwinds.
enum Step {
    Key(String),
    Index(usize),
}

/// The repeated key and the steps above it, innermost first.
struct Duplicate {
    key: String,
    above: Vec<Step>,
}

type Found = RefCell<Option<Duplicate>>;

/// Parses `line` as one JSON value, rejecting duplicate keys at any depth.
pub(crate) fn parse_line(line: &str) -> Result<Value, LineError> {
    let found: Found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(line);
    let result = ValueSeed { found: &found }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    match result {
        Ok(v) => Ok(v),
        Err(e) => match found.into_inner() {
            Some(d) => {
                let mut path = String::new();
                for step in d.above.iter().rev() {
                    match step {
                        Step::Key(k) => {
                            if !path.is_empty() {
                                path.push('.');
                            }
                            path.push_str(k);
                        }
                        Step::Index(i) => {
                            path.push('[');
                            path.push_str(&i.to_string());
                            path.push(']');
                        }
                    }
                }
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&d.key);
                Err(LineError::Duplicate { path, key: d.key })
            }
            None => Err(LineError::Syntax(e)),
        },
    }
}

#[derive(Clone, Copy)]
struct ValueSeed<'a> {
    found: &'a Found,
}

impl ValueSeed<'_> {
    /// Records `step` on the way out when the error being returned is a duplicate key.
    fn unwind(&self, step: impl FnOnce() -> Step) {
        if let Some(d) = self.found.borrow_mut().as_mut() {
            d.above.push(step());
        }
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            match seq.next_element_seed(self) {
                Ok(Some(v)) => items.push(v),
                Ok(None) => return Ok(Value::Array(items)),
                Err(e) => {
                    let i = items.len();
                    self.unwind(|| Step::Index(i));
                    return Err(e);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut obj = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match obj.entry(key) {
                Entry::Vacant(slot) => match map.next_value_seed(self) {
                    Ok(v) => {
                        slot.insert(v);
                    }
                    Err(e) => {
                        self.unwind(|| Step::Key(slot.key().clone()));
                        return Err(e);
                    }
                },
                Entry::Occupied(slot) => {
                    let key = slot.key().clone();
                    let message = format!("duplicate key `{key}`");
                    *self.found.borrow_mut() = Some(Duplicate {
                        key,
                        above: Vec::new(),
                    });
                    return Err(de::Error::custom(message));
                }
            }
        }
        Ok(Value::Object(obj))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(line: &str) -> String {
        match parse_line(line) {
            Err(LineError::Duplicate { path, .. }) => path,
            Err(LineError::Syntax(e)) => panic!("syntax error for {line}: {e}"),
            Ok(v) => panic!("no error for {line}: {v}"),
        }
    }

    #[test]
    fn builds_what_serde_json_builds() {
        for line in [
            r#"{"b": 1, "a": [1, -2, 3.5, 1e300, "x", null, true, {"z": {}, "y": []}], "c": 18446744073709551615}"#,
            r#"[]"#,
            r#""just a string""#,
            r#"{"é\u00e9": "\ud83d\ude00"}"#,
        ] {
            let ours = parse_line(line).ok().expect("parses");
            let theirs: Value = serde_json::from_str(line).unwrap();
            assert_eq!(ours, theirs);
            assert_eq!(ours.to_string(), theirs.to_string(), "key order");
        }
    }

    #[test]
    fn finds_duplicates_at_any_depth() {
        assert_eq!(dup(r#"{"a": 1, "a": 2}"#), "a");
        assert_eq!(
            dup(r#"{"t": [{"x": 1}, {"y": {"k": 1, "k": 1}}]}"#),
            "t[1].y.k"
        );
        assert_eq!(dup(r#"[[1], [{"a": 1}, {"a": 1, "a": 2}]]"#), "[1][1].a");
        // The same key in sibling objects is fine.
        assert!(parse_line(r#"{"a": {"k": 1}, "b": {"k": 1}}"#).is_ok());
    }

    #[test]
    fn syntax_errors_stay_syntax_errors() {
        assert!(matches!(
            parse_line(r#"{"a": 1,}"#),
            Err(LineError::Syntax(_))
        ));
        assert!(matches!(
            parse_line(r#"{"a": 1} x"#),
            Err(LineError::Syntax(_))
        ));
    }
}
