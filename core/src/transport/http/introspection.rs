//! Opaque access tokens (RFC 7662 token introspection): the token kept out of every log line
//! ([`OpaqueToken`], named by its SHA-256 [`TokenDigest`]), the IdP's answer as the runtime
//! fetched it ([`Answer`]), the decision on it ([`check`]) and the answers the engine keeps
//! ([`AnswerCache`]). Pure: `now` and the engine's monotonic clock come in as values.
//!
//! The decision: `active: false` is refused; `exp` past or `nbf` ahead (with the JWTs'
//! [`LEEWAY_SECS`]) is refused; `iss`, when the answer names one, must be the issuer; `aud`,
//! when it names any, must name one of the expected audiences (an answer without `aud` is taken
//! because this server asked the question itself, as the issuer's registered client); the
//! principal is `{issuer, sub}` (`sub`, else `client_id`; neither is refused); the scopes come
//! from `scope` as for a JWT.

use core::time::Duration;
use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::jwt::{Expected, LEEWAY_SECS, TokenRefused};
use crate::config::{ClientSecret, Introspection};
use crate::protocol::principal::{Principal, Scopes};

/// Most answers kept; the oldest is dropped for a new one.
pub const MAX_CACHED: usize = 10_000;
/// How long an answer that refuses the token (inactive, expired, not yet valid) is kept, so that
/// a flood of one bad token costs the IdP one request per interval.
pub const REFUSED_TTL: Duration = Duration::from_secs(10);

/// The SHA-256 of a token: how the engine names it (`Debug` and `Display` show a prefix).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TokenDigest([u8; 32]);

impl TokenDigest {
    pub fn of(token: &[u8]) -> TokenDigest {
        TokenDigest(Sha256::digest(token).into())
    }
}

impl core::fmt::Display for TokenDigest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "sha256:{}", hex::encode(&self.0[..4]))
    }
}

impl core::fmt::Debug for TokenDigest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(self, f)
    }
}

/// An opaque access token on its way to the introspection endpoint: `Debug` shows its digest's
/// prefix, never the token.
#[derive(Clone, PartialEq, Eq)]
pub struct OpaqueToken(Vec<u8>);

impl OpaqueToken {
    pub fn new(token: &[u8]) -> OpaqueToken {
        OpaqueToken(token.to_vec())
    }

    pub fn digest(&self) -> TokenDigest {
        TokenDigest::of(&self.0)
    }

    /// The token itself, for the one request that sends it.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl core::fmt::Debug for OpaqueToken {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "OpaqueToken({}…)", self.digest())
    }
}

/// What the runtime is asked to do ([`Output::Introspect`](crate::engine::Output::Introspect)):
/// POST `token` to the issuer's introspection endpoint as this client, and answer with the
/// JSON it got, keyed by `digest`.
#[derive(Clone, Debug)]
pub struct IntrospectRequest {
    pub issuer: String,
    /// The endpoint; `None`: the `introspection_endpoint` of the issuer's metadata.
    pub url: Option<String>,
    pub client_id: String,
    pub client_secret: ClientSecret,
    pub token: OpaqueToken,
    pub digest: TokenDigest,
}

impl IntrospectRequest {
    pub fn new(issuer: &str, config: &Introspection, token: OpaqueToken) -> IntrospectRequest {
        IntrospectRequest {
            issuer: issuer.to_string(),
            url: config.url.clone(),
            client_id: config.client_id.clone(),
            client_secret: config.client_secret.clone(),
            digest: token.digest(),
            token,
        }
    }
}

/// An introspection response (RFC 7662 §2.2), the fields a decision reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub active: bool,
    pub scopes: Scopes,
    pub exp: Option<u64>,
    pub nbf: Option<u64>,
    pub iss: Option<String>,
    pub aud: Vec<String>,
    /// `sub`, else `client_id`.
    pub sub: Option<String>,
}

