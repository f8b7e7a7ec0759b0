//! Every refusal of the token check, with keys derived at test time (Ed25519 and P-256 keys
//! from a hash of a label: no key material is stored).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Signer as _;
use serde_json::{Value, json};
use sha2::Sha256;

use super::test_keys::{ISS, ec_key, ed_jwk, ed_key, ed_token, enc};
use super::*;

const AUD: &str = "https://mcp.example/mcp";
const NOW: u64 = 1_800_000_000;

fn ec_jwk(label: &str, kid: &str) -> Value {
    let point = ec_key(label).verifying_key().to_sec1_point(false);
    let bytes = point.as_bytes();
    json!({"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256",
           "x": URL_SAFE_NO_PAD.encode(&bytes[1..33]), "y": URL_SAFE_NO_PAD.encode(&bytes[33..])})
}

fn keys() -> KeySet {
    KeySet::from_jwks(&json!({"keys": [ed_jwk("ed", "k-ed"), ec_jwk("ec", "k-ec"),
        {"kty": "oct", "k": "c2VjcmV0", "kid": "k-oct"}]}))
    .unwrap()
}

fn claims() -> Value {
    json!({"iss": ISS, "aud": AUD, "sub": "alice", "exp": NOW + 600, "nbf": NOW - 5,
           "iat": NOW - 5, "scope": "bernstein.read"})
}

fn ec_token(claims: &Value) -> String {
    let input = format!(
        "{}.{}",
        enc(&json!({"alg": "ES256", "kid": "k-ec"})),
        enc(claims)
    );
    let sig: p256::ecdsa::Signature = ec_key("ec").sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
}

fn eddsa() -> Value {
    json!({"alg": "EdDSA", "kid": "k-ed", "typ": "at+jwt"})
}

fn run(token: &str) -> Result<Principal, TokenRefused> {
    let audiences = [AUD, "urn:bernstein"];
    let expected = Expected {
        issuer: ISS,
        audiences: &audiences,
        now_secs: NOW,
    };
    check(token.as_bytes(), &keys(), &expected)
}

fn with(changes: Value) -> Value {
    let mut c = claims();
    for (k, v) in changes.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    c
}

#[test]
fn good_tokens_name_their_principal() {
    let p = run(&ed_token(&eddsa(), &claims(), "ed")).unwrap();
    assert_eq!((p.iss.as_str(), p.sub.as_str()), (ISS, "alice"));
    assert_eq!(
        p.scopes,
        Scopes {
            read: true,
            write: false
        }
    );
    let p = run(&ec_token(&with(
        json!({"aud": ["other", "urn:bernstein"], "scope": "bernstein.write"}),
    )))
    .unwrap();
    assert!(p.scopes.write);
    let no_kid = json!({"alg": "EdDSA"});
    assert!(
        run(&ed_token(&no_kid, &claims(), "ed")).is_ok(),
        "any key of the type"
    );
    let client = with(json!({"sub": null, "client_id": "svc"}));
    assert_eq!(run(&ed_token(&eddsa(), &client, "ed")).unwrap().sub, "svc");
    let edge = with(json!({"exp": NOW - LEEWAY_SECS + 1, "nbf": NOW + LEEWAY_SECS}));
    assert!(
        run(&ed_token(&eddsa(), &edge, "ed")).is_ok(),
        "within the leeway"
    );
}

#[test]
fn claims_refusals() {
    let cases = [
        (
            json!({"aud": "https://other.example/mcp"}),
            TokenRefused::Audience,
        ),
        (json!({"aud": ["a", "b"]}), TokenRefused::Audience),
        (json!({"aud": null}), TokenRefused::NoAudience),
        (json!({"aud": []}), TokenRefused::NoAudience),
        (json!({"iss": "https://evil.example"}), TokenRefused::Issuer),
        (json!({"iss": null}), TokenRefused::Issuer),
        (json!({"exp": NOW - LEEWAY_SECS}), TokenRefused::Expired),
        (
            json!({"nbf": NOW + LEEWAY_SECS + 1}),
            TokenRefused::NotYetValid,
        ),
        (json!({"sub": null}), TokenRefused::NoSubject),
    ];
    for (change, want) in cases {
        let token = ed_token(&eddsa(), &with(change.clone()), "ed");
        assert_eq!(run(&token), Err(want), "{change}");
    }
    let no_exp = ed_token(&eddsa(), &with(json!({"exp": null})), "ed");
    assert!(matches!(run(&no_exp), Err(TokenRefused::Malformed(_))));
    let odd_exp = ed_token(&eddsa(), &with(json!({"exp": "soon"})), "ed");
    assert!(matches!(run(&odd_exp), Err(TokenRefused::Malformed(_))));
}

