//! Random operation sequences through the real protocol engine against a reference model of
//! the task lifecycle.
//!
//! Every operation is a JSON-RPC `tools/call` line handed to `Server::handle` (tier `all`,
//! meter off, a fixed signing seed), served against the snapshot folded so far; its records go
//! to a byte ledger and come back through `Record::parse_line` + `Snapshot::apply`, the way a
//! store hands them to the next request. Plan decisions are operator commands, not MCP tools:
//! they go through `domain::operator::decide_plan` (what `bernstein plan approve|reject` runs)
//! and are sealed and folded the same way. The model is written here from docs/RECORDS.md
//! (lifecycle table, gates, parents resuming, claim order, dependencies, cancellation, run
//! status), independently of the domain's code. After every step:
//! - the reply is a success exactly where the model accepts and a refusal with the model's
//!   error code exactly where it refuses; a refusal appends only the call's audit record (an
//!   operator's refusal, nothing);
//! - every `task.status` record is an edge of the lifecycle table, from the task's status
//!   before the call, and the records change exactly the tasks the model changes;
//! - every task the model knows is in the projection with the model's status (no lost
//!   record), counts match, run statuses match `bernstein_run_status`.
//!
//! At the end the whole ledger verifies and re-folds to the same projection.
//! (`domain/src/model_tests.rs` tests the handlers directly; this goes through the engine.)

mod lifecycle_model_parts;
mod replay_support;

use std::collections::BTreeMap;

use bernstein_core::ledger::Record;
use bernstein_core::ledger::verify::verify_ledger;
use bernstein_domain::Snapshot;
use bernstein_domain::plans;
use lifecycle_model_parts::engine::{Answer, Engine, KEY, ok, refused};
use lifecycle_model_parts::model::*;
use proptest::prelude::*;
use replay_support::snapshot_value;
use serde_json::json;

// ------------------------------------------------------------------ one step

