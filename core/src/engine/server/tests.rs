//! Simulations of the server engine over a catalogue of plain tools: connections, framing,
//! clocks, streams, feeds, store failures and counting, each driven through whole lifecycles
//! in a [`World`] (fake clock, in-memory ledger, fsyncs the test releases). Bernstein's own
//! long polls, cancellations and waits are simulated beside its catalogue
//! (`domain/tests/engine_server_sim.rs`). Backpressure and the caps of streams and feeds are in
//! [`backlog`].

mod asks;
mod backlog;
mod cluster;
mod engines;
mod introspect;
mod keys;
mod sessions;
mod spans;

use core::time::Duration;
use std::sync::Arc;

use super::{ConnId, Drain, Input};
use crate::engine::sim::{World, get, post, responses};
use crate::ledger::StoreError;
use crate::protocol::unit_fold::{plain_tool, tools_only, writing_tool};
use crate::protocol::{Server, TransportFacts};
use crate::transport::http::{HttpLimits, HttpOptions, HttpResponse, Status};

const JSON_OR_SSE: &str = "Accept: application/json, text/event-stream";
const ACCEPT_BOTH: &str = JSON_OR_SSE;
const ERA: &str = "MCP-Protocol-Version: 2025-06-18";

fn server(max_message: usize) -> Arc<Server<()>> {
    let mut config = crate::config::Config::new(b"k".to_vec());
    config.limits.max_message_bytes = max_message;
    Arc::new(Server::with_catalog(
        config,
        tools_only(vec![plain_tool("t"), writing_tool("w")]),
    ))
}

fn call(id: u64) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t","arguments":{{}}}}}}"#)
        .into_bytes()
}

/// A call of the tool that writes (a read is placed after whatever moved the head meanwhile,
/// so only a write loses a race).
fn write_call(id: u64) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"w","arguments":{{}}}}}}"#)
        .into_bytes()
}

fn line(bytes: &[u8]) -> Vec<u8> {
    let mut l = bytes.to_vec();
    l.push(b'\n');
    l
}

fn http_world(limits: impl FnOnce(&mut crate::transport::http::HttpLimits)) -> World<()> {
    let mut options = HttpOptions::default();
    limits(&mut options.limits);
    World::http(server(1 << 20), options)
}

fn post_call(id: u64) -> Vec<u8> {
    post("/mcp", &call(id), &[JSON_OR_SSE, ERA])
}

fn ids(bytes: &[u8]) -> Vec<u64> {
    responses(bytes)
        .iter()
        .map(|(_, body)| {
            let v: serde_json::Value = serde_json::from_slice(body).unwrap();
            v["id"].as_u64().unwrap()
        })
        .collect()
}

