//! Counting through the real driver, core and file store: once per final answer, whatever
//! conflicts, waits or deferrals came before it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bernstein_core::Config;
use bernstein_core::Projection;
use bernstein_core::domain::bound::Server;
use bernstein_core::ledger::Store;
use bernstein_core::ledger::verify::verify_ledger;
use bernstein_core::protocol::TransportFacts;
use bernstein_core::time::Timestamp;
use serde_json::{Value, json};

use super::*;
use crate::driver::{Env, Stop, serve_message};
use bernstein_core::time::FixedClock;
type FileStore = bernstein_store_file::FileStore<bernstein_core::Projection>;
use bernstein_store_file::layout::Layout;
use bernstein_store_file::racing::Racing;
use bernstein_store_file::test_dir::TestDir;

const KEY: &[u8] = &[5; 32];
static ADMISSION: std::sync::LazyLock<std::sync::Arc<crate::driver::Admission>> =
    std::sync::LazyLock::new(Default::default);
const CLOCK: FixedClock = FixedClock(Timestamp(1_780_000_000_000));
const ERA: &str = "2025-11-25";

fn env<'a>(store: &'a dyn Store<Projection>, metrics: &'a Metrics) -> Env<'a> {
    Env {
        store,
        clock: &CLOCK,
        host: &crate::host::NoHost,
        metrics: Some(metrics),
        admission: &ADMISSION,
    }
}

fn facts() -> TransportFacts {
    TransportFacts::stdio(Some(ERA.into()))
}

fn message(id: u64, method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .unwrap()
}

