//! Routing of one framed request to a [`Decision`]: answer now, serve an MCP body, open a
//! legacy SSE stream, or deliver a legacy message. Checks run in a fixed order — `Host`,
//! `Origin`, public discovery paths, authentication, then the route's own rules (legacy
//! session header, `Content-Type`, JSON body, MCP headers including the tools' `Mcp-Param-*`
//! bindings, the handshake-era session id, `Accept`) — so a refused request never reaches
//! the engine and changes nothing.
//!
//! Methods on `/mcp`, per era: `POST` serves. `GET` is `405` with `Allow: POST` in every era
//! (2025-03-26 … 2025-11-25 let a server without a standalone stream answer 405; 2026-07-28
//! removed the GET stream and says 405). `DELETE` is `405` in every era: a 2026-07-28 request
//! has no sessions; a handshake-era session id is a sealed token the server keeps nothing of
//! ([`super::session`]), so there is nothing to end (from 2027-07-28 the answer names the
//! removal of sessions).
//!
//! A handshake-era `POST /mcp` carrying `Mcp-Session-Id` (before 2027-07-28; `initialize`
//! excepted, which starts a new session) is served with the session the token opens to, or
//! refused: `404` for a token this server did not issue or that expired, `400` for one that is
//! not visible ASCII.
//!
//! `Host` comes first, on every path: HTTP/1.1 without `Host`, a repeated or a malformed one is
//! `400` (RFC 9112 §3.2); a well-formed `Host` this server does not answer for
//! ([`HostPolicy`]) is `421 Misdirected Request` (RFC 9110 §7.4, §15.5.20: the request names
//! an origin this server is not authoritative for — the DNS-rebinding case; 403 would claim a
//! credentials problem). An HTTP/1.0 request without `Host` is taken as aimed at the bind
//! address. URLs the server builds use the accepted authority only.
//!
//! Authentication takes the static bearer token or, with an issuer configured, an OAuth access
//! token checked against the IdP's keys the engine holds ([`super::jwt`]); a token signed by a
//! key the engine does not hold is [`Decision::NeedKeys`] (the engine fetches the keys and
//! routes it again). With introspection configured, an opaque token (not a JWT) is checked
//! against the issuer's introspection answer the engine holds ([`super::introspection`]); one
//! it holds no answer for is [`Decision::Introspect`]. A token's scopes bound the tools it may
//! call ([`ToolScopes`]).
//!
//! Pure: the runtime supplies the facts it observed (peer loopback?) and `now`.

use serde_json::json;

use super::exchange::{Accept, LegacyMessage, LegacyOpen, McpExchange, valid_token};
use super::guard::{BindRefused, OriginPolicy, bearer_credential, check_bind};
use super::headers::{self, BodyFacts, Era};
use super::host::{HostPolicy, HostRefusal};
use super::introspection::AnswerCache;
use super::jwt::KeySet;
use super::oauth;
use super::operator::{self, OperatorRequest, Parsed};
use super::options::HttpOptions;
use super::param_headers::ParamHeaders;
use super::request::Request;
use super::response::{HttpResponse, Status, route_span_id};
use super::session::{self, Session};
use super::tool_scopes::ToolScopes;
use crate::config::{AuthMode, Config, Limits, OAuthConfig};
use crate::protocol::message::Unreadable;
use crate::protocol::model::Method;
use crate::protocol::principal::Principal;
use crate::protocol::{ClientMessage, TransportFacts, TransportKind};
use crate::time::Timestamp;

/// What the runtime must do with a request.
#[derive(Debug)]
#[non_exhaustive]
pub enum Decision {
    /// Write this response.
    Respond(HttpResponse),
    /// Serve an MCP message, then write [`McpExchange::reply`].
    Mcp(McpExchange),
    /// Open a legacy SSE stream.
    OpenLegacyStream(LegacyOpen),
    /// Deliver a message to a legacy SSE stream.
    LegacyMessage(LegacyMessage),
    /// Serve an operator route (dashboard API, metrics, probes; [`operator`]).
    Operator(OperatorRequest),
    /// The request carries an access token signed by a key the engine does not hold: fetch
    /// the issuer's keys and route it again ([`HttpPolicy::unknown_key`] if they still lack
    /// it, [`HttpPolicy::keys_unavailable`] if they cannot be fetched).
    NeedKeys(Request),
    /// The request carries an opaque access token the engine holds no fresh introspection
    /// answer for: introspect it and route it again.
    Introspect(Request),
}

