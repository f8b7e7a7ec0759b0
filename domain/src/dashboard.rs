//! What the operator's dashboard shows, as JSON computed from a snapshot (`/api/overview`,
//! `/api/task`; shapes in docs/OPERATIONS.md): runs with their progress (the fold of the
//! progress ticks) and task trees, plans awaiting a decision, calls and refusals over a
//! window, the ledger, the claimers ([`workers`]); and a task's mailbox, artifacts and
//! lineage. [`verify`] checks a pasted handle, receipt or capsule. Pure and read-only: nothing
//! here writes a record.

pub mod verify;
pub mod workers;

use serde_json::{Map, Value, json};

use crate::Snapshot;
use crate::mailbox::{self, MailboxEntry};
use crate::projection::{Projection, TaskRow};
use crate::runs::RunView;
use crate::{dlp, lifecycle::TaskStatus, lineage, outcome, plans, task_view};
use bernstein_core::ledger::StoreFacts;
use bernstein_core::signing;
use bernstein_core::time::Timestamp;

/// Most runs `/api/overview` lists (newest first).
pub const MAX_RUNS: usize = 50;
/// Most tasks of one run's tree it lists.
pub const MAX_TASKS_PER_RUN: usize = 200;

/// What the server knows besides the snapshot.
#[derive(Clone, Debug)]
pub struct ServerFacts<'a> {
    pub version: &'a str,
    /// The read-only `bernstein dashboard` (no MCP served).
    pub read_only: bool,
    pub store: StoreFacts,
    /// The newest signed head (`None` without a signing key).
    pub signed_head: Option<Value>,
}

/// `/api/overview` over the `window_s` seconds up to `now`.
pub fn overview(s: &Snapshot, facts: &ServerFacts<'_>, now: Timestamp, window_s: u64) -> Value {
    let p = &s.domain;
    let mut by_status = Map::new();
    for status in TaskStatus::ALL {
        let n = p.count(status);
        if n > 0 {
            by_status.insert(status.as_str().into(), n.into());
        }
    }
    let runs: Vec<Value> = newest_runs(p).map(|r| run_json(p, r, now)).collect();
    json!({
        "server": {"name": "bernstein", "version": facts.version, "read_only": facts.read_only},
        "now": now.0,
        "window_s": window_s,
        "ledger": ledger_json(s, facts),
        "tasks_by_status": by_status,
        "runs": runs,
        "plans": awaiting_plans(p),
        "roles": p.roles().iter().map(|(role, t)| json!({
            "role": role,
            "tasks": t.tasks,
            "cost_usd": t.cost_micro_usd as f64 / 1e6,
        })).collect::<Vec<_>>(),
        "calls": calls_json(p, now, window_s),
        "workers": workers::workers(p, now.0),
    })
}

/// The `ledger` object of `/api/overview`: what the snapshot and the store tell of it.
fn ledger_json(s: &Snapshot, facts: &ServerFacts<'_>) -> Value {
    let kind = if facts.store.kind.is_empty() {
        "unknown"
    } else {
        facts.store.kind
    };
    json!({
        "records": s.position.seq,
        "bytes": facts.store.ledger_bytes,
        "head": s.position.head.to_string(),
        // Every snapshot a store hands out was verified when it was read.
        "verified_at_open": true,
        "store": kind,
        // Fields a store does not have at all (a field it cannot tell now is null): every
        // store has every field today (PostgreSQL's `bytes` is its table's size on disk).
        "not_applicable": [],
        "ignored_records": s.domain.ignored_records(),
        "signed_head": facts.signed_head.clone().unwrap_or(Value::Null),
    })
}

/// The runs, newest first (the projection lists them oldest first by id order of creation).
fn newest_runs(p: &Projection) -> impl Iterator<Item = &RunView> {
    let mut runs: Vec<&RunView> = p.runs_after(None).collect();
    runs.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| b.run_id.cmp(&a.run_id))
    });
    runs.into_iter().take(MAX_RUNS)
}

fn run_json(p: &Projection, r: &RunView, now: Timestamp) -> Value {
    let progress = task_view::progress_of(r);
    let mut counts = Map::new();
    for (status, n) in r.member_counts.iter() {
        counts.insert(status.as_str().into(), n.into());
    }
    let goal = p
        .task(&r.root_task_id)
        .map_or(r.title.as_str(), |t| t.goal.as_str());
    let tasks: Vec<Value> = p
        .subtree(&r.root_task_id)
        .into_iter()
        .take(MAX_TASKS_PER_RUN)
        .map(task_row)
        .collect();
    json!({
        "run_id": r.run_id,
        "goal": goal,
        "title": r.title,
        "status": r.status().as_str(),
        "created_at": r.created_at,
        "age_ms": now.0.saturating_sub(r.created_at),
        "progress": {"earned": progress.earned, "total": progress.total, "message": progress.message},
        "counts": counts,
        "tasks": tasks,
        // The same answers as bernstein_run_status's (one source: crate::outcome).
        "outcome": outcome::outcome(p, r),
        "waiting": outcome::waiting(p, r, now.0),
    })
}

