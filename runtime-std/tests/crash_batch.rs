//! Crash safety of group commit: the real server (`bernstein mcp --transport http`) takes
//! `bernstein_run` calls from 16 concurrent keep-alive clients, so that fsyncs cover batches of
//! appends, and is killed with SIGKILL in the middle of the load. The runtime alternates (std,
//! smol) every kill and the engine count (`--engines` 1, 2) every second kill, so each runtime
//! is killed with one engine and with two (engines of one process share the store and its
//! syncer: a kill may cut either engine's batch).
//!
//! A kill leaves the page cache intact, so it cannot by itself show an answer that left before
//! its fsync. So before each kill the test also simulates a power loss: it notes the calls
//! answered so far, then reads `bernstein_ledger_durable_bytes` from `/metrics` (the offset the
//! server's fsyncs have covered; it only grows) and, after the kill, opens a copy of the ledger
//! cut at that offset, which is what a power loss at that moment could leave. Every call
//! answered before the scrape must be in it. After every kill:
//! - the power-loss copy opens, verifies and holds every call answered before the scrape;
//! - the real ledger opens (cutting a torn tail, if any), verifies, holds every call whose
//!   answer any client received, and no task twice.
//!
//! Over the whole test, some fsync must have covered more than one append (else nothing here
//! exercised a batch). `BERNSTEIN_CRASH_BATCH_KILLS` sets the number of kills (default 8);
//! `BERNSTEIN_TEST_SEED` replays a run.

mod replay_support;

use std::collections::BTreeSet;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bernstein_core::ledger::Store;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_store_file::keys::load_audit_key;
use bernstein_store_file::verify_cmd::audit_verify;
use replay_support::{
    HTTP_ANY_PORT, McpProcess, Rng, SAFETY_TIMEOUT, Scratch, http_address, tool_payload,
};
use serde_json::{Value, json};

const CLIENTS: usize = 16;

fn kills() -> u64 {
    replay_support::env_count("BERNSTEIN_CRASH_BATCH_KILLS", 8)
}

/// One HTTP/1.1 exchange on a keep-alive connection: the status and body, or `None` once the
/// connection failed (the server was killed).
fn exchange(stream: &mut TcpStream, head: &str, body: &[u8]) -> Option<(u16, Vec<u8>)> {
    let mut out = head.as_bytes().to_vec();
    out.extend_from_slice(body);
    stream.write_all(&out).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let status = head.get(9..12)?.parse().ok()?;
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))?
        .trim()
        .parse()
        .ok()?;
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((status, buf[head_end..head_end + length].to_vec()))
}

fn post(stream: &mut TcpStream, addr: SocketAddr, body: &Value) -> Option<(u16, Vec<u8>)> {
    let body = body.to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    exchange(stream, &head, body.as_bytes())
}

/// The task id of a successful `bernstein_run` answer.
fn task_id(body: &[u8]) -> Option<String> {
    let reply: Value = serde_json::from_slice(body).ok()?;
    let payload = tool_payload(&reply).ok()?;
    payload["task_id"].as_str().map(String::from)
}

