//! HTTP load against a real server process: `bernstein mcp --transport http` on each runtime
//! (or any other streamable-HTTP MCP server the caller starts), driven by N client threads on
//! keep-alive connections with a small raw HTTP/1.1 client (std::net + httparse).
//!
//! Reports throughput and p50/p99 latency per (runtime, clients, call), the time from process
//! start to the first `initialize` answer, and the server's resident memory (VmRSS, VmHWM)
//! idle and after the load. Every answer is checked to be a 200 with a JSON-RPC result; other
//! answers are counted as errors and reported, never hidden.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::stats::{Summary, fmt};

pub const REVISION: &str = "2025-11-25";

/// Builds the message a client sends: `(client index, call number) -> message`.
pub type MakeMessage = Arc<dyn Fn(usize, u64) -> Message + Send + Sync>;

/// Calls per second by (clients, call).
pub type Rates = Vec<((usize, &'static str), f64)>;

/// A server process under test, with the address it announced.
pub struct Served {
    pub child: Child,
    pub addr: String,
    /// Bearer token the server requires, if any.
    pub token: Option<String>,
    /// Process start to the first successful `initialize` answer.
    pub startup: Duration,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawns `cmd` (stdout and stderr piped; the server announces `http://ADDR/mcp` on one of
/// them unless `addr` is given), waits for the address, and times the first `initialize`.
pub fn spawn(
    mut cmd: Command,
    addr: Option<String>,
    token: Option<String>,
) -> Result<Served, String> {
    let t0 = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let (tx, rx) = mpsc::channel();
    for out in [
        Box::new(child.stdout.take().expect("stdout")) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().expect("stderr")),
    ] {
        let tx = tx.clone();
        // Drains the stream for the life of the process, so the server never blocks on it.
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("http://").nth(1)
                    && let Some(a) = rest.split("/mcp").next()
                    && rest.contains("/mcp")
                {
                    let _ = tx.send(a.to_string());
                }
            }
        });
    }
    let deadline = t0 + Duration::from_secs(60);
    let addr = match addr {
        Some(a) => a,
        None => rx
            .recv_timeout(Duration::from_secs(60))
            .map_err(|_| "the server announced no address within 60 s".to_string())?,
    };
    let init = request(0, "initialize", init_params());
    loop {
        if let Ok(mut c) = Conn::open(&addr, token.clone())
            && let Ok((200, _)) = c.post(&init)
        {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(format!("no initialize answer from {addr} within 60 s"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(Served {
        startup: t0.elapsed(),
        child,
        addr,
        token,
    })
}

pub fn init_params() -> Value {
    json!({"protocolVersion": REVISION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}})
}

/// One JSON-RPC message with the HTTP headers the MCP transport asks for.
#[derive(Clone)]
pub struct Message {
    pub body: Vec<u8>,
    method: String,
    name: Option<String>,
}

pub fn request(id: u64, method: &str, params: Value) -> Message {
    let name = params["name"].as_str().map(str::to_string);
    Message {
        body: crate::ledger::request(id, method, params),
        method: method.to_string(),
        name,
    }
}

/// A JSON-RPC notification (no id, so no answer but the HTTP status).
pub fn notification(method: &str) -> Message {
    Message {
        body: serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method})).expect("json"),
        method: method.to_string(),
        name: None,
    }
}

