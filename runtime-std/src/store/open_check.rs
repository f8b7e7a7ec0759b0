//! The check a store makes before it trusts a checkpoint: the ledger, verified from its first
//! byte with the same rules as `bernstein audit verify`, must reach exactly the position and
//! stream heads the (authenticated) checkpoint records. So a server never serves a ledger the
//! verifier refuses, an edit before the checkpoint is found at open, and a ledger that ends
//! before its checkpoint is refused with both positions named.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use bernstein_core::ledger::StoreError;
use bernstein_core::ledger::verify::{KEY_MISMATCH, LedgerVerifier, VerifyFailure, prefix_matches};

use super::ledger_file::{Folded, LedgerFile};

/// Verifies `ledger` from its start up to the checkpoint `cp` and checks that it ends there
/// at the checkpoint's position and stream heads.
pub fn verify_to_checkpoint(
    ledger: &LedgerFile,
    key: &[u8],
    cp: &Folded,
    checkpoint_name: &str,
) -> Result<(), StoreError> {
    let name = ledger.name();
    let io = |what: &str, e: std::io::Error| StoreError::Io(format!("{what} {name}: {e}"));
    let len = ledger.size().map_err(|e| io("stat", e))?;
    let end = cp.offset.min(len);
    let mut file = ledger.reader().map_err(|e| io("open", e))?;
    file.seek(SeekFrom::Start(0)).map_err(|e| io("seek", e))?;
    let mut reader = BufReader::with_capacity(1 << 20, file.take(end));
    let mut verifier = LedgerVerifier::new(&name, Some(key)).collect_calls(false);
    let mut line = Vec::new();
    let corrupt = |f: VerifyFailure| {
        if f.reason == KEY_MISMATCH {
            return StoreError::KeyMismatch { file: f.file };
        }
        StoreError::Corrupt {
            file: f.file,
            line: f.line,
            seq: f.seq,
            reason: f.reason,
        }
    };
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io("read", e))?
            == 0
        {
            break;
        }
        match line.strip_suffix(b"\n") {
            Some(body) => verifier.push_line(body).map_err(corrupt)?,
            // Cut short of the checkpoint: reported below as what it is.
            None if end < cp.offset => break,
            None => {
                return Err(StoreError::Corrupt {
                    file: checkpoint_name.to_string(),
                    line: 1,
                    seq: cp.snapshot.position.seq,
                    reason: format!(
                        "the checkpoint records seq {} ending at byte {}, which is not a record boundary of this ledger: the ledger before the checkpoint was rewritten",
                        cp.snapshot.position.seq, cp.offset
                    ),
                });
            }
        }
    }
    let want = cp.snapshot.position;
    let reached = verifier.head();
    if end < cp.offset || reached.seq < want.seq {
        return Err(StoreError::Corrupt {
            file: name,
            line: reached.seq + 1,
            seq: reached.seq + 1,
            reason: format!(
                "truncated: the ledger ends at seq {} ({} bytes), but its authenticated checkpoint {checkpoint_name} records seq {} ({} bytes) as durable: acknowledged records were removed",
                reached.seq, len, want.seq, cp.offset
            ),
        });
    }
    let report = verifier.finish(&[]).map_err(corrupt)?;
    if !prefix_matches(&report, &cp.snapshot) {
        return Err(StoreError::Corrupt {
            file: checkpoint_name.to_string(),
            line: 1,
            seq: want.seq,
            reason: format!(
                "the checkpoint records seq {} head {}, but the ledger's first {} bytes end at seq {} head {}: the ledger before the checkpoint was rewritten",
                want.seq, want.head, cp.offset, report.head.seq, report.head.head
            ),
        });
    }
    Ok(())
}
