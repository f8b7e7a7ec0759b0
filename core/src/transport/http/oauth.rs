//! OAuth 2.0 protected-resource discovery (RFC 9728) pointing at an external authorization
//! server. The MCP endpoint `/mcp` is the protected resource; its metadata lives at
//! `/.well-known/oauth-protected-resource/mcp` (and, for clients that look at the root, at
//! `/.well-known/oauth-protected-resource`, describing the origin itself). Every URL is built
//! from the sanitised `Host` and an `X-Forwarded-Proto` of exactly `http` or `https`.
//!
//! The server is never an authorization server: it never serves
//! `/.well-known/oauth-authorization-server` and never issues tokens.

use serde_json::{Value, json};

use super::guard::sanitize_host;
use super::request::Request;
use crate::config::OAuthConfig;

/// Metadata path of the origin.
pub const METADATA_ROOT: &str = "/.well-known/oauth-protected-resource";
/// Metadata path of the `/mcp` resource (RFC 9728 §3.1: well-known segment before the path).
pub const METADATA_MCP: &str = "/.well-known/oauth-protected-resource/mcp";

/// `scheme://host[:port]` of the request, or `None` when its `Host` is not a safe authority.
/// `fallback_authority` (the bind address) stands in when the request has no `Host`.
pub fn request_base(request: &Request, fallback_authority: &str) -> Option<String> {
    let host = match request.header("host") {
        Some(raw) => sanitize_host(std::str::from_utf8(raw).ok()?)?,
        None => sanitize_host(fallback_authority)?,
    };
    let proto = request
        .header_str("x-forwarded-proto")
        .and_then(|v| v.split(',').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .filter(|v| v == "http" || v == "https")
        .unwrap_or_else(|| "http".to_string());
    Some(format!("{proto}://{host}"))
}

/// The metadata document served at `path` (one of [`METADATA_ROOT`], [`METADATA_MCP`]).
pub fn metadata(oauth: &OAuthConfig, base: &str, path: &str) -> Value {
    let resource = if path == METADATA_MCP {
        format!("{base}/mcp")
    } else {
        base.to_string()
    };
    json!({
        "resource": resource,
        "authorization_servers": [oauth.issuer],
        "scopes_supported": oauth.scopes,
        "bearer_methods_supported": ["header"],
    })
}

/// The `WWW-Authenticate` value of a 401 when discovery is configured.
pub fn challenge(base: &str) -> String {
    format!("Bearer resource_metadata=\"{base}{METADATA_MCP}\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::http::request::Header;

    fn req(headers: &[(&str, &str)]) -> Request {
        Request {
            method: "GET".into(),
            target: METADATA_MCP.into(),
            version: 1,
            headers: headers
                .iter()
                .map(|(n, v)| Header {
                    name: n.to_string(),
                    value: v.as_bytes().to_vec(),
                })
                .collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn base_uses_sanitised_host_and_known_protos_only() {
        assert_eq!(
            request_base(&req(&[("host", "mcp.example.com")]), "x").as_deref(),
            Some("http://mcp.example.com")
        );
        let fwd = req(&[
            ("host", "mcp.example.com:8443"),
            ("x-forwarded-proto", "HTTPS, http"),
        ]);
        assert_eq!(
            request_base(&fwd, "x").as_deref(),
            Some("https://mcp.example.com:8443")
        );
        let forged = req(&[("host", "h"), ("x-forwarded-proto", "javascript")]);
        assert_eq!(request_base(&forged, "x").as_deref(), Some("http://h"));
        assert_eq!(request_base(&req(&[("host", "evil.com/\"><x")]), "x"), None);
        assert_eq!(
            request_base(&req(&[]), "127.0.0.1:8053").as_deref(),
            Some("http://127.0.0.1:8053")
        );
    }

    #[test]
    fn metadata_and_challenge() {
        let o = OAuthConfig {
            issuer: "https://idp.example".into(),
            scopes: vec!["bernstein.read".into()],
        };
        let m = metadata(&o, "https://h", METADATA_MCP);
        assert_eq!(
            m,
            json!({"resource":"https://h/mcp","authorization_servers":["https://idp.example"],
                   "scopes_supported":["bernstein.read"],"bearer_methods_supported":["header"]})
        );
        assert_eq!(
            metadata(&o, "https://h", METADATA_ROOT)["resource"],
            "https://h"
        );
        assert_eq!(
            challenge("https://h"),
            "Bearer resource_metadata=\"https://h/.well-known/oauth-protected-resource/mcp\""
        );
    }
}
