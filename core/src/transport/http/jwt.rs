//! OAuth access tokens (the resource-server mode): a JWS-signed JWT (RFC 7519, compact form)
//! checked against the IdP's keys as the runtime fetched them ([`KeySet`], from a JWKS) and
//! `now` as a value. Accepted: RS256, PS256, ES256 and EdDSA (Ed25519) signatures by a key of
//! the set, `iss` equal to the issuer, an `aud` (string or array) naming one of the expected
//! audiences, `exp` not past and `nbf` not ahead (with [`LEEWAY_SECS`]). Everything else is
//! refused with a [`TokenRefused`] that names the reason and never the token: `alg: none`, any
//! HMAC algorithm (a token "signed" with the public key as a secret), an unknown `kid`, a
//! missing `aud` or `exp`, a wrong issuer, anything malformed.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Verifier as _;
use serde_json::Value;

use crate::protocol::principal::{Principal, Scopes};

/// How far `exp` and `nbf` may be off the server's clock.
pub const LEEWAY_SECS: u64 = 30;

/// Most keys taken from one JWKS (a bigger set is cut: the first ones are kept).
pub const MAX_KEYS: usize = 64;

/// Why a token was refused (the `error_description` of the 401 says this, never the token).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenRefused {
    #[error("the access token is not a well-formed JWT: {0}")]
    Malformed(&'static str),
    #[error("the access token's algorithm {0} is not accepted (RS256, PS256, ES256, EdDSA)")]
    Algorithm(String),
    #[error("the access token is signed by a key the issuer does not publish")]
    UnknownKey,
    #[error("the access token's signature does not verify")]
    Signature,
    #[error("the access token was issued by another issuer")]
    Issuer,
    #[error("the access token names no audience")]
    NoAudience,
    #[error("the access token is meant for another audience")]
    Audience,
    #[error("the access token has expired")]
    Expired,
    #[error("the access token is not valid yet")]
    NotYetValid,
    #[error("the access token names no subject (sub or client_id)")]
    NoSubject,
    #[error("the access token is not active (the issuer's introspection says so)")]
    Inactive,
}

/// What a token must say: its issuer, one of the audiences, and the time.
#[derive(Clone, Copy, Debug)]
pub struct Expected<'a> {
    pub issuer: &'a str,
    pub audiences: &'a [&'a str],
    /// Seconds since the Unix epoch.
    pub now_secs: u64,
}

/// The header fields a decision needs before any key is looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenHeader {
    pub alg: Alg,
    pub kid: Option<String>,
}

/// The accepted signature algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alg {
    Rs256,
    Ps256,
    Es256,
    EdDsa,
}

impl Alg {
    fn parse(name: &str) -> Option<Alg> {
        Some(match name {
            "RS256" => Alg::Rs256,
            "PS256" => Alg::Ps256,
            "ES256" => Alg::Es256,
            "EdDSA" => Alg::EdDsa,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Alg::Rs256 => "RS256",
            Alg::Ps256 => "PS256",
            Alg::Es256 => "ES256",
            Alg::EdDsa => "EdDSA",
        }
    }
}

/// A public key of the IdP's set.
#[derive(Clone, Debug)]
struct Key {
    kid: Option<String>,
    /// The `alg` the JWK pins, if any.
    alg: Option<String>,
    verifier: KeyMaterial,
}

#[derive(Clone, Debug)]
enum KeyMaterial {
    Rsa(rsa::PublicKey),
    P256(p256::ecdsa::VerifyingKey),
    Ed25519(ed25519_dalek::VerifyingKey),
}

impl KeyMaterial {
    fn fits(&self, alg: Alg) -> bool {
        matches!(
            (self, alg),
            (KeyMaterial::Rsa(_), Alg::Rs256 | Alg::Ps256)
                | (KeyMaterial::P256(_), Alg::Es256)
                | (KeyMaterial::Ed25519(_), Alg::EdDsa)
        )
    }

