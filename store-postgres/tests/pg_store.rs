//! The PostgreSQL store against a real throwaway cluster (see tests/support): schema checks,
//! compare-and-append between instances, the group commit of call audits, byte-identical
//! records with the file store, checkpoints, export/import, LISTEN wake-ups, and an unreachable database.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bernstein_core::ledger::{Append, AppendResult, LedgerPosition, Store, StoreError};
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_store_postgres::schema::{self, SchemaError};
use bernstein_store_postgres::{PgOptions, PoolOptions, transfer};
use postgres::{Client, NoTls};
use support::*;

#[test]
fn schema_must_be_migrated_explicitly_and_known() {
    let Some(url) = fresh_db("schema") else {
        return;
    };
    let err = PgStore::open(&url, KEY.to_vec(), PgOptions::default()).unwrap_err();
    assert!(err.to_string().contains("bernstein store migrate"), "{err}");
    assert_eq!(bernstein_store_postgres::migrate(&url).unwrap(), vec![1]);
    assert_eq!(
        bernstein_store_postgres::migrate(&url).unwrap(),
        Vec::<i32>::new()
    );
    drop(open(&url));
    let mut c = Client::connect(&url, NoTls).unwrap();
    c.execute(
        "INSERT INTO bernstein_schema_version (version, name) VALUES (99, 'future')",
        &[],
    )
    .unwrap();
    assert!(matches!(
        schema::check(&mut c),
        Err(SchemaError::Newer { found: 99, .. })
    ));
    let err = PgStore::open(&url, KEY.to_vec(), PgOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("newer than this server knows"),
        "{err}"
    );
    assert!(bernstein_store_postgres::migrate(&url).is_err());
}

#[test]
fn records_are_byte_identical_to_the_file_store() {
    let Some(url) = migrated_db("bytes") else {
        return;
    };
    let pg = open(&url);
    let dir = TestDir::new("bytes-file");
    let file = FileStore::open(dir.path(), KEY.to_vec()).unwrap();
    for n in 0..20 {
        let (a, ra) = append_drafts(&pg, txn(n));
        let (b, rb) = append_drafts(&file, txn(n));
        assert!(matches!(a, AppendResult::Committed(_)));
        assert_eq!(a, b);
        assert_eq!(ra, rb);
    }
    assert_eq!(
        snapshot_json(&pg.snapshot().unwrap()),
        snapshot_json(&file.snapshot().unwrap())
    );
    let out = TestDir::new("bytes-export");
    let done = transfer::export(pg.pool(), Some(KEY), out.path()).unwrap();
    assert_eq!(done.copied, 40);
    let exported = std::fs::read(out.path().join(".sdd/ledger/ledger.jsonl")).unwrap();
    let original = std::fs::read(dir.path().join(".sdd/ledger/ledger.jsonl")).unwrap();
    assert_eq!(exported, original);
    // Export never overwrites.
    assert!(transfer::export(pg.pool(), Some(KEY), out.path()).is_err());
}

#[test]
fn a_stale_append_conflicts_and_is_never_merged() {
    let Some(url) = migrated_db("conflict") else {
        return;
    };
    let a = open(&url);
    let b = open(&url);
    let genesis = b.snapshot().unwrap().position;
    let (first, _) = append_drafts(&a, txn(1));
    let AppendResult::Committed(head) = first else {
        panic!("{first:?}")
    };
    // b still holds the genesis snapshot: an append built on it is refused.
    let stale = bernstein_core::ledger::seal(&genesis, |_| Default::default(), txn(2), KEY);
    let got = b
        .compare_and_append(&Append {
            expected: genesis,
            read_heads: None,
            records: stale,
        })
        .unwrap();
    assert_eq!(got, AppendResult::Conflict { current: head });
    // Nothing of the stale append was written; b sees a's records.
    assert_eq!(b.snapshot().unwrap().position, head);
    assert_eq!(a.snapshot().unwrap().position.seq, 2);
    // An empty append at the head commits nothing and succeeds.
    let same = b
        .compare_and_append(&Append {
            expected: head,
            read_heads: None,
            records: vec![],
        })
        .unwrap();
    assert_eq!(same, AppendResult::Committed(head));
}

