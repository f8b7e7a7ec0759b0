use serde_json::json;

use super::*;
use crate::runs::RunStatus;
use crate::testkit::Bench;

const NOT_FOUND: HostReply = HostReply::Failed(HostFailure::NotFound);

fn file(text: &str) -> HostReply {
    HostReply::File { text: text.into() }
}

fn listing(names: &[&str]) -> HostReply {
    HostReply::Listing {
        entries: names
            .iter()
            .map(|n| bernstein_core::protocol::host::DirEntry {
                name: n.to_string(),
                kind: EntryKind::File,
                size: 1,
                target: None,
            })
            .collect(),
    }
}

const NIGHTLY: &str = r#"{"id":"nightly","name":"Nightly","description":"Every night.","tasks":[{"title":"Sweep","role":"qa","priority":1},{"title":"Report","description":"Write it up."}]}"#;

#[test]
fn list_merges_builtins_and_project_files() {
    let mut b = Bench::new();
    let out = b.call_with_host(NAME, json!({"action": "list"}), &[]);
    assert_eq!(
        out.host,
        Some(HostRequest::List {
            path: scenarios::PROJECT_DIR.into(),
            within: None,
        })
    );
    let dir = listing(&["notes.md", "nightly.json", "docs-sync.json", "bad.json"]);
    let out = b.call_with_host(NAME, json!({"action": "list"}), std::slice::from_ref(&dir));
    assert!(
        matches!(out.host, Some(HostRequest::Read { ref path, .. }) if path == "templates/scenarios/bad.json")
    );
    let docs = r#"{"id":"docs-sync","name":"Our docs","tasks":[{"title":"t"}]}"#;
    let replies = [dir, file("{"), file(docs), file(NIGHTLY)];
    let v = b.ok_with_host(NAME, json!({"action": "list"}), &replies);
    assert_eq!(v["action"], "list");
    assert_eq!(v["truncated"], false);
    let ids: Vec<(&str, &str)> = v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_str().unwrap(), s["source"].as_str().unwrap()))
        .collect();
    assert_eq!(
        ids,
        [
            ("dependency-audit", "builtin"),
            ("docs-sync", "project"),
            ("nightly", "project"),
            ("test-coverage-boost", "builtin")
        ]
    );
    assert_eq!(v["problems"][0]["file"], "templates/scenarios/bad.json");
    // No project folder: the built-ins alone.
    let v = b.ok_with_host(NAME, json!({"action": "list"}), &[NOT_FOUND]);
    assert_eq!(v["scenarios"].as_array().unwrap().len(), 3);
}

#[test]
fn a_file_named_after_another_id_is_a_problem() {
    let mut b = Bench::new();
    let replies = [listing(&["other.json"]), file(NIGHTLY)];
    let v = b.ok_with_host(NAME, json!({"action": "list"}), &replies);
    assert!(
        v["problems"][0]["problem"]
            .as_str()
            .unwrap()
            .contains("nightly.json")
    );
}

