//! The domain's ledger record kinds: their streams, their bodies, and the drafts that carry
//! them. docs/RECORDS.md documents every kind with an example body.
//!
//! - stream `backlog`: `task.created`, `task.status` — the task table; `task.lease`,
//!   `task.reclaimed` — claim leases ([`super::lease`]).
//! - stream `run:<run_id>` (the run journal): `run.created`, `run.task_added`,
//!   `run.task_status`, `run.cancelled` — everything a run handle is projected from.
//! - stream `mailbox:<task_id>`: `mailbox.message` (bodies in [`super::mailbox`]).
//! - stream `audit`: `task.claim_receipt` ([`super::claims`]), `task.mailbox_message`
//!   ([`super::mailbox`]), `operator.command` ([`super::operator`]); `mcp.stateless_call` is the
//!   engine's.
//!
//! A status change is always written to both streams in the same transaction, by
//! [`super::status_changes`], which consults the lifecycle table first. Bodies hold no floats
//! (canonical JSON refuses them) and no field is ever renamed: old ledgers must keep folding.
//! This module builds values only; it never decides whether a tool call is allowed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use bernstein_core::ledger::{BACKLOG_STREAM, Draft};

use super::dlp::Redactions;
use super::ids::run_stream;
use super::lifecycle::TaskStatus;

/// Backlog: a task was created.
pub const TASK_CREATED: &str = "task.created";
/// Backlog: a task changed status.
pub const TASK_STATUS: &str = "task.status";
/// Run journal: the run was created with its root task.
pub const RUN_CREATED: &str = "run.created";
/// Run journal: a task joined the run (the root too).
pub const RUN_TASK_ADDED: &str = "run.task_added";
/// Run journal: a member task changed status.
pub const RUN_TASK_STATUS: &str = "run.task_status";
/// Run journal: the run's root was cancelled, and with it the run.
pub const RUN_CANCELLED: &str = "run.cancelled";
/// Audit: the protocol engine's record of one tools/call (written by the engine, read here
/// only to anchor run handles and count calls). Defined once, by the ledger's verifier.
pub const STATELESS_CALL: &str = bernstein_core::ledger::audit::CALL_KIND;
/// Audit: a claim decision (granted or refused) and its signed receipt.
pub const CLAIM_RECEIPT: &str = "task.claim_receipt";
/// Mailbox: one signed message entry (stream `mailbox:<task_id>`).
pub const MAILBOX_MESSAGE: &str = "mailbox.message";
/// Audit: the mirror of a mailbox entry.
pub const MAILBOX_MIRROR: &str = "task.mailbox_message";
/// Audit: a decision an operator took from the command line (plan approve/reject, cancel).
pub const OPERATOR_COMMAND: &str = "operator.command";

fn is_false(b: &bool) -> bool {
    !*b
}

/// How much a task covers.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[schemars(transform = super::schema::undescribed)]
pub enum Scope {
    Small,
    #[default]
    Medium,
    Large,
}

/// How hard a task is expected to be.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[schemars(transform = super::schema::undescribed)]
pub enum Complexity {
    Low,
    #[default]
    Medium,
    High,
}

/// `task.created` (stream `backlog`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCreated {
    pub task_id: String,
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub title: String,
    pub goal: String,
    pub role: String,
    /// 1 = critical, 2 = normal, 3 = nice to have.
    pub priority: u8,
    pub scope: Scope,
    pub complexity: Complexity,
    pub estimated_minutes: u32,
    pub status: TaskStatus,
    /// Wall-clock ms of the creating call.
    pub created_at: u64,
    /// Tasks that must be done (or closed) before this one is offered to a claimer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// Completing the task moves it to `pending_approval`, not `done`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub requires_approval: bool,
    /// The task is the root of a plan (its id is the plan id).
    #[serde(default, skip_serializing_if = "is_false")]
    pub plan: bool,
    /// Project namespace a claim filter may select on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Capabilities a claimer must offer (a claim filter selects on one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    /// Spans DLP replaced, per field of this record (absent when none; docs/RECORDS.md §7).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub redactions: BTreeMap<String, u64>,
    /// The kinds replaced, sorted (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
}

