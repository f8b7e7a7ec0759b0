//! A handshake-era client asked mid-call: the engine puts the handler's question to the client
//! as a JSON-RPC request on the call's own stream, parks the call (no thread, no answer) and
//! resumes it with the client's response, whichever connection brings it; an unanswered or
//! refused question ends the call with an error and records nothing; a client that declared
//! no elicitation is never asked.

use core::time::Duration;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::engine::sim::{World, post, responses};
use crate::ledger::Draft;
use crate::protocol::Server;
use crate::protocol::input::{Elicited, InputNeeded, InputRequest};
use crate::protocol::registry::ToolOutput;
use crate::protocol::unit_fold::{ToolContext, plain_tool, tools_only};
use crate::transport::http::HttpOptions;

/// Asks the person to confirm (keeping state), records the decision once answered.
fn confirm(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    let kept = ctx.input.state.as_ref().map(|s| s["asked"].clone());
    match (ctx.input.elicited("confirm"), kept) {
        (Some(Elicited::Accepted(c)), Some(asked)) if asked == "confirm" => {
            let ok = c.get("ok").cloned().unwrap_or(Value::Null);
            let mut out = ToolOutput::ok(json!({ "ok": ok }));
            out.drafts
                .push(Draft::new("decisions", "decided", json!({ "ok": ok })));
            out
        }
        (Some(_), _) => ToolOutput::ok(json!({"ok": false})),
        (None, _) => ToolOutput::need_input(
            InputNeeded::one(
                "confirm",
                InputRequest::form("Sure?", json!({"ok": {"type": "boolean"}}), &["ok"]),
            )
            .with_state(json!({"asked": "confirm"})),
        ),
    }
}

fn server() -> Arc<Server<()>> {
    let mut tool = plain_tool("confirm");
    tool.call = confirm;
    let mut config = crate::config::Config::new(b"k".to_vec());
    config.input_expiry_ms = 60_000;
    Arc::new(Server::with_catalog(config, tools_only(vec![tool])))
}

fn line(v: &Value) -> Vec<u8> {
    let mut l = v.to_string().into_bytes();
    l.push(b'\n');
    l
}

fn initialize(caps: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": caps,
        "clientInfo": {"name": "t", "version": "1"}}})
}

fn call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "confirm", "arguments": {}}})
}

fn messages(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A stdio client that declared `caps`, after `tools/call` id 2: what the engine wrote.
fn stdio_asked(caps: Value) -> (World<()>, Vec<Value>) {
    let mut w = World::stdio(server());
    w.bytes(0, &line(&initialize(caps)));
    let init = messages(&w.take_text(0));
    assert_eq!(init[0]["id"], 1);
    w.bytes(0, &line(&call(2)));
    let out = messages(&w.take_text(0));
    (w, out)
}

#[test]
fn a_stdio_call_asks_its_client_and_resumes_with_the_answer() {
    let (mut w, out) = stdio_asked(json!({"elicitation": {}}));
    assert_eq!(out.len(), 1, "{out:?}");
    let question = &out[0];
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(
        question["params"]["requestedSchema"]["required"],
        json!(["ok"])
    );
    assert_eq!(w.appends, 0, "asking records nothing");
    // Parked without its answer: the connection goes on serving lines meanwhile.
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    w.bytes(0, &line(&ping));
    assert_eq!(messages(&w.take_text(0))[0]["id"], 3);
    let answer = json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {"ok": true}}});
    w.bytes(0, &line(&answer));
    let out = messages(&w.take_text(0));
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["id"], 2);
    let text = out[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#""ok":true"#), "{text}");
    assert!(w.ledger.stream_head("decisions") != crate::digest::Digest::ZERO);
    assert_eq!(w.engine.requests_in_flight(), 0);
}

#[test]
fn an_unanswered_question_expires_and_records_nothing() {
    let (mut w, out) = stdio_asked(json!({"elicitation": {}}));
    let question = out[0].clone();
    w.advance(Duration::from_secs(61));
    let out = messages(&w.take_text(0));
    assert_eq!(out[0]["id"], 2);
    assert_eq!(out[0]["error"]["code"], -32000);
    assert_eq!(out[0]["error"]["data"]["reason"], "input_expired");
    assert_eq!(
        w.ledger.stream_head("decisions"),
        crate::digest::Digest::ZERO
    );
    // A late answer finds nothing waiting and is ignored.
    let late = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept"}});
    w.bytes(0, &line(&late));
    assert!(w.take_text(0).is_empty());
    assert_eq!(w.engine.requests_in_flight(), 0);
}

