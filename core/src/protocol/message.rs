//! A client message, read once. The first layer that sees a message's bytes (a connection's
//! stdio framing, the HTTP router for `POST /mcp` and the legacy messages endpoint, or
//! [`super::Server::handle`] for a caller holding bytes) makes a [`ClientMessage`] of them, and
//! that value travels with the request: through dispatch, through every re-run after a lost
//! append race, every host round and every wait, into the cancellation bookkeeping and the
//! storage-failure reply. Nothing parses the same bytes again.
//!
//! Reading is one linear prescan ([`super::prescan`]: nesting depth, the raw text of the
//! top-level ids) and one strict parse ([`super::strict_json`]: a duplicate key at any depth is
//! a parse error; serde_json's own recursion limit bounds the stack), plus the content-derived
//! ids ([`RequestIds`]) of each request in it. The checks dispatch answers a message with as a
//! whole (size, UTF-8, emptiness, depth, syntax, in that order) are decided here, once
//! ([`ClientMessage::refusal`]); the HTTP router reads the same value for its header rules and
//! answers its own `400` for bytes that are no JSON ([`ClientMessage::value`]).
//!
//! A message is cheap to clone (it is shared, never copied) and immutable.

use std::sync::Arc;

use serde_json::Value;

use super::ids::RequestIds;
use super::jsonrpc::{Id, Incoming, RpcError, classify, is_integer_literal};
use super::prescan::{Prescan, prescan};
use crate::config::Limits;

/// One client message (a stdio line, an HTTP body), read once: its bytes and their
/// [`Reading`], shared (a clone is a reference count).
#[derive(Clone, Debug)]
pub struct ClientMessage(Arc<Owned>);

#[derive(Debug)]
struct Owned {
    bytes: Vec<u8>,
    reading: Reading,
}

/// A message read once, as a view of its bytes and their reading: what dispatch serves. A
/// [`ClientMessage`] lends one ([`ClientMessage::view`]); a caller holding only bytes reads
/// them into one without copying them ([`super::Server::handle`]).
#[derive(Clone, Copy, Debug)]
pub struct MessageView<'a> {
    bytes: &'a [u8],
    reading: &'a Reading,
}

/// Why a message's bytes hold no JSON value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// The bytes are not UTF-8; the first invalid byte is at `offset`.
    NotUtf8 { offset: usize },
    /// The strict parse refused the text (syntax, a duplicate key, serde's recursion limit):
    /// its message.
    Syntax(String),
}

/// What reading a message's bytes found (the bytes themselves are kept beside it).
#[derive(Debug)]
pub struct Reading {
    /// The prescan: depth against the configured limit, the raw ids of the top-level slots.
    scan: Prescan,
    /// The strict parse of the whole text.
    value: Result<Value, Unreadable>,
    /// Why dispatch answers the message as a whole, when it does.
    refusal: Option<Refusal>,
    /// The ids of the first top-level slot (the message itself, or a batch's first element):
    /// of the request it holds (of its method and params), or of the slot's value when it is
    /// no valid request.
    first: Option<RequestIds>,
    /// The ids of a served batch's later elements, in order.
    rest: Vec<RequestIds>,
    /// A batch's ids as a whole (its span).
    batch: Option<RequestIds>,
}

/// A message refused as a whole: its error and the id found by the prescan, if any.
#[derive(Clone, Debug)]
struct Refusal {
    id: Option<Id>,
    error: RpcError,
}

impl Reading {
    /// Reads `bytes` under `limits` (see the module docs).
    pub fn of(bytes: &[u8], limits: &Limits) -> Reading {
        let scan = prescan(bytes, limits.max_json_depth);
        let text = std::str::from_utf8(bytes);
        let blank = text.is_ok_and(|t| t.trim().is_empty());
        let value = match text {
            Ok(text) => {
                super::strict_json::parse(text).map_err(|e| Unreadable::Syntax(e.to_string()))
            }
            Err(e) => Err(Unreadable::NotUtf8 {
                offset: e.valid_up_to(),
            }),
        };
        let refusal = refusal(bytes, &scan, &value, blank, limits);
        let (first, rest) = match &value {
            Ok(Value::Array(items)) if refusal.is_none() => {
                let mut ids = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| slot_ids(item, scan.id_text(bytes, i)));
                (ids.next(), ids.collect())
            }
            Ok(Value::Array(_)) | Err(_) => (None, Vec::new()),
            Ok(value) => (Some(slot_ids(value, scan.id_text(bytes, 0))), Vec::new()),
        };
        let batch = match &value {
            Ok(whole @ Value::Array(_)) => Some(RequestIds::of_value(whole)),
            _ => None,
        };
        Reading {
            scan,
            value,
            refusal,
            first,
            rest,
            batch,
        }
    }
}