impl Answer {
    /// Reads an introspection response; `Err` (saying why, never echoing a value) when it is
    /// not one: not an object, `active` not a boolean, a field of the wrong type.
    pub fn read(doc: &Value) -> Result<Answer, String> {
        let Some(obj) = doc.as_object() else {
            return Err("the introspection answer is not a JSON object".into());
        };
        let active = obj
            .get("active")
            .and_then(Value::as_bool)
            .ok_or("the introspection answer has no boolean \"active\"")?;
        let time = |name: &str| -> Result<Option<u64>, String> {
            match obj.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_u64()
                    .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
                    .map(Some)
                    .ok_or_else(|| format!("the introspection answer's {name} is not a number")),
            }
        };
        let text = |name: &str| -> Result<Option<String>, String> {
            match obj.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if s.is_empty() => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(format!("the introspection answer's {name} is not a string")),
            }
        };
        let aud = match obj.get("aud") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(list)) => list
                .iter()
                .map(|a| a.as_str().map(String::from))
                .collect::<Option<Vec<_>>>()
                .ok_or("the introspection answer's aud is not a list of strings")?,
            Some(_) => return Err("the introspection answer's aud is not a string".into()),
        };
        let scope = match obj.get("scope") {
            None | Some(Value::Null | Value::String(_)) => obj.get("scope"),
            Some(_) => return Err("the introspection answer's scope is not a string".into()),
        };
        let scopes = scope.map_or_else(Scopes::default, |s| {
            Scopes::of_claims(&serde_json::json!({ "scope": s }))
        });
        Ok(Answer {
            active,
            scopes,
            exp: time("exp")?,
            nbf: time("nbf")?,
            iss: text("iss")?,
            aud,
            sub: text("sub")?.or(text("client_id")?),
        })
    }

    /// Whether the token is refused whatever the request (inactive, expired, not yet valid).
    fn refused_at(&self, now_secs: u64) -> bool {
        !self.active
            || self
                .exp
                .is_some_and(|exp| exp.saturating_add(LEEWAY_SECS) <= now_secs)
            || self
                .nbf
                .is_some_and(|nbf| nbf > now_secs.saturating_add(LEEWAY_SECS))
    }
}

/// The decision on an introspected token (see the module docs).
pub fn check(answer: &Answer, expected: &Expected<'_>) -> Result<Principal, TokenRefused> {
    if !answer.active {
        return Err(TokenRefused::Inactive);
    }
    if let Some(exp) = answer.exp
        && exp.saturating_add(LEEWAY_SECS) <= expected.now_secs
    {
        return Err(TokenRefused::Expired);
    }
    if let Some(nbf) = answer.nbf
        && nbf > expected.now_secs.saturating_add(LEEWAY_SECS)
    {
        return Err(TokenRefused::NotYetValid);
    }
    if answer
        .iss
        .as_deref()
        .is_some_and(|iss| iss.trim_end_matches('/') != expected.issuer.trim_end_matches('/'))
    {
        return Err(TokenRefused::Issuer);
    }
    if !answer.aud.is_empty()
        && !answer
            .aud
            .iter()
            .any(|a| expected.audiences.contains(&a.as_str()))
    {
        return Err(TokenRefused::Audience);
    }
    let sub = answer.sub.as_deref().ok_or(TokenRefused::NoSubject)?;
    Ok(Principal {
        iss: expected.issuer.to_string(),
        sub: sub.to_string(),
        scopes: answer.scopes,
    })
}

/// The answers the engine keeps, by token digest: an answer that accepts the token until
/// `min(exp, now + ttl)`, one that refuses it for [`REFUSED_TTL`]; at most [`MAX_CACHED`]
/// (the oldest goes first). Times are the engine's monotonic clock.
#[derive(Debug)]
pub struct AnswerCache {
    entries: BTreeMap<TokenDigest, Cached>,
    /// Insertion order: the oldest first.
    order: BTreeMap<u64, TokenDigest>,
    next: u64,
    cap: usize,
}

#[derive(Debug)]
struct Cached {
    answer: Answer,
    until: Duration,
    seq: u64,
}

impl Default for AnswerCache {
    fn default() -> Self {
        AnswerCache::with_capacity(MAX_CACHED)
    }
}

impl AnswerCache {
    /// A cache of at most `cap` answers (at least one).
    pub fn with_capacity(cap: usize) -> AnswerCache {
        AnswerCache {
            entries: BTreeMap::new(),
            order: BTreeMap::new(),
            next: 0,
            cap: cap.max(1),
        }
    }

    /// The answer kept for `digest`, if it is still fresh at `mono`.
    pub fn get(&self, digest: &TokenDigest, mono: Duration) -> Option<&Answer> {
        self.entries
            .get(digest)
            .filter(|c| c.until > mono)
            .map(|c| &c.answer)
    }

    /// How many answers are kept (stale ones included, until they are replaced or dropped).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keeps `answer` for `digest`, got at `mono` (monotonic) and `now_secs` (wall): `ttl` at
    /// most for one that accepts the token, never past its `exp`.
    pub fn insert(
        &mut self,
        digest: TokenDigest,
        answer: Answer,
        mono: Duration,
        now_secs: u64,
        ttl: Duration,
    ) {
        let keep = if answer.refused_at(now_secs) {
            REFUSED_TTL
        } else {
            let left = answer.exp.map_or(ttl, |exp| {
                Duration::from_secs(exp.saturating_add(LEEWAY_SECS).saturating_sub(now_secs))
            });
            ttl.min(left)
        };
        if let Some(old) = self.entries.remove(&digest) {
            self.order.remove(&old.seq);
        }
        while self.entries.len() >= self.cap {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
        }
        let seq = self.next;
        self.next += 1;
        self.order.insert(seq, digest);
        self.entries.insert(
            digest,
            Cached {
                answer,
                until: mono.saturating_add(keep),
                seq,
            },
        );
    }
}

#[cfg(test)]
mod tests;
