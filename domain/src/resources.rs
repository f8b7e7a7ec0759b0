//! Runs and tasks as MCP resources: four URI templates read at the request's snapshot and
//! their ids completed from the projection (the links tool results carry to them are
//! [`crate::resource_links`]).
//!
//! - `bernstein://runs/{run_id}`: what `bernstein_run_status` answers for the run (the signed
//!   handle, its outcome once ended, the waiting notice), from the same function.
//! - `bernstein://tasks/{task_id}`: the task as the dashboard's `/api/task` shows it.
//! - `bernstein://tasks/{task_id}/mailbox`: its mailbox entries with their checks.
//! - `bernstein://tasks/{task_id}/artifacts`: its artifact versions with their lineage.
//!
//! Artifacts and mailboxes belong to tasks in the ledger (streams keyed by task id), so their
//! resources hang off the task. Contents are one `application/json` text block; every string in
//! it passes the DLP redactor once more (the ledger holds redacted text already, so this only
//! guards a future field). An id that names no run or task is the revision's
//! resource-not-found error. A finished run or a task in a terminal status may be cached for
//! [`FINISHED_TTL_MS`]; a live one is stale at once (`ttlMs: 0`). Completion offers the ids
//! that start with what was typed, newest first; ids are content-derived hex (`T-…`), which
//! hold no secret.

use serde_json::{Map, Value, json};

use crate::artifacts::LINEAGE_STREAM;
use crate::bound::{ResourceContext, ResourceTemplateSpec};
use crate::dashboard;
use crate::dlp;
use crate::mailbox::mailbox_stream;
use crate::outcome;
use crate::projection::Projection;
use crate::resource_links::{
    self, ARTIFACTS_DESCRIPTION, ARTIFACTS_TEMPLATE, MAILBOX_DESCRIPTION, MAILBOX_TEMPLATE,
    RUN_DESCRIPTION, RUN_TEMPLATE, TASK_DESCRIPTION, TASK_TEMPLATE,
};
use crate::tools::run_status;
use bernstein_core::ledger::{BACKLOG_STREAM, run_stream};
use bernstein_core::protocol::completion::MAX_VALUES;
use bernstein_core::protocol::registry::{Candidates, TemplatedRead};

const JSON: &str = resource_links::MIME_TYPE;
/// How long a client may keep a finished run's or a terminal task's resource: an hour.
pub const FINISHED_TTL_MS: u64 = 3_600_000;
/// How long a live one: not at all.
pub const LIVE_TTL_MS: u64 = 0;

/// The templates, in the order they are matched.
pub fn templates() -> Vec<ResourceTemplateSpec> {
    let template = |uri_template, name, title, description, read| ResourceTemplateSpec {
        uri_template,
        name,
        title,
        description,
        mime_type: JSON,
        read,
        complete: Some(complete),
    };
    vec![
        template(RUN_TEMPLATE, "run", "Run", RUN_DESCRIPTION, read_run),
        template(
            MAILBOX_TEMPLATE,
            "task-mailbox",
            "Task mailbox",
            MAILBOX_DESCRIPTION,
            read_mailbox,
        ),
        template(
            ARTIFACTS_TEMPLATE,
            "task-artifacts",
            "Task artifacts",
            ARTIFACTS_DESCRIPTION,
            read_artifacts,
        ),
        template(TASK_TEMPLATE, "task", "Task", TASK_DESCRIPTION, read_task),
    ]
}

fn var<'v>(vars: &'v Map<String, Value>, name: &str) -> &'v str {
    vars.get(name).and_then(Value::as_str).unwrap_or_default()
}

/// One JSON text block of `value`, every string redacted, cached by whether it is `finished`;
/// `watch` is the ledger stream it is rendered from (a subscription renders it again only
/// when that stream moves).
fn contents(
    uri: &str,
    mut value: Value,
    (finished, run_id): (bool, &str),
    watch: String,
) -> TemplatedRead {
    redact_strings(&mut value);
    TemplatedRead {
        contents: vec![json!({"uri": uri, "mimeType": JSON, "text": value.to_string()})],
        ttl_ms: Some(if finished {
            FINISHED_TTL_MS
        } else {
            LIVE_TTL_MS
        }),
        run_id: Some(run_id.to_string()),
        watch: Some(watch),
    }
}

