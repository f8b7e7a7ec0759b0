//! The check a store makes before it trusts a checkpoint: the ledger, verified from its first
//! byte with the same rules as `bernstein audit verify`, must reach exactly the position and
//! stream heads the (authenticated) checkpoint records. So a server never serves a ledger the
//! verifier refuses, an edit before the checkpoint is found at open, and a ledger that ends
//! before its checkpoint is refused with both positions named.

use std::io::{Read, Seek, SeekFrom};

use bernstein_ledger::verify::{
    LedgerVerifier, VerifyFailure, VerifyReport, prefix_matches, whole_ledger_error,
};
use bernstein_ledger::{Fold, LedgerPosition, StoreError};

use super::ledger_file::{Folded, LedgerFile};
use super::verify_cmd::{FeedError, feed_lines};

/// What verifying the ledger's first `end` bytes found, to be checked against the checkpoint
/// that names `end` ([`check_prefix`]).
pub struct Prefix {
    end: u64,
    len: u64,
    /// The last line before `end` had no newline: `end` is not a record boundary.
    unterminated: bool,
    reached: Reached,
}

/// The verifier's verdict on a prefix: finished, or stopped short (cut) at a position.
enum Reached {
    Finished(Box<VerifyReport>),
    Short(LedgerPosition),
}

/// Verifies `ledger` from its first byte up to `end` (a checkpoint's offset) with the rules
/// of `bernstein audit verify`. A bad line is an error here; whether the prefix ends where
/// the checkpoint says is [`check_prefix`]'s question. Needs only the offset, so it can run
/// while the checkpoint itself is still being read.
pub fn verify_prefix(ledger: &LedgerFile, key: &[u8], end: u64) -> Result<Prefix, StoreError> {
    let name = ledger.name();
    let io = |what: &str, e: std::io::Error| StoreError::Io(format!("{what} {name}: {e}"));
    let len = ledger.size().map_err(|e| io("stat", e))?;
    let stop = end.min(len);
    let mut file = ledger.reader().map_err(|e| io("open", e))?;
    file.seek(SeekFrom::Start(0)).map_err(|e| io("seek", e))?;
    let mut verifier = LedgerVerifier::new(&name, Some(key)).collect_calls(false);
    let unterminated = match feed_lines(&mut file.take(stop), &mut verifier) {
        Ok(tail) => !tail.is_empty(),
        Err(FeedError::Io(e)) => return Err(io("read", e)),
        Err(FeedError::Bad(f)) => return Err(corrupt(f)),
    };
    let short = stop < end || unterminated;
    Ok(Prefix {
        end,
        len,
        unterminated,
        reached: if short {
            Reached::Short(verifier.head())
        } else {
            Reached::Finished(Box::new(verifier.finish(&[]).map_err(corrupt)?))
        },
    })
}

fn corrupt(f: VerifyFailure) -> StoreError {
    if let Some(e) = whole_ledger_error(&f) {
        return e;
    }
    StoreError::Corrupt {
        file: f.file,
        line: f.line,
        seq: f.seq,
        reason: f.reason,
    }
}

/// Checks a verified prefix against the (authenticated) checkpoint `cp`: the ledger must reach
/// exactly its offset, position and stream heads.
pub fn check_prefix<F: Fold>(
    prefix: Prefix,
    ledger_name: &str,
    cp: &Folded<F>,
    checkpoint_name: &str,
) -> Result<(), StoreError> {
    let want = cp.snapshot.position;
    debug_assert_eq!(
        prefix.end, cp.offset,
        "the prefix verified is the checkpoint's"
    );
    let cut = prefix.len < cp.offset;
    if prefix.unterminated && !cut {
        return Err(StoreError::Corrupt {
            file: checkpoint_name.to_string(),
            line: 1,
            seq: want.seq,
            reason: format!(
                "the checkpoint records seq {} ending at byte {}, which is not a record boundary of this ledger: the ledger before the checkpoint was rewritten",
                want.seq, cp.offset
            ),
        });
    }
    let report = match prefix.reached {
        Reached::Finished(r) if !cut && r.head.seq >= want.seq => r,
        Reached::Finished(r) => {
            return Err(truncated(
                r.head,
                prefix.len,
                ledger_name,
                cp,
                checkpoint_name,
            ));
        }
        Reached::Short(at) => {
            return Err(truncated(at, prefix.len, ledger_name, cp, checkpoint_name));
        }
    };
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

fn truncated<F: Fold>(
    reached: LedgerPosition,
    len: u64,
    ledger_name: &str,
    cp: &Folded<F>,
    checkpoint_name: &str,
) -> StoreError {
    let want = cp.snapshot.position;
    StoreError::Corrupt {
        file: ledger_name.to_string(),
        line: reached.seq + 1,
        seq: reached.seq + 1,
        reason: format!(
            "truncated: the ledger ends at seq {} ({} bytes), but its authenticated checkpoint {checkpoint_name} records seq {} ({} bytes) as durable: acknowledged records were removed",
            reached.seq, len, want.seq, cp.offset
        ),
    }
}
