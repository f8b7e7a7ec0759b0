use super::*;
use crate::artifacts::{ArtifactRecord, ArtifactRef, record_value};
use crate::testkit::Bench;
use bernstein_core::ledger::Draft;
use bernstein_core::protocol::registry::ToolOutput;
use serde_json::{Value, json};

fn post(b: &mut Bench, task: &str, key: &str, text: &str) -> Value {
    b.ok(
        "bernstein_post_artifact",
        json!({"task_id": task, "key": key, "kind": "report", "content": text}),
    )
}

fn call_with_host(b: &Bench, args: Value, host: &[HostReply]) -> ToolOutput {
    let ctx = ToolContext {
        snapshot: &b.snapshot,
        config: &b.config,
        now: b.now,
        call_id: "c",
        trace_id: "t",
        span_id: "s",
        spec_revision: "2025-11-25",
        host,
        meta: None,
        input: &bernstein_core::protocol::input::NO_INPUT,
        task: None,
    };
    crate::tools::call::<VerifyLineage>(&ctx, args)
}

#[test]
fn a_posted_chain_verifies_with_every_version_and_its_provenance() {
    let mut b = Bench::new();
    let t = b.start("work");
    let v1 = post(&mut b, &t, "docs/report.md", "one");
    b.meta =
        Some(json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}));
    let v2 = post(&mut b, &t, "docs/report.md", "two");
    b.meta = None;
    let r: LineageReport =
        serde_json::from_value(b.ok(NAME, json!({"artefact_path": "docs/report.md"}))).unwrap();
    assert!(r.valid, "{:?}", r.problems);
    assert_eq!(r.versions.len(), 2);
    assert_eq!(r.head, v2["lineage_head"]);
    assert_eq!(r.versions[1].parent_lineage_head, v1["lineage_head"]);
    assert_eq!(
        r.trace.as_ref().unwrap().trace_id,
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert!(r.versions[0].trace.is_none() && r.versions[0].step_id.is_none());
    assert_eq!(
        r.versions[1].step_id.as_deref(),
        Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        "the traceparent, whole, is the lineage entry's step_id"
    );
    assert!(
        r.versions
            .iter()
            .all(|v| v.audit_record.is_some() && v.journal_record.is_some())
    );
    let first: LineageReport =
        serde_json::from_value(b.ok(NAME, json!({"artefact_path": "docs/report.md@1"}))).unwrap();
    assert!(first.valid);
    assert_eq!(
        (first.versions.len(), first.head.as_str()),
        (1, v1["lineage_head"].as_str().unwrap())
    );
    assert_eq!(first.requested_version, Some(1));
    let beyond: LineageReport =
        serde_json::from_value(b.ok(NAME, json!({"artefact_path": "docs/report.md@3"}))).unwrap();
    assert!(!beyond.valid);
    let unknown: LineageReport =
        serde_json::from_value(b.ok(NAME, json!({"artefact_path": "nothing"}))).unwrap();
    assert!(!unknown.valid && unknown.versions.is_empty());
    for bad in ["", "../x", "a@0", "/abs"] {
        assert_eq!(
            b.refused(NAME, json!({"artefact_path": bad})).error,
            "invalid_arguments",
            "{bad}"
        );
    }
}

/// Commits `record` as a post would, with or without its journal and audit records.
fn commit_forged(b: &mut Bench, record: &ArtifactRecord, refs: bool) {
    let mut drafts = vec![Draft::new(
        "lineage",
        "artifact.posted",
        record_value(record),
    )];
    if refs {
        let r = serde_json::to_value(ArtifactRef::of(record)).unwrap();
        drafts.push(Draft::new(
            format!("run:{}", record.run_id),
            "run.artifact",
            r.clone(),
        ));
        drafts.push(Draft::new("audit", "task.artifact", r));
    }
    b.commit(drafts);
}

