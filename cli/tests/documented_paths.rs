//! The documents name only files that exist: every path of the repository written in backticks
//! in README.md, tests/README.md or docs/*.md (`domain/src/claims.rs`, `core/src/engine/`,
//! `effects/src/perform.rs:120`) is a file or directory of the checkout. A rename or a removal
//! that leaves a page pointing at nothing fails here, not in a reader's hands.
//!
//! A `path:LINE` must name a line the file has; and in a table row that names a function beside
//! its place (`| n | \`Type::name\` | \`path:LINE\` | … |`, as ARCHITECTURE.md draws one call's
//! path), that line must declare the function (`fn name`), so the drawing moves with the code.
//!
//! Paths that a build or a test run creates (`target/`, `.cache/`, `fuzz/target/`) are left out,
//! as are patterns (`*`, `{`, `<`).

use std::path::{Path, PathBuf};

/// The checkout's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The pages checked.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md"), root.join("tests/README.md")];
    let docs = std::fs::read_dir(root.join("docs")).expect("docs/ is readable");
    for entry in docs {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages.sort();
    pages
}

/// The backticked spans of a line.
fn spans(line: &str) -> impl Iterator<Item = &str> {
    line.split('`').skip(1).step_by(2)
}

/// The repository path a span names, if it names one: it starts with a top-level entry of the
/// checkout followed by `/`, optionally ends in `:LINE`, and holds no pattern characters.
fn repo_path<'a>(span: &'a str, tops: &[String]) -> Option<&'a str> {
    let path = match span.rsplit_once(':') {
        Some((p, line)) if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) => p,
        _ => span,
    };
    let (top, _) = path.split_once('/')?;
    let ok = tops.iter().any(|t| t == top)
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./-".contains(&b))
        && !["target", ".cache"].contains(&top)
        && !path.starts_with("fuzz/target");
    ok.then_some(path)
}

/// `(function, path, line)` of a table row `| n | \`Type::name\` | \`path:LINE\` | … |`.
fn drawn_row(line: &str) -> Option<(&str, &str, usize)> {
    let cells: Vec<&str> = line.split('|').map(str::trim).collect();
    let (name, place) = (cells.get(2)?, cells.get(3)?);
    let name = name.strip_prefix('`')?.strip_suffix('`')?;
    let place = place.strip_prefix('`')?.strip_suffix('`')?;
    let (path, n) = place.rsplit_once(':')?;
    Some((name, path, n.parse().ok()?))
}

#[test]
fn every_drawn_function_is_declared_at_its_line() {
    let root = root();
    let mut rows = 0;
    let mut wrong = Vec::new();
    for page in pages(&root) {
        let text = std::fs::read_to_string(&page).expect("a page is readable");
        for (function, path, n) in text.lines().filter_map(drawn_row) {
            rows += 1;
            let fn_name = function.rsplit("::").next().unwrap_or(function);
            let source = std::fs::read_to_string(root.join(path)).unwrap_or_default();
            let at = source.lines().nth(n.saturating_sub(1)).unwrap_or("");
            let declared =
                at.contains(&format!("fn {fn_name}(")) || at.contains(&format!("fn {fn_name}<"));
            if !declared {
                wrong.push(format!(
                    "`{function}` is not declared at {path}:{n} ({at:?})"
                ));
            }
        }
    }
    assert!(
        rows >= 20,
        "only {rows} drawn rows found: is the scan broken?"
    );
    assert!(
        wrong.is_empty(),
        "the drawing no longer matches the code:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_documented_path_exists() {
    let root = root();
    let tops: Vec<String> = std::fs::read_dir(&root)
        .expect("the checkout is readable")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    let mut missing = Vec::new();
    let mut seen = 0;
    for page in pages(&root) {
        let text = std::fs::read_to_string(&page).expect("a page is readable");
        for (n, line) in text.lines().enumerate() {
            for span in spans(line) {
                let Some(path) = repo_path(span, &tops) else {
                    continue;
                };
                seen += 1;
                let name = page.strip_prefix(&root).unwrap_or(&page).display();
                let lines = std::fs::read_to_string(root.join(path))
                    .map(|t| t.lines().count())
                    .ok();
                let wanted = span
                    .rsplit_once(':')
                    .and_then(|(_, l)| l.parse::<usize>().ok());
                match (root.join(path).exists(), wanted, lines) {
                    (false, _, _) => missing.push(format!("{name}:{}: `{path}`", n + 1)),
                    (true, Some(l), Some(have)) if l > have => missing.push(format!(
                        "{name}:{}: `{span}` (the file has {have} lines)",
                        n + 1
                    )),
                    _ => {}
                }
            }
        }
    }
    assert!(seen > 50, "only {seen} paths found: is the scan broken?");
    assert!(
        missing.is_empty(),
        "the documents name paths that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_path_with_a_line_number_and_a_pattern_are_told_apart() {
    let tops = vec!["core".to_string(), "target".to_string()];
    assert_eq!(
        repo_path("core/src/lib.rs:12", &tops),
        Some("core/src/lib.rs")
    );
    assert_eq!(repo_path("core/src/*.rs", &tops), None);
    assert_eq!(repo_path("target/debug/bernstein", &tops), None);
    assert_eq!(repo_path("elsewhere/x.rs", &tops), None);
    assert_eq!(spans("a `x` b `y`").collect::<Vec<_>>(), ["x", "y"]);
}
