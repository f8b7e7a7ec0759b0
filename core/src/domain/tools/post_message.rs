//! `bernstein_post_message` (tier standard): a worker's progress report. The body is
//! DLP-redacted ([`crate::domain::dlp`]), appended to the task's mailbox (stream
//! `mailbox:<task_id>`, HMAC-tagged by the ledger) as an Ed25519-signed entry chained to the
//! previous one, and mirrored into the audit chain as `task.mailbox_message`, all in one
//! transaction. The answer is the signed entry itself.
//!
//! Refused: unknown or malformed task ids, finished tasks (done, closed, failed, cancelled),
//! bodies over 4096 bytes, a mailbox already holding the maximum of unconsumed messages, and
//! any call while the server has no signing key. The handler never changes a task's status.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ledger::AUDIT_STREAM;
use crate::protocol::registry::{
    Effects, TaskSupport, ToolContext, ToolError, ToolOutput, ToolSpec,
};

use super::super::dlp;
use super::super::ids::check_task_id;
use super::super::mailbox::{
    MailboxEntry, MailboxMirror, MessageKind, NewEntry, mailbox_stream, seal_entry,
};
use super::super::records;
use super::super::schema;
use super::super::signing::no_signer;
use super::{check_name, invalid_id, parse_args, tier, unknown_task};

pub const NAME: &str = "bernstein_post_message";

/// Largest body, in UTF-8 bytes.
pub const MAX_BODY_BYTES: usize = 4096;
/// Most unconsumed messages a task's mailbox holds. No reader consumes messages yet, so this
/// caps a mailbox's length.
pub const MAX_UNCONSUMED: u64 = 256;
/// Sender of a message that named none.
pub const DEFAULT_SENDER: &str = "anonymous";

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: true,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Post a progress message to a task's mailbox: kind finding, artefact_ref or \
question, body up to 4096 bytes. Secrets in the body (private keys, cloud and VCS tokens, bearer \
tokens, passwords in URLs) are redacted before anything is stored, and the count is recorded. The \
message is appended to the task's HMAC-chained mailbox, Ed25519-signed and mirrored to the audit \
chain; the answer is the signed entry {task_id, seq, kind, sender, body, body_hash, redactions, \
prev_entry_hash, entry_hash, signature, signer_public_key_pem, ...}, which `bernstein mailbox verify` \
checks offline. It never changes the task's status. It reads and appends to the project's .sdd ledger \
only. \
Host effects: reads files: yes; writes files: yes; spawns processes: no; network requests: no.";

/// Arguments of `bernstein_post_message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMessageArgs {
    /// The task the message is about (an id bernstein_run or bernstein_claim returned).
    pub task_id: String,
    /// The message, at most 4096 bytes of UTF-8. Secrets are redacted before it is stored.
    #[schemars(length(min = 1, max = 4096))]
    pub body: String,
    /// finding | artefact_ref | question.
    pub kind: MessageKind,
    /// The posting worker's identity (letters, digits and `_.:-`); default anonymous.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub sender: Option<String>,
    /// `sha256:` fingerprint of the sender's agent card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub sender_card_fingerprint: Option<String>,
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME,
        title: "Post a task message",
        description: DESCRIPTION,
        tier: tier(NAME),
        input_schema: schema::input_schema::<PostMessageArgs>,
        output_schema: Some(schema::output_schema::<MailboxEntry>),
        effects: EFFECTS,
        task_support: TaskSupport::Forbidden,
        call: handle,
    }
}

pub fn handle(ctx: &ToolContext<'_>, args: Value) -> ToolOutput {
    match post(ctx, args) {
        Ok(out) => out,
        Err(e) => ToolOutput::refused(e),
    }
}

fn post(ctx: &ToolContext<'_>, args: Value) -> Result<ToolOutput, ToolError> {
    let args: PostMessageArgs = parse_args(NAME, args)?;
    let id = check_task_id(&args.task_id).map_err(|e| invalid_id("task_id", &args.task_id, e))?;
    if args.body.is_empty() || args.body.len() > MAX_BODY_BYTES {
        return Err(ToolError::new(
            "invalid_arguments",
            format!(
                "body must hold 1 to {MAX_BODY_BYTES} bytes of UTF-8 (got {} bytes)",
                args.body.len()
            ),
            "Post long output as an artefact_ref pointing at where it is stored.",
        )
        .with("field", "body"));
    }
    if let Some(s) = &args.sender {
        check_name("sender", s, 256)?;
    }
    if let Some(f) = &args.sender_card_fingerprint {
        check_name("sender_card_fingerprint", f, 256)?;
    }
    let p = &ctx.snapshot.domain;
    let task = p
        .task(id)
        .ok_or_else(|| unknown_task("unknown_task", "task_id", id))?;
    if task.status.is_terminal() {
        return Err(ToolError::new(
            "task_finished",
            format!("task {id} is {} and takes no more messages", task.status),
            "Post while the task is being worked on; start a new task for follow-up work.",
        )
        .with("task_id", id)
        .with("current_status", task.status.as_str()));
    }
    let head = p.mailbox(id);
    if head.entries >= MAX_UNCONSUMED {
        return Err(ToolError::new(
            "mailbox_full",
            format!("task {id}'s mailbox already holds {MAX_UNCONSUMED} unconsumed messages"),
            "Summarize instead of posting more; complete the task with bernstein_complete.",
        )
        .with("task_id", id)
        .with("limit", MAX_UNCONSUMED));
    }
    let signer = ctx
        .config
        .signing_key
        .as_ref()
        .ok_or_else(|| no_signer(NAME))?;
    let redacted = dlp::redact(&args.body);
    let entry = seal_entry(
        &head,
        NewEntry {
            task_id: id,
            kind: args.kind,
            sender: args.sender.as_deref().unwrap_or(DEFAULT_SENDER),
            sender_card_fingerprint: args
                .sender_card_fingerprint
                .as_deref()
                .unwrap_or(super::super::claims::UNREGISTERED),
            body: &redacted.text,
            redactions: redacted.count,
            redacted_kinds: redacted.kinds.iter().map(|k| k.to_string()).collect(),
            posted_at: ctx.now.0,
        },
        signer,
    );
    let drafts = vec![
        records::draft(mailbox_stream(id), records::MAILBOX_MESSAGE, &entry),
        records::draft(
            AUDIT_STREAM,
            records::MAILBOX_MIRROR,
            &MailboxMirror::of(&entry),
        ),
    ];
    Ok(ToolOutput {
        result: Ok(serde_json::to_value(&entry).expect("a mailbox entry always serializes")),
        drafts,
        run_id: None,
        content: None,
    })
}

#[cfg(test)]
mod tests;
