//! Server-Sent Events framing. Every MCP message travels as one event
//! `id: <event id>` / `event: message` / `data: <json>`; the legacy stream opens with an
//! `endpoint` event naming the POST URL. Data with line breaks is split over several `data:`
//! lines so that no byte of a message can end an event early.
//!
//! Event ids ([`EventIds`]) are unique within their stream and name the span they belong to:
//! `<span>-<n>` on the SSE response of a `POST /mcp` (`n` counts that response's events from
//! 1: progress notifications, then the result), `<span>-<stream>-<n>` on a legacy `/sse`
//! stream (`<stream>`: 8 hex digits derived from the stream's token, so two streams never share
//! an id; `n` counts the stream's events, 0 being the `endpoint` event). The span id is always
//! the part before the first `-`. No stream is replayed, so `Last-Event-ID` is not read.
//!
//! This module must never write to a socket: it only returns bytes.

use crate::digest::Digest;

use super::response::{HttpResponse, SPAN_HEADER, Status};

/// A comment line the runtime writes now and then on an idle legacy stream, so intermediaries
/// keep it open and a closed peer is noticed.
pub const KEEPALIVE: &[u8] = b": keep-alive\n\n";

/// The comment a legacy stream gets before it is closed for idleness (see
/// [`super::stream_clock`]: no message was POSTed for it within the idle timeout), and a
/// dashboard feed when it was told no new head within its own.
pub const IDLE_CLOSE: &[u8] = b": idle timeout, closing\n\n";

/// The comment a legacy stream or a dashboard feed gets before it is closed to make room for
/// a new one at its cap (it was the one idle longest).
pub const EVICTED: &[u8] = b": closed for a newer stream (the cap is reached)\n\n";

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

/// The ids of one stream's events (module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventIds {
    stream: Option<String>,
    next: u64,
}

impl EventIds {
    /// The ids of a `POST /mcp` SSE response: `<span>-1`, `<span>-2`, ...
    pub fn response() -> EventIds {
        EventIds {
            stream: None,
            next: 1,
        }
    }

    /// The ids of the legacy stream with `token`, after its `endpoint` event (number 0).
    pub fn legacy(token: &str) -> EventIds {
        EventIds {
            stream: Some(stream_tag(token)),
            next: 1,
        }
    }

    /// The id of the stream's next event, which belongs to `span_id`.
    pub fn next(&mut self, span_id: &str) -> String {
        let n = self.next;
        self.next += 1;
        event_id(span_id, self.stream.as_deref(), n)
    }
}

/// 8 hex digits naming a legacy stream (a digest: the token itself stays out of the ids).
fn stream_tag(token: &str) -> String {
    Digest::of_parts(&[b"sse-stream", token.as_bytes()]).hex()[..8].to_string()
}

fn event_id(span_id: &str, stream: Option<&str>, n: u64) -> String {
    match stream {
        Some(tag) => format!("{span_id}-{tag}-{n}"),
        None => format!("{span_id}-{n}"),
    }
}

/// The span id an event id names (the part before the first `-`).
pub fn span_of_event_id(id: &str) -> &str {
    id.split('-').next().unwrap_or(id)
}

/// The events of one exchange: the notifications, then the response, all of `span_id`, with
/// ids drawn from `ids`.
pub fn message_events(
    ids: &mut EventIds,
    span_id: &str,
    notifications: &[Vec<u8>],
    response: Option<&[u8]>,
) -> Vec<u8> {
    let mut out = Vec::new();
    for n in notifications {
        push_event(&mut out, &ids.next(span_id), "message", n);
    }
    if let Some(r) = response {
        push_event(&mut out, &ids.next(span_id), "message", r);
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

/// The first event of the legacy stream with `token` (event number 0): where to POST
/// messages for it.
pub fn endpoint_event(span_id: &str, token: &str, endpoint: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let id = event_id(span_id, Some(&stream_tag(token)), 0);
    push_event(&mut out, &id, "endpoint", endpoint.as_bytes());
    out
}

fn single_line(s: &str) -> String {
    s.chars().filter(|c| *c != '\n' && *c != '\r').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_carry_unique_ids_of_their_span() {
        let out = message_events(
            &mut EventIds::response(),
            "s1",
            &[b"{\"n\":1}".to_vec()],
            Some(b"{\"r\":2}"),
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "id: s1-1\nevent: message\ndata: {\"n\":1}\n\nid: s1-2\nevent: message\ndata: {\"r\":2}\n\n"
        );
        let mut a = EventIds::legacy("tok-a");
        let mut b = EventIds::legacy("tok-b");
        let (a1, a2, b1) = (a.next("sp"), a.next("sp"), b.next("sp"));
        assert_ne!(a1, a2);
        assert_ne!(a1, b1, "two streams never share an id");
        for id in [&a1, &a2, &b1] {
            assert_eq!(span_of_event_id(id), "sp");
        }
        assert!(a2.ends_with("-2") && a1.len() == "sp-".len() + 8 + 2);
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
        let ev = String::from_utf8(endpoint_event("sp", "abc", "/messages?stream=abc")).unwrap();
        let tag = stream_tag("abc");
        assert_eq!(
            ev,
            format!("id: sp-{tag}-0\nevent: endpoint\ndata: /messages?stream=abc\n\n")
        );
        assert_ne!(
            endpoint_event("sp", "abc", "/m"),
            endpoint_event("sp", "abd", "/m"),
            "two streams' endpoint events differ in id"
        );
    }

    #[test]
    fn stream_response_is_a_complete_sse_body() {
        let r = stream_response(
            "sp",
            message_events(&mut EventIds::response(), "sp", &[], Some(b"{}")),
        );
        assert_eq!(r.header("content-type"), Some("text/event-stream"));
        assert_eq!(r.status.code(), 200);
        assert!(
            String::from_utf8(r.to_bytes())
                .unwrap()
                .ends_with("data: {}\n\n")
        );
    }
}
