use super::*;
use crate::handle::verify_run_handle;
use crate::ids::check_task_id;
use crate::testkit::{Bench, path_to};
use serde_json::json;

#[test]
fn a_root_task_is_its_own_run() {
    let mut b = Bench::new();
    let out = b.call(
        NAME,
        json!({"goal": "  Add a /health endpoint  \nwith tests", "role": "qa"}),
    );
    let v = out.result.clone().unwrap();
    let id = v["task_id"].as_str().unwrap();
    assert!(check_task_id(id).is_ok());
    assert_eq!(v["run_id"], id);
    assert_eq!(out.run_id.as_deref(), Some(id));
    assert_eq!(v["title"], "Add a /health endpoint");
    assert_eq!(v["status"], "open");
    assert_eq!(v["poll_after_ms"], POLL_AFTER_MS);
    assert!(v.get("parent_task_id").is_none());
    let kinds: Vec<&str> = out.drafts.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(kinds, ["task.created", "run.created", "run.task_added"]);
    let row = b.snapshot.domain.task(id).unwrap();
    assert_eq!(row.role, "qa");
    assert_eq!(row.priority, DEFAULT_PRIORITY);
    assert_eq!(row.estimated_minutes, DEFAULT_ESTIMATED_MINUTES);
    assert_eq!(row.created_at, 1_767_225_600_000);
    let h = b.ok("bernstein_run_status", json!({"run_id": id}));
    verify_run_handle(&h).unwrap();
    assert_eq!(h["status"], "working");
}

#[test]
fn the_payload_matches_the_advertised_output_schema_fields() {
    let mut b = Bench::new();
    let v = b.ok(NAME, json!({"goal": "x"}));
    let schema = (spec().output_schema.unwrap())();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    for field in ["task_id", "title", "status", "run_id", "poll_after_ms"] {
        assert!(required.contains(&field), "{field} not required");
        assert!(v.get(field).is_some());
    }
    for key in v.as_object().unwrap().keys() {
        assert!(
            schema["properties"].get(key).is_some(),
            "{key} not in schema"
        );
    }
}

#[test]
fn the_input_schema_carries_the_limits() {
    let s = (spec().input_schema)();
    assert_eq!(s["required"], json!(["goal"]));
    assert_eq!(s["properties"]["goal"]["minLength"], 1);
    assert_eq!(s["properties"]["goal"]["maxLength"], 8192);
    assert_eq!(s["properties"]["estimated_minutes"]["minimum"], 1);
    assert_eq!(s["properties"]["estimated_minutes"]["maximum"], 10080);
    assert_eq!(s["properties"]["priority"]["maximum"], 3);
    assert_eq!(
        s["properties"]["role"]["pattern"],
        "^[A-Za-z0-9_.:-]{1,64}$"
    );
    assert_eq!(s["properties"]["role"]["default"], DEFAULT_ROLE);
    assert_eq!(s["properties"]["scope"]["default"], "medium");
    assert_eq!(s["properties"]["complexity"]["default"], "medium");
    assert_eq!(s["properties"]["priority"]["default"], DEFAULT_PRIORITY);
    assert_eq!(
        s["properties"]["estimated_minutes"]["default"],
        DEFAULT_ESTIMATED_MINUTES
    );
    assert_eq!(
        s["properties"]["depends_on"]["items"]["pattern"],
        "^T-[0-9a-f]{16}$"
    );
    let scope = s["properties"]["scope"].to_string();
    assert!(
        scope.contains("small") && scope.contains("large"),
        "{scope}"
    );
}

#[test]
fn titles_are_first_lines_cut_on_characters() {
    assert_eq!(title_of("\n\n  first  \nsecond"), "first");
    let long: String = "é".repeat(100);
    assert_eq!(title_of(&long).chars().count(), TITLE_MAX_CHARS);
    assert_eq!(title_of(&format!("{}   x", "a".repeat(78))), "a".repeat(78));
}

#[test]
fn ids_are_deterministic_and_depend_on_the_ledger_head() {
    let mut a = Bench::new();
    let mut c = Bench::new();
    let x = a.ok(NAME, json!({"goal": "same"}));
    let y = c.ok(NAME, json!({"goal": "same"}));
    assert_eq!(x, y, "same ledger, same arguments, same answer");
    let z = a.ok(NAME, json!({"goal": "same"}));
    assert_ne!(x["task_id"], z["task_id"], "the head moved");
}