/// `task.status` (stream `backlog`) and `run.task_status` (stream `run:<run_id>`): one status
/// change, whose body [`super::status_changes`] writes to both streams in the same transaction.
/// Bodies are canonical JSON (keys sorted), so both kinds keep their bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskStatusChanged {
    pub task_id: String,
    pub run_id: String,
    pub from: TaskStatus,
    pub to: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who moved it, when known (the claimer of a claim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// The result summary a completion or an approval recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Wall-clock ms of the changing call.
    pub at: u64,
    /// Spans DLP replaced, per field of this record (absent when none; docs/RECORDS.md §7).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub redactions: BTreeMap<String, u64>,
    /// The kinds replaced, sorted (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
}

/// `run.created` (stream `run:<run_id>`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCreated {
    pub run_id: String,
    pub root_task_id: String,
    pub title: String,
    pub created_at: u64,
    /// Spans DLP replaced, per field of this record (absent when none; docs/RECORDS.md §7).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub redactions: BTreeMap<String, u64>,
    /// The kinds replaced, sorted (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
}

/// `run.task_added` (stream `run:<run_id>`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunTaskAdded {
    pub run_id: String,
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub status: TaskStatus,
}

/// `run.cancelled` (stream `run:<run_id>`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCancelled {
    pub run_id: String,
    /// The root task whose cancellation cancelled the run.
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How many tasks of the run this transaction cancelled.
    pub cancelled_tasks: u64,
    pub at: u64,
    /// Spans DLP replaced, per field of this record (absent when none; docs/RECORDS.md §7).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub redactions: BTreeMap<String, u64>,
    /// The kinds replaced, sorted (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
}

impl RunCancelled {
    /// A `run.cancelled` body with its reason redacted.
    pub fn new(
        run_id: &str,
        task_id: &str,
        reason: Option<&str>,
        cancelled_tasks: u64,
        at: u64,
    ) -> RunCancelled {
        let mut r = Redactions::default();
        let reason = r.optional("reason", reason);
        RunCancelled {
            run_id: run_id.to_string(),
            task_id: task_id.to_string(),
            reason,
            cancelled_tasks,
            at,
            redactions: r.counts(),
            redacted_kinds: r.kinds(),
        }
    }
}

impl TaskCreated {
    /// Redacts the title and goal in place, adding what was replaced to `redactions`.
    /// Idempotent: redacted text has nothing left to replace.
    pub fn redact(&mut self) {
        let mut r = Redactions::default();
        self.title = r.field("title", &self.title);
        self.goal = r.field("goal", &self.goal);
        add_redactions(&mut self.redactions, &mut self.redacted_kinds, &r);
    }
}

/// Adds the counts and kinds of `r` to a record's `redactions` and `redacted_kinds`.
pub fn add_redactions(counts: &mut BTreeMap<String, u64>, kinds: &mut Vec<String>, r: &Redactions) {
    for (field, n) in r.counts() {
        *counts.entry(field).or_default() += n;
    }
    kinds.extend(r.kinds());
    kinds.sort();
    kinds.dedup();
}

/// A draft on `stream` with `body` serialized.
pub fn draft(stream: impl Into<String>, kind: &str, body: &impl Serialize) -> Draft {
    // Bodies are plain structs of strings, integers and enums: serializing them into a Value
    // cannot fail.
    let body: Value = serde_json::to_value(body).expect("record bodies always serialize");
    Draft::new(stream, kind, body)
}

