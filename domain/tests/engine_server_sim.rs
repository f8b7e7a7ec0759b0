//! Simulations of the server engine over Bernstein's own catalogue: long polls held on HTTP
//! connections, stdio lines and legacy streams, woken by writes on other connections or of
//! other processes, ended by their deadline, a cancellation, a peer that left or a shutdown,
//! capped per peer and in total, streaming their progress. A `World` (fake clock, in-memory
//! ledger) drives whole lifecycles without threads, sockets or sleeps.

use core::time::Duration;
use std::sync::Arc;

use serde_json::{Value, json};

use bernstein_core::config::{Config, Tier};
use bernstein_core::engine::sim::{World, get, post, responses};
use bernstein_core::engine::{ConnId, Input};
use bernstein_core::transport::http::HttpOptions;
use bernstein_domain::Projection;
use bernstein_domain::bound::Server;

const KEY: &[u8] = &[7; 32];
const JSON_OR_SSE: &str = "Accept: application/json, text/event-stream";
const ERA: &str = "MCP-Protocol-Version: 2025-06-18";

fn server() -> Arc<Server> {
    let mut config = Config::new(KEY.to_vec());
    config.tier = Tier::Standard;
    Arc::new(Server::new(config))
}

fn http(
    limits: impl FnOnce(&mut bernstein_core::transport::http::HttpLimits),
) -> World<Projection> {
    let mut options = HttpOptions::default();
    limits(&mut options.limits);
    World::http(server(), options)
}

fn call(id: u64, tool: &str, arguments: Value) -> Vec<u8> {
    message(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

fn message(id: u64, method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .unwrap()
}

fn long_poll(id: u64, run: &str, wait_ms: u64) -> Vec<u8> {
    call(
        id,
        "bernstein_run_status",
        json!({"run_id": run, "wait_ms": wait_ms}),
    )
}

fn post_mcp(body: &[u8]) -> Vec<u8> {
    post("/mcp", body, &[JSON_OR_SSE, ERA])
}

/// The JSON-RPC answers in what was sent on a connection (Content-Length responses).
fn answers(bytes: &[u8]) -> Vec<Value> {
    responses(bytes)
        .iter()
        .filter(|(_, body)| !body.is_empty())
        .map(|(_, body)| serde_json::from_slice(body).unwrap())
        .collect()
}

/// What a tool answered (the meter's `result`, or the bare result).
fn tool_result(answer: &Value) -> Value {
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no tool text in {answer}"));
    let v: Value = serde_json::from_str(text).unwrap();
    v.get("result").cloned().unwrap_or(v)
}

/// Starts a run over HTTP on a connection of its own; its id.
fn start_run(w: &mut World<Projection>, conn: u64) -> String {
    w.connect(conn, "127.0.0.1:39000");
    w.bytes(
        conn,
        &post_mcp(&call(1, "bernstein_run", json!({"goal": "simulate"}))),
    );
    let a = answers(&w.take(conn));
    tool_result(&a[0])["run_id"]
        .as_str()
        .expect("a run id")
        .to_string()
}

#[test]
fn a_long_poll_holds_its_connection_until_a_write_on_another_wakes_it_at_once() {
    let mut w = http(|_| {});
    let run = start_run(&mut w, 9);
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &post_mcp(&long_poll(2, &run, 60_000)));
    assert!(w.take(1).is_empty(), "the answer waits");
    assert_eq!(w.engine.counters().waits, 1);
    assert_eq!(w.engine.requests_in_flight(), 1);
    w.bytes(
        9,
        &post_mcp(&call(3, "bernstein_cancel", json!({"task_id": run}))),
    );
    // Woken by the commit itself: no time passed, no look at the head was needed.
    let a = answers(&w.take(1));
    assert_eq!(tool_result(&a[0])["status"], "cancelled", "{}", a[0]);
    assert_eq!(w.looks, 0);
    assert_eq!(w.engine.counters().waits, 0);
    let calls = &w.engine.counters().calls;
    let polls: u64 = calls
        .iter()
        .filter(|((tool, _, _), _)| *tool == "bernstein_run_status")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(polls, 1, "a long poll is one call, whatever its rounds");
}

/// A second run, started on connection 9: its id.
fn start_other_run(w: &mut World<Projection>) -> String {
    w.bytes(
        9,
        &post_mcp(&call(4, "bernstein_run", json!({"goal": "other"}))),
    );
    tool_result(&answers(&w.take(9))[0])["run_id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_long_poll_sees_another_process_write_at_its_next_look_and_sleeps_through_other_runs() {
    let mut w = http(|_| {});
    let run = start_run(&mut w, 9);
    let other = start_other_run(&mut w);
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &post_mcp(&long_poll(2, &run, 60_000)));
    // Writes to the other run, on this server and from another process: no answer.
    w.bytes(
        9,
        &post_mcp(&call(5, "bernstein_cancel", json!({"task_id": other}))),
    );
    assert!(answers(&w.take(9)).len() == 1);
    w.advance(Duration::from_millis(100));
    assert!(w.take(1).is_empty(), "other runs' records do not wake it");
    let server = server();
    w.other_writer(
        &server,
        &call(6, "bernstein_cancel", json!({"task_id": run})),
    );
    assert!(
        w.take(1).is_empty(),
        "another process: seen at the next look"
    );
    w.advance(Duration::from_millis(200));
    let a = answers(&w.take(1));
    assert_eq!(tool_result(&a[0])["status"], "cancelled");
}

#[test]
fn a_head_heard_of_wakes_the_long_poll_it_answers_at_once_and_no_other() {
    let mut w = http(|_| {});
    let run = start_run(&mut w, 9);
    let other = start_other_run(&mut w);
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &post_mcp(&long_poll(2, &run, 60_000)));
    w.connect(2, "127.0.0.1:40001");
    w.bytes(2, &post_mcp(&long_poll(3, &other, 60_000)));
    let server = server();
    w.other_writer(
        &server,
        &call(6, "bernstein_cancel", json!({"task_id": run})),
    );
    assert!(w.take(1).is_empty(), "nothing heard yet: the nap goes on");
    let looks = w.looks;
    // The store heard another instance commit (PostgreSQL's NOTIFY): one look, no time passed.
    w.input(Input::HeadMoved);
    assert_eq!(w.looks, looks + 1);
    let a = answers(&w.take(1));
    assert_eq!(tool_result(&a[0])["status"], "cancelled", "{}", a[0]);
    assert!(w.take(2).is_empty(), "the other run's poll sleeps on");
    // Nothing waits now but that poll: a head heard of with nothing new for it changes nothing.
    w.input(Input::HeadMoved);
    assert!(w.take(2).is_empty());
}

