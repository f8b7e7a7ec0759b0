//! Routing decisions: the auth matrix, discovery, forged headers, origins, the legacy session
//! rule on both sides of the cut-off, body and header checks.

use serde_json::{Value, json};

use super::*;
use crate::transport::http::request::Header;

const TOKEN: &str = "s3cret-token";

fn config(auth: AuthMode, issuer: bool) -> Config {
    let mut c = Config::new(b"k".to_vec());
    c.auth = auth;
    if issuer {
        c.oauth = Some(OAuthConfig::new(
            "https://idp.example",
            vec!["bernstein.read".into(), "bernstein.write".into()],
        ));
    }
    c
}

fn policy(auth: AuthMode, issuer: bool, public: bool) -> HttpPolicy {
    let host = if public { "0.0.0.0" } else { "127.0.0.1" };
    let opts = HttpOptions {
        host: host.into(),
        port: 8053,
        allowed_hosts: vec!["mcp.example.com".into()],
        ..HttpOptions::default()
    };
    HttpPolicy::new(
        &config(auth, issuer),
        &opts,
        &format!("{host}:8053"),
        !public,
    )
    .expect("valid bind")
}

fn local() -> HttpPolicy {
    policy(AuthMode::None, false, false)
}

fn bearer() -> AuthMode {
    AuthMode::Bearer {
        token: TOKEN.into(),
    }
}