#[test]
fn tampered_links_are_named() {
    let mut b = Bench::new();
    let t = b.start("work");
    let v1: ArtifactRecord = serde_json::from_value(post(&mut b, &t, "k", "one")).unwrap();
    // Version 2 with altered content but the original hashes: content_hash fails.
    let mut forged = crate::artifacts::seal(ArtifactRecord {
        version: 2,
        parent_lineage_head: v1.lineage_head.clone(),
        content: crate::artifacts::ArtifactContent::Text("two".into()),
        ..v1.clone()
    });
    forged.content = crate::artifacts::ArtifactContent::Text("tw0".into());
    commit_forged(&mut b, &forged, true);
    // Version 3 pointing at the wrong parent, and never journaled nor mirrored.
    let orphan = crate::artifacts::seal(ArtifactRecord {
        version: 3,
        parent_lineage_head: v1.lineage_head.clone(),
        ..v1.clone()
    });
    commit_forged(&mut b, &orphan, false);
    let r: LineageReport =
        serde_json::from_value(b.ok(NAME, json!({"artefact_path": "k"}))).unwrap();
    assert!(!r.valid);
    let text = r.problems.join("\n");
    assert!(text.contains("k@2: content_hash"), "{text}");
    assert!(text.contains("k@3: parent_lineage_head"), "{text}");
    assert!(text.contains("k@3: no run.artifact"), "{text}");
    assert!(text.contains("k@3: no task.artifact"), "{text}");
    assert!(!text.contains("k@1"), "{text}");
    let upto1: LineageReport =
        serde_json::from_value(b.ok(NAME, json!({"artefact_path": "k@1"}))).unwrap();
    assert!(upto1.valid, "{:?}", upto1.problems);
}

#[test]
fn check_file_asks_the_host_and_compares_the_newest_report() {
    let mut b = Bench::new();
    let t = b.start("work");
    post(&mut b, &t, "out/notes.md", "hello\n");
    let args = json!({"artefact_path": "out/notes.md", "check_file": true});
    let first = call_with_host(&b, args.clone(), &[]);
    assert_eq!(
        first.host,
        Some(HostRequest::Read {
            path: "out/notes.md".into(),
            max_bytes: MAX_HOST_READ_BYTES,
            within: None,
        })
    );
    let same = call_with_host(
        &b,
        args.clone(),
        &[HostReply::File {
            text: "hello\n".into(),
        }],
    );
    let r: LineageReport = serde_json::from_value(same.result.unwrap()).unwrap();
    let f = r.file.unwrap();
    assert!(f.matches_newest);
    assert_eq!(f.sha256, Some(Digest::of(b"hello\n").to_string()));
    let changed = call_with_host(
        &b,
        args.clone(),
        &[HostReply::File {
            text: "hello".into(),
        }],
    );
    let r: LineageReport = serde_json::from_value(changed.result.unwrap()).unwrap();
    assert!(!r.file.unwrap().matches_newest);
    assert!(r.valid, "the ledger chain is still valid");
    let missing = call_with_host(&b, args, &[HostReply::Failed(HostFailure::NotFound)]);
    let r: LineageReport = serde_json::from_value(missing.result.unwrap()).unwrap();
    assert_eq!(
        r.file.unwrap().note.as_deref(),
        Some("no file at this path")
    );
    // Without check_file the host is never asked.
    let plain = call_with_host(&b, json!({"artefact_path": "out/notes.md"}), &[]);
    assert!(plain.host.is_none() && plain.result.is_ok());
}

#[test]
fn check_file_refuses_unrecorded_hidden_and_escaping_paths() {
    let mut b = Bench::new();
    let t = b.start("work");
    post(&mut b, &t, "out/notes.md", "hello\n");
    post(&mut b, &t, ".env", "SECRET=1\n");
    post(&mut b, &t, "out/.sdd/x", "x");
    let refused = |b: &Bench, path: &str, replies: &[HostReply]| {
        let out = call_with_host(
            b,
            json!({"artefact_path": path, "check_file": true}),
            replies,
        );
        assert!(out.host.is_none(), "{path}: asked the host");
        out.result.unwrap_err()
    };
    // Never recorded: refused before any read, whatever the path.
    for path in ["README.md", "out/other.md"] {
        let e = refused(&b, path, &[]);
        assert_eq!(e.error, "file_not_recorded", "{path}");
        assert!(e.message.contains(path), "{}", e.message);
    }
    // Hidden segments, recorded or not: .sdd (ledger, keys), .env, .git.
    for path in [
        ".sdd/keys/audit.key",
        ".sdd/keys/signing.ed25519",
        ".env",
        "out/.sdd/x",
        ".git/config",
    ] {
        assert_eq!(refused(&b, path, &[]).error, "private_path", "{path}");
    }
    // The runtime saw a symlink out of the project or into .sdd.
    for (failure, code) in [
        (HostFailure::Escapes, "path_escapes"),
        (HostFailure::Private, "private_path"),
    ] {
        let e = refused(&b, "out/notes.md", &[HostReply::Failed(failure)]);
        assert_eq!(e.error, code);
    }
}
