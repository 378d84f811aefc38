//! Finding where a field path (`turns[1].assertions[0].type`) sits in a JSON line, so
//! errors point at the right key even when the same key name appears many times.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One step of a field path.
#[derive(Debug, PartialEq)]
pub(crate) enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The steps of a field path: `turns[1].type` is `turns`, 1, `type`.
pub(crate) fn steps(path: &str) -> Vec<Step<'_>> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            out.push(Step::Key(key));
        }
        while let Some(end) = rest.find(']') {
            if let Ok(i) = rest[1..end].parse() {
                out.push(Step::Index(i));
            }
            rest = &rest[end + 1..];
        }
    }
    out
}

/// The 1-based character column of the field `path` in `line`: the key for an object
/// member, the value for an array element. When the path ends in a key that is absent,
/// the deepest part that exists is used; 1 when nothing matches.
pub(crate) fn column_of_path(line: &str, path: &str) -> usize {
    column_in_line(line, path, false)
}

/// The 1-based character column of the second member named by the last key of `path`
/// (a repeated key), reached through the first member of every key above it; where
/// [`column_of_path`] would point when there is no second one.
pub(crate) fn column_of_duplicate(line: &str, path: &str) -> usize {
    column_in_line(line, path, true)
}

fn column_in_line(line: &str, path: &str, second: bool) -> usize {
    let bytes = line.as_bytes();
    match find(bytes, &steps(path), second, |at| {
        Arc::new(members(bytes, at))
    }) {
        Some(b) => line.get(..b).map(|s| s.chars().count() + 1).unwrap_or(1),
        None => 1,
    }
}

/// The 1-based line and character column of byte `at` in `text`, counted from its
/// start: for one position; [`Indexed`] answers many.
pub(crate) fn position_of_offset(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// Bytes per entry of [`Indexed`]'s character counts: a column costs at most this many
/// bytes counted past the nearest entry.
const BLOCK: usize = 256;

/// A JSON document over many lines, indexed so that locating one of its fields costs
/// about the size of the containers on the way, not the size of the file: every record
/// of a file is located (each case's `file:line:column`), and a rescan from the start
/// per record made a 20,000-task file take minutes.
///
/// The index is made in one pass: where each line starts and how many characters
/// come before every [`BLOCK`]th byte; the members of each container a path goes
/// through are listed once, when first needed.
pub(crate) struct Indexed {
    text: String,
    /// The byte offset of each line's start.
    lines: Vec<usize>,
    /// `chars[k]`: the characters before byte `k * BLOCK`.
    chars: Vec<usize>,
    /// The members of the containers located so far, by the container's offset.
    members: Mutex<HashMap<usize, Arc<Vec<Member>>>>,
}

impl Indexed {
    pub(crate) fn new(text: String) -> Indexed {
        let mut lines = vec![0];
        let mut chars = Vec::with_capacity(text.len() / BLOCK + 1);
        let mut count = 0;
        for (i, &b) in text.as_bytes().iter().enumerate() {
            if i % BLOCK == 0 {
                chars.push(count);
            }
            if b == b'\n' {
                lines.push(i + 1);
            }
            if !is_continuation(b) {
                count += 1;
            }
        }
        Indexed {
            text,
            lines,
            chars,
            members: Mutex::new(HashMap::new()),
        }
    }

    /// The 1-based line and character column of byte `at` (the end of the text when
    /// past it).
    pub(crate) fn position(&self, at: usize) -> (usize, usize) {
        let at = at.min(self.text.len());
        let line = self.lines.partition_point(|&start| start <= at);
        let start = self.lines[line - 1];
        (line, self.chars_before(at) - self.chars_before(start) + 1)
    }

    fn chars_before(&self, at: usize) -> usize {
        let block = at / BLOCK;
        let Some(&base) = self.chars.get(block) else {
            // Only the end of the text lies past the last entry.
            return self.chars.last().copied().unwrap_or(0)
                + count_chars(&self.text.as_bytes()[(self.chars.len().max(1) - 1) * BLOCK..]);
        };
        base + count_chars(&self.text.as_bytes()[block * BLOCK..at])
    }

    /// The 1-based line and character column of the field `path` (as [`column_of_path`]
    /// finds it in a line); `second`: of a repeated key's second member (as
    /// [`column_of_duplicate`]). The document's first value when nothing matches.
    pub(crate) fn position_of_path(&self, path: &str, second: bool) -> (usize, usize) {
        let bytes = self.text.as_bytes();
        let found = find(bytes, &steps(path), second, |at| self.members_at(at));
        self.position(found.unwrap_or_else(|| skip_ws(bytes, 0)))
    }

    fn members_at(&self, at: usize) -> Arc<Vec<Member>> {
        let mut cache = self
            .members
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .entry(at)
            .or_insert_with(|| Arc::new(members(self.text.as_bytes(), at)))
            .clone()
    }
}

/// Whether `b` continues a UTF-8 character (rather than starting one).
fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

fn count_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| !is_continuation(b)).count()
}

