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
//! The full list, with each tool's tier and host effects (a test checks it against the tier
//! table and the live registry; every effect is also stated in the tool's description):
//!
//! | tool | tier | reads files | writes files | spawns processes | network |
//! |---|---|---|---|---|---|
//! | `bernstein_run` | core | yes | yes | no | no |
//! | `bernstein_run_status` | core | yes | no | no | no |
//! | `bernstein_status` | core | yes | no | no | no |
//! | `bernstein_approve` | standard | yes | yes | no | no |
//! | `bernstein_cancel` | standard | yes | yes | no | no |
//! | `bernstein_claim` | standard | yes | yes | no | no |
//! | `bernstein_complete` | standard | yes | yes | no | no |
//! | `bernstein_post_artifact` | standard | yes | yes | no | no |
//! | `bernstein_post_message` | standard | yes | yes | no | no |
//! | `bernstein_shutdown_orchestrator` | standard | yes | yes | no | no |
//! | `bernstein_task_capsule` | standard | yes | yes | no | no |
//! | `load_skill` | standard | yes | no | no | no |
//! | `bernstein_scenario` | all | yes | yes | no | no |
//! | `bernstein_verify_lineage` | all | yes | no | no | no |
//!
//! Only the three polled tools (`bernstein_run`, `bernstein_run_status`, `bernstein_status`)
//! advertise an `outputSchema` and return `structuredContent`; the others answer the same
//! JSON in their text block, which keeps `tools/list` within its byte budget
//! (`protocol::listing`). Descriptions say what the call does; the listing ends each with the
//! sentence of the tool's effects (`Effects::sentence`), so the two cannot disagree.
//!
//! Handlers are pure: they read the snapshot in their [`ToolContext`] and return a payload
//! plus the drafts to append, or a structured refusal with no drafts. Arguments were validated
//! against the advertised schema already; a deserialization failure still becomes the refusal
//! `invalid_arguments`, never a panic. Tiers come from [`super::tiers`].

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

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config::Tier;
use crate::domain::bound::ToolSpec;
use crate::protocol::registry::ToolError;

use super::ids::{IdError, quote_for_message};
use super::tiers;

/// The refusal of a tool that must sign when the server has no signing key.
pub fn no_signer(tool: &str) -> ToolError {
    ToolError::new(
        "signing_key_unavailable",
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

/// The tier of a registered tool, from the tier table.
pub(crate) fn tier(name: &str) -> Tier {
    // Every registered tool is in the table: `tiers::tests::table_and_registry_agree`.
    tiers::tier_of(name).expect("every registered tool is declared in the tier table")
}

/// Deserializes validated arguments; a mismatch is the refusal `invalid_arguments`.
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    let args = match args {
        Value::Null => Value::Object(Default::default()),
        // An explicit null is the argument left out, as the engine validated it.
        Value::Object(mut m) => {
            m.retain(|_, v| !v.is_null());
            Value::Object(m)
        }
        _ => {
            return Err(ToolError::new(
                "invalid_arguments",
                format!("{tool}: arguments must be a JSON object"),
                "Pass the arguments as an object of named fields (tools/list shows the inputSchema).",
            ));
        }
    };
    serde_json::from_value(args).map_err(|e| {
        ToolError::new(
            "invalid_arguments",
            format!("{tool}: {e}"),
            "Check the arguments against the tool's inputSchema (tools/list).",
        )
    })
}

/// The refusal for a peer-supplied id of the wrong shape.
pub(crate) fn invalid_id(field: &str, value: &str, err: IdError) -> ToolError {
    ToolError::new(
        "invalid_id",
        format!("{field} {} is not a task id: {err}", quote_for_message(value)),
        "Pass a task_id or run_id exactly as bernstein_run returned it (T- followed by 16 hex digits).",
    )
    .with("field", field)
}

/// The refusal for a well-formed id that names no task.
pub(crate) fn unknown_task(error: &str, field: &str, id: &str) -> ToolError {
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
        .ok_or_else(|| unknown_task("unknown_task", "task_id", id))?;
    if task.status.is_terminal() {
        return Err(ToolError::new(
            "task_finished",
            format!("task {id} is {} and takes no more {takes}", task.status),
            "Post while the task is being worked on; start a new task for follow-up work.",
        )
        .with("task_id", id)
        .with("current_status", task.status.as_str()));
    }
    Ok(task)
}

/// Checks a peer-supplied name (claimer, sender, completed id, fingerprint): 1 to `max` bytes
/// of ASCII letters, digits and `_.:-`.
pub(crate) fn check_name(field: &str, value: &str, max: usize) -> Result<(), ToolError> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'));
    if ok {
        return Ok(());
    }
    Err(ToolError::new(
        "invalid_arguments",
        format!(
            "{field} {} must be 1 to {max} characters of letters, digits and _.:-",
            quote_for_message(value)
        ),
        "Use a plain identifier such as worker-1 or sha256:<hex>.",
    )
    .with("field", field))
}

/// A broken invariant met while drafting: reported, never a panic.
pub(crate) fn internal(tool: &str, detail: &str) -> ToolError {
    ToolError::new(
        "internal_error",
        format!("{tool} could not draft its records: {detail}"),
        "This is a bug in the server; the ledger was not changed.",
    )
}

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
    fn module_docs_list_every_tool_with_its_tier_and_effects() {
        let yn = |b: bool| if b { "yes" } else { "no" };
        let mut docs = crate::domain::testkit::doc_table(include_str!("mod.rs"), 6);
        docs.sort();
        let mut live: Vec<Vec<String>> = registered()
            .iter()
            .map(|t| {
                let e = t.effects;
                [
                    t.name,
                    t.tier.as_str(),
                    yn(e.reads_files),
                    yn(e.writes_files),
                    yn(e.spawns_processes),
                    yn(e.network),
                ]
                .map(str::to_string)
                .to_vec()
            })
            .collect();
        live.sort();
        assert_eq!(
            docs, live,
            "the module docs' tool table and the registry disagree"
        );
        let mut table: Vec<(String, String)> = tiers::TOOL_TIERS
            .iter()
            .map(|(n, t)| (n.to_string(), t.as_str().to_string()))
            .collect();
        table.sort();
        let documented: Vec<(String, String)> =
            docs.iter().map(|r| (r[0].clone(), r[1].clone())).collect();
        assert_eq!(
            documented, table,
            "the module docs and the tier table disagree"
        );
    }

    #[test]
    fn argument_mismatches_are_refusals() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct A {
            x: u8,
        }
        let e = parse_args::<A>("t", serde_json::json!({"x": "no"})).unwrap_err();
        assert_eq!(e.error, "invalid_arguments");
        assert!(parse_args::<A>("t", serde_json::json!({"x": 1, "y": 2})).is_err());
        assert!(parse_args::<A>("t", serde_json::json!([1])).is_err());
        assert!(parse_args::<A>("t", serde_json::json!("x")).is_err());
        assert!(
            parse_args::<A>("t", Value::Null).is_err(),
            "null is {{}}, which lacks x"
        );
    }
}