/// Drafts creating a root task and its run.
/// The title and goal are redacted here once more (see [`TaskCreated::redact`]).
pub fn new_run_drafts(task: &TaskCreated) -> Vec<Draft> {
    let mut task = task.clone();
    task.redact();
    let run = run_stream(&task.run_id);
    let mut r = Redactions::default();
    let title = r.field("title", &task.title);
    let title_count = task.redactions.get("title").copied();
    let mut created = RunCreated {
        run_id: task.run_id.clone(),
        root_task_id: task.task_id.clone(),
        title,
        created_at: task.created_at,
        redactions: BTreeMap::new(),
        redacted_kinds: Vec::new(),
    };
    if let Some(n) = title_count {
        created.redactions.insert("title".into(), n);
        created.redacted_kinds = task.redacted_kinds.clone();
    }
    vec![
        draft(BACKLOG_STREAM, TASK_CREATED, &task),
        draft(run.clone(), RUN_CREATED, &created),
        draft(run, RUN_TASK_ADDED, &added(&task)),
    ]
}

/// Drafts adding a subtask to its run (the parent's status change is separate); the title and
/// goal are redacted here once more.
pub fn new_subtask_drafts(task: &TaskCreated) -> (Draft, Draft) {
    let mut task = task.clone();
    task.redact();
    (
        draft(BACKLOG_STREAM, TASK_CREATED, &task),
        draft(run_stream(&task.run_id), RUN_TASK_ADDED, &added(&task)),
    )
}

