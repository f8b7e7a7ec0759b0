//! The workspace's crates depend one way. Every crate has a layer in [`LAYERS`]; each normal
//! or build dependency on another workspace crate must point to a strictly lower layer (so a
//! cycle cannot be written), the ledger depends on no workspace crate and the MCP engine (the
//! core) and the system crate on none but the ledger (none of the three even for tests), the
//! domain on none but the core, the stores on none but the ledger and the system crate (and the
//! PostgreSQL store on the file store; their tests may use the core and the domain), the effects
//! crate and the runtimes on neither the domain nor a store crate (they are generic over the fold
//! and the store: the CLI wires Bernstein's; their tests may use both), and neither a store crate
//! nor the effects crate depends on a runtime crate, nor a runtime on another, not even for
//! tests. The graph is `cargo metadata`'s.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Every workspace crate and its layer: a crate may depend only on crates of lower layers.
const LAYERS: &[(&str, u32)] = &[
    ("bernstein-ledger", 0),
    ("bernstein-core", 1),
    ("bernstein-os", 1),
    ("bernstein-domain", 2),
    ("bernstein-store-file", 2),
    ("bernstein-store-postgres", 3),
    ("bernstein-effects", 4),
    ("bernstein-runtime-std", 5),
    ("bernstein-runtime-smol", 5),
    ("bernstein-worker", 5),
    ("bernstein-bench", 5),
    ("bernstein-conformance-fixture", 6),
    ("bernstein", 6),
];

const LEDGER: &str = "bernstein-ledger";
const ENGINE: &str = "bernstein-core";
const OS: &str = "bernstein-os";
const DOMAIN: &str = "bernstein-domain";
const FILE_STORE: &str = "bernstein-store-file";
const STORES: &[&str] = &[FILE_STORE, "bernstein-store-postgres"];
const EFFECTS: &str = "bernstein-effects";
const RUNTIMES: &[&str] = &["bernstein-runtime-std", "bernstein-runtime-smol"];

/// A dependency of one workspace crate on another.
#[derive(Debug)]
struct Edge {
    from: String,
    to: String,
    /// `normal`, `dev` or `build`.
    kind: String,
}

/// Why the graph breaks the rules, one line per offending crate or edge.
fn violations(crates: &[String], edges: &[Edge]) -> Vec<String> {
    let layers: BTreeMap<&str, u32> = LAYERS.iter().copied().collect();
    let mut bad = Vec::new();
    for name in crates {
        if !layers.contains_key(name.as_str()) {
            bad.push(format!("{name} is a workspace crate missing from LAYERS"));
        }
    }
    for name in layers.keys() {
        if !crates.iter().any(|c| c == name) {
            bad.push(format!("{name} is in LAYERS but not a workspace crate"));
        }
    }
    for e in edges {
        let edge = format!("{} -> {} ({})", e.from, e.to, e.kind);
        if RUNTIMES.contains(&e.to.as_str()) {
            if STORES.contains(&e.from.as_str()) {
                bad.push(format!("{edge}: a store crate depends on a runtime crate"));
            }
            if e.from == EFFECTS {
                bad.push(format!(
                    "{edge}: the effects crate depends on a runtime crate"
                ));
            }
            if RUNTIMES.contains(&e.from.as_str()) {
                bad.push(format!("{edge}: a runtime depends on another runtime"));
            }
        }
        if e.from == LEDGER {
            bad.push(format!("{edge}: the ledger depends on no workspace crate"));
        }
        if e.from == ENGINE && e.to != LEDGER {
            bad.push(format!(
                "{edge}: the MCP engine depends on no workspace crate but the ledger"
            ));
        }
        if e.from == OS && e.to != LEDGER {
            bad.push(format!(
                "{edge}: the system crate depends on no workspace crate but the ledger"
            ));
        }
        if e.kind == "dev" {
            continue;
        }
        if e.from == DOMAIN && e.to != ENGINE {
            bad.push(format!(
                "{edge}: the domain depends on no workspace crate but the MCP engine"
            ));
        }
        let generic = e.from == EFFECTS || RUNTIMES.contains(&e.from.as_str());
        if generic && (e.to == DOMAIN || STORES.contains(&e.to.as_str())) {
            bad.push(format!(
                "{edge}: the effects crate and the runtimes depend on neither the domain nor a store crate (they are generic over the fold and the store)"
            ));
        }
        if STORES.contains(&e.from.as_str()) && e.to != LEDGER && e.to != OS && e.to != FILE_STORE {
            bad.push(format!(
                "{edge}: a store depends on no workspace crate but the ledger and the system crate (and the file store)"
            ));
        }
        if let (Some(from), Some(to)) = (layers.get(e.from.as_str()), layers.get(e.to.as_str()))
            && to >= from
        {
            bad.push(format!(
                "{edge}: layer {from} may depend only on lower layers, not on layer {to}"
            ));
        }
    }
    bad
}

