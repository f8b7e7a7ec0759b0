//! Every string argument of every tool against docs/SECURITY.md's table of what each tool
//! records ("What each tool records"): the table lists exactly the string fields the advertised
//! input schemas have (array items and nested fields included), an identifier's shape there is
//! its schema's `pattern`, and five secret shapes written into each field never reach the
//! ledger: a redacted field replaces them, an identifier or path refuses the call with nothing
//! but its audit record written, and a field that is not recorded is not.

use serde_json::{Value, json};

use crate::testkit::Bench;
use bernstein_core::protocol::host::{HostFailure, HostReply};
use bernstein_core::protocol::registry::ToolOutput;

/// A secret shape: the value written, and the bytes of it that must never be recorded.
const SHAPES: &[(&str, &str)] = &[
    (
        "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
        "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
    ),
    (
        "sk-ant-api03-EXAMPLEexample0123456789_EXAMPLE-ex",
        "EXAMPLEexample0123456789_EXAMPLE-ex",
    ),
    ("password=hunter2x", "hunter2x"),
    (
        "Authorization: Bearer EXAMPLE0token0EXAMPLE",
        "EXAMPLE0token0EXAMPLE",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAexampleEXAMPLEexample\n-----END RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEAexampleEXAMPLEexample",
    ),
];

/// How the table says a field is recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Recorded {
    Redacted,
    /// An identifier: its kind (`task id`, `name`, `artifact key`) and its pattern.
    Identifier(String, String),
    Path,
    Nowhere,
}

/// The rows of docs/SECURITY.md's table: (tool, field, how it is recorded).
fn documented() -> Vec<(String, String, Recorded)> {
    let doc = include_str!("../../../docs/SECURITY.md");
    let section = doc
        .split("## What each tool records")
        .nth(1)
        .expect("SECURITY.md has the section")
        .split("\n## ")
        .next()
        .unwrap();
    let unquote = |s: &str| s.trim().trim_matches('`').to_string();
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').collect();
            assert_eq!(cells.len(), 3, "{l}");
            let how = cells[2].trim();
            let recorded = match how {
                "redacted" => Recorded::Redacted,
                "path" => Recorded::Path,
                "not recorded" => Recorded::Nowhere,
                _ => {
                    let rest = how
                        .strip_prefix("identifier: ")
                        .unwrap_or_else(|| panic!("unknown treatment in {l}"));
                    let (kind, pattern) = rest.split_once(" `").expect("a kind and a pattern");
                    Recorded::Identifier(kind.to_string(), pattern.trim_end_matches('`').into())
                }
            };
            (unquote(cells[0]), unquote(cells[1]), recorded)
        })
        .collect()
}

/// The string leaves of a schema, named as the table names them (`depends_on[]`,
/// `content.rows[][]`), with their schemas; enums are the server's words and are left out, a
/// free-form object is a leaf.
fn leaves(schema: &Value, path: String, out: &mut Vec<(String, Value)>) {
    if schema.get("enum").is_some() {
        return;
    }
    if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
        for b in branches {
            leaves(b, path.clone(), out);
        }
        return;
    }
    match schema["type"].as_str() {
        Some("string") => out.push((path, schema.clone())),
        Some("array") => leaves(&schema["items"], format!("{path}[]"), out),
        Some("object") => match schema.get("properties").and_then(Value::as_object) {
            Some(props) => {
                for (k, v) in props {
                    leaves(v, format!("{path}.{k}"), out);
                }
            }
            None => out.push((path, schema.clone())),
        },
        _ => {}
    }
}

/// Every string field of every registered tool: (tool, field, schema).
fn string_fields() -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for t in super::registered() {
        let schema = (t.input_schema)();
        let mut found = Vec::new();
        for (k, v) in schema["properties"].as_object().unwrap() {
            leaves(v, k.clone(), &mut found);
        }
        out.extend(found.into_iter().map(|(f, s)| (t.name.to_string(), f, s)));
    }
    out
}

