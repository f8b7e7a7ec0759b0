//! Property test: random sequences of operations (run, subtask, cancel, claim, complete,
//! approve, lifecycle moves, polls) against a small reference model of the task lifecycle. The model's rules are written out
//! independently of the tools: it refuses exactly where the tools must refuse, and after every
//! step the projection's statuses, counts and run statuses equal the model's and a recount.

use proptest::prelude::*;
use serde_json::json;

use super::lifecycle::{self, TaskStatus};
use super::testkit::Bench;
use bernstein_core::ledger::Fold;

#[derive(Clone, Debug)]
enum Op {
    Run,
    RunNeedingApproval,
    Claim,
    Complete(usize),
    Approve(usize),
    Subtask(usize),
    Cancel(usize),
    Move(usize, TaskStatus),
    Poll(usize),
    CancelUnknown,
    PollMalformed,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Run),
        1 => Just(Op::RunNeedingApproval),
        2 => Just(Op::Claim),
        3 => any::<usize>().prop_map(Op::Complete),
        2 => any::<usize>().prop_map(Op::Approve),
        3 => any::<usize>().prop_map(Op::Subtask),
        2 => any::<usize>().prop_map(Op::Cancel),
        4 => (any::<usize>(), proptest::sample::select(TaskStatus::ALL.to_vec())).prop_map(|(i, s)| Op::Move(i, s)),
        2 => any::<usize>().prop_map(Op::Poll),
        1 => Just(Op::CancelUnknown),
        1 => Just(Op::PollMalformed),
    ]
}

#[derive(Clone, Debug)]
struct MTask {
    id: String,
    status: TaskStatus,
    root: usize,
    children: Vec<usize>,
    parent: Option<usize>,
    approval: bool,
}

#[derive(Default)]
struct Model {
    tasks: Vec<MTask>,
    cancelled_runs: Vec<usize>,
}

use TaskStatus::*;

const TERMINAL: [TaskStatus; 4] = [Done, Closed, Failed, Cancelled];
const CANCELLABLE: [TaskStatus; 6] = [
    Planned,
    Open,
    Claimed,
    InProgress,
    Blocked,
    WaitingForSubtasks,
];
const SPLITTABLE: [TaskStatus; 3] = [Open, Claimed, InProgress];
const NEEDS_INPUT: [TaskStatus; 3] = [Planned, Blocked, PendingApproval];

impl Model {
    /// `t` reached done: resume the waiting parents above it (docs/RECORDS.md §3).
    fn finished(&mut self, mut t: usize) -> Vec<(String, TaskStatus)> {
        let mut resumed = Vec::new();
        while let Some(p) = self.tasks[t].parent {
            if self.tasks[p].status != WaitingForSubtasks {
                break;
            }
            let kids: Vec<TaskStatus> = self.tasks[p]
                .children
                .iter()
                .map(|&c| self.tasks[c].status)
                .collect();
            if !kids.iter().all(|s| TERMINAL.contains(s)) {
                break;
            }
            let to = if kids.contains(&Failed) {
                Blocked
            } else if self.tasks[p].approval {
                PendingApproval
            } else {
                Done
            };
            self.tasks[p].status = to;
            resumed.push((self.tasks[p].id.clone(), to));
            if to != Done {
                break;
            }
            t = p;
        }
        resumed
    }

    fn subtree(&self, i: usize) -> Vec<usize> {
        let mut out = vec![i];
        let mut k = 0;
        while k < out.len() {
            out.extend(self.tasks[out[k]].children.iter().copied());
            k += 1;
        }
        out
    }

    fn run_status(&self, root: usize) -> &'static str {
        if self.cancelled_runs.contains(&root) {
            return "cancelled";
        }
        match self.tasks[root].status {
            Done | Closed => "completed",
            Failed => "failed",
            Cancelled => "cancelled",
            Planned | Blocked | PendingApproval => "input_required",
            _ => {
                let members = self.tasks.iter().filter(|t| t.root == root);
                if members.into_iter().any(|t| NEEDS_INPUT.contains(&t.status)) {
                    "input_required"
                } else {
                    "working"
                }
            }
        }
    }
}