#[test]
fn a_long_poll_answers_as_things_stand_at_its_own_deadline() {
    let mut w = http(|_| {});
    let run = start_run(&mut w, 9);
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &post_mcp(&long_poll(2, &run, 1_000)));
    w.advance(Duration::from_millis(999));
    assert!(w.take(1).is_empty());
    w.advance(Duration::from_millis(2));
    let a = answers(&w.take(1));
    assert_eq!(tool_result(&a[0])["status"], "working", "{}", a[0]);
    assert!(a[0]["result"].get("cancelled").is_none());
    assert!(w.closed.is_empty(), "the connection serves on");
}

#[test]
fn a_cancellation_posted_on_another_connection_ends_the_wait_with_the_partial_answer() {
    let mut w = http(|_| {});
    let run = start_run(&mut w, 9);
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &post_mcp(&long_poll(77, &run, 60_000)));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 77, "reason": "user"}});
    w.connect(2, "127.0.0.1:40001");
    w.bytes(2, &post_mcp(&serde_json::to_vec(&note).unwrap()));
    assert_eq!(responses(&w.take(2))[0].0, 202);
    let a = answers(&w.take(1));
    assert_eq!(a[0]["id"], 77);
    assert_eq!(a[0]["result"]["cancelled"], true, "{}", a[0]);
    assert_eq!(a[0]["result"]["partial"][0]["status"], "working");
    // An id nobody uses cancels nothing.
    w.bytes(1, &post_mcp(&long_poll(78, &run, 60_000)));
    let other = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 79}});
    w.bytes(2, &post_mcp(&serde_json::to_vec(&other).unwrap()));
    assert!(w.take(1).is_empty());
}

