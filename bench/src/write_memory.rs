//! Resident memory under a sustained write load (`bernstein-bench memory`): 16 connections
//! send `bernstein_run` back to back for 60 s (20 s in quick mode) on each runtime while the
//! server's VmRSS is sampled every few seconds; then the server is stopped and a fresh process
//! is started on the ledger the load grew, and its memory after one answer is the reference.
//! The goal is the loaded process within 1.3× of the fresh one: memory that tracks the
//! ledger, not the load's churn.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::http_load::{MakeMessage, calls, http_command, load, memory, restart_memory, spawn};

/// Clients of the load.
const CLIENTS: usize = 16;

pub fn row(bin: &Path, full: bool) {
    let period = Duration::from_secs(if full { 60 } else { 20 });
    let every = Duration::from_secs(if full { 10 } else { 5 });
    println!(
        "## Memory under a {} s `bernstein_run` load ({CLIENTS} connections)\n",
        period.as_secs()
    );
    println!(
        "| runtime | VmRSS every {} s (MiB) | at the end (peak) | writes/s | ledger after | a fresh process on it (peak) | end ÷ fresh |\n|---|---|---|---|---|---|---|",
        every.as_secs()
    );
    let (_, make) = calls()
        .into_iter()
        .find(|(name, _)| *name == "bernstein_run")
        .expect("bernstein_run is a measured call");
    for runtime in ["std", "smol"] {
        let dir = crate::scratch_dir(&format!("memory-{runtime}"));
        match one(bin, &dir, runtime, period, every, make.clone()) {
            Ok(line) => println!("{line}"),
            Err(e) => println!("| {runtime} | failed: {e} | | | | | |"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!("\nLoad average: {}\n", crate::loadavg());
}

fn one(
    bin: &Path,
    dir: &Path,
    runtime: &str,
    period: Duration,
    every: Duration,
    make: MakeMessage,
) -> Result<String, String> {
    let served = spawn(http_command(bin, dir, runtime), None, None).map_err(|e| e.to_string())?;
    let pid = served.child.id();
    let mut samples = Vec::new();
    let finished = std::thread::scope(|s| {
        let loaded = s.spawn(|| load(&served, CLIENTS, period, make));
        let began = Instant::now();
        while !loaded.is_finished() {
            std::thread::sleep(Duration::from_millis(100));
            if began.elapsed() >= every * (samples.len() as u32 + 1)
                && let Some((rss, _)) = memory(pid)
            {
                samples.push(rss);
            }
        }
        loaded.join().expect("load thread")
    });
    let end = memory(pid).ok_or("the server's memory could not be read")?;
    drop(served);
    let ledger = std::fs::read(dir.join(".sdd/ledger/ledger.jsonl")).unwrap_or_default();
    let records = ledger.iter().filter(|&&b| b == b'\n').count();
    let fresh = restart_memory(bin, dir, runtime).ok_or("the fresh process did not answer")?;
    let mib = |kib: u64| kib as f64 / 1024.0;
    let timeline: Vec<String> = samples.iter().map(|&k| format!("{:.0}", mib(k))).collect();
    Ok(format!(
        "| {runtime} | {} | {:.0} ({:.0}) | {:.0} ({} errors) | {records} records, {:.0} MiB | {:.0} ({:.0}) | {:.2}× |",
        timeline.join(", "),
        mib(end.0),
        mib(end.1),
        finished.rate,
        finished.errors,
        ledger.len() as f64 / 1048576.0,
        mib(fresh.0),
        mib(fresh.1),
        end.0 as f64 / fresh.0 as f64
    ))
}
