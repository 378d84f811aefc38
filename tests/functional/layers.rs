//! The layer order of `src/`, true and tested.
//!
//! Top-level modules under `src/` depend one way, in [`ORDER`]: a module may use only
//! the modules to its left. These tests read every file under `src/` and find each
//! reference to a module of the crate: a `use crate::…`, `use super::…` or `use self::…`
//! item (and `use child::…` of a child module), and a `crate::…`, `$crate::…`,
//! `super::…` or `self::…` path in code, test modules included. They fail, naming the
//! file, the line and the edge, on:
//! - an edge from one top-level module to one to its right, or to one the order lacks;
//! - a file circle: files that import each other, directly or around a loop.
//!
//! **Which file an edge reaches.** A path reaches the innermost module it names
//! (`crate::record::format::common::x` reaches `record/format/common.rs`). What it names
//! inside that module, if the module brings the name in with a `use` (a re-export, or a
//! private import its children read as `super::Name`), is followed to the file the
//! name comes from: `use crate::record::Recorder` is an edge to `record/recorder.rs`,
//! which defines it, not to `record/mod.rs`, which re-exports it.
//!
//! **Re-exports are aliases.** In the circle graph a `pub use` (any `pub(…)`) is not an
//! edge of the file it is written in unless that file's own code names what it
//! re-exports. So a `mod.rs` that only declares child modules and re-exports their items
//! is a pass-through: a child importing its sibling's item through it (`use
//! super::Item`) is an edge to the sibling, and no false circle runs through `mod.rs`.
//! In the layer check every edge counts, re-exports included: a module that re-exports
//! another's item depends on it. A `mod.rs` with code of its own is a file like any
//! other: when it calls a child that uses one of its helpers (`super::helper`), the two
//! are a circle, and the helper goes to a file of its own (as `record/format/html/
//! escape.rs`, `source/assertion/values.rs`).
//!
//! The reading is lexical (tokens, not a parse), so paths inside macro calls count too.
//! A module imported by name (`use crate::record::console;`, then `console::x()`) is an
//! edge to that module's file. Comments and strings (so doc links) are not read. `src/lib.rs`, the crate's root,
//! declares every module and re-exports the public API: it stands above every layer.
//! `src/main.rs` is another crate (it names `agentest::`, not `crate::`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The top-level modules of `src/`, lowest first: a module may use only those to its
/// left. The architecture doc shows the same order.
pub const ORDER: &[&str] = &[
    "util", "protocol", "case", "errors", "config", "source", "settings", "record", "check",
    "plan", "llm", "trace", "agent", "run", "harness", "cli",
];

/// File circles known and still to be removed, each as its files under `src/`. Each
/// must still be a circle, exactly these files: once one is gone (or has changed), the
/// test says so, and its entry goes (or is rewritten).
const KNOWN_CIRCLES: &[&[&str]] = &[];

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        every_edge_follows_the_layer_order,
        no_files_import_each_other_around_a_circle,
        the_lexer_skips_comments_strings_chars_and_lifetimes,
        use_trees_flatten_into_paths_and_bindings,
        super_and_self_resolve_from_the_inline_module_they_are_written_in,
        a_name_is_followed_through_re_exports_to_the_file_that_defines_it,
        an_edge_to_the_right_is_named_with_its_file_and_line,
        a_circle_is_found_and_a_pass_through_mod_rs_makes_none,
        a_re_export_the_file_itself_uses_is_an_edge,
        a_known_circle_that_is_gone_or_changed_is_reported,
    ]
}

// ---------------------------------------------------------------------------------------
// The tests on `src/`
// ---------------------------------------------------------------------------------------

fn every_edge_follows_the_layer_order() {
    let krate = Crate::read(&src_dir());
    let wrong = krate.order_violations(ORDER);
    assert!(
        wrong.is_empty(),
        "{} edge(s) against the layer order {}:\n{}",
        wrong.len(),
        ORDER.join(" → "),
        wrong.join("\n")
    );
}

