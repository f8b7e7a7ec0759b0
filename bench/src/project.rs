//! A projection of `bernstein_status` throughput to more cores: a model, not a measurement.
//!
//! Three costs of one call are measured on this machine: the server's CPU per call (`wrk`, one
//! engine, 16 connections: everything the process spends, kernel included), the part of it
//! spent in the store's one placement lock (snapshot and compare-and-append, timed in-process,
//! with the head moved since the snapshot as it is when several engines append), and one
//! fsync. A discrete-event model then runs N engines, one per core, each serving its clients
//! one call at a time (its CPU, then the lock, which one engine holds at a time, then the call
//! waits for the next fsync while the engine serves on); one fsync runs at a time and covers
//! every call placed before it began. The model leaves out what the measured costs do not
//! show: fsyncs slowing with larger batches, the cache and memory traffic of more cores, and
//! the load generator, which here shares the two cores.

use std::collections::{BinaryHeap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bernstein_core::ledger::{Append, AppendResult, Store};

use crate::durable::status_audit;

use crate::stats::{Summary, fmt};

type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;

/// Clients per engine in the model (each sends its next call when the last is answered).
const CLIENTS_PER_ENGINE: usize = 16;
/// Engines (cores) projected.
const CORES: [usize; 5] = [1, 2, 4, 8, 16];
/// Appends timed for the store's costs.
const APPENDS: usize = 2_000;

pub fn row(bin: &Path) {
    println!("## Projection to more cores (a model fed with measured costs, not a measurement)\n");
    let cpu = match crate::wrk::cpu_per_call(bin, "std", 1, 16, Duration::from_secs(3)) {
        Ok(c) => c,
        Err(why) => {
            println!("Skipped: {why}.\n");
            return;
        }
    };
    let store = store_costs();
    println!(
        "Measured: server CPU per call {} (`wrk`, std, one engine, 16 connections); the \
         placement lock per call {} with the head where the snapshot left it, {} with it moved \
         (snapshot and compare-and-append less what the append does before the lock, medians \
         of {APPENDS}); one fsync {} (median). Load \
         average at the end: {}.\n",
        fmt(cpu),
        fmt(store.fresh),
        fmt(store.moved),
        fmt(store.fsync),
        crate::loadavg()
    );
    println!(
        "| cores (engines) | clients | calls/s | per core | CPU busy | lock busy | fsync busy | calls per fsync |\n|---|---|---|---|---|---|---|---|"
    );
    for cores in CORES {
        let lock = if cores == 1 { store.fresh } else { store.moved };
        let costs = Costs {
            cpu: cpu.saturating_sub(lock),
            lock,
            fsync: store.fsync,
        };
        let m = simulate(cores, CLIENTS_PER_ENGINE, costs);
        println!(
            "| {cores} | {} | {:.0} | {:.0} | {:.0} % | {:.0} % | {:.0} % | {:.1} |",
            cores * CLIENTS_PER_ENGINE,
            m.rate,
            m.rate / cores as f64,
            m.cpu_busy * 100.0,
            m.lock_busy * 100.0,
            m.fsync_busy * 100.0,
            m.per_fsync
        );
    }
    println!();
}

struct StoreCosts {
    fresh: Duration,
    moved: Duration,
    fsync: Duration,
}

/// The store's share of a call: snapshot and append timed together, once on the snapshot's
/// head and once after another append moved it (the record is then placed after the new head,
/// sealed again), less, for the first, the rendering and reading back of its line, which the
/// store does before it takes the lock for an append decided on the newest head (timed apart
/// on the same record); then the fsync that makes them durable.
fn store_costs() -> StoreCosts {
    let dir = crate::scratch_dir("project");
    let key = vec![7u8; 32];
    let record_key = bernstein_core::ledger::line::RecordKey::new(&key);
    let render = |append: &Append| {
        let t = Instant::now();
        for rec in &append.records {
            let line = rec.to_line();
            bernstein_store_file::ledger_file::check_line(&line[..line.len() - 1], &record_key)
                .expect("the line reads back");
        }
        t.elapsed()
    };
    let store = Arc::new(FileStore::open(&dir, key.clone()).expect("open store"));
    let (mut fresh, mut moved, mut fsync) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..APPENDS {
        let t = Instant::now();
        let snap = store.snapshot_unsettled().expect("snapshot");
        let read = Instant::now() - t;
        let first = status_audit(&snap, &key, &format!("{i}-0"));
        let second = status_audit(&snap, &key, &format!("{i}-1"));
        drop(snap);
        // Only an append decided on the newest head renders before the lock; one decided on
        // an older head is rendered under it.
        let place = |append: Append, before_lock: bool| {
            let outside = if before_lock {
                render(&append)
            } else {
                Duration::ZERO
            };
            let t = Instant::now();
            let AppendResult::Committed(at) =
                store.compare_and_append_unsettled(&append).expect("append")
            else {
                panic!("a read was refused");
            };
            ((read + t.elapsed()).saturating_sub(outside), at.seq)
        };
        fresh.push(place(first, true).0);
        let (took, seq) = place(second, false);
        moved.push(took);
        let t = Instant::now();
        store.settle(seq).expect("fsync");
        fsync.push(t.elapsed());
    }
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    StoreCosts {
        fresh: Summary::of(fresh).p50,
        moved: Summary::of(moved).p50,
        fsync: Summary::of(fsync).p50,
    }
}

#[derive(Clone, Copy)]
struct Costs {
    /// A call's CPU outside the lock.
    cpu: Duration,
    /// A call's time holding the placement lock (its engine's core is busy meanwhile).
    lock: Duration,
    fsync: Duration,
}

struct Modelled {
    rate: f64,
    cpu_busy: f64,
    lock_busy: f64,
    fsync_busy: f64,
    per_fsync: f64,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// An engine placed a call and is free for its next.
    Placed(usize),
    /// The fsync in flight ended.
    Synced,
}

/// `engines` engines with `clients` closed-loop clients each, for two simulated seconds (the
/// first half a second not counted).
fn simulate(engines: usize, clients: usize, c: Costs) -> Modelled {
    let ns = |d: Duration| d.as_nanos() as u64;
    let (cpu, lock, fsync) = (ns(c.cpu), ns(c.lock).max(1), ns(c.fsync).max(1));
    let (warm, end) = (500_000_000u64, 2_000_000_000u64);
    let mut events = BinaryHeap::new();
    let mut seq = 0u64;
    let mut at = |events: &mut BinaryHeap<_>, t: u64, e: Event| {
        seq += 1;
        events.push(std::cmp::Reverse((t, seq, e)));
    };
    let mut ready = vec![clients; engines];
    let mut idle = vec![true; engines];
    let mut lock_free = 0u64;
    let (mut placed, mut syncing): (VecDeque<usize>, Vec<usize>) = (VecDeque::new(), Vec::new());
    let (mut answered, mut fsyncs, mut busy_cpu, mut busy_lock, mut busy_fsync) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let counted = |t: u64| t >= warm && t < end;
    // An idle engine with a call ready starts it at `t`.
    let start = |e: usize, t: u64, ready: &mut [usize], idle: &mut [bool], lock_free: &mut u64| {
        if ready[e] == 0 {
            idle[e] = true;
            return None;
        }
        ready[e] -= 1;
        idle[e] = false;
        let from = (t + cpu).max(*lock_free);
        *lock_free = from + lock;
        Some(*lock_free)
    };
    for e in 0..engines {
        if let Some(done) = start(e, 0, &mut ready, &mut idle, &mut lock_free) {
            at(&mut events, done, Event::Placed(e));
        }
    }
    while let Some(std::cmp::Reverse((t, _, event))) = events.pop() {
        if t >= end {
            break;
        }
        match event {
            Event::Placed(e) => {
                if counted(t) {
                    busy_cpu += cpu + lock;
                    busy_lock += lock;
                }
                placed.push_back(e);
                if let Some(done) = start(e, t, &mut ready, &mut idle, &mut lock_free) {
                    at(&mut events, done, Event::Placed(e));
                }
            }
            Event::Synced => {
                if counted(t) {
                    answered += syncing.len() as u64;
                    fsyncs += 1;
                    busy_fsync += fsync;
                }
                for e in std::mem::take(&mut syncing) {
                    ready[e] += 1;
                    if idle[e]
                        && let Some(done) = start(e, t, &mut ready, &mut idle, &mut lock_free)
                    {
                        at(&mut events, done, Event::Placed(e));
                    }
                }
            }
        }
        if syncing.is_empty() && !placed.is_empty() {
            syncing = placed.drain(..).collect();
            at(&mut events, t + fsync, Event::Synced);
        }
    }
    let span = (end - warm) as f64;
    Modelled {
        rate: answered as f64 / (span / 1e9),
        cpu_busy: busy_cpu as f64 / (span * engines as f64),
        lock_busy: busy_lock as f64 / span,
        fsync_busy: busy_fsync as f64 / span,
        per_fsync: answered as f64 / fsyncs.max(1) as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn the_model_is_bound_by_the_scarcest_resource() {
        // CPU-bound: one engine, a fast lock and fsync: about one call per 100 µs.
        let m = simulate(
            1,
            16,
            Costs {
                cpu: us(90),
                lock: us(10),
                fsync: us(50),
            },
        );
        assert!((9_000.0..=10_100.0).contains(&m.rate), "{}", m.rate);
        assert!(m.cpu_busy > 0.95);
        // Twice the engines, twice the calls while the lock has room.
        let two = simulate(
            2,
            16,
            Costs {
                cpu: us(90),
                lock: us(10),
                fsync: us(50),
            },
        );
        assert!(two.rate > 1.9 * m.rate, "{} vs {}", two.rate, m.rate);
        // Lock-bound: at most one placement per 50 µs, whatever the engines.
        let locked = simulate(
            16,
            16,
            Costs {
                cpu: us(90),
                lock: us(50),
                fsync: us(50),
            },
        );
        assert!(
            locked.rate <= 20_000.0 && locked.rate > 19_000.0,
            "{}",
            locked.rate
        );
        assert!(locked.lock_busy > 0.95);
        // One client: each call waits for its own fsync.
        let alone = simulate(
            1,
            1,
            Costs {
                cpu: us(90),
                lock: us(10),
                fsync: us(100),
            },
        );
        assert!((4_900.0..=5_000.0).contains(&alone.rate), "{}", alone.rate);
        assert!((alone.per_fsync - 1.0).abs() < 1e-9);
    }
}
