//! Sans-IO HTTP/1.1 request framing. The runtime feeds the bytes it reads with
//! [`RequestParser::handle_bytes`] and drains [`Frame`]s with [`RequestParser::poll_frame`]:
//! complete requests (pipelined ones one after the other), a `100 Continue` cue, or a fatal
//! [`FrameError`] after which the connection must be answered and closed.
//!
//! Every limit is enforced while bytes arrive, so a peer can never make the parser buffer more
//! than the header limit plus the body limit plus one read. The request head is parsed by
//! `httparse` only once its end marker has arrived, so feeding a head byte by byte stays
//! linear. Chunked request bodies are decoded here (trailers are read and dropped).
//!
//! This module must never read a socket or a clock: timeouts are the runtime's job, helped by
//! [`RequestParser::is_idle`].

use super::response::{HttpResponse, Status, route_span_id};

/// Limits of one request. Exceeding one is a [`FrameError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParserLimits {
    /// Request line plus header block, in bytes (431 beyond).
    pub max_header_bytes: usize,
    /// Number of header fields (431 beyond).
    pub max_headers: usize,
    /// Decoded body, in bytes (413 beyond).
    pub max_body_bytes: usize,
}

impl Default for ParserLimits {
    fn default() -> Self {
        ParserLimits {
            max_header_bytes: 16 * 1024,
            max_headers: 64,
            max_body_bytes: 1 << 20,
        }
    }
}

/// One header field: the name lower-cased, the value as sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: Vec<u8>,
}

/// A complete HTTP/1.x request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The request target as sent (origin-form: path and optional query).
    pub target: String,
    /// Minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    pub headers: Vec<Header>,
    pub body: Vec<u8>,
}

impl Request {
    /// The first value of a header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.as_slice())
    }

    /// The first value of a header, if it is UTF-8, without surrounding whitespace.
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name)
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(str::trim)
    }

    /// How many times a header field occurs.
    pub fn header_count(&self, name: &str) -> usize {
        self.headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(name))
            .count()
    }

    /// The path part of the target, without the query.
    pub fn path(&self) -> &str {
        self.target
            .split_once('?')
            .map_or(self.target.as_str(), |(p, _)| p)
    }

    /// The query part of the target, without the `?`.
    pub fn query(&self) -> Option<&str> {
        self.target.split_once('?').map(|(_, q)| q)
    }

    /// Whether the connection may serve another request after this one.
    pub fn keep_alive(&self) -> bool {
        let tokens = |t: &str| {
            self.headers
                .iter()
                .filter(|h| h.name == "connection")
                .filter_map(|h| std::str::from_utf8(&h.value).ok())
                .flat_map(|v| v.split(','))
                .any(|tok| tok.trim().eq_ignore_ascii_case(t))
        };
        if self.version == 0 {
            tokens("keep-alive")
        } else {
            !tokens("close")
        }
    }
}

/// Why a request cannot be framed. Fatal for the connection: answer, then close.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    #[error("request line and headers exceed {limit} bytes")]
    HeadersTooLarge { limit: usize },
    #[error("more than {limit} header fields")]
    TooManyHeaders { limit: usize },
    #[error("request body exceeds {limit} bytes")]
    BodyTooLarge { limit: usize },
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    #[error("HTTP version not supported")]
    VersionNotSupported,
    #[error("transfer coding not supported (only chunked)")]
    UnsupportedTransferCoding,
    #[error("expectation not supported (only 100-continue)")]
    ExpectationFailed,
}

impl FrameError {
    pub fn status(&self) -> Status {
        match self {
            FrameError::HeadersTooLarge { .. } | FrameError::TooManyHeaders { .. } => {
                Status::REQUEST_HEADER_FIELDS_TOO_LARGE
            }
            FrameError::BodyTooLarge { .. } => Status::PAYLOAD_TOO_LARGE,
            FrameError::Malformed(_) => Status::BAD_REQUEST,
            FrameError::VersionNotSupported => Status::HTTP_VERSION_NOT_SUPPORTED,
            FrameError::UnsupportedTransferCoding => Status::NOT_IMPLEMENTED,
            FrameError::ExpectationFailed => Status::EXPECTATION_FAILED,
        }
    }

