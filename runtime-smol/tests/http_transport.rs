//! The HTTP transports of runtime-smol over real sockets: the same scenarios as runtime-std's
//! (`runtime-std/tests/http_support`), against the async server; and (`two_engines`) a server of
//! two engines.

#[path = "../../runtime-std/tests/http_support/mod.rs"]
mod http_support;

use std::net::SocketAddr;
use std::sync::Arc;

use bernstein_effects::perform::Backend;

use bernstein_core::transport::http::HttpOptions;
use bernstein_domain::{Projection, Server};
use bernstein_runtime_smol::http::{HttpServerHandle, bind};
use http_support::Running;

struct Smol(HttpServerHandle);

impl Running for Smol {
    fn addr(&self) -> SocketAddr {
        self.0.local_addr()
    }
}

fn launch(
    server: Arc<Server>,
    backend: Backend<Projection>,
    opts: HttpOptions,
) -> std::io::Result<Box<dyn Running>> {
    Ok(Box::new(Smol(bind(server, backend, opts)?)))
}

// Every scenario again with two engines (`two_engine_scenarios`).
http_scenarios!(launch, two engines in two_engine_scenarios);

/// Several engines on one server (`HttpOptions::engines`): connections spread over the
/// engines' threads, a handshake-era session's requests are served with its level on
/// whichever engine they arrive, and a shutdown ends every engine.
mod two_engines {
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::sync::mpsc;
    use std::thread;
    use std::time::{Duration, Instant};

    use bernstein_core::time::Clock;
    use bernstein_domain::Server;
    use bernstein_effects::host::ProjectHost;
    use bernstein_effects::perform::Backend;
    use bernstein_os::clock::SystemClock;
    use bernstein_runtime_smol::http::{HttpServerHandle, bind};
    use bernstein_store_file::test_dir::TestDir;
    use serde_json::{Value, json};

    use super::http_support::client::{Conn, RawResponse, request_bytes};
    use super::http_support::{test_config, test_options};

    type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;

    /// A server of two engines over a fresh store. Field order: it stops before the directory
    /// goes.
    struct Two {
        handle: Option<HttpServerHandle>,
        _dir: TestDir,
    }

    impl Two {
        fn start() -> Two {
            let dir = TestDir::new("two");
            let config = test_config();
            let store = FileStore::open(dir.path(), config.audit_key.clone()).expect("store");
            let clock: Arc<dyn Clock> = Arc::new(SystemClock);
            let host = Arc::new(ProjectHost::new(dir.path()));
            let backend = Backend::new(Arc::new(store), clock, host);
            let mut options = test_options();
            options.engines = 2;
            let handle = bind(Arc::new(Server::new(config)), backend, options).expect("binds");
            Two {
                handle: Some(handle),
                _dir: dir,
            }
        }

        fn addr(&self) -> SocketAddr {
            self.handle.as_ref().expect("running").local_addr()
        }
    }