#[test]
fn a_subtask_joins_the_parents_run_and_the_parent_waits() {
    let mut b = Bench::new();
    let root = b.start("root");
    let out = b.call(NAME, json!({"goal": "child", "parent_task_id": root}));
    let v = out.result.clone().unwrap();
    assert_eq!(v["run_id"], root.as_str());
    assert_eq!(v["parent_task_id"], root.as_str());
    assert_eq!(out.run_id.as_deref(), Some(root.as_str()));
    let kinds: Vec<(&str, &str)> = out
        .drafts
        .iter()
        .map(|d| (d.stream.as_str(), d.kind.as_str()))
        .collect();
    let journal = format!("run:{root}");
    assert_eq!(
        kinds,
        [
            ("backlog", "task.created"),
            ("backlog", "task.status"),
            (journal.as_str(), "run.task_added"),
            (journal.as_str(), "run.task_status"),
        ]
    );
    let p = &b.snapshot.domain;
    assert_eq!(
        p.task(&root).unwrap().status,
        TaskStatus::WaitingForSubtasks
    );
    assert_eq!(p.task(&root).unwrap().role, "backend");
    let child = v["task_id"].as_str().unwrap();
    assert_eq!(
        p.task(child).unwrap().rare.parent_id.as_deref(),
        Some(root.as_str())
    );
    assert_eq!(p.run(&root).unwrap().members.len(), 2);

    // A second subtask leaves the waiting parent as it is; a grandchild makes the child wait.
    let second = b.call(NAME, json!({"goal": "child 2", "parent_task_id": root}));
    assert_eq!(second.drafts.len(), 2);
    b.ok(NAME, json!({"goal": "grandchild", "parent_task_id": child}));
    let p = &b.snapshot.domain;
    assert_eq!(
        p.task(child).unwrap().status,
        TaskStatus::WaitingForSubtasks
    );
    assert_eq!(p.subtree(&root).len(), 4);
    assert_eq!(p.ignored_records(), 0);
}

