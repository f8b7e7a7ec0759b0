//! Placing a batch of appends, as one sequencer does: each in turn after the ledger's end as
//! the batch leaves it, where it was decided when that is still the end, else moved there by the
//! [`rebase`](crate::rebase) rules, else refused (what it read moved, or it may not move).
//!
//! A store writes the placed transactions together (one write, one database transaction) and
//! answers each append with its own placement or refusal; a failed write fails them all.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::digest::Digest;
use crate::record::LedgerPosition;
use crate::store::Append;

/// Where each of `appends` goes, in order, after `at` (whose stream heads `stream_head`
/// answers), records sealed under `key`: `Some` placed append (its `expected` is where it goes;
/// borrowed when it goes where it was decided) or `None` when it must be refused. The placed
/// ones chain one after another from `at`.
pub fn place<'a>(
    appends: impl IntoIterator<Item = &'a Append>,
    at: LedgerPosition,
    stream_head: impl Fn(&str) -> Digest,
    key: &[u8],
) -> Vec<Option<Cow<'a, Append>>> {
    let mut end = at;
    // Heads this batch moved, over the stored ones.
    let mut moved: HashMap<String, Digest> = HashMap::new();
    let mut placed = Vec::new();
    for append in appends {
        let head = |s: &str| moved.get(s).copied().unwrap_or_else(|| stream_head(s));
        let here = place_one(append, end, head, key);
        if let Some(p) = &here {
            for rec in &p.records {
                moved.insert(rec.stream.clone(), rec.hash);
            }
            end = p.new_position();
        }
        placed.push(here);
    }
    placed
}

/// [`place`] for one append: where it goes after `at`, or `None` when it must be refused.
pub fn place_one<'a>(
    append: &'a Append,
    at: LedgerPosition,
    stream_head: impl Fn(&str) -> Digest,
    key: &[u8],
) -> Option<Cow<'a, Append>> {
    if append.expected == at {
        Some(Cow::Borrowed(append))
    } else {
        crate::rebase::moved(append, &at, stream_head, key).map(Cow::Owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AUDIT_STREAM;
    use crate::audit::CALL_KIND;
    use crate::record::{Draft, seal};
    use crate::verify::check_extends;
    use serde_json::json;

    const KEY: &[u8] = b"key";

    fn read_at(at: LedgerPosition, heads: impl Fn(&str) -> Digest) -> Append {
        let body = json!({"tool": "bernstein_status", "ok": true});
        Append {
            expected: at,
            records: seal(
                &at,
                heads,
                vec![Draft::new(AUDIT_STREAM, CALL_KIND, body)],
                KEY,
            ),
            read_heads: None,
        }
    }

    /// A write of `stream` decided at `at`, naming `stream` as read at `read`.
    fn write_at(at: LedgerPosition, stream: &str, read: Digest) -> Append {
        let drafts = vec![
            Draft::new(stream, "task.created", json!({"id": stream})),
            Draft::new(AUDIT_STREAM, CALL_KIND, json!({"tool": "w", "ok": true})),
        ];
        Append {
            expected: at,
            records: seal(&at, |_| Digest::ZERO, drafts, KEY),
            read_heads: Some(vec![(stream.into(), read)]),
        }
    }

    #[test]
    fn a_batch_decided_on_one_snapshot_chains_and_refuses_only_a_moved_read() {
        let at = LedgerPosition::GENESIS;
        let empty = |_: &str| Digest::ZERO;
        let batch = [
            write_at(at, "backlog", Digest::ZERO),
            read_at(at, empty),
            // Read the backlog the first write moves: refused.
            write_at(at, "backlog", Digest::ZERO),
            write_at(at, "run:T-2", Digest::ZERO),
            // Decided on the whole ledger at `at`, which the batch left behind: refused.
            Append {
                read_heads: None,
                ..write_at(at, "run:T-3", Digest::ZERO)
            },
        ];
        let placed = place(&batch, at, empty, KEY);
        let kept: Vec<bool> = placed.iter().map(Option::is_some).collect();
        assert_eq!(kept, [true, true, false, true, false]);
        // The first goes where it was decided, unchanged; the others chain after it.
        assert!(matches!(placed[0], Some(Cow::Borrowed(a)) if a == &batch[0]));
        let records: Vec<_> = placed
            .iter()
            .flatten()
            .flat_map(|a| a.records.clone())
            .collect();
        let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, (1..=5).collect::<Vec<_>>());
        let snapshot = crate::Snapshot::<()>::genesis();
        assert_eq!(check_extends(&snapshot, &records), Ok(()));
        assert_eq!(
            placed[1].as_ref().unwrap().records[0].body["read_at"],
            json!(0)
        );
    }
}
