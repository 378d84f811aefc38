//! Planning: which cases a run loads, in what order, under which trial names. The
//! binary and the libtest harness both plan through here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use regex::Regex;

use crate::case::Location;
use crate::errors::CaseError;
use crate::errors::{GeneratorSpecError, PlanError};
use crate::source::{
    discover_excluding, files_for_trial, load_file, parse_case, Loaded, SEPARATOR,
};
use crate::util::display_path;

/// What a run's cases come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Input {
    /// A folder of suites, searched recursively; trials are named after the path under it.
    Dir(PathBuf),
    /// One suite file; trials are named after the file.
    File(PathBuf),
    /// A message sent as a one-turn case (`agentest test -i "Hello there"`).
    Message(String),
    /// Cases a generator makes (`-i "agents:NAME?count=10"`, `-i scripts:NAME`).
    Generator(crate::source::GeneratorSpec),
}

impl Input {
    /// What `-i` names: a folder, a file, or a message. One word that is no file is
    /// more likely a mistyped path than a message, so it is an error unless
    /// `force_message` (`--message`) says otherwise.
    pub(crate) fn parse(input: &str, force_message: bool) -> Result<Input, PlanError> {
        if input.trim().is_empty() {
            return Err(PlanError::Empty);
        }
        if force_message {
            return Ok(Input::Message(input.to_string()));
        }
        if let Some(spec) = crate::source::GeneratorSpec::parse(input) {
            return spec
                .map(Input::Generator)
                .map_err(|why| PlanError::Generator {
                    input: input.to_string(),
                    why,
                });
        }
        let path = Path::new(input);
        if path.is_dir() {
            return Ok(Input::Dir(path.to_path_buf()));
        }
        if path.is_file() {
            return Ok(Input::File(path.to_path_buf()));
        }
        let looks_like_path = input.ends_with(".jsonl")
            || (!input.contains(char::is_whitespace) && input.contains('/'));
        if looks_like_path {
            return Err(PlanError::Missing {
                input: input.to_string(),
                suggestion: near(path),
            });
        }
        // `agent:gen` or `script:gen`: a generator with its kind misspelt.
        if let Some((kind, _)) = input.split_once(':').filter(|_| !looks_like_path) {
            if let Some(meant) = crate::util::suggest(kind, &["agents", "scripts"]) {
                return Err(PlanError::Generator {
                    input: input.to_string(),
                    why: GeneratorSpecError::Kind {
                        kind: kind.to_string(),
                        meant,
                    },
                });
            }
        }
        if !input.trim().contains(char::is_whitespace) {
            return Err(PlanError::NotAPath {
                input: input.to_string(),
                suggestion: near(path),
            });
        }
        Ok(Input::Message(input.to_string()))
    }
}

/// A file or folder beside `path` whose name is close to its own (`agent-tests` for
/// `agnet-tests`), as the user would write it.
fn near(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    let entries = std::fs::read_dir(parent.unwrap_or(Path::new("."))).ok()?;
    let names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.'))
        .collect();
    let known: Vec<&str> = names.iter().map(String::as_str).collect();
    let found = crate::util::suggest(name, &known)?;
    Some(match parent {
        Some(p) => p.join(found).display().to_string(),
        None => found.to_string(),
    })
}

/// The cases of a run, sorted by trial name.
pub(crate) struct Plan {
    /// Where configs are looked up from for the run as a whole.
    pub(crate) root: PathBuf,
    /// The cases (and lines that failed to load), in trial order.
    pub(crate) cases: Vec<Loaded>,
    /// The input as the console header shows it.
    pub(crate) label: String,
    /// Whether trial names carry the suite's path (a folder input).
    pub(crate) qualified: bool,
}

impl Plan {
    /// Loads what `input` names. `exclude` are files never read as suites (the run's
    /// own report); `exact` is a trial name run alone (nextest's `--exact SUITE::ID`),
    /// for which only that suite's file is opened.
    pub(crate) fn load(
        input: &Input,
        exclude: &[PathBuf],
        exact: Option<&str>,
    ) -> Result<Plan, PlanError> {
        let mut plan = match input {
            Input::Dir(dir) => {
                let only = exact
                    .filter(|f| f.contains(SEPARATOR))
                    .map(|f| files_for_trial(dir, f))
                    .filter(|files| !files.is_empty());
                let files = match only {
                    Some(files) => files,
                    None => discover_excluding(dir, exclude)?,
                };
                Plan {
                    root: dir.clone(),
                    cases: load_files(dir, &files),
                    label: display_path(dir).display().to_string(),
                    qualified: true,
                }
            }
            Input::File(file) => {
                let root = parent_dir(file);
                Plan {
                    cases: load_file(&root, file),
                    root,
                    label: display_path(file).display().to_string(),
                    qualified: false,
                }
            }
            Input::Generator(spec) => {
                let cwd = std::env::current_dir().map_err(PlanError::Cwd)?;
                Plan {
                    cases: vec![generator_entry(spec, &cwd)],
                    root: cwd,
                    label: spec.label(),
                    qualified: true,
                }
            }
            Input::Message(msg) => {
                let cwd = std::env::current_dir().map_err(PlanError::Cwd)?;
                Plan {
                    cases: vec![message_case(msg, &cwd)],
                    root: cwd,
                    label: serde_json::Value::String(msg.clone()).to_string(),
                    qualified: false,
                }
            }
        };
        // Stable: the cases of one name stay in the order they were loaded in.
        for l in &mut plan.cases {
            cap_trial_name(l);
        }
        sort_by_trial(&mut plan.cases);
        plan.cases = one_per_trial(std::mem::take(&mut plan.cases));
        Ok(plan)
    }

