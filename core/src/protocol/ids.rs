//! Content-derived request identities: the request digest and the span, trace and call ids
//! derived from it.
//!
//! The request digest is the SHA-256 of the canonical JSON `{"method": m, "params": p}` where
//! `p` is the request's params without `_meta` (absent params count as `{}`). Canonical JSON
//! refuses floats, so for this digest only every non-integer number is replaced by its textual
//! form (`1.5` becomes `"1.5"`). `span_id` is the first 16 hex digits of the digest, `trace_id`
//! the first 32 unless the request's `_meta.traceparent` is a valid W3C traceparent (then its
//! trace id wins), and `call_id` is `"call_" + span_id`. A message that cannot be parsed gets
//! the ids of the digest of its raw bytes.
//!
//! This module must never use randomness, time or any per-process state: a replayed request
//! must yield identical ids on any server.

use serde::{Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::digest::Digest;
use crate::protocol::model::Meta;

/// The ids of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestIds {
    pub digest: Digest,
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// 16 lowercase hex digits.
    pub span_id: String,
    /// `call_` + `span_id`.
    pub call_id: String,
}

impl RequestIds {
    /// The ids of a request with `method` and `params` (its `_meta` is ignored, except for a
    /// valid `traceparent`).
    pub fn of_request(method: &str, params: Option<&Value>) -> RequestIds {
        let digest = request_digest(method, params);
        let traceparent = Meta::of(params)
            .traceparent()
            .and_then(traceparent_trace_id);
        RequestIds::from_digest(digest, traceparent)
    }

    /// The ids of a message that has no usable method: the digest of its raw bytes.
    pub fn of_bytes(bytes: &[u8]) -> RequestIds {
        RequestIds::from_digest(Digest::of(bytes), None)
    }

    /// The ids of an already normalized value (a batch as a whole).
    pub fn of_value(value: &Value) -> RequestIds {
        RequestIds::from_digest(digest_of_value(value), None)
    }

    fn from_digest(digest: Digest, trace: Option<&str>) -> RequestIds {
        let hex = digest.hex();
        let span_id = hex[..16].to_string();
        let trace_id = trace.map_or_else(|| hex[..32].to_string(), str::to_string);
        let call_id = format!("call_{span_id}");
        RequestIds {
            digest,
            trace_id,
            span_id,
            call_id,
        }
    }
}

/// Digest of `{"method": method, "params": params without _meta}` in canonical JSON.
pub fn request_digest(method: &str, params: Option<&Value>) -> Digest {
    #[derive(Serialize)]
    struct Preimage<'a> {
        method: &'a str,
        params: Params<'a>,
    }
    struct Params<'a>(Option<&'a Value>);
    impl Serialize for Params<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self.0 {
                None => s.collect_map(std::iter::empty::<(&str, Value)>()),
                Some(Value::Object(map)) => s.collect_map(
                    map.iter()
                        .filter(|(k, _)| k.as_str() != "_meta")
                        .map(|(k, v)| (k, Normalized(v))),
                ),
                Some(other) => Normalized(other).serialize(s),
            }
        }
    }
    hash_of(&Preimage {
        method,
        params: Params(params),
    })
}

/// Digest of the canonical form of `value` after [`numbers_as_text`].
pub fn digest_of_value(value: &Value) -> Digest {
    hash_of(&Normalized(value))
}

/// SHA-256 of `value`'s compact JSON, written straight into the hash. Every value hashed here
/// is canonical: maps are serde_json's sorted ones and floats are text ([`Normalized`]).
fn hash_of(value: &impl Serialize) -> Digest {
    struct Hashing(Sha256);
    impl std::io::Write for Hashing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.update(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut h = Hashing(Sha256::new());
    // Writing into a hash cannot fail, and these values have no non-string keys.
    let _ = serde_json::to_writer(&mut h, value);
    Digest(h.0.finalize().into())
}

/// A value serialized as [`numbers_as_text`] of it would be, without building that copy.
struct Normalized<'a>(&'a Value);

impl Serialize for Normalized<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Number(n) if !(n.is_i64() || n.is_u64()) => s.serialize_str(&n.to_string()),
            Value::Array(items) => s.collect_seq(items.iter().map(Normalized)),
            Value::Object(map) => s.collect_map(map.iter().map(|(k, v)| (k, Normalized(v)))),
            other => other.serialize(s),
        }
    }
}

