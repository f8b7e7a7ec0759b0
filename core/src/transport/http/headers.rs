//! MCP header rules of the streamable HTTP transport, checked before a body reaches the
//! protocol engine:
//! - `MCP-Protocol-Version` must name a supported revision (else 400, `-32022`);
//! - in the stateless era (2026-07-28, by header or by the body's
//!   `_meta["io.modelcontextprotocol/protocolVersion"]`) the header must be present and equal
//!   the body's version, and requests must mirror `method` in `Mcp-Method` and `params.name` /
//!   `params.uri` in `Mcp-Name` (Base64 sentinel `=?base64?…?=` decoded), and `params.taskId`
//!   of a tasks method in `Mcp-Name` when that is sent (SEP-2663) — else 400, `-32020`;
//!   a handshake revision in `_meta` stays in the handshake era (the engine's rule);
//! - `Mcp-Session-Id` is refused from [`Timestamp::LEGACY_SESSION_CUTOFF`] on; before, the
//!   router opens a handshake-era one ([`super::session`]) and ignores a 2026-07-28 one.
//!
//! Pure checks over values: the clock reading arrives as `now`.

use base64::Engine as _;
use serde_json::Value;

use super::request::Request;
use crate::protocol::era::{Revision, unsupported_version};
use crate::protocol::model::Method;
use crate::time::Timestamp;

/// `_meta` key carrying a stateless-era request's revision.
pub use crate::protocol::era::META_PROTOCOL_VERSION as META_VERSION;

pub use crate::protocol::jsonrpc::{INVALID_REQUEST, PARSE_ERROR};

/// `HeaderMismatch` (2026-07-28): HTTP headers missing, malformed or not matching the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// `UnsupportedProtocolVersion` (2026-07-28).
pub const UNSUPPORTED_VERSION: i64 = -32022;

/// Which protocol era a request belongs to; decides header rules and error statuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// `initialize`-based revisions, 2024-11-05 … 2025-11-25.
    Handshake,
    /// Per-request metadata, 2026-07-28 on.
    Stateless,
}

/// What the header rules need to know about a JSON-RPC body.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BodyFacts {
    pub id: Option<Value>,
    pub method: Option<String>,
    /// `params.name` (tools/call, prompts/get), `params.uri` (resources/read) or
    /// `params.taskId` (tasks/get, tasks/update, tasks/cancel).
    pub name: Option<String>,
    pub meta_version: Option<String>,
    /// `params.arguments` of a `tools/call` (for the `Mcp-Param-*` rules of
    /// [`super::param_headers`]).
    pub arguments: Option<Value>,
    /// A JSON array (batch); header mirroring does not apply.
    pub batch: bool,
}

impl BodyFacts {
    pub fn of(body: &Value) -> BodyFacts {
        let Some(obj) = body.as_object() else {
            return BodyFacts {
                batch: body.is_array(),
                ..BodyFacts::default()
            };
        };
        let method = obj.get("method").and_then(Value::as_str).map(String::from);
        let params = obj.get("params");
        let known = method.as_deref().and_then(Method::parse);
        let name_key = match known {
            Some(Method::ToolsCall | Method::PromptsGet) => Some("name"),
            Some(Method::ResourcesRead) => Some("uri"),
            Some(Method::TasksGet | Method::TasksUpdate | Method::TasksCancel) => Some("taskId"),
            _ => None,
        };
        let name = name_key
            .and_then(|k| params?.get(k)?.as_str())
            .map(String::from);
        let meta_version = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(META_VERSION))
            .and_then(Value::as_str)
            .map(String::from);
        let arguments = match known {
            Some(Method::ToolsCall) => params.and_then(|p| p.get("arguments")).cloned(),
            _ => None,
        };
        BodyFacts {
            id: obj.get("id").cloned(),
            method,
            name,
            meta_version,
            arguments,
            batch: false,
        }
    }

    /// The method, when this server knows it.
    pub fn known_method(&self) -> Option<Method> {
        self.method.as_deref().and_then(Method::parse)
    }

    /// A request expects a response: it has a method and an id.
    pub fn is_request(&self) -> bool {
        self.method.is_some() && self.id.is_some()
    }
}

/// A refusal before the engine runs: HTTP 400 with this JSON-RPC error.
#[derive(Clone, Debug, PartialEq)]
pub struct HeaderRejection {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl HeaderRejection {
    pub(crate) fn mismatch(message: impl Into<String>) -> HeaderRejection {
        HeaderRejection {
            code: HEADER_MISMATCH,
            message: message.into(),
            data: None,
        }
    }
}

/// The era of a request and the header version to hand to the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderCheck {
    pub era: Era,
    pub protocol_version: Option<String>,
}

