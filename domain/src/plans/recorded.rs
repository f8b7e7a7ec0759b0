//! A plan decision as an operator's command records it: the decision's drafts, then one
//! `operator.command` entry (stream `audit`) naming the plan and the hash decided. The CLI,
//! the dashboard and a host's person (`bernstein_approve`'s form) record a decision alike.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use bernstein_core::ledger::{AUDIT_STREAM, Draft};
use bernstein_core::time::Timestamp;

use super::{PlanDecision, PlanError, PlanOutcome};
use crate::dlp::Redactions;
use crate::projection::Projection;
use crate::records;

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
    pub(crate) fn new(
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

/// `drafts` followed by the `operator.command` entry, or nothing when there is nothing to record.
pub(crate) fn with_audit(mut drafts: Vec<Draft>, entry: &OperatorCommand) -> Vec<Draft> {
    if !drafts.is_empty() {
        drafts.push(records::draft(
            AUDIT_STREAM,
            records::OPERATOR_COMMAND,
            entry,
        ));
    }
    drafts
}

/// A plan decision ready to commit: what [`super::decide`] changed, the `operator.command`
/// entry that records it, and the drafts (the entry last).
#[derive(Clone, Debug, PartialEq)]
pub struct PlanDecided {
    pub outcome: PlanOutcome,
    pub entry: OperatorCommand,
    pub drafts: Vec<Draft>,
}

/// Decides plan `plan_id` if its hash is still `seen_hash`, recorded as `bernstein plan
/// approve|reject` records it (also what a host's person decides through `bernstein_approve`).
pub fn draft_plan_decision(
    p: &Projection,
    now: Timestamp,
    plan_id: &str,
    seen_hash: &str,
    decision: PlanDecision,
    reason: Option<&str>,
) -> Result<PlanDecided, PlanError> {
    let outcome = super::decide(p, plan_id, seen_hash, decision, reason, now.0)?;
    let entry = OperatorCommand::new(
        format!("plan {}", decision.as_str()),
        plan_id,
        Some(outcome.run_id.clone()),
        Some(outcome.hash.clone()),
        reason,
        outcome.changes.len() as u64,
        now.0,
    );
    let drafts = with_audit(outcome.drafts.clone(), &entry);
    Ok(PlanDecided {
        outcome,
        entry,
        drafts,
    })
}
