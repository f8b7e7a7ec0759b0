//! The ledger records of the engine's own tasks and their fold. A catalogue whose fold keeps a
//! [`ToolTasks`] (and names it in [`Catalog::tool_tasks`]) gets tasks for its task-capable tools
//! without writing task hooks; any instance folding the same ledger sees the same tasks.
//!
//! Records, all on the stream `mcp-task:<task id>` (docs/RECORDS.md):
//! - `mcp.task.created`: `{task_id, tool, arguments, created_at, ttl_ms, caps, responses, state}`
//!   — the call that created the task, with the client's answers of its earlier rounds;
//! - `mcp.task.answered`: `{task_id, responses, at}` — answers a `tasks/update` delivered;
//! - `mcp.task.cancelled`: `{task_id, at}`.
//!
//! What the task does over time is not recorded: it is the tool's answer at `now` (see
//! [`super::evaluate`]).
//!
//! [`Catalog::tool_tasks`]: crate::protocol::registry::Catalog::tool_tasks

use imbl::OrdMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ledger::Record;

/// Stream prefix of a task's records.
pub const STREAM_PREFIX: &str = "mcp-task:";
/// Kind of the record that creates a task.
pub const CREATED: &str = "mcp.task.created";
/// Kind of the record of answers a `tasks/update` delivered.
pub const ANSWERED: &str = "mcp.task.answered";
/// Kind of the record of a `tasks/cancel`.
pub const CANCELLED: &str = "mcp.task.cancelled";

/// The stream of task `id`.
pub fn stream(id: &str) -> String {
    format!("{STREAM_PREFIX}{id}")
}

/// One task as its records leave it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolTask {
    pub tool: String,
    pub arguments: Value,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    pub ttl_ms: u64,
    /// The client capabilities the creating request declared (`elicitation`, `sampling`,
    /// `roots`): what the task may ask the client.
    pub caps: Vec<String>,
    /// The client's answers so far, by input request key.
    pub responses: Map<String, Value>,
    /// The handler's own state from the rounds before the task existed.
    pub state: Option<Value>,
    /// Time of the last record of the task.
    pub updated_at: u64,
    pub cancelled: bool,
}

/// Every task the engine created, by id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolTasks {
    tasks: OrdMap<String, ToolTask>,
}

impl ToolTasks {
    pub fn get(&self, id: &str) -> Option<&ToolTask> {
        self.tasks.get(id)
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Folds `rec` when it is a task record; whether it fitted (a record of another stream
    /// fits trivially; a duplicate creation, or an answer or cancel of an unknown task, does
    /// not and changes nothing).
    pub fn apply(&mut self, rec: &Record) -> bool {
        let Some(id) = rec.stream.strip_prefix(STREAM_PREFIX) else {
            return true;
        };
        let body = &rec.body;
        if body.get("task_id").and_then(Value::as_str) != Some(id) {
            return false;
        }
        let at = |key: &str| body.get(key).and_then(Value::as_u64);
        match rec.kind.as_str() {
            CREATED => {
                if self.tasks.contains_key(id) {
                    return false;
                }
                let (Some(tool), Some(created_at), Some(ttl_ms)) = (
                    body.get("tool").and_then(Value::as_str),
                    at("created_at"),
                    at("ttl_ms"),
                ) else {
                    return false;
                };
                let caps = body
                    .get("caps")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                let task = ToolTask {
                    tool: tool.to_string(),
                    arguments: body.get("arguments").cloned().unwrap_or(Value::Null),
                    created_at,
                    ttl_ms,
                    caps,
                    responses: body
                        .get("responses")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default(),
                    state: body.get("state").filter(|s| !s.is_null()).cloned(),
                    updated_at: created_at,
                    cancelled: false,
                };
                self.tasks.insert(id.to_string(), task);
                true
            }
            ANSWERED => {
                let (Some(task), Some(Value::Object(answers)), Some(at)) =
                    (self.tasks.get_mut(id), body.get("responses"), at("at"))
                else {
                    return false;
                };
                for (k, v) in answers {
                    task.responses.insert(k.clone(), v.clone());
                }
                task.updated_at = task.updated_at.max(at);
                true
            }
            CANCELLED => {
                let (Some(task), Some(at)) = (self.tasks.get_mut(id), at("at")) else {
                    return false;
                };
                task.cancelled = true;
                task.updated_at = task.updated_at.max(at);
                true
            }
            _ => false,
        }
    }
}
