//! OAuth access tokens at the router: a good token's principal reaches the engine, a key the
//! engine lacks asks for the keys, every refusal carries the RFC 6750/9728 challenge, a call
//! beyond the token's scopes (in a batch too) is `403 insufficient_scope`, and the static token
//! keeps working beside them.

use serde_json::json;

use super::*;
use crate::protocol::Server;
use crate::protocol::unit_fold::{plain_tool, tools_only};
use crate::transport::http::introspection::AnswerCache;
use crate::transport::http::jwt::KeySet;
use crate::transport::http::jwt::test_keys::{ISS, ed_jwk, ed_token};
use crate::transport::http::tool_scopes::ToolScopes;

const MCP: &str = "http://127.0.0.1:8053/mcp";

fn oauth_policy() -> HttpPolicy {
    let mut writer = plain_tool("w");
    writer.effects.writes_files = true;
    let server: Server<()> = Server::with_catalog(
        config(bearer(), true),
        tools_only(vec![plain_tool("r"), writer]),
    );
    policy(bearer(), true, false).with_tool_scopes(ToolScopes::of(&server))
}

fn keys() -> KeySet {
    KeySet::from_jwks(&json!({"keys": [ed_jwk("idp", "k1")]})).unwrap()
}

fn token(scope: &str, aud: &str) -> String {
    let claims = json!({"iss": ISS, "aud": aud, "sub": "alice", "scope": scope,
                        "exp": now().0 / 1000 + 60});
    ed_token(&json!({"alg": "EdDSA", "kid": "k1"}), &claims, "idp")
}

fn call(name: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{name}","arguments":{{}}}}}}"#)
        .into_bytes()
}

fn with_token(token: &str, body: &[u8]) -> Request {
    let auth = format!("Bearer {token}");
    post(
        &[
            ("Authorization", auth.as_str()),
            ("Accept", "application/json"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        body,
    )
}

fn route(request: Request) -> Decision {
    let (keys, answers) = (keys(), AnswerCache::default());
    let known = Known {
        keys: &keys,
        answers: &answers,
        mono: core::time::Duration::ZERO,
    };
    oauth_policy().route_with(request, true, now(), &known)
}

#[test]
fn a_good_token_carries_its_principal_and_the_static_token_still_works() {
    let write = token("bernstein.write", MCP);
    match route(with_token(&write, &call("w"))) {
        Decision::Mcp(x) => {
            let p = x.facts.principal.expect("a principal");
            assert_eq!((p.iss.as_str(), p.sub.as_str()), (ISS, "alice"));
            assert!(p.scopes.write);
        }
        other => panic!("{other:?}"),
    }
    match route(with_token(TOKEN, &call("w"))) {
        Decision::Mcp(x) => assert_eq!(x.facts.principal, None),
        other => panic!("{other:?}"),
    }
    // The https form of the same resource is accepted too.
    let https = token("bernstein.read", "https://127.0.0.1:8053/mcp");
    assert!(is_mcp(&route(with_token(&https, &call("r")))));
}

#[test]
fn refusals_carry_the_challenge_and_never_the_token() {
    let other = token("bernstein.write", "https://other.example/mcp");
    let r = response(route(with_token(&other, LIST)));
    assert_eq!(r.status.code(), 401);
    let challenge = r.header("www-authenticate").unwrap().to_string();
    assert_eq!(
        challenge,
        "Bearer resource_metadata=\"http://127.0.0.1:8053/.well-known/oauth-protected-resource/mcp\", \
         error=\"invalid_token\", error_description=\"the access token is meant for another audience\""
    );
    let body = String::from_utf8(r.body.clone()).unwrap();
    assert!(!body.contains(&other) && !challenge.contains(&other[..30]));
    assert_eq!(body_json(&r)["error"], "invalid_token");
    // A mistyped static token (not shaped like a JWT) is refused as before, naming the fix.
    let r = response(route(with_token("s3cret-tokem", LIST)));
    assert!(
        body_json(&r)["error_description"]
            .as_str()
            .unwrap()
            .contains("BERNSTEIN_MCP_TOKEN")
    );
}

#[test]
fn an_unknown_key_asks_for_the_keys() {
    let claims = json!({"iss": ISS, "aud": MCP, "sub": "a", "exp": now().0 / 1000 + 60});
    let rotated = ed_token(&json!({"alg": "EdDSA", "kid": "k2"}), &claims, "idp2");
    assert!(matches!(
        route(with_token(&rotated, LIST)),
        Decision::NeedKeys(_)
    ));
    let Decision::NeedKeys(request) = route(with_token(&rotated, LIST)) else {
        unreachable!()
    };
    let r = oauth_policy().unknown_key(&request);
    assert_eq!(r.status.code(), 401);
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("does not publish")
    );
    let r = oauth_policy().keys_unavailable(&request, "connection refused");
    assert_eq!(r.status.code(), 503);
    assert_eq!(r.header("retry-after"), Some("5"));
}

#[test]
fn calls_beyond_the_scopes_are_403_and_in_a_batch_too() {
    let read = token("bernstein.read", MCP);
    assert!(is_mcp(&route(with_token(&read, &call("r")))));
    assert!(is_mcp(&route(with_token(&read, LIST))));
    let r = response(route(with_token(&read, &call("w"))));
    assert_eq!(r.status.code(), 403);
    assert_eq!(
        r.header("www-authenticate"),
        Some(
            "Bearer error=\"insufficient_scope\", scope=\"bernstein.write\", \
             resource_metadata=\"http://127.0.0.1:8053/.well-known/oauth-protected-resource/mcp\", \
             error_description=\"calling w needs the scope bernstein.write\""
        )
    );
    let error = &body_json(&r)["error"];
    assert_eq!(error["data"]["scope"], "bernstein.write");
    assert_eq!(body_json(&r)["id"], 7);
    let batch = format!(
        "[{},{}]",
        String::from_utf8(call("r")).unwrap(),
        String::from_utf8(call("w")).unwrap()
    );
    let r = response(route(with_token(&read, batch.as_bytes())));
    assert_eq!(r.status.code(), 403);
    // No scope at all: not even a tool that writes nothing.
    let none = token("openid", MCP);
    let r = response(route(with_token(&none, &call("r"))));
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("scope=\"bernstein.read\"")
    );
}
