//! Turning a [`Response`] into the bytes a runtime writes: compact JSON, one message (or one
//! batch array), no trailing newline. This is the only place response bytes are produced.
//!
//! Rendering fills what the core could not know (the `_meter.latency_ms` the runtime
//! measured) and restores ids that JSON values cannot hold exactly (integers beyond 64 bits).
//! It must never fail, never panic on a well-formed `Response`, and never change anything else.

use serde_json::Value;

use std::sync::Arc;

use super::jsonrpc::{Id, LEDGER_UNAVAILABLE, RpcError, error_message, result_message};
use super::meter::envelope_bytes;
use super::{MeterSlot, Response};

/// What an answer is, known when it is made and carried beside its rendered bytes
/// ([`Response::kind`]), so that nothing reads the bytes again to learn it (the HTTP status of
/// a JSON-RPC error, for one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AnswerKind {
    /// A result (or nothing to answer).
    #[default]
    Result,
    /// A single JSON-RPC error.
    Error(ErrorReply),
    /// A batch's array of answers (revision 2025-03-26).
    Batch,
}

impl AnswerKind {
    /// The error, when the answer is a single JSON-RPC error.
    pub fn error(self) -> Option<ErrorReply> {
        match self {
            AnswerKind::Error(e) => Some(e),
            _ => None,
        }
    }
}

/// A JSON-RPC error answer, as far as a transport's status depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorReply {
    pub code: i64,
    /// The reply answers no identifiable request (`"id": null`).
    pub anonymous: bool,
    /// The ledger could not record the request (`error.data.reason` is `ledger_unavailable`):
    /// nothing changed.
    pub unavailable: bool,
    /// `error.data.retryable`: the same request may succeed later without anyone acting.
    pub retryable: bool,
}

impl Response {
    /// A response carrying `result` for request `id`.
    pub fn result(id: &Id, result: Value, span_id: impl Into<String>) -> Response {
        Response::single(result_message(id, result), Some(id), span_id.into())
    }

    /// An error response; `id` is `None` when the request's id could not be read.
    pub fn error(id: Option<&Id>, error: &RpcError, span_id: impl Into<String>) -> Response {
        let data = error.data.as_ref();
        let kind = AnswerKind::Error(ErrorReply {
            code: error.code,
            anonymous: id.is_none(),
            unavailable: data.and_then(|d| d.get("reason")).and_then(Value::as_str)
                == Some(LEDGER_UNAVAILABLE),
            retryable: data.and_then(|d| d.get("retryable")) == Some(&Value::Bool(true)),
        });
        Response {
            kind,
            ..Response::single(error_message(id, error), id, span_id.into())
        }
    }

    /// A response whose `result` was rendered before (`raw`: its compact JSON bytes).
    pub fn rendered(id: &Id, raw: Arc<[u8]>, span_id: impl Into<String>) -> Response {
        let mut message = result_message(id, Value::Null);
        if let Value::Object(obj) = &mut message {
            obj.remove("result");
        }
        Response {
            raw_result: Some(raw),
            ..Response::single(message, Some(id), span_id.into())
        }
    }

    fn single(message: Value, id: Option<&Id>, span_id: String) -> Response {
        Response {
            message,
            meter: None,
            span_id,
            exact_id: id.and_then(Id::exact_digits).map(str::to_string),
            batch: None,
            raw_result: None,
            kind: AnswerKind::Result,
        }
    }

    /// The whole message as it is sent (at latency 0): for a batch's array.
    fn full_message(&self) -> Value {
        serde_json::from_slice(&self.render(0)).unwrap_or(Value::Null)
    }

    /// The replies of a batch (revision 2025-03-26), rendered as one JSON array.
    pub fn batch(parts: Vec<Response>, span_id: impl Into<String>) -> Response {
        let message = Value::Array(parts.iter().map(Response::full_message).collect());
        Response {
            message,
            meter: None,
            span_id: span_id.into(),
            exact_id: None,
            batch: Some(parts),
            raw_result: None,
            kind: AnswerKind::Batch,
        }
    }

    /// The JSON-RPC error code, when this is a single error response.
    pub fn error_code(&self) -> Option<i64> {
        self.message.get("error")?.get("code")?.as_i64()
    }

