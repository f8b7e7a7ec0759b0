//! Canonical JSON: the one byte form every digest, MAC and signature is computed over.
//!
//! Rules (docs/FORMATS.md): object keys sorted by their UTF-8 bytes, no insignificant
//! whitespace, strings escaped as serde_json escapes them (`"`, `\`, control characters; all
//! other characters as raw UTF-8), integers only. A float anywhere is refused.

use serde_json::Value;

/// Why a value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CanonicalError {
    #[error("floats are not allowed in a canonical pre-image (at {0})")]
    Float(String),
}

/// Canonical bytes of `value`, or an error when it holds a float.
pub fn to_canonical_bytes(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(128);
    write_canonical(value, &mut out)?;
    Ok(out)
}

/// [`to_canonical_bytes`] appended to `out`; on error nothing is written.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    if let Some(path) = float_path(value) {
        return Err(CanonicalError::Float(path));
    }
    // serde_json's Map is a BTreeMap (the `preserve_order` feature is never enabled in this
    // workspace), so compact serialization already sorts keys by their bytes.
    serde_json::to_writer(&mut *out, value).expect("serializing a Value into memory cannot fail");
    Ok(())
}

/// The path (`$.a[1]`) of the first float in `value`, if any. Allocates only when it finds
/// one: this check runs on every digest.
fn float_path(value: &Value) -> Option<String> {
    match value {
        Value::Number(n) if !(n.is_i64() || n.is_u64()) => Some(String::from("$")),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| float_path(item).map(|p| format!("$[{i}]{}", &p[1..]))),
        Value::Object(map) => map
            .iter()
            .find_map(|(k, v)| float_path(v).map(|p| format!("$.{k}{}", &p[1..]))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_keys_and_strips_whitespace() {
        let v = json!({"b": 1, "a": {"z": [1, 2], "é": "x\ny", "A": null}});
        let bytes = to_canonical_bytes(&v).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "{\"a\":{\"A\":null,\"z\":[1,2],\"é\":\"x\\ny\"},\"b\":1}"
        );
    }

    #[test]
    fn refuses_floats_with_their_path() {
        let err = to_canonical_bytes(&json!({"a": [1, 2.5]})).unwrap_err();
        assert_eq!(err, CanonicalError::Float("$.a[1]".into()));
    }
}
