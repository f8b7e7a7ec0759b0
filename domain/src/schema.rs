//! Advertised JSON Schemas, generated from the Rust types that parse arguments and emit
//! payloads, so what a host is told can never drift from what the server does.
//!
//! Schemas are portable JSON Schema 2020-12 (the MCP default dialect), shaped for hosts that
//! map a schema onto one `type` per value: every subschema inlined (no `$ref`), no `$schema`,
//! no `title`, an object at the top, and, by the [`portable`] pass over whatever schemars
//! generates:
//! - no type arrays and no `null` type: an optional field is one that is absent from
//!   `required`, never a nullable one (`["string","null"]`, `anyOf [X, {"type":"null"}]`, a
//!   `null` in `enum`, `default: null` are all reduced to `X`). The engine reads an explicit
//!   `null` for an optional argument as the argument left out (`protocol::validate`).
//! - only standard `format` values (`date-time`, `uri`, ...). Rust integer formats become
//!   bounds: `uint8`/`int8`/`uint16`/`int16`/`uint32`/`int32` their exact
//!   `minimum`/`maximum`; 64-bit, 128-bit and pointer-sized integers only `minimum: 0` when
//!   unsigned (their upper ends are beyond what JSON numbers carry exactly; the
//!   deserializer still refuses out-of-range values as `invalid_arguments`). A tighter
//!   bound the type declares is kept. Float formats are dropped. Output schemas state no
//!   integer widths at all ([`output_schema`]).
//! - no keyword that says what its absence says: `default: false` on a boolean (an absent
//!   boolean is false to every handler) and `additionalProperties: true`.
//!
//! This module must never validate anything: the types these schemas are generated from check
//! the arguments as they parse (`super::args`), and a test holds them to the schemas with the
//! engine's validator (`tools::oracle_tests`).

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

fn generate<T: JsonSchema>(settings: SchemaSettings) -> Value {
    generate_with::<T>(settings, false)
}

/// [`generate`], without the bounds of Rust integer widths when `unbounded_integers`.
fn generate_with<T: JsonSchema>(settings: SchemaSettings, unbounded_integers: bool) -> Value {
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
        // The root's doc comment ("Arguments of ...") repeats what the tool says.
        obj.remove("description");
        obj.entry("type").or_insert_with(|| json!("object"));
    }
    if unbounded_integers {
        drop_integer_formats(&mut v);
    }
    portable(&mut v);
    v
}

/// Standard `format` values of JSON Schema 2020-12 (the format vocabulary).
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The bounds a Rust integer format stands for: `(minimum, maximum)`, `None` where JSON
/// numbers cannot carry the bound exactly (see the module docs).
fn integer_bounds(format: &str) -> Option<(Option<i64>, Option<i64>)> {
    let b = |lo: i64, hi: i64| Some((Some(lo), Some(hi)));
    match format {
        "uint8" => b(0, u8::MAX.into()),
        "int8" => b(i8::MIN.into(), i8::MAX.into()),
        "uint16" => b(0, u16::MAX.into()),
        "int16" => b(i16::MIN.into(), i16::MAX.into()),
        "uint32" => b(0, u32::MAX.into()),
        "int32" => b(i32::MIN.into(), i32::MAX.into()),
        "uint64" | "uint128" | "uint" => Some((Some(0), None)),
        "int64" | "int128" | "int" => Some((None, None)),
        _ => None,
    }
}

/// Rewrites a generated schema into the portable form the module docs describe, in place.
pub fn portable(schema: &mut Value) {
    let Value::Object(obj) = schema else { return };
    each_subschema(obj, portable);
    drop_null(obj);
    standard_format(obj);
    if obj.get("type") == Some(&json!("boolean")) && obj.get("default") == Some(&json!(false)) {
        obj.remove("default");
    }
    if obj.get("additionalProperties") == Some(&json!(true)) {
        obj.remove("additionalProperties");
    }
}

/// Removes every `description` of a type's schema, for a type whose values say what they are
/// (an enum of plain words, content shaped by its kind): its doc comments, written for readers
/// of the code, would only repeat in every listing what the field holding it says.
/// `#[schemars(transform = schema::undescribed)]` on the type.
pub fn undescribed(schema: &mut schemars::Schema) {
    if let Some(obj) = schema.as_object_mut() {
        let mut v = Value::Object(std::mem::take(obj));
        strip_descriptions(&mut v);
        if let Value::Object(m) = v {
            *obj = m;
        }
    }
}

