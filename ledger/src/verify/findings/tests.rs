//! Tests of the all-findings verifier: one finding per separate damage (edits, deletions,
//! insertions, moves, cuts, forged records), what each affects, and, over generated ledgers,
//! that its first finding is the streaming verifier's failure.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::Draft;
use crate::verify::tests::{build_under, join, lines};
use crate::verify::{verify_ledger, verify_ledger_anchored};

const KEY: &[u8] = b"findings-test-key";

fn build(txns: Vec<Vec<Draft>>) -> Vec<Record> {
    build_under(KEY, txns)
}

fn head_of(recs: &[Record]) -> LedgerPosition {
    recs.last()
        .map_or(LedgerPosition::GENESIS, |r| LedgerPosition {
            seq: r.seq,
            head: r.hash,
        })
}

/// A run of `n` tasks, each created in its own transaction (backlog, run journal, audit), then a
/// claim with its receipt: 3 records per task, then 2.
fn project(n: usize) -> Vec<Record> {
    let run = "T-0000000000000001";
    let mut txns = Vec::new();
    for i in 1..=n {
        let task = format!("T-{i:016x}");
        txns.push(vec![
            Draft::new(
                "backlog",
                "task.created",
                json!({"task_id": task, "run_id": run, "goal": format!("goal {i}")}),
            ),
            Draft::new(
                format!("run:{run}"),
                "run.task_added",
                json!({"task_id": task, "run_id": run}),
            ),
            Draft::new(
                "audit",
                "mcp.stateless_call",
                json!({"tool": "bernstein_run", "call_id": format!("c{i}"), "ok": true, "run_id": run}),
            ),
        ]);
    }
    txns.push(vec![
        Draft::new(
            "audit",
            "task.claim_receipt",
            json!({"task_id": "T-0000000000000002", "run_id": run, "granted": true, "receipt_hash": "sha256:r1"}),
        ),
        Draft::new(
            "audit",
            "mcp.stateless_call",
            json!({"tool": "bernstein_claim", "call_id": "claim", "ok": true}),
        ),
    ]);
    build(txns)
}

/// `line` with `from` replaced by `to` (once), the hash left as it was.
fn edit(line: &[u8], from: &str, to: &str) -> Vec<u8> {
    let text = String::from_utf8(line.to_vec()).unwrap();
    assert!(text.contains(from), "{text} holds no {from}");
    text.replacen(from, to, 1).into_bytes()
}

fn kinds(r: &FindingsReport) -> Vec<(u64, u64, FindingKind)> {
    r.findings.iter().map(|f| (f.line, f.seq, f.kind)).collect()
}

#[test]
fn a_clean_ledger_has_no_findings_and_the_same_tallies() {
    let recs = project(4);
    let bytes = join(&lines(&recs));
    let r = find_all(&bytes, "l", Some(KEY), Some(head_of(&recs)));
    assert!(r.is_clean(), "{:?}", r.findings);
    assert_eq!(r.from_seq, None);
    let mut want = verify_ledger_anchored(&bytes, "l", Some(KEY), Some(head_of(&recs))).unwrap();
    want.calls.clear();
    assert_eq!(r.tally, want);
}

#[test]
fn two_separate_edits_are_two_findings_with_what_they_affect() {
    let recs = project(5);
    let mut all = lines(&recs);
    // The goal of task 2 (line 4) and of task 5 (line 13), the hashes left as they were.
    all[3] = edit(&all[3], "goal 2", "goal X");
    all[12] = edit(&all[12], "goal 5", "goal Y");
    let bytes = join(&all);
    let first = verify_ledger(&bytes, "l", Some(KEY)).unwrap_err();
    let r = find_all(&bytes, "l", Some(KEY), Some(head_of(&recs)));
    assert_eq!(
        kinds(&r),
        vec![
            (4, 4, FindingKind::HashMismatch),
            (13, 13, FindingKind::HashMismatch)
        ]
    );
    assert_eq!(r.findings[0].reason, first.reason);
    let f = &r.findings[0];
    assert!(f.notes.is_empty(), "{:?}", f.notes);
    assert_eq!(f.record.as_ref().unwrap().kind, "task.created");
    // The line and the rest of its transaction (journal, audit record) name the run and task.
    assert!(f.affected.runs.contains("T-0000000000000001"));
    assert!(f.affected.tasks.contains("T-0000000000000002"));
    assert_eq!(f.claim_receipts_since, 1);
    assert_eq!(r.from_seq, Some(4));
    assert_eq!(r.claim_receipts_since, 1);
    assert!(r.affected.tasks.contains("T-0000000000000005"));
    assert_eq!(r.counts[&FindingKind::HashMismatch], 2);
    // Witnesses are checked against the records whose seal verified only.
    assert_eq!(r.tally.head, head_of(&recs));
}

