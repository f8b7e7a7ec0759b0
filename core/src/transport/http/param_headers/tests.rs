use serde_json::json;

use super::*;
use crate::config::{Config, Tier};
use crate::protocol::registry::{Arguments, Effects, TaskSupport, ToolOutput};
use crate::protocol::unit_fold::{Server, ToolContext, ToolSpec, tools_only};
use crate::transport::http::headers::HEADER_MISMATCH;
use crate::transport::http::headers::tests::req;
use crate::transport::http::request::Header;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            "query": {"type": "string"},
            "nested": {"type": "object", "properties": {
                "tenant": {"type": "string", "x-mcp-header": "Tenant"}
            }}
        }
    })
}

fn echo(_: &ToolContext<'_>, args: Value) -> ToolOutput {
    ToolOutput::ok(args)
}

fn server() -> Server {
    let tool = |name, input_schema| ToolSpec {
        name,
        title: name,
        description: "Reads no files, writes no files, spawns no processes, no network.",
        tier: Tier::Core,
        input_schema,
        output_schema: None,
        effects: Effects::default(),
        task_support: TaskSupport::Forbidden,
        arguments: Arguments::Schema,
        call: echo,
    };
    let catalog = tools_only(vec![
        tool("routed", schema as fn() -> Value),
        tool("plain", || json!({"type": "object"})),
        tool(
            "broken",
            || json!({"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}),
        ),
    ]);
    Server::with_catalog(Config::new(b"k".to_vec()), catalog)
}

fn call(tool: &str, arguments: Value) -> BodyFacts {
    BodyFacts::of(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}}))
}

#[test]
fn scan_finds_reachable_annotations_with_their_types() {
    let found = scan(&schema()).unwrap();
    let names: Vec<(&str, String, ParamKind)> = found
        .iter()
        .map(|p| (p.header.as_str(), p.path.join("."), p.kind))
        .collect();
    assert_eq!(
        names,
        [
            ("Mcp-Param-Count", "count".to_string(), ParamKind::Integer),
            ("Mcp-Param-Dry-Run", "dry".to_string(), ParamKind::Boolean),
            (
                "Mcp-Param-Tenant",
                "nested.tenant".to_string(),
                ParamKind::String
            ),
            ("Mcp-Param-Region", "region".to_string(), ParamKind::String),
        ]
    );
    assert!(scan(&json!({"type": "object"})).unwrap().is_empty());
}

#[test]
fn scan_refuses_what_the_revision_forbids() {
    let bad = [
        json!({"properties": {"n": {"type": "number", "x-mcp-header": "N"}}}),
        json!({"properties": {"o": {"type": "object", "x-mcp-header": "O"}}}),
        json!({"properties": {"s": {"type": "string", "x-mcp-header": ""}}}),
        json!({"properties": {"s": {"type": "string", "x-mcp-header": "Bad Name"}}}),
        json!({"properties": {"s": {"type": "string", "x-mcp-header": "X\r\nY"}}}),
        json!({"properties": {"s": {"type": "string", "x-mcp-header": 5}}}),
        json!({"properties": {
            "a": {"type": "string", "x-mcp-header": "Dup"},
            "b": {"type": "string", "x-mcp-header": "dup"}}}),
        json!({"properties": {"l": {"type": "array",
            "items": {"type": "string", "x-mcp-header": "Item"}}}}),
        json!({"anyOf": [{"properties": {"s": {"type": "string", "x-mcp-header": "S"}}}]}),
    ];
    for schema in bad {
        assert!(scan(&schema).is_err(), "{schema}");
    }
}

#[test]
fn table_of_a_server_skips_tools_without_or_with_invalid_annotations() {
    let table = ParamHeaders::of(&server());
    assert!(!table.is_empty());
    assert_eq!(table.by_tool.keys().collect::<Vec<_>>(), ["routed"]);
    assert!(ParamHeaders::default().is_empty());
}