/// Waits until `GET /readyz` says the ledger is open and verified: a server binds at once and
/// answers 503 until then, which on a busy machine can outlast the first calls.
fn wait_ready(addr: SocketAddr) {
    let until = std::time::Instant::now() + SAFETY_TIMEOUT;
    loop {
        let mut stream = TcpStream::connect(addr).expect("connect for /readyz");
        stream.set_read_timeout(Some(SAFETY_TIMEOUT)).unwrap();
        let head = format!("GET /readyz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        match exchange(&mut stream, &head, b"") {
            Some((200, _)) => return,
            other => assert!(
                std::time::Instant::now() < until,
                "the server never became ready: {other:?}"
            ),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `GET /metrics`: the durable offset and the fsyncs that covered more than one append.
fn scrape(addr: SocketAddr) -> (u64, u64) {
    let mut stream = TcpStream::connect(addr).expect("connect for /metrics");
    stream.set_read_timeout(Some(SAFETY_TIMEOUT)).unwrap();
    let head = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let (status, body) = exchange(&mut stream, &head, b"").expect("a /metrics answer");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let text = String::from_utf8(body).unwrap();
    let sample = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("{name} in /metrics:\n{text}"))
            .parse::<f64>()
            .unwrap() as u64
    };
    let fsyncs = sample("bernstein_group_commit_batch_appends_count");
    let single = sample("bernstein_group_commit_batch_appends_bucket{le=\"1\"}");
    (sample("bernstein_ledger_durable_bytes"), fsyncs - single)
}

/// Opens the store of `project`, checks the ledger and returns the task ids it holds; panics
/// if one of `expected` is missing or a task was created twice.
fn check(project: &std::path::Path, expected: &BTreeSet<String>, what: &str) {
    let sdd = project.join(".sdd");
    let key = load_audit_key(&sdd).unwrap().expect("an audit key");
    let store =
        FileStore::open(project, key).unwrap_or_else(|e| panic!("{what}: does not open: {e}"));
    let snapshot = store.snapshot().unwrap();
    drop(store);
    for id in expected {
        assert!(
            snapshot.domain.task(id).is_some(),
            "{what}: answered task {id} is missing"
        );
    }
    let report = audit_verify(&sdd).unwrap_or_else(|e| panic!("{what}: audit verify: {e}"));
    assert_eq!(
        report.kinds.get("task.created").copied().unwrap_or(0),
        snapshot.domain.total(),
        "{what}: a task was recorded twice"
    );
}

/// A copy of `project`'s store with the ledger cut at `durable` and no checkpoint (it may
/// reach further: it syncs the ledger itself before it is written).
fn power_loss_copy(project: &std::path::Path, durable: u64, into: &std::path::Path) {
    for dir in ["", "ledger", "keys"] {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(into.join(".sdd").join(dir))
            .unwrap();
    }
    let ledger = fs::read(project.join(".sdd/ledger/ledger.jsonl")).unwrap();
    assert!(
        durable as usize <= ledger.len(),
        "the server reports more bytes durable ({durable}) than the file holds ({})",
        ledger.len()
    );
    fs::write(
        into.join(".sdd/ledger/ledger.jsonl"),
        &ledger[..durable as usize],
    )
    .unwrap();
    for entry in fs::read_dir(project.join(".sdd/keys")).unwrap() {
        let entry = entry.unwrap();
        let to = into.join(".sdd/keys").join(entry.file_name());
        fs::copy(entry.path(), &to).unwrap();
        fs::set_permissions(&to, fs::Permissions::from_mode(0o600)).unwrap();
    }
}

#[test]
fn sigkill_mid_batch_never_loses_an_answered_call() {
    let mut rng = Rng::seeded("crash_batch");
    let scratch = Scratch::new("crash-batch");
    let project = scratch.path().join("project");
    fs::create_dir_all(&project).unwrap();
    let mut answered: BTreeSet<String> = BTreeSet::new();
    let (mut batched, mut broke_off) = (0, 0);
    for kill in 0..kills() {
        let runtime = if kill % 2 == 0 { "std" } else { "smol" };
        let engines = (1 + (kill / 2) % 2).to_string();
        let mut server = McpProcess::start(
            &project,
            &[
                &HTTP_ANY_PORT[..],
                &["--runtime", runtime, "--engines", &engines],
            ]
            .concat(),
            &[("BERNSTEIN_MCP_COST_METER", "0")],
        );
        let addr: SocketAddr = http_address(&server).parse().expect("a socket address");
        wait_ready(addr);
        let acked = Arc::new(Mutex::new(Vec::<String>::new()));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let acked = acked.clone();
                std::thread::spawn(move || {
                    let mut stream = TcpStream::connect(addr).expect("connect");
                    stream.set_nodelay(true).unwrap();
                    stream.set_read_timeout(Some(SAFETY_TIMEOUT)).unwrap();
                    for i in 1u64.. {
                        let call = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                            "params": {"name": "bernstein_run",
                                "arguments": {"goal": format!("kill {kill} client {c} call {i}")}}});
                        let Some((status, body)) = post(&mut stream, addr, &call) else {
                            // The connection died with the server: the end of this client.
                            return true;
                        };
                        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
                        let id = task_id(&body).unwrap_or_else(|| {
                            panic!("not a run answer: {}", String::from_utf8_lossy(&body))
                        });
                        acked.lock().unwrap().push(id);
                    }
                    false
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(150 + rng.below(500)));
        // Answered before the scrape: durable by then, so inside the offset it reports.
        let before: BTreeSet<String> = acked.lock().unwrap().iter().cloned().collect();
        let (durable, shared) = scrape(addr);
        batched += shared;
        std::thread::sleep(Duration::from_micros(rng.below(3000)));
        server.kill();
        for c in clients {
            broke_off += u64::from(c.join().expect("a client thread panicked"));
        }
        answered.extend(acked.lock().unwrap().iter().cloned());

        let lost = scratch.path().join(format!("power-loss-{kill}"));
        power_loss_copy(&project, durable, &lost);
        check(
            &lost,
            &before,
            &format!("kill {kill}: the ledger cut at the durable offset {durable}"),
        );
        fs::remove_dir_all(&lost).unwrap();
        check(&project, &answered, &format!("kill {kill}"));
    }
    eprintln!(
        "crash_batch: {} kills, {} calls answered and all present, {batched} fsyncs covered \
         more than one append, {broke_off} client connections cut by the kills",
        kills(),
        answered.len()
    );
    assert!(
        batched > 0,
        "no fsync covered more than one append: nothing here tested a batch"
    );
    assert!(
        broke_off as usize >= CLIENTS,
        "the kills did not cut the load"
    );
}