#[test]
fn a_deleted_line_is_one_finding_and_its_stream_follows_on() {
    let recs = project(4);
    let mut all = lines(&recs);
    all.remove(4); // task 2's run.task_added: the journal's next record names it in sprev.
    let bytes = join(&all);
    let first = verify_ledger(&bytes, "l", Some(KEY)).unwrap_err();
    let r = find_all(&bytes, "l", Some(KEY), Some(head_of(&recs)));
    assert_eq!(
        kinds(&r),
        vec![(5, 5, FindingKind::MissingRecords)],
        "{r:#?}"
    );
    assert_eq!(r.findings[0].reason, first.reason);
    let notes = r.findings[0].notes.join("\n");
    assert!(
        notes.contains("continues stream \"run:T-0000000000000001\""),
        "{notes}"
    );
    assert!(
        r.findings[0]
            .also
            .iter()
            .any(|p| p.kind == FindingKind::Framing)
    );
}

#[test]
fn a_duplicated_line_is_one_finding() {
    let recs = project(3);
    let mut all = lines(&recs);
    all.insert(4, all[3].clone());
    let r = find_all(&join(&all), "l", Some(KEY), Some(head_of(&recs)));
    assert_eq!(kinds(&r), vec![(5, 5, FindingKind::OutOfPlace)], "{r:#?}");
}

#[test]
fn swapped_and_moved_lines_are_one_finding() {
    let recs = project(4);
    let mut all = lines(&recs);
    all.swap(4, 5);
    let r = find_all(&join(&all), "l", Some(KEY), Some(head_of(&recs)));
    assert_eq!(
        kinds(&r),
        vec![(5, 5, FindingKind::MissingRecords)],
        "{r:#?}"
    );
    let mut all = lines(&recs);
    let moved = all.remove(2);
    all.insert(8, moved);
    let r = find_all(&join(&all), "l", Some(KEY), Some(head_of(&recs)));
    assert_eq!(
        kinds(&r),
        vec![(3, 3, FindingKind::MissingRecords)],
        "{r:#?}"
    );
}

/// A record made without the key (hash recomputed, no tag), inserted: the chain goes on from
/// the record before it, and nothing else is reported.
#[test]
fn an_inserted_keyless_record_is_one_finding_named_as_inserted() {
    let recs = project(3);
    // At the place of record 5, which stays as it was (after it).
    let mut forged = recs[4].clone();
    forged.kind = "task.created".into();
    forged.stream = "backlog".into();
    forged.body =
        json!({"task_id": "T-00000000000000ff", "run_id": "T-0000000000000001", "goal": "mallory"});
    forged.hash = Digest::of(&forged.preimage());
    forged.mac = None;
    let mut all = lines(&recs);
    all.insert(4, forged.to_line());
    let r = find_all(&join(&all), "l", Some(KEY), Some(head_of(&recs)));
    assert_eq!(kinds(&r), vec![(5, 5, FindingKind::MissingTag)], "{r:#?}");
    assert!(r.findings[0].notes[0].contains("was inserted"), "{r:#?}");
    assert!(r.findings[0].affected.tasks.contains("T-00000000000000ff"));
}

/// A record rewritten without the key (hash recomputed, tag made up): the next record still
/// names the original hash, which the finding gives; its stream's later records follow on.
#[test]
fn a_replaced_record_is_one_finding_naming_the_original_hash() {
    let recs = project(4);
    let mut forged = recs[3].clone();
    forged.body =
        json!({"task_id": "T-0000000000000002", "run_id": "T-0000000000000001", "goal": "other"});
    forged.hash = Digest::of(&forged.preimage());
    forged.mac = Some(crate::digest::hmac_tag(b"guess", &forged.preimage()));
    let mut all = lines(&recs);
    all[3] = forged.to_line();
    let r = find_all(&join(&all), "l", Some(KEY), Some(head_of(&recs)));
    assert_eq!(kinds(&r), vec![(4, 4, FindingKind::BadTag)], "{r:#?}");
    let notes = r.findings[0].notes.join("\n");
    assert!(notes.contains(&recs[3].hash.to_string()), "{notes}");
    assert!(notes.contains("replaced"), "{notes}");
}

