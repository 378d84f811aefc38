//! `agentest review` and `agentest accept`: the pending `.new` golden files, their diffs,
//! and accepting or rejecting them.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::errors::GoldenError;
use crate::record::golden::diff;

/// Every `<file>.new` inside a `*.golden` folder under `root`, sorted.
pub(crate) fn pending(root: &Path) -> Result<Vec<PathBuf>, GoldenError> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| GoldenError::List {
            path: dir.clone(),
            source,
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_dir && name != "target" && name != "node_modules" && !name.starts_with('.') {
                stack.push(path);
            } else if !is_dir
                && name.ends_with(".new")
                && dir
                    .file_name()
                    .is_some_and(|d| d.to_string_lossy().ends_with(".golden"))
            {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The golden file a `.new` file would replace.
fn target(new: &Path) -> PathBuf {
    let s = new.as_os_str().to_string_lossy();
    PathBuf::from(s.strip_suffix(".new").unwrap_or(&s).to_string())
}

/// The diff of one pending file against its golden file (or all of it, for a new one).
pub(crate) fn describe(new: &Path) -> Result<String, GoldenError> {
    let actual = std::fs::read_to_string(new).map_err(|source| GoldenError::ReadPending {
        path: new.to_path_buf(),
        source,
    })?;
    let golden_path = target(new);
    Ok(match std::fs::read_to_string(&golden_path) {
        Ok(golden) => diff(&golden, &actual),
        Err(_) => format!("(new golden file)\n{}", diff("", &actual)),
    })
}

/// Accepts one pending file: it replaces its golden file.
pub(crate) fn accept(new: &Path) -> Result<PathBuf, GoldenError> {
    let golden = target(new);
    std::fs::rename(new, &golden).map_err(|source| GoldenError::Accept {
        path: new.to_path_buf(),
        source,
    })?;
    Ok(golden)
}

/// Colours a unified diff's added and removed lines.
pub(crate) fn paint_diff(text: &str, color: bool) -> String {
    if !color {
        return text.to_string();
    }
    text.lines()
        .map(|l| {
            if l == "--- golden" || l == "+++ actual" {
                format!("\x1b[1m{l}\x1b[0m")
            } else if l.starts_with('+') {
                format!("\x1b[32m{l}\x1b[0m")
            } else if l.starts_with('-') {
                format!("\x1b[31m{l}\x1b[0m")
            } else if l.starts_with("@@") {
                format!("\x1b[36m{l}\x1b[0m")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `agentest accept`: accepts every pending file under `root`.
pub(crate) fn accept_all(root: &Path) -> Result<usize, GoldenError> {
    let files = pending(root)?;
    for f in &files {
        let golden = accept(f)?;
        println!("accepted {}", crate::util::display_path(&golden).display());
    }
    if files.is_empty() {
        println!("no pending golden files under {}", root.display());
    }
    Ok(files.len())
}

/// `agentest review`: shows each pending file's diff; on a terminal asks whether to
/// accept, reject (delete the `.new`) or skip it. Returns how many are still pending.
pub(crate) fn review(root: &Path, color: bool, accept_every: bool) -> Result<usize, GoldenError> {
    let files = pending(root)?;
    if files.is_empty() {
        println!("no pending golden files under {}", root.display());
        return Ok(0);
    }
    let ask = !accept_every && std::io::stdin().is_terminal();
    let mut left = 0;
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    for (i, f) in files.iter().enumerate() {
        let shown = crate::util::display_path(&target(f)).display().to_string();
        println!("\n[{}/{}] {shown}", i + 1, files.len());
        println!("{}", paint_diff(describe(f)?.trim_end(), color));
        if accept_every {
            accept(f)?;
            println!("accepted");
            continue;
        }
        if !ask {
            left += 1;
            continue;
        }
        loop {
            print!("accept (a), reject (r), skip (s), quit (q)? ");
            let _ = std::io::stdout().flush();
            let answer = match lines.next() {
                Some(Ok(l)) => l.trim().to_lowercase(),
                _ => "q".into(),
            };
            match answer.as_str() {
                "a" | "accept" | "y" => {
                    accept(f)?;
                    println!("accepted");
                }
                "r" | "reject" | "n" => {
                    std::fs::remove_file(f).map_err(|source| GoldenError::Delete {
                        path: f.clone(),
                        source,
                    })?;
                    println!("rejected");
                }
                "s" | "skip" => left += 1,
                "q" | "quit" => return Ok(left + files.len() - i),
                _ => continue,
            }
            break;
        }
    }
    if !ask && left > 0 {
        println!("\n{left} pending; run `agentest accept` to accept them all, or `agentest review` on a terminal to go one by one");
    }
    Ok(left)
}
