//! Crash safety of the real server: `bernstein mcp` (stdio, std and smol runtimes alternating)
//! is sent a pipelined stream of `bernstein_run` calls and killed with SIGKILL at a random
//! point, hundreds of times over the same `.sdd/`. After every kill:
//! - the store opens (cutting a torn tail, if the kill left one) and the ledger verifies, both
//!   through `audit verify` (the library; every 25th kill also the binary);
//! - every call whose reply the client received is in the ledger (matched by `task_id`), and
//!   no task exists twice.
//!
//! A kill cannot tear a write that is already in the page cache, so one kill in four is
//! followed by a simulated torn append (a cut-off copy of a real transaction, or junk without
//! a newline) written to the ledger before the next open: it must be cut, and only it.
//!
//! `BERNSTEIN_CRASH_KILLS` sets the number of kills (default 200); `BERNSTEIN_TEST_SEED`
//! replays a run (the seed is printed).

mod replay_support;

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::time::{Duration, Instant};

use bernstein_core::ledger::Store;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_store_file::keys::load_audit_key;
use bernstein_store_file::verify_cmd::audit_verify;
use replay_support::{McpProcess, Rng, SAFETY_TIMEOUT, Scratch, cli, tool_payload};
use serde_json::{Value, json};

/// Kills before the project directory is replaced by a fresh one (bounds the ledger size, so
/// every open stays cheap).
const KILLS_PER_PROJECT: u64 = 25;

fn kills() -> u64 {
    replay_support::env_count("BERNSTEIN_CRASH_KILLS", 200)
}

/// The task ids of the replies among `lines` that carry a successful `bernstein_run`.
fn acknowledged(lines: &[Vec<u8>]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(|v| {
            v.get("id")
                .and_then(Value::as_u64)
                .is_some_and(|id| id >= 1)
        })
        .filter_map(|v| tool_payload(&v).ok())
        .filter_map(|p| p.get("task_id").and_then(Value::as_str).map(String::from))
        .collect()
}

/// Appends a simulated torn write to the ledger; returns the ledger length before it.
fn tear(ledger: &std::path::Path, rng: &mut Rng) -> u64 {
    let bytes = fs::read(ledger).unwrap();
    let len = bytes.len() as u64;
    let torn: Vec<u8> = if bytes.is_empty() || rng.below(3) == 0 {
        b"{\"body\":{\"goal\":\"never acknowledged".to_vec()
    } else {
        // A cut-off copy of the last transaction's first line(s): what a crash mid-write leaves.
        let lines: Vec<&[u8]> = bytes[..bytes.len() - 1].split(|&b| b == b'\n').collect();
        let last = lines[lines.len() - 1];
        let cut = 1 + rng.below(last.len() as u64 - 1) as usize;
        last[..cut].to_vec()
    };
    fs::OpenOptions::new()
        .append(true)
        .open(ledger)
        .unwrap()
        .write_all(&torn)
        .unwrap();
    len
}

#[test]
fn sigkill_at_random_points_never_loses_an_acknowledged_call() {
    let mut rng = Rng::seeded("crash_kill");
    let started = Instant::now();
    let total = kills();
    let mut scratch = Scratch::new("crash");
    let mut acked: BTreeSet<String> = BTreeSet::new();
    let (mut torn_cut, mut killed_mid_stream, mut acked_total) = (0, 0, 0);
    for kill in 0..total {
        if kill > 0 && kill % KILLS_PER_PROJECT == 0 {
            scratch = Scratch::new("crash");
            acked.clear();
        }
        let project = scratch.path();
        let runtime = if kill % 2 == 0 { "std" } else { "smol" };
        let mut p = McpProcess::start(
            project,
            &["--runtime", runtime],
            &[("BERNSTEIN_MCP_COST_METER", "0")],
        );
        let calls = 1 + rng.below(8);
        let mut stream = Vec::new();
        for i in 0..calls {
            let msg = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                "params": {"name": "bernstein_run", "arguments": {"goal": format!("crash {kill} call {i}")}}});
            stream.extend(serde_json::to_vec(&msg).unwrap());
            stream.push(b'\n');
        }
        p.send_raw(&stream);
        // Wait for some of the replies, then a little more, then kill.
        let wait_for = rng.below(calls + 1);
        let mut lines = Vec::new();
        while (lines.len() as u64) < wait_for {
            match p.recv(SAFETY_TIMEOUT) {
                Some(l) => lines.push(l),
                None => panic!("kill {kill}: the server stopped answering: {}", p.stderr()),
            }
        }
        std::thread::sleep(Duration::from_micros(rng.below(3000)));
        p.kill();
        while let Some(l) = p.recv(SAFETY_TIMEOUT) {
            lines.push(l);
        }
        killed_mid_stream += u64::from((lines.len() as u64) < calls);
        let ids = acknowledged(&lines);
        acked_total += ids.len();
        acked.extend(ids);

        let sdd = project.join(".sdd");
        let ledger = sdd.join("ledger/ledger.jsonl");
        if !ledger.exists() {
            // Killed before the store was created: nothing can have been acknowledged.
            assert!(acked.is_empty(), "kill {kill}: replies without a ledger");
            continue;
        }
        let key = load_audit_key(&sdd)
            .unwrap()
            .expect("the server created the audit key");
        let torn_at = (kill % 4 == 3).then(|| {
            // The kill may have torn the tail itself (a write cut short at a page boundary by
            // SIGKILL): the store repairs that first, so the tail torn here is the only one.
            drop(
                FileStore::open(project, key.clone())
                    .unwrap_or_else(|e| panic!("kill {kill}: the store does not open: {e}")),
            );
            tear(&ledger, &mut rng)
        });
        let store = FileStore::open(project, key)
            .unwrap_or_else(|e| panic!("kill {kill}: the store does not open: {e}"));
        if let Some(len) = torn_at {
            assert_eq!(
                fs::metadata(&ledger).unwrap().len(),
                len,
                "kill {kill}: the torn tail was not cut exactly"
            );
            torn_cut += 1;
        }
        let snapshot = store.snapshot().unwrap();
        drop(store);
        for id in &acked {
            assert!(
                snapshot.domain.task(id).is_some(),
                "kill {kill}: acknowledged task {id} is missing"
            );
        }
        let report =
            audit_verify(&sdd).unwrap_or_else(|e| panic!("kill {kill}: audit verify: {e}"));
        let created = report.kinds.get("task.created").copied().unwrap_or(0);
        assert_eq!(
            created,
            snapshot.domain.total(),
            "kill {kill}: a task was recorded twice"
        );
        if kill % 25 == 24 {
            let (code, out, err) = cli(&["audit", "verify", "--dir", sdd.to_str().unwrap()]);
            assert_eq!(code, 0, "kill {kill}: bernstein audit verify: {out}{err}");
        }
    }
    eprintln!(
        "crash_kill: {total} kills ({killed_mid_stream} mid-stream, {torn_cut} torn tails cut), \
         {acked_total} acknowledged calls all present, {:.1}s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        killed_mid_stream > total / 4,
        "too few kills landed mid-stream to prove anything"
    );
}
