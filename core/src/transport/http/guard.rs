//! Who may talk to the HTTP endpoint: the startup bind rule, per-request authentication
//! (anonymous only on loopback, static bearer compared in constant time), `Origin` checks
//! against DNS rebinding and `Host` sanitising (the allow list itself is [`super::host`]).
//!
//! Decisions only: this module never sees a socket, and never logs or echoes a token.

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;

use crate::config::AuthMode;

/// Starting an HTTP server with this configuration is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BindRefused {
    #[error(
        "refusing to serve HTTP on non-loopback address {host} without a bearer token: set \
         BERNSTEIN_MCP_TOKEN (or BERNSTEIN_MCP_AUTH_TOKEN), or serve TLS with \
         BERNSTEIN_MCP_OAUTH_ISSUER set, or bind 127.0.0.1"
    )]
    PublicWithoutToken { host: String },
    #[error("the bearer token is empty")]
    EmptyToken,
    #[error("allowed hosts (--allowed-hosts, BERNSTEIN_MCP_ALLOWED_HOSTS): {0}")]
    BadAllowedHost(String),
    #[error("the bound address {0:?} is not an ip:port")]
    BadBindAddress(String),
}

/// Whether a host name or address (as given to `--host`) is a loopback interface.
pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim().trim_start_matches('[').trim_end_matches(']');
    if h.eq_ignore_ascii_case("localhost") {
        return true;
    }
    h.parse::<core::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// The startup rule: a non-loopback bind needs a bearer token, or OAuth (`oauth`: an issuer
/// whose access tokens are checked) over TLS (`tls`: every connection is HTTPS, so no token
/// crosses the network in the clear).
pub fn check_bind(
    host: &str,
    bind_loopback: bool,
    auth: &AuthMode,
    oauth: bool,
    tls: bool,
) -> Result<(), BindRefused> {
    match auth {
        AuthMode::Bearer { token } if token.is_empty() => Err(BindRefused::EmptyToken),
        AuthMode::Bearer { .. } => Ok(()),
        AuthMode::None if bind_loopback || (oauth && tls) => Ok(()),
        AuthMode::None => Err(BindRefused::PublicWithoutToken {
            host: host.to_string(),
        }),
    }
}

/// Whether a request may proceed. Anonymous requests pass only when both the bind and the
/// peer are loopback; with a token configured, every request must present it.
pub fn authorize(
    auth: &AuthMode,
    bind_loopback: bool,
    peer_loopback: bool,
    authorization: Option<&[u8]>,
) -> bool {
    match auth {
        AuthMode::None => bind_loopback && peer_loopback,
        AuthMode::Bearer { token } => {
            authorization
                .and_then(bearer_credential)
                .is_some_and(|given| {
                    // Hashing first makes the comparison constant-time in the length too.
                    let (a, b) = (Sha256::digest(given), Sha256::digest(token.as_bytes()));
                    bool::from(a.as_slice().ct_eq(b.as_slice())) && !token.is_empty()
                })
        }
    }
}

/// The credential of an `Authorization: Bearer <token>` header (scheme case-insensitive).
pub fn bearer_credential(value: &[u8]) -> Option<&[u8]> {
    let value = value.trim_ascii();
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer")
        || !rest.first().is_some_and(|b| *b == b' ' || *b == b'\t')
    {
        return None;
    }
    let credential = rest.trim_ascii();
    (!credential.is_empty()).then_some(credential)
}

/// A `Host` value reduced to a safe authority (`name`, `IPv4` or `[IPv6]`, optional `:port`),
/// lower-cased; `None` for anything else (spaces, quotes, slashes, userinfo, control bytes).
pub fn sanitize_host(value: &str) -> Option<String> {
    let v = value.trim();
    if v.is_empty() || v.len() > 261 {
        return None;
    }
    let (host, port) = if let Some(rest) = v.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if inside.is_empty()
            || !inside
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return None;
        }
        inside.parse::<core::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (format!("[{inside}]"), port)
    } else {
        let (name, port) = match v.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (v, None),
        };
        if !valid_reg_name(name) {
            return None;
        }
        (name.to_string(), port)
    };
    let port = match port {
        None => String::new(),
        Some(p)
            if !p.is_empty()
                && p.len() <= 5
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u32>().ok()? <= 65535 =>
        {
            format!(":{p}")
        }
        Some(_) => return None,
    };
    Some(format!("{host}{port}").to_ascii_lowercase())
}

fn valid_reg_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').enumerate().all(|(i, label)| {
            // A trailing dot (fully qualified) leaves one empty last label.
            (label.is_empty() && i > 0 && name.ends_with('.') && i == name.split('.').count() - 1)
                || (!label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-'))
        })
}

/// The `Origin` allow list: loopback origins on any port, the bind host, and configured extras.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginPolicy {
    hosts: Vec<String>,
    exact: Vec<String>,
}

impl OriginPolicy {
    /// `extra` entries are full origins (`https://app.example.com`, `http://10.0.0.2:8080`).
    pub fn new(bind_host: &str, extra: &[String]) -> OriginPolicy {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .map(String::from)
            .to_vec();
        if let Some(h) = sanitize_host(&bracket_ipv6(bind_host)) {
            hosts.push(h);
        }
        let exact = extra.iter().filter_map(|o| normalize_origin(o)).collect();
        OriginPolicy { hosts, exact }
    }