fn req(method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Request {
    let mut hs: Vec<Header> = vec![Header {
        name: "host".into(),
        value: b"127.0.0.1:8053".to_vec(),
    }];
    for (n, v) in headers {
        let name = n.to_ascii_lowercase();
        hs.retain(|h| !(name == "host" && h.name == "host"));
        hs.push(Header {
            name,
            value: v.as_bytes().to_vec(),
        });
    }
    Request {
        method: method.into(),
        target: target.into(),
        version: 1,
        headers: hs,
        body: body.to_vec(),
    }
}

const JSON: (&str, &str) = ("Content-Type", "application/json");
const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

fn post(headers: &[(&str, &str)], body: &[u8]) -> Request {
    req("POST", "/mcp", &[&[JSON][..], headers].concat(), body)
}

fn now() -> Timestamp {
    Timestamp(1_800_000_000_000)
}

fn response(d: Decision) -> HttpResponse {
    match d {
        Decision::Respond(r) => {
            assert!(
                r.span_id().is_some_and(|s| !s.is_empty()),
                "every response carries a span id: {r:?}"
            );
            r
        }
        other => panic!("expected an immediate response, got {other:?}"),
    }
}

fn status(d: Decision) -> u16 {
    response(d).status.code()
}

fn body_json(r: &HttpResponse) -> Value {
    serde_json::from_slice(&r.body).expect("JSON body")
}

fn is_mcp(d: &Decision) -> bool {
    matches!(d, Decision::Mcp(_))
}

#[test]
fn public_bind_without_token_is_refused_at_startup() {
    let opts = HttpOptions {
        host: "0.0.0.0".into(),
        ..HttpOptions::default()
    };
    let err =
        HttpPolicy::new(&config(AuthMode::None, false), &opts, "0.0.0.0:8053", false).unwrap_err();
    assert!(err.to_string().contains("0.0.0.0"));
}

#[test]
fn auth_matrix_over_binds_and_tokens() {
    for public in [false, true] {
        for peer_loopback in [true, false] {
            if !public && !peer_loopback {
                continue; // a loopback bind only sees loopback peers
            }
            let p = policy(bearer(), false, public);
            let cases: [(Option<&str>, bool); 4] = [
                (None, false),
                (Some("Bearer wrong"), false),
                (Some("Basic d3Jvbmc="), false),
                (Some(&format!("Bearer {TOKEN}")), true),
            ];
            for (auth, ok) in cases {
                let mut hs = vec![];
                if let Some(a) = auth {
                    hs.push(("Authorization", a));
                }
                let d = p.route(post(&hs, LIST), peer_loopback, now());
                if ok {
                    assert!(is_mcp(&d), "public={public} auth={auth:?}");
                    continue;
                }
                let r = response(d);
                assert_eq!(r.status.code(), 401, "public={public} auth={auth:?}");
                // RFC 6750: a wrong bearer token is invalid_token; no token (or another
                // scheme) gets the bare challenge.
                let wrong = auth.is_some_and(|a| a.starts_with("Bearer"));
                let body = body_json(&r);
                assert_eq!(
                    body["error"],
                    if wrong {
                        "invalid_token"
                    } else {
                        "unauthorized"
                    }
                );
                let description = body["error_description"].as_str().unwrap();
                assert!(
                    description.contains("BERNSTEIN_MCP_TOKEN")
                        && description.contains("Authorization: Bearer")
                        && !description.contains("  "),
                    "{description}"
                );
                assert_eq!(
                    r.header("www-authenticate"),
                    Some(if wrong {
                        "Bearer realm=\"bernstein\", error=\"invalid_token\""
                    } else {
                        "Bearer realm=\"bernstein\""
                    }),
                    "public={public} auth={auth:?}"
                );
            }
        }
    }
    // Anonymous on loopback.
    assert!(is_mcp(&local().route(post(&[], LIST), true, now())));
    // Anonymous from a non-loopback peer (e.g. a proxy in front) is refused.
    assert_eq!(status(local().route(post(&[], LIST), false, now())), 401);
}

#[test]
fn discovery_when_an_issuer_is_set() {
    let p = policy(bearer(), true, true);
    let host = ("Host", "mcp.example.com");
    let r = response(p.route(
        req(
            "GET",
            "/.well-known/oauth-protected-resource/mcp",
            &[host, ("X-Forwarded-Proto", "https")],
            b"",
        ),
        false,
        now(),
    ));
    assert_eq!(r.status.code(), 200, "metadata needs no token");
    assert_eq!(
        body_json(&r),
        json!({"resource":"https://mcp.example.com/mcp","authorization_servers":["https://idp.example"],
               "scopes_supported":["bernstein.read","bernstein.write"],"bearer_methods_supported":["header"]})
    );
    let root = response(p.route(
        req("GET", "/.well-known/oauth-protected-resource", &[host], b""),
        false,
        now(),
    ));
    assert_eq!(body_json(&root)["resource"], "http://mcp.example.com");
    let r = response(p.route(
        post(&[host, ("X-Forwarded-Proto", "https")], LIST),
        false,
        now(),
    ));
    assert_eq!(r.status.code(), 401);
    assert_eq!(
        r.header("www-authenticate"),
        Some(
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\""
        )
    );
    let wrong = response(p.route(
        post(
            &[
                host,
                ("X-Forwarded-Proto", "https"),
                ("Authorization", "Bearer nope"),
            ],
            LIST,
        ),
        false,
        now(),
    ));
    assert_eq!(
        wrong.header("www-authenticate"),
        Some(
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", error=\"invalid_token\""
        )
    );
    assert_eq!(body_json(&wrong)["error"], "invalid_token");
    assert_eq!(
        status(p.route(
            req("GET", "/.well-known/oauth-authorization-server", &[], b""),
            false,
            now()
        )),
        404
    );
    assert_eq!(
        status(p.route(
            req("POST", "/.well-known/oauth-protected-resource", &[], b""),
            false,
            now()
        )),
        405
    );
}

#[test]
fn no_discovery_without_an_issuer() {
    let p = policy(bearer(), false, true);
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
    ] {
        assert_eq!(
            status(p.route(req("GET", path, &[], b""), false, now())),
            404,
            "{path}"
        );
    }
}

#[test]
fn forged_host_and_proto_never_reach_a_url() {
    let p = policy(bearer(), true, true);
    for bad in ["evil.com/\"x", "a b", "user@evil.com", "evil.com:80:80"] {
        let r = response(p.route(post(&[("Host", bad)], LIST), false, now()));
        assert_eq!(r.status.code(), 400, "{bad}");
        assert!(r.header("www-authenticate").is_none());
    }
    let r = response(p.route(
        post(&[("X-Forwarded-Proto", "javascript")], LIST),
        false,
        now(),
    ));
    assert_eq!(
        r.header("www-authenticate"),
        Some(
            "Bearer resource_metadata=\"http://127.0.0.1:8053/.well-known/oauth-protected-resource/mcp\""
        )
    );
    let mut two_hosts = post(&[], LIST);
    two_hosts.headers.push(Header {
        name: "host".into(),
        value: b"other".to_vec(),
    });
    assert_eq!(status(p.route(two_hosts, false, now())), 400);
}