#[test]
fn signature_and_header_refusals() {
    let foreign = ed_token(&eddsa(), &claims(), "another key");
    assert_eq!(run(&foreign), Err(TokenRefused::Signature));
    let unknown = ed_token(&json!({"alg": "EdDSA", "kid": "rotated"}), &claims(), "ed");
    assert_eq!(run(&unknown), Err(TokenRefused::UnknownKey));
    // A kid of another key type: no key can check it.
    let mixed = ed_token(&json!({"alg": "EdDSA", "kid": "k-ec"}), &claims(), "ed");
    assert_eq!(run(&mixed), Err(TokenRefused::UnknownKey));
    // alg: none, with and without a signature.
    let none = format!("{}.{}.", enc(&json!({"alg": "none"})), enc(&claims()));
    assert_eq!(run(&none), Err(TokenRefused::Algorithm("none".into())));
    // HS256 keyed with the public key (the classic confusion), and with the oct key.
    for (kid, secret) in [
        ("k-ed", ed_key("ed").verifying_key().to_bytes().to_vec()),
        ("k-oct", b"secret".to_vec()),
    ] {
        use hmac::Mac as _;
        let input = format!(
            "{}.{}",
            enc(&json!({"alg": "HS256", "kid": kid})),
            enc(&claims())
        );
        let mut mac = hmac::Hmac::<Sha256>::new_from_slice(&secret).unwrap();
        mac.update(input.as_bytes());
        let token = format!(
            "{input}.{}",
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        );
        assert_eq!(run(&token), Err(TokenRefused::Algorithm("HS256".into())));
    }
    // A signature of the right length from the wrong algorithm's key.
    let swapped = {
        let t = ec_token(&claims());
        let (input, sig) = t.rsplit_once('.').unwrap();
        let (_, rest) = input.split_once('.').unwrap();
        format!("{}.{rest}.{sig}", enc(&eddsa()))
    };
    assert_eq!(run(&swapped), Err(TokenRefused::Signature));
    for bad in [
        "",
        "a.b",
        "a.b.c.d",
        "Zm9v.Zm9v.Zm9v",
        "e30.e30.",
        "a b.c.d",
        "🙂.a.b",
    ] {
        assert!(
            matches!(
                run(bad),
                Err(TokenRefused::Malformed(_) | TokenRefused::Algorithm(_))
            ),
            "{bad:?}"
        );
    }
    let crit = ed_token(
        &json!({"alg": "EdDSA", "kid": "k-ed", "crit": ["exp"]}),
        &claims(),
        "ed",
    );
    assert!(matches!(run(&crit), Err(TokenRefused::Malformed(_))));
}

#[test]
fn refusals_never_carry_the_token() {
    let token = ed_token(&eddsa(), &with(json!({"aud": "x"})), "ed");
    let said = run(&token).unwrap_err().to_string();
    assert!(!said.contains(&token[..20]), "{said}");
    let odd = format!(
        "{}.{}.",
        enc(&json!({"alg": "eyJhbGciOi-long-and-odd"})),
        enc(&claims())
    );
    assert_eq!(
        run(&odd),
        Err(TokenRefused::Algorithm("(unreadable)".into()))
    );
}

#[test]
fn jwks_reading() {
    assert!(KeySet::from_jwks(&json!({"nokeys": []})).is_err());
    let set = keys();
    assert_eq!(set.len(), 2, "the oct key is skipped");
    let skipped = KeySet::from_jwks(&json!({"keys": [
        {"kty": "OKP", "crv": "Ed25519", "x": "short"},
        {"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"},
        {"kty": "RSA", "n": "AQAB", "e": "AQAB"},
        {"kty": "OKP", "crv": "Ed25519", "use": "enc", "x": ed_jwk("ed", "k")["x"].clone()},
        "not an object"
    ]}))
    .unwrap();
    assert!(skipped.is_empty());
    let header = TokenHeader {
        alg: Alg::EdDsa,
        kid: Some("k-ed".into()),
    };
    assert!(set.knows(&header));
    assert!(!set.knows(&TokenHeader {
        kid: Some("nope".into()),
        ..header
    }));
}
