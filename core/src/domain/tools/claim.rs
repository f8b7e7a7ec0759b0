//! `bernstein_claim`: the pull-worker's claim. Offers the first open task the
//! filter admits (claim order, dependencies done) and answers a signed claim receipt; a filter
//! that matches nothing answers a signed refusal receipt (`granted: false`, `taskId: ""`).
//!
//! Both are recorded as a `task.claim_receipt` audit entry; a grant also moves the task
//! open → claimed (actor: the claimer) in the same transaction. The records are committed with
//! compare-and-append against the snapshot the decision was taken on, so two claimers can never
//! win one task: the loser's append conflicts and it is decided again on the newer ledger.
//! Without a signing key the call is refused; it never answers an unsigned receipt.

use crate::protocol::refusal::Common;
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Tier;
use crate::domain::bound::{ToolContext, ToolSpec};
use crate::ledger::AUDIT_STREAM;
use crate::protocol::registry::{Effects, ToolError, ToolOutput};

use super::super::claims::ClaimReceipt;
use super::super::claims::{self, ClaimEntry, ClaimFilter, ClaimedTask, Claimer};
use super::super::lease;
use super::super::lifecycle::TaskStatus;
use super::super::records;
use super::super::status_changes::{ChangeNote, StatusChanges};
use super::no_signer;
use super::{Called, Tool, check_name, internal};

pub const NAME: &str = "bernstein_claim";

/// Most ids `completed_ids` may list.
pub const MAX_COMPLETED_IDS: usize = 4096;

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: true,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Claim the next open task matching the filters whose depends_on are \
done, for lease_seconds. Answers a signed receipt {taskId, granted, ...} (taskId \"\" when none); \
`bernstein backlog verify-claim` checks it.";

/// Arguments of `bernstein_claim`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimArgs {
    /// The worker's identity.
    #[schemars(length(min = 1, max = 256))]
    pub claimer_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub capability: Option<String>,
    /// Done tasks this worker holds: a task is offered only if all its dependencies are here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub completed_ids: Option<Vec<String>>,
    /// Skip tasks claimed this often.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 100000))]
    pub max_attempts: Option<u32>,
    /// `sha256:` agent card fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub claimer_card_fingerprint: Option<String>,
    /// Renewed by each message of the claimer (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub lease_seconds: Option<u64>,
}

/// `bernstein_claim`, declared once (see [`Tool`]).
pub struct Claim;

impl Tool for Claim {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Claim a task";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::Standard;
    const EFFECTS: Effects = EFFECTS;
    type Args = ClaimArgs;
    type Answer = ClaimReceipt;

