//! The domain projection: the task table and the run views, folded record by record from the
//! ledger by `Snapshot::apply`, and checkpointed with it (Serialize + Deserialize).
//!
//! Folding one record costs O(log n); every question a request asks is answered from an index
//! (tasks by id, tasks by creation order, tasks by status, children by parent, runs by id,
//! counts by status), never by scanning the ledger or all tasks.
//!
//! The indexes are persistent ordered collections (`imbl::OrdMap`/`OrdSet`): cloning the
//! projection is O(1) and shares its structure, and a fold after a clone copies only the
//! O(log n) nodes it touches. The store relies on this when it appends while requests still
//! hold the previous snapshot (`Arc::make_mut`). They iterate and serialize in key order like
//! the `BTreeMap`s they replaced, so checkpoints keep their bytes; hash maps are never used
//! (their order would not be deterministic).
//!
//! Task rows and run views sit in those maps behind a reference count, task ids, stream names
//! and short titles, goals and roles are kept inline, and a checkpoint's collections are read
//! back with full tree leaves ([`compact`]); a task row keeps the fields most tasks leave
//! empty in one allocation made only when one is set ([`TaskRow`], `row.rare`), and a run's
//! only member sits in its view (`runs::Members`): ≈0.7 KiB per run of one task read from a
//! checkpoint (BENCHMARKS.md "Projection memory at 1M records").
//!
//! A record of a known kind that does not fit the state (a duplicate id, a status change whose
//! `from` is stale, an edge the lifecycle forbids) is ignored and counted: the ledger chain
//! already vouches for the bytes, and every server folds the same bytes the same way. Unknown
//! kinds are skipped silently so older servers can read newer ledgers. This module must never
//! decide what a tool may do; it only records what happened.

use std::collections::BTreeMap;

use imbl::{OrdMap, OrdSet};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use bernstein_core::digest::Digest;
use bernstein_core::ledger::audit::CallAudit;
use bernstein_core::ledger::{
    AUDIT_STREAM, BACKLOG_STREAM, Fold, MAILBOX_STREAM_PREFIX, RUN_STREAM_PREFIX, Record,
};
use bernstein_core::protocol::task_records::{self, ToolTasks};

/// A snapshot of Bernstein's ledger: positions, stream heads and the [`Projection`].
pub type Snapshot = bernstein_core::ledger::Snapshot<Projection>;

use super::artifacts::{self, ArtifactIndex};
use super::call_stats::CallStats;
use super::capsule_index::{self, CapsuleIndex};
use super::lease::{self, TaskLease, TaskReclaimed};
use super::lifecycle::{self, TaskStatus};
use super::mailbox::{MailboxEntry, MailboxHead};
use super::records::{self, TaskCreated, TaskStatusChanged};
use super::runs::RunView;

pub use super::task_row::{Rare, RareBox, TaskRow};
pub use bernstein_core::ledger::compact::{self, InlineStr};
use compact::Shared;

/// The most roles the per-role tallies name, [`super::call_stats::OTHER_KEY`] included: the
/// tasks of any further role are counted under it (a role is at most 64 characters).
pub const MAX_ROLES: usize = 256;

/// Per-role tallies for `bernstein_status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleTally {
    pub tasks: u64,
    /// Reported spend in micro-USD (no record kind reports spend yet).
    pub cost_micro_usd: u64,
}

/// Where the fold stands inside the current transaction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct TxnCursor {
    /// Seq of the transaction's first record.
    start_seq: u64,
    /// `txn` of the last folded record: [index, count].
    at: [u32; 2],
}

