//! JSON Lines suites: one case per line.

mod case;
mod dynamic;
mod json;
mod keys;
mod locate;
mod turn;

pub(crate) use case::case_from_object;
pub use case::parse_case;
pub(crate) use json::{parse_line as parse_json, LineError};
pub use keys::CASE_KEYS;
pub(crate) use locate::{column_of_path, position_of_offset, steps, Indexed, Step};

use super::{Loaded, SEPARATOR};
use crate::case::{Case, Location};
use crate::errors::CaseError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Parses the text of one suite.
pub fn parse_suite(suite: &str, file: &Path, shown: Arc<PathBuf>, text: &str) -> Vec<Loaded> {
    parse_suite_bytes(suite, file, shown, text.as_bytes())
}

/// Parses the bytes of one suite. Lines end at `\n` (a `\r` before it is dropped); a
/// case line that is not valid UTF-8 is an error for that line alone, located at its
/// first bad byte (the column counts the characters before it). Comment lines are
/// skipped whatever bytes they hold.
pub fn parse_suite_bytes(
    suite: &str,
    file: &Path,
    shown: Arc<PathBuf>,
    bytes: &[u8],
) -> Vec<Loaded> {
    let mut first_line: HashMap<String, usize> = HashMap::new();
    // Some editors save a byte order mark; RFC 8259 lets parsers ignore it.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let lines = lines(bytes);
    let read = read_lines(suite, file, &shown, &lines);
    // Sized once: a plan of 100,000 cases is mostly this vector, and growing it by
    // doubling would leave up to half of it empty for the whole run.
    let mut out: Vec<Loaded> = Vec::with_capacity(lines.len());
    // The entries without a usable id, by index into `out`, with their lines.
    let mut unnamed: Vec<(usize, usize)> = Vec::new();
    for (i, (line, read)) in lines.iter().zip(read).enumerate() {
        let n = i + 1;
        let entry = match read {
            Read::Skipped => continue,
            Read::Generator(generator) => {
                if generator.trial.is_empty() {
                    unnamed.push((out.len(), n));
                }
                out.push(*generator);
                continue;
            }
            Read::Entry(entry) => entry,
        };
        let text = line.as_ref().copied().unwrap_or_default();
        let (name_id, entry) = named(text, n, entry, &mut first_line);
        let trial = match name_id {
            Some(id) => format!("{suite}{SEPARATOR}{id}"),
            None => String::new(),
        };
        for (trial, entry) in per_persona(trial, entry) {
            if trial.is_empty() {
                unnamed.push((out.len(), n));
            }
            out.push(Loaded {
                generation: None,
                suite: suite.to_string(),
                trial,
                file: file.to_path_buf(),
                entry,
            });
        }
    }
    let taken = first_line.into_keys().collect();
    name_by_line(suite, &mut out, &unnamed, taken);
    out
}

/// A case as a plan entry holds it, or why its line is none.
type Entry = Result<Box<Case>, Box<CaseError>>;

/// A line as read, before the file's ids are compared.
enum Read {
    /// A comment or a blank line.
    Skipped,
    /// A generator line, as its entry.
    Generator(Box<Loaded>),
    /// A case, or why the line is none.
    Entry(Entry),
}

/// The lines below which a file is read on one thread: splitting costs more than it saves.
const PARALLEL_FROM: usize = 2_000;