/// One task as the dashboard lists it.
fn task_row(t: &TaskRow) -> Value {
    json!({
        "id": t.id,
        "parent_id": t.rare.parent_id,
        "title": t.title,
        "role": t.role,
        "status": t.status.as_str(),
        "depends_on": t.rare.depends_on,
        "claimer": t.claimer.as_deref().map(|c| dlp::redact(c).text),
        "lease_expires_at": t.rare.lease_expires_at,
        "attempts": t.attempts,
        "children": t.rare.children,
    })
}

fn awaiting_plans(p: &Projection) -> Vec<Value> {
    p.plans()
        .filter_map(|id| plans::document(p, id).ok())
        .filter(|doc| doc.planned() > 0)
        .map(|doc| {
            let root = p.task(&doc.plan_id);
            json!({
                "plan_id": doc.plan_id,
                "title": root.map(|t| t.title.as_str()),
                "status": root.map(|t| t.status.as_str()),
                "rendering_hash": doc.hash(),
                "tasks": doc.tasks.len(),
                "planned": doc.planned(),
            })
        })
        .collect()
}

fn calls_json(p: &Projection, now: Timestamp, window_s: u64) -> Value {
    let w = p.calls().window(now.0, window_s.div_ceil(60));
    let total: u64 = w.by_tool.values().sum();
    let refused: u64 = w.refusals.values().sum();
    json!({
        "total": total,
        "refused": refused,
        "by_tool": w.by_tool,
        "refusals": w.refusals,
        "by_principal": w.by_principal,
        "per_minute": w.per_minute.iter().map(|(minute, calls, refused)| json!({
            "minute": minute, "calls": calls, "refused": refused,
        })).collect::<Vec<_>>(),
    })
}

/// `/api/task?id=…`: the task, its mailbox (bodies as stored: redacted before they were
/// recorded), its artifacts with their lineage; `None` for an unknown task. `signer` is the
/// project's public key PEM, when known: an entry signed by another key is `"foreign"`. The
/// task's resources (`crate::resources`) serve the same three parts.
pub fn task(p: &Projection, id: &str, signer: Option<&str>) -> Option<Value> {
    let row = task_detail(p, id)?;
    let mailbox = task_mailbox(p, id, signer);
    let artifacts = task_artifacts(p, id);
    Some(json!({"task": row, "mailbox": mailbox, "artifacts": artifacts}))
}

/// The task `id` as `/api/task` shows it: its row with its run, goal, result summary and
/// redactions; `None` for an unknown task.
pub fn task_detail(p: &Projection, id: &str) -> Option<Value> {
    let t = p.task(id)?;
    let mut row = task_row(t);
    if let Value::Object(m) = &mut row {
        m.insert("run_id".into(), t.run_id.as_str().into());
        m.insert("goal".into(), t.goal.to_string().into());
        m.insert("result_summary".into(), json!(t.rare.result_summary));
        m.insert("requires_approval".into(), t.requires_approval.into());
        m.insert("redacted_kinds".into(), json!(t.rare.redacted_kinds));
    }
    Some(row)
}

/// The mailbox of task `id`, oldest first, each entry with the state of its checks.
pub fn task_mailbox(p: &Projection, id: &str, signer: Option<&str>) -> Vec<Value> {
    p.capsules()
        .mailbox(id)
        .iter()
        .map(|e| entry_json(e, signer))
        .collect()
}

/// The artifacts of task `id`, each version with its lineage walked.
pub fn task_artifacts(p: &Projection, id: &str) -> Vec<Value> {
    p.artifacts()
        .of_task(id)
        .map(|v| {
            let r = &v.record;
            let walk = lineage::walk(p.artifacts(), &r.key, Some(r.version));
            json!({
                "key": r.key,
                "version": r.version,
                "kind": r.kind.as_str(),
                "title": r.title,
                "content_hash": r.content_hash,
                "lineage_head": r.lineage_head,
                "lineage": {
                    "ok": walk.valid,
                    "versions": walk.versions.len(),
                    "detail": if walk.valid {
                        format!("{} version(s) chain to {}", walk.versions.len(), walk.head)
                    } else {
                        walk.problems.join("; ")
                    },
                },
            })
        })
        .collect()
}

/// A mailbox entry with the state of its own checks: `valid` (its hash covers its fields and
/// its signature verifies under the project's key), `foreign` (valid, another key) or
/// `invalid`.
fn entry_json(e: &MailboxEntry, signer: Option<&str>) -> Value {
    let sound = mailbox::entry_hash(e) == e.entry_hash
        && mailbox::body_hash(&e.body) == e.body_hash
        && signing::verify_signature(
            &e.signer_public_key_pem,
            &mailbox::signed_message(&e.entry_hash),
            &e.signature,
        )
        .is_ok();
    let state = match (sound, signer) {
        (false, _) => "invalid",
        (true, Some(pem)) if pem.trim() != e.signer_public_key_pem.trim() => "foreign",
        (true, _) => "valid",
    };
    json!({
        "seq": e.seq,
        "kind": e.kind.as_str(),
        "sender": e.sender,
        "body": e.body,
        "posted_at": e.posted_at,
        "entry_hash": e.entry_hash,
        "signature": state,
        "redactions": e.redactions,
        "redacted_kinds": e.redacted_kinds,
    })
}

#[cfg(test)]
mod tests;
