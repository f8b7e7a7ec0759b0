//! The second half of an MCP exchange over HTTP: once the runtime has served the body (the
//! engine's notifications, response and span id), these pure functions turn the result into
//! the HTTP response — `202` when there is no reply, JSON or SSE per `Accept` and per whether
//! notifications precede the result, and the HTTP status of a JSON-RPC error per era. The
//! legacy HTTP+SSE transport gets its events and its `202`/`404` answers here too.
//!
//! Nothing here performs IO or keeps state between requests.

use super::headers::Era;
use super::response::{HttpResponse, Status};
use super::sse;
use crate::digest::Digest;
use crate::protocol::{AnswerKind, ClientMessage, TransportFacts};

pub use crate::protocol::ErrorReply;

/// What serving one message produced, as the engine hands it to the HTTP side.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServedParts<'a> {
    /// Serialized notifications that precede the reply (progress).
    pub notifications: &'a [Vec<u8>],
    /// The serialized reply; `None` for notifications and client responses.
    pub response: Option<&'a [u8]>,
    /// What the reply is (a result, an error and its code), as the engine made it: the
    /// status is decided from it, never from the bytes.
    pub kind: AnswerKind,
    /// Content-derived span id of the message, when the engine computed one.
    pub span_id: Option<&'a str>,
}

/// Media types a client accepts for a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accept {
    pub json: bool,
    pub sse: bool,
}

impl Accept {
    /// Parses an `Accept` header; absent means anything.
    pub fn parse(value: Option<&str>) -> Accept {
        let Some(value) = value else {
            return Accept {
                json: true,
                sse: true,
            };
        };
        let mut accept = Accept {
            json: false,
            sse: false,
        };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
            });
            if refused {
                continue;
            }
            match media.as_str() {
                "*/*" => {
                    accept = Accept {
                        json: true,
                        sse: true,
                    }
                }
                "application/json" | "application/*" => accept.json = true,
                "text/event-stream" | "text/*" => accept.sse = true,
                _ => {}
            }
        }
        accept
    }

    pub fn any(self) -> bool {
        self.json || self.sse
    }
}

/// The HTTP status of a JSON-RPC error reply. Stateless-era clients read statuses (`-32601` →
/// 404; header, capability, version and framing errors → 400; internal → 500). Handshake-era
/// clients drop the body of any 4xx/5xx (the Python SDK reports only "Server returned an error
/// response"), so there an error answering an identified request travels in a `200` and only
/// a message that could not be attributed (`"id": null`: parse errors, unreadable envelopes)
/// gets `400`. A store that is down for now is `503` in both eras (the client should retry);
/// a ledger that needs its operator follows the era's rules, so that a handshake-era client
/// shows the reason instead of a bare status.
pub fn status_for_error(era: Era, error: ErrorReply) -> Status {
    match (era, error.code) {
        (_, -32603) if error.unavailable && error.retryable => Status::SERVICE_UNAVAILABLE,
        (Era::Handshake, _) if error.anonymous => Status::BAD_REQUEST,
        (Era::Handshake, _) => Status::OK,
        // -32602 covers a request whose `_meta` lacks its required fields (SEP-2575: 400).
        (Era::Stateless, -32700 | -32600 | -32602 | -32022..=-32020) => Status::BAD_REQUEST,
        (Era::Stateless, -32601) => Status::NOT_FOUND,
        (Era::Stateless, -32603) => Status::INTERNAL_SERVER_ERROR,
        (Era::Stateless, _) if error.anonymous => Status::BAD_REQUEST,
        (Era::Stateless, _) => Status::OK,
    }
}

/// A content-derived span id for a message the engine gave none (16 hex digits).
pub fn body_span_id(body: &[u8]) -> String {
    Digest::of_parts(&[b"http-body", body]).hex()[..16].to_string()
}