#[test]
fn a_cut_last_line_is_one_truncated_finding() {
    let recs = project(3);
    let bytes = join(&lines(&recs));
    let cut = &bytes[..bytes.len() - 20];
    let first = verify_ledger(cut, "l", Some(KEY)).unwrap_err();
    let r = find_all(cut, "l", Some(KEY), Some(head_of(&recs)));
    assert_eq!(kinds(&r), vec![(11, 11, FindingKind::Truncated)], "{r:#?}");
    assert_eq!(r.findings[0].reason, first.reason);
    // The end of the ledger: the open transaction and the store's checkpoint are named too.
    assert_eq!(r.findings[0].also.len(), 2, "{r:#?}");
    assert!(r.findings[0].notes[0].contains("cut short"));
    assert!(r.findings[0].affected.claim_receipts.contains("sha256:r1"));
}

#[test]
fn an_unparsable_line_is_one_finding() {
    let recs = project(3);
    let mut all = lines(&recs);
    all[4] = b"garbage\n".to_vec();
    let r = find_all(&join(&all), "l", Some(KEY), None);
    assert_eq!(kinds(&r), vec![(5, 5, FindingKind::Unparsable)], "{r:#?}");
    let note = &r.findings[0].notes[0];
    assert!(note.contains(&recs[4].hash.to_string()), "{note}");
    assert!(note.contains("the record this line held (seq 5)"), "{note}");
    // Two lines merged into one (a newline lost): still one finding.
    let mut all = lines(&recs);
    all[4].pop();
    let r = find_all(&join(&all), "l", Some(KEY), None);
    assert_eq!(kinds(&r), vec![(5, 5, FindingKind::Unparsable)], "{r:#?}");
}

#[test]
fn a_foreign_key_is_one_key_mismatch() {
    let recs = project(3);
    let mut all = lines(&recs);
    all.remove(5);
    let r = find_all(&join(&all), "l", Some(b"another key"), None);
    // Every tag fails: one key mismatch, and the deletion still stands out on its own.
    assert_eq!(
        kinds(&r),
        vec![
            (1, 1, FindingKind::KeyMismatch),
            (6, 6, FindingKind::MissingRecords)
        ],
        "{r:#?}"
    );
    assert_eq!(r.findings[0].reason, crate::verify::KEY_MISMATCH);
    // A forged first record under the right key is a bad tag, not a mismatch.
    let mut all = lines(&recs);
    let mut forged = recs[0].clone();
    forged.mac = Some(crate::digest::hmac_tag(b"guess", &forged.preimage()));
    all[0] = forged.to_line();
    let r = find_all(&join(&all), "l", Some(KEY), None);
    assert_eq!(kinds(&r), vec![(1, 1, FindingKind::BadTag)], "{r:#?}");
}

#[test]
fn findings_are_capped_and_counted() {
    let recs = build(
        (0..MAX_FINDINGS + 5)
            .map(|_| vec![Draft::new("a", "k", json!({}))])
            .collect(),
    );
    let all: Vec<Vec<u8>> = lines(&recs)
        .iter()
        .map(|l| edit(l, "\"kind\":\"k\"", "\"kind\":\"x\""))
        .collect();
    let r = find_all(&join(&all), "l", Some(KEY), None);
    assert_eq!(r.findings.len(), MAX_FINDINGS);
    assert_eq!(r.unlisted, 5);
    assert_eq!(r.total(), MAX_FINDINGS as u64 + 5);
}

#[test]
fn the_json_form_names_kinds_in_snake_case() {
    let recs = project(2);
    let mut all = lines(&recs);
    all[1] = edit(&all[1], "run.task_added", "run.task_gone");
    let r = find_all(&join(&all), "l", Some(KEY), None);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["findings"][0]["kind"], "hash_mismatch");
    assert_eq!(v["counts"]["hash_mismatch"], 1);
    assert!(v.get("tally").is_none());
    for k in [
        FindingKind::Unparsable,
        FindingKind::MissingRecords,
        FindingKind::CheckpointMismatch,
    ] {
        assert_eq!(serde_json::to_value(k).unwrap(), k.name());
    }
}

// ---- properties over generated ledgers ----

fn arb_draft() -> impl Strategy<Value = Draft> {
    let stream = prop_oneof![
        Just("backlog".to_string()),
        Just("audit".to_string()),
        Just("run:R-1".to_string()),
        Just("run:R-2".to_string()),
        Just("mailbox:T-1".to_string()),
    ];
    (stream, "[a-z.]{1,12}", "[ -~é\"\\\\]{0,16}", any::<i64>()).prop_map(|(s, kind, text, n)| {
        Draft::new(s, kind, json!({"text": text, "n": n, "task_id": "T-1"}))
    })
}

fn arb_ledger() -> impl Strategy<Value = Vec<Record>> {
    prop::collection::vec(prop::collection::vec(arb_draft(), 1..4), 2..8).prop_map(build)
}