fn step(e: &mut Engine, m: &mut Model, op: &Op) {
    let before: Vec<&'static str> = m.tasks.iter().map(|t| t.status).collect();
    let pick = |i: usize| (!m.tasks.is_empty()).then(|| i % m.tasks.len());
    let ids: Vec<String> = m.tasks.iter().map(|t| t.id.clone()).collect();
    let dep_ids = |deps: &[usize]| -> (Vec<usize>, Vec<String>) {
        let mut idx: Vec<usize> = deps.iter().filter_map(|&d| pick(d)).collect();
        idx.dedup();
        let names = idx.iter().map(|&i| ids[i].clone()).collect();
        (idx, names)
    };
    let what = format!("{op:?}");
    let answer = match op {
        Op::Run {
            priority,
            approval,
            plan,
            qa,
            deps,
        } => {
            let (deps, names) = dep_ids(deps);
            let role = if *qa { "qa" } else { "backend" };
            let mut args = json!({"goal": format!("goal {}", m.tasks.len()), "priority": priority, "role": role});
            if *approval {
                args["requires_approval"] = json!(true);
            }
            if *plan {
                args["plan"] = json!(true);
            }
            if !names.is_empty() {
                args["depends_on"] = json!(names);
            }
            let a = e.call("bernstein_run", args);
            let v = ok(&a, &what);
            let status = if *plan { "planned" } else { "open" };
            assert_eq!(v["status"], json!(status), "{what}");
            let i = m.tasks.len();
            let mut deps = deps;
            deps.sort_unstable();
            deps.dedup();
            m.tasks.push(MTask {
                id: v["task_id"].as_str().unwrap().into(),
                status,
                parent: None,
                children: vec![],
                root: i,
                approval: *approval,
                deps,
                priority: *priority,
                role,
                plan_root: *plan,
            });
            a
        }
        Op::Subtask {
            parent,
            approval,
            deps,
        } => {
            let Some(p) = pick(*parent) else { return };
            let (deps, names) = dep_ids(deps);
            let mut args =
                json!({"goal": format!("sub {}", m.tasks.len()), "parent_task_id": ids[p]});
            if *approval {
                args["requires_approval"] = json!(true);
            }
            if !names.is_empty() {
                args["depends_on"] = json!(names);
            }
            let a = e.call("bernstein_run", args);
            let ps = m.tasks[p].status;
            if is(ps, TERMINAL) {
                refused(&a, "parent_terminal", &what);
            } else if !(is(ps, SPLITTABLE) || ps == "waiting_for_subtasks" || ps == "planned") {
                refused(&a, "parent_not_accepting_subtasks", &what);
            } else if deps.iter().any(|&d| m.waits_for(d, p)) {
                refused(&a, "dependency_cycle", &what);
            } else {
                let v = ok(&a, &what);
                let status = if ps == "planned" { "planned" } else { "open" };
                assert_eq!(v["status"], json!(status), "{what}");
                if is(ps, SPLITTABLE) {
                    m.tasks[p].status = "waiting_for_subtasks";
                }
                let c = m.tasks.len();
                let (root, role) = (m.tasks[p].root, m.tasks[p].role);
                let mut deps = deps;
                deps.sort_unstable();
                deps.dedup();
                m.tasks.push(MTask {
                    id: v["task_id"].as_str().unwrap().into(),
                    status,
                    parent: Some(p),
                    children: vec![],
                    root,
                    approval: *approval,
                    deps,
                    priority: 2,
                    role,
                    plan_root: false,
                });
                m.tasks[p].children.push(c);
            }
            a
        }
        Op::Claim { qa_only } => {
            let mut args = json!({"claimer_id": "worker-1"});
            if *qa_only {
                args["role"] = json!("qa");
            }
            let a = e.call("bernstein_claim", args);
            let v = ok(&a, &what);
            match m.claimable(*qa_only) {
                Some(i) => {
                    assert_eq!(
                        (v["granted"].clone(), v["taskId"].clone()),
                        (json!(true), json!(ids[i])),
                        "{what}"
                    );
                    m.tasks[i].status = "claimed";
                }
                None => assert_eq!(
                    (v["granted"].clone(), v["taskId"].clone()),
                    (json!(false), json!("")),
                    "{what}"
                ),
            }
            a
        }
        Op::Complete(i) => {
            let Some(t) = pick(*i) else { return };
            let a = e.call(
                "bernstein_complete",
                json!({"task_id": ids[t], "result_summary": "done"}),
            );
            if m.tasks[t].status == "open" && !m.deps_done(t) {
                refused(&a, "dependencies_not_done", &what);
            } else if is(m.tasks[t].status, COMPLETABLE) {
                let to = if m.tasks[t].approval {
                    "pending_approval"
                } else {
                    "done"
                };
                assert_eq!(ok(&a, &what)["status"], json!(to), "{what}");
                m.tasks[t].status = to;
                if to == "done" {
                    m.resume_parents(t);
                }
            } else {
                refused(&a, "task_not_completable", &what);
            }
            a
        }
        Op::Approve(i) => {
            let Some(t) = pick(*i) else { return };
            let a = e.call("bernstein_approve", json!({"task_id": ids[t]}));
            if m.tasks[t].status == "pending_approval" {
                assert_eq!(ok(&a, &what)["status"], json!("done"), "{what}");
                m.tasks[t].status = "done";
                m.resume_parents(t);
            } else {
                refused(&a, "task_not_awaiting_approval", &what);
            }
            a
        }
        Op::Cancel(i) => {
            let Some(t) = pick(*i) else { return };
            let a = e.call("bernstein_cancel", json!({"task_id": ids[t]}));
            let s = m.tasks[t].status;
            if is(s, TERMINAL) {
                assert_eq!(ok(&a, &what)["already_terminal"], json!(true), "{what}");
                assert_eq!(
                    a.records.len(),
                    1,
                    "{what}: cancelling a finished task writes nothing"
                );
            } else if !is(s, CANCELLABLE) {
                refused(&a, "task_not_cancellable", &what);
            } else {
                let v = ok(&a, &what);
                for k in m.subtree(t) {
                    if is(m.tasks[k].status, CANCELLABLE) {
                        m.tasks[k].status = "cancelled";
                    }
                }
                let root = m.tasks[t].root == t;
                assert_eq!(v["run_cancelled"], json!(root), "{what}");
                if root {
                    m.cancelled_runs.push(t);
                }
            }
            a
        }
        Op::Message(i) => {
            let Some(t) = pick(*i) else { return };
            let a = e.call(
                "bernstein_post_message",
                json!({"task_id": ids[t], "kind": "finding", "body": "progress"}),
            );
            if is(m.tasks[t].status, TERMINAL) {
                refused(&a, "task_finished", &what)
            } else {
                ok(&a, &what);
            }
            a
        }
        Op::Poll(i) => {
            let Some(t) = pick(*i) else { return };
            let a = e.call("bernstein_run_status", json!({"run_id": ids[t]}));
            let v = ok(&a, &what);
            let root = m.tasks[t].root;
            assert_eq!(
                v["status"],
                json!(m.run_status(root)),
                "{what}: run {}",
                ids[root]
            );
            assert_eq!(v["taskId"], json!(ids[root]), "{what}");
            assert_eq!(
                a.records.len(),
                1,
                "{what}: a poll writes only its audit record"
            );
            a
        }
        Op::Status => {
            let a = e.call("bernstein_status", json!({}));
            let v = ok(&a, &what);
            assert_eq!(v["counts"]["total"], json!(m.tasks.len()), "{what}: {v}");
            a
        }
        Op::Plan {
            plan,
            approve,
            stale,
        } => {
            let roots: Vec<usize> = (0..m.tasks.len())
                .filter(|&i| m.tasks[i].plan_root)
                .collect();
            if roots.is_empty() {
                return;
            }
            let root = roots[plan % roots.len()];
            let hash = if *stale {
                format!("sha256:{}", "0".repeat(64))
            } else {
                plans::document(&e.snapshot.domain, &ids[root])
                    .expect("a plan document")
                    .hash()
            };
            let a = e.decide_plan(&ids[root], &hash, *approve);
            let planned: Vec<usize> = m
                .subtree(root)
                .into_iter()
                .filter(|&k| m.tasks[k].status == "planned")
                .collect();
            if *stale {
                refused(&a, "plan_conflict", &what);
            } else if planned.is_empty() {
                refused(&a, "plan_refused", &what);
            } else if *approve {
                ok(&a, &what);
                for &k in &planned {
                    m.tasks[k].status = "open";
                }
                for &k in &planned {
                    if m.tasks[k]
                        .children
                        .iter()
                        .any(|&c| !is(m.tasks[c].status, TERMINAL))
                    {
                        m.tasks[k].status = "waiting_for_subtasks";
                    }
                }
            } else {
                ok(&a, &what);
                if m.tasks[root].status == "planned" {
                    m.cancelled_runs.push(root);
                }
                for &k in &planned {
                    m.tasks[k].status = "cancelled";
                }
            }
            a
        }
        Op::Unknown(k) => {
            let ghost = "T-0123456789abcdef";
            let (tool, args) = match k % 4 {
                0 => (
                    "bernstein_complete",
                    json!({"task_id": ghost, "result_summary": "x"}),
                ),
                1 => ("bernstein_approve", json!({"task_id": ghost})),
                2 => ("bernstein_cancel", json!({"task_id": ghost})),
                _ => (
                    "bernstein_post_message",
                    json!({"task_id": ghost, "kind": "question", "body": "?"}),
                ),
            };
            let a = e.call(tool, args);
            refused(&a, "unknown_task", &what);
            a
        }
    };
    check_records(m, &before, &answer, &what);
    check_projection(e, m, &what);
}

