//! Appends placed in batches: queued while the store is held, placed in order by whoever takes
//! it, written once; a failed write fails them all and changes nothing.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bernstein_ledger::Store as _;
use bernstein_ledger::digest::Digest;
use bernstein_ledger::verify::verify_ledger;
use bernstein_ledger::{Draft, seal};
use serde_json::json;

use super::super::layout::Layout;
use super::super::test_dir::TestDir;
use super::*;

type Store = FileStore<()>;
const KEY: &[u8] = &[7; 32];

fn open(dir: &Path) -> Store {
    FileStore::open(dir, KEY.to_vec()).unwrap()
}

fn ledger_bytes(dir: &Path) -> Vec<u8> {
    std::fs::read(Layout::in_project(dir).ledger_file()).unwrap()
}

fn call(n: u64) -> Draft {
    let body = json!({"tool": "t", "call_id": format!("c{n}"), "ok": true});
    Draft::new("audit", "mcp.stateless_call", body)
}

/// Drafts sealed on `snap` under `key`, naming what they read (`reads`) or not.
fn sealed(
    snap: &Snapshot<()>,
    drafts: Vec<Draft>,
    reads: Option<Vec<(String, Digest)>>,
    key: &[u8],
) -> Append {
    Append {
        expected: snap.position,
        records: seal(&snap.position, |s| snap.stream_head(s), drafts, key),
        read_heads: reads,
    }
}

/// A read: call `n`'s audit record alone, sealed on `snap`.
fn read(snap: &Snapshot<()>, n: u64) -> Append {
    sealed(snap, vec![call(n)], None, KEY)
}

/// Starts `n` threads appending reads sealed on one snapshot while this thread holds the
/// store, and once all of them are queued does `meanwhile` and lets go: one of them places
/// them all.
fn queue_reads(store: &Arc<Store>, n: u64, meanwhile: impl FnOnce()) -> Vec<Placed> {
    let snap = store.snapshot().unwrap();
    let held = store.state();
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (store, append) = (store.clone(), read(&snap, i));
            std::thread::spawn(move || store.append_locked(&append))
        })
        .collect();
    let start = Instant::now();
    while store.queued.len() < n as usize {
        assert!(start.elapsed() < Duration::from_secs(20), "not queued");
        std::thread::sleep(Duration::from_millis(1));
    }
    meanwhile();
    drop(held);
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn appends_queued_while_the_store_is_held_are_placed_with_one_write() {
    let tmp = TestDir::new("batch-queued");
    let store = Arc::new(open(tmp.path()));
    let placed = queue_reads(&store, 6, || ());
    let mut seqs: Vec<u64> = placed
        .iter()
        .map(|p| match p {
            Ok((AppendResult::Committed(at), _)) => at.seq,
            other => panic!("{other:?}"),
        })
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=6).collect::<Vec<_>>());
    assert_eq!(
        store.write_stats(),
        WriteStats {
            writes: 1,
            appends: 6
        }
    );
    let end = ledger_bytes(tmp.path()).len() as u64;
    assert!(placed.iter().all(|p| p.as_ref().unwrap().1 == end));
    let report = verify_ledger(&ledger_bytes(tmp.path()), "l", Some(KEY)).unwrap();
    assert_eq!(report.head, store.snapshot().unwrap().position);
}

#[test]
fn a_batch_places_each_after_the_ones_before_it_and_refuses_only_what_they_moved() {
    let tmp = TestDir::new("batch-order");
    let store = open(tmp.path());
    let snap = store.snapshot().unwrap();
    let note = |stream: &str| Draft::new(stream, "test.note", json!({"on": stream}));
    let zero = |s: &str| (s.to_string(), Digest::ZERO);
    // Placed where it was decided.
    let write = sealed(&snap, vec![note("run:R"), call(1)], None, KEY);
    // A read: placed after the write.
    let read_1 = read(&snap, 2);
    // Decided on the whole ledger, which the two before moved: refused.
    let stale = sealed(&snap, vec![note("run:R"), call(3)], None, KEY);
    // Would not read back under the store's key: refused on its own (first, so that it is
    // placed where it was decided, not sealed again).
    let foreign = sealed(&snap, vec![call(4)], None, b"another key");
    // Read only `backlog`, which nothing moved: placed after the read.
    let named = sealed(
        &snap,
        vec![note("backlog"), call(5)],
        Some(vec![zero("backlog")]),
        KEY,
    );
    let all = [&foreign, &write, &read_1, &stale, &named];
    let slots: Vec<Arc<Slot>> = all
        .iter()
        .map(|a| {
            let slot = Arc::new(Slot {
                append: (*a).clone(),
                lines: Some(store.lines(&a.records)),
                placed: OnceLock::new(),
            });
            store.queued.push(slot.clone());
            slot
        })
        .collect();
    assert!(store.place(&mut store.state(), None).is_none());
    let placed: Vec<&Placed> = slots.iter().map(|s| s.placed.get().unwrap()).collect();
    let at = |i: usize| match placed[i] {
        Ok((AppendResult::Committed(at), _)) => at.seq,
        other => panic!("{i}: {other:?}"),
    };
    assert_eq!((at(1), at(2), at(4)), (2, 3, 5));
    assert!(matches!(
        placed[3],
        Ok((AppendResult::Conflict { current }, _)) if current.seq == 3
    ));
    let refused = placed[0].as_ref().unwrap_err().to_string();
    assert!(refused.contains("would not read back"), "{refused}");
    assert_eq!(
        store.write_stats(),
        WriteStats {
            writes: 1,
            appends: 3
        }
    );
    // What the store folded is what a fresh fold of the file finds.
    let folded = store.snapshot().unwrap();
    drop(store);
    crate::tests::assert_refolds_to(tmp.path(), KEY, &folded);
}