#[test]
fn matching_headers_pass_and_the_base64_sentinel_is_decoded() {
    let t = ParamHeaders::of(&server());
    let args = json!({"region": "Hello", "count": 42, "dry": false, "nested": {"tenant": "t1"}});
    let ok: Vec<Vec<(&str, &str)>> = vec![
        vec![
            ("Mcp-Param-Region", "Hello"),
            ("Mcp-Param-Count", "42"),
            ("Mcp-Param-Dry-Run", "false"),
            ("mcp-param-tenant", " t1 "),
        ],
        vec![
            ("Mcp-Param-Region", "=?base64?SGVsbG8=?="),
            ("Mcp-Param-Count", "42.0"),
            ("MCP-PARAM-DRY-RUN", "false"),
            ("Mcp-Param-Tenant", "=?base64?dDE=?="),
        ],
    ];
    for headers in ok {
        assert_eq!(
            t.check(&req(&headers), &call("routed", args.clone())),
            Ok(()),
            "{headers:?}"
        );
    }
    // Without the exact wrapper a value is literal.
    for literal in ["SGVsbG8=", "=?base64?SGVsbG8="] {
        let body = call("routed", json!({"region": literal}));
        assert_eq!(
            t.check(&req(&[("Mcp-Param-Region", literal)]), &body),
            Ok(())
        );
    }
    // Absent or null arguments expect no header; other tools and methods are not checked.
    assert_eq!(
        t.check(&req(&[]), &call("routed", json!({"region": null}))),
        Ok(())
    );
    assert_eq!(t.check(&req(&[]), &call("routed", json!({}))), Ok(()));
    assert_eq!(
        t.check(&req(&[]), &call("plain", json!({"region": "x"}))),
        Ok(())
    );
    assert_eq!(
        t.check(&req(&[]), &call("broken", json!({"n": 1.5}))),
        Ok(())
    );
    let list = BodyFacts::of(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    assert_eq!(t.check(&req(&[("Mcp-Param-Region", "x")]), &list), Ok(()));
}

#[test]
fn missing_mismatched_malformed_or_orphan_headers_are_refused() {
    let t = ParamHeaders::of(&server());
    let body = call(
        "routed",
        json!({"region": "Hello", "count": 7, "dry": true}),
    );
    let full = [
        ("Mcp-Param-Region", "Hello"),
        ("Mcp-Param-Count", "7"),
        ("Mcp-Param-Dry-Run", "true"),
    ];
    assert_eq!(t.check(&req(&full), &body), Ok(()));
    let cases: Vec<(usize, &str)> = vec![
        (0, "=?base64?SGVsbG8?="),     // invalid padding
        (0, "=?base64?SGVs!!!bG8=?="), // not the Base64 alphabet
        (0, "hello"),                  // values are case-sensitive
        (0, "Hello\u{7f}"),            // not a visible ASCII field value
        (1, "7.5"),
        (1, "seven"),
        (2, "True"),
        (2, "1"),
    ];
    for (slot, value) in cases {
        let mut headers = full.to_vec();
        headers[slot].1 = value;
        let err = t.check(&req(&headers), &body).unwrap_err();
        assert_eq!(err.code, HEADER_MISMATCH, "{headers:?}");
    }
    let err = t.check(&req(&full[1..]), &body).unwrap_err();
    assert!(
        err.message.contains("Mcp-Param-Region is missing"),
        "{}",
        err.message
    );
    let orphan = call("routed", json!({"count": 7, "dry": true}));
    let err = t.check(&req(&full), &orphan).unwrap_err();
    assert!(err.message.contains("not in the body"), "{}", err.message);
}

#[test]
fn the_router_refuses_a_mismatch_before_the_engine_in_the_stateless_era_only() {
    use crate::time::Timestamp;
    use crate::transport::http::{Decision, HttpOptions, HttpPolicy};
    let s = server();
    let opts = HttpOptions::default();
    let policy = HttpPolicy::new(&s.config, &opts, "127.0.0.1:8053", true)
        .unwrap()
        .with_param_headers(ParamHeaders::of(&s));
    let body = |meta: bool| {
        let mut params = json!({"name": "routed", "arguments": {"region": "eu"}});
        if meta {
            params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        }
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}).to_string()
    };
    let post = |headers: &[(&str, &str)], body: String| {
        let mut r = req(headers);
        r.headers.push(Header {
            name: "host".into(),
            value: b"127.0.0.1:8053".to_vec(),
        });
        r.headers.push(Header {
            name: "content-type".into(),
            value: b"application/json".to_vec(),
        });
        r.body = body.into_bytes();
        policy.route(r, true, Timestamp(1))
    };
    let modern = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "routed"),
    ];
    let with = |region: &'static str| {
        let mut h = modern.to_vec();
        h.push(("Mcp-Param-Region", region));
        h
    };
    assert!(matches!(post(&with("eu"), body(true)), Decision::Mcp(_)));
    for headers in [modern.to_vec(), with("us")] {
        match post(&headers, body(true)) {
            Decision::Respond(r) => {
                assert_eq!(r.status.code(), 400);
                let v: Value = serde_json::from_slice(&r.body).unwrap();
                assert_eq!(v["error"]["code"], HEADER_MISMATCH);
                assert_eq!(v["id"], 9);
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    // A handshake-era request is not held to the 2026-07-28 header rules.
    assert!(matches!(post(&[], body(false)), Decision::Mcp(_)));
}

/// Found by the `request_meta` fuzz target's oracle: integers were compared as `f64`, so a
/// header naming a neighbouring integer above 2^53 (or a fraction that rounds to one) passed
/// for the body's value, and an intermediary routing on the header saw another value than the
/// tool got.
#[test]
fn integers_compare_exactly_beyond_f64_precision() {
    let t = ParamHeaders::of(&server());
    let body = call("routed", json!({"count": 9_007_199_254_740_992_i64}));
    for same in [
        "9007199254740992",
        "+9007199254740992",
        "9007199254740992.00",
    ] {
        assert_eq!(
            t.check(&req(&[("Mcp-Param-Count", same)]), &body),
            Ok(()),
            "{same}"
        );
    }
    for other in [
        "9007199254740993",
        "9007199254740991.9999",
        "9007199254740992.5",
        "9.007199254740993e15",
    ] {
        let err = t
            .check(&req(&[("Mcp-Param-Count", other)]), &body)
            .unwrap_err();
        assert_eq!(err.code, HEADER_MISMATCH, "{other}");
    }
    let small = call("routed", json!({"count": -42}));
    for same in ["-42", "-42.0", "-4.2e1"] {
        assert_eq!(
            t.check(&req(&[("Mcp-Param-Count", same)]), &small),
            Ok(()),
            "{same}"
        );
    }
    for other in ["-41", "42", "-42.5", "-4.25e1"] {
        assert!(
            t.check(&req(&[("Mcp-Param-Count", other)]), &small)
                .is_err(),
            "{other}"
        );
    }
}
