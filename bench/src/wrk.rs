//! `bernstein-bench wrk [--full]`: one command for every server side by side under the same
//! outside load generator, `wrk` (issue 15). The row measured is `tools/call bernstein_status`
//! (an answer of about 958 bytes) at 1, 16 and 64 keep-alive connections, on:
//!
//! - ours, `bernstein mcp --transport http` on the std and the smol runtime (a fresh scratch
//!   directory each: every call appends a durable audit record);
//! - `rmcp-peer`, a minimal server on rmcp 3.11 with the same tool and an answer as long as
//!   ours (no ledger): the peer every row is divided by, in the same run;
//! - `loopback-limit`, a raw tokio HTTP/1.1 server answering every request with the same
//!   fixed 200: the ceiling of wrk and the loopback on this machine;
//! - the Python implementation, when its venv exists (see [`crate::python`]).
//!
//! The peers live in `bench/peers/`, outside the workspace; this section builds nothing. It
//! looks for them next to the `bernstein-bench` binary and, when one is missing, prints the
//! command that builds it and skips its rows. Each server is handshaken with the Rust client
//! (`initialize`, and `notifications/initialized` when it hands out a session), one answer is
//! checked to be a JSON-RPC result without `isError` before the load and again after it (so a
//! server that started failing mid-run shows), and wrk's non-2xx answers and socket errors are
//! reported as errors (wrk's timeout is set to the run's length). wrk itself does not read the
//! bodies: only those two checks do.
//!
//! These machines are shared and noisy: read the `× rmcp` column (same run, same load), not
//! the absolute figures; the load average is printed at the start and the end. wrk runs on
//! the same two cores as the server under test, with min(connections, 2) threads.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use serde_json::json;

use crate::http_load::{self, Conn, Served, tool_call};
use crate::stats::fmt;

const CONNECTIONS: [usize; 3] = [1, 16, 64];
/// The rows, in order; the peers are binaries of `bench/peers/` of the same names.
const SERVERS: [&str; 7] = [
    "rust std",
    "rust std, 2 engines",
    "rust smol",
    "rust smol, 2 engines",
    "rmcp-peer",
    "loopback-limit",
    "python",
];

