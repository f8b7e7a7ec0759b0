use serde_json::{Map, Value, json};

use super::*;
use crate::testkit::Bench;
use bernstein_core::protocol::resource_templates::match_uri;

fn ctx(b: &Bench) -> ResourceContext<'_> {
    ResourceContext {
        snapshot: &b.snapshot,
        config: &b.config,
        now: b.now,
        spec_revision: "2025-11-25",
    }
}

/// Reads `uri` through the first template that matches it, as the engine does.
fn read(b: &Bench, uri: &str) -> Result<TemplatedRead, String> {
    let (t, vars) = templates()
        .into_iter()
        .find_map(|t| match_uri(t.uri_template, uri).map(|v| (t, v)))
        .expect("a template matches");
    (t.read)(&ctx(b), uri, &vars)
}

fn json_of(r: &TemplatedRead) -> Value {
    assert_eq!(r.contents.len(), 1);
    assert_eq!(r.contents[0]["mimeType"], "application/json");
    serde_json::from_str(r.contents[0]["text"].as_str().unwrap()).unwrap()
}

fn complete_ids(b: &Bench, variable: &str, typed: &str) -> Candidates {
    complete(&ctx(b), variable, typed, &Map::new())
}

#[test]
fn a_run_reads_as_bernstein_run_status_answers_it() {
    let mut b = Bench::new();
    let run = b.start("build it");
    let uri = format!("bernstein://runs/{run}");
    let r = read(&b, &uri).unwrap();
    assert_eq!(r.contents[0]["uri"], uri.as_str());
    assert_eq!(
        json_of(&r),
        b.ok("bernstein_run_status", json!({"run_id": run}))
    );
    assert_eq!(r.run_id.as_deref(), Some(run.as_str()));
    assert_eq!(r.ttl_ms, Some(LIVE_TTL_MS), "a live run is stale at once");
    // A subtask's id is a task, not a run.
    let child = b.ok("bernstein_run", json!({"goal": "c", "parent_task_id": run}));
    let child = child["task_id"].as_str().unwrap().to_string();
    assert!(read(&b, &format!("bernstein://runs/{child}")).is_err());
    assert!(read(&b, "bernstein://runs/T-0123456789abcdef").is_err());
}

#[test]
fn a_finished_run_may_be_cached_longer() {
    let mut b = Bench::new();
    let run = b.start("one task");
    let claimed = b.ok("bernstein_claim", json!({"claimer_id": "w"}));
    let task = claimed["taskId"].as_str().unwrap().to_string();
    b.ok(
        "bernstein_complete",
        json!({"task_id": task, "result_summary": "done"}),
    );
    let r = read(&b, &format!("bernstein://runs/{run}")).unwrap();
    assert_eq!(json_of(&r)["status"], "completed");
    assert_eq!(r.ttl_ms, Some(FINISHED_TTL_MS));
    let t = read(&b, &format!("bernstein://tasks/{task}")).unwrap();
    assert_eq!(t.ttl_ms, Some(FINISHED_TTL_MS));
}

