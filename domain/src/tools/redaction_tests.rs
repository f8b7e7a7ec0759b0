//! Every documented DLP example (docs/RECORDS.md §7) through every free-text field a tool or
//! operator command writes, on the real handlers: no secret byte sequence reaches the ledger or
//! the answer, and both say per field what was replaced.

use serde_json::{Value, json};

use crate::dlp::tests::{documented_examples, secret_of};
use crate::operator;
use crate::plans::{self, PlanDecision};
use crate::testkit::Bench;
use bernstein_core::protocol::host::{HostFailure, HostReply};

/// A free-text field: how to write `text` through it, where the answer counts it, and which
/// records must carry it redacted (record kind, body field).
struct Field {
    name: &'static str,
    answer_key: Option<&'static str>,
    records: &'static [(&'static str, &'static str)],
    write: fn(&mut Bench, &str) -> Value,
}

fn claimed(b: &mut Bench, goal: &str) -> String {
    let t = b.start(goal);
    b.ok("bernstein_claim", json!({"claimer_id": "w"}));
    t
}

fn artifact(b: &mut Bench, kind: &str, content: Value, title: Option<&str>) -> Value {
    let t = b.start("t");
    let mut args = json!({"task_id": t, "key": "reports/r", "kind": kind, "content": content});
    if let Some(title) = title {
        args["title"] = json!(title);
    }
    b.ok("bernstein_post_artifact", args)
}

fn plan_root(b: &mut Bench) -> (String, String) {
    let root = Bench::id_of(&b.ok("bernstein_run", json!({"goal": "the plan", "plan": true})));
    let hash = plans::document(&b.snapshot.domain, &root).unwrap().hash();
    (root, hash)
}

const FIELDS: &[Field] = &[
    Field {
        name: "bernstein_run goal",
        answer_key: Some("goal"),
        records: &[("task.created", "goal")],
        write: |b, text| b.ok("bernstein_run", json!({"goal": text})),
    },
    Field {
        name: "bernstein_run goal of a plan",
        answer_key: Some("goal"),
        records: &[("task.created", "goal")],
        write: |b, text| b.ok("bernstein_run", json!({"goal": text, "plan": true})),
    },
    Field {
        name: "bernstein_run goal of a subtask",
        answer_key: Some("goal"),
        records: &[("task.created", "goal")],
        write: |b, text| {
            let p = b.start("parent");
            b.ok("bernstein_run", json!({"goal": text, "parent_task_id": p}))
        },
    },
    Field {
        name: "bernstein_complete result_summary",
        answer_key: Some("result_summary"),
        records: &[("task.status", "summary"), ("run.task_status", "summary")],
        write: |b, text| {
            let t = claimed(b, "t");
            b.ok(
                "bernstein_complete",
                json!({"task_id": t, "result_summary": text, "claimer_id": "w"}),
            )
        },
    },
    Field {
        name: "bernstein_approve note",
        answer_key: Some("note"),
        records: &[("task.status", "summary"), ("run.task_status", "summary")],
        write: |b, text| {
            let t = Bench::id_of(&b.ok(
                "bernstein_run",
                json!({"goal": "t", "requires_approval": true}),
            ));
            b.ok(
                "bernstein_complete",
                json!({"task_id": t, "result_summary": "done"}),
            );
            b.ok("bernstein_approve", json!({"task_id": t, "note": text}))
        },
    },
    Field {
        name: "bernstein_cancel reason",
        answer_key: Some("reason"),
        records: &[
            ("task.status", "reason"),
            ("run.task_status", "reason"),
            ("run.cancelled", "reason"),
        ],
        write: |b, text| {
            let t = b.start("t");
            b.ok("bernstein_cancel", json!({"task_id": t, "reason": text}))
        },
    },
    Field {
        name: "bernstein_post_message body",
        answer_key: None,
        records: &[("mailbox.message", "body")],
        write: |b, text| {
            let t = b.start("t");
            b.ok(
                "bernstein_post_message",
                json!({"task_id": t, "kind": "finding", "body": text}),
            )
        },
    },
    Field {
        name: "bernstein_post_message body as a failure reason",
        answer_key: None,
        records: &[("mailbox.message", "body")],
        write: |b, text| {
            let t = claimed(b, "t");
            b.ok(
                "bernstein_post_message",
                json!({"task_id": t, "kind": "finding", "body": text, "sender": "w", "status": "failed"}),
            )
        },
    },
    Field {
        name: "bernstein_post_artifact report",
        answer_key: None,
        records: &[],
        write: |b, text| artifact(b, "report", json!(text), None),
    },
    Field {
        name: "bernstein_post_artifact title",
        answer_key: None,
        records: &[],
        write: |b, text| artifact(b, "report", json!("# r"), Some(text)),
    },
    Field {
        name: "bernstein_post_artifact table cell",
        answer_key: None,
        records: &[],
        write: |b, text| {
            artifact(
                b,
                "table",
                json!({"columns": ["c"], "rows": [[text]]}),
                None,
            )
        },
    },
    Field {
        name: "bernstein_post_artifact link label",
        answer_key: None,
        records: &[],
        write: |b, text| {
            artifact(
                b,
                "link",
                json!({"url": "https://ci.example/1", "label": text}),
                None,
            )
        },
    },
    Field {
        name: "bernstein_scenario context",
        answer_key: Some("context"),
        records: &[("task.created", "goal")],
        write: |b, text| {
            let out = b.ok_with_host(
                "bernstein_scenario",
                json!({"action": "run", "scenario_id": "docs-sync", "context": text}),
                &[HostReply::Failed(HostFailure::NotFound)],
            );
            out["run"].clone()
        },
    },
    Field {
        name: "bernstein task cancel reason",
        answer_key: Some("reason"),
        records: &[("task.status", "reason"), ("operator.command", "reason")],
        write: |b, text| {
            let t = b.start("t");
            let out = operator::cancel_task(&b.snapshot, &b.config, b.now, &t, Some(text)).unwrap();
            b.commit(out.drafts);
            out.answer
        },
    },
    Field {
        name: "bernstein plan reject reason",
        answer_key: Some("reason"),
        records: &[
            ("task.status", "reason"),
            ("run.cancelled", "reason"),
            ("operator.command", "reason"),
        ],
        write: |b, text| {
            let (root, hash) = plan_root(b);
            let out = operator::decide_plan(
                &b.snapshot,
                b.now,
                &root,
                &hash,
                PlanDecision::Reject,
                Some(text),
            )
            .unwrap();
            b.commit(out.drafts);
            out.answer
        },
    },
];

