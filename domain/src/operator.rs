//! Operator commands: the decisions an operator takes outside MCP (the CLI, the dashboard) —
//! cancel a task, approve or reject a plan (which a host's person may also take through
//! `bernstein_approve`'s form, recorded the same way). Each is a pure function of a
//! snapshot returning the drafts to commit, ending with an `operator.command` audit record;
//! the engine commits them with compare-and-append against that snapshot and re-runs the
//! command on a fresh snapshot on conflict, exactly as it does a tool call, so these gates
//! cannot race either.
//!
//! `task cancel` runs the very handler of `bernstein_cancel` (same gate, same refusals). This
//! module never reads files or clocks; `now` arrives as a value.

use serde_json::{Value, json};

use crate::Snapshot;
use crate::bound::ToolContext;
use bernstein_core::config::Config;
use bernstein_core::ledger::Draft;
use bernstein_core::protocol::registry::ToolError;
use bernstein_core::time::Timestamp;

use super::plans::recorded::with_audit;
pub use super::plans::recorded::{OperatorCommand, PlanDecided, draft_plan_decision};
use super::plans::{PlanDecision, PlanError};
use super::records;
use super::tools::cancel;

/// What an operator command produced: an answer to show and the drafts to commit (empty when
/// nothing changes, e.g. cancelling a finished task).
#[derive(Clone, Debug, PartialEq)]
pub struct OperatorOutcome {
    pub answer: Value,
    pub drafts: Vec<Draft>,
}

/// `bernstein task cancel`: the `bernstein_cancel` gate, from the command line.
pub fn cancel_task(
    snapshot: &Snapshot,
    config: &Config,
    now: Timestamp,
    task_id: &str,
    reason: Option<&str>,
) -> Result<OperatorOutcome, ToolError> {
    let ctx = ToolContext {
        snapshot,
        config,
        now,
        call_id: "operator",
        trace_id: "operator",
        span_id: "operator",
        spec_revision: "operator",
        host: &[],
        meta: None,
        input: &bernstein_core::protocol::input::NO_INPUT,
        task: None,
    };
    let mut args = json!({"task_id": task_id});
    if let Some(r) = reason {
        args["reason"] = json!(r);
    }
    let out = crate::tools::call::<cancel::Cancel>(&ctx, args);
    let answer = out.result?;
    let changed = out
        .drafts
        .iter()
        .filter(|d| d.kind == records::TASK_STATUS)
        .count() as u64;
    let entry = OperatorCommand::new(
        "task cancel".into(),
        task_id,
        out.run_id.clone(),
        None,
        reason,
        changed,
        now.0,
    );
    Ok(OperatorOutcome {
        answer,
        drafts: with_audit(out.drafts, &entry),
    })
}

/// `bernstein plan approve|reject`: decides the plan if its hash is still `seen_hash`.
pub fn decide_plan(
    snapshot: &Snapshot,
    now: Timestamp,
    plan_id: &str,
    seen_hash: &str,
    decision: PlanDecision,
    reason: Option<&str>,
) -> Result<OperatorOutcome, PlanError> {
    let PlanDecided {
        outcome,
        entry,
        drafts,
    } = draft_plan_decision(&snapshot.domain, now, plan_id, seen_hash, decision, reason)?;
    let mut answer = json!({
        "plan_id": outcome.plan_id,
        "decision": decision.as_str(),
        "hash": outcome.hash,
        "changes": outcome.changes,
    });
    if !entry.redactions.is_empty() {
        answer["redactions"] = json!(entry.redactions);
        answer["redacted_kinds"] = json!(entry.redacted_kinds);
    }
    Ok(OperatorOutcome { answer, drafts })
}