#[test]
fn a_subtask_inherits_the_parent_role_unless_given() {
    let mut b = Bench::new();
    let root = b.ok(NAME, json!({"goal": "r", "role": "security"}))["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let c1 = b.ok(NAME, json!({"goal": "c", "parent_task_id": root}));
    let c2 = b.ok(
        NAME,
        json!({"goal": "c", "parent_task_id": root, "role": "qa"}),
    );
    let p = &b.snapshot.domain;
    assert_eq!(
        p.task(c1["task_id"].as_str().unwrap()).unwrap().role,
        "security"
    );
    assert_eq!(p.task(c2["task_id"].as_str().unwrap()).unwrap().role, "qa");
}

#[test]
fn parent_refusals_cover_every_status() {
    for status in TaskStatus::ALL {
        let mut b = Bench::new();
        let root = if status == TaskStatus::Planned {
            b.planned_root("T-00000000000000aa")
        } else {
            b.start("root")
        };
        // Walk the root to `status` along legal edges.
        for step in path_to(status) {
            b.force(&root, step);
        }
        assert_eq!(b.snapshot.domain.task(&root).unwrap().status, status);
        let before = b.snapshot.domain.total();
        let out = b.call(NAME, json!({"goal": "child", "parent_task_id": root}));
        match (status, out.result) {
            (s, Err(e)) if s.is_terminal() => {
                assert_eq!(e.error, "parent_terminal", "{s}");
                assert_eq!(e.extra["current_status"], s.as_str());
            }
            (TaskStatus::Blocked | TaskStatus::Orphaned | TaskStatus::PendingApproval, Err(e)) => {
                assert_eq!(e.error, "parent_not_accepting_subtasks", "{status}");
                assert!(
                    e.extra["accepting_statuses"]
                        .as_array()
                        .unwrap()
                        .contains(&json!("open"))
                );
            }
            (s, Ok(v)) => {
                assert!(!s.is_terminal());
                let expected_child = if s == TaskStatus::Planned {
                    "planned"
                } else {
                    "open"
                };
                assert_eq!(v["status"], expected_child, "{s}");
                let parent_now = b.snapshot.domain.task(&root).unwrap().status;
                let expected_parent = match s {
                    TaskStatus::Open | TaskStatus::Claimed | TaskStatus::InProgress => {
                        TaskStatus::WaitingForSubtasks
                    }
                    other => other,
                };
                assert_eq!(parent_now, expected_parent, "{s}");
                continue;
            }
            (s, Err(e)) => panic!("{s}: unexpected refusal {e:?}"),
        }
        assert_eq!(
            b.snapshot.domain.total(),
            before,
            "a refusal created a task"
        );
    }
}

#[test]
fn bad_parents_and_arguments_are_refused_without_drafts() {
    let mut b = Bench::new();
    b.start("root");
    let e = b.refused(NAME, json!({"goal": "x", "parent_task_id": "../x"}));
    assert_eq!(e.error, "invalid_arguments");
    let e = b.refused(
        NAME,
        json!({"goal": "x", "parent_task_id": "T-0123456789abcdef"}),
    );
    assert_eq!(e.error, "unknown_parent");
    assert_eq!(e.extra["parent_task_id"], "T-0123456789abcdef");
    for bad in [
        json!({}),
        json!({"goal": 5}),
        json!({"goal": "x", "colour": "red"}),
        json!({"goal": "x", "priority": 2.5}),
        json!({"goal": "x", "scope": "huge"}),
        json!({"goal": "   \n  "}),
        json!({"goal": "x".repeat(8193)}),
        json!({"goal": "x", "role": " "}),
        json!({"goal": "x", "role": "qa engineer"}),
        json!({"goal": "x", "role": "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"}),
        json!({"goal": "x", "project": "sk-ant-api03-0123456789abcdefghijABCDEFGHIJ"}),
        json!({"goal": "x", "capabilities": ["python", "password:hunter2x"]}),
        json!({"goal": "x", "parent_task_id": "T-0123456789ABCDEF"}),
        json!({"goal": "x", "priority": 0}),
        json!({"goal": "x", "priority": 4}),
        json!({"goal": "x", "estimated_minutes": 0}),
        json!({"goal": "x", "estimated_minutes": 10081}),
    ] {
        let e = b.refused(NAME, bad.clone());
        assert_eq!(e.error, "invalid_arguments", "{bad}");
        assert!(!e.message.is_empty() && !e.hint.is_empty());
    }
    assert_eq!(b.snapshot.domain.total(), 1);
}

#[test]
fn dependencies_must_exist_and_must_not_close_a_cycle() {
    let mut b = Bench::new();
    let root = b.start("root");
    let a = b.subtask(&root, "a");
    let other = b.start("other run");
    // Valid: a sibling, a task of another run; duplicates collapse.
    let v = b.ok(
        NAME,
        json!({"goal": "c", "parent_task_id": root, "depends_on": [a, other, a]}),
    );
    let c = v["task_id"].as_str().unwrap().to_string();
    assert_eq!(
        b.snapshot.domain.task(&c).unwrap().rare.depends_on,
        vec![a.clone(), other.clone()]
    );
    let unknown = b.refused(
        NAME,
        json!({"goal": "x", "depends_on": ["T-0123456789abcdef"]}),
    );
    assert_eq!(unknown.error, "unknown_dependency");
    assert_eq!(unknown.extra["dependency"], "T-0123456789abcdef");
    assert_eq!(
        b.refused(NAME, json!({"goal": "x", "depends_on": ["../etc"]}))
            .error,
        "invalid_arguments"
    );
    // A subtask depending on its parent, an ancestor, or a task that waits for the parent.
    let grandchild_parent = a.clone();
    for dep in [&a, &root] {
        let e = b.refused(
            NAME,
            json!({"goal": "cycle", "parent_task_id": grandchild_parent, "depends_on": [dep]}),
        );
        assert_eq!(e.error, "dependency_cycle", "{dep}");
    }
    let w = b.ok(NAME, json!({"goal": "w", "depends_on": [root]}));
    let e = b.refused(
        NAME,
        json!({"goal": "cycle", "parent_task_id": a, "depends_on": [w["task_id"]]}),
    );
    assert_eq!(e.error, "dependency_cycle");
    let many: Vec<String> = (0..65).map(|_| a.clone()).collect();
    assert_eq!(
        b.refused(NAME, json!({"goal": "x", "depends_on": many}))
            .error,
        "invalid_arguments"
    );
}

#[test]
fn labels_are_checked_and_recorded() {
    let mut b = Bench::new();
    let v = b.ok(
        NAME,
        json!({"goal": "x", "project": "web", "capabilities": ["python"], "requires_approval": true}),
    );
    let row = b
        .snapshot
        .domain
        .task(v["task_id"].as_str().unwrap())
        .unwrap();
    assert_eq!(row.rare.project.as_deref(), Some("web"));
    assert_eq!(row.rare.capabilities, ["python"]);
    assert!(row.requires_approval);
    for bad in [
        json!({"goal": "x", "project": " "}),
        json!({"goal": "x", "capabilities": ["a", "a"]}),
        json!({"goal": "x", "capabilities": [""]}),
    ] {
        assert_eq!(
            b.refused(NAME, bad.clone()).error,
            "invalid_arguments",
            "{bad}"
        );
    }
}

#[test]
fn a_plan_answer_carries_the_plans_hash_with_the_new_task_in_it() {
    let mut b = Bench::new();
    let current = |b: &Bench, plan: &str| {
        crate::plans::document(&b.snapshot.domain, plan)
            .unwrap()
            .hash()
    };
    let root = b.ok("bernstein_run", json!({"goal": "the plan", "plan": true}));
    let plan = Bench::id_of(&root);
    assert_eq!(root["plan_id"], plan.as_str());
    assert_eq!(root["plan_hash"], current(&b, &plan).as_str());
    // Children in creation order, each after its parent's whole subtree.
    let a = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "a", "parent_task_id": plan}),
    ));
    let mut hashes = vec![root["plan_hash"].clone()];
    for (goal, parent) in [("a1", &a), ("b", &plan), ("a2", &a), ("a1x", &a)] {
        let v = b.ok(
            "bernstein_run",
            json!({"goal": goal, "parent_task_id": parent}),
        );
        assert_eq!(v["plan_hash"], current(&b, &plan).as_str(), "{goal}");
        hashes.push(v["plan_hash"].clone());
    }
    let nested = b.ok(
        "bernstein_run",
        json!({"goal": "deep", "parent_task_id": a}),
    );
    assert_eq!(nested["plan_hash"], current(&b, &plan).as_str());
    hashes.dedup();
    assert_eq!(hashes.len(), 5, "every task added changes the hash");
    // Outside a plan there is no hash.
    let plain = b.ok("bernstein_run", json!({"goal": "plain"}));
    assert!(plain.get("plan_hash").is_none());
}
