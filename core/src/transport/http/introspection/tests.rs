//! The introspection decision, the answer's reading, the cache's lifetimes and bound, and that
//! neither a token nor a secret is ever `Debug`-printed.

use core::time::Duration;

use serde_json::json;

use super::*;
use crate::config::{ClientSecret, Introspection};
use crate::protocol::principal::Scopes;
use crate::transport::http::jwt::{self, Expected, TokenRefused};

const ISS: &str = "https://idp.example";
const NOW: u64 = 1_780_000_000;
const AUD: &str = "https://mcp.example/mcp";

fn expected() -> Expected<'static> {
    Expected {
        issuer: ISS,
        audiences: &[AUD, "urn:extra"],
        now_secs: NOW,
    }
}

fn answer(doc: serde_json::Value) -> Answer {
    Answer::read(&doc).expect("an introspection answer")
}

fn decide(doc: serde_json::Value) -> Result<Principal, TokenRefused> {
    check(&answer(doc), &expected())
}

#[test]
fn an_active_answer_names_the_principal_and_its_scopes() {
    let p = decide(
        json!({"active": true, "sub": "alice", "iss": ISS, "aud": AUD,
                          "exp": NOW + 60, "scope": "openid bernstein.read"}),
    )
    .unwrap();
    assert_eq!((p.iss.as_str(), p.sub.as_str()), (ISS, "alice"));
    assert_eq!(
        p.scopes,
        Scopes {
            read: true,
            write: false
        }
    );
    let w = decide(json!({"active": true, "sub": "bob", "scope": "bernstein.write"})).unwrap();
    assert!(w.scopes.read && w.scopes.write, "write includes read");
    let none = decide(json!({"active": true, "sub": "carol"})).unwrap();
    assert_eq!(none.scopes, Scopes::default(), "no scope, no tool");
    // No `sub`: the client it was issued to; no `iss`: the issuer asked.
    let client = decide(json!({"active": true, "client_id": "svc-1"})).unwrap();
    assert_eq!((client.iss.as_str(), client.sub.as_str()), (ISS, "svc-1"));
    // An audience array naming one of ours; no audience at all (we asked the issuer ourselves).
    assert!(decide(json!({"active": true, "sub": "a", "aud": ["x", "urn:extra"]})).is_ok());
    assert!(decide(json!({"active": true, "sub": "a"})).is_ok());
}

#[test]
fn each_rule_refuses() {
    let cases = [
        (json!({"active": false}), TokenRefused::Inactive),
        (
            json!({"active": false, "sub": "a", "exp": NOW + 60}),
            TokenRefused::Inactive,
        ),
        (
            json!({"active": true, "sub": "a", "exp": NOW - jwt::LEEWAY_SECS}),
            TokenRefused::Expired,
        ),
        (
            json!({"active": true, "sub": "a", "nbf": NOW + jwt::LEEWAY_SECS + 1}),
            TokenRefused::NotYetValid,
        ),
        (
            json!({"active": true, "sub": "a", "iss": "https://evil.example"}),
            TokenRefused::Issuer,
        ),
        (
            json!({"active": true, "sub": "a", "aud": "https://other.example/mcp"}),
            TokenRefused::Audience,
        ),
        (
            json!({"active": true, "sub": "a", "aud": ["x", "y"]}),
            TokenRefused::Audience,
        ),
        (
            json!({"active": true, "scope": "bernstein.write"}),
            TokenRefused::NoSubject,
        ),
        (json!({"active": true, "sub": ""}), TokenRefused::NoSubject),
    ];
    for (doc, why) in cases {
        assert_eq!(decide(doc.clone()), Err(why), "{doc}");
    }
    // Within the leeway both ways.
    assert!(decide(json!({"active": true, "sub": "a", "exp": NOW - 1, "nbf": NOW + 1})).is_ok());
}

#[test]
fn what_is_not_an_introspection_answer_is_an_error_naming_no_value() {
    for doc in [
        json!([]),
        json!("active"),
        json!({}),
        json!({"active": "true"}),
        json!({"active": true, "exp": "soon"}),
        json!({"active": true, "sub": 7}),
        json!({"active": true, "aud": [1]}),
        json!({"active": true, "scope": ["bernstein.write"]}),
    ] {
        let err = Answer::read(&doc).unwrap_err();
        assert!(err.starts_with("the introspection answer"), "{doc}: {err}");
        assert!(
            !err.contains("soon") && !err.contains("bernstein.write"),
            "{err}"
        );
    }
}