/// One member of an object or array.
struct Member {
    /// The raw key between its quotes (escapes as written); none in an array.
    key: Option<(usize, usize)>,
    /// Where the member is shown: its key's opening quote, or an element's value.
    at: usize,
    /// Its value.
    value: usize,
}

/// The members of the object or array starting at `i` (none for any other value): one
/// scan of it, stopping where the text stops making sense.
fn members(b: &[u8], i: usize) -> Vec<Member> {
    let mut out = Vec::new();
    match b.get(i) {
        Some(b'{') => {
            let mut j = skip_ws(b, i + 1);
            while b.get(j) == Some(&b'"') {
                let key_end = skip_string(b, j);
                let key = (j + 1, key_end.saturating_sub(1).max(j + 1));
                let colon = skip_ws(b, key_end);
                if b.get(colon) != Some(&b':') {
                    break;
                }
                let value = skip_ws(b, colon + 1);
                out.push(Member {
                    key: Some(key),
                    at: j,
                    value,
                });
                j = skip_ws(b, skip_value(b, value));
                if b.get(j) != Some(&b',') {
                    break;
                }
                j = skip_ws(b, j + 1);
            }
        }
        Some(b'[') => {
            let mut j = skip_ws(b, i + 1);
            while j < b.len() && b[j] != b']' {
                out.push(Member {
                    key: None,
                    at: j,
                    value: j,
                });
                let end = skip_value(b, j);
                j = skip_ws(b, end);
                if b.get(j) == Some(&b',') {
                    j = skip_ws(b, j + 1);
                } else if end == j && !matches!(b.get(j), Some(b']') | None) {
                    // Neither a separator nor the end, and nothing skipped: torn text.
                    break;
                }
            }
        }
        _ => {}
    }
    out
}