fn no_files_import_each_other_around_a_circle() {
    let krate = Crate::read(&src_dir());
    let problems = circle_problems(&krate, KNOWN_CIRCLES);
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

fn src_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// What is wrong with the crate's file circles, given those `known`: every circle not
/// known (with the loop that makes it), and every known one that is no longer exactly
/// a circle.
fn circle_problems(krate: &Crate, known: &[&[&str]]) -> Vec<String> {
    let circles = krate.circles();
    let known: Vec<Vec<String>> = known
        .iter()
        .map(|c| {
            let mut files: Vec<String> = c.iter().map(|f| f.to_string()).collect();
            files.sort();
            files
        })
        .collect();
    let mut problems = Vec::new();
    for circle in circles.iter().filter(|c| !known.contains(c)) {
        problems.push(format!(
            "a file circle among {}:\n{}",
            circle.join(", "),
            krate.describe_loop(circle)
        ));
    }
    for gone in known.iter().filter(|k| !circles.contains(k)) {
        problems.push(format!(
            "KNOWN_CIRCLES lists {}, which is no longer exactly a circle: take it out \
             (or write the circle it has become)",
            gone.join(", ")
        ));
    }
    problems
}

// ---------------------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------------------

/// What the scanner tells apart; everything else is `Other`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Open,
    Close,
    Semi,
    Comma,
    Star,
    Other(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

/// The tokens of Rust source `src`, without comments, strings, byte strings, raw
/// strings, character literals and lifetimes' quotes; each with its line.
fn lex(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut tokens = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        let (ch, next) = (c[i], at(i + 1));
        let start_line = line;
        let tok = if ch == '\n' {
            line += 1;
            i += 1;
            None
        } else if ch.is_whitespace() {
            i += 1;
            None
        } else if ch == '/' && next == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            None
        } else if ch == '/' && next == '*' {
            i = skip_block_comment(&c, i, &mut line);
            None
        } else if let Some(end) = skip_string(&c, i, &mut line) {
            i = end;
            None
        } else if ch == '\'' || (ch == 'b' && next == '\'') {
            i = skip_char_or_lifetime(&c, if ch == 'b' { i + 1 } else { i });
            None
        } else if ch.is_alphabetic() || ch == '_' {
            let start = if ch == 'r' && next == '#' { i + 2 } else { i };
            i = start;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            Some(Tok::Ident(c[start..i].iter().collect()))
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            Some(Tok::Other('0'))
        } else {
            i += if ch == ':' && next == ':' { 2 } else { 1 };
            Some(match ch {
                ':' if next == ':' => Tok::Sep,
                '{' => Tok::Open,
                '}' => Tok::Close,
                ';' => Tok::Semi,
                ',' => Tok::Comma,
                '*' => Tok::Star,
                other => Tok::Other(other),
            })
        };
        if let Some(tok) = tok {
            tokens.push(Token {
                tok,
                line: start_line,
            });
        }
    }
    tokens
}

/// Past the (nested) block comment that starts at `i`.
fn skip_block_comment(c: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut depth = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            *line += usize::from(c[i] == '\n');
            i += 1;
        }
    }
    i
}

/// Past the string literal (`"…"`, `b"…"`, `c"…"`, `r#"…"#`, `br"…"`) starting at `i`,
/// or `None` when none starts there.
fn skip_string(c: &[char], i: usize, line: &mut usize) -> Option<usize> {
    let mut j = i;
    if matches!(c[j], 'b' | 'c') {
        j += 1;
    }
    let raw = c.get(j) == Some(&'r');
    if raw {
        j += 1;
    }
    let hashes = if raw {
        c[j.min(c.len())..]
            .iter()
            .take_while(|&&h| h == '#')
            .count()
    } else {
        0
    };
    j += hashes;
    if c.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < c.len() {
        match c[j] {
            '\\' if !raw => {
                *line += usize::from(c.get(j + 1) == Some(&'\n'));
                j += 2;
            }
            '"' if c[j + 1..].iter().take_while(|&&h| h == '#').count() >= hashes => {
                return Some(j + 1 + hashes);
            }
            ch => {
                *line += usize::from(ch == '\n');
                j += 1;
            }
        }
    }
    Some(j)
}

