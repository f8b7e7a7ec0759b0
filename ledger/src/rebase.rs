//! Which transactions a store may seal again after a later head instead of refusing them as
//! stale, and the re-sealing itself.
//!
//! A transaction that is one `mcp.stateless_call` record alone, with `ok: true`, is a call that
//! wrote nothing and succeeded (a read). It has no precondition: its body says what the call was
//! and, with `run_id`, the run journal's head it answered from (`journal_head`), all of it read
//! from the snapshot it was served from. So after other writers moved the head, the same call is
//! placed after the new head instead of being served again; its body then gains `read_at`, the
//! position (seq) of the snapshot it was served from, so that the record still says only true
//! things wherever it stands (docs/RECORDS.md). A refusal stays compare-and-append: its `error`
//! was decided on the state before it, and its record keeps standing right after that state.
//! The file store uses this so that concurrent reads never refuse each other, and PostgreSQL,
//! whose head several instances share, to commit many such records in one round trip
//! (docs/POSTGRES.md). Every other transaction is compare-and-append.

use crate::AUDIT_STREAM;
use crate::audit::{CALL_KIND, CallAudit};
use crate::digest::Digest;
use crate::line::RecordKey;
use crate::record::{Draft, LedgerPosition, Record, seal};
use crate::store::Append;

/// The draft of `append`'s record when `append` is one call audit record alone of a call that
/// succeeded, sealed under `key` (so it may be sealed again after a later head); `None` for
/// every other append. A store never seals again what was not sealed with its own key.
pub fn lone_call_audit(append: &Append, key: &[u8]) -> Option<Draft> {
    let [rec] = append.records.as_slice() else {
        return None;
    };
    if rec.stream != AUDIT_STREAM || rec.kind != CALL_KIND || rec.txn != [1, 1] {
        return None;
    }
    if !CallAudit::read(&rec.body).ok {
        return None;
    }
    let line = rec.to_line();
    Record::from_line(&line[..line.len() - 1], Some(&RecordKey::new(key))).ok()?;
    Some(Draft::new(
        rec.stream.clone(),
        rec.kind.clone(),
        rec.body.clone(),
    ))
}

/// `append` placed after `at` instead of after its `expected`, when it is a lone call audit
/// sealed under `key` that may move there ([`lone_call_audit`], [`reseal`]); `None` otherwise.
pub fn moved(
    append: &Append,
    at: &LedgerPosition,
    stream_head: impl Fn(&str) -> Digest,
    key: &[u8],
) -> Option<Append> {
    let draft = lone_call_audit(append, key)?;
    let rec = reseal(draft, append.expected.seq, at, stream_head, key)?;
    Some(Append {
        expected: *at,
        records: vec![rec],
    })
}

