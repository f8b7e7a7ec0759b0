//! Test bench for the domain: calls tool handlers the way the engine does and commits their
//! drafts followed by a stand-in `mcp.stateless_call` audit record, sealed and folded with
//! `Snapshot::apply`, so handles and anchors behave as they do in production. Test-only.

use serde_json::{Value, json};

use crate::Snapshot;
use crate::bound::ToolContext;
use bernstein_core::config::Config;
use bernstein_core::ledger::{Draft, Record, seal};
use bernstein_core::protocol::host::HostReply;
use bernstein_core::protocol::input::Inputs;
use bernstein_core::protocol::registry::{ToolError, ToolOutput};
use bernstein_core::time::Timestamp;

use super::records;
use super::tools;

/// The bench's audit (HMAC) key.
pub(crate) const TEST_AUDIT_KEY: &[u8] = b"test-audit-key";
/// The bench's Ed25519 seed.
pub(crate) const TEST_SIGNING_SEED: [u8; 32] = [42; 32];

pub(crate) struct Bench {
    pub snapshot: Snapshot,
    pub config: Config,
    pub now: Timestamp,
    pub spec_revision: String,
    /// Every record committed so far, in ledger order.
    pub log: Vec<Record>,
    /// The `_meta` the next calls carry (W3C trace context tests).
    pub meta: Option<Value>,
    /// Give the stand-in audit records a `ts` and an `error` code, as the engine's have (off by
    /// default: the documented test vectors were made without them).
    pub stamp_calls: bool,
    calls: u64,
}

impl Bench {
    pub fn new() -> Bench {
        Bench {
            snapshot: Snapshot::genesis(),
            config: Config::new(TEST_AUDIT_KEY.to_vec()).with_signing_seed(&TEST_SIGNING_SEED),
            now: Timestamp(1_767_225_600_000),
            spec_revision: "2025-11-25".into(),
            log: Vec::new(),
            meta: None,
            stamp_calls: false,
            calls: 0,
        }
    }

    /// Calls `tool` like the engine: handler, then commit of its drafts plus an audit record.
    pub fn call(&mut self, tool: &str, args: Value) -> ToolOutput {
        self.call_with_host(tool, args, &[])
    }

    /// [`Bench::call`] with the runtime's replies to the call's host requests so far; a call
    /// that asks the host for more commits nothing.
    pub fn call_with_host(&mut self, tool: &str, args: Value, host: &[HostReply]) -> ToolOutput {
        self.call_full(tool, args, host, &bernstein_core::protocol::input::NO_INPUT)
    }

    /// [`Bench::call`] run with the client's answers and capabilities `input`; a call that asks
    /// the client for input commits nothing.
    pub fn call_with_input(&mut self, tool: &str, args: Value, input: &Inputs) -> ToolOutput {
        self.call_full(tool, args, &[], input)
    }

    fn call_full(
        &mut self,
        tool: &str,
        args: Value,
        host: &[HostReply],
        input: &Inputs,
    ) -> ToolOutput {
        let spec = tools::registered()
            .into_iter()
            .find(|t| t.name == tool)
            .unwrap_or_else(|| panic!("no tool {tool}"));
        let call_id = format!("call_{:016x}", self.calls);
        let out = {
            let ctx = ToolContext {
                snapshot: &self.snapshot,
                config: &self.config,
                now: self.now,
                call_id: &call_id,
                trace_id: "0af7651916cd43dd8448eb211c80319c",
                span_id: "b7ad6b7169203331",
                spec_revision: &self.spec_revision,
                host,
                meta: self.meta.as_ref(),
                input,
                task: None,
            };
            (spec.call)(&ctx, args)
        };
        if out.host.is_some() || out.input.is_some() {
            return out;
        }
        if out.result.is_err() {
            assert!(out.drafts.is_empty(), "{tool} refused but drafted records");
        }
        let mut drafts = out.drafts.clone();
        let mut body = json!({"tool": tool, "call_id": call_id, "ok": out.result.is_ok()});
        if self.stamp_calls {
            body["ts"] = json!(self.now.0);
            if let Err(e) = &out.result {
                body["error"] = json!(e.error);
            }
        }
        if let Some(r) = &out.run_id {
            body["run_id"] = json!(r);
        }
        drafts.push(Draft::new("audit", records::STATELESS_CALL, body));
        self.commit(drafts);
        self.calls += 1;
        out
    }

    /// Seals and folds `drafts` as one transaction (no audit record added).
    pub fn commit(&mut self, drafts: Vec<Draft>) -> Vec<Record> {
        let recs = seal(
            &self.snapshot.position,
            |s| self.snapshot.stream_head(s),
            drafts,
            &self.config.audit_key,
        );
        for r in &recs {
            self.snapshot
                .apply(r)
                .expect("sealed records extend the snapshot");
        }
        self.now = Timestamp(self.now.0 + 1_000);
        self.log.extend(recs.iter().cloned());
        recs
    }

    /// The ledger so far, as `ledger.jsonl` bytes.
    pub fn ledger_bytes(&self) -> Vec<u8> {
        self.log.iter().flat_map(Record::to_line).collect()
    }

    /// The task id in a payload's `task_id` field.
    pub fn id_of(v: &Value) -> String {
        v["task_id"]
            .as_str()
            .expect("task_id is a string")
            .to_string()
    }

    /// Creates a subtask of `parent` and returns its id.
    pub fn subtask(&mut self, parent: &str, goal: &str) -> String {
        let v = self.ok(
            "bernstein_run",
            json!({"goal": goal, "parent_task_id": parent}),
        );
        Bench::id_of(&v)
    }