/// One server under test, running.
struct Target {
    served: Served,
    /// The Python task server behind its MCP transport, killed with it.
    helper: Option<Child>,
    /// Scratch directory removed at the end.
    dir: Option<PathBuf>,
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(h) = &mut self.helper {
            let _ = h.kill();
            let _ = h.wait();
        }
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// What wrk reported for one row.
struct Figures {
    rate: f64,
    p50: Option<Duration>,
    p99: Option<Duration>,
    requests: u64,
    non_2xx: u64,
    /// connect, read, write, timeout.
    socket: [u64; 4],
    /// The server process's CPU time (user + system, every thread) per answered call.
    cpu_per_call: Option<Duration>,
}

impl Figures {
    fn errors(&self) -> String {
        let socket: u64 = self.socket.iter().sum();
        if self.non_2xx + socket == 0 {
            return "0".into();
        }
        let [c, r, w, t] = self.socket;
        format!(
            "{} of {} (non-2xx {}; socket connect {c}, read {r}, write {w}, timeout {t})",
            self.non_2xx + socket,
            self.requests,
            self.non_2xx
        )
    }
}

/// One server's line of the comparison: how long its answer is and whether the check after
/// the load held (the one before it did, or the server has no rows).
struct Note {
    label: &'static str,
    body_bytes: usize,
    after: String,
}

/// Runs the section; `bin` is our release server.
pub fn side_by_side(bin: &Path, full: bool) {
    let period = Duration::from_secs(if full { 10 } else { 3 });
    println!(
        "## Side by side under wrk (`tools/call bernstein_status`, {} s per row)\n",
        period.as_secs()
    );
    if Command::new("wrk").arg("-v").output().is_err() {
        println!("Skipped: `wrk` is not on PATH (Debian: `apt-get install wrk`).\n");
        return;
    }
    let started = crate::loadavg();
    let scripts = crate::scratch_dir("wrk");
    let exe_dir = bin.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut notes = Vec::new();
    let mut skipped = Vec::new();
    let mut rows: Vec<(&'static str, usize, Result<Figures, String>)> = Vec::new();
    for label in SERVERS {
        let target = match label {
            "rust std" => ours(bin, "std", 1),
            "rust std, 2 engines" => ours(bin, "std", 2),
            "rust smol" => ours(bin, "smol", 1),
            "rust smol, 2 engines" => ours(bin, "smol", 2),
            "python" => python(),
            peer_name => peer(&exe_dir, peer_name),
        };
        let target = match target {
            Ok(t) => t,
            Err(why) => {
                skipped.push(format!("{label}: {why}"));
                continue;
            }
        };
        let (session, body_bytes) = match handshake(&target.served) {
            Ok(h) => h,
            Err(why) => {
                skipped.push(format!("{label}: the check before the load failed: {why}"));
                continue;
            }
        };
        let script = scripts.join(format!("{}.lua", label.replace(' ', "-")));
        if let Err(e) = std::fs::write(&script, lua(session.as_deref(), &target.served)) {
            skipped.push(format!("{label}: cannot write the wrk script: {e}"));
            continue;
        }
        for conns in CONNECTIONS {
            rows.push((
                label,
                conns,
                run_wrk(&target.served, &script, conns, period),
            ));
        }
        let after = match check(&target.served, session.as_deref()) {
            Ok(_) => "result".to_string(),
            Err(why) => format!("FAILED: {why}"),
        };
        notes.push(Note {
            label,
            body_bytes,
            after,
        });
    }
    let _ = std::fs::remove_dir_all(&scripts);

    println!(
        "Load average (1, 5, 15 min) at start: {started}; at end: {}.\n",
        crate::loadavg()
    );
    println!(
        "| server | answer body (checked a result before the load) | one call after the load |\n|---|---|---|"
    );
    for n in &notes {
        println!("| {} | {} B | {} |", n.label, n.body_bytes, n.after);
    }
    println!(
        "\n| server | conns | calls/s | p50 | p99 | errors | × rmcp | server CPU per call |\n|---|---|---|---|---|---|---|---|"
    );
    let rmcp_rate = |conns: usize| {
        rows.iter().find_map(|(l, c, r)| match r {
            Ok(f) if *l == "rmcp-peer" && *c == conns && f.rate > 0.0 => Some(f.rate),
            _ => None,
        })
    };
    for (label, conns, result) in &rows {
        match result {
            Ok(f) if f.requests == 0 => println!(
                "| {label} | {conns} | 0 (no answer within {} s) | - | - | {} | - | - |",
                period.as_secs(),
                f.errors()
            ),
            Ok(f) => {
                let d = |x: Option<Duration>| x.map_or("-".into(), fmt);
                let ratio = rmcp_rate(*conns).map_or("-".into(), |r| ratio(f.rate / r));
                println!(
                    "| {label} | {conns} | {:.0} | {} | {} | {} | {ratio} | {} |",
                    f.rate,
                    d(f.p50),
                    d(f.p99),
                    f.errors(),
                    d(f.cpu_per_call)
                );
            }
            Err(why) => println!(
                "| {label} | {conns} | wrk failed: {} | | | | | |",
                why.replace(['\n', '|'], " ")
            ),
        }
    }
    for s in &skipped {
        println!("\nSkipped {s}.");
    }
    println!();
}

/// The server CPU per call (user + system, every thread) of `bin` serving `bernstein_status` on
/// `runtime` with `engines` engines to `conns` wrk connections for `period`.
pub fn cpu_per_call(
    bin: &Path,
    runtime: &str,
    engines: usize,
    conns: usize,
    period: Duration,
) -> Result<Duration, String> {
    if Command::new("wrk").arg("-v").output().is_err() {
        return Err("`wrk` is not on PATH (Debian: `apt-get install wrk`)".into());
    }
    let target = ours(bin, runtime, engines)?;
    let (session, _) = handshake(&target.served)?;
    let scripts = crate::scratch_dir("wrk-cpu");
    let script = scripts.join("status.lua");
    let written = std::fs::write(&script, lua(session.as_deref(), &target.served));
    let figures = written
        .map_err(|e| format!("cannot write the wrk script: {e}"))
        .and_then(|()| run_wrk(&target.served, &script, conns, period));
    let _ = std::fs::remove_dir_all(&scripts);
    figures?
        .cpu_per_call
        .ok_or_else(|| "no CPU figure (no answer, or /proc unreadable)".into())
}

/// Two decimals, or two significant digits below 0.1 (so a slow server does not read 0.00×).
fn ratio(r: f64) -> String {
    if r >= 0.1 {
        format!("{r:.2}×")
    } else {
        let decimals = (1.0 - r.log10().floor()).clamp(2.0, 8.0) as usize;
        format!("{r:.decimals$}×")
    }
}

fn ours(bin: &Path, runtime: &str, engines: usize) -> Result<Target, String> {
    let dir = crate::scratch_dir(&format!("wrk-{runtime}-{engines}"));
    let mut command = http_load::http_command(bin, &dir, runtime);
    command.args(["--engines", &engines.to_string()]);
    let served = http_load::spawn(command, None, None)?;
    Ok(Target {
        served,
        helper: None,
        dir: Some(dir),
    })
}

fn peer(exe_dir: &Path, name: &str) -> Result<Target, String> {
    let bin = exe_dir.join(name);
    if !bin.exists() {
        let target_dir = exe_dir.parent().unwrap_or(exe_dir);
        return Err(format!(
            "`{}` is not built; build it with `cargo build --release --manifest-path \
             bench/peers/Cargo.toml --target-dir {}`",
            bin.display(),
            target_dir.display()
        ));
    }
    let served = http_load::spawn(Command::new(&bin), None, None)?;
    Ok(Target {
        served,
        helper: None,
        dir: None,
    })
}

fn python() -> Result<Target, String> {
    let venv = crate::python::venv()?;
    let dir = crate::scratch_dir("wrk-python");
    let (served, task_server) = crate::python::start(&venv, &dir)
        .inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&dir);
        })
        .map_err(|e| format!("the Python server did not start: {e}"))?;
    Ok(Target {
        served,
        helper: Some(task_server),
        dir: Some(dir),
    })
}