fn check(b: &Bench, m: &Model) {
    let p = &b.snapshot.domain;
    assert_eq!(p.total() as usize, m.tasks.len());
    assert_eq!(p.ignored_records(), 0);
    assert!(p.at_txn_boundary());
    for t in &m.tasks {
        assert_eq!(p.task(&t.id).unwrap().status, t.status, "{}", t.id);
    }
    let recount = p.recount();
    for s in TaskStatus::ALL {
        let model = m.tasks.iter().filter(|t| t.status == s).count() as u64;
        assert_eq!(p.count(s), model, "count of {s}");
        assert_eq!(
            recount.get(&s).copied().unwrap_or(0),
            model,
            "recount of {s}"
        );
    }
    for (i, t) in m.tasks.iter().enumerate() {
        if t.root == i {
            let run = p.run(&t.id).unwrap();
            assert_eq!(run.member_counts.to_map(), p.recount_run(&t.id).unwrap());
            assert_eq!(run.status().as_str(), m.run_status(i), "run {}", t.id);
        }
    }
}

fn step(b: &mut Bench, m: &mut Model, op: Op) {
    let pick = |i: usize| (!m.tasks.is_empty()).then(|| i % m.tasks.len());
    match op {
        Op::Run | Op::RunNeedingApproval => {
            let approval = matches!(op, Op::RunNeedingApproval);
            let v = b.ok(
                "bernstein_run",
                json!({"goal": format!("goal {}", m.tasks.len()), "requires_approval": approval}),
            );
            let id = v["task_id"].as_str().unwrap().to_string();
            assert_eq!(v["run_id"], id.as_str());
            let i = m.tasks.len();
            m.tasks.push(MTask {
                id,
                status: Open,
                root: i,
                children: vec![],
                parent: None,
                approval,
            });
        }
        Op::Claim => {
            let r = b.ok("bernstein_claim", json!({"claimer_id": "model"}));
            // Every task has the same priority and no dependency: the oldest open task wins.
            match m.tasks.iter().position(|t| t.status == Open) {
                Some(t) => {
                    assert_eq!(r["taskId"], m.tasks[t].id.as_str());
                    m.tasks[t].status = Claimed;
                }
                None => assert_eq!(r["granted"], false),
            }
        }
        Op::Complete(i) => {
            let Some(t) = pick(i) else { return };
            let out = b.call(
                "bernstein_complete",
                json!({"task_id": m.tasks[t].id, "result_summary": "done"}),
            );
            if matches!(m.tasks[t].status, Open | Claimed | InProgress) {
                let v = out.result.unwrap();
                let resumed = if m.tasks[t].approval {
                    m.tasks[t].status = PendingApproval;
                    Vec::new()
                } else {
                    m.tasks[t].status = Done;
                    m.finished(t)
                };
                assert_eq!(v["status"], m.tasks[t].status.as_str());
                assert_eq!(
                    v["resumed_parents"].as_array().unwrap().len(),
                    resumed.len()
                );
            } else {
                assert!(out.drafts.is_empty());
                assert_eq!(out.result.unwrap_err().error, "task_not_completable");
            }
        }
        Op::Approve(i) => {
            let Some(t) = pick(i) else { return };
            let out = b.call("bernstein_approve", json!({"task_id": m.tasks[t].id}));
            if m.tasks[t].status == PendingApproval {
                let v = out.result.unwrap();
                m.tasks[t].status = Done;
                let resumed = m.finished(t);
                assert_eq!(
                    v["resumed_parents"].as_array().unwrap().len(),
                    resumed.len()
                );
            } else {
                assert!(out.drafts.is_empty());
                assert_eq!(out.result.unwrap_err().error, "task_not_awaiting_approval");
            }
        }
        Op::Subtask(i) => {
            let Some(p) = pick(i) else { return };
            let parent = m.tasks[p].clone();
            let out = b.call(
                "bernstein_run",
                json!({"goal": "sub", "parent_task_id": parent.id}),
            );
            let expected_refusal = if TERMINAL.contains(&parent.status) {
                Some("parent_terminal")
            } else if SPLITTABLE.contains(&parent.status)
                || matches!(parent.status, WaitingForSubtasks | Planned)
            {
                None
            } else {
                Some("parent_not_accepting_subtasks")
            };
            match (out.result, expected_refusal) {
                (Err(e), Some(code)) => assert_eq!(e.error, code),
                (Ok(v), None) => {
                    if SPLITTABLE.contains(&parent.status) {
                        m.tasks[p].status = WaitingForSubtasks;
                    }
                    let status = if parent.status == Planned {
                        Planned
                    } else {
                        Open
                    };
                    let c = m.tasks.len();
                    m.tasks.push(MTask {
                        id: v["task_id"].as_str().unwrap().into(),
                        status,
                        root: parent.root,
                        children: vec![],
                        parent: Some(p),
                        approval: false,
                    });
                    m.tasks[p].children.push(c);
                    assert_eq!(v["run_id"], m.tasks[parent.root].id.as_str());
                }
                (r, e) => panic!(
                    "subtask of {} ({}): got {r:?}, model expected {e:?}",
                    parent.id, parent.status
                ),
            }
        }
        Op::Cancel(i) => {
            let Some(t) = pick(i) else { return };
            let target = m.tasks[t].clone();
            let out = b.call("bernstein_cancel", json!({"task_id": target.id}));
            if TERMINAL.contains(&target.status) {
                assert!(out.drafts.is_empty());
                assert_eq!(out.result.unwrap()["already_terminal"], true);
            } else if !CANCELLABLE.contains(&target.status) {
                assert!(out.drafts.is_empty());
                assert_eq!(out.result.unwrap_err().error, "task_not_cancellable");
            } else {
                let v = out.result.unwrap();
                let mut descendants = 0;
                for k in m.subtree(t) {
                    if CANCELLABLE.contains(&m.tasks[k].status) {
                        m.tasks[k].status = Cancelled;
                        descendants += u64::from(k != t);
                    }
                }
                assert_eq!(v["cancelled_descendants"], descendants);
                if target.root == t {
                    m.cancelled_runs.push(t);
                }
                assert_eq!(v["run_cancelled"], target.root == t);
            }
        }
        Op::Move(i, to) => {
            let Some(t) = pick(i) else { return };
            let from = m.tasks[t].status;
            let legal = lifecycle::transition(from, to).is_ok();
            let drafted = crate::status_changes::status_change_drafts(
                &b.snapshot.domain,
                &m.tasks[t].id,
                to,
                None,
                0,
            );
            assert_eq!(drafted.is_ok(), legal, "{from}->{to}");
            if legal {
                b.force(&m.tasks[t].id, to);
                m.tasks[t].status = to;
            }
        }
        Op::Poll(i) => {
            let Some(t) = pick(i) else { return };
            let id = m.tasks[t].id.clone();
            let first = b.ok("bernstein_run_status", json!({"run_id": id}));
            let second = b.ok("bernstein_run_status", json!({"run_id": id}));
            assert_eq!(first, second);
            assert_eq!(first["status"], m.run_status(m.tasks[t].root));
            assert_eq!(first["runId"], m.tasks[m.tasks[t].root].id.as_str());
            super::handle::verify_run_handle(&first).unwrap();
        }
        Op::CancelUnknown => {
            let e = b.refused("bernstein_cancel", json!({"task_id": "T-ffffffffffffffff"}));
            assert_eq!(e.error, "unknown_task");
        }
        Op::PollMalformed => {
            let e = b.refused("bernstein_run_status", json!({"run_id": "run/../../etc"}));
            assert_eq!(e.error, "invalid_arguments");
            assert_eq!(crate::testkit::argument(&e), "run_id");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_agree_with_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        let mut b = Bench::new();
        let mut m = Model::default();
        for op in ops {
            step(&mut b, &mut m, op);
            check(&b, &m);
            // Every status count the tool reports equals the model's.
            let counts = b.ok("bernstein_status", json!({}))["counts"].clone();
            prop_assert_eq!(counts["total"].as_u64().unwrap() as usize, m.tasks.len());
            for s in TaskStatus::ALL {
                let model = m.tasks.iter().filter(|t| t.status == s).count() as u64;
                prop_assert_eq!(counts[s.as_str()].as_u64().unwrap(), model);
            }
        }
        // Replaying the ledger from genesis, and restoring a checkpoint, give the same projection.
        let mut replay = crate::Snapshot::genesis();
        for r in &b.log {
            replay.apply(r).unwrap();
        }
        prop_assert_eq!(&replay.domain, &b.snapshot.domain);
        let text = serde_json::to_string(&b.snapshot).unwrap();
        let back: crate::Snapshot = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&back.domain, &b.snapshot.domain);
    }
}
