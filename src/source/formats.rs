//! The formats suites are written in, one entry each: how discovery recognises a file
//! of the format, which directories it leaves to the format, how a trial's file is found
//! again from its name (nextest's `--exact`), and how the file loads. Discovery
//! ([`super::discover`]) and the file reader ([`super::load_file`]) only walk
//! [`FORMATS`]; a new format is one more entry here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::case::Location;
use crate::errors::CaseError;
use crate::source::{Loaded, SEPARATOR};
use crate::util::display_path;

/// A suite file being loaded: what a format's loader is given.
pub(crate) struct SuiteFile<'a> {
    /// The suites root, trial names are relative to.
    pub(crate) root: &'a Path,
    /// The file.
    pub(crate) file: &'a Path,
    /// The file's name, lowercase: formats are recognised whatever the case.
    pub(crate) name: String,
    /// Its suite name ([`suite_name`]).
    pub(crate) suite: String,
    /// The file as messages show it.
    pub(crate) shown: Arc<PathBuf>,
}

impl SuiteFile<'_> {
    /// The file as one broken entry, `<suite>::<trial>`, located at its start.
    pub(crate) fn whole_file(&self, trial: &str, message: String) -> Vec<Loaded> {
        vec![Loaded {
            generation: None,
            trial: format!("{}{SEPARATOR}{trial}", self.suite),
            suite: self.suite.clone(),
            file: self.file.to_path_buf(),
            entry: Err(Box::new(CaseError {
                location: Location {
                    file: self.shown.clone(),
                    line: 1,
                    column: 1,
                },
                id: None,
                field: None,
                message,
            })),
        }]
    }
}

/// The suite name of a file: its path under `root` without its format's ending
/// (`.jsonl`), `/`-separated.
pub(crate) fn suite_name(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap_or(file);
    let s = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    FORMATS
        .iter()
        .flat_map(|f| f.endings)
        .find_map(|e| s.strip_suffix(e))
        .map(str::to_string)
        .unwrap_or(s)
}

/// How a format's file is read.
pub(crate) enum Load {
    /// The format reads the file itself (a JSON document, a project's several files),
    /// before the reader does: an unreadable file is the format's to report.
    Path(fn(&SuiteFile) -> Vec<Loaded>),
    /// From the bytes the reader read.
    Bytes(fn(&SuiteFile, Vec<u8>) -> Vec<Loaded>),
}

/// One format suites are written in.
pub(crate) struct Format {
    /// The endings a suite name drops (`billing/refunds.jsonl` is the suite
    /// `billing/refunds`).
    pub(crate) endings: &'static [&'static str],
    /// Whether discovery lists a file named `name` (as written) in the directory `dir`.
    pub(crate) discovered: fn(dir: &Path, name: &str) -> bool,
    /// Whether discovery leaves out the directory `name` in `parent`: one the format's
    /// files are read from by another file of it.
    pub(crate) skips_dir: fn(parent: &Path, name: &str) -> bool,
    /// The files under `root` that may hold the trials of `suite` (only existing ones).
    pub(crate) trial_files: fn(root: &Path, suite: &str) -> Vec<PathBuf>,
    /// Whether the reader takes a file of this (lowercase) name as the format.
    pub(crate) by_name: fn(name: &str) -> bool,
    /// Whether the reader takes a file its name did not place as the format, by its
    /// (lowercase) name and content.
    pub(crate) by_content: fn(name: &str, bytes: &[u8]) -> bool,
    /// How the file loads.
    pub(crate) load: Load,
}

/// Every format, in the order the reader tries them. A format that reads its file
/// itself ([`Load::Path`]) is tried by name before the file is read, the others by
/// name after; then each by content; a file none takes is checked for being something
/// else altogether ([`super::foreign`]) and otherwise read as [`FALLBACK`].
pub(crate) const FORMATS: &[Format] = &[EVALSTUDIO, TAU2, MATRIX, SCENARIO, JSONL];

/// The format a file nothing else takes is read as.
pub(crate) const FALLBACK: &Format = &JSONL;

/// An EvalStudio project (its config, or a store's `evals.json`), a `scenarios.json`
/// alone, or a conversation seed: recognised by name, first of all.
const EVALSTUDIO: Format = Format {
    endings: &[".json"],
    discovered: crate::source::evalstudio::listed_in,
    skips_dir: crate::source::evalstudio::skipped,
    trial_files: |root, suite| {
        crate::source::evalstudio::file_for_suite(root, suite)
            .into_iter()
            .collect()
    },
    by_name: |name| crate::source::evalstudio::kind_of(name).is_some(),
    by_content: never_by_content,
    load: Load::Path(|f| match crate::source::evalstudio::kind_of(&f.name) {
        Some(what) => crate::source::evalstudio::load(f.root, f.file, what, suite_name),
        None => Vec::new(),
    }),
};