#[test]
fn racing_writers_on_three_instances_lose_nothing() {
    let Some(url) = migrated_db("race") else {
        return;
    };
    let stores: Vec<Arc<PgStore>> = (0..3).map(|_| Arc::new(open(&url))).collect();
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let store = stores[t % 3].clone();
            std::thread::spawn(move || {
                let mut attempts = 0;
                for i in 0..25 {
                    attempts += append_retrying(&*store, || txn((t * 100 + i) as u64));
                }
                attempts
            })
        })
        .collect();
    let attempts: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(attempts >= 150);
    let heads: Vec<LedgerPosition> = stores
        .iter()
        .map(|s| s.snapshot().unwrap().position)
        .collect();
    assert_eq!(heads[0].seq, 300);
    assert!(heads.iter().all(|h| *h == heads[0]));
    let out = TestDir::new("race-export");
    let done = transfer::export(stores[0].pool(), Some(KEY), out.path()).unwrap();
    assert_eq!(done.report.records, 300);
    assert_eq!(done.report.transactions, 150);
}

/// The drafts of a call that wrote nothing: its audit record alone.
fn call_audit(body: serde_json::Value) -> Vec<bernstein_core::ledger::Draft> {
    vec![bernstein_core::ledger::Draft::new(
        "audit",
        "mcp.stateless_call",
        body,
    )]
}

