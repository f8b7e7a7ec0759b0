//! The alias matrix: every alias under every tier, with the switch on and off, resolved by the
//! catalogue and served by the engine.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;
use crate::Snapshot;
use crate::bound::ToolLookup;
use crate::bound::{Input, Server};
use crate::testkit::doc_table;
use crate::{catalog, tiers, tools};
use bernstein_core::config::{Config, Tier};
use bernstein_core::protocol::TransportFacts;
use bernstein_core::time::Timestamp;

fn config(tier: Tier, aliases_on: bool) -> Config {
    let mut c = Config::new(b"k".to_vec()).with_signing_seed(&[7; 32]);
    c.tier = tier;
    c.deprecated_aliases = aliases_on;
    c
}

/// Whether `alias` must resolve: switch on, replacement registered and inside the tier.
fn expected_live(replacement: &str, tier: Tier, on: bool) -> bool {
    let registered = tools::registered().iter().any(|t| t.name == replacement);
    on && registered && tiers::tier_of(replacement).is_some_and(|t| tier.includes(t))
}

#[test]
fn the_table_is_unique_and_shadows_no_tool() {
    let names: BTreeSet<&str> = DEPRECATED_ALIASES.iter().map(|(a, _)| *a).collect();
    assert_eq!(
        names.len(),
        DEPRECATED_ALIASES.len(),
        "an alias is declared twice"
    );
    for (alias, replacement) in DEPRECATED_ALIASES {
        assert!(tiers::tier_of(alias).is_none(), "{alias} is also a tool");
        assert!(
            tiers::tier_of(replacement).is_some(),
            "{alias} → {replacement}: the replacement is not in the tier table"
        );
    }
    assert_eq!(catalog().aliases, DEPRECATED_ALIASES.to_vec());
}

#[test]
fn module_docs_list_the_table() {
    let docs: Vec<(String, String)> = doc_table(include_str!("../aliases.rs"), 2)
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    let table: Vec<(String, String)> = DEPRECATED_ALIASES
        .iter()
        .map(|(a, r)| (a.to_string(), r.to_string()))
        .collect();
    assert_eq!(docs, table);
}

#[test]
fn lookup_matrix_over_tiers_and_the_switch() {
    let c = catalog();
    for tier in Tier::ALL {
        for on in [true, false] {
            let cfg = config(tier, on);
            for (alias, replacement) in DEPRECATED_ALIASES {
                let live = expected_live(replacement, tier, on);
                match c.lookup_tool(alias, &cfg) {
                    ToolLookup::Alias { alias: a, tool } => {
                        assert!(live, "{alias} resolves under {tier:?}, on={on}");
                        assert_eq!((a, tool.name), (*alias, *replacement));
                    }
                    ToolLookup::AliasUnavailable { replacement: r, .. } => {
                        assert!(!live, "{alias} missing under {tier:?}, on={on}");
                        assert_eq!(r, *replacement);
                    }
                    other => panic!("{alias}: unexpected lookup {other:?}"),
                }
            }
        }
    }
}

fn serve(server: &Server, snapshot: &Snapshot, message: Value) -> Value {
    let bytes = message.to_string();
    let facts = TransportFacts::stdio(Some("2025-06-18".into()));
    let out = server.handle(&Input {
        bytes: bytes.as_bytes(),
        snapshot,
        now: Timestamp(1_767_225_600_000),
        transport: &facts,
    });
    let rendered = out.response.expect("a response").render(0);
    serde_json::from_slice(&rendered).expect("a JSON response")
}

fn call(server: &Server, name: &str, args: Value) -> Value {
    serve(
        server,
        &Snapshot::genesis(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}),
    )
}

fn payload(response: &Value) -> Value {
    let text = response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text block: {response}"));
    serde_json::from_str(text).unwrap()
}

#[test]
fn aliases_are_never_listed() {
    for tier in Tier::ALL {
        let server = Server::new(config(tier, true));
        let listed = serve(
            &server,
            &Snapshot::genesis(),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        );
        let names: BTreeSet<String> = listed["result"]["tools"]
            .as_array()
            .expect("a tool list")
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        let want: BTreeSet<String> = tiers::tools_in(tier)
            .into_iter()
            .filter(|n| tools::registered().iter().any(|t| t.name == *n))
            .map(str::to_string)
            .collect();
        assert_eq!(names, want, "{tier:?}");
        for (alias, _) in DEPRECATED_ALIASES {
            assert!(!names.contains(*alias));
        }
    }
}

#[test]
fn a_live_alias_answers_the_wrapped_replacement() {
    let server = Server::new(config(Tier::Core, true));
    for alias in ["bernstein_health", "bernstein_tasks", "bernstein_cost"] {
        let plain = payload(&call(&server, "bernstein_status", json!({})));
        let wrapped = payload(&call(&server, alias, json!({})));
        let body = wrapped.get("result").unwrap_or(&wrapped);
        assert_eq!(body["deprecated"], true, "{wrapped}");
        assert_eq!(body["tool"], alias);
        assert_eq!(body["replacement"], "bernstein_status");
        assert_eq!(body["removal_release"], "v3.12.0");
        assert!(
            body["notice"]
                .as_str()
                .unwrap()
                .contains("bernstein_status")
        );
        assert_eq!(
            body["result"],
            plain.get("result").unwrap_or(&plain).clone()
        );
    }
    // A refusal through an alias is still flagged deprecated (a handler's refusal: arguments
    // that do not parse are a JSON-RPC error in this revision).
    let refused = call(
        &server,
        "bernstein_task_handle",
        json!({"run_id": "T-ffffffffffffffff"}),
    );
    assert_eq!(refused["result"]["isError"], true);
    let body = payload(&refused);
    let body = body.get("result").unwrap_or(&body);
    assert_eq!(body["deprecated"], true);
    assert_eq!(body["replacement"], "bernstein_run_status");
}

#[test]
fn a_dead_alias_is_an_unknown_tool() {
    // Switched off: even an in-tier replacement's alias does not exist.
    let off = Server::new(config(Tier::All, false));
    let r = call(&off, "bernstein_health", json!({}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Unknown tool")
    );
    // Out of tier: bernstein_stop → a standard tool, served at core.
    let core = Server::new(config(Tier::Core, true));
    let r = call(&core, "bernstein_stop", json!({}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = call(&core, "bernstein_update", json!({}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
}