/// `POST /mcp` ready to be served: hand `message` (the body, read once by the router) and
/// `facts` to the engine, then call [`McpExchange::reply`].
#[derive(Clone, Debug)]
pub struct McpExchange {
    pub message: ClientMessage,
    pub facts: TransportFacts,
    pub era: Era,
    pub accept: Accept,
    pub keep_alive: bool,
    /// The request's `traceparent` header, as sent (the engine names the request's span's
    /// parent from it when it is valid and the body's `_meta` carries none).
    pub traceparent: Option<String>,
    /// The handshake-era session the request's `Mcp-Session-Id` opened to ([`super::session`]):
    /// what its `initialize` declared, whichever connection the request came on.
    pub session: Option<super::session::Session>,
}

impl McpExchange {
    /// The HTTP response for what serving the body produced.
    pub fn reply(&self, served: ServedParts<'_>) -> HttpResponse {
        let fallback;
        let span = match served.span_id {
            Some(s) => s,
            None => {
                fallback = body_span_id(self.message.bytes());
                &fallback
            }
        };
        let response = match served.response {
            None => HttpResponse::new(Status::ACCEPTED, span),
            Some(reply) => {
                let stream = if served.notifications.is_empty() {
                    !self.accept.json
                } else {
                    self.accept.sse
                };
                if stream {
                    sse::stream_response(
                        span,
                        sse::message_events(
                            &mut sse::EventIds::response(),
                            span,
                            served.notifications,
                            Some(reply),
                        ),
                    )
                } else {
                    let status = served
                        .kind
                        .error()
                        .map_or(Status::OK, |e| status_for_error(self.era, e));
                    let response = HttpResponse::json_bytes(status, span, reply.to_vec());
                    if status == Status::SERVICE_UNAVAILABLE {
                        response.with_header("Retry-After", "1")
                    } else {
                        response
                    }
                }
            }
        };
        if self.keep_alive {
            response
        } else {
            response.closing()
        }
    }
}

/// A `POST /mcp` answer streamed while it is served: the runtime writes [`Self::head`] when the
/// first notification is due (a long poll's progress ticks), then each [`Self::event`] as it
/// happens, the reply last, and closes the connection (the body ends with it: no
/// `Content-Length`). Once the head is out the status is `200` whatever the reply.
#[derive(Clone, Debug)]
pub struct StreamedReply {
    span_id: String,
    ids: sse::EventIds,
}

impl StreamedReply {
    /// The stream of the answer whose span is `span_id`, when the exchange can stream (the
    /// client accepts `text/event-stream`).
    pub fn open(exchange: &McpExchange, span_id: &str) -> Option<StreamedReply> {
        exchange.accept.sse.then(|| StreamedReply {
            span_id: span_id.to_string(),
            ids: sse::EventIds::response(),
        })
    }

    pub fn head(&self) -> Vec<u8> {
        sse::open_stream_head(&self.span_id)
    }

    /// The next event, carrying `message` (a notification, or the reply).
    pub fn event(&mut self, message: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let id = self.ids.next(&self.span_id);
        sse::push_event(&mut out, &id, "message", message);
        out
    }
}

/// `GET /sse`: the runtime picks an unguessable token, writes [`LegacyOpen::head`] and
/// [`LegacyOpen::endpoint_event`], and keeps the connection as the stream for that token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LegacyOpen {
    pub span_id: String,
}

impl LegacyOpen {
    pub fn head(&self) -> Vec<u8> {
        sse::open_stream_head(&self.span_id)
    }

    /// The `endpoint` event, event 0 of the stream (later ones come from
    /// [`sse::EventIds::legacy`] of the same token).
    pub fn endpoint_event(&self, token: &str) -> Vec<u8> {
        sse::endpoint_event(&self.span_id, token, &legacy_endpoint(token))
    }
}

/// The POST endpoint announced for a legacy stream.
pub fn legacy_endpoint(token: &str) -> String {
    format!("/messages?stream={token}")
}