    /// The payload of a call that must succeed.
    pub fn ok(&mut self, tool: &str, args: Value) -> Value {
        match self.call(tool, args.clone()).result {
            Ok(v) => v,
            Err(e) => panic!("{tool}({args}) refused: {e:?}"),
        }
    }

    /// The payload of a call that must succeed with these host replies.
    pub fn ok_with_host(&mut self, tool: &str, args: Value, host: &[HostReply]) -> Value {
        match self.call_with_host(tool, args.clone(), host).result {
            Ok(v) => v,
            Err(e) => panic!("{tool}({args}) refused: {e:?}"),
        }
    }

    /// The refusal of a call that must be refused.
    pub fn refused(&mut self, tool: &str, args: Value) -> ToolError {
        match self.call(tool, args.clone()).result {
            Ok(v) => panic!("{tool}({args}) succeeded: {v}"),
            Err(e) => e,
        }
    }

    /// Starts a run and returns its id.
    pub fn start(&mut self, goal: &str) -> String {
        let v = self.ok("bernstein_run", json!({"goal": goal}));
        v["task_id"]
            .as_str()
            .expect("task_id is a string")
            .to_string()
    }

    /// The current status of a known task.
    pub fn status_of(&self, id: &str) -> super::lifecycle::TaskStatus {
        self.snapshot.domain.task(id).expect("known task").status
    }

    /// Moves `task` to `to` through the lifecycle (as a later gate would), with an audit record
    /// naming its run. Panics on an illegal edge.
    pub fn force(&mut self, task: &str, to: super::lifecycle::TaskStatus) {
        let (b, j) = crate::status_changes::status_change_drafts(
            &self.snapshot.domain,
            task,
            to,
            None,
            self.now.0,
        )
        .expect("a legal transition");
        let run = self
            .snapshot
            .domain
            .task(task)
            .expect("known task")
            .run_id
            .clone();
        let audit = Draft::new(
            "audit",
            records::STATELESS_CALL,
            json!({"tool": "test_gate", "ok": true, "run_id": run}),
        );
        self.commit(vec![b, j, audit]);
    }

    /// Commits a root task in `planned` (plans arrive with a later issue) and returns its id.
    pub fn planned_root(&mut self, id: &str) -> String {
        let task = records::TaskCreated {
            task_id: id.into(),
            run_id: id.into(),
            parent_id: None,
            title: "planned".into(),
            goal: "planned".into(),
            role: "backend".into(),
            priority: 2,
            scope: records::Scope::Medium,
            complexity: records::Complexity::Medium,
            estimated_minutes: 30,
            status: super::lifecycle::TaskStatus::Planned,
            created_at: self.now.0,
            depends_on: Vec::new(),
            requires_approval: false,
            plan: false,
            project: None,
            capabilities: Vec::new(),
            redactions: Default::default(),
            redacted_kinds: Vec::new(),
        };
        let mut drafts = records::new_run_drafts(&task);
        drafts.push(Draft::new(
            "audit",
            records::STATELESS_CALL,
            json!({"tool": "test_plan", "ok": true, "run_id": id}),
        ));
        self.commit(drafts);
        id.to_string()
    }
}

/// The rows of the markdown table in the `//!` module docs of `src` that have `columns` cells
/// and a back-quoted first cell, cells trimmed of spaces and back quotes.
pub(crate) fn doc_table(src: &str, columns: usize) -> Vec<Vec<String>> {
    src.lines()
        .take_while(|l| l.starts_with("//!"))
        .filter_map(|l| {
            let cells: Vec<&str> = l
                .trim_start_matches("//!")
                .split('|')
                .map(str::trim)
                .collect();
            (cells.len() == columns + 2 && cells[1].starts_with('`')).then(|| {
                cells[1..=columns]
                    .iter()
                    .map(|c| c.trim_matches('`').to_string())
                    .collect()
            })
        })
        .collect()
}

/// A legal path of statuses from `open` to `target`, for `Bench::force` (a `planned` root is
/// committed directly with `Bench::planned_root`).
pub(crate) fn path_to(target: super::lifecycle::TaskStatus) -> Vec<super::lifecycle::TaskStatus> {
    use super::lifecycle::TaskStatus::*;
    match target {
        Open | Planned => vec![],
        Claimed => vec![Claimed],
        InProgress => vec![Claimed, InProgress],
        Done => vec![Claimed, Done],
        Closed => vec![Claimed, Done, Closed],
        Failed => vec![Failed],
        Blocked => vec![Claimed, Blocked],
        WaitingForSubtasks => vec![WaitingForSubtasks],
        Cancelled => vec![Cancelled],
        Orphaned => vec![Claimed, InProgress, Orphaned],
        PendingApproval => vec![Claimed, PendingApproval],
    }
}

/// The argument a refusal names: its `field` (a handler's own refusal), or the first segment
/// of its first violation's path (arguments that did not parse: `completed_ids` of
/// `arguments.completed_ids[3]`).
pub fn argument(e: &ToolError) -> String {
    if let Some(Value::String(f)) = e.extra.get("field") {
        return f.clone();
    }
    let path = e.extra["violations"][0]["path"]
        .as_str()
        .unwrap_or_default();
    let path = path.strip_prefix("arguments.").unwrap_or(path);
    path.split(['.', '['])
        .next()
        .unwrap_or_default()
        .to_string()
}
