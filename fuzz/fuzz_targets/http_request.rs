//! The sans-IO HTTP/1.1 layer: arbitrary bytes fed to `RequestParser` whole and in fuzzed
//! chunks (the frames must not depend on how the bytes arrived), then every framed request
//! routed by `HttpPolicy::route` (anonymous and bearer policies, loopback peers or not) and,
//! when it is an MCP exchange, served by the engine against the fixture snapshot and turned
//! into the HTTP reply; an operator route's pure answer (overview, task, pasted check) is
//! computed on the fixture ledger; the handshake-era session-id parser reads the input whole and
//! every framed request's `Mcp-Session-Id` (the router reads it too).
//! Invariants: no panic; chunking never changes frames (but `Continue`); nothing after a fatal error; bodies
//! within the limit; every response is a well-formed HTTP/1.1 head whose header values hold no
//! CR or LF and whose `Content-Length` is the body length; MCP bodies obey the engine
//! invariants of `bernstein_fuzz::invariants`; a session id opens only if it seals back to
//! itself.
#![no_main]

use std::sync::OnceLock;

use bernstein_core::config::{AuthMode, Config, Tier};
use bernstein_domain::dashboard::{self, ServerFacts, verify::PastedCheck};
use bernstein_core::ledger::StoreFacts;
use bernstein_domain::bound::Input;
use bernstein_core::transport::http::{
    Decision, Frame, HttpOptions, HttpPolicy, HttpResponse, OperatorRoute, ParserLimits,
    RequestParser, ServedParts, session,
};
use bernstein_fuzz::{fixture, invariants};
use libfuzzer_sys::fuzz_target;

/// The dashboard's pure answers on the fixture ledger: never a panic, whatever the query or
/// the pasted text (a pasted check replays the fixture's ledger lines).
fn operator(route: OperatorRoute) {
    let snapshot = fixture::snapshot();
    match route {
        OperatorRoute::Overview { window_s } => {
            let facts = ServerFacts {
                version: "0",
                read_only: false,
                store: StoreFacts::default(),
                signed_head: None,
            };
            let v = dashboard::overview(snapshot, &facts, fixture::NOW, window_s);
            assert_eq!(v["window_s"], window_s);
        }
        OperatorRoute::Task { id } => {
            if let Some(v) = dashboard::task(&snapshot.domain, &id, None) {
                assert_eq!(v["task"]["id"], id.as_str());
            }
        }
        OperatorRoute::Verify { pasted } => {
            let key = fixture::audit_key();
            let Ok(mut check) =
                PastedCheck::new(&pasted, &snapshot.domain, "ledger", Some(&key), None)
            else {
                return;
            };
            for line in fixture::ledger_lines() {
                if !check.wants_lines() {
                    break;
                }
                check.push_line(line);
            }
            let verdict = check.finish();
            assert!(verdict["valid"].is_boolean() && verdict["summary"].is_string());
        }
        _ => {}
    }
}

fn policies() -> &'static [HttpPolicy; 2] {
    static P: OnceLock<[HttpPolicy; 2]> = OnceLock::new();
    P.get_or_init(|| {
        let options = HttpOptions::default();
        let open = Config::new(fixture::audit_key());
        let mut bearer = Config::new(fixture::audit_key());
        bearer.tier = Tier::All;
        bearer.auth = AuthMode::Bearer {
            token: "s3cret-token".into(),
        };
        let remote = HttpOptions {
            host: "0.0.0.0".into(),
            ..HttpOptions::default()
        };
        [
            HttpPolicy::new(&open, &options, "127.0.0.1:8053", true).expect("loopback bind"),
            HttpPolicy::new(&bearer, &remote, "0.0.0.0:8053", false).expect("bearer bind"),
        ]
    })
}

