//! Plans: a run created with `plan: true` holds its tasks in `planned` until an operator
//! decides the plan as a whole. The plan id is the root task's id (= the run id).
//!
//! A plan's **document** is the canonical JSON `{"plan_id", "tasks": [...], "v": 1}` with one
//! object per task of the plan (the root's subtree, parents before children, children in
//! creation order): `{task_id, parent_id?, status, title, goal, role, priority, scope,
//! complexity, estimated_minutes, requires_approval, depends_on}`. The plan **hash** is
//! `sha256:` + hex SHA-256 of that document. It is a pure function of the ledger: it stays the
//! hash the plan had when it was created until the plan changes (a task added, cancelled or
//! decided), so an operator's decision names the hash they reviewed and is refused as stale
//! (the CLI's exit 3, HTTP 409's equivalent) if the plan changed since, before anything moves.
//!
//! Decisions ([`decide`]) return drafts; runtimes commit them by compare-and-append against the
//! snapshot they were computed on, re-deciding on conflict, like any gate. Approve promotes
//! every planned task to open (a promoted task with unfinished subtasks then waits for them);
//! reject cancels every task still planned (and the run, when its root was planned).

use serde::{Deserialize, Serialize};

use bernstein_core::canonical::to_canonical_bytes;
use bernstein_core::digest::Digest;
use bernstein_core::ledger::Draft;

use super::ids::{check_task_id, run_stream};
use super::lifecycle::TaskStatus;
use super::projection::{Projection, TaskRow};
use super::records::{self, Complexity, RunCancelled, Scope, TaskCreated};
use super::status_changes::{ChangeNote, StatusChanges};

/// Version of the plan document's shape.
pub const PLAN_DOCUMENT_VERSION: u64 = 1;

/// One task of a plan document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanTask {
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub status: TaskStatus,
    pub title: String,
    pub goal: String,
    pub role: String,
    pub priority: u8,
    pub scope: Scope,
    pub complexity: Complexity,
    pub estimated_minutes: u32,
    pub requires_approval: bool,
    pub depends_on: Vec<String>,
}

/// What an operator reviews: the plan's tasks as they stand.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanDocument {
    pub plan_id: String,
    pub tasks: Vec<PlanTask>,
    pub v: u64,
}

impl PlanDocument {
    /// The canonical JSON rendering the hash is taken over.
    pub fn rendering(&self) -> Vec<u8> {
        let v = serde_json::to_value(self).expect("a plan document always serializes");
        to_canonical_bytes(&v).expect("a plan document holds no floats")
    }

    /// `sha256:` + hex SHA-256 of [`PlanDocument::rendering`].
    pub fn hash(&self) -> String {
        Digest::of(&self.rendering()).to_string()
    }

    /// How many tasks are still planned (waiting for the decision).
    pub fn planned(&self) -> usize {
        self.tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Planned)
            .count()
    }
}

/// Why a plan cannot be shown or decided.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    #[error("{0:?} is not a plan id (a plan id is its root task's id, T- and 16 hex digits)")]
    InvalidId(String),
    #[error("no plan {0}: no task has that id")]
    UnknownPlan(String),
    #[error("{0} is a task, but not a plan's root (it was not created with plan: true)")]
    NotAPlan(String),
    #[error(
        "409 conflict: plan {plan_id} changed since it was reviewed (hash {seen}); it is now {current}. \
         Review it again with `bernstein plan show {plan_id}`; nothing was changed"
    )]
    Stale {
        plan_id: String,
        seen: String,
        current: String,
    },
    #[error("plan {0} has no planned task left to decide (it was decided already)")]
    NothingToDecide(String),
    #[error("internal error drafting the decision: {0}")]
    Internal(String),
}

impl PlanError {
    /// Whether this is the stale-hash conflict (exit 3, HTTP 409).
    pub fn is_conflict(&self) -> bool {
        matches!(self, PlanError::Stale { .. })
    }
}

fn plan_task(row: &TaskRow) -> PlanTask {
    PlanTask {
        task_id: row.id.to_string(),
        parent_id: row.rare.parent_id.clone(),
        status: row.status,
        title: row.title.to_string(),
        goal: row.goal.to_string(),
        role: row.role.to_string(),
        priority: row.priority,
        scope: row.scope,
        complexity: row.complexity,
        estimated_minutes: row.estimated_minutes,
        requires_approval: row.requires_approval,
        depends_on: row.rare.depends_on.clone(),
    }
}

/// The plan `plan_id` as it stands in `p`.
pub fn document(p: &Projection, plan_id: &str) -> Result<PlanDocument, PlanError> {
    check_task_id(plan_id).map_err(|_| PlanError::InvalidId(plan_id.to_string()))?;
    let root = p
        .task(plan_id)
        .ok_or_else(|| PlanError::UnknownPlan(plan_id.to_string()))?;
    if !root.plan {
        return Err(PlanError::NotAPlan(plan_id.to_string()));
    }
    Ok(PlanDocument {
        plan_id: plan_id.to_string(),
        tasks: p.subtree(plan_id).into_iter().map(plan_task).collect(),
        v: PLAN_DOCUMENT_VERSION,
    })
}