/// Bernstein's state at a ledger position. Fields have no serde defaults on purpose: a
/// checkpoint written by a build whose projection lacked a field fails to load and is ignored
/// (the store then folds the ledger from the start), instead of loading as a wrong state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Projection {
    #[serde(deserialize_with = "compact::map")]
    tasks: OrdMap<InlineStr, Shared<TaskRow>>,
    /// created_seq → task id.
    #[serde(deserialize_with = "compact::map")]
    by_creation: OrdMap<u64, InlineStr>,
    /// status → created_seq of the tasks in it.
    #[serde(deserialize_with = "compact::map_of_sets")]
    by_status: OrdMap<TaskStatus, OrdSet<u64>>,
    roles: OrdMap<String, RoleTally>,
    #[serde(deserialize_with = "compact::map")]
    runs: OrdMap<InlineStr, Shared<RunView>>,
    /// (priority, created_seq) of every open task: the claim queue, best first.
    #[serde(deserialize_with = "compact::set")]
    open_queue: OrdSet<(u8, u64)>,
    /// Mailbox heads by task id.
    mailboxes: OrdMap<String, MailboxHead>,
    /// Ids of plan roots.
    plans: OrdSet<String>,
    /// Artifact versions by key (the lineage spine).
    artifacts: ArtifactIndex,
    /// Mailbox entries by task and issued capsules (`bernstein_task_capsule`).
    capsules: CapsuleIndex,
    /// (lease end, created_seq) of every held task with a lease: expired leases, oldest first.
    leases: OrdSet<(u64, u64)>,
    /// Hash of the latest audit record.
    audit_head: Digest,
    txn: TxnCursor,
    /// Known-kind records that did not fit the state and were skipped.
    ignored_records: u64,
    /// The engine's own tasks (`protocol::tool_tasks`), for catalogues that declare
    /// task-capable tools without task hooks (the conformance fixture's).
    /// Absent from a checkpoint while empty, so Bernstein's checkpoints keep their bytes.
    #[serde(default, skip_serializing_if = "ToolTasks::is_empty")]
    tool_tasks: ToolTasks,
    /// Calls per minute of the last day (the dashboard's tallies).
    calls: CallStats,
    /// Wall-clock ms of the newest claim decision, granted or refused (`task.claim_receipt`'s
    /// `at`): whether a worker is claiming from this project at all.
    last_claim_at: Option<u64>,
}

impl Fold for Projection {
    /// Folds one record. Records were validated by the ledger; unknown kinds are ignored so that
    /// older servers can read newer ledgers.
    fn apply(&mut self, rec: &Record) {
        let [index, _] = rec.txn;
        if index <= 1 {
            self.txn.start_seq = rec.seq;
        }
        self.txn.at = rec.txn;
        let fitted = if rec.stream == BACKLOG_STREAM {
            self.fold_backlog(rec)
        } else if let Some(run_id) = rec.stream.strip_prefix(RUN_STREAM_PREFIX) {
            self.fold_journal(run_id, rec)
        } else if rec.stream == AUDIT_STREAM {
            self.fold_audit(rec)
        } else if rec.stream.starts_with(task_records::STREAM_PREFIX) {
            self.tool_tasks.apply(rec)
        } else if let Some(task_id) = rec.stream.strip_prefix(MAILBOX_STREAM_PREFIX) {
            self.fold_mailbox(task_id, rec)
        } else if rec.stream == artifacts::LINEAGE_STREAM {
            rec.kind != artifacts::ARTIFACT_POSTED || {
                let run = rec.body.get("task_id").and_then(Value::as_str);
                let run = run
                    .and_then(|t| self.tasks.get(t))
                    .map(|t| t.run_id.as_str());
                self.artifacts.fold_posted(rec, run)
            }
        } else {
            true
        };
        if !fitted {
            self.ignored_records += 1;
        }
    }

    /// Whether no transaction is half-folded.
    fn at_txn_boundary(&self) -> bool {
        self.txn.at[0] >= self.txn.at[1]
    }
}

impl Projection {
    fn fold_backlog(&mut self, rec: &Record) -> bool {
        match rec.kind.as_str() {
            records::TASK_CREATED => {
                parse::<TaskCreated>(&rec.body).is_some_and(|b| self.create_task(b, rec.seq))
            }
            records::TASK_STATUS => {
                parse::<TaskStatusChanged>(&rec.body).is_some_and(|b| self.change_task(&b))
            }
            lease::TASK_LEASE => parse::<TaskLease>(&rec.body).is_some_and(|b| self.lease(&b)),
            lease::TASK_RECLAIMED => {
                parse::<TaskReclaimed>(&rec.body).is_some_and(|b| self.reclaimed(&b))
            }
            _ => true,
        }
    }

