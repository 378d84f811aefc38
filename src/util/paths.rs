//! Paths: files kept beside a suite, and paths as shown to users.

use std::path::{Path, PathBuf};

/// A case id as a file name: letters, digits, `.`, `_` and `-` stay, anything else is
/// `%HH` (its UTF-8 bytes in hex), so two ids never share a file (`a b` is `a%20b`,
/// `a_b` stays `a_b`).
pub(crate) fn file_name_for_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        if c.is_ascii_alphanumeric() || "._-".contains(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// A file kept beside a suite file, per case: `<dir>/<folder>/<id><ext>` where
/// `folder` is made from the suite's file stem (`expense.golden`, `.cassettes/expense`).
pub(crate) fn beside(
    suite_file: &Path,
    folder: impl Fn(&str) -> PathBuf,
    id: &str,
    ext: &str,
) -> PathBuf {
    let stem = suite_file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = suite_file.parent().unwrap_or(Path::new(""));
    dir.join(folder(&stem))
        .join(format!("{}{ext}", file_name_for_id(id)))
}

/// A path shown to users: relative to the working directory when it is under it.
pub fn display_path(path: &Path) -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(&cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
}
