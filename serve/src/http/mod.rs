//! What both runtimes' HTTP servers share: [`open_listener`] (the startup bind rule),
//! [`announce`], [`ConnectionCounter`], the closed-peer probe ([`peer`]), the waiting room
//! ([`room`]) and [`service`] (routing through the core's policy, serving MCP bodies with the
//! request driver, the legacy stream registry, the operator's routes and the dashboards'
//! feeds). Framing, routing, header rules, auth, SSE encoding and status mapping are the
//! core's (`bernstein_core::transport::http`); moving bytes is each runtime's.

mod feeds;
mod metrics_route;
mod operator;
pub mod peer;
pub mod room;
pub mod service;

use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bernstein_core::Config;
use bernstein_core::transport::http::guard::check_bind;
use bernstein_core::transport::http::{HttpOptions, HttpPolicy};

pub use room::{Parked, WaitRoom};
pub use service::{Action, EventSink, HttpService, LegacyStreams, Waiting};

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
    check_bind(&options.host, loopback, &config.auth)
        .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
    let listener = TcpListener::bind(&addrs[..])?;
    let local = listener.local_addr()?;
    let policy = HttpPolicy::new(config, options, &local.to_string(), is_loopback(&local))
        .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
    Ok((listener, policy))
}

/// Says on stderr where a server listens and which `Host` values it answers (`runtime`
/// describes the runtime, for the log).
pub fn announce(service: &HttpService, local: SocketAddr, runtime: &str) {
    bernstein_store_file::log_line!(
        "bernstein: answering HTTP requests whose Host is one of: {} (add names with BERNSTEIN_MCP_ALLOWED_HOSTS)",
        service.policy.allowed_hosts()
    );
    if service.options.mcp {
        bernstein_store_file::log_line!(
            "bernstein: serving MCP over HTTP at http://{local}/mcp (legacy SSE at /sse; {runtime})"
        );
        bernstein_store_file::log_line!(
            "bernstein: dashboard at http://{local}/ (metrics at /metrics, probes at /healthz and /readyz)"
        );
    } else {
        bernstein_store_file::log_line!(
            "bernstein: serving the read-only dashboard at http://{local}/ (metrics at /metrics, probes at /healthz and /readyz; {runtime})"
        );
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

/// Counts open connections against the cap.
#[derive(Clone, Debug)]
pub struct ConnectionCounter {
    open: Arc<AtomicUsize>,
    max: usize,
}

impl ConnectionCounter {
    pub fn new(max: usize) -> ConnectionCounter {
        ConnectionCounter::sharing(max, Arc::new(AtomicUsize::new(0)))
    }

    /// A counter whose count of open connections is `open` (a metrics gauge).
    pub fn sharing(max: usize, open: Arc<AtomicUsize>) -> ConnectionCounter {
        ConnectionCounter { open, max }
    }

    /// A slot for one more connection, or `None` at the cap.
    pub fn try_acquire(&self) -> Option<ConnectionSlot> {
        let mut n = self.open.load(Ordering::Relaxed);
        loop {
            if n >= self.max {
                return None;
            }
            match self
                .open
                .compare_exchange_weak(n, n + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return Some(ConnectionSlot(self.open.clone())),
                Err(now) => n = now,
            }
        }
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }
}

/// One counted connection; released on drop.
#[derive(Debug)]
pub struct ConnectionSlot(Arc<AtomicUsize>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A log line about one peer, on stderr.
pub fn log(peer: &SocketAddr, message: impl std::fmt::Display) {
    bernstein_store_file::log_line!("bernstein http: {peer}: {message}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_caps_and_releases() {
        let c = ConnectionCounter::new(2);
        let a = c.try_acquire().unwrap();
        let _b = c.try_acquire().unwrap();
        assert!(c.try_acquire().is_none());
        drop(a);
        assert_eq!(c.open(), 1);
        assert!(c.try_acquire().is_some());
    }

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
}
