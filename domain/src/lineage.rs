//! The lineage walk of `bernstein_verify_lineage`: every version of an artifact key, from the
//! first to the requested one, checked link by link against what the ledger folded.
//!
//! For version `i` (1-based) of key `k`: the record names `k` and version `i`; its
//! `content_hash` is the hash of its content; its `lineage_head` is the hash of its link
//! fields and its `artifact_id` derives from that; its `parent_lineage_head` is version
//! `i - 1`'s `lineage_head` (the zero digest for version 1); and its `run.artifact` journal
//! record and `task.artifact` audit record were both folded with the same fields. Each entry's
//! `step_id` is the post's whole W3C `traceparent`, when it carried one. Hash
//! definitions: [`super::artifacts`]. This module reads the projection only; it never writes.

use serde::{Deserialize, Serialize};

use bernstein_core::digest::Digest;

use super::artifacts::{self, ArtifactIndex, StoredVersion};
use super::trace::TraceRef;

/// Longest artifact key, in bytes.
pub const MAX_KEY_BYTES: usize = 256;

/// One checked version, as the report lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LineageVersion {
    pub version: u64,
    pub artifact_id: String,
    pub task_id: String,
    pub run_id: String,
    pub content_hash: String,
    pub parent_lineage_head: String,
    pub lineage_head: String,
    /// The host's trace context of the post, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceRef>,
    /// The post's W3C `traceparent`, whole: the host's step that produced this version
    /// (absent when the post carried none, or was recorded before traceparents were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    pub posted_at: u64,
    /// Hash of the `artifact.posted` ledger record.
    pub record_hash: String,
    /// Hash of the `run.artifact` journal record (absent when missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_record: Option<String>,
    /// Hash of the `task.artifact` audit record (absent when missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_record: Option<String>,
}

/// A file at the key's path compared with the newest version (`check_file: true`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileCheck {
    pub path: String,
    /// `sha256:` of the file's bytes, when it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Whether the file's bytes are the newest version's report text.
    pub matches_newest: bool,
    /// Why the file could not be compared, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What `bernstein_verify_lineage` answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LineageReport {
    pub valid: bool,
    pub key: String,
    /// The version asked for (`key@version`), absent for the newest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_version: Option<u64>,
    /// The checked versions, oldest first.
    pub versions: Vec<LineageVersion>,
    /// `lineage_head` of the last checked version (zero digest when none).
    pub head: String,
    /// The trace context of the last checked version's post, when it carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceRef>,
    /// Every problem found, in walk order; empty when valid.
    pub problems: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileCheck>,
}

/// Splits `key` or `key@version`; `Err` says what is wrong with the shape.
pub fn parse_path(path: &str) -> Result<(&str, Option<u64>), String> {
    let (key, version) = match path.rsplit_once('@') {
        Some((k, v)) => {
            let n = v
                .parse::<u64>()
                .ok()
                .filter(|n| *n >= 1 && !v.starts_with('0'))
                .ok_or_else(|| format!("version {v:?} after @ is not a positive integer"))?;
            (k, Some(n))
        }
        None => (path, None),
    };
    check_key(key)?;
    Ok((key, version))
}

/// Checks an artifact key's shape: 1 to [`MAX_KEY_BYTES`] bytes of letters, digits and
/// `_.-/`, shaped as a project-relative path (no leading `/`, no `.`, `..` or empty segment).
pub fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Err(format!("the key must hold 1 to {MAX_KEY_BYTES} bytes"));
    }
    if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'/'))
    {
        return Err("the key may hold only letters, digits and _.-/".into());
    }
    bernstein_core::protocol::host::check_relative(key).map_err(|e| format!("the key {e}"))
}