/// The call's status records are legal edges from the statuses before it, and change exactly
/// the tasks the model changed, once each.
fn check_records(m: &Model, before: &[&'static str], answer: &Answer, what: &str) {
    let mut changed: BTreeMap<String, (String, String)> = BTreeMap::new();
    for r in answer.records.iter().filter(|r| r.kind == "task.status") {
        let (id, from, to) = (
            r.body["task_id"].as_str().unwrap(),
            r.body["from"].as_str().unwrap(),
            r.body["to"].as_str().unwrap(),
        );
        assert!(
            EDGES.contains(&(from, to)),
            "{what}: illegal transition {from} -> {to} of {id}"
        );
        let first_from = changed.get(id).map_or(from.to_string(), |(f, _)| f.clone());
        changed.insert(id.to_string(), (first_from, to.to_string()));
    }
    for (i, t) in m.tasks.iter().enumerate() {
        let old = before.get(i).copied();
        match (old, changed.get(&t.id)) {
            (Some(o), None) => assert_eq!(o, t.status, "{what}: {} changed without a record", t.id),
            (Some(o), Some((f, to))) => {
                assert_eq!(
                    (f.as_str(), to.as_str()),
                    (o, t.status),
                    "{what}: {} moved differently from the model",
                    t.id
                )
            }
            (None, None) => {}
            (None, Some(_)) => panic!("{what}: a status record for the new task {}", t.id),
        }
    }
    assert!(
        changed.keys().all(|id| m.tasks.iter().any(|t| &t.id == id)),
        "{what}: a record for an unknown task"
    );
}

fn check_projection(e: &Engine, m: &Model, what: &str) {
    let p = &e.snapshot.domain;
    assert_eq!(
        p.total() as usize,
        m.tasks.len(),
        "{what}: a task was lost or invented"
    );
    assert_eq!(
        p.ignored_records(),
        0,
        "{what}: the fold skipped a record the engine wrote"
    );
    for t in &m.tasks {
        let row = p
            .task(&t.id)
            .unwrap_or_else(|| panic!("{what}: task {} lost", t.id));
        assert_eq!(row.status.as_str(), t.status, "{what}: status of {}", t.id);
    }
}

fn run(ops: &[Op]) {
    let mut e = Engine::new();
    let mut m = Model::default();
    for op in ops {
        step(&mut e, &mut m, op);
    }
    // The ledger the engine produced verifies and re-folds to the same projection.
    let report =
        verify_ledger(&e.ledger, "ledger.jsonl", Some(KEY)).unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(report.head, e.snapshot.position);
    let mut again = Snapshot::genesis();
    for line in e.ledger.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        again
            .apply(&Record::parse_line(line, Some(KEY)).unwrap())
            .unwrap();
    }
    assert_eq!(snapshot_value(&again), snapshot_value(&e.snapshot));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_follow_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(&ops);
    }
}

