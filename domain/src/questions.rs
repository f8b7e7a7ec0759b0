//! A worker's questions to the person who started the run, asked through the host.
//!
//! A worker asks by posting a `question` to its task's mailbox (`bernstein_post_message`); an
//! `answer` posted to that mailbox answers every question before it. A task with a question
//! posted since its last answer is waiting for input: its MCP task (and its run's) is
//! `input_required` and asks the host one form (the task's open questions, one `answer` field),
//! keyed by the task and its newest question, so an answer to a question that has since been
//! followed by another is not taken for the newer one. The host's answer goes through
//! `bernstein_post_message` as an `answer` from sender [`HOST_SENDER`] (redacted, signed,
//! audited with the caller's principal like any post); a declined form is recorded as such, a
//! dismissed one records nothing. A worker reads the answer in its mailbox
//! (`bernstein_task_capsule`, `bernstein://tasks/{id}/mailbox`).
//!
//! Pure: reads the projection only.

use serde_json::{Value, json};

use bernstein_core::protocol::input::InputRequest;

use super::mailbox::{MailboxEntry, MessageKind};
use super::projection::Projection;
use super::shown::shown;
use super::tools::post_message::{self, MAX_BODY_BYTES};

/// The sender of an answer the host gave.
pub const HOST_SENDER: &str = "host";
/// The body recorded when the person declined to answer.
pub const DECLINED: &str = "The person declined to answer this question.";
/// Questions quoted in one form, newest last; older ones are counted.
const QUOTED: usize = 4;
/// Characters of one question quoted in a form or a status message.
const QUOTE_CHARS: usize = 1000;
/// Prefix of a question key: `question:<task_id>:<seq of its newest question>`.
const KEY_PREFIX: &str = "question:";

/// The questions of task `task_id` posted since its last answer, oldest first.
pub fn open_questions<'p>(p: &'p Projection, task_id: &str) -> &'p [MailboxEntry] {
    let entries = p.capsules().mailbox(task_id);
    let after = entries
        .iter()
        .rposition(|e| e.kind == MessageKind::Answer)
        .map_or(0, |i| i + 1);
    let open = &entries[after..];
    match open.iter().position(|e| e.kind == MessageKind::Question) {
        Some(first) => &open[first..],
        None => &[],
    }
}

/// The task whose questions MCP task `id` asks now: `id` itself when it is unfinished and has
/// open questions, else (for a run's root) the first unfinished member in task-id order that
/// has. `None`: nothing is asked.
pub fn asking<'p>(p: &'p Projection, id: &str) -> Option<(String, &'p [MailboxEntry])> {
    let waiting = |task_id: &str| {
        let task = p.task(task_id)?;
        if task.status.is_terminal() {
            return None;
        }
        let open = open_questions(p, task_id);
        open.iter()
            .any(|e| e.kind == MessageKind::Question)
            .then(|| (task_id.to_string(), open))
    };
    if let Some(own) = waiting(id) {
        return Some(own);
    }
    let run = p.run(id).filter(|run| run.root_task_id.as_str() == id)?;
    run.members.iter().find_map(|(member, _)| waiting(member))
}

/// What MCP task `id` asks now: one form under its question key (empty when nothing).
pub fn asks(p: &Projection, id: &str) -> Vec<(String, InputRequest)> {
    let Some((task_id, open)) = asking(p, id) else {
        return Vec::new();
    };
    let questions: Vec<&MailboxEntry> = open
        .iter()
        .filter(|e| e.kind == MessageKind::Question)
        .collect();
    let Some(newest) = questions.last() else {
        return Vec::new();
    };
    let title = p
        .task(&task_id)
        .map(|t| t.title.to_string())
        .unwrap_or_default();
    let mut message = format!("Task {task_id} ({title}) asks:");
    let hidden = questions.len().saturating_sub(QUOTED);
    if hidden > 0 {
        message.push_str(&format!("\n({hidden} earlier question(s) not shown)"));
    }
    for q in &questions[hidden..] {
        message.push_str(&format!("\n- {}: {}", q.sender, quote(&q.body)));
    }
    let fields = json!({
        "answer": {
            "type": "string",
            "title": "Answer",
            "description": "Recorded in the task's mailbox for the worker (secrets redacted).",
            "minLength": 1,
            "maxLength": MAX_BODY_BYTES,
        }
    });
    let key = format!("{KEY_PREFIX}{task_id}:{}", newest.seq);
    vec![(key, InputRequest::form(message, fields, &["answer"]))]
}

/// The status message of a task waiting for an answer: its newest question, quoted.
pub fn status_message(p: &Projection, id: &str) -> Option<String> {
    let (task_id, open) = asking(p, id)?;
    let newest = open
        .iter()
        .rev()
        .find(|e| e.kind == MessageKind::Question)?;
    Some(format!(
        "waiting for an answer to task {task_id}'s question: {}",
        quote(&newest.body)
    ))
}

/// The `bernstein_post_message` arguments recording `response` (an `ElicitResult`) to the
/// question under `key`; `None` for a key that is not a question's or a dismissed form.
pub fn reply_args(key: &str, response: &Value) -> Option<Value> {
    let (task_id, _seq) = key.strip_prefix(KEY_PREFIX)?.rsplit_once(':')?;
    let body = match response.get("action").and_then(Value::as_str)? {
        "accept" => response.pointer("/content/answer")?.as_str()?.to_string(),
        "decline" => DECLINED.to_string(),
        _ => return None,
    };
    Some(json!({
        "task_id": task_id,
        "kind": MessageKind::Answer.as_str(),
        "body": body,
        "sender": HOST_SENDER,
    }))
}

/// The tool an answer goes through.
pub const REPLY_TOOL: &str = post_message::NAME;

fn quote(body: &str) -> String {
    shown(body, QUOTE_CHARS)
}

#[cfg(test)]
mod tests;