#[test]
fn the_table_lists_every_string_field_with_its_schemas_shape() {
    let doc = documented();
    let fields = string_fields();
    let mut listed: Vec<(&str, &str)> = doc.iter().map(|(t, f, _)| (&**t, &**f)).collect();
    let mut walked: Vec<(&str, &str)> = fields.iter().map(|(t, f, _)| (&**t, &**f)).collect();
    listed.sort_unstable();
    walked.sort_unstable();
    assert_eq!(
        listed, walked,
        "docs/SECURITY.md's table against the schemas"
    );
    for (tool, field, schema) in &fields {
        let (_, _, how) = doc
            .iter()
            .find(|(t, f, _)| t == tool && f == field)
            .unwrap();
        let pattern = schema.get("pattern").and_then(Value::as_str);
        match how {
            Recorded::Identifier(kind, documented) => {
                assert_eq!(Some(documented.as_str()), pattern, "{tool} {field}");
                let shaped = match kind.as_str() {
                    "task id" => documented == "^T-[0-9a-f]{16}$",
                    "name" => documented.starts_with("^[A-Za-z0-9_.:-]{1,"),
                    "artifact key" => documented.starts_with("^[A-Za-z0-9_./-]{1,"),
                    _ => false,
                };
                assert!(shaped, "{tool} {field}: {kind} {documented}");
            }
            // Free text, paths and unrecorded values have no shape to state.
            _ => assert_eq!(pattern, None, "{tool} {field}"),
        }
    }
}

type Write = fn(&mut Bench, &str) -> ToolOutput;

fn claimed(b: &mut Bench) -> String {
    let t = b.start("t");
    b.ok("bernstein_claim", json!({"claimer_id": "w"}));
    t
}

fn artifact(b: &mut Bench, args: Value) -> ToolOutput {
    let t = b.start("t");
    let mut base = json!({"task_id": t, "key": "reports/r", "kind": "report", "content": "# r"});
    for (k, v) in args.as_object().unwrap() {
        base[k] = v.clone();
    }
    b.call("bernstein_post_artifact", base)
}

fn claim(b: &mut Bench, args: Value) -> ToolOutput {
    b.start("t");
    let mut base = json!({"claimer_id": "w"});
    for (k, v) in args.as_object().unwrap() {
        base[k] = v.clone();
    }
    b.call("bernstein_claim", base)
}

fn message(b: &mut Bench, args: Value) -> ToolOutput {
    let t = claimed(b);
    let mut base = json!({"task_id": t, "kind": "finding", "body": "b", "sender": "w"});
    for (k, v) in args.as_object().unwrap() {
        base[k] = v.clone();
    }
    b.call("bernstein_post_message", base)
}

fn scenario(b: &mut Bench, args: Value) -> ToolOutput {
    let not_found = [HostReply::Failed(HostFailure::NotFound)];
    b.call_with_host("bernstein_scenario", args, &not_found)
}

