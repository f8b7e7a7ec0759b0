//! Test support: a throwaway PostgreSQL cluster (scripts/postgres.sh) and one fresh database
//! per test, plus ledgers built with the core's sealing.
//!
//! The cluster's URL comes from `BERNSTEIN_TEST_PG_URL`; when it is unset the support starts
//! the repository's throwaway cluster itself (`scripts/postgres.sh start`, which installs
//! PostgreSQL from Debian's packages when it is missing). `BERNSTEIN_TEST_PG=skip` skips these
//! tests explicitly (they then print that they did not run).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use bernstein_core::ledger::{Append, AppendResult, Draft, Record, Store, seal};
use bernstein_domain::Projection;

use bernstein_domain::Snapshot;
use bernstein_store_postgres::PgOptions;

/// The store as the server opens it, over the domain's projection.
pub type PgStore = bernstein_store_postgres::PgStore<bernstein_domain::Projection>;
use postgres::{Client, NoTls};

pub const KEY: &[u8] = b"an audit key of thirty-two bytes";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The admin URL of the test cluster, or `None` when the tests are skipped.
pub fn cluster_url() -> Option<String> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    URL.get_or_init(|| {
        if std::env::var("BERNSTEIN_TEST_PG").as_deref() == Ok("skip") {
            return None;
        }
        if let Ok(url) = std::env::var("BERNSTEIN_TEST_PG_URL") {
            return Some(url);
        }
        let out = Command::new("bash")
            .arg(repo_root().join("scripts/postgres.sh"))
            .arg("start")
            .output()
            .expect("run scripts/postgres.sh");
        assert!(
            out.status.success(),
            "scripts/postgres.sh start failed (set BERNSTEIN_TEST_PG_URL, or BERNSTEIN_TEST_PG=skip): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(String::from_utf8(out.stdout).unwrap().trim().to_string())
    })
    .clone()
}

/// A fresh, empty database named after the test; its URL. `None`: skipped.
pub fn fresh_db(name: &str) -> Option<String> {
    let Some(admin) = cluster_url() else {
        eprintln!("skipped: BERNSTEIN_TEST_PG=skip");
        return None;
    };
    let db = format!("bt_{name}");
    let mut client = Client::connect(&admin, NoTls).expect("connect to the test cluster");
    for sql in [
        format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
        format!("CREATE DATABASE {db}"),
    ] {
        client.batch_execute(&sql).expect("create a test database");
    }
    let base = admin.rsplit_once('/').expect("a URL with a database").0;
    Some(format!("{base}/{db}"))
}

/// A fresh database with the schema installed.
pub fn migrated_db(name: &str) -> Option<String> {
    let url = fresh_db(name)?;
    bernstein_store_postgres::migrate(&url).expect("migrate");
    Some(url)
}

pub fn open(url: &str) -> PgStore {
    PgStore::open(url, KEY.to_vec(), PgOptions::default()).expect("open the store")
}

/// Seals `drafts` on `store`'s current snapshot and appends them (no retry).
pub fn append_drafts(
    store: &dyn Store<Projection>,
    drafts: Vec<Draft>,
) -> (AppendResult, Vec<Record>) {
    let snap = store.snapshot().unwrap();
    let records = seal(&snap.position, |s| snap.stream_head(s), drafts, KEY);
    let append = Append {
        expected: snap.position,
        read_heads: None,
        records: records.clone(),
    };
    drop(snap);
    (store.compare_and_append(&append).unwrap(), records)
}

/// Appends until committed, re-sealing on conflict; returns the attempts it took.
pub fn append_retrying(store: &dyn Store<Projection>, make: impl Fn() -> Vec<Draft>) -> usize {
    for attempt in 1..1000 {
        if let (AppendResult::Committed(_), _) = append_drafts(store, make()) {
            return attempt;
        }
    }
    panic!("no commit after 1000 attempts");
}

/// A small mixed transaction: a backlog record and an audit (keyed) record.
pub fn txn(n: u64) -> Vec<Draft> {
    vec![
        Draft::new(
            "backlog",
            "test.note",
            serde_json::json!({"n": n, "text": "é ✓ \u{1}"}),
        ),
        Draft::new("audit", "test.note", serde_json::json!({"n": n})),
    ]
}

/// The snapshot as comparable JSON.
pub fn snapshot_json(s: &Snapshot) -> serde_json::Value {
    serde_json::to_value(s).unwrap()
}

/// A scratch directory removed on drop (the file store's own test helper).
#[allow(unused_imports)] // not every test file uses it
pub use bernstein_store_file::test_dir::TestDir;
