//! Property tests of the protocol engine: no input makes it panic, and every input gets either
//! no reply (only a valid notification or client response) or exactly one well-formed JSON-RPC
//! message. Arguments the validator accepts always deserialize into the handler's Rust type.

// Test harness: it reads transcript files and the official schemas. The purity rules of
// clippy.toml bind the core's source, not its tests.
#![allow(clippy::disallowed_methods)]

mod protocol_support;

use bernstein_core::config::Tier;
use bernstein_core::protocol::{StorageFailure, TransportFacts};
use bernstein_domain::bound::Input;
use proptest::prelude::*;
use protocol_support::{
    LATENCY_MS, NOW, SchemaBook, Session, fixture_server, modern_meta, request_revision,
};
use serde_json::{Map, Value, json};

/// Whether `bytes` is a message that must get no reply: a valid notification or a client
/// response, or (where batches are allowed) a non-empty batch of nothing else.
fn is_silent_message(bytes: &[u8], batches: bool) -> bool {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return false;
    };
    if depth(&value) > 32 {
        return false;
    }
    match &value {
        Value::Array(items) => batches && !items.is_empty() && items.iter().all(is_silent_object),
        other => is_silent_object(other),
    }
}

fn is_silent_object(v: &Value) -> bool {
    let Value::Object(obj) = v else { return false };
    let jsonrpc_ok = obj.get("jsonrpc") == Some(&Value::String("2.0".into()));
    let notification =
        jsonrpc_ok && obj.get("method").is_some_and(Value::is_string) && !obj.contains_key("id");
    let response =
        !obj.contains_key("method") && (obj.contains_key("result") || obj.contains_key("error"));
    notification || response
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Asserts that `reply` is one well-formed JSON-RPC response.
fn assert_well_formed(reply: &[u8]) -> Value {
    assert!(!reply.contains(&b'\n'), "a reply is one line");
    let v: Value = serde_json::from_slice(reply).expect("a reply is JSON");
    let obj = v.as_object().expect("a reply is an object");
    assert_eq!(obj.get("jsonrpc"), Some(&json!("2.0")));
    assert!(
        obj.contains_key("result") ^ obj.contains_key("error"),
        "result xor error: {v}"
    );
    match obj.get("id") {
        Some(Value::String(_)) => {}
        Some(Value::Number(n)) => assert!(n.is_i64() || n.is_u64(), "integer ids only: {v}"),
        Some(Value::Null) => {
            let code = v.pointer("/error/code").and_then(Value::as_i64);
            assert!(
                matches!(code, Some(-32700 | -32600)),
                "id null only for unreadable ids: {v}"
            );
        }
        other => panic!("bad id {other:?} in {v}"),
    }
    if let Some(e) = obj.get("error") {
        assert!(e.get("code").is_some_and(Value::is_i64), "{v}");
        assert!(
            e.get("message")
                .and_then(Value::as_str)
                .is_some_and(|m| !m.is_empty()),
            "{v}"
        );
    }
    if let Some(meter) = v.pointer("/result/structuredContent/_meter") {
        let is_error = v
            .pointer("/result/isError")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        assert_eq!(meter["ok"], json!(!is_error));
    }
    v
}

/// Serves `bytes` on a fresh genesis session and checks the reply's shape.
fn check_bytes(bytes: &[u8], transport_version: Option<&str>) -> Option<Value> {
    let server = fixture_server(Tier::All, true, true);
    let snapshot = bernstein_domain::Snapshot::genesis();
    let facts = TransportFacts::stdio(transport_version.map(str::to_string));
    let batches = transport_version == Some("2025-03-26");
    let out = server.handle(&Input {
        bytes,
        snapshot: &snapshot,
        now: NOW,
        transport: &facts,
    });
    match out.response {
        None => {
            assert!(
                is_silent_message(bytes, batches),
                "no reply to {:?}",
                String::from_utf8_lossy(bytes)
            );
            assert!(out.append.is_none());
            None
        }
        Some(r) => {
            assert!(
                !is_silent_message(bytes, batches),
                "a reply to a notification or response: {:?}",
                String::from_utf8_lossy(bytes)
            );
            let rendered = r.render(LATENCY_MS);
            if transport_version == Some("2025-03-26") && rendered.first() == Some(&b'[') {
                // A batch reply: an array of well-formed replies.
                let parts: Vec<Value> =
                    serde_json::from_slice(&rendered).expect("a batch reply is a JSON array");
                assert!(
                    !parts.is_empty(),
                    "an all-notification batch gets no reply at all"
                );
                for p in &parts {
                    assert_well_formed(p.to_string().as_bytes());
                }
                return Some(Value::Array(parts));
            }
            Some(assert_well_formed(&rendered))
        }
    }
}

thread_local! {
    static BOOK: std::cell::RefCell<SchemaBook> = std::cell::RefCell::new(SchemaBook::default());
}

const VALID: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#,
    r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","times":2}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    r#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
    r#"[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"greet","arguments":{"name":"Ada"}}}"#,
];

