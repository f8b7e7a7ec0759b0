//! Shared ground of the runtime's replay, crash and fault tests (`replay_*.rs`, `crash_*.rs`,
//! `faults_*.rs`): the recorded journals (the core's fixture loader, included from
//! domain/tests/replay_support), scratch project directories, copies of a fixture's store, the
//! `bernstein` binary and a line-oriented client for its stdio server, and a small seeded
//! random generator whose seed every randomized test prints.
//!
//! The binary is `$BERNSTEIN_BIN`, else `bernstein` next to this test's target directory
//! (`cargo build --workspace` or `cargo test --workspace` builds it; scripts/test.sh does).
#![allow(dead_code)]

#[path = "../../../domain/tests/replay_support/mod.rs"]
pub mod fixtures;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

pub use fixtures::Fixture;

/// Upper bound on waiting for one reply; reached only when the server is broken.
pub const SAFETY_TIMEOUT: Duration = Duration::from_secs(60);

/// The `bernstein` binary under test.
pub fn bin() -> PathBuf {
    if let Some(b) = std::env::var_os("BERNSTEIN_BIN") {
        return PathBuf::from(b);
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    // <target>/debug/deps/<test>-<hash> → <target>/debug/bernstein
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("bernstein"))
        .expect("a target dir");
    assert!(
        bin.is_file(),
        "{} does not exist: build the server first (`cargo build -p bernstein`, or run the \
         workspace tests with `cargo test --workspace`), or point BERNSTEIN_BIN at it",
        bin.display()
    );
    bin
}

/// The count in the environment variable `name`, else `default` (how many kills, rounds, ...).
pub fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A scratch directory, removed on drop (kept when `BERNSTEIN_KEEP_TEST_DIRS` is set).
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(label: &str) -> Scratch {
        Scratch::under(&std::env::temp_dir(), label)
    }

    pub fn under(base: &Path, label: &str) -> Scratch {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = base.join(format!(
            "bernstein-proof-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::env::var_os("BERNSTEIN_KEEP_TEST_DIRS").is_none() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

fn private_file(path: &Path, bytes: &[u8]) {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    f.write_all(bytes).unwrap();
}

/// Makes `project/.sdd` hold a copy of `fx`'s ledger and keys (modes 0700/0600, no
/// checkpoint) and returns `project`.
pub fn copy_store(fx: &Fixture, project: &Path) -> PathBuf {
    let sdd = project.join(".sdd");
    for dir in [sdd.join("ledger"), sdd.join("keys")] {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .unwrap();
    }
    private_file(&sdd.join("ledger/ledger.jsonl"), &fx.ledger);
    for entry in fs::read_dir(fx.dir.join("keys")).unwrap() {
        let entry = entry.unwrap();
        private_file(
            &sdd.join("keys").join(entry.file_name()),
            &fs::read(entry.path()).unwrap(),
        );
    }
    project.to_path_buf()
}

/// A small seeded generator (xorshift64*). The seed is `$BERNSTEIN_TEST_SEED` or the clock,
/// printed so that a failure can be replayed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn seeded(test: &str) -> Rng {
        let seed = std::env::var("BERNSTEIN_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
        eprintln!("{test}: BERNSTEIN_TEST_SEED={seed}");
        Rng(seed | 1)
    }

    /// A generator derived from another's output (one per thread).
    pub fn from_seed(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A `bernstein mcp` process on stdio, with a reader thread turning its stdout into lines.
pub struct McpProcess {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    pub stderr_log: PathBuf,
    /// Whether `stderr_log` is a file this helper created (and removes on drop); a path the
    /// caller chose (e.g. `/dev/full`) is never removed.
    owns_log: bool,
}

impl McpProcess {
    /// Starts `bernstein --workdir <project> mcp <args>` with the given environment. Its
    /// stderr goes to a log file outside the project (so a full or read-only project cannot
    /// take the log down with it), removed when the process handle is dropped.
    pub fn start(project: &Path, args: &[&str], env: &[(&str, &str)]) -> McpProcess {
        let logs =
            std::env::temp_dir().join(format!("bernstein-proof-logs-{}", std::process::id()));
        fs::create_dir_all(&logs).unwrap();
        let stderr_log = logs.join(format!("stderr-{}.log", unique()));
        let mut p = McpProcess::start_logging_to(project, args, env, stderr_log);
        p.owns_log = true;
        p
    }

    /// [`McpProcess::start`] with stderr going to `stderr_log`, which is left in place.
    pub fn start_logging_to(
        project: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        stderr_log: PathBuf,
    ) -> McpProcess {
        let mut cmd = Command::new(bin());
        cmd.arg("--workdir").arg(project).arg("mcp").args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(fs::File::create(&stderr_log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", bin().display()));
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match r.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) if line.ends_with(b"\n") => {
                        line.pop();
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                    // A partial last line: the process died mid-write; the client never got it.
                    Ok(_) => return,
                }
            }
        });
        McpProcess {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            stderr_log,
            owns_log: false,
        }
    }

    /// Writes `bytes` (one or more lines) to the server; `false` if the pipe is closed.
    pub fn send_raw(&mut self, bytes: &[u8]) -> bool {
        let Some(stdin) = self.stdin.as_mut() else {
            return false;
        };
        stdin.write_all(bytes).and_then(|()| stdin.flush()).is_ok()
    }

    pub fn send(&mut self, msg: &Value) -> bool {
        let mut line = serde_json::to_vec(msg).unwrap();
        line.push(b'\n');
        self.send_raw(&line)
    }

    /// The next line the server wrote, or `None` at EOF or after `timeout`.
    pub fn recv(&self, timeout: Duration) -> Option<Vec<u8>> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Lines already received, without waiting.
    pub fn drain(&self) -> Vec<Vec<u8>> {
        self.lines.try_iter().collect()
    }

    /// Sends a request and returns its reply (the next line with its id).
    pub fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        assert!(
            self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})),
            "stdin closed"
        );
        loop {
            let line = self
                .recv(SAFETY_TIMEOUT)
                .unwrap_or_else(|| panic!("no reply to {method} #{id}: {}", self.stderr()));
            let v: Value = serde_json::from_slice(&line).expect("stdout carries JSON");
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
        }
    }

    pub fn initialize(&mut self, version: &str) -> Value {
        let v = self.request(
            0,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "proof", "version": "0"}}),
        );
        assert!(v.get("result").is_some(), "initialize failed: {v}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        v
    }

    /// Closes stdin and waits for the exit status.
    pub fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        drop(self.drain());
        status
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr_log).unwrap_or_default()
    }
}

