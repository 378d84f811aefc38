//! Suites: `*.jsonl` files under a suites root, each line a case, each case a trial
//! named `<suite path without .jsonl>::<id>`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::case::{parse_case, Case, CaseError, Location};

/// The separator between suite and case id in trial names.
pub const SEPARATOR: &str = "::";

/// One line of a suite, read: a case, or the error that stopped it.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The suite name (`billing/refunds`).
    pub suite: String,
    /// The trial name (`billing/refunds::T001`, or `billing/refunds::line-7` without a usable id).
    pub trial: String,
    /// The suite file.
    pub file: PathBuf,
    /// The case, or why it could not be read.
    pub entry: Result<Case, CaseError>,
}

/// A suites root that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The root does not exist or is not a directory.
    #[error("failed to find the suites root {path}: {reason}")]
    Root {
        /// The root.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A directory under the root could not be listed.
    #[error("failed to list {path}: {source}")]
    List {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Finds every `*.jsonl` under `root`, sorted.
///
/// Not searched: hidden directories (`.cassettes`), golden-file folders (`*.golden`),
/// build and dependency folders named `target` or `node_modules` (a report written to
/// `agent-tests/target/report.jsonl` is not a suite), and symbolic links to
/// directories, which are never followed, so a link back up the tree (`up -> ..`) can
/// neither loop nor list a suite twice. A symbolic link to a `.jsonl` file is a suite
/// like any other (a dangling one is listed too, and fails to load). Hidden files are
/// skipped too.
pub fn discover(root: &Path) -> Result<Vec<PathBuf>, SuiteError> {
    discover_excluding(root, &[])
}

/// [`discover`], leaving out the files in `exclude` (such as the run's own JSONL
/// report). Paths are compared canonicalized, so any spelling of a file excludes it;
/// an excluded path that does not exist excludes nothing.
pub fn discover_excluding(root: &Path, exclude: &[PathBuf]) -> Result<Vec<PathBuf>, SuiteError> {
    if !root.is_dir() {
        return Err(SuiteError::Root {
            path: root.to_path_buf(),
            reason: if root.exists() {
                "it is not a directory".into()
            } else {
                "it does not exist; create it and add a suite such as `agent-tests/smoke.jsonl`"
                    .into()
            },
        });
    }
    let excluded: Vec<PathBuf> = exclude
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| SuiteError::List {
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| SuiteError::List {
                path: dir.clone(),
                source,
            })?;
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                continue;
            }
            // The entry's own type: a symbolic link is not followed here.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !name.ends_with(".golden") && name != "target" && name != "node_modules" {
                    stack.push(path);
                }
            } else if name.ends_with(".jsonl") && !(kind.is_symlink() && path.is_dir()) {
                // A file, or a link that does not lead to a directory: a dangling one is
                // listed, so that it fails to load rather than vanish unseen.
                if excluded.is_empty()
                    || !std::fs::canonicalize(&path).is_ok_and(|p| excluded.contains(&p))
                {
                    found.push(path);
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The suite name of a file: its path under `root` without `.jsonl`, `/`-separated.
pub fn suite_name(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap_or(file);
    let s = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    s.strip_suffix(".jsonl").map(str::to_string).unwrap_or(s)
}

/// The suite file a trial name points at (for nextest's `--exact NAME`): `root/<suite>.jsonl`.
pub fn file_for_trial(root: &Path, trial: &str) -> Option<PathBuf> {
    let (suite, _) = trial.rsplit_once(SEPARATOR)?;
    if suite.is_empty()
        || suite
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
    {
        return None;
    }
    let path = root.join(format!("{suite}.jsonl"));
    path.is_file().then_some(path)
}

/// A case id as a file name: letters, digits, `.`, `_` and `-` stay, anything else is
/// `%HH` (its UTF-8 bytes in hex), so two ids never share a file (`a b` is `a%20b`,
/// `a_b` stays `a_b`).
pub fn file_name_for_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        if c.is_ascii_alphanumeric() || "._-".contains(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// A file kept beside a suite file, per case: `<dir>/<folder>/<id><ext>` where
/// `folder` is made from the suite's file stem (`expense.golden`, `.cassettes/expense`).
pub fn beside(suite_file: &Path, folder: impl Fn(&str) -> PathBuf, id: &str, ext: &str) -> PathBuf {
    let stem = suite_file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = suite_file.parent().unwrap_or(Path::new(""));
    dir.join(folder(&stem))
        .join(format!("{}{ext}", file_name_for_id(id)))
}

/// A path shown to users: relative to the working directory when it is under it.
pub fn display_path(path: &Path) -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(&cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
}

/// Reads one suite file. Never fails: an unreadable file is one broken entry, a bad
/// line (invalid JSON, or bytes that are not UTF-8) is a broken entry, and every other
/// line still loads.
pub fn load_file(root: &Path, file: &Path) -> Vec<Loaded> {
    let suite = suite_name(root, file);
    let shown = Arc::new(display_path(file));
    match std::fs::read(file) {
        Ok(bytes) => parse_suite_bytes(&suite, file, shown, &bytes),
        Err(e) => vec![Loaded {
            trial: format!("{suite}{SEPARATOR}unreadable-file"),
            suite,
            file: file.to_path_buf(),
            entry: Err(CaseError {
                location: Location {
                    file: shown,
                    line: 1,
                    column: 1,
                },
                id: None,
                field: None,
                message: format!("failed to read the suite file: {e}"),
            }),
        }],
    }
}

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
    let mut out = Vec::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    // Some editors save a byte order mark; RFC 8259 lets parsers ignore it.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    for (i, line) in lines(bytes).into_iter().enumerate() {
        let n = i + 1;
        let location = Location {
            file: shown.clone(),
            line: n,
            column: 1,
        };
        let line = match line {
            Ok(line) => line,
            Err((line, e)) => {
                let good = &line[..e.valid_up_to()];
                let prefix = std::str::from_utf8(good).unwrap_or_default();
                // A comment is skipped whatever it holds.
                if prefix.trim_start().starts_with("//") {
                    continue;
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
                out.push((
                    n,
                    Loaded {
                        suite: suite.to_string(),
                        trial: String::new(),
                        file: file.to_path_buf(),
                        entry: Err(CaseError {
                            location: Location {
                                column: prefix.chars().count() + 1,
                                ..location
                            },
                            id: None,
                            field: None,
                            message: format!("invalid UTF-8: {what}; save the file as UTF-8"),
                        }),
                    },
                ));
                continue;
            }
        };
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with("//") {
            continue;
        }
        let mut entry = parse_case(line, location.clone());
        let id = match &entry {
            Ok(c) => Some(c.id.clone()),
            Err(e) => e.id.clone(),
        };
        let mut name_id = id.clone();
        if let Some(id) = &id {
            if let Some(first) = first_line.get(id) {
                entry = Err(CaseError {
                    location: Location { column: crate::case::column_of_path(line, "id"), ..location },
                    id: Some(id.clone()),
                    field: Some("id".into()),
                    message: format!("duplicate id \"{id}\" (first used on line {first}); ids must be unique within a file"),
                });
                name_id = None;
            } else {
                first_line.insert(id.clone(), n);
            }
        }
        let trial = match name_id {
            Some(id) => format!("{suite}{SEPARATOR}{id}"),
            None => String::new(),
        };
        out.push((
            n,
            Loaded {
                suite: suite.to_string(),
                trial,
                file: file.to_path_buf(),
                entry,
            },
        ));
    }
    // Lines without a usable id are named after their line; a real id (or another
    // line's name) may already be `line-N`, and two trials must never share a name.
    let mut taken: std::collections::HashSet<String> = first_line.keys().cloned().collect();
    out.into_iter()
        .map(|(n, mut l)| {
            if l.trial.is_empty() {
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
                l.trial = format!("{suite}{SEPARATOR}{name}");
            }
            l
        })
        .collect()
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

    #[test]
    fn suite_names_and_trial_files() {
        let root = Path::new("/r");
        assert_eq!(
            suite_name(root, Path::new("/r/billing/refunds.jsonl")),
            "billing/refunds"
        );
        assert_eq!(file_for_trial(root, "../x::T1"), None);
    }
}