    /// The response that ends the connection.
    pub fn response(&self) -> HttpResponse {
        let message = self.to_string();
        let span = route_span_id(&self.status().code().to_string(), &message);
        HttpResponse::problem(self.status(), &span, "bad_request", &message).closing()
    }
}

/// What the parser produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete request.
    Request(Request),
    /// The request expects `100 Continue`: write [`super::response::CONTINUE`] now.
    Continue,
    /// Fatal framing error.
    Error(FrameError),
}

/// Progress through a chunked body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    Size,
    Data(usize),
    DataEnd,
    Trailers { seen: usize },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Head,
    Sized { request: Request, remaining: usize },
    Chunked { request: Request, chunk: Chunk },
    Failed,
}

/// Incremental request parser for one connection.
#[derive(Debug)]
pub struct RequestParser {
    limits: ParserLimits,
    buf: Vec<u8>,
    /// How far `buf` has been searched for the end of the head.
    scanned: usize,
    state: State,
    continue_pending: bool,
}

impl RequestParser {
    pub fn new(limits: ParserLimits) -> RequestParser {
        RequestParser {
            limits,
            buf: Vec::new(),
            scanned: 0,
            state: State::Head,
            continue_pending: false,
        }
    }

    /// Feeds bytes read from the peer. Call [`Self::poll_frame`] until `None` before feeding more.
    pub fn handle_bytes(&mut self, bytes: &[u8]) {
        if self.state != State::Failed {
            self.buf.extend_from_slice(bytes);
        }
    }

    /// Takes out the bytes fed and not framed yet (what a client pipelined behind the request
    /// just framed): they go on with their connection to another engine's parser.
    pub fn take_buffered(&mut self) -> Vec<u8> {
        self.scanned = 0;
        std::mem::take(&mut self.buf)
    }

    /// Whether no request is partly received (a timeout now is an idle keep-alive, not a slow
    /// request).
    pub fn is_idle(&self) -> bool {
        self.state == State::Head && self.buf.is_empty()
    }

    /// Whether a fatal error was reported.
    pub fn is_failed(&self) -> bool {
        self.state == State::Failed
    }

    /// The next frame, or `None` when more bytes are needed (or after a fatal error).
    pub fn poll_frame(&mut self) -> Option<Frame> {
        let result = match std::mem::replace(&mut self.state, State::Failed) {
            State::Failed => return None,
            State::Head => self.parse_head(),
            State::Sized { request, remaining } => Ok(self.read_sized(request, remaining)),
            State::Chunked { request, chunk } => self.read_chunked(request, chunk),
        };
        match result {
            Ok(frame) => frame,
            Err(e) => {
                self.state = State::Failed;
                self.buf = Vec::new();
                Some(Frame::Error(e))
            }
        }
    }

    fn parse_head(&mut self) -> Result<Option<Frame>, FrameError> {
        self.state = State::Head;
        // Tolerate empty lines between pipelined requests (RFC 9112 §2.2).
        let blank = self
            .buf
            .iter()
            .take_while(|&&b| b == b'\r' || b == b'\n')
            .count();
        if blank > 0 {
            self.buf.drain(..blank);
            self.scanned = 0;
        }
        let Some(end) = find_head_end(&self.buf, self.scanned) else {
            self.scanned = self.buf.len().saturating_sub(3);
            if self.buf.len() > self.limits.max_header_bytes {
                return Err(FrameError::HeadersTooLarge {
                    limit: self.limits.max_header_bytes,
                });
            }
            return Ok(None);
        };
        if end > self.limits.max_header_bytes {
            return Err(FrameError::HeadersTooLarge {
                limit: self.limits.max_header_bytes,
            });
        }
        let request = self.parse_head_bytes(end)?;
        self.buf.drain(..end);
        self.scanned = 0;
        self.start_body(request)
    }

