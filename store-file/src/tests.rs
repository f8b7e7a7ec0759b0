//! Tests of the file store in one process: compare-and-append, incremental snapshots, torn
//! tails, corruption, checkpoints. Several processes: tests/concurrent_writers.rs.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

use bernstein_core::digest::Digest;
use bernstein_core::ledger::verify::verify_ledger;
use bernstein_core::ledger::{Draft, LedgerPosition, Record, seal};
use serde_json::json;

use super::test_dir::TestDir;

/// The store as the server opens it, over the domain's projection.
type FileStore = super::FileStore<bernstein_domain::Projection>;
use super::*;

const KEY: &[u8] = &[7; 32];

fn note(stream: &str, n: u64) -> Draft {
    Draft::new(
        stream,
        "test.note",
        json!({"n": n, "text": format!("note {n}")}),
    )
}

fn call(n: u64) -> Draft {
    Draft::new(
        "audit",
        "mcp.stateless_call",
        json!({"tool": "t", "call_id": format!("c{n}"), "ok": true}),
    )
}

/// Seals `drafts` on top of the store's current snapshot and appends them.
fn append(store: &FileStore, drafts: Vec<Draft>) -> AppendResult {
    let snap = store.snapshot().unwrap();
    let records = seal(&snap.position, |s| snap.stream_head(s), drafts, KEY);
    store
        .compare_and_append(&Append {
            expected: snap.position,
            read_heads: None,
            records,
        })
        .unwrap()
}

/// Call `n` sealed on top of `snap`.
fn call_on(snap: &Snapshot<bernstein_domain::Projection>, n: u64) -> Append {
    Append {
        expected: snap.position,
        read_heads: None,
        records: seal(&snap.position, |s| snap.stream_head(s), vec![call(n)], KEY),
    }
}

fn open(dir: &Path) -> FileStore {
    FileStore::open(dir, KEY.to_vec()).unwrap()
}

fn ledger_bytes(dir: &Path) -> Vec<u8> {
    std::fs::read(Layout::in_project(dir).ledger_file()).unwrap()
}

/// A ledger of 4 transactions: sizes 1, 3, 2, 3.
fn fill(store: &FileStore) {
    for (i, size) in [1u64, 3, 2, 3].into_iter().enumerate() {
        let mut drafts: Vec<Draft> = (0..size - 1)
            .map(|j| note(if j % 2 == 0 { "run:R" } else { "backlog" }, j))
            .collect();
        drafts.push(call(i as u64));
        assert!(matches!(append(store, drafts), AppendResult::Committed(_)));
    }
}

#[test]
fn open_creates_the_layout_and_an_empty_ledger() {
    let tmp = TestDir::new("store-open");
    let store = open(tmp.path());
    let layout = Layout::in_project(tmp.path());
    assert!(layout.ledger_file().is_file());
    assert!(layout.lock_file().is_file());
    assert!(layout.runtime_dir().is_dir());
    assert_eq!(store.snapshot().unwrap().position, LedgerPosition::GENESIS);
    assert_eq!(store.sdd_dir(), layout.sdd);
}

#[test]
fn append_then_conflict_on_a_stale_head() {
    let tmp = TestDir::new("store-cas");
    let store = open(tmp.path());
    let genesis = store.snapshot().unwrap();
    let first = append(&store, vec![note("backlog", 1), call(1)]);
    let AppendResult::Committed(pos) = first else {
        panic!("{first:?}")
    };
    assert_eq!(pos.seq, 2);
    let len = ledger_bytes(tmp.path()).len();
    // A request computed from the old snapshot is refused and writes nothing.
    let stale = seal(
        &genesis.position,
        |_| Digest::ZERO,
        vec![note("backlog", 9)],
        KEY,
    );
    let res = store
        .compare_and_append(&Append {
            expected: genesis.position,
            read_heads: None,
            records: stale,
        })
        .unwrap();
    assert_eq!(res, AppendResult::Conflict { current: pos });
    assert_eq!(ledger_bytes(tmp.path()).len(), len);
    // An empty append at the head commits nothing.
    let res = store
        .compare_and_append(&Append {
            expected: pos,
            read_heads: None,
            records: vec![],
        })
        .unwrap();
    assert_eq!(res, AppendResult::Committed(pos));
    let report = verify_ledger(&ledger_bytes(tmp.path()), "l", Some(KEY)).unwrap();
    assert_eq!(report.head, pos);
    assert_eq!(report.transactions, 1);
}