/// What the engine holds of the issuer when it routes: its keys and its introspection answers,
/// fresh at `mono` (its monotonic clock).
#[derive(Clone, Copy, Debug)]
pub struct Known<'a> {
    pub keys: &'a KeySet,
    pub answers: &'a AnswerCache,
    pub mono: core::time::Duration,
}

/// The HTTP policy of one listening server, fixed at startup.
#[derive(Clone, Debug)]
pub struct HttpPolicy {
    auth: AuthMode,
    oauth: Option<OAuthConfig>,
    origins: OriginPolicy,
    hosts: HostPolicy,
    bind_loopback: bool,
    /// Whether the MCP routes are served (see [`HttpOptions::mcp`]).
    mcp: bool,
    /// Whether the runtime speaks TLS on this port ([`HttpOptions::tls`]): the URLs it builds
    /// are `https://`.
    tls: bool,
    /// The tools' `Mcp-Param-*` bindings (empty unless [`HttpPolicy::with_param_headers`]).
    params: ParamHeaders,
    /// The scope each tool needs (empty unless [`HttpPolicy::with_tool_scopes`]).
    scopes: ToolScopes,
    /// The server's message limits, which a body is read under (once: the engine serves the
    /// value the router read).
    limits: Limits,
    /// The key handshake-era session ids are checked under ([`Config::session_key`]).
    session_key: Vec<u8>,
}

impl HttpPolicy {
    /// The policy of a server bound at `bind_authority` (the `ip:port` actually bound).
    /// Refuses a non-loopback bind without a bearer token, and a bad allowed-host entry.
    pub fn new(
        config: &Config,
        options: &HttpOptions,
        bind_authority: &str,
        bind_loopback: bool,
    ) -> Result<HttpPolicy, BindRefused> {
        check_bind(
            &options.host,
            bind_loopback,
            &config.auth,
            config.oauth.is_some(),
            options.tls,
        )?;
        let local = bind_authority
            .parse()
            .map_err(|_| BindRefused::BadBindAddress(bind_authority.to_string()))?;
        let hosts = HostPolicy::new(&options.host, local, &options.allowed_hosts)
            .map_err(BindRefused::BadAllowedHost)?;
        Ok(HttpPolicy {
            auth: config.auth.clone(),
            oauth: config.oauth.clone(),
            origins: OriginPolicy::new(&options.host, &options.allowed_origins),
            hosts,
            bind_loopback,
            mcp: options.mcp,
            tls: options.tls,
            params: ParamHeaders::default(),
            scopes: ToolScopes::default(),
            limits: config.limits.clone(),
            session_key: config.session_key.clone(),
        })
    }

    /// This policy checking the `Mcp-Param-*` headers of the tools in `params` (see
    /// [`ParamHeaders::of`]).
    pub fn with_param_headers(mut self, params: ParamHeaders) -> HttpPolicy {
        self.params = params;
        self
    }

    /// This policy bounding OAuth tokens' calls by `scopes` (see [`ToolScopes::of`]).
    pub fn with_tool_scopes(mut self, scopes: ToolScopes) -> HttpPolicy {
        self.scopes = scopes;
        self
    }

    /// Whether access tokens are checked (an issuer is configured): the engine then holds
    /// the issuer's keys.
    pub fn oauth(&self) -> Option<&OAuthConfig> {
        self.oauth.as_ref()
    }

    /// The `Host` values this server answers, for the startup log.
    pub fn allowed_hosts(&self) -> String {
        self.hosts.describe()
    }

    /// Decides what to do with `request`, which arrived from a loopback peer or not, at `now`,
    /// holding nothing of the issuer ([`HttpPolicy::route_with`]).
    pub fn route(&self, request: Request, peer_loopback: bool, now: Timestamp) -> Decision {
        let (keys, answers) = (KeySet::default(), AnswerCache::with_capacity(1));
        let known = Known {
            keys: &keys,
            answers: &answers,
            mono: core::time::Duration::ZERO,
        };
        self.route_with(request, peer_loopback, now, &known)
    }

