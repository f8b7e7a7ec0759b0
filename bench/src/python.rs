//! The same HTTP load against the Python implementation (PyPI `bernstein`, Python >= 3.12),
//! when it is installed: its task server (`bernstein serve`) behind its streamable HTTP MCP
//! transport (`bernstein.mcp.remote_transport.run_remote`), both on free loopback ports, with a
//! bearer token (the Python side requires one) and its rate limits raised out of the way.
//! Prints the ratios to the Rust rows.
//!
//! The interpreter is found in `BERNSTEIN_PY_VENV` or `.cache/venv-bernstein-py` (made by
//! `bench/python-setup.sh`); when it is missing the section says so and why, and is skipped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::http_load::{self, Conn, Rates, Served, tool_call};
use crate::stats::fmt;

const TOKEN: &str = "bernstein-bench-token";
/// Requests per minute high enough never to be reached here.
const UNLIMITED: &str = "100000000";

/// The venv holding the Python `bernstein`, if it has one.
pub fn venv() -> Result<PathBuf, String> {
    let dir = match std::env::var_os("BERNSTEIN_PY_VENV") {
        Some(d) => PathBuf::from(d),
        None => std::env::current_dir()
            .map_err(|e| e.to_string())?
            .join(".cache/venv-bernstein-py"),
    };
    if !dir.join("bin/bernstein").exists() {
        return Err(format!(
            "no Python `bernstein` in {} (it needs Python >= 3.12; run bench/python-setup.sh, \
             or set BERNSTEIN_PY_VENV)",
            dir.display()
        ));
    }
    Ok(dir)
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// Starts the task server and the MCP transport; waits until a status call succeeds end to
/// end. Returns the transport (the task server is returned to be killed with it).
pub fn start(venv: &Path, dir: &Path) -> Result<(Served, std::process::Child), String> {
    let t0 = Instant::now();
    let (task_port, mcp_port) = (free_port()?, free_port()?);
    let task_server = Command::new(venv.join("bin/bernstein"))
        .args([
            "serve",
            "--port",
            &task_port.to_string(),
            "--log-level",
            "warning",
        ])
        .current_dir(dir)
        .env("BERNSTEIN_AUTH_TOKEN", TOKEN)
        // Its per-client rate limits (30 writes, 300 reads a minute by default) would measure
        // the limiter, not the server.
        .env("BERNSTEIN_RATE_LIMIT_WRITE_RPM", UNLIMITED)
        .env("BERNSTEIN_RATE_LIMIT_READ_RPM", UNLIMITED)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn bernstein serve: {e}"))?;
    let mut transport = Command::new(venv.join("bin/python"));
    transport
        .args([
            "-c",
            &format!(
                "from bernstein.mcp.remote_transport import run_remote; \
                 run_remote(server_url='http://127.0.0.1:{task_port}', port={mcp_port}, auth_token='{TOKEN}')"
            ),
        ])
        .current_dir(dir)
        .env("BERNSTEIN_AUTH_TOKEN", TOKEN);
    let mut task_server = task_server;
    let mut served = match http_load::spawn(
        transport,
        Some(format!("127.0.0.1:{mcp_port}")),
        Some(TOKEN.into()),
    ) {
        Ok(s) => s,
        Err(e) => {
            let _ = task_server.kill();
            let _ = task_server.wait();
            return Err(e);
        }
    };
    // The transport answers `initialize` on its own; the task server may still be starting.
    let status = tool_call(1, "bernstein_status", json!({}));
    loop {
        if let Ok(mut c) = Conn::open(&served.addr, served.token.clone())
            && let Ok((200, body)) = c.post(&status)
            && http_load::ok_result(&body)
        {
            break;
        }
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = task_server.kill();
            let _ = task_server.wait();
            return Err("the Python task server did not answer within 120 s".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    served.startup = t0.elapsed();
    Ok((served, task_server))
}

/// Runs the HTTP table against the Python server and prints ratios to `rust` (rows of
/// [`http_load::bernstein_http`]).
pub fn compare(period: Duration, rust: &[(String, Rates)]) {
    println!("## Python implementation, same HTTP load\n");
    let venv = match venv() {
        Ok(v) => v,
        Err(why) => {
            println!("Skipped: {why}.\n");
            return;
        }
    };
    let dir = crate::scratch_dir("python");
    let (served, mut task_server) = match start(&venv, &dir) {
        Ok(s) => s,
        Err(e) => {
            println!("Skipped: the Python server did not start: {e}.\n");
            return;
        }
    };
    let memory = |s: &Served, t: &std::process::Child| match (
        http_load::memory(s.child.id()),
        http_load::memory(t.id()),
    ) {
        (Some(a), Some(b)) => Some((a.0 + b.0, a.1 + b.1)),
        _ => None,
    };
    let idle = memory(&served, &task_server);
    println!(
        "| server | clients | call | calls/s | p50 | p99 | calls | errors |\n|---|---|---|---|---|---|---|---|"
    );
    let rates = http_load::table("python", &served, period);
    let loaded = memory(&served, &task_server);
    println!(
        "\nPython: start (task server + transport) → first successful `bernstein_status` {}; \
         memory of both processes idle {}, after load {}.\n",
        fmt(served.startup),
        http_load::fmt_mem(idle),
        http_load::fmt_mem(loaded)
    );
    println!("| clients | call | Rust std / Python | Rust smol / Python |\n|---|---|---|---|");
    for ((clients, call), py) in &rates {
        let ratio = |label: &str| {
            rust.iter()
                .find(|(l, _)| l == label)
                .and_then(|(_, rows)| rows.iter().find(|(k, _)| k == &(*clients, *call)))
                .filter(|_| *py > 0.0)
                .map_or("-".to_string(), |(_, r)| format!("{:.0}×", r / py))
        };
        println!(
            "| {clients} | {call} | {} | {} |",
            ratio("rust std"),
            ratio("rust smol")
        );
    }
    println!();
    drop(served);
    let _ = task_server.kill();
    let _ = task_server.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
