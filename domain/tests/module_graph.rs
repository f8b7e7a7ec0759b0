//! Every crate's modules depend one way (docs/ARCHITECTURE.md, "The engine and the domain").
//! Between crates a cycle cannot compile (the ledger below the MCP engine below the core's
//! domain, and so on up to the command line); inside each, this test parses every source file
//! with `syn`, following `mod` declarations from each crate root (`lib.rs`, `main.rs`,
//! `bin/*.rs`), resolves every path it names to the module that defines the item, and fails on
//! any strongly connected component of more than one module, at two granularities: top-level
//! modules (`protocol`, `engine`, ...) and second-level ones (`domain::claims`,
//! `protocol::registry`, ...), in every crate of the workspace.
//!
//! What counts as an edge from module A to module B: every leaf of every `use` in A (`pub use`
//! too, grouped and nested trees, globs), and every path written in A's code, macro arguments
//! included (`crate::b::x(..)`, `super::super::b::X`, `b::x` through a child module or an
//! imported name), that resolves into B. `crate::`, `self::` and any chain of `super::` are
//! resolved against A's place in the tree; a name is followed through the `use` that binds it
//! and through re-exports to where the item is defined, so `crate::TaskStatus` is an edge to
//! `lifecycle`; an item re-exported from another crate stops at the re-exporting module. Items
//! under `#[cfg(test)]` (test modules and the files they declare, such as `tests.rs`) are
//! skipped: tests may reach across layers. Every `.rs` file under `src/` must be reached from a
//! root or from a test module, so that no file goes unread.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // test code may read files
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::Visit;

type ModPath = Vec<String>;

/// One module (a file or an inline `mod x { .. }`): what it defines and what it names.
#[derive(Default)]
struct Module {
    /// The file it is written in, relative to `src/`.
    file: String,
    /// Items defined here, child modules excluded.
    items: BTreeSet<String>,
    children: BTreeSet<String>,
    /// `use` bindings (`pub` or not): name -> path as written.
    bindings: BTreeMap<String, ModPath>,
    /// `use x::*`: the paths as written.
    globs: Vec<ModPath>,
    /// Every path named, as written, with its line; `true` for a single name in code (an edge
    /// only if a `use` or a glob brings it in, never a local).
    named: Vec<(ModPath, usize, bool)>,
}

/// One crate root's module tree.
struct Crate {
    root: String,
    modules: BTreeMap<ModPath, Module>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

fn line_of(span: proc_macro2::Span) -> usize {
    span.start().line
}

/// The leaves of a use tree: (path, bound name or `None` for a glob, line).
fn use_leaves(
    tree: &syn::UseTree,
    prefix: &ModPath,
    out: &mut Vec<(ModPath, Option<String>, usize)>,
) {
    let with = |seg: &syn::Ident| {
        let mut p = prefix.clone();
        p.push(seg.to_string());
        p
    };
    match tree {
        syn::UseTree::Path(p) => use_leaves(&p.tree, &with(&p.ident), out),
        syn::UseTree::Name(n) if n.ident == "self" => {
            out.push((
                prefix.clone(),
                prefix.last().cloned(),
                line_of(n.ident.span()),
            ));
        }
        syn::UseTree::Name(n) => {
            out.push((
                with(&n.ident),
                Some(n.ident.to_string()),
                line_of(n.ident.span()),
            ));
        }
        syn::UseTree::Rename(r) => {
            let path = if r.ident == "self" {
                prefix.clone()
            } else {
                with(&r.ident)
            };
            out.push((path, Some(r.rename.to_string()), line_of(r.ident.span())));
        }
        syn::UseTree::Glob(g) => out.push((prefix.clone(), None, line_of(g.star_token.span))),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_leaves(t, prefix, out);
            }
        }
    }
}

/// Paths in a macro's tokens (`format!("{}", crate::x::y())`, `$crate::x` in `macro_rules!`):
/// an identifier followed by `::` and more identifiers, not itself the tail of a path or a
/// field access.
fn token_paths(tokens: TokenStream, out: &mut Vec<(ModPath, usize)>) {
    let toks: Vec<TokenTree> = tokens.into_iter().collect();
    let sep = |i: usize| {
        matches!((toks.get(i), toks.get(i + 1)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':')
    };
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            TokenTree::Group(g) => {
                token_paths(g.stream(), out);
                i += 1;
            }
            TokenTree::Ident(id) => {
                let after_sep = i >= 2 && sep(i - 2);
                let after_dot =
                    i > 0 && matches!(&toks[i - 1], TokenTree::Punct(p) if p.as_char() == '.');
                let mut path = vec![id.to_string()];
                let mut j = i + 1;
                while sep(j) {
                    match toks.get(j + 2) {
                        Some(TokenTree::Ident(seg)) => {
                            path.push(seg.to_string());
                            j += 3;
                        }
                        _ => break,
                    }
                }
                if path.len() > 1 && !after_sep && !after_dot {
                    out.push((path, line_of(id.span())));
                }
                i = j.max(i + 1);
            }
            _ => i += 1,
        }
    }
}

