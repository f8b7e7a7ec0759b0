//! The `requestState` of an `InputRequiredResult` (2026-07-28): what the server needs back from
//! the client to resume a request, authenticated so that the client can read it but not change
//! it. The server keeps nothing between rounds; the state is its memory.
//!
//! Token: `v1.<payload>.<tag>`, the payload base64url (no padding) of the JSON [`Claims`], the
//! tag HMAC-SHA256 under [`Config::request_state_key`](crate::Config) of
//! `bernstein.request-state.v1:` and the encoded payload, 64 lowercase hex digits, checked in
//! constant time. The claims bind the handler's state to the principal (OAuth `{iss, sub}`, or
//! none for the static token and unauthenticated transports), an expiry and the digest of the
//! original request ([`request_digest`]); [`open`] refuses a token that fails any of them.
//! The payload is not encrypted: a handler keeps no secret in its state.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ids::digest_of_value;
use super::principal::Principal;
use crate::digest::HmacCheck;
use crate::time::Timestamp;

/// The label every tag is computed under, keeping these tags apart from the key's other uses.
const TAG_LABEL: &[u8] = b"bernstein.request-state.v1:";
const PREFIX: &str = "v1.";
/// The longest token [`open`] reads; anything longer is refused unread.
pub const MAX_TOKEN_BYTES: usize = 64 * 1024;

/// What a token carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// The digest of the request the state belongs to ([`request_digest`]).
    pub request: String,
    /// Issuer and subject of the principal the state was issued to; `None`: no OAuth
    /// principal (static token, stdio, no auth).
    pub principal: Option<(String, String)>,
    /// When the state stops being accepted (ms since the epoch).
    pub expires: u64,
    /// What was asked, as (key, capability key) pairs: the responses the retry may carry.
    pub asked: Vec<(String, String)>,
    /// The handler's own state.
    pub state: Option<Value>,
}

/// Why a `requestState` was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not a token this server issues (wrong shape, or a payload that does not parse).
    Malformed,
    /// The tag does not match: changed, or made under another key.
    Forged,
    /// Past its expiry.
    Expired,
    /// Issued for another request (other method, tool, prompt or arguments).
    OtherRequest,
    /// Issued to another principal.
    OtherPrincipal,
}

impl Refusal {
    /// The stable code in `error.data.reason`.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::Malformed => "request_state_malformed",
            Refusal::Forged => "request_state_forged",
            Refusal::Expired => "request_state_expired",
            Refusal::OtherRequest => "request_state_other_request",
            Refusal::OtherPrincipal => "request_state_other_principal",
        }
    }

    /// What the error message says.
    pub fn explain(self) -> &'static str {
        match self {
            Refusal::Malformed => "params.requestState is not a request state this server issued",
            Refusal::Forged => "params.requestState failed its integrity check",
            Refusal::Expired => "params.requestState has expired",
            Refusal::OtherRequest => "params.requestState was issued for a different request",
            Refusal::OtherPrincipal => "params.requestState was issued to a different principal",
        }
    }
}

/// The digest a state is bound to: the method and its params without `inputResponses`,
/// `requestState` and `_meta` (which carries per-round transport facts such as trace context
/// and progress tokens; the capabilities in it are checked again each round).
pub fn request_digest(method: &str, params: Option<&Value>) -> String {
    let mut params = match params {
        Some(Value::Object(p)) => p.clone(),
        _ => Map::new(),
    };
    for key in ["inputResponses", "requestState", "_meta"] {
        params.remove(key);
    }
    let bound = serde_json::json!({"method": method, "params": params});
    digest_of_value(&bound).to_string()
}

/// The principal as the claims name it.
pub fn principal_of(principal: Option<&Principal>) -> Option<(String, String)> {
    principal.map(|p| (p.iss.clone(), p.sub.clone()))
}

fn tag(key: &[u8], payload: &str) -> HmacCheck {
    let mut mac = HmacCheck::new(key);
    mac.update(TAG_LABEL);
    mac.update(payload.as_bytes());
    mac
}

/// The token of `claims` under `key`.
pub fn seal(key: &[u8], claims: &Claims) -> String {
    let json = serde_json::to_vec(claims).unwrap_or_default();
    let payload = URL_SAFE_NO_PAD.encode(json);
    let rendered = tag(key, &payload).tag();
    let hex = rendered.strip_prefix("hmac-sha256:").unwrap_or(&rendered);
    format!("{PREFIX}{payload}.{hex}")
}

