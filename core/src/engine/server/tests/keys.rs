//! The issuer's keys (OAuth): a request whose token names a key the engine lacks parks while
//! the engine asks for the keys, once, however many such requests come; a flood of unknown
//! `kid`s within [`REFETCH_AFTER`] costs no more fetches (each is refused at once); a rotated
//! key works after the next fetch, with no restart; an issuer that cannot be reached answers
//! the parked requests `503`.

use core::time::Duration;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::config::{Config, OAuthConfig};
use crate::engine::server::keys::REFETCH_AFTER;
use crate::engine::sim::{BOUND, WALL, World, post, responses};
use crate::protocol::Server;
use crate::protocol::unit_fold::{plain_tool, tools_only};
use crate::transport::http::HttpOptions;
use crate::transport::http::jwt::test_keys::{ISS, ed_jwk, ed_token};

fn world() -> World<()> {
    let mut config = Config::new(b"k".to_vec());
    config.oauth = Some(OAuthConfig::new(ISS, vec!["bernstein.read".into()]));
    let server = Arc::new(Server::with_catalog(
        config,
        tools_only(vec![plain_tool("t")]),
    ));
    World::http(server, HttpOptions::default())
}

fn token(kid: &str, label: &str) -> String {
    let claims = json!({"iss": ISS, "aud": format!("http://{BOUND}/mcp"), "sub": "alice",
                        "exp": WALL.0 / 1000 + 600, "scope": "bernstein.read"});
    ed_token(&json!({"alg": "EdDSA", "kid": kid}), &claims, label)
}

fn list(token: &str) -> Vec<u8> {
    let auth = format!("Authorization: Bearer {token}");
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    post(
        "/mcp",
        body,
        &[
            "Accept: application/json",
            "MCP-Protocol-Version: 2025-06-18",
            &auth,
        ],
    )
}

fn jwks(keys: &[(&str, &str)]) -> Value {
    json!({"keys": keys.iter().map(|(label, kid)| ed_jwk(label, kid)).collect::<Vec<_>>()})
}

fn statuses(w: &mut World<()>, conn: u64) -> Vec<u16> {
    responses(&w.take(conn))
        .into_iter()
        .map(|(s, _)| s)
        .collect()
}

#[test]
fn unknown_keys_park_fetch_once_and_rotate_without_restart() {
    let mut w = world();
    for conn in [1, 2] {
        w.connect(conn, "127.0.0.1:40000");
        w.bytes(conn, &list(&token("k1", "key one")));
    }
    assert_eq!(w.keys_asked, 1, "one fetch for every request waiting");
    assert!(
        w.take(1).is_empty() && w.take(2).is_empty(),
        "parked, not answered"
    );
    w.answer_keys(Ok(jwks(&[("key one", "k1")])));
    assert_eq!(statuses(&mut w, 1), [200]);
    assert_eq!(statuses(&mut w, 2), [200]);

    // The key rotates: within the refetch interval a token of the new key is refused at once,
    // however many come, and the issuer is not asked again.
    for _ in 0..5 {
        w.bytes(1, &list(&token("k2", "key two")));
        assert_eq!(statuses(&mut w, 1), [401]);
    }
    assert_eq!(w.keys_asked, 1, "a flood of unknown kids fetches nothing");
    w.advance(REFETCH_AFTER + Duration::from_millis(1));
    w.bytes(1, &list(&token("k2", "key two")));
    assert_eq!(w.keys_asked, 2);
    w.answer_keys(Ok(jwks(&[("key one", "k1"), ("key two", "k2")])));
    assert_eq!(statuses(&mut w, 1), [200], "the rotated key works");
    // Keys the engine holds need no fetch.
    w.bytes(2, &list(&token("k1", "key one")));
    assert_eq!(statuses(&mut w, 2), [200]);
    assert_eq!(w.keys_asked, 2);
}

#[test]
fn an_issuer_that_cannot_be_reached_is_a_503_and_a_kid_it_lacks_a_401() {
    let mut w = world();
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &list(&token("k1", "key one")));
    w.answer_keys(Err(
        "GET https://idp.example/jwks: connection refused".into()
    ));
    let out = w.take_text(1);
    assert!(out.starts_with("HTTP/1.1 503"), "{out}");
    assert!(
        out.contains("Retry-After: 5") && out.contains("idp_unavailable"),
        "{out}"
    );
    assert!(!out.contains(&token("k1", "key one")), "never the token");
    w.advance(REFETCH_AFTER + Duration::from_millis(1));
    w.bytes(1, &list(&token("k9", "key nine")));
    w.answer_keys(Ok(jwks(&[("key one", "k1")])));
    let out = w.take_text(1);
    assert!(out.starts_with("HTTP/1.1 401"), "{out}");
    assert!(
        out.contains(r#"error="invalid_token""#) && out.contains("does not publish"),
        "{out}"
    );
    // The connection serves on.
    w.bytes(1, &list(&token("k1", "key one")));
    assert_eq!(statuses(&mut w, 1), [200]);
}

#[test]
fn shutdown_answers_the_requests_waiting_for_the_keys() {
    let mut w = world();
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &list(&token("k1", "key one")));
    assert!(w.take(1).is_empty());
    w.input(crate::engine::Input::Shutdown);
    let out = w.take_text(1);
    assert!(
        out.starts_with("HTTP/1.1 503") && out.contains("shutting down"),
        "{out}"
    );
    assert!(w.closed.contains_key(&crate::engine::ConnId(1)));
    // The fetch that was asked for may still come: nothing is waiting for it.
    w.answer_keys(Ok(jwks(&[("key one", "k1")])));
    assert!(w.take(1).is_empty());
}
