//! Client-chosen tool names against Bernstein's real catalogue, served by the engine's
//! `tools/call` and folded into the projection: whatever names and arguments a client sends,
//! the records hold no name that is not a tool, and the projection's per-key tallies stay within
//! their documented bounds (`domain::call_stats`).

mod protocol_support;

use bernstein_core::config::Config;
use bernstein_core::ledger::audit::{CallAudit, UNKNOWN_TOOL};
use bernstein_core::time::Timestamp;
use bernstein_domain::bound::Server;
use bernstein_domain::call_stats::{KEPT_MINUTES, MAX_KEY_BYTES, MAX_KEYS};
use proptest::prelude::*;
use protocol_support::{Session, modern_meta};
use serde_json::{Value, json};

fn session() -> Session {
    let config = Config::new(b"tally-audit-key".to_vec());
    Session::new(Server::new(config))
}

/// A name a client might send: a real tool, a near miss, long text, text with line breaks
/// and a secret, or arbitrary Unicode.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("bernstein_status".to_string()),
        Just("bernstein_health".to_string()),
        "[a-z_]{1,80}",
        "\\PC{0,300}",
        (1usize..5_000).prop_map(|n| "n".repeat(n)),
        "[a-z]{1,10}".prop_map(|p| format!("{p}\nAuthorization: Bearer ghp_{}", "a1".repeat(20))),
    ]
}

fn arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({})),
        "\\PC{0,40}".prop_map(|s| json!({"goal": s})),
        Just(json!(["not", "an", "object"])),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn tallies_stay_bounded_whatever_names_a_client_sends(
        calls in prop::collection::vec((name(), arguments(), 0u64..4), 1..120)
    ) {
        let mut s = session();
        let mut id = 0;
        for (name, arguments, minutes_later) in &calls {
            id += 1;
            s.now = Timestamp(s.now.0 + minutes_later * 60_000);
            let mut params = json!({"name": name, "arguments": arguments});
            params["_meta"] = modern_meta();
            let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
            let out = s.send(msg.to_string().as_bytes());
            let Some(append) = out.append else { continue };
            for record in &append.records {
                let body = serde_json::to_string(&record.body).unwrap();
                if name.len() > 40 && !s.server.catalog.knows_tool(name) {
                    prop_assert!(!body.contains(name.as_str()), "a name that is no tool was recorded");
                }
                prop_assert!(!body.contains("ghp_a1a1"), "a secret in a name reached the ledger");
                if record.kind == "mcp.stateless_call" {
                    let audit = CallAudit::read(&record.body);
                    prop_assert!(
                        s.server.catalog.knows_tool(&audit.tool) || audit.tool == UNKNOWN_TOOL,
                        "recorded tool {:?}", audit.tool
                    );
                }
            }
        }
        let window = s.snapshot.domain.calls().window(s.now.0, KEPT_MINUTES);
        for tally in [&window.by_tool, &window.refusals] {
            prop_assert!(tally.len() <= MAX_KEYS, "{} keys", tally.len());
            prop_assert!(tally.keys().all(|k| k.len() <= MAX_KEY_BYTES));
        }
        let total: u64 = window.by_tool.values().sum();
        let audited = s.snapshot.domain.calls().window(s.now.0, KEPT_MINUTES).per_minute
            .iter().map(|m| m.1).sum::<u64>();
        prop_assert_eq!(total, audited, "every call is tallied once");
    }
}

/// Distinct names that are no tool are one key, `unknown`.
#[test]
fn distinct_unknown_names_are_tallied_as_one_key() {
    let mut s = session();
    for i in 0..(3 * MAX_KEYS) {
        let mut params = json!({"name": format!("tool_{i}"), "arguments": {}});
        params["_meta"] = modern_meta();
        let msg = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params});
        s.send(msg.to_string().as_bytes());
    }
    let window = s.snapshot.domain.calls().window(s.now.0, 1);
    assert_eq!(
        window.by_tool.get(UNKNOWN_TOOL),
        Some(&(3 * MAX_KEYS as u64))
    );
    assert_eq!(window.by_tool.len(), 1);
}
