//! Server-Sent Events framing. Every MCP message travels as one event
//! `id: <span id>` / `event: message` / `data: <json>`; the legacy stream opens with an
//! `endpoint` event naming the POST URL. Data with line breaks is split over several `data:`
//! lines so that no byte of a message can end an event early.
//!
//! This module must never write to a socket: it only returns bytes.

use super::response::{HttpResponse, SPAN_HEADER, Status};

/// A comment line the runtime writes now and then on an idle legacy stream, so intermediaries
/// keep it open and a closed peer is noticed.
pub const KEEPALIVE: &[u8] = b": keep-alive\n\n";

/// The comment a legacy stream gets before it is closed for idleness (see
/// [`super::stream_clock`]): no message was POSTed for it within the idle timeout.
pub const IDLE_CLOSE: &[u8] = b": idle timeout, closing\n\n";

/// Appends one event to `out`.
pub fn push_event(out: &mut Vec<u8>, id: &str, event: &str, data: &[u8]) {
    out.extend_from_slice(b"id: ");
    out.extend_from_slice(single_line(id).as_bytes());
    out.extend_from_slice(b"\nevent: ");
    out.extend_from_slice(single_line(event).as_bytes());
    out.push(b'\n');
    let data = data.strip_suffix(b"\n").unwrap_or(data);
    for line in data.split(|&b| b == b'\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// The events of one exchange: the notifications, then the response, all with `span_id`.
pub fn message_events(
    span_id: &str,
    notifications: &[Vec<u8>],
    response: Option<&[u8]>,
) -> Vec<u8> {
    let mut out = Vec::new();
    for n in notifications {
        push_event(&mut out, span_id, "message", n);
    }
    if let Some(r) = response {
        push_event(&mut out, span_id, "message", r);
    }
    out
}

/// A complete SSE response (the stream ends with the response it carries).
pub fn stream_response(span_id: &str, events: Vec<u8>) -> HttpResponse {
    let mut r = HttpResponse::new(Status::OK, span_id);
    r.headers.push(("Content-Type", "text/event-stream".into()));
    r.headers.push(("Cache-Control", "no-cache".into()));
    r.headers.push(("X-Accel-Buffering", "no".into()));
    r.body = events;
    r
}

/// The head of a stream that stays open until either side closes the connection (the legacy
/// HTTP+SSE transport): no `Content-Length`, the body ends when the connection does.
pub fn open_stream_head(span_id: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\n{SPAN_HEADER}: {}\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\nConnection: close\r\n\r\n",
        single_line(span_id)
    )
    .into_bytes()
}

/// The first event of a legacy stream: where to POST messages for it.
pub fn endpoint_event(span_id: &str, endpoint: &str) -> Vec<u8> {
    let mut out = Vec::new();
    push_event(&mut out, span_id, "endpoint", endpoint.as_bytes());
    out
}

fn single_line(s: &str) -> String {
    s.chars().filter(|c| *c != '\n' && *c != '\r').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_carry_span_id_event_and_data() {
        let out = message_events("s1", &[b"{\"n\":1}".to_vec()], Some(b"{\"r\":2}"));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "id: s1\nevent: message\ndata: {\"n\":1}\n\nid: s1\nevent: message\ndata: {\"r\":2}\n\n"
        );
    }

    #[test]
    fn line_breaks_never_end_an_event_early() {
        let mut out = Vec::new();
        push_event(&mut out, "a\nb", "message", b"{\r\n\"x\":\n1}\n");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "id: ab\nevent: message\ndata: {\ndata: \"x\":\ndata: 1}\n\n"
        );
    }

    #[test]
    fn legacy_stream_opens_with_the_endpoint() {
        let head = String::from_utf8(open_stream_head("sp")).unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(head.contains("Content-Type: text/event-stream\r\n"));
        assert!(head.contains("X-Bernstein-Span-Id: sp\r\n"));
        assert!(!head.contains("Content-Length"));
        assert!(head.ends_with("\r\n\r\n"));
        let ev = String::from_utf8(endpoint_event("sp", "/messages?stream=abc")).unwrap();
        assert_eq!(
            ev,
            "id: sp\nevent: endpoint\ndata: /messages?stream=abc\n\n"
        );
    }

    #[test]
    fn stream_response_is_a_complete_sse_body() {
        let r = stream_response("sp", message_events("sp", &[], Some(b"{}")));
        assert_eq!(r.header("content-type"), Some("text/event-stream"));
        assert_eq!(r.status.code(), 200);
        assert!(
            String::from_utf8(r.to_bytes())
                .unwrap()
                .ends_with("data: {}\n\n")
        );
    }
}
