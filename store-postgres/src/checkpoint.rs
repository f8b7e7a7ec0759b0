//! Projection checkpoints in the table `bernstein_checkpoint`: the folded [`Snapshot`] as JSON,
//! HMAC-tagged under the audit key, one row per software version, so a new instance folds only
//! the records after it.
//!
//! A checkpoint is a memo, never a source of truth: [`load`] returns it only if it was written by
//! this software, its tag verifies, and the ledger's record at its seq has the head it claims;
//! a checkpoint that fails any of that is an error (the store refuses to open), and the store
//! verifies the ledger up to it before using it. [`write`] never replaces a checkpoint with
//! an older one.

use std::sync::Arc;

use bernstein_ledger::Snapshot;
use bernstein_ledger::digest::{hmac_tag, verify_hmac_tag};
use bernstein_store_file::Checkpointed;
use postgres::Client;

use crate::pool::describe;

/// The software whose projection a checkpoint holds; another version's is ignored.
pub const SOFTWARE: &str = concat!("bernstein-store-postgres ", env!("CARGO_PKG_VERSION"));

/// Stores `snapshot` as the checkpoint unless a newer one is there.
pub fn write<F: Checkpointed>(
    client: &mut Client,
    key: &[u8],
    snapshot: &Snapshot<F>,
) -> Result<(), String> {
    if snapshot.position.seq == 0 || !snapshot.at_txn_boundary() {
        return Ok(());
    }
    let body = serde_json::to_vec(snapshot).map_err(|e| e.to_string())?;
    let mac = hmac_tag(key, &body);
    let seq = snapshot.position.seq as i64;
    let head = snapshot.position.head.0.to_vec();
    client
        .execute(
            "INSERT INTO bernstein_checkpoint (software, seq, head, body, mac)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (software) DO UPDATE
               SET seq = EXCLUDED.seq, head = EXCLUDED.head, body = EXCLUDED.body,
                   mac = EXCLUDED.mac, written = now()
               WHERE bernstein_checkpoint.seq < EXCLUDED.seq",
            &[&SOFTWARE, &seq, &head, &body, &mac],
        )
        .map_err(|e| describe(&e))?;
    Ok(())
}

/// This software's checkpoint, authenticated under `key` and standing on a ledger record with
/// its head: `Ok(None)` when there is none, `Err` naming why the one there cannot be trusted
/// (the store then refuses to open; the caller still verifies the ledger up to it).
pub fn load<F: Checkpointed>(
    client: &mut Client,
    key: &[u8],
) -> Result<Option<Arc<Snapshot<F>>>, String> {
    let row = client
        .query_opt(
            "SELECT c.seq, c.head, c.body, c.mac, l.hash
               FROM bernstein_checkpoint c
               LEFT JOIN bernstein_ledger l ON l.seq = c.seq
              WHERE c.software = $1",
            &[&SOFTWARE],
        )
        .map_err(|e| describe(&e))?;
    let Some(row) = row else { return Ok(None) };
    let seq: i64 = row.get(0);
    let head: Vec<u8> = row.get(1);
    let body: Vec<u8> = row.get(2);
    let mac: String = row.get(3);
    let ledger_hash: Option<Vec<u8>> = row.get(4);
    if !verify_hmac_tag(key, &body, &mac) {
        return Err("its HMAC tag does not verify under this audit key".into());
    }
    let snapshot: Snapshot<F> =
        serde_json::from_slice(&body).map_err(|e| format!("unreadable body: {e}"))?;
    if snapshot.position.seq as i64 != seq || snapshot.position.head.0.as_slice() != head {
        return Err("its columns disagree with its body".into());
    }
    match ledger_hash {
        None => {
            return Err(format!(
                "truncated: the authenticated checkpoint records seq {seq} as durable, but the ledger has no record {seq}: acknowledged records were removed"
            ));
        }
        Some(h) if h != head => {
            return Err(format!(
                "the ledger's record {seq} is not the head the checkpoint claims: the ledger was rewritten"
            ));
        }
        Some(_) => {}
    }
    Ok(Some(Arc::new(snapshot)))
}