    /// Decides what to do with `request`, which arrived from a loopback peer or not, at `now`,
    /// with what the engine holds of the issuer (nothing without OAuth).
    pub fn route_with(
        &self,
        mut request: Request,
        peer_loopback: bool,
        now: Timestamp,
        known: &Known<'_>,
    ) -> Decision {
        let keep = request.keep_alive();
        let span = route_span_id(&request.method, request.path());
        let respond = |r: HttpResponse| Decision::Respond(if keep { r } else { r.closing() });

        let hosts: Vec<&[u8]> = request
            .headers
            .iter()
            .filter(|h| h.name == "host")
            .map(|h| h.value.as_slice())
            .collect();
        let authority = match self.hosts.check(&hosts, request.version) {
            Ok(a) => a,
            Err(refusal) => return respond(host_refusal(refusal, &span)),
        };
        if let Some(origin) = request.header("origin") {
            // A page of this very origin (the `Host` was pinned above) may call its server:
            // that is the dashboard's own `fetch`.
            let allowed = std::str::from_utf8(origin)
                .is_ok_and(|o| self.origins.allows(o) || same_origin(o, &authority));
            if !allowed {
                let msg = "Forbidden: Origin is not allowed (set BERNSTEIN_MCP_ALLOWED_ORIGINS to trust it)";
                return respond(HttpResponse::rpc_error(
                    Status::FORBIDDEN,
                    &span,
                    None,
                    headers::INVALID_REQUEST,
                    msg,
                    None,
                ));
            }
        }
        if request.path().starts_with("/.well-known/") {
            return respond(self.well_known(&request, &authority, &span));
        }
        if self.needs_keys(&request, known.keys) {
            return Decision::NeedKeys(request);
        }
        if self.needs_introspection(&request, known) {
            return Decision::Introspect(request);
        }
        let op = operator::parse(&mut request);
        if let Parsed::Asset(a) = op {
            return respond(operator::asset(a, &span));
        }
        let principal = match self.authenticate(&request, peer_loopback, now, known, &authority) {
            Ok(p) => p,
            Err(refused) => return respond(self.refused(&request, &authority, &span, refused)),
        };
        match op {
            Parsed::None | Parsed::Asset(_) => {}
            Parsed::Route(route) => {
                return Decision::Operator(OperatorRequest {
                    route,
                    span_id: span,
                    keep_alive: keep,
                });
            }
            Parsed::Method(allow) => return respond(method_not_allowed(&span, allow)),
            Parsed::Bad(msg) => {
                return respond(HttpResponse::problem(
                    Status::BAD_REQUEST,
                    &span,
                    "bad_request",
                    &msg,
                ));
            }
        }
        let mcp_path = matches!(
            request.path(),
            "/mcp" | "/mcp/" | "/sse" | "/messages" | "/messages/"
        );
        if mcp_path && !self.mcp {
            return respond(HttpResponse::problem(
                Status::NOT_FOUND,
                &span,
                "not_found",
                "this is the read-only dashboard (bernstein dashboard): MCP is served by bernstein mcp --transport http",
            ));
        }
        match (request.path(), request.method.as_str()) {
            ("/mcp" | "/mcp/", "POST") => {
                match self.mcp_post(request, peer_loopback, now, &span, (principal, &authority)) {
                    Ok(x) => Decision::Mcp(x),
                    Err(r) => respond(r),
                }
            }
            ("/mcp" | "/mcp/", "DELETE") => respond(mcp_delete(&request, now, &span)),
            ("/mcp" | "/mcp/", _) => respond(method_not_allowed(&span, "POST")),
            ("/sse", "GET") => Decision::OpenLegacyStream(LegacyOpen { span_id: span }),
            ("/sse", _) => respond(method_not_allowed(&span, "GET")),
            ("/messages" | "/messages/", "POST") => {
                match self.legacy_post(request, peer_loopback, now, &span, (principal, &authority))
                {
                    Ok(m) => Decision::LegacyMessage(m),
                    Err(r) => respond(r),
                }
            }
            ("/messages" | "/messages/", _) => respond(method_not_allowed(&span, "POST")),
            _ => respond(HttpResponse::problem(
                Status::NOT_FOUND,
                &span,
                "not_found",
                "no such endpoint; MCP is served at /mcp, the dashboard at /",
            )),
        }
    }