/// The era a revision string belongs to. Unknown revisions newer than every handshake revision
/// count as stateless (revisions are ISO dates, so they order as strings).
pub fn era_of(version: &str) -> Era {
    match Revision::parse(version) {
        Some(r) if r.is_modern() => Era::Stateless,
        Some(_) => Era::Handshake,
        None if version > Revision::LATEST_HANDSHAKE.as_str() => Era::Stateless,
        None => Era::Handshake,
    }
}

/// Applies the legacy session rule: `Err` (with the message to send) from the cut-off on.
pub fn check_session_header(request: &Request, now: Timestamp) -> Result<(), String> {
    if request.header("mcp-session-id").is_none() || now < Timestamp::LEGACY_SESSION_CUTOFF {
        return Ok(());
    }
    Err(session_removed_message())
}

/// The message that names the removal date of legacy sessions.
pub fn session_removed_message() -> String {
    format!(
        "Mcp-Session-Id is no longer supported: legacy sessions were removed on {}; this server is \
         stateless, send requests without a session id",
        &Timestamp::LEGACY_SESSION_CUTOFF.to_rfc3339()[..10]
    )
}

/// The `MCP-Protocol-Version` header, when present: a supported revision, else `-32022`. The
/// one header rule of the legacy SSE transport (its mirroring rules belong to streamable HTTP).
pub fn version_header(request: &Request) -> Result<Option<String>, HeaderRejection> {
    let header_version = match request.header("mcp-protocol-version") {
        None => None,
        Some(raw) => Some(header_text(raw, "MCP-Protocol-Version")?.to_string()),
    };
    if let Some(v) = &header_version
        && Revision::parse(v).is_none()
    {
        let e = unsupported_version(v);
        return Err(HeaderRejection {
            code: e.code,
            message: format!("{} (MCP-Protocol-Version header)", e.message),
            data: e.data,
        });
    }
    Ok(header_version)
}

/// Applies the version and mirroring rules to a request whose body is `body`.
pub fn check_headers(request: &Request, body: &BodyFacts) -> Result<HeaderCheck, HeaderRejection> {
    let header_version = version_header(request)?;
    let is_stateless = |v: Option<&str>| v.is_some_and(|v| era_of(v) == Era::Stateless);
    let stateless =
        is_stateless(header_version.as_deref()) || is_stateless(body.meta_version.as_deref());
    if !stateless || body.batch {
        let era = if stateless {
            Era::Stateless
        } else {
            Era::Handshake
        };
        return Ok(HeaderCheck {
            era,
            protocol_version: header_version,
        });
    }
    let Some(hv) = header_version.as_deref() else {
        return Err(HeaderRejection::mismatch(
            "Header mismatch: required header MCP-Protocol-Version is missing",
        ));
    };
    // A body without `_meta[protocolVersion]` is not a mismatch but an invalid request: the
    // engine refuses it with -32602 (SEP-2575), so only a present, different value is -32020.
    if let Some(bv) = body.meta_version.as_deref()
        && bv != hv
    {
        return Err(HeaderRejection::mismatch(format!(
            "Header mismatch: MCP-Protocol-Version header value '{hv}' does not match body value '{bv}'"
        )));
    }
    // Header requirements for notification POSTs are not defined by the revision; check
    // mirrored headers of notifications only when they are sent.
    let required = body.is_request();
    check_mirror(
        request,
        "mcp-method",
        "Mcp-Method",
        body.method.as_deref(),
        required,
        false,
    )?;
    if body.name.is_some()
        || matches!(
            body.known_method(),
            Some(Method::ToolsCall | Method::ResourcesRead | Method::PromptsGet)
        )
    {
        // A tasks method's `Mcp-Name` (SEP-2663) must match when sent; clients that predate
        // the rule (the Python SDK) send none, so it is not required.
        let tasks = matches!(
            body.known_method(),
            Some(Method::TasksGet | Method::TasksUpdate | Method::TasksCancel)
        );
        check_mirror(
            request,
            "mcp-name",
            "Mcp-Name",
            body.name.as_deref(),
            required && !tasks,
            true,
        )?;
    }
    Ok(HeaderCheck {
        era: Era::Stateless,
        protocol_version: header_version,
    })
}

