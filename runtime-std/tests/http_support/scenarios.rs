//! The HTTP scenarios every runtime must pass, over real sockets against a real `FileStore`.

use std::net::Shutdown;
use std::thread;
use std::time::{Duration, Instant};

use bernstein_core::Timestamp;
use bernstein_core::config::{AuthMode, OAuthConfig};
use serde_json::{Value, json};

use super::client::{Conn, RawResponse, request_bytes};
use super::{Launcher, start, start_at, test_config, test_options};

const MODERN: &str = "2026-07-28";

fn initialize(id: u64, version: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "http-test", "version": "1"}}})
}

fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
}

fn call(id: u64, tool: &str, args: Value) -> Value {
    rpc(id, "tools/call", json!({"name": tool, "arguments": args}))
}

fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}})
}

fn span(r: &RawResponse) -> &str {
    r.header("x-bernstein-span-id")
        .unwrap_or_else(|| panic!("no X-Bernstein-Span-Id on {r:?}"))
}

fn assert_ok_result(r: &RawResponse, id: u64) -> Value {
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["id"], id, "{v}");
    assert!(v.get("error").is_none(), "{v}");
    assert_ne!(v["result"]["isError"], true, "{v}");
    v
}

pub fn handshake_round_trip_on_one_keep_alive_connection(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let mut c = Conn::open(f.addr());
    let r = c.post_mcp(&initialize(1, "2025-06-18"), &[]);
    let v = assert_ok_result(&r, 1);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let session = r
        .header("mcp-session-id")
        .expect("a handshake-era initialize is answered with a session id")
        .to_string();
    assert_eq!(v["result"]["protocolVersion"], "2025-06-18");
    span(&r);
    let pv = ("MCP-Protocol-Version", "2025-06-18");

    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let r = c.post_mcp(&note, &[pv, ("Mcp-Session-Id", &session)]);
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
    assert!(
        r.header("mcp-session-id").is_none(),
        "only initialize is answered with a session id"
    );
    span(&r);

    let r = c.post_mcp(&rpc(2, "tools/list", json!({})), &[pv]);
    let tools = assert_ok_result(&r, 2)["result"]["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for want in ["bernstein_run", "bernstein_status", "bernstein_run_status"] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    // Same request, same content-derived span id.
    let again = c.post_mcp(&rpc(2, "tools/list", json!({})), &[pv]);
    assert_eq!(span(&again), span(&r));

    let r = c.post_mcp(
        &call(3, "bernstein_run", json!({"goal": "write the HTTP tests"})),
        &[pv],
    );
    assert_ok_result(&r, 3);
    let r = c.post_mcp(&call(4, "bernstein_status", json!({})), &[pv]);
    let text = assert_ok_result(&r, 4).to_string();
    assert!(text.contains("total"), "{text}");
}

pub fn json_or_sse_by_accept(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let mut c = Conn::open(f.addr());
    let body = rpc(5, "tools/list", json!({})).to_string();
    let json_type = ("Content-Type", "application/json");
    let r = c.request(
        "POST",
        "/mcp",
        &[json_type, ("Accept", "text/event-stream")],
        body.as_bytes(),
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let events = r.sse_events();
    assert_eq!(events.len(), 1, "{}", r.text());
    assert_eq!(events[0].event.as_deref(), Some("message"));
    assert_eq!(
        events[0].id.as_deref(),
        Some(format!("{}-1", span(&r)).as_str()),
        "event id: the span id, then the event's number"
    );
    let msg: Value = serde_json::from_str(&events[0].data).unwrap();
    assert_eq!(msg["id"], 5);
    for accept in [
        Some("application/json"),
        None,
        Some("application/json, text/event-stream"),
    ] {
        let mut headers = vec![json_type];
        headers.extend(accept.map(|a| ("Accept", a)));
        let r = c.request("POST", "/mcp", &headers, body.as_bytes());
        assert_eq!(
            r.header("content-type"),
            Some("application/json"),
            "Accept {accept:?}"
        );
        assert_eq!(r.json()["id"], 5);
    }
    let r = c.request(
        "POST",
        "/mcp",
        &[json_type, ("Accept", "text/html")],
        body.as_bytes(),
    );
    assert_eq!(r.status, 406);
}

pub fn pipelined_requests_are_answered_in_order(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let mut c = Conn::open(f.addr());
    let ct = [("Content-Type", "application/json")];
    let host = c.host();
    let mut bytes = request_bytes(
        &host,
        "POST",
        "/mcp",
        &ct,
        rpc(1, "ping", json!({})).to_string().as_bytes(),
    );
    bytes.extend(request_bytes(
        &host,
        "POST",
        "/mcp",
        &ct,
        rpc(2, "tools/list", json!({})).to_string().as_bytes(),
    ));
    bytes.extend(request_bytes(
        &host,
        "POST",
        "/mcp",
        &ct,
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    ));
    bytes.extend(request_bytes(
        &host,
        "POST",
        "/mcp",
        &ct,
        rpc(3, "ping", json!({})).to_string().as_bytes(),
    ));
    c.send(&bytes);
    assert_eq!(c.read_response().json()["id"], 1);
    assert_eq!(c.read_response().json()["id"], 2);
    assert_eq!(c.read_response().status, 202);
    assert_eq!(c.read_response().json()["id"], 3);
}

/// Many more answers than the bound on a connection's unsent output, to a client that reads
/// only after a while: the server stops and goes on many times, and every answer arrives, in
/// order, once.
pub fn pipelined_answers_over_the_bound_reach_a_late_reader_in_order(launch: Launcher) {
    let mut options = test_options();
    options.limits.max_unsent_bytes = 2048;
    let f = start(launch, test_config(), options);
    let mut c = Conn::open(f.addr());
    let host = c.host();
    let ct = [("Content-Type", "application/json")];
    let n = 400;
    let mut bytes = Vec::new();
    for id in 1..=n {
        let body = rpc(id, "ping", json!({})).to_string();
        bytes.extend(request_bytes(&host, "POST", "/mcp", &ct, body.as_bytes()));
        if id % 50 == 0 {
            bytes.extend(request_bytes(&host, "GET", "/healthz", &[], b""));
        }
    }
    c.send(&bytes);
    thread::sleep(Duration::from_millis(300));
    // Meanwhile others are served.
    let mut other = Conn::open(f.addr());
    assert_ok_result(&other.post_mcp(&rpc(1000, "ping", json!({})), &[]), 1000);
    for id in 1..=n {
        assert_eq!(c.read_response().json()["id"], id);
        if id % 50 == 0 {
            assert_eq!(c.read_response().json()["status"], "ok");
        }
    }
}

/// At the cap on legacy streams, and on dashboard feeds, a new one takes the place of the one
/// idle longest (which hears why before it is closed).
pub fn streams_and_feeds_at_the_cap_close_the_idle_longest(launch: Launcher) {
    let mut options = test_options();
    options.limits.max_legacy_streams = 2;
    let f = start(launch, test_config(), options);
    for (path, first_event) in [("/sse", true), ("/api/events", false)] {
        let open = || {
            let mut c = Conn::open(f.addr());
            c.send_request("GET", path, &[("Accept", "text/event-stream")], b"");
            let head = c.read_stream_head();
            assert_eq!(head.status, 200, "{path}");
            c
        };
        let mut oldest = open();
        if first_event {
            oldest.read_event();
        }
        thread::sleep(Duration::from_millis(20));
        let _second = open();
        thread::sleep(Duration::from_millis(20));
        let _third = open();
        assert!(
            oldest.read_until(b": closed for a newer stream", Duration::from_secs(3)),
            "{path}: {}",
            oldest.pending_text()
        );
        assert!(oldest.closed_within(Duration::from_secs(3)), "{path}");
    }
}

pub fn oversize_body_gets_413(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let mut c = Conn::open(f.addr());
    // Announce a body over the 64 KiB limit: refused from the head alone.
    c.send(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 70000\r\n\r\n{\"jsonrpc\"");
    let r = c.read_response();
    assert_eq!(r.status, 413);
    span(&r);
    assert!(
        c.closed_within(Duration::from_secs(3)),
        "the connection is closed after a 413"
    );
    // Chunked bodies are held to the same limit.
    let mut c = Conn::open(f.addr());
    c.send(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n11170\r\n");
    assert_eq!(c.read_response().status, 413);
    // Others are still served.
    let mut c = Conn::open(f.addr());
    assert_ok_result(&c.post_mcp(&rpc(1, "ping", json!({})), &[]), 1);
}

pub fn oversize_headers_get_431(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let mut c = Conn::open(f.addr());
    let big = "x".repeat(20 * 1024);
    c.send(format!("GET /mcp HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n").as_bytes());
    assert_eq!(c.read_response().status, 431);
    let mut c = Conn::open(f.addr());
    let many: String = (0..100).map(|i| format!("X-H{i}: v\r\n")).collect();
    c.send(format!("GET /mcp HTTP/1.1\r\nHost: x\r\n{many}\r\n").as_bytes());
    assert_eq!(c.read_response().status, 431);
}

pub fn bad_bodies_get_structured_errors(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let mut c = Conn::open(f.addr());
    let ct = ("Content-Type", "application/json");
    for body in [
        &b"\xff\xfe\x00{}"[..],
        b"not json",
        b"{\"jsonrpc\":\"2.0\",",
        b"",
    ] {
        let r = c.request("POST", "/mcp", &[ct], body);
        assert_eq!(r.status, 400, "{body:?}");
        assert_eq!(r.json()["error"]["code"], -32700, "{body:?}");
        span(&r);
    }
    let r = c.request("POST", "/mcp", &[("Content-Type", "text/plain")], b"{}");
    assert_eq!(r.status, 415);
    let batch = json!([rpc(1, "ping", json!({}))]).to_string();
    let r = c.request("POST", "/mcp", &[ct], batch.as_bytes());
    assert!(r.status == 400 || r.status == 200, "{}", r.status);
    assert!(
        r.text().contains("error"),
        "a batch is refused in the default revision: {}",
        r.text()
    );
    let r = c.request("POST", "/mcp", &[ct], br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"bernstein_run","arguments":{"goal":""}}}"#);
    assert_eq!(r.status, 200, "a refused tool call is a tool result");
    assert!(
        r.text().contains("isError") || r.text().contains("error"),
        "{}",
        r.text()
    );
    // The connection survived every refusal.
    assert_ok_result(&c.post_mcp(&rpc(2, "ping", json!({})), &[]), 2);
}

pub fn truncated_body_then_close_leaves_the_server_serving(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let mut c = Conn::open(f.addr());
    c.send(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":");
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert!(c.closed_within(Duration::from_secs(3)));
    assert!(
        c.pending_text().is_empty(),
        "no response to half a request: {}",
        c.pending_text()
    );
    let mut c = Conn::open(f.addr());
    assert_ok_result(&c.post_mcp(&rpc(1, "ping", json!({})), &[]), 1);
}

/// A request whose last bytes come with the client's end of stream is answered, and the
/// server then sees that end (it must not stop reading once a read came back short); a body
/// that comes after a pause, once the head was read, is read when it comes.
pub fn request_then_half_close_is_answered_and_ends(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let mut c = Conn::open(f.addr());
    let host = c.host();
    let bytes = request_bytes(
        &host,
        "POST",
        "/mcp",
        &[("Content-Type", "application/json")],
        rpc(1, "ping", json!({})).to_string().as_bytes(),
    );
    // Corked: the request and the end of stream leave in one segment, so the server sees both
    // in one readiness report and one short read.
    rustix::net::sockopt::set_tcp_cork(&c.stream, true).unwrap();
    c.send(&bytes);
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert_ok_result(&c.read_response(), 1);
    // Well inside the 1.5 s idle timeout, which would close it anyway.
    assert!(
        c.closed_within(Duration::from_millis(700)),
        "the server closes after answering a client that ended its side"
    );

    let mut c = Conn::open(f.addr());
    let body = rpc(2, "ping", json!({})).to_string();
    c.send(format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes());
    std::thread::sleep(Duration::from_millis(100));
    let (a, b) = body.split_at(9);
    c.send(a.as_bytes());
    std::thread::sleep(Duration::from_millis(100));
    c.send(b.as_bytes());
    assert_ok_result(&c.read_response(), 2);
    assert_ok_result(&c.post_mcp(&rpc(3, "ping", json!({})), &[]), 3);
}

pub fn expect_continue_and_chunked_bodies(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let mut c = Conn::open(f.addr());
    let body = rpc(1, "ping", json!({})).to_string();
    let host = c.host();
    c.send(format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes());
    assert_eq!(c.read_response().status, 100);
    c.send(body.as_bytes());
    assert_ok_result(&c.read_response(), 1);
    let body = rpc(2, "ping", json!({})).to_string();
    let (a, b) = body.split_at(7);
    c.send(format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n", a.len()).as_bytes());
    c.send(format!("{:x}\r\n{b}\r\n0\r\n\r\n", b.len()).as_bytes());
    assert_ok_result(&c.read_response(), 2);
}

pub fn slowloris_connections_do_not_starve_others(launch: Launcher) {
    let opts = test_options();
    let timeout = opts.limits.read_timeout;
    let f = start(launch, test_config(), opts);
    // Many more silent connections than workers, and some that stop mid-request.
    let mut idle: Vec<Conn> = (0..40).map(|_| Conn::open(f.addr())).collect();
    let mut partial: Vec<Conn> = (0..6)
        .map(|_| {
            let mut c = Conn::open(f.addr());
            c.send(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: appl");
            c
        })
        .collect();
    thread::sleep(Duration::from_millis(100));
    let t0 = Instant::now();
    for i in 0..5 {
        let mut c = Conn::open(f.addr());
        assert_ok_result(&c.post_mcp(&rpc(i, "ping", json!({})), &[]), i);
    }
    assert!(
        t0.elapsed() < timeout,
        "others are served while idle connections wait: {:?}",
        t0.elapsed()
    );
    let grace = timeout + Duration::from_secs(3);
    for c in &mut idle {
        assert!(
            c.closed_within(grace),
            "an idle connection is closed after the read timeout"
        );
    }
    for c in &mut partial {
        assert!(
            c.closed_within(grace),
            "a stalled request is closed after the read timeout"
        );
        assert!(
            c.pending_text().contains(" 408 "),
            "stalled request gets 408: {:?}",
            c.pending_text()
        );
    }
    let mut c = Conn::open(f.addr());
    assert_ok_result(&c.post_mcp(&rpc(9, "ping", json!({})), &[]), 9);
}

pub fn connection_cap_answers_503(launch: Launcher) {
    let mut opts = test_options();
    opts.limits.max_connections = 3;
    let f = start(launch, test_config(), opts);
    let mut held: Vec<Conn> = (0..3).map(|_| Conn::open(f.addr())).collect();
    for (i, c) in held.iter_mut().enumerate() {
        assert_ok_result(
            &c.post_mcp(&rpc(i as u64, "ping", json!({})), &[]),
            i as u64,
        );
    }
    let mut over = Conn::open(f.addr());
    let r = over.read_response();
    assert_eq!(r.status, 503);
    assert!(r.header("retry-after").is_some());
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let mut c = Conn::open(f.addr());
        c.send_request(
            "POST",
            "/mcp",
            &[("Content-Type", "application/json")],
            rpc(7, "ping", json!({})).to_string().as_bytes(),
        );
        let r = c.read_response();
        if r.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "a freed slot is reused");
        thread::sleep(Duration::from_millis(50));
    }
}

pub fn legacy_sse_round_trip(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let mut stream = Conn::open(f.addr());
    stream.send_request("GET", "/sse", &[("Accept", "text/event-stream")], b"");
    let head = stream.read_stream_head();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    assert!(head.header("x-bernstein-span-id").is_some());
    let endpoint = stream.read_event();
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    assert!(
        endpoint.data.starts_with("/messages?stream="),
        "{}",
        endpoint.data
    );
    let ct = [("Content-Type", "application/json")];
    let mut post = Conn::open(f.addr());
    let r = post.request(
        "POST",
        &endpoint.data,
        &ct,
        initialize(1, "2024-11-05").to_string().as_bytes(),
    );
    assert_eq!(r.status, 202);
    let post_span = span(&r).to_string();
    let ev = stream.read_event();
    assert_eq!(ev.event.as_deref(), Some("message"));
    let id = ev.id.as_deref().unwrap();
    assert_eq!(
        id.split('-').next(),
        Some(post_span.as_str()),
        "the event id starts with the span id"
    );
    assert_ne!(Some(id), endpoint.id.as_deref());
    let msg: Value = serde_json::from_str(&ev.data).unwrap();
    assert_eq!(msg["id"], 1);
    assert_eq!(msg["result"]["protocolVersion"], "2024-11-05");
    let r = post.request(
        "POST",
        &endpoint.data,
        &ct,
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(r.status, 202);
    let r = post.request(
        "POST",
        &endpoint.data,
        &ct,
        rpc(2, "tools/list", json!({})).to_string().as_bytes(),
    );
    assert_eq!(r.status, 202);
    let msg: Value = serde_json::from_str(&stream.read_event().data).unwrap();
    assert_eq!(msg["id"], 2);
    assert!(msg["result"]["tools"].is_array());
    // Unknown tokens and closed streams get 404.
    let r = post.request(
        "POST",
        "/messages?stream=nosuchstream",
        &ct,
        rpc(3, "ping", json!({})).to_string().as_bytes(),
    );
    assert_eq!(r.status, 404);
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let r = post.request(
            "POST",
            &endpoint.data,
            &ct,
            rpc(4, "ping", json!({})).to_string().as_bytes(),
        );
        if r.status == 404 {
            break;
        }
        assert_eq!(r.status, 202);
        assert!(
            Instant::now() < deadline,
            "a closed stream's token is forgotten"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

pub fn bearer_auth_over_the_wire(launch: Launcher) {
    let mut config = test_config();
    config.auth = AuthMode::Bearer {
        token: "tok-123".into(),
    };
    config.oauth = Some(OAuthConfig::new(
        "https://idp.example",
        vec!["bernstein.read".into()],
    ));
    let mut options = test_options();
    options.allowed_hosts = vec!["mcp.test".into()];
    let f = start(launch, config, options);
    let mut c = Conn::open(f.addr());
    let host = ("Host", "mcp.test:8053");
    for auth in [None, Some("Bearer wrong"), Some("Basic tok-123")] {
        let mut headers = vec![host];
        headers.extend(auth.map(|a| ("Authorization", a)));
        let r = c.post_mcp(&rpc(1, "ping", json!({})), &headers);
        assert_eq!(r.status, 401, "{auth:?}");
        let wrong = auth == Some("Bearer wrong");
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(
            body["error"],
            if wrong {
                "invalid_token"
            } else {
                "unauthorized"
            }
        );
        let challenge = "Bearer resource_metadata=\"http://mcp.test:8053/.well-known/oauth-protected-resource/mcp\"";
        let expected = if wrong {
            format!("{challenge}, error=\"invalid_token\"")
        } else {
            challenge.to_string()
        };
        assert_eq!(r.header("www-authenticate"), Some(expected.as_str()));
    }
    assert_ok_result(
        &c.post_mcp(
            &rpc(2, "ping", json!({})),
            &[("Authorization", "Bearer tok-123")],
        ),
        2,
    );
    let r = c.request(
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        &[host, ("X-Forwarded-Proto", "https")],
        b"",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["resource"], "https://mcp.test:8053/mcp");
    assert_eq!(
        r.json()["authorization_servers"],
        json!(["https://idp.example"])
    );
    let r = c.request(
        "GET",
        "/.well-known/oauth-authorization-server",
        &[host],
        b"",
    );
    assert_eq!(r.status, 404);
}

pub fn legacy_session_header_after_the_cutoff(launch: Launcher) {
    let cutoff = Timestamp::LEGACY_SESSION_CUTOFF;
    let before = start_at(
        launch,
        test_config(),
        test_options(),
        Some(Timestamp(cutoff.0 - 86_400_000)),
    );
    let mut c = Conn::open(before.addr());
    // Before the cut-off a session id this server did not issue is not found (the client
    // starts a new session), and there is no session to end.
    let r = c.post_mcp(&rpc(1, "ping", json!({})), &[("Mcp-Session-Id", "s-1")]);
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["data"]["reason"], "session_malformed");
    assert!(r.header("mcp-session-id").is_none());
    let r = c.request("DELETE", "/mcp", &[("Mcp-Session-Id", "s-1")], b"");
    assert_eq!((r.status, r.header("allow")), (405, Some("POST")));

    let after = start_at(launch, test_config(), test_options(), Some(cutoff));
    let mut c = Conn::open(after.addr());
    let r = c.post_mcp(&rpc(1, "ping", json!({})), &[("Mcp-Session-Id", "s-1")]);
    assert_eq!(r.status, 400);
    assert!(r.text().contains("2027-07-28"), "{}", r.text());
    let r = c.request("DELETE", "/mcp", &[("Mcp-Session-Id", "s-1")], b"");
    assert_eq!(r.status, 405);
    assert!(r.text().contains("2027-07-28"), "{}", r.text());
    assert_ok_result(&c.post_mcp(&rpc(2, "ping", json!({})), &[]), 2);
}

/// A handshake-era `initialize` is answered with a sealed session id; another connection's
/// request carrying it is served, a changed one is `404`, and a 2026-07-28 request gets none.
pub fn handshake_session_ids_across_connections(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let init = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}),
    );
    let r = Conn::open(f.addr()).post_mcp(&init, &[]);
    assert_ok_result(&r, 1);
    let session = r
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    assert!(session.bytes().all(|b| (0x21..=0x7e).contains(&b)) && session.len() < 200);
    let pv = ("MCP-Protocol-Version", "2025-11-25");
    let mut other = Conn::open(f.addr());
    let r = other.post_mcp(
        &rpc(2, "ping", json!({})),
        &[pv, ("Mcp-Session-Id", &session)],
    );
    assert_ok_result(&r, 2);
    let mut changed = session.clone().into_bytes();
    changed[0] = if changed[0] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).unwrap();
    let r = other.post_mcp(
        &rpc(3, "ping", json!({})),
        &[pv, ("Mcp-Session-Id", &changed)],
    );
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["id"], 3);
    assert_eq!(r.json()["error"]["data"]["reason"], "session_forged");
    // The connection serves on after the refusal.
    assert_ok_result(&other.post_mcp(&rpc(4, "ping", json!({})), &[pv]), 4);
    let discover = rpc(5, "server/discover", json!({"_meta": modern_meta()}));
    let r = other.post_mcp(
        &discover,
        &[
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "server/discover"),
        ],
    );
    assert_ok_result(&r, 5);
    assert!(r.header("mcp-session-id").is_none());
}

