//! The scrub over the PostgreSQL store (`bernstein_os::scrub`, `store-postgres/src/scrub.rs`),
//! against a real throwaway cluster: a clean ledger passes up to the folded head; a row's line
//! edited in place with SQL, a row's hash column changed, a row deleted, or the whole table
//! rewritten consistently under the key are found, after which the store serves nothing; the
//! scrub thread finds an edit within its interval and ends with the store.

mod support;

use std::sync::Arc;
use std::time::Duration;

use bernstein_core::ledger::Store;
use bernstein_os::scrub::{Problem, ScrubPolicy, Scrubbed, pass, start};
use postgres::{Client, NoTls};
use support::*;

const FAST: ScrubPolicy = ScrubPolicy {
    every: Duration::from_millis(20),
    bytes_per_sec: 1 << 30,
};

/// A store holding three transactions of [`txn`] (six records), numbered from `from`.
fn filled_from(name: &str, from: u64) -> Option<(String, PgStore)> {
    let url = migrated_db(name)?;
    let store = open(&url);
    for n in from..from + 3 {
        append_retrying(&store, || txn(n));
    }
    Some((url, store))
}

fn filled(name: &str) -> Option<(String, PgStore)> {
    filled_from(name, 0)
}

fn sql(url: &str, statement: &str) -> u64 {
    let mut c = Client::connect(url, NoTls).unwrap();
    c.execute(statement, &[]).unwrap()
}

/// Edits record 3's body in place ("n":1 becomes "n":8): same length, columns untouched.
const EDIT_RECORD_3: &str = r#"UPDATE bernstein_ledger SET line = convert_to(replace(convert_from(line, 'UTF8'), '"n":1', '"n":8'), 'UTF8') WHERE seq = 3"#;

fn found(r: Result<bernstein_core::ledger::LedgerPosition, Problem>) -> String {
    match r {
        Err(Problem::Found(reason)) => reason,
        other => panic!("nothing was found: {other:?}"),
    }
}

#[test]
fn a_clean_ledger_passes_up_to_its_head_and_batches_join_up() {
    let Some((_, store)) = filled("scrub_clean") else {
        return;
    };
    let head = store.verified_head().unwrap();
    assert_eq!(head.seq, 6);
    assert_eq!(pass(&store, FAST, Some(&head)), Ok(head));
    // More records than a batch: the keyset reads join up, the next pass anchors on the last.
    let many = bernstein_store_postgres::scrub::SCRUB_BATCH as u64 / 2 + 1;
    for n in 0..many {
        append_retrying(&store, || txn(100 + n));
    }
    let next = pass(&store, FAST, Some(&head)).unwrap();
    assert_eq!(next.seq, 6 + 2 * many);
    assert_eq!(next, store.snapshot().unwrap().position);
}

#[test]
fn a_line_edited_in_place_is_found_and_the_store_then_serves_nothing() {
    let Some((url, store)) = filled("scrub_edit") else {
        return;
    };
    let head = store.verified_head().unwrap();
    assert_eq!(sql(&url, EDIT_RECORD_3), 1);
    // The store itself does not read old rows again.
    assert!(store.snapshot().is_ok() && store.check_writable().is_ok());
    let reason = found(pass(&store, FAST, Some(&head)));
    assert!(
        reason.contains("postgres:bernstein_ledger line 3 (record 3) no longer verifies")
            && reason.contains("audit verify --store"),
        "{reason}"
    );
    assert!(store.finding().set(reason.clone()).is_ok());
    bernstein_store_file::refusing::assert_refuses_all(&store, &reason, head);
}

#[test]
fn a_hash_column_changed_or_a_row_deleted_is_found() {
    let Some((url, store)) = filled("scrub_columns") else {
        return;
    };
    let head = store.verified_head().unwrap();
    // The last row's hash column (no row references it), its record left alone.
    let n = sql(
        &url,
        "UPDATE bernstein_ledger SET hash = sha256(hash) WHERE seq = 6",
    );
    assert_eq!(n, 1);
    let reason = found(pass(&store, FAST, Some(&head)));
    assert!(
        reason.contains("record 6") && reason.contains("hash column"),
        "{reason}"
    );
    assert_eq!(sql(&url, "DELETE FROM bernstein_ledger WHERE seq >= 5"), 2);
    let reason = found(pass(&store, FAST, Some(&head)));
    assert!(
        reason.contains("has no record 5") && reason.contains("folded 6"),
        "{reason}"
    );
}

#[test]
fn a_ledger_rewritten_consistently_under_the_key_is_found_by_its_anchor() {
    let Some((url, store)) = filled("scrub_rewrite") else {
        return;
    };
    let head = store.verified_head().unwrap();
    // Another ledger sealed under the same key (other numbers), one transaction longer.
    let Some((other_url, other)) = filled_from("scrub_rewrite_other", 10) else {
        return;
    };
    append_retrying(&other, || txn(20));
    drop(other);
    // Replace every row by the other ledger's.
    let rows = Client::connect(&other_url, NoTls)
        .unwrap()
        .query(
            "SELECT seq, prev, hash, stream, line FROM bernstein_ledger ORDER BY seq",
            &[],
        )
        .unwrap();
    let mut c = Client::connect(&url, NoTls).unwrap();
    let mut tx = c.transaction().unwrap();
    tx.execute("DELETE FROM bernstein_ledger", &[]).unwrap();
    for r in &rows {
        let (seq, prev, hash, stream, line): (i64, Vec<u8>, Vec<u8>, String, Vec<u8>) =
            (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
        tx.execute(
            "INSERT INTO bernstein_ledger (seq, prev, hash, stream, line) VALUES ($1, $2, $3, $4, $5)",
            &[&seq, &prev, &hash, &stream, &line],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    let alone = pass(&store, FAST, None);
    assert!(alone.is_ok(), "it verifies on its own: {alone:?}");
    let reason = found(pass(&store, FAST, Some(&head)));
    assert!(reason.contains("no longer end in the hash"), "{reason}");
}

#[test]
fn the_scrub_thread_finds_an_edit_within_its_interval_and_ends_with_the_store() {
    let Some((url, store)) = filled("scrub_thread") else {
        return;
    };
    let store = Arc::new(store);
    start(&store, FAST).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(store.check_writable().is_ok(), "a clean ledger stays ready");
    assert_eq!(sql(&url, EDIT_RECORD_3), 1);
    // The thread holds only a weak reference: the store goes when its last owner drops it.
    bernstein_store_file::refusing::assert_scrub_finds_edit(store);
}