impl ClientMessage {
    /// Reads `bytes` under `limits` (see the module docs).
    pub fn read(bytes: impl Into<Vec<u8>>, limits: &Limits) -> ClientMessage {
        let bytes = bytes.into();
        let reading = Reading::of(&bytes, limits);
        ClientMessage(Arc::new(Owned { bytes, reading }))
    }

    /// The message as a view (what dispatch serves).
    pub fn view(&self) -> MessageView<'_> {
        MessageView {
            bytes: &self.0.bytes,
            reading: &self.0.reading,
        }
    }

    /// The bytes as received.
    pub fn bytes(&self) -> &[u8] {
        &self.0.bytes
    }

    /// See [`MessageView::value`].
    pub fn value(&self) -> Result<&Value, &Unreadable> {
        self.0.reading.value.as_ref()
    }

    /// See [`MessageView::request_span_id`].
    pub fn request_span_id(&self) -> Option<&str> {
        self.view().request_span_id()
    }

    /// See [`MessageView::cancelled_request`].
    pub fn cancelled_request(&self) -> Option<String> {
        self.view().cancelled_request()
    }

    /// See [`MessageView::request_id`].
    pub fn request_id(&self) -> Option<String> {
        self.view().request_id()
    }

    /// When the message is the client's response to a request the server sent it (a JSON-RPC
    /// response with a string id): that id, and its result or its error's message.
    pub fn client_reply(&self) -> Option<(String, Result<Value, String>)> {
        let v = self.view().value().ok()?.as_object()?;
        if v.contains_key("method") {
            return None;
        }
        let id = v.get("id")?.as_str()?.to_string();
        match (v.get("result"), v.get("error")) {
            (Some(result), None) => Some((id, Ok(result.clone()))),
            (None, Some(error)) => {
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message")
                    .to_string();
                Some((id, Err(message)))
            }
            _ => None,
        }
    }
}

impl<'a> MessageView<'a> {
    /// The view of `bytes` read as `reading` (which must be [`Reading::of`] these bytes).
    pub fn new(bytes: &'a [u8], reading: &'a Reading) -> MessageView<'a> {
        MessageView { bytes, reading }
    }

    /// The bytes as received.
    pub fn bytes(self) -> &'a [u8] {
        self.bytes
    }

    /// The parsed value, or why the bytes hold none (whatever the limits say of it).
    pub fn value(self) -> Result<&'a Value, &'a Unreadable> {
        self.reading.value.as_ref()
    }

    /// Why the message is answered as a whole before any of it is served (size, UTF-8,
    /// emptiness, depth, syntax), with the id the prescan found, when it is.
    pub fn refusal(self) -> Option<(Option<&'a Id>, &'a RpcError)> {
        self.reading
            .refusal
            .as_ref()
            .map(|r| (r.id.as_ref(), &r.error))
    }

    /// The raw JSON text of the `id` of top-level slot `i` (a batch's element `i`).
    pub fn raw_id(self, i: usize) -> Option<&'a str> {
        self.reading.scan.id_text(self.bytes, i)
    }

    /// The id of the message's first slot as the prescan found it, when it is a string or an
    /// integer (for an answer to a message that cannot be served).
    pub fn scanned_id(self) -> Option<Id> {
        self.raw_id(0).and_then(id_from_raw)
    }

    /// The ids of top-level slot `i`, computed when the message was read (every slot of a
    /// message that is served has them).
    pub fn ids(self, i: usize) -> Option<&'a RequestIds> {
        match i {
            0 => self.reading.first.as_ref(),
            _ => self.reading.rest.get(i - 1),
        }
    }

    /// The ids of a batch as a whole.
    pub fn batch_ids(self) -> Option<&'a RequestIds> {
        self.reading.batch.as_ref()
    }

    /// The span id the answer to this message will carry when it is a single request (one a
    /// runtime names in the headers of a streamed answer before the answer exists); `None`
    /// for anything else (the runtime then derives one from the bytes).
    pub fn request_span_id(self) -> Option<&'a str> {
        let value = self.reading.value.as_ref().ok()?;
        // An id beyond 64 bits is known exactly only from its raw text: not a request here.
        match classify(value, None) {
            Incoming::Request { .. } => self.reading.first.as_ref().map(|ids| ids.span_id.as_str()),
            _ => None,
        }
    }

    /// The JSON text of the request id this message cancels, when it is a
    /// `notifications/cancelled` (a runtime ends the wait of that request with it).
    pub fn cancelled_request(self) -> Option<String> {
        const METHOD: &str = "notifications/cancelled";
        let v = self.reading.value.as_ref().ok()?;
        if v.get("method")?.as_str()? != METHOD {
            return None;
        }
        // The method spelled without escapes, as the runtime's cancellation peek always read it.
        let raw = METHOD.as_bytes();
        if !self.bytes.windows(raw.len()).any(|w| w == raw) {
            return None;
        }
        id_text(v.get("params")?.get("requestId")?)
    }

    /// The JSON text of the id of this message when it is a single JSON object (what
    /// [`MessageView::cancelled_request`] names), to enter it among the cancellable requests.
    pub fn request_id(self) -> Option<String> {
        let v = self.reading.value.as_ref().ok()?;
        id_text(v.as_object()?.get("id")?)
    }
}

