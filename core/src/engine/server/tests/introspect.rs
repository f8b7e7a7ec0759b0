//! Opaque tokens (OAuth with RFC 7662 introspection): requests with one token share one
//! introspection and then its kept answer until it expires; an inactive token is a 401 and its
//! answer is kept briefly; scopes bound the tools as for a JWT; an IdP that fails is a 503 and
//! nothing is kept; the introspections in flight are bounded; a JWT is never introspected; a
//! shutdown answers the parked requests; the token is in no response and no log line.

use core::time::Duration;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::config::{ClientSecret, Config, Introspection, OAuthConfig};
use crate::engine::Input;
use crate::engine::server::introspect::MAX_IN_FLIGHT;
use crate::engine::shared::{Shared, Sharing};
use crate::engine::sim::{WALL, World, post, responses};
use crate::protocol::Server;
use crate::protocol::registry::{Effects, ToolSpec};
use crate::protocol::unit_fold::{plain_tool, tools_only};
use crate::transport::http::HttpOptions;
use crate::transport::http::introspection::{REFUSED_TTL, TokenDigest};
use crate::transport::http::jwt::test_keys::ISS;

const TTL_SECS: u64 = 60;

fn world_with(introspection: Option<Introspection>) -> World<()> {
    World::http(server_with(introspection), HttpOptions::default())
}

fn server_with(introspection: Option<Introspection>) -> Arc<Server<()>> {
    let mut config = Config::new(b"k".to_vec());
    let mut oauth = OAuthConfig::new(ISS, vec!["bernstein.read".into()]);
    oauth.introspection = introspection;
    config.oauth = Some(oauth);
    let writer = ToolSpec {
        effects: Effects {
            writes_files: true,
            ..Effects::default()
        },
        ..plain_tool("w")
    };
    let catalog = tools_only(vec![plain_tool("r"), writer]);
    Arc::new(Server::with_catalog(config, catalog))
}

fn introspection() -> Option<Introspection> {
    Some(Introspection {
        url: Some("https://idp.example/introspect".into()),
        client_id: "bernstein-rs".into(),
        client_secret: ClientSecret::new("rs-secret"),
        cache_secs: TTL_SECS,
    })
}

fn world() -> World<()> {
    world_with(introspection())
}

#[test]
fn an_answer_one_engine_got_is_told_to_the_others_which_then_ask_no_more() {
    let server = server_with(introspection());
    let shared = Arc::new(Shared::new(2));
    let engine = |index| {
        let sharing = Sharing {
            index,
            shared: shared.clone(),
        };
        World::http_sharing(server.clone(), HttpOptions::default(), sharing)
    };
    let (mut a, mut b) = (engine(0), engine(1));
    a.connect(1, "127.0.0.1:40000");
    a.bytes(1, &call("opaque-1", "r"));
    // Engine 1 needs the same token meanwhile: it waits for engine 0's answer.
    b.connect(2, "127.0.0.1:40001");
    b.bytes(2, &call("opaque-1", "r"));
    assert_eq!((a.introspections.len(), b.introspections.len()), (1, 0));
    a.answer_introspection(digest("opaque-1"), Ok(active("bernstein.read")));
    assert_eq!(statuses(&mut a, 1), [200]);
    assert!(b.take(2).is_empty());
    for notice in std::mem::take(&mut a.told) {
        b.input(Input::Told(notice));
    }
    assert_eq!(statuses(&mut b, 2), [200]);
    // And later requests there use the answer kept.
    b.connect(3, "127.0.0.1:40002");
    b.bytes(3, &call("opaque-1", "r"));
    assert!(b.introspections.is_empty(), "asked once per process");
    assert_eq!(statuses(&mut b, 3), [200]);
}

fn call(token: &str, tool: &str) -> Vec<u8> {
    let auth = format!("Authorization: Bearer {token}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": tool, "arguments": {}}})
    .to_string();
    post(
        "/mcp",
        body.as_bytes(),
        &[
            "Accept: application/json",
            "MCP-Protocol-Version: 2025-06-18",
            &auth,
        ],
    )
}

fn active(scope: &str) -> Value {
    json!({"active": true, "sub": "alice", "iss": ISS, "scope": scope,
           "exp": WALL.0 / 1000 + 3600, "client_id": "host-app"})
}

