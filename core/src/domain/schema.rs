//! Advertised JSON Schemas, generated from the Rust types that parse arguments and emit
//! payloads, so what a host is told can never drift from what the server does.
//!
//! Schemas are JSON Schema 2020-12 (the MCP default dialect) with every subschema inlined (no
//! `$ref`), no `$schema` and no `title`, and an object at the top. This module must never
//! validate anything: the protocol engine validates arguments against these schemas.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

fn generate<T: JsonSchema>(settings: SchemaSettings) -> Value {
    let settings = settings.with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut v = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(obj) = v.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        obj.remove("$defs");
        obj.entry("type").or_insert_with(|| json!("object"));
    }
    v
}

/// The input schema of an argument type (deserialization contract).
pub fn input_schema<T: JsonSchema>() -> Value {
    generate::<T>(SchemaSettings::draft2020_12().for_deserialize())
}

/// The output schema of a payload type (serialization contract).
pub fn output_schema<T: JsonSchema>() -> Value {
    generate::<T>(SchemaSettings::draft2020_12().for_serialize())
}

/// The schema of a structured tool refusal `{error, message, hint, ...extra}`. The engine may
/// combine it with a tool's output schema where a refusal takes the payload's place (the
/// `result` of the meter envelope).
pub fn tool_error_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "error": {"type": "string", "description": "Machine-readable refusal code."},
            "message": {"type": "string", "description": "What was wrong."},
            "hint": {"type": "string", "description": "What to do instead."}
        },
        "required": ["error", "message", "hint"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        #[schemars(length(min = 1, max = 8))]
        name: String,
        kind: Option<Kind>,
    }

    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Small,
        Large,
    }

    fn refs(v: &Value) -> bool {
        match v {
            Value::Object(m) => m.contains_key("$ref") || m.values().any(refs),
            Value::Array(a) => a.iter().any(refs),
            _ => false,
        }
    }

    #[test]
    fn schemas_are_inlined_objects_with_limits() {
        let s = input_schema::<Args>();
        assert_eq!(s["type"], "object");
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["required"], json!(["name"]));
        assert_eq!(s["properties"]["name"]["minLength"], 1);
        assert_eq!(s["properties"]["name"]["maxLength"], 8);
        assert!(s.get("$schema").is_none() && s.get("title").is_none());
        assert!(!refs(&s), "{s}");
    }
}
