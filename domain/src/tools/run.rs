//! `bernstein_run`: record a task for a goal and answer at once with its ids.
//!
//! Without `parent_task_id` the task is the root of a new run and its id is the run id. With
//! it, the task joins the parent's run as a subtask: an open, claimed or in-progress parent
//! moves to `waiting_for_subtasks` (the lifecycle's Split edge), a parent already waiting stays
//! so, a planned parent gets a planned subtask (plans are decided as a whole), and every other
//! parent is refused. `plan: true` makes a new run a plan: its root is `planned` (and so is
//! every subtask added under it) until an operator decides the plan; the answer carries the
//! plan's hash with the new task in it (`bernstein_approve` on the plan id asks a person). `depends_on` names tasks
//! that must be done before a worker is offered this one (unknown ids and cycles are refused,
//! see [`crate::deps`]). The task id is derived from the ledger head and the
//! normalized arguments. This handler must never wait for the work itself.

use crate::resource_links;
use serde::{Deserialize, Serialize};

use crate::bound::{ToolContext, ToolSpec};
use crate::refusal::Refusal;
use bernstein_core::canonical::to_canonical_bytes;
use bernstein_core::config::Tier;
use bernstein_core::protocol::refusal::Common;
use bernstein_core::protocol::registry::{Effects, TaskSupport, ToolError};

use super::super::args::{Ident, Int, List, TaskId, Text};
use super::super::deps::check_dependencies;
use super::super::dlp::Redactions;
use super::super::ids::derive_task_id;
use super::super::lifecycle::{self, TaskStatus};
use super::super::plans;
use super::super::records::{self, Complexity, Scope, TaskCreated};
use super::{Called, Tool, unknown_task};

pub const NAME: &str = "bernstein_run";

/// Advised wait before the first poll of a new run.
pub const POLL_AFTER_MS: u64 = 20_000;
/// Longest title, in characters.
pub const TITLE_MAX_CHARS: usize = 80;
/// Role of a root task created without one.
pub const DEFAULT_ROLE: &str = "backend";
/// Priority of a task created without one (1 = critical, 3 = nice to have).
pub const DEFAULT_PRIORITY: u8 = 2;
/// Estimate of a task created without one.
pub const DEFAULT_ESTIMATED_MINUTES: u32 = 30;

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: true,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Start a run; returns at once. It takes minutes to hours: poll \
bernstein_run_status after poll_after_ms, never call again to wait.";

/// Arguments of `bernstein_run`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// First line: the title.
    pub goal: Text<1, 8192>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_ROLE))]
    pub role: Option<Ident<64>>,
    /// 1 critical, 3 low.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_PRIORITY))]
    pub priority: Option<Int<u8, 1, 3>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = Scope::default()))]
    pub scope: Option<Scope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = Complexity::default()))]
    pub complexity: Option<Complexity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_ESTIMATED_MINUTES))]
    pub estimated_minutes: Option<Int<u32, 1, 10080>>,
    /// Make it a subtask of this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_task_id: Option<TaskId>,
    /// Must be done first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<List<TaskId, 64>>,
    /// Completion needs bernstein_approve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_approval: Option<bool>,
    /// Decided by a person: bernstein_approve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<Ident<256>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<List<Ident<64>, 16>>,
}

/// Payload of `bernstein_run`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunAnswer {
    /// The new task. For a new run this is also the run id.
    pub task_id: String,
    pub title: String,
    /// A task status name (the enum is advertised once, in bernstein_status's input schema).
    #[schemars(with = "String")]
    pub status: TaskStatus,
    /// The run to poll with bernstein_run_status.
    pub run_id: String,
    /// Wait this long before the first poll.
    pub poll_after_ms: u64,
    /// The parent, for a subtask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_task_id: Option<String>,
    /// The plan the task belongs to while it waits for an operator's decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_id: Option<String>,
    /// The plan's rendering hash with this task in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_hash: Option<String>,
    /// Secrets DLP replaced before recording, per argument (absent when none; docs/RECORDS.md §7).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub redactions: std::collections::BTreeMap<String, u64>,
    /// The kinds replaced, sorted (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
}

/// `bernstein_run`, declared once (see [`Tool`]).
pub struct Run;

impl Tool for Run {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Start a run";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::Core;
    const EFFECTS: Effects = EFFECTS;
    const TASK_SUPPORT: TaskSupport = TaskSupport::Optional;
    const ADVERTISES_ANSWER: bool = true;
    type Args = RunArgs;
    type Answer = RunAnswer;

