//! Tests of the local engine over the real core and the file store: records are durable and
//! verifiable before a response exists, conflicts re-run the request, store failures surface,
//! answers wait for the ledger, and concurrent callers share fsyncs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bernstein_core::Config;
use bernstein_core::engine::{DEFAULT_WAIT, MAX_ATTEMPTS};
use bernstein_core::ledger::verify::verify_ledger;
use bernstein_core::ledger::{Append, AppendResult, Snapshot, Store};
use bernstein_core::protocol::TransportFacts;
use bernstein_core::time::Timestamp;
use bernstein_domain::Projection;
use bernstein_domain::bound::Server;
use serde_json::{Value, json};

use super::*;
use bernstein_core::time::FixedClock;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_store_file::layout::Layout;
use bernstein_store_file::racing::Racing;
use bernstein_store_file::test_dir::TestDir;

const KEY: &[u8] = &[3; 32];
const CLOCK: FixedClock = FixedClock(Timestamp(1_780_000_000_000));

fn backend(store: Arc<dyn Store<Projection>>) -> Backend<Projection> {
    Backend::new(store, Arc::new(CLOCK), Arc::new(crate::host::NoHost))
}

/// A local engine of `server` over `store`, waiting under `wait`.
fn local_with(
    server: Server,
    store: Arc<dyn Store<Projection>>,
    wait: WaitPolicy,
) -> Local<Projection> {
    Local::new(Arc::new(server), &backend(store), wait).unwrap()
}

/// A local engine of the core-tier server over `store`.
fn local(store: Arc<dyn Store<Projection>>) -> Local<Projection> {
    local_with(server(), store, DEFAULT_WAIT)
}

fn server() -> Server {
    Server::new(Config::new(KEY.to_vec()))
}

fn run_call(goal: &str) -> Vec<u8> {
    let msg = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "bernstein_run", "arguments": {"goal": goal}}});
    serde_json::to_vec(&msg).unwrap()
}

fn ledger_bytes(dir: &std::path::Path) -> Vec<u8> {
    std::fs::read(Layout::in_project(dir).ledger_file()).unwrap()
}

#[test]
fn a_tool_call_is_committed_then_answered_with_its_latency() {
    let tmp = TestDir::new("local-call");
    let store = Arc::new(FileStore::open(tmp.path(), KEY.to_vec()).unwrap());
    let served = local(store)
        .serve_message(&run_call("write the docs"), &TransportFacts::stdio(None))
        .unwrap();
    let response: Value = serde_json::from_slice(served.response.as_ref().unwrap()).unwrap();
    assert_eq!(response["id"], 7);
    let structured = &response["result"]["structuredContent"];
    assert!(structured["_meter"]["latency_ms"].is_u64(), "{response}");
    assert_eq!(structured["_meter"]["ts"], CLOCK.0.to_rfc3339());
    assert_eq!(structured["result"]["status"], "open");
    assert!(served.span_id.is_some());
    // The records are on disk and verify; the last one is this call's audit entry.
    let report = verify_ledger(&ledger_bytes(tmp.path()), "l", Some(KEY)).unwrap();
    assert_eq!(report.transactions, 1);
    assert_eq!(report.calls.len(), 1);
    assert_eq!(report.calls[0].tool, "bernstein_run");
    assert!(report.calls[0].ok);
}

#[test]
fn notifications_and_reads_append_nothing() {
    let tmp = TestDir::new("local-notify");
    let store = Arc::new(FileStore::open(tmp.path(), KEY.to_vec()).unwrap());
    let local = local(store);
    let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let served = local
        .serve_message(note, &TransportFacts::stdio(None))
        .unwrap();
    assert_eq!(served.response, None);
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let served = local
        .serve_message(list, &TransportFacts::stdio(None))
        .unwrap();
    assert!(served.response.is_some());
    assert!(ledger_bytes(tmp.path()).is_empty());
}

#[test]
fn a_conflict_reruns_the_request_on_a_fresh_snapshot() {
    let tmp = TestDir::new("local-race");
    let store = Arc::new(Racing::new(tmp.path(), KEY, 3));
    let served = local(store.clone())
        .serve_message(&run_call("race"), &TransportFacts::stdio(None))
        .unwrap();
    assert!(served.response.is_some());
    assert_eq!(store.attempts.load(Ordering::SeqCst), 4);
    let report = verify_ledger(&ledger_bytes(tmp.path()), "l", Some(KEY)).unwrap();
    // Three interfering records, then the call's transaction, committed once.
    assert_eq!(report.transactions, 4);
    assert_eq!(report.calls.len(), 1);
}

