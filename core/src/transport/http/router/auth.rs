//! Who a request is: the static bearer token, an OAuth access token (its principal), or an
//! anonymous loopback peer; and the answers of a refusal (RFC 6750 and RFC 9728 challenges).
//! A token's text never reaches a response or a log line.

use serde_json::json;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;

use super::super::guard::{authorize, bearer_credential};
use super::super::headers::{BodyFacts, INVALID_REQUEST};
use super::super::introspection::{self, OpaqueToken, TokenDigest};
use super::super::jwt::{self, Expected, KeySet, TokenRefused};
use super::super::oauth;
use super::super::request::Request;
use super::super::response::{HttpResponse, Status, route_span_id};
use super::{HttpPolicy, Known};
use crate::config::AuthMode;
use crate::protocol::message::ClientMessage;
use crate::protocol::model::Method;
use crate::protocol::principal::Principal;
use crate::time::Timestamp;

/// Why a request was not let in.
#[derive(Debug)]
pub(super) enum Refused {
    /// No acceptable credential (the static-token and anonymous rules).
    Unauthorized,
    /// An access token was refused.
    Token(TokenRefused),
}

impl HttpPolicy {
    /// Whether the static bearer token is configured and `given` is it (constant time).
    fn static_token(&self, given: &[u8]) -> bool {
        match &self.auth {
            AuthMode::Bearer { token } if !token.is_empty() => {
                let (a, b) = (Sha256::digest(given), Sha256::digest(token.as_bytes()));
                bool::from(a.as_slice().ct_eq(b.as_slice()))
            }
            _ => false,
        }
    }