fn digest(n: u32) -> TokenDigest {
    TokenDigest::of(format!("token-{n}").as_bytes())
}

const SEC: Duration = Duration::from_secs(1);

#[test]
fn an_active_answer_is_kept_for_the_ttl_but_never_past_its_exp() {
    let mut cache = AnswerCache::default();
    let t0 = Duration::from_secs(100);
    let ttl = Duration::from_secs(60);
    let long = answer(json!({"active": true, "sub": "a", "exp": NOW + 3600}));
    cache.insert(digest(1), long.clone(), t0, NOW, ttl);
    assert_eq!(cache.get(&digest(1), t0), Some(&long), "a hit");
    assert!(cache.get(&digest(1), t0 + ttl - SEC).is_some());
    assert!(
        cache.get(&digest(1), t0 + ttl).is_none(),
        "expired after the ttl"
    );
    assert!(cache.get(&digest(2), t0).is_none(), "another token misses");

    let short = answer(json!({"active": true, "sub": "a", "exp": NOW + 5}));
    cache.insert(digest(3), short, t0, NOW, ttl);
    let until_exp = Duration::from_secs(5 + jwt::LEEWAY_SECS);
    assert!(cache.get(&digest(3), t0 + until_exp - SEC).is_some());
    assert!(
        cache.get(&digest(3), t0 + until_exp).is_none(),
        "never past exp"
    );
}

#[test]
fn a_refusing_answer_is_kept_briefly() {
    let mut cache = AnswerCache::default();
    let t0 = Duration::from_secs(7);
    for (n, doc) in [
        (1, json!({"active": false})),
        (2, json!({"active": true, "sub": "a", "exp": NOW - 3600})),
    ] {
        cache.insert(digest(n), answer(doc), t0, NOW, Duration::from_secs(600));
        assert!(cache.get(&digest(n), t0 + REFUSED_TTL - SEC).is_some());
        assert!(cache.get(&digest(n), t0 + REFUSED_TTL).is_none());
    }
}

#[test]
fn the_cache_is_bounded_and_drops_the_oldest() {
    let mut cache = AnswerCache::with_capacity(3);
    let a = answer(json!({"active": false}));
    for n in 0..10 {
        cache.insert(digest(n), a.clone(), SEC, NOW, SEC * 60);
        assert!(cache.len() <= 3);
    }
    assert_eq!(cache.len(), 3);
    for n in 0..7 {
        assert!(cache.get(&digest(n), SEC).is_none(), "{n} was dropped");
    }
    for n in 7..10 {
        assert!(cache.get(&digest(n), SEC).is_some(), "{n} is kept");
    }
    // Replacing an answer does not grow the cache nor drop another.
    cache.insert(digest(8), a.clone(), SEC, NOW, SEC * 60);
    assert_eq!(cache.len(), 3);
    assert!(cache.get(&digest(7), SEC).is_some());
    assert_eq!(AnswerCache::default().cap, MAX_CACHED);
}

#[test]
fn neither_the_token_nor_the_secret_is_ever_debug_printed() {
    let config = Introspection {
        url: None,
        client_id: "rs".into(),
        client_secret: ClientSecret::new("the-client-secret"),
        cache_secs: 60,
    };
    let ask = IntrospectRequest::new(ISS, &config, OpaqueToken::new(b"the-opaque-token"));
    let shown = format!("{ask:?} {config:?}");
    assert!(!shown.contains("the-opaque-token"), "{shown}");
    assert!(!shown.contains("the-client-secret"), "{shown}");
    assert!(shown.contains(&ask.digest.to_string()), "{shown}");
    assert_eq!(ask.digest, TokenDigest::of(b"the-opaque-token"));
    assert_eq!(ask.token.expose(), b"the-opaque-token");
}

#[test]
fn jwts_and_opaque_tokens_are_told_apart() {
    let header = "eyJhbGciOiJSUzI1NiJ9"; // {"alg":"RS256"}
    assert!(jwt::is_jwt(format!("{header}.e30.sig").as_bytes()));
    assert!(
        jwt::is_jwt(b"eyJhbGciOiJub25lIn0.e30."),
        "alg none is a JWT, refused locally"
    );
    for opaque in [
        "opaque-token-123",
        "a.b.c",
        "abc.def.ghi",
        "Zm9v.e30.x",
        "x/y+z==",
    ] {
        assert!(!jwt::is_jwt(opaque.as_bytes()), "{opaque}");
    }
}
