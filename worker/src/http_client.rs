//! `--url`: the worker's streamable-HTTP transport, a small blocking HTTP/1.1 client on
//! `std::net` with `httparse` for the response head.
//!
//! One connection per request (`Connection: close`), so a dead server costs one refused
//! connect and nothing lingers. Every POST carries `Content-Type: application/json`,
//! `Accept: application/json, text/event-stream`, the 2026-07-28 era headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name: <tool>` on a `tools/call`) and, when
//! `BERNSTEIN_MCP_TOKEN` is set, `Authorization: Bearer <token>`. The answer is read as JSON or
//! as an SSE stream (the last `data:` event that is a JSON-RPC response wins); chunked
//! transfer coding is decoded. Plain `http://` only: put TLS in front with a proxy.
//!
//! This module moves bytes; it never interprets a tool result (see [`crate::transport`]).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::Value;

use crate::transport::{Mcp, PROTOCOL_VERSION, TransportError};

/// Longest a request may take (connect, send, answer).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest answer read.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// A streamable-HTTP MCP endpoint.
#[derive(Clone, Debug)]
pub struct HttpMcp {
    host: String,
    port: u16,
    path: String,
    token: Option<String>,
}

impl HttpMcp {
    /// Parses `http://host[:port][/path]` (default port 80, default path `/mcp`).
    pub fn new(url: &str, token: Option<String>) -> Result<HttpMcp, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url}: only http:// URLs are supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/mcp"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
                h.trim_start_matches('[').trim_end_matches(']'),
                p.parse::<u16>()
                    .map_err(|_| format!("{url}: bad port {p:?}"))?,
            ),
            _ => (authority, 80),
        };
        if host.is_empty() {
            return Err(format!("{url}: no host"));
        }
        Ok(HttpMcp {
            host: host.to_string(),
            port,
            path: path.to_string(),
            token: token.filter(|t| !t.is_empty()),
        })
    }

    /// A connection whose reads may take `REQUEST_TIMEOUT` plus `hold`.
    fn connect(&self, hold: Duration) -> Result<TcpStream, TransportError> {
        let addrs = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| TransportError::Io(format!("{}:{}: {e}", self.host, self.port)))?;
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, Duration::from_secs(10)) {
                Ok(s) => {
                    let io = |e: std::io::Error| TransportError::Io(e.to_string());
                    s.set_read_timeout(Some(REQUEST_TIMEOUT + hold))
                        .map_err(io)?;
                    s.set_write_timeout(Some(REQUEST_TIMEOUT)).map_err(io)?;
                    return Ok(s);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(TransportError::Io(format!(
            "{}:{}: {}",
            self.host,
            self.port,
            last.map_or("no address".to_string(), |e| e.to_string())
        )))
    }

    /// The head of a POST of `method` (`name`: the tool a `tools/call` calls).
    fn request_head(&self, method: &str, name: Option<&str>, len: usize) -> String {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {PROTOCOL_VERSION}\r\n\
             Mcp-Method: {method}\r\nContent-Length: {len}\r\nConnection: close\r\n",
            self.path, self.host, self.port
        );
        if let Some(name) = name {
            head.push_str(&format!("Mcp-Name: {name}\r\n"));
        }
        if let Some(t) = &self.token {
            head.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        head.push_str("\r\n");
        head
    }
}

impl HttpMcp {
    /// POSTs `body` and reads the whole answer.
    fn post(&self, head: &str, body: &[u8], hold: Duration) -> Result<HttpAnswer, TransportError> {
        let mut stream = self.connect(hold)?;
        let io = |e: std::io::Error| TransportError::Io(e.to_string());
        stream.write_all(head.as_bytes()).map_err(io)?;
        stream.write_all(body).map_err(io)?;
        let mut raw = Vec::new();
        stream
            .take(MAX_RESPONSE_BYTES as u64)
            .read_to_end(&mut raw)
            .map_err(io)?;
        parse_response(&raw)
    }
}

impl Mcp for HttpMcp {
    fn exchange(
        &self,
        tool: &str,
        request: &[u8],
        hold: Duration,
    ) -> Result<Value, TransportError> {
        let head = self.request_head("tools/call", Some(tool), request.len());
        let response = self.post(&head, request, hold)?;
        if response.status != 200 {
            // JSON-RPC errors ride on 4xx with a JSON body; surface them as such.
            if let Ok(v) = serde_json::from_slice::<Value>(&response.body)
                && v.get("error").is_some()
            {
                return Ok(v);
            }
            return Err(TransportError::Http {
                status: response.status,
                body: String::from_utf8_lossy(&response.body).into_owned(),
            });
        }
        if response.event_stream {
            return last_sse_response(&response.body);
        }
        serde_json::from_slice(&response.body)
            .map_err(|e| TransportError::Malformed(format!("answer is not JSON: {e}")))
    }

