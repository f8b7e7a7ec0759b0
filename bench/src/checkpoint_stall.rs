//! Appends on a large ledger while checkpoints fall due: one writer serves `bernstein_run`
//! through the real file store (default options: a checkpoint every 5,000 records) on a ledger
//! of 100k records (1M with `--full`) whose checkpoint exists, for enough calls that at least
//! two checkpoints fall due. The slowest calls show whether a request waits for a checkpoint.

use std::time::{Duration, Instant};

use std::sync::Arc;

use bernstein_core::Config;
use bernstein_core::engine::DEFAULT_WAIT;
use bernstein_core::protocol::TransportFacts;
use bernstein_domain::Server;
use bernstein_effects::host::NoHost;
use bernstein_effects::local::Local;
use bernstein_effects::perform::Backend;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_os::clock::SystemClock;
use serde_json::json;

use crate::ledger::{MemLedger, call};
use crate::stats::fmt;

/// Calls per measured row on a ledger of `records`: ~4 records each, so that at least two
/// checkpoints fall due (one per 5,000 records, or per sixteenth of the ledger when larger).
fn calls_for(records: u64) -> u64 {
    let every = 5_000u64.max(records / 16);
    (every * 5 / 2 / 4).max(4_000)
}

pub fn appends_at_size(full: bool) {
    println!("## Appends while checkpoints fall due (`bernstein_run`, 1 writer, real fsync)\n");
    println!(
        "| ledger records | calls | calls/s | p50 | p99 | p99.9 | max |\n|---|---|---|---|---|---|---|"
    );
    let mut sizes = vec![100_000u64];
    if full {
        sizes.push(1_000_000);
    }
    for records in sizes {
        let dir = crate::scratch_dir(&format!("ckpt-{records}"));
        let mut l = MemLedger::new();
        l.grow_to(records);
        let ledger = dir.join(".sdd/ledger");
        std::fs::create_dir_all(&ledger).expect("create the ledger directory");
        std::fs::write(ledger.join("ledger.jsonl"), &l.lines).expect("write the ledger");
        let key = l.key.clone();
        // The first open folds the ledger and writes its checkpoint; the measured one resumes.
        drop(FileStore::open(&dir, key.clone()).expect("open"));
        let store = Arc::new(FileStore::open(&dir, key.clone()).expect("reopen"));
        let server = Arc::new(Server::new(Config::new(key)));
        let backend = Backend::new(store.clone(), Arc::new(SystemClock), Arc::new(NoHost));
        let local = Local::new(server, &backend, DEFAULT_WAIT).expect("a local engine");
        drop(backend);
        let facts = TransportFacts::stdio(None);
        let calls = calls_for(records);
        let mut samples: Vec<Duration> = Vec::with_capacity(calls as usize);
        let began = Instant::now();
        for i in 0..calls {
            let req = call(i, "bernstein_run", json!({"goal": format!("goal {i}")}));
            let t = Instant::now();
            local.serve_message(&req, &facts).expect("served");
            samples.push(t.elapsed());
        }
        let rate = calls as f64 / began.elapsed().as_secs_f64();
        samples.sort();
        let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
        println!(
            "| {} | {calls} | {rate:.0} | {} | {} | {} | {} |",
            l.snapshot.position.seq,
            fmt(at(0.5)),
            fmt(at(0.99)),
            fmt(at(0.999)),
            fmt(*samples.last().expect("samples"))
        );
        drop(local);
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!();
}
