//! A task row, sized for what most rows hold: the fields every task sets sit in the row, and
//! the ones most tasks leave empty (a parent, children, dependencies, a project, capabilities,
//! redactions, a result summary, a lease, reclaimed claimers, the reason it ended) sit in one [`Rare`] allocated
//! only when one of them is set. An ordinary row is then ≈190 bytes instead of 432, and its
//! title, goal and role are kept inline when short ([`InlineStr`]).
//!
//! The row serializes exactly as the flat struct it replaced: the same fields in the same order,
//! every one present, empty ones as `null`, `[]` or `{}` (checkpoints keep their bytes), and
//! reads the same forms back (`redactions` and `redacted_kinds` may be absent). An empty
//! [`Rare`] and none compare equal, so two rows that serialize the same are equal.

use std::collections::BTreeMap;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::lifecycle::TaskStatus;
use crate::records::{Complexity, Scope};
use bernstein_core::ledger::compact::InlineStr;

/// One task as the backlog describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRow {
    pub id: InlineStr,
    pub run_id: InlineStr,
    pub title: InlineStr,
    pub goal: InlineStr,
    pub role: InlineStr,
    /// The claimer holding the task: set by a claim, cleared when it returns to the queue.
    pub claimer: Option<InlineStr>,
    pub created_at: u64,
    pub updated_at: u64,
    /// Ledger seq of the `task.created` record: the creation order.
    pub created_seq: u64,
    pub estimated_minutes: u32,
    /// How many times the task was claimed.
    pub attempts: u32,
    pub priority: u8,
    pub scope: Scope,
    pub complexity: Complexity,
    pub status: TaskStatus,
    /// Completion moves it to `pending_approval` instead of `done`.
    pub requires_approval: bool,
    /// The task is a plan's root (its id is the plan id).
    pub plan: bool,
    /// The fields most tasks leave empty (read through it as `row.rare.children`; change them
    /// with [`RareBox::make_mut`]).
    pub rare: RareBox,
}

/// The fields of a task row that most tasks leave empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rare {
    pub parent_id: Option<String>,
    /// Subtask ids in creation order.
    pub children: Vec<String>,
    /// Tasks that must be done or closed before this one is offered to a claimer.
    pub depends_on: Vec<String>,
    pub project: Option<String>,
    pub capabilities: Vec<String>,
    /// What DLP replaced in the title and goal (`task.created`'s `redactions`).
    pub redactions: BTreeMap<String, u64>,
    pub redacted_kinds: Vec<String>,
    /// The result summary of its completion or approval.
    pub result_summary: Option<String>,
    /// When the claimer's lease ends (wall-clock ms; `task.lease`), while it holds the task.
    pub lease_expires_at: Option<u64>,
    /// Length of that lease in ms (a renewal keeps it).
    pub lease_ms: Option<u64>,
    /// Claimers whose expired lease another claimer took over (`task.reclaimed`).
    pub reclaimed_from: Vec<String>,
    /// Why it failed or was cancelled (that status change's `reason`), while it is failed or
    /// cancelled.
    pub end_reason: Option<String>,
}

static EMPTY: Rare = Rare {
    parent_id: None,
    children: Vec::new(),
    depends_on: Vec::new(),
    project: None,
    capabilities: Vec::new(),
    redactions: BTreeMap::new(),
    redacted_kinds: Vec::new(),
    result_summary: None,
    lease_expires_at: None,
    lease_ms: None,
    reclaimed_from: Vec::new(),
    end_reason: None,
};

impl Rare {
    fn is_empty(&self) -> bool {
        *self == EMPTY
    }
}

/// A [`Rare`] allocated only when one of its fields is set; reads as an empty one otherwise.
#[derive(Clone, Debug, Default)]
pub struct RareBox(Option<Box<Rare>>);

impl RareBox {
    /// Boxes `rare` unless it is empty.
    pub fn new(rare: Rare) -> RareBox {
        RareBox((!rare.is_empty()).then(|| Box::new(rare)))
    }

    /// The fields to change (allocated on the first change).
    pub fn make_mut(&mut self) -> &mut Rare {
        self.0.get_or_insert_with(Box::default)
    }

    /// Frees the allocation if every field is empty again (after a change that may have
    /// emptied the last one, such as a lease ending).
    pub fn shrink(&mut self) {
        if self.0.as_deref().is_some_and(Rare::is_empty) {
            self.0 = None;
        }
    }
}

impl Deref for RareBox {
    type Target = Rare;
    fn deref(&self) -> &Rare {
        self.0.as_deref().unwrap_or(&EMPTY)
    }
}

impl PartialEq for RareBox {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for RareBox {}

/// The serialized form, borrowed: the flat struct's fields in its order.
#[derive(Serialize)]
struct RowRef<'a> {
    id: &'a InlineStr,
    run_id: &'a InlineStr,
    parent_id: &'a Option<String>,
    title: &'a InlineStr,
    goal: &'a InlineStr,
    role: &'a InlineStr,
    priority: u8,
    scope: Scope,
    complexity: Complexity,
    estimated_minutes: u32,
    status: TaskStatus,
    created_at: u64,
    updated_at: u64,
    created_seq: u64,
    children: &'a Vec<String>,
    depends_on: &'a Vec<String>,
    requires_approval: bool,
    plan: bool,
    project: &'a Option<String>,
    capabilities: &'a Vec<String>,
    redactions: &'a BTreeMap<String, u64>,
    redacted_kinds: &'a Vec<String>,
    claimer: &'a Option<InlineStr>,
    attempts: u32,
    result_summary: &'a Option<String>,
    lease_expires_at: Option<u64>,
    lease_ms: Option<u64>,
    reclaimed_from: &'a Vec<String>,
    end_reason: &'a Option<String>,
}

