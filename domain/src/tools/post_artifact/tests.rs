use super::*;
use crate::lifecycle::TaskStatus;
use crate::testkit::Bench;
use serde_json::json;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn report(b: &mut Bench, task: &str, key: &str, text: &str) -> ArtifactRecord {
    serde_json::from_value(b.ok(
        NAME,
        json!({"task_id": task, "key": key, "kind": "report", "content": text}),
    ))
    .unwrap()
}

#[test]
fn versions_chain_per_key_and_identical_content_is_idempotent() {
    let mut b = Bench::new();
    let t = b.start("work");
    let v1 = report(&mut b, &t, "reports/summary.md", "# First");
    assert_eq!(v1.version, 1);
    assert_eq!(v1.parent_lineage_head, Digest::ZERO.to_string());
    assert_eq!(v1.lineage_head, artifacts::lineage_hash(&v1));
    assert_eq!(
        v1.content_hash,
        Digest::of(br##"{"content":"# First","kind":"report"}"##).to_string()
    );
    assert_eq!(v1.run_id, t);
    let ledger_len = b.log.len();
    let again = b.call(
        NAME,
        json!({"task_id": t, "key": "reports/summary.md", "kind": "report", "content": "# First"}),
    );
    assert!(
        again.drafts.is_empty(),
        "an identical re-post records nothing"
    );
    assert_eq!(again.result.unwrap(), artifacts::record_value(&v1));
    assert_eq!(b.log.len(), ledger_len + 1, "only the call's audit record");
    let v2 = report(&mut b, &t, "reports/summary.md", "# Second");
    assert_eq!(v2.version, 2);
    assert_eq!(v2.parent_lineage_head, v1.lineage_head);
    let other = report(&mut b, &t, "reports/other.md", "# First");
    assert_eq!(other.version, 1);
    assert_eq!(other.content_hash, v1.content_hash);
    assert_ne!(other.lineage_head, v1.lineage_head);
    // Going back to older content is a new version, not a replay.
    let v3 = report(&mut b, &t, "reports/summary.md", "# First");
    assert_eq!(
        (v3.version, v3.content_hash.as_str()),
        (3, v1.content_hash.as_str())
    );
    let index = b.snapshot.domain.artifacts();
    assert_eq!(index.versions("reports/summary.md").len(), 3);
    assert_eq!(index.of_task(&t).count(), 4);
    assert_eq!(b.snapshot.domain.ignored_records(), 0);
    assert_eq!(b.status_of(&t), TaskStatus::Open);
    // The index is checkpointed with the projection.
    let text = serde_json::to_string(&b.snapshot.domain).unwrap();
    let back: crate::projection::Projection = serde_json::from_str(&text).unwrap();
    assert_eq!(back, b.snapshot.domain);
}

#[test]
fn records_that_do_not_continue_a_key_are_skipped_and_counted() {
    let mut b = Bench::new();
    let t = b.start("work");
    let other = b.start("other");
    let v1 = report(&mut b, &t, "k", "one");
    let skip = |r: ArtifactRecord| {
        bernstein_core::ledger::Draft::new("lineage", ARTIFACT_POSTED, artifacts::record_value(&r))
    };
    b.commit(vec![
        skip(ArtifactRecord {
            version: 3,
            ..v1.clone()
        }),
        skip(ArtifactRecord {
            version: 2,
            task_id: other.clone(),
            run_id: other.clone(),
            ..v1.clone()
        }),
        skip(ArtifactRecord {
            version: 2,
            run_id: other.clone(),
            ..v1.clone()
        }),
        skip(ArtifactRecord {
            key: "fresh".into(),
            task_id: "T-0123456789abcdef".into(),
            ..v1.clone()
        }),
        bernstein_core::ledger::Draft::new(
            "audit",
            ARTIFACT_MIRROR,
            serde_json::to_value(ArtifactRef::of(&v1)).unwrap(),
        ),
    ]);
    assert_eq!(b.snapshot.domain.ignored_records(), 5);
    assert_eq!(b.snapshot.domain.artifacts().versions("k").len(), 1);
    assert!(b.snapshot.domain.artifacts().versions("fresh").is_empty());
}

#[test]
fn one_post_writes_the_spine_the_journal_and_the_audit_chain() {
    let mut b = Bench::new();
    let t = b.start("work");
    let before = b.ok("bernstein_run_status", json!({"run_id": t}));
    let out = b.call(
        NAME,
        json!({"task_id": t, "key": "k", "kind": "link", "content": {"url": "https://ci.example/1", "label": "CI"}}),
    );
    let kinds: Vec<(&str, &str)> = out
        .drafts
        .iter()
        .map(|d| (d.stream.as_str(), d.kind.as_str()))
        .collect();
    let journal = format!("run:{t}");
    assert_eq!(
        kinds,
        [
            ("lineage", "artifact.posted"),
            (journal.as_str(), "run.artifact"),
            ("audit", "task.artifact")
        ]
    );
    assert_eq!(out.run_id.as_deref(), Some(t.as_str()));
    let v = &b.snapshot.domain.artifacts().versions("k")[0];
    assert!(v.journal_record.is_some() && v.audit_record.is_some());
    // The run produced something: its handle moves.
    let after = b.ok("bernstein_run_status", json!({"run_id": t}));
    assert_ne!(after["journalHead"], before["journalHead"]);
    assert_eq!(after["status"], "working");
}

#[test]
fn secrets_are_redacted_in_every_string_before_hashing() {
    let mut b = Bench::new();
    let t = b.start("work");
    let v: ArtifactRecord = serde_json::from_value(b.ok(
        NAME,
        json!({
            "task_id": t, "key": "t", "kind": "table", "title": "keys AKIAIOSFODNN7EXAMPLE",
            "content": {"columns": ["name", "value"], "rows": [["token", "ghp_abcdefghijklmnopqrstuvwxyz0123"]]}
        }),
    ))
    .unwrap();
    assert_eq!(v.redactions, 2);
    assert_eq!(v.redacted_kinds, ["aws_access_key", "github_token"]);
    assert_eq!(v.title.as_deref(), Some("keys [REDACTED:aws_access_key]"));
    assert_eq!(
        v.content_hash,
        artifacts::content_hash(v.kind, v.title.as_deref(), &v.content)
    );
    let text = String::from_utf8(b.ledger_bytes()).unwrap();
    assert!(!text.contains("AKIAIOSFODNN7EXAMPLE") && !text.contains("ghp_abcdefghij"));
}

#[test]
fn a_valid_trace_context_is_the_provenance_and_an_invalid_one_is_dropped() {
    let mut b = Bench::new();
    let t = b.start("work");
    b.meta = Some(
        json!({"traceparent": TRACEPARENT, "tracestate": "rojo=00f067aa0ba902b7", "baggage": "tenant=a%20b"}),
    );
    let v = report(&mut b, &t, "k", "one");
    let trace = v.trace.clone().unwrap();
    assert_eq!(trace.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(trace.parent_span, "00f067aa0ba902b7");
    assert_eq!(trace.tracestate.as_deref(), Some("rojo=00f067aa0ba902b7"));
    assert_eq!(trace.baggage.as_deref(), Some("tenant=a%20b"));
    let journal = b.log.iter().find(|r| r.kind == "run.artifact").unwrap();
    assert_eq!(journal.body["trace"]["trace_id"], trace.trace_id);
    b.meta = Some(
        json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "tracestate": "a=b"}),
    );
    let w = report(&mut b, &t, "k", "two");
    assert_eq!(w.trace, None);
    b.meta =
        Some(json!({"traceparent": TRACEPARENT, "tracestate": "BAD=1", "baggage": "no value"}));
    let x = report(&mut b, &t, "k", "three");
    let tx = x.trace.unwrap();
    assert_eq!((tx.tracestate, tx.baggage), (None, None));
}

