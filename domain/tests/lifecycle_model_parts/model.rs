//! The reference model of the lifecycle test: the operations, their random strategy, and the
//! model of tasks written from docs/RECORDS.md (lifecycle table, derived sets, claim order,
//! dependencies, parents resuming, run status), independently of the domain's code. It never
//! calls into the core.

use proptest::prelude::*;

/// The lifecycle table of docs/RECORDS.md §3, written out again (not imported) on purpose.
pub const EDGES: &[(&str, &str)] = &[
    ("planned", "open"),
    ("planned", "cancelled"),
    ("planned", "failed"),
    ("open", "claimed"),
    ("open", "waiting_for_subtasks"),
    ("open", "done"),
    ("open", "pending_approval"),
    ("open", "cancelled"),
    ("open", "failed"),
    ("claimed", "in_progress"),
    ("claimed", "open"),
    ("claimed", "waiting_for_subtasks"),
    ("claimed", "blocked"),
    ("claimed", "done"),
    ("claimed", "pending_approval"),
    ("claimed", "cancelled"),
    ("claimed", "failed"),
    ("in_progress", "open"),
    ("in_progress", "waiting_for_subtasks"),
    ("in_progress", "blocked"),
    ("in_progress", "done"),
    ("in_progress", "pending_approval"),
    ("in_progress", "cancelled"),
    ("in_progress", "failed"),
    ("in_progress", "orphaned"),
    ("waiting_for_subtasks", "done"),
    ("waiting_for_subtasks", "pending_approval"),
    ("waiting_for_subtasks", "blocked"),
    ("waiting_for_subtasks", "cancelled"),
    ("waiting_for_subtasks", "failed"),
    ("blocked", "open"),
    ("blocked", "cancelled"),
    ("blocked", "failed"),
    ("orphaned", "open"),
    ("orphaned", "done"),
    ("orphaned", "failed"),
    ("pending_approval", "done"),
    ("done", "closed"),
    ("done", "open"),
    ("failed", "open"),
];

pub const TERMINAL: &[&str] = &["done", "closed", "failed", "cancelled"];
pub const CANCELLABLE: &[&str] = &[
    "planned",
    "open",
    "claimed",
    "in_progress",
    "blocked",
    "waiting_for_subtasks",
];
pub const COMPLETABLE: &[&str] = &["open", "claimed", "in_progress"];
pub const SPLITTABLE: &[&str] = &["open", "claimed", "in_progress"];

#[derive(Clone, Debug)]
pub enum Op {
    Run {
        priority: u8,
        approval: bool,
        plan: bool,
        qa: bool,
        deps: Vec<usize>,
    },
    Subtask {
        parent: usize,
        approval: bool,
        deps: Vec<usize>,
    },
    Claim {
        qa_only: bool,
    },
    Complete(usize),
    Approve(usize),
    Cancel(usize),
    Message(usize),
    Poll(usize),
    Status,
    Unknown(u8),
    /// An operator's plan decision (`domain::operator::decide_plan`, what `bernstein plan
    /// approve|reject` runs), on the hash it saw or on a stale one.
    Plan {
        plan: usize,
        approve: bool,
        stale: bool,
    },
}

pub fn op() -> impl Strategy<Value = Op> {
    let deps = proptest::collection::vec(any::<usize>(), 0..3);
    prop_oneof![
        3 => (1u8..=3, any::<bool>(), prop::bool::weighted(0.15), any::<bool>(), deps.clone())
            .prop_map(|(priority, approval, plan, qa, deps)| Op::Run { priority, approval, plan, qa, deps }),
        3 => (any::<usize>(), prop::bool::weighted(0.3), prop::collection::vec(any::<usize>(), 0..2))
            .prop_map(|(parent, approval, deps)| Op::Subtask { parent, approval, deps }),
        4 => any::<bool>().prop_map(|qa_only| Op::Claim { qa_only }),
        4 => any::<usize>().prop_map(Op::Complete),
        2 => any::<usize>().prop_map(Op::Approve),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => any::<usize>().prop_map(Op::Message),
        2 => any::<usize>().prop_map(Op::Poll),
        1 => Just(Op::Status),
        1 => any::<u8>().prop_map(Op::Unknown),
        2 => (any::<usize>(), any::<bool>(), prop::bool::weighted(0.2))
            .prop_map(|(plan, approve, stale)| Op::Plan { plan, approve, stale }),
    ]
}