#[test]
fn origins_are_checked_before_anything_else() {
    let p = local();
    assert!(is_mcp(&p.route(
        post(&[("Origin", "http://localhost:6274")], LIST),
        true,
        now()
    )));
    let r = response(p.route(
        post(&[("Origin", "https://evil.example")], LIST),
        true,
        now(),
    ));
    assert_eq!(r.status.code(), 403);
    assert_eq!(body_json(&r)["id"], Value::Null);
    let opts = HttpOptions {
        allowed_origins: vec!["https://app.example".into()],
        ..HttpOptions::default()
    };
    let p = HttpPolicy::new(
        &config(AuthMode::None, false),
        &opts,
        "127.0.0.1:8053",
        true,
    )
    .unwrap();
    assert!(is_mcp(&p.route(
        post(&[("Origin", "https://app.example")], LIST),
        true,
        now()
    )));
}

#[test]
fn legacy_session_header_both_sides_of_the_cutoff() {
    let before = Timestamp(Timestamp::LEGACY_SESSION_CUTOFF.0 - 1);
    let after = Timestamp::LEGACY_SESSION_CUTOFF;
    let p = local();
    let token = sealed(&p, before);
    let with = || post(&[("Mcp-Session-Id", &token)], LIST);
    match p.route(with(), true, before) {
        Decision::Mcp(x) => assert_eq!(x.session.map(|s| s.id), Some(7)),
        other => panic!("{other:?}"),
    }
    let r = response(p.route(with(), true, after));
    assert_eq!(r.status.code(), 400);
    assert!(
        body_json(&r)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2027-07-28")
    );
    assert!(r.header("mcp-session-id").is_none());

    // Nothing to end: 405 on both sides of the cut-off, naming why.
    let delete = || req("DELETE", "/mcp", &[("Mcp-Session-Id", &token)], b"");
    let r = response(p.route(delete(), true, before));
    assert_eq!((r.status.code(), r.header("allow")), (405, Some("POST")));
    assert!(String::from_utf8(r.body).unwrap().contains("24 h"));
    let r = response(p.route(delete(), true, after));
    assert_eq!(r.status.code(), 405);
    assert!(String::from_utf8(r.body).unwrap().contains("2027-07-28"));
    let modern = req(
        "DELETE",
        "/mcp",
        &[("MCP-Protocol-Version", "2026-07-28")],
        b"",
    );
    assert_eq!(status(p.route(modern, true, before)), 405);
}

/// A session id `p`'s server issued at `at`: elicitation and sampling, 2025-06-18, nonce 7.
fn sealed(p: &HttpPolicy, at: Timestamp) -> String {
    let s = session::Session {
        id: 7,
        caps: crate::protocol::input::ClientCaps {
            elicitation: true,
            sampling: true,
            roots: false,
        },
        revision: crate::protocol::era::Revision::V2025_06_18,
        issued: at,
    };
    session::issue(&p.session_key, &s, at).unwrap()
}