fn call(id: u64, tool: &str, arguments: Value) -> Vec<u8> {
    message(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

fn calls(m: &Metrics) -> Vec<(&'static str, &'static str, String, u64)> {
    let counts = m.counts();
    counts
        .calls
        .into_iter()
        .map(|((t, e, o), n)| (t, e, o, n))
        .collect()
}

#[test]
fn a_call_rerun_after_conflicts_is_counted_once() {
    let tmp = TestDir::new("metrics-race");
    let store = Racing::new(tmp.path(), KEY, 3);
    let metrics = Metrics::new(CLOCK.0);
    let server = Server::new(Config::new(KEY.to_vec()));
    let msg = call(1, "bernstein_run", json!({"goal": "race"}));
    let served = serve_message(&server, &env(&store, &metrics), &msg, &facts()).unwrap();
    assert!(served.response.is_some());
    assert_eq!(store.attempts.load(Ordering::SeqCst), 4, "three conflicts");
    assert_eq!(
        calls(&metrics),
        vec![("bernstein_run", ERA, "ok".into(), 1)]
    );
    let counts = metrics.counts();
    assert_eq!(counts.requests.get("tools/call"), Some(&1));
    assert_eq!(counts.requests.len(), 1);
    assert_eq!(counts.call_seconds["bernstein_run"].count(), 1);
    assert_eq!(metrics.in_flight(), 0);
}

#[test]
fn refusals_carry_their_audit_code_and_labels_stay_bounded() {
    let tmp = TestDir::new("metrics-refusals");
    let store = FileStore::open(tmp.path(), KEY.to_vec()).unwrap();
    let metrics = Metrics::new(CLOCK.0);
    let server = Server::new(Config::new(KEY.to_vec()));
    let env = env(&store, &metrics);
    let messages = [
        call(1, "bernstein_status", json!({})),
        call(2, "bernstein_run", json!({"goal": 5})),
        call(3, "no such tool \"x\"\n", json!({})),
        // No usable tool name: no audit record, counted as a request only.
        message(4, "tools/call", json!({"name": 7})),
        message(5, "made/up", json!({})),
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
        b"{not json".to_vec(),
    ];
    for m in &messages {
        serve_message(&server, &env, m, &facts()).unwrap();
    }
    assert_eq!(
        calls(&metrics),
        vec![
            ("bernstein_run", ERA, "invalid_arguments".into(), 1),
            ("bernstein_status", ERA, "ok".into(), 1),
            ("unknown", ERA, "unknown_tool".into(), 1),
        ]
    );
    let counts = metrics.counts();
    let requests: Vec<(&str, u64)> = counts.requests.iter().map(|(m, n)| (*m, *n)).collect();
    assert_eq!(requests, vec![("other", 2), ("tools/call", 4)]);
    // One audit record per counted call: the metric mirrors the audit log.
    let ledger = std::fs::read(Layout::in_project(tmp.path()).ledger_file()).unwrap();
    let report = verify_ledger(&ledger, "l", Some(KEY)).unwrap();
    assert_eq!(report.calls.len(), 3);
}

/// Starts a task-augmented run and returns its task id.
fn start_task(server: &Server, env: &Env<'_>) -> String {
    let msg = message(
        1,
        "tools/call",
        json!({"name": "bernstein_run", "arguments": {"goal": "wait for me"}, "task": {}}),
    );
    let served = serve_message(server, env, &msg, &facts()).unwrap();
    let reply: Value = serde_json::from_slice(served.response.as_ref().unwrap()).unwrap();
    reply["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_long_poll_is_a_wait_while_it_waits_and_one_call_when_answered() {
    let tmp = TestDir::new("metrics-long-poll");
    let store = FileStore::open(tmp.path(), KEY.to_vec()).unwrap();
    let metrics = Metrics::new(CLOCK.0);
    let mut config = Config::new(KEY.to_vec());
    config.tier = bernstein_core::config::Tier::Standard;
    let server = Server::new(config);
    let id = start_task(&server, &env(&store, &metrics));
    let poll = call(
        2,
        "bernstein_run_status",
        json!({"run_id": id, "wait_ms": 300}),
    );
    let seen_waiting = std::thread::scope(|s| {
        let waiter = s.spawn(|| serve_message(&server, &env(&store, &metrics), &poll, &facts()));
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = false;
        while !waiter.is_finished() && Instant::now() < deadline {
            seen |= metrics.waits() == 1 && metrics.in_flight() == 1;
            std::thread::sleep(Duration::from_millis(2));
        }
        waiter.join().unwrap().unwrap();
        seen
    });
    assert!(seen_waiting, "the poll was never seen waiting");
    assert_eq!((metrics.waits(), metrics.in_flight()), (0, 0));
    assert_eq!(
        calls(&metrics),
        vec![
            ("bernstein_run", ERA, "ok".into(), 1),
            ("bernstein_run_status", ERA, "ok".into(), 1),
        ]
    );
    // Put aside on stdio at its first wait, the pending answer is not counted yet; resumed,
    // it is counted once.
    let server = std::sync::Arc::new(server);
    let mut conn = crate::stdio::StdioConnection::new(&server);
    let line =
        bernstein_core::transport::Line::Message(message(3, "tasks/result", json!({"taskId": id})));
    let Err(deferred) = conn.serve_line_now(&server, &env(&store, &metrics), line) else {
        panic!("tasks/result of a running task waits");
    };
    assert_eq!(metrics.counts().requests.get("tasks/result"), None);
    assert_eq!(metrics.waits(), 1, "it holds its wait while put aside");
    let answer = crate::stdio::serve_deferred(
        &server,
        &env(&store, &metrics),
        deferred,
        &|| Some(Stop::Settle),
        &|_| {},
    );
    assert_eq!(answer.len(), 1);
    assert_eq!(metrics.counts().requests.get("tasks/result"), Some(&1));
    assert_eq!((metrics.waits(), metrics.in_flight()), (0, 0));
}

#[test]
fn an_outcome_with_nothing_answered_counts_nothing() {
    let metrics = Metrics::new(Timestamp(0));
    metrics.served(&Tally::default(), Duration::from_millis(1));
    assert_eq!(metrics.counts(), Counts::default());
    let held = metrics.request_started();
    assert_eq!(metrics.in_flight(), 1);
    drop(held);
    assert_eq!(metrics.in_flight(), 0);
}
