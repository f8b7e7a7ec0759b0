//! What names a request's span for a runtime that traces ([`Engine::trace_requests`]): its
//! method and tool, its content-derived trace and span ids ([`RequestIds`]) and the W3C
//! `traceparent` it came with as its parent: `params._meta.traceparent` when valid, else the
//! HTTP `traceparent` header when valid. With a parent, the trace id is the parent's (a child
//! is in its parent's trace); without, the request's own content-derived one. An invalid
//! `traceparent` is ignored, as the ledger ignores it.
//!
//! [`Engine::trace_requests`]: super::Engine::trace_requests

use crate::protocol::ClientMessage;
use crate::protocol::ids::{RequestIds, traceparent_trace_id};
use crate::protocol::model::Meta;

/// A request's span, as the engine names it when the request begins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestSpan {
    /// `{method} {tool}` for a `tools/call`, else the method (`batch` for a batch, `invalid`
    /// for a message with no method).
    pub name: String,
    pub method: String,
    pub tool: Option<String>,
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// 16 lowercase hex digits: the content-derived span id the answer carries.
    pub span_id: String,
    /// The valid `traceparent` this request continues, if any.
    pub parent: Option<SpanParent>,
}

/// The remote span a request continues (from a valid W3C `traceparent`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanParent {
    /// 16 lowercase hex digits.
    pub span_id: String,
    /// The traceparent's `sampled` flag.
    pub sampled: bool,
}

impl RequestSpan {
    /// The span of `message`; `header` is the HTTP `traceparent` header, if any.
    pub fn of(message: &ClientMessage, header: Option<&str>) -> RequestSpan {
        let view = message.view();
        let value = view.value().ok();
        let params = value.and_then(|v| v.get("params"));
        let method = match value {
            Some(v) if v.is_array() => "batch",
            Some(v) => v
                .get("method")
                .and_then(|m| m.as_str())
                .unwrap_or("invalid"),
            None => "invalid",
        };
        let tool = (method == "tools/call")
            .then(|| params.and_then(|p| p.get("name")).and_then(|n| n.as_str()))
            .flatten();
        let own = view
            .ids(0)
            .filter(|_| !value.is_some_and(|v| v.is_array()))
            .or(view.batch_ids())
            .cloned()
            .unwrap_or_else(|| RequestIds::of_bytes(message.bytes()));
        let traceparent = Meta::of(params)
            .traceparent()
            .filter(|tp| traceparent_trace_id(tp).is_some())
            .or(header.filter(|tp| traceparent_trace_id(tp).is_some()));
        let (trace_id, parent) = match traceparent {
            Some(tp) => {
                let parts: Vec<&str> = tp.split('-').collect();
                let sampled = u8::from_str_radix(parts[3], 16).is_ok_and(|f| f & 1 == 1);
                let parent = SpanParent {
                    span_id: parts[2].to_string(),
                    sampled,
                };
                (parts[1].to_string(), Some(parent))
            }
            None => (own.trace_id, None),
        };
        let name = match tool {
            Some(tool) => format!("{method} {tool}"),
            None => method.to_string(),
        };
        RequestSpan {
            name,
            method: method.to_string(),
            tool: tool.map(str::to_string),
            trace_id,
            span_id: own.span_id,
            parent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Limits;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const OTHER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

    fn read(text: &str) -> ClientMessage {
        ClientMessage::read(text.as_bytes().to_vec(), &Limits::default())
    }

    #[test]
    fn a_tool_call_is_named_for_its_tool_with_its_content_derived_ids() {
        let text = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}"#;
        let m = read(text);
        let ids = m.view().ids(0).unwrap().clone();
        let span = RequestSpan::of(&m, None);
        assert_eq!(span.name, "tools/call t");
        assert_eq!(span.tool.as_deref(), Some("t"));
        assert_eq!(span.trace_id, ids.trace_id);
        assert_eq!(span.span_id, ids.span_id);
        assert_eq!(span.parent, None);
    }

    #[test]
    fn the_meta_traceparent_is_the_parent_and_wins_over_the_header() {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{{"traceparent":"{TP}"}}}}}}"#
        );
        let span = RequestSpan::of(&read(&text), Some(OTHER));
        assert_eq!(span.name, "tools/list");
        assert_eq!(span.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        let parent = span.parent.unwrap();
        assert_eq!(parent.span_id, "00f067aa0ba902b7");
        assert!(parent.sampled);
    }

    #[test]
    fn the_header_is_the_parent_without_meta_and_an_invalid_one_is_ignored() {
        let text = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let span = RequestSpan::of(&read(text), Some(OTHER));
        assert_eq!(span.trace_id, "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(
            span.parent,
            Some(SpanParent {
                span_id: "b7ad6b7169203331".into(),
                sampled: false
            })
        );
        let own = read(text).view().ids(0).unwrap().clone();
        let ignored = RequestSpan::of(&read(text), Some("00-zz-b7ad6b7169203331-01"));
        assert_eq!(ignored.parent, None);
        assert_eq!(ignored.trace_id, own.trace_id);
    }

    #[test]
    fn a_batch_and_garbage_get_spans_of_their_own() {
        let batch = RequestSpan::of(&read(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#), None);
        assert_eq!(batch.name, "batch");
        assert_eq!(batch.span_id.len(), 16);
        let garbage = RequestSpan::of(&read("{nope"), None);
        assert_eq!(garbage.name, "invalid");
        assert_eq!(
            garbage.span_id,
            RequestIds::of_bytes(b"{nope").span_id,
            "the ids of its bytes"
        );
    }
}
