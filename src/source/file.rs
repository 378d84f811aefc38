//! Reading one file of cases, whatever its format: the format is picked by the file's
//! name (`*.scenario.yaml`) and content (files that are not suites at all), trying the
//! formats of [`super::formats::FORMATS`] in turn, and every format yields the same
//! [`Loaded`] entries.

use std::path::Path;
use std::sync::Arc;

use super::formats::{suite_name, Load, SuiteFile, FALLBACK, FORMATS};
use super::Loaded;
use crate::util::display_path;

/// Reads one suite file. Never fails: an unreadable file is one broken entry, a bad
/// case (a JSONL line, a scenario) is a broken entry, and every other case still loads.
pub fn load_file(root: &Path, file: &Path) -> Vec<Loaded> {
    let f = SuiteFile {
        root,
        file,
        name: file
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default(),
        suite: suite_name(root, file),
        shown: Arc::new(display_path(file)),
    };
    // Formats that read their file themselves, by name, before it is read here.
    for format in FORMATS {
        if let Load::Path(load) = format.load {
            if (format.by_name)(&f.name) {
                return load(&f);
            }
        }
    }
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) => {
            return f.whole_file(
                "unreadable-file",
                format!("failed to read the suite file: {e}"),
            )
        }
    };
    for format in FORMATS {
        if let Load::Bytes(load) = format.load {
            if (format.by_name)(&f.name) {
                return load(&f, bytes);
            }
        }
    }
    // A file its name did not place: a tau2 tasks file under another name, named by `-i`.
    for format in FORMATS {
        if (format.by_content)(&f.name, &bytes) {
            return match format.load {
                Load::Path(load) => load(&f),
                Load::Bytes(load) => load(&f, bytes),
            };
        }
    }
    if let Some(what) = crate::source::foreign::not_a_suite(file, &bytes) {
        return f.whole_file("not-a-suite", what);
    }
    match FALLBACK.load {
        Load::Path(load) => load(&f),
        Load::Bytes(load) => load(&f, bytes),
    }
}