    /// Whether a request carrying this `Origin` may proceed (absent `Origin` always may).
    pub fn allows(&self, origin: &str) -> bool {
        let Some(norm) = normalize_origin(origin) else {
            return false;
        };
        if self.exact.contains(&norm) {
            return true;
        }
        let Some((_, authority)) = norm.split_once("://") else {
            return false;
        };
        let host = match authority.strip_prefix('[') {
            Some(rest) => rest.split_once(']').map(|(h, _)| format!("[{h}]")),
            None => Some(authority.split(':').next().unwrap_or("").to_string()),
        };
        host.is_some_and(|h| self.hosts.contains(&h))
    }
}

fn bracket_ipv6(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// `scheme://host[:port]`, lower-cased, for http and https origins; `None` otherwise.
fn normalize_origin(origin: &str) -> Option<String> {
    let o = origin.trim().trim_end_matches('/');
    let (scheme, authority) = o.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = sanitize_host(authority)?;
    Some(format!("{scheme}://{authority}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(t: &str) -> AuthMode {
        AuthMode::Bearer { token: t.into() }
    }

    #[test]
    fn bind_rule() {
        let none = AuthMode::None;
        assert!(check_bind("127.0.0.1", true, &none, false, false).is_ok());
        let err = check_bind("0.0.0.0", false, &none, false, false).unwrap_err();
        assert!(err.to_string().contains("BERNSTEIN_MCP_TOKEN"), "{err}");
        assert!(check_bind("0.0.0.0", false, &bearer("t"), false, false).is_ok());
        assert_eq!(
            check_bind("0.0.0.0", false, &bearer(""), true, true),
            Err(BindRefused::EmptyToken)
        );
        // OAuth alone (tokens in the clear) or TLS alone (no credential) is not enough.
        assert!(check_bind("0.0.0.0", false, &none, true, false).is_err());
        assert!(check_bind("0.0.0.0", false, &none, false, true).is_err());
        assert!(check_bind("0.0.0.0", false, &none, true, true).is_ok());
        for h in [
            "127.0.0.1",
            "127.9.9.9",
            "localhost",
            "::1",
            "[::1]",
            "LOCALHOST",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in ["0.0.0.0", "::", "10.0.0.1", "example.com", "[::]"] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }

    /// (mode, bind loopback, peer loopback, `Authorization` header, allowed)
    type AuthCase<'a> = (&'a AuthMode, bool, bool, Option<&'a [u8]>, bool);

    #[test]
    fn auth_matrix() {
        let none = AuthMode::None;
        let tok = bearer("s3cret");
        let cases: &[AuthCase<'_>] = &[
            (&none, true, true, None, true),
            (&none, true, true, Some(b"Bearer wrong"), true),
            (&none, false, false, None, false),
            (&none, true, false, None, false),
            (&tok, true, true, None, false),
            (&tok, true, true, Some(b"Bearer wrong"), false),
            (&tok, true, true, Some(b"Bearer s3cret"), true),
            (&tok, false, false, None, false),
            (&tok, false, false, Some(b"Bearer s3cre"), false),
            (&tok, false, false, Some(b"Bearer s3cret"), true),
            (&tok, false, false, Some(b"bearer   s3cret "), true),
            (&tok, false, false, Some(b"Basic s3cret"), false),
            (&tok, false, false, Some(b"Bearers3cret"), false),
            (&tok, false, false, Some(b"Bearer "), false),
        ];
        for (mode, bind, peer, header, want) in cases {
            assert_eq!(
                authorize(mode, *bind, *peer, *header),
                *want,
                "{mode:?} {bind} {peer} {header:?}"
            );
        }
        assert!(!authorize(&bearer(""), true, true, Some(b"Bearer ")));
    }

    #[test]
    fn hosts_are_sanitised() {
        for (raw, want) in [
            ("localhost:8053", Some("localhost:8053")),
            ("Example.COM", Some("example.com")),
            ("127.0.0.1", Some("127.0.0.1")),
            ("[::1]:80", Some("[::1]:80")),
            ("a-b.c.", Some("a-b.c.")),
        ] {
            assert_eq!(sanitize_host(raw).as_deref(), want, "{raw}");
        }
        for raw in [
            "",
            "evil.com/x",
            "a b",
            "\"x\"",
            "user@host",
            "host:",
            "host:99999",
            "host:8a",
            "[::1",
            "[zz]",
            "a\r\nb",
            "x..y",
            "-a.b",
            "host\\x",
            "[::1]x",
            "h%2f",
            "a:1:2",
        ] {
            assert_eq!(sanitize_host(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn origins() {
        let p = OriginPolicy::new("127.0.0.1", &["https://app.example.com".into()]);
        for ok in [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:1",
            "http://[::1]:9",
            "https://APP.example.com/",
        ] {
            assert!(p.allows(ok), "{ok}");
        }
        for bad in [
            "null",
            "http://evil.com",
            "http://localhost.evil.com",
            "file://localhost",
            "https://app.example.com:444",
            "http://127.0.0.1@evil.com",
        ] {
            assert!(!p.allows(bad), "{bad}");
        }
        let public = OriginPolicy::new("mcp.internal", &[]);
        assert!(public.allows("https://mcp.internal:8053"));
        let v6 = OriginPolicy::new("::1", &[]);
        assert!(v6.allows("http://[::1]"));
    }
}
