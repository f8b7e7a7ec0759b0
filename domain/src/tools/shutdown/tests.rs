use serde_json::{Value, json};

use super::*;
use crate::testkit::Bench;

fn signalled(path: &str) -> HostReply {
    HostReply::Signalled { path: path.into() }
}

#[test]
fn first_run_asks_the_host_and_commits_nothing() {
    let mut b = Bench::new();
    let out = b.call_with_host(NAME, json!({"workdir": "/srv/proj"}), &[]);
    let Some(HostRequest::SignalShutdown { workdir, body }) = &out.host else {
        panic!("expected a shutdown request, got {out:?}");
    };
    assert_eq!(workdir, "/srv/proj");
    let body: Value = serde_json::from_str(body).unwrap();
    assert_eq!(body["tool"], NAME);
    assert_eq!(body["call_id"], "call_0000000000000000");
    assert_eq!(body["requested_at"], b.now.0);
    assert!(
        b.log.is_empty(),
        "a call waiting for the host commits nothing"
    );
}

#[test]
fn workdir_defaults_to_the_project_directory() {
    let mut b = Bench::new();
    let out = b.call_with_host(NAME, json!({}), &[]);
    assert!(matches!(
        out.host,
        Some(HostRequest::SignalShutdown { ref workdir, .. }) if workdir == DEFAULT_WORKDIR
    ));
}

#[test]
fn a_written_signal_is_answered_and_audited() {
    let mut b = Bench::new();
    let at = b.now.0;
    let reply = [signalled("/srv/proj/.sdd/runtime/signals/SHUTDOWN")];
    let out = b.call_with_host(NAME, json!({"workdir": "/srv/proj"}), &reply);
    let v = out.result.clone().expect("signalled");
    assert_eq!(v["signalled"], true);
    assert_eq!(v["path"], "/srv/proj/.sdd/runtime/signals/SHUTDOWN");
    assert_eq!(v["signal_file"], SIGNAL_FILE);
    assert_eq!(v["requested_at"], at);
    assert_eq!(out.drafts.len(), 1);
    assert_eq!(out.drafts[0].stream, AUDIT_STREAM);
    assert_eq!(out.drafts[0].kind, SHUTDOWN_REQUESTED);
    let rec: ShutdownRequested = serde_json::from_value(out.drafts[0].body.clone()).unwrap();
    assert_eq!(rec.workdir, "/srv/proj");
    assert_eq!(rec.at, at);
    assert!(
        b.log.iter().any(|r| r.kind == SHUTDOWN_REQUESTED),
        "the record is committed"
    );
}

#[test]
fn a_barrier_refusal_keeps_its_reason_and_drafts_nothing() {
    let mut b = Bench::new();
    for reason in ["symlink_escape", "not_a_project", "workdir_not_found"] {
        let reply = [HostReply::Failed(HostFailure::Refused {
            reason: reason.into(),
            detail: "seen".into(),
        })];
        let out = b.call_with_host(NAME, json!({"workdir": "p"}), &reply);
        let e = out.result.unwrap_err();
        assert_eq!(e.error, reason);
        assert_eq!(e.message, "seen");
        assert_eq!(e.extra["workdir"], "p");
        assert!(out.drafts.is_empty());
    }
    let out = b.call_with_host(
        NAME,
        json!({}),
        &[HostReply::Failed(HostFailure::Unsupported)],
    );
    assert_eq!(out.result.unwrap_err().error, "host_unavailable");
    let out = b.call_with_host(NAME, json!({}), &[HostReply::Listing { entries: vec![] }]);
    assert_eq!(out.result.unwrap_err().error, "internal_error");
    assert!(!b.log.iter().any(|r| r.kind == SHUTDOWN_REQUESTED));
}

#[test]
fn malformed_workdirs_are_refused_before_any_host_call() {
    let mut b = Bench::new();
    let long = "a".repeat(MAX_PATH_BYTES + 2);
    let cases = [
        json!({"workdir": ""}),
        json!({"workdir": "   "}),
        json!({"workdir": "proj\u{0}x"}),
        json!({"workdir": "../other"}),
        json!({"workdir": "/srv/proj/../../etc"}),
        json!({"workdir": "proj\\..\\x"}),
        json!({"workdir": long}),
    ];
    for args in cases {
        let out = b.call_with_host(NAME, args.clone(), &[]);
        assert!(out.host.is_none(), "{args}: asked the host");
        assert_eq!(out.result.unwrap_err().error, "invalid_workdir", "{args}");
    }
    let exact = "a".repeat(MAX_PATH_BYTES);
    assert!(check_workdir(&exact).is_ok());
    assert!(
        check_workdir("proj/..x/y").is_ok(),
        "`..x` is a name, not a segment"
    );
    assert_eq!(
        b.refused(NAME, json!({"workdir": 7})).error,
        "invalid_arguments"
    );
    assert_eq!(
        b.refused(NAME, json!({"workdir": ".", "x": 1})).error,
        "invalid_arguments"
    );
}

#[test]
fn the_documented_record_example_parses() {
    let doc = include_str!("../../../../docs/RECORDS.md");
    let at = doc
        .find(&format!("`{SHUTDOWN_REQUESTED}`"))
        .expect("docs/RECORDS.md documents the shutdown record");
    let block = doc[at..]
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.lines().next())
        .expect("an example body");
    let rec: ShutdownRequested = serde_json::from_str(block).unwrap();
    let again = bernstein_core::canonical::to_canonical_bytes(&serde_json::to_value(&rec).unwrap())
        .unwrap();
    assert_eq!(String::from_utf8(again).unwrap(), block);
}
