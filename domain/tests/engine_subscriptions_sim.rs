//! Simulations of resource subscriptions over Bernstein's own catalogue, both eras: a stdio
//! subscriber hears `notifications/resources/updated` when a write (of this server or another
//! process) changes its run and nothing when another run changes; a `subscriptions/listen`
//! POST becomes a stream, acknowledged first, every message tagged, ended by a cancellation,
//! its peer leaving or shutdown; caps refuse with a clear error and hold nothing; streamable
//! HTTP in the handshake era holds nothing and does not advertise the capability.

use core::time::Duration;
use std::sync::Arc;

use serde_json::{Value, json};

use bernstein_core::config::{Config, Tier};
use bernstein_core::engine::sim::{BOUND, World, post, responses};
use bernstein_core::engine::subscriptions::SubscriptionLimits;
use bernstein_core::engine::{ConnId, EngineConfig, Input};
use bernstein_core::transport::http::{HttpOptions, HttpPolicy};
use bernstein_domain::Projection;
use bernstein_domain::bound::Server;

const KEY: &[u8] = &[7; 32];
const SUB_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// Longer than the engine's look at the head while subscriptions are held.
const LOOK: Duration = Duration::from_millis(300);

fn server() -> Arc<Server> {
    let mut config = Config::new(KEY.to_vec());
    config.tier = Tier::Standard;
    Arc::new(Server::new(config))
}

fn message(id: u64, method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .unwrap()
}

