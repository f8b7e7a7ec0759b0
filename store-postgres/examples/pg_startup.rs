//! Start-up cost of a new instance on a large PostgreSQL ledger (figures for docs/POSTGRES.md).
//!
//! `cargo run --release -p bernstein-store-postgres --example pg_startup -- URL RECORDS`
//!
//! Builds a ledger of about RECORDS records through the pure core (`bernstein_run` and
//! `bernstein_run_status` calls, as a busy server would write them), writes it in the file
//! store's format, imports it into the empty, migrated database at URL (`bernstein ledger
//! import`'s code), then times: opening a `PgStore` that folds everything, writing a
//! checkpoint, opening one that starts from the checkpoint, and one snapshot at the head.

use std::io::Write;
use std::time::Instant;

use bernstein_core::ledger::Store;

use bernstein_core::protocol::TransportFacts;
use bernstein_core::{Config, Timestamp};
use bernstein_domain::Server;
use bernstein_domain::Snapshot;
use bernstein_domain::bound::Input;
use bernstein_store_postgres::{PgOptions, transfer};

type PgStore = bernstein_store_postgres::PgStore<bernstein_domain::Projection>;
use serde_json::{Value, json};

fn call(id: u64, tool: &str, arguments: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}}))
    .expect("json")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("usage: pg_startup URL RECORDS");
    let records: u64 = args.next().map_or(100_000, |n| n.parse().expect("RECORDS"));
    let key = vec![42u8; 32];
    let dir = std::env::temp_dir().join(format!("bernstein-pg-startup-{}", std::process::id()));
    std::fs::create_dir_all(dir.join(".sdd/ledger")).expect("mkdir");

    let t = Instant::now();
    let server = Server::new(Config::new(key.clone()));
    let facts = TransportFacts::stdio(Some("2025-11-25".into()));
    let mut snapshot = Snapshot::genesis();
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(dir.join(".sdd/ledger/ledger.jsonl")).unwrap(),
    );
    let mut n = 0u64;
    while snapshot.position.seq < records {
        n += 1;
        let goal = json!({"goal": format!("goal number {n}")});
        for bytes in [call(n, "bernstein_run", goal)] {
            let outcome = server.handle(&Input {
                bytes: &bytes,
                snapshot: &snapshot,
                now: Timestamp(1_790_000_000_000 + n),
                transport: &facts,
            });
            if let Some(append) = &outcome.append {
                for r in &append.records {
                    snapshot
                        .apply(r)
                        .expect("the core extends its own snapshot");
                    out.write_all(&r.to_line()).unwrap();
                }
            }
        }
    }
    out.flush().unwrap();
    drop(out);
    println!(
        "built {} records in {:.1?}",
        snapshot.position.seq,
        t.elapsed()
    );

    let pool_store = PgStore::open(
        &url,
        key.clone(),
        PgOptions {
            checkpoint_every: 0,
            listen: false,
            ..PgOptions::default()
        },
    )
    .expect("open (empty database, migrated)");
    let t = Instant::now();
    let done = transfer::import(pool_store.pool(), &key, &dir).expect("import");
    println!("imported {} records in {:.1?}", done.copied, t.elapsed());
    drop(pool_store);

    let no_checkpoint = PgOptions {
        checkpoint_every: 0,
        listen: false,
        ..PgOptions::default()
    };
    let t = Instant::now();
    let full = PgStore::open(&url, key.clone(), no_checkpoint.clone()).expect("open");
    println!("open, folding all records: {:.2?}", t.elapsed());
    let t = Instant::now();
    full.checkpoint().expect("checkpoint");
    println!("write checkpoint: {:.2?}", t.elapsed());
    let t = Instant::now();
    let resumed = PgStore::open(&url, key.clone(), no_checkpoint).expect("open");
    println!("open from the checkpoint: {:.2?}", t.elapsed());
    let t = Instant::now();
    let reps = 1000;
    for _ in 0..reps {
        std::hint::black_box(resumed.snapshot().expect("snapshot"));
    }
    println!(
        "snapshot at the head (one indexed query): {:.1?} per call",
        t.elapsed() / reps
    );
    assert_eq!(resumed.snapshot().unwrap().position, snapshot.position);
    let resumed = std::sync::Arc::new(resumed);
    let t = Instant::now();
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let store = resumed.clone();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    std::hint::black_box(store.snapshot().expect("snapshot"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    println!(
        "snapshots from 16 threads: {:.0}/s",
        3200.0 / t.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
