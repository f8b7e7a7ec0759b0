//! Structured results of `bernstein_run`, `bernstein_status` and `bernstein_run_status`: each
//! declares an `outputSchema`, and its `structuredContent` validates against that schema with
//! the meter on (envelope) and off (bare); the text block is the same JSON byte for byte, and
//! the same as in a revision without structured output; nothing under `result` carries
//! wall-clock, so two polls of an unchanged ledger give byte-identical structured output.

// Test harness: the purity rules bind the core's source only.
#![allow(clippy::disallowed_methods)]

mod protocol_support;

use bernstein_core::config::{Config, Tier};
use bernstein_domain::bound::Server;
use protocol_support::{LATENCY_MS, Session, modern_meta};
use serde_json::{Value, json};

const TOOLS: [&str; 3] = ["bernstein_run", "bernstein_status", "bernstein_run_status"];

fn session(meter: bool, revision: Option<&str>) -> Session {
    let mut config = Config::new(b"structured-key".to_vec()).with_signing_seed(&[5; 32]);
    config.tier = Tier::Standard;
    config.cost_meter = meter;
    let mut s = Session::new(Server::new(config));
    s.facts.protocol_version = revision.map(str::to_string);
    s
}

fn request(s: &mut Session, modern: bool, method: &str, mut params: Value) -> Value {
    if modern {
        params["_meta"] = modern_meta();
    }
    let reply = s
        .send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .expect("answered");
    reply["result"].clone()
}

fn output_schemas(s: &mut Session, modern: bool) -> Vec<(String, Value)> {
    let list = request(s, modern, "tools/list", json!({}));
    TOOLS
        .iter()
        .map(|name| {
            let tool = list["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == *name)
                .unwrap_or_else(|| panic!("{name} listed"));
            (name.to_string(), tool["outputSchema"].clone())
        })
        .collect()
}

/// Calls the three tools on a fresh ledger; returns (tool, CallToolResult) pairs.
fn calls(s: &mut Session, modern: bool) -> Vec<(String, Value)> {
    let run = request(
        s,
        modern,
        "tools/call",
        json!({"name": "bernstein_run", "arguments": {"goal": "structured"}}),
    );
    let text: Value = serde_json::from_str(run["content"][0]["text"].as_str().unwrap()).unwrap();
    let payload = text.get("result").unwrap_or(&text).clone();
    let id = payload["task_id"].as_str().unwrap().to_string();
    let status = request(
        s,
        modern,
        "tools/call",
        json!({"name": "bernstein_status", "arguments": {"detail": true}}),
    );
    let handle = request(
        s,
        modern,
        "tools/call",
        json!({"name": "bernstein_run_status", "arguments": {"run_id": id}}),
    );
    vec![
        ("bernstein_run".into(), run),
        ("bernstein_status".into(), status),
        ("bernstein_run_status".into(), handle),
    ]
}

#[test]
fn structured_content_matches_the_advertised_schema_meter_on_and_off() {
    for meter in [true, false] {
        for (revision, modern) in [
            (Some("2025-06-18"), false),
            (None, false),
            (Some("2026-07-28"), true),
        ] {
            let mut s = session(meter, revision.filter(|_| !modern));
            let schemas = output_schemas(&mut s, modern);
            for (name, result) in calls(&mut s, modern) {
                let schema = &schemas.iter().find(|(n, _)| *n == name).unwrap().1;
                assert!(schema.is_object(), "{name} declares an outputSchema");
                let structured = &result["structuredContent"];
                let validator = jsonschema::validator_for(schema).expect("schema compiles");
                let errors: Vec<String> = validator
                    .iter_errors(structured)
                    .map(|e| e.to_string())
                    .collect();
                assert!(
                    errors.is_empty(),
                    "{name} meter={meter} {revision:?}: {errors:?}"
                );
                assert_eq!(structured.get("_meter").is_some(), meter, "{name}");
                // The text block is the structured content, byte for byte.
                assert_eq!(
                    result["content"][0]["text"].as_str().unwrap(),
                    serde_json::to_string(structured).unwrap(),
                    "{name}"
                );
            }
        }
    }
}

#[test]
fn text_is_the_same_without_structured_output_and_polls_are_byte_identical() {
    let mut old = session(false, Some("2025-03-26"));
    let mut new = session(false, Some("2025-06-18"));
    let a = calls(&mut old, false);
    let b = calls(&mut new, false);
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(x.get("structuredContent").is_none(), "{name}");
        if name != "bernstein_run_status" {
            // (the run handle names the revision it was served under) The text block is the
            // same; 2025-06-18 adds `resource_link`s after it, 2025-03-26 has none.
            assert_eq!(x["content"][0], y["content"][0], "{name}");
            let links = |v: &Value| {
                v["content"].as_array().unwrap()[1..]
                    .iter()
                    .map(|b| b["type"].as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            };
            assert!(links(x).is_empty(), "{name}");
            assert!(links(y).iter().all(|t| t == "resource_link"), "{name}");
        }
    }
    // Two polls of an unchanged ledger, meter on: identical structured results.
    let mut s = session(true, None);
    let calls = calls(&mut s, false);
    let id = calls[2].1["structuredContent"]["result"]["runId"].clone();
    for (name, args) in [
        ("bernstein_status", json!({"detail": true})),
        ("bernstein_run_status", json!({"run_id": id})),
    ] {
        let first = request(
            &mut s,
            false,
            "tools/call",
            json!({"name": name, "arguments": args}),
        );
        s.now = bernstein_core::time::Timestamp(s.now.0 + 60_000);
        let second = request(
            &mut s,
            false,
            "tools/call",
            json!({"name": name, "arguments": args}),
        );
        assert_eq!(
            serde_json::to_vec(&first["structuredContent"]["result"]).unwrap(),
            serde_json::to_vec(&second["structuredContent"]["result"]).unwrap(),
            "{name}"
        );
        assert_eq!(
            first["structuredContent"]["_meter"]["latency_ms"],
            LATENCY_MS
        );
    }
}