#[test]
fn a_stale_call_that_wrote_nothing_is_placed_after_the_head_and_names_where_it_was_served() {
    let tmp = TestDir::new("store-rebase");
    let store = open(tmp.path());
    assert!(matches!(
        append(&store, vec![note("run:R", 1)]),
        AppendResult::Committed(_)
    ));
    let read = store.snapshot().unwrap();
    let journal = read.stream_head("run:R");
    let poll = |call_id: &str| {
        let body = json!({"tool": "poll", "call_id": call_id, "ok": true, "run_id": "R",
                          "journal_head": journal.to_string()});
        let records = seal(
            &read.position,
            |s| read.stream_head(s),
            vec![Draft::new("audit", "mcp.stateless_call", body)],
            KEY,
        );
        Append {
            expected: read.position,
            read_heads: None,
            records,
        }
    };
    // Others append meanwhile: calls that wrote nothing, and a note elsewhere.
    for n in 0..3 {
        assert!(matches!(
            append(&store, vec![call(n)]),
            AppendResult::Committed(_)
        ));
    }
    assert!(matches!(
        append(&store, vec![note("backlog", 2)]),
        AppendResult::Committed(_)
    ));
    let head = store.snapshot().unwrap().position;
    let got = store.compare_and_append(&poll("p-1")).unwrap();
    let AppendResult::Committed(at) = got else {
        panic!("a stale read was refused: {got:?}")
    };
    assert_eq!(at.seq, head.seq + 1);
    // Its run's journal moves: the read has no precondition, so it is placed all the same,
    // still naming the journal head it read and the snapshot it was served from.
    assert!(matches!(
        append(&store, vec![note("run:R", 3)]),
        AppendResult::Committed(_)
    ));
    let current = store.snapshot().unwrap().position;
    let got = store.compare_and_append(&poll("p-2")).unwrap();
    assert_eq!(
        got,
        AppendResult::Committed(store.snapshot().unwrap().position)
    );
    let text = String::from_utf8(ledger_bytes(tmp.path())).unwrap();
    let placed = text.lines().find(|l| l.contains("\"p-2\"")).unwrap();
    let placed: serde_json::Value = serde_json::from_str(placed).unwrap();
    assert_eq!(placed["seq"], json!(current.seq + 1));
    assert_eq!(placed["body"]["read_at"], json!(read.position.seq));
    assert_eq!(placed["body"]["journal_head"], json!(journal.to_string()));
    let current = store.snapshot().unwrap().position;
    // A stale call record not sealed under the store's key is never sealed again.
    let forged = Append {
        expected: read.position,
        read_heads: None,
        records: seal(
            &read.position,
            |s| read.stream_head(s),
            vec![call(9)],
            &[8; 32],
        ),
    };
    let got = store.compare_and_append(&forged).unwrap();
    assert_eq!(got, AppendResult::Conflict { current });
    let bytes = ledger_bytes(tmp.path());
    let report = verify_ledger(&bytes, "l", Some(KEY)).unwrap();
    assert_eq!(report.transactions, 8);
    assert_eq!(
        String::from_utf8(bytes).unwrap().matches("\"p-1\"").count(),
        1
    );
}

#[test]
fn a_stale_write_is_placed_after_the_head_while_what_it_read_stands_and_refused_once_it_moved() {
    let tmp = TestDir::new("store-write-moves");
    let store = open(tmp.path());
    assert!(matches!(
        append(&store, vec![note("backlog", 1), note("run:R", 1)]),
        AppendResult::Committed(_)
    ));
    let read = store.snapshot().unwrap();
    // A write decided on `read`: it names the backlog and run R's journal, and writes both.
    let write = |call_id: &str| {
        let body = json!({"tool": "complete", "call_id": call_id, "ok": true, "run_id": "R",
                          "journal_head": "sealed again at placement"});
        let drafts = vec![
            note("backlog", 2),
            note("run:R", 2),
            Draft::new("audit", "mcp.stateless_call", body),
        ];
        Append {
            expected: read.position,
            read_heads: Some(vec![
                ("backlog".into(), read.stream_head("backlog")),
                ("run:R".into(), read.stream_head("run:R")),
            ]),
            records: seal(&read.position, |s| read.stream_head(s), drafts, KEY),
        }
    };
    // Others append meanwhile: calls that wrote nothing, and a write to another run.
    for n in 0..3 {
        assert!(matches!(
            append(&store, vec![call(n)]),
            AppendResult::Committed(_)
        ));
    }
    assert!(matches!(
        append(&store, vec![note("run:S", 1)]),
        AppendResult::Committed(_)
    ));
    let head = store.snapshot().unwrap().position;
    let got = store.compare_and_append(&write("w-1")).unwrap();
    let AppendResult::Committed(at) = got else {
        panic!("a write whose streams stood was refused: {got:?}")
    };
    assert_eq!(at.seq, head.seq + 3);
    let text = String::from_utf8(ledger_bytes(tmp.path())).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let audit = lines
        .iter()
        .find(|l| l["body"]["call_id"] == "w-1")
        .unwrap();
    let journal = &lines[lines.len() - 2];
    assert_eq!(journal["stream"], "run:R");
    assert_eq!(audit["body"]["journal_head"], journal["hash"]);
    assert_eq!(audit["body"]["read_at"], json!(read.position.seq));
    // Now the backlog it read has moved (by its own first placement): the same write is
    // refused, and nothing is written.
    let current = store.snapshot().unwrap().position;
    let got = store.compare_and_append(&write("w-2")).unwrap();
    assert_eq!(got, AppendResult::Conflict { current });
    let bytes = ledger_bytes(tmp.path());
    let report = verify_ledger(&bytes, "l", Some(KEY)).unwrap();
    assert_eq!(report.transactions, 6);
    assert!(!String::from_utf8(bytes).unwrap().contains("\"w-2\""));
}