/// The plan `plan_id` as it will stand once `added` is recorded: the plan's new root (a run
/// created with `plan: true`), or a task created under a parent of the plan, which becomes the
/// parent's last child and so follows the parent's subtree in the document's order.
pub fn document_adding(
    p: &Projection,
    plan_id: &str,
    added: &TaskCreated,
) -> Result<PlanDocument, PlanError> {
    let mut doc = if added.task_id == plan_id && added.plan {
        PlanDocument {
            plan_id: plan_id.to_string(),
            tasks: Vec::new(),
            v: PLAN_DOCUMENT_VERSION,
        }
    } else {
        document(p, plan_id)?
    };
    let added = PlanTask {
        task_id: added.task_id.clone(),
        parent_id: added.parent_id.clone(),
        status: added.status,
        title: added.title.clone(),
        goal: added.goal.clone(),
        role: added.role.clone(),
        priority: added.priority,
        scope: added.scope,
        complexity: added.complexity,
        estimated_minutes: added.estimated_minutes,
        requires_approval: added.requires_approval,
        depends_on: added.depends_on.clone(),
    };
    let parent = added.parent_id.clone();
    let at = match doc
        .tasks
        .iter()
        .position(|t| t.task_id.as_str() == parent.as_deref().unwrap_or(""))
    {
        Some(i) => {
            let under_parent = |t: &PlanTask| {
                let mut up = t.parent_id.as_deref();
                while let Some(id) = up {
                    if Some(id) == parent.as_deref() {
                        return true;
                    }
                    up = p.task(id).and_then(|row| row.rare.parent_id.as_deref());
                }
                false
            };
            i + 1
                + doc.tasks[i + 1..]
                    .iter()
                    .take_while(|t| under_parent(t))
                    .count()
        }
        None => doc.tasks.len(),
    };
    doc.tasks.insert(at, added);
    Ok(doc)
}

/// An operator's decision: on a whole plan, or (`bernstein_approve`) on finished work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(transform = super::schema::undescribed)]
pub enum PlanDecision {
    Approve,
    Reject,
}

impl PlanDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanDecision::Approve => "approve",
            PlanDecision::Reject => "reject",
        }
    }
}

/// One status change a decision made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanChange {
    pub task_id: String,
    pub from: TaskStatus,
    pub to: TaskStatus,
}

/// A decided plan: what changed and the drafts that record it.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanOutcome {
    pub plan_id: String,
    pub run_id: String,
    pub decision: PlanDecision,
    /// The hash the decision was taken on (the one the operator reviewed).
    pub hash: String,
    pub changes: Vec<PlanChange>,
    /// `task.status` records, then `run.task_status` records (then `run.cancelled` when a
    /// rejection cancels the run). The caller adds its audit record.
    pub drafts: Vec<Draft>,
}

/// Decides plan `plan_id` if its hash is still `seen_hash`.
pub fn decide(
    p: &Projection,
    plan_id: &str,
    seen_hash: &str,
    decision: PlanDecision,
    reason: Option<&str>,
    at: u64,
) -> Result<PlanOutcome, PlanError> {
    let doc = document(p, plan_id)?;
    let current = doc.hash();
    if current != seen_hash.trim() {
        return Err(PlanError::Stale {
            plan_id: plan_id.to_string(),
            seen: seen_hash.to_string(),
            current,
        });
    }
    if doc.planned() == 0 {
        return Err(PlanError::NothingToDecide(plan_id.to_string()));
    }
    let internal = |e: crate::status_changes::StatusChangeError| PlanError::Internal(e.to_string());
    let mut changes = StatusChanges::new(p);
    let mut made = Vec::new();
    let planned: Vec<&PlanTask> = doc
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Planned)
        .collect();
    let mut drafts_after = Vec::new();
    match decision {
        PlanDecision::Approve => {
            let why = reason.map_or_else(
                || "plan approved".to_string(),
                |r| format!("plan approved: {r}"),
            );
            for t in &planned {
                changes
                    .change(
                        &t.task_id,
                        TaskStatus::Open,
                        ChangeNote::reason(Some(&why)),
                        at,
                    )
                    .map_err(internal)?;
                made.push((t.task_id.clone(), TaskStatus::Planned, TaskStatus::Open));
            }
            for t in &planned {
                let waits = p.task(&t.task_id).is_some_and(|row| {
                    row.rare
                        .children
                        .iter()
                        .any(|c| changes.status(c).is_some_and(|s| !s.is_terminal()))
                });
                if waits {
                    let note = ChangeNote::reason(Some("plan approved; waits for its subtasks"));
                    changes
                        .change(&t.task_id, TaskStatus::WaitingForSubtasks, note, at)
                        .map_err(internal)?;
                    made.push((
                        t.task_id.clone(),
                        TaskStatus::Open,
                        TaskStatus::WaitingForSubtasks,
                    ));
                }
            }
        }
        PlanDecision::Reject => {
            let why = reason.map_or_else(
                || "plan rejected".to_string(),
                |r| format!("plan rejected: {r}"),
            );
            for t in &planned {
                changes
                    .change(
                        &t.task_id,
                        TaskStatus::Cancelled,
                        ChangeNote::reason(Some(&why)),
                        at,
                    )
                    .map_err(internal)?;
                made.push((
                    t.task_id.clone(),
                    TaskStatus::Planned,
                    TaskStatus::Cancelled,
                ));
            }
            if planned.iter().any(|t| t.task_id == plan_id) {
                drafts_after.push(records::draft(
                    run_stream(plan_id),
                    records::RUN_CANCELLED,
                    &RunCancelled::new(plan_id, plan_id, Some(&why), planned.len() as u64, at),
                ));
            }
        }
    }
    let (mut drafts, journal) = changes.into_drafts();
    drafts.extend(journal);
    drafts.extend(drafts_after);
    let run_id = p
        .task(plan_id)
        .map_or_else(|| plan_id.to_string(), |r| r.run_id.to_string());
    Ok(PlanOutcome {
        plan_id: plan_id.to_string(),
        run_id,
        decision,
        hash: current,
        changes: made
            .into_iter()
            .map(|(task_id, from, to)| PlanChange { task_id, from, to })
            .collect(),
        drafts,
    })
}

pub mod recorded;

#[cfg(test)]
mod tests;