    fn parse_head_bytes(&self, end: usize) -> Result<Request, FrameError> {
        let mut fields = vec![httparse::EMPTY_HEADER; self.limits.max_headers];
        let mut req = httparse::Request::new(&mut fields);
        match req.parse(&self.buf[..end]) {
            Ok(httparse::Status::Complete(_)) => {}
            Ok(httparse::Status::Partial) => {
                return Err(FrameError::Malformed("incomplete request head"));
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(FrameError::TooManyHeaders {
                    limit: self.limits.max_headers,
                });
            }
            Err(httparse::Error::Version) => return Err(FrameError::VersionNotSupported),
            Err(_) => return Err(FrameError::Malformed("invalid request line or header")),
        }
        let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version)
        else {
            return Err(FrameError::Malformed("incomplete request line"));
        };
        let headers = req
            .headers
            .iter()
            .map(|h| Header {
                name: h.name.to_ascii_lowercase(),
                value: h.value.to_vec(),
            })
            .collect();
        Ok(Request {
            method: method.to_string(),
            target: target.to_string(),
            version,
            headers,
            body: Vec::new(),
        })
    }

    fn start_body(&mut self, request: Request) -> Result<Option<Frame>, FrameError> {
        let te = request.header_count("transfer-encoding");
        let lengths: Vec<&[u8]> = request
            .headers
            .iter()
            .filter(|h| h.name == "content-length")
            .map(|h| h.value.as_slice())
            .collect();
        if te > 0 && !lengths.is_empty() {
            return Err(FrameError::Malformed(
                "both Content-Length and Transfer-Encoding",
            ));
        }
        let expects_continue = match request.header_str("expect") {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("100-continue") => true,
            Some(_) => return Err(FrameError::ExpectationFailed),
        };
        if te > 0 {
            if request.version == 0 {
                return Err(FrameError::Malformed(
                    "Transfer-Encoding in an HTTP/1.0 request",
                ));
            }
            let chunked = te == 1
                && request
                    .header_str("transfer-encoding")
                    .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
            if !chunked {
                return Err(FrameError::UnsupportedTransferCoding);
            }
            self.continue_pending = expects_continue;
            self.state = State::Chunked {
                request,
                chunk: Chunk::Size,
            };
            return Ok(self.cue_continue());
        }
        let length = parse_content_length(&lengths)?;
        if length > self.limits.max_body_bytes {
            return Err(FrameError::BodyTooLarge {
                limit: self.limits.max_body_bytes,
            });
        }
        self.continue_pending = expects_continue && length > 0;
        self.state = State::Sized {
            request,
            remaining: length,
        };
        Ok(self.cue_continue())
    }

    /// Emits `Continue` once if the body has not started to arrive; otherwise keeps going.
    fn cue_continue(&mut self) -> Option<Frame> {
        if std::mem::take(&mut self.continue_pending) && self.buf.is_empty() {
            return Some(Frame::Continue);
        }
        self.poll_frame()
    }

    fn read_sized(&mut self, mut request: Request, remaining: usize) -> Option<Frame> {
        let take = remaining.min(self.buf.len());
        request.body.extend(self.buf.drain(..take));
        if take == remaining {
            self.state = State::Head;
            Some(Frame::Request(request))
        } else {
            self.state = State::Sized {
                request,
                remaining: remaining - take,
            };
            None
        }
    }

    fn read_chunked(
        &mut self,
        mut request: Request,
        mut chunk: Chunk,
    ) -> Result<Option<Frame>, FrameError> {
        loop {
            match chunk {
                Chunk::Size => {
                    let Some(line_end) = find_crlf(&self.buf) else {
                        if self.buf.len() > 1024 {
                            return Err(FrameError::Malformed("chunk size line too long"));
                        }
                        break;
                    };
                    let size = parse_chunk_size(&self.buf[..line_end])?;
                    self.buf.drain(..line_end + 2);
                    if size == 0 {
                        chunk = Chunk::Trailers { seen: 0 };
                    } else if request.body.len().saturating_add(size) > self.limits.max_body_bytes {
                        return Err(FrameError::BodyTooLarge {
                            limit: self.limits.max_body_bytes,
                        });
                    } else {
                        chunk = Chunk::Data(size);
                    }
                }
                Chunk::Data(left) => {
                    let take = left.min(self.buf.len());
                    request.body.extend(self.buf.drain(..take));
                    if take < left {
                        chunk = Chunk::Data(left - take);
                        break;
                    }
                    chunk = Chunk::DataEnd;
                }
                Chunk::DataEnd => {
                    if self.buf.len() < 2 {
                        break;
                    }
                    if &self.buf[..2] != b"\r\n" {
                        return Err(FrameError::Malformed("chunk data not followed by CRLF"));
                    }
                    self.buf.drain(..2);
                    chunk = Chunk::Size;
                }
                Chunk::Trailers { seen } => {
                    let Some(line_end) = find_crlf(&self.buf) else {
                        if seen + self.buf.len() > self.limits.max_header_bytes {
                            return Err(FrameError::HeadersTooLarge {
                                limit: self.limits.max_header_bytes,
                            });
                        }
                        chunk = Chunk::Trailers { seen };
                        break;
                    };
                    self.buf.drain(..line_end + 2);
                    if line_end == 0 {
                        self.state = State::Head;
                        return Ok(Some(Frame::Request(request)));
                    }
                    chunk = Chunk::Trailers {
                        seen: seen + line_end + 2,
                    };
                    if seen + line_end > self.limits.max_header_bytes {
                        return Err(FrameError::HeadersTooLarge {
                            limit: self.limits.max_header_bytes,
                        });
                    }
                }
            }
        }
        self.state = State::Chunked { request, chunk };
        Ok(None)
    }
}