fn statuses(w: &mut World<()>, conn: u64) -> Vec<u16> {
    responses(&w.take(conn))
        .into_iter()
        .map(|(s, _)| s)
        .collect()
}

fn digest(token: &str) -> TokenDigest {
    TokenDigest::of(token.as_bytes())
}

#[test]
fn one_token_shares_one_introspection_then_its_kept_answer_until_it_expires() {
    let mut w = world();
    for conn in [1, 2, 3] {
        w.connect(conn, "127.0.0.1:40000");
        w.bytes(conn, &call("opaque-1", "r"));
    }
    assert_eq!(
        w.introspections.len(),
        1,
        "one POST for every request waiting"
    );
    let ask = &w.introspections[0];
    assert_eq!(ask.token.expose(), b"opaque-1");
    assert_eq!(ask.digest, digest("opaque-1"));
    assert_eq!(ask.client_id, "bernstein-rs");
    assert_eq!(ask.url.as_deref(), Some("https://idp.example/introspect"));
    assert!(w.take(1).is_empty(), "parked, not answered");
    w.answer_introspection(digest("opaque-1"), Ok(active("bernstein.read")));
    for conn in [1, 2, 3] {
        assert_eq!(statuses(&mut w, conn), [200]);
    }
    // The kept answer serves the next requests: no POST.
    for _ in 0..10 {
        w.bytes(1, &call("opaque-1", "r"));
        assert_eq!(statuses(&mut w, 1), [200]);
    }
    assert_eq!(w.introspections.len(), 1, "a cache hit");
    w.advance(Duration::from_secs(TTL_SECS));
    // (The idle connections were closed meanwhile: a new one.)
    w.connect(4, "127.0.0.1:40001");
    w.bytes(4, &call("opaque-1", "r"));
    assert_eq!(
        w.introspections.len(),
        2,
        "asked again once the answer expired"
    );
    w.answer_introspection(digest("opaque-1"), Ok(active("bernstein.read")));
    assert_eq!(statuses(&mut w, 4), [200]);
    let all = format!("{:?}", w.logs);
    assert!(!all.contains("opaque-1"), "{all}");
}

#[test]
fn an_inactive_token_is_a_401_and_its_answer_is_kept_briefly() {
    let mut w = world();
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &call("revoked-9", "r"));
    w.answer_introspection(digest("revoked-9"), Ok(json!({"active": false})));
    let out = w.take_text(1);
    assert!(out.starts_with("HTTP/1.1 401"), "{out}");
    assert!(
        out.contains(r#"error="invalid_token""#) && out.contains("not active"),
        "{out}"
    );
    assert!(!out.contains("revoked-9"), "never the token");
    for _ in 0..20 {
        w.bytes(1, &call("revoked-9", "r"));
        assert_eq!(statuses(&mut w, 1), [401]);
    }
    assert_eq!(
        w.introspections.len(),
        1,
        "a flood of one bad token: one POST"
    );
    w.advance(REFUSED_TTL);
    w.connect(2, "127.0.0.1:40001");
    w.bytes(2, &call("revoked-9", "r"));
    assert_eq!(w.introspections.len(), 2, "asked again after the interval");
}

#[test]
fn the_answers_scopes_bound_the_tools_and_its_claims_are_checked() {
    let mut w = world();
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &call("reader", "w"));
    w.answer_introspection(digest("reader"), Ok(active("bernstein.read")));
    let out = w.take_text(1);
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    assert!(
        out.contains(r#"error="insufficient_scope""#) && out.contains(r#"scope="bernstein.write""#),
        "{out}"
    );
    w.bytes(1, &call("writer", "w"));
    w.answer_introspection(digest("writer"), Ok(active("bernstein.write")));
    assert_eq!(statuses(&mut w, 1), [200]);
    let refused = [
        (
            "other-iss",
            json!({"active": true, "sub": "a", "iss": "https://evil.example"}),
            "another issuer",
        ),
        (
            "other-aud",
            json!({"active": true, "sub": "a", "aud": "https://other.example/mcp"}),
            "another audience",
        ),
        (
            "no-sub",
            json!({"active": true, "scope": "bernstein.write"}),
            "names no subject",
        ),
        (
            "expired",
            json!({"active": true, "sub": "a", "exp": WALL.0 / 1000 - 3600}),
            "has expired",
        ),
    ];
    for (token, doc, why) in refused {
        w.bytes(1, &call(token, "r"));
        w.answer_introspection(digest(token), Ok(doc));
        let out = w.take_text(1);
        assert!(
            out.starts_with("HTTP/1.1 401") && out.contains(why),
            "{why}: {out}"
        );
    }
}