#[test]
fn call_audits_of_three_instances_commit_without_refusing_each_other() {
    let Some(url) = migrated_db("call_audits") else {
        return;
    };
    let stores: Vec<Arc<PgStore>> = (0..3).map(|_| Arc::new(open(&url))).collect();
    // Every append is built on the snapshot the thread read first, so all but the first are
    // stale by the time they arrive: as compare-and-append they would all be refused.
    let threads: Vec<_> = (0..12)
        .map(|t| {
            let store = stores[t % 3].clone();
            std::thread::spawn(move || {
                let snap = store.snapshot().unwrap();
                for i in 0..20 {
                    let body = serde_json::json!({"tool": "bernstein_status", "call_id": format!("c-{t}-{i}"), "ok": true});
                    let records = bernstein_core::ledger::seal(
                        &snap.position,
                        |s| snap.stream_head(s),
                        call_audit(body.clone()),
                        KEY,
                    );
                    let append = Append {
                        expected: snap.position,
                        read_heads: None,
                        records,
                    };
                    let got = store.compare_and_append(&append).unwrap();
                    let AppendResult::Committed(at) = got else {
                        panic!("call audit {t}-{i}: {got:?}")
                    };
                    assert!(at.seq > snap.position.seq);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let heads: Vec<LedgerPosition> = stores
        .iter()
        .map(|s| s.snapshot().unwrap().position)
        .collect();
    assert_eq!(heads[0].seq, 240);
    assert!(heads.iter().all(|h| *h == heads[0]));
    // Each call's record is there exactly once, each its own transaction, and the whole ledger
    // verifies offline.
    let out = TestDir::new("call-audits-export");
    let done = transfer::export(stores[0].pool(), Some(KEY), out.path()).unwrap();
    assert_eq!(done.report.records, 240);
    assert_eq!(done.report.transactions, 240);
    let text = std::fs::read_to_string(out.path().join(".sdd/ledger/ledger.jsonl")).unwrap();
    for t in 0..12 {
        for i in 0..20 {
            let needle = format!("\"call_id\":\"c-{t}-{i}\"");
            assert_eq!(text.matches(&needle).count(), 1, "{needle}");
        }
    }
}

#[test]
fn a_write_that_names_what_it_read_is_placed_after_other_instances_commits_until_that_moves() {
    let Some(url) = migrated_db("write_moves") else {
        return;
    };
    let a = open(&url);
    let b = open(&url);
    let note = |stream: &str, n: u64| {
        bernstein_core::ledger::Draft::new(stream, "test.note", serde_json::json!({ "n": n }))
    };
    append_retrying(&a, || vec![note("run:T-1", 1)]);
    // b decides a write to run T-1 on what it read; meanwhile a commits a read, a write
    // to another run and a mixed transaction without the run.
    let read = b.snapshot().unwrap();
    let write = |call: &str| {
        let mut drafts = vec![note("run:T-1", 2)];
        drafts.extend(call_audit(serde_json::json!({"tool": "bernstein_complete",
            "call_id": call, "ok": true, "run_id": "T-1", "journal_head": "at placement"})));
        Append {
            expected: read.position,
            read_heads: Some(vec![("run:T-1".into(), read.stream_head("run:T-1"))]),
            records: bernstein_core::ledger::seal(
                &read.position,
                |s| read.stream_head(s),
                drafts,
                KEY,
            ),
        }
    };
    append_retrying(&a, || {
        call_audit(serde_json::json!({"tool": "bernstein_status", "ok": true}))
    });
    append_retrying(&a, || vec![note("run:T-2", 1)]);
    append_retrying(&a, || txn(3));
    let head = a.snapshot().unwrap().position;
    let placed = b.compare_and_append(&write("w-1")).unwrap();
    let AppendResult::Committed(at) = placed else {
        panic!("a write whose stream stood was refused: {placed:?}")
    };
    assert_eq!(at.seq, head.seq + 2);
    let mut lines = Vec::new();
    a.scan_lines(&mut |l| {
        lines.push(serde_json::from_slice::<serde_json::Value>(l).unwrap());
        true
    })
    .unwrap();
    let [.., journal, audit] = lines.as_slice() else {
        panic!("two records were placed")
    };
    assert_eq!(audit["body"]["call_id"], "w-1");
    assert_eq!(audit["body"]["journal_head"], journal["hash"]);
    assert_eq!(
        audit["body"]["read_at"],
        serde_json::json!(read.position.seq)
    );
    // Its own placement moved run T-1: decided on the old head, it is refused now.
    let current = a.snapshot().unwrap().position;
    assert_eq!(
        b.compare_and_append(&write("w-2")).unwrap(),
        AppendResult::Conflict { current }
    );
    assert_eq!(a.snapshot().unwrap().position, current);
}

#[test]
fn concurrent_reads_and_writes_of_one_instance_land_and_only_a_write_whose_read_moved_is_refused() {
    let Some(url) = migrated_db("mixed_batches") else {
        return;
    };
    let store = Arc::new(open(&url));
    let read = store.snapshot().unwrap();
    // Every thread decides on the same snapshot: a write to a run of its own and a read, and
    // threads 0 and 1 also a write to one shared run (which only one of them may make).
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let (store, read) = (store.clone(), read.clone());
            std::thread::spawn(move || {
                let write = |stream: &str| {
                    let drafts = vec![
                        bernstein_core::ledger::Draft::new(
                            stream,
                            "test.note",
                            serde_json::json!({ "t": t }),
                        ),
                        call_audit(serde_json::json!({"tool": "w", "ok": true}))
                            .pop()
                            .unwrap(),
                    ];
                    let records = bernstein_core::ledger::seal(
                        &read.position,
                        |s| read.stream_head(s),
                        drafts,
                        KEY,
                    );
                    Append {
                        expected: read.position,
                        read_heads: Some(vec![(stream.into(), read.stream_head(stream))]),
                        records,
                    }
                };
                let body =
                    serde_json::json!({"tool": "bernstein_status", "call_id": format!("c-{t}"), "ok": true});
                let records = bernstein_core::ledger::seal(
                    &read.position,
                    |s| read.stream_head(s),
                    call_audit(body),
                    KEY,
                );
                let reading = Append {
                    expected: read.position,
                    read_heads: None,
                    records,
                };
                let own = store
                    .compare_and_append(&write(&format!("run:T-{t}")))
                    .unwrap();
                let got = store.compare_and_append(&reading).unwrap();
                assert!(matches!(own, AppendResult::Committed(_)), "{own:?}");
                assert!(matches!(got, AppendResult::Committed(_)), "{got:?}");
                (t < 2).then(|| store.compare_and_append(&write("run:shared")).unwrap())
            })
        })
        .collect();
    let shared: Vec<AppendResult> = threads
        .into_iter()
        .filter_map(|t| t.join().unwrap())
        .collect();
    let won = shared
        .iter()
        .filter(|r| matches!(r, AppendResult::Committed(_)))
        .count();
    assert_eq!(won, 1, "{shared:?}");
    // 8 own writes and 1 shared (two records each), 8 reads; the ledger verifies offline.
    let out = TestDir::new("mixed-batches-export");
    let done = transfer::export(store.pool(), Some(KEY), out.path()).unwrap();
    assert_eq!(done.report.records, 9 * 2 + 8);
    assert_eq!(done.report.transactions, 9 + 8);
}

#[test]
fn a_call_audit_moves_after_any_head_and_names_the_snapshot_it_was_served_from() {
    let Some(url) = migrated_db("call_audit_stale") else {
        return;
    };
    let a = open(&url);
    let b = open(&url);
    let journal = |n: u64| {
        vec![bernstein_core::ledger::Draft::new(
            "run:T-1",
            "test.note",
            serde_json::json!({ "n": n }),
        )]
    };
    append_retrying(&a, || journal(1));
    // b reads run T-1 at its journal's head, then a writes to another stream and to T-1.
    let read = b.snapshot().unwrap();
    let read_head = read.stream_head("run:T-1");
    let poll = |call: &str| {
        let body = serde_json::json!({"tool": "bernstein_run_status", "call_id": call,
            "ok": true, "run_id": "T-1", "journal_head": read_head.to_string()});
        Append {
            expected: read.position,
            read_heads: None,
            records: bernstein_core::ledger::seal(
                &read.position,
                |s| read.stream_head(s),
                call_audit(body),
                KEY,
            ),
        }
    };
    append_retrying(&a, || txn(2));
    let moved = b.compare_and_append(&poll("c-1")).unwrap();
    assert!(
        matches!(moved, AppendResult::Committed(at) if at.seq == 4),
        "{moved:?}"
    );
    append_retrying(&a, || journal(3));
    // The journal it read moved: a read has no precondition, so it is placed all the same and
    // names the snapshot it was served from.
    let later = b.compare_and_append(&poll("c-2")).unwrap();
    assert!(
        matches!(later, AppendResult::Committed(at) if at.seq == 6),
        "{later:?}"
    );
    let placed = a.snapshot().unwrap();
    assert_eq!(placed.position.seq, 6);
    let mut line = None;
    a.scan_lines(&mut |l| {
        let needle = b"\"c-2\"";
        if l.windows(needle.len()).any(|w| w == needle) {
            line = Some(l.to_vec());
        }
        true
    })
    .unwrap();
    let line: serde_json::Value = serde_json::from_slice(&line.unwrap()).unwrap();
    assert_eq!(
        line["body"]["read_at"],
        serde_json::json!(read.position.seq)
    );
    let current = placed.position;
    // A call that wrote something besides its audit record stays compare-and-append.
    let mut drafts = journal(4);
    drafts.extend(call_audit(serde_json::json!({"tool": "bernstein_run"})));
    let written = Append {
        expected: read.position,
        read_heads: None,
        records: bernstein_core::ledger::seal(&read.position, |s| read.stream_head(s), drafts, KEY),
    };
    assert!(matches!(
        b.compare_and_append(&written).unwrap(),
        AppendResult::Conflict { .. }
    ));
    // A record sealed under another key is never sealed again under this one: stale, it is a
    // conflict; at the head, it is refused.
    let forged = |at: LedgerPosition| Append {
        expected: at,
        read_heads: None,
        records: bernstein_core::ledger::seal(
            &at,
            |s| b.snapshot().unwrap().stream_head(s),
            call_audit(serde_json::json!({"tool": "bernstein_status"})),
            b"another key, not the audit key.",
        ),
    };
    let stale = b.compare_and_append(&forged(read.position)).unwrap();
    assert!(matches!(stale, AppendResult::Conflict { .. }), "{stale:?}");
    assert!(matches!(
        b.compare_and_append(&forged(current)),
        Err(StoreError::Unavailable(m)) if m.contains("malformed")
    ));
    assert_eq!(b.snapshot().unwrap().position.seq, 6);
}

#[test]
fn a_new_instance_starts_from_the_checkpoint() {
    let Some(url) = migrated_db("checkpoint") else {
        return;
    };
    let options = PgOptions {
        checkpoint_every: 10,
        ..PgOptions::default()
    };
    let a = PgStore::open(&url, KEY.to_vec(), options.clone()).unwrap();
    for n in 0..12 {
        append_retrying(&a, || txn(n));
    }
    a.checkpoint().unwrap();
    let head = a.snapshot().unwrap().position;
    let b = PgStore::open(&url, KEY.to_vec(), options.clone()).unwrap();
    assert_eq!(b.snapshot().unwrap().position, head);
    // Alter record 1 behind the store's back: the open verifies the prefix before the
    // checkpoint too, so it is refused at record 1 with or without the checkpoint.
    let mut c = Client::connect(&url, NoTls).unwrap();
    let altered = c.execute(
        "UPDATE bernstein_ledger SET line = convert_to(replace(convert_from(line, 'UTF8'), '\"n\":0', '\"n\":9'), 'UTF8') WHERE seq = 1",
        &[],
    )
    .unwrap();
    assert_eq!(altered, 1);
    let err = PgStore::open(&url, KEY.to_vec(), options.clone()).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { seq: 1, .. }), "{err}");
    c.execute("DELETE FROM bernstein_checkpoint", &[]).unwrap();
    let err = PgStore::open(&url, KEY.to_vec(), options).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { seq: 1, .. }), "{err}");
}