/// The byte offset of the deepest part of `path` found in `b` (see [`column_of_path`]),
/// the members of each container on the way given by `members_at`.
fn find<M: std::ops::Deref<Target = Vec<Member>>>(
    b: &[u8],
    path: &[Step<'_>],
    second: bool,
    members_at: impl Fn(usize) -> M,
) -> Option<usize> {
    let mut best = None;
    let mut at = skip_ws(b, 0);
    for (n, step) in path.iter().enumerate() {
        let members = members_at(at);
        let found = match (step, b.get(at)) {
            (Step::Key(key), Some(b'{')) => {
                let mut named = members
                    .iter()
                    .filter(|m| m.key.is_some_and(|(s, e)| same_key(&b[s..e], key)));
                let first = named.next();
                // The parser rejects repeated keys, so but for the one reported, the
                // first member with a name is the only one.
                if second && n + 1 == path.len() {
                    named.next().or(first)
                } else {
                    first
                }
            }
            (Step::Index(i), Some(b'[')) => members.get(*i),
            _ => None,
        };
        let Some(member) = found else { break };
        best = Some(member.at);
        at = member.value;
    }
    best
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The end of the string starting at `i` (on its opening quote), past the closing quote.
fn skip_string(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of the value starting at `i`.
fn skip_value(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => skip_string(b, i),
        Some(b'{') | Some(b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            b.len()
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !b[j].is_ascii_whitespace()
            {
                j += 1;
            }
            j
        }
    }
}

/// Whether the raw key between quotes (`name`, escapes as written) means `key`.
fn same_key(name: &[u8], key: &str) -> bool {
    if !name.contains(&b'\\') {
        return name == key.as_bytes();
    }
    let mut quoted = Vec::with_capacity(name.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(name);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted).is_ok_and(|k| k == key)
}

#[cfg(test)]
mod tests {
    use super::column_of_path;

    #[test]
    fn follows_the_path_not_the_first_key_of_that_name() {
        let line = r#"{"id":"a","assertions":[{"type":"contains","value":"x"},{"type":"contians","value":"y"}]}"#;
        assert_eq!(column_of_path(line, "assertions[1].type"), 58);
        assert_eq!(column_of_path(line, "assertions[0].type"), 26);
        assert_eq!(column_of_path(line, "id"), 2);
        assert_eq!(column_of_path(line, "assertions[1].missing"), 57);
        assert_eq!(column_of_path(line, "nothing"), 1);
        let line = r#"{"id":"a","turns":[{"input":"y"}],"input":"x"}"#;
        assert_eq!(column_of_path(line, "input"), 35);
        let line = r#"{"id": "é", "tags": ["a", 3]}"#;
        assert_eq!(column_of_path(line, "tags[1]"), 27);
    }

    #[test]
    fn finds_fields_in_a_document_over_many_lines() {
        let text = super::Indexed::new(
            "[\n  {\n    \"id\": \"a\",\n    \"name\": \"é\", \"x\": 1\n  },\n  {\"name\": 2}\n]\n"
                .into(),
        );
        let position_of_path = |path, second| text.position_of_path(path, second);
        assert_eq!(position_of_path("[0].name", false), (4, 5));
        assert_eq!(position_of_path("[0].x", false), (4, 18));
        assert_eq!(position_of_path("[1].name", false), (6, 4));
        assert_eq!(position_of_path("[1]", false), (6, 3));
        assert_eq!(position_of_path("[7].name", false), (1, 1));
    }

    #[test]
    fn finds_the_second_of_a_repeated_key() {
        use super::column_of_duplicate;
        let line = r#"{"a":{"k":1},"b":[{"k":1,"k":2}],"k":3,"k":4}"#;
        assert_eq!(column_of_duplicate(line, "b[0].k"), 26);
        assert_eq!(column_of_duplicate(line, "k"), 40);
        // An escaped spelling of the same key is the same key.
        let line = r#"{"id":"x","i\u0064":"y"}"#;
        assert_eq!(column_of_duplicate(line, "id"), 11);
        // The parent is the first member with its name.
        let line = r#"{"t":{"x":1,"x":2},"t":{"x":3,"x":4}}"#;
        assert_eq!(column_of_duplicate(line, "t.x"), 13);
    }

    #[test]
    fn the_index_answers_every_position_as_counting_from_the_start_does() {
        use super::{position_of_offset, Indexed, BLOCK};
        // Characters of 1 to 4 bytes, lines shorter and longer than a block, empty
        // lines, CRLF, and a last line without its newline.
        let mut text = String::new();
        for i in 0..40 {
            let word = ["a", "é", "€", "😀", "\r"][i % 5];
            text.push_str(&word.repeat(i * 17 % (3 * BLOCK)));
            text.push('\n');
            if i % 7 == 0 {
                text.push('\n');
            }
        }
        text.push_str("last é");
        let index = Indexed::new(text.clone());
        let mut checked = 0;
        for at in (0..=text.len()).filter(|&at| text.is_char_boundary(at)) {
            assert_eq!(
                index.position(at),
                position_of_offset(&text, at),
                "byte {at}"
            );
            checked += 1;
        }
        assert!(checked > 10_000, "{checked}");
        assert_eq!(
            index.position(text.len() + 5),
            position_of_offset(&text, text.len())
        );
        assert_eq!(Indexed::new(String::new()).position(0), (1, 1));
    }

    #[test]
    fn a_torn_document_is_located_as_far_as_it_goes() {
        use super::Indexed;
        for text in [
            "[1 2}",
            "{\"a\": [1, }",
            "[",
            "{\"a\"",
            "[\"\\",
            "{\"a\": 1 \"b\": 2}",
        ] {
            let index = Indexed::new(text.into());
            for path in ["[0]", "[1]", "[5].a", "a", "a[1]", "b"] {
                let (line, column) = index.position_of_path(path, false);
                assert!(
                    line == 1 && column <= text.chars().count() + 1,
                    "{text} {path}"
                );
            }
        }
    }
}
