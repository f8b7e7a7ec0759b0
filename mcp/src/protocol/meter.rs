//! The `_meter` envelope: `{"result": <payload>, "_meter": {tool, call_id, latency_ms,
//! cost_usd, ok, ts}}` around every tool result when the cost meter is on, and the matching
//! wrapper around a tool's advertised output schema (so `structuredContent` still validates
//! against the `outputSchema` a client was shown).
//!
//! `latency_ms` is the only field not known when the core answers: the core fills 0 and
//! `Response::render` writes the runtime's measurement. This module must never read a clock.

use serde_json::{Map, Value, json};

use super::MeterSlot;

/// The envelope of `slot` with the measured latency.
pub fn envelope(slot: &MeterSlot, latency_ms: u64) -> Value {
    let mut meter = Map::new();
    meter.insert("tool".into(), Value::String(slot.tool.clone()));
    meter.insert("call_id".into(), Value::String(slot.call_id.clone()));
    meter.insert("latency_ms".into(), Value::from(latency_ms));
    // This server spends no model tokens itself.
    meter.insert("cost_usd".into(), Value::from(0));
    meter.insert("ok".into(), Value::Bool(slot.ok));
    meter.insert("ts".into(), Value::String(slot.ts.to_rfc3339()));
    let mut env = Map::new();
    env.insert("result".into(), slot.payload.clone());
    env.insert("_meter".into(), Value::Object(meter));
    Value::Object(env)
}

/// JSON Schema of the `_meter` object, as advertised in every output schema: an object. Its
/// fields are defined once, in this module's docs and docs/ARCHITECTURE.md, rather than
/// repeated in each tool's listing.
pub fn meter_schema() -> Value {
    json!({"type": "object"})
}

/// Wraps a payload schema into the schema of its envelope. The payload's `$defs` /
/// `definitions` move to the envelope's root so that its local `$ref`s keep resolving.
pub fn wrap_output_schema(payload_schema: Value) -> Value {
    let mut payload = match payload_schema {
        Value::Object(m) => m,
        Value::Bool(b) => return envelope_schema(Value::Bool(b), Map::new()),
        other => return envelope_schema(other, Map::new()),
    };
    let mut hoisted = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(defs) = payload.remove(key) {
            hoisted.insert(key.to_string(), defs);
        }
    }
    let dialect = payload.remove("$schema");
    let mut wrapped = envelope_schema(Value::Object(payload), hoisted);
    if let (Some(d), Value::Object(obj)) = (dialect, &mut wrapped) {
        obj.insert("$schema".into(), d);
    }
    wrapped
}

fn envelope_schema(payload: Value, defs: Map<String, Value>) -> Value {
    let mut obj = Map::new();
    obj.insert("type".into(), Value::String("object".into()));
    obj.insert(
        "properties".into(),
        json!({
            "result": payload,
            "_meter": meter_schema(),
        }),
    );
    obj.insert("required".into(), json!(["result", "_meter"]));
    obj.extend(defs);
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::validate::validate;
    use crate::time::Timestamp;

    fn slot(payload: Value) -> MeterSlot {
        MeterSlot {
            tool: "echo".into(),
            call_id: "call_0123".into(),
            ok: true,
            ts: Timestamp(0),
            payload,
        }
    }

    #[test]
    fn envelope_has_every_meter_field() {
        let env = envelope(&slot(json!({"x": 1})), 12);
        assert_eq!(
            env.to_string(),
            r#"{"_meter":{"call_id":"call_0123","cost_usd":0,"latency_ms":12,"ok":true,"tool":"echo","ts":"1970-01-01T00:00:00.000Z"},"result":{"x":1}}"#
        );
    }

    #[test]
    fn wrapped_schema_accepts_the_envelope_and_keeps_refs() {
        let payload_schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"kind": {"$ref": "#/$defs/Kind"}},
            "required": ["kind"],
            "$defs": {"Kind": {"type": "string", "enum": ["a", "b"]}}
        });
        let wrapped = wrap_output_schema(payload_schema);
        assert!(wrapped.get("$defs").is_some());
        assert_eq!(
            wrapped["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        let good = envelope(&slot(json!({"kind": "a"})), 3);
        assert!(
            validate(&wrapped, &good, "structuredContent")
                .unwrap()
                .is_empty()
        );
        let bad = envelope(&slot(json!({"kind": "c"})), 3);
        assert_eq!(
            validate(&wrapped, &bad, "structuredContent").unwrap().len(),
            1
        );
    }
}
