//! The recorded journals of tests/fixtures/ committed into PostgreSQL transaction by
//! transaction through compare-and-append fold to the same projection as the file store
//! folds from the same bytes, and export back byte for byte.

mod support;

use std::path::Path;

use bernstein_core::ledger::{Append, AppendResult, Record, Store};
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_store_postgres::{PgOptions, PgStore, transfer};
use support::*;

fn hex_key(text: &str) -> Vec<u8> {
    hex::decode(text.trim()).expect("a hex key")
}

#[test]
fn recorded_journals_fold_to_the_same_projection_on_both_stores() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let dir = entry.unwrap().path();
        let ledger_path = dir.join("ledger.jsonl");
        if !ledger_path.is_file() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().replace('-', "_");
        let Some(url) = migrated_db(&format!("replay_{name}")) else {
            return;
        };
        let key = hex_key(&std::fs::read_to_string(dir.join("keys/audit.key")).unwrap());
        let bytes = std::fs::read(&ledger_path).unwrap();
        let records: Vec<Record> = bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| Record::parse_line(l, Some(&key)).unwrap())
            .collect();
        assert!(!records.is_empty(), "{}", dir.display());

        let pg = PgStore::open(&url, key.clone(), PgOptions::default()).unwrap();
        let mut txn = Vec::new();
        for rec in records {
            let last = rec.txn[0] == rec.txn[1];
            txn.push(rec);
            if last {
                let expected = pg.snapshot().unwrap().position;
                let got = pg
                    .compare_and_append(&Append {
                        expected,
                        read_heads: None,
                        records: std::mem::take(&mut txn),
                    })
                    .unwrap();
                assert!(matches!(got, AppendResult::Committed(_)), "{got:?}");
            }
        }
        let copy = TestDir::new(&format!("replay-{name}"));
        std::fs::create_dir_all(copy.path().join(".sdd/ledger")).unwrap();
        std::fs::write(copy.path().join(".sdd/ledger/ledger.jsonl"), &bytes).unwrap();
        let file = FileStore::open(copy.path(), key.clone()).unwrap();
        // A fresh instance folds the database from the start (no checkpoint yet).
        let fresh = PgStore::open(&url, key.clone(), PgOptions::default()).unwrap();
        let want = snapshot_json(&file.snapshot().unwrap());
        assert_eq!(snapshot_json(&pg.snapshot().unwrap()), want, "{name}");
        assert_eq!(snapshot_json(&fresh.snapshot().unwrap()), want, "{name}");

        let out = TestDir::new(&format!("replay-out-{name}"));
        transfer::export(pg.pool(), Some(&key), out.path()).unwrap();
        assert_eq!(
            std::fs::read(out.path().join(".sdd/ledger/ledger.jsonl")).unwrap(),
            bytes,
            "{name}"
        );
        replayed += 1;
    }
    assert!(replayed >= 3, "only {replayed} fixtures found");
}
