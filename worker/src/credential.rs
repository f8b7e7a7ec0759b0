//! The bearer token the worker sends: a fixed one (`BERNSTEIN_MCP_TOKEN`), or one it obtains
//! from the IdP with the OAuth 2 client credentials grant (RFC 6749 §4.4) and keeps until
//! shortly before it expires.
//!
//! The token request names the server's `/mcp` URL as its `resource` (RFC 8707), so that an IdP
//! that honours resource indicators issues a token for this server's audience, and asks for the
//! configured scope (`bernstein.write` unless said otherwise). The client authenticates with
//! HTTP Basic (`client_secret_basic`, the default every IdP accepts). A token the server
//! refuses (401) is dropped and fetched again once. Neither the secret nor a token is ever
//! written to a log line.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bernstein_effects::idp::{form_encode, post_form_as_client};
use serde_json::Value;

use crate::transport::TransportError;

/// Renew this long before the token's own expiry.
const MARGIN: Duration = Duration::from_secs(30);
/// How long a token whose answer names no `expires_in` is kept (until a 401 says otherwise).
const UNSTATED_LIFETIME: Duration = Duration::from_secs(300);
/// The scope asked for when none is configured: what a worker's three tools need.
pub const DEFAULT_SCOPE: &str = "bernstein.write";

/// Where the worker's bearer token comes from.
#[derive(Debug)]
pub enum Credential {
    /// None: the server must accept anonymous calls (loopback).
    None,
    /// A fixed token.
    Fixed(String),
    /// Fetched from the IdP and renewed.
    ClientCredentials(ClientCredentials),
}

/// The client credentials grant's settings and its current token.
#[derive(Debug)]
pub struct ClientCredentials {
    token_url: String,
    client_id: String,
    client_secret: String,
    scope: String,
    /// The `resource` the token is asked for (the server's `/mcp` URL).
    resource: String,
    cached: Mutex<Option<(String, Instant)>>,
}

impl ClientCredentials {
    /// The grant against `token_url` (`https://`, or `http://` to a loopback host only) for
    /// `resource`; an error names what is wrong with the settings.
    pub fn new(
        token_url: &str,
        client_id: &str,
        client_secret: &str,
        scope: Option<&str>,
        resource: &str,
    ) -> Result<ClientCredentials, String> {
        check_token_url(token_url)?;
        if client_id.is_empty() || client_secret.is_empty() {
            return Err(
                "the OAuth client id and secret must both be set and non-empty".to_string(),
            );
        }
        Ok(ClientCredentials {
            token_url: token_url.to_string(),
            client_id: client_id.to_string(),
            client_secret: client_secret.to_string(),
            scope: scope
                .filter(|s| !s.trim().is_empty())
                .unwrap_or(DEFAULT_SCOPE)
                .to_string(),
            resource: resource.to_string(),
            cached: Mutex::new(None),
        })
    }
}

impl Credential {
    /// The token to send now (`None`: send no `Authorization`), fetching one when the grant's
    /// token is missing or about to expire.
    pub fn bearer(&self, agent: &ureq::Agent) -> Result<Option<String>, TransportError> {
        match self {
            Credential::None => Ok(None),
            Credential::Fixed(t) => Ok(Some(t.clone())),
            Credential::ClientCredentials(cc) => {
                let mut cached = cc.cached.lock().unwrap_or_else(|p| p.into_inner());
                if let Some((token, until)) = cached.as_ref()
                    && Instant::now() < *until
                {
                    return Ok(Some(token.clone()));
                }
                let (token, lifetime) = fetch(cc, agent)?;
                let until = Instant::now() + lifetime.saturating_sub(MARGIN);
                *cached = Some((token.clone(), until));
                Ok(Some(token))
            }
        }
    }

    /// Forgets a fetched token the server refused; whether there is one to fetch again.
    pub fn refused(&self) -> bool {
        match self {
            Credential::ClientCredentials(cc) => {
                cc.cached.lock().unwrap_or_else(|p| p.into_inner()).take();
                true
            }
            _ => false,
        }
    }
}

/// One token request: the token and how long it lives.
fn fetch(
    cc: &ClientCredentials,
    agent: &ureq::Agent,
) -> Result<(String, Duration), TransportError> {
    let failed =
        |why: String| TransportError::Io(format!("OAuth token from {}: {why}", cc.token_url));
    let form = format!(
        "grant_type=client_credentials&scope={}&resource={}",
        form_encode(&cc.scope),
        form_encode(&cc.resource)
    );
    let client = (cc.client_id.as_str(), cc.client_secret.as_str());
    let (status, body) =
        post_form_as_client(agent, &cc.token_url, client, &form, 64 * 1024).map_err(failed)?;
    let doc: Value = serde_json::from_slice(&body)
        .map_err(|_| failed(format!("HTTP {status}, and the answer is not JSON")))?;
    if status != 200 {
        // RFC 6749 §5.2: `error` and `error_description` say why; nothing else is echoed.
        let code = doc.get("error").and_then(Value::as_str).unwrap_or("?");
        let text = doc
            .get("error_description")
            .and_then(Value::as_str)
            .map(|d| format!(" ({})", d.chars().take(200).collect::<String>()))
            .unwrap_or_default();
        return Err(failed(format!("HTTP {status}: {code}{text}")));
    }
    let token = doc
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| failed("the answer holds no access_token".into()))?;
    if let Some(kind) = doc.get("token_type").and_then(Value::as_str)
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(failed(format!("token_type is {kind:?}, not Bearer")));
    }
    let lifetime = doc
        .get("expires_in")
        .and_then(Value::as_u64)
        .map_or(UNSTATED_LIFETIME, Duration::from_secs);
    Ok((token.to_string(), lifetime))
}

/// `https://`, or `http://` to a loopback host only: a secret never crosses a network in clear.
fn check_token_url(url: &str) -> Result<(), String> {
    if url.starts_with("https://") {
        return Ok(());
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(format!(
            "the OAuth token URL {url:?} is not an https:// URL"
        ));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = match authority.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        Ok(())
    } else {
        Err(format!(
            "the OAuth token URL {url:?} is plain http:// to a host that is not loopback: the client secret would cross the network in clear; use https://"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_goes_to_a_remote_host_in_clear() {
        assert!(check_token_url("https://idp.example.com/token").is_ok());
        assert!(check_token_url("http://127.0.0.1:8080/token").is_ok());
        assert!(check_token_url("http://localhost/token").is_ok());
        assert!(check_token_url("http://[::1]:9/token").is_ok());
        assert!(check_token_url("http://idp.example.com/token").is_err());
        assert!(check_token_url("http://127.0.0.1.evil.com/token").is_err());
        assert!(check_token_url("ftp://idp/token").is_err());
        let e = ClientCredentials::new("https://i/t", "", "s", None, "r").unwrap_err();
        assert!(e.contains("client id"), "{e}");
    }

    #[test]
    fn the_default_scope_is_what_a_worker_needs() {
        let cc = ClientCredentials::new("https://i/t", "id", "s", Some(" "), "r").unwrap();
        assert_eq!(cc.scope, DEFAULT_SCOPE);
    }
}
