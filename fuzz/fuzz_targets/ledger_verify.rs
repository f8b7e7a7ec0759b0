//! The offline verifier (`verify_ledger`): arbitrary bytes as a whole ledger, and the fixture
//! ledger with one fuzzed byte changed.
//! Invariants: no panic; a ledger that verifies has as many records as lines, every line is a
//! record and the records fold with `Snapshot::apply` to the reported head; a failure names a
//! line within the file (or the one after it) and never a line before an earlier clean prefix;
//! any change to a fixture ledger byte fails, naming exactly that byte's line.
#![no_main]

use bernstein_core::ledger::verify::verify_ledger;
use bernstein_core::ledger::Record;
use bernstein_domain::Snapshot;
use bernstein_fuzz::fixture;
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8], key: &[u8]) {
    let lines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
    match verify_ledger(bytes, "ledger.jsonl", Some(key)) {
        Ok(report) => {
            assert_eq!(report.records, lines);
            let mut snap = Snapshot::genesis();
            for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let rec = Record::parse_line(line, Some(key)).expect("verified lines parse");
                snap.apply(&rec).expect("verified records fold");
            }
            assert_eq!(snap.position, report.head);
            assert!(snap.at_txn_boundary());
        }
        Err(f) => {
            assert!(f.line >= 1 && f.line <= lines + 1, "{f}");
            assert!(!f.reason.is_empty());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let key = fixture::audit_key();
    check(data, &key);
    if let Some((&[hi, mid, lo, value], _)) = data.split_first_chunk::<4>() {
        let ledger = fixture::LEDGER;
        let at = (usize::from(hi) << 16 | usize::from(mid) << 8 | usize::from(lo)) % ledger.len();
        if ledger[at] == value {
            return;
        }
        let mut edited = ledger.to_vec();
        edited[at] = value;
        let line = 1 + ledger[..at].iter().filter(|&&b| b == b'\n').count() as u64;
        let failure = verify_ledger(&edited, "ledger.jsonl", Some(&key))
            .expect_err("an edited ledger verified");
        assert_eq!(
            failure.line, line,
            "byte {at} of line {line} changed, but: {failure}"
        );
    }
});
