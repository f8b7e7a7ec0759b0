//! The PostgreSQL store's scrub (`bernstein_os::scrub`, shared with the file store): a pass reads
//! the ledger table in batches of [`SCRUB_BATCH`] rows by keyset (`seq > last seen`, the fold's
//! own query and row checks), up to the head this instance had folded when the pass began (every
//! record up to it is committed, so durable). Each batch borrows a pool connection for one
//! indexed query and gives it back before its rows are verified and paced, so the scrub holds at
//! most one of the pool's connections, for one statement at a time, and never an open
//! transaction (a long pass would otherwise hold back the database's vacuum).
//!
//! Besides what every scrub checks, each row's `seq` and `hash` columns must still agree with its
//! record, and every row up to the head must still be there.

use bernstein_ledger::{LedgerPosition, StoreError};
use bernstein_os::scrub::{Finding, Problem, Scrubbed};
use bernstein_store_file::Checkpointed;

use crate::PgStore;
use crate::fold::{TABLE_NAME, check_columns};
use crate::store::read_rows;

/// Rows a pass reads per query.
pub const SCRUB_BATCH: i64 = 1000;

/// What a finding tells the operator to run.
const VERIFY: &str = "`bernstein audit verify --store URL`";

impl<F: Checkpointed + Send + Sync + 'static> Scrubbed for PgStore<F> {
    fn ledger_name(&self) -> String {
        TABLE_NAME.to_string()
    }

    fn verify_command(&self) -> &'static str {
        VERIFY
    }

    fn scrub_key(&self) -> &[u8] {
        self.key()
    }

    fn verified_head(&self) -> Option<LedgerPosition> {
        Some(self.position()).filter(|p| p.seq > 0)
    }

    fn scrub_lines(
        &self,
        each: &mut dyn FnMut(&[u8]) -> Option<LedgerPosition>,
    ) -> Result<(), Problem> {
        let unreadable = |e: StoreError| Problem::Unreadable(e.to_string());
        let end = self.position().seq;
        let mut from = 0u64;
        while from < end {
            let limit = SCRUB_BATCH.min((end - from) as i64);
            let rows = {
                let mut lease = self.pool().get().map_err(unreadable)?;
                read_rows(&mut lease, from, limit).map_err(unreadable)?
            };
            for row in &rows {
                if row.seq != from as i64 + 1 {
                    return Err(missing(from + 1, end));
                }
                let Some(head) = each(&row.line) else {
                    return Ok(());
                };
                check_columns(row, head).map_err(|e| {
                    let reason = match e {
                        StoreError::Corrupt { reason, .. } => reason,
                        e => e.to_string(),
                    };
                    Problem::Found(format!(
                        "{TABLE_NAME} record {}: {reason}; it changed while the server ran: stop it and run {VERIFY}",
                        from + 1
                    ))
                })?;
                from += 1;
            }
            if rows.is_empty() {
                return Err(missing(from + 1, end));
            }
        }
        Ok(())
    }

    fn finding(&self) -> &Finding {
        self.finding_cell()
    }
}

/// Row `seq` is gone although this instance folded `end` records.
fn missing(seq: u64, end: u64) -> Problem {
    Problem::Found(format!(
        "{TABLE_NAME} has no record {seq}, though this server folded {end} records; rows were deleted while the server ran: stop it and run {VERIFY}"
    ))
}
