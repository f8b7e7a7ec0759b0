//! HTTP/1.1 responses as values and their wire form. Every response the core produces carries
//! `X-Bernstein-Span-Id`; bodies always have an exact `Content-Length` (streams that stay
//! open, the legacy SSE stream, are written head first by [`super::sse`]).
//!
//! This module must never write to a socket: the runtime writes [`HttpResponse::to_bytes`].

use serde_json::{Value, json};

use crate::digest::Digest;

/// The interim response a runtime writes when a request expects `100 Continue`.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Header carrying the content-derived span id of the request.
pub const SPAN_HEADER: &str = "X-Bernstein-Span-Id";

/// An HTTP status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Status(u16);

impl Status {
    pub const OK: Status = Status(200);
    pub const ACCEPTED: Status = Status(202);
    pub const NO_CONTENT: Status = Status(204);
    pub const BAD_REQUEST: Status = Status(400);
    pub const UNAUTHORIZED: Status = Status(401);
    pub const FORBIDDEN: Status = Status(403);
    pub const NOT_FOUND: Status = Status(404);
    pub const METHOD_NOT_ALLOWED: Status = Status(405);
    pub const NOT_ACCEPTABLE: Status = Status(406);
    pub const REQUEST_TIMEOUT: Status = Status(408);
    pub const PAYLOAD_TOO_LARGE: Status = Status(413);
    pub const UNSUPPORTED_MEDIA_TYPE: Status = Status(415);
    pub const EXPECTATION_FAILED: Status = Status(417);
    pub const MISDIRECTED_REQUEST: Status = Status(421);
    pub const REQUEST_HEADER_FIELDS_TOO_LARGE: Status = Status(431);
    pub const INTERNAL_SERVER_ERROR: Status = Status(500);
    pub const NOT_IMPLEMENTED: Status = Status(501);
    pub const SERVICE_UNAVAILABLE: Status = Status(503);
    pub const HTTP_VERSION_NOT_SUPPORTED: Status = Status(505);

    pub fn code(self) -> u16 {
        self.0
    }

    pub fn reason(self) -> &'static str {
        match self.0 {
            200 => "OK",
            202 => "Accepted",
            204 => "No Content",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            406 => "Not Acceptable",
            408 => "Request Timeout",
            413 => "Content Too Large",
            415 => "Unsupported Media Type",
            417 => "Expectation Failed",
            421 => "Misdirected Request",
            431 => "Request Header Fields Too Large",
            500 => "Internal Server Error",
            501 => "Not Implemented",
            503 => "Service Unavailable",
            505 => "HTTP Version Not Supported",
            _ => "Status",
        }
    }
}

/// A complete response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: Status,
    /// Headers besides `Content-Length` and `Connection`, which [`Self::to_bytes`] adds.
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    /// Close the connection after writing this response.
    pub close: bool,
}

impl HttpResponse {
    /// An empty response with the span header of a non-MCP route.
    pub fn new(status: Status, span_id: &str) -> HttpResponse {
        HttpResponse {
            status,
            headers: vec![(SPAN_HEADER, span_id.to_string())],
            body: Vec::new(),
            close: false,
        }
    }

    /// A JSON body.
    pub fn json(status: Status, span_id: &str, body: &Value) -> HttpResponse {
        let mut r = HttpResponse::new(status, span_id);
        r.headers.push(("Content-Type", "application/json".into()));
        r.body = body.to_string().into_bytes();
        r
    }

    /// A JSON body of raw, already serialized bytes.
    pub fn json_bytes(status: Status, span_id: &str, body: Vec<u8>) -> HttpResponse {
        let mut r = HttpResponse::new(status, span_id);
        r.headers.push(("Content-Type", "application/json".into()));
        r.body = body;
        r
    }

    /// A non-MCP error `{"error": code, "message": ...}`.
    pub fn problem(status: Status, span_id: &str, code: &str, message: &str) -> HttpResponse {
        HttpResponse::json(
            status,
            span_id,
            &json!({ "error": code, "message": message }),
        )
    }

