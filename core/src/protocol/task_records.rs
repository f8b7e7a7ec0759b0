//! The ledger records of the engine's own tasks (`protocol::tool_tasks`) and their fold. A
//! catalogue whose fold keeps a [`ToolTasks`] (and names it in [`Catalog::tool_tasks`]) gets
//! tasks for its task-capable tools without writing task hooks; any instance folding the same
//! ledger sees the same tasks.
//!
//! Records, all on the stream `mcp-task:<task id>` (docs/RECORDS.md): [`TaskCreated`] (the call
//! that created the task, with the client's answers of its earlier rounds), [`TaskAnswered`]
//! (answers a `tasks/update` delivered) and [`TaskCancelled`]. What the task does over time is
//! not recorded: it is the tool's answer at `now`.
//!
//! [`Catalog::tool_tasks`]: super::registry::Catalog::tool_tasks

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

/// `mcp.task.created`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskCreated {
    pub task_id: String,
    pub tool: String,
    /// The call's arguments as sent.
    pub arguments: Value,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    pub ttl_ms: u64,
    /// The client capabilities the creating request declared that a task may ask for
    /// (`elicitation`, `sampling`, `roots`).
    pub caps: Vec<String>,
    /// The client's answers of the request's earlier input rounds, by key.
    pub responses: Map<String, Value>,
    /// The handler's own state of those rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
}

/// `mcp.task.answered`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskAnswered {
    pub task_id: String,
    pub responses: Map<String, Value>,
    pub at: u64,
}

/// `mcp.task.cancelled`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskCancelled {
    pub task_id: String,
    pub at: u64,
}

/// One task as its records leave it: its creation as recorded, the answers recorded since, and
/// where it stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolTask {
    pub created: TaskCreated,
    /// The client's answers given through `tasks/update`, by input request key.
    pub answers: Map<String, Value>,
    /// Time of the last record of the task.
    pub updated_at: u64,
    pub cancelled: bool,
}

impl ToolTask {
    /// The client's answers so far, by input request key: those of the creating request's
    /// rounds and those given since (a later answer to a key wins).
    pub fn responses(&self) -> Map<String, Value> {
        let mut all = self.created.responses.clone();
        all.extend(self.answers.clone());
        all
    }
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
        let body = rec.body.clone();
        match rec.kind.as_str() {
            CREATED => match serde_json::from_value::<TaskCreated>(body) {
                Ok(mut c) if c.task_id == id && !self.tasks.contains_key(id) => {
                    c.state = c.state.filter(|s| !s.is_null());
                    let task = ToolTask {
                        updated_at: c.created_at,
                        created: c,
                        answers: Map::new(),
                        cancelled: false,
                    };
                    self.tasks.insert(id.to_string(), task);
                    true
                }
                _ => false,
            },
            ANSWERED => match serde_json::from_value::<TaskAnswered>(body) {
                Ok(a) if a.task_id == id => match self.tasks.get_mut(id) {
                    Some(task) => {
                        task.answers.extend(a.responses);
                        task.updated_at = task.updated_at.max(a.at);
                        true
                    }
                    None => false,
                },
                _ => false,
            },
            CANCELLED => match serde_json::from_value::<TaskCancelled>(body) {
                Ok(c) if c.task_id == id => match self.tasks.get_mut(id) {
                    Some(task) => {
                        task.cancelled = true;
                        task.updated_at = task.updated_at.max(c.at);
                        true
                    }
                    None => false,
                },
                _ => false,
            },
            _ => false,
        }
    }
}