pub fn tool_call(id: u64, tool: &str, arguments: Value) -> Message {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// A keep-alive client connection.
pub struct Conn {
    stream: TcpStream,
    addr: String,
    buf: Vec<u8>,
    /// The `Mcp-Session-Id` the server handed out, sent back on every later request.
    pub session: Option<String>,
    /// `Authorization: Bearer` token, for servers that require one.
    pub token: Option<String>,
}

impl Conn {
    pub fn open(addr: &str, token: Option<String>) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Conn {
            stream,
            addr: addr.to_string(),
            buf: Vec::with_capacity(8192),
            session: None,
            token,
        })
    }

    /// Sends `msg` and reads one response: status and body (the JSON of the last `data:` line
    /// when the body is an event stream).
    pub fn post(&mut self, msg: &Message) -> std::io::Result<(u16, Vec<u8>)> {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {REVISION}\r\n\
             Mcp-Method: {}\r\nContent-Length: {}\r\n",
            self.addr,
            msg.method,
            msg.body.len()
        );
        if let Some(name) = &msg.name {
            head.push_str(&format!("Mcp-Name: {name}\r\n"));
        }
        if let Some(s) = &self.session {
            head.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
        }
        if let Some(t) = &self.token {
            head.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&msg.body);
        self.stream.write_all(&out)?;
        self.read_response()
    }

    /// Sends `GET path` and reads one response (`/metrics`, the probes).
    pub fn get(&mut self, path: &str) -> std::io::Result<(u16, Vec<u8>)> {
        let mut head = format!("GET {path} HTTP/1.1\r\nHost: {}\r\n", self.addr);
        if let Some(t) = &self.token {
            head.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        head.push_str("\r\n");
        self.stream.write_all(head.as_bytes())?;
        self.read_response()
    }

    fn read_response(&mut self) -> std::io::Result<(u16, Vec<u8>)> {
        let bad = |m: &str| std::io::Error::other(m.to_string());
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut resp = httparse::Response::new(&mut headers);
            match resp.parse(&self.buf).map_err(|e| bad(&e.to_string()))? {
                httparse::Status::Complete(head_len) => {
                    let status = resp.code.unwrap_or(0);
                    let mut length = None;
                    let mut chunked = false;
                    for h in resp.headers.iter() {
                        let value = String::from_utf8_lossy(h.value);
                        if h.name.eq_ignore_ascii_case("content-length") {
                            length = value.trim().parse::<usize>().ok();
                        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                            chunked = value.to_ascii_lowercase().contains("chunked");
                        } else if h.name.eq_ignore_ascii_case("mcp-session-id") {
                            self.session = Some(value.into_owned());
                        }
                    }
                    self.buf.drain(..head_len);
                    let body = match (chunked, length) {
                        (true, _) => self.chunked_body()?,
                        (false, Some(length)) => {
                            while self.buf.len() < length {
                                self.fill()?;
                            }
                            self.buf.drain(..length).collect()
                        }
                        (false, None) => return Err(bad("a response without a body length")),
                    };
                    return Ok((status, json_of(body)));
                }
                httparse::Status::Partial => self.fill()?,
            }
        }
    }

    /// Reads a `Transfer-Encoding: chunked` body from the buffer start.
    fn chunked_body(&mut self) -> std::io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                    break i;
                }
                self.fill()?;
            };
            let size_text = String::from_utf8_lossy(&self.buf[..line_end]).into_owned();
            let size_hex = size_text.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_hex, 16)
                .map_err(|_| std::io::Error::other(format!("bad chunk size {size_text:?}")))?;
            while self.buf.len() < line_end + 2 + size + 2 {
                self.fill()?;
            }
            body.extend_from_slice(&self.buf[line_end + 2..line_end + 2 + size]);
            self.buf.drain(..line_end + 2 + size + 2);
            if size == 0 {
                // No trailers are expected; the empty line after the last chunk was consumed.
                return Ok(body);
            }
        }
    }

    fn fill(&mut self) -> std::io::Result<()> {
        let mut chunk = [0u8; 16384];
        let n = self.stream.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::Error::other("the server closed the connection"));
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }
}

/// The JSON of an SSE body's last `data:` line, or the body itself.
fn json_of(body: Vec<u8>) -> Vec<u8> {
    if body.first() == Some(&b'{') {
        return body;
    }
    String::from_utf8_lossy(&body)
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .next_back()
        .map(|d| d.trim().as_bytes().to_vec())
        .unwrap_or(body)
}

/// Whether `body` is a successful JSON-RPC tool result.
pub fn ok_result(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body)
        .is_ok_and(|v| v.get("result").is_some() && v["result"]["isError"].as_bool() != Some(true))
}

/// The outcome of one load cell.
pub struct Load {
    pub calls: usize,
    pub errors: usize,
    pub first_error: Option<String>,
    pub rate: f64,
    pub latency: Option<Summary>,
}