/// Collects what one module's items name; nested modules are handed back, not entered.
#[derive(Default)]
struct Collector<'ast> {
    m: Module,
    mods: Vec<&'ast syn::ItemMod>,
}

impl Collector<'_> {
    fn add_use(&mut self, u: &syn::ItemUse) {
        if u.leading_colon.is_some() {
            return; // `::other_crate::x`
        }
        let mut leaves = Vec::new();
        use_leaves(&u.tree, &Vec::new(), &mut leaves);
        for (path, name, line) in leaves {
            match name {
                Some(n) if n != "_" => {
                    self.m.bindings.insert(n, path.clone());
                }
                Some(_) => {}
                None => self.m.globs.push(path.clone()),
            }
            self.m.named.push((path, line, false));
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'ast> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_cfg_test(item_attrs(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.mods.push(m);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.add_use(u);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() && !p.segments.is_empty() {
            let path: ModPath = p.segments.iter().map(|s| s.ident.to_string()).collect();
            let single = path.len() == 1;
            self.m
                .named
                .push((path, line_of(p.segments[0].ident.span()), single));
        }
        syn::visit::visit_path(self, p);
    }

    /// `#[schemars(transform = super::schema::f)]`: an attribute's arguments are tokens too.
    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        if let syn::Meta::List(list) = &a.meta {
            let mut paths = Vec::new();
            token_paths(list.tokens.clone(), &mut paths);
            self.m
                .named
                .extend(paths.into_iter().map(|(path, line)| (path, line, false)));
        }
        syn::visit::visit_attribute(self, a);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_path(self, &mac.path);
        let mut paths = Vec::new();
        token_paths(mac.tokens.clone(), &mut paths);
        // `$crate::x` in a `macro_rules!` arrives as `$` and `crate::x`: the same path.
        for (path, line) in paths {
            self.m.named.push((path, line, false));
        }
    }
}

/// The names an item defines at module level (child modules aside).
fn item_name(item: &syn::Item) -> Option<String> {
    Some(
        match item {
            syn::Item::Const(i) => &i.ident,
            syn::Item::Enum(i) => &i.ident,
            syn::Item::ExternCrate(i) => &i.ident,
            syn::Item::Fn(i) => &i.sig.ident,
            syn::Item::Macro(i) => i.ident.as_ref()?,
            syn::Item::Static(i) => &i.ident,
            syn::Item::Struct(i) => &i.ident,
            syn::Item::Trait(i) => &i.ident,
            syn::Item::TraitAlias(i) => &i.ident,
            syn::Item::Type(i) => &i.ident,
            syn::Item::Union(i) => &i.ident,
            _ => return None,
        }
        .to_string(),
    )
}

/// Where a file's out-of-line child modules live: beside a crate root or a `mod.rs`, else in
/// the folder named after the file.
fn child_dir(file: &str) -> String {
    let (dir, name) = file.rsplit_once('/').map_or(("", file), |(d, n)| (d, n));
    let dir = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    if name == "mod.rs"
        || !file.contains('/') && matches!(name, "lib.rs" | "main.rs")
        || file.starts_with("bin/") && !file[4..].contains('/')
    {
        dir
    } else {
        format!("{dir}{}/", name.trim_end_matches(".rs"))
    }
}

/// What loading the roots of one `src/` found: the files it read and the paths (without `.rs`)
/// that `#[cfg(test)] mod x;` declarations cover.
#[derive(Default)]
struct Reach {
    read: BTreeSet<String>,
    tests: Vec<String>,
}

