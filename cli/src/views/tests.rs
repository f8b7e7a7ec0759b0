//! The exposition of a service whose backend served real calls over the file store.

use std::collections::BTreeMap;
use std::sync::Arc;

use bernstein_core::Config;
use bernstein_core::engine::{ConnId, Engine, EngineConfig, Input, Moment, Peer};
use bernstein_core::ledger::Store;
use bernstein_core::time::Clock;
use bernstein_core::transport::http::prometheus::CONTENT_TYPE;
use bernstein_core::transport::http::{HttpOptions, HttpPolicy};
use bernstein_domain::Projection;
use bernstein_domain::bound::Server;
use bernstein_effects::host::NoHost;
use bernstein_effects::http::operator::Operator;
use bernstein_effects::perform::Performer;
use serde_json::json;

use super::*;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_os::clock::SystemClock;
use bernstein_store_file::test_dir::TestDir;

const KEY: &[u8] = &[9; 32];

/// An HTTP server's operator (with Bernstein's views) over the file store in `dir`, its
/// store, and an engine that served `messages` on a stdio connection (one HTTP connection
/// open beside it), every output performed here by the runtimes' performer.
fn served(
    dir: &std::path::Path,
    messages: &[Vec<u8>],
) -> (
    Operator<Projection>,
    Arc<dyn Store<Projection>>,
    Engine<Projection>,
) {
    let config = Config::new(KEY.to_vec());
    let options = HttpOptions::default();
    let policy = HttpPolicy::new(&config, &options, "127.0.0.1:8053", true).unwrap();
    let store: Arc<dyn Store<Projection>> = Arc::new(FileStore::open(dir, KEY.to_vec()).unwrap());
    let server = Arc::new(Server::new(config));
    let now = || Moment {
        mono: std::time::Duration::ZERO,
        wall: SystemClock.now(),
    };
    let mut engine = Engine::new(
        server.clone(),
        EngineConfig::http(policy, options, [0; 32]),
        now(),
    );
    let stdio = ConnId(0);
    engine.handle_input(
        now(),
        Input::Opened {
            conn: stdio,
            peer: Peer::Stdio,
        },
    );
    let peer = Peer::Http("127.0.0.1:4000".parse().unwrap());
    engine.handle_input(
        now(),
        Input::Opened {
            conn: ConnId(1),
            peer,
        },
    );
    // Every store output on this thread: no syncer, no pool (a local store).
    let performer = Performer::new(
        store.clone(),
        Arc::new(NoHost),
        None,
        1,
        usize::MAX,
        Arc::new(|| {}),
    )
    .unwrap();
    for m in messages {
        let mut line = m.clone();
        line.push(b'\n');
        engine.handle_input(
            now(),
            Input::Received {
                conn: stdio,
                bytes: &line,
            },
        );
        let mut sent = Vec::new();
        while engine.has_output() {
            performer.pump(&mut engine, &now, &mut sent);
        }
    }
    let views = Arc::new(BernsteinViews::new(server));
    let op = Operator::new(store.clone(), Arc::new(SystemClock), views, false);
    (op, store, engine)
}

/// Sample lines by series (`name{labels}`), checking that every family has one HELP and one
/// TYPE line and that its samples follow them without interruption.
fn samples(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let mut family = String::new();
    let mut seen = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            family = rest.split(' ').next().unwrap().to_string();
            assert!(!seen.contains(&family), "{family} twice");
            seen.push(family.clone());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            assert!(rest.starts_with(&format!("{family} ")), "{line}");
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap();
        let name = series.split('{').next().unwrap();
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|b| *b == family))
            .unwrap_or(name);
        assert_eq!(base, family, "{line} outside its family");
        out.insert(series.to_string(), value.parse().unwrap());
    }
    out
}

