//! Files written so a reader never sees half of one.

use std::path::{Path, PathBuf};

/// Writes `text` to a temporary file beside `path`, then renames it over `path`, so a
/// reader never sees half a file.
pub(crate) fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}
