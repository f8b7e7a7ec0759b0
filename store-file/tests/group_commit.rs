//! Group commit under concurrency: many threads of one process append through one
//! `FileStore` (sharing fsyncs) while others read. Afterwards every acknowledged append is in
//! the ledger exactly once and the chain verifies, in this process and in a fresh open; while
//! it runs, a snapshot taken after an append was acknowledged always contains it (a reader is
//! never handed a state older than an acknowledged write, nor one it may not answer from).
//!
//! The logic that decides when bytes are durable (leader/follower, what an fsync covers, a
//! failed fsync) is tested deterministically in the store's `group_commit` module, with the
//! fsync under the test's control; this test runs the real thing with real fsyncs.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use bernstein_core::ledger::Store;
use bernstein_core::ledger::verify::verify_ledger;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_store_file::keys::load_or_create_audit_key;
use bernstein_store_file::verify_cmd::audit_verify;

use common::{TestDir, append_unsettled_with_retry, writer_request};

const WRITERS: u64 = 16;
const APPENDS: u64 = 25;
const READERS: usize = 4;

#[test]
fn concurrent_writers_share_fsyncs_and_lose_nothing() {
    let tmp = TestDir::new("group-commit");
    let key = load_or_create_audit_key(&tmp.path().join(".sdd")).unwrap();
    let store = Arc::new(FileStore::open(tmp.path(), key.clone()).unwrap());
    // The highest seq some writer has seen acknowledged.
    let acked = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(WRITERS as usize + READERS));

    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (store, acked, done, start) =
                (store.clone(), acked.clone(), done.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut reads = 0u64;
                let mut last = 0;
                while !done.load(Ordering::SeqCst) {
                    let floor = acked.load(Ordering::SeqCst);
                    // Both ways a reader may answer: a settled snapshot, or an unsettled one
                    // followed by `settle` (what the engine does for a call that appends
                    // nothing).
                    let seq = if reads.is_multiple_of(2) {
                        store.snapshot().unwrap().position.seq
                    } else {
                        let seq = store.snapshot_unsettled().unwrap().position.seq;
                        store.settle(seq).unwrap();
                        seq
                    };
                    assert!(
                        seq >= floor,
                        "a snapshot at seq {seq} after seq {floor} was acknowledged"
                    );
                    assert!(seq >= last, "the head went back from {last} to {seq}");
                    last = seq;
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (store, key, acked, start) =
                (store.clone(), key.clone(), acked.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut conflicts = 0;
                for n in 0..APPENDS {
                    conflicts +=
                        append_unsettled_with_retry(&store, &key, &writer_request("G", w, n));
                    // Acknowledged: the store's head now includes it.
                    let seq = store.snapshot().unwrap().position.seq;
                    acked.fetch_max(seq, Ordering::SeqCst);
                }
                conflicts
            })
        })
        .collect();
    let conflicts: u64 = writers.into_iter().map(|t| t.join().unwrap()).sum();
    done.store(true, Ordering::SeqCst);
    let reads: u64 = readers.into_iter().map(|t| t.join().unwrap()).sum();
    let stats = store.sync_stats();
    eprintln!(
        "group commit: {WRITERS} writers x {APPENDS} appends, {READERS} readers \
         ({reads} snapshots): \
         {conflicts} conflicts retried, {} waits for durability served by {} fsyncs",
        stats.waits, stats.syncs
    );
    // Every fsync was made for someone who waited; sharing can only lower the count.
    assert!(stats.syncs >= 1);
    assert!(stats.syncs <= stats.waits);
    let head = store.snapshot().unwrap().position;
    assert_eq!(head.seq, 2 * WRITERS * APPENDS);
    drop(store);

    // A fresh open and `audit verify` see every append exactly once, whole.
    let reopened = FileStore::open(tmp.path(), key.clone()).unwrap();
    assert_eq!(reopened.snapshot().unwrap().position, head);
    drop(reopened);
    let mut seen = BTreeMap::new();
    for c in audit_verify(&tmp.path().join(".sdd")).unwrap().calls {
        *seen.entry(c.call_id).or_insert(0u64) += 1;
    }
    assert_eq!(seen.len() as u64, WRITERS * APPENDS);
    assert!(seen.values().all(|&c| c == 1), "an append was duplicated");
    let bytes = std::fs::read(tmp.path().join(".sdd/ledger/ledger.jsonl")).unwrap();
    let report = verify_ledger(&bytes, "ledger.jsonl", Some(&key)).unwrap();
    assert_eq!(report.transactions, WRITERS * APPENDS);
}
