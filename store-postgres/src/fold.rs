//! Folding ledger rows read from PostgreSQL into a snapshot.
//!
//! Every row's `line` is parsed and checked as the file store checks its lines (canonical form,
//! hash, MAC under the audit key); the row's `seq` and `hash` columns must match the record;
//! records are applied only as whole transactions after [`check_extends`] accepted them, with
//! the same chain and framing rules as `bernstein audit verify`. A row that fails is
//! corruption, reported with its seq, and nothing after it is folded.

use std::sync::Arc;

use bernstein_ledger::line::RecordKey;
use bernstein_ledger::verify::check_extends;
use bernstein_ledger::{Fold, LedgerPosition, Record, RecordError, Snapshot, StoreError};

/// Name used for the ledger table in corruption reports (in place of a file name).
pub const TABLE_NAME: &str = "postgres:bernstein_ledger";

/// One row as read: its `seq` column, `hash` column and `line` bytes.
#[derive(Debug)]
pub struct Row {
    pub seq: i64,
    pub hash: Vec<u8>,
    pub line: Vec<u8>,
}

impl Row {
    /// A row of `SELECT seq, hash, line FROM bernstein_ledger …`.
    pub fn of(r: &postgres::Row) -> Row {
        Row {
            seq: r.get(0),
            hash: r.get(1),
            line: r.get(2),
        }
    }
}

pub fn corrupt(seq: u64, reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        file: TABLE_NAME.to_string(),
        line: seq,
        seq,
        reason: reason.into(),
    }
}

/// Why a row with a format-2 tag is refused, and how the database is upgraded (docs/POSTGRES.md).
const FORMAT_2: &str = "HMAC tag is a format-2 tag (over the pre-image, not the hash): this ledger was written before format 3. Upgrade it through the file format: `bernstein ledger export` from a directory without the audit key, `bernstein ledger upgrade --dir` on the export (with the key copied into it), then `bernstein ledger import` into an empty database (docs/POSTGRES.md)";

/// Parses and checks one row.
pub fn parse_row(row: &Row, key: &RecordKey) -> Result<Record, StoreError> {
    let seq = u64::try_from(row.seq).map_err(|_| corrupt(0, "negative seq"))?;
    let rec = match Record::from_line(&row.line, Some(key)) {
        Ok(rec) => rec,
        Err(RecordError::BadMac) if seq == 1 => {
            return Err(StoreError::KeyMismatch {
                file: TABLE_NAME.to_string(),
            });
        }
        Err(RecordError::Format2Mac) if seq == 1 => {
            return Err(StoreError::OldFormat {
                file: TABLE_NAME.to_string(),
            });
        }
        Err(RecordError::Format2Mac) => {
            return Err(corrupt(seq, FORMAT_2));
        }
        Err(e) => return Err(corrupt(seq, format!("bad record: {e}"))),
    };
    check_columns(
        row,
        LedgerPosition {
            seq: rec.seq,
            head: rec.hash,
        },
    )?;
    Ok(rec)
}

/// The row's `seq` and `hash` columns agree with its record (at `record`).
pub fn check_columns(row: &Row, record: LedgerPosition) -> Result<(), StoreError> {
    let seq = u64::try_from(row.seq).map_err(|_| corrupt(0, "negative seq"))?;
    if record.seq != seq {
        return Err(corrupt(
            seq,
            format!(
                "the row's seq column says {seq}, its record says {}",
                record.seq
            ),
        ));
    }
    if record.head.0.as_slice() != row.hash.as_slice() {
        return Err(corrupt(
            seq,
            "the row's hash column differs from its record's hash",
        ));
    }
    Ok(())
}

