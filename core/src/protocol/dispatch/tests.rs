use super::*;
use crate::config::{Config, Tier};
use crate::ledger::Draft;
use crate::protocol::registry::{Arguments, Effects, TaskSupport, ToolOutput};
use crate::protocol::unit_fold::{Input, Server, Snapshot, ToolContext, ToolSpec, tools_only};
use crate::protocol::{TransportFacts, TransportKind};
use crate::time::Timestamp;
use serde_json::json;

fn journal(_: &ToolContext<'_>, _: Value) -> ToolOutput {
    let mut out = ToolOutput::ok(json!({"ok": true}));
    out.drafts.push(Draft::new("run:R", "t.step", json!({})));
    out.run_id = Some("R".into());
    out
}

fn server() -> Server {
    let tool = ToolSpec {
        name: "journal",
        title: "Journal",
        description: "writes",
        tier: Tier::Core,
        input_schema: || json!({"type": "object"}),
        output_schema: None,
        effects: Effects::default(),
        task_support: TaskSupport::Forbidden,
        arguments: Arguments::Schema,
        call: journal,
    };
    Server::with_catalog(Config::new(b"k".to_vec()), tools_only(vec![tool]))
}

fn serve(server: &Server, bytes: &[u8], version: Option<&str>) -> Outcome {
    let snapshot = Snapshot::genesis();
    let facts = TransportFacts::stdio(version.map(str::to_string));
    handle(
        server,
        &Input {
            bytes,
            snapshot: &snapshot,
            now: Timestamp(1),
            transport: &facts,
        },
        &[],
        Phase::Live,
    )
}

fn code(server: &Server, bytes: &str, version: Option<&str>) -> Option<i64> {
    serve(server, bytes.as_bytes(), version)
        .response
        .and_then(|r| r.error_code())
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

#[test]
fn error_code_matrix() {
    let s = server();
    let cases: Vec<(String, Option<&str>, Option<i64>)> = vec![
        // -32700: not JSON, not UTF-8, empty.
        ("{".into(), None, Some(-32700)),
        ("\u{feff}{}".into(), None, Some(-32700)),
        ("  ".into(), None, Some(-32700)),
        // -32600: wrong shapes.
        ("3".into(), None, Some(-32600)),
        (r#"{"jsonrpc":"2.0","id":1}"#.into(), None, Some(-32600)),
        (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#.into(), None, Some(-32600)),
        (r#"{"id":1,"method":"ping"}"#.into(), None, Some(-32600)),
        (r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#.into(), None, Some(-32600)),
        (r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":true}"#.into(), None, Some(-32600)),
        (format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}}"#, "[".repeat(40) + &"]".repeat(40)), None, Some(-32600)),
        // Batches: refused outside 2025-03-26, empty ones everywhere.
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.into(), None, Some(-32600)),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.into(), Some("2025-06-18"), Some(-32600)),
        ("[]".into(), Some("2025-03-26"), Some(-32600)),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.into(), Some("2025-03-26"), None),
        // -32601.
        (r#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#.into(), None, Some(-32601)),
        (format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{{META}}}}}"#), None, Some(-32601)),
        (format!(r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{{META}}}}}"#), None, Some(-32601)),
        // -32602.
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}"#.into(), None, Some(-32602)),
        // Invalid arguments: -32602 before 2025-11-25, an isError tool result from then on.
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"journal","arguments":[]}}"#.into(), Some("2025-06-18"), Some(-32602)),
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"journal","arguments":[]}}"#.into(), None, None),
        (r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}"#.into(), None, Some(-32602)),
        (r#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#.into(), None, Some(-32602)),
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c"}}"#.into(), None, Some(-32602)),
        (r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}"#.into(), None, Some(-32602)),
        // -32022.
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1.0"}}}"#.into(), None, Some(-32022)),
        // Successes.
        (r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.into(), None, None),
        (r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#.into(), None, None),
        (format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META}}}}}"#), None, None),
    ];
    for (input, version, expected) in cases {
        assert_eq!(code(&s, &input, version), expected, "{input} @ {version:?}");
    }
    assert_eq!(code(&s, "\u{0}", None), Some(-32700));
    assert_eq!(
        serve(&s, b"\xff\xfe", None)
            .response
            .and_then(|r| r.error_code()),
        Some(-32700)
    );
}

