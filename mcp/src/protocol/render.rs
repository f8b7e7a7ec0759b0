//! Turning a [`Response`] into the bytes a runtime writes: compact JSON, one message (or one
//! batch array), no trailing newline. This is the only place response bytes are produced.
//!
//! Rendering fills what the core could not know (the `_meter.latency_ms` the runtime
//! measured) and restores ids that JSON values cannot hold exactly (integers beyond 64 bits).
//! It must never fail, never panic on a well-formed `Response`, and never change anything else.

use serde_json::Value;

use std::sync::Arc;

use super::jsonrpc::{Id, RpcError, error_message, result_message};
use super::meter::envelope;
use super::{MeterSlot, Response};

impl Response {
    /// A response carrying `result` for request `id`.
    pub fn result(id: &Id, result: Value, span_id: impl Into<String>) -> Response {
        Response::single(result_message(id, result), Some(id), span_id.into())
    }

    /// An error response; `id` is `None` when the request's id could not be read.
    pub fn error(id: Option<&Id>, error: &RpcError, span_id: impl Into<String>) -> Response {
        Response::single(error_message(id, error), id, span_id.into())
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
        }
    }

    /// The whole message, the rendered result included (parsed back; for a batch's array).
    fn full_message(&self) -> Value {
        let mut message = self.message.clone();
        if let (Some(raw), Value::Object(obj)) = (&self.raw_result, &mut message) {
            let result = serde_json::from_slice(raw).unwrap_or(Value::Null);
            obj.insert("result".into(), result);
        }
        message
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
        }
    }

    /// The JSON-RPC error code, when this is a single error response.
    pub fn error_code(&self) -> Option<i64> {
        self.message.get("error")?.get("code")?.as_i64()
    }

    /// [`Response::render`] of a response that is not needed afterwards: its metered result is
    /// filled in place instead of in a copy.
    pub fn into_bytes(mut self, latency_ms: u64) -> Vec<u8> {
        if self.batch.is_none()
            && let Some(slot) = self.meter.take()
        {
            fill_meter(&mut self.message, &slot, latency_ms);
        }
        self.render(latency_ms)
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
        let filled;
        let message = match &self.meter {
            Some(slot) => {
                filled = with_meter(&self.message, slot, latency_ms);
                &filled
            }
            None => &self.message,
        };
        let mut out = self.render_message(message);
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

    fn render_message(&self, message: &Value) -> Vec<u8> {
        match (&self.exact_id, message) {
            (Some(digits), Value::Object(obj)) => {
                // Keys come out sorted (serde_json's map is ordered); write the id verbatim.
                let mut out = vec![b'{'];
                for (i, (k, v)) in obj.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend(to_bytes(&Value::String(k.clone())));
                    out.push(b':');
                    if k == "id" {
                        out.extend(digits.as_bytes());
                    } else {
                        out.extend(to_bytes(v));
                    }
                }
                out.push(b'}');
                out
            }
            _ => to_bytes(message),
        }
    }
}

/// `message` with its tool result's envelope text (the last content block: the only one, or the
/// one after a tool's own content blocks) and structured content, when present, replaced by
/// the envelope of `slot` measured at `latency_ms`.
fn with_meter(message: &Value, slot: &MeterSlot, latency_ms: u64) -> Value {
    let mut out = message.clone();
    fill_meter(&mut out, slot, latency_ms);
    out
}

/// [`with_meter`] in place.
fn fill_meter(out: &mut Value, slot: &MeterSlot, latency_ms: u64) {
    let env = envelope(slot, latency_ms);
    if let Some(result) = out.get_mut("result").and_then(Value::as_object_mut) {
        if let Some(text) = result
            .get_mut("content")
            .and_then(Value::as_array_mut)
            .and_then(|c| c.last_mut())
            .and_then(|c| c.get_mut("text"))
        {
            *text = Value::String(env.to_string());
        }
        if let Some(sc) = result.get_mut("structuredContent") {
            *sc = env;
        }
    }
}

fn to_bytes(v: &Value) -> Vec<u8> {
    // Serializing a Value into memory cannot fail: every map key is a string.
    serde_json::to_vec(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
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
            payload: json!(1),
        };
        let env0 = envelope(&slot, 0);
        let message = result_message(
            &Id::Int(1.into()),
            json!({"content": [{"type": "text", "text": env0.to_string()}], "structuredContent": env0, "isError": false}),
        );
        let r = Response {
            meter: Some(slot),
            ..Response::single(message, None, "s".into())
        };
        let v: Value = serde_json::from_slice(&r.render(42)).unwrap();
        assert_eq!(v["result"]["structuredContent"]["_meter"]["latency_ms"], 42);
        let text: Value =
            serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
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
}
