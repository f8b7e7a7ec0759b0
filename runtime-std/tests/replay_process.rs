//! Recorded journals served by fresh `bernstein` processes (the real binary, on copies of the
//! recorded stores):
//! - `bernstein status --json` prints the recorded projection and `bernstein audit verify
//!   --verbose` the recorded report, byte for byte;
//! - `bernstein mcp --runtime std` and `--runtime smol` (meter off), over stdio and over HTTP,
//!   answer `bernstein_run_status` for every recorded run and task with byte-identical replies,
//!   whose handles equal the handle the pure core computes from the fold of the recorded
//!   ledger and verify offline;
//! - tampered copies make `bernstein audit verify` exit 1 naming the first affected line.

mod replay_support;

use bernstein_domain::handle::{handle_fields, run_handle};
use bernstein_domain::verify_run_handle;
use replay_support::fixtures::{Fixture, all};
use replay_support::{
    HTTP_ANY_PORT, McpProcess, Scratch, cli, copy_store, http_address, http_post, tool_payload,
};
use serde_json::{Value, json};

const REVISION: &str = "2025-11-25";

/// Every task id a fixture names (its runs, then the other tasks it lists).
fn polled_ids(fx: &Fixture) -> Vec<String> {
    let mut ids = fx.runs();
    for key in ["tasks", "claimed"] {
        if let Some(list) = fx.meta[key].as_array() {
            ids.extend(list.iter().filter_map(Value::as_str).map(String::from));
        }
    }
    ids
}

fn poll(id: u64, task: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "bernstein_run_status", "arguments": {"run_id": task}}})
}

/// The reply lines a stdio server gives to `initialize` and one poll per id.
fn stdio_polls(fx: &Fixture, runtime: &str) -> Vec<Vec<u8>> {
    let scratch = Scratch::new("replay-stdio");
    let project = copy_store(fx, scratch.path());
    let mut p = McpProcess::start(
        &project,
        &["--runtime", runtime, "--mcp-tier", "all"],
        &[("BERNSTEIN_MCP_COST_METER", "0")],
    );
    p.initialize(REVISION);
    let mut lines = Vec::new();
    for (i, task) in polled_ids(fx).iter().enumerate() {
        let reply = p.request(i as u64 + 1, "tools/call", poll(0, task)["params"].clone());
        lines.push(serde_json::to_vec(&reply).unwrap());
    }
    let status = p.finish();
    assert!(
        status.success(),
        "{}: {runtime} server exited {status}",
        fx.name
    );
    lines
}

/// The replies an HTTP server gives to one poll per id.
fn http_polls(fx: &Fixture, runtime: &str) -> Vec<Vec<u8>> {
    let scratch = Scratch::new("replay-http");
    let project = copy_store(fx, scratch.path());
    let mut p = McpProcess::start(
        &project,
        &[
            &HTTP_ANY_PORT[..],
            &["--runtime", runtime, "--mcp-tier", "all"],
        ]
        .concat(),
        &[("BERNSTEIN_MCP_COST_METER", "0")],
    );
    let addr = http_address(&p);
    let mut lines = Vec::new();
    for (i, task) in polled_ids(fx).iter().enumerate() {
        let (status, reply) = http_post(&addr, REVISION, &poll(i as u64 + 1, task));
        assert_eq!(status, 200, "{}: {runtime}: {reply}", fx.name);
        lines.push(serde_json::to_vec(&reply).unwrap());
    }
    p.kill();
    lines
}