    /// What this answer is (a result, an error and which, a batch), decided when it was made:
    /// it travels beside the rendered bytes ([`AnswerKind`]).
    pub fn kind(&self) -> AnswerKind {
        self.kind
    }

    /// The bytes to send, with `latency_ms` (measured by the runtime from receipt to now) in the
    /// `_meter` envelope of a metered tool result.
    pub fn render(&self, latency_ms: u64) -> Vec<u8> {
        if let Some(parts) = &self.batch {
            let mut out = vec![b'['];
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend(p.render(latency_ms));
            }
            out.push(b']');
            return out;
        }
        let mut out = Vec::with_capacity(1024);
        let env = self.meter.as_ref().map(|s| envelope_bytes(s, latency_ms));
        match &self.message {
            Value::Object(obj) if self.exact_id.is_some() || env.is_some() => {
                write_object(&mut out, obj, |key, value, out| match key {
                    // Keys come out sorted (serde_json's map is ordered); write the id verbatim.
                    "id" => match &self.exact_id {
                        Some(digits) => out.extend_from_slice(digits.as_bytes()),
                        None => write_json(out, value),
                    },
                    "result" => match &env {
                        Some(env) => write_metered(out, value, env),
                        None => write_json(out, value),
                    },
                    _ => write_json(out, value),
                });
            }
            message => write_json(&mut out, message),
        }
        if let Some(raw) = &self.raw_result {
            // Keys are written sorted and `result` sorts after `id` and `jsonrpc`: the bytes are
            // what rendering the whole message would give.
            if out.pop() == Some(b'}') {
                out.extend_from_slice(b",\"result\":");
                out.extend_from_slice(raw);
                out.push(b'}');
            }
        }
        out
    }
}

/// A metered tool `result` with its envelope at `latency_ms` filled in where
/// [`Response::render`] would write it: for a result embedded in another answer (a task's).
pub(super) fn filled_result(result: &Value, slot: &MeterSlot, latency_ms: u64) -> Value {
    let mut out = Vec::new();
    write_metered(&mut out, result, &envelope_bytes(slot, latency_ms));
    serde_json::from_slice(&out).expect("a written result is JSON")
}

/// Writes a metered tool `result`: the envelope `env` in place of its last text block's text
/// (the only one, or the one after a tool's own blocks; `resource_link` blocks may follow it)
/// and of its structured content, when present. The core leaves placeholders there; everything else is written as it is.
fn write_metered(out: &mut Vec<u8>, result: &Value, env: &[u8]) {
    let Value::Object(result) = result else {
        return write_json(out, result);
    };
    write_object(out, result, |key, value, out| match (key, value) {
        ("structuredContent", _) => out.extend_from_slice(env),
        ("content", Value::Array(blocks)) => {
            let last_text = blocks.iter().rposition(|b| b["type"] == "text");
            out.push(b'[');
            for (i, block) in blocks.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                match block {
                    Value::Object(block) if Some(i) == last_text => {
                        write_object(out, block, |key, value, out| match key {
                            "text" => {
                                let text = std::str::from_utf8(env).expect("JSON text is UTF-8");
                                write_json(out, &text);
                            }
                            _ => write_json(out, value),
                        });
                    }
                    other => write_json(out, other),
                }
            }
            out.push(b']');
        }
        (_, value) => write_json(out, value),
    });
}

/// Writes `obj` as compact JSON (its keys in their sorted order), each value by `value`.
fn write_object(
    out: &mut Vec<u8>,
    obj: &serde_json::Map<String, Value>,
    mut value: impl FnMut(&str, &Value, &mut Vec<u8>),
) {
    out.push(b'{');
    for (i, (k, v)) in obj.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(out, k);
        out.push(b':');
        value(k, v, out);
    }
    out.push(b'}');
}

fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Serializing into memory cannot fail: every map key is a string.
    let _ = serde_json::to_writer(&mut *out, v);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::meter::envelope;
    use crate::time::Timestamp;
    use serde_json::json;

    #[test]
    fn plain_responses_render_compactly() {
        let r = Response::result(&Id::Int(7.into()), json!({"b": 1, "a": [true]}), "s");
        assert_eq!(
            String::from_utf8(r.render(5)).unwrap(),
            r#"{"id":7,"jsonrpc":"2.0","result":{"a":[true],"b":1}}"#
        );
        assert_eq!(r.error_code(), None);
        let e = Response::error(None, &RpcError::parse_error("x"), "s");
        assert_eq!(e.error_code(), Some(-32700));
    }

    #[test]
    fn big_ids_are_written_verbatim() {
        let digits = "-123456789012345678901234567890";
        let r = Response::error(Some(&Id::Big(digits.into())), &RpcError::internal("x"), "s");
        let text = String::from_utf8(r.render(0)).unwrap();
        assert_eq!(
            text,
            format!(
                r#"{{"error":{{"code":-32603,"message":"Internal error: x"}},"id":{digits},"jsonrpc":"2.0"}}"#
            )
        );
        let back: Value = serde_json::from_str(&text).unwrap();
        assert!(back["id"].is_number());
    }

    #[test]
    fn meter_latency_is_filled_at_render_time() {
        let slot = MeterSlot {
            tool: "t".into(),
            call_id: "call_1".into(),
            ok: true,
            ts: Timestamp(0),
            payload: json!({"b": "é\"\n", "a": [1, null]}),
        };
        // What the core leaves: placeholders where the envelope goes, after a tool's own block.
        let message = result_message(
            &Id::Int(1.into()),
            json!({"content": [{"type": "text", "text": "own"}, {"type": "text", "text": ""}],
                   "structuredContent": null, "isError": false, "_meta": {"k": 1}}),
        );
        let r = Response {
            meter: Some(slot.clone()),
            ..Response::single(message.clone(), None, "s".into())
        };
        let bytes = r.render(42);
        // The same bytes as filling the envelope into the value and serializing it whole.
        let env = envelope(&slot, 42);
        let mut filled = message;
        filled["result"]["content"][1]["text"] = Value::String(env.to_string());
        filled["result"]["structuredContent"] = env;
        assert_eq!(bytes, serde_json::to_vec(&filled).unwrap());
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["result"]["structuredContent"]["_meter"]["latency_ms"], 42);
        assert_eq!(v["result"]["content"][0]["text"], "own");
        let text: Value =
            serde_json::from_str(v["result"]["content"][1]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, v["result"]["structuredContent"]);
    }

    #[test]
    fn batches_render_as_arrays() {
        let a = Response::result(&Id::Int(1.into()), json!({}), "a");
        let b = Response::error(
            Some(&Id::Str("x".into())),
            &RpcError::method_not_found("m", ""),
            "b",
        );
        let r = Response::batch(vec![a, b], "s");
        let v: Value = serde_json::from_slice(&r.render(0)).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 2);
        assert_eq!(v, r.message);
    }

    /// The kind an answer carries is what its bytes say: a reader of the bytes (the error
    /// object's code, a null id, `data.reason` and `data.retryable`) would learn the same.
    #[test]
    fn an_answers_kind_is_what_its_bytes_say() {
        let read = |bytes: &[u8]| -> AnswerKind {
            let v: Value = serde_json::from_slice(bytes).unwrap();
            match (v.get("error"), v.is_array()) {
                (_, true) => AnswerKind::Batch,
                (None, _) => AnswerKind::Result,
                (Some(e), _) => AnswerKind::Error(ErrorReply {
                    code: e["code"].as_i64().unwrap(),
                    anonymous: v["id"].is_null(),
                    unavailable: e["data"]["reason"] == LEDGER_UNAVAILABLE,
                    retryable: e["data"]["retryable"] == true,
                }),
            }
        };
        let id = Id::Str("a".into());
        let down = RpcError::internal("x")
            .with_data(json!({"reason": LEDGER_UNAVAILABLE, "retryable": true}));
        let cases = [
            Response::result(&id, json!({"error": "not really"}), "s"),
            Response::rendered(&id, Arc::from(&b"{}"[..]), "s"),
            Response::error(Some(&id), &RpcError::method_not_found("m", ""), "s"),
            Response::error(None, &RpcError::parse_error("bad"), "s"),
            Response::error(Some(&id), &down, "s"),
            Response::error(Some(&Id::Big("123456789012345678901".into())), &down, "s"),
            Response::batch(
                vec![
                    Response::result(&id, json!({}), "s"),
                    Response::error(None, &RpcError::parse_error("bad"), "s"),
                ],
                "s",
            ),
        ];
        for r in &cases {
            assert_eq!(r.kind(), read(&r.render(0)), "{}", r.message);
        }
    }
}