/// Past the character literal at `i` (`'a'`, `'\n'`, `'\u{1F600}'`), or past the quote
/// of a lifetime (`'a`), whose name is then read as an identifier.
fn skip_char_or_lifetime(c: &[char], i: usize) -> usize {
    if c.get(i + 1) == Some(&'\\') {
        let mut j = i + 3;
        while j < c.len() && c[j] != '\'' {
            j += 1;
        }
        j + 1
    } else if c.get(i + 2) == Some(&'\'') {
        i + 3
    } else {
        i + 1
    }
}

// ---------------------------------------------------------------------------------------
// One file's references
// ---------------------------------------------------------------------------------------

/// A reference to a module path, as written in one place.
#[derive(Debug, Clone)]
struct Reference {
    line: usize,
    /// The module it is written in (the file's, or an inline module's in it).
    scope: Vec<String>,
    /// The path as written (`super`, `self`, `crate` included).
    raw: Vec<String>,
    /// A `pub use`.
    reexport: bool,
    /// The name a `use` brings into `scope`, if any (`as _` and globs bring none).
    binding: Option<String>,
}

impl Reference {
    fn text(&self) -> String {
        self.raw.join("::")
    }
}

/// What one file holds that the checks read.
#[derive(Debug, Default)]
struct FileScan {
    /// The inline modules (`mod tests { … }`), as paths from the crate's root.
    inline: Vec<Vec<String>>,
    references: Vec<Reference>,
    /// Every identifier outside `use` items.
    code_idents: BTreeSet<String>,
}