fn check_mirror(
    request: &Request,
    name: &str,
    display: &str,
    body_value: Option<&str>,
    required: bool,
    sentinel: bool,
) -> Result<(), HeaderRejection> {
    let header = match request.header(name) {
        Some(raw) => {
            let text = header_text(raw, display)?;
            if sentinel {
                decode_sentinel(text, display)?
            } else {
                text.to_string()
            }
        }
        None if required => {
            return Err(HeaderRejection::mismatch(format!(
                "Header mismatch: required header {display} is missing"
            )));
        }
        None => return Ok(()),
    };
    if Some(header.as_str()) != body_value {
        return Err(HeaderRejection::mismatch(format!(
            "Header mismatch: {display} header value '{}' does not match body value '{}'",
            header.escape_default(),
            body_value.unwrap_or("").escape_default()
        )));
    }
    Ok(())
}

/// A header value as text: visible ASCII, space and tab only, trimmed.
pub(crate) fn header_text<'a>(raw: &'a [u8], display: &str) -> Result<&'a str, HeaderRejection> {
    if !raw.iter().all(|&b| b == b'\t' || (0x20..0x7f).contains(&b)) {
        return Err(HeaderRejection::mismatch(format!(
            "Header mismatch: {display} contains invalid characters"
        )));
    }
    Ok(std::str::from_utf8(raw)
        .map_err(|_| HeaderRejection::mismatch("invalid header"))?
        .trim())
}