    fn well_known(&self, request: &Request, authority: &str, span: &str) -> HttpResponse {
        let path = request.path();
        let (Some(o), oauth::METADATA_ROOT | oauth::METADATA_MCP) = (&self.oauth, path) else {
            return HttpResponse::problem(Status::NOT_FOUND, span, "not_found", "not found");
        };
        if request.method != "GET" {
            return method_not_allowed(span, "GET");
        }
        let base = oauth::request_base(request, authority, self.tls);
        HttpResponse::json(Status::OK, span, &oauth::metadata(o, &base, path))
    }

    /// The 401 of a request [`authorize`] refused. With a token configured it carries an RFC
    /// 6750 `Bearer` challenge (`error="invalid_token"` when a bearer token was sent and did
    /// not match; no error attribute when none was sent) and a body naming the fix; with an
    /// issuer configured the challenge points at the protected-resource metadata instead of
    /// naming a realm.
    fn unauthorized(&self, request: &Request, authority: &str, span: &str) -> HttpResponse {
        let sent = request
            .header("authorization")
            .and_then(bearer_credential)
            .is_some();
        let (error, description) = match (&self.auth, sent) {
            (AuthMode::None, _) => (
                "unauthorized",
                "this server is anonymous on loopback only; reach it from the machine it runs on, or restart it with BERNSTEIN_MCP_TOKEN set and send that token in an Authorization: Bearer header",
            ),
            (AuthMode::Bearer { .. }, false) => (
                "unauthorized",
                "this server requires a bearer token: send the value of BERNSTEIN_MCP_TOKEN (as the server was started with it) in an Authorization: Bearer header",
            ),
            (AuthMode::Bearer { .. }, true) => (
                "invalid_token",
                "the bearer token does not match: send the value of BERNSTEIN_MCP_TOKEN (as the server was started with it) in an Authorization: Bearer header",
            ),
        };
        let r = HttpResponse::json(
            Status::UNAUTHORIZED,
            span,
            &json!({ "error": error, "error_description": description }),
        );
        let invalid = if sent {
            ", error=\"invalid_token\""
        } else {
            ""
        };
        match (&self.oauth, &self.auth) {
            (Some(_), _) => r.with_header(
                "WWW-Authenticate",
                format!(
                    "{}{invalid}",
                    oauth::challenge(&oauth::request_base(request, authority, self.tls))
                ),
            ),
            (None, AuthMode::Bearer { .. }) => r.with_header(
                "WWW-Authenticate",
                format!("Bearer realm=\"bernstein\"{invalid}"),
            ),
            (None, AuthMode::None) => r,
        }
    }

    fn mcp_post(
        &self,
        mut request: Request,
        loopback: bool,
        now: Timestamp,
        span: &str,
        (principal, authority): (Option<Principal>, &str),
    ) -> Result<McpExchange, HttpResponse> {
        let (message, facts) = checked_body(&mut request, now, span, &self.limits)?;
        self.check_scopes(&request, authority, span, principal.as_ref(), &message)?;
        let check = headers::check_headers(&request, &facts)
            .and_then(|check| {
                if check.era == Era::Stateless && !facts.batch {
                    self.params.check(&request, &facts)?;
                }
                Ok(check)
            })
            .map_err(|rej| header_refusal(span, &facts, rej))?;
        let accept = Accept::parse(request.header_str("accept"));
        if facts.is_request() && !accept.any() {
            let msg = "Not Acceptable: accept application/json or text/event-stream";
            return Err(HttpResponse::rpc_error(
                Status::NOT_ACCEPTABLE,
                span,
                facts.id.as_ref(),
                headers::INVALID_REQUEST,
                msg,
                None,
            ));
        }
        let session = match check.era {
            Era::Handshake => self.session(&request, now, span, &facts)?,
            // A 2026-07-28 request needs no session; its header is ignored until the cut-off
            // (`headers::check_session_header`).
            Era::Stateless => None,
        };
        let keep_alive = request.keep_alive();
        let traceparent = request.header_str("traceparent").map(str::to_string);
        let protocol_version = check
            .protocol_version
            .or_else(|| session.map(|s| s.revision.as_str().to_string()));
        Ok(McpExchange {
            message,
            facts: TransportFacts {
                kind: TransportKind::StreamableHttp,
                protocol_version,
                loopback,
                // The engine knows the connection's, if `logging/setLevel` set one.
                log_level: None,
                principal,
            },
            era: check.era,
            accept,
            keep_alive,
            traceparent,
            session,
        })
    }

