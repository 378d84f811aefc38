//! A YAML document as a tree of located values: every value and every mapping key
//! keeps its `line:column`, so that a check on the parsed scenario can point at the
//! place in the file, as JSONL errors do.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use serde_saphyr::Spanned;

/// Where a value is in its file (1-based; 0 when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Pos {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

/// A YAML value with its position, and its children's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) pos: Pos,
    pub(crate) kind: Kind,
}

/// What a [`Node`] holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Seq(Vec<Node>),
    /// Keys in file order, each with its own position.
    Map(Vec<(String, Pos, Node)>),
}

impl Node {
    /// The value as JSON (keys in file order).
    pub(crate) fn to_json(&self) -> Value {
        match &self.kind {
            Kind::Null => Value::Null,
            Kind::Bool(b) => Value::Bool(*b),
            Kind::Number(n) => Value::Number(n.clone()),
            Kind::String(s) => Value::String(s.clone()),
            Kind::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Kind::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, _, v)| (k.clone(), v.to_json()))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }

    /// The entry `key` of a mapping: its key's position and its value.
    #[cfg(test)]
    pub(crate) fn get(&self, key: &str) -> Option<(Pos, &Node)> {
        match &self.kind {
            Kind::Map(entries) => entries
                .iter()
                .find(|(k, _, _)| k == key)
                .map(|(_, p, v)| (*p, v)),
            _ => None,
        }
    }

    /// Where the field `path` (`run[0].evaluations[1].value`) is: the key of a mapping
    /// entry, the value of a list item. When the path goes further than the document,
    /// the deepest part that exists.
    pub(crate) fn locate(&self, path: &str) -> Pos {
        use crate::source::{path_steps as steps, PathStep as Step};
        let mut node = self;
        let mut at = self.pos;
        for step in steps(path) {
            let next = match (step, &node.kind) {
                (Step::Key(k), Kind::Map(entries)) => entries
                    .iter()
                    .find(|(key, _, _)| key == k)
                    .map(|(_, p, v)| (*p, v)),
                (Step::Index(i), Kind::Seq(items)) => items.get(i).map(|v| (v.pos, v)),
                _ => None,
            };
            match next {
                Some((p, v)) => {
                    at = p;
                    node = v;
                }
                None => break,
            }
        }
        at
    }
}

fn pos_of(l: serde_saphyr::Location) -> Pos {
    Pos {
        line: l.line() as usize,
        column: l.column() as usize,
    }
}

/// A node whose position the deserializer fills in (through `Spanned`).
struct Bare(Kind);

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        let s = Spanned::<Bare>::deserialize(d)?;
        Ok(Node {
            pos: pos_of(s.referenced),
            kind: s.value.0,
        })
    }
}

impl<'de> Deserialize<'de> for Bare {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bare, D::Error> {
        d.deserialize_any(KindVisitor).map(Bare)
    }
}

struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = Kind;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }

    fn visit_none<E>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Kind, D::Error> {
        d.deserialize_any(KindVisitor)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Kind, E> {
        Ok(Kind::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Kind, E> {
        Ok(Kind::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Kind, E> {
        Ok(Kind::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Kind, E> {
        Number::from_f64(v)
            .map(Kind::Number)
            .ok_or_else(|| E::custom(format!("the number {v} has no JSON form (NaN or infinite)")))
    }

    fn visit_str<E>(self, v: &str) -> Result<Kind, E> {
        Ok(Kind::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Kind, E> {
        Ok(Kind::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kind, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Kind::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind, A::Error> {
        let mut entries: Vec<(String, Pos, Node)> = Vec::new();
        while let Some(key) = map.next_key::<Spanned<KeyText>>()? {
            // Duplicate keys are the parser's error (`DuplicateKeyPolicy::Error`).
            let value = map.next_value::<Node>()?;
            entries.push((key.value.0, pos_of(key.referenced), value));
        }
        Ok(Kind::Map(entries))
    }
}

/// A mapping key: scalars are read as their text (YAML allows `1: x` or `true: x`).
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KeyText, D::Error> {
        let kind = d.deserialize_any(KindVisitor)?;
        match kind {
            Kind::String(s) => Ok(KeyText(s)),
            Kind::Number(n) => Ok(KeyText(n.to_string())),
            Kind::Bool(b) => Ok(KeyText(b.to_string())),
            Kind::Null => Ok(KeyText("null".into())),
            _ => Err(de::Error::custom(
                "a mapping key must be a plain value, not a list or mapping",
            )),
        }
    }
}

/// Parses one YAML document. The error is the parser's message and position, or for
/// what the parser words for programmers (a second document, a breached budget), what
/// is wrong with the file.
///
/// Scalars follow YAML 1.2's core schema, as js-yaml (ElizaOS's parser) does: `yes`,
/// `no`, `on`, `off`, `y` and `n` are strings, not booleans. The parser's default
/// budget bounds what a hostile file (alias bombs, huge documents) can cost.
pub(crate) fn parse(text: &str) -> Result<Node, (String, Pos)> {
    let options = serde_saphyr::options! {
        strict_booleans: true,
        with_snippet: false,
    };
    serde_saphyr::from_str_with_options::<Node>(text, options).map_err(|e| {
        let pos = e
            .location()
            .map(pos_of)
            .unwrap_or(Pos { line: 1, column: 1 });
        if let Some(said) = in_file_terms(e.without_snippet(), text, pos) {
            return said;
        }
        let message = e.without_snippet().to_string();
        // The position is said apart; the advice meant for programmers is dropped.
        let message = message
            .split(" at line ")
            .next()
            .unwrap_or_default()
            .replace(
                ", set DuplicateKeyPolicy in Options if acceptable",
                "; keep one",
            );
        (message, pos)
    })
}

/// The parser's limits, as its default budget sets them (said in messages).
const MAX_DEPTH: usize = 64;
const MAX_NODES: &str = "250,000";

/// What is wrong with the file, for the parser errors whose own words are for the
/// programmer calling it (a second document, a breached budget, a byte-order mark);
/// `None` for the others.
fn in_file_terms(e: &serde_saphyr::Error, text: &str, pos: Pos) -> Option<(String, Pos)> {
    use serde_saphyr::budget::BudgetBreach as B;
    let line = pos.line;
    let nested = || {
        format!("lists and mappings nested deeper than {MAX_DEPTH} levels at line {line}; a scenario needs a few")
    };
    let line_text = text.lines().nth(line.max(1) - 1).unwrap_or_default();
    let byte = line_text
        .char_indices()
        .nth(pos.column.max(1) - 1)
        .map_or(line_text.len(), |(b, _)| b);
    if let Some((message, column)) = crate::source::bom::stray_bom(line_text, line, byte) {
        return Some((message, Pos { line, column }));
    }
    // An error met while replaying an alias is wrapped in where the alias is.
    let mut e = e;
    while let serde_saphyr::Error::AliasError { error, .. }
    | serde_saphyr::Error::WithSnippet { error, .. } = e
    {
        e = error;
    }
    let message = match e {
        serde_saphyr::Error::MultipleDocuments { .. } => {
            // The error is at the second document's content; the `---` is above it.
            let marker = text
                .lines()
                .take(line)
                .enumerate()
                .filter(|(_, l)| l.starts_with("---"))
                .last()
                .map_or(line, |(i, _)| i + 1);
            return Some((
                format!("the file holds a second YAML document (`---` at line {marker}); a scenario file holds one: remove the `---` and what follows, or move the second scenario to a file of its own"),
                Pos { line: marker, column: 1 },
            ));
        }
        serde_saphyr::Error::Budget { breach, .. } => match breach {
            B::Depth { .. } => nested(),
            B::Nodes { .. } | B::Aliases { .. } | B::AliasAnchorRatio { .. } => format!(
                "aliases (`*name`) expand to more than {MAX_NODES} nodes (a YAML alias bomb?); a scenario needs far fewer: write the values out, or repeat an alias less"
            ),
            other => format!("the file is beyond what a scenario file may hold ({other:?}); a scenario needs far less"),
        },
        // The scanner's own limit on `[[[…` and `{{{…` (deeper than the budget's).
        other if other.to_string().starts_with("recursion limit exceeded") => nested(),
        _ => return None,
    };
    Some((message, pos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_keys_keep_their_positions() {
        let text = "name: 'x'\nrun:\n  - input: hi\n    n: 3\n  - code: |\n      echo a\n";
        let node = parse(text).unwrap();
        let (pos, name) = node.get("name").unwrap();
        assert_eq!(pos, Pos { line: 1, column: 1 });
        assert_eq!(name.pos, Pos { line: 1, column: 7 });
        let (_, run) = node.get("run").unwrap();
        let Kind::Seq(steps) = &run.kind else {
            panic!("{run:?}")
        };
        let (key, n) = steps[0]
            .get("n")
            .unwrap_or_else(|| panic!("{:#?}", steps[0]));
        assert_eq!(key, Pos { line: 4, column: 5 });
        assert_eq!(n.to_json(), serde_json::json!(3));
        assert_eq!(
            steps[1].get("code").unwrap().1.to_json(),
            serde_json::json!("echo a\n")
        );
        assert_eq!(
            node.to_json(),
            serde_json::json!({"name": "x", "run": [{"input": "hi", "n": 3}, {"code": "echo a\n"}]})
        );
    }

    #[test]
    fn paths_are_located() {
        let node =
            parse("name: x\nrun:\n  - input: hi\n    evaluations:\n      - type: a\n").unwrap();
        assert_eq!(
            node.locate("run[0].evaluations[0].type"),
            Pos { line: 5, column: 9 }
        );
        assert_eq!(
            node.locate("run[0].evaluations[0]"),
            Pos { line: 5, column: 9 }
        );
        assert_eq!(node.locate("run[0].input"), Pos { line: 3, column: 5 });
        // Beyond the document: the deepest part that is there.
        assert_eq!(
            node.locate("run[0].evaluations[3].value"),
            Pos { line: 4, column: 5 }
        );
        assert_eq!(node.locate("judgment"), node.pos);
    }

    #[test]
    fn errors_are_located() {
        let (message, pos) = parse("name: x\nrun: [a, b\n").unwrap_err();
        assert!(pos.line >= 2, "{message} at {pos:?}");
        let (message, pos) = parse("a: 1\na: 2\n").unwrap_err();
        assert_eq!(message, "duplicate mapping key: a; keep one");
        assert_eq!(pos, Pos { line: 2, column: 1 });
        // YAML 1.2 core: `n` and `yes` are strings.
        let node = parse("n: yes\n").unwrap();
        assert_eq!(node.to_json(), serde_json::json!({"n": "yes"}));
    }
}
