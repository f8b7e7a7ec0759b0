//! Test support (the `test-support` feature): what every store must do once a scrub has found
//! its ledger changed under it.

use bernstein_ledger::{Append, Fold, LedgerPosition, Store, StoreError};

/// Asserts `store` now refuses everything with `reason`: the readiness check, a snapshot and an
/// append at `head`.
pub fn assert_refuses_all<F: Fold>(store: &dyn Store<F>, reason: &str, head: LedgerPosition) {
    let err = store.check_writable().unwrap_err();
    assert!(
        matches!(&err, StoreError::NotServed(r) if r == reason),
        "{err}"
    );
    assert!(store.snapshot().is_err());
    let refused = store.compare_and_append(&Append {
        expected: head,
        read_heads: None,
        records: vec![],
    });
    assert!(
        matches!(refused, Err(StoreError::NotServed(_))),
        "{refused:?}"
    );
}

/// Waits up to 10 s for a running scrub to find an edit `store`'s ledger now holds (its
/// readiness turns to the finding), then checks the scrub's thread does not keep the store:
/// dropping the last owner drops it.
pub fn assert_scrub_finds_edit<F: Fold, S: Store<F>>(store: std::sync::Arc<S>) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while store.check_writable().is_ok() {
        assert!(
            std::time::Instant::now() < until,
            "the scrub never found the edit"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let err = store.check_writable().unwrap_err().to_string();
    assert!(err.contains("no longer verifies"), "{err}");
    let weak = std::sync::Arc::downgrade(&store);
    drop(store);
    assert!(weak.upgrade().is_none());
}