/// Removes every `description` of a schema (the keyword, never a property of that name).
fn strip_descriptions(schema: &mut Value) {
    let Value::Object(obj) = schema else { return };
    obj.remove("description");
    each_subschema(obj, strip_descriptions);
}

/// Applies `f` to every direct subschema of `obj`: the values of the keywords that hold
/// schemas, never property names (which may spell keywords).
fn each_subschema(obj: &mut Map<String, Value>, f: fn(&mut Value)) {
    for (key, value) in obj.iter_mut() {
        match (key.as_str(), value) {
            (
                "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas",
                Value::Object(map),
            ) => map.values_mut().for_each(f),
            ("prefixItems" | "allOf" | "anyOf" | "oneOf" | "items", Value::Array(list)) => {
                list.iter_mut().for_each(f)
            }
            (
                "additionalProperties"
                | "items"
                | "contains"
                | "not"
                | "if"
                | "then"
                | "else"
                | "propertyNames"
                | "unevaluatedItems"
                | "unevaluatedProperties",
                v,
            ) => f(v),
            _ => {}
        }
    }
}

fn is_null_schema(v: &Value) -> bool {
    v.get("type") == Some(&json!("null")) || v.get("const") == Some(&Value::Null)
}

/// Removes every way of saying "or null" from one schema object.
fn drop_null(obj: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = obj.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        match kept.as_slice() {
            [one] => {
                obj.insert("type".into(), one.clone());
            }
            [] => {
                obj.remove("type");
            }
            several => {
                // Several non-null types: one branch per type, the other keywords shared.
                let branches = several.iter().map(|t| json!({ "type": t })).collect();
                obj.remove("type");
                obj.insert("anyOf".into(), Value::Array(branches));
            }
        }
    }
    if let Some(Value::Array(options)) = obj.get_mut("enum") {
        options.retain(|o| !o.is_null());
    }
    if obj.get("default") == Some(&Value::Null) {
        obj.remove("default");
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = obj.get_mut(key) else {
            continue;
        };
        branches.retain(|b| !is_null_schema(b));
        if branches.len() != 1 {
            continue;
        }
        // `X or null` was the whole alternative: `X` itself, its keywords under the outer ones.
        let Some(Value::Array(mut only)) = obj.remove(key) else {
            continue;
        };
        if let Some(Value::Object(inner)) = only.pop() {
            for (k, v) in inner {
                obj.entry(k).or_insert(v);
            }
        }
    }
}

/// Keeps a standard `format`; turns an integer format into bounds; drops any other.
fn standard_format(obj: &mut Map<String, Value>) {
    let Some(Value::String(format)) = obj.get("format").cloned() else {
        return;
    };
    if STANDARD_FORMATS.contains(&format.as_str()) {
        return;
    }
    if let Some((lo, hi)) = integer_bounds(&format) {
        let bound = |obj: &Map<String, Value>, key: &str| obj.get(key).and_then(Value::as_f64);
        if let Some(lo) = lo
            && bound(obj, "minimum").is_none_or(|m| m < lo as f64)
        {
            obj.insert("minimum".into(), json!(lo));
        }
        if let Some(hi) = hi
            && bound(obj, "maximum").is_none_or(|m| m > hi as f64)
        {
            obj.insert("maximum".into(), json!(hi));
        }
    }
    obj.remove("format");
}

/// The reasons `schema` is not portable (empty when it is): a non-standard `format`, a type
/// array, a `null` type or value, a `$ref`, or a `nullable` keyword, each with its JSON
/// pointer. Checks every value of the document, so a property named like a keyword may be
/// reported; Bernstein has none.
pub fn portability_problems(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), schema)];
    while let Some((at, v)) = stack.pop() {
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    let here = format!("{at}/{k}");
                    let problem = match (k.as_str(), child) {
                        ("format", Value::String(f)) if !STANDARD_FORMATS.contains(&f.as_str()) => {
                            Some(format!("non-standard format {f:?}"))
                        }
                        ("type", Value::Array(_)) => Some("a type array".to_string()),
                        ("type", Value::String(t)) if t == "null" => Some("the null type".into()),
                        ("enum", Value::Array(o)) if o.iter().any(Value::is_null) => {
                            Some("null in enum".into())
                        }
                        ("const" | "default", Value::Null) => Some(format!("{k}: null")),
                        ("$ref" | "$dynamicRef" | "nullable", _) => Some(k.to_string()),
                        _ => None,
                    };
                    if let Some(p) = problem {
                        out.push(format!("{here}: {p}"));
                    }
                    stack.push((here, child));
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    stack.push((format!("{at}/{i}"), child));
                }
            }
            _ => {}
        }
    }
    out
}