/// Decodes `=?base64?<standard base64 of UTF-8>?=`; other values are taken literally.
pub fn decode_sentinel(value: &str, display: &str) -> Result<String, HeaderRejection> {
    let Some(inner) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Ok(value.to_string());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(inner)
        .map_err(|_| {
            HeaderRejection::mismatch(format!("Header mismatch: {display} is not valid Base64"))
        })?;
    String::from_utf8(bytes)
        .map_err(|_| HeaderRejection::mismatch(format!("Header mismatch: {display} is not UTF-8")))
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;
    use crate::transport::http::request::Header;

    /// A `POST /mcp` with these headers and no body (shared with the `param_headers` tests).
    pub(crate) fn req(headers: &[(&str, &str)]) -> Request {
        Request {
            method: "POST".into(),
            target: "/mcp".into(),
            version: 1,
            headers: headers
                .iter()
                .map(|(n, v)| Header {
                    name: n.to_ascii_lowercase(),
                    value: v.as_bytes().to_vec(),
                })
                .collect(),
            body: Vec::new(),
        }
    }

    fn modern_call(name: &str) -> BodyFacts {
        BodyFacts::of(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
            "params":{"name": name, "arguments":{}, "_meta":{META_VERSION: "2026-07-28"}}}))
    }

    const MODERN: (&str, &str) = ("MCP-Protocol-Version", "2026-07-28");

    #[test]
    fn a_tasks_method_mirrors_its_task_id_when_it_names_one() {
        let body = BodyFacts::of(&json!({"jsonrpc":"2.0","id":1,"method":"tasks/get",
            "params":{"taskId": "task-1", "_meta":{META_VERSION: "2026-07-28"}}}));
        let method = ("Mcp-Method", "tasks/get");
        assert!(check_headers(&req(&[MODERN, method, ("Mcp-Name", "task-1")]), &body).is_ok());
        assert!(check_headers(&req(&[MODERN, method]), &body).is_ok());
        let err = check_headers(&req(&[MODERN, method, ("Mcp-Name", "task-2")]), &body);
        assert_eq!(err.unwrap_err().code, HEADER_MISMATCH);
    }

    #[test]
    fn handshake_era_needs_no_mirroring() {
        let body = BodyFacts::of(&json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}));
        assert_eq!(
            check_headers(&req(&[]), &body).unwrap(),
            HeaderCheck {
                era: Era::Handshake,
                protocol_version: None
            }
        );
        let v = check_headers(&req(&[("mcp-protocol-version", "2025-06-18")]), &body).unwrap();
        assert_eq!(v.protocol_version.as_deref(), Some("2025-06-18"));
    }

    #[test]
    fn unsupported_version_is_32022_with_the_list() {
        let body = BodyFacts::of(&json!({"jsonrpc":"2.0","id":1,"method":"ping"}));
        let err =
            check_headers(&req(&[("mcp-protocol-version", "1999-01-01")]), &body).unwrap_err();
        assert_eq!(err.code, UNSUPPORTED_VERSION);
        assert_eq!(err.data.unwrap()["requested"], "1999-01-01");
    }

    #[test]
    fn stateless_era_mirrors_method_and_name() {
        let ok = req(&[
            MODERN,
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "bernstein_run"),
        ]);
        assert_eq!(
            check_headers(&ok, &modern_call("bernstein_run"))
                .unwrap()
                .era,
            Era::Stateless
        );
        let cases: Vec<Vec<(&str, &str)>> = vec![
            vec![("Mcp-Method", "tools/call"), ("Mcp-Name", "bernstein_run")],
            vec![MODERN, ("Mcp-Name", "bernstein_run")],
            vec![
                MODERN,
                ("Mcp-Method", "tools/list"),
                ("Mcp-Name", "bernstein_run"),
            ],
            vec![MODERN, ("Mcp-Method", "tools/call")],
            vec![MODERN, ("Mcp-Method", "tools/call"), ("Mcp-Name", "other")],
            vec![
                MODERN,
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "=?base64?!!?="),
            ],
            vec![
                MODERN,
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "bernstein_run\u{7f}"),
            ],
            vec![
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "bernstein_run"),
            ],
        ];
        for headers in cases {
            let err = check_headers(&req(&headers), &modern_call("bernstein_run")).unwrap_err();
            assert_eq!(err.code, HEADER_MISMATCH, "{headers:?}: {}", err.message);
        }
    }

    #[test]
    fn a_handshake_revision_in_meta_stays_in_the_handshake_era() {
        let body = BodyFacts::of(&json!({"jsonrpc":"2.0","id":1,"method":"tools/list",
            "params":{"_meta":{META_VERSION:"2025-06-18"}}}));
        assert_eq!(check_headers(&req(&[]), &body).unwrap().era, Era::Handshake);
        assert_eq!(era_of("2026-07-28"), Era::Stateless);
        assert_eq!(era_of("2099-01-01"), Era::Stateless);
        assert_eq!(era_of("2025-03-26"), Era::Handshake);
    }

    #[test]
    fn header_version_alone_makes_the_era_and_a_missing_body_version_is_left_to_the_engine() {
        // No `_meta` at all: the engine answers -32602 (SEP-2575), not a header mismatch.
        let body = BodyFacts::of(&json!({"jsonrpc":"2.0","id":1,"method":"server/discover"}));
        let check =
            check_headers(&req(&[MODERN, ("Mcp-Method", "server/discover")]), &body).unwrap();
        assert_eq!(check.era, Era::Stateless);
        assert_eq!(check.protocol_version.as_deref(), Some("2026-07-28"));
        // A body version that differs from the header is the mismatch.
        let body = BodyFacts::of(&json!({"jsonrpc":"2.0","id":1,"method":"server/discover",
            "params":{"_meta":{META_VERSION:"2025-06-18"}}}));
        let err =
            check_headers(&req(&[MODERN, ("Mcp-Method", "server/discover")]), &body).unwrap_err();
        assert_eq!(err.code, HEADER_MISMATCH);
    }

    #[test]
    fn base64_sentinel_names_are_decoded() {
        let name = "Hello, 世界";
        let enc = format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(name)
        );
        let r = req(&[MODERN, ("Mcp-Method", "tools/call"), ("Mcp-Name", &enc)]);
        assert!(check_headers(&r, &modern_call(name)).is_ok());
        let uri = BodyFacts::of(&json!({"jsonrpc":"2.0","id":"a","method":"resources/read",
            "params":{"uri":"bernstein://capability","_meta":{META_VERSION:"2026-07-28"}}}));
        let r = req(&[
            MODERN,
            ("Mcp-Method", "resources/read"),
            ("Mcp-Name", "bernstein://capability"),
        ]);
        assert!(check_headers(&r, &uri).is_ok());
        assert_eq!(decode_sentinel("plain", "x").unwrap(), "plain");
    }

    #[test]
    fn notifications_need_no_mirrors_but_sent_ones_must_match() {
        let n = BodyFacts::of(&json!({"jsonrpc":"2.0","method":"notifications/cancelled",
            "params":{"requestId":1,"_meta":{META_VERSION:"2026-07-28"}}}));
        assert!(check_headers(&req(&[MODERN]), &n).is_ok());
        assert!(check_headers(&req(&[MODERN, ("Mcp-Method", "x")]), &n).is_err());
    }

    #[test]
    fn session_header_both_sides_of_the_cutoff() {
        let with = req(&[("Mcp-Session-Id", "abc")]);
        let before = Timestamp(Timestamp::LEGACY_SESSION_CUTOFF.0 - 1);
        assert!(check_session_header(&with, before).is_ok());
        let err = check_session_header(&with, Timestamp::LEGACY_SESSION_CUTOFF).unwrap_err();
        assert!(err.contains("2027-07-28"), "{err}");
        assert!(check_session_header(&req(&[]), Timestamp::LEGACY_SESSION_CUTOFF).is_ok());
    }
}
