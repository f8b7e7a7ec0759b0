//! Settings of the HTTP transports, shared by both runtimes: where to bind, which extra
//! origins to trust, and the limits that protect the server. Plain values: the CLI fills them
//! from flags and environment variables; nothing here reads either.

use std::time::Duration;

use super::request::ParserLimits;

/// Where and how to serve HTTP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpOptions {
    /// Interface to bind (`127.0.0.1` by default; a non-loopback one needs a bearer token).
    pub host: String,
    /// Port to bind; 0 asks the OS for a free one (tests).
    pub port: u16,
    /// Origins allowed besides the loopback ones and the bind host, e.g.
    /// `https://app.example.com` (`BERNSTEIN_MCP_ALLOWED_ORIGINS`, comma-separated).
    pub allowed_origins: Vec<String>,
    /// `Host` values answered besides the bind address and, on a loopback or wildcard bind,
    /// the loopback names: `host` (any port) or `host:port` (`BERNSTEIN_MCP_ALLOWED_HOSTS`,
    /// comma-separated). See [`super::host`].
    pub allowed_hosts: Vec<String>,
    pub limits: HttpLimits,
    /// Serve MCP (`/mcp`, `/sse`, `/messages`); off for the read-only `bernstein dashboard`,
    /// which serves only the operator's routes ([`super::operator`]).
    pub mcp: bool,
    /// Event loops serving this port, each with its own engine (`--engines N`,
    /// `BERNSTEIN_MCP_ENGINES`; one by default). See `engine::shared` for what they share.
    pub engines: usize,
    /// Whether the runtime serves this port over TLS (set by the runtime from the certificate
    /// it was given): a public bind with an OAuth issuer then needs no static token.
    pub tls: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            host: "127.0.0.1".into(),
            port: 8053,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            limits: HttpLimits::default(),
            mcp: true,
            engines: 1,
            tls: false,
        }
    }
}

impl HttpOptions {
    /// Splits a comma-separated origin or host list, dropping empty entries.
    pub fn parse_origin_list(list: &str) -> Vec<String> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }

    /// `host:port` as a socket address string (IPv6 literals bracketed).
    pub fn bind_address(&self) -> String {
        let host = self.host.trim();
        if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{}", self.port)
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// Limits of the HTTP server. Exceeding one answers with the matching status and a log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Largest request body (413 beyond).
    pub max_body_bytes: usize,
    /// Largest request line plus header block (431 beyond).
    pub max_header_bytes: usize,
    /// Most header fields in one request (431 beyond).
    pub max_headers: usize,
    /// How long a connection may stay silent, idle or in the middle of a request, before it is
    /// closed (408 when a request was under way).
    pub read_timeout: Duration,
    /// Most bytes a connection may have answered and not yet written to its client. Over it,
    /// the server stops reading the connection and starts nothing more on it (not even a
    /// request already read) until its client has read enough to bring it back under; a legacy
    /// SSE stream or a dashboard feed is closed if it stays over it for [`Self::write_timeout`].
    /// So a client that never reads holds this, plus at most one answer, not one per request.
    pub max_unsent_bytes: usize,
    /// A write that makes no progress for this long closes its connection (the client stopped
    /// reading), and a legacy SSE stream or a dashboard feed over [`Self::max_unsent_bytes`]
    /// this long is closed. Ten seconds by default: a client that reads takes bytes within
    /// milliseconds, and ten seconds outlast a few TCP retransmissions (1 + 2 + 4 s) or a
    /// browser tab paused for a moment, while a stuck client gives its connection back three
    /// times sooner than the read timeout would.
    pub write_timeout: Duration,
    /// Most simultaneous connections, legacy SSE streams included (503 beyond).
    pub max_connections: usize,
    /// Threads that call a store which may wait on the network (PostgreSQL); requests
    /// themselves are served by one event loop.
    pub workers: usize,
    /// Most answers waiting for the ledger at once (long polls, open `tasks/result`s); a
    /// waiting answer holds its connection but no thread. Beyond it a wait is refused with a
    /// clear, retryable error.
    pub max_waits: usize,
    /// Most waiting answers for one peer address (the same refusal beyond it).
    pub max_waits_per_peer: usize,
    /// Most simultaneously open legacy SSE streams, and (counted separately) dashboard feeds
    /// (`GET /api/events`). At the cap, the one idle longest (no event but keep-alives, and for
    /// a legacy stream no message being served) is closed to admit a new one; `503` when none
    /// is idle.
    pub max_legacy_streams: usize,
    /// Most legacy SSE streams, and (separately) feeds, of one peer address; at it, that peer's
    /// idle longest is closed to admit its new one (`503` when none is idle). A quarter of
    /// [`Self::max_legacy_streams`] by default.
    pub max_streams_per_peer: usize,
    /// Interval of keep-alive comments on open legacy SSE streams.
    pub sse_keepalive: Duration,
    /// A legacy SSE stream with no message POSTed for it this long is closed, so idle clients
    /// cannot hold the stream cap.
    pub sse_idle: Duration,
    /// A dashboard feed that was told no new head this long is closed (its page reconnects).
    pub feed_idle: Duration,
    /// After a connection's last answer the server half-closes it and reads and drops what its
    /// peer still sends for at most this long ([`Self::linger_bytes`] at most), so that the
    /// close does not reset the connection before the peer has read the answer.
    pub linger: Duration,
    /// Most bytes read and dropped while a connection lingers.
    pub linger_bytes: usize,
    /// How long a shutdown waits for the requests in flight to be answered before the server
    /// stops anyway ([`Engine::is_drained`](crate::engine::Engine::is_drained)).
    pub shutdown_grace: Duration,
    /// Most resources subscribed to at once, in all and by one connection (its
    /// `resources/subscribe`s on a legacy stream, or the resources of the `subscriptions/listen`
    /// streams it carries); beyond, the subscription is refused with a clear error.
    pub max_subscriptions: usize,
    pub max_subscriptions_per_connection: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_body_bytes: 1 << 20,
            max_header_bytes: 16 * 1024,
            max_headers: 64,
            read_timeout: Duration::from_secs(30),
            max_unsent_bytes: 64 * 1024,
            write_timeout: Duration::from_secs(10),
            max_connections: 512,
            workers: 16,
            max_waits: 512,
            max_waits_per_peer: 128,
            max_legacy_streams: 128,
            max_streams_per_peer: 32,
            sse_keepalive: Duration::from_secs(15),
            sse_idle: Duration::from_secs(300),
            feed_idle: Duration::from_secs(300),
            linger: Duration::from_millis(500),
            linger_bytes: 1 << 20,
            shutdown_grace: Duration::from_secs(10),
            max_subscriptions: 100_000,
            max_subscriptions_per_connection: 1_024,
        }
    }
}

impl HttpLimits {
    /// The limits the request parser enforces.
    pub fn parser(&self) -> ParserLimits {
        ParserLimits {
            max_header_bytes: self.max_header_bytes,
            max_headers: self.max_headers,
            max_body_bytes: self.max_body_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_lists_and_bind_addresses() {
        assert_eq!(
            HttpOptions::parse_origin_list(" https://a ,, http://b:1 "),
            vec!["https://a", "http://b:1"]
        );
        let mut o = HttpOptions {
            port: 1,
            ..HttpOptions::default()
        };
        assert_eq!(o.bind_address(), "127.0.0.1:1");
        o.host = "::1".into();
        assert_eq!(o.bind_address(), "[::1]:1");
        assert_eq!(HttpLimits::default().parser().max_body_bytes, 1 << 20);
    }
}
