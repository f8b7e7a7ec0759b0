//! Shared helpers of runtime-std's integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use bernstein_core::ledger::{Append, AppendResult, Draft, Store, seal};
use bernstein_runtime_std::FileStore;

/// A scratch directory, removed on drop.
#[derive(Debug)]
pub struct TestDir(PathBuf);

impl TestDir {
    pub fn new(label: &str) -> TestDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("bernstein-it-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TestDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Seals `drafts` on a fresh snapshot and compare-and-appends them, retrying on conflict.
/// Returns the number of conflicts met.
pub fn append_with_retry(store: &FileStore, key: &[u8], drafts: &[Draft]) -> u64 {
    let mut conflicts = 0;
    loop {
        let snap = store.snapshot().unwrap();
        let records = seal(
            &snap.position,
            |s| snap.stream_head(s),
            drafts.to_vec(),
            key,
        );
        let expected = snap.position;
        drop(snap);
        match store
            .compare_and_append(&Append { expected, records })
            .unwrap()
        {
            AppendResult::Committed(_) => return conflicts,
            AppendResult::Conflict { .. } => conflicts += 1,
        }
    }
}