pub fn stateless_era_headers(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let mut c = Conn::open(f.addr());
    let pv = ("MCP-Protocol-Version", MODERN);
    let discover = rpc(1, "server/discover", json!({"_meta": modern_meta()}));
    let r = c.post_mcp(&discover, &[pv, ("Mcp-Method", "server/discover")]);
    let v = assert_ok_result(&r, 1);
    assert!(v["result"]["supportedVersions"].is_array(), "{v}");
    let r = c.post_mcp(&discover, &[pv]);
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (400, Some(-32020))
    );
    let list = rpc(2, "tools/list", json!({"_meta": modern_meta()}));
    let r = c.post_mcp(&list, &[pv, ("Mcp-Method", "tools/list")]);
    assert_ok_result(&r, 2);
    let status = rpc(
        3,
        "tools/call",
        json!({"name": "bernstein_status", "arguments": {}, "_meta": modern_meta()}),
    );
    let r = c.post_mcp(
        &status,
        &[
            pv,
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "bernstein_run"),
        ],
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (400, Some(-32020))
    );
    let r = c.post_mcp(
        &status,
        &[
            pv,
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "=?base64?YmVybnN0ZWluX3N0YXR1cw==?="),
        ],
    );
    assert_ok_result(&r, 3);
    let unknown = rpc(4, "nope/nope", json!({"_meta": modern_meta()}));
    let r = c.post_mcp(&unknown, &[pv, ("Mcp-Method", "nope/nope")]);
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (404, Some(-32601))
    );
    let r = c.post_mcp(
        &list,
        &[
            ("MCP-Protocol-Version", "1999-01-01"),
            ("Mcp-Method", "tools/list"),
        ],
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (400, Some(-32022))
    );
}

