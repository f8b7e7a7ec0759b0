//! Host pinning (the DNS-rebinding rule of the MCP streamable-HTTP transport): a request is
//! served only when its `Host` names this server. A page whose name was rebound to 127.0.0.1
//! still sends its own name in `Host`, so it is refused before any route, and no URL the server
//! builds can carry a foreign host.
//!
//! Allowed authorities: the bound address itself (`ip:port`, and the `--host` name on that port
//! when it is a name); when bound to loopback or a wildcard (`0.0.0.0`, `::`), `localhost`,
//! `127.0.0.1` and `[::1]` on the bound port; and every configured entry
//! (`BERNSTEIN_MCP_ALLOWED_HOSTS`): `host:port` allows that port only, a bare `host` any port
//! (it names a host the operator vouches for, whatever port a proxy or port mapping shows).
//! Names compare case-insensitively and without one trailing dot; IP literals compare as
//! addresses (so `[0:0::1]` is `[::1]`); a `Host` without a port means port 80.

use core::net::{IpAddr, SocketAddr};

use super::guard::sanitize_host;

/// Why a request's `Host` was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostRefusal {
    /// HTTP/1.1 without `Host` (RFC 9112 §3.2: 400).
    Missing,
    /// More than one `Host` field (RFC 9112 §3.2: 400).
    Repeated,
    /// Not an authority (`user@host`, slashes, spaces, bad port…): 400.
    Malformed,
    /// A well-formed authority this server does not answer for: 421.
    Foreign,
}

/// An allowed host name or address.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Name {
    Reg(String),
    Ip(IpAddr),
}

/// One allowed authority; `port: None` allows any port.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Allowed {
    name: Name,
    port: Option<u16>,
}

/// The authorities a server answers for, fixed at startup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPolicy {
    allowed: Vec<Allowed>,
    /// The authority URLs name for an HTTP/1.0 request without `Host`.
    fallback: String,
}

impl HostPolicy {
    /// The policy of a server bound at `local`, started with `--host configured`, trusting the
    /// `extra` entries. An entry that is not `host` or `host:port` is an error naming it.
    pub fn new(
        configured: &str,
        local: SocketAddr,
        extra: &[String],
    ) -> Result<HostPolicy, String> {
        let port = local.port();
        let ip = local.ip().to_canonical();
        let mut allowed: Vec<Allowed> = Vec::new();
        let mut add = |a: Allowed| {
            if !allowed.contains(&a) {
                allowed.push(a);
            }
        };
        let loopback_names = ip.is_loopback() || ip.is_unspecified();
        if !ip.is_unspecified() {
            add(Allowed {
                name: Name::Ip(ip),
                port: Some(port),
            });
        }
        if loopback_names {
            for n in ["localhost", "127.0.0.1", "[::1]"] {
                add(parse_entry(n, Some(port)).expect("loopback names parse"));
            }
        }
        let configured = configured.trim();
        if configured.parse::<IpAddr>().is_err()
            && let Some(a) = parse_entry(configured, Some(port))
        {
            add(a);
        }
        for entry in extra {
            add(parse_entry(entry, None)
                .ok_or_else(|| format!("{entry:?} is not a host or host:port"))?);
        }
        let fallback = match local {
            SocketAddr::V4(a) if a.ip().is_unspecified() => format!("127.0.0.1:{port}"),
            SocketAddr::V6(a) if a.ip().is_unspecified() => format!("[::1]:{port}"),
            other => other.to_string(),
        };
        Ok(HostPolicy { allowed, fallback })
    }

    /// Checks the `Host` fields of a request (`values`, in order) of HTTP/1.`minor`. On success,
    /// the authority URLs may name: the `Host` as sent (lower-cased), or the bound address for
    /// an HTTP/1.0 request without `Host` (HTTP/1.0 did not require it).
    pub fn check(&self, values: &[&[u8]], minor: u8) -> Result<String, HostRefusal> {
        let raw = match values {
            [] if minor == 0 => return Ok(self.fallback.clone()),
            [] => return Err(HostRefusal::Missing),
            [one] => *one,
            _ => return Err(HostRefusal::Repeated),
        };
        let authority = std::str::from_utf8(raw)
            .ok()
            .and_then(sanitize_host)
            .ok_or(HostRefusal::Malformed)?;
        let (name, port) = split(&authority).ok_or(HostRefusal::Malformed)?;
        let port = port.unwrap_or(80);
        let ok = self
            .allowed
            .iter()
            .any(|a| a.name == name && a.port.is_none_or(|p| p == port));
        if ok {
            Ok(authority)
        } else {
            Err(HostRefusal::Foreign)
        }
    }

    /// The allowed authorities, for the startup log (`*` for any port).
    pub fn describe(&self) -> String {
        let shown: Vec<String> = self
            .allowed
            .iter()
            .map(|a| {
                let name = match &a.name {
                    Name::Reg(n) => n.clone(),
                    Name::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
                    Name::Ip(ip) => ip.to_string(),
                };
                match a.port {
                    Some(p) => format!("{name}:{p}"),
                    None => format!("{name}:*"),
                }
            })
            .collect();
        shown.join(", ")
    }
}

/// An allow-list entry; `default_port` applies when the entry names none.
fn parse_entry(entry: &str, default_port: Option<u16>) -> Option<Allowed> {
    let entry = entry.trim();
    let bracketed = if entry.parse::<core::net::Ipv6Addr>().is_ok() {
        format!("[{entry}]")
    } else {
        entry.to_string()
    };
    let (name, port) = split(&sanitize_host(&bracketed)?)?;
    Some(Allowed {
        name,
        port: port.or(default_port),
    })
}

/// A sanitised authority as a comparable name and its port, if any.
fn split(authority: &str) -> Option<(Name, Option<u16>)> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (inside, after) = rest.split_once(']')?;
            (inside, after.strip_prefix(':'))
        }
        None => match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() {
        return None;
    }
    let name = match host.parse::<IpAddr>() {
        Ok(ip) => Name::Ip(ip.to_canonical()),
        Err(_) => Name::Reg(host.to_ascii_lowercase()),
    };
    Some((name, port))
}

#[cfg(test)]
mod tests;