/// The references in a file whose module is `module`, from its tokens.
fn scan(tokens: &[Token], module: &[String]) -> FileScan {
    let mut out = FileScan::default();
    // The inline modules open around the current token: the brace depth each closes at.
    let mut scopes: Vec<(usize, Vec<String>)> = vec![(0, module.to_vec())];
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        let scope = scopes.last().map(|s| s.1.clone()).unwrap_or_default();
        match &tokens[i].tok {
            Tok::Open => depth += 1,
            Tok::Close => {
                if scopes.len() > 1 && scopes.last().is_some_and(|s| s.0 == depth) {
                    scopes.pop();
                }
                depth -= 1;
            }
            Tok::Ident(kw) if kw == "mod" => {
                if let (Some(Tok::Ident(name)), Some(Tok::Open)) =
                    (tok_at(tokens, i + 1), tok_at(tokens, i + 2))
                {
                    let mut inner = scope.clone();
                    inner.push(name.clone());
                    out.inline.push(inner.clone());
                    depth += 1;
                    scopes.push((depth, inner));
                    i += 3;
                    continue;
                }
                // `mod name;`: a declaration, not a use of `name`.
                i += 2;
                continue;
            }
            Tok::Ident(kw) if kw == "use" => {
                let reexport = is_pub(tokens, i);
                let mut leaves = Vec::new();
                let mut pos = i + 1;
                flatten(tokens, &mut pos, Vec::new(), &mut leaves);
                for (raw, binding) in leaves {
                    out.references.push(Reference {
                        line: tokens[i].line,
                        scope: scope.clone(),
                        raw,
                        reexport,
                        binding,
                    });
                }
                while pos < tokens.len() && tokens[pos].tok != Tok::Semi {
                    pos += 1;
                }
                i = pos + 1;
                continue;
            }
            Tok::Ident(first)
                if is_path_root(first) && tok_at(tokens, i + 1) == Some(&Tok::Sep) =>
            {
                let (raw, end) = code_path(tokens, i);
                out.references.push(Reference {
                    line: tokens[i].line,
                    scope,
                    raw,
                    reexport: false,
                    binding: None,
                });
                i = end;
                continue;
            }
            Tok::Ident(name) => {
                out.code_idents.insert(name.clone());
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn tok_at(tokens: &[Token], i: usize) -> Option<&Tok> {
    tokens.get(i).map(|t| &t.tok)
}

fn is_path_root(ident: &str) -> bool {
    matches!(ident, "crate" | "super" | "self")
}

/// Whether the `use` at `i` is `pub` (`pub use`, `pub(crate) use`, …).
fn is_pub(tokens: &[Token], i: usize) -> bool {
    let before = |k: usize| i.checked_sub(k).and_then(|j| tok_at(tokens, j));
    match before(1) {
        Some(Tok::Ident(p)) => p == "pub",
        Some(Tok::Other(')')) => {
            let mut k = 2;
            while !matches!(before(k), None | Some(Tok::Other('('))) {
                k += 1;
            }
            matches!(before(k + 1), Some(Tok::Ident(p)) if p == "pub")
        }
        _ => false,
    }
}

/// The path in code starting at `i` (`crate::a::b`, `super::super::x`), and where it
/// ends. A turbofish or a method call ends it.
fn code_path(tokens: &[Token], i: usize) -> (Vec<String>, usize) {
    let mut raw = Vec::new();
    let mut j = i;
    while let Some(Tok::Ident(name)) = tok_at(tokens, j) {
        raw.push(name.clone());
        if tok_at(tokens, j + 1) != Some(&Tok::Sep) {
            return (raw, j + 1);
        }
        j += 2;
    }
    (raw, j)
}

/// The use tree at `pos` (after `use`, or inside a group) flattened into its leaves: the
/// path of each (`self` in a group left out), and the name it binds.
fn flatten(
    tokens: &[Token],
    pos: &mut usize,
    mut path: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    if tok_at(tokens, *pos) == Some(&Tok::Sep) {
        // `use ::name::…`: another crate.
        path.push(String::new());
        *pos += 1;
    }
    loop {
        match tok_at(tokens, *pos) {
            Some(Tok::Ident(name)) => {
                let name = name.clone();
                *pos += 1;
                if tok_at(tokens, *pos) == Some(&Tok::Sep) {
                    path.push(name);
                    *pos += 1;
                    continue;
                }
                let mut binding = if name == "self" {
                    path.last().cloned()
                } else {
                    Some(name.clone())
                };
                if matches!(tok_at(tokens, *pos), Some(Tok::Ident(kw)) if kw == "as") {
                    binding = match tok_at(tokens, *pos + 1) {
                        Some(Tok::Ident(alias)) if alias != "_" => Some(alias.clone()),
                        _ => None,
                    };
                    *pos += 2;
                }
                if name != "self" {
                    path.push(name);
                }
                out.push((path, binding));
                return;
            }
            Some(Tok::Star) => {
                *pos += 1;
                out.push((path, None));
                return;
            }
            Some(Tok::Open) => {
                *pos += 1;
                while !matches!(tok_at(tokens, *pos), None | Some(Tok::Close | Tok::Semi)) {
                    flatten(tokens, pos, path.clone(), out);
                    if tok_at(tokens, *pos) == Some(&Tok::Comma) {
                        *pos += 1;
                    }
                }
                *pos += 1;
                return;
            }
            _ => return,
        }
    }
}

// ---------------------------------------------------------------------------------------
// The crate: files, modules, edges
// ---------------------------------------------------------------------------------------

/// An edge from one file to another module, resolved.
#[derive(Debug, Clone)]
struct Edge {
    /// The file it is written in, under `src/`.
    from: String,
    line: usize,
    /// The path as written.
    text: String,
    /// The path from the crate's root.
    path: Vec<String>,
    /// The file it reaches, re-exports followed.
    to: String,
    reexport: bool,
    binding: Option<String>,
}

/// Every file of a crate's `src/`, scanned.
#[derive(Debug, Default)]
struct Crate {
    /// File (under `src/`) → its module path.
    files: BTreeMap<String, Vec<String>>,
    /// Module path → the file that holds it.
    modules: BTreeMap<Vec<String>, String>,
    scans: BTreeMap<String, FileScan>,
    /// Module path → the names its `use` items bring in → the path each names.
    bindings: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
    edges: Vec<Edge>,
}

impl Crate {
    /// The crate whose sources are under `src`.
    fn read(src: &Path) -> Crate {
        let mut files = Vec::new();
        collect_rs(src, src, &mut files);
        Crate::from_sources(&files)
    }

    /// The crate of these files: (path under `src/`, text).
    fn from_sources(sources: &[(String, String)]) -> Crate {
        let mut krate = Crate::default();
        for (file, text) in sources {
            let Some(module) = module_of_file(file) else {
                continue;
            };
            let scan = scan(&lex(text), &module);
            krate.modules.insert(module.clone(), file.clone());
            for inline in &scan.inline {
                krate.modules.insert(inline.clone(), file.clone());
            }
            krate.files.insert(file.clone(), module);
            krate.scans.insert(file.clone(), scan);
        }
        krate.bind();
        krate.resolve_edges();
        krate
    }

    /// Fills `bindings` from every `use` item.
    fn bind(&mut self) {
        let mut bindings: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for scan in self.scans.values() {
            for r in &scan.references {
                if let (Some(name), Some(path)) = (&r.binding, self.absolute(r)) {
                    bindings
                        .entry(r.scope.clone())
                        .or_default()
                        .insert(name.clone(), path);
                }
            }
        }
        self.bindings = bindings;
    }

    fn resolve_edges(&mut self) {
        let mut edges = Vec::new();
        for (file, scan) in &self.scans {
            for r in &scan.references {
                let Some(path) = self.absolute(r) else {
                    continue;
                };
                edges.push(Edge {
                    from: file.clone(),
                    line: r.line,
                    text: r.text(),
                    to: self.file_of(&path, 0),
                    path,
                    reexport: r.reexport,
                    binding: r.binding.clone(),
                });
            }
        }
        self.edges = edges;
    }

    /// The path `r` names, from the crate's root; `None` for another crate's or a local
    /// name.
    fn absolute(&self, r: &Reference) -> Option<Vec<String>> {
        let first = r.raw.first()?;
        let (mut base, rest) = match first.as_str() {
            "crate" => (Vec::new(), &r.raw[1..]),
            "self" => (r.scope.clone(), &r.raw[1..]),
            "super" => {
                let supers = r.raw.iter().take_while(|s| *s == "super").count();
                let keep = r.scope.len().checked_sub(supers)?;
                (r.scope[..keep].to_vec(), &r.raw[supers..])
            }
            child => {
                let mut inner = r.scope.clone();
                inner.push(child.to_string());
                if !self.modules.contains_key(&inner) {
                    return None;
                }
                (r.scope.clone(), &r.raw[..])
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file `path` reaches: its innermost module's, or, when that module brings the
    /// name in with a `use`, the file that `use` reaches.
    fn file_of(&self, path: &[String], hops: usize) -> String {
        let k = (0..=path.len())
            .rev()
            .find(|&k| self.modules.contains_key(&path[..k]))
            .unwrap_or(0);
        let module = &path[..k];
        if let Some(name) = path.get(k) {
            let alias = self.bindings.get(module).and_then(|b| b.get(name));
            if let Some(target) = alias.filter(|_| hops < 16) {
                let mut next = target.clone();
                next.extend(path[k + 1..].iter().cloned());
                return self.file_of(&next, hops + 1);
            }
        }
        self.modules.get(module).cloned().unwrap_or_default()
    }

    /// The top-level module an edge's path names: its first segment, or for an item of
    /// the root (a re-export in `lib.rs`), the module of the file it reaches.
    fn top_of_path(&self, path: &[String], to: &str) -> Option<String> {
        let first = path.first()?;
        if self.modules.contains_key(std::slice::from_ref(first)) {
            return Some(first.clone());
        }
        self.files.get(to).and_then(|m| m.first().cloned())
    }

    /// Every edge against `order`, as `file:line: from → to (path)`.
    fn order_violations(&self, order: &[&str]) -> Vec<String> {
        let rank = |m: &str| order.iter().position(|o| *o == m);
        let mut wrong = Vec::new();
        for e in &self.edges {
            let Some(from) = self.files.get(&e.from).and_then(|m| m.first()) else {
                continue; // the root
            };
            let Some(to) = self.top_of_path(&e.path, &e.to) else {
                continue;
            };
            let why = match (rank(from), rank(&to)) {
                _ if *from == to => continue,
                (Some(f), Some(t)) if t < f => continue,
                (Some(_), Some(_)) => format!("`{to}` is to the right of `{from}`"),
                (None, _) => format!("`{from}` is not in the order"),
                (_, None) => format!("`{to}` is not in the order"),
            };
            wrong.push(format!(
                "src/{}:{}: {from} → {to} (`{}`): {why}",
                e.from, e.line, e.text
            ));
        }
        wrong
    }

    /// File → the files it imports, each with the first edge that does; re-exports count
    /// only when the file's own code names what they bring in.
    fn graph(&self) -> BTreeMap<&str, BTreeMap<&str, &Edge>> {
        let mut graph: BTreeMap<&str, BTreeMap<&str, &Edge>> = BTreeMap::new();
        for e in &self.edges {
            let used_here = |name: &String| self.scans[&e.from].code_idents.contains(name);
            if e.to.is_empty()
                || e.to == e.from
                || (e.reexport && !e.binding.as_ref().is_some_and(used_here))
            {
                continue;
            }
            graph
                .entry(e.from.as_str())
                .or_default()
                .entry(e.to.as_str())
                .or_insert(e);
        }
        graph
    }

    /// The file circles: each a set of two or more files that reach each other through
    /// imports (a strongly connected component), its files sorted.
    fn circles(&self) -> Vec<Vec<String>> {
        let graph = self.graph();
        let adjacency: BTreeMap<&str, Vec<&str>> = graph
            .iter()
            .map(|(from, to)| (*from, to.keys().copied().collect()))
            .collect();
        let mut circles: Vec<Vec<String>> = strongly_connected(&adjacency)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut files: Vec<String> = c.into_iter().map(str::to_string).collect();
                files.sort();
                files
            })
            .collect();
        circles.sort();
        circles
    }

    /// One loop through `circle`, from its first file back to it, each step with the
    /// line that makes it.
    fn describe_loop(&self, circle: &[String]) -> String {
        let graph = self.graph();
        let within: BTreeSet<&str> = circle.iter().map(String::as_str).collect();
        let start = circle[0].as_str();
        // Breadth first from `start`, inside the circle, until an edge leads back.
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut last = start;
        'search: while let Some(file) = queue.pop_front() {
            for next in graph.get(file).into_iter().flat_map(|t| t.keys()) {
                if *next == start {
                    last = file;
                    break 'search;
                }
                if within.contains(next) && !came_from.contains_key(next) {
                    came_from.insert(next, file);
                    queue.push_back(next);
                }
            }
        }
        let mut steps = vec![(last, start)];
        while let Some(prev) = came_from.get(steps[0].0) {
            steps.insert(0, (prev, steps[0].0));
        }
        steps
            .iter()
            .map(|(from, to)| {
                let e = graph[from][to];
                format!("  src/{from}:{} → {to} (`{}`)", e.line, e.text)
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The module path of a file under `src/` (`record/format/mod.rs` → `record::format`),
/// or `None` for `main.rs`, another crate's root.
fn module_of_file(file: &str) -> Option<Vec<String>> {
    let stem = file.strip_suffix(".rs")?;
    if stem == "main" || stem.starts_with("bin/") {
        return None;
    }
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    Some(parts)
}

/// Every `.rs` file under `dir`, as (path under `root`, text).
fn collect_rs(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_rs(root, &path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let rel = path.strip_prefix(root).expect("under the root");
            let rel = rel.to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            out.push((rel, text));
        }
    }
}

/// The strongly connected components of `graph` (Tarjan's algorithm).
fn strongly_connected<'a>(graph: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(v: &'a str, graph: &BTreeMap<&'a str, Vec<&'a str>>, s: &mut State<'a>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in graph.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(w, graph, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.components.push(component);
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for &v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(v, graph, &mut s);
        }
    }
    s.components
}

// ---------------------------------------------------------------------------------------
// The scanner's own tests, on small crates
// ---------------------------------------------------------------------------------------

fn small(files: &[(&str, &str)]) -> Crate {
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect();
    Crate::from_sources(&sources)
}

fn idents(src: &str) -> Vec<String> {
    lex(src)
        .into_iter()
        .filter_map(|t| match t.tok {
            Tok::Ident(s) => Some(s),
            _ => None,
        })
        .collect()
}

fn the_lexer_skips_comments_strings_chars_and_lifetimes() {
    let src = "a // crate::x\n/* b /* nested */ crate::y */ c \"d \\\" crate::z\" \
               r#\"e \" crate::w\"# f 'g' '\\'' h<'i> b'j' b\"k\" br#\"l\"# m\n'\\u{1F600}' n";
    assert_eq!(
        idents(src),
        ["a", "c", "f", "h", "i", "m", "n"],
        "only code identifiers (the lifetime's name included) remain"
    );
    let lines: Vec<usize> = lex("x\n/*\n\n*/ y \"a\nb\" z")
        .iter()
        .map(|t| t.line)
        .collect();
    assert_eq!(
        lines,
        [1, 4, 5],
        "lines are counted inside comments and strings"
    );
    assert_eq!(
        idents("r#type r#match"),
        ["type", "match"],
        "raw identifiers"
    );
}

fn use_trees_flatten_into_paths_and_bindings() {
    let tokens = lex("pub(crate) use crate::a::{self, b::{C, D as E}, f::*, g as _};");
    let scanned = scan(&tokens, &["m".to_string()]);
    let leaves: Vec<(String, Option<String>, bool)> = scanned
        .references
        .iter()
        .map(|r| (r.text(), r.binding.clone(), r.reexport))
        .collect();
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        leaves,
        [
            ("crate::a".to_string(), some("a"), true),
            ("crate::a::b::C".to_string(), some("C"), true),
            ("crate::a::b::D".to_string(), some("E"), true),
            ("crate::a::f".to_string(), None, true),
            ("crate::a::g".to_string(), None, true),
        ]
    );
    let private = scan(
        &lex("use super::x; fn f() { crate::y::z::<u8>(); self::w(); }"),
        &[],
    );
    let texts: Vec<(String, bool)> = private
        .references
        .iter()
        .map(|r| (r.text(), r.reexport))
        .collect();
    assert_eq!(
        texts,
        [
            ("super::x".to_string(), false),
            ("crate::y::z".to_string(), false),
            ("self::w".to_string(), false)
        ]
    );
}

fn super_and_self_resolve_from_the_inline_module_they_are_written_in() {
    let krate = small(&[
        ("lib.rs", "mod a;"),
        ("a/mod.rs", "mod b; mod c; pub(crate) fn top() {}"),
        ("a/b.rs", "use super::c::X;\nmod tests {\n use super::Y; use self::inner::Z; mod inner {}\n}\npub struct Y;"),
        ("a/c.rs", "pub struct X; fn f() { super::top(); }"),
    ]);
    let edges: Vec<(String, usize, String)> = krate
        .edges
        .iter()
        .filter(|e| e.from == "a/b.rs")
        .map(|e| (e.path.join("::"), e.line, e.to.clone()))
        .collect();
    assert_eq!(
        edges,
        [
            ("a::c::X".to_string(), 1, "a/c.rs".to_string()),
            ("a::b::Y".to_string(), 3, "a/b.rs".to_string()),
            ("a::b::tests::inner::Z".to_string(), 3, "a/b.rs".to_string()),
        ]
    );
    let from_c: Vec<&str> = krate
        .edges
        .iter()
        .filter(|e| e.from == "a/c.rs")
        .map(|e| e.to.as_str())
        .collect();
    assert_eq!(
        from_c,
        ["a/mod.rs"],
        "super:: in code reaches the parent's file"
    );
}

fn a_name_is_followed_through_re_exports_to_the_file_that_defines_it() {
    let krate = small(&[
        ("lib.rs", "mod a; mod b; pub use a::Thing;"),
        (
            "a/mod.rs",
            "mod deep; pub(crate) use deep::Thing; pub(crate) use self::deep as renamed;",
        ),
        ("a/deep.rs", "pub struct Thing;"),
        (
            "b.rs",
            "use crate::a::Thing; use crate::Thing as T2; use crate::a::renamed::Other;",
        ),
    ]);
    let to: Vec<&str> = krate
        .edges
        .iter()
        .filter(|e| e.from == "b.rs")
        .map(|e| e.to.as_str())
        .collect();
    assert_eq!(to, ["a/deep.rs", "a/deep.rs", "a/deep.rs"]);
}

fn an_edge_to_the_right_is_named_with_its_file_and_line() {
    let krate = small(&[
        ("lib.rs", "mod low; mod high; mod stray; pub use high::H;"),
        (
            "low.rs",
            "pub struct L;\n\nfn f() -> crate::high::H { todo!() }\nuse crate::H as Again;",
        ),
        ("high.rs", "use crate::low::L; pub struct H;"),
        ("stray.rs", "use crate::low::L;"),
    ]);
    assert_eq!(
        krate.order_violations(&["low", "high"]),
        [
            "src/low.rs:3: low → high (`crate::high::H`): `high` is to the right of `low`",
            "src/low.rs:4: low → high (`crate::H`): `high` is to the right of `low`",
            "src/stray.rs:1: stray → low (`crate::low::L`): `stray` is not in the order",
        ]
    );
    assert!(krate.order_violations(&["low", "high", "stray"]).len() == 2);
}

fn a_circle_is_found_and_a_pass_through_mod_rs_makes_none() {
    let krate = small(&[
        ("lib.rs", "mod m; mod r;"),
        // A pass-through: children import each other's items through it.
        (
            "m/mod.rs",
            "mod a; mod b; mod c; pub(crate) use a::A; pub(crate) use b::B;",
        ),
        ("m/a.rs", "pub struct A;"),
        ("m/b.rs", "use super::A; pub struct B;"),
        ("m/c.rs", "use super::{A, B};"),
        // A loop of three.
        ("r/mod.rs", "mod x; mod y; mod z;"),
        ("r/x.rs", "use super::y::Y;\npub struct X;"),
        ("r/y.rs", "pub struct Y; fn f() { crate::r::z::g(); }"),
        ("r/z.rs", "pub fn g() {}\n\nuse super::x::X;"),
    ]);
    assert_eq!(krate.circles(), [["r/x.rs", "r/y.rs", "r/z.rs"]]);
    assert_eq!(
        krate.describe_loop(&krate.circles()[0]),
        "  src/r/x.rs:1 → r/y.rs (`super::y::Y`)\n  \
         src/r/y.rs:1 → r/z.rs (`crate::r::z::g`)\n  \
         src/r/z.rs:3 → r/x.rs (`super::x::X`)"
    );
}

fn a_re_export_the_file_itself_uses_is_an_edge() {
    let krate = small(&[
        ("lib.rs", "mod m;"),
        (
            "m/mod.rs",
            "mod a; pub(crate) use a::A; pub(crate) struct M(A);",
        ),
        ("m/a.rs", "use super::M; pub struct A;"),
    ]);
    assert_eq!(krate.circles(), [["m/a.rs", "m/mod.rs"]]);
}

fn a_known_circle_that_is_gone_or_changed_is_reported() {
    let krate = small(&[
        ("lib.rs", "mod p; mod q; mod s;"),
        ("p.rs", "use crate::q::Q; pub struct P;"),
        ("q.rs", "use crate::p::P; pub struct Q;"),
        ("s.rs", "pub struct S;"),
    ]);
    assert!(circle_problems(&krate, &[&["q.rs", "p.rs"]]).is_empty());
    let problems = circle_problems(&krate, &[&["p.rs", "s.rs"]]);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].starts_with("a file circle among p.rs, q.rs:\n  src/p.rs:1 → q.rs"));
    assert!(problems[1].starts_with("KNOWN_CIRCLES lists p.rs, s.rs, which is no longer"));
}