#[test]
fn a_due_checkpoint_is_written_by_the_writer_thread_which_then_rests() {
    let Some(url) = migrated_db("checkpoint_writer") else {
        return;
    };
    // A rest of a million times the first write's duration: minutes at least.
    let options = PgOptions {
        checkpoint_every: 2,
        checkpoint_rest: 1_000_000,
        ..PgOptions::default()
    };
    let mut c = Client::connect(&url, NoTls).unwrap();
    let mut checkpointed = || -> Option<i64> {
        c.query_opt("SELECT seq FROM bernstein_checkpoint", &[])
            .unwrap()
            .map(|row| row.get(0))
    };
    let a = PgStore::open(&url, KEY.to_vec(), options.clone()).unwrap();
    append_retrying(&a, || txn(0));
    append_retrying(&a, || txn(1));
    a.snapshot().unwrap();
    a.flush_checkpoints();
    let first = checkpointed().expect("a checkpoint fell due and was written");
    assert!(first >= 2, "{first}");
    // Due again while the writer rests: nothing is handed over, nothing written.
    for n in 2..6 {
        append_retrying(&a, || txn(n));
    }
    a.snapshot().unwrap();
    a.flush_checkpoints();
    assert_eq!(checkpointed(), Some(first));
    // A new instance starts from it.
    let head = a.snapshot().unwrap().position;
    let b = PgStore::open(&url, KEY.to_vec(), options).unwrap();
    assert_eq!(b.snapshot().unwrap().position, head);
}

