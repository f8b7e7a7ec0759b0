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
//!
//! A transaction that names the streams its decision read ([`Append::read_heads`]) is placed
//! after a later head when each of them still stands where it was there ([`replaced`]): what it
//! decided is what it would decide again, so it is sealed again after that head, its audit
//! record gaining `read_at` the same way. Every other transaction is compare-and-append.
//!
//! The file store uses this under its lock, and PostgreSQL, whose head several instances share,
//! in its commits (docs/POSTGRES.md): concurrent reads never refuse each other, and a write is
//! refused only when what it read moved.

use serde_json::Value;

use crate::audit::{CALL_KIND, CallAudit};
use crate::digest::Digest;
use crate::line::RecordKey;
use crate::record::{Draft, LedgerPosition, Record, seal};
use crate::store::Append;
use crate::{AUDIT_STREAM, run_stream};

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
    sealed_under(rec, key)?;
    Some(Draft::new(
        rec.stream.clone(),
        rec.kind.clone(),
        rec.body.clone(),
    ))
}

/// `append` placed after `at` instead of after its `expected`, when it is a lone call audit
/// sealed under `key` that may move there ([`lone_call_audit`], [`reseal`]) or names the
/// streams it read and they stand where they were ([`replaced`]); `None` otherwise.
pub fn moved(
    append: &Append,
    at: &LedgerPosition,
    stream_head: impl Fn(&str) -> Digest,
    key: &[u8],
) -> Option<Append> {
    let records = match lone_call_audit(append, key) {
        Some(draft) => vec![reseal(draft, append.expected.seq, at, stream_head, key)?],
        None => replaced(append, at, stream_head, key)?,
    };
    Some(Append {
        expected: *at,
        records,
        read_heads: append.read_heads.clone(),
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

/// `append`'s records sealed again after `at`, when `append` names the streams it read
/// ([`Append::read_heads`]), each of them has the head named there, every stream the records
/// write but `audit` is among them, and every record is sealed under `key`; `None` otherwise.
/// The transaction's call audit record (its last record, when it is one) keeps saying true
/// things: placed anywhere but right after the snapshot it was served from (`expected`), it
/// gains `read_at`; for a run whose journal the transaction writes, its `journal_head` is the
/// journal's new head.
pub fn replaced(
    append: &Append,
    at: &LedgerPosition,
    stream_head: impl Fn(&str) -> Digest,
    key: &[u8],
) -> Option<Vec<Record>> {
    if !reads_stand(append, &stream_head) {
        return None;
    }
    let read = append.read_heads.as_deref()?;
    let was_read = |stream: &str| read.iter().any(|(s, _)| s == stream);
    let mut drafts = Vec::with_capacity(append.records.len());
    for rec in &append.records {
        if rec.stream != AUDIT_STREAM && !was_read(&rec.stream) {
            return None;
        }
        sealed_under(rec, key)?;
        drafts.push(Draft::new(
            rec.stream.clone(),
            rec.kind.clone(),
            rec.body.clone(),
        ));
    }
    let served_at = append.expected.seq;
    let mut sealed = seal(at, stream_head, drafts, key);
    let Some(last) = sealed.last() else {
        return Some(sealed);
    };
    if last.stream != AUDIT_STREAM || last.kind != CALL_KIND {
        return Some(sealed);
    }
    let mut body = last.body.clone();
    let audit = CallAudit::read(&last.body);
    if audit.read_at.is_some() {
        return None;
    }
    let journal = audit.run_id.as_deref().map(run_stream);
    let journal_head = journal
        .and_then(|stream| sealed.iter().rev().find(|r| r.stream == stream))
        .map(|r| r.hash.to_string());
    let fields = body.as_object_mut()?;
    if let Some(head) = journal_head {
        fields.insert("journal_head".into(), Value::String(head));
    }
    if at.seq != served_at {
        fields.insert("read_at".into(), served_at.into());
    }
    sealed.last_mut()?.reseal(body, key);
    Some(sealed)
}

/// Whether `append` names the streams it read and each of them has, where `stream_head` says,
/// the head it read: a store whose newer state says no refuses it without reading further
/// (a stream's head never comes back).
pub fn reads_stand(append: &Append, stream_head: impl Fn(&str) -> Digest) -> bool {
    append.read_heads.as_deref().is_some_and(|read| {
        read.iter()
            .all(|(stream, head)| stream_head(stream) == *head)
    })
}

/// `Some(())` when `rec` reads back as a valid record sealed under `key`.
fn sealed_under(rec: &Record, key: &[u8]) -> Option<()> {
    let line = rec.to_line();
    Record::from_line(&line[..line.len() - 1], Some(&RecordKey::new(key)))
        .ok()
        .map(drop)
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
            read_heads: None,
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
        let at = position(41, b"head");
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
        let at = position(9, b"nine");
        let rec = reseal(call(body.clone()), 7, &at, moved_journal, KEY).unwrap();
        assert_eq!(rec.body["journal_head"], json!(journal.to_string()));
        assert_eq!(rec.body["read_at"], json!(7));
        // Half a claim about a run is never moved, nor a body that already names a snapshot.
        let half = json!({"tool": "x", "run_id": "T-1"});
        assert!(reseal(call(half), 7, &at, moved_journal, KEY).is_none());
        let twice = json!({"tool": "x", "ok": true, "read_at": 3});
        assert!(reseal(call(twice), 7, &at, moved_journal, KEY).is_none());
    }

    fn position(seq: u64, head: &[u8]) -> LedgerPosition {
        LedgerPosition {
            seq,
            head: Digest::of(head),
        }
    }

    /// Stream heads where the backlog's and the audit stream's are these and no other exists.
    fn heads(backlog: Digest, audit: Digest) -> impl Fn(&str) -> Digest + Copy {
        move |s| match s {
            "backlog" => backlog,
            "audit" => audit,
            _ => Digest::ZERO,
        }
    }

    /// A run journal's write decided at seq 5 (backlog and journal read), then read calls of
    /// others moved the head to seq 9 and the audit stream with it.
    fn a_write_decided_at_five() -> (Append, Digest) {
        let served = position(5, b"five");
        let backlog = Digest::of(b"backlog");
        let before = heads(backlog, Digest::of(b"audit at five"));
        let drafts = vec![
            Draft::new("backlog", "task.created", json!({"id": "T-1"})),
            Draft::new("run:T-1", "run.created", json!({"run_id": "T-1"})),
            call(json!({"tool": "bernstein_run", "ok": true, "run_id": "T-1",
                        "journal_head": "placeholder"})),
        ];
        let append = Append {
            expected: served,
            records: seal(&served, before, drafts, KEY),
            read_heads: Some(vec![
                ("backlog".into(), backlog),
                ("run:T-1".into(), Digest::ZERO),
            ]),
        };
        (append, backlog)
    }

    #[test]
    fn a_write_whose_streams_stand_is_sealed_again_after_the_later_head() {
        let (append, backlog) = a_write_decided_at_five();
        let at = position(9, b"nine");
        let audit_head = Digest::of(b"audit at nine");
        let now = heads(backlog, audit_head);
        let placed = moved(&append, &at, now, KEY).expect("nothing it read moved");
        assert_eq!(placed.expected, at);
        let r = &placed.records;
        assert_eq!(r.iter().map(|r| r.seq).collect::<Vec<_>>(), [10, 11, 12]);
        assert_eq!((r[0].prev, r[0].sprev), (at.head, backlog));
        assert_eq!((r[2].prev, r[2].sprev), (r[1].hash, audit_head));
        assert_eq!(r[2].body["journal_head"], json!(r[1].hash.to_string()));
        assert_eq!(r[2].body["read_at"], json!(5));
        for (i, rec) in r.iter().enumerate() {
            assert_eq!(rec.txn, [i as u32 + 1, 3]);
            assert_eq!(
                (&rec.stream, &rec.kind),
                (&append.records[i].stream, &append.records[i].kind)
            );
            let line = rec.to_line();
            assert_eq!(
                Record::parse_line(&line[..line.len() - 1], Some(KEY)),
                Ok(rec.clone())
            );
        }
    }

    #[test]
    fn a_write_is_refused_when_what_it_read_moved_or_it_names_too_little() {
        let (append, backlog) = a_write_decided_at_five();
        let at = position(9, b"nine");
        let moved_backlog = heads(Digest::of(b"another write"), Digest::ZERO);
        assert_eq!(moved(&append, &at, moved_backlog, KEY), None);
        let run_made_meanwhile = |s: &str| match s {
            "backlog" => backlog,
            "run:T-1" => Digest::of(b"same id, made first"),
            _ => Digest::ZERO,
        };
        assert_eq!(moved(&append, &at, run_made_meanwhile, KEY), None);
        let same = heads(backlog, Digest::ZERO);
        // A stream it writes but did not name, a record sealed under another key, or no
        // streams named at all (decided on the whole ledger): never moved.
        let mut unnamed = append.clone();
        unnamed.read_heads = Some(vec![("backlog".into(), backlog)]);
        assert_eq!(moved(&unnamed, &at, same, KEY), None);
        assert_eq!(moved(&append, &at, same, b"other key"), None);
        let mut whole = append.clone();
        whole.read_heads = None;
        assert_eq!(moved(&whole, &at, same, KEY), None);
        assert!(moved(&append, &at, same, KEY).is_some());
    }
}
