//! Finding where a field path (`turns[1].assertions[0].type`) sits in a JSON line, so
//! errors point at the right key even when the same key name appears many times.

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
    find(line, path, false)
}

/// The 1-based character column of the second member named by the last key of `path`
/// (a repeated key), reached through the first member of every key above it; where
/// [`column_of_path`] would point when there is no second one.
pub(crate) fn column_of_duplicate(line: &str, path: &str) -> usize {
    find(line, path, true)
}

/// The 1-based line and character column of the field `path` in a JSON document over
/// many lines (as [`column_of_path`] finds it); `second`: of a repeated key's second
/// member (as [`column_of_duplicate`]).
pub(crate) fn position_of_path(text: &str, path: &str, second: bool) -> (usize, usize) {
    let bytes = text.as_bytes();
    let mut best = None;
    locate(bytes, skip_ws(bytes, 0), &steps(path), second, &mut best);
    // Nothing matched: the document's first value.
    let at = best.unwrap_or_else(|| skip_ws(bytes, 0).min(text.len()));
    position_of_offset(text, at)
}

/// The 1-based line and character column of byte `at` in `text`.
pub(crate) fn position_of_offset(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

fn find(line: &str, path: &str, second: bool) -> usize {
    let bytes = line.as_bytes();
    let mut best = None;
    let start = skip_ws(bytes, 0);
    locate(bytes, start, &steps(path), second, &mut best);
    match best {
        Some(b) => line.get(..b).map(|s| s.chars().count() + 1).unwrap_or(1),
        None => 1,
    }
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
                        depth -= 1;
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

/// Finds `path` from the value at `i`, taking the first member of each key (the parser
/// rejects repeated keys, so there is only one), or for the last step, when `second` is
/// set, the second member with that name.
fn locate(b: &[u8], i: usize, path: &[Step<'_>], second: bool, best: &mut Option<usize>) {
    let Some((step, rest)) = path.split_first() else {
        return;
    };
    match (step, b.get(i)) {
        (Step::Key(key), Some(b'{')) => {
            let mut seen = false;
            let mut j = skip_ws(b, i + 1);
            while j < b.len() && b[j] == b'"' {
                let key_start = j;
                let key_end = skip_string(b, j);
                let name = &b[key_start + 1..key_end.saturating_sub(1).max(key_start + 1)];
                j = skip_ws(b, key_end);
                if b.get(j) != Some(&b':') {
                    return;
                }
                let value = skip_ws(b, j + 1);
                if same_key(name, key) {
                    *best = Some(key_start);
                    if second && rest.is_empty() && !seen {
                        seen = true;
                    } else {
                        locate(b, value, rest, second, best);
                        return;
                    }
                }
                j = skip_ws(b, skip_value(b, value));
                if b.get(j) == Some(&b',') {
                    j = skip_ws(b, j + 1);
                } else {
                    return;
                }
            }
        }
        (Step::Index(n), Some(b'[')) => {
            let mut j = skip_ws(b, i + 1);
            let mut k = 0;
            while j < b.len() && b[j] != b']' {
                if k == *n {
                    *best = Some(j);
                    locate(b, j, rest, second, best);
                    return;
                }
                j = skip_ws(b, skip_value(b, j));
                if b.get(j) == Some(&b',') {
                    j = skip_ws(b, j + 1);
                }
                k += 1;
            }
        }
        _ => {}
    }
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
        use super::position_of_path;
        let text =
            "[\n  {\n    \"id\": \"a\",\n    \"name\": \"é\", \"x\": 1\n  },\n  {\"name\": 2}\n]\n";
        assert_eq!(position_of_path(text, "[0].name", false), (4, 5));
        assert_eq!(position_of_path(text, "[0].x", false), (4, 18));
        assert_eq!(position_of_path(text, "[1].name", false), (6, 4));
        assert_eq!(position_of_path(text, "[1]", false), (6, 3));
        assert_eq!(position_of_path(text, "[7].name", false), (1, 1));
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
}
