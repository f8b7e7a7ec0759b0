//! Task dependencies (`depends_on` of `bernstein_run`): shape, existence and cycle checks for
//! a new task's dependency list, and the dependency gate that a claim and a completion from
//! `open` (which re-claims the task) both pass ([`unmet_dependencies`]).
//!
//! "X waits for Y" when X depends on Y (X is not offered until Y is done) or Y is a subtask of
//! X (X resumes only when its subtasks end). A new task N under parent P adds the edges
//! P → N and N → d for each dependency d; since nothing else points at N yet, those edges close
//! a cycle exactly when some d already waits, directly or through others, for P (or is P). Such
//! a dependency is refused: the tasks would wait for each other forever.
//!
//! This module reads the projection only; it never drafts records.

use std::collections::BTreeSet;

use crate::refusal::Refusal;
use bernstein_core::protocol::refusal::Common;
use bernstein_core::protocol::registry::ToolError;

use super::args::TaskId;
use super::claims::dependency_done;
use super::lifecycle::TaskStatus;
use super::projection::{Projection, TaskRow};

/// Most dependencies one task may name.
pub const MAX_DEPENDENCIES: usize = 64;
/// Most tasks the cycle search visits before refusing (bounds the cost of one call).
pub const MAX_CYCLE_SEARCH: usize = 100_000;

/// Checks `depends_on` for a new task under `parent` (each id's shape is its type's check);
/// returns the list without duplicates, in the order given.
pub fn check_dependencies(
    p: &Projection,
    depends_on: &[TaskId],
    parent: Option<&str>,
) -> Result<Vec<String>, ToolError> {
    if depends_on.len() > MAX_DEPENDENCIES {
        return Err(ToolError::new(
            Common::InvalidArguments,
            format!(
                "depends_on names {} tasks; at most {MAX_DEPENDENCIES} are allowed",
                depends_on.len()
            ),
            "Split the work so each task waits for fewer tasks, or group them under a parent.",
        )
        .with("field", "depends_on"));
    }
    let mut out: Vec<String> = Vec::new();
    for id in depends_on {
        let id = id.as_str();
        if p.task(id).is_none() {
            return Err(ToolError::new(
                Refusal::UnknownDependency,
                format!("depends_on names {id}, which is no task in this project's ledger"),
                "Name tasks that already exist (ids bernstein_run returned); create the dependency first.",
            )
            .with("field", "depends_on")
            .with("dependency", id));
        }
        if !out.iter().any(|o| o == id) {
            out.push(id.to_string());
        }
    }
    if let Some(parent) = parent {
        for d in &out {
            if waits_for(p, d, parent)? {
                return Err(ToolError::new(
                    Refusal::DependencyCycle,
                    format!(
                        "depends_on {d} would close a cycle: {d} already waits for {parent}, \
                         which would wait for the new subtask"
                    ),
                    "A subtask cannot depend on its parent, an ancestor, or a task that waits for them.",
                )
                .with("field", "depends_on")
                .with("dependency", d.as_str())
                .with("parent_task_id", parent));
            }
        }
    }
    Ok(out)
}

/// The dependencies of `row` that are not finished successfully (`done` or `closed`), in
/// `depends_on` order, with their status (`None` for a task the ledger does not hold).
pub fn unmet_dependencies(p: &Projection, row: &TaskRow) -> Vec<(String, Option<TaskStatus>)> {
    row.rare
        .depends_on
        .iter()
        .filter(|d| !dependency_done(p, d))
        .map(|d| (d.clone(), p.task(d).map(|t| t.status)))
        .collect()
}

/// The refusal of an action on `row` (`verb`: what was attempted) while some of its
/// dependencies are not done: `dependencies_not_done`, naming each unmet one and its status.
pub fn dependencies_not_done(p: &Projection, row: &TaskRow, verb: &str) -> Option<ToolError> {
    let unmet = unmet_dependencies(p, row);
    if unmet.is_empty() {
        return None;
    }
    let names: Vec<&str> = unmet.iter().map(|(d, _)| d.as_str()).collect();
    let listed: Vec<serde_json::Value> = unmet
        .iter()
        .map(|(d, s)| serde_json::json!({"task_id": d, "status": s.map(|s| s.as_str())}))
        .collect();
    Some(
        ToolError::new(
            Refusal::DependenciesNotDone,
            format!(
                "task {} cannot be {verb}: it depends on {} not done yet",
                row.id,
                names.join(", ")
            ),
            "Finish the dependencies first (bernstein_run_status shows them); a task is offered \
             and completable from open only when everything it depends on is done.",
        )
        .with("task_id", row.id.as_str())
        .with("current_status", row.status.as_str())
        .with("unmet_dependencies", listed),
    )
}

/// Whether `from` waits for `target` (or is it), following dependencies and subtasks.
fn waits_for(p: &Projection, from: &str, target: &str) -> Result<bool, ToolError> {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut stack = vec![from];
    while let Some(id) = stack.pop() {
        if id == target {
            return Ok(true);
        }
        if !seen.insert(id) {
            continue;
        }
        if seen.len() > MAX_CYCLE_SEARCH {
            return Err(ToolError::new(
                Refusal::DependencyGraphTooLarge,
                format!(
                    "checking depends_on for cycles visited more than {MAX_CYCLE_SEARCH} tasks"
                ),
                "Depend on fewer or more recent tasks.",
            )
            .with("field", "depends_on"));
        }
        if let Some(row) = p.task(id) {
            stack.extend(row.rare.depends_on.iter().map(String::as_str));
            stack.extend(row.rare.children.iter().map(String::as_str));
        }
    }
    Ok(false)
}
