//! The long-poll row: N concurrent `bernstein_run_status {wait_ms}` calls held open against
//! one run that does not move, on each runtime, while one more client measures `tools/list`.
//! Reports how many polls the server holds waiting (its `bernstein_waits_in_flight` gauge),
//! its threads, resident memory and CPU while they wait, the `tools/list` latency meanwhile,
//! then a write load on other runs beside them (4 connections of `bernstein_run` for 2 s: the
//! writes/s and the server's CPU, which the polls should not add to, since other runs' records
//! do not wake them), and how quickly the waits end once their clients hang up. 1,000 polls by default, 10,000
//! with `--full` (the server's connection and wait caps are raised to fit, through the
//! environment).

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::http_load::{Conn, Message, REVISION, http_command, load, memory, spawn, tool_call};
use crate::stats::fmt;

/// How long each poll asks to wait: longer than the measurement.
const WAIT_MS: u64 = 120_000;

pub fn row(bin: &Path, full: bool) {
    let polls: usize = if full { 10_000 } else { 1_000 };
    println!("## Long polls held open (`bernstein_run_status {{wait_ms: {WAIT_MS}}}`)\n");
    println!(
        "| runtime | polls | waiting | threads | RSS | CPU while waiting | tools/list p50 | p99 | writes to other runs meanwhile: writes/s, CPU | waits ended after hang-up |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for runtime in ["std", "smol"] {
        match measure(bin, runtime, polls) {
            Ok(line) => println!("{line}"),
            Err(e) => println!("| {runtime} | {polls} | error: {e} | | | | | | | |"),
        }
    }
    println!();
}

fn measure(bin: &Path, runtime: &str, polls: usize) -> Result<String, String> {
    let dir = crate::scratch_dir(&format!("polls-{runtime}"));
    let mut cmd = http_command(bin, &dir, runtime);
    let cap = (polls + 64).to_string();
    cmd.env("BERNSTEIN_MCP_MAX_CONNECTIONS", &cap)
        .env("BERNSTEIN_MCP_MAX_WAITS", &cap)
        .env("BERNSTEIN_MCP_MAX_WAITS_PER_PEER", &cap);
    let served = spawn(cmd, None, None)?;
    let pid = served.child.id();
    let mut client = Conn::open(&served.addr, None).map_err(|e| e.to_string())?;
    let (_, body) = client
        .post(&tool_call(
            1,
            "bernstein_run",
            json!({"goal": "long polls"}),
        ))
        .map_err(|e| e.to_string())?;
    let run_id = run_id(&body).ok_or("no run_id in the bernstein_run answer")?;
    let poll = tool_call(
        2,
        "bernstein_run_status",
        json!({"run_id": run_id, "wait_ms": WAIT_MS}),
    );
    let bytes = raw_post(&served.addr, &poll);
    let mut open = Vec::with_capacity(polls);
    for _ in 0..polls {
        let mut s = TcpStream::connect(&served.addr).map_err(|e| format!("connect: {e}"))?;
        s.write_all(&bytes).map_err(|e| format!("write: {e}"))?;
        open.push(s);
    }
    let waiting = settle(&mut client, Duration::from_secs(30), |n| n >= polls as u64);
    let cpu0 = crate::cpu::ticks(pid);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let cpu = crate::cpu::ticks(pid)
        .zip(cpu0)
        .map(|(b, a)| (b - a) as f64 / crate::cpu::TICKS_PER_SECOND / t0.elapsed().as_secs_f64());
    let threads = crate::cpu::threads(pid);
    let mem = memory(pid);
    let latency = crate::http_load::tools_list_latency(&mut client, 200)?;
    let write = |c, i| tool_call(i, "bernstein_run", json!({"goal": format!("w{c} {i}")}));
    let cpu0 = crate::cpu::ticks(pid);
    let t0 = Instant::now();
    let writes = load(&served, 4, Duration::from_secs(2), Arc::new(write));
    let write_cpu = crate::cpu::ticks(pid)
        .zip(cpu0)
        .map(|(b, a)| (b - a) as f64 / crate::cpu::TICKS_PER_SECOND / t0.elapsed().as_secs_f64());
    let still = settle(&mut client, Duration::from_secs(1), |n| n >= polls as u64);
    let hung_up = Instant::now();
    drop(open);
    let left = settle(&mut client, Duration::from_secs(30), |n| n == 0);
    let ended = if left == Some(0) {
        format!("{:.1} s", hung_up.elapsed().as_secs_f64())
    } else {
        format!("{left:?} still waiting after 30 s")
    };
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(format!(
        "| {runtime} | {polls} | {} | {} | {} | {} | {} | {} | {:.0}/s ({} errors), {}{} | {ended} |",
        waiting.map_or("?".into(), |n| n.to_string()),
        threads.map_or("?".into(), |n| n.to_string()),
        mem.map_or("?".into(), |(rss, _)| format!(
            "{:.0} MiB",
            rss as f64 / 1024.0
        )),
        cpu.map_or("?".into(), |c| format!("{:.0}%", c * 100.0)),
        fmt(latency.p50),
        fmt(latency.p99),
        writes.rate,
        writes.errors,
        write_cpu.map_or("?".into(), |c| format!("{:.0}%", c * 100.0)),
        if still.is_some() {
            ""
        } else {
            " (some polls ended meanwhile)"
        },
    ))
}

/// The `run_id` in a `bernstein_run` answer (JSON, or the last event of an SSE body).
pub fn run_id(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let text = v["result"]["content"][0]["text"].as_str()?;
    let payload: serde_json::Value = serde_json::from_str(text).ok()?;
    let p = payload.get("result").unwrap_or(&payload);
    p["run_id"].as_str().map(str::to_string)
}

/// One POST of `msg`, as bytes a client writes and then leaves waiting.
fn raw_post(addr: &str, msg: &Message) -> Vec<u8> {
    let mut out = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nMCP-Protocol-Version: {REVISION}\r\nContent-Length: {}\r\n\r\n",
        msg.body.len()
    )
    .into_bytes();
    out.extend_from_slice(&msg.body);
    out
}

/// Scrapes `bernstein_waits_in_flight` until `done` holds or `limit` passes; the last value.
fn settle(client: &mut Conn, limit: Duration, done: impl Fn(u64) -> bool) -> Option<u64> {
    let deadline = Instant::now() + limit;
    let mut last = None;
    while Instant::now() < deadline {
        last = client.get("/metrics").ok().and_then(|(_, body)| {
            String::from_utf8_lossy(&body)
                .lines()
                .find_map(|l| l.strip_prefix("bernstein_waits_in_flight "))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .map(|v| v as u64)
        });
        if last.is_some_and(&done) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    last
}
