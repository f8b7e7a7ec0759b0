//! The scan and the reference parse give the same verdict on every line: generated records,
//! every single-byte edit of them, and hand-picked edge cases of canonical JSON.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::record::LedgerPosition;
use crate::record::{Draft, Record, RecordError, seal};

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

/// Format 3 tags the hash (with a label); a format-2 tag over the pre-image is named as one
/// by both readings, and only under the key that made it.
#[test]
fn a_format_2_tag_is_named_as_one() {
    let line = sealed(json!({"a": 1}), "backlog", "task.created");
    let raw = RecordLine::scan(&line).unwrap();
    let mut message = crate::digest::RECORD_TAG_LABEL.to_vec();
    message.extend_from_slice(&raw.hash.0);
    let expected = crate::digest::hmac_tag(KEY, &message);
    assert_eq!(
        Record::from_line(&line, None).unwrap().mac.as_deref(),
        Some(expected.as_str())
    );
    let text = String::from_utf8(line.clone()).unwrap();
    let start = text.find(",\"mac\":\"").unwrap() + 7;
    let old_tag = crate::digest::hmac_tag(KEY, &raw.preimage_bytes());
    let v2 = format!("{}\"{old_tag}\"{}", &text[..start], &text[start + 78..]);
    let raw = RecordLine::scan(v2.as_bytes()).unwrap();
    assert_eq!(raw.check(None), Ok(()));
    assert_eq!(
        raw.check(Some(&RecordKey::new(KEY))),
        Err(SealError::Format2Mac)
    );
    assert_eq!(
        raw.check(Some(&RecordKey::new(b"other"))),
        Err(SealError::BadMac)
    );
    assert_eq!(
        Record::parse_line(v2.as_bytes(), Some(KEY)),
        Err(RecordError::Format2Mac)
    );
    agree(v2.as_bytes());
}

/// The eight-at-a-time hex decoder against a digit-by-digit one: every byte value at every
/// position, among valid digits and among other bytes.
#[test]
fn hex8_decodes_exactly_the_lowercase_digits() {
    let reference = |b: [u8; 8]| -> Option<u32> {
        let mut out = [0u8; 4];
        for (o, pair) in out.iter_mut().zip(b.chunks_exact(2)) {
            *o = (hex_digit(pair[0])? << 4) | hex_digit(pair[1])?;
        }
        Some(u32::from_le_bytes(out))
    };
    for fill in [
        *b"0123abcd",
        *b"f9e8d7c6",
        *b"ffffffff",
        *b"00000000",
        *b"0000000g",
    ] {
        for at in 0..8 {
            for byte in 0..=255u8 {
                let mut b = fill;
                b[at] = byte;
                assert_eq!(hex8(u64::from_le_bytes(b)), reference(b), "{b:?}");
            }
        }
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Mostly hex digits, so that valid words come up as well as invalid ones.
        let b = x.to_le_bytes().map(|v| match v % 20 {
            0..16 => b"0123456789abcdef"[usize::from(v % 16)],
            _ => v,
        });
        assert_eq!(hex8(u64::from_le_bytes(b)), reference(b), "{b:?}");
    }
}

/// Strings are scanned eight bytes at a time: every kind of special byte at every offset of
/// strings long and short, and text that is not UTF-8, read as the reference parse reads them.
#[test]
fn strings_read_the_same_at_every_offset() {
    let base = String::from_utf8(sealed(json!({"a": 1}), "audit", "x")).unwrap();
    let base = base.as_bytes();
    let at = base.windows(7).position(|w| w == br#"{"a":1}"#).unwrap();
    let specials: [&[u8]; 12] = [
        b"\"",
        b"\\",
        b"\\\"",
        b"\\n",
        b"\\u0001",
        b"\\u0041",
        b"\x01",
        b"\x1f",
        b"\x7f",
        "é".as_bytes(),
        b"\xc3",
        b"\xff",
    ];
    for len in 0..20 {
        for pos in 0..=len {
            for special in specials {
                let mut text = vec![b'x'; len];
                text.splice(pos..pos, special.iter().copied());
                for in_key in [false, true] {
                    let mut body = Vec::new();
                    if in_key {
                        body.extend_from_slice(b"{\"");
                        body.extend_from_slice(&text);
                        body.extend_from_slice(b"\":1}");
                    } else {
                        body.extend_from_slice(b"{\"a\":\"");
                        body.extend_from_slice(&text);
                        body.extend_from_slice(b"\"}");
                    }
                    let mut line = base[..at].to_vec();
                    line.extend_from_slice(&body);
                    line.extend_from_slice(&base[at + 7..]);
                    agree(&line);
                }
            }
        }
    }
}

/// `scan_prefix` reads the first line of a buffer and nothing after it; `scan` of that line
/// gives the same record.
#[test]
fn scan_prefix_stops_at_the_record() {
    let line = sealed(json!({"a": "x"}), "audit", "x");
    for tail in [&b"\n"[..], b"\n{\"body\"", b"", b"garbage", b"\n\n"] {
        let mut buf = line.clone();
        buf.extend_from_slice(tail);
        let raw = RecordLine::scan_prefix(&buf).unwrap();
        assert_eq!(raw.line(), &line[..]);
        assert_eq!(Some(raw), RecordLine::scan(&line));
    }
    // Cut anywhere, the prefix is no record.
    for cut in 0..line.len() {
        assert!(
            RecordLine::scan_prefix(&line[..cut]).is_none(),
            "cut at {cut}"
        );
    }
}

#[test]
fn a_tag_verifies_only_when_every_bit_matches() {
    let key = RecordKey::new(KEY);
    let hash = Digest::of_parts(&[b"a record"]);
    let tag = key.tag(&hash);
    assert!(key.verifies(&hash, &tag));
    assert!(!RecordKey::new(b"another key").verifies(&hash, &tag));
    for byte in 0..32 {
        for bit in 0..8 {
            let mut bad = tag;
            bad[byte] ^= 1 << bit;
            assert!(!key.verifies(&hash, &bad), "bit {bit} of byte {byte}");
        }
    }
    let mut other = hash;
    other.0[31] ^= 1;
    assert!(!key.verifies(&other, &tag));
}