pub fn get_and_unknown_paths(launch: Launcher) {
    let f = start(launch, test_config(), test_options());
    let mut c = Conn::open(f.addr());
    let r = c.request("GET", "/mcp", &[("Accept", "text/event-stream")], b"");
    assert_eq!((r.status, r.header("allow")), (405, Some("POST")));
    span(&r);
    assert_eq!(c.request("GET", "/nope", &[], b"").status, 404);
    let r = c.post_mcp(
        &rpc(1, "ping", json!({})),
        &[("Origin", "https://evil.example")],
    );
    assert_eq!(r.status, 403);
    assert_ok_result(
        &c.post_mcp(
            &rpc(2, "ping", json!({})),
            &[("Origin", "http://localhost:6274")],
        ),
        2,
    );
    assert_eq!(
        c.request("GET", "/.well-known/oauth-protected-resource", &[], b"")
            .status,
        404
    );
}

pub fn foreign_hosts_are_refused_on_every_route(launch: Launcher) {
    let mut config = test_config();
    config.oauth = Some(OAuthConfig::new(
        "https://idp.example",
        vec!["bernstein.read".into()],
    ));
    let mut options = test_options();
    options.allowed_hosts = vec!["mcp.allowed.example".into()];
    let f = start(launch, config, options);
    let port = f.addr().port();
    let ct = ("Content-Type", "application/json");
    let body = rpc(1, "ping", json!({})).to_string();
    let routes = [
        ("POST", "/mcp"),
        ("GET", "/sse"),
        ("POST", "/messages?stream=00112233445566778899aabbccddeeff"),
        ("GET", "/.well-known/oauth-protected-resource"),
        ("GET", "/.well-known/oauth-protected-resource/mcp"),
        ("GET", "/elsewhere"),
    ];
    let foreign = format!("rebind.attacker.example:{port}");
    for (method, path) in routes {
        for host in [
            foreign.as_str(),
            "localhost:1",
            "mcp.allowed.example.evil:80",
        ] {
            let mut c = Conn::open(f.addr());
            let r = c.request(method, path, &[("Host", host), ct], body.as_bytes());
            assert_eq!(r.status, 421, "{method} {path} {host}: {}", r.text());
            assert_eq!(r.json()["error"]["code"], -32600);
            assert!(!r.text().contains("attacker"), "{}", r.text());
            assert!(c.closed_within(Duration::from_secs(3)));
        }
        // HTTP/1.1 without Host, and with two.
        let mut c = Conn::open(f.addr());
        c.send(format!("{method} {path} HTTP/1.1\r\nContent-Length: 0\r\n\r\n").as_bytes());
        let r = c.read_response();
        assert_eq!(r.status, 400, "{method} {path}");
        assert!(r.text().contains("Host"), "{}", r.text());
        let mut c = Conn::open(f.addr());
        let h = c.host();
        c.send(format!("{method} {path} HTTP/1.1\r\nHost: {h}\r\nHost: {h}\r\n\r\n").as_bytes());
        assert_eq!(c.read_response().status, 400, "{method} {path}");
    }
    // Allowed names work, and URLs name them (never a foreign host).
    let mut c = Conn::open(f.addr());
    for (host, want) in [
        (
            "MCP.allowed.example:9443".to_string(),
            "http://mcp.allowed.example:9443/mcp".to_string(),
        ),
        (
            format!("localhost:{port}"),
            format!("http://localhost:{port}/mcp"),
        ),
    ] {
        let r = c.request(
            "GET",
            "/.well-known/oauth-protected-resource/mcp",
            &[("Host", &host)],
            b"",
        );
        assert_eq!(r.status, 200, "{host}");
        assert_eq!(r.json()["resource"], want);
        assert_ok_result(
            &c.post_mcp(&rpc(2, "ping", json!({})), &[("Host", &host)]),
            2,
        );
    }
    // HTTP/1.0 without Host is taken as aimed at the bind address.
    let mut c = Conn::open(f.addr());
    c.send(b"GET /.well-known/oauth-protected-resource HTTP/1.0\r\n\r\n");
    let r = c.read_response();
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["resource"], format!("http://{}", f.addr()));
}

