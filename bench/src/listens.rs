//! The listen row: N `subscriptions/listen` streams (2026-07-28) held open, each subscribed to
//! the same run, on each runtime, while one more client measures `tools/list`. Reports how
//! many streams were acknowledged, the server's threads and resident memory while they are
//! held, the `tools/list` latency meanwhile, and how long one write to the run takes to reach
//! every stream as `notifications/resources/updated`. 1,000 streams by default, 10,000 with
//! `--full` (the server's connection cap is raised to fit, through the environment).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::http_load::{Conn, http_command, memory, spawn, tool_call};
use crate::long_polls::run_id;
use crate::stats::fmt;

const MODERN: &str = "2026-07-28";

pub fn row(bin: &Path, full: bool) {
    let streams: usize = if full { 10_000 } else { 1_000 };
    println!("## Listen streams held open (`subscriptions/listen`, one run each)\n");
    println!(
        "| runtime | streams | acknowledged | threads | RSS | tools/list p50 | p99 | one write reaches every stream |\n|---|---|---|---|---|---|---|---|"
    );
    for runtime in ["std", "smol"] {
        match measure(bin, runtime, streams) {
            Ok(line) => println!("{line}"),
            Err(e) => println!("| {runtime} | {streams} | error: {e} | | | | | |"),
        }
    }
    println!();
}

fn measure(bin: &Path, runtime: &str, streams: usize) -> Result<String, String> {
    let dir = crate::scratch_dir(&format!("listens-{runtime}"));
    let mut cmd = http_command(bin, &dir, runtime);
    cmd.env("BERNSTEIN_MCP_MAX_CONNECTIONS", (streams + 64).to_string());
    let served = spawn(cmd, None, None)?;
    let pid = served.child.id();
    let mut client = Conn::open(&served.addr, None).map_err(|e| e.to_string())?;
    let (_, body) = client
        .post(&tool_call(
            1,
            "bernstein_run",
            json!({"goal": "listened to"}),
        ))
        .map_err(|e| e.to_string())?;
    let run = run_id(&body).ok_or("no run_id in the bernstein_run answer")?;
    let bytes = listen_post(&served.addr, &format!("bernstein://runs/{run}"));
    let mut open = Vec::with_capacity(streams);
    for _ in 0..streams {
        let mut s = TcpStream::connect(&served.addr).map_err(|e| format!("connect: {e}"))?;
        s.write_all(&bytes).map_err(|e| format!("write: {e}"))?;
        open.push(s);
    }
    // Each stream's head and acknowledgement.
    let acknowledged = open
        .iter()
        .filter(|s| read_until(s, b"subscriptions/acknowledged", Duration::from_secs(30)))
        .count();
    std::thread::sleep(Duration::from_secs(1));
    let threads = crate::cpu::threads(pid);
    let mem = memory(pid);
    let latency = crate::http_load::tools_list_latency(&mut client, 200)?;
    let cancel = tool_call(4, "bernstein_cancel", json!({"task_id": run}));
    let t0 = Instant::now();
    client.post(&cancel).map_err(|e| e.to_string())?;
    let heard = open
        .iter()
        .filter(|s| read_until(s, b"resources/updated", Duration::from_secs(30)))
        .count();
    let fanout = t0.elapsed();
    drop(open);
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(format!(
        "| {runtime} | {streams} | {acknowledged} | {} | {} | {} | {} | {} ({heard} streams) |",
        threads.map_or("?".into(), |n| n.to_string()),
        mem.map_or("?".into(), |(rss, _)| format!(
            "{:.0} MiB",
            rss as f64 / 1024.0
        )),
        fmt(latency.p50),
        fmt(latency.p99),
        fmt(fanout),
    ))
}

/// The POST that opens one listen stream for `uri`.
fn listen_post(addr: &str, uri: &str) -> Vec<u8> {
    let body = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
            "notifications": {"resourceSubscriptions": [uri]},
        },
    }))
    .unwrap_or_default();
    let mut out = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}

/// Reads `s` until `needle` arrived (`true`) or `limit` passed.
fn read_until(mut s: &TcpStream, needle: &[u8], limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        if s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .is_err()
        {
            return false;
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => {
                seen.extend_from_slice(&buf[..n]);
                if seen.windows(needle.len()).any(|w| w == needle) {
                    return true;
                }
            }
        }
    }
    false
}