#[test]
fn a_session_id_opens_to_what_initialize_declared_or_is_refused() {
    let p = local();
    let token = sealed(&p, now());
    let with = |v: &str, body: &[u8]| post(&[("Mcp-Session-Id", v)], body);
    match p.route(with(&token, LIST), true, now()) {
        Decision::Mcp(x) => {
            let s = x.session.unwrap();
            assert!(s.caps.elicitation && s.caps.sampling && !s.caps.roots);
            // No MCP-Protocol-Version header: the revision initialize negotiated.
            assert_eq!(x.facts.protocol_version.as_deref(), Some("2025-06-18"));
        }
        other => panic!("{other:?}"),
    }
    // The header's version wins over the token's.
    let versioned = post(
        &[
            ("Mcp-Session-Id", &token),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        LIST,
    );
    match p.route(versioned, true, now()) {
        Decision::Mcp(x) => {
            assert_eq!(x.facts.protocol_version.as_deref(), Some("2025-11-25"));
        }
        other => panic!("{other:?}"),
    }
    // Forged, foreign, expired: 404 with a JSON-RPC error naming why, the request's id kept.
    let another_instance = local();
    let foreign = {
        let mut c = config(AuthMode::None, false);
        c.session_key = crate::config::session_key(b"another server");
        let q = HttpPolicy::new(&c, &HttpOptions::default(), "127.0.0.1:8053", true).unwrap();
        sealed(&q, now())
    };
    let expired = Timestamp(now().0 + session::EXPIRY_MS);
    let cases = [
        (p.route(with("s-1", LIST), true, now()), "session_malformed"),
        (p.route(with(&foreign, LIST), true, now()), "session_forged"),
        (
            p.route(with(&token, LIST), true, expired),
            "session_expired",
        ),
    ];
    for (decision, reason) in cases {
        let r = response(decision);
        assert_eq!(r.status.code(), 404, "{reason}");
        let v = body_json(&r);
        assert_eq!(v["id"], 1);
        assert_eq!(v["error"]["code"], -32600);
        assert_eq!(v["error"]["data"]["reason"], reason);
    }
    // A server with the same audit key accepts it (instances over one ledger).
    assert!(matches!(
        another_instance.route(with(&token, LIST), true, now()),
        Decision::Mcp(_)
    ));
    // Not visible ASCII: 400.
    let mut bad = with(&token, LIST);
    bad.headers.last_mut().unwrap().value = b"caf\xc3\xa9".to_vec();
    let r = response(p.route(bad, true, now()));
    assert_eq!(r.status.code(), 400);
    assert_eq!(
        body_json(&r)["error"]["data"]["reason"],
        "session_id_invalid_characters"
    );
}

#[test]
fn initialize_and_the_stateless_era_ignore_a_session_id() {
    let p = local();
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
    match p.route(post(&[("Mcp-Session-Id", "stale")], init), true, now()) {
        Decision::Mcp(x) => assert_eq!(x.session, None),
        other => panic!("{other:?}"),
    }
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let body =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{meta}}}}}"#);
    let modern = post(
        &[
            ("Mcp-Session-Id", "not-a-token"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ],
        body.as_bytes(),
    );
    match p.route(modern, true, now()) {
        Decision::Mcp(x) => assert_eq!(x.session, None),
        other => panic!("{other:?}"),
    }
}

#[test]
fn methods_and_paths() {
    let p = local();
    let r = response(p.route(
        req("GET", "/mcp", &[("Accept", "text/event-stream")], b""),
        true,
        now(),
    ));
    assert_eq!((r.status.code(), r.header("allow")), (405, Some("POST")));
    assert_eq!(
        status(p.route(req("PUT", "/mcp", &[], b""), true, now())),
        405
    );
    assert_eq!(
        status(p.route(req("GET", "/nope", &[], b""), true, now())),
        404
    );
    assert!(matches!(
        p.route(req("GET", "/sse", &[], b""), true, now()),
        Decision::OpenLegacyStream(_)
    ));
    assert!(is_mcp(&p.route(
        req("POST", "/mcp/", &[JSON], LIST),
        true,
        now()
    )));
}

#[test]
fn bodies_and_content_types() {
    let p = local();
    assert_eq!(
        status(p.route(
            req("POST", "/mcp", &[("Content-Type", "text/plain")], LIST),
            true,
            now()
        )),
        415
    );
    assert_eq!(
        status(p.route(req("POST", "/mcp", &[], LIST), true, now())),
        415
    );
    assert!(is_mcp(&p.route(
        req(
            "POST",
            "/mcp",
            &[("Content-Type", "Application/JSON; charset=utf-8")],
            LIST
        ),
        true,
        now()
    )));
    for bad in [&b"\xff\xfe{}"[..], b"{\"jsonrpc\":", b"", b"not json"] {
        let r = response(p.route(post(&[], bad), true, now()));
        assert_eq!(r.status.code(), 400, "{bad:?}");
        assert_eq!(body_json(&r)["error"]["code"], -32700);
    }
    // Arrays reach the engine, which knows which revisions allow batches.
    assert!(is_mcp(&p.route(post(&[], b"[]"), true, now())));
    assert_eq!(
        status(p.route(post(&[("Accept", "text/html")], LIST), true, now())),
        406
    );
    // A notification needs no acceptable reply type: it gets none.
    assert!(is_mcp(&p.route(
        post(
            &[("Accept", "text/html")],
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        ),
        true,
        now()
    )));
}

