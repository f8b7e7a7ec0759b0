//! A plan through `bernstein_approve`: decided by a person only. The first run asks a host
//! that can elicit (showing the plan's rendering hash) and refuses a decision in the
//! arguments; the run with the answer decides the plan on the hash shown
//! ([`draft_plan_decision`], what `bernstein plan approve|reject` records), so a plan
//! that changed meanwhile is refused as stale with nothing recorded.

use serde::{Deserialize, Serialize};

use bernstein_core::protocol::input::Capability;
use bernstein_core::protocol::registry::ToolError;

use super::{ApproveAnswer, ApproveArgs, Decision, NAME, form, not_awaiting_approval};
use crate::bound::ToolContext;
use crate::plans::recorded::{PlanDecided, draft_plan_decision};
use crate::plans::{self, PlanChange, PlanError};
use crate::projection::TaskRow;
use crate::refusal::Refusal;
use crate::resource_links;
use crate::tools::{Called, internal};

/// A decided plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanAnswer {
    pub plan_id: String,
    pub decision: Decision,
    /// The rendering hash the person was shown and decided.
    pub plan_hash: String,
    pub run_id: String,
    /// Each status the decision changed.
    pub changes: Vec<PlanChange>,
    /// Secrets DLP replaced in the note before recording (absent when none).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub redactions: std::collections::BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
}

/// A planned task's first run: refuse a decision from the caller, ask a person through a host
/// that can elicit, refuse as before otherwise.
pub fn first_round(
    ctx: &ToolContext<'_>,
    args: &ApproveArgs,
    task: &TaskRow,
) -> Result<Called<ApproveAnswer>, ToolError> {
    let plan_id = task.run_id.as_str();
    if args.decision.is_some() {
        return Err(decided_by_caller(task.id.as_str(), plan_id));
    }
    if !ctx.input.can(Capability::Elicitation) {
        return Err(not_awaiting_approval(task.id.as_str(), task.status));
    }
    // A planned task outside any plan (no root made with plan: true) has nothing to show.
    match plans::document(&ctx.snapshot.domain, plan_id) {
        Ok(doc) => Ok(Called::need_input(form::ask_plan(&doc))),
        Err(_) => Err(not_awaiting_approval(task.id.as_str(), task.status)),
    }
}

/// The run with the person's answer: decides `plan_id` if it still renders to `shown_hash`.
pub fn decide(
    ctx: &ToolContext<'_>,
    args: &ApproveArgs,
    plan_id: &str,
    shown_hash: &str,
    decision: Decision,
    note: Option<&str>,
) -> Result<Called<ApproveAnswer>, ToolError> {
    if args.decision.is_some() {
        return Err(decided_by_caller(args.task_id.as_str(), plan_id));
    }
    let PlanDecided {
        outcome,
        entry,
        drafts,
    } = draft_plan_decision(
        &ctx.snapshot.domain,
        ctx.now,
        plan_id,
        shown_hash,
        decision,
        note,
    )
    .map_err(|e| failed(&e))?;
    let answer = PlanAnswer {
        plan_id: outcome.plan_id,
        decision,
        plan_hash: outcome.hash,
        run_id: outcome.run_id.clone(),
        changes: outcome.changes,
        redactions: entry.redactions,
        redacted_kinds: entry.redacted_kinds,
    };
    // A plan's tasks, their statuses and its hash are the backlog's and its run's.
    Ok(Called {
        drafts,
        run_id: Some(outcome.run_id.clone()),
        links: vec![resource_links::run_link(&outcome.run_id)],
        ..Called::ok(ApproveAnswer::Plan(answer))
    }
    .reading_task_of(&outcome.run_id))
}

fn decided_by_caller(task_id: &str, plan_id: &str) -> ToolError {
    ToolError::new(
        Refusal::PlanDecidedByPerson,
        format!("task {task_id} is part of plan {plan_id}, which only a person decides"),
        "Call bernstein_approve without decision from a host that can elicit: the person is \
         shown the plan and its hash and decides. An operator can also decide it with \
         `bernstein plan approve|reject PLAN_ID --hash H`. Nothing was recorded.",
    )
    .with("task_id", task_id)
    .with("plan_id", plan_id)
}

fn failed(e: &PlanError) -> ToolError {
    match e {
        PlanError::Stale {
            plan_id,
            seen,
            current,
        } => ToolError::new(
            Refusal::ApprovalStale,
            format!("plan {plan_id} changed since the person was shown it (hash {seen}); it is now {current}"),
            "Nothing was recorded. Call bernstein_approve again: the person is asked about the \
             plan as it is now.",
        )
        .with("plan_id", plan_id.as_str())
        .with("shown_hash", seen.as_str())
        .with("current_hash", current.as_str()),
        other => internal(NAME, &other.to_string()),
    }
}