/// How to write a value into each field of the table, as the only unusual argument of an
/// otherwise good call.
const WRITERS: &[(&str, &str, Write)] = &[
    ("bernstein_run", "goal", |b, v| {
        b.call("bernstein_run", json!({"goal": v}))
    }),
    ("bernstein_run", "role", |b, v| {
        b.call("bernstein_run", json!({"goal": "g", "role": v}))
    }),
    ("bernstein_run", "parent_task_id", |b, v| {
        b.start("p");
        b.call("bernstein_run", json!({"goal": "g", "parent_task_id": v}))
    }),
    ("bernstein_run", "depends_on[]", |b, v| {
        let d = b.start("d");
        b.call("bernstein_run", json!({"goal": "g", "depends_on": [d, v]}))
    }),
    ("bernstein_run", "project", |b, v| {
        b.call("bernstein_run", json!({"goal": "g", "project": v}))
    }),
    ("bernstein_run", "capabilities[]", |b, v| {
        b.call(
            "bernstein_run",
            json!({"goal": "g", "capabilities": ["python", v]}),
        )
    }),
    ("bernstein_run_status", "run_id", |b, v| {
        b.start("r");
        b.call("bernstein_run_status", json!({"run_id": v}))
    }),
    ("bernstein_run_status", "since", |b, v| {
        let r = b.start("r");
        b.call("bernstein_run_status", json!({"run_id": r, "since": v}))
    }),
    ("bernstein_cancel", "task_id", |b, v| {
        b.start("t");
        b.call("bernstein_cancel", json!({"task_id": v}))
    }),
    ("bernstein_cancel", "reason", |b, v| {
        let t = b.start("t");
        b.call("bernstein_cancel", json!({"task_id": t, "reason": v}))
    }),
    ("bernstein_claim", "claimer_id", |b, v| {
        claim(b, json!({"claimer_id": v}))
    }),
    ("bernstein_claim", "role", |b, v| {
        claim(b, json!({"role": v}))
    }),
    ("bernstein_claim", "project", |b, v| {
        claim(b, json!({"project": v}))
    }),
    ("bernstein_claim", "capability", |b, v| {
        claim(b, json!({"capability": v}))
    }),
    ("bernstein_claim", "completed_ids[]", |b, v| {
        claim(b, json!({"completed_ids": [v]}))
    }),
    ("bernstein_claim", "claimer_card_fingerprint", |b, v| {
        claim(b, json!({"claimer_card_fingerprint": v}))
    }),
    ("bernstein_complete", "task_id", |b, v| {
        claimed(b);
        b.call(
            "bernstein_complete",
            json!({"task_id": v, "result_summary": "done"}),
        )
    }),
    ("bernstein_complete", "result_summary", |b, v| {
        let t = claimed(b);
        b.call(
            "bernstein_complete",
            json!({"task_id": t, "result_summary": v}),
        )
    }),
    ("bernstein_complete", "claimer_id", |b, v| {
        let t = claimed(b);
        b.call(
            "bernstein_complete",
            json!({"task_id": t, "result_summary": "done", "claimer_id": v}),
        )
    }),
    ("bernstein_approve", "task_id", |b, v| {
        b.call("bernstein_approve", json!({"task_id": v}))
    }),
    ("bernstein_approve", "note", |b, v| {
        let t = Bench::id_of(&b.ok(
            "bernstein_run",
            json!({"goal": "t", "requires_approval": true}),
        ));
        b.ok(
            "bernstein_complete",
            json!({"task_id": t, "result_summary": "done"}),
        );
        b.call("bernstein_approve", json!({"task_id": t, "note": v}))
    }),
    ("bernstein_post_message", "task_id", |b, v| {
        message(b, json!({"task_id": v}))
    }),
    ("bernstein_post_message", "body", |b, v| {
        message(b, json!({"body": v}))
    }),
    ("bernstein_post_message", "sender", |b, v| {
        message(b, json!({"sender": v}))
    }),
    (
        "bernstein_post_message",
        "sender_card_fingerprint",
        |b, v| message(b, json!({"sender_card_fingerprint": v})),
    ),
    ("bernstein_post_artifact", "task_id", |b, v| {
        artifact(b, json!({"task_id": v}))
    }),
    ("bernstein_post_artifact", "key", |b, v| {
        artifact(b, json!({"key": v}))
    }),
    ("bernstein_post_artifact", "title", |b, v| {
        artifact(b, json!({"title": v}))
    }),
    ("bernstein_post_artifact", "content", |b, v| {
        artifact(b, json!({"content": v}))
    }),
    ("bernstein_post_artifact", "content.columns[]", |b, v| {
        artifact(
            b,
            json!({"kind": "table", "content": {"columns": [v], "rows": [["x"]]}}),
        )
    }),
    ("bernstein_post_artifact", "content.rows[][]", |b, v| {
        artifact(
            b,
            json!({"kind": "table", "content": {"columns": ["c"], "rows": [[v]]}}),
        )
    }),
    ("bernstein_post_artifact", "content.url", |b, v| {
        let url = format!("https://ci.example/{v}");
        artifact(b, json!({"kind": "link", "content": {"url": url}}))
    }),
    ("bernstein_post_artifact", "content.label", |b, v| {
        artifact(
            b,
            json!({"kind": "link", "content": {"url": "https://ci.example/1", "label": v}}),
        )
    }),
    ("bernstein_post_artifact", "poster", |b, v| {
        artifact(b, json!({"poster": v}))
    }),
    ("bernstein_task_capsule", "task_id", |b, v| {
        b.start("t");
        b.call("bernstein_task_capsule", json!({"task_id": v}))
    }),
    ("bernstein_task_capsule", "capsule", |b, v| {
        let t = b.start("t");
        b.call(
            "bernstein_task_capsule",
            json!({"task_id": t, "verify": true, "capsule": {"task_id": t, "note": v}}),
        )
    }),
    ("bernstein_verify_lineage", "artefact_path", |b, v| {
        b.call("bernstein_verify_lineage", json!({"artefact_path": v}))
    }),
    ("bernstein_shutdown_orchestrator", "workdir", |b, v| {
        let done = [HostReply::Signalled {
            path: format!("/srv/{v}/.sdd/runtime/signals/SHUTDOWN"),
        }];
        b.call_with_host(
            "bernstein_shutdown_orchestrator",
            json!({"workdir": v}),
            &done,
        )
    }),
    ("load_skill", "name", |b, v| {
        b.call("load_skill", json!({"name": v}))
    }),
    ("load_skill", "reference", |b, v| {
        b.call("load_skill", json!({"name": "s", "reference": v}))
    }),
    ("load_skill", "script", |b, v| {
        b.call("load_skill", json!({"name": "s", "script": v}))
    }),
    ("bernstein_scenario", "scenario_id", |b, v| {
        scenario(b, json!({"action": "run", "scenario_id": v}))
    }),
    ("bernstein_scenario", "context", |b, v| {
        scenario(
            b,
            json!({"action": "run", "scenario_id": "docs-sync", "context": v}),
        )
    }),
    ("bernstein_scenario", "run_id", |b, v| {
        b.start("r");
        b.call(
            "bernstein_scenario",
            json!({"action": "status", "run_id": v}),
        )
    }),
];