#[test]
fn an_idp_that_fails_is_a_503_and_nothing_is_kept() {
    let mut w = world();
    w.connect(1, "127.0.0.1:40000");
    let failures = [
        Err("POST https://idp.example/introspect: connection refused".to_string()),
        Err("POST https://idp.example/introspect: HTTP 500".to_string()),
        Ok(json!("not an object")),
        Ok(json!({"sub": "no active field"})),
    ];
    for (n, result) in failures.into_iter().enumerate() {
        w.bytes(1, &call("opaque-2", "r"));
        assert_eq!(w.introspections.len(), n + 1, "a failure is not kept");
        w.answer_introspection(digest("opaque-2"), result);
        let out = w.take_text(1);
        assert!(out.starts_with("HTTP/1.1 503"), "{out}");
        assert!(
            out.contains("Retry-After: 5") && out.contains("idp_unavailable"),
            "{out}"
        );
    }
    // The IdP is back: the same connection serves on.
    w.bytes(1, &call("opaque-2", "r"));
    w.answer_introspection(digest("opaque-2"), Ok(active("bernstein.read")));
    assert_eq!(statuses(&mut w, 1), [200]);
    // An answer nobody asked for changes nothing.
    w.answer_introspection(digest("never-asked"), Ok(active("bernstein.write")));
    assert!(w.take(1).is_empty());
}

#[test]
fn the_introspections_in_flight_are_bounded() {
    let mut w = world();
    let n = MAX_IN_FLIGHT as u64;
    for conn in 1..=n + 1 {
        w.connect(conn, "127.0.0.1:40000");
        w.bytes(conn, &call(&format!("junk-{conn}"), "r"));
    }
    assert_eq!(w.introspections.len(), MAX_IN_FLIGHT);
    let out = w.take_text(n + 1);
    assert!(out.starts_with("HTTP/1.1 503"), "{out}");
    assert!(out.contains("Retry-After: 1"), "{out}");
    // One answer frees a place.
    w.answer_introspection(digest("junk-1"), Ok(json!({"active": false})));
    assert_eq!(statuses(&mut w, 1), [401]);
    w.bytes(n + 1, &call("junk-extra", "r"));
    assert_eq!(w.introspections.len(), MAX_IN_FLIGHT + 1);
}

#[test]
fn a_jwt_is_never_introspected_and_without_introspection_an_opaque_token_is_refused() {
    let mut w = world();
    w.connect(1, "127.0.0.1:40000");
    // A JWT of a key the engine does not hold: the keys are fetched, nothing is introspected.
    w.bytes(
        1,
        &call("eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIn0.e30.c2ln", "r"),
    );
    assert_eq!((w.keys_asked, w.introspections.len()), (1, 0));

    let mut plain = world_with(None);
    plain.connect(1, "127.0.0.1:40000");
    plain.bytes(1, &call("opaque-3", "r"));
    let out = plain.take_text(1);
    assert!(
        out.starts_with("HTTP/1.1 401") && out.contains("not a well-formed JWT"),
        "{out}"
    );
    assert!(plain.introspections.is_empty());
}

#[test]
fn shutdown_answers_the_requests_waiting_for_an_introspection() {
    let mut w = world();
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &call("opaque-4", "r"));
    w.input(crate::engine::Input::Shutdown);
    let out = w.take_text(1);
    assert!(
        out.starts_with("HTTP/1.1 503") && out.contains("shutting down"),
        "{out}"
    );
    assert!(w.closed.contains_key(&crate::engine::ConnId(1)));
    w.answer_introspection(digest("opaque-4"), Ok(active("bernstein.read")));
    assert!(w.take(1).is_empty());
}