/// The input schema of an argument type (deserialization contract).
pub fn input_schema<T: JsonSchema>() -> Value {
    generate::<T>(SchemaSettings::draft2020_12().for_deserialize())
}

/// The output schema of a payload type (serialization contract). It carries structure only:
/// field names, types, enums and the bounds a type declares, no `description` (the tool's
/// description and docs/RECORDS.md say what the fields mean) and no bounds of a Rust integer's
/// width (`minimum: 0` of every count), because it is advertised on every listing and the
/// server, not the host, is the one bound by it.
pub fn output_schema<T: JsonSchema>() -> Value {
    let mut v = generate_with::<T>(SchemaSettings::draft2020_12().for_serialize(), true);
    strip_descriptions(&mut v);
    v
}

/// Removes every integer `format` (the width of a Rust integer) and the bounds that only repeat
/// that width (`minimum: 0` of an unsigned one), before [`portable`] would turn the format into
/// bounds; a tighter bound the type declares stays.
fn drop_integer_formats(schema: &mut Value) {
    let Value::Object(obj) = schema else { return };
    each_subschema(obj, drop_integer_formats);
    let Some((lo, hi)) = obj
        .get("format")
        .and_then(Value::as_str)
        .and_then(integer_bounds)
    else {
        return;
    };
    obj.remove("format");
    for (key, width) in [("minimum", lo), ("maximum", hi)] {
        if width.is_some_and(|w| obj.get(key).and_then(Value::as_i64) == Some(w)) {
            obj.remove(key);
        }
    }
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

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Numbers {
        small: Option<u8>,
        #[schemars(range(min = 1, max = 10))]
        bounded: u32,
        big: u64,
        signed: i32,
        ratio: f64,
        kind: Option<Kind>,
    }

    #[derive(Serialize, JsonSchema)]
    #[allow(dead_code)]
    struct Answer {
        count: u64,
        small: u8,
        #[schemars(range(min = 1, max = 3))]
        priority: u8,
    }

    #[test]
    fn output_schemas_state_no_integer_widths() {
        let s = output_schema::<Answer>();
        let p = &s["properties"];
        assert_eq!(p["count"], json!({"type": "integer"}));
        assert_eq!(p["small"], json!({"type": "integer"}));
        assert_eq!(
            p["priority"],
            json!({"type": "integer", "minimum": 1, "maximum": 3})
        );
        assert!(portability_problems(&s).is_empty(), "{s}");
    }

    #[test]
    fn integer_formats_become_bounds_and_nullables_become_optional() {
        let s = input_schema::<Numbers>();
        let p = &s["properties"];
        assert_eq!(
            p["small"],
            json!({"type": "integer", "minimum": 0, "maximum": 255})
        );
        assert_eq!(
            p["bounded"],
            json!({"type": "integer", "minimum": 1, "maximum": 10})
        );
        assert_eq!(p["big"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(
            p["signed"],
            json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX})
        );
        assert_eq!(p["ratio"], json!({"type": "number"}));
        assert_eq!(p["kind"]["enum"], json!(["small", "large"]));
        assert_eq!(p["kind"]["type"], "string");
        assert_eq!(s["required"], json!(["bounded", "big", "signed", "ratio"]));
        assert!(portability_problems(&s).is_empty(), "{s}");
    }

    #[test]
    fn the_check_names_every_unportable_construct() {
        let bad = json!({
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"type": "integer", "format": "uint32"},
                "c": {"anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}]},
                "d": {"enum": ["x", null]}
            }
        });
        assert_eq!(
            portability_problems(&bad).len(),
            5,
            "{:?}",
            portability_problems(&bad)
        );
        let mut fixed = bad.clone();
        portable(&mut fixed);
        // The `$ref` stays (generation inlines every subschema; the check still names it).
        assert_eq!(portability_problems(&fixed), ["/properties/c/$ref: $ref"]);
        assert_eq!(
            fixed["properties"]["b"],
            json!({"type": "integer", "minimum": 0, "maximum": 4294967295u32})
        );
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