#[test]
fn a_refused_or_misfit_answer_ends_the_call_without_records() {
    for answer in [
        json!({"error": {"code": -1, "message": "no UI"}}),
        json!({"result": {"action": "maybe"}}),
    ] {
        let (mut w, out) = stdio_asked(json!({"elicitation": {}}));
        let mut reply = answer.clone();
        reply["jsonrpc"] = json!("2.0");
        reply["id"] = out[0]["id"].clone();
        w.bytes(0, &line(&reply));
        let out = messages(&w.take_text(0));
        assert_eq!(out[0]["error"]["code"], -32000, "{answer}");
        assert_eq!(out[0]["error"]["data"]["reason"], "input_refused");
        assert_eq!(
            w.ledger.stream_head("decisions"),
            crate::digest::Digest::ZERO
        );
    }
}

#[test]
fn a_client_that_declared_no_elicitation_is_never_asked() {
    let (_, out) = stdio_asked(json!({"sampling": {}}));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], 2);
    assert_eq!(out[0]["error"]["code"], -32021);
    assert_eq!(
        out[0]["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
}

#[test]
fn an_http_call_asks_on_its_sse_answer_and_resumes_with_a_response_posted_elsewhere() {
    const ACCEPT: &str = "Accept: application/json, text/event-stream";
    const ERA: &str = "MCP-Protocol-Version: 2025-11-25";
    let mut w = World::http(server(), HttpOptions::default());
    w.connect(1, "127.0.0.1:40001");
    let init = initialize(json!({"elicitation": {}})).to_string();
    w.bytes(1, &post("/mcp", init.as_bytes(), &[ACCEPT]));
    assert_eq!(responses(&w.take(1)).len(), 1);
    // Without its session id, the capabilities hold for this connection: the call comes on it.
    w.bytes(
        1,
        &post("/mcp", call(2).to_string().as_bytes(), &[ACCEPT, ERA]),
    );
    let head = w.take_text(1);
    assert!(head.contains("text/event-stream"), "{head}");
    let data = head
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .expect("an event");
    let question: Value = serde_json::from_str(data).unwrap();
    assert_eq!(question["method"], "elicitation/create");
    // The answer comes on another connection.
    w.connect(2, "127.0.0.1:40002");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {"ok": false}}});
    w.bytes(
        2,
        &post("/mcp", answer.to_string().as_bytes(), &[ACCEPT, ERA]),
    );
    let accepted = w.take_text(2);
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");
    let rest = w.take_text(1);
    assert!(
        rest.contains(r#""id":2"#) && rest.contains(r#"\"ok\":false"#),
        "{rest}"
    );
}

#[test]
fn a_legacy_stream_carries_the_question_and_the_answer_of_its_call() {
    let mut w = World::http(server(), HttpOptions::default());
    w.connect(1, "127.0.0.1:41000");
    w.bytes(
        1,
        &crate::engine::sim::get("/sse", &["Accept: text/event-stream"]),
    );
    let text = w.take_text(1);
    let at = text.find("/messages?stream=").expect("an endpoint event") + 17;
    let path = format!(
        "/messages?stream={}",
        text[at..].split('\n').next().unwrap()
    );
    let post_on = |w: &mut World<()>, conn: u64, message: &Value| {
        w.connect(conn, &format!("127.0.0.1:{}", 41000 + conn));
        w.bytes(conn, &post(&path, message.to_string().as_bytes(), &[]));
    };
    post_on(&mut w, 2, &initialize(json!({"elicitation": {}})));
    assert_eq!(responses(&w.take(2))[0].0, 202);
    w.take(1);
    post_on(&mut w, 3, &call(2));
    let events = w.take_text(1);
    let data = events
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .expect("the question as an event");
    let question: Value = serde_json::from_str(data).unwrap();
    assert_eq!(question["method"], "elicitation/create");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {"ok": true}}});
    post_on(&mut w, 4, &answer);
    assert_eq!(responses(&w.take(4))[0].0, 202);
    let events = w.take_text(1);
    assert!(events.contains(r#""id":2"#), "{events}");
    assert_eq!(responses(&w.take(3))[0].0, 202);
    assert!(w.ledger.stream_head("decisions") != crate::digest::Digest::ZERO);
}
