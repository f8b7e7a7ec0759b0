//! What both runtimes' HTTP servers share besides the engine: [`open_listener`] (the startup
//! bind rule), the startup [`Announcement`], the [`HttpServerHandle`] of a running server, and
//! [`operator`] (answering the operator's routes
//! from the store and the engine's counters). Framing, routing, header rules, auth, SSE
//! encoding, status mapping, timeouts and waits are the engine's
//! (`bernstein_core::engine`, `bernstein_core::transport::http`); moving bytes is each
//! runtime's.

mod handle;
mod metrics_route;
pub mod operator;

pub use handle::HttpServerHandle;

use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};

use bernstein_core::Config;
use bernstein_core::transport::http::guard::check_bind;
use bernstein_core::transport::http::{HttpOptions, HttpPolicy};

/// How many connections the kernel queues for the loop to accept (capped by
/// `net.core.somaxconn`).
const LISTEN_BACKLOG: i32 = 4096;

/// Resolves and binds `options.host:options.port` and builds the core's policy for it.
/// Refuses, before binding, a non-loopback interface without a bearer token.
pub fn open_listener(
    config: &Config,
    options: &HttpOptions,
) -> io::Result<(TcpListener, HttpPolicy)> {
    let addrs: Vec<SocketAddr> = options.bind_address().to_socket_addrs()?.collect();
    if addrs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} resolves to no address", options.host),
        ));
    }
    let loopback = addrs.iter().all(is_loopback);
    check_bind(
        &options.host,
        loopback,
        &config.auth,
        config.oauth.is_some(),
        options.tls,
    )
    .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
    let listener = TcpListener::bind(&addrs[..])?;
    // The standard library listens with a queue of 128: a burst of connections faster than the
    // loop accepts them overflows it, and the kernel drops their SYNs (each client then waits
    // a 1 s retransmission). Listening again on the bound socket only lengthens the queue.
    rustix::net::listen(&listener, LISTEN_BACKLOG)?;
    let local = listener.local_addr()?;
    let policy = HttpPolicy::new(config, options, &local.to_string(), is_loopback(&local))
        .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
    Ok((listener, policy))
}

/// What a server says on stderr once it listens.
#[derive(Clone, Debug)]
pub struct Announcement {
    allowed_hosts: String,
    mcp: bool,
    tls: bool,
}

impl Announcement {
    pub fn new(policy: &HttpPolicy, options: &HttpOptions) -> Announcement {
        Announcement {
            allowed_hosts: policy.allowed_hosts(),
            mcp: options.mcp,
            tls: options.tls,
        }
    }

    /// Says where the server listens and which `Host` values it answers (`runtime` describes
    /// the runtime, for the log).
    pub fn announce(&self, local: SocketAddr, runtime: &str) {
        let (proto, scheme) = if self.tls {
            ("HTTPS", "https")
        } else {
            ("HTTP", "http")
        };
        bernstein_os::log_line!(
            "bernstein: answering HTTP requests whose Host is one of: {} (add names with BERNSTEIN_MCP_ALLOWED_HOSTS)",
            self.allowed_hosts
        );
        if self.mcp {
            bernstein_os::log_line!(
                "bernstein: serving MCP over {proto} at {scheme}://{local}/mcp (legacy SSE at /sse; {runtime})"
            );
            bernstein_os::log_line!(
                "bernstein: dashboard at {scheme}://{local}/ (metrics at /metrics, probes at /healthz and /readyz)"
            );
        } else {
            bernstein_os::log_line!(
                "bernstein: serving the read-only dashboard at {scheme}://{local}/ (metrics at /metrics, probes at /healthz and /readyz; {runtime})"
            );
        }
    }
}

/// Whether an address is loopback (IPv4-mapped IPv6 included).
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().to_canonical().is_loopback()
}

/// The address a client on this machine uses to reach a listener (wildcards → loopback).
pub fn reachable(local: SocketAddr) -> SocketAddr {
    match local {
        SocketAddr::V4(a) if a.ip().is_unspecified() => {
            SocketAddr::from(([127, 0, 0, 1], a.port()))
        }
        SocketAddr::V6(a) if a.ip().is_unspecified() => {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, a.port()))
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_bind_without_token_is_refused_before_binding() {
        let opts = HttpOptions {
            host: "0.0.0.0".into(),
            port: 0,
            ..HttpOptions::default()
        };
        let err = open_listener(&Config::new(b"k".to_vec()), &opts).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert!(err.to_string().contains("BERNSTEIN_MCP_TOKEN"), "{err}");
        let opts = HttpOptions {
            port: 0,
            ..HttpOptions::default()
        };
        let (listener, _) = open_listener(&Config::new(b"k".to_vec()), &opts).unwrap();
        assert!(is_loopback(&listener.local_addr().unwrap()));
        assert_eq!(
            reachable("0.0.0.0:5".parse().unwrap()),
            "127.0.0.1:5".parse().unwrap()
        );
    }

    #[test]
    fn a_public_bind_needs_no_static_token_with_oauth_over_tls_only() {
        let mut config = Config::new(b"k".to_vec());
        config.oauth = Some(bernstein_core::config::OAuthConfig::new(
            "https://idp.example",
            vec!["bernstein.read".into()],
        ));
        let public = |tls: bool| HttpOptions {
            host: "0.0.0.0".into(),
            port: 0,
            tls,
            ..HttpOptions::default()
        };
        let err = open_listener(&config, &public(false)).unwrap_err();
        assert_eq!(
            err.kind(),
            io::ErrorKind::PermissionDenied,
            "tokens in the clear"
        );
        assert!(open_listener(&config, &public(true)).is_ok());
        let no_oauth = Config::new(b"k".to_vec());
        assert!(
            open_listener(&no_oauth, &public(true)).is_err(),
            "TLS alone"
        );
    }
}
