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
    check_no_floats(value, &mut String::from("$"))?;
    // serde_json's Map is a BTreeMap (the `preserve_order` feature is never enabled in this
    // workspace), so compact serialization already sorts keys by their bytes.
    Ok(serde_json::to_vec(value).expect("serializing a Value into memory cannot fail"))
}

fn check_no_floats(value: &Value, path: &mut String) -> Result<(), CanonicalError> {
    match value {
        Value::Number(n) if !(n.is_i64() || n.is_u64()) => Err(CanonicalError::Float(path.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                check_no_floats(item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (k, v) in map {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                check_no_floats(v, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
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