#[test]
fn a_batch_placed_after_the_ledger_was_moved_aside_writes_nothing() {
    let tmp = TestDir::new("batch-moved");
    let store = Arc::new(open(tmp.path()));
    let snap = store.snapshot().unwrap();
    store.compare_and_append(&read(&snap, 0)).unwrap();
    let ledger = Layout::in_project(tmp.path()).ledger_file();
    let aside = ledger.with_extension("aside");
    let before = ledger_bytes(tmp.path());
    let placed = queue_reads(&store, 4, || std::fs::rename(&ledger, &aside).unwrap());
    for p in placed {
        assert!(matches!(p, Err(StoreError::NotServed(_))), "{p:?}");
    }
    assert_eq!(
        std::fs::read(&aside).unwrap(),
        before,
        "written to the moved file"
    );
    assert!(!ledger.exists());
    assert_eq!(store.write_stats().writes, 1);
}

/// The child's directory, when this test binary runs as the child of
/// [`a_batch_whose_write_fails_fails_every_append_in_it_and_changes_nothing`].
const CHILD_DIR: &str = "BERNSTEIN_TEST_FULL_DISK_DIR";

#[test]
fn a_batch_whose_write_fails_fails_every_append_in_it_and_changes_nothing() {
    let tmp = TestDir::new("batch-full");
    let store = Arc::new(open(tmp.path()));
    for n in 0..3 {
        let snap = store.snapshot().unwrap();
        store.compare_and_append(&read(&snap, n)).unwrap();
    }
    drop(store);
    let size = ledger_bytes(tmp.path()).len() as u64;
    let line = size / 3;
    // Room for one more call and a half once the child starts (a full disk, to the process:
    // writes past the limit fail with EFBIG, the signal ignored): one append fits, a batch of
    // six does not, and one more fits after it.
    let blocks = (size + line * 5 / 2).div_ceil(512);
    let exe = std::env::current_exe().unwrap();
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""
        ))
        .arg(exe)
        .args([
            "--exact",
            "batch::tests::the_child_of_the_full_disk_test",
            "--nocapture",
        ])
        .env(CHILD_DIR, tmp.path())
        // Pipes, not whatever this process writes to: a file there may be past the limit.
        .output()
        .unwrap();
    assert!(
        child.status.success(),
        "the child failed: {}\n{}{}",
        child.status,
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr)
    );
    // The failed batch left nothing: five calls, one chain.
    let report = verify_ledger(&ledger_bytes(tmp.path()), "l", Some(KEY)).unwrap();
    assert_eq!(report.head.seq, 5);
    assert_eq!(open(tmp.path()).snapshot().unwrap().position, report.head);
}

/// The half of the test above that runs under the file size limit; nothing without its
/// directory.
#[test]
fn the_child_of_the_full_disk_test() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let store = Arc::new(open(Path::new(&dir)));
    let snap = store.snapshot().unwrap();
    store.compare_and_append(&read(&snap, 10)).unwrap();
    let before = (
        store.snapshot().unwrap().position,
        ledger_bytes(Path::new(&dir)),
    );
    for placed in queue_reads(&store, 6, || ()) {
        let failed = placed.unwrap_err();
        assert!(failed.to_string().contains("File too large"), "{failed}");
    }
    assert_eq!(
        store.write_stats().writes,
        1,
        "only the first append was written"
    );
    let after = (
        store.snapshot().unwrap().position,
        ledger_bytes(Path::new(&dir)),
    );
    assert_eq!(after, before);
    // Placed after the head the failed batch left as it was.
    let snap = store.snapshot().unwrap();
    let placed = store.compare_and_append(&read(&snap, 11)).unwrap();
    assert!(matches!(placed, AppendResult::Committed(at) if at.seq == before.0.seq + 1));
}