/// Seals `draft` (from [`lone_call_audit`], served from the snapshot at seq `served_at`) as a
/// transaction of its own after `at`, where `stream_head` answers each stream's head. Placed
/// anywhere but right after `served_at`, its body gains `read_at: served_at`. `None` for a body
/// that names a run without its journal head or the other way round (half a claim about a run
/// is never moved).
pub fn reseal(
    mut draft: Draft,
    served_at: u64,
    at: &LedgerPosition,
    stream_head: impl Fn(&str) -> Digest,
    key: &[u8],
) -> Option<Record> {
    let audit = CallAudit::read(&draft.body);
    if audit.run_id.is_some() != audit.journal_head.is_some() || audit.read_at.is_some() {
        return None;
    }
    if at.seq != served_at
        && let Some(body) = draft.body.as_object_mut()
    {
        body.insert("read_at".into(), served_at.into());
    }
    seal(at, stream_head, vec![draft], key).pop()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const KEY: &[u8] = b"key";

    fn append_of(drafts: Vec<Draft>) -> Append {
        let at = LedgerPosition::GENESIS;
        Append {
            expected: at,
            records: seal(&at, |_| Digest::ZERO, drafts, KEY),
        }
    }

    fn call(body: Value) -> Draft {
        Draft::new(AUDIT_STREAM, CALL_KIND, body)
    }

    #[test]
    fn only_a_lone_audit_of_a_call_that_succeeded_sealed_under_the_key_may_move() {
        let key = KEY;
        let read = json!({"tool": "bernstein_status", "ok": true});
        let lone = append_of(vec![call(read.clone())]);
        assert_eq!(lone_call_audit(&lone, key).map(|d| d.body), Some(read));
        let refusal = json!({"tool": "bernstein_complete", "ok": false, "error": "not_claimer"});
        assert_eq!(lone_call_audit(&append_of(vec![call(refusal)]), key), None);
        assert_eq!(lone_call_audit(&lone, b"other"), None);
        let mut edited = lone.clone();
        edited.records[0].body = json!({"tool": "bernstein_run", "ok": true});
        assert_eq!(lone_call_audit(&edited, key), None);
        let with_write = append_of(vec![
            Draft::new("backlog", "task.created", json!({"id": "T-1"})),
            call(json!({"tool": "bernstein_run", "ok": true})),
        ]);
        assert_eq!(lone_call_audit(&with_write, key), None);
        let other_kind = append_of(vec![Draft::new(
            AUDIT_STREAM,
            "task.claim_receipt",
            json!({"ok": true}),
        )]);
        assert_eq!(lone_call_audit(&other_kind, key), None);
        let other_stream = append_of(vec![Draft::new("backlog", CALL_KIND, json!({"ok": true}))]);
        assert_eq!(lone_call_audit(&other_stream, key), None);
    }

    #[test]
    fn a_resealed_record_chains_after_the_new_head_and_names_where_it_was_served() {
        let at = LedgerPosition {
            seq: 41,
            head: Digest::of(b"head"),
        };
        let audit_head = Digest::of(b"audit head");
        let heads = |s: &str| {
            if s == AUDIT_STREAM {
                audit_head
            } else {
                Digest::ZERO
            }
        };
        let body = json!({"tool": "bernstein_status", "ok": true});
        let rec = reseal(call(body.clone()), 39, &at, heads, KEY).unwrap();
        assert_eq!((rec.seq, rec.prev, rec.sprev), (42, at.head, audit_head));
        let mut served = body.clone();
        served["read_at"] = json!(39);
        assert_eq!((rec.txn, &rec.body), ([1, 1], &served));
        let line = rec.to_line();
        assert_eq!(
            Record::parse_line(&line[..line.len() - 1], Some(KEY)),
            Ok(rec)
        );
        // Placed right after the snapshot it was served from, the body is the one served.
        let here = reseal(call(body.clone()), 41, &at, heads, KEY).unwrap();
        assert_eq!(here.body, body);
    }

    #[test]
    fn a_read_of_a_run_moves_even_when_its_journal_moved_and_keeps_the_head_it_read() {
        let journal = Digest::of(b"journal");
        let body = json!({"tool": "bernstein_run_status", "run_id": "T-1",
                          "journal_head": journal.to_string()});
        let moved_journal = |s: &str| match s {
            "run:T-1" => Digest::of(b"later"),
            _ => Digest::ZERO,
        };
        let at = LedgerPosition {
            seq: 9,
            head: Digest::of(b"nine"),
        };
        let rec = reseal(call(body.clone()), 7, &at, moved_journal, KEY).unwrap();
        assert_eq!(rec.body["journal_head"], json!(journal.to_string()));
        assert_eq!(rec.body["read_at"], json!(7));
        // Half a claim about a run is never moved, nor a body that already names a snapshot.
        let half = json!({"tool": "x", "run_id": "T-1"});
        assert!(reseal(call(half), 7, &at, moved_journal, KEY).is_none());
        let twice = json!({"tool": "x", "ok": true, "read_at": 3});
        assert!(reseal(call(twice), 7, &at, moved_journal, KEY).is_none());
    }
}
