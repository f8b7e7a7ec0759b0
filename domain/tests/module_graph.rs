//! Every crate's modules depend one way (docs/ARCHITECTURE.md, "The engine and the domain").
//! Between crates a cycle cannot compile (the ledger below the MCP engine below the core's
//! domain, and so on up to the command line); inside each, this test reads every
//! `src/**/*.rs`, collects the module edges its paths name and fails on any strongly connected
//! component of more than one module, at two granularities: top-level modules (`protocol`,
//! `engine`, ...) and second-level ones (`domain::claims`, `protocol::registry`, ...), in every
//! crate of the workspace.
//!
//! What counts as an edge from module A to module B: a private `use` in A of a path that
//! resolves into B, a path written inline in A's code (`crate::b::x`, `super::x`, a child
//! module's or an imported name's `x::y`), and a `pub use` re-export only when A's own code names
//! the re-exported item. Re-exports are followed to where an item is defined, so
//! `crate::TaskStatus` is an edge to `domain::lifecycle`. Items under `#[cfg(test)]`
//! (test modules and the files they declare, such as `tests.rs`) are skipped: tests may reach
//! across layers. Comments, doc links and string literals are not code and are skipped too.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // test code may read files
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

/// A token and the line it starts on.
type Token = (Tok, usize);

/// Enough of Rust's lexical grammar to find identifiers, `::` and brackets: comments, string,
/// byte, raw-string and char literals are dropped (lifetimes are told apart from chars).
fn lex(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line) = (0usize, 1usize);
    let count_lines = |from: usize, to: usize| b[from..to].iter().filter(|&&c| c == b'\n').count();
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line += 1;
                i += 1;
            }
            _ if c.is_ascii_whitespace() => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (start, mut depth) = (i, 0usize);
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                line += count_lines(start, i);
            }
            b'"' => {
                let start = i;
                i = skip_quoted(b, i + 1, b'"');
                line += count_lines(start, i);
            }
            b'r' | b'b' if raw_string_start(b, i).is_some() => {
                let (hashes, body) = raw_string_start(b, i).expect("checked");
                let start = i;
                i = body;
                loop {
                    if i >= b.len() {
                        break;
                    }
                    if b[i] == b'"'
                        && b[i + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|&&h| h == b'#')
                            .count()
                            == hashes
                    {
                        i += 1 + hashes;
                        break;
                    }
                    i += 1;
                }
                line += count_lines(start, i);
            }
            b'b' if matches!(b.get(i + 1), Some(b'"') | Some(b'\'')) => {
                let quote = b[i + 1];
                let start = i;
                i = skip_quoted(b, i + 2, quote);
                line += count_lines(start, i);
            }
            b'\'' => {
                // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a, 'static).
                if b.get(i + 1) == Some(&b'\\') {
                    i = skip_quoted(b, i + 1, b'\'');
                } else {
                    let ch_len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                    if b.get(i + 1 + ch_len) == Some(&b'\'') {
                        i += 2 + ch_len;
                    } else {
                        i += 1; // lifetime: the identifier after it is lexed next
                    }
                }
            }
            _ if c == b'_' || c.is_ascii_alphabetic() => {
                let start = i;
                while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                    i += 1;
                }
                let mut word = &src[start..i];
                if word == "r" && b.get(i) == Some(&b'#') {
                    let s = i + 1;
                    i = s;
                    while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                        i += 1;
                    }
                    word = &src[s..i];
                }
                out.push((Tok::Ident(word.to_string()), line));
            }
            _ if c.is_ascii_digit() => {
                while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                    i += 1;
                }
            }
            b':' if b.get(i + 1) == Some(&b':') => {
                out.push((Tok::PathSep, line));
                i += 2;
            }
            _ if c.is_ascii() => {
                out.push((Tok::Punct(c as char), line));
                i += 1;
            }
            _ => i += src[i..].chars().next().map_or(1, char::len_utf8),
        }
    }
    out
}

