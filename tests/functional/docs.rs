//! The documentation: `README.md` (the front page) and the mdBook under `docs/`. Every
//! relative link and `#anchor` in them resolves, every page is in the book's
//! `SUMMARY.md`, and the environment variables table (`docs/environment.md`) names
//! exactly the variables `src/settings.rs` reads.
//!
//! The checks read the files as text, as GitHub and mdBook do: headings outside fenced
//! code give the anchors (GitHub's ids, which mdBook's match), and links in fenced code
//! or inline code are not links. Each checker is also run on a small broken input, so
//! that a checker that finds nothing cannot pass for a clean tree.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use crate::common::Scratch;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The id GitHub (and mdBook) gives a heading: its text as rendered (inline code, links
/// and emphasis reduced to their text), lower case, letters, digits, `-` and `_` kept,
/// spaces made `-`, everything else dropped.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // A link's text stands for the link.
    while let Some(open) = rest.find('[') {
        text.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](").and_then(|close| {
            let end = after[close + 2..].find(')')?;
            Some((close, close + 2 + end))
        }) {
            Some((close, end)) => {
                text.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            None => {
                text.push('[');
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// The lines of a Markdown text that are not in fenced code, with their 1-based
/// numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m && trimmed.trim_end() == m => fence = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// The ids of a Markdown text's headings, a repeated one numbered as GitHub does
/// (`x`, `x-1`, `x-2`).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for (_, line) in prose(text) {
        let hashes = line.len() - line.trim_start_matches('#').len();
        let Some(title) = line[hashes..].strip_prefix(' ') else {
            continue;
        };
        if !(1..=6).contains(&hashes) {
            continue;
        }
        let base = slug(title.trim().trim_end_matches('#').trim());
        let mut id = base.clone();
        let mut n = 0;
        while !ids.insert(id.clone()) {
            n += 1;
            id = format!("{base}-{n}");
        }
    }
    ids
}

/// The link targets of a Markdown text, with their line numbers: `[text](target)`,
/// `![alt](target)` and `[label]: target` definitions, outside fenced and inline code.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // The backticks of an inline code span still open (a span may cross lines within a
    // paragraph).
    let mut open_ticks = 0;
    for (number, line) in prose(text) {
        if line.trim().is_empty() {
            open_ticks = 0;
            continue;
        }
        // The line with its code spans blanked out.
        let mut plain = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '`' {
                if open_ticks == 0 {
                    plain.push(c);
                }
                continue;
            }
            let mut run = 1;
            while chars.peek() == Some(&'`') {
                chars.next();
                run += 1;
            }
            if open_ticks == 0 {
                open_ticks = run;
            } else if open_ticks == run {
                open_ticks = 0;
                plain.push(' ');
            }
        }
        if let Some(def) = plain.trim_start().strip_prefix('[') {
            if let Some((label, target)) = def.split_once("]:") {
                if let Some(target) = target.split_whitespace().next() {
                    if !label.contains(['[', ']', '(']) {
                        out.push((number, target.to_string()));
                        continue;
                    }
                }
            }
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let mut depth = 0;
            let end = after
                .char_indices()
                .find(|&(_, c)| match c {
                    '(' => {
                        depth += 1;
                        false
                    }
                    ')' if depth == 0 => true,
                    ')' => {
                        depth -= 1;
                        false
                    }
                    _ => false,
                })
                .map_or(after.len(), |(i, _)| i);
            let target = after[..end].split_whitespace().next().unwrap_or_default();
            let target = target.trim_start_matches('<').trim_end_matches('>');
            out.push((number, target.to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// `path` with its `.` and `..` parts resolved, without touching the file system.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            // Past the start, `..` stays (the link leaves the tree).
            Component::ParentDir => {
                if out.as_os_str().is_empty() || out.ends_with("..") {
                    out.push("..");
                } else {
                    out.pop();
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Every broken link of `files` (paths relative to `root`), as
/// `FILE:LINE: (TARGET) what is wrong`. A link must name a file or folder that exists,
/// an anchor a heading of the Markdown file it points into, and a link in the book
/// (under `book`) must stay in the book, since only the book's folder is published.
fn broken_links(root: &Path, book: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut errors = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(root.join(file))
            .unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        for (line, target) in links(&text) {
            let mut say = |what: String| {
                errors.push(format!("{}:{line}: ({target}) {what}", file.display()));
            };
            if target.is_empty() {
                say("an empty link".into());
                continue;
            }
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let linked = if path.is_empty() {
                file.clone()
            } else if path.starts_with('/') {
                say("an absolute path; links are relative to their file".into());
                continue;
            } else {
                normal(&file.parent().unwrap_or(Path::new("")).join(path))
            };
            if linked.as_os_str().is_empty() || linked.starts_with("..") {
                say("points outside the repository".into());
                continue;
            }
            if file.starts_with(book) && !linked.starts_with(book) {
                say(format!(
                    "points outside the book ({}/), which is all mdBook publishes",
                    book.display()
                ));
                continue;
            }
            if !root.join(&linked).exists() {
                say(format!("no file {}", linked.display()));
                continue;
            }
            if anchor.is_empty() {
                continue;
            }
            if linked.extension().is_none_or(|e| e != "md") {
                say(format!(
                    "an anchor into {}, which is not Markdown",
                    linked.display()
                ));
                continue;
            }
            let there = std::fs::read_to_string(root.join(&linked)).unwrap_or_default();
            if !anchors(&there).contains(anchor) {
                say(format!("no heading #{anchor} in {}", linked.display()));
            }
        }
    }
    errors
}

/// The Markdown files under `dir` (relative to `root`), sorted, leaving out the book's
/// build output (`docs/book/`).
fn markdown_files(root: &Path, dir: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
        for entry in entries.flatten() {
            let rel = dir.join(entry.file_name());
            if entry.path().is_dir() {
                if rel != Path::new("docs/book") {
                    walk(root, &rel, out);
                }
            } else if rel.extension().is_some_and(|e| e == "md") {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, dir, &mut out);
    out.sort();
    out
}

/// The README and every page of the book.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("README.md")];
    files.extend(markdown_files(repo(), Path::new("docs")));
    files
}

/// Every relative link and anchor in `README.md` and `docs/**/*.md` resolves.
fn every_link_and_anchor_resolves() {
    let files = documents();
    assert!(
        files.len() > 20,
        "the book has too few pages to be the book: {files:?}"
    );
    let errors = broken_links(repo(), Path::new("docs"), &files);
    assert!(
        errors.is_empty(),
        "{} broken link(s):\n{}",
        errors.len(),
        errors.join("\n")
    );
    // Enough links were seen for the check to mean something.
    let seen: usize = files
        .iter()
        .map(|f| links(&std::fs::read_to_string(repo().join(f)).unwrap()).len())
        .sum();
    assert!(seen > 150, "only {seen} links found");
}

/// Every page of the book is in `SUMMARY.md` (mdBook renders no other page, so a link to
/// one would be broken on the published book).
fn every_page_is_in_the_summary() {
    let summary = std::fs::read_to_string(repo().join("docs/SUMMARY.md")).unwrap();
    let listed: BTreeSet<PathBuf> = links(&summary)
        .into_iter()
        .map(|(_, target)| normal(&Path::new("docs").join(target)))
        .collect();
    let missing: Vec<String> = markdown_files(repo(), Path::new("docs"))
        .into_iter()
        .filter(|page| page != Path::new("docs/SUMMARY.md") && !listed.contains(page))
        .map(|page| page.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "pages missing from docs/SUMMARY.md: {missing:?}"
    );
    let book = std::fs::read_to_string(repo().join("docs/book.toml")).unwrap();
    assert!(book.contains("src = \".\""), "{book}");
}

/// The slugs are GitHub's, on headings the docs have, and the checker finds each kind of
/// broken link in a small tree, naming file and line, and nothing else.
fn the_link_checker_finds_broken_links() {
    for (heading, id) in [
        ("`type = \"langgraph\"` agents", "type--langgraph-agents"),
        (
            "Success and failure criteria (EvalStudio's evaluation loop)",
            "success-and-failure-criteria-evalstudios-evaluation-loop",
        ),
        (
            "HTTP agents of any shape: `openai-chat`, `custom`, SSE",
            "http-agents-of-any-shape-openai-chat-custom-sse",
        ),
        (
            "Configuration reference (`agentest.toml`)",
            "configuration-reference-agentesttoml",
        ),
        ("See [the store](store.md) now", "see-the-store-now"),
    ] {
        assert_eq!(slug(heading), id, "{heading}");
    }
    assert_eq!(
        anchors("# A\n\n```sh\n# not a heading\n```\n## A\n#nope\n## b #\n"),
        BTreeSet::from(["a", "a-1", "b"].map(String::from))
    );

    let s = Scratch::named("docs", "links");
    s.write(
        "README.md",
        "# Top\n\
         \n\
         ## A `b` \"c\" d\n\
         \n\
         [fine](docs/p.md#one) and [also](#a-b-c-d), ![img](docs/i.png)\n\
         [no anchor](docs/p.md#two) [no file](docs/q.md)\n\
         [off](https://example.com/x#y) `[code](nowhere.md)` [self](#nope)\n\
         ```md\n[fenced](nowhere.md)\n```\n\
         [ref]: docs/gone.md\n",
    );
    s.write(
        "docs/p.md",
        "# One\n\n[out of the book](../README.md) [up](../../x.md)\n[anchor into an image](i.png#x)\n",
    );
    s.write("docs/i.png", "");
    let files = [PathBuf::from("README.md"), PathBuf::from("docs/p.md")];
    let errors = broken_links(s.path(), Path::new("docs"), &files);
    assert_eq!(
        errors,
        [
            "README.md:6: (docs/p.md#two) no heading #two in docs/p.md",
            "README.md:6: (docs/q.md) no file docs/q.md",
            "README.md:7: (#nope) no heading #nope in README.md",
            "README.md:11: (docs/gone.md) no file docs/gone.md",
            "docs/p.md:3: (../README.md) points outside the book (docs/), which is all mdBook publishes",
            "docs/p.md:3: (../../x.md) points outside the repository",
            "docs/p.md:4: (i.png#x) an anchor into docs/i.png, which is not Markdown",
        ],
        "{errors:#?}"
    );
}

/// The variables a `settings.rs` reads, from its text before its tests: the string
/// literals `"AGENTEST_..."`, and any other variable-like literal passed as the first
/// argument of a call (`get("CI")`). A literal ending in `_` is a prefix
/// (`"AGENTEST_LLMS_"`), one starting with `_` a suffix such names end with
/// (`"_MODEL"`). Returns (names, prefixes, suffixes).
fn settings_variables(text: &str) -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let (mut names, mut prefixes, mut suffixes) = Default::default();
    let is_name = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
            && s.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    };
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut parts = line.split('"');
        let mut before = parts.next().unwrap_or_default();
        // Odd parts are literals (settings.rs has no escaped quotes in them).
        while let (Some(literal), Some(after)) = (parts.next(), parts.next()) {
            let ours = literal.starts_with("AGENTEST_");
            let set: Option<&mut BTreeSet<String>> = match () {
                _ if !is_name(literal) => None,
                _ if literal.starts_with('_') => Some(&mut suffixes),
                _ if ours && literal.ends_with('_') => Some(&mut prefixes),
                _ if ours || before.ends_with('(') => Some(&mut names),
                _ => None,
            };
            if let Some(set) = set {
                set.insert(literal.to_string());
            }
            before = after;
        }
    }
    (names, prefixes, suffixes)
}

/// The variables a Markdown page's table headed `| variable |` names in its first
/// column (each in backticks), with their line numbers.
fn table_variables(page: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_table = false;
    for (i, line) in page.lines().enumerate() {
        if line.starts_with("| variable |") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        let Some(row) = line.strip_prefix('|') else {
            break;
        };
        let cell = row.split('|').next().unwrap_or_default();
        for (n, name) in cell.split('`').enumerate() {
            if n % 2 == 1
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || "_<>".contains(c))
                && name.chars().any(|c| c.is_ascii_uppercase())
            {
                out.push((i + 1, name.to_string()));
            }
        }
    }
    out
}

/// What differs between the variables `settings` reads and the table of `page` (named
/// `page_name` in messages): each variable read and not in the table, each prefix no
/// row starts with, and each row that names no variable read.
fn environment_mismatches(settings: &str, page: &str, page_name: &str) -> Vec<String> {
    let (names, prefixes, suffixes) = settings_variables(settings);
    let table = table_variables(page);
    let mut errors = Vec::new();
    if table.is_empty() {
        errors.push(format!("{page_name}: no `| variable |` table"));
    }
    for name in &names {
        if !table.iter().any(|(_, row)| row == name) {
            errors.push(format!(
                "src/settings.rs reads {name}; {page_name} does not list it"
            ));
        }
    }
    for prefix in &prefixes {
        if !table
            .iter()
            .any(|(_, row)| row.starts_with(prefix.as_str()))
        {
            errors.push(format!(
                "src/settings.rs reads variables starting {prefix}; {page_name} lists none"
            ));
        }
    }
    for (line, row) in &table {
        let known = names.contains(row)
            || prefixes.iter().any(|p| {
                row.starts_with(p.as_str())
                    && (suffixes.is_empty() || suffixes.iter().any(|s| row.ends_with(s.as_str())))
            });
        if !known {
            errors.push(format!(
                "{page_name}:{line}: {row} is not a variable src/settings.rs reads"
            ));
        }
    }
    errors
}

/// The environment variables table names every variable `src/settings.rs` reads, and
/// nothing else.
fn the_environment_table_matches_settings() {
    let settings = std::fs::read_to_string(repo().join("src/settings.rs")).unwrap();
    let page = std::fs::read_to_string(repo().join("docs/environment.md")).unwrap();
    let (names, prefixes, _) = settings_variables(&settings);
    // The reading itself found what settings.rs is known to read.
    for name in [
        "AGENTEST_REPORT",
        "AGENTEST_STORE",
        "CI",
        "RUST_TEST_THREADS",
    ] {
        assert!(names.contains(name), "{name} not found in {names:?}");
    }
    assert!(prefixes.contains("AGENTEST_LLMS_"), "{prefixes:?}");
    let errors = environment_mismatches(&settings, &page, "docs/environment.md");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The comparison reports a variable the table lacks and a row that names none, and
/// reads neither comments, tests nor other literals as variables.
fn the_environment_check_finds_mismatches() {
    let settings = r#"
// get("AGENTEST_IN_A_COMMENT")
let a = get("AGENTEST_A");
let ci = get("CI");
let on = matches!(get("X_FLAG"), Some("1"));
let scope = "LLM".to_string();
let over = k.starts_with("AGENTEST_P_") && k.ends_with("_MODEL");
#[cfg(test)]
mod tests { const X: &str = "AGENTEST_ONLY_IN_TESTS"; }
"#;
    let page = "\
# Environment

| variable | values | effect |
|---|---|---|
| `AGENTEST_A` | x | y |
| `AGENTEST_P_<NAME>_MODEL`, `AGENTEST_P_<NAME>_URL` | x | y |
| `AGENTEST_GONE` | x | y |

After the table: `NOT_A_ROW`.
";
    assert_eq!(
        environment_mismatches(settings, page, "env.md"),
        [
            "src/settings.rs reads CI; env.md does not list it",
            "src/settings.rs reads X_FLAG; env.md does not list it",
            "env.md:6: AGENTEST_P_<NAME>_URL is not a variable src/settings.rs reads",
            "env.md:7: AGENTEST_GONE is not a variable src/settings.rs reads",
        ]
    );
    assert_eq!(
        environment_mismatches(settings, "no table here", "env.md")[0],
        "env.md: no `| variable |` table"
    );
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        every_link_and_anchor_resolves,
        every_page_is_in_the_summary,
        the_link_checker_finds_broken_links,
        the_environment_table_matches_settings,
        the_environment_check_finds_mismatches,
    ]
}
