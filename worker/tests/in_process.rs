//! The worker loop in process against a real project ledger (FileStore + local engine):
//! dependency order, the verbs it records, a failing agent, and a drain on the SHUTDOWN file
//! that releases a task whose agent outlived the grace period.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use bernstein_core::Config;
use bernstein_domain::Server;
use bernstein_effects::host::ProjectHost;
use bernstein_effects::perform::Backend;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_os::clock::SystemClock;
use bernstein_store_file::keys::{load_or_create_audit_key, load_or_create_signing_key};
use bernstein_worker::display::Display;
use bernstein_worker::runner::shutdown_file;
use bernstein_worker::task_run::TaskSettings;
use bernstein_worker::{Client, InProcess, RunSummary, ToolReply, WorkerConfig, run_worker};
use serde_json::{Value, json};

struct Project {
    client: Arc<Client>,
    dir: PathBuf,
    /// Declared last, so dropped last: the store (inside `client`) writes its final checkpoint
    /// before the directory goes.
    _cleanup: RemoveOnDrop,
}

/// Removes a directory when dropped.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Project {
    fn new(label: &str) -> Project {
        let dir =
            std::env::temp_dir().join(format!("bernstein-worker-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sdd = dir.join(".sdd");
        let audit_key = load_or_create_audit_key(&sdd).unwrap();
        let seed = load_or_create_signing_key(&sdd).unwrap();
        let config = Config::new(audit_key.clone()).with_signing_seed(&seed);
        let store = FileStore::open(&dir, audit_key).unwrap();
        let backend = Backend::new(
            Arc::new(store),
            Arc::new(SystemClock),
            Arc::new(ProjectHost::new(&dir)),
        );
        let client = Arc::new(Client::new(Box::new(
            InProcess::new(Arc::new(Server::new(config)), &backend).unwrap(),
        )));
        Project {
            client,
            _cleanup: RemoveOnDrop(dir.clone()),
            dir,
        }
    }

    fn call(&self, tool: &str, args: Value) -> Value {
        match self.client.call_tool(tool, args.clone()).unwrap() {
            ToolReply::Ok(v) => v,
            ToolReply::Refused(e) => panic!("{tool}({args}) refused: {e}"),
        }
    }

    /// `bernstein_run` with `args`; the new task's id.
    fn run(&self, args: Value) -> String {
        self.call("bernstein_run", args)["task_id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn task_status(&self, id: &str) -> String {
        let all = self.call("bernstein_status", json!({"detail": true}));
        all["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .map(|t| t["status"].as_str().unwrap().to_string())
            .unwrap()
    }

    fn config(&self, command: &str, concurrency: usize, grace: Duration) -> WorkerConfig {
        WorkerConfig {
            task: TaskSettings {
                claimer_id: "w-test".into(),
                command: command.into(),
                project_dir: self.dir.clone(),
                timeout: Duration::from_secs(20),
                lease: Duration::from_secs(30),
                flush_interval: Duration::from_millis(100),
                stop_patience: Duration::from_millis(500),
            },
            role: None,
            concurrency,
            grace,
            poll_interval: Duration::from_millis(50),
            max_poll_interval: Duration::from_millis(200),
            claim_wait: Duration::from_secs(5),
            receipts_dir: None,
        }
    }

    /// Runs a worker until `done` holds, then stops it by flag; returns what it did.
    fn work_until(&self, config: WorkerConfig, done: impl Fn(&Project) -> bool) -> RunSummary {
        let stop = Arc::new(AtomicBool::new(false));
        let (client, flag) = (Arc::clone(&self.client), Arc::clone(&stop));
        let handle =
            thread::spawn(move || run_worker(client, &config, flag, Arc::new(Display::new(false))));
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "the worker did not get there in 30s"
            );
            thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::SeqCst);
        handle.join().unwrap()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

#[test]
fn dependent_subtasks_run_in_order_and_the_run_completes() {
    let p = Project::new("order");
    let root = p.run(json!({"goal": "ship"}));
    let a = p.run(json!({"goal": "build", "parent_task_id": root}));
    let b = p.run(json!({"goal": "test", "parent_task_id": root, "depends_on": [a]}));
    let cfg = p.config(
        r#"echo "$BERNSTEIN_TASK_ID" >> order.log; echo "RESULT: did $BERNSTEIN_TASK_GOAL""#,
        2,
        Duration::from_secs(5),
    );
    let summary = p.work_until(cfg, |p| p.task_status(&root) == "done");
    assert_eq!((summary.claimed, summary.completed), (2, 2));
    let order: Vec<String> = read(&p.path("order.log"))
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(order, [a.clone(), b]);
    let handle = p.call("bernstein_run_status", json!({"run_id": root}));
    assert_eq!(handle["status"], "completed");
}

#[test]
fn a_failing_agent_fails_its_task_with_the_exit_status() {
    let p = Project::new("fail");
    let t = p.run(json!({"goal": "break"}));
    let cfg = p.config("echo nope >&2; exit 4", 1, Duration::from_secs(5));
    let summary = p.work_until(cfg, |p| p.task_status(&t) == "failed");
    assert_eq!(summary.failed, 1);
    let handle = p.call("bernstein_run_status", json!({"run_id": t}));
    assert_eq!(handle["status"], "failed");
}

#[test]
fn the_shutdown_file_drains_and_releases_what_outlives_the_grace() {
    let p = Project::new("drain");
    let quick = p.run(json!({"goal": "quick", "priority": 1}));
    let slow = p.run(json!({"goal": "slow"}));
    let waiting = p.run(json!({"goal": "never claimed", "priority": 3}));
    let cfg = p.config(
        r#"echo "$BERNSTEIN_TASK_GOAL" >> started.log; case "$BERNSTEIN_TASK_GOAL" in quick) sleep 1;; *) sleep 30;; esac"#,
        2,
        Duration::from_millis(1500),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let client = Arc::clone(&p.client);
    let handle =
        thread::spawn(move || run_worker(client, &cfg, stop, Arc::new(Display::new(false))));
    let deadline = Instant::now() + Duration::from_secs(20);
    while read(&p.path("started.log")).lines().count() < 2 {
        assert!(Instant::now() < deadline, "the agents did not start");
        thread::sleep(Duration::from_millis(20));
    }
    let signal = shutdown_file(&p.dir);
    std::fs::create_dir_all(signal.parent().unwrap()).unwrap();
    std::fs::write(&signal, "shutdown").unwrap();
    let summary = handle.join().unwrap();
    assert_eq!(
        (summary.claimed, summary.completed, summary.released),
        (2, 1, 1),
        "{summary:?}"
    );
    assert!(summary.stopped_by.ends_with("SHUTDOWN"), "{summary:?}");
    assert_eq!(p.task_status(&quick), "done");
    assert_eq!(p.task_status(&slow), "open");
    assert_eq!(p.task_status(&waiting), "open");
}

/// The claims the ledger records: (granted, refused, cancelled), from the audit records.
fn claims_recorded(p: &Project) -> (usize, usize, usize) {
    let ledger = read(&p.path(".sdd/ledger/ledger.jsonl"));
    let records: Vec<Value> = ledger
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let receipts = |granted: bool| {
        records
            .iter()
            .filter(|r| r["kind"] == "task.claim_receipt" && r["body"]["granted"] == granted)
            .count()
    };
    let cancelled = records
        .iter()
        .filter(|r| r["body"]["tool"] == "bernstein_claim" && r["body"]["error"] == "cancelled")
        .count();
    (receipts(true), receipts(false), cancelled)
}

#[test]
fn an_idle_worker_waits_in_its_claim_wakes_for_new_work_and_stops_at_once() {
    let p = Project::new("idle");
    let mut cfg = p.config(
        r#"echo "RESULT: did $BERNSTEIN_TASK_GOAL""#,
        1,
        Duration::ZERO,
    );
    cfg.claim_wait = Duration::from_secs(100);
    let stop = Arc::new(AtomicBool::new(false));
    let (client, flag) = (Arc::clone(&p.client), Arc::clone(&stop));
    let handle =
        thread::spawn(move || run_worker(client, &cfg, flag, Arc::new(Display::new(false))));
    // Idle: the claim waits on the server and nothing is recorded.
    thread::sleep(Duration::from_millis(700));
    assert_eq!(claims_recorded(&p), (0, 0, 0));
    // New work wakes the waiting claim long before its wait ends.
    let asked = Instant::now();
    let t = p.run(json!({"goal": "wake"}));
    while p.task_status(&t) != "done" {
        assert!(asked.elapsed() < Duration::from_secs(20), "not woken");
        thread::sleep(Duration::from_millis(20));
    }
    // Idle again, then stopped: the waiting claim is cancelled and the worker returns at once.
    thread::sleep(Duration::from_millis(500));
    let stopping = Instant::now();
    stop.store(true, Ordering::SeqCst);
    let summary = handle.join().unwrap();
    assert!(stopping.elapsed() < Duration::from_secs(5), "{summary:?}");
    assert_eq!((summary.claimed, summary.completed), (1, 1));
    assert_eq!(claims_recorded(&p), (1, 0, 1));
}