    fn create_task(&mut self, b: TaskCreated, seq: u64) -> bool {
        if self.tasks.contains_key(b.task_id.as_str()) {
            return false;
        }
        if let Some(parent) = &b.parent_id {
            match self.tasks.get_mut(parent.as_str()) {
                Some(p) if p.run_id == b.run_id => p
                    .make_mut()
                    .rare
                    .make_mut()
                    .children
                    .push(b.task_id.clone()),
                _ => return false,
            }
        } else if b.run_id != b.task_id {
            return false;
        }
        let row = TaskRow {
            id: b.task_id.into(),
            run_id: b.run_id.into(),
            title: b.title.into(),
            goal: b.goal.into(),
            role: b.role.into(),
            claimer: None,
            created_at: b.created_at,
            updated_at: b.created_at,
            created_seq: seq,
            estimated_minutes: b.estimated_minutes,
            attempts: 0,
            priority: b.priority,
            scope: b.scope,
            complexity: b.complexity,
            status: b.status,
            requires_approval: b.requires_approval,
            plan: b.plan,
            rare: RareBox::new(Rare {
                parent_id: b.parent_id,
                depends_on: b.depends_on,
                project: b.project,
                capabilities: b.capabilities,
                redactions: b.redactions,
                redacted_kinds: b.redacted_kinds,
                ..Rare::default()
            }),
        };
        if row.plan {
            self.plans.insert(row.id.to_string());
        }
        if row.status == TaskStatus::Open {
            self.open_queue.insert((row.priority, seq));
        }
        let role = if self.roles.len() < MAX_ROLES - 1 || self.roles.contains_key::<str>(&row.role)
        {
            row.role.to_string()
        } else {
            super::call_stats::OTHER_KEY.to_string()
        };
        self.roles.entry(role).or_default().tasks += 1;
        self.by_status.entry(row.status).or_default().insert(seq);
        self.by_creation.insert(seq, InlineStr::new(&row.id));
        self.tasks.insert(InlineStr::new(&row.id), Shared::new(row));
        true
    }

    fn change_task(&mut self, b: &TaskStatusChanged) -> bool {
        let Some(row) = self.tasks.get_mut(b.task_id.as_str()).map(Shared::make_mut) else {
            return false;
        };
        if row.run_id != b.run_id
            || row.status != b.from
            || lifecycle::advance(&mut row.status, b.to).is_err()
        {
            return false;
        }
        row.updated_at = b.at;
        match b.to {
            TaskStatus::Claimed => {
                row.attempts = row.attempts.saturating_add(1);
                row.claimer = b.actor.as_deref().map(InlineStr::new);
            }
            TaskStatus::Open => row.claimer = None,
            _ => {}
        }
        if !matches!(b.to, TaskStatus::Claimed | TaskStatus::InProgress)
            && let Some(end) = row.rare.lease_expires_at
        {
            let rare = row.rare.make_mut();
            rare.lease_expires_at = None;
            rare.lease_ms = None;
            row.rare.shrink();
            self.leases.remove(&(end, row.created_seq));
        }
        if let Some(summary) = &b.summary {
            row.rare.make_mut().result_summary = Some(summary.clone());
        }
        let ended = matches!(b.to, TaskStatus::Failed | TaskStatus::Cancelled);
        if ended || row.rare.end_reason.is_some() {
            row.rare.make_mut().end_reason = b.reason.clone().filter(|_| ended);
            row.rare.shrink();
        }
        let seq = row.created_seq;
        if b.from == TaskStatus::Open {
            self.open_queue.remove(&(row.priority, seq));
        }
        if b.to == TaskStatus::Open {
            self.open_queue.insert((row.priority, seq));
        }
        if let Some(set) = self.by_status.get_mut(&b.from) {
            set.remove(&seq);
            if set.is_empty() {
                self.by_status.remove(&b.from);
            }
        }
        self.by_status.entry(b.to).or_default().insert(seq);
        true
    }

    /// `task.lease`: the current claimer's lease starts or is renewed.
    fn lease(&mut self, b: &TaskLease) -> bool {
        let Some(row) = self.tasks.get_mut(b.task_id.as_str()).map(Shared::make_mut) else {
            return false;
        };
        if row.run_id != b.run_id
            || row.claimer.as_deref() != Some(b.claimer_id.as_str())
            || !matches!(row.status, TaskStatus::Claimed | TaskStatus::InProgress)
        {
            return false;
        }
        if let Some(end) = row.rare.lease_expires_at {
            self.leases.remove(&(end, row.created_seq));
        }
        let rare = row.rare.make_mut();
        rare.lease_expires_at = Some(b.expires_at);
        rare.lease_ms = Some(b.lease_ms);
        self.leases.insert((b.expires_at, row.created_seq));
        true
    }