    /// The access token of a request, when OAuth is on and the credential is not the static
    /// token. Beside a static token, only a credential shaped like a JWT is taken for one (a
    /// mistyped static token is refused as such, naming the fix), unless opaque tokens are
    /// introspected: then every other credential is one.
    fn access_token<'r>(&self, request: &'r Request) -> Option<&'r [u8]> {
        let oauth = self.oauth.as_ref()?;
        let given = request
            .header("authorization")
            .and_then(bearer_credential)?;
        let static_configured = matches!(&self.auth, AuthMode::Bearer { .. });
        let token = !self.static_token(given)
            && (!static_configured || jwt::looks_like_jwt(given) || oauth.introspection.is_some());
        token.then_some(given)
    }

    /// The request's access token when it is opaque (not a JWT) and opaque tokens are
    /// introspected.
    pub fn opaque_token(&self, request: &Request) -> Option<OpaqueToken> {
        self.oauth.as_ref()?.introspection.as_ref()?;
        self.access_token(request)
            .filter(|t| !jwt::is_jwt(t))
            .map(OpaqueToken::new)
    }

    /// Whether the request's opaque token has no fresh introspection answer in `known`.
    pub(super) fn needs_introspection(&self, request: &Request, known: &Known<'_>) -> bool {
        self.opaque_token(request)
            .is_some_and(|t| known.answers.get(&t.digest(), known.mono).is_none())
    }

    /// Whether the request's access token names a key `keys` lacks (the engine fetches them).
    pub(super) fn needs_keys(&self, request: &Request, keys: &KeySet) -> bool {
        self.access_token(request)
            .and_then(|t| jwt::header(t).ok())
            .is_some_and(|h| !keys.knows(&h))
    }

    /// The principal of an OAuth-authenticated request (`None`: the static token or an
    /// anonymous loopback peer), or why it is refused.
    pub(super) fn authenticate(
        &self,
        request: &Request,
        peer_loopback: bool,
        now: Timestamp,
        known: &Known<'_>,
        authority: &str,
    ) -> Result<Option<Principal>, Refused> {
        if let (Some(token), Some(o)) = (self.access_token(request), &self.oauth) {
            let mcp = |scheme: &str| format!("{scheme}://{authority}/mcp");
            let (http, https) = (mcp("http"), mcp("https"));
            let mut audiences = vec![http.as_str(), https.as_str()];
            audiences.extend(o.audience.as_deref());
            let expected = Expected {
                issuer: &o.issuer,
                audiences: &audiences,
                now_secs: now.0 / 1000,
            };
            if o.introspection.is_some() && !jwt::is_jwt(token) {
                let digest = TokenDigest::of(token);
                // The engine routes a request here only with a fresh answer.
                let Some(answer) = known.answers.get(&digest, known.mono) else {
                    return Err(Refused::Token(TokenRefused::Inactive));
                };
                return introspection::check(answer, &expected)
                    .map(Some)
                    .map_err(Refused::Token);
            }
            return jwt::check(token, known.keys, &expected)
                .map(Some)
                .map_err(Refused::Token);
        }
        let given = request.header("authorization");
        if authorize(&self.auth, self.bind_loopback, peer_loopback, given) {
            Ok(None)
        } else {
            Err(Refused::Unauthorized)
        }
    }

    /// The answer to a refused request.
    pub(super) fn refused(
        &self,
        request: &Request,
        authority: &str,
        span: &str,
        refused: Refused,
    ) -> HttpResponse {
        match refused {
            Refused::Unauthorized => self.unauthorized(request, authority, span),
            Refused::Token(why) => {
                let description = why.to_string();
                let base = oauth::request_base(request, authority, self.tls);
                HttpResponse::json(
                    Status::UNAUTHORIZED,
                    span,
                    &json!({"error": "invalid_token", "error_description": description}),
                )
                .with_header(
                    "WWW-Authenticate",
                    format!(
                        "{}, error=\"invalid_token\", error_description=\"{}\"",
                        oauth::challenge(&base),
                        quoted(&description)
                    ),
                )
            }
        }
    }

    /// `403 insufficient_scope` when `message` calls a tool beyond `principal`'s scopes (each
    /// call of a batch is looked at).
    pub(super) fn check_scopes(
        &self,
        request: &Request,
        authority: &str,
        span: &str,
        principal: Option<&Principal>,
        message: &ClientMessage,
    ) -> Result<(), HttpResponse> {
        let Some(p) = principal else { return Ok(()) };
        let Ok(value) = message.value() else {
            return Ok(());
        };
        let one = std::slice::from_ref(value);
        let calls = value.as_array().map_or(one, Vec::as_slice);
        let missing = calls.iter().find_map(|call| {
            let facts = BodyFacts::of(call);
            if facts.known_method() != Some(Method::ToolsCall) {
                return None;
            }
            let scope = self.scopes.missing(facts.name.as_deref()?, p.scopes)?;
            Some((facts, scope))
        });
        let Some((facts, scope)) = missing else {
            return Ok(());
        };
        let tool = shown(facts.name.as_deref().unwrap_or_default());
        let description = format!("calling {tool} needs the scope {scope}");
        let base = oauth::request_base(request, authority, self.tls);
        // A JSON-RPC error answering the call (its id, for a single message), so that a client
        // shows why; the challenge says the same to an HTTP layer.
        let id = if value.is_array() {
            None
        } else {
            facts.id.as_ref()
        };
        let data = json!({"error": "insufficient_scope", "scope": scope});
        Err(HttpResponse::rpc_error(
            Status::FORBIDDEN,
            span,
            id,
            INVALID_REQUEST,
            &format!("Forbidden: {description} (the access token's scopes do not include it)"),
            Some(data),
        )
        .with_header(
            "WWW-Authenticate",
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{base}{}\", error_description=\"{}\"",
                oauth::METADATA_MCP,
                quoted(&description)
            ),
        ))
    }

    /// The span, authority and keep-alive of a request routed before (`NeedKeys`, `Introspect`).
    fn parked_facts(&self, request: &Request) -> (String, String, bool) {
        let span = route_span_id(&request.method, request.path());
        let hosts: Vec<&[u8]> = request
            .headers
            .iter()
            .filter(|h| h.name == "host")
            .map(|h| h.value.as_slice())
            .collect();
        let authority = self
            .hosts
            .check(&hosts, request.version)
            .unwrap_or_default();
        (span, authority, request.keep_alive())
    }

    /// The `401` of a request whose token names a key the issuer's fresh keys still lack (or
    /// that came while the keys were fetched too recently to fetch again).
    pub fn unknown_key(&self, request: &Request) -> HttpResponse {
        let (span, authority, keep) = self.parked_facts(request);
        let r = self.refused(
            request,
            &authority,
            &span,
            Refused::Token(TokenRefused::UnknownKey),
        );
        if keep { r } else { r.closing() }
    }

    /// The `503` of a request whose token could not be checked: the issuer's keys could not be
    /// fetched (`why` says how; it names no token).
    pub fn keys_unavailable(&self, request: &Request, why: &str) -> HttpResponse {
        let what = format!("the issuer's keys could not be fetched ({why})");
        self.idp_unavailable(request, &what, 5)
    }

    /// The `503` of a request whose opaque token could not be introspected (`why` says how; it
    /// names no token), to retry in `retry_secs`.
    pub fn introspection_unavailable(
        &self,
        request: &Request,
        why: &str,
        retry_secs: u32,
    ) -> HttpResponse {
        let what = format!("the issuer's introspection failed ({why})");
        self.idp_unavailable(request, &what, retry_secs)
    }

    /// The `401` of a request whose introspected token is refused (the answer arrived, but the
    /// engine could not keep it).
    pub fn introspection_refused(&self, request: &Request) -> HttpResponse {
        let (span, authority, keep) = self.parked_facts(request);
        let r = self.refused(
            request,
            &authority,
            &span,
            Refused::Token(TokenRefused::Inactive),
        );
        if keep { r } else { r.closing() }
    }

    fn idp_unavailable(&self, request: &Request, what: &str, retry_secs: u32) -> HttpResponse {
        let (span, _, keep) = self.parked_facts(request);
        let r = HttpResponse::problem(
            Status::SERVICE_UNAVAILABLE,
            &span,
            "idp_unavailable",
            &format!("the access token cannot be checked now: {what}; retry later"),
        )
        .with_header("Retry-After", retry_secs.to_string());
        if keep { r } else { r.closing() }
    }
}

/// `text` made safe inside a quoted-string of a header.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_control() || !c.is_ascii() => '?',
            c => c,
        })
        .collect()
}

/// A tool name as a refusal shows it: a short plain name, or a marker.
fn shown(name: &str) -> String {
    if name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
    {
        name.to_string()
    } else {
        "this tool".to_string()
    }
}