/// `initialize` (and `notifications/initialized` when the server hands out a session), then
/// one checked call. Returns the session and the answer's body length.
fn handshake(served: &Served) -> Result<(Option<String>, usize), String> {
    let mut conn = Conn::open(&served.addr, served.token.clone()).map_err(|e| e.to_string())?;
    let init = http_load::request(0, "initialize", http_load::init_params());
    match conn.post(&init).map_err(|e| format!("initialize: {e}"))? {
        (200, _) => {}
        (status, body) => {
            return Err(format!(
                "initialize: {status} {}",
                String::from_utf8_lossy(&body)
            ));
        }
    }
    let session = conn.session.clone();
    if session.is_some() {
        conn.post(&http_load::notification("notifications/initialized"))
            .map_err(|e| format!("notifications/initialized: {e}"))?;
    }
    let bytes = check(served, session.as_deref())?;
    Ok((session, bytes))
}

/// One `tools/call bernstein_status` on a fresh connection; the answer's body length when it
/// is a JSON-RPC result without `isError`.
fn check(served: &Served, session: Option<&str>) -> Result<usize, String> {
    let mut conn = Conn::open(&served.addr, served.token.clone()).map_err(|e| e.to_string())?;
    conn.session = session.map(str::to_string);
    match conn.post(&tool_call(1, "bernstein_status", json!({}))) {
        Ok((200, body)) if http_load::ok_result(&body) => Ok(body.len()),
        Ok((status, body)) => Err(format!(
            "{status} {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// The wrk script: the same POST, headers and body the Rust client sends.
fn lua(session: Option<&str>, served: &Served) -> String {
    let body = String::from_utf8(crate::ledger::call(1, "bernstein_status", json!({})))
        .expect("json is utf-8");
    let mut s = format!(
        "wrk.method = \"POST\"\nwrk.body = [==[{body}]==]\n\
         wrk.headers[\"Content-Type\"] = \"application/json\"\n\
         wrk.headers[\"Accept\"] = \"application/json, text/event-stream\"\n\
         wrk.headers[\"MCP-Protocol-Version\"] = \"{}\"\n\
         wrk.headers[\"Mcp-Method\"] = \"tools/call\"\n\
         wrk.headers[\"Mcp-Name\"] = \"bernstein_status\"\n",
        http_load::REVISION
    );
    if let Some(id) = session {
        s.push_str(&format!("wrk.headers[\"Mcp-Session-Id\"] = \"{id}\"\n"));
    }
    if let Some(t) = &served.token {
        s.push_str(&format!(
            "wrk.headers[\"Authorization\"] = \"Bearer {t}\"\n"
        ));
    }
    s
}

fn run_wrk(
    served: &Served,
    script: &Path,
    conns: usize,
    period: Duration,
) -> Result<Figures, String> {
    let cpu_before = crate::cpu::ticks(served.child.id());
    let out = Command::new("wrk")
        .args(["-t", &conns.min(2).to_string(), "-c", &conns.to_string()])
        // A timeout as long as the run: a slow answer is a latency, not a dropped request.
        .args(["-d", &format!("{}s", period.as_secs())])
        .args([
            "--timeout",
            &format!("{}s", period.as_secs()),
            "--latency",
            "-s",
        ])
        .arg(script)
        .arg(format!("http://{}/mcp", served.addr))
        .output()
        .map_err(|e| format!("spawn wrk: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "exit {}: {} {}",
            out.status,
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let cpu_after = crate::cpu::ticks(served.child.id());
    let mut figures =
        parse(&text).ok_or_else(|| format!("unreadable wrk output: {}", text.trim()))?;
    if let (Some(a), Some(b)) = (cpu_before, cpu_after)
        && figures.requests > 0
    {
        let seconds = b.saturating_sub(a) as f64 / crate::cpu::TICKS_PER_SECOND;
        figures.cpu_per_call = Some(Duration::from_secs_f64(seconds / figures.requests as f64));
    }
    Ok(figures)
}

/// Reads wrk 4's report (with `--latency`).
fn parse(text: &str) -> Option<Figures> {
    let mut f = Figures {
        rate: f64::NAN,
        p50: None,
        p99: None,
        requests: 0,
        non_2xx: 0,
        socket: [0; 4],
        cpu_per_call: None,
    };
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Requests/sec:", r] => f.rate = r.parse().ok()?,
            ["50%", d] => f.p50 = duration(d),
            ["99%", d] => f.p99 = duration(d),
            [n, "requests", "in", ..] => f.requests = n.parse().ok()?,
            ["Non-2xx", "or", "3xx", "responses:", n] => f.non_2xx = n.parse().ok()?,
            ["Socket", "errors:", rest @ ..] => {
                // "connect 0, read 0, write 0, timeout 0"
                let numbers: Vec<u64> = rest
                    .iter()
                    .filter_map(|w| w.trim_end_matches(',').parse().ok())
                    .collect();
                f.socket = numbers.try_into().ok()?;
            }
            _ => {}
        }
    }
    (!f.rate.is_nan()).then_some(f)
}

/// A wrk duration: a number and one of us, ms, s, m, h.
fn duration(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = text.split_at(split);
    let n: f64 = n.parse().ok()?;
    let secs = match unit {
        "us" => n / 1e6,
        "ms" => n / 1e3,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_wrk_report() {
        let report = "Running 3s test @ http://127.0.0.1:1/mcp
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   812.44us  301.12us   9.87ms   90.12%
    Req/Sec    10.01k   512.33    11.02k    70.00%
  Latency Distribution
     50%  760.00us
     75%    0.90ms
     90%    1.10ms
     99%    2.05ms
  59812 requests in 3.00s, 60.12MB read
  Socket errors: connect 0, read 3, write 0, timeout 1
  Non-2xx or 3xx responses: 7
Requests/sec:  19937.12
Transfer/sec:     20.04MB
";
        let f = parse(report).expect("parsed");
        assert!((f.rate - 19937.12).abs() < 1e-6);
        let near =
            |d: Option<Duration>, us: f64| (d.unwrap().as_secs_f64() * 1e6 - us).abs() < 1e-3;
        assert!(near(f.p50, 760.0) && near(f.p99, 2050.0));
        assert_eq!((f.requests, f.non_2xx, f.socket), (59812, 7, [0, 3, 0, 1]));
        assert!(f.errors().starts_with("11 of 59812 "));
        assert_eq!(
            (ratio(1.0), ratio(0.0734), ratio(0.00123)),
            ("1.00×".into(), "0.073×".into(), "0.0012×".into())
        );
    }
}
