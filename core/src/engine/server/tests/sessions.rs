//! Handshake-era sessions over streamable HTTP: `initialize` answered with a sealed
//! `Mcp-Session-Id`, and a call carrying it served as the client that initialized, on whatever
//! pooled connection it arrives: asked what it declared, at the log level it set.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::engine::sim::{World, post, responses};
use crate::protocol::Server;
use crate::protocol::input::{Elicited, InputNeeded, InputRequest};
use crate::protocol::logging::{LogLevel, LogMessage};
use crate::protocol::registry::ToolOutput;
use crate::protocol::unit_fold::{ToolContext, plain_tool, tools_only};
use crate::transport::http::HttpOptions;

const ACCEPT: &str = "Accept: application/json, text/event-stream";
const ERA: &str = "MCP-Protocol-Version: 2025-11-25";

/// Asks the person to confirm; answers what they said.
fn confirm(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    match ctx.input.elicited("confirm") {
        Some(Elicited::Accepted(c)) => ToolOutput::ok(json!({"ok": c["ok"]})),
        Some(_) => ToolOutput::ok(json!({"ok": false})),
        None => ToolOutput::need_input(InputNeeded::one(
            "confirm",
            InputRequest::form("Sure?", json!({"ok": {"type": "boolean"}}), &["ok"]),
        )),
    }
}

/// Logs one `info` message.
fn logs(_: &ToolContext<'_>, _: Value) -> ToolOutput {
    let mut out = ToolOutput::ok(json!({}));
    out.logs = vec![LogMessage {
        level: LogLevel::Info,
        logger: "t",
        data: json!("seen"),
    }];
    out
}

fn world() -> World<()> {
    World::http(server(), HttpOptions::default())
}

/// The catalogue of these tests: `confirm` asks, `logs` logs.
pub(super) fn server() -> Arc<Server<()>> {
    let mut asking = plain_tool("confirm");
    asking.call = confirm;
    let mut logging = plain_tool("logs");
    logging.call = logs;
    let mut config = crate::config::Config::new(b"k".to_vec());
    config.input_expiry_ms = 60_000;
    Arc::new(Server::with_catalog(
        config,
        tools_only(vec![asking, logging]),
    ))
}

pub(super) fn rpc(id: u64, method: &str, params: &Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string()
        .into_bytes()
}

pub(super) fn call(id: u64, tool: &str) -> Vec<u8> {
    rpc(id, "tools/call", &json!({"name": tool, "arguments": {}}))
}

/// The value of header `name` in the first response head of `text`.
fn header<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let head = &text[..text.find("\r\n\r\n")?];
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// `initialize` declaring `caps` on connection `conn`: the session id it was answered with.
pub(super) fn initialize(w: &mut World<()>, conn: u64, caps: &Value) -> String {
    w.connect(conn, &format!("127.0.0.1:{}", 40_000 + conn));
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": caps,
        "clientInfo": {"name": "t", "version": "1"}});
    w.bytes(
        conn,
        &post("/mcp", &rpc(1, "initialize", &params), &[ACCEPT]),
    );
    let text = w.take_text(conn);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let id = header(&text, "mcp-session-id")
        .expect("a session id")
        .to_string();
    assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)) && id.len() < 200);
    id
}

/// Posts `body` on a new connection `conn`, with the session id if any: what came back.
pub(super) fn post_on(w: &mut World<()>, conn: u64, body: &[u8], session: Option<&str>) -> String {
    w.connect(conn, &format!("127.0.0.1:{}", 40_000 + conn));
    let line = session.map(|s| format!("Mcp-Session-Id: {s}"));
    let mut headers = vec![ACCEPT, ERA];
    headers.extend(line.as_deref());
    w.bytes(conn, &post("/mcp", body, &headers));
    w.take_text(conn)
}

