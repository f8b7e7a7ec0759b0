//! Fetches the OAuth issuer's signing keys for the engine ([`Output::FetchKeys`]): its JWKS at
//! the configured URL, or at the `jwks_uri` of its metadata (RFC 8414
//! `/.well-known/oauth-authorization-server`, then OpenID Connect
//! `/.well-known/openid-configuration`), whose `issuer` must be the configured one. Over HTTPS
//! verified against the system roots ([`bernstein_os::https::agent`]); plain HTTP only to a
//! loopback host. Every call gives up after [`TIMEOUT`], so an issuer that is down costs the
//! parked requests a `503`, not a hang.
//!
//! [`Output::FetchKeys`]: bernstein_core::engine::Output::FetchKeys

use std::io::Read as _;
use std::time::Duration;

use bernstein_core::transport::http::is_loopback_host;
use serde_json::Value;

/// Longest a fetch (each of its calls) may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// Largest metadata or JWKS document read.
const MAX_DOC_BYTES: u64 = 1 << 20;

/// The issuer's JWKS document, or why it could not be fetched (a sentence naming the URL).
pub fn fetch_keys(issuer: &str, jwks_url: Option<&str>) -> Result<Value, String> {
    let agent = bernstein_os::https::agent(None, TIMEOUT)?;
    let url = match jwks_url {
        Some(u) => u.to_string(),
        None => discover(&agent, issuer, "jwks_uri", "BERNSTEIN_MCP_OAUTH_JWKS_URL")?,
    };
    get_json(&agent, &url)
}

/// The metadata URLs of `issuer`, in the order they are tried.
pub fn metadata_urls(issuer: &str) -> Vec<String> {
    let trimmed = issuer.trim_end_matches('/');
    let (origin, path) = match trimmed.split_once("://") {
        Some((scheme, rest)) => match rest.find('/') {
            Some(i) => (format!("{scheme}://{}", &rest[..i]), &rest[i..]),
            None => (trimmed.to_string(), ""),
        },
        None => (trimmed.to_string(), ""),
    };
    vec![
        // RFC 8414 §3.1: the well-known segment goes between the host and the issuer's path.
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        // OpenID Connect Discovery 1.0 §4: appended to the issuer.
        format!("{trimmed}/.well-known/openid-configuration"),
    ]
}

/// The URL `field` of the issuer's metadata (whose `issuer` must be `issuer`); the error names
/// `setting`, which says it instead.
pub(crate) fn discover(
    agent: &ureq::Agent,
    issuer: &str,
    field: &str,
    setting: &str,
) -> Result<String, String> {
    let mut tried = Vec::new();
    for url in metadata_urls(issuer) {
        match get_json(agent, &url) {
            Ok(doc) => {
                let named = doc.get("issuer").and_then(Value::as_str);
                if named.map(|n| n.trim_end_matches('/')) != Some(issuer.trim_end_matches('/')) {
                    return Err(format!(
                        "the metadata at {url} names another issuer than {issuer}"
                    ));
                }
                return doc
                    .get(field)
                    .and_then(Value::as_str)
                    .map(String::from)
                    .ok_or_else(|| format!("the metadata at {url} has no {field}"));
            }
            Err(e) => tried.push(e),
        }
    }
    Err(format!(
        "no authorization server metadata found ({}); set {setting}",
        tried.join("; ")
    ))
}

/// `application/x-www-form-urlencoded` (RFC 6749 Appendix B, which also applies it to the
/// client id and secret of HTTP Basic client authentication, §2.3.1).
pub fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// POSTs `form` (already `application/x-www-form-urlencoded`) to `url` as the OAuth client
/// `client_id` with HTTP Basic authentication (RFC 6749 §2.3.1: both parts form-encoded
/// first), asking for JSON; the status and at most `limit` bytes of the body.
pub fn post_form_as_client(
    agent: &ureq::Agent,
    url: &str,
    (client_id, client_secret): (&str, &str),
    form: &str,
    limit: u64,
) -> Result<(u16, Vec<u8>), String> {
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        form_encode(client_id),
        form_encode(client_secret)
    ));
    let mut response = agent
        .post(url)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json")
        .header("Authorization", format!("Basic {basic}"))
        .send(form.as_bytes())
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(limit)
        .read_to_vec()
        .map_err(|e| e.to_string())?;
    Ok((status, body))
}

/// Whether `url` may be fetched: HTTPS, or HTTP to a loopback host.
pub fn allowed_url(url: &str) -> Result<(), String> {
    if url.starts_with("https://") {
        return Ok(());
    }
    let host = url
        .strip_prefix("http://")
        .map(|rest| rest.split(['/', '?', '#']).next().unwrap_or(""))
        .map(|authority| match authority.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => authority,
        });
    match host {
        Some(h) if is_loopback_host(h) => Ok(()),
        _ => Err(format!(
            "{url} is not HTTPS (plain HTTP is allowed to a loopback issuer only)"
        )),
    }
}

pub(crate) fn get_json(agent: &ureq::Agent, url: &str) -> Result<Value, String> {
    allowed_url(url)?;
    let response = agent
        .get(url)
        .header("Accept", "application/json")
        .call()
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err(format!("GET {url}: HTTP {status}"));
    }
    let mut body = Vec::new();
    response
        .into_body()
        .into_reader()
        .take(MAX_DOC_BYTES + 1)
        .read_to_end(&mut body)
        .map_err(|e| format!("GET {url}: {e}"))?;
    if body.len() as u64 > MAX_DOC_BYTES {
        return Err(format!(
            "GET {url}: the document is over {MAX_DOC_BYTES} bytes"
        ));
    }
    serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not JSON ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_follow_both_rules() {
        assert_eq!(
            metadata_urls("https://idp.example"),
            [
                "https://idp.example/.well-known/oauth-authorization-server",
                "https://idp.example/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://idp.example/realms/a/"),
            [
                "https://idp.example/.well-known/oauth-authorization-server/realms/a",
                "https://idp.example/realms/a/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn plain_http_only_to_loopback() {
        for ok in [
            "https://idp.example/jwks",
            "http://127.0.0.1:8080/jwks",
            "http://localhost/jwks",
            "http://[::1]:9/x",
        ] {
            assert!(allowed_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://idp.example/jwks",
            "http://127.0.0.1.evil.example/x",
            "ftp://127.0.0.1/x",
            "http://10.0.0.1:80/x",
        ] {
            assert!(allowed_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn form_values_are_encoded() {
        assert_eq!(form_encode("bernstein.write x"), "bernstein.write+x");
        assert_eq!(form_encode("https://h:1/mcp"), "https%3A%2F%2Fh%3A1%2Fmcp");
        assert_eq!(form_encode("a&b=c:d"), "a%26b%3Dc%3Ad");
    }

    #[test]
    fn an_issuer_that_is_down_is_a_clear_error() {
        // A loopback port nobody listens on (bound, then closed).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = fetch_keys(&format!("http://127.0.0.1:{port}"), None).unwrap_err();
        assert!(
            err.contains("no authorization server metadata found"),
            "{err}"
        );
        let err = fetch_keys("http://idp.example", Some("http://idp.example/jwks")).unwrap_err();
        assert!(err.contains("not HTTPS"), "{err}");
    }
}
