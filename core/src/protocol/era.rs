//! Protocol revisions and the choice of era for each request.
//!
//! Two eras share one endpoint, chosen per request and never stored:
//! - the handshake era (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25): `initialize`
//!   negotiates a revision, which the runtime remembers as a transport fact (stdio) or the
//!   client repeats in the `MCP-Protocol-Version` header (HTTP);
//! - the stateless era (2026-07-28): every request names its revision and capabilities in
//!   `params._meta` (`io.modelcontextprotocol/protocolVersion`,
//!   `io.modelcontextprotocol/clientCapabilities`).
//!
//! Rules (see [`select`]):
//! 1. A request whose `_meta` holds `io.modelcontextprotocol/protocolVersion` is served under
//!    that revision: 2026-07-28 in the stateless era (the envelope must then be complete), a
//!    handshake revision in the handshake era (a dual-era server may accept it statelessly),
//!    anything else gets `-32022 UnsupportedProtocolVersion`.
//! 2. `server/discover` without that key, or any request over a transport that announced
//!    2026-07-28 without it, is a stateless request with an incomplete envelope: `-32602`.
//! 3. Otherwise the request is in the handshake era, at the transport's revision when that is a
//!    handshake revision, else at 2025-11-25.
//!
//! The legacy HTTP+SSE transport (`/sse`) carries the handshake era only: a stateless-era
//! request over it (`server/discover`, a 2026-07-28 `_meta` revision or header) is answered on
//! its stream with `-32022` whose `supported` lists the handshake revisions alone, which every
//! auto-negotiating client (TypeScript and Python SDK 2.x) takes as "fall back to
//! `initialize`"; 2026-07-28 is served at `/mcp`.
//!
//! This module only decides; it builds no results and must never keep state between requests.

use serde_json::{Value, json};

use super::TransportFacts;
use super::TransportKind;
use super::jsonrpc::RpcError;
use super::model::{Meta, Method};

/// `_meta` key naming the revision of a stateless request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key holding the client's capabilities for a stateless request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key tying a message to its task (the tasks of both eras).
pub const META_RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// `_meta` key of a result naming the server (stateless era).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// A protocol revision this server speaks. Ordered oldest to newest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Revision {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

impl Revision {
    /// Every supported revision, newest first (the order advertised to clients).
    pub const SUPPORTED: [Revision; 5] = [
        Revision::V2026_07_28,
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
        Revision::V2024_11_05,
    ];

    /// The newest revision `initialize` can negotiate, and the default of the handshake era.
    pub const LATEST_HANDSHAKE: Revision = Revision::V2025_11_25;

    /// The stateless revision.
    pub const MODERN: Revision = Revision::V2026_07_28;

