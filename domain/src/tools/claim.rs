//! `bernstein_claim`: the pull-worker's claim. Offers the first open task the
//! filter admits (claim order, dependencies done) and answers a signed claim receipt; a filter
//! that matches nothing answers a signed refusal receipt (`granted: false`, `taskId: ""`).
//!
//! Both are recorded as a `task.claim_receipt` audit entry; a grant also moves the task
//! open → claimed (actor: the claimer) in the same transaction. The records are committed with
//! compare-and-append against the snapshot the decision was taken on, so two claimers can never
//! win one task: the loser's append conflicts and it is decided again on the newer ledger.
//! Without a signing key the call is refused; it never answers an unsigned receipt.
//!
//! With `wait_ms`, a claim that finds nothing holds its answer (a long poll: no thread, no
//! record) until the backlog moves or the next lease ends, and is decided again then; only
//! the answer it finally gives is recorded, so an idle worker appends one refusal per wait.

use crate::resource_links;
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::bound::{ToolContext, ToolSpec};
use bernstein_core::config::Tier;
use bernstein_core::ledger::{AUDIT_STREAM, BACKLOG_STREAM};
use bernstein_core::protocol::registry::{Effects, ToolError};

use super::super::args::{Ident, Int, List, TaskId};
use super::super::claims::ClaimReceipt;
use super::super::claims::{self, ClaimEntry, ClaimFilter, ClaimedTask, Claimer};
use super::super::lease;
use super::super::lifecycle::TaskStatus;
use super::super::records;
use super::super::status_changes::{ChangeNote, StatusChanges};
use super::no_signer;
use super::{Called, Tool, internal};

pub const NAME: &str = "bernstein_claim";

/// Most ids `completed_ids` may list.
pub const MAX_COMPLETED_IDS: usize = 4096;

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: true,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Claim the next matching open task with depends_on done for \
lease_seconds, waiting up to wait_ms. Answers a signed receipt; taskId \"\" if none.";

/// Arguments of `bernstein_claim`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimArgs {
    // The worker's identity.
    pub claimer_id: Ident<256>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Ident<64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<Ident<256>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<Ident<64>>,
    /// Offers need all depends_on here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_ids: Option<List<TaskId, MAX_COMPLETED_IDS>>,
    /// Skip tasks claimed this often.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<Int<u32, 0, 100_000>>,
    // The `sha256:` fingerprint of the worker's agent card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimer_card_fingerprint: Option<Ident<256>>,
    /// Claimer messages renew it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = lease::DEFAULT_LEASE_SECONDS))]
    pub lease_seconds: Option<Int<u64, { lease::MIN_LEASE_SECONDS }, { lease::MAX_LEASE_SECONDS }>>,
    // A long poll: the most milliseconds to wait for a task when none is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<Int<u32, 1, { MAX_WAIT_MS }>>,
}

/// Longest `wait_ms` (the engine's own limit on a held answer is the same).
pub const MAX_WAIT_MS: u64 = 120_000;

/// How long past a lease's end a waiting claim wakes: the lease has then ended by any clock
/// reading of the same millisecond.
const AFTER_LEASE_END_MS: u64 = 5;

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

/// The filter of validated arguments (each argument's limits are its type's).
fn filter_of(args: &ClaimArgs) -> ClaimFilter {
    ClaimFilter {
        role: args.role.clone().map(Ident::into_string),
        project: args.project.clone().map(Ident::into_string),
        capability: args.capability.clone().map(Ident::into_string),
        completed_ids: args.completed_ids.as_ref().map(|ids| {
            ids.iter()
                .map(|id| id.to_string())
                .collect::<BTreeSet<String>>()
        }),
        max_attempts: args.max_attempts.map(Int::get),
    }
}

/// The lease length in ms of validated arguments.
fn lease_ms_of(args: &ClaimArgs) -> u64 {
    let secs = args
        .lease_seconds
        .map_or(lease::DEFAULT_LEASE_SECONDS, Int::get);
    secs * 1000
}

fn claim(ctx: &ToolContext<'_>, args: ClaimArgs) -> Result<Called<ClaimReceipt>, ToolError> {
    let filter = filter_of(&args);
    let lease_ms = lease_ms_of(&args);
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
    let wait_ms = match (decision.task, args.wait_ms) {
        (None, Some(wait)) => wait_for(ctx, u64::from(wait.get())),
        _ => None,
    };
    let links = decision
        .task
        .map(|t| {
            vec![
                resource_links::task_link(&t.id),
                resource_links::run_link(&t.run_id),
            ]
        })
        .unwrap_or_default();
    Ok(Called {
        drafts,
        links,
        run_id: decision.task.map(|t| t.run_id.to_string()),
        wait_ms,
        // Tasks are created, freed and leased on the backlog only.
        watch: wait_ms.map(|_| BACKLOG_STREAM.to_string()),
        // The selection read the backlog (and a grant writes its run's journal, which is read
        // too). The receipt names the audit head it was decided at, and its entry may stand
        // after other calls' records: its call record then says where (`read_at`), which is
        // what the verifier checks (claim_verify.rs, check 4).
        reads: Some(vec![BACKLOG_STREAM.to_string()]),
        ..Called::ok(receipt)
    })
}

/// How long a claim that found nothing may wait: `wait_ms`, cut at the next lease end (a
/// task whose lease ends is claimable again with no record to wake the wait).
fn wait_for(ctx: &ToolContext<'_>, wait_ms: u64) -> Option<u64> {
    let now = ctx.now.0;
    let until_lease_end = ctx
        .snapshot
        .domain
        .next_lease_end(now)
        .map_or(u64::MAX, |end| end - now + AFTER_LEASE_END_MS);
    Some(wait_ms.min(until_lease_end)).filter(|ms| *ms > 0)
}

#[cfg(test)]
mod lease_tests;
#[cfg(test)]
mod revision_tests;
#[cfg(test)]
mod tests;