impl Drop for McpProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
        if self.owns_log && std::env::var_os("BERNSTEIN_KEEP_TEST_DIRS").is_none() {
            let _ = fs::remove_file(&self.stderr_log);
            if let Some(dir) = self.stderr_log.parent() {
                let _ = fs::remove_dir(dir);
            }
        }
    }
}

fn unique() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Runs `bernstein <args>` to completion: (exit code, stdout, stderr).
pub fn cli(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", bin().display()));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The tool payload (or refusal object) of a `tools/call` reply: `Ok` for a result, `Err` for
/// `isError`. Reads the text block, so it works with the meter on or off and at every revision.
pub fn tool_payload(reply: &Value) -> Result<Value, Value> {
    let result = reply
        .get("result")
        .unwrap_or_else(|| panic!("not a result: {reply}"));
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text block: {reply}"));
    let mut v: Value = serde_json::from_str(text).expect("the text block is JSON");
    if v.get("_meter").is_some() {
        v = v["result"].take();
    }
    if result["isError"] == json!(true) {
        Err(v)
    } else {
        Ok(v)
    }
}

/// Whether this process may mount file systems (root with CAP_SYS_ADMIN, `mount` present).
pub fn can_mount(scratch: &Path) -> Result<(), String> {
    let probe = scratch.join("mount-probe");
    fs::create_dir_all(&probe).map_err(|e| e.to_string())?;
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&probe)
        .output()
        .map_err(|e| format!("cannot run mount: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "mount -t tmpfs failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let _ = Command::new("umount").arg(&probe).status();
    Ok(())
}

/// A mount that is unmounted on drop.
#[derive(Debug)]
pub struct Mount(pub PathBuf);

impl Mount {
    /// `mount <args...> <target>` (`args` ends with the source); panics on failure (call
    /// [`can_mount`] first).
    pub fn new(args: &[&str], target: &Path) -> Mount {
        let out = Command::new("mount")
            .args(args)
            .arg(target)
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "mount {args:?} {}: {}",
            target.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Mount(target.to_path_buf())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// The arguments of `bernstein mcp` that serve HTTP on a port the system picks (read it with
/// [`http_address`]).
pub const HTTP_ANY_PORT: [&str; 4] = ["--transport", "http", "--port", "0"];

/// The `host:port` an HTTP server announced on stderr (`… at http://HOST:PORT/mcp …`).
pub fn http_address(p: &McpProcess) -> String {
    let deadline = std::time::Instant::now() + SAFETY_TIMEOUT;
    loop {
        let log = p.stderr();
        if let Some(rest) = log.split("http://").nth(1)
            && let Some(addr) = rest.split("/mcp").next()
            && rest.contains("/mcp")
        {
            return addr.to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the HTTP server announced no address: {log}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// POSTs one JSON-RPC message to `http://addr/mcp` on a fresh connection (revision `version`
/// in `MCP-Protocol-Version`); returns the status and the JSON reply (from a JSON body or the
/// last `data:` event of an SSE body; `Null` for an empty body).
pub fn http_post(addr: &str, version: &str, msg: &Value) -> (u16, Value) {
    use std::io::Read;
    let body = serde_json::to_vec(msg).unwrap();
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {version}\r\n\
         Mcp-Method: {method}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(name) = msg.pointer("/params/name").and_then(Value::as_str) {
        head.push_str(&format!("Mcp-Name: {name}\r\n"));
    }
    head.push_str("\r\n");
    let mut s =
        std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(SAFETY_TIMEOUT)).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status code");
    let body = &raw[end..];
    let reply = if body.is_empty() {
        Value::Null
    } else if head
        .to_ascii_lowercase()
        .contains("content-type: text/event-stream")
    {
        let text = String::from_utf8_lossy(body);
        let data = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .next_back()
            .expect("an SSE data line");
        serde_json::from_str(data.trim()).expect("SSE data is JSON")
    } else {
        serde_json::from_slice(body)
            .unwrap_or_else(|e| panic!("JSON body ({e}): {}", String::from_utf8_lossy(body)))
    };
    (status, reply)
}