/// The session-id parser on arbitrary header bytes: never a panic, and an id that opens is the
/// one its session seals to (so nothing but a sealed id opens).
fn session_id(raw: &[u8]) {
    static KEY: OnceLock<Vec<u8>> = OnceLock::new();
    let key = KEY.get_or_init(|| Config::new(fixture::audit_key()).session_key);
    if let Ok(s) = session::open(key, raw, fixture::NOW) {
        assert_eq!(session::issue(key, &s, s.issued).as_deref().map(str::as_bytes), Some(raw));
    }
}

fn frames(limits: ParserLimits, chunks: &[&[u8]]) -> Vec<Frame> {
    let mut parser = RequestParser::new(limits);
    let mut out = Vec::new();
    for chunk in chunks {
        parser.handle_bytes(chunk);
        while let Some(f) = parser.poll_frame() {
            out.push(f);
        }
    }
    out
}

fn assert_http(response: &HttpResponse) {
    for (name, value) in &response.headers {
        assert!(
            !value.contains(['\r', '\n']) && !name.contains(['\r', '\n', ':']),
            "header injection: {name}: {value:?}"
        );
    }
    let bytes = response.to_bytes();
    assert!(bytes.starts_with(b"HTTP/1.1 "));
    let code = &bytes[9..12];
    assert!(code.iter().all(u8::is_ascii_digit) && (b'1'..=b'5').contains(&code[0]));
    let head_end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    assert_eq!(bytes.len() - head_end, response.body.len());
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let limits = if selector & 1 == 0 {
        ParserLimits::default()
    } else {
        ParserLimits {
            max_header_bytes: 512,
            max_headers: 8,
            max_body_bytes: 1024,
        }
    };
    session_id(rest);
    let step = usize::from(selector >> 2).max(1);
    let whole = frames(limits, &[rest]);
    let chunked: Vec<&[u8]> = rest.chunks(step).collect();
    // `Continue` depends on arrival (it is only due while the body is still missing).
    let no_continue = |f: Vec<Frame>| {
        f.into_iter()
            .filter(|f| *f != Frame::Continue)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        no_continue(whole.clone()),
        no_continue(frames(limits, &chunked)),
        "chunking changed the frames"
    );
    if let Some(i) = whole.iter().position(|f| matches!(f, Frame::Error(_))) {
        assert_eq!(i, whole.len() - 1, "a frame after a fatal error");
    }

    let policy = &policies()[usize::from(selector >> 1) & 1];
    let peer_loopback = selector & 2 == 0;
    let server = fixture::server();
    for frame in whole {
        let request = match frame {
            Frame::Request(r) => r,
            Frame::Continue => continue,
            Frame::Error(e) => {
                assert_http(&e.response());
                continue;
            }
        };
        assert!(request.body.len() <= limits.max_body_bytes);
        if let Some(raw) = request.header("mcp-session-id") {
            session_id(raw);
        }
        match policy.route(request, peer_loopback, fixture::NOW) {
            Decision::Respond(r) => assert_http(&r),
            Decision::Mcp(exchange) => {
                let outcome = invariants::handle_checked(
                    server,
                    &Input {
                        bytes: exchange.message.bytes(),
                        snapshot: fixture::snapshot(),
                        now: fixture::NOW,
                        transport: &exchange.facts,
                    },
                    true,
                );
                let reply = outcome
                    .response
                    .as_ref()
                    .map(|r| r.render(invariants::LATENCY_MS));
                let span = outcome.response.as_ref().map(|r| r.span_id.clone());
                let kind = outcome
                    .response
                    .as_ref()
                    .map(|r| r.kind())
                    .unwrap_or_default();
                assert_http(&exchange.reply(ServedParts {
                    notifications: &outcome.notifications,
                    response: reply.as_deref(),
                    kind,
                    span_id: span.as_deref(),
                }));
            }
            Decision::OpenLegacyStream(open) => {
                assert!(!open.head().is_empty());
                assert!(!open.endpoint_event("tok_1").is_empty());
            }
            Decision::LegacyMessage(message) => {
                assert_http(&message.accepted(None));
                assert_http(&message.stream_gone());
            }
            Decision::Operator(op) => operator(op.route),
            _ => {}
        }
    }
});
