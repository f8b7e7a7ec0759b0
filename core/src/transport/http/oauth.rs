//! OAuth 2.0 protected-resource discovery (RFC 9728) pointing at an external authorization
//! server. The MCP endpoint `/mcp` is the protected resource; its metadata lives at
//! `/.well-known/oauth-protected-resource/mcp` (and, for clients that look at the root, at
//! `/.well-known/oauth-protected-resource`, describing the origin itself). Every URL is built
//! from the request's authority as the host policy accepted it (an allowed `Host`, never a
//! foreign one: see [`super::host`]) and an `X-Forwarded-Proto` of exactly `http` or `https`.
//!
//! The server is never an authorization server: it never serves
//! `/.well-known/oauth-authorization-server` and never issues tokens.

use serde_json::{Value, json};

use super::request::Request;
use crate::config::OAuthConfig;

/// Metadata path of the origin.
pub const METADATA_ROOT: &str = "/.well-known/oauth-protected-resource";
/// Metadata path of the `/mcp` resource (RFC 9728 §3.1: well-known segment before the path).
pub const METADATA_MCP: &str = "/.well-known/oauth-protected-resource/mcp";

/// `scheme://authority` of the request, where `authority` is what [`super::HostPolicy::check`]
/// returned for it: `https` when the server itself speaks TLS (`tls`), else what a proxy's
/// `X-Forwarded-Proto` says, else `http`.
pub fn request_base(request: &Request, authority: &str, tls: bool) -> String {
    if tls {
        return format!("https://{authority}");
    }
    let proto = request
        .header_str("x-forwarded-proto")
        .and_then(|v| v.split(',').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .filter(|v| v == "http" || v == "https")
        .unwrap_or_else(|| "http".to_string());
    format!("{proto}://{authority}")
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
    fn base_uses_the_checked_authority_and_known_protos_only() {
        let evil = ("host", "evil.example");
        assert_eq!(
            request_base(&req(&[evil]), "mcp.example.com", false),
            "http://mcp.example.com",
            "the Host header itself is never read here"
        );
        let fwd = req(&[("x-forwarded-proto", "HTTPS, http")]);
        assert_eq!(
            request_base(&fwd, "mcp.example.com:8443", false),
            "https://mcp.example.com:8443"
        );
        let forged = req(&[("x-forwarded-proto", "javascript")]);
        assert_eq!(request_base(&forged, "h", false), "http://h");
        assert_eq!(
            request_base(&forged, "h", true),
            "https://h",
            "a TLS server is https"
        );
    }

    #[test]
    fn metadata_and_challenge() {
        let o = OAuthConfig::new("https://idp.example", vec!["bernstein.read".into()]);
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