fn redact_strings(value: &mut Value) {
    match value {
        Value::String(s) => {
            let r = dlp::redact(s);
            if r.count > 0 {
                *s = r.text;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_strings),
        Value::Object(map) => map.values_mut().for_each(redact_strings),
        _ => {}
    }
}

fn read_run(
    ctx: &ResourceContext<'_>,
    uri: &str,
    vars: &Map<String, Value>,
) -> Result<TemplatedRead, String> {
    let id = var(vars, "run_id");
    let answer = run_status::answer(ctx.snapshot, id, ctx.now)
        .ok_or_else(|| "no run has this id in this project's ledger".to_string())?;
    let finished = outcome::ended(answer.handle.status);
    let value = serde_json::to_value(&answer).map_err(|e| e.to_string())?;
    Ok(contents(uri, value, (finished, id), run_stream(id)))
}

/// The task `id` and whether its status is terminal, or why there is none.
fn task_of<'p>(
    p: &'p Projection,
    vars: &Map<String, Value>,
) -> Result<(&'p crate::projection::TaskRow, bool), String> {
    let id = var(vars, "task_id");
    let task = p
        .task(id)
        .ok_or_else(|| "no task has this id in this project's ledger".to_string())?;
    Ok((task, task.status.is_terminal()))
}

fn read_task(
    ctx: &ResourceContext<'_>,
    uri: &str,
    vars: &Map<String, Value>,
) -> Result<TemplatedRead, String> {
    let p = &ctx.snapshot.domain;
    let (task, finished) = task_of(p, vars)?;
    let value = dashboard::task_detail(p, &task.id).unwrap_or(Value::Null);
    let watch = BACKLOG_STREAM.to_string();
    Ok(contents(uri, value, (finished, &task.run_id), watch))
}

fn read_mailbox(
    ctx: &ResourceContext<'_>,
    uri: &str,
    vars: &Map<String, Value>,
) -> Result<TemplatedRead, String> {
    let p = &ctx.snapshot.domain;
    let (task, finished) = task_of(p, vars)?;
    let signer = ctx.config.signing_key.as_ref().map(|k| k.public_key_pem());
    let entries = dashboard::task_mailbox(p, &task.id, signer);
    let value = json!({"task_id": task.id.as_str(), "entries": entries});
    let watch = mailbox_stream(&task.id);
    Ok(contents(uri, value, (finished, &task.run_id), watch))
}

fn read_artifacts(
    ctx: &ResourceContext<'_>,
    uri: &str,
    vars: &Map<String, Value>,
) -> Result<TemplatedRead, String> {
    let p = &ctx.snapshot.domain;
    let (task, finished) = task_of(p, vars)?;
    let artifacts = dashboard::task_artifacts(p, &task.id);
    let value = json!({"task_id": task.id.as_str(), "artifacts": artifacts});
    let watch = LINEAGE_STREAM.to_string();
    Ok(contents(uri, value, (finished, &task.run_id), watch))
}

/// `run_id` and `task_id` candidates: ids starting with `typed`, newest first.
fn complete(
    ctx: &ResourceContext<'_>,
    variable: &str,
    typed: &str,
    _: &Map<String, Value>,
) -> Candidates {
    let p = &ctx.snapshot.domain;
    let runs_only = match variable {
        "run_id" => true,
        "task_id" => false,
        _ => return Candidates::default(),
    };
    // Ids sort by their text, so those with the prefix are one range of the task map.
    let mut found: Vec<(u64, &str)> = p
        .tasks_from(typed)
        .take_while(|t| t.id.starts_with(typed))
        .filter(|t| !runs_only || t.id == t.run_id)
        .map(|t| (t.created_seq, t.id.as_str()))
        .collect();
    found.sort_unstable_by(|a, b| b.cmp(a));
    let total = found.len();
    Candidates {
        values: found
            .into_iter()
            .take(MAX_VALUES)
            .map(|(_, id)| id.to_string())
            .collect(),
        total,
    }
}

#[cfg(test)]
mod tests;