/// Index just past the closing `quote`, honouring backslash escapes.
fn skip_quoted(b: &[u8], mut i: usize, quote: u8) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// For `r"`, `r#"`, `br##"` ...: the number of hashes and the index of the body.
fn raw_string_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if b[j] == b'b' {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    // Not the tail of an identifier such as `for"`: the byte before must not be one.
    if i > 0 && (b[i - 1] == b'_' || b[i - 1].is_ascii_alphanumeric()) {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while b.get(j) == Some(&b'#') {
        hashes += 1;
        j += 1;
    }
    (b.get(j) == Some(&b'"')).then_some((hashes, j + 1))
}

/// One source file: its module, the names it defines at its top level, its `use` bindings
/// (name -> absolute path; `pub` or not), glob imports, and the paths its code names.
#[derive(Default)]
struct FileFacts {
    defs: BTreeSet<String>,
    bindings: BTreeMap<String, ModPath>,
    globs: Vec<ModPath>,
    /// Paths as written (relative to this module), with their line.
    uses: Vec<(ModPath, usize)>,
    /// `pub use` bindings: name -> (path, line); an edge only if the file names the item.
    reexports: Vec<(String, ModPath, usize)>,
    idents_outside_use: BTreeSet<String>,
    test_children: BTreeSet<String>,
}

struct Crate {
    root: PathBuf,
    modules: BTreeMap<ModPath, (PathBuf, FileFacts)>,
}

fn module_of(rel: &Path) -> ModPath {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().expect("a file");
    match file.as_str() {
        "lib.rs" | "mod.rs" => {}
        f => parts.push(f.trim_end_matches(".rs").to_string()),
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

const ITEM_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "const", "static", "type", "trait", "mod", "union",
];

fn is_ident(t: Option<&Token>, word: &str) -> bool {
    matches!(t, Some((Tok::Ident(w), _)) if w == word)
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t {
        Some((Tok::Ident(w), _)) => Some(w),
        _ => None,
    }
}

/// Index past the item starting at `i`: up to a `;` at depth 0 or the end of its first block.
fn skip_item(toks: &[Token], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < toks.len() {
        match toks[i].0 {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']') => depth -= 1,
            Tok::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            Tok::Punct(';') if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Index past the bracket group opening at `i`.
fn skip_group(toks: &[Token], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < toks.len() {
        match toks[i].0 {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// Parses a use tree at `i` (after `use`), pushing each leaf's full path and binding name.
fn use_tree(
    toks: &[Token],
    mut i: usize,
    prefix: &ModPath,
    out: &mut Vec<(ModPath, Option<String>, usize)>,
) -> usize {
    let mut path = prefix.clone();
    if toks.get(i).map(|t| &t.0) == Some(&Tok::PathSep) {
        i += 1; // leading `::` (an extern crate)
        path.push("::".into());
    }
    loop {
        match toks.get(i) {
            Some((Tok::Ident(w), line)) => {
                let line = *line;
                path.push(w.clone());
                i += 1;
                if toks.get(i).map(|t| &t.0) == Some(&Tok::PathSep) {
                    i += 1;
                    continue;
                }
                let mut name = path.last().cloned();
                if is_ident(toks.get(i), "as") {
                    name = ident(toks.get(i + 1)).map(str::to_string);
                    i += 2;
                }
                if name.as_deref() == Some("self") {
                    path.pop();
                    name = path.last().cloned();
                }
                out.push((path, name, line));
                return i;
            }
            Some((Tok::Punct('*'), line)) => {
                out.push((path, None, *line));
                return i + 1;
            }
            Some((Tok::Punct('{'), _)) => {
                i += 1;
                loop {
                    match toks.get(i) {
                        Some((Tok::Punct('}'), _)) | None => return i + 1,
                        Some((Tok::Punct(','), _)) => i += 1,
                        _ => i = use_tree(toks, i, &path, out),
                    }
                }
            }
            _ => return i,
        }
    }
}

fn facts(src: &str) -> FileFacts {
    let toks = lex(src);
    let mut f = FileFacts::default();
    let mut depth = 0i32;
    let mut i = 0;
    while i < toks.len() {
        // `#[cfg(test)]`: skip the item it guards (and note `mod x;` as a test module).
        if toks[i].0 == Tok::Punct('#')
            && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Punct('['))
            && is_ident(toks.get(i + 2), "cfg")
            && toks.get(i + 3).map(|t| &t.0) == Some(&Tok::Punct('('))
            && is_ident(toks.get(i + 4), "test")
            && toks.get(i + 5).map(|t| &t.0) == Some(&Tok::Punct(')'))
        {
            let mut j = i + 7;
            while toks.get(j).map(|t| &t.0) == Some(&Tok::Punct('#')) {
                j = skip_group(&toks, j + 1); // further attributes: `[ ... ]`
            }
            let mut k = j;
            while let Some(w) = ident(toks.get(k)) {
                if w == "mod" {
                    if let Some(name) = ident(toks.get(k + 1))
                        && toks.get(k + 2).map(|t| &t.0) == Some(&Tok::Punct(';'))
                    {
                        f.test_children.insert(name.to_string());
                    }
                    break;
                }
                k += 1;
                if toks.get(k).map(|t| &t.0) == Some(&Tok::Punct('(')) {
                    k = skip_group(&toks, k); // `pub(crate)`
                }
            }
            i = skip_item(&toks, j);
            continue;
        }
        match &toks[i].0 {
            Tok::Punct('{' | '(' | '[') => depth += 1,
            Tok::Punct('}' | ')' | ']') => depth -= 1,
            Tok::Ident(w) if w == "use" => {
                let public = i > 0
                    && (is_ident(toks.get(i - 1), "pub")
                        || (toks[i - 1].0 == Tok::Punct(')')
                            && i >= 4
                            && is_ident(toks.get(i - 4), "pub")));
                let mut leaves = Vec::new();
                let end = use_tree(&toks, i + 1, &Vec::new(), &mut leaves);
                for (path, name, line) in leaves {
                    match &name {
                        Some(n) if n != "_" => {
                            f.bindings.insert(n.clone(), path.clone());
                        }
                        Some(_) => {}
                        None => f.globs.push(path.clone()),
                    }
                    match (public, name) {
                        (true, Some(n)) => f.reexports.push((n, path, line)),
                        (true, None) => {}
                        (false, _) => f.uses.push((path, line)),
                    }
                }
                i = end;
                continue;
            }
            Tok::Ident(w) if depth == 0 && ITEM_KEYWORDS.contains(&w.as_str()) => {
                if let Some(name) = ident(toks.get(i + 1)) {
                    f.defs.insert(name.to_string());
                }
            }
            Tok::Ident(w) if w == "macro_rules" => {
                if let Some(name) = ident(toks.get(i + 2)) {
                    f.defs.insert(name.to_string());
                }
            }
            Tok::Ident(w) => {
                f.idents_outside_use.insert(w.clone());
                let continues = i > 0
                    && matches!(
                        toks[i - 1].0,
                        Tok::PathSep | Tok::Punct('.') | Tok::Punct('$')
                    );
                if !continues && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::PathSep) {
                    let line = toks[i].1;
                    let mut path = vec![w.clone()];
                    let mut j = i + 1;
                    while toks.get(j).map(|t| &t.0) == Some(&Tok::PathSep) {
                        match ident(toks.get(j + 1)) {
                            Some(seg) => {
                                path.push(seg.to_string());
                                j += 2;
                            }
                            None => break, // `x::<T>` or `x::{`
                        }
                    }
                    for seg in &path {
                        f.idents_outside_use.insert(seg.clone());
                    }
                    f.uses.push((path, line));
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    f
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let mut modules = BTreeMap::new();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("source is UTF-8");
            let rel = file.strip_prefix(src).expect("under src").to_path_buf();
            modules.insert(module_of(&rel), (rel, facts(&text)));
        }
        // Drop the modules declared under `#[cfg(test)]` and everything below them.
        let test_mods: Vec<ModPath> = modules
            .iter()
            .flat_map(|(m, (_, f))| {
                f.test_children.iter().map(move |c| {
                    let mut p = m.clone();
                    p.push(c.clone());
                    p
                })
            })
            .collect();
        modules.retain(|m, _| !test_mods.iter().any(|t| m.starts_with(t)));
        Crate {
            root: src.to_path_buf(),
            modules,
        }
    }

    /// An absolute path for `path` as written in module `at`, or `None` if it leaves the crate.
    fn absolute(&self, at: &ModPath, path: &[String], guard: usize) -> Option<ModPath> {
        let first = path.first()?;
        let rest = &path[1..];
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some(at.iter().chain(rest).cloned().collect()),
            "super" => {
                let mut m = at.clone();
                m.pop();
                self.absolute(
                    &m,
                    &[vec!["self".to_string()], rest.to_vec()].concat(),
                    guard,
                )
                .map(|p| p.to_vec())
            }
            "Self" | "::" => None,
            _ => {
                let mut child = at.clone();
                child.push(first.clone());
                if self.modules.contains_key(&child) {
                    return Some(child.into_iter().chain(rest.iter().cloned()).collect());
                }
                if guard > 8 {
                    return None;
                }
                let bound = self.modules.get(at)?.1.bindings.get(first)?;
                let base = self.absolute(at, bound, guard + 1)?;
                Some(base.into_iter().chain(rest.iter().cloned()).collect())
            }
        }
    }

    /// The module that defines what an absolute path names (following re-exports), and
    /// whether the name was found there.
    fn resolve(&self, path: &[String], guard: usize) -> (ModPath, bool) {
        let mut m: ModPath = Vec::new();
        for (i, seg) in path.iter().enumerate() {
            let mut child = m.clone();
            child.push(seg.clone());
            if self.modules.contains_key(&child) {
                m = child;
                continue;
            }
            let Some((_, f)) = self.modules.get(&m) else {
                return (m, false);
            };
            if f.defs.contains(seg) || guard > 16 {
                return (m, true);
            }
            if let Some(target) = f.bindings.get(seg) {
                if let Some(abs) = self.absolute(&m, target, 0) {
                    let full: ModPath = abs
                        .into_iter()
                        .chain(path[i + 1..].iter().cloned())
                        .collect();
                    return self.resolve(&full, guard + 1);
                }
                return (m, false); // bound to another crate's item
            }
            for g in &f.globs {
                if let Some(abs) = self.absolute(&m, g, 0) {
                    let full: ModPath = abs.into_iter().chain(path[i..].iter().cloned()).collect();
                    let (found_in, found) = self.resolve(&full, guard + 1);
                    if found {
                        return (found_in, true);
                    }
                }
            }
            return (m, false);
        }
        (m, true)
    }

    /// Every edge `(from, to, file:line)` between distinct modules, at full depth.
    fn edges(&self) -> Vec<(ModPath, ModPath, String)> {
        let mut out = Vec::new();
        for (m, (file, f)) in &self.modules {
            let mut named: Vec<(&ModPath, usize)> = f.uses.iter().map(|(p, l)| (p, *l)).collect();
            for (name, path, line) in &f.reexports {
                if f.idents_outside_use.contains(name) {
                    named.push((path, *line));
                }
            }
            for (path, line) in named {
                let Some(abs) = self.absolute(m, path, 0) else {
                    continue;
                };
                let (target, _) = self.resolve(&abs, 0);
                if &target != m {
                    let at = format!("src/{}:{line}", file.display());
                    out.push((m.clone(), target, at));
                }
            }
        }
        out
    }
}

/// Strongly connected components (Tarjan), each with more than one node, sorted.
fn cycles(
    nodes: &BTreeSet<String>,
    edges: &BTreeMap<(String, String), String>,
) -> Vec<Vec<String>> {
    struct State<'a> {
        adj: BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.adj.get(v).cloned().unwrap_or_default() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().expect("on the stack");
                s.on_stack.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        adj: BTreeMap::new(),
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for (a, b) in edges.keys() {
        s.adj.entry(a.as_str()).or_default().push(b.as_str());
    }
    for v in nodes {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

/// Collapses the crate's edges onto the nodes `node` names (`None`: leave the edge out) and
/// fails listing every cycle with one `file:line` per edge inside it. `known` are edges that
/// still close a cycle and are left out until the step that removes them lands; one that no
/// longer exists fails the test too, so the list only shrinks.
fn assert_acyclic(
    name: &str,
    krate: &Crate,
    known: &[(&str, &str, &str)],
    node: impl Fn(&ModPath) -> Option<String>,
) {
    assert!(
        krate.modules.len() > 1,
        "read only {} modules from {}",
        krate.modules.len(),
        krate.root.display()
    );
    let mut nodes = BTreeSet::new();
    let mut edges: BTreeMap<(String, String), String> = BTreeMap::new();
    for m in krate.modules.keys() {
        nodes.extend(node(m));
    }
    for (from, to, at) in krate.edges() {
        let (Some(a), Some(b)) = (node(&from), node(&to)) else {
            continue;
        };
        if a != b {
            edges.entry((a, b)).or_insert(at);
        }
    }
    for (a, b, why) in known {
        assert!(
            edges.remove(&(a.to_string(), b.to_string())).is_some(),
            "{name}: the known edge {a} -> {b} ({why}) is gone: delete it from the list"
        );
    }
    let found = cycles(&nodes, &edges);
    let mut report = String::new();
    for comp in &found {
        report.push_str(&format!("\ncycle among {}:\n", comp.join(", ")));
        for ((a, b), at) in &edges {
            if comp.contains(a) && comp.contains(b) {
                report.push_str(&format!("  {a} -> {b}  ({at})\n"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "{name}: modules must depend one way{report}"
    );
}

fn join(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

/// The crate root (`lib.rs`) only declares modules and re-exports; it is no layer.
fn depth(m: &ModPath, n: usize) -> Option<String> {
    (!m.is_empty()).then(|| join(&m[..m.len().min(n)]))
}

/// The sources of the workspace crate in directory `dir` (`core`, `mcp`, `ledger`, ...).
fn krate(dir: &str) -> Crate {
    Crate::read(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(dir)
            .join("src"),
    )
}

/// The crates whose modules are checked: every crate of the workspace (the crate graph test
/// keeps the crates themselves in one direction).
const CRATES: [&str; 12] = [
    "ledger",
    "core",
    "domain",
    "store-file",
    "store-postgres",
    "effects",
    "runtime-std",
    "runtime-smol",
    "worker",
    "cli",
    "bench",
    "conformance-fixture",
];

#[test]
fn top_level_modules_have_no_cycle() {
    for dir in CRATES {
        assert_acyclic(&format!("{dir}'s modules"), &krate(dir), &[], |m| {
            depth(m, 1)
        });
    }
}

/// Siblings among themselves: a parent's own file (`protocol/mod.rs`) is left out (its code
/// and its children's uses of it are edges of the top-level check). What the projection folds
/// (records, leases, task rows, the capsule index, ...) sits in modules of its own below it, so
/// the modules that read it (claims, capsules, handles, status changes) cannot be folded from.
#[test]
fn second_level_modules_have_no_cycle() {
    for dir in CRATES {
        let krate = krate(dir);
        let parents: BTreeSet<ModPath> = krate
            .modules
            .keys()
            .filter(|m| m.len() > 1)
            .map(|m| m[..1].to_vec())
            .collect();
        assert_acyclic(&format!("{dir}'s second-level modules"), &krate, &[], |m| {
            (!(m.len() == 1 && parents.contains(m)))
                .then(|| depth(m, 2))
                .flatten()
        });
    }
}

#[test]
fn tarjan_finds_a_cycle_and_passes_a_chain() {
    let nodes: BTreeSet<String> = ["a", "b", "c", "d"].map(String::from).into();
    let edge = |a: &str, b: &str| ((a.to_string(), b.to_string()), String::new());
    let chain: BTreeMap<_, _> = [edge("a", "b"), edge("b", "c"), edge("a", "c")].into();
    assert!(cycles(&nodes, &chain).is_empty());
    let mut looped = chain.clone();
    looped.extend([edge("c", "a"), edge("c", "d")]);
    assert_eq!(cycles(&nodes, &looped), [["a", "b", "c"]]);
}

#[test]
fn the_scanner_sees_grouped_uses_inline_paths_and_re_exports() {
    let f = facts(
        "//! crate::doc::link\nuse crate::{a, b::{c, d as e}};\npub use self::f::G;\n\
         fn x() { let s = \"crate::in_string\"; super::h::i(); 'q'; }\n\
         #[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod inline { use crate::t; }\n",
    );
    let uses: Vec<String> = f
        .uses
        .iter()
        .map(|(p, l)| format!("{}@{l}", p.join("::")))
        .collect();
    assert_eq!(
        uses,
        [
            "crate::a@2",
            "crate::b::c@2",
            "crate::b::d@2",
            "super::h::i@4"
        ]
    );
    assert_eq!(f.bindings["e"], ["crate", "b", "d"]);
    assert_eq!(f.reexports[0].0, "G");
    assert!(f.test_children.contains("tests"));
    assert!(f.defs.contains("x"));
}