#[test]
fn bad_posts_are_structured_refusals_that_record_nothing() {
    let mut b = Bench::new();
    let t = b.start("work");
    let other = b.start("another run");
    report(&mut b, &other, "theirs", "x");
    let big = "x".repeat(MAX_ARTIFACT_BYTES);
    let cases = vec![
        (
            json!({"task_id": t, "key": "k", "kind": "table", "content": "text"}),
            "invalid_arguments",
        ),
        (
            json!({"task_id": t, "key": "k", "kind": "report", "content": ""}),
            "invalid_arguments",
        ),
        (
            json!({"task_id": t, "key": "../k", "kind": "report", "content": "x"}),
            "invalid_arguments",
        ),
        (
            json!({"task_id": t, "key": "a b", "kind": "report", "content": "x"}),
            "invalid_arguments",
        ),
        (
            json!({"task_id": t, "key": "k", "kind": "report", "content": big}),
            "invalid_arguments",
        ),
        (
            json!({"task_id": t, "key": "k", "kind": "table", "content": {"columns": ["a"], "rows": [["1", "2"]]}}),
            "invalid_arguments",
        ),
        (
            json!({"task_id": t, "key": "k", "kind": "table", "content": {"columns": [], "rows": []}}),
            "invalid_arguments",
        ),
        (
            json!({"task_id": t, "key": "k", "kind": "link", "content": {"url": "file:///etc/passwd"}}),
            "invalid_arguments",
        ),
        (
            json!({"task_id": t, "key": "k", "kind": "link", "content": {"url": "https://a b"}}),
            "invalid_arguments",
        ),
        (
            json!({"task_id": t, "key": "k", "kind": "report", "content": "x", "poster": "a b"}),
            "invalid_arguments",
        ),
        (
            json!({"task_id": "T-0123", "key": "k", "kind": "report", "content": "x"}),
            "invalid_arguments",
        ),
        (
            json!({"task_id": "T-0123456789abcdef", "key": "k", "kind": "report", "content": "x"}),
            "unknown_task",
        ),
        (
            json!({"task_id": t, "key": "theirs", "kind": "report", "content": "x"}),
            "artifact_key_taken",
        ),
        (
            json!({"task_id": t, "key": "k", "kind": "report"}),
            "invalid_arguments",
        ),
    ];
    for (args, code) in cases {
        let e = b.refused(NAME, args.clone());
        assert_eq!(e.error, code, "{args}");
        assert!(!e.hint.is_empty());
    }
    b.force(&t, TaskStatus::Cancelled);
    let e = b.refused(
        NAME,
        json!({"task_id": t, "key": "k", "kind": "report", "content": "x"}),
    );
    assert_eq!(e.error, "task_finished");
    assert!(b.snapshot.domain.artifacts().versions("k").is_empty());
}
