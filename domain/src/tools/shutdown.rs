//! `bernstein_shutdown_orchestrator`: ask every worker of a project to stop by
//! writing the signal file `<workdir>/.sdd/runtime/signals/SHUTDOWN`, which workers poll.
//!
//! The handler screens `workdir` for shape with no filesystem call (at most
//! [`MAX_PATH_BYTES`] bytes, no NUL, no `..` segment, not blank), then asks the runtime for
//! [`HostRequest::SignalShutdown`]; the runtime resolves the directory and writes the file
//! behind its containment barrier (`effects/src/host/shutdown.rs`: the directory must
//! already hold `.sdd`, and no `.sdd`, `runtime`, `signals` or `SHUTDOWN` entry may be a
//! symlink leading outside it). On the second run the handler reads the runtime's answer: a
//! written signal becomes the payload plus one [`SHUTDOWN_REQUESTED`] audit record; a refusal
//! becomes a structured refusal with the barrier's reason code and appends nothing but the
//! engine's audit record. This handler must never touch the filesystem itself.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::bound::{ToolContext, ToolSpec};
use crate::refusal::Refusal;
use bernstein_core::config::Tier;
use bernstein_core::ledger::AUDIT_STREAM;
use bernstein_core::protocol::host::{HostFailure, HostReply, HostRequest, MAX_PATH_BYTES};
use bernstein_core::protocol::refusal::{Code, Common};
use bernstein_core::protocol::registry::{Effects, ToolError};

use super::super::args::{LOOKS_LIKE_A_SECRET, looks_like_a_secret};
use super::super::ids::quote_for_message;
use super::super::records;
use super::{Called, Tool, internal};

pub const NAME: &str = "bernstein_shutdown_orchestrator";

/// Audit record kind of a written shutdown signal (docs/RECORDS.md, section 9).
pub const SHUTDOWN_REQUESTED: &str = "orchestrator.shutdown_requested";

/// The signal file, relative to the project directory.
pub const SIGNAL_FILE: &str = ".sdd/runtime/signals/SHUTDOWN";

/// The workdir used when the call names none: the server's own project directory.
pub const DEFAULT_WORKDIR: &str = ".";

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: true,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Stop a project's whole orchestrator (all runs and workers); for one \
run use bernstein_cancel.";

/// Arguments of `bernstein_shutdown_orchestrator`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShutdownArgs {
    /// The project directory (default: the server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
}

/// Payload of `bernstein_shutdown_orchestrator`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShutdownAnswer {
    /// Always true: the signal file was written.
    pub signalled: bool,
    /// The resolved absolute path of the signal file.
    pub path: String,
    /// The workdir as the call gave it.
    pub workdir: String,
    /// The signal file relative to the project directory.
    pub signal_file: String,
    /// The call that wrote the signal (also in the file's body).
    pub call_id: String,
    /// When the signal was requested (ms since the Unix epoch).
    pub requested_at: u64,
}

/// Body of the [`SHUTDOWN_REQUESTED`] audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShutdownRequested {
    pub workdir: String,
    pub path: String,
    pub call_id: String,
    pub at: u64,
}

/// `bernstein_shutdown_orchestrator`, declared once (see [`Tool`]).
pub struct Shutdown;

impl Tool for Shutdown {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Shut down the orchestrator";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::Standard;
    const EFFECTS: Effects = EFFECTS;
    type Args = ShutdownArgs;
    type Answer = ShutdownAnswer;

    fn call(ctx: &ToolContext<'_>, args: ShutdownArgs) -> Called<ShutdownAnswer> {
        plan(ctx, args).unwrap_or_else(Called::refused)
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<Shutdown>()
}

/// The signal file's body: who asked and when (JSON, one line).
pub fn signal_body(call_id: &str, at: u64) -> String {
    json!({"call_id": call_id, "requested_at": at, "tool": NAME}).to_string()
}

fn plan(ctx: &ToolContext<'_>, args: ShutdownArgs) -> Result<Called<ShutdownAnswer>, ToolError> {
    let workdir = args.workdir.unwrap_or_else(|| DEFAULT_WORKDIR.to_string());
    check_workdir(&workdir)?;
    let Some(reply) = ctx.host.first() else {
        return Ok(Called::ask(HostRequest::SignalShutdown {
            workdir,
            body: signal_body(ctx.call_id, ctx.now.0),
        }));
    };
    let path = match reply {
        HostReply::Signalled { path } => path.clone(),
        HostReply::Failed(failure) => return Err(refusal(&workdir, failure)),
        other => {
            return Err(internal(
                NAME,
                &format!("the host answered the shutdown signal with {other:?}"),
            ));
        }
    };
    let answer = ShutdownAnswer {
        signalled: true,
        path: path.clone(),
        workdir: workdir.clone(),
        signal_file: SIGNAL_FILE.to_string(),
        call_id: ctx.call_id.to_string(),
        requested_at: ctx.now.0,
    };
    let record = ShutdownRequested {
        workdir,
        path,
        call_id: ctx.call_id.to_string(),
        at: ctx.now.0,
    };
    // Decided on the host's answer alone: it read no stream of the ledger.
    Ok(Called {
        drafts: vec![records::draft(AUDIT_STREAM, SHUTDOWN_REQUESTED, &record)],
        reads: Some(Vec::new()),
        ..Called::ok(answer)
    })
}

/// Screens `workdir` for shape, with no filesystem call.
pub fn check_workdir(workdir: &str) -> Result<(), ToolError> {
    let bad = |why: &str| {
        ToolError::new(
            Refusal::InvalidWorkdir,
            format!("workdir {why}"),
            "Pass the project directory (the one holding .sdd) as a plain path, or omit workdir for the server's own project.",
        )
        .with("field", "workdir")
    };
    if looks_like_a_secret(workdir) {
        // The workdir is recorded as given, so one holding a secret is refused, unrepeated.
        return Err(ToolError::new(
            Common::InvalidArguments,
            format!("workdir {LOOKS_LIKE_A_SECRET}"),
            "Pass the project directory as a plain path.",
        )
        .with("field", "workdir"));
    }
    if workdir.trim().is_empty() {
        return Err(bad("must not be blank"));
    }
    if workdir.len() > MAX_PATH_BYTES {
        return Err(bad(&format!(
            "is {} bytes long; at most {MAX_PATH_BYTES} are allowed",
            workdir.len()
        )));
    }
    if workdir.contains('\0') {
        return Err(bad("contains a NUL byte"));
    }
    if workdir.split(['/', '\\']).any(|s| s == "..") {
        return Err(bad(&format!(
            "{} contains a `..` segment",
            quote_for_message(workdir)
        )));
    }
    Ok(())
}

/// The structured refusal for a host failure.
fn refusal(workdir: &str, failure: &HostFailure) -> ToolError {
    let hint = "Pass the directory of an existing Bernstein project (it holds .sdd) whose .sdd/runtime/signals \
                path stays inside the project; nothing was written.";
    let (code, message) = match failure {
        // The barrier's reasons are the domain's codes; one it does not know is an IO error.
        HostFailure::Refused { reason, detail } => (
            Code::of(Refusal::from_code(reason).unwrap_or(Refusal::IoError)),
            detail.clone(),
        ),
        HostFailure::Unsupported => (
            Code::of(Common::HostUnavailable),
            "this server runtime cannot write the shutdown signal".to_string(),
        ),
        other => (Code::of(Refusal::IoError), format!("{other:?}")),
    };
    ToolError::new(code, message, hint).with("workdir", workdir)
}

#[cfg(test)]
mod tests;