/// Index just past the blank line that ends a request head (`\r\n\r\n` or `\n\n`).
fn find_head_end(buf: &[u8], from: usize) -> Option<usize> {
    let start = from.saturating_sub(3);
    let mut i = start;
    while i < buf.len() {
        if buf[i] == b'\n' {
            if buf.get(i + 1) == Some(&b'\n') {
                return Some(i + 2);
            }
            if buf.get(i + 1) == Some(&b'\r') && buf.get(i + 2) == Some(&b'\n') {
                return Some(i + 3);
            }
        }
        i += 1;
    }
    None
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

fn parse_content_length(values: &[&[u8]]) -> Result<usize, FrameError> {
    let mut length: Option<usize> = None;
    for v in values {
        for part in v.split(|&b| b == b',') {
            let part = part.trim_ascii();
            if part.is_empty() || part.len() > 19 || !part.iter().all(u8::is_ascii_digit) {
                return Err(FrameError::Malformed("invalid Content-Length"));
            }
            let n: usize = std::str::from_utf8(part)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or(FrameError::Malformed("invalid Content-Length"))?;
            if length.is_some_and(|l| l != n) {
                return Err(FrameError::Malformed("conflicting Content-Length values"));
            }
            length = Some(n);
        }
    }
    Ok(length.unwrap_or(0))
}

fn parse_chunk_size(line: &[u8]) -> Result<usize, FrameError> {
    let digits = line
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    if digits.is_empty() || digits.len() > 15 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err(FrameError::Malformed("invalid chunk size"));
    }
    let text =
        std::str::from_utf8(digits).map_err(|_| FrameError::Malformed("invalid chunk size"))?;
    usize::from_str_radix(text, 16).map_err(|_| FrameError::Malformed("invalid chunk size"))
}

#[cfg(test)]
mod tests;
