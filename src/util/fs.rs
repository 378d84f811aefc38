//! Files written so a reader never sees half of one, and write errors that name their
//! real cause.

use std::io::{Error, ErrorKind};
use std::path::{Path, PathBuf};

/// Writes `text` to a temporary file beside `path`, then renames it over `path`, so a
/// reader never sees half a file. On failure the temporary file is removed: a full disk
/// leaves neither half a report nor a `*.tmp-NNNN` file behind.
pub(crate) fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    create_parents(path)?;
    let tmp = temp_beside(path);
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Checks, before anything is spent on a run, that a file can be written at `path` by
/// [`write_atomically`]: its folder is made and a temporary file is created and removed.
pub(crate) fn check_writable(path: &Path) -> std::io::Result<()> {
    create_parents(path)?;
    let tmp = temp_beside(path);
    std::fs::File::create(&tmp)?;
    std::fs::remove_file(&tmp)
}

/// Creates `path`'s parent folders. Where a parent exists but is a file (`/dev/full/r.json`,
/// `notes.txt/r.json`), the error says which, not `File exists` or `Not a directory`
/// (what `mkdir` answers, naming no path).
pub(crate) fn create_parents(path: &Path) -> std::io::Result<()> {
    let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    std::fs::create_dir_all(dir).map_err(|e| {
        let not_a_folder = dir.ancestors().find(|a| a.exists()).filter(|a| !a.is_dir());
        match not_a_folder {
            Some(file) => Error::new(
                ErrorKind::NotADirectory,
                format!("{} is not a folder", file.display()),
            ),
            None => e,
        }
    })
}

/// `<path>.tmp-<pid>`.
fn temp_beside(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(format!(".tmp-{}", std::process::id()));
    PathBuf::from(tmp)
}