/// tau2-bench tasks: `tasks.json`, `tasks_*.json`, `task_*.json`, or any `.json` file
/// holding tasks when it is named by `-i`.
const TAU2: Format = Format {
    endings: &[".json"],
    discovered: |_, name| crate::source::tau2::is_task_file(&name.to_lowercase()),
    skips_dir: never_skips,
    trial_files: |root, suite| {
        let file = root.join(format!("{suite}.json"));
        let tasks = file.file_name().is_some_and(|n| {
            crate::source::tau2::is_task_file(&n.to_string_lossy().to_lowercase())
        });
        if tasks && file.is_file() {
            vec![file]
        } else {
            Vec::new()
        }
    },
    by_name: crate::source::tau2::is_task_file,
    by_content: |name, bytes| {
        name.ends_with(".json")
            && serde_json::from_slice::<serde_json::Value>(bytes)
                .is_ok_and(|v| crate::source::tau2::looks_like_tasks(&v))
    },
    load: Load::Path(tau2_file),
};

/// An ElizaOS scenario matrix: `*.matrix.yaml`.
const MATRIX: Format = Format {
    endings: &crate::source::yaml::MATRIX_ENDINGS,
    discovered: |_, name| crate::source::yaml::is_matrix(name),
    skips_dir: never_skips,
    trial_files: |root, suite| existing(root, suite, &crate::source::yaml::MATRIX_ENDINGS),
    by_name: crate::source::yaml::is_matrix,
    by_content: never_by_content,
    load: Load::Bytes(|f, bytes| {
        yaml_text(f, bytes, |f, text| {
            crate::source::yaml::load_matrix(&f.suite, f.file, f.shown.clone(), text)
        })
    }),
};

/// An ElizaOS scenario: `*.scenario.yaml`.
const SCENARIO: Format = Format {
    endings: &crate::source::yaml::SCENARIO_ENDINGS,
    discovered: |_, name| {
        crate::source::yaml::SCENARIO_ENDINGS
            .iter()
            .any(|e| name.ends_with(e))
    },
    skips_dir: never_skips,
    trial_files: |root, suite| existing(root, suite, &crate::source::yaml::SCENARIO_ENDINGS),
    by_name: crate::source::yaml::is_scenario,
    by_content: never_by_content,
    load: Load::Bytes(|f, bytes| {
        yaml_text(f, bytes, |f, text| {
            vec![crate::source::yaml::load_scenario(
                &f.suite,
                f.file,
                f.shown.clone(),
                text,
            )]
        })
    }),
};

/// JSON Lines, one case a line: `*.jsonl`, and whatever file is named by `-i` that no
/// other format takes. Never taken by name: a `.jsonl` file that is something else
/// (a trace, a report) is told apart first. A labelled set for `agentest calibrate`
/// (`*.labels.jsonl`) kept beside the suites is not one.
const JSONL: Format = Format {
    endings: &[".jsonl"],
    discovered: |_, name| name.ends_with(".jsonl") && !is_labels(name),
    skips_dir: never_skips,
    trial_files: |root, suite| existing(root, suite, &[".jsonl"]),
    by_name: |_| false,
    by_content: never_by_content,
    load: Load::Bytes(|f, bytes| {
        crate::source::parse_suite_bytes(&f.suite, f.file, f.shown.clone(), &bytes)
    }),
};

/// A labelled set's file name: `*.labels.jsonl`, whatever the case.
pub(crate) fn is_labels(name: &str) -> bool {
    name.to_lowercase().ends_with(".labels.jsonl")
}

fn never_skips(_: &Path, _: &str) -> bool {
    false
}

fn never_by_content(_: &str, _: &[u8]) -> bool {
    false
}

/// `root/<suite><ending>` for each ending, the ones that are files.
fn existing(root: &Path, suite: &str, endings: &[&str]) -> Vec<PathBuf> {
    endings
        .iter()
        .map(|e| root.join(format!("{suite}{e}")))
        .filter(|p| p.is_file())
        .collect()
}

/// A YAML file's text for `load`, or the file as one broken entry when it is not UTF-8.
fn yaml_text(
    f: &SuiteFile,
    bytes: Vec<u8>,
    load: fn(&SuiteFile, &str) -> Vec<Loaded>,
) -> Vec<Loaded> {
    match String::from_utf8(bytes) {
        Ok(text) => load(f, &text),
        Err(e) => f.whole_file(
            "scenario",
            format!(
                "invalid UTF-8 at byte {}; save the file as UTF-8",
                e.utf8_error().valid_up_to()
            ),
        ),
    }
}

/// A tau2-bench tasks file: one case per task.
fn tau2_file(f: &SuiteFile) -> Vec<Loaded> {
    let broken = |e: CaseError| {
        vec![Loaded {
            generation: None,
            trial: format!("{}{SEPARATOR}tasks", f.suite),
            suite: f.suite.clone(),
            file: f.file.to_path_buf(),
            entry: Err(Box::new(e)),
        }]
    };
    match crate::source::document::Document::read(f.file) {
        Ok(Some(doc)) => crate::source::tau2::load(&f.suite, f.file, &doc),
        Ok(None) => broken(CaseError {
            location: Location {
                file: Arc::new(display_path(f.file)),
                line: 1,
                column: 1,
            },
            id: None,
            field: None,
            message: "the tasks file does not exist".into(),
        }),
        Err(e) => broken(e),
    }
}
