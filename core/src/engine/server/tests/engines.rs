//! Several engines of one process (`engine/shared.rs`): a session's request that reaches
//! another engine is handed to engine 0 and answered there, the connection cap counts every
//! engine's connections, and what one engine hears (a cancellation, its own durable commits)
//! it tells the others.

use core::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use serde_json::{Value, json};

use super::{ACCEPT_BOTH, server};
use crate::engine::shared::{Notice, Shared, Sharing};
use crate::engine::sim::{World, post, responses};
use crate::engine::{ConnId, Input};
use crate::transport::http::HttpOptions;

const ERA: &str = "MCP-Protocol-Version: 2025-11-25";

/// Engine `index` of `shared`'s process, over the same catalogue.
fn engine(shared: &Arc<Shared>, index: usize, options: HttpOptions) -> World<()> {
    let sharing = Sharing {
        index,
        shared: shared.clone(),
    };
    World::http_sharing(server(1 << 20), options, sharing)
}

fn rpc(id: u64, method: &str, params: &Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string()
        .into_bytes()
}

#[test]
fn a_sessions_request_on_another_engine_is_handed_to_engine_0_and_answered_there() {
    let shared = Arc::new(Shared::new(2));
    let mut home = engine(&shared, 0, HttpOptions::default());
    let mut other = engine(&shared, 1, HttpOptions::default());
    let session = super::sessions::initialize(&mut home, 1, &json!({}));
    // The session's call reaches engine 1, with a ping pipelined behind it.
    other.connect(5, "127.0.0.1:40005");
    let with_session = format!("Mcp-Session-Id: {session}");
    let headers = [ACCEPT_BOTH, ERA, with_session.as_str()];
    let mut bytes = post(
        "/mcp",
        &rpc(2, "tools/call", &json!({"name": "t"})),
        &headers,
    );
    bytes.extend(post("/mcp", &rpc(3, "ping", &json!({})), &headers));
    other.bytes(5, &bytes);
    assert!(other.take(5).is_empty(), "engine 1 answers nothing of it");
    assert!(!other.closed.contains_key(&ConnId(5)), "nor closes it");
    let (conn, handed) = other.handed.pop().expect("handed to engine 0");
    assert_eq!(conn, ConnId(5));
    assert_eq!(handed.peer.port(), 40005);
    // Engine 0 serves the call and then the ping behind it, on the connection it adopted.
    let conn = ConnId(9);
    home.input(Input::Adopted { conn, handed });
    let answered: Vec<u64> = responses(&home.take(9))
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, 200);
            serde_json::from_slice::<Value>(body).unwrap()["id"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(answered, [2, 3]);
    // Counted once: the initialize's connection and the handed one.
    assert_eq!(home.engine.counters().connections, 2);
    assert_eq!(other.engine.counters().requests.get("ping"), Some(&1));
}

#[test]
fn a_request_without_a_session_is_served_where_it_arrived() {
    let shared = Arc::new(Shared::new(2));
    let mut other = engine(&shared, 1, HttpOptions::default());
    other.connect(5, "127.0.0.1:40005");
    let call = rpc(2, "tools/call", &json!({"name": "t"}));
    other.bytes(5, &post("/mcp", &call, &[ACCEPT_BOTH, ERA]));
    assert!(other.handed.is_empty());
    assert_eq!(responses(&other.take(5))[0].0, 200);
}

#[test]
fn the_connection_cap_counts_every_engines_connections() {
    let shared = Arc::new(Shared::new(2));
    let mut options = HttpOptions::default();
    options.limits.max_connections = 1;
    let mut home = engine(&shared, 0, options.clone());
    let mut other = engine(&shared, 1, options);
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
    let shared = Arc::new(Shared::new(2));
    let mut other = engine(&shared, 1, HttpOptions::default());
    other.connect(5, "127.0.0.1:40005");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7}});
    let body = cancel.to_string().into_bytes();
    other.bytes(5, &post("/mcp", &body, &[ACCEPT_BOTH, ERA]));
    let from = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let id = "7".to_string();
    assert_eq!(other.told, [Notice::Cancelled { id, from }]);
    // A call's audit record, once durable, is news for the others' waits and feeds.
    other.told.clear();
    other.connect(6, "127.0.0.1:40006");
    let call = rpc(2, "tools/call", &json!({"name": "t"}));
    other.bytes(6, &post("/mcp", &call, &[ACCEPT_BOTH, ERA]));
    assert_eq!(other.told, [Notice::Committed]);
}

#[test]
fn an_engine_alone_tells_nobody() {
    let mut w = World::http(server(1 << 20), HttpOptions::default());
    w.connect(5, "127.0.0.1:40005");
    let call = rpc(2, "tools/call", &json!({"name": "t"}));
    w.bytes(5, &post("/mcp", &call, &[ACCEPT_BOTH, ERA]));
    assert!(w.told.is_empty() && w.handed.is_empty());
}
