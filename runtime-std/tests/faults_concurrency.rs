//! Several server processes and many clients on one `.sdd/`, at the same time: three stdio
//! servers (std, std, smol), each with its client, and two HTTP servers (std and smol), each
//! with four clients of its own and two engines (`--engines 2`: two event loops over the one
//! store in one process, so two processes x two engines race beside the stdio servers; each
//! call is a connection of its own, which either engine may take). Every client mixes writes
//! (runs, claims, completions of what it claimed, cancels of what it started, mailbox messages)
//! with reads (status, run polls).
//! Afterwards:
//! - the chain is intact (`audit verify`, library and binary);
//! - every acknowledged run exists exactly once; every claim was granted exactly once (no task
//!   in two granted receipts, one `open → claimed` record per granted task, matching its
//!   receipt's claimer); every acknowledged completion or cancellation is in the final state;
//! - every process, asked last, answers the same `bernstein_status`, and a fresh process agrees.
//!
//! `BERNSTEIN_TEST_SEED` replays a run (the seed is printed).

mod replay_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};

use bernstein_core::ledger::Record;
use bernstein_store_file::verify_cmd::audit_verify;
use replay_support::{
    HTTP_ANY_PORT, McpProcess, Rng, Scratch, cli, http_address, http_post, tool_payload,
};
use serde_json::{Value, json};

const OPS_PER_CLIENT: u64 = 30;
const HTTP_CLIENTS_PER_SERVER: usize = 4;
const REVISION: &str = "2025-11-25";

enum Link {
    Stdio(McpProcess),
    Http(String),
}

impl Link {
    fn call(&mut self, id: u64, tool: &str, args: Value) -> Result<Value, Value> {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}});
        let reply = match self {
            Link::Stdio(p) => p.request(id, "tools/call", msg["params"].clone()),
            Link::Http(addr) => {
                let (status, reply) = http_post(addr, REVISION, &msg);
                assert_eq!(status, 200, "{tool}: {reply}");
                reply
            }
        };
        assert!(
            reply.get("error").is_none(),
            "{tool}: JSON-RPC error {reply}"
        );
        tool_payload(&reply)
    }
}

/// What one client saw acknowledged.
#[derive(Debug, Default)]
struct Seen {
    runs: Vec<String>,
    /// (task, claimer) of granted claims.
    claims: Vec<(String, String)>,
    completed: Vec<String>,
    cancelled: Vec<String>,
    refused: BTreeMap<String, u64>,
}

fn client(name: String, mut link: Link, mut rng: Rng, start: Arc<Barrier>) -> (Seen, Link) {
    let mut seen = Seen::default();
    let mut mine_claimed: Vec<String> = Vec::new();
    start.wait();
    for n in 0..OPS_PER_CLIENT {
        let id = n + 1;
        let roll = rng.below(100);
        let answer = if roll < 30 || seen.runs.is_empty() {
            let a = link.call(
                id,
                "bernstein_run",
                json!({"goal": format!("{name} goal {n}")}),
            );
            if let Ok(v) = &a {
                seen.runs.push(v["task_id"].as_str().unwrap().to_string());
            }
            a
        } else if roll < 55 {
            let a = link.call(id, "bernstein_claim", json!({"claimer_id": name}));
            if let Ok(v) = &a
                && v["granted"] == json!(true)
            {
                let task = v["taskId"].as_str().unwrap().to_string();
                seen.claims.push((task.clone(), name.clone()));
                mine_claimed.push(task);
            }
            a
        } else if roll < 70 && !mine_claimed.is_empty() {
            let task = mine_claimed.remove(rng.below(mine_claimed.len() as u64) as usize);
            let a = link.call(
                id,
                "bernstein_complete",
                json!({"task_id": task, "result_summary": "ok"}),
            );
            if a.is_ok() {
                seen.completed.push(task);
            }
            a
        } else if roll < 75 {
            let task = seen.runs[rng.below(seen.runs.len() as u64) as usize].clone();
            let a = link.call(id, "bernstein_cancel", json!({"task_id": task}));
            if let Ok(v) = &a
                && v["already_terminal"] == json!(false)
            {
                seen.cancelled.push(task);
            }
            a
        } else if roll < 80 {
            let task = seen.runs[rng.below(seen.runs.len() as u64) as usize].clone();
            link.call(
                id,
                "bernstein_post_message",
                json!({"task_id": task, "kind": "finding", "body": "progress"}),
            )
        } else if roll < 90 {
            link.call(id, "bernstein_status", json!({}))
        } else {
            let task = seen.runs[rng.below(seen.runs.len() as u64) as usize].clone();
            let a = link.call(id, "bernstein_run_status", json!({"run_id": task}));
            let v = a
                .as_ref()
                .unwrap_or_else(|e| panic!("{name}: poll of {task} refused: {e}"));
            assert_eq!(v["taskId"], json!(task), "{name}");
            a
        };
        if let Err(e) = answer {
            *seen
                .refused
                .entry(e["error"].as_str().unwrap_or("?").to_string())
                .or_default() += 1;
        }
    }
    (seen, link)
}