/// `value` with every non-integer number replaced by its textual form, so it has a canonical
/// form. Integers are kept as numbers.
pub fn numbers_as_text(value: &Value) -> Value {
    match value {
        Value::Number(n) if !(n.is_i64() || n.is_u64()) => Value::String(n.to_string()),
        Value::Array(items) => Value::Array(items.iter().map(numbers_as_text).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), numbers_as_text(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The trace id of a valid W3C traceparent `00-<32 hex>-<16 hex>-<2 hex>` (lowercase, neither
/// id all zeros), or `None`.
pub fn traceparent_trace_id(traceparent: &str) -> Option<&str> {
    let parts: Vec<&str> = traceparent.split('-').collect();
    let [version, trace, parent, flags] = parts.as_slice() else {
        return None;
    };
    let lower_hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let all_zero = |s: &str| s.bytes().all(|b| b == b'0');
    if *version != "00" || !lower_hex(trace, 32) || !lower_hex(parent, 16) || !lower_hex(flags, 2) {
        return None;
    }
    if all_zero(trace) || all_zero(parent) {
        return None;
    }
    Some(trace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::to_canonical_bytes;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn ids_are_derived_from_method_and_params_without_meta() {
        let a = RequestIds::of_request(
            "tools/call",
            Some(&json!({"name": "x", "_meta": {"progressToken": 1}})),
        );
        let b = RequestIds::of_request("tools/call", Some(&json!({"name": "x"})));
        let c = RequestIds::of_request("tools/call", Some(&json!({"name": "y"})));
        assert_eq!(a, b);
        assert_ne!(a.digest, c.digest);
        assert_eq!(a.span_id.len(), 16);
        assert_eq!(a.trace_id.len(), 32);
        assert!(a.trace_id.starts_with(&a.span_id));
        assert_eq!(a.call_id, format!("call_{}", a.span_id));
    }

    #[test]
    fn digest_is_a_fixed_vector() {
        // sha256 of {"method":"ping","params":{}}
        let d = request_digest("ping", None);
        assert_eq!(d, Digest::of(br#"{"method":"ping","params":{}}"#));
        assert_eq!(request_digest("ping", Some(&json!({}))), d);
    }

    #[test]
    fn floats_are_digested_as_text_without_panicking() {
        let params: Value = serde_json::from_str(r#"{"x": 1.5, "y": [2.0e300, -0.0, 7]}"#).unwrap();
        let text = numbers_as_text(&params);
        assert_eq!(
            text,
            json!({"x": "1.5", "y": [params["y"][0].to_string(), "-0.0", 7]})
        );
        let expected = format!(
            r#"{{"method":"tools/call","params":{}}}"#,
            to_canonical_bytes(&text)
                .map(String::from_utf8)
                .unwrap()
                .unwrap()
        );
        assert_eq!(
            request_digest("tools/call", Some(&params)),
            Digest::of(expected.as_bytes())
        );
    }

    /// The digests as defined: the normalized copy built, then canonicalized and hashed.
    fn reference(method: &str, params: Option<&Value>) -> Digest {
        let params = match params {
            None => json!({}),
            Some(Value::Object(map)) => Value::Object(
                map.iter()
                    .filter(|(k, _)| k.as_str() != "_meta")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            Some(other) => other.clone(),
        };
        let pre = numbers_as_text(&json!({"method": method, "params": params}));
        Digest::of(&to_canonical_bytes(&pre).unwrap())
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("JSON numbers are finite", |f| f.is_finite())
                .prop_map(Value::from),
            "\\PC{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("(_meta|[a-z]{0,4})", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn streamed_digests_equal_the_defined_ones(
            method in "[a-z/]{0,10}",
            params in proptest::option::of(arb_json()),
        ) {
            prop_assert_eq!(request_digest(&method, params.as_ref()), reference(&method, params.as_ref()));
            if let Some(v) = &params {
                let normalized = to_canonical_bytes(&numbers_as_text(v)).unwrap();
                prop_assert_eq!(digest_of_value(v), Digest::of(&normalized));
            }
        }
    }

    #[test]
    fn a_valid_traceparent_supplies_the_trace_id() {
        let tp = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
        let ids =
            RequestIds::of_request("tools/list", Some(&json!({"_meta": {"traceparent": tp}})));
        assert_eq!(ids.trace_id, "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(
            ids.span_id,
            RequestIds::of_request("tools/list", None).span_id
        );
    }

    #[test]
    fn invalid_traceparents_are_ignored() {
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "01-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "00-0AF7651916CD43DD8448EB211C80319C-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-ff",
            "",
        ] {
            assert_eq!(traceparent_trace_id(bad), None, "{bad}");
        }
    }
}