/// The JSON-RPC messages of an SSE answer.
pub(super) fn events(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn a_call_with_the_session_id_is_asked_on_another_connection_and_one_without_is_refused() {
    let mut w = world();
    let session = initialize(&mut w, 1, &json!({"elicitation": {}}));
    let asked = post_on(&mut w, 2, &call(2, "confirm"), Some(&session));
    assert!(asked.contains("text/event-stream"), "{asked}");
    let question = events(&asked).remove(0);
    assert_eq!(question["method"], "elicitation/create");
    // The answer comes on a third connection, with the session id as the SDKs send it.
    let answer = json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {"ok": true}}});
    let accepted = post_on(&mut w, 3, answer.to_string().as_bytes(), Some(&session));
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");
    let rest = w.take_text(2);
    let result = events(&rest).remove(0);
    assert_eq!(result["id"], 2);
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(r#""ok":true"#),
        "{result}"
    );
    // Without the session id, the call's connection declared nothing.
    let refused = post_on(&mut w, 4, &call(3, "confirm"), None);
    let (status, body) = responses(refused.as_bytes()).remove(0);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((status, v["error"]["code"].as_i64()), (200, Some(-32021)));
    assert_eq!(w.engine.requests_in_flight(), 0);
}

#[test]
fn a_session_carries_only_what_its_initialize_declared() {
    let mut w = world();
    let session = initialize(&mut w, 1, &json!({"sampling": {}}));
    let out = post_on(&mut w, 2, &call(2, "confirm"), Some(&session));
    let (_, body) = responses(out.as_bytes()).remove(0);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"]["code"], -32021);
    assert_eq!(
        v["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
}

#[test]
fn a_level_set_on_one_connection_is_heard_by_the_sessions_calls_on_others() {
    let mut w = world();
    let session = initialize(&mut w, 1, &json!({}));
    let other = initialize(&mut w, 2, &json!({}));
    assert_ne!(session, other, "each initialize starts its own session");
    let set = rpc(9, "logging/setLevel", &json!({"level": "info"}));
    let out = post_on(&mut w, 3, &set, Some(&session));
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    let heard = post_on(&mut w, 4, &call(2, "logs"), Some(&session));
    let messages = events(&heard);
    assert_eq!(messages.len(), 2, "{heard}");
    assert_eq!(messages[0]["method"], "notifications/message");
    assert_eq!(messages[0]["params"]["level"], "info");
    assert_eq!(messages[1]["id"], 2);
    // Another session, and a call without one, asked for no level: nothing is sent.
    for (conn, id) in [(5, Some(other.as_str())), (6, None)] {
        let quiet = post_on(&mut w, conn, &call(3, "logs"), id);
        assert!(!quiet.contains("notifications/message"), "{quiet}");
        assert_eq!(responses(quiet.as_bytes()).len(), 1, "{quiet}");
    }
}

#[test]
fn a_forged_session_id_is_404_and_serves_nothing() {
    let mut w = world();
    let session = initialize(&mut w, 1, &json!({"elicitation": {}}));
    let mut forged = session.into_bytes();
    forged[3] = if forged[3] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    for (conn, id) in [(2, forged.as_str()), (3, "s-1")] {
        let out = post_on(&mut w, conn, &call(2, "confirm"), Some(id));
        let (status, body) = responses(out.as_bytes()).remove(0);
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status, 404, "{out}");
        assert_eq!(v["id"], 2);
        assert!(v["error"]["data"]["reason"].is_string(), "{v}");
    }
    assert_eq!(w.appends, 0);
    assert_eq!(w.engine.requests_in_flight(), 0);
}

#[test]
fn initialize_with_a_stale_session_id_starts_a_new_session() {
    let mut w = world();
    let params = json!({"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}});
    let out = post_on(
        &mut w,
        1,
        &rpc(1, "initialize", &params),
        Some("expired-or-foreign"),
    );
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(header(&out, "mcp-session-id").is_some(), "{out}");
}