/// A byte of a line (its `\n` excluded) and a mask that does not make it a `\n`.
fn arb_flip(len: usize) -> impl Strategy<Value = (usize, u8)> {
    (0..len - 1, 1u8..=255)
}

/// Edits line `i` of `all` at byte `at` with `mask`, unless that would make a `\n`.
fn flip(all: &mut [Vec<u8>], i: usize, at: usize, mask: u8) -> bool {
    let b = all[i][at] ^ mask;
    if b == b'\n' {
        return false;
    }
    all[i][at] = b;
    true
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever happened to the ledger (a flipped or inserted byte, a cut, a removed,
    /// duplicated or moved line), the first finding is the streaming verifier's failure, in
    /// its words; a ledger it accepts has no finding. Nothing panics.
    #[test]
    fn the_first_finding_is_the_first_failure(
        recs in arb_ledger(),
        edit in 0..7u8,
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
        mask in 1u8..=255,
        anchored in any::<bool>(),
    ) {
        let mut all = lines(&recs);
        let i = a.index(all.len());
        let at = b.index(all[i].len());
        match edit {
            0 => all[i][at] ^= mask,
            1 => all[i].insert(at, mask),
            2 => all[i].truncate(at),
            3 => { all.remove(i); }
            4 => { let l = all[i].clone(); all.insert(i, l); }
            5 => { let l = all.remove(i); let j = b.index(all.len() + 1); all.insert(j, l); }
            _ => {}
        }
        let bytes = join(&all);
        let anchor = anchored.then(|| head_of(&recs));
        let r = find_all(&bytes, "l", Some(KEY), anchor);
        match verify_ledger_anchored(&bytes, "l", Some(KEY), anchor) {
            Ok(_) => prop_assert!(r.is_clean(), "{:#?}", r.findings),
            Err(f) => {
                let first = &r.findings[0];
                prop_assert_eq!((first.line, first.seq, &first.reason), (f.line, f.seq, &f.reason));
            }
        }
    }

    /// One flipped byte of a line is one finding, at that line, whatever the byte was.
    #[test]
    fn a_flipped_byte_is_one_finding(
        recs in arb_ledger(),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
        mask in 1u8..=255,
    ) {
        let mut all = lines(&recs);
        let i = a.index(all.len());
        let at = b.index(all[i].len() - 1);
        prop_assume!(flip(&mut all, i, at, mask));
        let r = find_all(&join(&all), "l", Some(KEY), Some(head_of(&recs)));
        let at_lines: Vec<u64> = r.findings.iter().map(|f| f.line).collect();
        prop_assert_eq!(at_lines, vec![i as u64 + 1], "{:#?}", r.findings);
    }

    /// Two flipped bytes in lines that are not next to each other are two findings, at those
    /// lines.
    #[test]
    fn two_separate_flips_are_two_findings(
        recs in arb_ledger(),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
        flips in (arb_flip(300), arb_flip(300)),
    ) {
        let mut all = lines(&recs);
        let n = all.len();
        prop_assume!(n >= 3);
        let i = a.index(n - 2);
        let j = i + 2 + b.index(n - i - 2);
        let ((x, mx), (y, my)) = flips;
        let (x, y) = (x % (all[i].len() - 1), y % (all[j].len() - 1));
        prop_assume!(flip(&mut all, i, x, mx) && flip(&mut all, j, y, my));
        let r = find_all(&join(&all), "l", Some(KEY), Some(head_of(&recs)));
        let at_lines: Vec<u64> = r.findings.iter().map(|f| f.line).collect();
        prop_assert_eq!(at_lines, vec![i as u64 + 1, j as u64 + 1], "{:#?}", r.findings);
    }

    /// A removed line (not the last) is one finding where it stood.
    #[test]
    fn a_removed_line_is_one_finding(recs in arb_ledger(), a in any::<prop::sample::Index>()) {
        let mut all = lines(&recs);
        let i = a.index(all.len() - 1);
        all.remove(i);
        let r = find_all(&join(&all), "l", Some(KEY), Some(head_of(&recs)));
        let at_lines: Vec<u64> = r.findings.iter().map(|f| f.line).collect();
        prop_assert_eq!(at_lines, vec![i as u64 + 1], "{:#?}", r.findings);
    }

    /// Arbitrary bytes never panic the verifier.
    #[test]
    fn arbitrary_bytes_do_not_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = find_all(&bytes, "l", Some(KEY), None);
        let _ = find_all(&bytes, "l", None, Some(LedgerPosition { seq: 3, head: Digest::ZERO }));
    }
}
