//! The worker's claim waits against servers that cannot hold them: an older server refusing
//! `wait_ms` as an unknown argument makes it poll without it from then on; a server out of wait
//! slots (`too_many_waits`) does not.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bernstein_worker::display::Display;
use bernstein_worker::task_run::TaskSettings;
use bernstein_worker::{Client, Mcp, TransportError, WorkerConfig, run_worker};
use serde_json::{Value, json};

/// A server answering every claim with `refusal` when it carries `wait_ms`, else with an
/// empty receipt; it keeps each claim's arguments.
struct Canned {
    refusal: Value,
    claims: Mutex<Vec<Value>>,
}

impl Mcp for Canned {
    fn exchange(&self, _: &str, request: &[u8], _: Duration) -> Result<Value, TransportError> {
        let request: Value = serde_json::from_slice(request).unwrap();
        let args = request["params"]["arguments"].clone();
        let refused = args.get("wait_ms").is_some();
        self.claims.lock().unwrap().push(args);
        let payload = if refused {
            self.refusal.clone()
        } else {
            json!({"granted": false, "taskId": ""})
        };
        Ok(json!({"jsonrpc": "2.0", "id": request["id"], "result": {
            "content": [{"type": "text", "text": payload.to_string()}], "isError": refused}}))
    }

    fn notify(&self, _: &str, _: &[u8]) -> Result<(), TransportError> {
        Ok(())
    }
}

/// Runs a worker against a server refusing waits with `refusal` until it made 4 claims; whether
/// each claim asked to wait.
fn waits_asked(refusal: Value) -> Vec<bool> {
    let canned = Arc::new(Canned {
        refusal,
        claims: Mutex::new(Vec::new()),
    });
    struct Shared(Arc<Canned>);
    impl Mcp for Shared {
        fn exchange(&self, t: &str, r: &[u8], h: Duration) -> Result<Value, TransportError> {
            self.0.exchange(t, r, h)
        }
        fn notify(&self, m: &str, n: &[u8]) -> Result<(), TransportError> {
            self.0.notify(m, n)
        }
    }
    let client = Arc::new(Client::new(Box::new(Shared(Arc::clone(&canned)))));
    let config = WorkerConfig {
        task: TaskSettings {
            claimer_id: "w".into(),
            command: "true".into(),
            project_dir: std::env::temp_dir(),
            timeout: Duration::from_secs(5),
            lease: Duration::from_secs(30),
            flush_interval: Duration::from_millis(100),
            stop_patience: Duration::from_millis(100),
        },
        role: None,
        concurrency: 1,
        grace: Duration::ZERO,
        poll_interval: Duration::from_millis(10),
        max_poll_interval: Duration::from_millis(20),
        claim_wait: Duration::from_secs(60),
        receipts_dir: None,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let worker =
        thread::spawn(move || run_worker(client, &config, flag, Arc::new(Display::new(false))));
    let deadline = Instant::now() + Duration::from_secs(20);
    while canned.claims.lock().unwrap().len() < 4 {
        assert!(Instant::now() < deadline, "the worker stopped claiming");
        thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::SeqCst);
    worker.join().unwrap();
    let claims = canned.claims.lock().unwrap();
    claims.iter().map(|a| a.get("wait_ms").is_some()).collect()
}

#[test]
fn an_older_server_refusing_wait_ms_is_polled_without_it() {
    let refusal = json!({"error": "invalid_arguments",
        "message": "Invalid arguments for tool bernstein_claim: arguments.wait_ms is not allowed",
        "hint": "Call bernstein_claim again with arguments that match its inputSchema."});
    let asked = waits_asked(refusal);
    assert_eq!(asked[..2], [true, false], "{asked:?}");
    assert!(asked[1..].iter().all(|w| !w), "{asked:?}");
}

#[test]
fn a_server_out_of_wait_slots_is_asked_to_wait_again() {
    let refusal = json!({"error": "too_many_waits",
        "message": "bernstein_claim cannot wait: the server already holds as many waiting answers as it allows",
        "hint": "Call again in a moment, or without wait_ms to get the state now."});
    let asked = waits_asked(refusal);
    assert!(asked.iter().all(|w| *w), "{asked:?}");
}