#[test]
fn import_and_export_round_trip_through_the_file_format() {
    let Some(url) = migrated_db("import") else {
        return;
    };
    let src = TestDir::new("import-src");
    {
        let file = FileStore::open(src.path(), KEY.to_vec()).unwrap();
        for n in 0..30 {
            append_drafts(&file, txn(n));
        }
    }
    let pg = open(&url);
    let done = transfer::import(pg.pool(), KEY, src.path()).unwrap();
    assert_eq!(done.copied, 60);
    // Again: nothing left to copy.
    assert_eq!(
        transfer::import(pg.pool(), KEY, src.path()).unwrap().copied,
        0
    );
    // A wrong key is refused before anything is written.
    assert!(transfer::import(pg.pool(), b"wrong", src.path()).is_err());
    assert_eq!(pg.snapshot().unwrap().position.seq, 60);
    let out = TestDir::new("import-out");
    transfer::export(pg.pool(), Some(KEY), out.path()).unwrap();
    assert_eq!(
        std::fs::read(out.path().join(".sdd/ledger/ledger.jsonl")).unwrap(),
        std::fs::read(src.path().join(".sdd/ledger/ledger.jsonl")).unwrap()
    );
    // The file store opens the export and folds the same projection.
    let reopened = FileStore::open(out.path(), KEY.to_vec()).unwrap();
    assert_eq!(
        snapshot_json(&reopened.snapshot().unwrap()),
        snapshot_json(&pg.snapshot().unwrap())
    );
    // A different ledger is refused.
    let other = TestDir::new("import-other");
    {
        let file = FileStore::open(other.path(), KEY.to_vec()).unwrap();
        for n in 100..140 {
            append_drafts(&file, txn(n));
        }
    }
    let err = transfer::import(pg.pool(), KEY, other.path()).unwrap_err();
    assert!(err.contains("different ledger"), "{err}");
}

