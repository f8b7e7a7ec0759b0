//! `cargo run --release -p bernstein-bench [-- --full]`: the figures of BENCHMARKS.md.
//!
//! Measures the pure core per call, run_status cost against ledger size, offline verification
//! speed, durable writes through the file store, the stdio round trip and the time from process
//! start to the `initialize` answer. It asserts nothing about speed: it reports.

mod ledger;
mod process;
mod stats;

use std::path::PathBuf;
use std::time::Instant;

use bernstein_core::ledger::verify::verify_ledger;
use serde_json::json;

use ledger::{MemLedger, call};
use stats::{fmt, time_each};

fn main() {
    let full = std::env::args().any(|a| a == "--full");
    println!(
        "# Bernstein benchmark ({} mode)\n",
        if full { "full" } else { "quick" }
    );
    core_per_call();
    run_status_vs_ledger_size(full);
    verify_speed();
    durable_writes();
    match process::binary() {
        Some(bin) => {
            process::startup_to_initialize(&bin);
            process::stdio_round_trip(&bin);
        }
        None => println!(
            "\n(stdio figures skipped: build the server first with `cargo build --release -p bernstein`)"
        ),
    }
}

fn core_per_call() {
    println!("## Core, per call (pure `Server::handle`, 1k-record ledger, meter on)\n");
    println!("| call | p50 | p99 | calls/s |\n|---|---|---|---|");
    let mut l = MemLedger::new();
    let run_id = l.grow_to(1_000);
    let reqs = [
        ("bernstein_status", call(1, "bernstein_status", json!({}))),
        (
            "bernstein_run",
            call(2, "bernstein_run", json!({"goal": "benchmark goal"})),
        ),
        (
            "bernstein_run_status",
            call(3, "bernstein_run_status", json!({"run_id": run_id})),
        ),
        ("tools/list", ledger::request(4, "tools/list", json!({}))),
    ];
    for (name, req) in &reqs {
        let s = time_each(200, 5_000, || {
            std::hint::black_box(l.handle(req));
        });
        println!(
            "| {name} | {} | {} | {:.0} |",
            fmt(s.p50),
            fmt(s.p99),
            s.rate()
        );
    }
    println!();
}

fn run_status_vs_ledger_size(full: bool) {
    println!("## bernstein_run_status against ledger size\n");
    println!("| records | build | p50 | p99 |\n|---|---|---|---|");
    let mut sizes = vec![1_000u64, 100_000];
    if full {
        sizes.push(1_000_000);
    }
    let mut l = MemLedger::new();
    for n in sizes {
        let t = Instant::now();
        let run_id = l.grow_to(n);
        let build = t.elapsed();
        let req = call(9, "bernstein_run_status", json!({"run_id": run_id}));
        let s = time_each(200, 5_000, || {
            std::hint::black_box(l.handle(&req));
        });
        println!(
            "| {} | {} | {} | {} |",
            l.snapshot.position.seq,
            fmt(build),
            fmt(s.p50),
            fmt(s.p99)
        );
    }
    println!();
}

fn verify_speed() {
    println!("## Offline verification (`audit verify` core, with HMAC)\n");
    let mut l = MemLedger::new();
    l.grow_to(100_000);
    let t = Instant::now();
    let report =
        verify_ledger(&l.lines, "ledger.jsonl", Some(&l.key)).expect("a fresh ledger verifies");
    let el = t.elapsed();
    let n = l.snapshot.position.seq;
    println!(
        "{n} records, {:.1} MiB in {} → {:.0} entries/s ({} calls reconstructed)\n",
        l.lines.len() as f64 / 1048576.0,
        fmt(el),
        n as f64 / el.as_secs_f64(),
        report.calls.len()
    );
}

fn durable_writes() {
    use bernstein_core::protocol::TransportFacts;
    use bernstein_runtime_std::clock::SystemClock;
    use bernstein_runtime_std::driver::serve_message;
    use bernstein_runtime_std::store::FileStore;

    println!("## Durable writes through the file store (fsync per request)\n");
    let dir = scratch_dir("durable");
    let key = vec![7u8; 32];
    let store = FileStore::open(&dir, key.clone()).expect("open store");
    let server = bernstein_core::Server::new(bernstein_core::Config::new(key));
    let facts = TransportFacts::stdio(None);
    let mut i = 0u64;
    let s = time_each(20, 500, || {
        i += 1;
        let req = call(
            i,
            "bernstein_run",
            json!({"goal": format!("durable goal {i}")}),
        );
        serve_message(&server, &store, &SystemClock, &req, &facts).expect("served");
    });
    println!(
        "bernstein_run via serve_message: p50 {}, p99 {}, {:.0} writes/s\n",
        fmt(s.p50),
        fmt(s.p99),
        s.rate()
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh directory under the system temp dir.
pub fn scratch_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bernstein-bench-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}