    /// `task.reclaimed`: the claimer whose lease expired loses the task (the status changes
    /// that follow in the same transaction hand it to the new claimer).
    fn reclaimed(&mut self, b: &TaskReclaimed) -> bool {
        let Some(row) = self.tasks.get_mut(b.task_id.as_str()).map(Shared::make_mut) else {
            return false;
        };
        if row.run_id != b.run_id
            || row.claimer.as_deref() != Some(b.previous_claimer_id.as_str())
            || row.rare.lease_expires_at != Some(b.expired_at)
        {
            return false;
        }
        if !row.rare.reclaimed_from.contains(&b.previous_claimer_id) {
            let rare = row.rare.make_mut();
            rare.reclaimed_from.push(b.previous_claimer_id.clone());
        }
        true
    }

    fn fold_journal(&mut self, run_id: &str, rec: &Record) -> bool {
        let audit_head = self.audit_head;
        if rec.kind == records::RUN_CREATED {
            let Some(b) = parse::<records::RunCreated>(&rec.body) else {
                return false;
            };
            if b.run_id != run_id || self.runs.contains_key(run_id) {
                return false;
            }
            let run = RunView::created(b, rec.seq, audit_head);
            self.runs
                .insert(InlineStr::new(&run.run_id), Shared::new(run));
            return true;
        }
        let Some(run) = self.runs.get_mut(run_id).map(Shared::make_mut) else {
            return false;
        };
        run.touched(rec.seq, audit_head);
        match rec.kind.as_str() {
            records::RUN_TASK_ADDED => {
                parse::<records::RunTaskAdded>(&rec.body).is_some_and(|b| run.add_member(&b))
            }
            records::RUN_TASK_STATUS => {
                parse::<TaskStatusChanged>(&rec.body).is_some_and(|b| run.change_member(&b))
            }
            records::RUN_CANCELLED => {
                parse::<records::RunCancelled>(&rec.body).is_some_and(|b| run.cancel(&b))
            }
            artifacts::RUN_ARTIFACT => self.artifacts.fold_ref(rec, true),
            _ => true,
        }
    }

    fn fold_audit(&mut self, rec: &Record) -> bool {
        let audit_head = self.audit_head;
        self.audit_head = rec.hash;
        match rec.kind.as_str() {
            artifacts::ARTIFACT_MIRROR => return self.artifacts.fold_ref(rec, false),
            capsule_index::CAPSULE_ISSUED => return self.capsules.fold_issued(rec, audit_head),
            records::STATELESS_CALL => {}
            records::CLAIM_RECEIPT => {
                let at = rec.body.get("at").and_then(Value::as_u64);
                if let Some(at) = at {
                    self.last_claim_at = Some(self.last_claim_at.map_or(at, |l| l.max(at)));
                }
                return at.is_some();
            }
            _ => return true,
        }
        let audit = CallAudit::read(&rec.body);
        self.calls.fold(&audit);
        let Some(run_id) = audit.run_id.as_deref() else {
            return true;
        };
        let start = self.txn.start_seq;
        if let Some(run) = self.runs.get_mut(run_id)
            && run.last_journal_seq >= start
        {
            run.make_mut().chain_head = rec.hash;
        }
        true
    }

    fn fold_mailbox(&mut self, task_id: &str, rec: &Record) -> bool {
        if rec.kind != records::MAILBOX_MESSAGE {
            return true;
        }
        let Some(entry) = parse::<MailboxEntry>(&rec.body) else {
            return false;
        };
        if entry.task_id != task_id || !self.tasks.contains_key(task_id) {
            return false;
        }
        let head = self.mailboxes.entry(task_id.to_string()).or_default();
        let fitted = head.follow(&entry);
        if fitted {
            self.capsules.fold_mailbox(entry);
        }
        fitted
    }

    /// Wall-clock ms of the newest claim decision recorded, granted or refused.
    pub fn last_claim_at(&self) -> Option<u64> {
        self.last_claim_at
    }

    /// Tool calls per minute of the last day.
    pub fn calls(&self) -> &CallStats {
        &self.calls
    }

    /// Artifact versions by key (the lineage spine).
    pub fn artifacts(&self) -> &ArtifactIndex {
        &self.artifacts
    }

    /// Mailbox entries by task and the capsules this ledger issued.
    pub fn capsules(&self) -> &CapsuleIndex {
        &self.capsules
    }

    /// The task `id`.
    pub fn task(&self, id: &str) -> Option<&TaskRow> {
        self.tasks.get(id).map(|row| &**row)
    }

