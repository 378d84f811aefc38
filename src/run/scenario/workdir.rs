//! A scenario's `local` environment: a fresh folder under the system's temp folder,
//! holding `setup.virtual_fs`, where code steps run and file evaluators look. It is
//! removed when the case ends, unless `--keep-env` (`AGENTEST_KEEP_ENV`) keeps it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The folder, removed on drop unless kept.
#[derive(Debug)]
pub(crate) struct Workdir {
    path: PathBuf,
    keep: bool,
}

impl Workdir {
    /// Creates the folder for `trial` and writes `files` (relative paths, checked at
    /// load to stay inside) into it.
    pub(crate) fn create(
        trial: &str,
        files: &[(String, String)],
        keep: bool,
    ) -> std::io::Result<Workdir> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name: String = trial
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .take(48)
            .collect();
        let path = std::env::temp_dir().join(format!(
            "agentest-env-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)?;
        let dir = Workdir { path, keep };
        for (rel, text) in files {
            let file = dir.path.join(rel);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&file, text)?;
        }
        Ok(dir)
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Every file in it, as relative `/`-separated paths, sorted.
    pub(crate) fn files(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self.path.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                match e.file_type() {
                    Ok(t) if t.is_dir() => stack.push(p),
                    Ok(_) => {
                        if let Ok(rel) = p.strip_prefix(&self.path) {
                            let parts: Vec<String> = rel
                                .components()
                                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                                .collect();
                            out.push(parts.join("/"));
                        }
                    }
                    Err(_) => {}
                }
            }
        }
        out.sort();
        out
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("agentest: kept the environment at {}", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_written_listed_and_removed() {
        let files = vec![
            ("config.json".to_string(), "{}".to_string()),
            ("src/main.py".to_string(), "print(1)".to_string()),
        ];
        let dir = Workdir::create("s::a b", &files, false).unwrap();
        let path = dir.path().to_path_buf();
        assert_eq!(
            std::fs::read_to_string(path.join("src/main.py")).unwrap(),
            "print(1)"
        );
        assert_eq!(dir.files(), ["config.json", "src/main.py"]);
        drop(dir);
        assert!(!path.exists(), "removed at the end");
    }
}
