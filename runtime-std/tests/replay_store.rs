//! Recorded journals replay through the runtime: the engine's stdio connection and the file
//! store.
//! - Re-serving a fixture's recorded requests (fed through the stdio framing, as `bernstein mcp`
//!   reads them) against a fresh `.sdd/` writes the recorded ledger byte for byte and answers
//!   the recorded lines (the measured `_meter.latency_ms` aside).
//! - `FileStore` opening a copy of a recorded store (from the start, then again from the
//!   checkpoint it wrote) projects exactly the fold of the recorded ledger.
//! - `audit verify` (the library behind the command) reports what the recording reported.

mod replay_support;

use std::sync::Mutex;

use std::time::Duration;

use bernstein_core::Timestamp;
use bernstein_core::engine::{ConnId, Engine, EngineConfig, Input, Moment, Output, Peer};
use bernstein_core::ledger::Store;
use bernstein_core::protocol::host::{HostFailure, HostReply};
use bernstein_core::time::Clock;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_store_file::verify_cmd::audit_verify;
use replay_support::fixtures::{all, first_difference, next_call_time, snapshot_value};
use replay_support::{Scratch, copy_store};

/// A clock the test sets before each request: the value the recording's audit record holds.
struct ReplayClock(Mutex<Timestamp>);

impl Clock for ReplayClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap()
    }
}

/// `line` with every `_meter.latency_ms` value replaced by 0 (it is measured, not replayed).
fn without_latency(line: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(line).into_owned();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("latency_ms") {
        let (head, tail) = rest.split_at(at + "latency_ms".len());
        out.push_str(head);
        let sep = tail.len() - tail.trim_start_matches(['\\', '"', ':']).len();
        out.push_str(&tail[..sep]);
        let digits = tail[sep..].chars().take_while(char::is_ascii_digit).count();
        out.push_str(if digits > 0 { "0" } else { "" });
        rest = &tail[sep + digits..];
    }
    out.push_str(rest);
    out.into_bytes()
}

#[test]
fn recorded_requests_replay_through_the_stdio_connection_and_the_store() {
    for fx in all() {
        let scratch = Scratch::new("replay-store");
        let server = fx.server();
        let store =
            FileStore::open(scratch.path(), fx.audit_key.clone()).expect("a fresh store opens");
        let recorded = fx.records();
        let clock = ReplayClock(Mutex::new(Timestamp(0)));
        // Every input carries the time the recording's next audit record holds at the ledger's
        // position then: the core stamps a request's records with the time its snapshot arrives.
        let now = || {
            let at = store.snapshot().expect("snapshot").position.seq as usize;
            *clock.0.lock().unwrap() = next_call_time(&recorded, at);
            Moment {
                mono: Duration::ZERO,
                wall: clock.now(),
            }
        };
        let mut engine = Engine::new(
            std::sync::Arc::new(server),
            EngineConfig::stdio([0; 32]),
            now(),
        );
        let conn = ConnId(0);
        engine.handle_input(
            now(),
            Input::Opened {
                conn,
                peer: Peer::Stdio,
            },
        );
        let bytes = &fx.requests;
        engine.handle_input(now(), Input::Received { conn, bytes });
        engine.handle_input(now(), Input::Closed { conn });
        let mut out: Vec<u8> = Vec::new();
        while let Some(output) = engine.poll_output() {
            match output {
                Output::ReadSnapshot { req } => {
                    let snapshot = store.snapshot_unsettled().expect("snapshot");
                    engine.handle_input(
                        now(),
                        Input::Snapshot {
                            req,
                            snapshot: &snapshot,
                        },
                    );
                }
                Output::Append { req, append } => {
                    let result = store.compare_and_append_unsettled(&append).expect("append");
                    engine.handle_input(now(), Input::Appended { req, result });
                }
                Output::Sync { upto, .. } => {
                    let durable = store.settle(upto).expect("settle");
                    engine.handle_input(now(), Input::Synced { durable });
                }
                Output::Host { req, .. } => {
                    let reply = HostReply::Failed(HostFailure::Unsupported);
                    engine.handle_input(now(), Input::Host { req, reply });
                }
                Output::Send { bytes, .. } => out.extend(bytes),
                Output::Close { .. } | Output::Log(_) => {}
                other => panic!(
                    "{}: an output the replay does not expect: {other:?}",
                    fx.name
                ),
            }
        }
        let lines: Vec<Vec<u8>> = out
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        drop(store);
        let ledger = std::fs::read(scratch.path().join(".sdd/ledger/ledger.jsonl")).unwrap();
        if ledger != fx.ledger {
            panic!(
                "{}: {}",
                fx.name,
                first_difference("ledger", &ledger, &fx.ledger)
            );
        }
        assert_eq!(
            lines.len(),
            fx.responses.len(),
            "{}: number of server lines",
            fx.name
        );
        for (i, (got, want)) in lines.iter().zip(&fx.responses).enumerate() {
            let (got, want) = (without_latency(got), without_latency(want));
            if got != want {
                panic!(
                    "{}: {}",
                    fx.name,
                    first_difference(&format!("server line {}", i + 1), &got, &want)
                );
            }
        }
    }
}

#[test]
fn the_store_projects_a_recorded_ledger_exactly_as_the_fold_does() {
    for fx in all() {
        let scratch = Scratch::new("replay-open");
        let project = copy_store(&fx, scratch.path());
        let fold = snapshot_value(&fx.fold());
        let store = FileStore::open(&project, fx.audit_key.clone()).expect("the copy opens");
        assert_eq!(
            snapshot_value(&store.snapshot().unwrap()),
            fold,
            "{}: opened from the start",
            fx.name
        );
        store.checkpoint().expect("a checkpoint is written");
        drop(store);
        assert!(project.join(".sdd/ledger/checkpoint.json").is_file());
        let again = FileStore::open(&project, fx.audit_key.clone()).expect("the copy reopens");
        assert_eq!(
            snapshot_value(&again.snapshot().unwrap()),
            fold,
            "{}: opened from the checkpoint",
            fx.name
        );
        drop(again);
        // Opening and checkpointing changed nothing in the ledger itself.
        assert_eq!(
            std::fs::read(project.join(".sdd/ledger/ledger.jsonl")).unwrap(),
            fx.ledger
        );
    }
}

#[test]
fn audit_verify_reports_the_recorded_call_order() {
    for fx in all() {
        let scratch = Scratch::new("replay-verify");
        let project = copy_store(&fx, scratch.path());
        let report =
            audit_verify(&project.join(".sdd")).unwrap_or_else(|e| panic!("{}: {e}", fx.name));
        let calls: Vec<String> = report
            .calls
            .iter()
            .map(|c| {
                format!(
                    "{} {} {} {}",
                    c.seq,
                    c.tool,
                    c.call_id,
                    if c.ok { "ok" } else { "refused" }
                )
            })
            .collect();
        let mut recorded: Vec<&str> = fx.verify_txt.lines().collect();
        let summary = recorded.pop().expect("verify.txt ends with the summary");
        let recorded: Vec<String> = recorded
            .iter()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(calls, recorded, "{}: call order", fx.name);
        assert_eq!(report.summary(), summary, "{}", fx.name);
    }
}

#[test]
fn latency_normalization_only_touches_latency() {
    let line = br#"{"a":{"latency_ms":12,"ok":true},"t":"{\"latency_ms\":7}"}"#;
    assert_eq!(
        without_latency(line),
        br#"{"a":{"latency_ms":0,"ok":true},"t":"{\"latency_ms\":0}"}"#.to_vec()
    );
}
