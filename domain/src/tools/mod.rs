//! Bernstein's tools, registered into the protocol engine through [`registered`].
//!
//! - [`run`]: `bernstein_run` — create a task (a run's root, or a subtask).
//! - [`status`]: `bernstein_status` — liveness, counts by status, cost, task rows.
//! - [`run_status`]: `bernstein_run_status` — the verifiable run handle.
//! - [`cancel`]: `bernstein_cancel` — cancel a task and its subtask tree.
//! - [`claim`]: `bernstein_claim` — a worker claims the next eligible task (signed receipt).
//! - [`post_message`]: `bernstein_post_message` — a signed, redacted mailbox entry.
//! - [`complete`]: `bernstein_complete` — the worker's completion gate.
//! - [`approve`]: `bernstein_approve` — an operator's sign-off gate.
//! - [`post_artifact`]: `bernstein_post_artifact` — a versioned, content-hashed task artifact.
//! - [`task_capsule`]: `bernstein_task_capsule` — a task's signed context capsule, or its check.
//! - [`verify_lineage`]: `bernstein_verify_lineage` — walk and check an artifact key's lineage.
//! - [`shutdown`]: `bernstein_shutdown_orchestrator` — write the project's shutdown signal.
//! - [`load_skill`]: `load_skill` — the project's skills index, or one skill's files as text.
//! - [`scenario`]: `bernstein_scenario` — list scenarios, run one as a run, report its handle.
//!
//! Each tool is a type implementing [`Tool`]: its name, title, description, tier, host effects
//! and the types of its arguments and answer, in one place. [`spec`] makes the catalogue's
//! [`ToolSpec`] of it (the input schema generated from the arguments' type, the answer
//! serialized from the answer's), and everything else reads the tools: the tier table
//! ([`super::tiers`]), the capability card, `bernstein mcp tools` and the README's table (which
//! a test regenerates and compares).
//!
//! Only the three polled tools (`bernstein_run`, `bernstein_run_status`, `bernstein_status`)
//! advertise an `outputSchema` and return `structuredContent` ([`Tool::ADVERTISES_ANSWER`]);
//! the others answer the same JSON in their text block, which keeps `tools/list` within its
//! byte budget (`protocol::listing`). Descriptions say what the call does; the listing ends
//! each with the sentence of the tool's effects (`Effects::sentence`), so the two cannot
//! disagree.
//!
//! Handlers are pure: they read the snapshot in their [`ToolContext`] and return an answer plus
//! the drafts to append, or a structured refusal with no drafts. The tools are
//! `Arguments::Typed`: the engine does not validate their arguments against the advertised
//! schema, they are checked once, as [`call`] parses them into the tool's `Args` (the newtypes
//! of [`super::args`] carry each argument's limits, the ones the schema states and the ones it
//! cannot), and a failed parse is [`ToolOutput::invalid_arguments`], never a panic.

pub mod approve;
pub mod cancel;
pub mod claim;
pub mod complete;
pub mod load_skill;
pub mod post_artifact;
pub mod post_message;
pub mod run;
pub mod run_status;
pub mod scenario;
pub mod shutdown;
pub mod status;
pub mod task_capsule;
pub mod verify_lineage;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::bound::{ToolContext, ToolSpec};
use crate::refusal::Refusal;
use bernstein_core::config::Tier;
use bernstein_core::ledger::{BACKLOG_STREAM, Draft, run_stream};
use bernstein_core::protocol::host::HostRequest;
use bernstein_core::protocol::input::InputNeeded;
use bernstein_core::protocol::jsonrpc::{brief, kind_of};
use bernstein_core::protocol::logging::LogMessage;
use bernstein_core::protocol::refusal::Common;
use bernstein_core::protocol::registry::{
    Arguments, Effects, ResourceLink, TaskSupport, ToolError, ToolOutput,
};
use bernstein_core::protocol::validate::{Violation, child_path};
use serde_path_to_error::Segment;

use super::schema;

