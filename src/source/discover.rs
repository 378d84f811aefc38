//! Discovery: the suite files under a suites root, and the names of their trials
//! (`<suite path without the extension>::<id>`).

use crate::errors::SuiteError;
use std::path::{Path, PathBuf};

/// The separator between suite and case id in trial names.
pub const SEPARATOR: &str = "::";

/// Finds every suite file under `root`, sorted: `*.jsonl`, ElizaOS scenarios
/// (`*.scenario.yaml`, `*.scenario.yml`) and matrices, and EvalStudio projects (their
/// `evalstudio.config.json`, else a store's `evals.json`, else a `scenarios.json` alone)
/// and conversation seeds (`*conversation-seed.json`), and tau2-bench task files
/// (`tasks.json`, `tasks_*.json`, `task_*.json`).
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
                if !name.ends_with(".golden")
                    && name != "target"
                    && name != "node_modules"
                    && !crate::source::evalstudio::skipped(&dir, &name)
                {
                    stack.push(path);
                }
            } else if (name.ends_with(".jsonl")
                || crate::source::yaml::is_scenario(&name)
                || crate::source::tau2::is_task_file(&name.to_lowercase())
                || crate::source::evalstudio::listed_in(&dir, &name))
                && !(kind.is_symlink() && path.is_dir())
            {
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
    [".jsonl", ".json"]
        .iter()
        .chain(&crate::source::yaml::SCENARIO_ENDINGS)
        .find_map(|e| s.strip_suffix(e))
        .map(str::to_string)
        .unwrap_or(s)
}

/// The suite files a trial name may come from (for nextest's `--exact NAME`), in the
/// order discovery lists them: `root/<suite>.jsonl`, the scenario files
/// `root/<suite>.scenario.yaml` and `.yml`, a tau2 tasks file `root/<suite>.json`, and
/// an EvalStudio project's file. Every one that exists is returned, not the first: two
/// files making one suite (`foo.jsonl`, `foo.scenario.yaml`) may define the trial twice,
/// which only loading both can tell.
pub(crate) fn files_for_trial(root: &Path, trial: &str) -> Vec<PathBuf> {
    // Ids never hold `::` (a matrix's trial ids are `combination::run-N`): the first
    // one ends the suite.
    let Some((suite, _)) = trial.split_once(SEPARATOR) else {
        return Vec::new();
    };
    if suite.is_empty()
        || suite
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
    {
        return Vec::new();
    }
    let tasks = root
        .join(format!("{suite}.json"))
        .file_name()
        .is_some_and(|n| crate::source::tau2::is_task_file(&n.to_string_lossy().to_lowercase()));
    let mut found: Vec<PathBuf> = [".jsonl"]
        .iter()
        .chain(&crate::source::yaml::SCENARIO_ENDINGS)
        .chain(tasks.then_some(&".json"))
        .map(|e| root.join(format!("{suite}{e}")))
        .filter(|p| p.is_file())
        .collect();
    found.extend(crate::source::evalstudio::file_for_suite(root, suite));
    found.sort();
    found.dedup();
    found
}