#[derive(Clone, Debug)]
pub struct MTask {
    pub id: String,
    pub status: &'static str,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    pub root: usize,
    pub approval: bool,
    pub deps: Vec<usize>,
    pub priority: u8,
    pub role: &'static str,
    /// Created with `plan: true` (a plan's root).
    pub plan_root: bool,
}

#[derive(Default)]
pub struct Model {
    pub tasks: Vec<MTask>,
    pub cancelled_runs: Vec<usize>,
}

pub fn is(status: &str, set: &[&str]) -> bool {
    set.contains(&status)
}

impl Model {
    pub fn subtree(&self, i: usize) -> Vec<usize> {
        let mut out = vec![i];
        let mut k = 0;
        while k < out.len() {
            out.extend(self.tasks[out[k]].children.iter().copied());
            k += 1;
        }
        out
    }

    /// Whether `from` waits for `target` (or is it): through dependencies and subtasks.
    pub fn waits_for(&self, from: usize, target: usize) -> bool {
        let mut seen = vec![false; self.tasks.len()];
        let mut stack = vec![from];
        while let Some(x) = stack.pop() {
            if x == target {
                return true;
            }
            if std::mem::replace(&mut seen[x], true) {
                continue;
            }
            stack.extend(self.tasks[x].deps.iter().copied());
            stack.extend(self.tasks[x].children.iter().copied());
        }
        false
    }

    /// The task a claim is granted: open, admitted by the filter, dependencies done or
    /// closed; first by priority, then by creation.
    pub fn claimable(&self, qa_only: bool) -> Option<usize> {
        let mut open: Vec<usize> = (0..self.tasks.len())
            .filter(|&i| self.tasks[i].status == "open")
            .collect();
        open.sort_by_key(|&i| (self.tasks[i].priority, i));
        open.into_iter().find(|&i| {
            let t = &self.tasks[i];
            (!qa_only || t.role == "qa") && self.deps_done(i)
        })
    }

    /// Whether every dependency of `i` is done or closed (the claim's gate, which a
    /// completion from open passes too).
    pub fn deps_done(&self, i: usize) -> bool {
        self.tasks[i]
            .deps
            .iter()
            .all(|&d| matches!(self.tasks[d].status, "done" | "closed"))
    }

    /// `task` just reached done: resume the waiting parents above it (RECORDS.md §3).
    pub fn resume_parents(&mut self, mut child: usize) {
        while let Some(p) = self.tasks[child].parent {
            if self.tasks[p].status != "waiting_for_subtasks" {
                return;
            }
            let kids = &self.tasks[p].children;
            if kids.iter().any(|&c| !is(self.tasks[c].status, TERMINAL)) {
                return;
            }
            let failed = kids.iter().any(|&c| self.tasks[c].status == "failed");
            let to = if failed {
                "blocked"
            } else if self.tasks[p].approval {
                "pending_approval"
            } else {
                "done"
            };
            self.tasks[p].status = to;
            if to != "done" {
                return;
            }
            child = p;
        }
    }

    pub fn run_status(&self, root: usize) -> &'static str {
        if self.cancelled_runs.contains(&root) {
            return "cancelled";
        }
        match self.tasks[root].status {
            "done" | "closed" => "completed",
            "failed" => "failed",
            "cancelled" => "cancelled",
            "planned" | "blocked" | "pending_approval" => "input_required",
            _ => {
                let needs_input = self.tasks.iter().any(|t| {
                    t.root == root && matches!(t.status, "planned" | "blocked" | "pending_approval")
                });
                if needs_input {
                    "input_required"
                } else {
                    "working"
                }
            }
        }
    }
}