#[test]
fn malformed_appends_are_refused_without_writing() {
    let tmp = TestDir::new("store-malformed");
    let store = open(tmp.path());
    let snap = store.snapshot().unwrap();
    let unreadable = |records: Vec<Record>| {
        let err = store
            .compare_and_append(&Append {
                expected: snap.position,
                read_heads: None,
                records,
            })
            .unwrap_err();
        assert!(err.to_string().contains("would not read back"), "{err}");
    };
    // Sealed under another key: would not read back.
    unreadable(seal(
        &snap.position,
        |_| Digest::ZERO,
        vec![call(1)],
        b"other key",
    ));
    // A body nested deeper than a reader parses: it would not read back either.
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    let recs = seal(
        &snap.position,
        |_| Digest::ZERO,
        vec![Draft::new("a", "note", deep)],
        KEY,
    );
    let line = recs[0].to_line();
    let line = &line[..line.len() - 1];
    let key = RecordKey::new(KEY);
    assert!(ledger_file::read_line(line, &key).is_err());
    assert_eq!(
        ledger_file::check_line(line, &key).is_err(),
        ledger_file::read_line(line, &key).is_err()
    );
    unreadable(recs);
    // Not chained onto the head.
    let mut recs = seal(
        &snap.position,
        |_| Digest::ZERO,
        vec![note("a", 1), note("a", 2)],
        KEY,
    );
    recs.remove(0);
    let err = store
        .compare_and_append(&Append {
            expected: snap.position,
            read_heads: None,
            records: recs,
        })
        .unwrap_err();
    assert!(err.to_string().contains("malformed append"), "{err}");
    assert!(ledger_bytes(tmp.path()).is_empty());
}

#[test]
fn a_second_handle_catches_up_incrementally() {
    let tmp = TestDir::new("store-two");
    let a = open(tmp.path());
    let b = open(tmp.path());
    fill(&a);
    let sa = a.snapshot().unwrap();
    let sb = b.snapshot().unwrap();
    assert_eq!(sa.position, sb.position);
    assert_eq!(sa.stream_heads, sb.stream_heads);
    // b appends on top of what it folded from a; a sees it.
    assert!(matches!(
        append(&b, vec![call(99)]),
        AppendResult::Committed(_)
    ));
    assert_eq!(a.snapshot().unwrap().position.seq, 10);
    // Unchanged ledger: the same Arc comes back (no refold, no clone).
    let s1 = a.snapshot().unwrap();
    let s2 = a.snapshot().unwrap();
    assert!(Arc::ptr_eq(&s1, &s2));
}

#[test]
fn snapshots_held_by_readers_are_not_changed_by_appends() {
    let tmp = TestDir::new("store-cow");
    let store = open(tmp.path());
    fill(&store);
    let held = store.snapshot().unwrap();
    let before = held.position;
    append(&store, vec![call(5)]);
    assert_eq!(held.position, before);
    assert_eq!(store.snapshot().unwrap().position.seq, before.seq + 1);
}

/// Start offsets of each line and the start of the last transaction.
fn line_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1),
    );
    starts.pop();
    starts
}

#[test]
fn torn_tail_at_every_offset_of_the_last_transaction_is_cut_to_the_boundary() {
    let tmp = TestDir::in_memory("store-torn");
    let full = {
        let store = open(tmp.path());
        fill(&store);
        ledger_bytes(tmp.path())
    };
    let starts = line_starts(&full);
    // The last transaction has 3 records: it starts at line 7.
    let boundary = starts[6];
    let ledger = Layout::in_project(tmp.path()).ledger_file();
    let checkpoint = Layout::in_project(tmp.path()).checkpoint_file();
    for cut in boundary + 1..full.len() {
        std::fs::write(&ledger, &full[..cut]).unwrap();
        let _ = std::fs::remove_file(&checkpoint);
        let store = open(tmp.path());
        let bytes = ledger_bytes(tmp.path());
        assert_eq!(bytes.len(), boundary, "cut at {cut}");
        assert_eq!(store.snapshot().unwrap().position.seq, 6);
        let report = verify_ledger(&bytes, "l", Some(KEY)).unwrap();
        assert_eq!(report.records, 6);
        // And the store keeps working from there.
        assert!(matches!(
            append(&store, vec![call(7)]),
            AppendResult::Committed(_)
        ));
    }
}

#[test]
fn a_garbage_last_line_is_cut_but_a_bad_middle_line_is_corruption() {
    let tmp = TestDir::new("store-corrupt");
    let full = {
        let store = open(tmp.path());
        fill(&store);
        ledger_bytes(tmp.path())
    };
    let ledger = Layout::in_project(tmp.path()).ledger_file();
    let checkpoint = Layout::in_project(tmp.path()).checkpoint_file();
    // A terminated garbage last line (zero-filled blocks after a crash).
    let mut bytes = full.clone();
    bytes.extend_from_slice(b"\0\0\0\0\n");
    std::fs::write(&ledger, &bytes).unwrap();
    drop(open(tmp.path()));
    assert_eq!(ledger_bytes(tmp.path()), full);

    // A flipped byte in line 5 (record 5, inside the 3rd transaction).
    let starts = line_starts(&full);
    let mut bytes = full.clone();
    bytes[starts[4] + 10] ^= 0x01;
    std::fs::write(&ledger, &bytes).unwrap();
    std::fs::remove_file(&checkpoint).unwrap();
    let err = FileStore::open(tmp.path(), KEY.to_vec()).unwrap_err();
    match err {
        StoreError::Corrupt {
            file, line, seq, ..
        } => {
            assert!(file.ends_with(".sdd/ledger/ledger.jsonl"));
            assert_eq!((line, seq), (5, 5));
        }
        other => panic!("{other}"),
    }
    // Nothing was cut.
    assert_eq!(ledger_bytes(tmp.path()), bytes);

    // A chain break in the last line is corruption too, never a torn tail.
    let last = starts[8];
    let mut lines: Vec<Vec<u8>> = full[..last]
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    lines.push(full[last..].to_vec());
    lines.swap(7, 8);
    std::fs::write(&ledger, lines.concat()).unwrap();
    let _ = std::fs::remove_file(&checkpoint);
    let err = FileStore::open(tmp.path(), KEY.to_vec()).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Corrupt {
                line: 8,
                seq: 8,
                ..
            }
        ),
        "{err}"
    );
}

