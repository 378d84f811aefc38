//! EvalStudio projects (`evalstudio.config.json` and its filesystem store, `data/*.json`),
//! a store read without a config (`evals.json` with `scenarios.json` beside it), a
//! `scenarios.json` alone, and conversation seed files (`*conversation-seed.json`).

mod config;
mod project;
mod records;

use std::path::{Path, PathBuf};

pub(crate) use project::{load, read_personas_file};

/// The config file of an EvalStudio project or workspace.
pub(crate) const CONFIG_FILE: &str = "evalstudio.config.json";

/// What a listed EvalStudio file stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listed {
    /// `evalstudio.config.json`: every eval of its project(s).
    Config,
    /// `evals.json`: every eval of the store it is in.
    Evals,
    /// `scenarios.json` alone: each scenario once per persona.
    Scenarios,
    /// A conversation seed: one exchange.
    Seed,
}

/// What a file named `name` is, read as the user named it.
pub(crate) fn kind_of(name: &str) -> Option<Listed> {
    match name {
        CONFIG_FILE => Some(Listed::Config),
        "evals.json" => Some(Listed::Evals),
        "scenarios.json" => Some(Listed::Scenarios),
        n if n.ends_with("conversation-seed.json") => Some(Listed::Seed),
        _ => None,
    }
}

/// Whether discovery lists `name` in `dir`: a project's config; a store's `evals.json`;
/// a `scenarios.json` with no `evals.json` beside it (else it is read with the evals);
/// a seed file.
pub(crate) fn listed_in(dir: &Path, name: &str) -> bool {
    match kind_of(name) {
        Some(Listed::Scenarios) => !dir.join("evals.json").is_file(),
        Some(Listed::Evals) => !dir.join(CONFIG_FILE).is_file(),
        Some(_) => true,
        None => false,
    }
}

/// Whether discovery stays out of `dir` (named `name`, in `parent`): the store of a
/// project whose config is listed, which the config reads.
pub(crate) fn skipped(parent: &Path, name: &str) -> bool {
    (name == "data" || name == "projects") && parent.join(CONFIG_FILE).is_file()
}

/// The EvalStudio file a trial of `suite` (`shop/booking-test`) comes from, when one
/// does: the nearest project above it, or the file `<suite>.json` read alone.
pub(crate) fn file_for_suite(root: &Path, suite: &str) -> Option<PathBuf> {
    let alone = root.join(format!("{suite}.json"));
    if alone
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| matches!(kind_of(n), Some(Listed::Scenarios | Listed::Seed)))
        && alone.is_file()
    {
        return Some(alone);
    }
    let mut dir = root.join(suite);
    while dir.starts_with(root) {
        for candidate in [
            dir.join(CONFIG_FILE),
            dir.join("data").join("evals.json"),
            dir.join("evals.json"),
        ] {
            if candidate.is_file() {
                return Some(candidate);
            }
        }
        if !dir.pop() {
            break;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_leads_back_to_its_project_file() {
        let root = std::env::temp_dir().join(format!("agentest-es-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for f in [
            "shop/evalstudio.config.json",
            "shop/data/evals.json",
            "plain/data/evals.json",
            "flat/evals.json",
            "loose/scenarios.json",
            "talk/conversation-seed.json",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "[]").unwrap();
        }
        let found = |suite: &str| {
            file_for_suite(&root, suite)
                .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
        };
        assert_eq!(
            found("shop/booking-test").as_deref(),
            Some("shop/evalstudio.config.json")
        );
        // A workspace's project level sits between the config and the eval.
        assert_eq!(
            found("shop/alpha/booking-test").as_deref(),
            Some("shop/evalstudio.config.json")
        );
        assert_eq!(
            found("plain/eval").as_deref(),
            Some("plain/data/evals.json")
        );
        assert_eq!(found("flat/eval").as_deref(), Some("flat/evals.json"));
        assert_eq!(
            found("loose/scenarios").as_deref(),
            Some("loose/scenarios.json")
        );
        assert_eq!(
            found("talk/conversation-seed").as_deref(),
            Some("talk/conversation-seed.json")
        );
        assert_eq!(found("nowhere/eval"), None);
        // Discovery lists each project once: the config, not its store.
        assert!(listed_in(&root.join("shop"), CONFIG_FILE));
        assert!(skipped(&root.join("shop"), "data"));
        assert!(!listed_in(&root.join("flat"), "scenarios.json"));
        assert!(listed_in(&root.join("loose"), "scenarios.json"));
        assert!(!listed_in(&root.join("loose"), "personas.json"));
        let _ = std::fs::remove_dir_all(&root);
    }
}