#[test]
fn run_creates_every_task_in_one_run() {
    let mut b = Bench::new();
    let args = json!({"action": "run", "scenario_id": "nightly", "context": "PR #7"});
    let out = b.call_with_host(NAME, args.clone(), &[]);
    assert!(
        matches!(out.host, Some(HostRequest::Read { ref path, .. }) if path == "templates/scenarios/nightly.json")
    );
    let out = b.call_with_host(NAME, args, &[file(NIGHTLY)]);
    let v = out.result.unwrap();
    let run = &v["run"];
    let root = run["run_id"].as_str().unwrap().to_string();
    assert_eq!(run["task_id"], root.as_str());
    assert_eq!(run["source"], "project");
    assert_eq!(run["status"], "waiting_for_subtasks");
    assert_eq!(run["poll_after_ms"], POLL_AFTER_MS);
    assert_eq!(out.run_id.as_deref(), Some(root.as_str()));
    let tasks = run["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    let p = &b.snapshot.domain;
    let sweep = p.task(tasks[0]["task_id"].as_str().unwrap()).unwrap();
    assert_eq!((sweep.role.as_str(), sweep.priority), ("qa", 1));
    assert_eq!(sweep.rare.parent_id.as_deref(), Some(root.as_str()));
    assert!(sweep.goal.contains("Context: PR #7"));
    let report = p.task(tasks[1]["task_id"].as_str().unwrap()).unwrap();
    assert_eq!(report.status, TaskStatus::Open);
    assert!(report.goal.contains("Write it up."));
    assert_eq!(p.task(&root).unwrap().rare.children.len(), 2);
    assert_eq!(p.run(&root).unwrap().status(), RunStatus::Working);
    // Polled like any run, and `status` answers the same handle.
    let polled = b.ok("bernstein_run_status", json!({"run_id": root}));
    let status = b.ok_with_host(NAME, json!({"action": "status", "run_id": root}), &[]);
    assert_eq!(status["handle"], polled);
}

#[test]
fn run_falls_back_to_a_builtin_and_refuses_unknown_ids() {
    let mut b = Bench::new();
    let v = b.ok_with_host(
        NAME,
        json!({"action": "run", "scenario_id": "docs-sync"}),
        &[NOT_FOUND],
    );
    assert_eq!(v["run"]["source"], "builtin");
    assert_eq!(v["run"]["tasks"].as_array().unwrap().len(), 2);
    let before = b.log.len();
    let out = b.call_with_host(
        NAME,
        json!({"action": "run", "scenario_id": "nope"}),
        &[NOT_FOUND],
    );
    assert_eq!(out.result.unwrap_err().error, "unknown_scenario");
    let out = b.call_with_host(
        NAME,
        json!({"action": "run", "scenario_id": "nightly"}),
        &[file(r#"{"id":"nightly","name":"N","tasks":[]}"#)],
    );
    assert_eq!(out.result.unwrap_err().error, "invalid_scenario");
    let out = b.call_with_host(
        NAME,
        json!({"action": "run", "scenario_id": "nightly"}),
        &[HostReply::Failed(HostFailure::Escapes)],
    );
    assert_eq!(out.result.unwrap_err().error, "path_escapes");
    // Three refused calls: each committed only the bench's audit record.
    assert_eq!(b.log.len(), before + 3);
}

#[test]
fn arguments_are_checked_before_any_host_call() {
    let mut b = Bench::new();
    for (args, field) in [
        (json!({"action": "run"}), "scenario_id"),
        (
            json!({"action": "run", "scenario_id": "../x"}),
            "scenario_id",
        ),
        (
            json!({"action": "run", "scenario_id": "a/b"}),
            "scenario_id",
        ),
        (json!({"action": "status"}), "run_id"),
    ] {
        let out = b.call_with_host(NAME, args.clone(), &[]);
        assert!(out.host.is_none(), "{args}");
        let e = out.result.unwrap_err();
        assert_eq!(
            (e.error, e.extra["field"].as_str()),
            ("invalid_arguments", Some(field)),
            "{args}"
        );
    }
    let e = b.refused(
        NAME,
        json!({"action": "status", "run_id": "T-0123456789abcdef"}),
    );
    assert_eq!(e.error, "unknown_run");
    assert_eq!(
        b.refused(NAME, json!({"action": "nope"})).error,
        "invalid_arguments"
    );
}

#[test]
fn two_runs_of_one_scenario_are_two_runs() {
    let mut b = Bench::new();
    let args = json!({"action": "run", "scenario_id": "dependency-audit"});
    let one = b.ok_with_host(NAME, args.clone(), &[NOT_FOUND]);
    let two = b.ok_with_host(NAME, args, &[NOT_FOUND]);
    assert_ne!(one["run"]["run_id"], two["run"]["run_id"]);
    let p = &b.snapshot.domain;
    assert_eq!(p.count(TaskStatus::Open), 6);
    assert_eq!(p.count(TaskStatus::WaitingForSubtasks), 2);
}