#[test]
fn endless_conflicts_give_up_with_an_error_and_no_response() {
    let tmp = TestDir::new("local-giveup");
    let store = Arc::new(Racing::new(tmp.path(), KEY, usize::MAX));
    let err = local(store.clone())
        .serve_message(&run_call("never"), &TransportFacts::stdio(None))
        .unwrap_err();
    assert!(err.to_string().contains("gave up"), "{err}");
    assert_eq!(store.attempts.load(Ordering::SeqCst), MAX_ATTEMPTS);
    let report = verify_ledger(&ledger_bytes(tmp.path()), "l", Some(KEY)).unwrap();
    assert_eq!(report.calls.len(), 0);
}

/// A store that refuses every append.
struct Failing(FileStore);

impl Store<Projection> for Failing {
    fn snapshot(&self) -> Result<Arc<Snapshot<Projection>>, StoreError> {
        self.0.snapshot()
    }

    fn compare_and_append(&self, _: &Append) -> Result<AppendResult, StoreError> {
        Err(StoreError::Io("disk full".into()))
    }
}

#[test]
fn a_store_failure_releases_no_response() {
    let tmp = TestDir::new("local-fail");
    let store = Arc::new(Failing(FileStore::open(tmp.path(), KEY.to_vec()).unwrap()));
    let res = local(store).serve_message(&run_call("fail"), &TransportFacts::stdio(None));
    assert!(matches!(res, Err(StoreError::Io(_))), "{res:?}");
}

fn task_message(id: u64, method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .unwrap()
}

fn standard_server() -> Server {
    let mut config = Config::new(KEY.to_vec());
    config.tier = bernstein_core::config::Tier::Standard;
    Server::new(config)
}

/// Starts a task-augmented run and returns its task id.
fn start_task(local: &Local<Projection>) -> String {
    let msg = task_message(
        1,
        "tools/call",
        json!({"name": "bernstein_run", "arguments": {"goal": "wait for me"}, "task": {}}),
    );
    let served = local
        .serve_message(&msg, &TransportFacts::stdio(None))
        .unwrap();
    let reply: Value = serde_json::from_slice(served.response.as_ref().unwrap()).unwrap();
    reply["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn tasks_result_waits_until_another_writer_finishes_the_task() {
    let tmp = TestDir::new("local-task-wait");
    let store = Arc::new(FileStore::open(tmp.path(), KEY.to_vec()).unwrap());
    let local = local_with(standard_server(), store, DEFAULT_WAIT);
    let id = start_task(&local);
    let waiter = {
        let (local, id) = (local.clone(), id.clone());
        std::thread::spawn(move || {
            let msg = task_message(2, "tasks/result", json!({"taskId": id}));
            local
                .serve_message(&msg, &TransportFacts::stdio(None))
                .unwrap()
        })
    };
    // Another request (a separate writer on the same ledger) cancels the task meanwhile.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let cancel = task_message(3, "tasks/cancel", json!({"taskId": id}));
    let served = local
        .serve_message(&cancel, &TransportFacts::stdio(None))
        .unwrap();
    let cancelled: Value = serde_json::from_slice(served.response.as_ref().unwrap()).unwrap();
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let served = waiter.join().unwrap();
    let reply: Value = serde_json::from_slice(served.response.as_ref().unwrap()).unwrap();
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(
        reply["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    assert_eq!(
        reply["result"]["structuredContent"]["result"]["status"],
        "cancelled"
    );
}

#[test]
fn a_pending_answer_is_sent_as_it_stands_when_the_wait_ends() {
    let tmp = TestDir::new("local-task-deadline");
    let store: Arc<dyn Store<Projection>> =
        Arc::new(FileStore::open(tmp.path(), KEY.to_vec()).unwrap());
    let local = local_with(standard_server(), store.clone(), DEFAULT_WAIT);
    let id = start_task(&local);
    let msg = task_message(2, "tasks/result", json!({"taskId": id}));
    let short = WaitPolicy {
        max_wait: std::time::Duration::from_millis(60),
        ..DEFAULT_WAIT
    };
    let started = std::time::Instant::now();
    let served = local_with(standard_server(), store, short)
        .serve_message_with(&msg, &TransportFacts::stdio(None), &|| None)
        .unwrap();
    assert!(started.elapsed() >= std::time::Duration::from_millis(60));
    let reply: Value = serde_json::from_slice(served.response.as_ref().unwrap()).unwrap();
    assert_eq!(reply["error"]["code"], -32000, "{reply}");
    // A stop hook that fires at once ends the wait immediately.
    let stopped = AtomicUsize::new(0);
    let served = local
        .serve_message_with(&msg, &TransportFacts::stdio(None), &|| {
            stopped.fetch_add(1, Ordering::SeqCst);
            Some(Stop::Settle)
        })
        .unwrap();
    assert!(stopped.load(Ordering::SeqCst) >= 1);
    let reply: Value = serde_json::from_slice(served.response.as_ref().unwrap()).unwrap();
    assert_eq!(reply["error"]["code"], -32000);
}

#[test]
fn a_long_poll_settles_at_its_own_deadline_and_a_cancel_answers_partial() {
    let tmp = TestDir::new("local-long-poll");
    let store = Arc::new(FileStore::open(tmp.path(), KEY.to_vec()).unwrap());
    let local = local_with(standard_server(), store.clone(), DEFAULT_WAIT);
    let id = start_task(&local);
    let poll = |wait_ms: u64| {
        let msg = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "bernstein_run_status",
                "arguments": {"run_id": id, "wait_ms": wait_ms}}});
        serde_json::to_vec(&msg).unwrap()
    };
    let audits = |store: &FileStore| store.snapshot().unwrap().position.seq;
    let before = audits(&store);
    let started = std::time::Instant::now();
    // The request's 80 ms is shorter than the policy's two minutes: it wins.
    let served = local
        .serve_message_with(&poll(80), &TransportFacts::stdio(None), &|| None)
        .unwrap();
    let waited = started.elapsed();
    assert!(waited >= std::time::Duration::from_millis(80), "{waited:?}");
    assert!(waited < std::time::Duration::from_secs(60), "{waited:?}");
    let reply: Value = serde_json::from_slice(served.response.as_ref().unwrap()).unwrap();
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert!(reply["result"].get("cancelled").is_none());
    assert_eq!(audits(&store), before + 1, "settled once, audited once");

    let served = local
        .serve_message_with(&poll(60_000), &TransportFacts::stdio(None), &|| {
            Some(Stop::Cancel)
        })
        .unwrap();
    let reply: Value = serde_json::from_slice(served.response.as_ref().unwrap()).unwrap();
    assert_eq!(reply["result"]["cancelled"], true, "{reply}");
    assert_eq!(reply["result"]["partial"][0]["status"], "working");
    assert_eq!(
        audits(&store),
        before + 2,
        "the cancelled poll is audited once"
    );
}