#[test]
fn a_peer_that_leaves_cancels_its_wait_and_the_audit_says_so() {
    let mut w = http(|_| {});
    let run = start_run(&mut w, 9);
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &post_mcp(&long_poll(2, &run, 60_000)));
    let before = w.ledger.position.seq;
    w.hang_up(1);
    assert_eq!(w.engine.requests_in_flight(), 0);
    assert_eq!(w.engine.counters().waits, 0);
    assert!(w.closed.contains_key(&ConnId(1)));
    assert_eq!(
        w.ledger.position.seq,
        before + 1,
        "the cancelled call's audit record"
    );
    let counters = w.engine.counters();
    let outcomes: Vec<&String> = counters
        .calls
        .keys()
        .filter(|(tool, _, _)| *tool == "bernstein_run_status")
        .map(|(_, _, outcome)| outcome)
        .collect();
    assert_eq!(outcomes, vec!["cancelled"]);
}

#[test]
fn waits_are_capped_per_peer_and_in_total_with_a_clear_refusal() {
    let mut w = http(|l| {
        l.max_waits = 3;
        l.max_waits_per_peer = 2;
    });
    let run = start_run(&mut w, 9);
    let peers = [
        "127.0.0.5:1",
        "127.0.0.5:2",
        "127.0.0.5:3",
        "127.0.0.6:1",
        "127.0.0.7:1",
    ];
    for (i, peer) in peers.iter().enumerate() {
        let conn = 10 + i as u64;
        w.connect(conn, peer);
        w.bytes(conn, &post_mcp(&long_poll(conn, &run, 60_000)));
    }
    let held: Vec<bool> = (10..15).map(|c| w.take(c).is_empty()).collect();
    assert_eq!(held, vec![true, true, false, true, false]);
    assert_eq!(w.engine.counters().waits_refused, 2);
    w.connect(20, "127.0.0.7:2");
    w.bytes(20, &post_mcp(&long_poll(20, &run, 60_000)));
    let a = answers(&w.take(20));
    assert_eq!(tool_result(&a[0])["error"], "too_many_waits", "{}", a[0]);
    // A wait that ends gives its slot back.
    w.hang_up(10);
    w.bytes(20, &post_mcp(&long_poll(21, &run, 60_000)));
    assert!(w.take(20).is_empty(), "a slot was free again");
}

