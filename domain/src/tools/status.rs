//! `bernstein_status`: liveness, task counts by status, cost by role, and task rows
//! on request — all answered from the projection's indexes, never by scanning the ledger or
//! counting tasks one by one. Rows come newest first, at most [`MAX_ROWS`] of them.
//! This handler must never write records.

use serde::{Deserialize, Serialize};

use bernstein_core::protocol::registry::{Effects, ToolError};

use crate::bound::{ToolContext, ToolSpec};
use bernstein_core::config::Tier;

use super::super::lifecycle::TaskStatus;
use super::super::projection::Projection;
use super::{Called, Tool};

pub const NAME: &str = "bernstein_status";

/// Most task rows one answer carries.
pub const MAX_ROWS: usize = 200;

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: false,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Task counts by status, cost by role; status or detail=true lists tasks \
(newest 200).";

/// Arguments of `bernstein_status`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {
    // List the tasks in this status.
    #[serde(default)]
    pub status: Option<TaskStatus>,
    // List tasks.
    #[serde(default)]
    pub detail: Option<bool>,
}

/// Task counts: the total and one count per status. Advertised as a map of counts (the keys
/// are the statuses, listed once in the input schema's `status` enum) rather than thirteen
/// repeated properties.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(with = "std::collections::BTreeMap<String, u64>")]
pub struct Counts {
    pub total: u64,
    pub planned: u64,
    pub open: u64,
    pub claimed: u64,
    pub in_progress: u64,
    pub done: u64,
    pub closed: u64,
    pub failed: u64,
    pub blocked: u64,
    pub waiting_for_subtasks: u64,
    pub cancelled: u64,
    pub orphaned: u64,
    pub pending_approval: u64,
}

impl Counts {
    /// Counts read from the projection's status index.
    pub fn of(p: &Projection) -> Counts {
        use TaskStatus::*;
        Counts {
            total: p.total(),
            planned: p.count(Planned),
            open: p.count(Open),
            claimed: p.count(Claimed),
            in_progress: p.count(InProgress),
            done: p.count(Done),
            closed: p.count(Closed),
            failed: p.count(Failed),
            blocked: p.count(Blocked),
            waiting_for_subtasks: p.count(WaitingForSubtasks),
            cancelled: p.count(Cancelled),
            orphaned: p.count(Orphaned),
            pending_approval: p.count(PendingApproval),
        }
    }
}

/// Spend of one role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RoleCost {
    pub role: String,
    pub cost_usd: f64,
    /// Tasks created with this role.
    pub tasks: u64,
}

/// Reported spend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cost {
    pub total_cost_usd: f64,
    /// By role name.
    pub per_role: Vec<RoleCost>,
}

/// One task row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskListing {
    pub id: String,
    pub title: String,
    /// (A status name: the enum is advertised once, in the input schema.)
    #[schemars(with = "String")]
    pub status: TaskStatus,
    pub role: String,
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub priority: u8,
}

/// Payload of `bernstein_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StatusAnswer {
    /// Always true: the server answered.
    pub live: bool,
    pub counts: Counts,
    pub cost: Cost,
    /// The status the rows were filtered by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub status_filter: Option<TaskStatus>,
    /// Task rows, newest first (with `status` or `detail=true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Vec<TaskListing>>,
    /// Whether more rows matched than were listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
}

/// `bernstein_status`, declared once (see [`Tool`]).
pub struct Status;

impl Tool for Status {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Task counts and cost";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::Core;
    const EFFECTS: Effects = EFFECTS;
    const ADVERTISES_ANSWER: bool = true;
    type Args = StatusArgs;
    type Answer = StatusAnswer;