    /// The run `id`.
    pub fn run(&self, id: &str) -> Option<&RunView> {
        self.runs.get(id).map(|run| &**run)
    }

    /// Runs whose id sorts after `after` (all runs when `None`), in run-id order.
    pub fn runs_after<'a>(&'a self, after: Option<&str>) -> impl Iterator<Item = &'a RunView> + 'a {
        use std::ops::Bound;
        let lower = match after {
            Some(a) => Bound::Excluded(a),
            None => Bound::Unbounded,
        };
        self.runs
            .range::<_, str>((lower, Bound::Unbounded))
            .map(|(_, v)| &**v)
    }

    /// Tasks whose id sorts at or after `from`, in id order (those starting with a prefix are
    /// the first ones of `tasks_from(prefix)`).
    pub fn tasks_from<'a>(&'a self, from: &str) -> impl Iterator<Item = &'a TaskRow> + use<'a> {
        use std::ops::Bound;
        self.tasks
            .range::<_, str>((Bound::Included(from), Bound::Unbounded))
            .map(|(_, v)| &**v)
    }

    /// How many tasks exist.
    pub fn total(&self) -> u64 {
        self.tasks.len() as u64
    }

    /// How many tasks are in `status` (O(1)).
    pub fn count(&self, status: TaskStatus) -> u64 {
        self.by_status.get(&status).map_or(0, |s| s.len() as u64)
    }

    /// Tasks newest first, optionally only those in `status`.
    pub fn tasks_newest_first(
        &self,
        status: Option<TaskStatus>,
    ) -> Box<dyn Iterator<Item = &TaskRow> + '_> {
        let lookup = |seq: &u64| self.by_creation.get(seq).and_then(|id| self.task(id));
        match status {
            None => Box::new(self.by_creation.keys().rev().filter_map(lookup)),
            Some(s) => match self.by_status.get(&s) {
                Some(set) => Box::new(set.iter().rev().filter_map(lookup)),
                None => Box::new(std::iter::empty()),
            },
        }
    }

    /// The task `id` and all its descendants, parents before children, children in creation
    /// order. Empty when `id` is unknown.
    pub fn subtree(&self, id: &str) -> Vec<&TaskRow> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(next) = stack.pop() {
            if let Some(row) = self.task(next) {
                out.push(row);
                stack.extend(row.rare.children.iter().rev().map(String::as_str));
            }
        }
        out
    }

    /// Open tasks in claim order: priority (1 first), then creation order.
    pub fn open_in_claim_order(&self) -> impl Iterator<Item = &TaskRow> + '_ {
        self.open_queue
            .iter()
            .filter_map(|(_, seq)| self.by_creation.get(seq).and_then(|id| self.task(id)))
    }

    /// Held tasks whose lease ended before `now`, the longest expired first.
    pub fn expired_leases(&self, now: u64) -> impl Iterator<Item = &TaskRow> + '_ {
        self.leases
            .range(..(now, 0))
            .filter_map(|(_, seq)| self.by_creation.get(seq).and_then(|id| self.task(id)))
    }

    /// The first lease to end at or after `now` (wall-clock ms): when a held task next
    /// becomes claimable again without any record being appended.
    pub fn next_lease_end(&self, now: u64) -> Option<u64> {
        self.leases.range((now, 0)..).next().map(|(end, _)| *end)
    }

    /// The head of task `id`'s mailbox (empty when nothing was posted).
    pub fn mailbox(&self, id: &str) -> MailboxHead {
        self.mailboxes.get(id).cloned().unwrap_or_default()
    }

    /// Ids of plan roots, sorted.
    pub fn plans(&self) -> impl Iterator<Item = &str> + '_ {
        self.plans.iter().map(String::as_str)
    }

    /// Per-role tallies, by role name (iterates in role-name order).
    pub fn roles(&self) -> &OrdMap<String, RoleTally> {
        &self.roles
    }

    /// Hash of the latest audit record (ZERO before the first).
    pub fn audit_head(&self) -> Digest {
        self.audit_head
    }

    /// How many known-kind records did not fit the state and were skipped.
    /// The engine's own tasks folded so far.
    pub fn tool_tasks(&self) -> &ToolTasks {
        &self.tool_tasks
    }

    pub fn ignored_records(&self) -> u64 {
        self.ignored_records
    }

    /// Counts by status recomputed by scanning every task (tests and `audit` tooling only;
    /// requests use [`Projection::count`]).
    pub fn recount(&self) -> BTreeMap<TaskStatus, u64> {
        let mut out = BTreeMap::new();
        for row in self.tasks.values() {
            *out.entry(row.status).or_default() += 1;
        }
        out
    }

    /// Member counts of `run_id` recomputed from its members (tests only).
    pub fn recount_run(&self, run_id: &str) -> Option<BTreeMap<TaskStatus, u64>> {
        let run = self.runs.get(run_id)?;
        let mut out = BTreeMap::new();
        for s in run.members.values() {
            *out.entry(s).or_default() += 1;
        }
        Some(out)
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: &Value) -> Option<T> {
    T::deserialize(body).ok()
}