/// The claims of `token` when it was sealed under `key`, has not expired at `now`, and was
/// issued for the request of digest `request` and for `principal`.
pub fn open(
    key: &[u8],
    token: &str,
    now: Timestamp,
    request: &str,
    principal: Option<&Principal>,
) -> Result<Claims, Refusal> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(Refusal::Malformed);
    }
    let body = token.strip_prefix(PREFIX).ok_or(Refusal::Malformed)?;
    let (payload, hex) = body.split_once('.').ok_or(Refusal::Malformed)?;
    // Checked before anything in the payload is read.
    if !tag(key, payload).verify(&format!("hmac-sha256:{hex}")) {
        return Err(Refusal::Forged);
    }
    let json = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| Refusal::Malformed)?;
    let claims: Claims = serde_json::from_slice(&json).map_err(|_| Refusal::Malformed)?;
    if now.0 >= claims.expires {
        return Err(Refusal::Expired);
    }
    if claims.request != request {
        return Err(Refusal::OtherRequest);
    }
    if claims.principal != principal_of(principal) {
        return Err(Refusal::OtherPrincipal);
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::principal::Scopes;
    use serde_json::json;

    const KEY: &[u8] = b"request-state-test-key";

    fn claims(request: &str, principal: Option<&Principal>) -> Claims {
        Claims {
            request: request.into(),
            principal: principal_of(principal),
            expires: 10_000,
            asked: vec![("confirm".into(), "elicitation".into())],
            state: Some(json!({"step": 2})),
        }
    }

    fn alice() -> Principal {
        Principal {
            iss: "https://idp.example".into(),
            sub: "alice".into(),
            scopes: Scopes::default(),
        }
    }

    #[test]
    fn a_sealed_state_opens_for_its_request_and_principal_until_it_expires() {
        let req = request_digest("tools/call", Some(&json!({"name": "t", "arguments": {}})));
        let who = alice();
        let c = claims(&req, Some(&who));
        let token = seal(KEY, &c);
        assert!(token.starts_with("v1."));
        assert_eq!(open(KEY, &token, Timestamp(9_999), &req, Some(&who)), Ok(c));
        assert_eq!(
            open(KEY, &token, Timestamp(10_000), &req, Some(&who)),
            Err(Refusal::Expired)
        );
    }

    #[test]
    fn tampered_forged_and_malformed_states_are_refused() {
        let req = request_digest("tools/call", None);
        let token = seal(KEY, &claims(&req, None));
        let open_at = |t: &str| open(KEY, t, Timestamp(1), &req, None);
        assert_eq!(open_at(&format!("{token}-TAMPERED")), Err(Refusal::Forged));
        // A payload changed (another expiry) under the old tag.
        let (_, good) = token.rsplit_once('.').unwrap();
        let later = Claims {
            expires: u64::MAX,
            ..claims(&req, None)
        };
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&later).unwrap());
        assert_eq!(
            open_at(&format!("v1.{payload}.{good}")),
            Err(Refusal::Forged)
        );
        // Another key.
        assert_eq!(
            open(b"other", &token, Timestamp(1), &req, None),
            Err(Refusal::Forged)
        );
        // Upper-case hex is not the tag's rendering.
        let upper = format!(
            "{}.{}",
            token.rsplit_once('.').unwrap().0,
            good.to_uppercase()
        );
        assert_eq!(open_at(&upper), Err(Refusal::Forged));
        for bad in ["", "v1.", "v2.a.b", "v1.nodot", "garbage"] {
            assert!(open_at(bad).is_err(), "{bad}");
        }
        assert_eq!(
            open_at(&"v".repeat(MAX_TOKEN_BYTES + 1)),
            Err(Refusal::Malformed)
        );
        // A well-tagged payload that is not claims.
        let payload = URL_SAFE_NO_PAD.encode(b"[1,2]");
        let rendered = tag(KEY, &payload).tag();
        let hex = rendered.strip_prefix("hmac-sha256:").unwrap();
        assert_eq!(
            open_at(&format!("v1.{payload}.{hex}")),
            Err(Refusal::Malformed)
        );
    }

    #[test]
    fn a_state_replayed_for_another_request_or_principal_is_refused() {
        let params = json!({"name": "t", "arguments": {"a": 1}, "_meta": {"x": 1}});
        let req = request_digest("tools/call", Some(&params));
        let who = alice();
        let token = seal(KEY, &claims(&req, Some(&who)));
        // The retry's own fields and `_meta` are not part of the request.
        let retry = json!({"name": "t", "arguments": {"a": 1}, "_meta": {"y": 2},
            "inputResponses": {}, "requestState": token});
        assert_eq!(request_digest("tools/call", Some(&retry)), req);
        let other_args = request_digest(
            "tools/call",
            Some(&json!({"name": "t", "arguments": {"a": 2}})),
        );
        assert_eq!(
            open(KEY, &token, Timestamp(1), &other_args, Some(&who)),
            Err(Refusal::OtherRequest)
        );
        let other_method = request_digest("prompts/get", Some(&params));
        assert_ne!(other_method, req);
        let bob = Principal {
            sub: "bob".into(),
            ..alice()
        };
        assert_eq!(
            open(KEY, &token, Timestamp(1), &req, Some(&bob)),
            Err(Refusal::OtherPrincipal)
        );
        assert_eq!(
            open(KEY, &token, Timestamp(1), &req, None),
            Err(Refusal::OtherPrincipal)
        );
    }
}
