//! Figures that need the real binary: process start to `initialize`, stdio round trip.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::json;

use crate::ledger::request;
use crate::stats::{Summary, fmt, time_each};

/// The server under test: `BERNSTEIN_BENCH_SERVER` when set (to measure another build), else
/// the release server next to this benchmark binary.
pub fn binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("BERNSTEIN_BENCH_SERVER") {
        return Some(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.join("bernstein");
    bin.exists().then_some(bin)
}

fn initialize() -> Vec<u8> {
    request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
    )
}

pub fn startup_to_initialize(bin: &PathBuf) {
    let dir = crate::scratch_dir("startup");
    let mut samples = Vec::new();
    for _ in 0..30 {
        let t = Instant::now();
        let mut child = Command::new(bin)
            .args(["mcp", "--workdir"])
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn server");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut line = initialize();
        line.push(b'\n');
        stdin.write_all(&line).expect("write");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut answer = String::new();
        out.read_line(&mut answer).expect("read");
        samples.push(t.elapsed());
        drop(stdin);
        let _ = child.wait();
    }
    let s = Summary::of(samples);
    println!(
        "## Process start to `initialize` answer (stdio, 30 starts)\n\np50 {}, p99 {}\n",
        fmt(s.p50),
        fmt(s.p99)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

pub fn stdio_round_trip(bin: &PathBuf) {
    let dir = crate::scratch_dir("stdio");
    let mut child = Command::new(bin)
        .args(["mcp", "--workdir"])
        .arg(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut rt = |msg: &[u8]| {
        stdin.write_all(msg).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
        let mut answer = String::new();
        out.read_line(&mut answer).expect("read");
    };
    rt(&initialize());
    println!(
        "## stdio round trip (one client, sequential)\n\n| request | p50 | p99 | calls/s |\n|---|---|---|---|"
    );
    let list = request(2, "tools/list", json!({}));
    let s = time_each(100, 2_000, || rt(&list));
    println!(
        "| tools/list | {} | {} | {:.0} |",
        fmt(s.p50),
        fmt(s.p99),
        s.rate()
    );
    let status = crate::ledger::call(3, "bernstein_status", json!({}));
    let s = time_each(50, 1_000, || rt(&status));
    println!(
        "| tools/call bernstein_status (durable audit append) | {} | {} | {:.0} |\n",
        fmt(s.p50),
        fmt(s.p99),
        s.rate()
    );
    drop(stdin);
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