    pub fn parse(s: &str) -> Option<Revision> {
        Revision::SUPPORTED.into_iter().find(|r| r.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// Whether this revision is served statelessly (per-request `_meta`, `resultType`).
    pub fn is_modern(self) -> bool {
        self >= Revision::V2026_07_28
    }

    /// JSON-RPC batches: only 2025-03-26 had them (added there, removed in 2025-06-18; the
    /// 2024-11-05 schema's message union has no batch either).
    pub fn allows_batches(self) -> bool {
        self == Revision::V2025_03_26
    }

    /// `Tool.annotations` exists from 2025-03-26.
    pub fn has_tool_annotations(self) -> bool {
        self >= Revision::V2025_03_26
    }

    /// `title` on tools, prompts, resources and implementations, `Tool.outputSchema` and
    /// `CallToolResult.structuredContent` exist from 2025-06-18.
    pub fn has_titles_and_structured_output(self) -> bool {
        self >= Revision::V2025_06_18
    }

    /// `resource_link` content blocks in tool results exist from 2025-06-18.
    pub fn has_resource_links(self) -> bool {
        self >= Revision::V2025_06_18
    }

    /// `Tool.execution.taskSupport` exists in 2025-11-25 only (2026-07-28 moved tasks into the
    /// `io.modelcontextprotocol/tasks` extension).
    /// Whether invalid tool arguments are a tool execution error (`isError` result the model
    /// can read and correct) rather than a JSON-RPC -32602 (SEP-1303, from 2025-11-25).
    pub fn reports_argument_errors_in_result(self) -> bool {
        self >= Revision::V2025_11_25
    }

    pub fn has_tool_execution(self) -> bool {
        self == Revision::V2025_11_25
    }

    /// JSON-RPC error code for an unknown resource: `-32002` up to 2025-11-25, `-32602` since.
    pub fn resource_not_found_code(self) -> i64 {
        if self.is_modern() {
            super::jsonrpc::INVALID_PARAMS
        } else {
            -32002
        }
    }

    /// The revision `initialize` answers for a requested one: the same when supported in the
    /// handshake era, else the newest handshake revision.
    pub fn negotiate(requested: &str) -> Revision {
        match Revision::parse(requested) {
            Some(r) if !r.is_modern() => r,
            _ => Revision::LATEST_HANDSHAKE,
        }
    }

    /// Every supported revision as strings, newest first.
    pub fn supported_strings() -> Vec<Value> {
        Revision::SUPPORTED
            .iter()
            .map(|r| Value::String(r.as_str().to_string()))
            .collect()
    }
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Chooses the revision a request is served under (module docs), or the error that refuses it.
/// `initialize` is not special here: a caller answers a stateless `initialize` with -32601.
pub fn select(
    method: Option<Method>,
    params: Option<&Value>,
    transport: &TransportFacts,
) -> Result<Revision, RpcError> {
    let meta = Meta::of(params).value();
    if transport.kind == TransportKind::LegacySse {
        let asked = meta
            .and_then(|m| m.get(META_PROTOCOL_VERSION))
            .and_then(Value::as_str)
            .or(transport.protocol_version.as_deref());
        if method == Some(Method::ServerDiscover)
            || asked
                .and_then(Revision::parse)
                .is_some_and(Revision::is_modern)
        {
            return Err(handshake_only(
                asked.unwrap_or(Revision::V2026_07_28.as_str()),
            ));
        }
    }
    if let Some(requested) = meta.and_then(|m| m.get(META_PROTOCOL_VERSION)) {
        let Some(requested) = requested.as_str() else {
            return Err(RpcError::invalid_params(format!(
                "params._meta[\"{META_PROTOCOL_VERSION}\"] must be a string naming a protocol revision"
            )));
        };
        let Some(revision) = Revision::parse(requested) else {
            return Err(unsupported_version(requested));
        };
        if revision.is_modern() {
            check_modern_envelope(meta, transport, requested)?;
        }
        return Ok(revision);
    }
    let transport_revision = transport
        .protocol_version
        .as_deref()
        .and_then(Revision::parse);
    let discover = method == Some(Method::ServerDiscover);
    if discover || transport_revision.is_some_and(Revision::is_modern) {
        return Err(RpcError::invalid_params(format!(
            "missing params._meta[\"{META_PROTOCOL_VERSION}\"]: requests of revision 2026-07-28 must name their \
             protocol version and client capabilities in params._meta"
        )));
    }
    Ok(transport_revision.unwrap_or(Revision::LATEST_HANDSHAKE))
}

/// The revision of a batch: the transport's, else the handshake default.
pub fn batch_revision(transport: &TransportFacts) -> Revision {
    transport
        .protocol_version
        .as_deref()
        .and_then(Revision::parse)
        .unwrap_or(Revision::LATEST_HANDSHAKE)
}

/// `-32022 UnsupportedProtocolVersion` naming what is supported.
pub fn unsupported_version(requested: &str) -> RpcError {
    RpcError::new(
        -32022,
        format!(
            "Unsupported protocol version {:?}: this server supports {}",
            super::jsonrpc::shorten(requested, 64),
            Revision::SUPPORTED.map(Revision::as_str).join(", ")
        ),
    )
    .with_data(json!({"supported": Revision::supported_strings(), "requested": requested}))
}

/// `-32022` of a stateless-era request over the legacy SSE transport: `supported` names the
/// handshake revisions, the ones this transport carries.
fn handshake_only(requested: &str) -> RpcError {
    let supported: Vec<&str> = Revision::SUPPORTED
        .iter()
        .filter(|r| !r.is_modern())
        .map(|r| r.as_str())
        .collect();
    RpcError::new(
        -32022,
        format!(
            "Unsupported protocol version {:?} on the legacy HTTP+SSE transport: it carries {} \
             (negotiate with initialize); 2026-07-28 is served over streamable HTTP at /mcp",
            super::jsonrpc::shorten(requested, 64),
            supported.join(", ")
        ),
    )
    .with_data(json!({"supported": supported, "requested": requested}))
}

fn check_modern_envelope(
    meta: Option<&Value>,
    transport: &TransportFacts,
    requested: &str,
) -> Result<(), RpcError> {
    match meta.and_then(|m| m.get(META_CLIENT_CAPABILITIES)) {
        Some(Value::Object(_)) => {}
        Some(_) => {
            return Err(RpcError::invalid_params(format!(
                "params._meta[\"{META_CLIENT_CAPABILITIES}\"] must be an object (an empty object declares no \
                 optional capabilities)"
            )));
        }
        None => {
            return Err(RpcError::invalid_params(format!(
                "missing params._meta[\"{META_CLIENT_CAPABILITIES}\"]: every 2026-07-28 request must declare the \
                 client's capabilities (use {{}} for none)"
            )));
        }
    }
    // Over streamable HTTP the MCP-Protocol-Version header must repeat the body's revision.
    if transport.kind == TransportKind::StreamableHttp
        && let Some(header) = transport.protocol_version.as_deref()
        && header != requested
    {
        return Err(RpcError::new(
            -32020,
            format!(
                "MCP-Protocol-Version header {:?} does not match params._meta[\"{META_PROTOCOL_VERSION}\"] {:?}",
                super::jsonrpc::shorten(header, 64),
                requested
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stdio(v: Option<&str>) -> TransportFacts {
        TransportFacts::stdio(v.map(str::to_string))
    }

    #[test]
    fn the_legacy_sse_transport_answers_the_stateless_era_with_handshake_revisions_only() {
        let sse = |v: Option<&str>| TransportFacts {
            kind: TransportKind::LegacySse,
            protocol_version: v.map(str::to_string),
            loopback: true,
            log_level: None,
            principal: None,
        };
        let probe = json!({"_meta": {
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {}
        }});
        for (method, params, facts) in [
            (Method::parse("server/discover"), Some(&probe), sse(None)),
            (Method::parse("server/discover"), None, sse(None)),
            (Method::parse("tools/list"), Some(&probe), sse(None)),
            (Method::parse("tools/list"), None, sse(Some("2026-07-28"))),
        ] {
            let e = select(method, params, &facts).unwrap_err();
            assert_eq!(e.code, -32022, "{method:?}");
            let data = e.data.unwrap();
            assert_eq!(data["requested"], "2026-07-28");
            let supported = data["supported"].as_array().unwrap();
            assert!(!supported.is_empty() && !supported.contains(&json!("2026-07-28")));
        }
        // The handshake era is served as before; the same probe on stdio is served statelessly.
        assert_eq!(
            select(Method::parse("tools/list"), None, &sse(None)),
            Ok(Revision::V2025_11_25)
        );
        assert_eq!(
            select(Method::parse("tools/list"), None, &sse(Some("2025-03-26"))),
            Ok(Revision::V2025_03_26)
        );
        assert_eq!(
            select(Method::parse("server/discover"), Some(&probe), &stdio(None)),
            Ok(Revision::V2026_07_28)
        );
    }

    #[test]
    fn negotiation_answers_the_request_or_the_newest_handshake_revision() {
        assert_eq!(Revision::negotiate("2025-03-26"), Revision::V2025_03_26);
        assert_eq!(Revision::negotiate("2024-11-05"), Revision::V2024_11_05);
        assert_eq!(Revision::negotiate("1999-01-01"), Revision::V2025_11_25);
        assert_eq!(Revision::negotiate("2026-07-28"), Revision::V2025_11_25);
    }

    #[test]
    fn handshake_requests_follow_the_transport() {
        assert_eq!(
            select(Method::parse("tools/list"), None, &stdio(None)),
            Ok(Revision::V2025_11_25)
        );
        assert_eq!(
            select(
                Method::parse("tools/list"),
                None,
                &stdio(Some("2025-03-26"))
            ),
            Ok(Revision::V2025_03_26)
        );
        assert_eq!(
            select(Method::parse("tools/list"), None, &stdio(Some("junk"))),
            Ok(Revision::V2025_11_25)
        );
        let progress_only = json!({"_meta": {"progressToken": 1}});
        assert_eq!(
            select(
                Method::parse("tools/list"),
                Some(&progress_only),
                &stdio(None)
            ),
            Ok(Revision::V2025_11_25)
        );
    }

    #[test]
    fn stateless_requests_need_a_complete_envelope() {
        let ok =
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}});
        assert_eq!(
            select(Method::parse("tools/list"), Some(&ok), &stdio(None)),
            Ok(Revision::V2026_07_28)
        );
        let no_caps = json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        let err = select(Method::parse("tools/list"), Some(&no_caps), &stdio(None)).unwrap_err();
        assert_eq!(err.code, -32602);
        assert!(
            err.message.contains("clientCapabilities"),
            "{}",
            err.message
        );
        let err = select(Method::parse("server/discover"), None, &stdio(None)).unwrap_err();
        assert_eq!(err.code, -32602);
        let err = select(
            Method::parse("tools/list"),
            None,
            &stdio(Some("2026-07-28")),
        )
        .unwrap_err();
        assert_eq!(err.code, -32602);
    }

    #[test]
    fn unknown_versions_get_32022_with_the_supported_list() {
        let p =
            json!({"_meta": {META_PROTOCOL_VERSION: "1900-01-01", META_CLIENT_CAPABILITIES: {}}});
        let err = select(Method::parse("tools/list"), Some(&p), &stdio(None)).unwrap_err();
        assert_eq!(err.code, -32022);
        let data = err.data.unwrap();
        assert_eq!(data["requested"], "1900-01-01");
        assert_eq!(data["supported"][0], "2026-07-28");
        assert_eq!(data["supported"].as_array().unwrap().len(), 5);
    }

    #[test]
    fn a_handshake_revision_in_the_envelope_is_served_in_that_revision() {
        let p = json!({"_meta": {META_PROTOCOL_VERSION: "2025-06-18"}});
        assert_eq!(
            select(Method::parse("tools/list"), Some(&p), &stdio(None)),
            Ok(Revision::V2025_06_18)
        );
    }

    #[test]
    fn http_header_must_match_the_envelope() {
        let facts = TransportFacts {
            kind: TransportKind::StreamableHttp,
            protocol_version: Some("2025-11-25".into()),
            loopback: true,
            log_level: None,
            principal: None,
        };
        let p =
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}});
        assert_eq!(
            select(Method::parse("tools/list"), Some(&p), &facts)
                .unwrap_err()
                .code,
            -32020
        );
        let same = TransportFacts {
            protocol_version: Some("2026-07-28".into()),
            ..facts
        };
        assert_eq!(
            select(Method::parse("tools/list"), Some(&p), &same),
            Ok(Revision::V2026_07_28)
        );
    }

    #[test]
    fn revision_features() {
        assert!(Revision::V2025_03_26.allows_batches());
        assert!(!Revision::V2024_11_05.allows_batches());
        assert!(!Revision::V2025_06_18.allows_batches());
        assert!(Revision::V2025_11_25.has_tool_execution());
        assert!(!Revision::V2026_07_28.has_tool_execution());
        assert_eq!(Revision::V2025_11_25.resource_not_found_code(), -32002);
        assert_eq!(Revision::V2026_07_28.resource_not_found_code(), -32602);
    }
}
