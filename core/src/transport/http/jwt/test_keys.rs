//! Keys and tokens for tests, derived at test time (Ed25519 and P-256 keys from a hash of a
//! label: no key material is stored).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::Signer as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

pub const ISS: &str = "https://idp.example";

pub fn seed(label: &str) -> [u8; 32] {
    Sha256::digest(label.as_bytes()).into()
}

pub fn ed_key(label: &str) -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&seed(label))
}

pub fn ec_key(label: &str) -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_slice(&seed(label)).expect("a hash is a valid P-256 scalar")
}

pub fn enc(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
}

/// The public JWK of the Ed25519 key of `label`.
pub fn ed_jwk(label: &str, kid: &str) -> Value {
    let x = URL_SAFE_NO_PAD.encode(ed_key(label).verifying_key().as_bytes());
    json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig"})
}

/// A compact token of `header` and `claims` signed by the Ed25519 key of `label`.
pub fn ed_token(header: &Value, claims: &Value, label: &str) -> String {
    let input = format!("{}.{}", enc(header), enc(claims));
    let sig = ed_key(label).sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
}
