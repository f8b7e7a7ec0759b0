//! The core must stay pure (docs/ARCHITECTURE.md, Design decisions 2). `clippy.toml` bans IO, clock and environment calls
//! in its source and in the two crates below it (the MCP engine's and the ledger's); this test
//! fails if the core's normal dependency tree (theirs included) gains an IO runtime or an OS
//! randomness source, and if any of the three crates' non-test source names one.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // test code may do IO
use std::path::Path;
use std::process::Command;

/// Crates that do IO, run an event loop or read OS randomness.
const FORBIDDEN: &[&str] = &[
    "tokio",
    "mio",
    "async-io",
    "async-std",
    "smol",
    "polling",
    "async-executor",
    "blocking",
    "socket2",
    "hyper",
    "reqwest",
    "ureq",
    "getrandom",
    "rand",
    "libc",
    "rustix",
    "nix",
    "fs4",
    "fs2",
    "memmap2",
];

/// Features that give an otherwise harmless crate an OS randomness source. `rand_core` itself is
/// allowed: `imbl` (the projection's persistent maps) uses it with `rand_xoshiro`, a PRNG it
/// seeds with a constant, so the core stays deterministic. Only these features (which pull
/// `getrandom`, banned above as well) would connect it to the OS.
const ENTROPY_FEATURES: &[(&str, &str)] = &[("rand_core", "os_rng"), ("rand_core", "getrandom")];

#[test]
fn dependency_tree_holds_no_io_runtime() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "bernstein-domain",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p} {f}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8(out.stdout).expect("cargo tree prints UTF-8");
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for pure in ["bernstein-domain", "bernstein-core", "bernstein-ledger"] {
        assert!(
            crates.contains(&pure),
            "unexpected cargo tree output (no {pure}):\n{tree}"
        );
    }
    let bad: Vec<&&str> = crates.iter().filter(|c| FORBIDDEN.contains(c)).collect();
    assert!(
        bad.is_empty(),
        "the core's dependency tree gained IO crates: {bad:?}"
    );
    let entropy: Vec<&str> = tree
        .lines()
        .filter(|l| {
            let mut words = l.split_whitespace();
            let name = words.next().unwrap_or("");
            let features = words.nth(1).unwrap_or("");
            features
                .split(',')
                .any(|f| ENTROPY_FEATURES.contains(&(name, f)))
        })
        .collect();
    assert!(
        entropy.is_empty(),
        "the core's dependency tree enabled OS randomness: {entropy:?}"
    );
}

#[test]
fn source_names_no_io() {
    let needles = [
        "std::fs",
        "std::net",
        "std::process",
        "std::env",
        "std::thread",
        "Instant::now",
        "SystemTime::now",
        "thread_rng",
        "OsRng",
        "getrandom",
    ];
    let mut hits = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The MCP and ledger crates are below the core and must be as pure (their `clippy.toml` is
    // the core's).
    for src in [
        root.join("src"),
        root.join("../core/src"),
        root.join("../ledger/src"),
    ] {
        scan(&src, &needles, &mut hits);
    }
    assert!(
        hits.is_empty(),
        "impure lines in domain/src, core/src or ledger/src:\n{}",
        hits.join("\n")
    );
}

fn scan(dir: &Path, needles: &[&str], hits: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("the sources are readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            scan(&path, needles, hits);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source is UTF-8");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, line) in code.lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") {
                continue;
            }
            if let Some(n) = needles.iter().find(|n| line.contains(*n)) {
                hits.push(format!("{}:{}: {n}", path.display(), i + 1));
            }
        }
    }
}