impl Crate {
    /// Every crate root in `files` (paths relative to `src/`, `/`-separated, with their text):
    /// `lib.rs`, `main.rs` and `bin/*.rs`. Fails if a file is reached from none of them.
    fn all(files: &BTreeMap<String, String>) -> Vec<Crate> {
        let mut reach = Reach::default();
        let roots: Vec<&String> = files
            .keys()
            .filter(|f| {
                matches!(f.as_str(), "lib.rs" | "main.rs")
                    || f.strip_prefix("bin/").is_some_and(|b| !b.contains('/'))
            })
            .collect();
        let crates: Vec<Crate> = roots
            .into_iter()
            .map(|root| {
                let mut krate = Crate {
                    root: root.clone(),
                    modules: BTreeMap::new(),
                };
                krate.load_file(Vec::new(), root, files, &mut reach);
                krate
            })
            .collect();
        let unread: Vec<&String> = files
            .keys()
            .filter(|f| {
                !reach.read.contains(*f)
                    && !reach.tests.iter().any(|t| {
                        f.strip_prefix(t.as_str())
                            .is_some_and(|rest| rest == ".rs" || rest.starts_with('/'))
                    })
            })
            .collect();
        assert!(unread.is_empty(), "files no crate root reaches: {unread:?}");
        crates
    }

    fn load_file(
        &mut self,
        at: ModPath,
        file: &str,
        files: &BTreeMap<String, String>,
        reach: &mut Reach,
    ) {
        let text = files.get(file).unwrap_or_else(|| {
            panic!("{}: module {} has no file {file}", self.root, at.join("::"))
        });
        let ast = syn::parse_file(text).unwrap_or_else(|e| panic!("{file} does not parse: {e}"));
        reach.read.insert(file.to_string());
        self.load_items(at, file, &ast.items, &child_dir(file), files, reach);
    }

    fn load_items(
        &mut self,
        at: ModPath,
        file: &str,
        items: &[syn::Item],
        dir: &str,
        files: &BTreeMap<String, String>,
        reach: &mut Reach,
    ) {
        let mut c = Collector::default();
        for item in items {
            if let syn::Item::Mod(m) = item
                && m.content.is_none()
                && is_cfg_test(&m.attrs)
            {
                let path = path_attr(&m.attrs).map_or_else(
                    || format!("{dir}{}", m.ident),
                    |p| format!("{}{}", child_dir(file), p.trim_end_matches(".rs")),
                );
                reach.tests.push(path);
            }
            if is_cfg_test(item_attrs(item)) {
                continue;
            }
            c.m.items.extend(item_name(item));
            c.visit_item(item);
        }
        let mut module = c.m;
        module.file = file.to_string();
        module.children = c.mods.iter().map(|m| m.ident.to_string()).collect();
        self.modules.insert(at.clone(), module);
        for m in c.mods {
            let mut child = at.clone();
            child.push(m.ident.to_string());
            match (&m.content, path_attr(&m.attrs)) {
                (Some((_, items)), _) => {
                    self.load_items(
                        child,
                        file,
                        items,
                        &format!("{dir}{}/", m.ident),
                        files,
                        reach,
                    );
                }
                (None, Some(p)) => {
                    let path = format!("{}{p}", child_dir(file));
                    self.load_file(child, &path, files, reach);
                }
                (None, None) => {
                    let flat = format!("{dir}{}.rs", m.ident);
                    let nested = format!("{dir}{}/mod.rs", m.ident);
                    let path = if files.contains_key(&flat) {
                        flat
                    } else {
                        nested
                    };
                    self.load_file(child, &path, files, reach);
                }
            }
        }
    }

    /// Whether module `m` has `name` in scope at its top level.
    fn has(&self, m: &ModPath, name: &str, guard: usize) -> bool {
        let Some(md) = self.modules.get(m) else {
            return false;
        };
        md.children.contains(name)
            || md.items.contains(name)
            || md.bindings.contains_key(name)
            || guard < 8
                && md.globs.iter().any(|g| {
                    self.absolute(m, g, guard + 1)
                        .is_some_and(|gm| self.has(&gm, name, guard + 1))
                })
    }

    /// `path` as written in module `at`, made absolute (from the crate root); `None` when it
    /// names another crate, the prelude, a local or a generic.
    fn absolute(&self, at: &ModPath, path: &[String], guard: usize) -> Option<ModPath> {
        let (first, rest) = path.split_first()?;
        if guard > 16 {
            return None;
        }
        match first.as_str() {
            "crate" => return Some(rest.to_vec()),
            "Self" => return None,
            "self" | "super" => {
                let mut base = at.clone();
                let mut i = usize::from(first == "self");
                while path.get(i).is_some_and(|s| s == "super") {
                    base.pop()?;
                    i += 1;
                }
                return Some([base.as_slice(), &path[i..]].concat());
            }
            _ => {}
        }
        let md = self.modules.get(at)?;
        if md.children.contains(first) || md.items.contains(first) {
            return Some([at.as_slice(), path].concat());
        }
        if let Some(bound) = md.bindings.get(first) {
            if bound.as_slice() == [first.clone()] {
                return None; // `use other_crate;`
            }
            let abs = self.absolute(at, bound, guard + 1)?;
            return Some([abs.as_slice(), rest].concat());
        }
        md.globs.iter().find_map(|g| {
            let gm = self.absolute(at, g, guard + 1)?;
            self.has(&gm, first, guard + 1)
                .then(|| [gm.as_slice(), path].concat())
        })
    }