/// The workspace crates and the dependencies among them.
fn workspace_graph() -> (Vec<String>, Vec<Edge>) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let crates: Vec<String> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("package name").to_string())
        .collect();
    let mut edges = Vec::new();
    for p in packages {
        for d in p["dependencies"].as_array().expect("dependencies") {
            let to = d["name"].as_str().expect("dependency name");
            if crates.iter().any(|c| c == to) {
                edges.push(Edge {
                    from: p["name"].as_str().unwrap().to_string(),
                    to: to.to_string(),
                    kind: d["kind"].as_str().unwrap_or("normal").to_string(),
                });
            }
        }
    }
    (crates, edges)
}

#[test]
fn workspace_crates_depend_one_way() {
    let (crates, edges) = workspace_graph();
    assert!(
        edges
            .iter()
            .any(|e| e.from == "bernstein" && e.kind == "normal"),
        "unexpected cargo metadata: {edges:?}"
    );
    let bad = violations(&crates, &edges);
    assert!(
        bad.is_empty(),
        "the crate graph breaks its layers:\n{}",
        bad.join("\n")
    );
}

#[test]
fn offending_edges_are_named() {
    let crates: Vec<String> = LAYERS.iter().map(|(n, _)| n.to_string()).collect();
    let edge = |from: &str, to: &str, kind: &str| Edge {
        from: from.into(),
        to: to.into(),
        kind: kind.into(),
    };
    let edges = [
        edge("bernstein-store-postgres", "bernstein-runtime-std", "dev"),
        edge("bernstein-store-file", "bernstein-store-postgres", "normal"),
        edge("bernstein-store-file", "bernstein-domain", "normal"),
        edge("bernstein-store-postgres", "bernstein-domain", "normal"),
        edge("bernstein-domain", "bernstein-store-file", "normal"),
        edge("bernstein-domain", "bernstein-core", "normal"),
        edge("bernstein-core", "bernstein-domain", "dev"),
        edge("bernstein-ledger", "bernstein-domain", "dev"),
        edge("bernstein-runtime-std", "bernstein-store-file", "normal"),
        edge("bernstein-runtime-smol", "bernstein-runtime-std", "dev"),
        edge("bernstein-effects", "bernstein-runtime-smol", "normal"),
        edge("bernstein-os", "bernstein-core", "normal"),
        edge("bernstein-effects", "bernstein-domain", "normal"),
        edge("bernstein-effects", "bernstein-store-file", "dev"),
        edge(
            "bernstein-runtime-smol",
            "bernstein-store-postgres",
            "normal",
        ),
    ];
    let bad = violations(&crates, &edges);
    let expected = [
        "bernstein-store-postgres -> bernstein-runtime-std (dev): a store crate depends on a runtime crate",
        "bernstein-store-file -> bernstein-store-postgres (normal): a store depends on no workspace crate but the ledger and the system crate (and the file store)",
        "bernstein-store-file -> bernstein-store-postgres (normal): layer 2 may depend only on lower layers, not on layer 3",
        "bernstein-store-file -> bernstein-domain (normal): a store depends on no workspace crate but the ledger and the system crate (and the file store)",
        "bernstein-store-file -> bernstein-domain (normal): layer 2 may depend only on lower layers, not on layer 2",
        "bernstein-store-postgres -> bernstein-domain (normal): a store depends on no workspace crate but the ledger and the system crate (and the file store)",
        "bernstein-domain -> bernstein-store-file (normal): the domain depends on no workspace crate but the MCP engine",
        "bernstein-domain -> bernstein-store-file (normal): layer 2 may depend only on lower layers, not on layer 2",
        "bernstein-core -> bernstein-domain (dev): the MCP engine depends on no workspace crate but the ledger",
        "bernstein-ledger -> bernstein-domain (dev): the ledger depends on no workspace crate",
        "bernstein-runtime-std -> bernstein-store-file (normal): the effects crate and the runtimes depend on neither the domain nor a store crate (they are generic over the fold and the store)",
        "bernstein-runtime-smol -> bernstein-runtime-std (dev): a runtime depends on another runtime",
        "bernstein-effects -> bernstein-runtime-smol (normal): the effects crate depends on a runtime crate",
        "bernstein-effects -> bernstein-runtime-smol (normal): layer 4 may depend only on lower layers, not on layer 5",
        "bernstein-os -> bernstein-core (normal): the system crate depends on no workspace crate but the ledger",
        "bernstein-os -> bernstein-core (normal): layer 1 may depend only on lower layers, not on layer 1",
        "bernstein-effects -> bernstein-domain (normal): the effects crate and the runtimes depend on neither the domain nor a store crate (they are generic over the fold and the store)",
        "bernstein-runtime-smol -> bernstein-store-postgres (normal): the effects crate and the runtimes depend on neither the domain nor a store crate (they are generic over the fold and the store)",
    ];
    assert_eq!(bad, expected);
    let mut more = crates.clone();
    more.push("bernstein-new".into());
    more.retain(|c| c != "bernstein-bench");
    assert_eq!(
        violations(&more, &[]),
        [
            "bernstein-new is a workspace crate missing from LAYERS",
            "bernstein-bench is in LAYERS but not a workspace crate",
        ]
    );
}