/// Folds the rows (ordered by seq, starting anywhere at or before `snapshot`'s next seq) into
/// `snapshot`, skipping rows it already holds and stopping after the last complete
/// transaction. Returns how many records were applied. `complete` says the rows reach the
/// ledger's head as one consistent read, so an unfinished transaction at their end is
/// corruption rather than a batch cut short.
pub fn fold_rows<F: Fold>(
    snapshot: &mut Arc<Snapshot<F>>,
    rows: &[Row],
    key: &[u8],
    complete: bool,
) -> Result<u64, StoreError> {
    let from = snapshot.position.seq;
    let key = RecordKey::new(key);
    let mut records = Vec::with_capacity(rows.len());
    for row in rows.iter().filter(|r| r.seq > from as i64) {
        records.push(parse_row(row, &key)?);
    }
    let whole = records
        .iter()
        .rposition(|r| r.txn[0] == r.txn[1])
        .map_or(0, |i| i + 1);
    if complete && whole < records.len() {
        let r = &records[whole];
        return Err(corrupt(
            r.seq,
            format!(
                "the ledger ends inside a transaction (record {} of {})",
                r.txn[0], r.txn[1]
            ),
        ));
    }
    let records = &records[..whole];
    if records.is_empty() {
        return Ok(0);
    }
    check_extends(snapshot, records).map_err(|(i, reason)| {
        let seq = records.get(i).map_or(from + 1 + i as u64, |r| r.seq);
        corrupt(seq, reason)
    })?;
    let snap = Arc::make_mut(snapshot);
    for rec in records {
        snap.apply(rec)
            .map_err(|e| corrupt(rec.seq, e.to_string()))?;
    }
    Ok(records.len() as u64)
}

#[cfg(test)]
mod tests {
    use bernstein_ledger::digest::Digest;
    use bernstein_ledger::{Draft, seal};
    use serde_json::json;

    use super::*;

    const KEY: &[u8] = b"test-key";

    fn rows_of(records: &[Record]) -> Vec<Row> {
        records
            .iter()
            .map(|r| {
                let mut line = r.to_line();
                line.pop();
                Row {
                    seq: r.seq as i64,
                    hash: r.hash.0.to_vec(),
                    line,
                }
            })
            .collect()
    }

    fn two_txns() -> Vec<Record> {
        let mut snap = Snapshot::<()>::genesis();
        let mut out = Vec::new();
        for n in 0..2 {
            let recs = seal(
                &snap.position,
                |s| snap.stream_head(s),
                vec![
                    Draft::new("backlog", "note", json!({"n": n})),
                    Draft::new("audit", "note", json!({"n": n})),
                ],
                KEY,
            );
            for r in &recs {
                snap.apply(r).unwrap();
            }
            out.extend(recs);
        }
        out
    }

    #[test]
    fn folds_whole_transactions_and_skips_known_rows() {
        let recs = two_txns();
        let rows = rows_of(&recs);
        let mut snap = Arc::new(Snapshot::<()>::genesis());
        // A batch cut inside the second transaction folds only the first.
        assert_eq!(fold_rows(&mut snap, &rows[..3], KEY, false).unwrap(), 2);
        assert_eq!(snap.position.seq, 2);
        // Re-reading from the start skips what is folded.
        assert_eq!(fold_rows(&mut snap, &rows, KEY, true).unwrap(), 2);
        assert_eq!(snap.position.head, recs[3].hash);
    }

    #[test]
    fn refuses_altered_rows_and_torn_transactions() {
        let recs = two_txns();
        let mut rows = rows_of(&recs);
        let mut snap = Arc::new(Snapshot::<()>::genesis());
        let err = fold_rows(&mut snap, &rows[..3], KEY, true).unwrap_err();
        assert!(err.to_string().contains("inside a transaction"), "{err}");

        rows[1].hash = Digest::ZERO.0.to_vec();
        let err = fold_rows(&mut snap, &rows, KEY, true).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { seq: 2, .. }), "{err}");

        let err = fold_rows(
            &mut Arc::new(Snapshot::<()>::genesis()),
            &rows_of(&recs),
            b"other",
            true,
        )
        .unwrap_err();
        assert!(err.to_string().contains("HMAC"), "{err}");
    }
}
