//! Tampering with real recorded ledgers (tests/fixtures/) is detected at exactly the first
//! affected record, by the verifier `bernstein audit verify` runs.
//!
//! `ledger/src/verify/tests.rs` proves the rules on generated ledgers; these tests prove
//! them on ledgers the real server wrote (every record kind, keyed and unkeyed streams,
//! multi-record transactions): flipping any byte of any line, deleting, duplicating, moving
//! and reordering lines, cutting the file anywhere, and re-chaining an edited record without
//! the key. Each failure must name the right line and the seq that line should hold.

mod replay_support;

use bernstein_core::digest::Digest;
use bernstein_core::ledger::verify::{VerifyFailure, verify_ledger_anchored};
use bernstein_core::ledger::{LedgerPosition, Record};
use proptest::prelude::*;
use replay_support::{Fixture, all};

struct Ledger {
    name: String,
    lines: Vec<Vec<u8>>,
    key: Vec<u8>,
    head: LedgerPosition,
}

/// The fixtures' ledgers, loaded once per test binary.
fn ledgers() -> &'static [Ledger] {
    static LEDGERS: std::sync::OnceLock<Vec<Ledger>> = std::sync::OnceLock::new();
    LEDGERS.get_or_init(load)
}

fn load() -> Vec<Ledger> {
    all()
        .into_iter()
        .map(|fx: Fixture| {
            let lines: Vec<Vec<u8>> = fx.ledger_lines().iter().map(|l| l.to_vec()).collect();
            let head = fx.fold().position;
            Ledger {
                name: fx.name,
                lines,
                key: fx.audit_key,
                head,
            }
        })
        .collect()
}

fn join(lines: &[Vec<u8>]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| l.iter().copied().chain([b'\n']))
        .collect()
}

impl Ledger {
    /// Verifies `bytes` with the key and anchored at the recorded head (as `audit verify`
    /// does with the store's checkpoint).
    fn verify(&self, bytes: &[u8]) -> Result<(), VerifyFailure> {
        verify_ledger_anchored(bytes, "ledger.jsonl", Some(&self.key), Some(self.head)).map(drop)
    }

    /// Asserts that `bytes` fails at 1-based `line`, naming the seq that line should hold.
    fn assert_fails_at(&self, bytes: &[u8], line: usize, what: &str) {
        match self.verify(bytes) {
            Ok(()) => panic!("{}: {what}: the ledger still verifies", self.name),
            Err(f) => {
                assert_eq!(f.line as usize, line, "{}: {what}: {f}", self.name);
                assert_eq!(f.seq as usize, line, "{}: {what}: {f}", self.name);
                assert!(
                    f.to_string()
                        .starts_with(&format!("ledger.jsonl:{line} (seq {line}): ")),
                    "{f}"
                );
            }
        }
    }

    fn flipped(&self, line: usize, at: usize, mask: u8) -> Vec<u8> {
        let mut bytes = join(&self.lines);
        let start: usize = self.lines[..line].iter().map(|l| l.len() + 1).sum();
        bytes[start + at] ^= mask;
        bytes
    }
}

#[test]
fn the_recorded_ledgers_verify_untouched() {
    for l in ledgers() {
        l.verify(&join(&l.lines))
            .unwrap_or_else(|f| panic!("{}: {f}", l.name));
        assert!(
            l.lines.len() > 10,
            "{}: too small to prove anything",
            l.name
        );
    }
}

#[test]
fn flipping_the_first_middle_last_or_newline_byte_of_every_line_fails_there() {
    for l in ledgers() {
        for (i, line) in l.lines.iter().enumerate() {
            for at in [0, line.len() / 2, line.len() - 1, line.len()] {
                l.assert_fails_at(
                    &l.flipped(i, at, 0x01),
                    i + 1,
                    &format!("byte {at} of line {} flipped", i + 1),
                );
            }
        }
    }
}

#[test]
fn deleting_any_line_fails_where_it_stood() {
    for l in ledgers() {
        for i in 0..l.lines.len() {
            let mut lines = l.lines.clone();
            lines.remove(i);
            l.assert_fails_at(&join(&lines), i + 1, &format!("line {} deleted", i + 1));
        }
    }
}

#[test]
fn duplicating_any_line_fails_at_the_copy() {
    for l in ledgers() {
        for i in 0..l.lines.len() {
            let mut lines = l.lines.clone();
            lines.insert(i + 1, l.lines[i].clone());
            l.assert_fails_at(&join(&lines), i + 2, &format!("line {} duplicated", i + 1));
        }
    }
}