#[test]
fn silent_messages_append_nothing() {
    let s = server();
    for input in [
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"journal"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
    ] {
        let out = serve(&s, input.as_bytes(), None);
        assert!(out.response.is_none() && out.append.is_none(), "{input}");
    }
}

#[test]
fn a_call_appends_at_the_snapshot_position_and_names_its_span() {
    let s = server();
    let input = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"journal","arguments":{}}}"#;
    let out = serve(&s, input, None);
    let append = out.append.expect("records");
    assert_eq!(append.expected, Snapshot::genesis().position);
    assert_eq!(append.records.len(), 2);
    let params = json!({"name": "journal", "arguments": {}});
    assert_eq!(
        out.response.unwrap().span_id,
        RequestIds::of_request("tools/call", Some(&params)).span_id
    );
}

#[test]
fn batches_commit_consecutive_transactions_in_one_append() {
    let s = server();
    let call = r#"{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"journal","arguments":{}}}"#;
    let batch = format!("[{},{}]", call.replace("ID", "1"), call.replace("ID", "2"));
    let out = serve(&s, batch.as_bytes(), Some("2025-03-26"));
    let append = out.append.expect("records");
    assert_eq!(append.records.len(), 4);
    let seqs: Vec<u64> = append.records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4]);
    let mut snapshot = Snapshot::genesis();
    for r in &append.records {
        snapshot.apply(r).expect("the batch's records chain");
    }
    let response = out.response.expect("a batch reply");
    assert_eq!(response.batch.as_ref().map(Vec::len), Some(2));
}

#[test]
fn initialize_reports_the_negotiated_revision() {
    let s = server();
    let out = serve(&s, br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}"#, None);
    assert_eq!(out.negotiated_version.as_deref(), Some("2025-03-26"));
    let out = serve(&s, br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, None);
    assert_eq!(out.negotiated_version, None);
}

#[test]
fn http_transport_facts_are_honoured() {
    let s = server();
    let snapshot = Snapshot::genesis();
    let facts = TransportFacts {
        kind: TransportKind::StreamableHttp,
        protocol_version: Some("2026-07-28".into()),
        loopback: false,
        log_level: None,
        principal: None,
    };
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#);
    let out = handle(
        &s,
        &Input {
            bytes: body.as_bytes(),
            snapshot: &snapshot,
            now: Timestamp(1),
            transport: &facts,
        },
        &[],
        Phase::Live,
    );
    let rendered: Value = serde_json::from_slice(&out.response.unwrap().render(0)).unwrap();
    assert_eq!(rendered["result"]["resultType"], "complete");
}

#[test]
fn a_duplicate_key_anywhere_is_a_parse_error_that_changes_nothing() {
    let s = server();
    for (input, key) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","name":"journal"}}"#,
            "name",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"journal"}}"#,
            "id",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"journal","_meta":{"progressToken":1,"progressToken":2}}}"#,
            "progressToken",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"journal","arguments":{"a":{"b":1,"\u0062":2}}}}"#,
            "b",
        ),
        (
            r#"{"jsonrpc":"2.0","method":"tools/call","method":"ping","params":{"name":"journal"}}"#,
            "method",
        ),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"journal","name":"journal"}}]"#,
            "name",
        ),
    ] {
        let out = serve(&s, input.as_bytes(), Some("2025-03-26"));
        assert!(out.append.is_none(), "{input}");
        let body: Value = serde_json::from_slice(&out.response.expect(input).render(0)).unwrap();
        assert_eq!(body["error"]["code"], -32700, "{input}");
        assert_eq!(body["id"], Value::Null, "{input}");
        let msg = body["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains(&format!("duplicate key \"{key}\" in an object")),
            "{msg}"
        );
    }
}
