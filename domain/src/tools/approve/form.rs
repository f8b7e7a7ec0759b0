//! The approval form a host that can elicit shows its person: what it says (the task, or the
//! plan with its rendering hash and tasks), the state kept with the question (what was shown,
//! so the answer decides exactly that), and the reading of the answer.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use bernstein_core::protocol::input::{Elicited, InputNeeded, InputRequest, Inputs};
use bernstein_core::protocol::registry::ToolError;

use super::{Decision, MAX_NOTE_CHARS};
use crate::plans::PlanDocument;
use crate::projection::TaskRow;
use crate::refusal::Refusal;
use crate::shown::shown;

/// The key the form is asked under.
pub const KEY: &str = "approval";
/// Most plan tasks the form lists; the rest are counted.
pub const MAX_LISTED_TASKS: usize = 20;
/// Longest result summary the task form quotes, in characters.
pub const MAX_QUOTED_SUMMARY: usize = 1000;
/// Characters of a task's title quoted in a form.
pub const MAX_QUOTED_TITLE: usize = 200;

/// What the person was shown, kept with the question (`requestState` in 2026-07-28, the
/// engine's memory in the handshake era).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "asked", rename_all = "snake_case")]
pub enum Asked {
    /// A task's finished work, as it stood at `updated_at`.
    Task { task_id: String, updated_at: u64 },
    /// A plan, at its rendering hash.
    Plan { plan_id: String, plan_hash: String },
}

impl Asked {
    /// The state of a run that carries answers, if it is an approval form's.
    pub fn of(inputs: &Inputs) -> Option<Asked> {
        serde_json::from_value(inputs.state.clone()?).ok()
    }
}

/// The person's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub decision: Decision,
    /// Trimmed; `None` when left empty.
    pub note: Option<String>,
}

fn fields() -> Value {
    json!({
        "decision": {
            "type": "string",
            "title": "Decision",
            "enum": ["approve", "reject"],
        },
        "note": {
            "type": "string",
            "title": "Note",
            "description": "Optional; recorded with the decision.",
            "maxLength": MAX_NOTE_CHARS,
        },
    })
}

/// The form for a task's finished work.
pub fn ask_task(task: &TaskRow) -> InputNeeded {
    let summary = task
        .rare
        .result_summary
        .as_deref()
        .map_or_else(|| "(none)".to_string(), |s| shown(s, MAX_QUOTED_SUMMARY));
    let message = format!(
        "Approve the finished work of task {}: {}?\nResult: {summary}\n\
         Approve marks it done; reject sends it back to be reworked.",
        task.id,
        shown(&task.title, MAX_QUOTED_TITLE)
    );
    let asked = Asked::Task {
        task_id: task.id.to_string(),
        updated_at: task.updated_at,
    };
    InputNeeded::one(KEY, InputRequest::form(message, fields(), &["decision"]))
        .with_state(serde_json::to_value(asked).expect("plain strings and numbers"))
}

/// The form for a plan: its rendering hash and its tasks (the first [`MAX_LISTED_TASKS`]).
pub fn ask_plan(doc: &PlanDocument) -> InputNeeded {
    let hash = doc.hash();
    let title = doc
        .tasks
        .first()
        .map_or_else(String::new, |t| shown(&t.title, MAX_QUOTED_TITLE));
    let mut message = format!(
        "Decide plan {}: {title}\nRendering hash: {hash}\nTasks ({}):",
        doc.plan_id,
        doc.tasks.len()
    );
    for t in doc.tasks.iter().take(MAX_LISTED_TASKS) {
        message.push_str(&format!(
            "\n- {} [{}, {}] {}",
            t.task_id,
            t.role,
            t.status,
            shown(&t.title, MAX_QUOTED_TITLE)
        ));
    }
    if doc.tasks.len() > MAX_LISTED_TASKS {
        message.push_str(&format!(
            "\n…and {} more",
            doc.tasks.len() - MAX_LISTED_TASKS
        ));
    }
    message.push_str(
        "\nApprove opens its planned tasks for workers; reject cancels them. \
         The decision applies to this rendering only.",
    );
    let asked = Asked::Plan {
        plan_id: doc.plan_id.clone(),
        plan_hash: hash,
    };
    InputNeeded::one(KEY, InputRequest::form(message, fields(), &["decision"]))
        .with_state(serde_json::to_value(asked).expect("plain strings"))
}

/// The person's answer, if the host gave one: a decision, or the refusal for a declined,
/// cancelled or malformed answer.
pub fn answer(inputs: &Inputs) -> Option<Result<Answer, ToolError>> {
    Some(match inputs.elicited(KEY)? {
        Elicited::Accepted(content) => read(content),
        Elicited::Declined => Err(declined("declined")),
        Elicited::Cancelled => Err(declined("cancelled")),
    })
}

fn read(content: &serde_json::Map<String, Value>) -> Result<Answer, ToolError> {
    let decision = match content.get("decision").and_then(Value::as_str) {
        Some("approve") => Decision::Approve,
        Some("reject") => Decision::Reject,
        _ => return Err(invalid("decision must be \"approve\" or \"reject\"")),
    };
    let note = match content.get("note") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.chars().count() > MAX_NOTE_CHARS => {
            return Err(invalid("note must be at most 4096 characters"));
        }
        Some(Value::String(s)) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Some(_) => return Err(invalid("note must be a string")),
    };
    Ok(Answer { decision, note })
}

fn declined(action: &str) -> ToolError {
    ToolError::new(
        Refusal::ApprovalDeclined,
        format!("the person {action} the approval form; nothing was decided"),
        "Nothing was recorded. Decide later with bernstein_approve (the person is asked again), \
         or from the command line: `bernstein plan approve|reject PLAN_ID --hash H` for a plan.",
    )
    .with("action", action)
}

fn invalid(rule: &str) -> ToolError {
    ToolError::new(
        Refusal::ApprovalAnswerInvalid,
        format!("the host's answer to the approval form is not a decision: {rule}"),
        "Nothing was recorded. Call bernstein_approve again; the person is asked again.",
    )
    .with("rule", rule)
}

/// The refusal for a task whose finished work changed after the person was shown it.
pub fn stale_task(task_id: &str) -> ToolError {
    ToolError::new(
        Refusal::ApprovalStale,
        format!("task {task_id} changed since the person was shown it"),
        "Nothing was recorded. Call bernstein_approve again: the person is asked about the task \
         as it is now.",
    )
    .with("task_id", task_id)
}