    /// The module that defines what the absolute `path` names, following re-exports (a name
    /// this crate does not define stops at the module it is looked up in); `None` when a
    /// re-export leads to another crate.
    fn site(&self, path: &[String], guard: usize) -> Option<ModPath> {
        let mut m: ModPath = Vec::new();
        for (i, seg) in path.iter().enumerate() {
            let Some(md) = self.modules.get(&m) else {
                return Some(m);
            };
            if md.children.contains(seg) {
                m.push(seg.clone());
                continue;
            }
            if md.items.contains(seg) || guard > 16 {
                return Some(m);
            }
            if let Some(bound) = md.bindings.get(seg) {
                let abs = self.absolute(&m, bound, guard + 1)?;
                return self.site(&[abs.as_slice(), &path[i + 1..]].concat(), guard + 1);
            }
            for g in &md.globs {
                if let Some(gm) = self.absolute(&m, g, guard + 1)
                    && self.has(&gm, seg, guard + 1)
                {
                    return self.site(&[gm.as_slice(), &path[i..]].concat(), guard + 1);
                }
            }
            return Some(m);
        }
        Some(m)
    }

    /// The deepest module the absolute `path` walks through by its own segments: where an
    /// item of another crate is re-exported from.
    fn through(&self, path: &[String]) -> ModPath {
        let mut m: ModPath = Vec::new();
        for seg in path {
            m.push(seg.clone());
            if !self.modules.contains_key(&m) {
                m.pop();
                break;
            }
        }
        m
    }

    /// Every edge `(from, to, file:line)` between distinct modules, at full depth.
    fn edges(&self) -> Vec<(ModPath, ModPath, String)> {
        let mut out = Vec::new();
        for (m, md) in &self.modules {
            for (path, line, single) in &md.named {
                if *single
                    && (md.items.contains(&path[0])
                        || md.children.contains(&path[0])
                        || md.bindings.contains_key(&path[0]))
                {
                    continue; // a local item, or the `use` that binds it is an edge already
                }
                let Some(abs) = self.absolute(m, path, 0) else {
                    continue;
                };
                let target = self.site(&abs, 0).unwrap_or_else(|| self.through(&abs));
                if &target != m {
                    out.push((m.clone(), target, format!("src/{}:{line}", md.file)));
                }
            }
        }
        out
    }
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
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
/// lists every cycle with one `file:line` per edge inside it; empty when there is none.
fn cycle_report(krate: &Crate, node: impl Fn(&ModPath) -> Option<String>) -> String {
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
    let mut report = String::new();
    for comp in cycles(&nodes, &edges) {
        report.push_str(&format!("\ncycle among {}:\n", comp.join(", ")));
        for ((a, b), at) in &edges {
            if comp.contains(a) && comp.contains(b) {
                report.push_str(&format!("  {a} -> {b}  ({at})\n"));
            }
        }
    }
    report
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

/// Every `.rs` file under `dir` (relative to `base`, `/`-separated) with its text.
fn sources(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            sources(base, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(base).expect("under src");
            let rel: Vec<String> = rel
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            let text = std::fs::read_to_string(&path).expect("source is UTF-8");
            out.insert(rel.join("/"), text);
        }
    }
}

/// The crate roots of the workspace crate in directory `dir` (`core`, `ledger`, ...).
fn krates(dir: &str) -> Vec<Crate> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(dir)
        .join("src");
    let mut files = BTreeMap::new();
    sources(&src, &src, &mut files);
    let crates = Crate::all(&files);
    assert!(!crates.is_empty(), "no crate root in {}", src.display());
    crates
}

/// The crates whose modules are checked: every crate of the workspace (the crate graph test
/// keeps the crates themselves in one direction).
const CRATES: [&str; 13] = [
    "ledger",
    "os",
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
    let mut report = String::new();
    for dir in CRATES {
        for krate in krates(dir) {
            let found = cycle_report(&krate, |m| depth(m, 1));
            if !found.is_empty() {
                report.push_str(&format!("\n{dir}/src/{}'s modules:{found}", krate.root));
            }
        }
    }
    assert!(report.is_empty(), "modules must depend one way{report}");
}