/// Every 10-byte window of `secret` as it would appear in JSON text, except all-hex ones
/// (digests and ids are made of those).
fn windows(secret: &str) -> Vec<String> {
    let escaped = serde_json::to_string(secret).unwrap();
    let escaped = &escaped[1..escaped.len() - 1];
    let b = escaped.as_bytes();
    if b.len() <= 10 {
        return vec![escaped.to_string()];
    }
    (0..=b.len() - 10)
        .filter_map(|i| std::str::from_utf8(&b[i..i + 10]).ok())
        .filter(|w| !w.bytes().all(|c| c.is_ascii_hexdigit()))
        .map(str::to_string)
        .collect()
}

/// A window of `secret` in `haystack` that the same call without the secret does not write
/// (`baseline`: the PEM framing of the server's own public key is no leak).
fn leaks(haystack: &str, baseline: &str, secret: &str) -> Option<String> {
    windows(secret)
        .into_iter()
        .find(|w| haystack.contains(w) && !baseline.contains(w))
}

/// Whether `body` counts a replacement of `kind` in `field` (`redactions` is an object on the
/// task records, a number on signed mailbox entries and artifacts).
fn counted(body: &Value, field: &str, kind: &str) -> bool {
    let n = match &body["redactions"] {
        Value::Object(m) => m.get(field).and_then(Value::as_u64).unwrap_or(0),
        other => other.as_u64().unwrap_or(0),
    };
    n >= 1
        && body["redacted_kinds"]
            .as_array()
            .is_some_and(|k| k.contains(&json!(kind)))
}

#[test]
fn every_documented_secret_is_redacted_in_every_field() {
    let examples = documented_examples();
    let mut checked = 0;
    for field in FIELDS {
        let mut b = Bench::new();
        let answer = (field.write)(&mut b, "first line\nlast line");
        let baseline = String::from_utf8(b.ledger_bytes()).unwrap() + &answer.to_string();
        for (kind, example, recorded) in &examples {
            let secret = secret_of(example, recorded);
            let text = format!("first line\n{example}\nlast line");
            let mut b = Bench::new();
            let answer = (field.write)(&mut b, &text);
            let ledger = String::from_utf8(b.ledger_bytes()).unwrap();
            let what = format!("{} with {kind} {example:?}", field.name);
            if let Some(w) = leaks(&ledger, &baseline, &secret) {
                panic!("{what}: the ledger holds {w:?}");
            }
            if let Some(w) = leaks(&answer.to_string(), &baseline, &secret) {
                panic!("{what}: the answer holds {w:?}");
            }
            let placeholder = format!("[REDACTED:{kind}]");
            assert!(ledger.contains(&placeholder), "{what}: no placeholder");
            match field.answer_key {
                Some(key) => assert!(counted(&answer, key, kind), "{what}: answer {answer}"),
                None => assert!(counted(&answer, "", kind), "{what}: answer {answer}"),
            }
            for (record, body_field) in field.records {
                let bodies: Vec<&Value> = b
                    .log
                    .iter()
                    .filter(|r| r.kind == *record)
                    .map(|r| &r.body)
                    .filter(|v| {
                        v[body_field]
                            .as_str()
                            .is_some_and(|s| s.contains(&placeholder))
                    })
                    .collect();
                assert!(
                    !bodies.is_empty(),
                    "{what}: no {record} with a redacted {body_field}"
                );
                for body in bodies {
                    assert!(counted(body, body_field, kind), "{what}: {record} {body}");
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, FIELDS.len() * examples.len());
}

#[test]
fn text_without_secrets_is_recorded_as_given_and_answers_say_nothing() {
    for (field, harmless) in FIELDS.iter().flat_map(|f| {
        crate::dlp::tests::documented_harmless()
            .into_iter()
            .map(move |h| (f, h))
    }) {
        let mut b = Bench::new();
        let answer = (field.write)(&mut b, &harmless);
        assert!(
            answer.get("redacted_kinds").is_none(),
            "{}: {answer}",
            field.name
        );
        for r in &b.log {
            assert!(
                r.body.get("redacted_kinds").is_none(),
                "{}: {:?}",
                field.name,
                r.body
            );
        }
        let ledger = String::from_utf8(b.ledger_bytes()).unwrap();
        assert!(!ledger.contains("[REDACTED:"), "{}", field.name);
    }
}