pub fn idle_legacy_streams_close_and_free_the_cap(launch: Launcher) {
    let mut options = test_options();
    options.limits.sse_keepalive = Duration::from_millis(200);
    options.limits.sse_idle = Duration::from_millis(1500);
    options.limits.max_legacy_streams = 2;
    let f = start(launch, test_config(), options);
    let open = || {
        let mut c = Conn::open(f.addr());
        c.send_request("GET", "/sse", &[("Accept", "text/event-stream")], b"");
        let head = c.read_stream_head();
        (c, head.status)
    };
    let (mut idle, status) = open();
    assert_eq!(status, 200);
    idle.read_event();
    let (mut busy, status) = open();
    assert_eq!(status, 200);
    let endpoint = busy.read_event().data;
    assert!(
        idle.read_until(b": keep-alive\n\n", Duration::from_secs(2)),
        "an idle stream gets keep-alives: {}",
        idle.pending_text()
    );
    // Messages keep the busy stream open past the idle timeout of the other.
    let mut post = Conn::open(f.addr());
    let t0 = Instant::now();
    let mut id = 0;
    while t0.elapsed() < Duration::from_millis(2500) {
        id += 1;
        let r = post.request(
            "POST",
            &endpoint,
            &[("Content-Type", "application/json")],
            rpc(id, "ping", json!({})).to_string().as_bytes(),
        );
        assert_eq!(r.status, 202, "stream {id} still open");
        let msg: Value = serde_json::from_str(&busy.read_event().data).unwrap();
        assert_eq!(msg["id"], id);
        thread::sleep(Duration::from_millis(300));
    }
    assert!(
        idle.closed_within(Duration::from_secs(3)),
        "the idle stream is closed"
    );
    assert!(
        idle.pending_text().contains(": idle timeout"),
        "{}",
        idle.pending_text()
    );
    let (mut fresh, status) = open();
    assert_eq!(status, 200, "a new stream takes the freed place");
    fresh.read_event();
    drop(fresh);
    assert!(busy.closed_within(Duration::from_secs(4)), "idle at last");
    // A stream whose peer left is released at the next keep-alive, well before it would idle.
    let (mut gone, status) = open();
    assert_eq!(status, 200);
    gone.read_event();
    drop(gone);
    let deadline = Instant::now() + Duration::from_millis(1000);
    let mut reopened = false;
    while !reopened && Instant::now() < deadline {
        let (mut a, sa) = open();
        let (_b, sb) = open();
        reopened = sa == 200 && sb == 200;
        if sa == 200 {
            a.read_event();
        }
        thread::sleep(Duration::from_millis(100));
    }
    assert!(reopened, "both places free again");
}

