//! A raw HTTP/1.1 client for tests: writes bytes, reads responses framed by `Content-Length`
//! (or until close), and reads SSE events from an open stream.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One parsed response.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("JSON body ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The `data:` payloads of an SSE body, with each event's id.
    pub fn sse_events(&self) -> Vec<SseEvent> {
        parse_events(&self.text())
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

fn parse_events(text: &str) -> Vec<SseEvent> {
    text.split("\n\n").filter_map(parse_event).collect()
}

fn parse_event(block: &str) -> Option<SseEvent> {
    let mut ev = SseEvent {
        id: None,
        event: None,
        data: String::new(),
    };
    let mut has_data = false;
    for line in block.lines() {
        if let Some(v) = line.strip_prefix("id: ") {
            ev.id = Some(v.to_string());
        } else if let Some(v) = line.strip_prefix("event: ") {
            ev.event = Some(v.to_string());
        } else if let Some(v) = line.strip_prefix("data: ") {
            if has_data {
                ev.data.push('\n');
            }
            ev.data.push_str(v);
            has_data = true;
        }
    }
    has_data.then_some(ev)
}

/// A client connection.
pub struct Conn {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// The authority this connection reached (`ip:port`): the `Host` a client sends.
    pub fn host(&self) -> String {
        self.stream.peer_addr().expect("connected").to_string()
    }

    /// Writes a request with `Host` and `Content-Length` filled in.
    pub fn send_request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) {
        let host = self.host();
        self.send(&request_bytes(&host, method, path, headers, body));
    }

    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> RawResponse {
        self.send_request(method, path, headers, body);
        self.read_response()
    }

    /// POSTs a JSON-RPC body to `/mcp` with the headers every client sends.
    pub fn post_mcp(&mut self, body: &Value, extra: &[(&str, &str)]) -> RawResponse {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        headers.extend_from_slice(extra);
        self.request("POST", "/mcp", &headers, body.to_string().as_bytes())
    }

    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 8192];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return true;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("read failed: {e}"),
            }
        }
    }

    /// Reads one response (a `100 Continue` counts as one).
    pub fn read_response(&mut self) -> RawResponse {
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            assert!(
                self.fill(),
                "connection closed before a response head; got {:?}",
                String::from_utf8_lossy(&self.buf)
            );
        };
        let head = String::from_utf8(self.buf[..head_end].to_vec()).expect("ASCII head");
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("status line {status_line:?}"));
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (n, v) = l.split_once(':').expect("header line");
                (n.trim().to_string(), v.trim().to_string())
            })
            .collect();
        self.buf.drain(..head_end);
        let mut resp = RawResponse {
            status,
            headers,
            body: Vec::new(),
        };
        if status == 100 {
            return resp;
        }
        match resp
            .header("content-length")
            .map(|v| v.parse::<usize>().unwrap())
        {
            Some(len) => {
                while self.buf.len() < len {
                    assert!(self.fill(), "connection closed inside a body");
                }
                resp.body = self.buf.drain(..len).collect();
            }
            None => {
                while self.fill() {}
                resp.body = std::mem::take(&mut self.buf);
            }
        }
        resp
    }

    /// Reads the head of a response whose body stays open (an SSE stream).
    pub fn read_stream_head(&mut self) -> RawResponse {
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            assert!(self.fill(), "closed before a stream head");
        };
        let head = String::from_utf8(self.buf[..head_end].to_vec()).unwrap();
        self.buf.drain(..head_end);
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (n, v) = l.split_once(':').unwrap();
                (n.trim().to_string(), v.trim().to_string())
            })
            .collect();
        RawResponse {
            status,
            headers,
            body: Vec::new(),
        }
    }

    /// Reads the next SSE event with data (comments skipped).
    pub fn read_event(&mut self) -> SseEvent {
        loop {
            while let Some(i) = find(&self.buf, b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..i + 2).collect();
                if let Some(ev) = parse_event(&String::from_utf8_lossy(&block)) {
                    return ev;
                }
            }
            assert!(self.fill(), "stream closed before an event");
        }
    }

    /// Whether the server closes the connection within `within` (EOF or reset).
    pub fn closed_within(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let mut chunk = [0u8; 4096];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            self.stream.set_read_timeout(Some(left)).unwrap();
            match self.stream.read(&mut chunk) {
                Ok(0) => return true,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return false;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return true,
            }
        }
    }

    /// Reads until the unconsumed bytes contain `needle` (true) or `within` passes or the peer
    /// closes (false). Consumes through the needle.
    pub fn read_until(&mut self, needle: &[u8], within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(i) = find(&self.buf, needle) {
                self.buf.drain(..i + needle.len());
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            self.stream.set_read_timeout(Some(left)).unwrap();
            match self.stream.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// Bytes received but not consumed (e.g. a response before a close).
    pub fn pending_text(&self) -> String {
        String::from_utf8_lossy(&self.buf).into_owned()
    }
}

/// A request's bytes; `host` is the `Host` sent unless `headers` name one.
pub fn request_bytes(
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut out = format!("{method} {path} HTTP/1.1\r\n").into_bytes();
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        out.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
    }
    for (n, v) in headers {
        out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
    }
    let chunked = headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"));
    if !chunked && (!body.is_empty() || method == "POST") {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