    /// Keeps only the trials whose name matches `filter` (`--run`).
    pub(crate) fn retain(&mut self, filter: &Regex) {
        self.cases.retain(|l| filter.is_match(&l.trial));
    }
}

/// The entries of `files`, in order, gathered without copying the first file's (a
/// plan of one big file is that file's vector).
fn load_files(dir: &Path, files: &[PathBuf]) -> Vec<Loaded> {
    let mut cases: Vec<Loaded> = Vec::new();
    for f in files {
        let mut loaded = load_file(dir, f);
        if cases.is_empty() {
            std::mem::swap(&mut cases, &mut loaded);
        } else {
            cases.append(&mut loaded);
        }
    }
    cases
}

/// Sorts the entries by trial name, stably (the entries of one name stay in the order
/// they were loaded in), moving each entry once: a stable sort of the entries
/// themselves would take a scratch copy of half of them, 50 MB at 100,000 cases.
fn sort_by_trial(cases: &mut [Loaded]) {
    if cases.is_sorted_by(|a, b| a.trial <= b.trial) {
        return;
    }
    let mut order: Vec<usize> = (0..cases.len()).collect();
    order.sort_by(|&a, &b| cases[a].trial.cmp(&cases[b].trial));
    // Position `i` takes the entry at `order[i]`: each cycle of the permutation is
    // followed once, swapping along it, and marked done by `order[i] = i`.
    for start in 0..cases.len() {
        let mut i = start;
        while order[i] != start {
            let next = order[i];
            cases.swap(i, next);
            order[i] = i;
            i = next;
        }
        order[i] = i;
    }
}

/// The most characters of a trial name after its suite (`SUITE::` is kept whole, so
/// that nextest's `--exact` still finds the file).
pub(crate) const TRIAL_ID_MAX: usize = 200;

/// Cuts a trial name whose part after the suite is longer than [`TRIAL_ID_MAX`] (a
/// scenario's 1 MB `name`) to its start, a `-` and 16 hex digits of a hash of the whole
/// (stable from run to run, and two long names alike but for their ends stay apart),
/// and says so on stderr, naming the file and the field to shorten.
fn cap_trial_name(l: &mut Loaded) {
    let Some((suite, id)) = l.trial.split_once(SEPARATOR) else {
        return;
    };
    let length = id.chars().count();
    if length <= TRIAL_ID_MAX {
        return;
    }
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(id.as_bytes());
    let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let kept: String = id.chars().take(TRIAL_ID_MAX - hash.len() - 1).collect();
    let capped = format!("{suite}{SEPARATOR}{kept}-{hash}");
    eprintln!(
        "agentest: warning: {}: the trial name made from {} is {length} characters after `{suite}{SEPARATOR}`; \
         it is cut to {TRIAL_ID_MAX} (its start and a hash of the whole): `{capped}`; shorten {} to keep a readable name",
        location_of(l),
        naming_field(&l.file),
        naming_field(&l.file),
    );
    l.trial = capped;
}

/// The field a trial name comes from, by the format of `file`.
fn naming_field(file: &Path) -> &'static str {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if crate::source::is_scenario(&name) {
        "the scenario's `name`"
    } else if crate::source::is_evalstudio(&name) {
        "the eval's, scenario's and persona's `name`s"
    } else {
        "the case's `id`"
    }
}

/// Makes trial names unique, for every format at once: the cases that share one (case
/// `x` of `foo.jsonl` and the scenario `foo.scenario.yaml` named `x` are both `foo::x`)
/// become one trial that fails to load, naming every place the name is defined and how
/// to rename. Neither case runs under a name the other's result could take (in the
/// report, the run store, libtest's list), and the run cannot pass. `cases` is sorted
/// by trial name.
fn one_per_trial(cases: Vec<Loaded>) -> Vec<Loaded> {
    // The usual plan names every trial once, and is kept as it is rather than copied.
    if cases.windows(2).all(|w| w[0].trial != w[1].trial) {
        return cases;
    }
    let mut out: Vec<Loaded> = Vec::with_capacity(cases.len());
    let mut same: Vec<Loaded> = Vec::new();
    for l in cases {
        if same.last().is_some_and(|s| s.trial != l.trial) {
            out.push(defined_once(std::mem::take(&mut same)));
        }
        same.push(l);
    }
    if !same.is_empty() {
        out.push(defined_once(same));
    }
    out
}

