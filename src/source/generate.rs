//! Cases that a generator makes: `-i "agents:NAME?count=10&focus=edge-cases"`,
//! `-i "scripts:NAME?scenario=x"`, and a suite line `{"generate": "agents:NAME?count=5"}`.
//!
//! This is the source side: reading a generator reference, and turning what a generator
//! answered into cases through the same validation as a suite's lines. Calling the
//! generator is the run stage's (`crate::run::generate`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::generator::GeneratorSpec;
use super::{Generation, Loaded, SEPARATOR};
use crate::case::Location;
use crate::errors::CaseError;

/// Where generated cases belong: the suite they join and how they are located.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    /// The suite (`generated/NAME` for `-i`, the suite file's own for a suite line).
    pub(crate) suite: String,
    /// The suite file (for `-i`, a name in the working directory: configs and
    /// cassettes are found from its folder).
    pub(crate) file: PathBuf,
    /// What errors name as the file: the suite file, or `agents:NAME`.
    pub(crate) shown: Arc<PathBuf>,
    /// The suite line that asked (1 for `-i`): errors of a suite line's cases point at it.
    pub(crate) line: usize,
    /// Ids already taken in the suite (a suite line's neighbours), never reused.
    pub(crate) taken: Vec<String>,
    /// `-i agents:NAME`: errors are located `agents:NAME:<case index>:<column>`, the
    /// column in the case's JSON as `--dry-run -o` writes it. Otherwise at the suite line.
    pub(crate) command_line: bool,
}

/// What became of a generator's answer.
pub(crate) struct Generated {
    /// One entry per generated case, valid or not, in the order given.
    pub(crate) loaded: Vec<Loaded>,
    /// Said on stderr and in the report: renamed ids, fewer cases than asked.
    pub(crate) notes: Vec<String>,
}

/// Reads a generator's cases (each a JSON value, as a suite line would be) through the
/// same validation as a file's lines. A bad case is one located error; ids that collide
/// are made unique (`G1-2`) and said; fewer cases than `count` is a note, none an error.
pub(crate) fn read_generated(
    spec: &GeneratorSpec,
    origin: &Origin,
    cases: Vec<Value>,
) -> Generated {
    let label = spec.label();
    let mut notes = Vec::new();
    let mut loaded = Vec::new();
    if cases.is_empty() {
        loaded.push(broken(
            origin,
            generator_id(origin),
            format!("{label} generated no cases; check what it was asked (its parameters) and what it answered"),
        ));
        return Generated { loaded, notes };
    }
    if let Some(n) = spec.count.filter(|n| (cases.len() as u64) < *n) {
        notes.push(format!(
            "{label} generated {} cases of the {n} asked (count={n})",
            cases.len()
        ));
    }
    let mut used: HashMap<String, usize> = origin.taken.iter().map(|t| (t.clone(), 0)).collect();
    for (i, mut value) in cases.into_iter().enumerate() {
        let index = i + 1;
        let location = Location {
            file: origin.shown.clone(),
            line: if origin.command_line {
                index
            } else {
                origin.line
            },
            column: 1,
        };
        // An id taken already (by an earlier case, or the suite's own) gets a suffix.
        let mut renamed = None;
        if let Some(id) = value.get("id").and_then(Value::as_str).map(str::to_string) {
            if used.contains_key(&id) {
                let mut n = 2;
                while used.contains_key(&format!("{id}-{n}")) {
                    n += 1;
                }
                let unique = format!("{id}-{n}");
                let note = format!(
                    "{label}: generated case {index} has the id \"{id}\", which is taken; it runs as \"{unique}\""
                );
                notes.push(note.clone());
                renamed = Some(Generation::Renamed(note));
                value["id"] = Value::String(unique);
            }
        }
        let line = value.to_string();
        let entry = match &value {
            Value::Object(_) => super::parse_case(&line, location),
            other => Err(CaseError {
                location,
                id: None,
                field: None,
                message: format!(
                    "expected a case object, found {}",
                    crate::util::type_of(other)
                ),
            }),
        };
        // Which case of the generator's answer, and by whom, whatever went wrong.
        let entry = entry.map_err(|mut e| {
            e.message = if origin.command_line {
                format!("generated case {index}: {}", e.message)
            } else {
                format!("{label}, generated case {index}: {}", e.message)
            };
            e
        });
        let id = match &entry {
            Ok(c) => Some(c.id.clone()),
            Err(e) => e.id.clone(),
        };
        let trial_id = id.clone().unwrap_or_else(|| format!("generated-{index}"));
        used.insert(trial_id.clone(), index);
        loaded.push(Loaded {
            suite: origin.suite.clone(),
            trial: format!("{}{SEPARATOR}{trial_id}", origin.suite),
            file: origin.file.clone(),
            entry: entry.map(Box::new).map_err(Box::new),
            generation: renamed,
        });
    }
    Generated { loaded, notes }
}

/// A generator that could not give cases, as one failing trial `SUITE::generator`
/// (or `SUITE::generate-LINE` for a suite line).
pub(crate) fn broken(origin: &Origin, id: String, message: String) -> Loaded {
    Loaded {
        suite: origin.suite.clone(),
        trial: format!("{}{SEPARATOR}{id}", origin.suite),
        file: origin.file.clone(),
        entry: Err(Box::new(CaseError {
            location: Location {
                file: origin.shown.clone(),
                line: origin.line,
                column: 1,
            },
            id: None,
            field: None,
            message,
        })),
        generation: None,
    }
}

/// The trial id of a generator that gave no cases: `generator` for `-i`,
/// `generate-LINE` for a suite line (the name it had before it ran).
pub(crate) fn generator_id(origin: &Origin) -> String {
    if origin.command_line {
        "generator".into()
    } else {
        format!("generate-{}", origin.line)
    }
}

/// The origin of `-i agents:NAME`: suite `generated/NAME`, its file a name in `cwd`.
pub(crate) fn command_line_origin(spec: &GeneratorSpec, cwd: &Path) -> Origin {
    Origin {
        suite: format!("generated/{}", spec.name),
        file: cwd.join(format!("generated-{}", spec.name)),
        shown: Arc::new(PathBuf::from(spec.label())),
        line: 1,
        taken: Vec::new(),
        command_line: true,
    }
}