/// A Bernstein tool, declared once: what `tools/list` says of it, the tier that introduces it,
/// what it does to the host, the types of its arguments and answer, and what a call does.
pub trait Tool {
    const NAME: &'static str;
    const TITLE: &'static str;
    /// What the call does; the listing appends the sentence of [`Tool::EFFECTS`].
    const DESCRIPTION: &'static str;
    /// The tier that introduces it (tiers are cumulative).
    const TIER: Tier;
    const EFFECTS: Effects;
    const TASK_SUPPORT: TaskSupport = TaskSupport::Forbidden;
    /// Whether `tools/list` advertises the answer's schema as `outputSchema` (and the answer
    /// comes back as `structuredContent` too): the polled tools only.
    const ADVERTISES_ANSWER: bool = false;
    /// The arguments: their schema is the advertised `inputSchema`, and a call's arguments are
    /// parsed into this type (a mismatch is the refusal `invalid_arguments`).
    type Args: DeserializeOwned + schemars::JsonSchema;
    /// The answer, serialized as the call's payload.
    type Answer: Serialize + schemars::JsonSchema;
    fn call(ctx: &ToolContext<'_>, args: Self::Args) -> Called<Self::Answer>;
}

/// What a call of a [`Tool`] produced: its answer or its refusal, and what goes with it (each
/// field as in [`ToolOutput`]: the drafts committed with the call's audit record, the run the
/// audit record binds, the long poll's wait, a host request to perform first).
#[derive(Debug)]
pub struct Called<A> {
    pub answer: Result<A, ToolError>,
    pub drafts: Vec<Draft>,
    pub run_id: Option<String>,
    pub wait_ms: Option<u64>,
    pub watch: Option<String>,
    pub host: Option<HostRequest>,
    /// Messages for the client's log (sent only at a level it asked for).
    pub logs: Vec<LogMessage>,
    /// The run and task resources the answer names (`resource_link`s, [`crate::resources`]).
    pub links: Vec<ResourceLink>,
    /// Questions for the client (a form for the person); the call runs again with the answers
    /// in `ToolContext::input` (the answer is not read while they are out).
    pub input: Option<InputNeeded>,
    /// The streams the decision read besides those the drafts write ([`ToolOutput::reads`]);
    /// `None` (the default): the whole ledger.
    pub reads: Option<Vec<String>>,
}

impl<A> Called<A> {
    /// Names what a decision about a task of run `run_id` read: the backlog (every task's
    /// state, leases and plans) and the run's journal. The answer must then hold nothing that
    /// depends on where the records are placed (no record hash, no sequence number).
    pub fn reading_task_of(self, run_id: &str) -> Called<A> {
        Called {
            reads: Some(vec![BACKLOG_STREAM.to_string(), run_stream(run_id)]),
            ..self
        }
    }

    pub fn ok(answer: A) -> Called<A> {
        Called::from(Ok(answer))
    }

    pub fn refused(error: ToolError) -> Called<A> {
        Called::from(Err(error))
    }

    /// Asks the runtime to perform `request` and call again with its reply (the answer is
    /// not read while a host request is out).
    pub fn ask(request: HostRequest) -> Called<A> {
        let pending = ToolError::new(Common::HostRequest, "the call waits for the host", "");
        Called {
            host: Some(request),
            ..Called::refused(pending)
        }
    }