#[test]
fn stdio_lines_are_served_one_at_a_time_each_answered_once_durable() {
    let mut w = World::stdio(server(1 << 20));
    w.auto_sync = false;
    let mut input = line(&call(1));
    input.extend(line(&call(2)));
    w.bytes(0, &input);
    // The first call appended and waits for its fsync; the second waits behind it.
    assert!(w.sync_asked());
    assert!(
        w.take(0).is_empty(),
        "no answer before its records are durable"
    );
    assert!(
        !w.engine.wants_bytes(ConnId(0)),
        "a line waits behind the one served"
    );
    w.sync();
    let out = w.take_text(0);
    assert!(
        out.starts_with(r#"{"id":1,"#) && out.ends_with('\n'),
        "{out}"
    );
    assert_eq!(out.lines().count(), 1);
    assert!(w.engine.wants_bytes(ConnId(0)));
    w.sync();
    assert!(w.take_text(0).starts_with(r#"{"id":2,"#));
    // End of input: closed once everything is answered.
    w.hang_up(0);
    assert_eq!(w.closed.get(&ConnId(0)), Some(&false));
    assert_eq!(w.engine.counters().requests.get("tools/call"), Some(&2));
    assert!(w.engine.is_idle());
}

#[test]
fn an_oversize_stdio_line_is_refused_and_the_next_one_served() {
    let mut w = World::stdio(server(64));
    let mut input = line(&[b'x'; 100]);
    input.extend(line(br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#));
    w.bytes(0, &input);
    let out = w.take_text(0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].contains("-32600") || lines[0].contains("too large") || lines[0].contains("limit"),
        "{out}"
    );
    assert!(lines[1].contains(r#""id":5"#), "{out}");
    assert!(
        w.logs
            .iter()
            .any(|l| l.contains("refused a 100-byte message")),
        "{:?}",
        w.logs
    );
    // A line of whitespace is nothing to answer.
    w.bytes(0, b"  \n");
    assert!(w.take(0).is_empty());
}

#[test]
fn http_answers_pipelined_requests_in_order_on_a_kept_alive_connection() {
    let mut w = http_world(|_| {});
    w.auto_sync = false;
    w.connect(1, "127.0.0.1:40000");
    let mut both = post_call(1);
    both.extend(post_call(2));
    w.bytes(1, &both);
    assert!(w.sync_asked());
    assert!(w.take(1).is_empty());
    assert!(
        !w.engine.wants_bytes(ConnId(1)),
        "the second request is framed behind"
    );
    w.sync();
    assert_eq!(ids(&w.take(1)), vec![1]);
    w.sync();
    assert_eq!(ids(&w.take(1)), vec![2]);
    assert!(w.engine.wants_bytes(ConnId(1)));
    assert!(w.closed.is_empty(), "kept alive");
    // The peer leaves between requests: the connection is closed and forgotten.
    w.hang_up(1);
    assert_eq!(w.closed.get(&ConnId(1)), Some(&false));
    assert_eq!(w.engine.counters().connections, 0);
}

/// An HTTP world whose syncs the test ends, with one call posted on each of `n` connections.
fn calls_waiting_for_syncs(n: u64) -> World<()> {
    let mut w = http_world(|_| {});
    w.auto_sync = false;
    for c in 1..=n {
        w.connect(c, "127.0.0.1:40000");
        w.bytes(c, &post_call(c));
    }
    w
}

#[test]
fn one_fsync_answers_every_connection_that_appended_while_the_last_one_ran() {
    let mut w = calls_waiting_for_syncs(4);
    // The first call's fsync started at once; the three after it wait for the next.
    w.sync();
    assert_eq!(ids(&w.take(1)), vec![1]);
    assert!(w.take(2).is_empty());
    assert!(
        w.sync_asked(),
        "asked at once: the three it waited for are all in"
    );
    w.sync();
    assert_eq!(w.fsyncs, 2);
    for c in 2..=4 {
        assert_eq!(ids(&w.take(c)), vec![c]);
    }
}

#[test]
fn a_sync_is_held_briefly_for_the_clients_the_last_one_answered() {
    let mut w = http_world(|_| {});
    w.auto_sync = false;
    for c in 1..=3 {
        w.connect(c, "127.0.0.1:40000");
    }
    w.bytes(1, &post_call(1));
    w.advance(Duration::from_micros(800));
    w.bytes(2, &post_call(2));
    w.bytes(3, &post_call(3));
    // The first fsync took 800 µs and answered one client; two waited meanwhile.
    w.sync();
    assert_eq!(ids(&w.take(1)), vec![1]);
    assert!(
        !w.sync_asked(),
        "held: three clients are expected, two wait"
    );
    w.advance(Duration::from_micros(100));
    w.bytes(1, &post_call(4));
    assert!(
        w.sync_asked(),
        "the answered client is back: one fsync for all three"
    );
    w.advance(Duration::from_micros(100));
    w.sync();
    assert_eq!(w.fsyncs, 2);
    assert_eq!(ids(&w.take(1)), vec![4]);
    assert_eq!((ids(&w.take(2)), ids(&w.take(3))), (vec![2], vec![3]));
    // A client that does not come back holds the next sync at most half the last one's time.
    w.bytes(2, &post_call(5));
    assert!(!w.sync_asked());
    w.advance(Duration::from_micros(49));
    assert!(!w.sync_asked());
    w.advance(Duration::from_micros(2));
    assert!(w.sync_asked());
}

#[test]
fn a_lost_race_runs_the_request_again_and_counts_it_once() {
    let mut w = http_world(|_| {});
    let server = w.engine.server().clone();
    w.racers.push_back(line(&call(99)));
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &post("/mcp", &write_call(1), &[JSON_OR_SSE, ERA]));
    assert_eq!(w.conflicts, 1);
    assert_eq!(ids(&w.take(1)), vec![1]);
    let c = w.engine.counters();
    assert_eq!(c.requests.get("tools/call"), Some(&1));
    assert_eq!(c.calls.values().sum::<u64>(), 1);
    // Both calls are in the ledger, each audited once (the write with its record).
    let _ = server;
    assert_eq!(w.ledger.position.seq, 3);
}

#[test]
fn the_connection_cap_answers_503_and_closes() {
    let mut w = http_world(|l| l.max_connections = 1);
    w.connect(1, "127.0.0.1:40000");
    w.connect(2, "127.0.0.1:40001");
    let r = responses(&w.take(2));
    assert_eq!(r[0].0, 503);
    assert_eq!(w.closed.get(&ConnId(2)), Some(&false));
    assert!(!w.closed.contains_key(&ConnId(1)));
    assert_eq!(w.engine.counters().connections, 1);
    assert!(
        w.logs
            .iter()
            .any(|l| l.contains("over the connection cap (1)")),
        "{:?}",
        w.logs
    );
}

#[test]
fn a_request_past_the_read_timeout_gets_408_and_a_silent_connection_closes() {
    let mut w = http_world(|l| l.read_timeout = Duration::from_secs(2));
    w.connect(1, "127.0.0.1:40000");
    w.connect(2, "127.0.0.1:40001");
    let request = post_call(1);
    w.bytes(1, &request[..20]);
    w.advance(Duration::from_secs(1));
    assert!(w.closed.is_empty());
    w.advance(Duration::from_millis(1500));
    assert_eq!(responses(&w.take(1))[0].0, 408);
    assert_eq!(
        w.closed.get(&ConnId(1)),
        Some(&true),
        "half-closed after the 408"
    );
    assert!(w.take(2).is_empty());
    assert_eq!(w.closed.get(&ConnId(2)), Some(&false));
    assert!(w.logs.iter().any(|l| l.contains("408")));
    assert!(w.logs.iter().any(|l| l.contains("no request within")));
    // Bytes that arrive for a forgotten connection change nothing.
    w.bytes(1, &request[20..]);
    assert!(w.take(1).is_empty());
}

#[test]
fn a_kept_alive_connection_idles_from_its_last_answer() {
    let mut w = http_world(|l| l.read_timeout = Duration::from_secs(2));
    w.auto_sync = false;
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &post_call(1));
    // The answer takes longer than the read timeout: the connection is not idle meanwhile.
    w.advance(Duration::from_secs(5));
    assert!(w.closed.is_empty());
    w.sync();
    assert_eq!(ids(&w.take(1)), vec![1]);
    w.advance(Duration::from_secs(1));
    assert!(w.closed.is_empty());
    w.advance(Duration::from_millis(1500));
    assert_eq!(w.closed.get(&ConnId(1)), Some(&false));
}

#[test]
fn expect_continue_is_answered_before_the_body() {
    let mut w = http_world(|_| {});
    w.connect(1, "127.0.0.1:40000");
    let body = call(1);
    let full = post("/mcp", &body, &[JSON_OR_SSE, ERA, "Expect: 100-continue"]);
    let head_len = full.len() - body.len();
    w.bytes(1, &full[..head_len]);
    assert_eq!(w.take_text(1), "HTTP/1.1 100 Continue\r\n\r\n");
    w.bytes(1, &full[head_len..]);
    assert_eq!(ids(&w.take(1)), vec![1]);
}

pub(super) fn open_stream(w: &mut World<()>, conn: u64) -> String {
    w.connect(conn, "127.0.0.1:41000");
    w.bytes(conn, &get("/sse", &["Accept: text/event-stream"]));
    let text = w.take_text(conn);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let at = text.find("/messages?stream=").expect("an endpoint event") + 17;
    text[at..].split('\n').next().unwrap().to_string()
}

#[test]
fn a_legacy_stream_carries_the_answers_of_the_messages_posted_for_it() {
    let mut w = http_world(|l| l.max_legacy_streams = 1);
    let token = open_stream(&mut w, 1);
    assert_eq!(token.len(), 32);
    w.connect(2, "127.0.0.1:41001");
    w.bytes(
        2,
        &post(&format!("/messages?stream={token}"), &call(7), &[]),
    );
    assert_eq!(responses(&w.take(2))[0].0, 202);
    let events = w.take_text(1);
    assert!(
        events.contains("event: message\ndata: {\"id\":7,"),
        "{events}"
    );
    // Another token is no stream.
    w.bytes(2, &post("/messages?stream=nope", &call(8), &[]));
    assert_eq!(responses(&w.take(2))[0].0, 404);
    // At the cap, a new stream takes the place of the one idle longest: its token is gone.
    w.connect(3, "127.0.0.1:41002");
    w.bytes(3, &get("/sse", &["Accept: text/event-stream"]));
    assert!(w.take_text(3).starts_with("HTTP/1.1 200"));
    assert!(
        w.take_text(1)
            .ends_with(": closed for a newer stream (the cap is reached)\n\n")
    );
    assert_eq!(w.closed.get(&ConnId(1)), Some(&false));
    w.bytes(
        2,
        &post(&format!("/messages?stream={token}"), &call(9), &[]),
    );
    assert_eq!(responses(&w.take(2))[0].0, 404);
    // Its peer leaves: its place is free.
    w.hang_up(3);
    let again = open_stream(&mut w, 4);
    assert_ne!(again, token);
    assert!(!w.closed.contains_key(&ConnId(4)));
}

#[test]
fn an_idle_legacy_stream_gets_keep_alives_then_is_closed_and_frees_its_place() {
    let mut w = http_world(|l| {
        l.max_legacy_streams = 1;
        l.sse_keepalive = Duration::from_secs(15);
        l.sse_idle = Duration::from_secs(40);
    });
    open_stream(&mut w, 1);
    w.advance(Duration::from_secs(16));
    assert_eq!(w.take_text(1), ": keep-alive\n\n");
    w.advance(Duration::from_secs(30));
    let text = w.take_text(1);
    assert!(text.ends_with(": idle timeout, closing\n\n"), "{text:?}");
    assert_eq!(w.closed.get(&ConnId(1)), Some(&false));
    assert!(
        w.logs
            .iter()
            .any(|l| l.contains("closed a legacy SSE stream"))
    );
    open_stream(&mut w, 2);
}

#[test]
fn feeds_are_capped_and_a_closed_feed_frees_its_place() {
    let mut w = http_world(|l| l.max_legacy_streams = 1);
    let open_feed = |w: &mut World<()>, conn: u64, port: u16| {
        w.connect(conn, &format!("127.0.0.1:{port}"));
        w.bytes(conn, &get("/api/events", &[]));
        w.take_text(conn)
    };
    assert!(open_feed(&mut w, 1, 42000).starts_with("HTTP/1.1 200"));
    // Plain connections, however many, take no feed's place.
    for conn in 3..20 {
        w.connect(conn, &format!("127.0.0.1:{}", 42000 + conn));
    }
    assert!(w.closed.is_empty());
    // At the cap, a new feed takes the place of the open one (see `backlog` for the order).
    assert!(open_feed(&mut w, 20, 42020).starts_with("HTTP/1.1 200"));
    assert!(w.closed.contains_key(&ConnId(1)));
    w.hang_up(20);
    assert!(open_feed(&mut w, 21, 42021).starts_with("HTTP/1.1 200"));
    assert_eq!(w.engine.counters().connections, 18);
}

#[test]
fn a_feed_hears_the_head_when_it_opens_and_each_time_it_moves() {
    let mut w = http_world(|_| {});
    w.connect(1, "127.0.0.1:42000");
    w.bytes(1, &get("/api/events", &[]));
    let head = w.take_text(1);
    assert!(
        head.starts_with("HTTP/1.1 200") && head.contains("retry: 2000"),
        "{head}"
    );
    assert!(
        head.contains("event: head\ndata: {\"head\":"),
        "the head within a look: {head}"
    );
    // A call on another connection moves the head: told once it is durable.
    w.auto_sync = false;
    w.connect(2, "127.0.0.1:42001");
    w.bytes(2, &post_call(1));
    assert!(w.take(1).is_empty());
    w.sync();
    let moved = w.take_text(1);
    assert!(moved.contains("id: 1\nevent: head"), "{moved}");
    // Another process moves it: the feed's next look sees it.
    let server = w.engine.server().clone();
    w.other_writer(&server, &call(2));
    w.advance(Duration::from_millis(300));
    assert!(w.take_text(1).contains("id: 2\nevent: head"));
    // Idle feeds get keep-alives; a feed whose peer left is forgotten.
    w.advance(Duration::from_secs(15));
    assert!(w.take_text(1).contains(": keep-alive"));
    w.hang_up(1);
    assert!(w.closed.contains_key(&ConnId(1)));
    let looks = w.looks;
    w.advance(Duration::from_secs(2));
    assert_eq!(w.looks, looks, "no feed, no looks");
}

#[test]
fn an_operator_route_is_answered_by_the_runtime_and_holds_its_connection() {
    let mut w = http_world(|_| {});
    w.connect(1, "127.0.0.1:43000");
    let mut two = get("/healthz", &[]);
    two.extend(post_call(1));
    w.bytes(1, &two);
    assert_eq!(w.operator.len(), 1);
    assert!(w.take(1).is_empty(), "the call waits behind the route");
    w.answer_operator(HttpResponse::new(Status::OK, "s"));
    let r = responses(&w.take(1));
    assert_eq!(r.iter().map(|r| r.0).collect::<Vec<_>>(), vec![200, 200]);
}

#[test]
fn a_store_failure_is_answered_503_and_changes_nothing() {
    let mut w = http_world(|_| {});
    w.fail_next = Some(StoreError::Unavailable("the disk is gone".into()));
    w.connect(1, "127.0.0.1:44000");
    w.bytes(1, &post_call(1));
    let r = responses(&w.take(1));
    assert_eq!(r[0].0, 503);
    assert!(String::from_utf8_lossy(&r[0].1).contains("the disk is gone"));
    assert_eq!(w.ledger.position.seq, 0);
    assert!(w.logs.iter().any(|l| l.contains("ledger error")));
    assert!(
        w.engine.counters().calls.is_empty(),
        "a failure is not a served call"
    );
    // The connection serves on.
    w.bytes(1, &post_call(2));
    assert_eq!(ids(&w.take(1)), vec![2]);
}

#[test]
fn a_failed_fsync_fails_every_call_waiting_for_it_without_claiming_nothing_changed() {
    let mut w = calls_waiting_for_syncs(2);
    // The first call's fsync fails; the second was waiting for the next one: both fail.
    w.sync_fails(StoreError::NotServed("fsync ledger.jsonl: EIO".into()));
    for c in 1..=2 {
        let r = responses(&w.take(c));
        assert_eq!(r.len(), 1, "one answer on {c}");
        let body: serde_json::Value = serde_json::from_slice(&r[0].1).unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("EIO"), "{message}");
        assert!(
            message.contains("may or may not be in the ledger after a restart")
                && !message.contains("nothing was changed"),
            "its records were written before the fsync failed: {message}"
        );
        assert_eq!(body["error"]["data"]["retryable"], false, "{body}");
    }
    assert_eq!(w.fsyncs, 0);
    assert!(
        w.engine.counters().calls.is_empty(),
        "a failure is not a served call"
    );
}

#[test]
fn shutdown_closes_idle_connections_and_streams_and_lets_busy_ones_answer() {
    let mut w = http_world(|_| {});
    w.auto_sync = false;
    w.connect(1, "127.0.0.1:45000");
    open_stream(&mut w, 2);
    w.connect(3, "127.0.0.1:45001");
    w.bytes(3, &post_call(1));
    w.input(Input::Shutdown);
    assert!(w.closed.contains_key(&ConnId(1)) && w.closed.contains_key(&ConnId(2)));
    assert!(!w.closed.contains_key(&ConnId(3)));
    w.sync();
    assert_eq!(ids(&w.take(3)), vec![1]);
    assert!(w.closed.contains_key(&ConnId(3)));
    // No new connection is served.
    w.connect(4, "127.0.0.1:45002");
    assert!(w.closed.contains_key(&ConnId(4)));
    assert!(w.engine.is_idle());
}

#[test]
fn notifications_are_acknowledged_and_count_nothing() {
    let mut w = http_world(|_| {});
    w.connect(1, "127.0.0.1:46000");
    let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    w.bytes(1, &post("/mcp", note, &[JSON_OR_SSE, ERA]));
    assert_eq!(responses(&w.take(1))[0].0, 202);
    assert!(w.engine.counters().requests.is_empty());
    assert_eq!(w.ledger.position.seq, 0);
    let _ = TransportFacts::stdio(None);
}

#[test]
fn a_shutdown_is_answered_once_nothing_is_in_flight_and_overdue_after_its_grace() {
    let mut w = http_world(|_| {});
    w.auto_sync = false;
    assert_eq!(w.engine.drain(), None);
    w.connect(1, "127.0.0.1:45100");
    w.bytes(1, &post_call(1));
    w.input(Input::Shutdown);
    // The call waits for its fsync: the engine is still answering, and wakes at the grace end.
    assert_eq!(w.engine.drain(), Some(Drain::Answering));
    let grace = HttpLimits::default().shutdown_grace;
    assert!(
        w.engine
            .poll_timeout()
            .is_some_and(|t| t <= w.now().mono + grace)
    );
    w.advance(grace);
    assert_eq!(w.engine.drain(), Some(Drain::Overdue));

    let mut w = http_world(|_| {});
    w.auto_sync = false;
    w.connect(1, "127.0.0.1:45101");
    w.bytes(1, &post_call(1));
    w.input(Input::Shutdown);
    w.sync();
    assert_eq!(ids(&w.take(1)), vec![1]);
    assert_eq!(w.engine.drain(), Some(Drain::Answered));
}

/// `call(id)` as a job a caller submits (an in-process client's message).
fn job(w: &World<()>, id: u64) -> crate::engine::Submitted<()> {
    job_of(w, call(id))
}

fn job_of(w: &World<()>, bytes: Vec<u8>) -> crate::engine::Submitted<()> {
    let server = w.engine.server().clone();
    Box::new(crate::engine::OwnedMessage {
        message: server.read_message(bytes),
        server,
        facts: TransportFacts::stdio(None),
        caps: Default::default(),
    })
}

fn finished_ids(w: &mut World<()>) -> Vec<u64> {
    std::mem::take(&mut w.finished)
        .into_iter()
        .map(|(_, r)| {
            let served = r.expect("served").served;
            let v: serde_json::Value = serde_json::from_slice(&served.response.unwrap()).unwrap();
            v["id"].as_u64().unwrap()
        })
        .collect()
}

#[test]
fn a_submitted_job_ends_once_durable_and_shares_the_fsync_of_the_connections() {
    let mut w = calls_waiting_for_syncs(1);
    let first = w.submit(job(&w, 7));
    let second = w.submit(job(&w, 8));
    assert_ne!(first, second);
    assert!(
        w.finished.is_empty(),
        "no answer before its records are durable"
    );
    // The first fsync covers the connection's call; the jobs appended after it began.
    w.sync();
    assert_eq!(ids(&w.take(1)), vec![1]);
    assert!(w.finished.is_empty());
    w.sync();
    assert_eq!(w.fsyncs, 2, "one fsync for both jobs");
    assert_eq!(
        w.finished.iter().map(|f| f.0).collect::<Vec<_>>(),
        [first, second]
    );
    assert_eq!(finished_ids(&mut w), [7, 8]);
    assert_eq!(w.ledger.position.seq, 3);
    assert_eq!(w.engine.requests_in_flight(), 0);
    assert_eq!(w.engine.counters().requests.get("tools/call"), Some(&3));
}

#[test]
fn a_submitted_job_that_lost_a_race_runs_again_and_a_store_failure_ends_it() {
    let mut w = World::new(
        server(1 << 20),
        crate::engine::EngineConfig::jobs(crate::engine::DEFAULT_WAIT, [1; 32]),
    );
    w.racers.push_back(line(&call(99)));
    w.submit(job_of(&w, write_call(1)));
    assert_eq!(w.conflicts, 1);
    assert_eq!(finished_ids(&mut w), [1]);
    assert_eq!(w.ledger.position.seq, 3);
    w.fail_next = Some(StoreError::Unavailable("the disk is gone".into()));
    w.submit(job(&w, 2));
    let (_, result) = w.finished.pop().unwrap();
    let e = result.unwrap_err();
    assert!(e.to_string().contains("the disk is gone"), "{e}");
    assert!(w.logs.is_empty(), "its caller reports it");
    assert_eq!(w.ledger.position.seq, 3);
    // A failed fsync ends the jobs waiting for it with the failure.
    w.auto_sync = false;
    w.submit(job(&w, 3));
    w.sync_fails(StoreError::Io("fsync failed".into()));
    assert!(matches!(
        w.finished.pop(),
        Some((_, Err(StoreError::Io(_))))
    ));
    assert_eq!(w.engine.requests_in_flight(), 0);
}

/// A server whose tool `logs` logs one `info` message.
fn logging_server() -> Arc<Server<()>> {
    let mut tool = plain_tool("logs");
    tool.call = |_, _| {
        let mut out = crate::protocol::registry::ToolOutput::ok(serde_json::json!({}));
        out.logs = vec![crate::protocol::logging::LogMessage {
            level: crate::protocol::logging::LogLevel::Info,
            logger: "t",
            data: serde_json::json!("seen"),
        }];
        out
    };
    let config = crate::config::Config::new(b"k".to_vec());
    Arc::new(Server::with_catalog(config, tools_only(vec![tool])))
}

fn log_call(id: u64) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"logs","arguments":{{}}}}}}"#)
        .into_bytes()
}

