//! One connection's TLS without IO: bytes read from the socket go in, the plaintext they carry
//! and the bytes to write back come out. A first byte that cannot begin a TLS handshake is a
//! plain-HTTP client: it is answered, in plain HTTP, that the port speaks HTTPS.

use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;

use rustls::{ServerConfig, ServerConnection};

/// The first byte of a TLS record carrying a handshake (a ClientHello).
const HANDSHAKE_RECORD: u8 = 0x16;

/// What the bytes handed to [`TlsSession::receive`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Received {
    /// The connection goes on.
    Open,
    /// The peer said it sends nothing more (`close_notify`).
    PeerClosed,
    /// A plain-HTTP client: the bytes to write are the refusal; write them, then close.
    PlainHttp,
    /// Not TLS, or a failed handshake or record: the bytes to write are the alert, if any;
    /// write them, then close.
    Failed(String),
}

/// One connection's TLS.
pub struct TlsSession {
    conn: ServerConnection,
    /// Whether no byte arrived yet.
    fresh: bool,
    local: Option<SocketAddr>,
}

impl std::fmt::Debug for TlsSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSession")
            .field("handshaking", &self.conn.is_handshaking())
            .finish_non_exhaustive()
    }
}

impl TlsSession {
    pub(super) fn new(
        config: Arc<ServerConfig>,
        local: Option<SocketAddr>,
    ) -> Result<TlsSession, String> {
        let mut conn = ServerConnection::new(config).map_err(|e| format!("TLS: {e}"))?;
        // What the server sends is bounded by the engine (its unsent bound), not here.
        conn.set_buffer_limit(None);
        Ok(TlsSession {
            conn,
            fresh: true,
            local,
        })
    }

    /// Takes `raw`, bytes read from the socket: appends the plaintext they complete to
    /// `plain` and what must be written back (handshake, alerts) to `out`.
    pub fn receive(&mut self, raw: &[u8], plain: &mut Vec<u8>, out: &mut Vec<u8>) -> Received {
        if self.fresh && !raw.is_empty() {
            self.fresh = false;
            if raw[0] != HANDSHAKE_RECORD {
                if raw[0].is_ascii_uppercase() {
                    out.extend_from_slice(&refusal(raw, self.local).into_bytes());
                    return Received::PlainHttp;
                }
                return Received::Failed("not a TLS handshake".into());
            }
        }
        let mut rest = raw;
        let mut closed = false;
        while !rest.is_empty() {
            if let Err(e) = self.conn.read_tls(&mut rest) {
                return Received::Failed(e.to_string());
            }
            match self.conn.process_new_packets() {
                Ok(state) => {
                    let n = state.plaintext_bytes_to_read();
                    closed |= state.peer_has_closed();
                    if n > 0 {
                        let start = plain.len();
                        plain.resize(start + n, 0);
                        if let Err(e) = self.conn.reader().read_exact(&mut plain[start..]) {
                            plain.truncate(start);
                            return Received::Failed(e.to_string());
                        }
                    }
                }
                Err(e) => {
                    self.pending(out);
                    return Received::Failed(e.to_string());
                }
            }
        }
        self.pending(out);
        if closed {
            Received::PeerClosed
        } else {
            Received::Open
        }
    }

    /// Encrypts `plain` (queued until the handshake is done) and appends what to write to `out`.
    pub fn send(&mut self, plain: &[u8], out: &mut Vec<u8>) {
        use std::io::Write as _;
        // Without a buffer limit the writer takes everything.
        let _ = self.conn.writer().write_all(plain);
        self.pending(out);
    }

    /// Says this side sends nothing more (`close_notify`), appending it to `out`.
    pub fn close(&mut self, out: &mut Vec<u8>) {
        self.conn.send_close_notify();
        self.pending(out);
    }

    /// Whether the handshake is still under way.
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Appends the TLS bytes waiting to be written to `out`.
    fn pending(&mut self, out: &mut Vec<u8>) {
        while self.conn.wants_write() {
            if self.conn.write_tls(out).is_err() {
                return;
            }
        }
    }
}

/// The plain-HTTP answer to a plain-HTTP request on the TLS port: 400, the https:// URL to
/// use, then the connection closes.
fn refusal(request: &[u8], local: Option<SocketAddr>) -> String {
    let authority = host_header(request).or_else(|| local.map(|a| a.to_string()));
    let url = match authority {
        Some(a) => format!("https://{a}/"),
        None => "https://".to_string(),
    };
    let body = format!("This port speaks HTTPS only: send the request to {url} instead.\n");
    format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The `Host` header of the request's first bytes, when it is a plain host[:port].
fn host_header(request: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(request.get(..request.len().min(8192))?).ok()?;
    let value = text
        .split("\r\n")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("host")
                .then(|| value.trim())
        })?;
    let plain = !value.is_empty()
        && value.len() <= 255
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b));
    plain.then(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_https_url() {
        let r = refusal(b"GET /mcp HTTP/1.1\r\nHost: example.org:8053\r\n\r\n", None);
        assert!(r.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{r}");
        assert!(r.contains("https://example.org:8053/"), "{r}");
        let local = "127.0.0.1:9".parse().ok();
        let r = refusal(b"POST /mcp HTTP/1.1\r\nHost: a b<script>\r\n\r\n", local);
        assert!(r.contains("https://127.0.0.1:9/"), "{r}");
        let (head, body) = r.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
    }
}
