//! The exposition of a service whose backend served real calls over the file store.

use std::collections::BTreeMap;
use std::sync::Arc;

use bernstein_core::Config;
use bernstein_core::domain::bound::Server;
use bernstein_core::protocol::TransportFacts;
use bernstein_core::transport::http::{HttpOptions, HttpPolicy};
use serde_json::json;

use super::*;
use crate::driver::{Backend, serve_message};
use crate::host::NoHost;
type FileStore = bernstein_store_file::FileStore<bernstein_core::Projection>;
use bernstein_store_file::clock::SystemClock;
use bernstein_store_file::test_dir::TestDir;

const KEY: &[u8] = &[9; 32];

fn service(dir: &std::path::Path) -> HttpService {
    let config = Config::new(KEY.to_vec());
    let options = HttpOptions::default();
    let policy = HttpPolicy::new(&config, &options, "127.0.0.1:8053", true).unwrap();
    let store = FileStore::open(dir, KEY.to_vec()).unwrap();
    let backend = Backend::new(Arc::new(store), Arc::new(SystemClock), Arc::new(NoHost));
    HttpService::new(Arc::new(Server::new(config)), backend, policy, options)
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
fn the_exposition_counts_what_the_backend_served() {
    let tmp = TestDir::new("metrics-route");
    let svc = service(tmp.path());
    let facts = TransportFacts::stdio(Some("2025-11-25".into()));
    for (id, tool, args) in [
        (1, "bernstein_run", json!({"goal": "one"})),
        (2, "bernstein_run", json!({"goal": "two"})),
        (3, "bernstein_status", json!({"bogus": true})),
    ] {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        let bytes = serde_json::to_vec(&msg).unwrap();
        serve_message(&svc.server, &svc.backend.env(), &bytes, &facts).unwrap();
    }
    let counter = svc.connection_counter();
    let _slot = counter.try_acquire().unwrap();
    let r = svc.metrics_response("span");
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
    assert_eq!(
        get(r#"bernstein_tool_call_duration_seconds_count{tool="bernstein_run"}"#),
        2.0
    );
    assert_eq!(
        get(r#"bernstein_tool_call_duration_seconds_bucket{tool="bernstein_run",le="+Inf"}"#),
        2.0
    );
    let records = svc.backend.store.snapshot().unwrap().position.seq;
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
        let svc = service(tmp.path());
        let msg = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bernstein_run","arguments":{"goal":"g"}}}"#;
        let facts = TransportFacts::stdio(Some("2025-11-25".into()));
        serve_message(&svc.server, &svc.backend.env(), msg, &facts).unwrap();
        // Dropping the store writes its checkpoint.
    }
    let svc = service(tmp.path());
    let text = String::from_utf8(svc.metrics_response("s").body).unwrap();
    let age = samples(&text)["bernstein_checkpoint_age_seconds"];
    assert!((0.0..60.0).contains(&age), "{age}");
    let records = svc.backend.store.snapshot().unwrap().position.seq;
    assert_eq!(svc.backend.store.facts().checkpoint_records, Some(records));
}