/// The one trial of the cases named alike: the case itself when it is alone, else the
/// load error of [`one_per_trial`], located at the first definition.
fn defined_once(mut same: Vec<Loaded>) -> Loaded {
    if same.len() == 1 {
        return same.remove(0);
    }
    let places: Vec<&crate::case::Location> = same.iter().map(location_of).collect();
    let mut files: Vec<&Path> = Vec::new();
    for l in &same {
        if !files.contains(&l.file.as_path()) {
            files.push(&l.file);
        }
    }
    let (times, none, all) = match same.len() {
        2 => ("twice".to_string(), "neither runs", "both"),
        n => (format!("{n} times"), "none of them runs", "all"),
    };
    let first = same[0].clone();
    let trial = &first.trial;
    let message = if places.iter().all(|p| *p == places[0]) {
        format!(
            "the case `{trial}` is loaded {times} from here, so it does not run; \
             {} lists it more than once (one EvalStudio project id given twice?): \
             list it once",
            display_path(&first.file).display()
        )
    } else {
        let others: Vec<String> = places[1..].iter().map(|p| p.to_string()).collect();
        let fix = if files.len() > 1 {
            let shown: Vec<String> = files
                .iter()
                .map(|f| format!("`{}`", display_path(f).display()))
                .collect();
            format!(
                "{} {all} make the suite `{}`: rename one of the files \
                 (a suite is named after its file's path without the extension), \
                 or give one of the cases another id",
                and_list(&shown),
                first.suite
            )
        } else {
            "give one of them another id or name".to_string()
        };
        format!(
            "the trial name `{trial}` is defined {times}, here and at {}, \
             so {none}; {fix}",
            and_list(&others)
        )
    };
    let id = match &first.entry {
        Ok(c) => Some(c.id.clone()),
        Err(e) => e.id.clone(),
    };
    Loaded {
        entry: Err(Box::new(CaseError {
            location: places[0].clone(),
            id,
            field: None,
            message,
        })),
        generation: None,
        ..first
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

/// Where a loaded entry was written.
fn location_of(l: &Loaded) -> &crate::case::Location {
    match &l.entry {
        Ok(c) => &c.location,
        Err(e) => &e.location,
    }
}

/// A message from the command line as a one-turn case, `input::message`.
fn message_case(msg: &str, cwd: &Path) -> Loaded {
    let line = serde_json::json!({"id": "message", "input": msg}).to_string();
    let location = Location {
        file: Arc::new(PathBuf::from("(command line)")),
        line: 1,
        column: 1,
    };
    Loaded {
        generation: None,
        suite: "input".into(),
        trial: "input::message".into(),
        file: cwd.join("(command line)"),
        entry: parse_case(&line, location).map(Box::new).map_err(Box::new),
    }
}

/// `-i agents:NAME` before the run expands it: one entry the generator's cases replace.
fn generator_entry(spec: &crate::source::GeneratorSpec, cwd: &Path) -> Loaded {
    let origin = crate::source::generate::command_line_origin(spec, cwd);
    let mut entry = crate::source::generate::broken(
        &origin,
        "generator".into(),
        format!(
            "the cases of {} are generated when the run starts",
            spec.label()
        ),
    );
    entry.generation = Some(crate::source::Generation::Pending {
        spec: Arc::new(spec.clone()),
        command_line: true,
    });
    entry
}

/// A file's folder (`.` for a bare file name).
pub(crate) fn parent_dir(file: &Path) -> PathBuf {
    file.parent()
        .map(Path::to_path_buf)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorting_by_trial_keeps_the_order_of_entries_named_alike() {
        let cwd = PathBuf::from("/x");
        // Names and the order they were loaded in (the line says which is which).
        let names = [
            "s::c", "s::a", "s::b", "s::a", "s::d", "s::c", "s::a", "s::e",
        ];
        let mut cases: Vec<Loaded> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let mut l = message_case("hi", &cwd);
                l.trial = n.to_string();
                if let Ok(c) = &mut l.entry {
                    c.location.line = i;
                }
                l
            })
            .collect();
        sort_by_trial(&mut cases);
        let got: Vec<(String, usize)> = cases
            .iter()
            .map(|l| (l.trial.clone(), location_of(l).line))
            .collect();
        let want = [
            ("s::a", 1),
            ("s::a", 3),
            ("s::a", 6),
            ("s::b", 2),
            ("s::c", 0),
            ("s::c", 5),
            ("s::d", 4),
            ("s::e", 7),
        ];
        let want: Vec<(String, usize)> = want.iter().map(|(t, l)| (t.to_string(), *l)).collect();
        assert_eq!(got, want);
    }
}