#[test]
fn swapping_neighbours_or_moving_a_line_to_the_end_fails_at_the_first_displaced_line() {
    for l in ledgers() {
        let n = l.lines.len();
        for i in 0..n - 1 {
            let mut swapped = l.lines.clone();
            swapped.swap(i, i + 1);
            l.assert_fails_at(
                &join(&swapped),
                i + 1,
                &format!("lines {} and {} swapped", i + 1, i + 2),
            );
            let mut moved = l.lines.clone();
            let line = moved.remove(i);
            moved.push(line);
            l.assert_fails_at(
                &join(&moved),
                i + 1,
                &format!("line {} moved to the end", i + 1),
            );
        }
    }
}

#[test]
fn cutting_the_file_anywhere_fails_at_the_first_missing_line() {
    for l in ledgers() {
        let bytes = join(&l.lines);
        // Every line start, the bytes around it, and every 16th byte of the last 3 lines.
        let tail_start: usize = l.lines[..l.lines.len() - 3]
            .iter()
            .map(|x| x.len() + 1)
            .sum();
        let mut cuts: Vec<usize> = (tail_start..bytes.len()).step_by(16).collect();
        let mut start = 0;
        for line in &l.lines {
            cuts.extend([start, start + 1, start + line.len()]);
            start += line.len() + 1;
        }
        cuts.push(bytes.len() - 1);
        for cut in cuts {
            let complete = bytes[..cut].iter().filter(|&&b| b == b'\n').count();
            l.assert_fails_at(&bytes[..cut], complete + 1, &format!("cut at byte {cut}"));
        }
    }
}

/// Edits record `i`'s body and re-chains it and every later record (new `hash`, `prev`,
/// `sprev`) the way someone without the audit key would: the MACs stay as they were.
fn forge_from(l: &Ledger, i: usize) -> Vec<u8> {
    let mut recs: Vec<Record> = l
        .lines
        .iter()
        .map(|x| Record::parse_line(x, Some(&l.key)).unwrap())
        .collect();
    recs[i].body = serde_json::json!({"forged": true, "was": recs[i].body.clone()});
    let mut prev = if i == 0 {
        Digest::ZERO
    } else {
        recs[i - 1].hash
    };
    for j in i..recs.len() {
        let sprev = recs[..j]
            .iter()
            .rev()
            .find(|r| r.stream == recs[j].stream)
            .map_or(Digest::ZERO, |r| r.hash);
        recs[j].prev = prev;
        recs[j].sprev = sprev;
        recs[j].hash = Digest::of(&recs[j].preimage());
        prev = recs[j].hash;
    }
    recs.iter().flat_map(Record::to_line).collect()
}

#[test]
fn a_rechained_edit_without_the_key_fails_at_the_edited_record() {
    for l in ledgers() {
        let recs: Vec<Record> = l
            .lines
            .iter()
            .map(|x| Record::parse_line(x, None).unwrap())
            .collect();
        for i in 0..recs.len() {
            let forged = forge_from(l, i);
            // Every record carries a MAC (format 3): the first re-chained record fails.
            let keyed = i;
            match verify_ledger_anchored(&forged, "ledger.jsonl", Some(&l.key), None) {
                Ok(_) => panic!(
                    "{}: a forged chain from line {} verified with the key",
                    l.name,
                    i + 1
                ),
                Err(f) => {
                    assert_eq!(
                        f.line as usize,
                        keyed + 1,
                        "{}: forged from line {}: {f}",
                        l.name,
                        i + 1
                    );
                    assert!(f.reason.contains("HMAC"), "{f}");
                }
            }
            // Without the key a verifier cannot tell (the report says the tags were not checked).
            let report = verify_ledger_anchored(&forged, "ledger.jsonl", None, None)
                .expect("hashes and chains are consistent");
            assert!(!report.macs_checked);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_changed_byte_of_any_line_fails_at_that_line(
        pick in any::<prop::sample::Index>(),
        line in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        mask in 1u8..=255,
    ) {
        let l = pick.get(ledgers());
        let i = line.index(l.lines.len());
        let at = at.index(l.lines[i].len() + 1);
        l.assert_fails_at(&l.flipped(i, at, mask), i + 1, &format!("byte {at} of line {} ^ {mask:#04x}", i + 1));
    }

    #[test]
    fn moving_any_line_anywhere_fails_at_the_first_displaced_line(
        pick in any::<prop::sample::Index>(),
        from in any::<prop::sample::Index>(),
        to in any::<prop::sample::Index>(),
    ) {
        let l = pick.get(ledgers());
        let (from, to) = (from.index(l.lines.len()), to.index(l.lines.len()));
        prop_assume!(from != to);
        let mut lines = l.lines.clone();
        let line = lines.remove(from);
        lines.insert(to, line);
        l.assert_fails_at(&join(&lines), from.min(to) + 1, &format!("line {} moved to {}", from + 1, to + 1));
    }
}
