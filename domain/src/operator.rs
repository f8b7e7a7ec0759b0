//! Operator commands: the decisions an operator takes outside MCP (the CLI today, other
//! transports later) — cancel a task, approve or reject a plan. Each is a pure function of a
//! snapshot returning the drafts to commit, ending with an `operator.command` audit record;
//! the engine commits them with compare-and-append against that snapshot and re-runs the
//! command on a fresh snapshot on conflict, exactly as it does a tool call, so these gates
//! cannot race either.
//!
//! `task cancel` runs the very handler of `bernstein_cancel` (same gate, same refusals). This
//! module never reads files or clocks; `now` arrives as a value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Snapshot;
use crate::bound::ToolContext;
use bernstein_core::config::Config;
use bernstein_core::ledger::{AUDIT_STREAM, Draft};
use bernstein_core::protocol::registry::ToolError;
use bernstein_core::time::Timestamp;

use super::dlp::Redactions;
use super::plans::{self, PlanDecision, PlanError};
use super::records;
use super::tools::cancel;

/// `operator.command` (stream `audit`): one operator decision that changed the ledger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorCommand {
    /// `task cancel`, `plan approve` or `plan reject`.
    pub command: String,
    /// The task or plan id.
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The plan hash the decision was taken on (plan decisions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How many task statuses the command changed.
    pub changed: u64,
    pub at: u64,
    /// Spans DLP replaced in `reason` (absent when none; docs/RECORDS.md §7).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub redactions: BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
}

impl OperatorCommand {
    /// An `operator.command` body with its reason redacted.
    fn new(
        command: String,
        target: &str,
        run_id: Option<String>,
        plan_hash: Option<String>,
        reason: Option<&str>,
        changed: u64,
        at: u64,
    ) -> OperatorCommand {
        let mut r = Redactions::default();
        let reason = r.optional("reason", reason);
        OperatorCommand {
            command,
            target: target.to_string(),
            run_id,
            plan_hash,
            reason,
            changed,
            at,
            redactions: r.counts(),
            redacted_kinds: r.kinds(),
        }
    }
}

/// What an operator command produced: an answer to show and the drafts to commit (empty when
/// nothing changes, e.g. cancelling a finished task).
#[derive(Clone, Debug, PartialEq)]
pub struct OperatorOutcome {
    pub answer: Value,
    pub drafts: Vec<Draft>,
}

fn with_audit(mut drafts: Vec<Draft>, entry: &OperatorCommand) -> Vec<Draft> {
    if !drafts.is_empty() {
        drafts.push(records::draft(
            AUDIT_STREAM,
            records::OPERATOR_COMMAND,
            entry,
        ));
    }
    drafts
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
    let outcome = plans::decide(
        &snapshot.domain,
        plan_id,
        seen_hash,
        decision,
        reason,
        now.0,
    )?;
    let entry = OperatorCommand::new(
        format!("plan {}", decision.as_str()),
        plan_id,
        Some(outcome.run_id.clone()),
        Some(outcome.hash.clone()),
        reason,
        outcome.changes.len() as u64,
        now.0,
    );
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
    Ok(OperatorOutcome {
        answer,
        drafts: with_audit(outcome.drafts, &entry),
    })
}