/// Reads every line, each on its own (the ids are compared afterwards, in line order):
/// a big file on as many threads as there are cores, in contiguous chunks.
fn read_lines(suite: &str, file: &Path, shown: &Arc<PathBuf>, lines: &[Line<'_>]) -> Vec<Read> {
    let read_one = |i: usize, line: &Line<'_>| -> Read {
        let n = i + 1;
        let location = Location {
            file: shown.clone(),
            line: n,
            column: 1,
        };
        let line = match line {
            Ok(line) => *line,
            Err((line, e)) => {
                // A comment is skipped whatever it holds.
                return match invalid_utf8(line, *e) {
                    None => Read::Skipped,
                    Some((column, message)) => Read::Entry(Err(Box::new(CaseError {
                        location: Location { column, ..location },
                        id: None,
                        field: None,
                        message,
                    }))),
                };
            }
        };
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with("//") {
            return Read::Skipped;
        }
        if let Some(generator) = generator_line(suite, file, line, &location, n) {
            return Read::Generator(Box::new(generator));
        }
        Read::Entry(parse_case(line, location).map(Box::new).map_err(Box::new))
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if lines.len() < PARALLEL_FROM || threads < 2 {
        return lines
            .iter()
            .enumerate()
            .map(|(i, l)| read_one(i, l))
            .collect();
    }
    let chunk = lines.len().div_ceil(threads);
    std::thread::scope(|scope| {
        // A thread the system refuses (a low thread limit) leaves its chunk to this one.
        let handles: Vec<_> = lines
            .chunks(chunk)
            .enumerate()
            .map(|(k, part)| {
                let read_one = &read_one;
                std::thread::Builder::new()
                    .name("agentest-load".into())
                    .spawn_scoped(scope, move || {
                        part.iter()
                            .enumerate()
                            .map(|(j, l)| read_one(k * chunk + j, l))
                            .collect::<Vec<Read>>()
                    })
                    .ok()
            })
            .collect();
        let mut all = Vec::with_capacity(lines.len());
        for (k, h) in handles.into_iter().enumerate() {
            match h.map(|h| h.join()) {
                Some(Ok(part)) => all.extend(part),
                // Not started, or a panic reading a line (a bug): the chunk is read
                // here, where such a panic surfaces.
                None | Some(Err(_)) => all.extend(
                    lines[k * chunk..((k + 1) * chunk).min(lines.len())]
                        .iter()
                        .enumerate()
                        .map(|(j, l)| read_one(k * chunk + j, l)),
                ),
            }
        }
        all
    })
}

/// A case line `n` (its text `line`) as read: the id that names its trial, when it has
/// a usable one, and the case. An id already in `first_line` is an error (and names no
/// trial); a new one is added.
fn named(
    line: &str,
    n: usize,
    mut entry: Entry,
    first_line: &mut HashMap<String, usize>,
) -> (Option<String>, Entry) {
    let id = match &entry {
        Ok(c) => Some(c.id.clone()),
        Err(e) => e.id.clone(),
    };
    let mut name_id = id.clone();
    if let Some(id) = &id {
        if let Some(first) = first_line.get(id) {
            let location = match &entry {
                Ok(c) => c.location.clone(),
                Err(e) => e.location.clone(),
            };
            entry = Err(Box::new(CaseError {
                location: Location { column: crate::source::column_of_path(line, "id"), ..location },
                id: Some(id.clone()),
                field: Some("id".into()),
                message: format!("duplicate id \"{id}\" (first used on line {first}); ids must be unique within a file"),
            }));
            name_id = None;
        } else {
            first_line.insert(id.clone(), n);
        }
    }
    (name_id, entry)
}

/// A case with personas is a trial per persona, `suite::id::persona`, each case with
/// its one persona; any other entry is its trial alone.
fn per_persona(trial: String, entry: Entry) -> Vec<(String, Entry)> {
    match &entry {
        Ok(case) if !trial.is_empty() && !case.personas.is_empty() => case
            .personas
            .iter()
            .map(|p| {
                let mut one = case.clone();
                one.personas = Vec::new();
                one.persona = Some(Box::new(p.clone()));
                (
                    format!("{trial}{SEPARATOR}{}", crate::util::slug(&p.name)),
                    Ok(one),
                )
            })
            .collect(),
        _ => vec![(trial, entry)],
    }
}

/// Why a line is not UTF-8: the 1-based column of its first bad byte (counting the
/// characters before it) and the message; `None` for a comment line, which is skipped
/// whatever it holds.
fn invalid_utf8(line: &[u8], e: std::str::Utf8Error) -> Option<(usize, String)> {
    let good = &line[..e.valid_up_to()];
    let prefix = std::str::from_utf8(good).unwrap_or_default();
    if prefix.trim_start().starts_with("//") {
        return None;
    }
    let rest = &line[e.valid_up_to()..];
    let hex = |bytes: &[u8]| {
        bytes
            .iter()
            .map(|b| format!("0x{b:02X}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let what = match e.error_len() {
        Some(1) => format!(
            "the byte {} cannot start or continue a character here",
            hex(&rest[..1])
        ),
        Some(n) => format!("the bytes {} do not make a character", hex(&rest[..n])),
        None => format!(
            "the line ends inside a character (bytes {})",
            hex(&rest[..rest.len().min(3)])
        ),
    };
    Some((
        prefix.chars().count() + 1,
        format!("invalid UTF-8: {what}; save the file as UTF-8"),
    ))
}

/// Names the trials of the entries without a usable id (`unnamed`: their indexes in
/// `out`, with their lines, in line order) after their lines. A real id in `taken` (or another
/// line's name) may already be `line-N`, and two trials must never share a name.
fn name_by_line(
    suite: &str,
    out: &mut [Loaded],
    unnamed: &[(usize, usize)],
    mut taken: std::collections::HashSet<String>,
) {
    for &(i, n) in unnamed {
        let mut name = format!("line-{n}");
        let mut k = 1;
        while taken.contains(&name) {
            name = if k == 1 {
                format!("line-{n}-invalid")
            } else {
                format!("line-{n}-invalid-{k}")
            };
            k += 1;
        }
        taken.insert(name.clone());
        out[i].trial = format!("{suite}{SEPARATOR}{name}");
    }
}

/// A line as text, or its bytes and why they are not UTF-8.
type Line<'a> = Result<&'a str, (&'a [u8], std::str::Utf8Error)>;

/// The lines of `bytes` as `str::lines` splits text: at `\n`, dropping one `\r`
/// before it, with no empty last line after a final line ending.
fn lines(bytes: &[u8]) -> Vec<Line<'_>> {
    // The usual case, a file that is all UTF-8, is checked once and split fast.
    if let Ok(text) = std::str::from_utf8(bytes) {
        return text.lines().map(Ok).collect();
    }
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    body.split(|&b| b == b'\n')
        .map(|l| {
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            std::str::from_utf8(l).map_err(|e| (l, e))
        })
        .collect()
}

/// A line asking a generator for cases (`{"generate": "agents:NAME?count=5"}`), as an
/// entry the run replaces with the generated cases (trial `SUITE::generate-LINE` until
/// then); `None` for any other line.
fn generator_line(
    suite: &str,
    file: &Path,
    line: &str,
    location: &Location,
    n: usize,
) -> Option<Loaded> {
    // Cheap first: most lines are cases.
    if !line.contains("\"generate\"") {
        return None;
    }
    let serde_json::Value::Object(obj) = serde_json::from_str(line).ok()? else {
        return None;
    };
    let value = obj.get("generate")?;
    let at = |path: &str| Location {
        column: column_of_path(line, path),
        ..location.clone()
    };
    let error = |field: &str, message: String| CaseError {
        location: at(field),
        id: None,
        field: Some(field.to_string()),
        message,
    };
    let spec = match value.as_str().map(crate::source::GeneratorSpec::parse) {
        Some(Some(Ok(spec))) => Ok(spec),
        Some(Some(Err(why))) => Err(error("generate", why.to_string())),
        _ => Err(error(
            "generate",
            format!(
                "expected a generator like \"agents:NAME?count=5\" or \"scripts:NAME\", found {}",
                match value {
                    serde_json::Value::String(s) => format!("\"{s}\""),
                    other => crate::util::type_of(other).to_string(),
                }
            ),
        )),
    };
    let spec = spec.and_then(|spec| match obj.keys().find(|k| *k != "generate") {
        Some(other) => Err(error(
            other,
            "a generator line holds only `generate`; the generated cases carry their own fields"
                .into(),
        )),
        None => Ok(spec),
    });
    let trial = format!("{suite}{SEPARATOR}generate-{n}");
    Some(match spec {
        Ok(spec) => Loaded {
            generation: Some(crate::source::Generation::Pending {
                spec: Arc::new(spec.clone()),
                command_line: false,
            }),
            suite: suite.to_string(),
            trial,
            file: file.to_path_buf(),
            entry: Err(Box::new(error(
                "generate",
                format!(
                    "the cases of {} are generated when a run plans its cases; run them with `agentest test` or `cargo test`",
                    spec.label()
                ),
            ))),
        },
        Err(e) => Loaded {
            generation: None,
            suite: suite.to_string(),
            trial,
            file: file.to_path_buf(),
            entry: Err(Box::new(e)),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<(String, bool)> {
        parse_suite(
            "s",
            Path::new("s.jsonl"),
            Arc::new(PathBuf::from("s.jsonl")),
            text,
        )
        .into_iter()
        .map(|l| (l.trial, l.entry.is_ok()))
        .collect()
    }

    /// A file big enough to be read on several threads reads as one read line by line:
    /// its entries in line order, each located on its own line, a duplicate id found
    /// across the chunks, a bad line and a comment where they are.
    #[test]
    fn a_big_file_read_in_chunks_keeps_its_lines_in_order() {
        let n = 3 * PARALLEL_FROM + 7;
        let mut bytes = Vec::new();
        for i in 1..=n {
            match i {
                5 => bytes.extend_from_slice(b"// a comment"),
                n if n == 2 * PARALLEL_FROM + 1 => {
                    bytes.extend_from_slice(b"{\"id\": \"c10\", \"input\": \"again\"}")
                }
                n if n == 2 * PARALLEL_FROM + 2 => bytes.extend_from_slice(b"{\"id\": \"x\xff\"}"),
                _ => bytes.extend_from_slice(
                    format!("{{\"id\": \"c{i}\", \"input\": \"hello {i}\"}}").as_bytes(),
                ),
            }
            bytes.push(b'\n');
        }
        let loaded = parse_suite_bytes(
            "s",
            Path::new("s.jsonl"),
            Arc::new(PathBuf::from("s.jsonl")),
            &bytes,
        );
        assert_eq!(loaded.len(), n - 1, "the comment is skipped");
        let line = |l: &Loaded| match &l.entry {
            Ok(c) => c.location.line,
            Err(e) => e.location.line,
        };
        let lines: Vec<usize> = loaded.iter().map(line).collect();
        let want: Vec<usize> = (1..=n).filter(|i| *i != 5).collect();
        assert_eq!(lines, want);
        for l in loaded.iter().filter(|l| l.entry.is_ok()) {
            let c = l.entry.as_ref().unwrap();
            assert_eq!(l.trial, format!("s::{}", c.id));
            assert_eq!(c.id, format!("c{}", c.location.line));
        }
        let dup = &loaded[2 * PARALLEL_FROM - 1];
        let e = dup.entry.as_ref().unwrap_err();
        assert!(
            e.message
                .contains("duplicate id \"c10\" (first used on line 10)"),
            "{}",
            e.message
        );
        assert_eq!(dup.trial, format!("s::line-{}", 2 * PARALLEL_FROM + 1));
        let bad = &loaded[2 * PARALLEL_FROM];
        assert!(bad
            .entry
            .as_ref()
            .unwrap_err()
            .message
            .contains("invalid UTF-8"));
        assert_eq!(bad.trial, format!("s::line-{}", 2 * PARALLEL_FROM + 2));
    }

    #[test]
    fn bad_lines_become_named_broken_entries_and_others_still_load() {
        let text = "{\"id\":\"a\",\"input\":\"x\"}\n\n// comment\n{oops\n{\"id\":\"a\",\"input\":\"y\"}\n{\"id\":\"b\",\"imput\":\"z\"}\n";
        assert_eq!(
            names(text),
            vec![
                ("s::a".into(), true),
                ("s::line-4".into(), false),
                ("s::line-5".into(), false),
                ("s::b".into(), false)
            ]
        );
    }
}