#[test]
fn protocol_headers() {
    let p = local();
    let r = response(p.route(
        post(&[("MCP-Protocol-Version", "2099-01-01")], LIST),
        true,
        now(),
    ));
    assert_eq!(r.status.code(), 400);
    assert_eq!(body_json(&r)["error"]["code"], -32022);
    assert_eq!(body_json(&r)["id"], 1);
    let modern = br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let r = response(p.route(
        post(&[("MCP-Protocol-Version", "2026-07-28")], modern),
        true,
        now(),
    ));
    assert_eq!(body_json(&r)["error"]["code"], -32020);
    assert_eq!(body_json(&r)["id"], 7);
    match p.route(
        post(
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/list"),
            ],
            modern,
        ),
        true,
        now(),
    ) {
        Decision::Mcp(x) => {
            assert_eq!(x.era, Era::Stateless);
            assert_eq!(x.facts.protocol_version.as_deref(), Some("2026-07-28"));
            assert_eq!(x.facts.kind, TransportKind::StreamableHttp);
            assert!(x.facts.loopback);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn legacy_messages() {
    let p = local();
    match p.route(
        req("POST", "/messages?stream=abc_1", &[JSON], LIST),
        true,
        now(),
    ) {
        Decision::LegacyMessage(m) => {
            assert_eq!(m.token, "abc_1");
            assert_eq!(m.facts.kind, TransportKind::LegacySse);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        status(p.route(req("POST", "/messages", &[JSON], LIST), true, now())),
        404
    );
    assert_eq!(
        status(p.route(
            req("POST", "/messages?stream=a/b", &[JSON], LIST),
            true,
            now()
        )),
        404
    );
    assert_eq!(
        status(p.route(
            req("POST", "/messages?stream=abc", &[JSON], b"{"),
            true,
            now()
        )),
        400
    );
    assert_eq!(
        status(p.route(req("POST", "/messages?stream=abc", &[], LIST), true, now())),
        415
    );
    assert_eq!(
        status(p.route(req("GET", "/messages?stream=abc", &[], b""), true, now())),
        405
    );
}

#[test]
fn connection_close_is_honoured_on_immediate_answers() {
    let r = response(local().route(
        req("GET", "/nope", &[("Connection", "close")], b""),
        true,
        now(),
    ));
    assert!(r.close);
}

proptest::proptest! {
    #[test]
    fn arbitrary_requests_never_panic(
        method in "(GET|POST|DELETE|PUT|OPTIONS|[A-Z]{1,8})",
        target in "(/mcp|/sse|/messages\\?stream=[a-z0-9/_-]{0,12}|/\\.well-known/[a-z/-]{0,40}|/[ -~]{0,20})",
        headers in proptest::collection::vec(
            ("(host|origin|authorization|content-type|accept|mcp-protocol-version|mcp-method|mcp-name|mcp-session-id|x-forwarded-proto|connection|[a-z-]{1,12})",
             proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)),
            0..8),
        body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
        json_body in proptest::bool::ANY,
        peer_loopback in proptest::bool::ANY,
        issuer in proptest::bool::ANY,
        at in 0u64..4_000_000_000_000,
    ) {
        let p = policy(bearer(), issuer, true);
        let body = if json_body {
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#.to_vec()
        } else {
            body
        };
        let headers = headers.into_iter().map(|(name, value)| Header { name, value }).collect();
        let request = Request { method, target, version: 1, headers, body };
        if let Decision::Respond(r) = p.route(request, peer_loopback, Timestamp(at)) {
            proptest::prop_assert!(r.span_id().is_some());
        }
    }
}

#[test]
fn a_duplicate_key_is_a_400_parse_error_on_both_post_endpoints() {
    let p = local();
    let dup = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bernstein_status","name":"bernstein_run"}}"#;
    let escaped =
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"a":1,"\u0061":2}}}"#;
    for (target, body, key) in [
        ("/mcp", &dup[..], "name"),
        ("/mcp", &escaped[..], "a"),
        ("/messages?stream=abc_1", &dup[..], "name"),
    ] {
        let r = response(p.route(req("POST", target, &[JSON], body), true, now()));
        assert_eq!(r.status.code(), 400, "{target}");
        let v = body_json(&r);
        assert_eq!(v["error"]["code"], -32700, "{target}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains(&format!("duplicate key \"{key}\" in an object")),
            "{msg}"
        );
    }
}

mod host;
mod tokens;