/// The serialized form, owned (what a checkpoint holds).
#[derive(Deserialize)]
struct Row {
    id: InlineStr,
    run_id: InlineStr,
    parent_id: Option<String>,
    title: InlineStr,
    goal: InlineStr,
    role: InlineStr,
    priority: u8,
    scope: Scope,
    complexity: Complexity,
    estimated_minutes: u32,
    status: TaskStatus,
    created_at: u64,
    updated_at: u64,
    created_seq: u64,
    children: Vec<String>,
    depends_on: Vec<String>,
    requires_approval: bool,
    plan: bool,
    project: Option<String>,
    capabilities: Vec<String>,
    #[serde(default)]
    redactions: BTreeMap<String, u64>,
    #[serde(default)]
    redacted_kinds: Vec<String>,
    claimer: Option<InlineStr>,
    attempts: u32,
    result_summary: Option<String>,
    lease_expires_at: Option<u64>,
    lease_ms: Option<u64>,
    reclaimed_from: Vec<String>,
    end_reason: Option<String>,
}

impl Serialize for TaskRow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = &*self.rare;
        RowRef {
            id: &self.id,
            run_id: &self.run_id,
            parent_id: &r.parent_id,
            title: &self.title,
            goal: &self.goal,
            role: &self.role,
            priority: self.priority,
            scope: self.scope,
            complexity: self.complexity,
            estimated_minutes: self.estimated_minutes,
            status: self.status,
            created_at: self.created_at,
            updated_at: self.updated_at,
            created_seq: self.created_seq,
            children: &r.children,
            depends_on: &r.depends_on,
            requires_approval: self.requires_approval,
            plan: self.plan,
            project: &r.project,
            capabilities: &r.capabilities,
            redactions: &r.redactions,
            redacted_kinds: &r.redacted_kinds,
            claimer: &self.claimer,
            attempts: self.attempts,
            result_summary: &r.result_summary,
            lease_expires_at: r.lease_expires_at,
            lease_ms: r.lease_ms,
            reclaimed_from: &r.reclaimed_from,
            end_reason: &r.end_reason,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for TaskRow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let r = Row::deserialize(deserializer)?;
        Ok(TaskRow {
            id: r.id,
            run_id: r.run_id,
            title: r.title,
            goal: r.goal,
            role: r.role,
            claimer: r.claimer,
            created_at: r.created_at,
            updated_at: r.updated_at,
            created_seq: r.created_seq,
            estimated_minutes: r.estimated_minutes,
            attempts: r.attempts,
            priority: r.priority,
            scope: r.scope,
            complexity: r.complexity,
            status: r.status,
            requires_approval: r.requires_approval,
            plan: r.plan,
            rare: RareBox::new(Rare {
                parent_id: r.parent_id,
                children: r.children,
                depends_on: r.depends_on,
                project: r.project,
                capabilities: r.capabilities,
                redactions: r.redactions,
                redacted_kinds: r.redacted_kinds,
                result_summary: r.result_summary,
                lease_expires_at: r.lease_expires_at,
                lease_ms: r.lease_ms,
                reclaimed_from: r.reclaimed_from,
                end_reason: r.end_reason,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row() -> TaskRow {
        TaskRow {
            id: "T-a".into(),
            run_id: "T-a".into(),
            title: "a title longer than twenty-two bytes".into(),
            goal: "g".into(),
            role: "backend".into(),
            claimer: None,
            created_at: 5,
            updated_at: 6,
            created_seq: 1,
            estimated_minutes: 30,
            attempts: 0,
            priority: 2,
            scope: Scope::Medium,
            complexity: Complexity::Medium,
            status: TaskStatus::Open,
            requires_approval: false,
            plan: false,
            rare: RareBox::default(),
        }
    }

    #[test]
    fn a_row_serializes_as_the_flat_struct_did() {
        let text = serde_json::to_string(&row()).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"id":"T-a","run_id":"T-a","parent_id":null,"#,
                r#""title":"a title longer than twenty-two bytes","goal":"g","role":"backend","#,
                r#""priority":2,"scope":"medium","complexity":"medium","estimated_minutes":30,"#,
                r#""status":"open","created_at":5,"updated_at":6,"created_seq":1,"children":[],"#,
                r#""depends_on":[],"requires_approval":false,"plan":false,"project":null,"#,
                r#""capabilities":[],"redactions":{},"redacted_kinds":[],"claimer":null,"#,
                r#""attempts":0,"result_summary":null,"lease_expires_at":null,"lease_ms":null,"#,
                r#""reclaimed_from":[],"end_reason":null}"#
            )
        );
        assert_eq!(serde_json::from_str::<TaskRow>(&text).unwrap(), row());
        // A checkpoint written before redactions were recorded reads with none.
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("redactions");
        o.remove("redacted_kinds");
        assert_eq!(serde_json::from_value::<TaskRow>(v).unwrap(), row());
    }

    #[test]
    fn rare_fields_round_trip_and_empty_ones_take_no_box() {
        let mut r = row();
        r.rare.make_mut().lease_ms = Some(1);
        r.claimer = Some("w".into());
        let text = serde_json::to_string(&r).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["lease_ms"], json!(1));
        assert_eq!(v["claimer"], json!("w"));
        assert_eq!(serde_json::from_str::<TaskRow>(&text).unwrap(), r);
        r.rare.make_mut().lease_ms = None;
        assert!(r.rare.0.is_some());
        r.claimer = None;
        assert_eq!(r, row());
        r.rare.shrink();
        assert!(r.rare.0.is_none());
        let back: TaskRow = serde_json::from_str(&serde_json::to_string(&row()).unwrap()).unwrap();
        assert!(back.rare.0.is_none());
    }
}