fn mutated_valid() -> impl Strategy<Value = Vec<u8>> {
    (
        0..VALID.len(),
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    )
        .prop_map(|(i, edits)| {
            let mut bytes = VALID[i].as_bytes().to_vec();
            for (at, b, op) in edits {
                if bytes.is_empty() {
                    bytes.push(b);
                    continue;
                }
                let at = at.index(bytes.len());
                match op {
                    0 => bytes[at] = b,
                    1 => bytes.insert(at, b),
                    _ => {
                        bytes.remove(at);
                    }
                }
            }
            bytes
        })
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![Just("plain"), Just("shout"), Just("hi"), Just("")]
            .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 24, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("text".to_string()),
                    Just("times".to_string()),
                    Just("mode".to_string()),
                    "[a-z]{1,5}"
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        check_bytes(&bytes, None);
        check_bytes(&bytes, Some("2025-03-26"));
    }

    #[test]
    fn mutated_messages_get_one_well_formed_reply_or_none(bytes in mutated_valid()) {
        check_bytes(&bytes, None);
        check_bytes(&bytes, Some("2025-03-26"));
    }

    #[test]
    fn random_messages_get_schema_valid_replies(
        id in prop_oneof![any::<i64>().prop_map(Value::from), "[a-z0-9]{0,8}".prop_map(Value::String)],
        method in prop_oneof![
            Just("tools/call"), Just("tools/list"), Just("prompts/get"), Just("prompts/list"),
            Just("resources/read"), Just("resources/list"), Just("initialize"), Just("ping"),
            Just("server/discover"), Just("resources/templates/list"), Just("nope"),
        ],
        name in prop_oneof![Just("echo"), Just("journal"), Just("peek"), Just("refuse"), Just("old_echo"), Just("greet"), Just("x")],
        arguments in json_value(),
        modern in any::<bool>(),
        revision in prop_oneof![Just(None), Just(Some("2024-11-05")), Just(Some("2025-03-26")), Just(Some("2025-06-18")), Just(Some("2025-11-25"))],
    ) {
        let mut params = json!({"name": name, "arguments": arguments, "uri": "fixture://card", "protocolVersion": "2025-06-18"});
        if modern {
            params["_meta"] = modern_meta();
        }
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut session = Session::new(fixture_server(Tier::All, true, true));
        session.facts.protocol_version = revision.map(str::to_string);
        let reply = session.send_json(&request).expect("requests get replies");
        assert_well_formed(reply.to_string().as_bytes());
        prop_assert_eq!(&reply["id"], &id);
        // The validator never lets through what the handler's serde type refuses.
        // (The engine's own refusals of invalid arguments carry `violations`; a handler's serde
        // refusal would not.)
        if method == "tools/call" && reply.pointer("/result/isError") == Some(&json!(true)) {
            let text = reply.pointer("/result/content/0/text").and_then(Value::as_str).unwrap_or_default();
            let refusal: Value = serde_json::from_str(text).unwrap_or_default();
            let refusal = refusal.get("result").unwrap_or(&refusal);
            if refusal["error"] == "invalid_arguments" {
                prop_assert!(refusal.get("violations").is_some(), "validator accepted what serde refused: {}", text);
            }
        }
        let mut revision = request_revision(&request, revision);
        if method == "initialize" && let Some(v) = reply.pointer("/result/protocolVersion").and_then(Value::as_str) {
            revision = v.to_string();
        }
        if let Err(e) = BOOK.with(|b| b.borrow_mut().check_reply(&revision, Some(method), &reply)) {
            panic!("{e}\nrequest: {request}\nreply: {reply}");
        }
    }
}

#[test]
fn oversize_and_deep_messages_are_refused_with_their_id() {
    let server = fixture_server(Tier::Standard, true, true);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":"big","method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(1 << 20)
    );
    let snapshot = bernstein_domain::Snapshot::genesis();
    let facts = TransportFacts::stdio(None);
    let out = server.handle(&Input {
        bytes: big.as_bytes(),
        snapshot: &snapshot,
        now: NOW,
        transport: &facts,
    });
    let reply = assert_well_formed(&out.response.expect("a reply").render(0));
    assert_eq!(reply["id"], "big");
    assert_eq!(reply["error"]["code"], -32600);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 1048576 bytes")
    );
    let rendered = String::from_utf8(server.oversize_reply(5_000_000)).unwrap();
    assert!(rendered.contains("5000000 bytes"), "{rendered}");
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{}{}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let out = server.handle(&Input {
        bytes: deep.as_bytes(),
        snapshot: &snapshot,
        now: NOW,
        transport: &facts,
    });
    let reply = assert_well_formed(&out.response.expect("a reply").render(0));
    assert_eq!(reply["id"], 7);
    let failure = server.storage_failure_reply(
        br#"{"jsonrpc":"2.0","id":"s","method":"tools/call"}"#,
        &StorageFailure {
            reason: "disk full",
            retryable: true,
            written: false,
        },
    );
    let failure: Value = serde_json::from_slice(&failure).unwrap();
    assert_eq!(failure["id"], "s");
    assert_eq!(failure["error"]["code"], -32603);
}
