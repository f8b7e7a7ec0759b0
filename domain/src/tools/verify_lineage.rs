//! `bernstein_verify_lineage`: walk an artifact key's lineage (`key` or
//! `key@version`) and check every link ([`crate::lineage`]): content hashes, link
//! hashes, parent pointers, and the journal and audit records of each version. The report
//! names the trace context the newest checked version was posted under.
//!
//! With `check_file: true` the handler also asks the runtime for the file at the key's path
//! (a host read, [`bernstein_core::protocol::host`]) and reports whether its SHA-256 is the newest
//! version's report text. It does so only for a key an artifact record names and whose path
//! has no hidden (`.`) segment; the runtime further refuses a path that resolves outside the
//! project or into `.sdd`. Each of those is a refusal. A malformed path is a refusal; an
//! unknown key without `check_file` is an invalid report, not a refusal. This handler must
//! never write records.

use serde::{Deserialize, Serialize};

use crate::bound::{ToolContext, ToolSpec};
use crate::refusal::Refusal;
use bernstein_core::config::Tier;
use bernstein_core::digest::Digest;
use bernstein_core::protocol::host::{HostFailure, HostReply, HostRequest, MAX_HOST_READ_BYTES};
use bernstein_core::protocol::refusal::Common;
use bernstein_core::protocol::registry::{Effects, ToolError};

use super::super::args::{Chars, null_is_default};
use super::super::artifacts::ArtifactContent;
use super::super::lineage::LineageReport;
use super::super::lineage::{self, FileCheck};
use super::{Called, Tool};

pub const NAME: &str = "bernstein_verify_lineage";

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: false,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Check an artifact key's version chain; check_file also hashes its file.";

/// Arguments of `bernstein_verify_lineage`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyLineageArgs {
    /// Key or `key@version`.
    pub artefact_path: Chars<1, 300>,
    // Also compare the file at that path (the description says so).
    #[serde(default, deserialize_with = "null_is_default")]
    pub check_file: bool,
}

/// `bernstein_verify_lineage`, declared once (see [`Tool`]).
pub struct VerifyLineage;

impl Tool for VerifyLineage {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Verify an artifact's lineage";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::All;
    const EFFECTS: Effects = EFFECTS;
    type Args = VerifyLineageArgs;
    type Answer = LineageReport;

    fn call(ctx: &ToolContext<'_>, args: VerifyLineageArgs) -> Called<LineageReport> {
        verify(ctx, args).unwrap_or_else(Called::refused)
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<VerifyLineage>()
}

fn verify(
    ctx: &ToolContext<'_>,
    args: VerifyLineageArgs,
) -> Result<Called<LineageReport>, ToolError> {
    let (key, version) = lineage::parse_path(&args.artefact_path).map_err(|m| {
        ToolError::new(
            Common::InvalidArguments,
            format!("artefact_path: {m}"),
            "Pass a key bernstein_post_artifact accepted, optionally followed by @<version>.",
        )
        .with("field", "artefact_path")
    })?;
    let mut report = lineage::walk(ctx.snapshot.domain.artifacts(), key, version);
    if args.check_file {
        screen_file(key, report.versions.is_empty())?;
        let Some(reply) = ctx.host.first() else {
            return Ok(Called::ask(HostRequest::Read {
                path: key.to_string(),
                max_bytes: MAX_HOST_READ_BYTES,
                within: None,
            }));
        };
        refuse_unsafe_file(key, reply)?;
        report.file = Some(compare_file(ctx, key, report.versions.len(), reply));
    }
    let run_id = report.versions.last().map(|v| v.run_id.clone());
    Ok(Called {
        run_id,
        ..Called::ok(report)
    })
}

/// Refuses `check_file` on a key no artifact record names, or on a hidden path (a segment
/// starting with `.`: `.sdd` holds the ledger and keys, `.env` and `.git` secrets), so the
/// hash never turns into an oracle for files the ledger does not vouch for.
fn screen_file(key: &str, unrecorded: bool) -> Result<(), ToolError> {
    let refusal = |code: Refusal, why: String| {
        ToolError::new(
            code,
            why,
            "check_file compares only the file of an artifact posted with bernstein_post_artifact, at a visible project path.",
        )
        .with("field", "check_file")
        .with("path", key)
    };
    if key.split('/').any(|s| s.starts_with('.')) {
        return Err(refusal(
            Refusal::PrivatePath,
            format!(
                "check_file does not read hidden paths such as {key:?} (.sdd, .env, .git hold keys and secrets)"
            ),
        ));
    }
    if unrecorded {
        return Err(refusal(
            Refusal::FileNotRecorded,
            format!("no artifact record names {key:?}, so its file is not hashed"),
        ));
    }
    Ok(())
}

/// Refuses when the key's path resolved (through a symlink) outside the project or into `.sdd`.
fn refuse_unsafe_file(key: &str, reply: &HostReply) -> Result<(), ToolError> {
    let (code, why) = match reply {
        HostReply::Failed(HostFailure::Escapes) => {
            (Refusal::PathEscapes, "resolves outside the project")
        }
        HostReply::Failed(HostFailure::Private) => (
            Refusal::PrivatePath,
            "resolves into the project's .sdd directory",
        ),
        _ => return Ok(()),
    };
    Err(ToolError::new(
        code,
        format!("the file at {key:?} {why}; it is not hashed"),
        "Replace the symlink at the artifact's path with the file itself.",
    )
    .with("field", "check_file")
    .with("path", key))
}

/// Compares the host's answer for the key's file with the `n`-th (newest checked) version.
fn compare_file(ctx: &ToolContext<'_>, key: &str, n: usize, reply: &HostReply) -> FileCheck {
    let newest = ctx
        .snapshot
        .domain
        .artifacts()
        .versions(key)
        .get(n - 1)
        .map(|v| &v.record.content);
    let mut check = FileCheck {
        path: key.to_string(),
        sha256: None,
        matches_newest: false,
        note: None,
    };
    match reply {
        HostReply::File { text } => {
            let file = Digest::of(text.as_bytes());
            check.sha256 = Some(file.to_string());
            match newest {
                Some(ArtifactContent::Text(t)) => {
                    check.matches_newest = Digest::of(t.as_bytes()) == file;
                }
                _ => check.note = Some("the newest version is not a report".into()),
            }
        }
        HostReply::Failed(HostFailure::NotFound) => {
            check.note = Some("no file at this path".into())
        }
        HostReply::Failed(f) => check.note = Some(format!("the file could not be read: {f:?}")),
        other => check.note = Some(format!("unexpected host reply {other:?}")),
    }
    check
}

#[cfg(test)]
mod tests;