    /// A notification is accepted with 202 and no body.
    fn notify(&self, method: &str, notification: &[u8]) -> Result<(), TransportError> {
        let head = self.request_head(method, None, notification.len());
        let response = self.post(&head, notification, Duration::ZERO)?;
        match response.status {
            200..=299 => Ok(()),
            status => Err(TransportError::Http {
                status,
                body: String::from_utf8_lossy(&response.body).into_owned(),
            }),
        }
    }
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct HttpAnswer {
    pub status: u16,
    pub event_stream: bool,
    pub body: Vec<u8>,
}

/// Parses a whole `Connection: close` response.
pub fn parse_response(raw: &[u8]) -> Result<HttpAnswer, TransportError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut res = httparse::Response::new(&mut headers);
    let head_len = match res.parse(raw) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return Err(TransportError::Io(
                "the connection closed mid-answer".into(),
            ));
        }
        Err(e) => return Err(TransportError::Malformed(format!("HTTP head: {e}"))),
    };
    let header = |name: &str| {
        res.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase())
    };
    let event_stream = header("content-type").is_some_and(|c| c.contains("text/event-stream"));
    let chunked = header("transfer-encoding").is_some_and(|t| t.contains("chunked"));
    let rest = &raw[head_len..];
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(len) = header("content-length").and_then(|l| l.trim().parse().ok()) {
        rest.get(..len)
            .ok_or_else(|| TransportError::Io("the connection closed mid-body".into()))?
            .to_vec()
    } else {
        rest.to_vec()
    };
    Ok(HttpAnswer {
        status: res.code.unwrap_or(0),
        event_stream,
        body,
    })
}

/// Decodes a chunked body.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, TransportError> {
    let mut out = Vec::new();
    loop {
        let nl = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| TransportError::Malformed("chunk size line".into()))?;
        let size_text = String::from_utf8_lossy(&rest[..nl]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| TransportError::Malformed(format!("chunk size {size_text:?}")))?;
        rest = &rest[nl + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = rest
            .get(..size)
            .ok_or_else(|| TransportError::Io("the connection closed mid-chunk".into()))?;
        out.extend_from_slice(chunk);
        rest = rest.get(size + 2..).unwrap_or(&[]);
    }
}

/// The last JSON-RPC response (a message with `result` or `error`) among an SSE body's events.
pub fn last_sse_response(body: &[u8]) -> Result<Value, TransportError> {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    let mut found = None;
    for event in text.split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            continue;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&data.join("\n"))
            && (v.get("result").is_some() || v.get("error").is_some())
        {
            found = Some(v);
        }
    }
    found.ok_or_else(|| TransportError::Malformed("the event stream held no response".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_defaults() {
        let h = HttpMcp::new("http://127.0.0.1:8053/mcp", None).unwrap();
        assert_eq!(
            (h.host.as_str(), h.port, h.path.as_str()),
            ("127.0.0.1", 8053, "/mcp")
        );
        let h = HttpMcp::new("http://localhost", Some(String::new())).unwrap();
        assert_eq!((h.port, h.path.as_str(), h.token), (80, "/mcp", None));
        let h = HttpMcp::new("http://[::1]:9000/x", None).unwrap();
        assert_eq!((h.host.as_str(), h.port), ("::1", 9000));
        assert!(HttpMcp::new("https://x", None).is_err());
    }

    #[test]
    fn json_sse_and_chunked_answers_are_read() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"id\":1}xyz";
        let a = parse_response(raw).unwrap();
        assert_eq!(a.body, b"{\"id\":1}xyz");
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
            1c\r\ndata: {\"method\":\"n\"}\n\nid: 2\n\r\n1a\r\ndata: {\"id\":1,\"result\":{}}\r\n0\r\n\r\n";
        let a = parse_response(raw).unwrap();
        assert!(a.event_stream);
        let v = last_sse_response(&a.body).unwrap();
        assert_eq!(v["id"], 1);
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-").is_err());
    }

    #[test]
    fn the_token_rides_in_the_authorization_header() {
        let h = HttpMcp::new("http://h:1/mcp", Some("s3cret".into())).unwrap();
        let head = h.request_head("tools/call", Some("bernstein_claim"), 10);
        assert!(head.contains("Authorization: Bearer s3cret\r\n"));
        assert!(head.contains("Mcp-Method: tools/call\r\nContent-Length: 10\r\n"));
        assert!(head.contains("Mcp-Name: bernstein_claim\r\n"));
        assert!(head.ends_with("\r\n\r\n"));
        let note = h.request_head("notifications/cancelled", None, 5);
        assert!(note.contains("Mcp-Method: notifications/cancelled\r\n"));
        assert!(!note.contains("Mcp-Name"));
    }
}