#[test]
fn the_exposition_counts_what_the_engine_served() {
    let tmp = TestDir::new("metrics-route");
    let mut messages = vec![initialize()];
    for (id, tool, args) in [
        (1, "bernstein_run", json!({"goal": "one"})),
        (2, "bernstein_run", json!({"goal": "two"})),
        (3, "bernstein_status", json!({"bogus": true})),
    ] {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        messages.push(serde_json::to_vec(&msg).unwrap());
    }
    let (op, store, engine) = served(tmp.path(), &messages);
    let r = op.metrics_response("span", &engine.counters());
    assert_eq!(r.header("Content-Type"), Some(CONTENT_TYPE));
    let text = String::from_utf8(r.body).unwrap();
    let s = samples(&text);
    let get = |k: &str| *s.get(k).unwrap_or_else(|| panic!("no {k} in\n{text}"));
    assert_eq!(
        get(r#"bernstein_tool_calls_total{tool="bernstein_run",era="2025-11-25",outcome="ok"}"#),
        2.0
    );
    assert_eq!(
        get(
            r#"bernstein_tool_calls_total{tool="bernstein_status",era="2025-11-25",outcome="invalid_arguments"}"#
        ),
        1.0
    );
    assert_eq!(get(r#"bernstein_requests_total{method="tools/call"}"#), 3.0);
    assert_eq!(get(r#"bernstein_requests_total{method="ping"}"#), 0.0);
    assert_eq!(get(r#"bernstein_requests_total{method="initialize"}"#), 1.0);
    assert_eq!(
        get(r#"bernstein_tool_call_duration_seconds_count{tool="bernstein_run"}"#),
        2.0
    );
    assert_eq!(
        get(r#"bernstein_tool_call_duration_seconds_bucket{tool="bernstein_run",le="+Inf"}"#),
        2.0
    );
    let records = store.snapshot().unwrap().position.seq;
    assert_eq!(get("bernstein_ledger_records"), records as f64);
    let bytes = std::fs::metadata(
        bernstein_store_file::layout::Layout::in_project(tmp.path()).ledger_file(),
    )
    .unwrap()
    .len();
    assert_eq!(get("bernstein_ledger_bytes"), bytes as f64);
    assert_eq!(get(r#"bernstein_tasks{status="open"}"#), 2.0);
    assert_eq!(get(r#"bernstein_tasks{status="done"}"#), 0.0);
    // Every byte the answers reflect is durable.
    assert_eq!(get("bernstein_ledger_durable_bytes"), bytes as f64);
    // Three appends one after the other: one append per fsync.
    assert_eq!(get("bernstein_group_commit_batch_appends_count"), 3.0);
    assert_eq!(
        get(r#"bernstein_group_commit_batch_appends_bucket{le="1"}"#),
        3.0
    );
    assert!(get("bernstein_ledger_fsync_duration_seconds_count") >= 3.0);
    assert_eq!(get("bernstein_http_connections_open"), 1.0);
    // The metrics request itself is not a JSON-RPC message.
    assert_eq!(get("bernstein_requests_in_flight"), 0.0);
    assert_eq!(get("bernstein_waits_in_flight"), 0.0);
    assert!(get("bernstein_process_start_time_seconds") > 1.7e9);
    // No checkpoint written or loaded yet (5000 records between checkpoints).
    assert!(!text.contains("bernstein_checkpoint_age_seconds"), "{text}");
}

#[test]
fn a_checkpoint_shows_its_age() {
    let tmp = TestDir::new("metrics-checkpoint");
    {
        let msg = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bernstein_run","arguments":{"goal":"g"}}}"#;
        // Dropping the store writes its checkpoint.
        drop(served(tmp.path(), &[initialize(), msg.to_vec()]));
    }
    let (op, store, engine) = served(tmp.path(), &[]);
    let text = String::from_utf8(op.metrics_response("s", &engine.counters()).body).unwrap();
    let age = samples(&text)["bernstein_checkpoint_age_seconds"];
    assert!((0.0..60.0).contains(&age), "{age}");
    let records = store.snapshot().unwrap().position.seq;
    assert_eq!(store.facts().checkpoint_records, Some(records));
}

/// `initialize` at 2025-11-25, so that the calls after it are served in that revision.
fn initialize() -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}))
    .unwrap()
}
