//! The file store's scrub (`bernstein_os::scrub`, shared with the PostgreSQL store): a pass reads
//! the ledger file up to the durable offset a snapshot would show, so it never verifies bytes
//! whose append is not acknowledged yet. `bernstein_os::scrub::start` starts it.

use bernstein_ledger::{LedgerPosition, Store};
use bernstein_os::scrub::{Finding, Problem, Scrubbed};

use crate::{Checkpointed, FileStore};

impl<F: Checkpointed + Send + Sync + 'static> Scrubbed for FileStore<F> {
    fn ledger_name(&self) -> String {
        self.ledger_path().display().to_string()
    }

    fn scrub_key(&self) -> &[u8] {
        self.audit_key()
    }

    fn verified_head(&self) -> Option<LedgerPosition> {
        self.position_now()
    }

    fn scrub_lines(
        &self,
        each: &mut dyn FnMut(&[u8]) -> Option<LedgerPosition>,
    ) -> Result<(), Problem> {
        Store::scan_lines(self, &mut |line| each(line).is_some())
            .map_err(|e| Problem::Unreadable(e.to_string()))
    }

    fn finding(&self) -> &Finding {
        &self.finding
    }
}