fn call(id: u64, tool: &str, arguments: Value) -> Vec<u8> {
    message(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

fn line(bytes: Vec<u8>) -> Vec<u8> {
    [bytes, b"\n".to_vec()].concat()
}

fn lines(w: &mut World<Projection>) -> Vec<Value> {
    w.take_text(0)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tool_result(answer: &Value) -> Value {
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    let v: Value = serde_json::from_str(text).unwrap();
    v.get("result").cloned().unwrap_or(v)
}

fn updates(messages: &[Value]) -> Vec<&Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/resources/updated")
        .collect()
}

/// Starts a run on the stdio connection; its id.
fn stdio_run(w: &mut World<Projection>, id: u64, goal: &str) -> String {
    w.bytes(0, &line(call(id, "bernstein_run", json!({"goal": goal}))));
    let out = lines(w);
    tool_result(&out[0])["run_id"].as_str().unwrap().to_string()
}

fn cancel(id: u64, run: &str) -> Vec<u8> {
    call(id, "bernstein_cancel", json!({"task_id": run}))
}

fn run_uri(run: &str) -> String {
    format!("bernstein://runs/{run}")
}

#[test]
fn a_stdio_subscriber_hears_its_run_change_and_not_another() {
    let mut w = World::stdio(server());
    let run = stdio_run(&mut w, 1, "watched");
    let other = stdio_run(&mut w, 2, "not watched");
    let sub = message(3, "resources/subscribe", json!({"uri": run_uri(&run)}));
    w.bytes(0, &line(sub));
    assert_eq!(
        lines(&mut w),
        [json!({"jsonrpc": "2.0", "id": 3, "result": {}})]
    );
    // Another run changes: nothing, now or at the next looks.
    w.bytes(0, &line(cancel(4, &other)));
    w.advance(LOOK);
    w.advance(LOOK);
    let out = lines(&mut w);
    assert!(updates(&out).is_empty(), "{out:?}");
    // Its run changes on this server: the update, untagged (handshake era), once.
    w.bytes(0, &line(cancel(5, &run)));
    w.advance(LOOK);
    let out = lines(&mut w);
    let got = updates(&out);
    assert_eq!(got.len(), 1, "{out:?}");
    assert_eq!(got[0]["params"], json!({"uri": run_uri(&run)}));
    // Unsubscribed: a later change says nothing.
    let unsub = message(6, "resources/unsubscribe", json!({"uri": run_uri(&run)}));
    w.bytes(0, &line(unsub));
    w.bytes(
        0,
        &line(call(
            7,
            "bernstein_post_message",
            json!({"task_id": run, "body": "late", "sender": "t"}),
        )),
    );
    w.advance(LOOK);
    assert!(updates(&lines(&mut w)).is_empty());
}

#[test]
fn another_process_completing_a_task_is_heard_at_the_next_look() {
    let server = server();
    let mut w = World::stdio(server.clone());
    let run = stdio_run(&mut w, 1, "watched");
    w.bytes(
        0,
        &line(message(
            2,
            "resources/subscribe",
            json!({"uri": run_uri(&run)}),
        )),
    );
    lines(&mut w);
    w.other_writer(
        &server,
        &call(1, "bernstein_claim", json!({"claimer_id": "w"})),
    );
    w.other_writer(
        &server,
        &call(
            2,
            "bernstein_complete",
            json!({"task_id": run, "result_summary": "done"}),
        ),
    );
    assert!(updates(&lines(&mut w)).is_empty(), "not before a look");
    w.advance(LOOK);
    let out = lines(&mut w);
    assert_eq!(updates(&out).len(), 1, "{out:?}");
    let read = message(3, "resources/read", json!({"uri": run_uri(&run)}));
    w.bytes(0, &line(read));
    let read = lines(&mut w);
    let text = read[0]["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap()["status"],
        "completed"
    );
}

const MODERN: &str = "MCP-Protocol-Version: 2026-07-28";
const ACCEPT: &str = "Accept: application/json, text/event-stream";

fn modern(id: u64, method: &str, mut params: Value) -> Vec<u8> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let method_header = format!("Mcp-Method: {method}");
    let name_header = params["name"].as_str().map(|n| format!("Mcp-Name: {n}"));
    let mut headers = vec![ACCEPT, MODERN, method_header.as_str()];
    headers.extend(name_header.as_deref());
    post("/mcp", &message(id, method, params), &headers)
}

fn http(limits: SubscriptionLimits) -> World<Projection> {
    let server = server();
    let options = HttpOptions::default();
    let policy = HttpPolicy::new(&server.config, &options, BOUND, true).unwrap();
    let mut config = EngineConfig::http(policy, options, [9; 32]);
    config.subscriptions = limits;
    World::new(server, config)
}

/// The JSON-RPC messages of an SSE stream's `data:` lines.
fn events(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn http_run(w: &mut World<Projection>, conn: u64) -> String {
    w.bytes(
        conn,
        &modern(
            1,
            "tools/call",
            json!({"name": "bernstein_run", "arguments": {"goal": "listen"}}),
        ),
    );
    let (_, body) = responses(&w.take(conn)).remove(0);
    tool_result(&serde_json::from_slice(&body).unwrap())["run_id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn listen(id: u64, uris: &[String]) -> Vec<u8> {
    modern(
        id,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": uris, "toolsListChanged": true}}),
    )
}

#[test]
fn a_listen_stream_is_acknowledged_tagged_and_ended_by_a_cancellation() {
    let mut w = http(SubscriptionLimits::default());
    w.connect(9, "127.0.0.1:39000");
    let run = http_run(&mut w, 9);
    let other = http_run(&mut w, 9);
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &listen(7, &[run_uri(&run)]));
    let head = w.take_text(1);
    assert!(
        head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"),
        "{head}"
    );
    let first = events(&head);
    assert_eq!(first.len(), 1, "{head}");
    assert_eq!(
        first[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(first[0]["params"]["_meta"][SUB_ID], 7);
    assert_eq!(
        first[0]["params"]["notifications"],
        json!({"resourceSubscriptions": [run_uri(&run)]})
    );
    // Another run moves: nothing; its run moves: one update, tagged.
    w.bytes(
        9,
        &modern(
            2,
            "tools/call",
            json!({"name": "bernstein_cancel", "arguments": {"task_id": other}}),
        ),
    );
    w.advance(LOOK);
    assert!(w.take(1).is_empty());
    w.bytes(
        9,
        &modern(
            3,
            "tools/call",
            json!({"name": "bernstein_cancel", "arguments": {"task_id": run}}),
        ),
    );
    let got = events(&w.take_text(1));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["method"], "notifications/resources/updated");
    assert_eq!(got[0]["params"]["uri"], run_uri(&run));
    assert_eq!(got[0]["params"]["_meta"][SUB_ID], 7);
    assert!(w.closed.is_empty());
    // Its client cancels it (from the same address, on another connection): it ends.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    let headers = [ACCEPT, MODERN, "Mcp-Method: notifications/cancelled"];
    let cancelled = post("/mcp", &serde_json::to_vec(&note).unwrap(), &headers);
    // The same id from another address is someone else's request: the stream stays.
    w.connect(8, "127.0.0.2:41000");
    w.bytes(8, &cancelled);
    assert!(!w.closed.contains_key(&ConnId(1)));
    w.bytes(9, &cancelled);
    assert_eq!(w.closed.get(&ConnId(1)), Some(&true));
}

#[test]
fn shutdown_ends_each_listen_stream_with_its_response_and_a_peer_that_leaves_drops_it() {
    let mut w = http(SubscriptionLimits::default());
    w.connect(9, "127.0.0.1:39000");
    let run = http_run(&mut w, 9);
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &listen(1, &[run_uri(&run)]));
    w.connect(2, "127.0.0.1:40001");
    w.bytes(2, &listen(2, &[run_uri(&run)]));
    w.take(1);
    w.take(2);
    w.hang_up(2);
    assert!(w.closed.contains_key(&ConnId(2)));
    w.input(Input::Shutdown);
    let end = events(&w.take_text(1));
    assert_eq!(
        end,
        [
            json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "_meta": {SUB_ID: 1}}})
        ]
    );
    assert_eq!(w.closed.get(&ConnId(1)), Some(&true));
}