/// Twice as many long polls as workers wait at once (a waiting answer holds no worker), other
/// requests are answered meanwhile, and a write to the run they wait on answers every one of
/// them long before their deadline.
pub fn waits_beyond_the_workers_are_woken_by_a_write(launch: Launcher) {
    let opts = test_options();
    let polls = opts.limits.workers * 2;
    let f = start(launch, test_config(), opts);
    let mut c = Conn::open(f.addr());
    let r = c.post_mcp(&call(1, "bernstein_run", json!({"goal": "wait"})), &[]);
    let run = assert_ok_result(&r, 1)["result"]["structuredContent"]["result"]["run_id"]
        .as_str()
        .expect("run_id")
        .to_string();
    let mut waiting: Vec<Conn> = (0..polls)
        .map(|i| {
            let mut w = Conn::open(f.addr());
            let poll = call(
                10 + i as u64,
                "bernstein_run_status",
                json!({"run_id": run, "wait_ms": 60_000}),
            );
            let headers = [
                ("Content-Type", "application/json"),
                ("Accept", "application/json"),
            ];
            let bytes = request_bytes(
                &w.host(),
                "POST",
                "/mcp",
                &headers,
                poll.to_string().as_bytes(),
            );
            w.send(&bytes);
            w
        })
        .collect();
    let waits = |c: &mut Conn| {
        let r = c.request("GET", "/metrics", &[], b"");
        r.text()
            .lines()
            .find_map(|l| l.strip_prefix("bernstein_waits_in_flight "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0) as usize
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while waits(&mut c) < polls && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(waits(&mut c), polls, "every poll waits at once");
    let t0 = Instant::now();
    let r = c.post_mcp(&rpc(2, "tools/list", json!({})), &[]);
    assert_ok_result(&r, 2);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let r = c.post_mcp(&call(3, "bernstein_cancel", json!({"task_id": run})), &[]);
    assert_ok_result(&r, 3);
    for (i, w) in waiting.iter_mut().enumerate() {
        let r = w.read_response();
        let v = assert_ok_result(&r, 10 + i as u64);
        assert_eq!(
            v["result"]["structuredContent"]["result"]["status"], "cancelled",
            "{v}"
        );
    }
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "the write woke the polls: {:?}",
        t0.elapsed()
    );
}
