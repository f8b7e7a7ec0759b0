//! Durable writes through the real file store: `bernstein_run` served by one local engine
//! (`Local::serve_message`, the engine of the command line and the in-process worker) from 1
//! and 16 threads on one `FileStore`, so that concurrent writers share fsyncs (group commit,
//! decided by the engine). Every call returns only once its records are durable.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

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

use crate::ledger::call;
use crate::stats::{Summary, fmt};

/// How long each writer count is measured.
const PERIOD: Duration = Duration::from_secs(3);

pub fn durable_writes() {
    println!("## Durable writes through the file store (`serve_message`, `bernstein_run`)\n");
    println!(
        "| store | writers | writes/s | p50 | p99 | fsyncs per write |\n|---|---|---|---|---|---|"
    );
    for writers in [1usize, 16] {
        let (rate, s, per_write) = measure(writers);
        println!(
            "| group commit | {writers} | {rate:.0} | {} | {} | {per_write:.2} |",
            fmt(s.p50),
            fmt(s.p99)
        );
    }
    println!();
}

/// Runs `writers` threads for [`PERIOD`]; writes per second, per-call latency and the
/// group-commit fsyncs per write.
fn measure(writers: usize) -> (f64, Summary, f64) {
    let dir = crate::scratch_dir(&format!("durable-{writers}"));
    let key = vec![7u8; 32];
    let store = Arc::new(FileStore::open(&dir, key.clone()).expect("open store"));
    let server = Arc::new(Server::new(Config::new(key)));
    let backend = Backend::new(store.clone(), Arc::new(SystemClock), Arc::new(NoHost));
    let local = Local::new(server, &backend, DEFAULT_WAIT).expect("a local engine");
    drop(backend);
    let facts = TransportFacts::stdio(None);
    let run = {
        let local = local.clone();
        Period::run(writers, move |w, i| {
            let req = call(
                i,
                "bernstein_run",
                json!({"goal": format!("w{w} goal {i}")}),
            );
            let t = Instant::now();
            local.serve_message(&req, &facts).expect("served");
            t.elapsed()
        })
    };
    let all = run.samples;
    let rate = all.len() as f64 / run.seconds;
    let per_write = store.sync_stats().syncs as f64 / all.len() as f64;
    drop(local);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    (rate, Summary::of(all), per_write)
}

/// The thread counts of [`store_appends`].
const APPENDERS: [usize; 4] = [1, 2, 4, 16];

/// Compare-and-append straight on one `FileStore` from 1 to 16 threads, each call returning
/// once its bytes are durable: the store's share of a call, without the engine. Each append is
/// one call's audit record sealed on the snapshot the thread just read (a call that wrote
/// nothing, so a head moved meanwhile places it after that head instead of refusing it).
pub fn store_appends() {
    println!(
        "## Compare-and-append on one file store (`snapshot_unsettled`, seal, `compare_and_append`)\n"
    );
    println!(
        "| threads | appends/s | p50 | p99 | CPU µs per append | fsyncs per append | writes per append |\n|---|---|---|---|---|---|---|"
    );
    for threads in APPENDERS {
        let m = measure_appends(threads);
        println!(
            "| {threads} | {:.0} | {} | {} | {:.1} | {:.2} | {:.2} |",
            m.rate,
            fmt(m.latency.p50),
            fmt(m.latency.p99),
            m.cpu_us,
            m.fsyncs,
            m.writes
        );
    }
    println!();
}

struct Appends {
    rate: f64,
    latency: Summary,
    /// Process CPU (user + system) per append.
    cpu_us: f64,
    fsyncs: f64,
    /// Ledger writes per append (appends that find the store busy share one).
    writes: f64,
}

fn measure_appends(threads: usize) -> Appends {
    use bernstein_core::ledger::{AppendResult, Store};

    let dir = crate::scratch_dir(&format!("appends-{threads}"));
    let key = vec![7u8; 32];
    let store = Arc::new(FileStore::open(&dir, key.clone()).expect("open store"));
    let run = {
        let store = store.clone();
        Period::run(threads, move |t, i| {
            let t0 = Instant::now();
            let snap = store.snapshot_unsettled().expect("snapshot");
            let append = status_audit(&snap, &key, &format!("{t}-{i}"));
            drop(snap);
            match store.compare_and_append(&append).expect("append") {
                AppendResult::Committed(_) => t0.elapsed(),
                AppendResult::Conflict { .. } => panic!("a read was refused"),
            }
        })
    };
    let n = run.samples.len() as f64;
    let m = Appends {
        rate: n / run.seconds,
        cpu_us: run.cpu_ticks as f64 / crate::cpu::TICKS_PER_SECOND * 1e6 / n,
        fsyncs: store.sync_stats().syncs as f64 / n,
        writes: store.write_stats().writes as f64 / n,
        latency: Summary::of(run.samples),
    };
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    m
}

/// A `bernstein_status` call's audit record as the call `call_id` would append it, sealed on
/// `snap`: a read, placed after whatever head the store finds.
pub fn status_audit<F: bernstein_core::ledger::Fold>(
    snap: &bernstein_core::ledger::Snapshot<F>,
    key: &[u8],
    call_id: &str,
) -> bernstein_core::ledger::Append {
    use bernstein_core::ledger::{Append, Draft, seal};
    let body = json!({"tool": "bernstein_status", "call_id": call_id, "ok": true});
    let draft = Draft::new("audit", "mcp.stateless_call", body);
    Append {
        expected: snap.position,
        records: seal(&snap.position, |s| snap.stream_head(s), vec![draft], key),
        read_heads: None,
    }
}

/// What [`Period::run`] measured.
struct Period {
    /// Every call's latency, of every thread.
    samples: Vec<Duration>,
    /// From the start to the last thread's end.
    seconds: f64,
    /// The process's CPU over the same span.
    cpu_ticks: u64,
}

impl Period {
    /// Runs `threads` threads, started together, for [`PERIOD`]: thread `t` calls `one(t, i)`
    /// for `i` = 1, 2, … (each returning its latency) until the period is over.
    fn run(threads: usize, one: impl Fn(usize, u64) -> Duration + Send + Sync + 'static) -> Period {
        let one = Arc::new(one);
        let start = Arc::new(Barrier::new(threads + 1));
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (one, start) = (one.clone(), start.clone());
                std::thread::spawn(move || {
                    let mut samples = Vec::new();
                    start.wait();
                    let began = Instant::now();
                    let mut i = 0u64;
                    while began.elapsed() < PERIOD {
                        i += 1;
                        samples.push(one(t, i));
                    }
                    samples
                })
            })
            .collect();
        let pid = std::process::id();
        let cpu_before = crate::cpu::ticks(pid).unwrap_or(0);
        start.wait();
        let began = Instant::now();
        let mut samples = Vec::new();
        for w in workers {
            samples.extend(w.join().expect("a measuring thread"));
        }
        Period {
            seconds: began.elapsed().as_secs_f64(),
            cpu_ticks: crate::cpu::ticks(pid).unwrap_or(0) - cpu_before,
            samples,
        }
    }
}
