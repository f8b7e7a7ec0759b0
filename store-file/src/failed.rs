//! The store of a server whose ledger does not verify (a record was altered, another audit
//! key wrote it): every read and write fails with the reason, so an HTTP server can still
//! answer `/healthz`, say why it is not ready on `/readyz` (503) and show the reason on its
//! dashboard, while every MCP request is refused with the same reason. Nothing is served from
//! the ledger and nothing is written to it.

use std::sync::Arc;

use bernstein_ledger::{Append, AppendResult, Fold, Snapshot, Store, StoreError, StoreFacts};

/// A store that failed to open, with the reason.
#[derive(Debug)]
pub struct FailedStore {
    reason: String,
}

impl FailedStore {
    pub fn new(reason: impl Into<String>) -> FailedStore {
        FailedStore {
            reason: reason.into(),
        }
    }

    fn error(&self) -> StoreError {
        StoreError::NotServed(format!(
            "the ledger does not verify: {}; repair it and restart the server",
            self.reason
        ))
    }
}

impl<F: Fold> Store<F> for FailedStore {
    fn snapshot(&self) -> Result<Arc<Snapshot<F>>, StoreError> {
        Err(self.error())
    }

    fn compare_and_append(&self, _: &Append) -> Result<AppendResult, StoreError> {
        Err(self.error())
    }

    fn local(&self) -> bool {
        true
    }

    fn facts(&self) -> StoreFacts {
        StoreFacts {
            kind: "failed",
            ..StoreFacts::default()
        }
    }

    fn check_writable(&self) -> Result<(), StoreError> {
        Err(self.error())
    }

    fn scan_lines(&self, _: &mut dyn FnMut(&[u8]) -> bool) -> Result<(), StoreError> {
        Err(self.error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_fails_with_the_reason() {
        let failed = FailedStore::new("ledger.jsonl:3 (seq 3): HMAC tag missing");
        let s: &dyn Store<()> = &failed;
        let why = s.snapshot().unwrap_err().to_string();
        assert!(
            why.contains("HMAC tag missing") && why.contains("restart"),
            "{why}"
        );
        let append = Append {
            expected: bernstein_ledger::LedgerPosition::GENESIS,
            read_heads: None,
            records: Vec::new(),
        };
        assert!(!s.snapshot().unwrap_err().retryable());
        assert!(s.compare_and_append(&append).is_err());
        assert!(s.scan_lines(&mut |_| true).is_err());
    }
}
