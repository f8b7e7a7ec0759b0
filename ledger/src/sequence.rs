//! Where an append goes when a store places it after the head it finds: where it was decided
//! when that is still the end, else moved there by the [`rebase`](crate::rebase) rules (a read,
//! or a write whose named reads stand), else nowhere (refused). The file store, PostgreSQL and
//! the simulation place through this one rule.

use std::borrow::Cow;

use crate::digest::Digest;
use crate::record::LedgerPosition;
use crate::store::Append;

/// Where `append` goes after `at` (whose stream heads `stream_head` answers; records sealed
/// under `key`): borrowed when it goes where it was decided, moved after `at`, or `None` when
/// it must be refused.
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
    fn an_append_stays_where_decided_moves_when_it_may_or_is_refused() {
        let at = LedgerPosition::GENESIS;
        let empty = |_: &str| Digest::ZERO;
        let write = write_at(at, "backlog", Digest::ZERO);
        assert!(matches!(place_one(&write, at, empty, KEY), Some(Cow::Borrowed(a)) if a == &write));
        // Another write moved the head and the backlog: a read moves after it, naming where it
        // was served; a write that read the backlog is refused; one of another stream moves.
        let end = write.new_position();
        let heads = |s: &str| match s {
            "backlog" => write.records[0].hash,
            AUDIT_STREAM => write.records[1].hash,
            _ => Digest::ZERO,
        };
        let served = read_at(at, empty);
        let read = place_one(&served, end, heads, KEY).expect("a read moves");
        let rec = &read.records[0];
        assert_eq!(
            (rec.seq, rec.prev, rec.body["read_at"].clone()),
            (3, end.head, json!(0))
        );
        assert!(place_one(&write_at(at, "backlog", Digest::ZERO), end, heads, KEY).is_none());
        let other = write_at(at, "run:T-2", Digest::ZERO);
        let placed = place_one(&other, end, heads, KEY).expect("its stream stands");
        let mut records = write.records.clone();
        records.extend(placed.records.iter().cloned());
        let snapshot = crate::Snapshot::<()>::genesis();
        assert_eq!(check_extends(&snapshot, &records), Ok(()));
        // Decided on the whole ledger at a head that moved: refused.
        let whole = Append {
            read_heads: None,
            ..write_at(at, "run:T-3", Digest::ZERO)
        };
        assert!(place_one(&whole, end, heads, KEY).is_none());
    }
}