    /// The session a handshake-era request's `Mcp-Session-Id` opens to (none without one, and
    /// for `initialize`, which starts a new session whatever it carries); a header this server
    /// did not issue, or issued too long ago, is `404` (the client starts a new session), one
    /// that is not visible ASCII `400`.
    fn session(
        &self,
        request: &Request,
        now: Timestamp,
        span: &str,
        facts: &BodyFacts,
    ) -> Result<Option<Session>, HttpResponse> {
        let Some(raw) = request.header(session::HEADER) else {
            return Ok(None);
        };
        if facts.known_method() == Some(Method::Initialize) {
            return Ok(None);
        }
        session::open(&self.session_key, raw, now)
            .map(Some)
            .map_err(|refused| {
                let (status, msg) = match refused {
                    session::Refusal::Characters => (
                        Status::BAD_REQUEST,
                        format!("Bad Request: {}", refused.explain()),
                    ),
                    _ => (
                        Status::NOT_FOUND,
                        format!(
                            "Session not found: {}; send initialize without it to start a new \
                             session",
                            refused.explain()
                        ),
                    ),
                };
                HttpResponse::rpc_error(
                    status,
                    span,
                    facts.id.as_ref(),
                    headers::INVALID_REQUEST,
                    &msg,
                    Some(json!({ "reason": refused.code() })),
                )
            })
    }
}

impl HttpPolicy {
    fn legacy_post(
        &self,
        mut request: Request,
        loopback: bool,
        now: Timestamp,
        span: &str,
        (principal, authority): (Option<Principal>, &str),
    ) -> Result<LegacyMessage, HttpResponse> {
        let token = request
            .query()
            .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("stream=")))
            .filter(|t| valid_token(t))
            .map(String::from);
        let Some(token) = token else {
            return Err(HttpResponse::problem(
                Status::NOT_FOUND,
                span,
                "stream_not_found",
                "missing or invalid stream token",
            ));
        };
        let (message, facts) = checked_body(&mut request, now, span, &self.limits)?;
        self.check_scopes(&request, authority, span, principal.as_ref(), &message)?;
        // The stateless era's header rules do not apply here: a 2026-07-28 request reaches the
        // engine, which answers it on the stream with the handshake-only -32022 (era module).
        let protocol_version =
            headers::version_header(&request).map_err(|rej| header_refusal(span, &facts, rej))?;
        let keep_alive = request.keep_alive();
        Ok(LegacyMessage {
            token,
            message,
            facts: TransportFacts {
                kind: TransportKind::LegacySse,
                protocol_version,
                loopback,
                principal,
                log_level: None,
            },
            keep_alive,
        })
    }
}