const SET_INFO: &[u8] =
    br#"{"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"info"}}"#;

#[test]
fn a_stdio_connection_keeps_the_level_it_set_and_logs_only_after() {
    let mut w = World::stdio(logging_server());
    w.bytes(0, &line(&log_call(1)));
    let out = w.take_text(0);
    assert!(!out.contains("notifications/message"), "{out}");
    w.bytes(0, &line(SET_INFO));
    assert_eq!(
        w.take_text(0),
        "{\"id\":9,\"jsonrpc\":\"2.0\",\"result\":{}}\n"
    );
    w.bytes(0, &line(&log_call(2)));
    let out = w.take_text(0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].contains(r#""method":"notifications/message""#),
        "{out}"
    );
    assert!(lines[1].starts_with(r#"{"id":2,"#), "{out}");
}

#[test]
fn an_http_connection_keeps_the_level_it_set_and_another_connection_does_not() {
    let mut w = World::http(logging_server(), HttpOptions::default());
    w.connect(1, "127.0.0.1:40000");
    w.connect(2, "127.0.0.1:40001");
    w.bytes(1, &post("/mcp", SET_INFO, &[JSON_OR_SSE, ERA]));
    assert_eq!(ids(&w.take(1)), vec![9]);
    w.bytes(1, &post("/mcp", &log_call(1), &[JSON_OR_SSE, ERA]));
    let on_one = String::from_utf8(w.take(1)).unwrap();
    assert!(on_one.contains("notifications/message"), "{on_one}");
    w.bytes(2, &post("/mcp", &log_call(2), &[JSON_OR_SSE, ERA]));
    let on_two = String::from_utf8(w.take(2)).unwrap();
    assert!(!on_two.contains("notifications/message"), "{on_two}");
}