    /// A JSON-RPC error response (id `null` unless known) with the given status.
    pub fn rpc_error(
        status: Status,
        span_id: &str,
        id: Option<&Value>,
        code: i64,
        message: &str,
        data: Option<Value>,
    ) -> HttpResponse {
        HttpResponse::json(status, span_id, &rpc_error_value(id, code, message, data))
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> HttpResponse {
        self.headers.push((name, value.into()));
        self
    }

    /// Marks the response as the last one on its connection.
    pub fn closing(mut self) -> HttpResponse {
        self.close = true;
        self
    }

    /// The span id this response carries.
    pub fn span_id(&self) -> Option<&str> {
        self.header(SPAN_HEADER)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The wire form: status line, headers, `Content-Length`, `Connection: close` when closing,
    /// blank line, body.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128 + self.body.len());
        out.extend_from_slice(
            format!(
                "HTTP/1.1 {} {}\r\n",
                self.status.code(),
                self.status.reason()
            )
            .as_bytes(),
        );
        for (name, value) in &self.headers {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes());
        if self.close {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}

/// A JSON-RPC error object.
pub fn rpc_error_value(id: Option<&Value>, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({ "code": code, "message": message });
    if let Some(d) = data {
        error["data"] = d;
    }
    json!({ "jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": error })
}

/// The span id of a response that no MCP message produced: a digest of the request's method
/// and path (16 hex digits, like a W3C span id), so replays carry the same id.
pub fn route_span_id(method: &str, path: &str) -> String {
    Digest::of_parts(&[b"http-route", method.as_bytes(), path.as_bytes()]).hex()[..16].to_string()
}

/// `503` for a connection over the cap; written by the runtime before it closes.
pub fn over_capacity() -> HttpResponse {
    let span = route_span_id("503", "over_capacity");
    HttpResponse::problem(
        Status::SERVICE_UNAVAILABLE,
        &span,
        "over_capacity",
        "too many connections; retry later",
    )
    .with_header("Retry-After", "1")
    .closing()
}

/// `503` for a legacy SSE stream or a dashboard feed over one of its caps, with `message`
/// naming the cap; written before the close.
pub fn over_stream_cap(message: &str) -> HttpResponse {
    let span = route_span_id("503", "over_capacity");
    HttpResponse::problem(Status::SERVICE_UNAVAILABLE, &span, "over_capacity", message)
        .with_header("Retry-After", "1")
        .closing()
}

/// `408` for a request that did not arrive within the read timeout.
pub fn request_timeout() -> HttpResponse {
    let span = route_span_id("408", "request_timeout");
    HttpResponse::problem(
        Status::REQUEST_TIMEOUT,
        &span,
        "request_timeout",
        "the request did not arrive in time",
    )
    .closing()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_form_has_length_span_and_close() {
        let r = HttpResponse::json(Status::OK, "abc", &json!({"a": 1}));
        let text = String::from_utf8(r.clone().closing().to_bytes()).unwrap();
        assert_eq!(
            text,
            "HTTP/1.1 200 OK\r\nX-Bernstein-Span-Id: abc\r\nContent-Type: application/json\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{\"a\":1}"
        );
        assert!(
            !String::from_utf8(r.to_bytes())
                .unwrap()
                .contains("Connection")
        );
    }

    #[test]
    fn route_spans_are_stable_and_short() {
        assert_eq!(route_span_id("GET", "/mcp"), route_span_id("GET", "/mcp"));
        assert_ne!(route_span_id("GET", "/mcp"), route_span_id("GET", "/sse"));
        assert_eq!(route_span_id("GET", "/mcp").len(), 16);
        assert!(over_capacity().span_id().is_some());
        assert_eq!(over_capacity().status.code(), 503);
        assert!(request_timeout().close);
    }

    #[test]
    fn rpc_errors_have_null_id_unless_known() {
        let v = rpc_error_value(None, -32700, "Parse error", None);
        assert_eq!(
            v,
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})
        );
        let v = rpc_error_value(Some(&json!(7)), -32022, "x", Some(json!({"supported": []})));
        assert_eq!(v["id"], 7);
        assert_eq!(v["error"]["data"]["supported"], json!([]));
    }
}
