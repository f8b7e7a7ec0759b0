//! Several engines of one process (`engine/shared.rs`): each serves what reaches it, sessions
//! included; what one hears that another needs (a session's level, a client's answer to a
//! question another put, a cancellation, its own durable commits) it tells the others; the
//! legacy SSE transport is handed to engine 0, which holds the streams; the connection cap
//! counts every engine's connections, and the budget of lines about peers is the process's.

use core::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use serde_json::{Value, json};

use super::sessions::{call, events, initialize, post_on, rpc};
use super::{ACCEPT_BOTH, open_stream, server};
use crate::engine::shared::{Notice, Shared, Sharing};
use crate::engine::sim::{World, post, responses};
use crate::engine::{ConnId, Input};
use crate::protocol::Server;
use crate::protocol::logging::LogLevel;
use crate::transport::http::HttpOptions;

const ERA: &str = "MCP-Protocol-Version: 2025-11-25";

/// Engines 0 and 1 of one process over `server`'s catalogue, with `options`.
fn engines(server: &Arc<Server<()>>, options: &HttpOptions) -> (World<()>, World<()>) {
    let shared = Arc::new(Shared::new(2));
    let engine = |index| {
        let shared = shared.clone();
        let sharing = Sharing { index, shared };
        World::http_sharing(server.clone(), options.clone(), sharing)
    };
    (engine(0), engine(1))
}

/// Delivers what `from` told to `to`, as a runtime does.
fn deliver(from: &mut World<()>, to: &mut World<()>) {
    for notice in std::mem::take(&mut from.told) {
        to.input(Input::Told(notice));
    }
}

#[test]
fn a_question_put_on_one_engine_is_answered_through_another() {
    let (mut home, mut other) = engines(&super::sessions::server(), &HttpOptions::default());
    let session = initialize(&mut home, 1, &json!({"elicitation": {}}));
    let asked = post_on(&mut home, 2, &call(2, "confirm"), Some(&session));
    let question = events(&asked).remove(0);
    assert_eq!(question["method"], "elicitation/create");
    // The client's answer reaches engine 1, which put no question: it tells the others.
    let answer = json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {"ok": true}}});
    let accepted = post_on(&mut other, 3, answer.to_string().as_bytes(), Some(&session));
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");
    assert!(matches!(&other.told[..], [Notice::Answered { .. }]));
    deliver(&mut other, &mut home);
    let result = events(&home.take_text(2)).remove(0);
    assert_eq!(result["id"], 2);
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#""ok":true"#), "{result}");
    assert_eq!(home.engine.requests_in_flight(), 0);
}

#[test]
fn a_sessions_level_set_on_one_engine_is_heard_on_another() {
    let (mut home, mut other) = engines(&super::sessions::server(), &HttpOptions::default());
    let session = initialize(&mut home, 1, &json!({}));
    let set = rpc(9, "logging/setLevel", &json!({"level": "info"}));
    assert!(post_on(&mut other, 2, &set, Some(&session)).starts_with("HTTP/1.1 200"));
    assert!(matches!(
        &other.told[..],
        [Notice::SessionLevel {
            level: LogLevel::Info,
            ..
        }]
    ));
    deliver(&mut other, &mut home);
    let heard = events(&post_on(&mut home, 3, &call(2, "logs"), Some(&session)));
    assert_eq!(heard[0]["method"], "notifications/message");
    assert_eq!(heard[1]["id"], 2);
}

#[test]
fn a_legacy_message_on_another_engine_is_handed_to_engine_0_and_answered_on_its_stream() {
    let (mut home, mut other) = engines(&server(1 << 20), &HttpOptions::default());
    let token = open_stream(&mut home, 1);
    // The message reaches engine 1, with another pipelined behind it.
    other.connect(5, "127.0.0.1:40005");
    let path = format!("/messages?stream={token}");
    let mut bytes = post(&path, &rpc(7, "ping", &json!({})), &[]);
    bytes.extend(post(&path, &rpc(8, "ping", &json!({})), &[]));
    other.bytes(5, &bytes);
    assert!(other.take(5).is_empty(), "engine 1 answers nothing of it");
    assert!(!other.closed.contains_key(&ConnId(5)), "nor closes it");
    let (conn, handed) = other.handed.pop().expect("handed to engine 0");
    assert_eq!((conn, handed.peer.port()), (ConnId(5), 40005));
    // Engine 0 accepts both on the connection it adopted; their answers go on the stream.
    home.input(Input::Adopted {
        conn: ConnId(9),
        handed,
    });
    let accepted: Vec<u16> = responses(&home.take(9)).iter().map(|r| r.0).collect();
    assert_eq!(accepted, [202, 202]);
    let stream = home.take_text(1);
    let ids: Vec<Value> = stream
        .lines()
        .filter_map(|l| l.strip_prefix("data: {"))
        .map(|d| serde_json::from_str::<Value>(&format!("{{{d}")).unwrap()["id"].clone())
        .collect();
    assert_eq!(ids, [json!(7), json!(8)]);
    // One connection counted once for the stream, once for the handed one.
    assert_eq!(home.engine.counters().connections, 2);
}

#[test]
fn the_connection_cap_counts_every_engines_connections() {
    let mut options = HttpOptions::default();
    options.limits.max_connections = 1;
    let (mut home, mut other) = engines(&server(1 << 20), &options);
    home.connect(1, "127.0.0.1:40001");
    other.connect(2, "127.0.0.1:40002");
    assert_eq!(responses(&other.take(2))[0].0, 503);
    assert_eq!(other.closed.get(&ConnId(2)), Some(&false));
    // Once engine 0's connection closes, engine 1 takes one.
    home.hang_up(1);
    other.connect(3, "127.0.0.1:40003");
    assert!(!other.closed.contains_key(&ConnId(3)));
}

