//! `cargo build --release -p bernstein -p bernstein-bench && target/release/bernstein-bench
//! [--full] [SECTION...]`: the figures of BENCHMARKS.md.
//!
//! Sections (all by default): `core` (the pure core per call), `size` (run_status against
//! ledger size; 1M records with `--full`), `verify` (offline verification speed), `dlp`
//! (secret redaction on 1 MiB adversarial texts), `durable` (durable writes through the file
//! store at 1 and 16 writers, and compare-and-append on one store from 1 to 16 threads, which
//! `appends` runs alone), `stdio` (process start to
//! `initialize`, stdio round trip), `http` (load on the real HTTP server, both runtimes, with
//! resident memory), `http-size` (`bernstein_run_status` over HTTP on 1k / 100k / 1M-record
//! ledgers), `python` (the same load on the Python implementation, when installed) and
//! `wrk` (`tools/call bernstein_status` under wrk at 1/16/64 connections, ours on both runtimes
//! beside an rmcp peer, a raw loopback limit and Python; the peers are built from
//! `bench/peers/`, see [`wrk`]) and `polls` (1,000 long polls held open, 10,000 with `--full`,
//! on both runtimes: threads, memory, CPU and `tools/list` latency meanwhile), `listens`
//! (1,000 `subscriptions/listen` streams held open, 10,000 with `--full`, on both runtimes:
//! threads, memory, `tools/list` latency meanwhile, one write's fan-out) and `memory`
//! (resident memory through a 60 s `bernstein_run` load, 20 s quick, against a fresh process
//! on the resulting ledger). `postgres` (1, 2 and 3 instances on one database, reads and
//! writes) runs only when named.
//! It asserts nothing about speed: it reports. `bernstein-bench write-ledger DIR N` writes a
//! project holding an N-record ledger, for timing start-up and `audit verify` from outside.

mod checkpoint_stall;
mod cpu;
mod dlp;
mod durable;
mod http_load;
mod http_size;
mod ledger;
mod ledger_file;
mod listens;
mod long_polls;
mod postgres;
mod process;
mod project;
mod python;
mod stats;
mod write_memory;
mod wrk;

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;

use ledger::{MemLedger, call};
use stats::{fmt, time_each};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("write-ledger") {
        let (Some(dir), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse().ok())) else {
            eprintln!("usage: bernstein-bench write-ledger DIR RECORDS");
            std::process::exit(2);
        };
        let w = ledger_file::write_ledger(std::path::Path::new(dir), n);
        println!(
            "{dir}: {} records, {:.1} MiB",
            w.records,
            w.bytes as f64 / 1048576.0
        );
        return;
    }
    let full = args.iter().any(|a| a == "--full");
    let only: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(String::as_str)
        .collect();
    let wanted = |section: &str| only.is_empty() || only.contains(&section);
    println!(
        "# Bernstein benchmark ({} mode)\n",
        if full { "full" } else { "quick" }
    );
    if wanted("core") {
        core_per_call();
    }
    if wanted("size") {
        run_status_vs_ledger_size(full);
    }
    if wanted("verify") {
        verify_speed(full);
    }
    if wanted("dlp") {
        dlp::redaction_speed();
    }
    if wanted("durable") {
        durable::durable_writes();
    }
    if wanted("durable") || wanted("appends") {
        durable::store_appends();
    }
    if wanted("checkpoint") {
        checkpoint_stall::appends_at_size(full);
    }
    let bin = process::binary();
    if let Some(bin) = &bin {
        if wanted("stdio") {
            process::startup_to_initialize(bin);
            process::stdio_round_trip(bin);
        }
        let period = std::time::Duration::from_secs(if full { 10 } else { 3 });
        let mut rust = Vec::new();
        if wanted("http") {
            rust = http_load::bernstein_http(bin, period);
        }
        if wanted("python") {
            python::compare(period, &rust);
        }
        if wanted("http-size") {
            http_size::row(bin, full);
        }
        if wanted("wrk") {
            wrk::side_by_side(bin, full);
        }
        if wanted("project") {
            project::row(bin);
        }
        if wanted("polls") {
            long_polls::row(bin, full);
        }
        if wanted("listens") {
            listens::row(bin, full);
        }
        if wanted("memory") {
            write_memory::row(bin, full);
        }
        // Only when named: it starts (and may install) a PostgreSQL cluster.
        if only.contains(&"postgres") {
            postgres::instances(bin, full);
        }
    } else {
        println!(
            "\n(process figures skipped: build the server first with `cargo build --release -p bernstein`)"
        );
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
        (
            "bernstein_claim (grant, signed receipt)",
            call(5, "bernstein_claim", json!({"claimer_id": "bench-worker"})),
        ),
        (
            "bernstein_claim (refusal, signed receipt)",
            call(
                6,
                "bernstein_claim",
                json!({"claimer_id": "bench-worker", "role": "no-such-role"}),
            ),
        ),
        ("tools/list", ledger::request(4, "tools/list", json!({}))),
    ];
    for (name, req) in &reqs {
        let out = l
            .handle(req)
            .response
            .expect("a request has a response")
            .render(0);
        let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
        if v.get("error").is_some() || v["result"]["isError"] == json!(true) {
            println!(
                "| {name} | refused: {} | | |",
                String::from_utf8_lossy(&out)
            );
            continue;
        }
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
    println!("| records | build | p50 | p99 | snapshot copy |\n|---|---|---|---|---|");
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
        // What an append costs when another request still holds the snapshot it read: the
        // store's copy-on-write of the projection (`Arc::make_mut`).
        let copies = (200_000 / n).clamp(3, 200) as usize;
        let copy = time_each(1, copies, || {
            std::hint::black_box(l.snapshot.clone());
        });
        println!(
            "| {} | {} | {} | {} | {} |",
            l.snapshot.position.seq,
            fmt(build),
            fmt(s.p50),
            fmt(s.p99),
            fmt(copy.p50)
        );
    }
    println!();
}