fn added(task: &TaskCreated) -> RunTaskAdded {
    RunTaskAdded {
        run_id: task.run_id.clone(),
        task_id: task.task_id.clone(),
        parent_id: task.parent_id.clone(),
        status: task.status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bernstein_core::canonical::to_canonical_bytes;
    use serde_json::json;

    fn sample_task() -> TaskCreated {
        TaskCreated {
            task_id: "T-0123456789abcdef".into(),
            run_id: "T-0123456789abcdef".into(),
            parent_id: None,
            title: "Add a health endpoint".into(),
            goal: "Add a health endpoint".into(),
            role: "backend".into(),
            priority: 2,
            scope: Scope::Medium,
            complexity: Complexity::Medium,
            estimated_minutes: 30,
            status: TaskStatus::Open,
            created_at: 1_767_225_600_000,
            depends_on: Vec::new(),
            requires_approval: false,
            plan: false,
            project: None,
            capabilities: Vec::new(),
            redactions: BTreeMap::new(),
            redacted_kinds: Vec::new(),
        }
    }

    #[test]
    fn new_run_writes_backlog_then_journal() {
        let drafts = new_run_drafts(&sample_task());
        let kinds: Vec<(&str, &str)> = drafts
            .iter()
            .map(|d| (d.stream.as_str(), d.kind.as_str()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("backlog", "task.created"),
                ("run:T-0123456789abcdef", "run.created"),
                ("run:T-0123456789abcdef", "run.task_added"),
            ]
        );
        for d in &drafts {
            to_canonical_bytes(&d.body).expect("no floats in bodies");
        }
        assert_eq!(
            drafts[2].body,
            json!({"run_id": "T-0123456789abcdef", "task_id": "T-0123456789abcdef", "status": "open"})
        );
    }

    #[test]
    fn bodies_round_trip_and_omit_absent_options() {
        let t = sample_task();
        let v = serde_json::to_value(&t).unwrap();
        assert!(v.get("parent_id").is_none());
        assert_eq!(serde_json::from_value::<TaskCreated>(v).unwrap(), t);
    }

    /// The first ```json block after each "### `kind`" heading of docs/RECORDS.md.
    fn documented_examples() -> Vec<(String, String)> {
        let doc = include_str!("../../docs/RECORDS.md");
        let mut out = Vec::new();
        let mut lines = doc.lines();
        while let Some(line) = lines.next() {
            let Some(kind) = line.strip_prefix("### `").and_then(|l| l.strip_suffix('`')) else {
                continue;
            };
            let mut body = None;
            while let Some(l) = lines.next() {
                if l == "```json" {
                    body = lines.next().map(str::to_string);
                    break;
                }
            }
            out.push((
                kind.to_string(),
                body.expect("an example body after the heading"),
            ));
        }
        out
    }

    fn round_trips<T: Serialize + serde::de::DeserializeOwned>(text: &str) -> String {
        let body: T = serde_json::from_str(text).expect("the example parses into its type");
        let v = serde_json::to_value(&body).unwrap();
        String::from_utf8(to_canonical_bytes(&v).unwrap()).unwrap()
    }

    #[test]
    fn documented_examples_match_the_types_that_write_them() {
        use bernstein_core::protocol::task_records;
        let examples = documented_examples();
        let kinds: Vec<&str> = examples.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            kinds,
            [
                TASK_CREATED,
                TASK_STATUS,
                RUN_CREATED,
                RUN_TASK_ADDED,
                RUN_TASK_STATUS,
                RUN_CANCELLED,
                STATELESS_CALL,
                CLAIM_RECEIPT,
                MAILBOX_MESSAGE,
                MAILBOX_MIRROR,
                OPERATOR_COMMAND,
                super::super::task_view::PROGRESS_TICK,
                super::super::lease::TASK_LEASE,
                super::super::lease::TASK_RECLAIMED,
                task_records::CREATED,
                task_records::ANSWERED,
                task_records::CANCELLED,
                super::super::artifacts::ARTIFACT_POSTED,
                super::super::artifacts::RUN_ARTIFACT,
                super::super::artifacts::ARTIFACT_MIRROR,
                super::super::capsule::CAPSULE_ISSUED,
            ]
        );
        for (kind, text) in &examples {
            let again = match kind.as_str() {
                TASK_CREATED => round_trips::<TaskCreated>(text),
                TASK_STATUS => round_trips::<TaskStatusChanged>(text),
                RUN_CREATED => round_trips::<RunCreated>(text),
                RUN_TASK_ADDED => round_trips::<RunTaskAdded>(text),
                RUN_TASK_STATUS => round_trips::<TaskStatusChanged>(text),
                RUN_CANCELLED => round_trips::<RunCancelled>(text),
                CLAIM_RECEIPT => round_trips::<super::super::claims::ClaimEntry>(text),
                MAILBOX_MESSAGE => round_trips::<super::super::mailbox::MailboxEntry>(text),
                MAILBOX_MIRROR => round_trips::<super::super::mailbox::MailboxMirror>(text),
                OPERATOR_COMMAND => round_trips::<super::super::operator::OperatorCommand>(text),
                super::super::task_view::PROGRESS_TICK => {
                    round_trips::<super::super::task_view::ProgressTick>(text)
                }
                super::super::lease::TASK_LEASE => {
                    round_trips::<super::super::lease::TaskLease>(text)
                }
                super::super::lease::TASK_RECLAIMED => {
                    round_trips::<super::super::lease::TaskReclaimed>(text)
                }
                task_records::CREATED => round_trips::<task_records::TaskCreated>(text),
                task_records::ANSWERED => round_trips::<task_records::TaskAnswered>(text),
                task_records::CANCELLED => round_trips::<task_records::TaskCancelled>(text),
                super::super::artifacts::ARTIFACT_POSTED => {
                    round_trips::<super::super::artifacts::ArtifactRecord>(text)
                }
                super::super::artifacts::RUN_ARTIFACT
                | super::super::artifacts::ARTIFACT_MIRROR => {
                    round_trips::<super::super::artifacts::ArtifactRef>(text)
                }
                super::super::capsule::CAPSULE_ISSUED => {
                    round_trips::<super::super::capsule::CapsuleIssued>(text)
                }
                _ => {
                    let v: Value = serde_json::from_str(text).unwrap();
                    assert!(v.get("run_id").is_some_and(Value::is_string));
                    String::from_utf8(to_canonical_bytes(&v).unwrap()).unwrap()
                }
            };
            assert_eq!(
                &again, text,
                "{kind}: the example is not what the code writes"
            );
        }
    }
}