#[test]
fn a_cancellation_and_durable_commits_are_told_to_the_other_engines() {
    let (mut home, mut other) = engines(&server(1 << 20), &HttpOptions::default());
    other.connect(5, "127.0.0.1:40005");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7}});
    let body = cancel.to_string().into_bytes();
    other.bytes(5, &post("/mcp", &body, &[ACCEPT_BOTH, ERA]));
    let from = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let id = "7".to_string();
    assert_eq!(other.told, [Notice::Cancelled { id, from }]);
    // A call's audit record, once durable, is news for the others' waits and feeds: told
    // only once another engine has something it may wake.
    other.told.clear();
    other.connect(6, "127.0.0.1:40006");
    let call = rpc(2, "tools/call", &json!({"name": "t"}));
    other.bytes(6, &post("/mcp", &call, &[ACCEPT_BOTH, ERA]));
    assert!(other.told.is_empty(), "nobody listens: {:?}", other.told);
    // Engine 0 opens a feed: starting to listen, it looks at the head once (the commit
    // above was not told to it).
    let looks = home.looks;
    home.connect(7, "127.0.0.1:40007");
    home.bytes(7, &crate::engine::sim::get("/api/events", &[]));
    assert_eq!(home.looks, looks + 1);
    let call = rpc(3, "tools/call", &json!({"name": "t"}));
    other.bytes(6, &post("/mcp", &call, &[ACCEPT_BOTH, ERA]));
    assert_eq!(other.told, [Notice::Committed]);
    deliver(&mut other, &mut home);
    assert_eq!(home.looks, looks + 2, "the feed's engine looks at the head");
    assert!(
        other.handed.is_empty(),
        "a session-less call is served where it arrived"
    );
    // Once nothing listens there, a notice makes it stop listening: no more are told.
    home.hang_up(7);
    other.bytes(
        6,
        &post(
            "/mcp",
            &rpc(4, "tools/call", &json!({"name": "t"})),
            &[ACCEPT_BOTH, ERA],
        ),
    );
    deliver(&mut other, &mut home);
    other.bytes(
        6,
        &post(
            "/mcp",
            &rpc(5, "tools/call", &json!({"name": "t"})),
            &[ACCEPT_BOTH, ERA],
        ),
    );
    assert!(other.told.is_empty(), "{:?}", other.told);
}

#[test]
fn an_engine_alone_tells_nobody_and_hands_nothing_off() {
    let mut w = World::http(server(1 << 20), HttpOptions::default());
    let token = open_stream(&mut w, 1);
    w.connect(5, "127.0.0.1:40005");
    let path = format!("/messages?stream={token}");
    w.bytes(
        5,
        &post(&path, &rpc(7, "tools/call", &json!({"name": "t"})), &[]),
    );
    assert_eq!(responses(&w.take(5))[0].0, 202);
    assert!(w.told.is_empty() && w.handed.is_empty());
}

#[test]
fn a_dashboard_feed_is_held_by_engine_0_and_other_operator_routes_where_they_arrive() {
    let (_, mut other) = engines(&server(1 << 20), &HttpOptions::default());
    other.connect(5, "127.0.0.1:40005");
    other.bytes(
        5,
        &crate::engine::sim::get("/api/events", &["Accept: text/event-stream"]),
    );
    assert_eq!(other.handed.len(), 1, "a feed is capped in one place");
    other.connect(6, "127.0.0.1:40006");
    other.bytes(6, &crate::engine::sim::get("/healthz", &[]));
    assert_eq!(other.handed.len(), 1);
    assert_eq!(
        other.operator.len(),
        1,
        "a probe is answered where it arrived"
    );
}

#[test]
fn the_budget_of_lines_about_peers_is_one_for_the_process() {
    let (mut home, mut other) = engines(&super::sessions::server(), &HttpOptions::default());
    let peer = "192.0.2.7:4000".parse().unwrap();
    let flood = |w: &mut World<()>| {
        for _ in 0..30 {
            w.input(Input::TlsFailed {
                peer,
                why: "bad record",
            });
        }
    };
    flood(&mut home);
    flood(&mut other);
    let about_peer = |w: &World<()>| {
        w.logs
            .iter()
            .filter(|l| l.starts_with("bernstein https: 192.0.2.7:4000: TLS failed"))
            .count()
    };
    // One budget of 20 a second for both engines, not 20 each.
    assert_eq!(about_peer(&home) + about_peer(&other), 20);
    assert_eq!(about_peer(&home), 20);
    // Refused HTTP requests have a budget of their own, untouched by the flood.
    other.connect(9, "192.0.2.8:4000");
    other.bytes(
        9,
        b"POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 0\r\n\r\n",
    );
    assert!(
        other
            .logs
            .iter()
            .any(|l| l.starts_with("bernstein http: 192.0.2.8:4000: ")),
        "{:?}",
        other.logs
    );
    // The next second, the first line written says how many both left out.
    other.advance(core::time::Duration::from_secs(1));
    other.input(Input::TlsFailed {
        peer,
        why: "bad record",
    });
    let summary = "bernstein https: 40 more lines about single peers were left out";
    assert!(
        other.logs.iter().any(|l| l.starts_with(summary)),
        "{:?}",
        other.logs
    );
    assert_eq!(about_peer(&other), 1);
}
