//! Torn-tail recovery of the file store: a ledger made of the first k whole transactions of the
//! fixture followed by fuzzed bytes (a cut-off copy of the next transaction with an edit, or
//! raw bytes) is written to a temporary `.sdd/` and opened with `FileStore::open`, which must
//! cut an unfinished append and refuse corruption.
//! Invariants: no panic; an open that succeeds leaves a file that is a prefix of what was
//! written, at least the k clean transactions long, that verifies, and whose snapshot is the
//! verifier's head; an open that fails reports corruption (never an IO error) and leaves the
//! file untouched, and the bytes after the clean prefix then hold a complete bad line.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use bernstein_core::ledger::verify::verify_ledger;
use bernstein_core::ledger::{Store, StoreError};
use bernstein_fuzz::fixture;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use libfuzzer_sys::fuzz_target;

/// One project directory per fuzzing process: under `$BERNSTEIN_FUZZ_TMP` (the smoke script
/// points it at a directory it removes afterwards), else in memory when /dev/shm exists.
fn project() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = match std::env::var_os("BERNSTEIN_FUZZ_TMP") {
            Some(dir) => PathBuf::from(dir),
            None if std::path::Path::new("/dev/shm").is_dir() => PathBuf::from("/dev/shm"),
            None => std::env::temp_dir(),
        };
        let dir = base.join(format!("bernstein-fuzz-torn-tail-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".sdd/ledger")).expect("create the fuzz project dir");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&[k, mode, cut], tail)) = data.split_first_chunk::<3>() else {
        return;
    };
    let ends = fixture::transaction_ends();
    let k = usize::from(k) % ends.len();
    let clean = &fixture::LEDGER[..ends[k]];
    let mut bytes = clean.to_vec();
    if mode & 1 == 0 && k + 1 < ends.len() {
        // A torn copy of the next transaction: cut anywhere, with the fuzz bytes spliced in.
        let next = &fixture::LEDGER[ends[k]..ends[k + 1]];
        let at = usize::from(cut) * next.len() / 256;
        bytes.extend_from_slice(&next[..at]);
        bytes.extend_from_slice(&tail[..tail.len().min(64)]);
    } else {
        bytes.extend_from_slice(tail);
    }
    let dir = project();
    let ledger = dir.join(".sdd/ledger/ledger.jsonl");
    let _ = std::fs::remove_file(dir.join(".sdd/ledger/checkpoint.json"));
    std::fs::write(&ledger, &bytes).expect("write the fuzz ledger");
    let key = fixture::audit_key();
    match FileStore::open(dir, key.clone()) {
        Ok(store) => {
            let snapshot = store.snapshot().expect("a snapshot of an opened store");
            drop(store);
            let after = std::fs::read(&ledger).expect("read back");
            assert!(bytes.starts_with(&after), "open changed bytes it kept");
            assert!(
                after.len() >= clean.len(),
                "open cut into clean transactions"
            );
            let report = verify_ledger(&after, "ledger.jsonl", Some(&key))
                .unwrap_or_else(|f| panic!("the repaired ledger does not verify: {f}"));
            assert_eq!(report.head, snapshot.position);
        }
        Err(StoreError::Corrupt { line, .. }) => {
            let after = std::fs::read(&ledger).expect("read back");
            assert_eq!(after, bytes, "a refused open must not change the file");
            let clean_lines = clean.iter().filter(|&&b| b == b'\n').count() as u64;
            assert!(
                line > clean_lines,
                "corruption reported inside the clean prefix (line {line})"
            );
            assert!(
                bytes[clean.len()..].contains(&b'\n'),
                "corruption without a complete line"
            );
        }
        Err(e) => panic!("open failed with a non-corruption error: {e}"),
    }
});