/// A ledger of format 2 (tags over the pre-image), with and without the checkpoint of its
/// format-3 twin (same offsets, so the checkpoint must not hide the tags): refused as an older
/// format, naming the upgrade, and left as it was; `ledger upgrade` gives back the twin's bytes.
#[test]
fn a_format_2_ledger_is_refused_as_one_and_upgraded() {
    let tmp = TestDir::new("store-format-2");
    {
        let store = open(tmp.path());
        fill(&store);
    }
    let layout = Layout::in_project(tmp.path());
    let current = std::fs::read(layout.ledger_file()).unwrap();
    let mut old = Vec::new();
    for line in current.split_inclusive(|b| *b == b'\n') {
        let mut rec = Record::from_line(&line[..line.len() - 1], None).unwrap();
        rec.mac = Some(bernstein_core::digest::hmac_tag(KEY, &rec.preimage()));
        old.extend(rec.to_line());
    }
    assert_eq!(old.len(), current.len());
    std::fs::write(layout.ledger_file(), &old).unwrap();
    for with_checkpoint in [true, false] {
        if !with_checkpoint {
            std::fs::remove_file(layout.checkpoint_file()).unwrap();
        }
        let err = FileStore::open(tmp.path(), KEY.to_vec()).unwrap_err();
        assert!(matches!(err, StoreError::OldFormat { .. }), "{err}");
        assert!(
            err.to_string().contains("bernstein ledger upgrade"),
            "{err}"
        );
        assert_eq!(std::fs::read(layout.ledger_file()).unwrap(), old);
    }
    // The upgrade reads the key from `.sdd/keys`, as the command does.
    {
        use std::io::Write as _;
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        let keys = layout.sdd.join("keys");
        std::fs::create_dir_all(&keys).unwrap();
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(layout.audit_key_file())
            .unwrap();
        writeln!(f, "{}", hex::encode(KEY)).unwrap();
    }
    // A directory where the new file goes is named, and nothing changes.
    let stale = layout.ledger_dir().join("ledger.jsonl.upgrade");
    std::fs::create_dir(&stale).unwrap();
    let err = crate::upgrade_cmd::upgrade_ledger(&layout.sdd, false).unwrap_err();
    assert!(
        err.contains("ledger.jsonl.upgrade is a directory") && err.contains("nothing changed"),
        "{err}"
    );
    assert!(stale.is_dir());
    assert_eq!(std::fs::read(layout.ledger_file()).unwrap(), old);
    std::fs::remove_dir(&stale).unwrap();
    // What an upgrade killed mid-way leaves behind does not stop the next one.
    std::fs::write(&stale, b"half").unwrap();
    let up = crate::upgrade_cmd::upgrade_ledger(&layout.sdd, false).unwrap();
    assert!(matches!(
        up,
        crate::upgrade_cmd::UpgradeOutcome::Upgraded(_)
    ));
    assert_eq!(std::fs::read(layout.ledger_file()).unwrap(), current);
    assert!(!stale.exists());
    let again = crate::upgrade_cmd::upgrade_ledger(&layout.sdd, false).unwrap();
    assert!(matches!(
        again,
        crate::upgrade_cmd::UpgradeOutcome::AlreadyCurrent
    ));
    assert!(!stale.exists());
    drop(open(tmp.path()));
}

#[test]
fn records_under_another_key_are_a_key_mismatch() {
    let tmp = TestDir::new("store-key");
    {
        let store = open(tmp.path());
        fill(&store);
    }
    let _ = std::fs::remove_file(Layout::in_project(tmp.path()).checkpoint_file());
    let err = FileStore::open(tmp.path(), vec![1; 32]).unwrap_err();
    assert!(matches!(err, StoreError::KeyMismatch { .. }), "{err}");
    assert!(err.to_string().contains("copy .sdd/keys"), "{err}");
}

#[test]
fn shrinking_or_replacing_the_ledger_under_a_running_store_is_refused() {
    let tmp = TestDir::new("store-shrink");
    let store = open(tmp.path());
    fill(&store);
    let ledger = Layout::in_project(tmp.path()).ledger_file();
    let f = OpenOptions::new().write(true).open(&ledger).unwrap();
    f.set_len(10).unwrap();
    // The next read notices that verified bytes are gone.
    let snap = store.snapshot();
    assert!(matches!(snap, Err(StoreError::Corrupt { .. })), "{snap:?}");
    drop(f);
    assert!(store.check_writable().is_ok());
    std::fs::remove_file(&ledger).unwrap();
    std::fs::write(&ledger, b"").unwrap();
    let err = store
        .compare_and_append(&Append {
            expected: LedgerPosition::GENESIS,
            read_heads: None,
            records: vec![],
        })
        .unwrap_err();
    assert!(err.to_string().contains("removed or replaced"), "{err}");
    assert!(!err.retryable());
    // A readiness probe sees it without appending.
    let err = store.check_writable().unwrap_err();
    assert!(matches!(err, StoreError::NotServed(_)), "{err}");
}

