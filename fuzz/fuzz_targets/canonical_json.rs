//! Canonical JSON: arbitrary bytes parsed as JSON, rendered canonically, parsed again.
//! Invariants: no panic; parse → canonical → parse gives the same value and the same canonical
//! bytes (a fixed point); the canonical form has no whitespace outside strings and sorted keys;
//! a value without a canonical form holds a float; a canonical line's digest is stable.
#![no_main]

use bernstein_core::canonical::to_canonical_bytes;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => !(n.is_i64() || n.is_u64()),
        Value::Array(a) => a.iter().any(has_float),
        Value::Object(o) => o.values().any(has_float),
        _ => false,
    }
}

fn sorted_and_compact(v: &Value, canonical: &[u8]) {
    // Outside strings, no byte is whitespace.
    let mut in_string = false;
    let mut escaped = false;
    for &b in canonical {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else {
            assert!(!b.is_ascii_whitespace(), "whitespace outside a string");
            in_string = b == b'"';
        }
    }
    if let Value::Object(o) = v {
        let keys: Vec<&String> = o.keys().collect();
        assert!(
            keys.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()),
            "keys not sorted"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    match to_canonical_bytes(&value) {
        Ok(canonical) => {
            assert!(!has_float(&value));
            let again: Value = serde_json::from_slice(&canonical).expect("canonical bytes parse");
            assert_eq!(again, value, "canonical form changed the value");
            assert_eq!(
                to_canonical_bytes(&again).as_deref(),
                Ok(&canonical[..]),
                "not a fixed point"
            );
            sorted_and_compact(&value, &canonical);
        }
        Err(_) => assert!(has_float(&value), "refused a value without floats"),
    }
});