#[test]
fn concurrent_callers_share_fsyncs_and_each_answer_is_durable() {
    let tmp = TestDir::new("local-group-commit");
    let store = Arc::new(FileStore::open(tmp.path(), KEY.to_vec()).unwrap());
    let local = local(store.clone());
    let (threads, calls) = (8, 10);
    let writers: Vec<_> = (0..threads)
        .map(|t| {
            let (local, store) = (local.clone(), store.clone());
            let dir = tmp.path().to_path_buf();
            std::thread::spawn(move || {
                for i in 0..calls {
                    let goal = format!("goal of writer {t}, call {i}");
                    let served = local
                        .serve_message(&run_call(&goal), &TransportFacts::stdio(None))
                        .unwrap();
                    assert!(served.response.is_some());
                    // Answered only once durable: its records lie in the durable prefix.
                    let durable = store.facts().syncs.unwrap().durable_bytes as usize;
                    let ledger = ledger_bytes(&dir);
                    let prefix = String::from_utf8_lossy(&ledger[..durable]);
                    assert!(prefix.contains(&goal), "{goal} not durable");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let report = verify_ledger(&ledger_bytes(tmp.path()), "l", Some(KEY)).unwrap();
    assert_eq!(report.calls.len(), threads * calls);
    let syncs = store.sync_stats().syncs;
    assert!(
        syncs < (threads * calls) as u64,
        "{syncs} fsyncs for {} calls",
        threads * calls
    );
}

/// A message as a job that counts its runs (an operator's command stands in for it).
struct Counted {
    message: OwnedMessage<Projection>,
    runs: usize,
}

impl Job for Counted {
    type Fold = Projection;
    fn run(&mut self, round: Round<'_, Projection>) -> Outcome {
        self.runs += 1;
        self.message.run(round)
    }
}

#[test]
fn a_committed_job_comes_back_after_its_lost_races_with_its_records_durable() {
    let tmp = TestDir::new("local-commit");
    let store = Arc::new(Racing::new(tmp.path(), KEY, 3));
    let local = Local::for_jobs(&backend(store.clone())).unwrap();
    let server = Arc::new(server());
    let job = Counted {
        message: OwnedMessage {
            message: server.read_message(run_call("operator")),
            server,
            facts: TransportFacts::stdio(None),
            caps: Default::default(),
        },
        runs: 0,
    };
    let (job, finished) = local.commit(job).unwrap();
    assert_eq!(job.runs, 4, "three lost races, then the commit");
    assert!(finished.served.response.is_some());
    let report = verify_ledger(&ledger_bytes(tmp.path()), "l", Some(KEY)).unwrap();
    assert_eq!(report.transactions, 4);
    assert_eq!(report.calls.len(), 1);
    // An engine of jobs serves no message.
    assert!(
        local
            .serve_message(&run_call("no"), &TransportFacts::stdio(None))
            .is_err()
    );
}
