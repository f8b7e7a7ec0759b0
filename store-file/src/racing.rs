//! A store for tests whose first appends lose the race: just before each of the first
//! `interfere` appends, another writer (a second handle on the same `.sdd/`) appends a record
//! to the backlog, which every Bernstein write reads (so even a write that names what it read
//! loses).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bernstein_ledger::{
    Append, AppendResult, BACKLOG_STREAM, Draft, Snapshot, Store, StoreError, seal,
};
use serde_json::json;

use super::{Checkpointed, FileStore};

pub struct Racing<F: Checkpointed> {
    inner: FileStore<F>,
    other: FileStore<F>,
    key: Vec<u8>,
    interfere: AtomicUsize,
    /// Appends asked of this store so far.
    pub attempts: AtomicUsize,
}

impl<F: Checkpointed> Racing<F> {
    /// The store of `dir` under `key`, losing its first `interfere` appends.
    pub fn new(dir: &Path, key: &[u8], interfere: usize) -> Racing<F> {
        Racing {
            inner: FileStore::open(dir, key.to_vec()).unwrap(),
            other: FileStore::open(dir, key.to_vec()).unwrap(),
            key: key.to_vec(),
            interfere: AtomicUsize::new(interfere),
            attempts: AtomicUsize::new(0),
        }
    }
}

impl<F: Checkpointed> Store<F> for Racing<F> {
    fn snapshot(&self) -> Result<Arc<Snapshot<F>>, StoreError> {
        self.inner.snapshot()
    }

    fn compare_and_append(&self, append: &Append) -> Result<AppendResult, StoreError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if self.interfere.load(Ordering::SeqCst) > 0 {
            self.interfere.fetch_sub(1, Ordering::SeqCst);
            let snap = self.other.snapshot()?;
            let records = seal(
                &snap.position,
                |s| snap.stream_head(s),
                vec![Draft::new(BACKLOG_STREAM, "test.note", json!({}))],
                &self.key,
            );
            let res = self.other.compare_and_append(&Append {
                expected: snap.position,
                read_heads: None,
                records,
            })?;
            assert!(matches!(res, AppendResult::Committed(_)));
        }
        self.inner.compare_and_append(append)
    }
}