    fn call(ctx: &ToolContext<'_>, args: StatusArgs) -> Called<StatusAnswer> {
        answer(ctx, args).into()
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<Status>()
}

fn micro_to_usd(micro: u64) -> f64 {
    micro as f64 / 1_000_000.0
}

fn answer(ctx: &ToolContext<'_>, args: StatusArgs) -> Result<StatusAnswer, ToolError> {
    let p = &ctx.snapshot.domain;
    let per_role: Vec<RoleCost> = p
        .roles()
        .iter()
        .map(|(role, t)| RoleCost {
            role: role.clone(),
            cost_usd: micro_to_usd(t.cost_micro_usd),
            tasks: t.tasks,
        })
        .collect();
    let total_micro: u64 = p.roles().values().map(|t| t.cost_micro_usd).sum();
    let list = args.detail == Some(true) || args.status.is_some();
    let (tasks, truncated) = if list {
        let mut rows: Vec<TaskListing> = p
            .tasks_newest_first(args.status)
            .take(MAX_ROWS + 1)
            .map(|r| TaskListing {
                id: r.id.to_string(),
                title: r.title.to_string(),
                status: r.status,
                role: r.role.to_string(),
                run_id: r.run_id.to_string(),
                parent_id: r.rare.parent_id.clone(),
                priority: r.priority,
            })
            .collect();
        let truncated = rows.len() > MAX_ROWS;
        rows.truncate(MAX_ROWS);
        (Some(rows), Some(truncated))
    } else {
        (None, None)
    };
    Ok(StatusAnswer {
        live: true,
        counts: Counts::of(p),
        cost: Cost {
            total_cost_usd: micro_to_usd(total_micro),
            per_role,
        },
        status_filter: args.status,
        tasks,
        truncated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Bench;
    use serde_json::json;

    #[test]
    fn empty_ledger_is_live_with_zero_counts() {
        let mut b = Bench::new();
        let v = b.ok(NAME, json!({}));
        assert_eq!(v["live"], true);
        assert_eq!(v["counts"]["total"], 0);
        assert_eq!(v["counts"]["waiting_for_subtasks"], 0);
        assert_eq!(v["cost"], json!({"total_cost_usd": 0.0, "per_role": []}));
        assert!(v.get("tasks").is_none());
    }

    #[test]
    fn counts_rows_and_filters() {
        let mut b = Bench::new();
        let root = b.start("root");
        b.ok(
            "bernstein_run",
            json!({"goal": "child", "parent_task_id": root, "role": "qa"}),
        );
        let v = b.ok(NAME, json!({"detail": true}));
        assert_eq!(v["counts"]["total"], 2);
        assert_eq!(v["counts"]["open"], 1);
        assert_eq!(v["counts"]["waiting_for_subtasks"], 1);
        assert_eq!(v["truncated"], false);
        let rows = v["tasks"].as_array().unwrap();
        assert_eq!(rows[0]["title"], "child");
        assert_eq!(rows[0]["parent_id"], root.as_str());
        assert_eq!(rows[1]["id"], root.as_str());
        assert_eq!(rows[1]["run_id"], root.as_str());
        assert_eq!(
            v["cost"]["per_role"],
            json!([{"role": "backend", "cost_usd": 0.0, "tasks": 1}, {"role": "qa", "cost_usd": 0.0, "tasks": 1}])
        );
        let f = b.ok(NAME, json!({"status": "waiting_for_subtasks"}));
        assert_eq!(f["status_filter"], "waiting_for_subtasks");
        assert_eq!(f["tasks"].as_array().unwrap().len(), 1);
        assert_eq!(f["tasks"][0]["id"], root.as_str());
        let none = b.ok(NAME, json!({"status": "failed"}));
        assert_eq!(none["tasks"], json!([]));
    }

    #[test]
    fn rows_are_bounded() {
        let mut b = Bench::new();
        for i in 0..(MAX_ROWS + 3) {
            b.start(&format!("goal {i}"));
        }
        let v = b.ok(NAME, json!({"detail": true}));
        assert_eq!(v["tasks"].as_array().unwrap().len(), MAX_ROWS);
        assert_eq!(v["truncated"], true);
        assert_eq!(v["tasks"][0]["title"], format!("goal {}", MAX_ROWS + 2));
        assert_eq!(v["counts"]["total"], MAX_ROWS + 3);
    }

    #[test]
    fn bad_arguments_are_refused() {
        let mut b = Bench::new();
        assert_eq!(
            b.refused(NAME, json!({"status": "paused"})).error,
            "invalid_arguments"
        );
        assert_eq!(
            b.refused(NAME, json!({"verbose": true})).error,
            "invalid_arguments"
        );
    }
}