fn verify_speed(full: bool) {
    println!("## Offline verification (`audit verify` core, with HMAC)\n");
    println!(
        "| records | MiB | verifier (records/s) | scan alone | hash + HMAC alone | reference parse (records/s) | ratio |\n|---|---|---|---|---|---|---|"
    );
    let mut l = MemLedger::new();
    for n in if full {
        vec![100_000, 1_000_000]
    } else {
        vec![100_000]
    } {
        l.grow_to(n);
        let t = Instant::now();
        let mut v =
            bernstein_core::ledger::verify::LedgerVerifier::new("ledger.jsonl", Some(&l.key))
                .collect_calls(false);
        for line in l.lines.split(|b| *b == b'\n').filter(|x| !x.is_empty()) {
            v.push_line(line).expect("a fresh ledger verifies");
        }
        v.finish(&[]).expect("a fresh ledger verifies");
        let fast = t.elapsed();
        // The verifier's two shares: the canonical scan, and the seal (SHA-256 of the
        // pre-image and its HMAC, two passes over it): the floor of the format.
        use bernstein_core::ledger::line::{RecordKey, RecordLine};
        let key = RecordKey::new(&l.key);
        let t = Instant::now();
        for line in l.lines.split(|b| *b == b'\n').filter(|x| !x.is_empty()) {
            std::hint::black_box(RecordLine::scan(line).expect("valid"));
        }
        let scan = t.elapsed();
        let t = Instant::now();
        for line in l.lines.split(|b| *b == b'\n').filter(|x| !x.is_empty()) {
            let raw = RecordLine::scan(line).expect("valid");
            raw.check(Some(&key)).expect("valid");
        }
        let seal = t.elapsed().saturating_sub(scan);
        // The reference parse (serde, re-serialization, hash, MAC): what every line cost before
        // the streaming scan.
        let t = Instant::now();
        for line in l.lines.split(|b| *b == b'\n').filter(|x| !x.is_empty()) {
            bernstein_core::ledger::Record::parse_line(line, Some(&l.key)).expect("valid");
        }
        let slow = t.elapsed();
        let rate = |d: std::time::Duration| n as f64 / d.as_secs_f64();
        println!(
            "| {n} | {:.1} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1}× |",
            l.lines.len() as f64 / 1048576.0,
            rate(fast),
            rate(scan),
            rate(seal),
            rate(slow),
            slow.as_secs_f64() / fast.as_secs_f64()
        );
    }
    println!();
}

/// A fresh directory under the system temp dir.
/// The load average of the machine (1, 5, 15 minutes), for the report.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "n/a".into())
}

pub fn scratch_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bernstein-bench-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}