/// A store holding one call, its ledger's path and a path to move it aside to.
fn one_call_and_an_aside(name: &str) -> (TestDir, FileStore, PathBuf, PathBuf) {
    let tmp = TestDir::new(name);
    let store = open(tmp.path());
    append(&store, vec![call(1)]);
    let ledger = Layout::in_project(tmp.path()).ledger_file();
    let aside = ledger.with_extension("old");
    (tmp, store, ledger, aside)
}

#[test]
fn a_ledger_moved_aside_is_never_written_to_nor_acknowledged() {
    let (tmp, store, ledger, aside) = one_call_and_an_aside("store-moved");
    let copy = std::fs::read(&ledger).unwrap();
    // The engine's flow: a snapshot and an append without waiting, then one settle for all.
    // Moved aside between the append and the settle: the append's bytes are in the file moved
    // aside, but the settle that would acknowledge them finds the path naming another file.
    let snap = store.snapshot_unsettled().unwrap();
    let appended = store.compare_and_append_unsettled(&call_on(&snap, 2));
    assert!(
        matches!(appended, Ok(AppendResult::Committed(_))),
        "{appended:?}"
    );
    std::fs::rename(&ledger, &aside).unwrap();
    std::fs::write(&ledger, &copy).unwrap();
    let err = store.settle(u64::MAX).unwrap_err();
    assert!(matches!(err, StoreError::NotServed(_)), "{err}");
    assert!(err.to_string().contains("removed or replaced"), "{err}");
    // Nothing is served from then on, and neither file is written again.
    let aside_bytes = std::fs::read(&aside).unwrap();
    for err in [
        store.snapshot_unsettled().unwrap_err(),
        store.snapshot().unwrap_err(),
        store.check_writable().unwrap_err(),
    ] {
        assert!(matches!(err, StoreError::NotServed(_)), "{err}");
    }
    let err = store.compare_and_append(&call_on(&snap, 3)).unwrap_err();
    assert!(matches!(err, StoreError::NotServed(_)), "{err}");
    assert_eq!(std::fs::read(&ledger).unwrap(), copy);
    assert_eq!(std::fs::read(&aside).unwrap(), aside_bytes);
    // Nor is a checkpoint of the file moved aside left for the one now at the path.
    drop(store);
    assert!(!Layout::in_project(tmp.path()).checkpoint_file().exists());
}

#[test]
fn an_append_after_the_ledger_was_moved_aside_writes_nothing() {
    let (_tmp, store, ledger, aside) = one_call_and_an_aside("store-moved-first");
    let snap = store.snapshot_unsettled().unwrap();
    std::fs::rename(&ledger, &aside).unwrap();
    let before = std::fs::read(&aside).unwrap();
    let err = store
        .compare_and_append_unsettled(&call_on(&snap, 2))
        .unwrap_err();
    assert!(matches!(err, StoreError::NotServed(_)), "{err}");
    assert_eq!(
        std::fs::read(&aside).unwrap(),
        before,
        "written to the moved file"
    );
    assert!(!ledger.exists());
}

