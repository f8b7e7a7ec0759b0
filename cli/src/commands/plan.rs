//! `bernstein plan list|show|approve|reject`: an operator reviews a plan and decides it as a
//! whole. `show` prints the plan's tasks and its hash; `approve` and `reject` take that hash
//! and refuse with exit 3 (the equivalent of HTTP 409 Conflict) when the plan changed since,
//! before promoting or cancelling anything. Decisions are the core's (`domain::plans`),
//! committed through the shared operator commit loop (compare-and-append with re-decision on
//! conflict). Exit 0 done, 1 refused (unknown plan, nothing left to decide), 2 usage or IO
//! error, 3 stale hash.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use bernstein_core::ledger::Store;
use bernstein_domain::Projection;
use bernstein_domain::operator;
use bernstein_domain::plans::{self, PlanDecision, PlanDocument};
use clap::Subcommand;
use serde_json::json;

use super::task::{commit_operator, print_json};

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// List the project's plans with their hashes.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a plan's tasks and the hash to approve or reject it with.
    Show {
        /// The plan id (its root task's id).
        plan_id: String,
        /// Print the plan document and hash as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a plan: every planned task becomes open.
    Approve {
        /// The plan id (its root task's id, as `plan list` shows it).
        plan_id: String,
        /// The hash `plan show` printed (refused with exit 3 if the plan changed since).
        #[arg(long, value_name = "HASH")]
        hash: String,
        /// Why, recorded in the ledger.
        #[arg(long)]
        reason: Option<String>,
        /// Print the decision (every task it changed) as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Reject a plan: every task still planned is cancelled.
    Reject {
        /// The plan id (its root task's id, as `plan list` shows it).
        plan_id: String,
        /// The hash `plan show` printed (refused with exit 3 if the plan changed since).
        #[arg(long, value_name = "HASH")]
        hash: String,
        /// Why, recorded in the ledger.
        #[arg(long)]
        reason: Option<String>,
        /// Print the decision (every task it changed) as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(workdir: &Path, store: Option<&str>, command: PlanCommand) -> Result<ExitCode, String> {
    let open = &|| super::open_operator_store(workdir, store);
    match command {
        PlanCommand::List { json } => list(open, json),
        PlanCommand::Show { plan_id, json } => show(open, &plan_id, json),
        PlanCommand::Approve {
            plan_id,
            hash,
            reason,
            json,
        } => decide(open, &plan_id, &hash, PlanDecision::Approve, reason, json),
        PlanCommand::Reject {
            plan_id,
            hash,
            reason,
            json,
        } => decide(open, &plan_id, &hash, PlanDecision::Reject, reason, json),
    }
}

/// Opens the store an operator command works on (see `open_operator_store`).
type OpenStore<'a> = &'a dyn Fn() -> Result<(Arc<dyn Store<Projection>>, Vec<u8>), String>;

fn list(open: OpenStore<'_>, as_json: bool) -> Result<ExitCode, String> {
    let (store, _) = open()?;
    let snap = store.snapshot().map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for id in snap.domain.plans() {
        let doc = plans::document(&snap.domain, id).map_err(|e| e.to_string())?;
        rows.push(json!({
            "plan_id": id,
            "hash": doc.hash(),
            "tasks": doc.tasks.len(),
            "planned": doc.planned(),
            "title": doc.tasks.first().map(|t| t.title.clone()),
        }));
    }
    if as_json {
        print_json(&json!({ "plans": rows }))?;
    } else if rows.is_empty() {
        say!("no plans: create one with bernstein_run {{\"goal\": ..., \"plan\": true}}");
    } else {
        for r in &rows {
            say!(
                "{}  {} tasks, {} planned  {}  {}",
                r["plan_id"].as_str().unwrap_or("?"),
                r["tasks"],
                r["planned"],
                r["hash"].as_str().unwrap_or("?"),
                r["title"].as_str().unwrap_or("")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn show(open: OpenStore<'_>, plan_id: &str, as_json: bool) -> Result<ExitCode, String> {
    let (store, _) = open()?;
    let snap = store.snapshot().map_err(|e| e.to_string())?;
    let doc = match plans::document(&snap.domain, plan_id) {
        Ok(d) => d,
        Err(e) => {
            bernstein_os::log_line!("bernstein: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    if as_json {
        print_json(
            &json!({"plan_id": plan_id, "hash": doc.hash(), "planned": doc.planned(), "document": doc}),
        )?;
    } else {
        print_plan(&doc);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_plan(doc: &PlanDocument) {
    say!(
        "plan {}  ({} tasks, {} planned)",
        doc.plan_id,
        doc.tasks.len(),
        doc.planned()
    );
    say!("hash {}", doc.hash());
    say!();
    say!(
        "{:<20} {:<22} {:<20} {:<10} TITLE",
        "TASK",
        "STATUS",
        "PARENT",
        "ROLE"
    );
    for t in &doc.tasks {
        say!(
            "{:<20} {:<22} {:<20} {:<10} {}{}",
            t.task_id,
            t.status.as_str(),
            t.parent_id.as_deref().unwrap_or("-"),
            t.role,
            t.title,
            if t.depends_on.is_empty() {
                String::new()
            } else {
                format!("  (after {})", t.depends_on.join(", "))
            }
        );
    }
    say!();
    say!(
        "decide with: bernstein plan approve {id} --hash {h}   (or: bernstein plan reject {id} --hash {h})",
        id = doc.plan_id,
        h = doc.hash()
    );
}

fn decide(
    open: OpenStore<'_>,
    plan_id: &str,
    hash: &str,
    decision: PlanDecision,
    reason: Option<String>,
    as_json: bool,
) -> Result<ExitCode, String> {
    let (store, key) = open()?;
    let (plan_id, hash) = (plan_id.to_string(), hash.to_string());
    let outcome = commit_operator(store, &key, move |snap, now| {
        operator::decide_plan(snap, now, &plan_id, &hash, decision, reason.as_deref())
    })?;
    match outcome {
        Ok(out) if as_json => {
            print_json(&out.answer)?;
            Ok(ExitCode::SUCCESS)
        }
        Ok(out) => {
            for line in decision_lines(&out.answer) {
                say!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if e.is_conflict() => {
            bernstein_os::log_line!("bernstein: {e}");
            Ok(ExitCode::from(3))
        }
        Err(e) => {
            bernstein_os::log_line!("bernstein: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

/// A plan decision for a person: what was decided, how many tasks changed, then one line per
/// status change (`T-…  planned -> open`; a parent promoted with unfinished subtasks changes
/// twice).
fn decision_lines(answer: &serde_json::Value) -> Vec<String> {
    let changes = answer["changes"].as_array().cloned().unwrap_or_default();
    let verb = match answer["decision"].as_str() {
        Some("approve") => "approved",
        Some("reject") => "rejected",
        _ => "decided",
    };
    let tasks: std::collections::BTreeSet<&str> = changes
        .iter()
        .filter_map(|c| c["task_id"].as_str())
        .collect();
    let mut lines = vec![format!(
        "{verb} plan {}: {}",
        answer["plan_id"].as_str().unwrap_or("?"),
        super::task::tasks_changed(tasks.len() as u64)
    )];
    for c in &changes {
        lines.push(format!(
            "  {}  {} -> {}",
            c["task_id"].as_str().unwrap_or("?"),
            c["from"].as_str().unwrap_or("?"),
            c["to"].as_str().unwrap_or("?")
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::decision_lines;

    #[test]
    fn a_decision_lists_the_tasks_it_changed() {
        let answer = json!({
            "decision": "approve", "plan_id": "T-1", "hash": "sha256:00",
            "changes": [
                {"task_id": "T-1", "from": "planned", "to": "open"},
                {"task_id": "T-2", "from": "planned", "to": "open"},
                {"task_id": "T-1", "from": "open", "to": "waiting_for_subtasks"},
            ],
        });
        assert_eq!(
            decision_lines(&answer),
            [
                "approved plan T-1: 2 tasks changed",
                "  T-1  planned -> open",
                "  T-2  planned -> open",
                "  T-1  open -> waiting_for_subtasks",
            ]
        );
    }
}
