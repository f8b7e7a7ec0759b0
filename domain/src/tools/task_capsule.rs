//! `bernstein_task_capsule`: the signed context capsule of a task
//! ([`crate::capsule`]) — the task, its mailbox entries, the artifact versions it
//! posted and the chain heads it was cut at — and, with `verify: true` and a `capsule`, the
//! check of a capsule against this ledger.
//!
//! Issuing writes one `task.capsule_issued` audit record (so a capsule can later be found on
//! the ledger); verifying writes nothing. Refused: malformed or unknown task ids, `verify:
//! true` without a capsule (or a capsule without `verify: true`), and issuing while the server
//! has no signing key. A capsule that fails its checks is a report `{valid: false, problems}`,
//! not a refusal.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bound::{ToolContext, ToolSpec};
use crate::refusal::Refusal;
use bernstein_core::config::Tier;
use bernstein_core::ledger::AUDIT_STREAM;
use bernstein_core::protocol::refusal::Common;
use bernstein_core::protocol::registry::{Effects, ToolError};

use super::super::args::{TaskId, null_is_default};
use super::super::capsule::{self, CAPSULE_ISSUED};
use super::super::records;
use super::no_signer;
use super::{Called, Tool, unknown_task};

pub const NAME: &str = "bernstein_task_capsule";

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: true,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Cut a task's signed context capsule, or check one (verify).";

/// Arguments of `bernstein_task_capsule`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskCapsuleArgs {
    pub task_id: TaskId,
    /// Check `capsule` instead.
    #[serde(default, deserialize_with = "null_is_default")]
    pub verify: bool,
    /// One this tool returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capsule: Option<serde_json::Map<String, Value>>,
}

/// What the tool answers: a capsule, or the verdict on one.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum CapsuleAnswer {
    Capsule(Box<capsule::TaskCapsule>),
    Verdict(capsule::CapsuleVerdict),
}

/// `bernstein_task_capsule`, declared once (see [`Tool`]).
pub struct TaskCapsuleTool;

impl Tool for TaskCapsuleTool {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Get or verify a task capsule";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::Standard;
    const EFFECTS: Effects = EFFECTS;
    type Args = TaskCapsuleArgs;
    type Answer = CapsuleAnswer;

    fn call(ctx: &ToolContext<'_>, args: TaskCapsuleArgs) -> Called<CapsuleAnswer> {
        answer(ctx, args).unwrap_or_else(Called::refused)
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<TaskCapsuleTool>()
}

fn answer(
    ctx: &ToolContext<'_>,
    args: TaskCapsuleArgs,
) -> Result<Called<CapsuleAnswer>, ToolError> {
    let id = args.task_id.as_str();
    let p = &ctx.snapshot.domain;
    let task = p
        .task(id)
        .ok_or_else(|| unknown_task(Refusal::UnknownTask, "task_id", id))?;
    let signer = ctx.config.signing_key.as_ref();
    match (args.verify, args.capsule) {
        (true, Some(c)) => {
            let c = Value::Object(c);
            let c = capsule::extract_capsule(&c).unwrap_or(c);
            let mut verdict = capsule::verify_on(p, &c, signer.map(|s| s.public_key_pem()));
            if verdict.task_id.as_deref().is_some_and(|t| t != id) {
                verdict.valid = false;
                verdict
                    .problems
                    .push(format!("the capsule is of another task than {id}"));
            }
            Ok(Called::ok(CapsuleAnswer::Verdict(verdict)))
        }
        (verify, capsule) if verify != capsule.is_some() => Err(ToolError::new(
            Common::InvalidArguments,
            "verify: true and capsule go together: pass both to check a capsule, neither to get one",
            "Call with {task_id} to get a capsule, or {task_id, verify: true, capsule} to check one.",
        )
        .with("field", if verify { "capsule" } else { "verify" })),
        _ => {
            let signer = signer.ok_or_else(|| no_signer(NAME))?;
            let c = capsule::build(ctx.snapshot, task, ctx.spec_revision, signer);
            let issued = capsule::issued_record(&c, ctx.now.0);
            Ok(Called {
                drafts: vec![records::draft(AUDIT_STREAM, CAPSULE_ISSUED, &issued)],
                ..Called::ok(CapsuleAnswer::Capsule(Box::new(c)))
            })
        }
    }
}

#[cfg(test)]
mod tests;
