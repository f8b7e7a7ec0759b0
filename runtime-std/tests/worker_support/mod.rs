//! Shared helpers of the worker-loop integration tests (`worker_*.rs`): a real server (core +
//! file store + a local engine, signing key and audit key from `.sdd/keys/`) called the way a
//! transport calls it, one JSON-RPC `tools/call` at a time.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use bernstein_core::Config;
use bernstein_core::engine::DEFAULT_WAIT;
use bernstein_core::protocol::TransportFacts;
use bernstein_domain::{Projection, Server};
use bernstein_effects::host::NoHost;
use bernstein_effects::local::Local;
use bernstein_effects::perform::Backend;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_os::clock::SystemClock;
use bernstein_store_file::keys::{load_or_create_audit_key, load_or_create_signing_key};
use serde_json::{Value, json};

/// One server process's view of a project: its store, its engine and its keys.
pub struct Worker {
    pub store: Arc<FileStore>,
    pub server: Arc<Server>,
    pub local: Local<Projection>,
    pub audit_key: Vec<u8>,
}

/// The payload of a tool call, or its refusal.
#[derive(Debug)]
pub enum Answer {
    Ok(Value),
    Refused(Value),
}

impl Answer {
    pub fn ok(self) -> Value {
        match self {
            Answer::Ok(v) => v,
            Answer::Refused(e) => panic!("refused: {e}"),
        }
    }

    /// `ok` or the refusal's error code.
    pub fn code(&self) -> String {
        match self {
            Answer::Ok(_) => "ok".into(),
            Answer::Refused(e) => e["error"].as_str().unwrap_or("?").to_string(),
        }
    }
}

impl Worker {
    /// Opens the project in `dir` (keys created on first use), meter off.
    pub fn open(dir: &Path) -> Worker {
        let sdd = dir.join(".sdd");
        let audit_key = load_or_create_audit_key(&sdd).unwrap();
        let seed = load_or_create_signing_key(&sdd).unwrap();
        let mut config = Config::new(audit_key.clone()).with_signing_seed(&seed);
        config.cost_meter = false;
        let store = Arc::new(FileStore::open(dir, audit_key.clone()).unwrap());
        let backend = Backend::new(store.clone(), Arc::new(SystemClock), Arc::new(NoHost));
        let server = Arc::new(Server::new(config));
        let local = Local::new(server.clone(), &backend, DEFAULT_WAIT).unwrap();
        Worker {
            store,
            server,
            local,
            audit_key,
        }
    }

    /// Calls `tool` through the local engine (snapshot, core, compare-and-append with retry).
    pub fn call(&self, tool: &str, args: Value) -> Answer {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        let served = self
            .local
            .serve_message(
                &serde_json::to_vec(&msg).unwrap(),
                &TransportFacts::stdio(Some("2025-11-25".into())),
            )
            .unwrap();
        let response: Value = serde_json::from_slice(&served.response.unwrap()).unwrap();
        let result = &response["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text content: {response}"));
        let payload: Value = serde_json::from_str(text).unwrap();
        if result["isError"] == true {
            Answer::Refused(payload)
        } else {
            Answer::Ok(payload)
        }
    }

    /// Starts a run and returns its id.
    pub fn start(&self, goal: &str) -> String {
        let v = self.call("bernstein_run", json!({"goal": goal})).ok();
        v["task_id"].as_str().unwrap().to_string()
    }

    /// The ledger's bytes.
    pub fn ledger(dir: &Path) -> Vec<u8> {
        std::fs::read(dir.join(".sdd/ledger/ledger.jsonl")).unwrap()
    }
}

/// The value after `tag` on a child's output line (libtest may print its own text before it).
pub fn field<'a>(line: &'a str, tag: &str) -> Option<&'a str> {
    line.find(tag).map(|i| line[i + tag.len()..].trim())
}

/// Re-runs this test binary on its `child` test with `vars` set.
pub fn spawn_child(vars: &[(&str, String)]) -> std::process::Child {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}
