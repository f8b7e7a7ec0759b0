//! `bernstein_post_artifact`: attach a report, table or link to a task as the
//! next version of an artifact key. The content is DLP-redacted ([`crate::dlp`]),
//! content-hashed, chained onto the key's lineage and written to the lineage spine, the task's
//! run journal and the audit chain in one transaction ([`crate::artifacts`]). The host's
//! W3C trace context, when valid, is recorded as the post's provenance.
//!
//! Re-posting the content the key's newest version already holds is idempotent: the answer is
//! that version and nothing is recorded. Refused: malformed or unknown task ids, finished
//! tasks, a key of another run, a content whose shape is not its kind's, and oversized bodies.
//! The handler never changes a task's status.

use crate::resource_links;
use serde::{Deserialize, Serialize};

use crate::bound::{ToolContext, ToolSpec};
use crate::refusal::Refusal;
use bernstein_core::config::Tier;
use bernstein_core::digest::Digest;
use bernstein_core::ledger::AUDIT_STREAM;
use bernstein_core::protocol::refusal::Common;
use bernstein_core::protocol::registry::{Effects, ToolError};

use super::super::args::{ArtifactKey, Chars, Ident, TaskId};
use super::super::artifacts::{
    self, ARTIFACT_MIRROR, ARTIFACT_POSTED, ArtifactContent, ArtifactKind, ArtifactRecord,
    ArtifactRef, LINEAGE_STREAM, RUN_ARTIFACT,
};
use super::super::dlp;
use super::super::ids::run_stream;
use super::super::records;
use super::super::trace::TraceRef;
use super::{Called, Tool, unfinished_task};

pub const NAME: &str = "bernstein_post_artifact";

/// Largest artifact body (canonical JSON of `{content, kind, title}`), in bytes.
pub const MAX_ARTIFACT_BYTES: usize = 64 * 1024;
/// Most table columns.
pub const MAX_COLUMNS: usize = 64;
/// Most table rows.
pub const MAX_ROWS: usize = 1000;
/// Longest link URL, in bytes.
pub const MAX_URL_BYTES: usize = 2048;
/// Longest title or link label, in bytes.
pub const MAX_TITLE_BYTES: usize = 256;

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: true,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Add a version of a task artifact key (report, table or link; 64 KiB; \
secrets redacted; hash-chained).";

/// Arguments of `bernstein_post_artifact`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostArtifactArgs {
    pub task_id: TaskId,
    /// Re-posting adds a version.
    pub key: ArtifactKey,
    pub kind: ArtifactKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Chars<1, 256>>,
    /// By kind.
    pub content: ArtifactContent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poster: Option<Ident<256>>,
}

/// `bernstein_post_artifact`, declared once (see [`Tool`]).
pub struct PostArtifact;

impl Tool for PostArtifact {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Post a task artifact";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::Standard;
    const EFFECTS: Effects = EFFECTS;
    type Args = PostArtifactArgs;
    type Answer = ArtifactRecord;