#[test]
fn a_worked_example_reaches_every_gate() {
    // run A (approval), B depends on A, plan C; claim A; complete -> pending; approve -> done;
    // claim B; subtask of B; complete the subtask -> B resumes to done.
    use Op::*;
    run(&[
        Run {
            priority: 2,
            approval: true,
            plan: false,
            qa: false,
            deps: vec![],
        },
        Run {
            priority: 1,
            approval: false,
            plan: false,
            qa: true,
            deps: vec![0],
        },
        Run {
            priority: 3,
            approval: false,
            plan: true,
            qa: false,
            deps: vec![],
        },
        Claim { qa_only: true },
        Claim { qa_only: false },
        Approve(0),
        Complete(0),
        Approve(0),
        Claim { qa_only: true },
        Subtask {
            parent: 1,
            approval: false,
            deps: vec![],
        },
        Complete(3),
        Poll(1),
        Cancel(2),
        Poll(2),
        Subtask {
            parent: 2,
            approval: false,
            deps: vec![],
        },
        Message(0),
        Unknown(0),
        Run {
            priority: 2,
            approval: false,
            plan: true,
            qa: false,
            deps: vec![],
        },
        Subtask {
            parent: 4,
            approval: false,
            deps: vec![],
        },
        Plan {
            plan: 1,
            approve: true,
            stale: true,
        },
        Plan {
            plan: 1,
            approve: true,
            stale: false,
        },
        Plan {
            plan: 1,
            approve: false,
            stale: false,
        },
        Claim { qa_only: false },
        Poll(4),
        Status,
    ]);
}