#[cfg(test)]
mod sharing_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Snapshot;
    use crate::records::{Complexity, Scope, new_run_drafts, new_subtask_drafts};
    use bernstein_core::ledger::{Draft, LedgerPosition, seal};
    use serde_json::json;

    fn task(id: &str, run: &str, parent: Option<&str>) -> TaskCreated {
        TaskCreated {
            task_id: id.into(),
            run_id: run.into(),
            parent_id: parent.map(Into::into),
            title: format!("title {id}"),
            goal: "g".into(),
            role: "backend".into(),
            priority: 2,
            scope: Scope::Medium,
            complexity: Complexity::Medium,
            estimated_minutes: 30,
            status: TaskStatus::Open,
            created_at: 5,
            depends_on: Vec::new(),
            requires_approval: false,
            plan: false,
            project: None,
            capabilities: Vec::new(),
            redactions: Default::default(),
            redacted_kinds: Vec::new(),
        }
    }

    fn commit(snap: &mut Snapshot, drafts: Vec<Draft>) -> Vec<Record> {
        let at: LedgerPosition = snap.position;
        let recs = seal(&at, |s| snap.stream_head(s), drafts, b"k");
        for r in &recs {
            snap.apply(r).unwrap();
        }
        recs
    }

    fn audit(run: Option<&str>) -> Draft {
        let mut body = json!({"tool": "t", "ok": true});
        if let Some(r) = run {
            body["run_id"] = json!(r);
        }
        Draft::new("audit", records::STATELESS_CALL, body)
    }

    #[test]
    fn folds_tasks_runs_and_indexes() {
        let mut snap = Snapshot::genesis();
        let mut d = new_run_drafts(&task("T-a", "T-a", None));
        d.push(audit(Some("T-a")));
        let recs = commit(&mut snap, d);
        let p = &snap.domain;
        assert_eq!(p.total(), 1);
        assert_eq!(p.count(TaskStatus::Open), 1);
        let run = p.run("T-a").unwrap();
        assert_eq!(run.chain_head, recs[3].hash);
        assert_eq!(run.last_journal_seq, 3);
        assert!(p.at_txn_boundary());

        let (a, b) = new_subtask_drafts(&task("T-b", "T-a", Some("T-a")));
        let (c, e) = crate::status_changes::status_change_drafts(
            p,
            "T-a",
            TaskStatus::WaitingForSubtasks,
            Some("split"),
            6,
        )
        .unwrap();
        commit(&mut snap, vec![a, c, b, e, audit(Some("T-a"))]);
        let p = &snap.domain;
        assert_eq!(p.count(TaskStatus::Open), 1);
        assert_eq!(p.count(TaskStatus::WaitingForSubtasks), 1);
        assert_eq!(
            p.task("T-a").unwrap().rare.children,
            vec!["T-b".to_string()]
        );
        assert_eq!(p.task("T-a").unwrap().updated_at, 6);
        let ids: Vec<&str> = p.subtree("T-a").iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["T-a", "T-b"]);
        let newest: Vec<&str> = p.tasks_newest_first(None).map(|r| r.id.as_str()).collect();
        assert_eq!(newest, ["T-b", "T-a"]);
        let open: Vec<&str> = p
            .tasks_newest_first(Some(TaskStatus::Open))
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(open, ["T-b"]);
        assert_eq!(
            p.recount_run("T-a").unwrap(),
            p.run("T-a").unwrap().member_counts.to_map()
        );
        assert_eq!(p.roles()["backend"].tasks, 2);
        assert_eq!(p.ignored_records(), 0);
    }

    #[test]
    fn the_anchor_ignores_calls_that_did_not_write_the_journal() {
        let mut snap = Snapshot::genesis();
        let mut d = new_run_drafts(&task("T-a", "T-a", None));
        d.push(audit(Some("T-a")));
        let recs = commit(&mut snap, d);
        let anchor = recs[3].hash;
        // A poll: only an audit record naming the run.
        let poll = commit(&mut snap, vec![audit(Some("T-a"))]);
        assert_eq!(snap.domain.run("T-a").unwrap().chain_head, anchor);
        assert_eq!(snap.domain.audit_head(), poll[0].hash);
        // A journal write without an audit record: the anchor falls back to the audit head.
        let (_, j) = crate::status_changes::status_change_drafts(
            &snap.domain,
            "T-a",
            TaskStatus::Claimed,
            None,
            7,
        )
        .unwrap();
        commit(&mut snap, vec![j]);
        assert_eq!(snap.domain.run("T-a").unwrap().chain_head, poll[0].hash);
    }

    #[test]
    fn inconsistent_records_are_counted_and_skipped() {
        let mut snap = Snapshot::genesis();
        commit(&mut snap, new_run_drafts(&task("T-a", "T-a", None)));
        let before = snap.domain.clone();
        // Duplicate creation, orphan subtask, root whose run id differs, stale and illegal
        // status changes, journal records of an unknown run, and unknown kinds.
        let stale = TaskStatusChanged {
            task_id: "T-a".into(),
            run_id: "T-a".into(),
            from: TaskStatus::Claimed,
            to: TaskStatus::Done,
            reason: None,
            actor: None,
            summary: None,
            at: 1,
            redactions: Default::default(),
            redacted_kinds: Vec::new(),
        };
        let illegal = TaskStatusChanged {
            from: TaskStatus::Open,
            to: TaskStatus::Closed,
            ..stale.clone()
        };
        let bad_journal = TaskStatusChanged {
            run_id: "T-a".into(),
            task_id: "T-a".into(),
            from: TaskStatus::Open,
            to: TaskStatus::Closed,
            reason: None,
            actor: None,
            summary: None,
            at: 1,
            redactions: Default::default(),
            redacted_kinds: Vec::new(),
        };
        let drafts = vec![
            records::draft("backlog", records::TASK_CREATED, &task("T-a", "T-a", None)),
            records::draft(
                "backlog",
                records::TASK_CREATED,
                &task("T-c", "T-a", Some("T-x")),
            ),
            records::draft("backlog", records::TASK_CREATED, &task("T-d", "T-a", None)),
            records::draft("backlog", records::TASK_STATUS, &stale),
            records::draft("backlog", records::TASK_STATUS, &illegal),
            records::draft("run:T-a", records::RUN_TASK_STATUS, &bad_journal),
            records::draft("run:T-q", records::RUN_TASK_STATUS, &bad_journal),
            Draft::new("backlog", "task.future_kind", json!({"x": 1})),
            Draft::new("backlog", records::TASK_STATUS, json!({"nonsense": true})),
        ];
        commit(&mut snap, drafts);
        let p = &snap.domain;
        assert_eq!(p.ignored_records(), 8);
        assert_eq!(p.tasks, before.tasks);
        assert_eq!(p.by_status, before.by_status);
        assert_eq!(
            p.run("T-a").unwrap().members,
            before.run("T-a").unwrap().members
        );
    }

    #[test]
    fn txn_boundary_tracks_half_folded_transactions() {
        let mut snap = Snapshot::genesis();
        let recs = seal(
            &snap.position,
            |_| Digest::ZERO,
            new_run_drafts(&task("T-a", "T-a", None)),
            b"k",
        );
        snap.apply(&recs[0]).unwrap();
        assert!(!snap.at_txn_boundary());
        snap.apply(&recs[1]).unwrap();
        assert!(!snap.at_txn_boundary());
        snap.apply(&recs[2]).unwrap();
        assert!(snap.at_txn_boundary());
    }

    #[test]
    fn checkpoints_round_trip() {
        let mut snap = Snapshot::genesis();
        let mut d = new_run_drafts(&task("T-a", "T-a", None));
        d.push(audit(Some("T-a")));
        commit(&mut snap, d);
        let text = serde_json::to_string(&snap.domain).unwrap();
        let back: Projection = serde_json::from_str(&text).unwrap();
        assert_eq!(back, snap.domain);
    }
}