fn id_text(id: &Value) -> Option<String> {
    matches!(id, Value::String(_) | Value::Number(_)).then(|| id.to_string())
}

/// The ids of one top-level slot: of the request's method and params, or of the slot's value
/// when it is no request.
pub(crate) fn slot_ids(value: &Value, raw_id: Option<&str>) -> RequestIds {
    match classify(value, raw_id) {
        Incoming::Request { method, params, .. } => RequestIds::of_request(method, params),
        _ => RequestIds::of_value(value),
    }
}

/// The checks dispatch runs on a message as a whole, in order: size (`-32600`), UTF-8
/// (`-32700`), emptiness (`-32700`), nesting depth (`-32600`), syntax and duplicate keys
/// (`-32700`).
fn refusal(
    bytes: &[u8],
    scan: &Prescan,
    value: &Result<Value, Unreadable>,
    blank: bool,
    limits: &Limits,
) -> Option<Refusal> {
    let scanned_id = || scan.id_text(bytes, 0).and_then(id_from_raw);
    if bytes.len() > limits.max_message_bytes {
        // The id is still worth finding (a linear scan), so the client can match the refusal.
        return Some(Refusal {
            id: scanned_id(),
            error: oversize_error(bytes.len(), limits.max_message_bytes),
        });
    }
    if let Err(Unreadable::NotUtf8 { offset }) = value {
        return Some(Refusal {
            id: None,
            error: RpcError::parse_error(format!(
                "the message is not valid UTF-8 (invalid byte at offset {offset})"
            )),
        });
    }
    if blank {
        return Some(Refusal {
            id: None,
            error: RpcError::parse_error("the message is empty"),
        });
    }
    if scan.too_deep {
        return Some(Refusal {
            id: scanned_id(),
            error: RpcError::invalid_request(format!(
                "the message nests JSON deeper than {} levels",
                limits.max_json_depth
            )),
        });
    }
    match value {
        Err(Unreadable::Syntax(e)) => Some(Refusal {
            id: None,
            error: RpcError::parse_error(format!("invalid JSON: {e}")),
        }),
        _ => None,
    }
}

/// The `-32600` of a message over the size limit.
pub(crate) fn oversize_error(size: usize, limit: usize) -> RpcError {
    RpcError::invalid_request(format!(
        "the message is {size} bytes; this server accepts at most {limit} bytes"
    ))
}

/// An id from its raw JSON text, when it is a string or an integer.
pub(crate) fn id_from_raw(raw: &str) -> Option<Id> {
    match serde_json::from_str::<Value>(raw).ok()? {
        Value::String(s) => Some(Id::Str(s)),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(Id::Int(n)),
        Value::Number(_) if is_integer_literal(raw.trim()) => Some(Id::Big(raw.trim().to_string())),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