#[test]
fn status_and_audit_verify_in_a_fresh_process_print_the_recording() {
    for fx in all() {
        let scratch = Scratch::new("replay-cli");
        let project = copy_store(&fx, &scratch.path().join("status"));
        let (code, out, err) = cli(&["--workdir", project.to_str().unwrap(), "status", "--json"]);
        assert_eq!(code, 0, "{}: {err}", fx.name);
        assert_eq!(out, fx.status_json, "{}: bernstein status --json", fx.name);
        let project = copy_store(&fx, &scratch.path().join("verify"));
        let sdd = project.join(".sdd");
        let (code, out, err) = cli(&[
            "audit",
            "verify",
            "--verbose",
            "--dir",
            sdd.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{}: {err}", fx.name);
        assert_eq!(
            out, fx.verify_txt,
            "{}: bernstein audit verify --verbose",
            fx.name
        );
    }
}

#[test]
fn both_runtimes_answer_identical_handles_over_stdio_and_http() {
    for fx in all() {
        let fold = fx.fold();
        let std_lines = stdio_polls(&fx, "std");
        assert_eq!(
            stdio_polls(&fx, "smol"),
            std_lines,
            "{}: smol and std differ over stdio",
            fx.name
        );
        let ids = polled_ids(&fx);
        assert_eq!(std_lines.len(), ids.len());
        for (line, task) in std_lines.iter().zip(&ids) {
            let reply: Value = serde_json::from_slice(line).unwrap();
            let handle = tool_payload(&reply)
                .unwrap_or_else(|e| panic!("{}: poll of {task} refused: {e}", fx.name));
            verify_run_handle(&handle).unwrap_or_else(|e| panic!("{}: {e}", fx.name));
            let run = handle["runId"].as_str().unwrap();
            let expected = run_handle(&fold, run).expect("the run is in the fold");
            // The handle's fields are the fold's handle; beside them, an ended run's outcome.
            assert_eq!(
                handle_fields(&handle).unwrap(),
                expected,
                "{}: handle of {task}",
                fx.name
            );
            assert_eq!(
                handle.get("outcome").is_some(),
                bernstein_domain::outcome::ended(expected.status),
                "{}: outcome of {task}",
                fx.name
            );
        }
        // Over HTTP the same handles (the replies' ids are the same too).
        for runtime in ["std", "smol"] {
            let http = http_polls(&fx, runtime);
            assert_eq!(
                http.len(),
                std_lines.len(),
                "{}: {runtime} HTTP replies",
                fx.name
            );
            for ((h, s), task) in http.iter().zip(&std_lines).zip(&ids) {
                let (h, s): (Value, Value) = (
                    serde_json::from_slice(h).unwrap(),
                    serde_json::from_slice(s).unwrap(),
                );
                assert_eq!(
                    tool_payload(&h),
                    tool_payload(&s),
                    "{}: {runtime} HTTP poll of {task}",
                    fx.name
                );
            }
        }
    }
}

#[test]
fn audit_verify_names_the_first_tampered_line() {
    for fx in all() {
        let lines: Vec<&[u8]> = fx.ledger_lines();
        let n = lines.len();
        let join = |ls: &[&[u8]]| -> Vec<u8> {
            ls.iter()
                .flat_map(|l| l.iter().copied().chain([b'\n']))
                .collect()
        };
        let mut flipped: Vec<Vec<u8>> = lines.iter().map(|l| l.to_vec()).collect();
        flipped[n / 2][10] ^= 0x01;
        let flipped: Vec<&[u8]> = flipped.iter().map(Vec::as_slice).collect();
        let mut deleted = lines.clone();
        deleted.remove(n / 3);
        let mut duplicated = lines.clone();
        duplicated.insert(2, lines[1]);
        let mut swapped = lines.clone();
        swapped.swap(n - 3, n - 2);
        let cases = [
            (join(&flipped), n / 2 + 1, "a flipped byte"),
            (join(&deleted), n / 3 + 1, "a deleted line"),
            (join(&duplicated), 3, "a duplicated line"),
            (join(&swapped), n - 2, "swapped lines"),
        ];
        for (bytes, line, what) in cases {
            let scratch = Scratch::new("replay-tamper");
            let project = copy_store(&fx, scratch.path());
            std::fs::write(project.join(".sdd/ledger/ledger.jsonl"), bytes).unwrap();
            let sdd = project.join(".sdd");
            let (code, out, _) = cli(&["audit", "verify", "--dir", sdd.to_str().unwrap()]);
            assert_eq!(code, 1, "{}: {what}: {out}", fx.name);
            assert!(
                out.contains(&format!("ledger.jsonl:{line} (seq {line})")),
                "{}: {what}: {out}",
                fx.name
            );
        }
    }
}