    fn call(ctx: &ToolContext<'_>, args: ClaimArgs) -> Called<ClaimReceipt> {
        claim(ctx, args).unwrap_or_else(Called::refused)
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<Claim>()
}

/// A call with arguments as the peer sent them.
pub fn handle(ctx: &ToolContext<'_>, args: Value) -> ToolOutput {
    super::call::<Claim>(ctx, args)
}

/// The filter of validated arguments.
fn filter_of(args: &ClaimArgs) -> Result<ClaimFilter, ToolError> {
    check_name("claimer_id", &args.claimer_id, 256)?;
    for (field, value, max) in [
        ("role", &args.role, 64),
        ("project", &args.project, 256),
        ("capability", &args.capability, 256),
        (
            "claimer_card_fingerprint",
            &args.claimer_card_fingerprint,
            256,
        ),
    ] {
        if let Some(v) = value {
            check_text(field, v, max)?;
        }
    }
    let completed_ids = match &args.completed_ids {
        None => None,
        Some(ids) if ids.len() > MAX_COMPLETED_IDS => {
            return Err(ToolError::new(
                Common::InvalidArguments,
                format!(
                    "completed_ids lists {} ids; at most {MAX_COMPLETED_IDS}",
                    ids.len()
                ),
                "List only the dependencies whose results this worker holds.",
            )
            .with("field", "completed_ids"));
        }
        Some(ids) => {
            for id in ids {
                check_name("completed_ids", id, 256)?;
            }
            Some(ids.iter().cloned().collect::<BTreeSet<String>>())
        }
    };
    if args.max_attempts.is_some_and(|m| m > 100_000) {
        return Err(ToolError::new(
            Common::InvalidArguments,
            "max_attempts must be from 0 to 100000",
            "Omit max_attempts to offer tasks however often they were claimed.",
        )
        .with("field", "max_attempts"));
    }
    Ok(ClaimFilter {
        role: args.role.clone(),
        project: args.project.clone(),
        capability: args.capability.clone(),
        completed_ids,
        max_attempts: args.max_attempts,
    })
}

/// A free-text filter value: non-blank, at most `max` characters, no control characters.
fn check_text(field: &str, value: &str, max: usize) -> Result<(), ToolError> {
    if value.trim().is_empty() || value.chars().count() > max || value.chars().any(char::is_control)
    {
        return Err(ToolError::new(
            Common::InvalidArguments,
            format!("{field} must hold 1 to {max} characters of text without control characters"),
            "Omit the field to leave that part of the filter open.",
        )
        .with("field", field));
    }
    Ok(())
}

/// The lease length in ms of validated arguments.
fn lease_ms_of(args: &ClaimArgs) -> Result<u64, ToolError> {
    let secs = args.lease_seconds.unwrap_or(lease::DEFAULT_LEASE_SECONDS);
    if !(lease::MIN_LEASE_SECONDS..=lease::MAX_LEASE_SECONDS).contains(&secs) {
        return Err(ToolError::new(
            Common::InvalidArguments,
            format!(
                "lease_seconds must be from {} to {}",
                lease::MIN_LEASE_SECONDS,
                lease::MAX_LEASE_SECONDS
            ),
            "Omit lease_seconds for the default of 300 seconds.",
        )
        .with("field", "lease_seconds"));
    }
    Ok(secs * 1000)
}

fn claim(ctx: &ToolContext<'_>, args: ClaimArgs) -> Result<Called<ClaimReceipt>, ToolError> {
    let filter = filter_of(&args)?;
    let lease_ms = lease_ms_of(&args)?;
    let signer = ctx
        .config
        .signing_key
        .as_ref()
        .ok_or_else(|| no_signer(NAME))?;
    let claimer = Claimer {
        id: &args.claimer_id,
        card_fingerprint: args.claimer_card_fingerprint.as_deref(),
    };
    let now = ctx.now.0;
    let decision = claims::decide(ctx.snapshot, claimer, &filter, now, signer);
    let mut drafts = Vec::new();
    if let Some(task) = decision.task {
        let mut changes = StatusChanges::new(&ctx.snapshot.domain);
        let mut change = |to: TaskStatus, reason: &str| {
            let note = ChangeNote {
                reason: Some(reason),
                actor: Some(&args.claimer_id),
                summary: None,
            };
            changes
                .change(&task.id, to, note, now)
                .map(drop)
                .map_err(|e| internal(NAME, &e.to_string()))
        };
        if task.status != TaskStatus::Open {
            // An expired lease: record the takeover, then back to the queue and on to this
            // claimer in the same transaction.
            drafts.push(lease::reclaim_draft(task, &args.claimer_id, now));
            let previous = task.claimer.as_deref().unwrap_or("?");
            let expired = task.rare.lease_expires_at.unwrap_or_default();
            change(
                TaskStatus::Open,
                &format!("lease of {previous} expired at {expired}"),
            )?;
        }
        change(
            TaskStatus::Claimed,
            &format!("claimed by {}", args.claimer_id),
        )?;
        let (backlog, journal) = changes.into_drafts();
        drafts.extend(backlog);
        drafts.push(lease::lease_draft(task, &args.claimer_id, lease_ms, now));
        drafts.extend(journal);
    }
    let entry = ClaimEntry::of(&decision, &filter, ctx.now.0);
    drafts.push(records::draft(AUDIT_STREAM, records::CLAIM_RECEIPT, &entry));
    let mut receipt = decision.receipt.clone();
    receipt.task = decision.task.map(|t| ClaimedTask::of(t, now, lease_ms));
    Ok(Called {
        drafts,
        run_id: decision.task.map(|t| t.run_id.to_string()),
        ..Called::ok(receipt)
    })
}

#[cfg(test)]
mod lease_tests;
#[cfg(test)]
mod revision_tests;
#[cfg(test)]
mod tests;