#[test]
fn caps_refuse_with_a_clear_error_and_hold_nothing() {
    let mut w = http(SubscriptionLimits {
        per_connection: 1,
        total: 2,
    });
    w.connect(9, "127.0.0.1:39000");
    let run = http_run(&mut w, 9);
    let other = http_run(&mut w, 9);
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &listen(1, &[run_uri(&run), run_uri(&other)]));
    let (_, body) = responses(&w.take(1)).remove(0);
    let refusal: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(refusal["error"]["code"], -32000, "{refusal}");
    assert_eq!(refusal["error"]["data"]["reason"], "too_many_subscriptions");
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap()
            .contains("BERNSTEIN_MCP_MAX_SUBSCRIPTIONS_PER_CONNECTION")
    );
    for conn in [2, 3] {
        w.connect(conn, "127.0.0.1:40000");
        w.bytes(conn, &listen(1, &[run_uri(&run)]));
        w.take(conn);
    }
    w.connect(4, "127.0.0.1:40000");
    w.bytes(4, &listen(1, &[run_uri(&run)]));
    let (_, body) = responses(&w.take(4)).remove(0);
    let refusal: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap()
            .contains("BERNSTEIN_MCP_MAX_SUBSCRIPTIONS)"),
        "{refusal}"
    );
}

#[test]
fn streamable_http_in_the_handshake_era_holds_nothing_and_says_so() {
    let mut w = http(SubscriptionLimits::default());
    w.connect(1, "127.0.0.1:40000");
    let old = [
        "Accept: application/json, text/event-stream",
        "MCP-Protocol-Version: 2025-11-25",
    ];
    let init = message(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}),
    );
    w.bytes(1, &post("/mcp", &init, &old));
    let (_, body) = responses(&w.take(1)).remove(0);
    let init: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"],
        false
    );
    let start = call(2, "bernstein_run", json!({"goal": "g"}));
    w.bytes(1, &post("/mcp", &start, &old));
    let (_, body) = responses(&w.take(1)).remove(0);
    let run = tool_result(&serde_json::from_slice(&body).unwrap())["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let sub = message(3, "resources/subscribe", json!({"uri": run_uri(&run)}));
    w.bytes(1, &post("/mcp", &sub, &old));
    let (_, body) = responses(&w.take(1)).remove(0);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["result"],
        json!({})
    );
    w.bytes(1, &post("/mcp", &cancel(4, &run), &old));
    w.take(1);
    w.advance(LOOK);
    assert!(w.take(1).is_empty(), "no stream to carry an update");
    assert_eq!(w.engine.counters().in_flight, 0);
}
