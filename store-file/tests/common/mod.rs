//! Shared helpers of the file store's integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use bernstein_core::ledger::{Append, AppendResult, Draft, Store, seal};

use bernstein_domain::Snapshot;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;

pub use bernstein_store_file::test_dir::TestDir;

/// Seals `drafts` on a fresh snapshot and compare-and-appends them, retrying on conflict.
/// Returns the number of conflicts met.
pub fn append_with_retry(store: &FileStore, key: &[u8], drafts: &[Draft]) -> u64 {
    append_on(store, key, drafts, false, |s| s.snapshot().unwrap())
}

/// [`append_with_retry`] naming the heads of the streams the drafts write (but `audit`) as
/// what the request read: placed after any later head while those stand.
pub fn append_naming_reads_with_retry(store: &FileStore, key: &[u8], drafts: &[Draft]) -> u64 {
    append_on(store, key, drafts, true, |s| s.snapshot().unwrap())
}

/// [`append_with_retry`] the way the engine does it: sealed on an unsettled snapshot
/// (it may hold records still waiting for their fsync).
pub fn append_unsettled_with_retry(store: &FileStore, key: &[u8], drafts: &[Draft]) -> u64 {
    append_on(store, key, drafts, false, |s| {
        s.snapshot_unsettled().unwrap()
    })
}

fn append_on(
    store: &FileStore,
    key: &[u8],
    drafts: &[Draft],
    name_reads: bool,
    snapshot: impl Fn(&FileStore) -> Arc<Snapshot>,
) -> u64 {
    let mut conflicts = 0;
    loop {
        let snap = snapshot(store);
        let records = seal(
            &snap.position,
            |s| snap.stream_head(s),
            drafts.to_vec(),
            key,
        );
        let expected = snap.position;
        let read_heads = name_reads.then(|| {
            let streams = drafts
                .iter()
                .map(|d| d.stream.clone())
                .filter(|s| s != "audit");
            streams.map(|s| (s.clone(), snap.stream_head(&s))).collect()
        });
        drop(snap);
        match store
            .compare_and_append(&Append {
                expected,
                records,
                read_heads,
            })
            .unwrap()
        {
            AppendResult::Committed(_) => return conflicts,
            AppendResult::Conflict { .. } => conflicts += 1,
        }
    }
}

/// The two records one "request" of writer `w` appends: a note on stream `run:<tag><w>` and
/// its audit entry (call id `<w>-<n>`).
pub fn writer_request(tag: &str, w: u64, n: u64) -> Vec<Draft> {
    vec![
        Draft::new(
            format!("run:{tag}{w}"),
            "test.note",
            serde_json::json!({"writer": w, "n": n}),
        ),
        Draft::new(
            "audit",
            "mcp.stateless_call",
            serde_json::json!({"tool": "t", "call_id": format!("{w}-{n}"), "ok": true}),
        ),
    ]
}