#[test]
fn many_processes_and_clients_on_one_store_keep_every_promise() {
    let mut rng = Rng::seeded("faults_concurrency");
    let scratch = Scratch::new("concurrency");
    let project = scratch.path();
    let (code, _, err) = cli(&["--workdir", project.to_str().unwrap(), "init"]);
    assert_eq!(code, 0, "bernstein init: {err}");
    let env = [("BERNSTEIN_MCP_COST_METER", "0")];
    let tier = ["--mcp-tier", "all"];
    let mut links: Vec<(String, Link)> = Vec::new();
    for (i, runtime) in ["std", "std", "smol"].iter().enumerate() {
        let mut p = McpProcess::start(
            project,
            &[&tier[..], &["--runtime", runtime]].concat(),
            &env,
        );
        p.initialize(REVISION);
        links.push((format!("stdio-{i}-{runtime}"), Link::Stdio(p)));
    }
    let mut http_servers = Vec::new();
    for runtime in ["std", "smol"] {
        let p = McpProcess::start(
            project,
            &[
                &tier[..],
                &HTTP_ANY_PORT,
                &["--runtime", runtime, "--engines", "2"],
            ]
            .concat(),
            &env,
        );
        let addr = http_address(&p);
        for c in 0..HTTP_CLIENTS_PER_SERVER {
            links.push((format!("http-{runtime}-{c}"), Link::Http(addr.clone())));
        }
        http_servers.push(p);
    }

    let start = Arc::new(Barrier::new(links.len()));
    let workers: Vec<_> = links
        .into_iter()
        .map(|(name, link)| {
            let (rng, start) = (Rng::from_seed(rng.next()), start.clone());
            std::thread::spawn(move || client(name, link, rng, start))
        })
        .collect();
    let results: Vec<(Seen, Link)> = workers
        .into_iter()
        .map(|w| w.join().expect("a client panicked"))
        .collect();

    // Every process answers the same status.
    let mut statuses = Vec::new();
    let mut links: Vec<Link> = Vec::new();
    let mut seen_all = Vec::new();
    for (seen, link) in results {
        seen_all.push(seen);
        links.push(link);
    }
    for (i, link) in links.iter_mut().enumerate() {
        statuses.push(
            link.call(1000 + i as u64, "bernstein_status", json!({"detail": true}))
                .expect("status"),
        );
    }
    assert!(
        statuses.windows(2).all(|w| w[0] == w[1]),
        "the processes disagree on the status"
    );
    for link in links {
        if let Link::Stdio(p) = link {
            assert!(p.finish().success());
        }
    }
    for mut p in http_servers {
        p.kill();
    }

    // The chain is intact.
    let sdd = project.join(".sdd");
    let report = audit_verify(&sdd).unwrap_or_else(|e| panic!("audit verify: {e}"));
    let (code, out, err) = cli(&["audit", "verify", "--dir", sdd.to_str().unwrap()]);
    assert_eq!(code, 0, "bernstein audit verify: {out}{err}");

    // What the ledger holds.
    let key = bernstein_store_file::keys::load_audit_key(&sdd).unwrap();
    let bytes = std::fs::read(sdd.join("ledger/ledger.jsonl")).unwrap();
    let records: Vec<Record> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| Record::parse_line(l, key.as_deref()).unwrap())
        .collect();
    assert_eq!(records.len() as u64, report.records);
    let mut created: BTreeMap<String, u64> = BTreeMap::new();
    let mut claimed_edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut granted_entries: BTreeMap<String, u64> = BTreeMap::new();
    let mut last_status: BTreeMap<String, String> = BTreeMap::new();
    for r in &records {
        let task = r
            .body
            .get("task_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        match (r.stream.as_str(), r.kind.as_str()) {
            ("backlog", "task.created") => {
                *created.entry(task.clone()).or_default() += 1;
                last_status.insert(task, r.body["status"].as_str().unwrap().to_string());
            }
            ("backlog", "task.status") => {
                if r.body["from"] == json!("open") && r.body["to"] == json!("claimed") {
                    let actor = r
                        .body
                        .get("actor")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_string();
                    claimed_edges.entry(task.clone()).or_default().push(actor);
                }
                last_status.insert(task, r.body["to"].as_str().unwrap().to_string());
            }
            ("audit", "task.claim_receipt") if r.body["granted"] == json!(true) => {
                *granted_entries.entry(task).or_default() += 1;
            }
            _ => {}
        }
    }
    assert!(
        created.values().all(|&n| n == 1),
        "a task was created twice"
    );

    let mut granted: BTreeMap<String, String> = BTreeMap::new();
    let mut refused: BTreeMap<String, u64> = BTreeMap::new();
    let (mut runs, mut completions) = (0, 0);
    for seen in &seen_all {
        for t in &seen.runs {
            assert_eq!(
                created.get(t),
                Some(&1),
                "acknowledged run {t} is not in the ledger once"
            );
        }
        runs += seen.runs.len();
        for (task, claimer) in &seen.claims {
            if let Some(other) = granted.insert(task.clone(), claimer.clone()) {
                panic!("task {task} was granted to {other} and to {claimer}");
            }
            assert_eq!(
                claimed_edges.get(task),
                Some(&vec![claimer.clone()]),
                "claim of {task}"
            );
            assert_eq!(
                granted_entries.get(task),
                Some(&1),
                "claim receipts of {task}"
            );
        }
        for t in &seen.completed {
            assert_eq!(
                last_status.get(t).map(String::as_str),
                Some("done"),
                "acknowledged completion of {t}"
            );
        }
        completions += seen.completed.len();
        for t in &seen.cancelled {
            assert_eq!(
                last_status.get(t).map(String::as_str),
                Some("cancelled"),
                "acknowledged cancel of {t}"
            );
        }
        for (code, n) in &seen.refused {
            *refused.entry(code.clone()).or_default() += n;
        }
    }
    assert_eq!(
        granted.len(),
        claimed_edges.len(),
        "a task moved to claimed without an acknowledged claim"
    );
    assert_eq!(
        statuses[0]["counts"]["total"],
        json!(created.len()),
        "{}",
        statuses[0]
    );

    // A fresh process agrees with the ones that served.
    let mut fresh = McpProcess::start(project, &tier, &env);
    fresh.initialize(REVISION);
    let again = tool_payload(&fresh.request(
        1,
        "tools/call",
        json!({"name": "bernstein_status", "arguments": {"detail": true}}),
    ));
    assert_eq!(
        again.as_ref().ok(),
        Some(&statuses[0]),
        "a fresh process disagrees"
    );
    assert!(fresh.finish().success());
    eprintln!(
        "faults_concurrency: {} records; {runs} runs, {} claims, {completions} completions acknowledged; refusals {refused:?}",
        records.len(),
        granted.len()
    );
    assert!(
        !granted.is_empty() && completions > 0,
        "the mix never exercised the gates"
    );
}