/// Whether `origin` is `http(s)://` + the accepted `Host` authority.
fn same_origin(origin: &str, authority: &str) -> bool {
    let origin = origin.trim().trim_end_matches('/');
    ["http://", "https://"].iter().any(|scheme| {
        origin
            .get(..scheme.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
            && origin[scheme.len()..].eq_ignore_ascii_case(authority)
    })
}

/// The answer to a request whose `Host` was refused.
fn host_refusal(refusal: HostRefusal, span: &str) -> HttpResponse {
    let (status, msg) = match refusal {
        HostRefusal::Missing => (
            Status::BAD_REQUEST,
            "Bad Request: HTTP/1.1 requires a Host header",
        ),
        HostRefusal::Repeated => (
            Status::BAD_REQUEST,
            "Bad Request: more than one Host header",
        ),
        HostRefusal::Malformed => (
            Status::BAD_REQUEST,
            "Bad Request: the Host header is not a host[:port]",
        ),
        HostRefusal::Foreign => (
            Status::MISDIRECTED_REQUEST,
            "Misdirected Request: this server does not answer for that Host (set \
             BERNSTEIN_MCP_ALLOWED_HOSTS to add a name it is reached by)",
        ),
    };
    HttpResponse::rpc_error(status, span, None, headers::INVALID_REQUEST, msg, None).closing()
}

/// The `400` answer to a request whose MCP headers were refused.
fn header_refusal(span: &str, facts: &BodyFacts, rej: headers::HeaderRejection) -> HttpResponse {
    HttpResponse::rpc_error(
        Status::BAD_REQUEST,
        span,
        facts.id.as_ref(),
        rej.code,
        &rej.message,
        rej.data,
    )
}

/// The checks shared by every route that carries a JSON-RPC body: the legacy session rule,
/// `Content-Type`, UTF-8 and JSON. The body is read here, once ([`ClientMessage::read`]): the
/// engine serves that value, and the header rules read it.
fn checked_body(
    request: &mut Request,
    now: Timestamp,
    span: &str,
    limits: &Limits,
) -> Result<(ClientMessage, BodyFacts), HttpResponse> {
    if let Err(msg) = headers::check_session_header(request, now) {
        return Err(HttpResponse::rpc_error(
            Status::BAD_REQUEST,
            span,
            None,
            headers::INVALID_REQUEST,
            &msg,
            None,
        ));
    }
    let json_type = request
        .header_str("content-type")
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"));
    if !json_type {
        let msg = "Unsupported Media Type: Content-Type must be application/json";
        return Err(HttpResponse::rpc_error(
            Status::UNSUPPORTED_MEDIA_TYPE,
            span,
            None,
            headers::INVALID_REQUEST,
            msg,
            None,
        ));
    }
    let parse_error = |msg: String| {
        HttpResponse::rpc_error(
            Status::BAD_REQUEST,
            span,
            None,
            headers::PARSE_ERROR,
            &msg,
            None,
        )
    };
    let message = ClientMessage::read(std::mem::take(&mut request.body), limits);
    let facts = match message.value() {
        Ok(value) => BodyFacts::of(value),
        Err(Unreadable::NotUtf8 { offset }) => {
            return Err(parse_error(format!(
                "Parse error: body is not valid UTF-8 (byte {offset})"
            )));
        }
        Err(Unreadable::Syntax(e)) => return Err(parse_error(format!("Parse error: {e}"))),
    };
    Ok((message, facts))
}

fn mcp_delete(request: &Request, now: Timestamp, span: &str) -> HttpResponse {
    let stateless = request
        .header_str("mcp-protocol-version")
        .is_some_and(|v| headers::era_of(v) == Era::Stateless);
    if stateless {
        return method_not_allowed(span, "POST");
    }
    // A session id is a sealed token the server keeps nothing of: there is nothing to end, and
    // the token keeps opening until it expires. 405 is the spec's answer for a server that does
    // not let clients end sessions (so a client does not take it as ended).
    let msg = if now >= Timestamp::LEGACY_SESSION_CUTOFF {
        headers::session_removed_message()
    } else {
        format!(
            "Method Not Allowed: a session id is a sealed token this server keeps nothing of, so \
             it cannot be ended; it expires {} h after its initialize",
            session::EXPIRY_MS / 3_600_000
        )
    };
    HttpResponse::rpc_error(
        Status::METHOD_NOT_ALLOWED,
        span,
        None,
        headers::INVALID_REQUEST,
        &msg,
        None,
    )
    .with_header("Allow", "POST")
}

fn method_not_allowed(span: &str, allow: &str) -> HttpResponse {
    HttpResponse::problem(
        Status::METHOD_NOT_ALLOWED,
        span,
        "method_not_allowed",
        &format!("use {allow}"),
    )
    .with_header("Allow", allow)
}

mod auth;

#[cfg(test)]
mod tests;
