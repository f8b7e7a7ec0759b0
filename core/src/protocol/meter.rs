//! The `_meter` envelope: `{"result": <payload>, "_meter": {tool, call_id, latency_ms,
//! cost_usd, ok, ts}}` around every tool result when the cost meter is on, and the matching
//! wrapper around a tool's advertised output schema (so `structuredContent` still validates
//! against the `outputSchema` a client was shown).
//!
//! `latency_ms` is the only field not known when the core answers: the core fills 0 and
//! `Response::render` writes the runtime's measurement. This module must never read a clock.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::MeterSlot;

/// The envelope of `slot` with the measured latency, as a value (the tests' reference).
#[cfg(test)]
pub fn envelope(slot: &MeterSlot, latency_ms: u64) -> Value {
    serde_json::from_slice(&envelope_bytes(slot, latency_ms)).expect("an envelope's bytes are JSON")
}

/// The compact JSON of [`envelope`], written straight from `slot`: what `Response::render`
/// puts in a metered result. Fields are declared in sorted order, so these are the bytes the
/// serialized `Value` would give.
pub fn envelope_bytes(slot: &MeterSlot, latency_ms: u64) -> Vec<u8> {
    #[derive(Serialize)]
    struct Envelope<'a> {
        _meter: Meter<'a>,
        result: &'a Value,
    }
    #[derive(Serialize)]
    struct Meter<'a> {
        call_id: &'a str,
        /// This server spends no model tokens itself.
        cost_usd: u8,
        latency_ms: u64,
        ok: bool,
        tool: &'a str,
        ts: String,
    }
    let env = Envelope {
        _meter: Meter {
            call_id: &slot.call_id,
            cost_usd: 0,
            latency_ms,
            ok: slot.ok,
            tool: &slot.tool,
            ts: slot.ts.to_rfc3339(),
        },
        result: &slot.payload,
    };
    serde_json::to_vec(&env).expect("serializing into memory cannot fail")
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
        let expected = r#"{"_meter":{"call_id":"call_0123","cost_usd":0,"latency_ms":12,"ok":true,"tool":"echo","ts":"1970-01-01T00:00:00.000Z"},"result":{"x":1}}"#;
        let slot = slot(json!({"x": 1}));
        assert_eq!(envelope_bytes(&slot, 12), expected.as_bytes());
        // The bytes are the sorted serialization of the value they stand for.
        assert_eq!(envelope(&slot, 12).to_string(), expected);
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
