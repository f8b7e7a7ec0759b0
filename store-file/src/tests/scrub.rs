//! The scrub over a real file store: a clean ledger passes, and an old record edited in place,
//! a ledger rewritten consistently under the key, or one cut short are found, after which the
//! store serves nothing.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use bernstein_os::scrub::{Problem, ScrubPolicy, pass};

const FAST: ScrubPolicy = ScrubPolicy {
    every: Duration::from_millis(20),
    bytes_per_sec: 1 << 30,
};

/// Overwrites bytes of the ledger file in place (the same file, as an editor that writes in
/// place would).
fn write_in_place(dir: &Path, at: u64, bytes: &[u8]) {
    let ledger = Layout::in_project(dir).ledger_file();
    let f = OpenOptions::new().write(true).open(ledger).unwrap();
    f.write_at(bytes, at).unwrap();
}

/// The offset of `needle` in the ledger.
fn offset_of(dir: &Path, needle: &[u8]) -> u64 {
    let bytes = ledger_bytes(dir);
    bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap() as u64
}

#[test]
fn a_clean_ledger_passes_up_to_its_head() {
    let tmp = TestDir::new("scrub-clean");
    let store = open(tmp.path());
    fill(&store);
    let head = store.position_now().unwrap();
    assert_eq!(pass(&store, FAST, Some(&head)), Ok(head));
    // Later appends are verified by the next pass, anchored on the last.
    append(&store, vec![call(9)]);
    let next = pass(&store, FAST, Some(&head)).unwrap();
    assert_eq!(next.seq, head.seq + 1);
}

#[test]
fn an_old_record_edited_in_place_is_found_and_the_store_then_serves_nothing() {
    let tmp = TestDir::new("scrub-edit");
    let store = open(tmp.path());
    fill(&store);
    let head = store.position_now().unwrap();
    // Same length, so no reader of sizes notices: "note 0" becomes "note 7" in the second line.
    let at = offset_of(tmp.path(), b"note 0");
    write_in_place(tmp.path(), at + 5, b"7");
    // The store itself does not read old records again.
    assert!(store.snapshot().is_ok() && store.check_writable().is_ok());
    let Err(Problem::Found(reason)) = pass(&store, FAST, Some(&head)) else {
        panic!("the edit was not found");
    };
    assert!(
        reason.contains("line 2") && reason.contains("audit verify"),
        "{reason}"
    );
    assert!(store.found(reason.clone()));
    assert!(
        !store.found("a second finding".into()),
        "the first finding is kept"
    );
    crate::refusing::assert_refuses_all(&store, &reason, head);
}

#[test]
fn a_ledger_rewritten_consistently_under_the_key_is_found_by_its_anchor() {
    let tmp = TestDir::new("scrub-rewrite");
    let store = open(tmp.path());
    fill(&store);
    let head = store.position_now().unwrap();
    // Another ledger of the same shape and size, sealed under the same key (other digits),
    // written over this one: every record verifies, but the prefix no longer ends in the head
    // this store verified.
    let other = TestDir::new("scrub-rewrite-other");
    let forged = open(other.path());
    for (i, size) in [1u64, 3, 2, 3].into_iter().enumerate() {
        let mut drafts: Vec<Draft> = (0..size - 1)
            .map(|j| note(if j % 2 == 0 { "run:R" } else { "backlog" }, j + 5))
            .collect();
        drafts.push(call(i as u64 + 5));
        append(&forged, drafts);
    }
    let bytes = ledger_bytes(other.path());
    assert_eq!(bytes.len(), ledger_bytes(tmp.path()).len());
    write_in_place(tmp.path(), 0, &bytes);
    let alone = pass(&store, FAST, None);
    assert!(alone.is_ok(), "it verifies on its own: {alone:?}");
    let Err(Problem::Found(reason)) = pass(&store, FAST, Some(&head)) else {
        panic!("the rewrite was not found");
    };
    assert!(reason.contains("no longer end in the hash"), "{reason}");
}

#[test]
fn the_scrub_thread_finds_an_edit_within_its_interval_and_ends_with_the_store() {
    let tmp = TestDir::new("scrub-thread");
    let store = Arc::new(open(tmp.path()));
    fill(&store);
    bernstein_os::scrub::start(&store, FAST).unwrap();
    std::thread::sleep(Duration::from_millis(60));
    assert!(store.check_writable().is_ok(), "a clean ledger stays ready");
    let at = offset_of(tmp.path(), b"note 1");
    write_in_place(tmp.path(), at + 5, b"8");
    // The thread holds only a weak reference: the store goes when its last owner drops it.
    crate::refusing::assert_scrub_finds_edit(store);
}