    /// Asks the client `needed` and calls again with its answers.
    pub fn need_input(needed: InputNeeded) -> Called<A> {
        let pending = ToolError::new(Common::HostRequest, "the call waits for the client", "");
        Called {
            input: Some(needed),
            ..Called::refused(pending)
        }
    }
}

impl<A> From<Result<A, ToolError>> for Called<A> {
    fn from(answer: Result<A, ToolError>) -> Called<A> {
        Called {
            answer,
            drafts: Vec::new(),
            run_id: None,
            wait_ms: None,
            watch: None,
            host: None,
            logs: Vec::new(),
            links: Vec::new(),
            input: None,
            reads: None,
        }
    }
}

/// The catalogue's entry of `T`.
pub fn spec<T: Tool>() -> ToolSpec {
    ToolSpec {
        name: T::NAME,
        title: T::TITLE,
        description: T::DESCRIPTION,
        tier: T::TIER,
        input_schema: schema::input_schema::<T::Args>,
        output_schema: T::ADVERTISES_ANSWER.then_some(schema::output_schema::<T::Answer>),
        effects: T::EFFECTS,
        task_support: T::TASK_SUPPORT,
        arguments: Arguments::Typed,
        call: call::<T>,
    }
}

/// Calls `T` with arguments as the peer sent them: parsed into `T::Args` (arguments that do
/// not parse answer [`ToolOutput::invalid_arguments`]), answered, and the answer serialized.
pub fn call<T: Tool>(ctx: &ToolContext<'_>, args: Value) -> ToolOutput {
    let args = match parse_args::<T::Args>(args) {
        Ok(a) => a,
        Err(v) => return ToolOutput::invalid_arguments(T::NAME, vec![v]),
    };
    let called = T::call(ctx, args);
    if let Some(request) = called.host {
        return ToolOutput::ask(request);
    }
    if let Some(needed) = called.input {
        return ToolOutput::need_input(needed);
    }
    let result = match called.answer {
        // An answer is plain data (strings, numbers, objects with string keys): it serializes.
        Ok(a) => serde_json::to_value(&a).map_err(|e| internal(T::NAME, &e.to_string())),
        Err(e) => Err(e),
    };
    match result {
        Ok(payload) => ToolOutput {
            drafts: called.drafts,
            run_id: called.run_id,
            wait_ms: called.wait_ms,
            watch: called.watch,
            links: called.links,
            logs: called.logs,
            reads: called.reads,
            ..ToolOutput::ok(payload)
        },
        // A refusal appends nothing but the call's audit record.
        Err(e) => ToolOutput {
            run_id: called.run_id,
            ..ToolOutput::refused(e)
        },
    }
}

/// The refusal of a tool that must sign when the server has no signing key.
pub fn no_signer(tool: &str) -> ToolError {
    ToolError::new(
        Refusal::SigningKeyUnavailable,
        format!("{tool} returns an Ed25519-signed object, and this server has no signing key loaded"),
        "Start the server with `bernstein mcp` in a project whose .sdd/keys/signing.ed25519 is readable \
         (mode 0600); it is created on first use. Nothing was recorded.",
    )
    .with("tool", tool)
}

/// Every Bernstein tool, sorted by name.
pub fn registered() -> Vec<ToolSpec> {
    let mut tools = vec![
        run::spec(),
        status::spec(),
        run_status::spec(),
        cancel::spec(),
        claim::spec(),
        post_message::spec(),
        complete::spec(),
        approve::spec(),
        post_artifact::spec(),
        task_capsule::spec(),
        verify_lineage::spec(),
        shutdown::spec(),
        load_skill::spec(),
        scenario::spec(),
    ];
    tools.sort_by_key(|t| t.name);
    tools
}

/// Parses a call's arguments into `T`, the one check they pass: `T`'s Deserialize refuses
/// everything its advertised schema does (the newtypes of `super::args` carry each bound), and
/// what no schema can say. A failure is the broken rule at its argument path, in the schema
/// validator's words (`arguments.goal`, `must be at least 1 character`).
///
/// An explicit `null` for an optional argument is the argument left out (an `Option` reads it
/// as `None`, a defaulted one through `args::null_is_default`); for a required one it is the
/// wrong type.
pub(crate) fn parse_args<T: DeserializeOwned>(args: Value) -> Result<T, Violation> {
    let args = match args {
        Value::Null => Value::Object(Default::default()),
        Value::Object(m) => Value::Object(m),
        other => {
            let rule = format!("must be an object, got {}", kind_of(&other));
            return Err(Violation::new("arguments", rule));
        }
    };
    serde_path_to_error::deserialize(args).map_err(|e| {
        let mut path = "arguments".to_string();
        for segment in e.path().iter() {
            match segment {
                Segment::Map { key } => path = child_path(&path, key),
                Segment::Seq { index } => path = format!("{path}[{index}]"),
                Segment::Enum { .. } | Segment::Unknown => {}
            }
        }
        let (child, rule) = rule_of(&e.inner().to_string());
        if let Some(field) = child {
            path = child_path(&path, &field);
        }
        Violation::new(&path, rule)
    })
}

/// serde's words for a failed parse in the schema validator's (`protocol::validate`): the
/// rule, and the property it is about when serde names it in the message rather than the path
/// (a missing field). A check of `super::args` words its own rule and passes through.
fn rule_of(message: &str) -> (Option<String>, String) {
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|r| r.strip_suffix('`'))
    {
        return (Some(field.to_string()), "is required".into());
    }
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let expected = rest.split_once("`, expected ").map_or("", |(_, e)| e);
        let known = backticked(expected);
        let rule = if known.is_empty() {
            "is not accepted here (no properties are)".to_string()
        } else {
            format!(
                "is not accepted here (expected one of: {})",
                known.join(", ")
            )
        };
        return (None, rule);
    }
    if let Some(rest) = message.strip_prefix("unknown variant `")
        && let Some((got, expected)) = rest.split_once("`, expected ")
    {
        let quoted = |v: &str| brief(&Value::String(v.to_string()));
        let options: Vec<String> = backticked(expected).iter().map(|v| quoted(v)).collect();
        return (
            None,
            format!("must be one of {}; got {}", options.join(", "), quoted(got)),
        );
    }
    if let Some((got, expected)) = message
        .strip_prefix("invalid value: integer `")
        .and_then(|r| r.split_once("`, expected "))
        && let Some((lo, hi)) = integer_range(expected)
    {
        return (None, format!("must be from {lo} to {hi} (got {got})"));
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some((got, expected)) = message
            .strip_prefix(prefix)
            .and_then(|r| r.split_once(", expected "))
        {
            return (
                None,
                format!("must be {}, got {}", kind_expected(expected), kind_got(got)),
            );
        }
    }
    if message.starts_with("data did not match any variant of untagged enum") {
        return (
            None,
            "must match one of the forms its inputSchema allows".into(),
        );
    }
    (None, message.to_string())
}