    fn call(ctx: &ToolContext<'_>, args: RunArgs) -> Called<RunAnswer> {
        plan(ctx, args).unwrap_or_else(Called::refused)
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<Run>()
}

/// The title of a goal: its first non-blank line, trimmed, at most 80 characters.
pub fn title_of(goal: &str) -> String {
    let line = goal
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    line.chars()
        .take(TITLE_MAX_CHARS)
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// Where a new task goes: its run, its parent, its status, and the parent's change if any.
struct Placement {
    run_id: Option<String>,
    parent_id: Option<String>,
    parent_role: Option<String>,
    status: TaskStatus,
    parent_moves_to: Option<TaskStatus>,
}

fn plan(ctx: &ToolContext<'_>, args: RunArgs) -> Result<Called<RunAnswer>, ToolError> {
    let plan_root = args.plan == Some(true);
    if plan_root && args.parent_task_id.is_some() {
        return Err(ToolError::new(
            Common::InvalidArguments,
            "plan: true starts a new run and cannot be combined with parent_task_id",
            "Create the plan's root without parent_task_id; subtasks added under a planned task are planned too.",
        )
        .with("field", "plan"));
    }
    check_capabilities(&args)?;
    let mut placement = place(ctx, args.parent_task_id.as_deref())?;
    if plan_root {
        placement.status = lifecycle::initial_status(true);
    }
    let depends_on = check_dependencies(
        &ctx.snapshot.domain,
        args.depends_on.as_deref().unwrap_or_default(),
        placement.parent_id.as_deref(),
    )?;

    let canonical = serde_json::to_value(&args)
        .ok()
        .and_then(|v| to_canonical_bytes(&v).ok())
        .expect("arguments of strings, small integers and enums always have a canonical form");
    let task_id = derive_task_id(&ctx.snapshot.position.head, &canonical);
    if ctx.snapshot.domain.task(&task_id).is_some() {
        return Err(ToolError::new(
            Refusal::IdCollision,
            format!("the derived task id {task_id} already exists"),
            "This should not happen; retry the call (the ledger head will have moved).",
        )
        .with("task_id", task_id));
    }

    let run_id = placement.run_id.clone().unwrap_or_else(|| task_id.clone());
    // The title comes from the redacted goal, so a secret the 80-character cut would split
    // cannot leave half of itself behind.
    let mut redactions = Redactions::default();
    let goal = redactions.field("goal", &args.goal);
    let role = args
        .role
        .map(Ident::into_string)
        .or(placement.parent_role)
        .unwrap_or_else(|| DEFAULT_ROLE.to_string());
    let task = TaskCreated {
        task_id: task_id.clone(),
        run_id: run_id.clone(),
        parent_id: placement.parent_id.clone(),
        title: title_of(&goal),
        goal,
        role,
        priority: args.priority.map_or(DEFAULT_PRIORITY, Int::get),
        scope: args.scope.unwrap_or_default(),
        complexity: args.complexity.unwrap_or_default(),
        estimated_minutes: args
            .estimated_minutes
            .map_or(DEFAULT_ESTIMATED_MINUTES, Int::get),
        status: placement.status,
        created_at: ctx.now.0,
        depends_on,
        requires_approval: args.requires_approval == Some(true),
        plan: plan_root,
        project: args.project.clone().map(Ident::into_string),
        capabilities: args.capabilities.clone().map_or_else(Vec::new, |caps| {
            caps.into_vec()
                .into_iter()
                .map(Ident::into_string)
                .collect()
        }),
        redactions: redactions.counts(),
        redacted_kinds: redactions.kinds(),
    };

    let mut drafts = match (&placement.parent_id, placement.parent_moves_to) {
        (None, _) => records::new_run_drafts(&task),
        (Some(_), None) => {
            let (backlog, journal) = records::new_subtask_drafts(&task);
            vec![backlog, journal]
        }
        (Some(parent), Some(to)) => {
            let (backlog, journal) = records::new_subtask_drafts(&task);
            let reason = format!("subtask {task_id} created");
            let (pb, pj) = crate::status_changes::status_change_drafts(
                &ctx.snapshot.domain,
                parent,
                to,
                Some(&reason),
                ctx.now.0,
            )
            .map_err(|e| internal(&e.to_string()))?;
            vec![backlog, pb, journal, pj]
        }
    };
    super::super::trace::stamp_task_records(&mut drafts, ctx.meta);

    let plan_id = (task.status == TaskStatus::Planned).then(|| run_id.clone());
    // A planned task under a root not made with plan: true has no plan document, so no hash.
    let plan_hash = plan_id.as_deref().and_then(|plan| {
        plans::document_adding(&ctx.snapshot.domain, plan, &task)
            .ok()
            .map(|doc| doc.hash())
    });
    let answer = RunAnswer {
        task_id,
        title: task.title,
        status: task.status,
        run_id: run_id.clone(),
        poll_after_ms: POLL_AFTER_MS,
        parent_task_id: placement.parent_id,
        plan_id,
        plan_hash,
        redactions: redactions.counts(),
        redacted_kinds: redactions.kinds(),
    };
    let mut links = vec![resource_links::run_link(&run_id)];
    if answer.task_id != run_id {
        links.push(resource_links::task_link(&answer.task_id));
    }
    // The id derives from the head served from, and the new run's journal and task must not
    // exist yet: both are streams it writes (a new one's head is the zero digest).
    let called = Called {
        drafts,
        run_id: Some(run_id.clone()),
        links,
        ..Called::ok(answer)
    };
    Ok(called.reading_task_of(&run_id))
}

fn place(ctx: &ToolContext<'_>, parent: Option<&str>) -> Result<Placement, ToolError> {
    let Some(parent) = parent else {
        return Ok(Placement {
            run_id: None,
            parent_id: None,
            parent_role: None,
            status: lifecycle::initial_status(false),
            parent_moves_to: None,
        });
    };
    let row = ctx
        .snapshot
        .domain
        .task(parent)
        .ok_or_else(|| unknown_task(Refusal::UnknownParent, "parent_task_id", parent))?;
    let (status, parent_moves_to) = match row.status {
        s if s.is_terminal() => {
            return Err(ToolError::new(
                Refusal::ParentTerminal,
                format!("parent task {parent} is {s}: a finished task takes no subtasks"),
                "Start a new run with bernstein_run (no parent_task_id) instead.",
            )
            .with("parent_task_id", parent)
            .with("current_status", s.as_str()));
        }
        TaskStatus::WaitingForSubtasks => (lifecycle::initial_status(false), None),
        TaskStatus::Planned => (lifecycle::initial_status(true), None),
        s if lifecycle::splittable().contains(&s) => (
            lifecycle::initial_status(false),
            Some(TaskStatus::WaitingForSubtasks),
        ),
        s => {
            return Err(ToolError::new(
                Refusal::ParentNotAcceptingSubtasks,
                format!("parent task {parent} is {s} and cannot take subtasks now"),
                "Resolve the parent first (it is blocked, orphaned or awaiting approval), or start a new run.",
            )
            .with("parent_task_id", parent)
            .with("current_status", s.as_str())
            .with("accepting_statuses", accepting_statuses()));
        }
    };
    Ok(Placement {
        run_id: Some(row.run_id.to_string()),
        parent_id: Some(row.id.to_string()),
        parent_role: Some(row.role.to_string()),
        status,
        parent_moves_to,
    })
}

/// Refuses a capability listed twice (each one's shape, and the list's length, are their
/// types' checks).
fn check_capabilities(args: &RunArgs) -> Result<(), ToolError> {
    let caps = args.capabilities.as_deref().unwrap_or_default();
    if caps.iter().enumerate().any(|(i, c)| caps[..i].contains(c)) {
        return Err(ToolError::new(
            Common::InvalidArguments,
            "capabilities lists a capability twice",
            "Use short plain labels such as api or python.",
        )
        .with("field", "capabilities"));
    }
    Ok(())
}

/// Statuses a parent may be in when a subtask is created under it.
pub fn accepting_statuses() -> Vec<&'static str> {
    let mut out = lifecycle::splittable();
    out.push(TaskStatus::WaitingForSubtasks);
    out.push(TaskStatus::Planned);
    lifecycle::names(&out)
}

fn internal(detail: &str) -> ToolError {
    ToolError::new(
        Common::InternalError,
        format!("bernstein_run could not record the subtask: {detail}"),
        "This is a bug in the server; the ledger was not changed.",
    )
}

#[cfg(test)]
mod tests;