fn check_version(i: u64, key: &str, v: &StoredVersion, parent: &str, out: &mut Vec<String>) {
    let r = &v.record;
    let at = format!("{key}@{i}");
    if r.key != key || r.version != i {
        out.push(format!("{at}: the record names {}@{}", r.key, r.version));
    }
    if artifacts::content_hash(r.kind, r.title.as_deref(), &r.content) != r.content_hash {
        out.push(format!(
            "{at}: content_hash does not match the recorded content"
        ));
    }
    if artifacts::lineage_hash(r) != r.lineage_head {
        out.push(format!(
            "{at}: lineage_head does not match the link's fields"
        ));
    }
    if artifacts::artifact_id(&r.lineage_head) != r.artifact_id {
        out.push(format!(
            "{at}: artifact_id does not derive from lineage_head"
        ));
    }
    if r.parent_lineage_head != parent {
        out.push(format!(
            "{at}: parent_lineage_head is {}, but the previous link is {parent}",
            r.parent_lineage_head
        ));
    }
    if v.journal_record.is_none() {
        out.push(format!(
            "{at}: no run.artifact record in run {}'s journal",
            r.run_id
        ));
    }
    if v.audit_record.is_none() {
        out.push(format!("{at}: no task.artifact record on the audit chain"));
    }
}

/// Walks key `key`'s lineage up to version `upto` (the newest when `None`).
pub fn walk(index: &ArtifactIndex, key: &str, upto: Option<u64>) -> LineageReport {
    let all = index.versions(key);
    let mut problems = Vec::new();
    if all.is_empty() {
        problems.push(format!("no artifact was ever posted under key {key}"));
    }
    let n = match upto {
        Some(v) if v as usize > all.len() && !all.is_empty() => {
            problems.push(format!("{key} has {} versions, not {v}", all.len()));
            all.len()
        }
        Some(v) => (v as usize).min(all.len()),
        None => all.len(),
    };
    let mut parent = Digest::ZERO.to_string();
    let mut versions = Vec::with_capacity(n);
    for (i, v) in all[..n].iter().enumerate() {
        check_version(i as u64 + 1, key, v, &parent, &mut problems);
        parent = v.record.lineage_head.clone();
        let r = &v.record;
        versions.push(LineageVersion {
            version: r.version,
            artifact_id: r.artifact_id.clone(),
            task_id: r.task_id.clone(),
            run_id: r.run_id.clone(),
            content_hash: r.content_hash.clone(),
            parent_lineage_head: r.parent_lineage_head.clone(),
            lineage_head: r.lineage_head.clone(),
            trace: r.trace.clone(),
            step_id: r.trace.as_ref().and_then(|t| t.traceparent.clone()),
            posted_at: r.posted_at,
            record_hash: v.record_hash.to_string(),
            journal_record: v.journal_record.map(|d| d.to_string()),
            audit_record: v.audit_record.map(|d| d.to_string()),
        });
    }
    LineageReport {
        valid: problems.is_empty(),
        key: key.to_string(),
        requested_version: upto,
        trace: versions.last().and_then(|v| v.trace.clone()),
        head: parent,
        versions,
        problems,
        file: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_key_and_version() {
        assert_eq!(parse_path("reports/a.md"), Ok(("reports/a.md", None)));
        assert_eq!(parse_path("reports/a.md@2"), Ok(("reports/a.md", Some(2))));
        for bad in [
            "",
            "a@0",
            "a@01",
            "a@x",
            "a@",
            "/etc/passwd",
            "a/../b",
            "a//b",
            "a b",
            "a\0b",
            "@1",
        ] {
            assert!(parse_path(bad).is_err(), "{bad:?}");
        }
        assert!(parse_path(&"a".repeat(MAX_KEY_BYTES + 1)).is_err());
    }

    #[test]
    fn an_unknown_key_is_invalid_and_says_so() {
        let r = walk(&ArtifactIndex::default(), "nothing", None);
        assert!(!r.valid);
        assert!(r.versions.is_empty());
        assert_eq!(r.head, Digest::ZERO.to_string());
        assert!(r.problems[0].contains("no artifact was ever posted"));
    }
}