#[test]
fn a_task_its_mailbox_and_artifacts_read_as_the_dashboard_shows_them() {
    let mut b = Bench::new();
    let run = b.start("write the notes");
    b.ok(
        "bernstein_post_message",
        json!({"task_id": run, "sender": "w", "kind": "finding", "body": "token ghp_0123456789abcdefghijABCDEFGHIJ012345 here"}),
    );
    b.ok(
        "bernstein_post_artifact",
        json!({"task_id": run, "key": "notes/r", "kind": "report", "content": "hello"}),
    );
    let task = json_of(&read(&b, &format!("bernstein://tasks/{run}")).unwrap());
    let detail = crate::dashboard::task(&b.snapshot.domain, &run, None).unwrap();
    assert_eq!(task, detail["task"]);
    assert_eq!(task["goal"], "write the notes");
    let mailbox = read(&b, &format!("bernstein://tasks/{run}/mailbox")).unwrap();
    let mailbox = json_of(&mailbox);
    assert_eq!(mailbox["task_id"], run.as_str());
    let entries = mailbox["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    let body = entries[0]["body"].as_str().unwrap();
    assert!(
        !body.contains("ghp_") && body.contains("[REDACTED:"),
        "{body}"
    );
    let artifacts = json_of(&read(&b, &format!("bernstein://tasks/{run}/artifacts")).unwrap());
    assert_eq!(artifacts["artifacts"], detail["artifacts"]);
    assert_eq!(artifacts["artifacts"][0]["key"], "notes/r");
    for uri in [
        "bernstein://tasks/T-0123456789abcdef",
        "bernstein://tasks/T-0123456789abcdef/mailbox",
        "bernstein://tasks/T-0123456789abcdef/artifacts",
    ] {
        assert!(read(&b, uri).unwrap_err().contains("no task"), "{uri}");
    }
}

#[test]
fn every_string_is_redacted_once_more() {
    let mut v = json!({"a": ["token ghp_0123456789abcdefghijABCDEFGHIJ012345"], "n": 3});
    redact_strings(&mut v);
    let text = v["a"][0].as_str().unwrap();
    assert!(
        !text.contains("ghp_") && text.contains("[REDACTED:"),
        "{text}"
    );
    assert_eq!(v["n"], 3);
}

#[test]
fn ids_complete_by_prefix_newest_first() {
    let mut b = Bench::new();
    let first = b.start("first");
    let second = b.start("second");
    let child = b.ok(
        "bernstein_run",
        json!({"goal": "c", "parent_task_id": first}),
    );
    let child = child["task_id"].as_str().unwrap().to_string();
    let runs = complete_ids(&b, "run_id", "");
    assert_eq!(runs.values, [second.clone(), first.clone()]);
    assert_eq!(runs.total, 2);
    let tasks = complete_ids(&b, "task_id", "T-");
    assert_eq!(tasks.values, [child.clone(), second.clone(), first.clone()]);
    let narrowed = complete_ids(&b, "task_id", &child[..6]);
    assert!(narrowed.values.contains(&child));
    assert!(narrowed.values.iter().all(|id| id.starts_with(&child[..6])));
    assert_eq!(narrowed.total, narrowed.values.len());
    assert!(complete_ids(&b, "task_id", "X").values.is_empty());
    assert!(complete_ids(&b, "other", "").values.is_empty());
}

#[test]
fn completion_lists_at_most_a_hundred_and_counts_them_all() {
    let mut b = Bench::new();
    let ids: Vec<String> = (0..105).map(|i| b.start(&format!("run {i}"))).collect();
    let c = complete_ids(&b, "run_id", "");
    assert_eq!(c.values.len(), MAX_VALUES);
    assert_eq!(c.total, 105);
    assert_eq!(c.values[0], ids[104], "newest first");
}

#[test]
fn tool_results_link_the_resources_they_name() {
    let mut b = Bench::new();
    let out = b.call("bernstein_run", json!({"goal": "root"}));
    let run = out.result.unwrap()["task_id"].as_str().unwrap().to_string();
    let uris = |links: &[bernstein_core::protocol::registry::ResourceLink]| {
        links.iter().map(|l| l.uri.clone()).collect::<Vec<_>>()
    };
    assert_eq!(uris(&out.links), [format!("bernstein://runs/{run}")]);
    let sub = b.call("bernstein_run", json!({"goal": "c", "parent_task_id": run}));
    let child = sub.result.clone().unwrap()["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        uris(&sub.links),
        [
            format!("bernstein://runs/{run}"),
            format!("bernstein://tasks/{child}")
        ]
    );
    let polled = b.call("bernstein_run_status", json!({"run_id": run}));
    assert_eq!(uris(&polled.links), [format!("bernstein://runs/{run}")]);
    let refused = b.call(
        "bernstein_run_status",
        json!({"run_id": "T-0123456789abcdef"}),
    );
    assert!(refused.result.is_err() && refused.links.is_empty());
    // Every link names a URI one of the templates reads.
    for l in out.links.iter().chain(&sub.links) {
        assert!(read(&b, &l.uri).is_ok(), "{}", l.uri);
    }
}