/// `clients` threads, each on its own keep-alive connection (initialized first), send the
/// message `make(client, i)` back to back for `period`.
pub fn load(served: &Served, clients: usize, period: Duration, make: MakeMessage) -> Load {
    load_spread(&[served], clients, period, make)
}

/// [`load`] with the clients spread round-robin over several servers.
pub fn load_spread(
    servers: &[&Served],
    clients: usize,
    period: Duration,
    make: MakeMessage,
) -> Load {
    let start = Arc::new(Barrier::new(clients + 1));
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let served = servers[c % servers.len()];
            let (addr, token) = (served.addr.clone(), served.token.clone());
            let (start, make) = (start.clone(), make.clone());
            std::thread::spawn(move || {
                let mut samples = Vec::new();
                let mut errors = (0usize, None);
                let conn = Conn::open(&addr, token.clone()).and_then(|mut conn| {
                    conn.post(&request(0, "initialize", init_params()))?;
                    Ok(conn)
                });
                start.wait();
                let mut conn = match conn {
                    Ok(conn) => conn,
                    Err(e) => return (samples, (1, Some(format!("connect: {e}")))),
                };
                let began = Instant::now();
                let mut i = 0;
                while began.elapsed() < period {
                    i += 1;
                    let msg = make(c, i);
                    let t = Instant::now();
                    match conn.post(&msg) {
                        Ok((200, body)) if ok_result(&body) => samples.push(t.elapsed()),
                        Ok((status, body)) => {
                            errors.0 += 1;
                            errors.1.get_or_insert_with(|| {
                                format!("{status}: {}", String::from_utf8_lossy(&body))
                            });
                        }
                        Err(e) => {
                            errors.0 += 1;
                            errors.1.get_or_insert_with(|| e.to_string());
                            match Conn::open(&addr, token.clone()) {
                                Ok(c) => conn = c,
                                Err(_) => break,
                            }
                        }
                    }
                }
                (samples, errors)
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    let mut all = Vec::new();
    let (mut errors, mut first_error) = (0, None);
    for t in threads {
        let (samples, (e, first)) = t.join().expect("client thread");
        all.extend(samples);
        errors += e;
        first_error = first_error.or(first);
    }
    let elapsed = began.elapsed().as_secs_f64();
    Load {
        calls: all.len(),
        errors,
        first_error,
        rate: all.len() as f64 / elapsed,
        latency: (!all.is_empty()).then(|| Summary::of(all)),
    }
}

/// VmRSS and VmHWM of `pid`, in KiB.
pub fn memory(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

pub fn fmt_mem(m: Option<(u64, u64)>) -> String {
    match m {
        Some((rss, hwm)) => format!(
            "{:.1} MiB (peak {:.1} MiB)",
            rss as f64 / 1024.0,
            hwm as f64 / 1024.0
        ),
        None => "n/a".into(),
    }
}

/// The read and write calls every server is measured with.
pub fn calls() -> Vec<(&'static str, MakeMessage)> {
    vec![
        (
            "bernstein_status",
            Arc::new(|_, i| tool_call(i, "bernstein_status", json!({}))) as MakeMessage,
        ),
        (
            "bernstein_run",
            Arc::new(|c, i| {
                tool_call(
                    i,
                    "bernstein_run",
                    json!({"goal": format!("c{c} goal {i}")}),
                )
            }),
        ),
    ]
}

/// One row per (clients, call) against an already running server; returns the rows' rates.
pub fn table(label: &str, served: &Served, period: Duration) -> Rates {
    let mut rates = Vec::new();
    for clients in [1usize, 16] {
        for (name, make) in calls() {
            let l = load(served, clients, period, make);
            let (p50, p99) = l
                .latency
                .map_or(("-".into(), "-".into()), |s| (fmt(s.p50), fmt(s.p99)));
            let errs = match &l.first_error {
                Some(e) => format!("{} (first: {})", l.errors, truncate(e, 400)),
                None => l.errors.to_string(),
            };
            println!(
                "| {label} | {clients} | {name} | {:.0} | {p50} | {p99} | {} | {errs} |",
                l.rate, l.calls
            );
            rates.push(((clients, name), l.rate));
        }
    }
    rates
}

fn truncate(s: &str, n: usize) -> String {
    let s = s.replace('\n', " ").replace('|', "/");
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

struct MemoryRow {
    runtime: &'static str,
    startup: Duration,
    idle: Option<(u64, u64)>,
    loaded: Option<(u64, u64)>,
    restarted: Option<(u64, u64)>,
    records: usize,
    bytes: usize,
}

pub fn http_command(bin: &Path, dir: &Path, runtime: &str) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(["mcp", "--workdir"]).arg(dir).args([
        "--transport",
        "http",
        "--port",
        "0",
        "--runtime",
        runtime,
    ]);
    cmd
}

/// Memory of a fresh server on the ledger in `dir` after one `bernstein_status`: what the
/// projection of that ledger costs, without the load's allocator churn.
pub fn restart_memory(bin: &Path, dir: &Path, runtime: &str) -> Option<(u64, u64)> {
    let served = spawn(http_command(bin, dir, runtime), None, None).ok()?;
    let mut conn = Conn::open(&served.addr, None).ok()?;
    conn.post(&tool_call(1, "bernstein_status", json!({})))
        .ok()?;
    memory(served.child.id())
}

/// Load on `bernstein mcp --transport http` for both runtimes; returns each runtime's rates.
pub fn bernstein_http(bin: &Path, period: Duration) -> Vec<(String, Rates)> {
    println!(
        "## HTTP load (`bernstein mcp --transport http`, keep-alive, {} s per row)\n",
        period.as_secs()
    );
    println!(
        "| server | clients | call | calls/s | p50 | p99 | calls | errors |\n|---|---|---|---|---|---|---|---|"
    );
    let mut memory_rows = Vec::new();
    let mut all = Vec::new();
    for runtime in ["std", "smol"] {
        let dir = crate::scratch_dir(&format!("http-{runtime}"));
        match spawn(http_command(bin, &dir, runtime), None, None) {
            Ok(served) => {
                let startup = served.startup;
                std::thread::sleep(Duration::from_millis(200));
                let idle = memory(served.child.id());
                let rates = table(&format!("rust {runtime}"), &served, period);
                let loaded = memory(served.child.id());
                let ledger =
                    std::fs::read(dir.join(".sdd/ledger/ledger.jsonl")).unwrap_or_default();
                let records = ledger.iter().filter(|&&b| b == b'\n').count();
                drop(served);
                let restarted = restart_memory(bin, &dir, runtime);
                memory_rows.push(MemoryRow {
                    runtime,
                    startup,
                    idle,
                    loaded,
                    restarted,
                    records,
                    bytes: ledger.len(),
                });
                all.push((format!("rust {runtime}"), rates));
            }
            Err(e) => println!("| rust {runtime} | - | - | failed to start: {e} | | | | |"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!(
        "\n| server | start → `initialize` answer (HTTP) | memory idle | memory after load | \
         ledger after load | memory of a fresh process on that ledger |\n|---|---|---|---|---|---|"
    );
    for r in memory_rows {
        println!(
            "| rust {} | {} | {} | {} | {} records, {:.1} MiB | {} |",
            r.runtime,
            fmt(r.startup),
            fmt_mem(r.idle),
            fmt_mem(r.loaded),
            r.records,
            r.bytes as f64 / 1048576.0,
            fmt_mem(r.restarted)
        );
    }
    println!();
    all
}

/// The latency of `n` sequential `tools/list` calls on `client` (each must answer 200).
pub fn tools_list_latency(client: &mut Conn, n: usize) -> Result<crate::stats::Summary, String> {
    let list = request(3, "tools/list", serde_json::json!({}));
    let mut took = Vec::with_capacity(n);
    for _ in 0..n {
        let t = std::time::Instant::now();
        let (status, _) = client.post(&list).map_err(|e| e.to_string())?;
        if status != 200 {
            return Err(format!("tools/list answered {status}"));
        }
        took.push(t.elapsed());
    }
    Ok(crate::stats::Summary::of(took))
}