/// The range of a Rust integer type serde names (`u8`, `i64`).
fn integer_range(name: &str) -> Option<(i128, i128)> {
    let signed = name.starts_with('i');
    let bits: u32 = name.get(1..)?.parse().ok()?;
    if !name.starts_with(['u', 'i']) || !(8..=64).contains(&bits) {
        return None;
    }
    Some(if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    })
}

/// The names in serde's `one of `a`, `b``.
fn backticked(list: &str) -> Vec<&str> {
    list.split('`').skip(1).step_by(2).collect()
}

/// What serde says it got (`integer `5``, `string "x"`, `map`) as a JSON kind.
fn kind_got(got: &str) -> &'static str {
    let word = |w: &str| got == w || got.starts_with(&format!("{w} "));
    if word("integer") {
        "an integer"
    } else if word("floating point") {
        "a number"
    } else if word("string") || word("character") {
        "a string"
    } else if word("boolean") {
        "a boolean"
    } else if word("sequence") {
        "an array"
    } else if word("map") {
        "an object"
    } else {
        "null"
    }
}

/// What serde says it expected (`a string`, `u32`, `struct TableContent`) as a JSON kind.
fn kind_expected(expected: &str) -> String {
    let is_int = |e: &str| {
        e.len() > 1
            && matches!(e.as_bytes()[0], b'u' | b'i')
            && e[1..].bytes().all(|b| b.is_ascii_digit())
    };
    match expected {
        e if is_int(e) || e == "an integer" || e == "usize" => "an integer".into(),
        "a sequence" => "an array".into(),
        "a map" => "an object".into(),
        "a boolean" | "a string" => expected.into(),
        // A unit enum reads a string (serde_json says `string or map`).
        "string or map" => "a string".into(),
        e if e.starts_with("struct ") || e.starts_with("a map") => "an object".into(),
        e if e.starts_with("a sequence") => "an array".into(),
        other => other.into(),
    }
}