    fn call(ctx: &ToolContext<'_>, args: PostArtifactArgs) -> Called<ArtifactRecord> {
        post(ctx, args).unwrap_or_else(Called::refused)
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<PostArtifact>()
}

fn bad(field: &str, message: String, hint: &str) -> ToolError {
    ToolError::new(Common::InvalidArguments, message, hint).with("field", field)
}

/// Checks the content against its kind and the size bounds.
fn check_content(args: &PostArtifactArgs) -> Result<(), ToolError> {
    if args.content.kind() != args.kind {
        return Err(bad(
            "content",
            format!(
                "content has the shape of a {} but kind is {}",
                args.content.kind().as_str(),
                args.kind.as_str()
            ),
            "report takes a markdown string, table takes {columns, rows}, link takes {url, label}.",
        ));
    }
    let hint = "Keep artifacts small; link to large outputs instead.";
    match &args.content {
        ArtifactContent::Text(t) if t.is_empty() => {
            return Err(bad("content", "the report text is empty".into(), hint));
        }
        ArtifactContent::Table(t) => {
            if t.columns.is_empty() || t.columns.len() > MAX_COLUMNS || t.rows.len() > MAX_ROWS {
                return Err(bad(
                    "content",
                    format!("a table has 1 to {MAX_COLUMNS} columns and at most {MAX_ROWS} rows"),
                    hint,
                ));
            }
            if let Some(i) = t.rows.iter().position(|r| r.len() != t.columns.len()) {
                return Err(bad(
                    "content",
                    format!(
                        "row {i} has {} cells, the table {} columns",
                        t.rows[i].len(),
                        t.columns.len()
                    ),
                    "Give every row one cell per column.",
                ));
            }
        }
        ArtifactContent::Link(l) => {
            let scheme_ok = l.url.starts_with("https://") || l.url.starts_with("http://");
            if !scheme_ok
                || l.url.len() > MAX_URL_BYTES
                || l.url
                    .bytes()
                    .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
                || l.label
                    .as_ref()
                    .is_some_and(|s| s.is_empty() || s.len() > MAX_TITLE_BYTES)
            {
                return Err(bad(
                    "content",
                    format!(
                        "a link is an http(s) URL of at most {MAX_URL_BYTES} bytes without blanks, with an optional label of 1 to {MAX_TITLE_BYTES} bytes"
                    ),
                    "Pass {\"url\": \"https://...\", \"label\": \"...\"}.",
                ));
            }
        }
        ArtifactContent::Text(_) => {}
    }
    if args
        .title
        .as_ref()
        .is_some_and(|t| t.is_empty() || t.len() > MAX_TITLE_BYTES)
    {
        return Err(bad(
            "title",
            format!("the title holds 1 to {MAX_TITLE_BYTES} bytes"),
            hint,
        ));
    }
    let size = artifacts::body_size(args.kind, args.title.as_deref(), &args.content);
    if size > MAX_ARTIFACT_BYTES {
        return Err(bad(
            "content",
            format!(
                "the artifact body is {size} bytes of canonical JSON; the limit is {MAX_ARTIFACT_BYTES}"
            ),
            hint,
        ));
    }
    Ok(())
}

fn post(
    ctx: &ToolContext<'_>,
    mut args: PostArtifactArgs,
) -> Result<Called<ArtifactRecord>, ToolError> {
    let id = args.task_id.as_str();
    check_content(&args)?;
    let p = &ctx.snapshot.domain;
    let task = unfinished_task(p, id, "artifacts")?;
    let latest = p.artifacts().latest(&args.key);
    if let Some(v) = latest
        && v.record.run_id != task.run_id
    {
        return Err(ToolError::new(
            Refusal::ArtifactKeyTaken,
            format!(
                "key {} belongs to run {}, not to task {id}'s run",
                args.key, v.record.run_id
            ),
            "Pick a key of your own run, e.g. prefixed with the run id.",
        )
        .with("key", args.key.as_str())
        .with("run_id", v.record.run_id.as_str()));
    }
    let mut redactions = 0;
    let mut kinds = std::collections::BTreeSet::new();
    let title = args.title.as_ref().map(|t| dlp::redact(t));
    for s in args.content.strings_mut().into_iter() {
        let r = dlp::redact(s);
        redactions += r.count;
        kinds.extend(r.kinds);
        *s = r.text;
    }
    if let Some(t) = &title {
        redactions += t.count;
        kinds.extend(t.kinds.iter().copied());
    }
    let title = title.map(|t| t.text);
    let content_hash = artifacts::content_hash(args.kind, title.as_deref(), &args.content);
    if let Some(v) = latest
        && v.record.content_hash == content_hash
    {
        return Ok(Called {
            links: vec![resource_links::artifacts_link(id)],
            run_id: Some(task.run_id.to_string()),
            ..Called::ok(v.record.clone())
        });
    }
    let record = artifacts::seal(ArtifactRecord {
        artifact_id: String::new(),
        key: args.key.into_string(),
        version: latest.map_or(1, |v| v.record.version + 1),
        task_id: id.to_string(),
        run_id: task.run_id.to_string(),
        kind: args.kind,
        title,
        content: args.content,
        content_hash: String::new(),
        redactions,
        redacted_kinds: kinds.into_iter().map(str::to_string).collect(),
        poster: args.poster.map(Ident::into_string),
        trace: TraceRef::from_meta(ctx.meta),
        parent_lineage_head: latest
            .map_or(Digest::ZERO.to_string(), |v| v.record.lineage_head.clone()),
        lineage_head: String::new(),
        posted_at: ctx.now.0,
    });
    let reference = ArtifactRef::of(&record);
    let drafts = vec![
        records::draft(LINEAGE_STREAM, ARTIFACT_POSTED, &record),
        records::draft(run_stream(&record.run_id), RUN_ARTIFACT, &reference),
        records::draft(AUDIT_STREAM, ARTIFACT_MIRROR, &reference),
    ];
    // The key's versions are the lineage stream's (written, so named by the core), the task
    // the backlog's; the answer holds no placement (its lineage head chains contents).
    let run_id = record.run_id.clone();
    Ok(Called {
        drafts,
        links: vec![resource_links::artifacts_link(&record.task_id)],
        run_id: Some(run_id.clone()),
        ..Called::ok(record)
    }
    .reading_task_of(&run_id))
}

#[cfg(test)]
mod tests;