    fn verify(&self, alg: Alg, input: &[u8], sig: &[u8]) -> bool {
        use rsa::sha2::Sha256;
        match (self, alg) {
            (KeyMaterial::Rsa(k), Alg::Rs256) => {
                rsa::pkcs1v15::Signature::try_from(sig).is_ok_and(|s| {
                    rsa::pkcs1v15::VerifyingKey::<Sha256>::new(k.clone())
                        .verify(input, &s)
                        .is_ok()
                })
            }
            (KeyMaterial::Rsa(k), Alg::Ps256) => {
                rsa::pss::Signature::try_from(sig).is_ok_and(|s| {
                    rsa::pss::VerifyingKey::<Sha256>::new(k.clone())
                        .verify(input, &s)
                        .is_ok()
                })
            }
            (KeyMaterial::P256(k), Alg::Es256) => {
                p256::ecdsa::Signature::from_slice(sig).is_ok_and(|s| k.verify(input, &s).is_ok())
            }
            (KeyMaterial::Ed25519(k), Alg::EdDsa) => ed25519_dalek::Signature::from_slice(sig)
                .is_ok_and(|s| k.verify_strict(input, &s).is_ok()),
            _ => false,
        }
    }
}

/// The IdP's signing keys, read from a JWKS document (RFC 7517). Keys of other types (HMAC
/// `oct` keys included), other curves, encryption keys (`use: enc`) and malformed ones are
/// skipped: they can never verify a token.
#[derive(Clone, Debug, Default)]
pub struct KeySet {
    keys: Vec<Key>,
}

impl KeySet {
    /// The signing keys of a JWKS document; `Err` when it is not one (`{"keys": [...]}`).
    pub fn from_jwks(doc: &Value) -> Result<KeySet, String> {
        let Some(list) = doc.get("keys").and_then(Value::as_array) else {
            return Err("the JWKS document has no \"keys\" array".into());
        };
        let keys = list
            .iter()
            .filter_map(read_jwk)
            .take(MAX_KEYS)
            .collect::<Vec<_>>();
        Ok(KeySet { keys })
    }

    /// How many usable keys it holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether a token with this header could be checked with these keys: a key with its
    /// `kid` (a token without `kid`: any key of its algorithm's type). `false` means the
    /// runtime may be asked for fresh keys.
    pub fn knows(&self, header: &TokenHeader) -> bool {
        self.candidates(header).next().is_some()
    }

    fn candidates<'a>(&'a self, header: &'a TokenHeader) -> impl Iterator<Item = &'a Key> + 'a {
        self.keys.iter().filter(move |k| {
            k.verifier.fits(header.alg)
                && k.alg.as_deref().is_none_or(|a| a == header.alg.name())
                && match &header.kid {
                    Some(kid) => k.kid.as_deref() == Some(kid.as_str()),
                    None => true,
                }
        })
    }
}

fn b64(field: &Value) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(field.as_str()?).ok()
}

fn read_jwk(jwk: &Value) -> Option<Key> {
    if jwk.get("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let verifier = match (
        jwk.get("kty")?.as_str()?,
        jwk.get("crv").and_then(Value::as_str),
    ) {
        ("RSA", _) => {
            let (n, e) = (b64(jwk.get("n")?)?, b64(jwk.get("e")?)?);
            let n = rsa::BoxedUint::from_be_slice_vartime(&n);
            let e = rsa::BoxedUint::from_be_slice_vartime(&e);
            // 2048-bit moduli at least, 4096 at most (the crate's own bounds).
            KeyMaterial::Rsa(rsa::PublicKey::new(n, e).ok().filter(|k| {
                use rsa::traits::PublicKeyParts as _;
                k.size() >= 256
            })?)
        }
        ("EC", Some("P-256")) => {
            let (x, y) = (b64(jwk.get("x")?)?, b64(jwk.get("y")?)?);
            if x.len() != 32 || y.len() != 32 {
                return None;
            }
            let mut sec1 = vec![4u8];
            sec1.extend(x);
            sec1.extend(y);
            KeyMaterial::P256(p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1).ok()?)
        }
        ("OKP", Some("Ed25519")) => {
            let x: [u8; 32] = b64(jwk.get("x")?)?.try_into().ok()?;
            KeyMaterial::Ed25519(ed25519_dalek::VerifyingKey::from_bytes(&x).ok()?)
        }
        _ => return None,
    };
    Some(Key {
        kid: jwk.get("kid").and_then(Value::as_str).map(String::from),
        alg: jwk.get("alg").and_then(Value::as_str).map(String::from),
        verifier,
    })
}

/// Whether a bearer credential has the shape of a JWS compact token (three base64url parts).
pub fn looks_like_jwt(token: &[u8]) -> bool {
    token.split(|b| *b == b'.').count() == 3
        && token
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Whether a bearer credential is a JWT: three base64url parts whose first is a JSON object
/// (its header). Anything else is an opaque token (introspected when that is configured).
pub fn is_jwt(token: &[u8]) -> bool {
    looks_like_jwt(token)
        && token
            .split(|b| *b == b'.')
            .next()
            .and_then(|h| URL_SAFE_NO_PAD.decode(h).ok())
            .and_then(|h| serde_json::from_slice::<Value>(&h).ok())
            .is_some_and(|h| h.is_object())
}

/// The parts of a compact token, its header read and its algorithm accepted.
struct Parts<'a> {
    header: TokenHeader,
    signing_input: &'a [u8],
    payload: &'a [u8],
    signature: &'a [u8],
}