#[test]
fn waits_wake_on_another_instances_commit() {
    let Some(url) = migrated_db("listen") else {
        return;
    };
    let a = Arc::new(open(&url));
    let b = open(&url);
    let at = a.snapshot().unwrap().position;
    // Let the listener connect.
    std::thread::sleep(Duration::from_millis(300));
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        append_retrying(&b, || txn(1));
    });
    let started = Instant::now();
    assert!(a.wait_for_commit(&at, Duration::from_secs(20)));
    let waited = started.elapsed();
    writer.join().unwrap();
    assert!(waited < Duration::from_secs(5), "woke after {waited:?}");
    assert_eq!(a.snapshot().unwrap().position.seq, 2);
    // Nothing new: the wait times out.
    let now = a.snapshot().unwrap().position;
    assert!(!a.wait_for_commit(&now, Duration::from_millis(300)));
}

#[test]
fn an_unreachable_database_is_a_clear_unavailable_error() {
    // A port nothing listens on (the cluster's own port range starts above it).
    let url = "postgres://postgres@127.0.0.1:1/none";
    let started = Instant::now();
    let options = PgOptions {
        pool: PoolOptions {
            connect_timeout: Duration::from_secs(2),
            ..PoolOptions::default()
        },
        ..PgOptions::default()
    };
    let err = PgStore::open(url, KEY.to_vec(), options).unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err}");
    assert!(err.to_string().contains("PostgreSQL"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn the_pool_is_bounded_and_a_checkout_times_out() {
    let Some(url) = migrated_db("pool") else {
        return;
    };
    let pool = bernstein_store_postgres::pool::Pool::new(
        &url,
        PoolOptions {
            max_size: 2,
            checkout_timeout: Duration::from_millis(300),
            ..PoolOptions::default()
        },
    )
    .unwrap();
    let a = pool.get().unwrap();
    let mut b = pool.get().unwrap();
    let started = Instant::now();
    let err = pool.get().unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(
        err.to_string().contains("no free PostgreSQL connection"),
        "{err}"
    );
    // A connection that saw an error is closed, not returned; its slot is free again.
    b.discard();
    drop(b);
    let mut c = pool.get().unwrap();
    assert_eq!(
        c.client()
            .query_one("SELECT 1", &[])
            .unwrap()
            .get::<_, i32>(0),
        1
    );
    drop(a);
}
