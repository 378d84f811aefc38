//! Discovery: the suite files under a suites root, and the names of their trials
//! (`<suite path without the extension>::<id>`).

use super::formats::FORMATS;
use crate::errors::SuiteError;
use crate::source::SEPARATOR;
use std::path::{Path, PathBuf};

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
                    && !FORMATS.iter().any(|f| (f.skips_dir)(&dir, &name))
                {
                    stack.push(path);
                }
            } else if FORMATS.iter().any(|f| (f.discovered)(&dir, &name))
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
    let mut found: Vec<PathBuf> = FORMATS
        .iter()
        .flat_map(|f| (f.trial_files)(root, suite))
        .collect();
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::suite_name;

    #[test]
    fn suite_names_and_trial_files() {
        let root = Path::new("/r");
        assert_eq!(
            suite_name(root, Path::new("/r/billing/refunds.jsonl")),
            "billing/refunds"
        );
        assert!(files_for_trial(root, "../x::T1").is_empty());
    }
}