/// The refusal for a well-formed id that names no task.
pub(crate) fn unknown_task(error: Refusal, field: &str, id: &str) -> ToolError {
    ToolError::new(
        error,
        format!("{field} {id} names no task in this project's ledger"),
        "Use an id returned by bernstein_run in this project; bernstein_status with detail=true lists tasks.",
    )
    .with("field", field)
    .with(field, id)
}

/// The task `id` when it exists and is not finished (done, closed, failed, cancelled);
/// otherwise the refusal `unknown_task` or `task_finished` (`takes` names what it refused, e.g.
/// "messages").
pub(crate) fn unfinished_task<'p>(
    p: &'p super::projection::Projection,
    id: &str,
    takes: &str,
) -> Result<&'p super::projection::TaskRow, ToolError> {
    let task = p
        .task(id)
        .ok_or_else(|| unknown_task(Refusal::UnknownTask, "task_id", id))?;
    if task.status.is_terminal() {
        return Err(ToolError::new(
            Refusal::TaskFinished,
            format!("task {id} is {} and takes no more {takes}", task.status),
            "Post while the task is being worked on; start a new task for follow-up work.",
        )
        .with("task_id", id)
        .with("current_status", task.status.as_str()));
    }
    Ok(task)
}

/// A broken invariant met while drafting: reported, never a panic.
pub(crate) fn internal(tool: &str, detail: &str) -> ToolError {
    ToolError::new(
        Common::InternalError,
        format!("{tool} could not draft its records: {detail}"),
        "This is a bug in the server; the ledger was not changed.",
    )
}

#[cfg(test)]
mod field_tests;
#[cfg(test)]
mod oracle_tests;
#[cfg(test)]
mod reads_tests;
#[cfg(test)]
mod redaction_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// The listing states a tool's effects from its `Effects`; a description that stated them
    /// too could disagree.
    #[test]
    fn descriptions_leave_their_effects_to_the_listing() {
        for t in registered() {
            assert!(!t.description.contains("Effects:"), "{}", t.name);
            assert!(t.description.ends_with('.'), "{}", t.name);
        }
    }

    #[test]
    fn registered_tools_are_sorted_unique_and_have_object_schemas() {
        let tools = registered();
        let names: Vec<&str> = tools.iter().map(|t| t.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
        for t in &tools {
            let input = (t.input_schema)();
            assert_eq!(input["type"], "object", "{}", t.name);
            assert_eq!(input["additionalProperties"], false, "{}", t.name);
            if let Some(output) = t.output_schema {
                assert_eq!(output()["type"], "object", "{}", t.name);
            }
            assert!(!t.title.is_empty());
        }
    }

    #[test]
    fn argument_mismatches_are_refusals() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct A {
            x: u8,
        }
        let e = parse_args::<A>(serde_json::json!({"x": "no"})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "arguments.x: must be an integer, got a string"
        );
        let e = parse_args::<A>(serde_json::json!({"x": 1, "y": 2})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "arguments.y: is not accepted here (expected one of: x)"
        );
        let e = parse_args::<A>(serde_json::json!({"x": 300})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "arguments.x: must be from 0 to 255 (got 300)"
        );
        let e = parse_args::<A>(serde_json::json!([1])).unwrap_err();
        assert_eq!(e.to_string(), "arguments: must be an object, got an array");
        assert!(parse_args::<A>(serde_json::json!("x")).is_err());
        let e = parse_args::<A>(Value::Null).unwrap_err();
        assert_eq!(
            e.to_string(),
            "arguments.x: is required",
            "null is {{}}, which lacks x"
        );
    }
}