fn split(token: &[u8]) -> Result<Parts<'_>, TokenRefused> {
    let malformed = TokenRefused::Malformed;
    if !looks_like_jwt(token) {
        return Err(malformed("not three base64url parts"));
    }
    let mut it = token.splitn(3, |b| *b == b'.');
    let (h, p, s) = match (it.next(), it.next(), it.next()) {
        (Some(h), Some(p), Some(s)) => (h, p, s),
        _ => return Err(malformed("not three base64url parts")),
    };
    let header: Value = URL_SAFE_NO_PAD
        .decode(h)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or(malformed("the header is not base64url JSON"))?;
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .ok_or(malformed("the header names no alg"))?;
    let alg = Alg::parse(alg).ok_or_else(|| {
        // Never echo a long or odd value back: the known names only, else a marker.
        let shown = if alg.len() <= 16 && alg.bytes().all(|b| b.is_ascii_alphanumeric()) {
            alg.to_string()
        } else {
            "(unreadable)".to_string()
        };
        TokenRefused::Algorithm(shown)
    })?;
    if header.get("crit").is_some() {
        return Err(malformed("the header has critical extensions"));
    }
    let kid = match header.get("kid") {
        None => None,
        Some(Value::String(k)) => Some(k.clone()),
        Some(_) => return Err(malformed("the header's kid is not a string")),
    };
    let signing_input = &token[..h.len() + 1 + p.len()];
    Ok(Parts {
        header: TokenHeader { alg, kid },
        signing_input,
        payload: p,
        signature: s,
    })
}

/// The header of a token, when it is a JWT with an accepted algorithm.
pub fn header(token: &[u8]) -> Result<TokenHeader, TokenRefused> {
    split(token).map(|p| p.header)
}

/// Checks `token` against `keys` and what is `expected` of it; the principal it names.
pub fn check(
    token: &[u8],
    keys: &KeySet,
    expected: &Expected<'_>,
) -> Result<Principal, TokenRefused> {
    let parts = split(token)?;
    let signature = URL_SAFE_NO_PAD
        .decode(parts.signature)
        .map_err(|_| TokenRefused::Malformed("the signature is not base64url"))?;
    let mut candidates = keys.candidates(&parts.header).peekable();
    if candidates.peek().is_none() {
        return Err(TokenRefused::UnknownKey);
    }
    let alg = parts.header.alg;
    if !candidates.any(|k| k.verifier.verify(alg, parts.signing_input, &signature)) {
        return Err(TokenRefused::Signature);
    }
    let claims: Value = URL_SAFE_NO_PAD
        .decode(parts.payload)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .filter(Value::is_object)
        .ok_or(TokenRefused::Malformed(
            "the claims are not a base64url JSON object",
        ))?;
    check_claims(&claims, expected)
}

/// The claims rules (the signature is already verified).
fn check_claims(claims: &Value, expected: &Expected<'_>) -> Result<Principal, TokenRefused> {
    let iss = claims.get("iss").and_then(Value::as_str);
    if iss != Some(expected.issuer) {
        return Err(TokenRefused::Issuer);
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        None | Some(Value::Null) => return Err(TokenRefused::NoAudience),
        Some(Value::String(a)) => vec![a.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        Some(_) => {
            return Err(TokenRefused::Malformed(
                "aud is neither a string nor an array",
            ));
        }
    };
    if audiences.is_empty() {
        return Err(TokenRefused::NoAudience);
    }
    if !audiences.iter().any(|a| expected.audiences.contains(a)) {
        return Err(TokenRefused::Audience);
    }
    let time = |name: &'static str| -> Result<Option<u64>, TokenRefused> {
        match claims.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
                .map(Some)
                .ok_or(TokenRefused::Malformed(
                    "exp, nbf or iat is not a NumericDate",
                )),
        }
    };
    let exp = time("exp")?.ok_or(TokenRefused::Malformed("the token has no exp"))?;
    if exp.saturating_add(LEEWAY_SECS) <= expected.now_secs {
        return Err(TokenRefused::Expired);
    }
    if let Some(nbf) = time("nbf")?
        && nbf > expected.now_secs.saturating_add(LEEWAY_SECS)
    {
        return Err(TokenRefused::NotYetValid);
    }
    time("iat")?;
    let sub = ["sub", "client_id"]
        .iter()
        .find_map(|c| {
            claims
                .get(*c)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
        .ok_or(TokenRefused::NoSubject)?;
    Ok(Principal {
        iss: expected.issuer.to_string(),
        sub: sub.to_string(),
        scopes: Scopes::of_claims(claims),
    })
}

#[cfg(test)]
pub(crate) mod test_keys;
#[cfg(test)]
mod tests;