#[test]
fn checkpoints_are_written_every_n_records_and_used_on_open() {
    let tmp = TestDir::new("store-ckpt");
    let options = StoreOptions {
        checkpoint_every: 4,
        ..StoreOptions::default()
    };
    let layout = Layout::in_project(tmp.path());
    {
        let store = FileStore::open_with(tmp.path(), KEY.to_vec(), options.clone()).unwrap();
        append(&store, vec![call(1), call(2)]);
        store.flush_checkpoints();
        assert!(!layout.checkpoint_file().exists());
        append(&store, vec![call(3), call(4)]);
        // Written by the store's checkpoint thread, off the request path.
        store.flush_checkpoints();
        assert!(layout.checkpoint_file().exists());
        append(&store, vec![call(5)]);
        // Drop writes the final checkpoint (5 records).
    }
    let text = std::fs::read_to_string(layout.checkpoint_file()).unwrap();
    assert!(text.starts_with("{\"checkpoint\":{"), "{text}");
    assert_eq!(
        checkpoint::anchor(&layout, Some(KEY)).unwrap().unwrap().seq,
        5
    );
    // The unauthenticated hint the open check starts verifying with is the offset the
    // checkpoint records (the whole ledger here).
    assert_eq!(
        checkpoint::peek_offset(&layout),
        Some(ledger_bytes(tmp.path()).len() as u64)
    );

    // Open verifies the checkpointed prefix too: a same-length edit of record 1 (before the
    // checkpoint) is refused at its line, not served from the checkpoint.
    let full = ledger_bytes(tmp.path());
    let ledger = OpenOptions::new()
        .write(true)
        .open(layout.ledger_file())
        .unwrap();
    let at = full.windows(4).position(|w| w == b"\"c1\"").unwrap();
    ledger.write_all_at(b"\"c9\"", at as u64).unwrap();
    let err = FileStore::open_with(tmp.path(), KEY.to_vec(), options.clone()).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Corrupt {
                line: 1,
                seq: 1,
                ..
            }
        ),
        "{err}"
    );
    ledger.write_all_at(&full[at..at + 4], at as u64).unwrap();
    drop(FileStore::open_with(tmp.path(), KEY.to_vec(), options.clone()).unwrap());

    // A hint that disagrees with the authenticated offset is not used: a checkpoint whose
    // offset was edited (its tag then fails) is refused, whatever the early check found.
    let good = std::fs::read(layout.checkpoint_file()).unwrap();
    let edited =
        String::from_utf8(good.clone())
            .unwrap()
            .replacen("\"offset\":", "\"offset\":1", 1);
    std::fs::write(layout.checkpoint_file(), edited).unwrap();
    assert_ne!(
        checkpoint::peek_offset(&layout),
        Some(ledger_bytes(tmp.path()).len() as u64)
    );
    let err = FileStore::open_with(tmp.path(), KEY.to_vec(), options.clone()).unwrap_err();
    assert!(
        err.to_string().contains("the checkpoint cannot be trusted"),
        "{err}"
    );
    std::fs::write(layout.checkpoint_file(), &good).unwrap();

    // A checkpoint whose tag does not verify is never ignored: the store refuses to open.
    let mut text = std::fs::read(layout.checkpoint_file()).unwrap();
    let i = text.len() - 5;
    text[i] = if text[i] == b'0' { b'1' } else { b'0' };
    std::fs::write(layout.checkpoint_file(), &text).unwrap();
    let err = FileStore::open_with(tmp.path(), KEY.to_vec(), options).unwrap_err();
    assert!(
        err.to_string().contains("the checkpoint cannot be trusted"),
        "{err}"
    );
    // The offline verifier's streamed read of it agrees: the tag does not verify, and
    // without the key (no tag check) the position still reads.
    let err = checkpoint::anchor(&layout, Some(KEY)).unwrap_err();
    assert!(err.contains("HMAC tag does not verify"), "{err}");
    assert_eq!(checkpoint::anchor(&layout, None).unwrap().unwrap().seq, 5);
    // A body byte changed (the tag intact) fails the tag too; a cut file is no checkpoint.
    text[i] = if text[i] == b'0' { b'1' } else { b'0' };
    let at = text.windows(6).position(|w| w == b"\"seq\":").unwrap() + 6;
    text[at] = if text[at] == b'5' { b'6' } else { b'5' };
    std::fs::write(layout.checkpoint_file(), &text).unwrap();
    let err = checkpoint::anchor(&layout, Some(KEY)).unwrap_err();
    assert!(err.contains("HMAC tag does not verify"), "{err}");
    std::fs::write(layout.checkpoint_file(), &text[..text.len() - 3]).unwrap();
    let err = checkpoint::anchor(&layout, Some(KEY)).unwrap_err();
    assert!(err.contains("not in checkpoint form"), "{err}");
}

/// A checkpoint file holding `body`, tagged under `KEY`, as the writer frames it.
fn framed_checkpoint(layout: &Layout, body: &str) {
    let tag = bernstein_core::ledger::digest::hmac_tag(KEY, body.as_bytes());
    let file = format!("{{\"checkpoint\":{body},\"mac\":\"{tag}\"}}\n");
    std::fs::write(layout.checkpoint_file(), file).unwrap();
}

#[test]
fn the_anchor_reads_the_head_of_the_body_and_falls_back_for_another_layout() {
    let tmp = TestDir::new("store-anchor");
    let layout = Layout::in_project(tmp.path());
    layout.create_dirs().unwrap();
    let head = "sha256:".to_string() + &"ab".repeat(32);
    let position = |seq: u64| format!("{{\"head\":\"{head}\",\"seq\":{seq}}}");
    // As the writer lays it out; what follows the position is not walked (the tag vouches
    // for it), so even a tail no reader would accept still gives the position.
    let laid_out = format!(
        "{{\"format\":2,\"software\":\"x\",\"offset\":1,\"last_line_start\":0,\"lines\":1,\"snapshot\":{{\"position\":{},\"stream_heads\":[}}}}",
        position(41)
    );
    framed_checkpoint(&layout, &laid_out);
    let at = checkpoint::anchor(&layout, Some(KEY)).unwrap().unwrap();
    assert_eq!((at.seq, at.head.to_string()), (41, head.clone()));
    // The key's bytes inside another field before the snapshot are not taken for the key:
    // the body is then read whole, and its own position found.
    let decoy = format!(
        r#"{{"format":2,"software":{{"x":1,"snapshot":{{"position":{}}}}},"offset":1,"last_line_start":0,"lines":1,"snapshot":{{"position":{},"stream_heads":[]}}}}"#,
        position(9),
        position(42)
    );
    framed_checkpoint(&layout, &decoy);
    assert_eq!(
        checkpoint::anchor(&layout, Some(KEY)).unwrap().unwrap().seq,
        42
    );
    // Another field order (another writer) is read whole.
    let reordered = format!(
        "{{\"snapshot\":{{\"stream_heads\":[],\"position\":{}}},\"format\":2,\"software\":\"x\",\"offset\":1,\"last_line_start\":0,\"lines\":1}}",
        position(43)
    );
    framed_checkpoint(&layout, &reordered);
    assert_eq!(
        checkpoint::anchor(&layout, Some(KEY)).unwrap().unwrap().seq,
        43
    );
    // Read whole, a malformed body is still refused.
    let broken = reordered.replace("\"lines\":1}", "\"lines\":1");
    framed_checkpoint(&layout, &broken);
    let err = checkpoint::anchor(&layout, Some(KEY)).unwrap_err();
    assert!(err.contains("unreadable body"), "{err}");
}