    fn rpc(id: u64, method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    fn call(id: u64, tool: &str, args: Value) -> Value {
        rpc(id, "tools/call", json!({"name": tool, "arguments": args}))
    }

    /// The JSON-RPC messages of a response, whether a JSON body or an SSE stream.
    fn messages(r: &RawResponse) -> Vec<Value> {
        assert_eq!(r.status, 200, "{}", r.text());
        if r.header("content-type") == Some("text/event-stream") {
            r.sse_events()
                .iter()
                .map(|e| serde_json::from_str(&e.data).expect("JSON event"))
                .collect()
        } else {
            vec![r.json()]
        }
    }

    /// The answer with `id` among a response's messages.
    fn answer(r: &RawResponse, id: u64) -> Value {
        let all = messages(r);
        all.iter()
            .find(|m| m["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no answer {id} in {all:?}"))
    }

    fn logged(r: &RawResponse) -> Vec<Value> {
        messages(r)
            .into_iter()
            .filter(|m| m["method"] == "notifications/message")
            .collect()
    }

    #[test]
    fn thirty_two_concurrent_connections_are_all_answered() {
        let server = Two::start();
        let addr = server.addr();
        let clients: Vec<_> = (0..32u64)
            .map(|i| {
                thread::spawn(move || {
                    let mut c = Conn::open(addr);
                    for round in 0..4u64 {
                        let id = i * 100 + round;
                        let (r, what) = match round % 3 {
                            0 => (c.post_mcp(&rpc(id, "ping", json!({})), &[]), "ping"),
                            1 => (c.post_mcp(&rpc(id, "tools/list", json!({})), &[]), "list"),
                            _ => (
                                c.post_mcp(&call(id, "bernstein_status", json!({})), &[]),
                                "status",
                            ),
                        };
                        let v = answer(&r, id);
                        assert!(v.get("result").is_some(), "{what}: {v}");
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().expect("every client answered");
        }
    }

    #[test]
    fn a_session_is_served_on_any_connection_with_its_level() {
        let server = Two::start();
        let addr = server.addr();
        let pv = ("MCP-Protocol-Version", "2025-11-25");
        let init = rpc(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}),
        );
        let r = Conn::open(addr).post_mcp(&init, &[]);
        let session = r
            .header("mcp-session-id")
            .expect("a session id")
            .to_string();
        let with = [pv, ("Mcp-Session-Id", session.as_str())];
        let set = rpc(2, "logging/setLevel", json!({"level": "info"}));
        assert_eq!(
            answer(&Conn::open(addr).post_mcp(&set, &with), 2)["result"],
            json!({})
        );
        let run = Conn::open(addr).post_mcp(&call(3, "bernstein_run", json!({"goal": "g"})), &with);
        let run_id = answer(&run, 3)["result"]["structuredContent"]["result"]["run_id"]
            .as_str()
            .expect("run_id")
            .to_string();
        // Eight connections open at once (spread over both engines), each sending a ping and
        // then the session's call in one write: on engine 1 the call is handed to engine 0
        // with its connection.
        let mut conns: Vec<Conn> = (0..8).map(|_| Conn::open(addr)).collect();
        let status = |id| call(id, "bernstein_run_status", json!({"run_id": run_id}));
        for (i, c) in conns.iter_mut().enumerate() {
            let host = c.host();
            let json_only = [
                ("Content-Type", "application/json"),
                ("Accept", "application/json"),
            ];
            let both = [
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                with[0],
                with[1],
            ];
            let ping = rpc(10 + i as u64, "ping", json!({}));
            let mut bytes = request_bytes(
                &host,
                "POST",
                "/mcp",
                &json_only,
                ping.to_string().as_bytes(),
            );
            let heard = status(20 + i as u64).to_string();
            bytes.extend(request_bytes(
                &host,
                "POST",
                "/mcp",
                &both,
                heard.as_bytes(),
            ));
            c.send(&bytes);
        }
        for (i, c) in conns.iter_mut().enumerate() {
            let i = i as u64;
            assert!(answer(&c.read_response(), 10 + i).get("result").is_some());
            let r = c.read_response();
            assert!(answer(&r, 20 + i).get("result").is_some(), "{}", r.text());
            let logs = logged(&r);
            assert!(
                !logs.is_empty(),
                "the session's level reached connection {i}: {}",
                r.text()
            );
            assert!(
                logs.iter().all(|m| m["params"]["level"] == "info"),
                "{logs:?}"
            );
        }
        // Without the session, no level was asked for: nothing is logged.
        let quiet = Conn::open(addr).post_mcp(&status(40), &[pv]);
        assert!(logged(&quiet).is_empty(), "{}", quiet.text());
    }

    #[test]
    fn a_shutdown_with_connections_held_returns() {
        let mut server = Two::start();
        let addr = server.addr();
        let mut c = Conn::open(addr);
        let run = c.post_mcp(&call(1, "bernstein_run", json!({"goal": "held"})), &[]);
        let run_id = answer(&run, 1)["result"]["structuredContent"]["result"]["run_id"]
            .as_str()
            .expect("run_id")
            .to_string();
        // Idle keep-alive connections, long polls and a legacy stream, on both engines.
        let idle: Vec<Conn> = (0..4)
            .map(|i| {
                let mut c = Conn::open(addr);
                assert!(answer(&c.post_mcp(&rpc(i, "ping", json!({})), &[]), i).is_object());
                c
            })
            .collect();
        let mut polls: Vec<Conn> = (0..4u64)
            .map(|i| {
                let mut w = Conn::open(addr);
                let poll = call(
                    10 + i,
                    "bernstein_run_status",
                    json!({"run_id": run_id, "wait_ms": 60_000}),
                );
                let headers = [
                    ("Content-Type", "application/json"),
                    ("Accept", "application/json"),
                ];
                let host = w.host();
                w.send(&request_bytes(
                    &host,
                    "POST",
                    "/mcp",
                    &headers,
                    poll.to_string().as_bytes(),
                ));
                w
            })
            .collect();
        let mut stream = Conn::open(addr);
        stream.send_request("GET", "/sse", &[("Accept", "text/event-stream")], b"");
        assert_eq!(stream.read_stream_head().status, 200);
        // Let the polls reach their engines before the shutdown.
        thread::sleep(Duration::from_millis(300));
        let handle = server.handle.take().expect("running");
        let (done, ended) = mpsc::channel();
        let t0 = Instant::now();
        thread::spawn(move || {
            handle.shutdown();
            let _ = done.send(());
        });
        ended
            .recv_timeout(Duration::from_secs(15))
            .expect("the shutdown returns");
        assert!(t0.elapsed() < Duration::from_secs(15));
        // The waiting polls were answered as they stood.
        for (i, w) in polls.iter_mut().enumerate() {
            let r = w.read_response();
            assert!(
                answer(&r, 10 + i as u64).get("result").is_some(),
                "{}",
                r.text()
            );
        }
        drop(idle);
    }
}
