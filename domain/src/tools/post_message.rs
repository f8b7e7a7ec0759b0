//! `bernstein_post_message`: a worker's progress report. The body is
//! DLP-redacted ([`crate::dlp`]), appended to the task's mailbox (stream
//! `mailbox:<task_id>`, HMAC-tagged by the ledger) as an Ed25519-signed entry chained to the
//! previous one, and mirrored into the audit chain as `task.mailbox_message`, all in one
//! transaction. The answer is the signed entry itself.
//!
//! A message from the task's claimer (`sender` = its claimer id) renews the claim's lease, and
//! may carry a `status` (in_progress, failed, open) that moves the task by the lifecycle rules
//! in the same transaction ([`claimer`]). A `question` is asked of the host following the run
//! until an `answer` follows it ([`crate::questions`]).
//!
//! Refused: unknown or malformed task ids, finished tasks (done, closed, failed, cancelled),
//! bodies over 4096 bytes, a mailbox already holding the maximum of unconsumed messages, a
//! sender whose claim was reclaimed (stale), a status from anyone but the claimer or along an
//! edge the lifecycle forbids, and any call while the server has no signing key.

use crate::resource_links;
use serde::{Deserialize, Serialize};

use crate::bound::{ToolContext, ToolSpec};
use crate::refusal::Refusal;
use bernstein_core::config::Tier;
use bernstein_core::ledger::AUDIT_STREAM;
use bernstein_core::protocol::registry::{Effects, ToolError};

use super::super::args::{Bytes, Ident, TaskId};
use super::super::dlp;
use super::super::mailbox::MailboxEntry;
use super::super::mailbox::{MailboxMirror, MessageKind, NewEntry, mailbox_stream, seal_entry};
use super::super::records;
use super::no_signer;
use super::{Called, Tool, unfinished_task};

pub mod claimer;

pub use claimer::MessageStatus;
use claimer::{check_not_stale, claimer_drafts};

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

const DESCRIPTION: &str = "Post to a task's signed, redacted mailbox (questions reach the host). A \
claimer's post renews its lease.";

/// Arguments of `bernstein_post_message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMessageArgs {
    pub task_id: TaskId,
    /// At most 4096 bytes.
    pub body: Bytes<MAX_BODY_BYTES>,
    pub kind: MessageKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_SENDER))]
    pub sender: Option<Ident<256>>,
    // The `sha256:` fingerprint of the sender's agent card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_card_fingerprint: Option<Ident<256>>,
    /// Claimer only: started, failed (body = reason) or open (released).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MessageStatus>,
}

/// `bernstein_post_message`, declared once (see [`Tool`]).
pub struct PostMessage;

impl Tool for PostMessage {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Post a task message";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::Standard;
    const EFFECTS: Effects = EFFECTS;
    type Args = PostMessageArgs;
    type Answer = MailboxEntry;

    fn call(ctx: &ToolContext<'_>, args: PostMessageArgs) -> Called<MailboxEntry> {
        post(ctx, args).unwrap_or_else(Called::refused)
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<PostMessage>()
}

fn post(ctx: &ToolContext<'_>, args: PostMessageArgs) -> Result<Called<MailboxEntry>, ToolError> {
    let id = args.task_id.as_str();
    let p = &ctx.snapshot.domain;
    let task = unfinished_task(p, id, "messages")?;
    let head = p.mailbox(id);
    if head.entries >= MAX_UNCONSUMED {
        return Err(ToolError::new(
            Refusal::MailboxFull,
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
    let sender = args.sender.as_deref().unwrap_or(DEFAULT_SENDER);
    check_not_stale(task, sender)?;
    let redacted = dlp::redact(&args.body);
    let claimer_records = claimer_drafts(p, task, sender, args.status, &redacted.text, ctx.now.0)?;
    let entry = seal_entry(
        &head,
        NewEntry {
            task_id: id,
            kind: args.kind,
            sender,
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
    let mut drafts = claimer_records;
    drafts.push(records::draft(
        mailbox_stream(id),
        records::MAILBOX_MESSAGE,
        &entry,
    ));
    drafts.push(records::draft(
        AUDIT_STREAM,
        records::MAILBOX_MIRROR,
        &MailboxMirror::of(&entry),
    ));
    let called = Called {
        drafts,
        links: vec![resource_links::mailbox_link(id)],
        ..Called::ok(entry)
    };
    // The mailbox it chains onto is a stream it writes, so it is read too.
    Ok(called.reading_task_of(&task.run_id))
}

#[cfg(test)]
mod tests;