/// The server's streamed read of a checkpoint: what it parses is exactly what it tagged, a
/// forged body is named as forged even when it does not parse, and a tagged body must be one
/// JSON value filling the frame.
#[test]
fn the_streamed_checkpoint_read_tags_what_it_parses() {
    type P = bernstein_domain::Projection;
    let tmp = TestDir::new("store-ckpt-stream");
    let layout = Layout::in_project(tmp.path());
    {
        let store = open(tmp.path());
        append(&store, vec![call(1), call(2)]);
        // Drop writes the checkpoint.
    }
    let good = std::fs::read_to_string(layout.checkpoint_file()).unwrap();
    let read = || checkpoint::read::<P>(&layout, KEY).map(|c| c.map(|c| c.folded.lines));
    let lines = read().unwrap().unwrap();
    assert!(lines > 0);
    let body = &good["{\"checkpoint\":".len()..good.rfind(",\"mac\":").unwrap()];

    // A body cut inside a string, under the old tag: a forgery, named as one.
    let cut = &body[..body.len() / 2];
    let tag = good.rsplit("\"mac\":\"").next().unwrap();
    std::fs::write(
        layout.checkpoint_file(),
        format!("{{\"checkpoint\":{cut},\"mac\":\"{tag}"),
    )
    .unwrap();
    let err = read().unwrap_err();
    assert!(err.contains("HMAC tag does not verify"), "{err}");
    // Tagged under the key, the same cut body is unreadable rather than forged.
    framed_checkpoint(&layout, cut);
    let err = read().unwrap_err();
    assert!(err.contains("unreadable body"), "{err}");
    // Two values, tagged: the frame must hold exactly one.
    framed_checkpoint(&layout, &format!("{body} {{}}"));
    let err = read().unwrap_err();
    assert!(err.contains("not exactly one JSON value"), "{err}");
    // A file cut short is no checkpoint; the whole one reads again.
    std::fs::write(layout.checkpoint_file(), &good[..good.len() - 3]).unwrap();
    let err = read().unwrap_err();
    assert!(err.contains("not in checkpoint form"), "{err}");
    std::fs::write(layout.checkpoint_file(), &good).unwrap();
    assert_eq!(read().unwrap(), Some(lines));
    std::fs::remove_file(layout.checkpoint_file()).unwrap();
    assert_eq!(read().unwrap(), None);
    // A FIFO in its place is refused at once by every reader, never waited on.
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        layout.checkpoint_file(),
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
    )
    .unwrap();
    let err = read().unwrap_err();
    assert!(err.contains("not a regular file"), "{err}");
    let err = checkpoint::anchor(&layout, Some(KEY)).unwrap_err();
    assert!(err.contains("not a regular file"), "{err}");
    assert_eq!(checkpoint::peek_offset(&layout), None);
}

#[test]
fn a_checkpoint_that_does_not_fit_the_ledger_is_refused() {
    let tmp = TestDir::new("store-ckpt-other");
    let layout = Layout::in_project(tmp.path());
    {
        let store = open(tmp.path());
        fill(&store);
        store.checkpoint().unwrap();
    }
    let saved = std::fs::read(layout.checkpoint_file()).unwrap();
    let bytes = ledger_bytes(tmp.path());
    // The ledger cut back by whole transactions: refused, both positions named.
    let cut = bytes.len() - bytes.rsplit(|b| *b == b'\n').nth(1).unwrap().len() - 1;
    std::fs::write(layout.ledger_file(), &bytes[..cut]).unwrap();
    let err = FileStore::open(tmp.path(), KEY.to_vec())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("ends at seq 8") && err.contains("records seq 9"),
        "{err}"
    );
    // Replaced by a longer, different ledger (under the same key), old checkpoint put back.
    std::fs::remove_file(layout.ledger_file()).unwrap();
    std::fs::remove_file(layout.checkpoint_file()).unwrap();
    {
        let store = open(tmp.path());
        for i in 0..12 {
            append(&store, vec![note("x", i)]);
        }
    }
    std::fs::write(layout.checkpoint_file(), &saved).unwrap();
    let err = FileStore::open(tmp.path(), KEY.to_vec())
        .unwrap_err()
        .to_string();
    assert!(err.contains("rewritten"), "{err}");
}

#[test]
fn a_checkpoint_due_while_the_writer_rests_waits_and_close_writes_the_newest() {
    // A rest of a million times the first write's duration: minutes at least.
    let tmp = TestDir::new("store-ckpt-rest");
    let options = StoreOptions {
        checkpoint_every: 2,
        checkpoint_rest: 1_000_000,
    };
    let layout = Layout::in_project(tmp.path());
    let anchor = || checkpoint::anchor(&layout, Some(KEY)).unwrap().unwrap().seq;
    {
        let store = FileStore::open_with(tmp.path(), KEY.to_vec(), options.clone()).unwrap();
        append(&store, vec![call(1), call(2)]);
        store.flush_checkpoints();
        assert_eq!(anchor(), 2);
        // Due twice more while the writer rests: nothing is handed over, nothing written.
        append(&store, vec![call(3), call(4)]);
        append(&store, vec![call(5), call(6)]);
        store.flush_checkpoints();
        assert_eq!(anchor(), 2);
        assert_eq!(store.facts().checkpoint_records, Some(2));
    }
    // Closing the store writes the newest state whatever the rest.
    assert_eq!(anchor(), 6);
    let reopened = FileStore::open_with(tmp.path(), KEY.to_vec(), options).unwrap();
    assert_eq!(reopened.snapshot().unwrap().position.seq, 6);
}

