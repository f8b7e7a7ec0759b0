//! The README's tool table is generated from the live registry: this test fails when they
//! drift (`BLESS=1 cargo test -p bernstein --test readme_tools` rewrites it).

use std::process::Command;

use serde_json::Value;

fn live_table() -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_bernstein"))
        .args(["mcp", "tools", "--tier", "all", "--json"])
        .output()
        .expect("bernstein runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    let mut rows = vec![
        "| tool | tier | what it does |".to_string(),
        "|---|---|---|".to_string(),
    ];
    let mut tools: Vec<&Value> = listing["tools"].as_array().expect("tools").iter().collect();
    let rank = |t: &str| {
        ["core", "standard", "all"]
            .iter()
            .position(|x| *x == t)
            .unwrap_or(3)
    };
    tools.sort_by_key(|t| {
        (
            rank(t["tier"].as_str().unwrap_or("")),
            t["name"].as_str().unwrap_or("").to_string(),
        )
    });
    for t in tools {
        rows.push(format!(
            "| `{}` | {} | {} |",
            t["name"].as_str().unwrap(),
            t["tier"].as_str().unwrap(),
            t["title"].as_str().unwrap()
        ));
    }
    rows.join("\n")
}

#[test]
fn readme_tool_table_matches_the_registry() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let begin = readme
        .find("<!-- tools:begin -->")
        .expect("README has a tools:begin marker")
        + "<!-- tools:begin -->".len();
    let end = readme
        .find("<!-- tools:end -->")
        .expect("README has a tools:end marker");
    let table = live_table();
    if std::env::var_os("BLESS").is_some() && readme[begin..end].trim() != table {
        let updated = format!("{}\n{table}\n{}", &readme[..begin], &readme[end..]);
        std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"),
            updated,
        )
        .expect("rewrite README.md");
        return;
    }
    assert_eq!(
        readme[begin..end].trim(),
        table,
        "README tool table is stale; replace it with:\n{table}"
    );
}
