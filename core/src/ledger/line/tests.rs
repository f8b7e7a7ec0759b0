//! The scan and the reference parse give the same verdict on every line: generated records,
//! every single-byte edit of them, and hand-picked edge cases of canonical JSON.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::ledger::record::LedgerPosition;
use crate::ledger::record::{Draft, Record, seal};

const KEY: &[u8] = b"line-test-key";

fn sealed(body: Value, stream: &str, kind: &str) -> Vec<u8> {
    let recs = seal(
        &LedgerPosition::GENESIS,
        |_| Digest::ZERO,
        vec![Draft::new(stream, kind, body)],
        KEY,
    );
    let mut line = recs[0].to_line();
    line.pop();
    line
}

/// Both readings of `line`: the reference parse and the fast one, which must agree.
fn agree(line: &[u8]) {
    let reference = Record::parse_line(line, Some(KEY));
    let fast = Record::from_line(line, Some(&RecordKey::new(KEY)));
    assert_eq!(
        reference,
        fast,
        "disagree on {:?}",
        String::from_utf8_lossy(line)
    );
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        "[\\x00-\\x7f\u{e9}\u{2713}\u{2028}\"\\\\]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-c\"\\\\\\x01é]{0,3}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn generated_records_read_the_same(body in json_value(), stream in "[a-z:\\-\"\\\\]{1,10}") {
        let line = sealed(body, &stream, "k.v");
        agree(&line);
        prop_assert!(Record::from_line(&line, Some(&RecordKey::new(KEY))).is_ok());
    }

    #[test]
    fn every_edit_reads_the_same(
        body in json_value(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        insert in any::<bool>(),
    ) {
        let mut line = sealed(body, "audit", "mcp.stateless_call");
        let i = at.index(line.len());
        if insert { line.insert(i, byte) } else { line[i] = byte }
        agree(&line);
    }
}

#[test]
fn edge_cases_of_canonical_json_read_the_same() {
    let base = String::from_utf8(sealed(json!({"a": 1}), "audit", "x")).unwrap();
    let variants = [
        r#"{"a":01}"#,
        r#"{"a":-0}"#,
        r#"{"a":1.0}"#,
        r#"{"a":1e3}"#,
        r#"{"a":18446744073709551616}"#,
        r#"{"a":-9223372036854775809}"#,
        r#"{"a":-9223372036854775808}"#,
        r#"{"a":"\/"}"#,
        r#"{"a":"\u0041"}"#,
        r#"{"a":"\u0008"}"#,
        r#"{"a":"\u001F"}"#,
        r#"{"a":"\u001f"}"#,
        r#"{"a":"\ud800"}"#,
        r#"{"b":1,"a":2}"#,
        r#"{"a":1,"a":2}"#,
        r#"{"a":1,"\u0061":2}"#,
        r#"{ "a":1}"#,
        r#"{"a":[1 ,2]}"#,
        r#"{"a":tru}"#,
        r#"{"a":"x\ty"}"#,
    ];
    for v in variants {
        agree(base.replacen(r#"{"a":1}"#, v, 1).as_bytes());
    }
    agree(b"");
    agree(b"{}");
    agree(base.replace("\"mac\"", "\"mac \"").as_bytes());
    agree(format!("{base} ").as_bytes());
}

#[test]
fn nesting_limit_is_the_reference_parsers() {
    for depth in [MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1] {
        // The record is one level; its body adds `depth - 1` nested arrays.
        let mut body = json!(0);
        for _ in 1..depth {
            body = json!([body]);
        }
        let line = sealed(body, "audit", "x");
        agree(&line);
        assert_eq!(
            RecordLine::scan(&line).is_some(),
            depth <= MAX_DEPTH,
            "depth {depth}"
        );
    }
}

#[test]
fn a_missing_or_foreign_mac_is_refused() {
    let line = sealed(json!({"a": 1}), "backlog", "task.created");
    let raw = RecordLine::scan(&line).unwrap();
    assert_eq!(raw.check(Some(&RecordKey::new(KEY))), Ok(()));
    assert_eq!(
        raw.check(Some(&RecordKey::new(b"other"))),
        Err(SealError::BadMac)
    );
    let text = String::from_utf8(line.clone()).unwrap();
    let start = text.find(",\"mac\":").unwrap();
    let unsealed = format!("{}{}", &text[..start], &text[start + 85..]);
    let raw = RecordLine::scan(unsealed.as_bytes()).unwrap();
    assert_eq!(raw.check(None), Err(SealError::MissingMac));
    agree(unsealed.as_bytes());
}