#[test]
fn fold_matches_a_fresh_fold_after_many_appends() {
    let tmp = TestDir::new("store-many");
    let store = FileStore::open_with(
        tmp.path(),
        KEY.to_vec(),
        StoreOptions {
            checkpoint_every: 7,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let other = open(tmp.path());
    for i in 0..40u64 {
        let writer = if i % 3 == 0 { &other } else { &store };
        let stream = ["audit", "backlog", "run:A", "run:B"][(i % 4) as usize];
        let drafts = if stream == "audit" {
            vec![call(i)]
        } else {
            vec![note(stream, i), call(i)]
        };
        append(writer, drafts);
    }
    let snap = store.snapshot().unwrap();
    drop(store);
    drop(other);
    assert_refolds_to::<bernstein_domain::Projection>(tmp.path(), KEY, &snap);
}

/// A fresh open of `dir` folds the ledger to what `folded` holds, and the ledger verifies up to
/// its head.
pub(crate) fn assert_refolds_to<F: Checkpointed>(dir: &Path, key: &[u8], folded: &Snapshot<F>) {
    let again = super::FileStore::<F>::open(dir, key.to_vec())
        .unwrap()
        .snapshot()
        .unwrap();
    assert_eq!(again.position, folded.position);
    assert_eq!(again.stream_heads, folded.stream_heads);
    let report = verify_ledger(&ledger_bytes(dir), "l", Some(key)).unwrap();
    assert_eq!(report.head, folded.position);
}

#[test]
fn init_creates_everything_and_is_idempotent() {
    let tmp = TestDir::new("store-init");
    let sdd = init::<bernstein_domain::Projection>(tmp.path()).unwrap();
    let layout = Layout::at(&sdd);
    assert!(layout.audit_key_file().is_file());
    assert!(layout.ledger_file().is_file());
    assert!(layout.runtime_dir().is_dir());
    let key = std::fs::read(layout.audit_key_file()).unwrap();
    assert_eq!(
        init::<bernstein_domain::Projection>(tmp.path()).unwrap(),
        sdd
    );
    assert_eq!(std::fs::read(layout.audit_key_file()).unwrap(), key);
}

#[test]
fn checkpoint_temp_files_left_by_a_dead_writer_are_swept_on_open_and_a_live_ones_kept() {
    let tmp = TestDir::new("store-ckpt-sweep");
    let layout = Layout::in_project(tmp.path());
    {
        let store = open(tmp.path());
        fill(&store);
    }
    let dir = layout.ledger_dir();
    // What a writer killed mid-write leaves: a temp file nobody holds the lock of.
    std::fs::write(
        dir.join("checkpoint.json.tmp.4242.0"),
        b"{\"checkpoint\":{\"for",
    )
    .unwrap();
    // A writer still at work (here: this test) holds its temp file's lock.
    let live_path = dir.join("checkpoint.json.tmp.4243.1");
    std::fs::write(&live_path, b"{\"checkpoint\":").unwrap();
    let live = std::fs::File::open(&live_path).unwrap();
    live.lock().unwrap();
    // A link so named is removed, never followed; its target stays.
    let target = tmp.path().join("precious.txt");
    std::fs::write(&target, b"keep me").unwrap();
    std::os::unix::fs::symlink(&target, dir.join("checkpoint.json.tmp.link")).unwrap();
    // Neither a directory so named nor another file is touched.
    std::fs::create_dir(dir.join("checkpoint.json.tmp.dir")).unwrap();
    std::fs::write(dir.join("notes.tmp"), b"mine").unwrap();

    assert_eq!(checkpoint::sweep_stale(&layout).unwrap(), 2);
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "checkpoint.json",
            "checkpoint.json.tmp.4243.1",
            "checkpoint.json.tmp.dir",
            "ledger.jsonl",
            "lock",
            "notes.tmp"
        ]
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"keep me");

    // Opening the store sweeps too; once the live writer is gone, its file goes as well.
    drop(live);
    let store = open(tmp.path());
    assert!(!live_path.exists());
    assert_eq!(store.snapshot().unwrap().position.seq, 9);
    // And a checkpoint the store writes itself leaves no temp file behind.
    store.checkpoint().unwrap();
    drop(store);
    let temps: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("checkpoint.json.tmp."))
        .collect();
    assert_eq!(temps, ["checkpoint.json.tmp.dir"]);
}

#[test]
fn a_failed_fsync_is_not_worth_retrying_before_a_restart() {
    let err = super::sync_failure(Path::new("/p/.sdd/ledger/ledger.jsonl"), "EIO");
    assert!(!err.retryable(), "{err:?}");
    assert!(err.to_string().contains("until it restarts"), "{err}");
}

mod scrub;