/// Whether a string can be a stream token (what runtimes generate: URL-safe, bounded).
pub fn valid_token(token: &str) -> bool {
    (1..=128).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `POST /messages?stream=<token>`: if the stream is live, serve `message` (the body, read once
/// by the router; with the revision the stream negotiated, if `facts` has none), write
/// [`LegacyMessage::events`] to the stream and answer [`LegacyMessage::accepted`]; otherwise
/// answer [`LegacyMessage::stream_gone`].
#[derive(Clone, Debug)]
pub struct LegacyMessage {
    pub token: String,
    pub message: ClientMessage,
    pub facts: TransportFacts,
    pub keep_alive: bool,
}

impl LegacyMessage {
    /// The SSE events to write to the stream (notifications, then the reply), with ids from
    /// the stream's `ids`.
    pub fn events(&self, ids: &mut sse::EventIds, served: ServedParts<'_>) -> Vec<u8> {
        let span = self.span(served.span_id);
        sse::message_events(ids, &span, served.notifications, served.response)
    }

    /// The span of this message's events: the engine's, else one derived from the body.
    pub fn span(&self, span_id: Option<&str>) -> String {
        span_id.map_or_else(|| body_span_id(self.message.bytes()), String::from)
    }

    /// `202` once the events are on the stream.
    pub fn accepted(&self, span_id: Option<&str>) -> HttpResponse {
        let span = span_id.map_or_else(|| body_span_id(self.message.bytes()), String::from);
        let r = HttpResponse::new(Status::ACCEPTED, &span);
        if self.keep_alive { r } else { r.closing() }
    }

    /// `404`: no live stream has this token (never opened, or its connection closed).
    pub fn stream_gone(&self) -> HttpResponse {
        let span = body_span_id(self.message.bytes());
        let r = HttpResponse::problem(
            Status::NOT_FOUND,
            &span,
            "stream_not_found",
            "no open SSE stream has this token; GET /sse again",
        );
        if self.keep_alive { r } else { r.closing() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Limits;
    use crate::protocol::TransportKind;
    use crate::protocol::dispatch::LEDGER_UNAVAILABLE;
    use serde_json::Value;

    /// The error of a serialized JSON-RPC error response, if it is one.
    fn error_reply(response: &[u8]) -> Option<ErrorReply> {
        // Replies are rendered with their keys sorted, and `error` sorts before `id` and
        // `jsonrpc`: an error reply starts with it, and anything else (a result, a batch's array)
        // needs no second parse.
        if !response.starts_with(b"{\"error\":") {
            return None;
        }
        let v: Value = serde_json::from_slice(response).ok()?;
        let error = v.get("error")?;
        let code = error.get("code")?.as_i64()?;
        let data = error.get("data");
        let reason = data.and_then(|d| d.get("reason"));
        Some(ErrorReply {
            code,
            anonymous: v.get("id").is_none_or(Value::is_null),
            unavailable: reason.and_then(Value::as_str) == Some(LEDGER_UNAVAILABLE),
            retryable: data.and_then(|d| d.get("retryable")) == Some(&Value::Bool(true)),
        })
    }

    /// The kind of a rendered reply, for a test holding only its bytes.
    fn kind_of(reply: &[u8]) -> AnswerKind {
        error_reply(reply).map_or(AnswerKind::Result, AnswerKind::Error)
    }

    fn body(bytes: &[u8]) -> ClientMessage {
        ClientMessage::read(bytes, &Limits::default())
    }

    fn exchange(era: Era, accept: &str) -> McpExchange {
        McpExchange {
            message: body(b"{}"),
            facts: TransportFacts {
                kind: TransportKind::StreamableHttp,
                protocol_version: None,
                loopback: true,
                log_level: None,
                principal: None,
            },
            era,
            accept: Accept::parse(Some(accept)),
            keep_alive: true,
            traceparent: None,
            session: None,
        }
    }

    const BOTH: &str = "application/json, text/event-stream";
    const RESULT: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"error":"not really"}}"#;

    #[test]
    fn accept_parsing() {
        assert_eq!(
            Accept::parse(None),
            Accept {
                json: true,
                sse: true
            }
        );
        assert_eq!(
            Accept::parse(Some(BOTH)),
            Accept {
                json: true,
                sse: true
            }
        );
        assert_eq!(
            Accept::parse(Some("text/event-stream")),
            Accept {
                json: false,
                sse: true
            }
        );
        assert_eq!(
            Accept::parse(Some("application/json;q=0, text/*")),
            Accept {
                json: false,
                sse: true
            }
        );
        assert!(!Accept::parse(Some("text/html")).any());
    }

    #[test]
    fn notification_gets_202_with_a_span() {
        let r = exchange(Era::Handshake, BOTH).reply(ServedParts::default());
        assert_eq!(r.status, Status::ACCEPTED);
        assert!(r.body.is_empty());
        assert_eq!(r.span_id().map(str::len), Some(16));
    }

    #[test]
    fn json_unless_notifications_precede_or_only_sse_is_accepted() {
        let notes = [b"{\"method\":\"notifications/progress\"}".to_vec()];
        let plain = ServedParts {
            notifications: &[],
            response: Some(RESULT),
            kind: kind_of(RESULT),
            span_id: Some("sp"),
        };
        let r = exchange(Era::Handshake, BOTH).reply(plain);
        assert_eq!(
            (r.status, r.header("content-type")),
            (Status::OK, Some("application/json"))
        );
        assert_eq!(r.body, RESULT);
        assert_eq!(r.span_id(), Some("sp"));
        let with_notes = ServedParts {
            notifications: &notes,
            ..plain
        };
        let r = exchange(Era::Handshake, BOTH).reply(with_notes);
        assert_eq!(r.header("content-type"), Some("text/event-stream"));
        let text = String::from_utf8(r.body).unwrap();
        assert!(
            text.starts_with("id: sp-1\nevent: message\ndata: {\"method\""),
            "{text}"
        );
        assert!(
            text.contains("id: sp-2\nevent: message\ndata: {\"jsonrpc"),
            "{text}"
        );
        let r = exchange(Era::Handshake, "application/json").reply(with_notes);
        assert_eq!(r.header("content-type"), Some("application/json"));
        let r = exchange(Era::Handshake, "text/event-stream").reply(plain);
        assert_eq!(r.header("content-type"), Some("text/event-stream"));
    }

    #[test]
    fn error_statuses_per_era() {
        let status = |era, id: &str, code: i64| {
            // As replies are rendered: keys sorted.
            let body =
                format!(r#"{{"error":{{"code":{code},"message":"m"}},"id":{id},"jsonrpc":"2.0"}}"#);
            let parts = ServedParts {
                notifications: &[],
                response: Some(body.as_bytes()),
                kind: kind_of(body.as_bytes()),
                span_id: None,
            };
            exchange(era, BOTH).reply(parts).status.code()
        };
        assert_eq!(status(Era::Stateless, "1", -32601), 404);
        for code in [-32020, -32021, -32022, -32600, -32602, -32700] {
            assert_eq!(status(Era::Stateless, "1", code), 400, "{code}");
        }
        assert_eq!(status(Era::Stateless, "1", -32603), 500);
        assert_eq!(status(Era::Stateless, "null", -32602), 400);
        assert_eq!(status(Era::Handshake, "1", -32601), 200);
        assert_eq!(status(Era::Handshake, "\"a\"", -32600), 200);
        assert_eq!(status(Era::Handshake, "1", -32603), 200);
        assert_eq!(status(Era::Handshake, "null", -32700), 400);
        assert_eq!(status(Era::Handshake, "null", -32600), 400);
        assert_eq!(error_reply(RESULT), None);
    }

    /// The HTTP answers, in both eras, to a request the ledger could not record for `reason`.
    fn storage_failures(reason: &str, retryable: bool) -> Vec<(Era, HttpResponse, Value)> {
        let status = |era| match (retryable, era) {
            (true, _) => 503,
            (false, Era::Handshake) => 200,
            (false, Era::Stateless) => 500,
        };
        let server = crate::protocol::unit_fold::server_of(Vec::new());
        let request = br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}"#;
        let failure = crate::protocol::StorageFailure {
            reason,
            retryable,
            written: false,
        };
        let reply = server.storage_failure_reply(request, &failure);
        [Era::Handshake, Era::Stateless]
            .into_iter()
            .map(|era| {
                let r = exchange(era, BOTH).reply(ServedParts {
                    notifications: &[],
                    response: Some(&reply),
                    kind: kind_of(&reply),
                    span_id: None,
                });
                let v: Value = serde_json::from_slice(&r.body).unwrap();
                assert_eq!(r.status.code(), status(era), "{era:?}");
                assert_eq!(v["id"], 4);
                assert_eq!(v["error"]["data"]["reason"], LEDGER_UNAVAILABLE);
                assert_eq!(v["error"]["data"]["retryable"], retryable);
                (era, r, v)
            })
            .collect()
    }

    #[test]
    fn a_ledger_that_cannot_record_is_503_with_retry_after_in_both_eras() {
        for (era, r, v) in storage_failures("database connection refused", true) {
            assert_eq!(r.header("Retry-After"), Some("1"), "{era:?}");
            let message = v["error"]["message"].as_str().unwrap();
            assert!(message.ends_with("retry later"), "{message}");
        }
    }

    #[test]
    fn a_ledger_that_needs_its_operator_is_refused_by_the_eras_rules_without_a_retry() {
        for (era, r, v) in storage_failures("the ledger does not verify", false) {
            assert_eq!(r.header("Retry-After"), None, "{era:?}");
            let message = v["error"]["message"].as_str().unwrap();
            assert!(message.contains("does not verify") && message.contains("operator"));
            assert!(!message.contains("retry later"), "{message}");
        }
    }

    #[test]
    fn closing_follows_keep_alive() {
        let mut x = exchange(Era::Handshake, BOTH);
        x.keep_alive = false;
        assert!(x.reply(ServedParts::default()).close);
    }

    #[test]
    fn legacy_pieces() {
        let open = LegacyOpen {
            span_id: "s".into(),
        };
        assert!(
            String::from_utf8(open.endpoint_event("tok"))
                .unwrap()
                .contains("data: /messages?stream=tok\n")
        );
        assert!(valid_token("aZ09-_"));
        assert!(!valid_token("") && !valid_token("a/b") && !valid_token(&"a".repeat(129)));
        let msg = LegacyMessage {
            token: "t".into(),
            message: body(b"{}"),
            facts: TransportFacts {
                kind: TransportKind::LegacySse,
                protocol_version: None,
                loopback: true,
                log_level: None,
                principal: None,
            },
            keep_alive: true,
        };
        let mut ids = sse::EventIds::legacy("t");
        let served = ServedParts {
            notifications: &[],
            response: Some(b"{\"id\":1}"),
            kind: AnswerKind::Result,
            span_id: Some("x"),
        };
        let first = String::from_utf8(msg.events(&mut ids, served)).unwrap();
        let second = String::from_utf8(msg.events(&mut ids, served)).unwrap();
        assert!(
            first.starts_with("id: x-")
                && first.ends_with("-1\nevent: message\ndata: {\"id\":1}\n\n")
        );
        assert_ne!(first, second, "one stream never repeats an id");
        assert_eq!(msg.accepted(Some("x")).status, Status::ACCEPTED);
        assert_eq!(msg.stream_gone().status, Status::NOT_FOUND);
    }

    #[test]
    fn a_streamed_reply_numbers_its_events() {
        assert!(StreamedReply::open(&exchange(Era::Handshake, "application/json"), "sp").is_none());
        let mut s = StreamedReply::open(&exchange(Era::Handshake, BOTH), "sp").unwrap();
        let head = String::from_utf8(s.head()).unwrap();
        assert!(head.contains("X-Bernstein-Span-Id: sp\r\n") && !head.contains("Content-Length"));
        assert_eq!(s.event(b"{}"), b"id: sp-1\nevent: message\ndata: {}\n\n");
        assert_eq!(s.event(b"{}"), b"id: sp-2\nevent: message\ndata: {}\n\n");
    }
}
