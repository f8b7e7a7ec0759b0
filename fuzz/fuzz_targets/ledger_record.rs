//! Ledger record parsing (`Record::parse_line`): arbitrary bytes, and fixture records with one
//! fuzzed edit.
//! Invariants: no panic; a line that parses re-serializes to exactly itself (canonical form is
//! unique); what verifies with the key also parses without it; every record carries a MAC; the
//! fast scan (`Record::from_line`) gives the reference parse's verdict; any edit of a real
//! record fails under the key.
#![no_main]

use bernstein_core::ledger::Record;
use bernstein_core::ledger::line::RecordKey;
use bernstein_fuzz::fixture;
use libfuzzer_sys::fuzz_target;

fn check(line: &[u8], key: &[u8]) {
    let prepared = RecordKey::new(key);
    assert_eq!(
        Record::from_line(line, Some(&prepared)),
        Record::parse_line(line, Some(key)),
        "the fast scan and the reference parse disagree"
    );
    for k in [Some(key), None] {
        if let Ok(rec) = Record::parse_line(line, k) {
            let mut expected = line.to_vec();
            expected.push(b'\n');
            assert_eq!(
                rec.to_line(),
                expected,
                "a parsed record must re-serialize to its line"
            );
            assert!(rec.mac.is_some());
            if k.is_some() {
                assert_eq!(Record::parse_line(line, None).as_ref(), Ok(&rec));
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let key = fixture::audit_key();
    check(data, &key);
    // Structured mode: edit one byte of one fixture record.
    if let Some((&[which, at_hi, at_lo, value], _)) = data.split_first_chunk::<4>() {
        let lines = fixture::ledger_lines();
        let line = lines[usize::from(which) % lines.len()];
        let at = usize::from(u16::from_be_bytes([at_hi, at_lo])) % line.len();
        let mut edited = line.to_vec();
        edited[at] = value;
        check(&edited, &key);
        if edited != line {
            assert!(
                Record::parse_line(&edited, Some(&key)).is_err(),
                "an edited record verified"
            );
        }
    }
});