/// The second-level modules (`protocol::registry`) of a crate, the top-level ones without
/// children (`claims`), and no parent's own file (`protocol/mod.rs`): its code and its
/// children's uses of it are edges of the top-level check.
fn second_level(krate: &Crate) -> impl Fn(&ModPath) -> Option<String> + '_ {
    |m: &ModPath| {
        let parent = m.len() == 1 && krate.modules.keys().any(|k| k.len() > 1 && k[0] == m[0]);
        (!parent).then(|| depth(m, 2)).flatten()
    }
}

#[test]
fn second_level_modules_have_no_cycle() {
    let mut report = String::new();
    for dir in CRATES {
        for krate in krates(dir) {
            let found = cycle_report(&krate, second_level(&krate));
            if !found.is_empty() {
                report.push_str(&format!(
                    "\n{dir}/src/{}'s second-level modules:{found}",
                    krate.root
                ));
            }
        }
    }
    assert!(report.is_empty(), "modules must depend one way{report}");
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

fn synthetic(files: &[(&str, &str)]) -> Crate {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(p, s)| (p.to_string(), s.to_string()))
        .collect();
    let mut crates = Crate::all(&files);
    assert_eq!(crates.len(), 1);
    crates.remove(0)
}

#[test]
fn the_parser_sees_super_chains_nested_groups_re_exports_and_inline_paths() {
    let krate = synthetic(&[
        (
            "lib.rs",
            "mod a;\nmod b;\npub use b::c::D as Re;\npub use other as ext;\n",
        ),
        ("a.rs", "mod x;\n"),
        (
            "a/x.rs",
            "use super::super::b::{c::{D, e}, F};\n\
             mod y {\n\
             \x20   fn g() {\n\
             \x20       super::super::super::b::G::new();\n\
             \x20       let _ = crate::Re;\n\
             \x20       let _ = format!(\"{}\", crate::b::h()); // crate::a::in_a_comment\n\
             \x20       let _ = \"crate::a::in_a_string\";\n\
             \x20       let _ = crate::b::Thing::new();\n\
             \x20   }\n\
             }\n\
             #[schemars(transform = crate::b::h)]\n\
             struct S;\n",
        ),
        (
            "b.rs",
            "pub mod c;\npub struct F;\npub struct G;\npub fn h() {}\n\
             #[cfg(test)]\nfn only_in_tests() { crate::a::x(); }\npub use crate::ext::Thing;\n",
        ),
        (
            "b/c.rs",
            "pub struct D;\npub fn e() {}\n#[cfg(test)]\nmod tests;\n",
        ),
        ("b/c/tests.rs", "use crate::a::x;\n"),
    ]);
    let mut edges: Vec<String> = krate
        .edges()
        .into_iter()
        .map(|(from, to, at)| format!("{} -> {} ({at})", join(&from), join(&to)))
        .collect();
    edges.sort();
    edges.dedup();
    assert_eq!(
        edges,
        [
            "a::x -> b (src/a/x.rs:1)",
            "a::x -> b (src/a/x.rs:11)",
            "a::x -> b::c (src/a/x.rs:1)",
            "a::x::y -> b (src/a/x.rs:4)",
            "a::x::y -> b (src/a/x.rs:6)",
            "a::x::y -> b (src/a/x.rs:8)",
            "a::x::y -> b::c (src/a/x.rs:5)",
            "b -> crate (src/b.rs:7)",
            "crate -> b::c (src/lib.rs:3)",
        ]
    );
}

#[test]
fn a_cycle_is_named_with_its_edges() {
    let krate = synthetic(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "pub fn f() {\n    super::b::g();\n}\n"),
        ("b.rs", "use crate::{a::{self}};\npub fn g() {}\n"),
    ]);
    let report = cycle_report(&krate, |m| depth(m, 1));
    assert_eq!(
        report,
        "\ncycle among a, b:\n  a -> b  (src/a.rs:2)\n  b -> a  (src/b.rs:1)\n"
    );
}

#[test]
#[should_panic(expected = "files no crate root reaches: [\"stray.rs\"]")]
fn a_file_no_root_reaches_fails() {
    synthetic(&[("lib.rs", "mod a;\n"), ("a.rs", ""), ("stray.rs", "")]);
}
