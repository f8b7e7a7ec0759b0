//! Structure-aware `tools/call` sequences: well-formed JSON-RPC envelopes naming real tools
//! (and a few unknown ones) with fuzzed arguments built from the argument names the tools know
//! and the task ids the fixture holds, at every protocol revision, served in order against the
//! fixture snapshot. This reaches the domain's handlers and gates (run, subtask, claim,
//! message, complete, approve, cancel, polls) far more often than raw bytes do.
//! Invariants: those of `bernstein_fuzz::invariants`, plus: every call gets a reply.
#![no_main]

use arbitrary::Arbitrary;
use bernstein_core::protocol::host::{
    DirEntry, EntryKind, HostFailure, HostReply, HostRequest,
};
use bernstein_core::protocol::Phase;
use bernstein_domain::bound::Input;
use bernstein_fuzz::{fixture, invariants};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

const EXTRA_TOOLS: [&str; 3] = ["bernstein_nope", "", "bernstein_run "];

const KEYS: [&str; 26] = [
    "goal",
    "role",
    "priority",
    "scope",
    "complexity",
    "estimated_minutes",
    "parent_task_id",
    "depends_on",
    "task_id",
    "run_id",
    "reason",
    "detail",
    "claimer_id",
    "project",
    "capability",
    "completed_ids",
    "max_attempts",
    "claimer_card_fingerprint",
    "body",
    "kind",
    "sender",
    "sender_card_fingerprint",
    "result_summary",
    "note",
    "limit",
    "plan",
];

const WORDS: [&str; 12] = [
    "open",
    "finding",
    "question",
    "artefact_ref",
    "small",
    "medium",
    "large",
    "low",
    "high",
    "backend",
    "worker-1",
    "AKIAIOSFODNN7EXAMPLE",
];

#[derive(Arbitrary, Debug)]
enum Arg {
    Null,
    Bool(bool),
    Int(i64),
    Small(u8),
    Float(f64),
    Text(String),
    Word(u8),
    TaskId(u8),
    NewTaskId,
    List(Vec<Arg>),
    Object(Vec<(u8, Arg)>),
}

impl Arg {
    fn to_json(&self, depth: usize) -> Value {
        if depth > 6 {
            return Value::Null;
        }
        let ids = fixture::task_ids();
        match self {
            Arg::Null => Value::Null,
            Arg::Bool(b) => json!(b),
            Arg::Int(i) => json!(i),
            Arg::Small(n) => json!(n % 8),
            Arg::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Arg::Text(s) => json!(s),
            Arg::Word(i) => json!(WORDS[usize::from(*i) % WORDS.len()]),
            Arg::TaskId(i) if ids.is_empty() => json!("T-0000000000000000"),
            Arg::TaskId(i) => json!(ids[usize::from(*i) % ids.len()]),
            Arg::NewTaskId => json!("T-ffffffffffffffff"),
            Arg::List(items) => {
                Value::Array(items.iter().take(8).map(|a| a.to_json(depth + 1)).collect())
            }
            Arg::Object(fields) => Value::Object(object(fields, depth + 1)),
        }
    }
}

fn object(fields: &[(u8, Arg)], depth: usize) -> Map<String, Value> {
    fields
        .iter()
        .take(10)
        .map(|(k, a)| {
            (
                KEYS[usize::from(*k) % KEYS.len()].to_string(),
                a.to_json(depth),
            )
        })
        .collect()
}

#[derive(Arbitrary, Debug)]
struct Call {
    tool: u8,
    revision: u8,
    id: i32,
    args: Vec<(u8, Arg)>,
    /// Send `arguments` as something other than an object.
    odd_arguments: Option<Arg>,
}

#[derive(Arbitrary, Debug)]
struct Session {
    selector: u8,
    calls: Vec<Call>,
}

fn envelope(call: &Call) -> Vec<u8> {
    let tools = &fixture::server().catalog.tools;
    let pick = usize::from(call.tool) % (tools.len() + EXTRA_TOOLS.len());
    let name = tools
        .get(pick)
        .map_or_else(|| EXTRA_TOOLS[pick - tools.len()], |t| t.name);
    let arguments = match &call.odd_arguments {
        Some(a) => a.to_json(0),
        None => Value::Object(object(&call.args, 0)),
    };
    let mut params = json!({"name": name, "arguments": arguments});
    let revision = fixture::REVISIONS[usize::from(call.revision) % fixture::REVISIONS.len()];
    if revision == "2026-07-28" {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": revision,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "0"},
        });
    }
    let msg = json!({"jsonrpc": "2.0", "id": call.id, "method": "tools/call", "params": params});
    serde_json::to_vec(&msg).expect("a Value serializes")
}

/// A plausible runtime answer to a host request, chosen by `pick`.
fn fake_reply(request: &HostRequest, pick: u64) -> HostReply {
    match (request, pick % 4) {
        (_, 0) => HostReply::Failed(HostFailure::NotFound),
        (HostRequest::List { .. }, _) => HostReply::Listing {
            entries: vec![
                DirEntry {
                    name: "review".into(),
                    kind: EntryKind::Dir,
                    size: 0,
                    target: None,
                },
                DirEntry {
                    name: "deploy.json".into(),
                    kind: EntryKind::File,
                    size: 40,
                    target: None,
                },
                DirEntry {
                    name: "linked.json".into(),
                    kind: EntryKind::Symlink,
                    size: 0,
                    target: Some(EntryKind::File),
                },
            ],
        },
        (HostRequest::Read { .. }, 1) => HostReply::File {
            text: "---\nname: review\ndescription: a skill\n---\n# Review\nbody\n".into(),
        },
        (HostRequest::Read { .. }, _) => HostReply::File {
            text: r#"{"id":"deploy","name":"Deploy","description":"d","tasks":[{"title":"t","description":"d"}]}"#.into(),
        },
        (HostRequest::SignalShutdown { .. }, _) => HostReply::Signalled {
            path: "/p/.sdd/runtime/signals/SHUTDOWN".into(),
        },
    }
}

fuzz_target!(|session: Session| {
    let server = fixture::server();
    let key = server.config.audit_key.clone();
    let facts = fixture::facts(session.selector);
    let mut snapshot = fixture::snapshot().clone();
    for (i, call) in session.calls.iter().take(8).enumerate() {
        let bytes = envelope(call);
        let input = Input {
            bytes: &bytes,
            snapshot: &snapshot,
            now: fixture::NOW,
            transport: &facts,
        };
        // Play the runtime: answer host requests with made-up replies, and end a held answer
        // by settling or cancelling it, until the call is answered.
        let mut replies = Vec::new();
        let mut phase = Phase::Live;
        let mut rounds = 0;
        let outcome = loop {
            rounds += 1;
            assert!(rounds < 40, "a call never got an answer");
            let outcome =
                invariants::handle_round_checked(server, &input, &replies, phase, i == 0);
            if let Some(request) = &outcome.host {
                replies.push(fake_reply(request, u64::from(call.id.unsigned_abs()) + rounds));
                continue;
            }
            if outcome.response.is_none() && outcome.pending.is_some() {
                phase = if call.id % 2 == 0 {
                    Phase::Settle
                } else {
                    Phase::Cancelled
                };
                continue;
            }
            break outcome;
        };
        assert!(outcome.response.is_some(), "every call gets a reply");
        if let Some(append) = &outcome.append {
            invariants::apply_checked(&mut snapshot, append, &key);
        }
    }
});