#[test]
fn a_stdio_line_that_waits_lets_the_next_through_and_end_of_input_settles_it() {
    let mut w = World::stdio(server());
    let start = call(1, "bernstein_run", json!({"goal": "simulate"}));
    w.bytes(0, &[start, b"\n".to_vec()].concat());
    let first: Value = serde_json::from_slice(w.take(0).trim_ascii_end()).unwrap();
    let run = tool_result(&first)["run_id"].as_str().unwrap().to_string();
    let mut lines = long_poll(2, &run, 60_000);
    lines.push(b'\n');
    lines.extend(br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    lines.push(b'\n');
    w.bytes(0, &lines);
    let out = w.take_text(0);
    assert!(
        out.starts_with(r#"{"id":3,"#),
        "the ping is answered first: {out}"
    );
    w.hang_up(0);
    let out = w.take_text(0);
    let poll: Value = serde_json::from_str(out.trim_end()).unwrap();
    assert_eq!(poll["id"], 2);
    assert_eq!(tool_result(&poll)["status"], "working");
    assert!(
        poll["result"].get("cancelled").is_none(),
        "settled, not cancelled"
    );
    assert_eq!(w.closed.get(&ConnId(0)), Some(&false));
}

#[test]
fn a_stdio_cancellation_reaches_the_waiting_line() {
    let mut w = World::stdio(server());
    let start = call(1, "bernstein_run", json!({"goal": "simulate"}));
    w.bytes(0, &[start, b"\n".to_vec()].concat());
    let first: Value = serde_json::from_slice(w.take(0).trim_ascii_end()).unwrap();
    let run = tool_result(&first)["run_id"].as_str().unwrap().to_string();
    w.bytes(0, &[long_poll(5, &run, 60_000), b"\n".to_vec()].concat());
    let note = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}"#;
    w.bytes(0, &[note.to_vec(), b"\n".to_vec()].concat());
    let out: Value = serde_json::from_slice(w.take(0).trim_ascii_end()).unwrap();
    assert_eq!(out["id"], 5);
    assert_eq!(out["result"]["cancelled"], true);
}

#[test]
fn a_long_polls_progress_streams_as_sse_and_the_connection_ends_with_the_answer() {
    let mut w = http(|_| {});
    let run = start_run(&mut w, 9);
    w.connect(1, "127.0.0.1:40000");
    let poll = message(
        2,
        "tools/call",
        json!({"name": "bernstein_run_status", "arguments": {"run_id": run, "wait_ms": 60_000},
            "_meta": {"progressToken": "p"}}),
    );
    w.bytes(1, &post_mcp(&poll));
    let head = w.take_text(1);
    assert!(
        head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"),
        "{head}"
    );
    assert!(!head.contains("Content-Length"), "{head}");
    assert!(
        head.contains("notifications/progress"),
        "the tick due at once: {head}"
    );
    assert!(w.closed.is_empty());
    w.bytes(
        9,
        &post_mcp(&call(3, "bernstein_cancel", json!({"task_id": run}))),
    );
    let rest = w.take_text(1);
    assert!(
        rest.contains(r#""id":2"#) && rest.contains("cancelled"),
        "{rest}"
    );
    assert_eq!(
        w.closed.get(&ConnId(1)),
        Some(&true),
        "the body ends with the connection"
    );
}

#[test]
fn a_legacy_stream_carries_a_waiting_answer_and_its_poster_hears_202_once_it_is_on() {
    let mut w = http(|_| {});
    let run = start_run(&mut w, 9);
    w.connect(1, "127.0.0.1:41000");
    w.bytes(1, &get("/sse", &["Accept: text/event-stream"]));
    let text = w.take_text(1);
    let at = text.find("/messages?stream=").unwrap() + 17;
    let token = text[at..].split('\n').next().unwrap().to_string();
    w.connect(2, "127.0.0.1:41001");
    let path = format!("/messages?stream={token}");
    w.bytes(2, &post(&path, &long_poll(2, &run, 60_000), &[]));
    assert!(
        w.take(2).is_empty(),
        "the poster waits for the answer to be on the stream"
    );
    w.bytes(
        9,
        &post_mcp(&call(3, "bernstein_cancel", json!({"task_id": run}))),
    );
    assert_eq!(answers(&w.take(9)).len(), 1);
    assert!(w.take_text(1).contains(r#"data: {"id":2,"#));
    assert_eq!(responses(&w.take(2))[0].0, 202);
    // The stream closes while an answer waits for it: the wait ends as cancelled, 404.
    w.bytes(
        9,
        &post_mcp(&call(4, "bernstein_run", json!({"goal": "again"}))),
    );
    let run2 = tool_result(&answers(&w.take(9))[0])["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    w.bytes(2, &post(&path, &long_poll(5, &run2, 60_000), &[]));
    assert!(w.take(2).is_empty());
    w.hang_up(1);
    assert_eq!(responses(&w.take(2))[0].0, 404);
    assert_eq!(w.engine.counters().waits, 0);
}

#[test]
fn shutdown_answers_every_waiting_poll_as_it_stands() {
    let mut w = http(|_| {});
    let run = start_run(&mut w, 9);
    for c in 1..=3 {
        w.connect(c, "127.0.0.1:40000");
        w.bytes(c, &post_mcp(&long_poll(c, &run, 60_000)));
    }
    w.input(Input::Shutdown);
    for c in 1..=3 {
        let a = answers(&w.take(c));
        assert_eq!(tool_result(&a[0])["status"], "working");
        assert!(w.closed.contains_key(&ConnId(c)));
    }
    assert_eq!(w.engine.requests_in_flight(), 0);
}

#[test]
fn refused_calls_are_counted_by_their_audit_code() {
    let mut w = http(|_| {});
    w.connect(1, "127.0.0.1:40000");
    w.bytes(
        1,
        &post_mcp(&call(1, "bernstein_status", json!({"bogus": true}))),
    );
    w.bytes(1, &post_mcp(&call(2, "no_such_tool", json!({}))));
    assert_eq!(answers(&w.take(1)).len(), 2);
    let calls = &w.engine.counters().calls;
    assert!(
        calls.contains_key(&("bernstein_status", "2025-06-18", "invalid_arguments".into())),
        "{calls:?}"
    );
    assert!(
        calls
            .keys()
            .any(|(tool, _, outcome)| *tool == "unknown" && outcome == "unknown_tool"),
        "{calls:?}"
    );
}