fn writer(tool: &str, field: &str) -> Write {
    WRITERS
        .iter()
        .find(|(t, f, _)| *t == tool && *f == field)
        .unwrap_or_else(|| panic!("no writer for {tool} {field}"))
        .2
}

/// The refusal of an identifier: `invalid_arguments` naming the argument, the value not
/// repeated.
fn assert_refused(out: &ToolOutput, field: &str, secret: &str, what: &str) {
    let e = out
        .result
        .as_ref()
        .err()
        .unwrap_or_else(|| panic!("{what}: accepted"));
    assert_eq!(e.error, "invalid_arguments", "{what}: {e:?}");
    let argument = field.split(['.', '[']).next().unwrap();
    assert_eq!(crate::testkit::argument(e), argument, "{what}: {e:?}");
    let said = e.to_value().to_string();
    assert!(
        !said.contains(secret),
        "{what}: the refusal repeats it: {said}"
    );
}

#[test]
fn no_secret_shape_in_any_field_reaches_the_ledger() {
    let doc = documented();
    for (tool, field, _) in WRITERS {
        assert!(
            doc.iter().any(|(t, f, _)| t == tool && f == field),
            "{tool} {field} is not in the table"
        );
    }
    for (tool, field, how) in &doc {
        let write = writer(tool, field);
        for (value, secret) in SHAPES {
            let what = format!("{tool} {field} = {value:?}");
            let mut b = Bench::new();
            let out = write(&mut b, value);
            let ledger = String::from_utf8(b.ledger_bytes()).unwrap();
            assert!(!ledger.contains(secret), "{what}: the ledger holds it");
            match how {
                Recorded::Redacted => match &out.result {
                    Ok(answer) => {
                        assert!(ledger.contains("[REDACTED:"), "{what}: no placeholder");
                        assert!(!answer.to_string().contains(secret), "{what}: {answer}");
                    }
                    // Only a value the field's own rules refuse (a URL with a blank), never
                    // a token a field of free text may hold.
                    Err(e) => {
                        assert!(!value.starts_with("ghp_"), "{what}: refused: {e:?}");
                        assert_eq!(e.error, "invalid_arguments", "{what}");
                    }
                },
                Recorded::Identifier(..) | Recorded::Path => {
                    assert_refused(&out, field, secret, &what);
                    let e = out.result.as_ref().unwrap_err();
                    assert!(e.message.contains("looks like a secret"), "{what}: {e:?}");
                }
                Recorded::Nowhere => {}
            }
            if out.result.is_err() && out.host.is_none() {
                // A refusal writes its audit record and nothing else.
                let kinds: Vec<&str> = b.log.iter().map(|r| r.kind.as_str()).collect();
                let tail = kinds.last().copied();
                assert_eq!(tail, Some(crate::records::STATELESS_CALL), "{what}");
            }
        }
    }
}

#[test]
fn every_identifier_refuses_a_value_of_the_wrong_shape() {
    for (tool, field, how) in documented() {
        let malformed = match &how {
            Recorded::Identifier(kind, _) => match kind.as_str() {
                "task id" => "T-0123",
                "name" => "a b",
                "artifact key" => "../x",
                other => panic!("{tool} {field}: unknown kind {other}"),
            },
            _ => continue,
        };
        let mut b = Bench::new();
        let out = writer(&tool, &field)(&mut b, malformed);
        let what = format!("{tool} {field} = {malformed:?}");
        let e = out
            .result
            .as_ref()
            .err()
            .unwrap_or_else(|| panic!("{what}: accepted"));
        assert_eq!(e.error, "invalid_arguments", "{what}: {e:?}");
        assert_eq!(
            crate::testkit::argument(e),
            field.split(['.', '[']).next().unwrap(),
            "{what}"
        );
    }
}
