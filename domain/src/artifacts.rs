//! Task artifacts: the report, table and link bodies `bernstein_post_artifact` records, their
//! content hashes, the per-key lineage chain that versions them, and the index the projection
//! folds them into.
//!
//! Each post of key `k` is version `n + 1` of `k` and is written as three records in one
//! transaction (docs/RECORDS.md §10):
//! - `artifact.posted` on stream `lineage` (the lineage spine): the whole [`ArtifactRecord`];
//! - `run.artifact` on the run journal and `task.artifact` on the audit chain: its
//!   [`ArtifactRef`].
//!
//! Hashes (no clock value enters any of them):
//! - `content_hash` = `sha256:` + SHA-256 of the canonical JSON `{content, kind, title?}` (after
//!   redaction);
//! - `lineage_head` = `sha256:` + SHA-256 of the canonical JSON `{content_hash, key,
//!   parent_lineage_head, poster?, run_id, task_id, trace?, type: "bernstein.artifact_link.v1",
//!   version}`, where `parent_lineage_head` is the previous version's `lineage_head` (the zero
//!   digest for version 1): one hash chain per key;
//! - `artifact_id` = `A-` + the first 16 hex digits of `lineage_head`.
//!
//! This module builds and folds values only; the tool decides whether a post is allowed, and
//! [`super::lineage`] checks a chain.

use imbl::OrdMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use bernstein_core::canonical::to_canonical_bytes;
use bernstein_core::digest::Digest;
use bernstein_core::ledger::Record;

use super::trace::TraceRef;

/// The lineage spine's stream.
pub const LINEAGE_STREAM: &str = "lineage";
/// Lineage spine: one version of an artifact.
pub const ARTIFACT_POSTED: &str = "artifact.posted";
/// Run journal: an artifact a member task posted.
pub const RUN_ARTIFACT: &str = "run.artifact";
/// Audit: the mirror of a posted artifact.
pub const ARTIFACT_MIRROR: &str = "task.artifact";
/// Domain tag of the lineage link pre-image.
pub const LINK_TYPE: &str = "bernstein.artifact_link.v1";

/// What an artifact is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(transform = super::schema::undescribed)]
pub enum ArtifactKind {
    Report,
    Table,
    Link,
}

impl ArtifactKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactKind::Report => "report",
            ArtifactKind::Table => "table",
            ArtifactKind::Link => "link",
        }
    }
}

/// A table: column headers and rows of cells (strings).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TableContent {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// A link: where it points and what to call it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkContent {
    /// An http or https URL.
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// An artifact's content: markdown text (report), a table, or a link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
#[schemars(transform = super::schema::undescribed)]
pub enum ArtifactContent {
    /// Markdown text (kind report).
    Text(String),
    /// Columns and rows (kind table).
    Table(TableContent),
    /// URL and label (kind link).
    Link(LinkContent),
}

impl ArtifactContent {
    /// The kind this content is the shape of.
    pub fn kind(&self) -> ArtifactKind {
        match self {
            ArtifactContent::Text(_) => ArtifactKind::Report,
            ArtifactContent::Table(_) => ArtifactKind::Table,
            ArtifactContent::Link(_) => ArtifactKind::Link,
        }
    }

    /// Every string of the content, mutably (for redaction).
    pub fn strings_mut(&mut self) -> Vec<&mut String> {
        match self {
            ArtifactContent::Text(t) => vec![t],
            ArtifactContent::Table(t) => t
                .columns
                .iter_mut()
                .chain(t.rows.iter_mut().flatten())
                .collect(),
            ArtifactContent::Link(l) => std::iter::once(&mut l.url)
                .chain(l.label.as_mut())
                .collect(),
        }
    }
}

/// `artifact.posted` (stream `lineage`): one version of an artifact, and the payload of
/// `bernstein_post_artifact`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactRecord {
    /// `A-` + 16 hex digits of `lineage_head`.
    pub artifact_id: String,
    /// The artifact slot (a project-relative path-like name).
    pub key: String,
    /// 1 for the key's first post, then +1.
    pub version: u64,
    pub task_id: String,
    pub run_id: String,
    pub kind: ArtifactKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The content as recorded: secrets replaced by `[REDACTED:<kind>]`.
    pub content: ArtifactContent,
    /// SHA-256 of the canonical `{content, kind, title?}` (`sha256:<hex>`).
    pub content_hash: String,
    /// How many secrets were redacted.
    pub redactions: u64,
    /// The kinds of secrets redacted (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
    /// Who posted it, when named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poster: Option<String>,
    /// The host's W3C trace context of the posting call, when it sent a valid one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceRef>,
    /// `lineage_head` of the previous version of the key (zero digest for version 1).
    pub parent_lineage_head: String,
    /// The key's lineage head after this version: the hash of this link.
    pub lineage_head: String,
    /// Wall-clock ms of the post (not hashed).
    pub posted_at: u64,
}

/// `run.artifact` (run journal) and `task.artifact` (audit): what identifies a version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactRef {
    pub artifact_id: String,
    pub key: String,
    pub version: u64,
    pub task_id: String,
    pub run_id: String,
    pub content_hash: String,
    pub parent_lineage_head: String,
    pub lineage_head: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceRef>,
    pub posted_at: u64,
}

impl ArtifactRef {
    pub fn of(r: &ArtifactRecord) -> ArtifactRef {
        ArtifactRef {
            artifact_id: r.artifact_id.clone(),
            key: r.key.clone(),
            version: r.version,
            task_id: r.task_id.clone(),
            run_id: r.run_id.clone(),
            content_hash: r.content_hash.clone(),
            parent_lineage_head: r.parent_lineage_head.clone(),
            lineage_head: r.lineage_head.clone(),
            trace: r.trace.clone(),
            posted_at: r.posted_at,
        }
    }
}

/// The content hash of `{content, kind, title?}`.
pub fn content_hash(kind: ArtifactKind, title: Option<&str>, content: &ArtifactContent) -> String {
    let mut body = json!({"kind": kind.as_str(), "content": content});
    if let Some(t) = title {
        body["title"] = json!(t);
    }
    Digest::of(&to_canonical_bytes(&body).expect("artifact bodies hold strings only")).to_string()
}

/// The canonical size (bytes) of an artifact body, as [`content_hash`] hashes it.
pub fn body_size(kind: ArtifactKind, title: Option<&str>, content: &ArtifactContent) -> usize {
    let body = json!({"kind": kind.as_str(), "content": content, "title": title});
    to_canonical_bytes(&body).map_or(usize::MAX, |b| b.len())
}

/// The lineage hash of `r` from its fields (see the module docs).
pub fn lineage_hash(r: &ArtifactRecord) -> String {
    let mut pre = json!({
        "content_hash": r.content_hash,
        "key": r.key,
        "parent_lineage_head": r.parent_lineage_head,
        "run_id": r.run_id,
        "task_id": r.task_id,
        "type": LINK_TYPE,
        "version": r.version,
    });
    if let Some(p) = &r.poster {
        pre["poster"] = json!(p);
    }
    if let Some(t) = &r.trace {
        pre["trace"] = json!(t);
    }
    Digest::of(&to_canonical_bytes(&pre).expect("strings and integers only")).to_string()
}

/// The artifact id of a lineage hash.
pub fn artifact_id(lineage_head: &str) -> String {
    let hex = lineage_head.strip_prefix("sha256:").unwrap_or(lineage_head);
    format!("A-{}", &hex[..hex.len().min(16)])
}

/// Fills `content_hash`, `lineage_head` and `artifact_id` of a new record.
pub fn seal(mut r: ArtifactRecord) -> ArtifactRecord {
    r.content_hash = content_hash(r.kind, r.title.as_deref(), &r.content);
    r.lineage_head = lineage_hash(&r);
    r.artifact_id = artifact_id(&r.lineage_head);
    r
}

/// One folded version and where the ledger holds its records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredVersion {
    pub record: ArtifactRecord,
    /// Hash of its `artifact.posted` record.
    pub record_hash: Digest,
    /// Hash of the matching `run.artifact` journal record, once folded.
    pub journal_record: Option<Digest>,
    /// Hash of the matching `task.artifact` audit record, once folded.
    pub audit_record: Option<Digest>,
}

/// Every artifact version by key, and the keys each task posted. Checkpointed with the
/// projection (no serde defaults, like it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactIndex {
    keys: OrdMap<String, Vec<StoredVersion>>,
    /// task id → (key, version) in posting order.
    by_task: OrdMap<String, Vec<(String, u64)>>,
}

impl ArtifactIndex {
    /// Folds an `artifact.posted` record of a known task of run `run_of_task`; false when it
    /// does not continue its key (wrong version, or a key of another run). The chain's hashes
    /// are checked by [`super::lineage`], not here.
    pub(crate) fn fold_posted(&mut self, rec: &Record, run_of_task: Option<&str>) -> bool {
        let Ok(r) = ArtifactRecord::deserialize(&rec.body) else {
            return false;
        };
        let versions = self.keys.entry(r.key.clone()).or_default();
        let other_run = versions
            .first()
            .is_some_and(|v| v.record.run_id != r.run_id);
        if run_of_task != Some(r.run_id.as_str())
            || other_run
            || r.version != versions.len() as u64 + 1
        {
            if versions.is_empty() {
                self.keys.remove(&r.key);
            }
            return false;
        }
        self.by_task
            .entry(r.task_id.clone())
            .or_default()
            .push((r.key.clone(), r.version));
        versions.push(StoredVersion {
            record: r,
            record_hash: rec.hash,
            journal_record: None,
            audit_record: None,
        });
        true
    }

    /// Folds a `run.artifact` (`journal`) or `task.artifact` record; false when it names no
    /// version or differs from it.
    pub(crate) fn fold_ref(&mut self, rec: &Record, journal: bool) -> bool {
        let Ok(a) = ArtifactRef::deserialize(&rec.body) else {
            return false;
        };
        let Some(v) = self
            .keys
            .get_mut(&a.key)
            .and_then(|vs| vs.get_mut((a.version as usize).wrapping_sub(1)))
        else {
            return false;
        };
        let slot = if journal {
            &mut v.journal_record
        } else {
            &mut v.audit_record
        };
        if slot.is_some() || ArtifactRef::of(&v.record) != a {
            return false;
        }
        *slot = Some(rec.hash);
        true
    }

    /// The versions of `key`, oldest first (empty when never posted).
    pub fn versions(&self, key: &str) -> &[StoredVersion] {
        self.keys.get(key).map_or(&[], Vec::as_slice)
    }

    /// The newest version of `key`.
    pub fn latest(&self, key: &str) -> Option<&StoredVersion> {
        self.versions(key).last()
    }

    /// The versions task `task_id` posted, in posting order.
    pub fn of_task<'a>(&'a self, task_id: &str) -> impl Iterator<Item = &'a StoredVersion> + 'a {
        self.by_task
            .get(task_id)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| self.keys.get(k)?.get((*v as usize).checked_sub(1)?))
    }
}

/// The body of an `artifact.posted` record as a value (for drafts).
pub fn record_value(r: &ArtifactRecord) -> Value {
    serde_json::to_value(r).expect("an artifact record always serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ArtifactRecord {
        seal(ArtifactRecord {
            artifact_id: String::new(),
            key: "reports/summary.md".into(),
            version: 1,
            task_id: "T-0123456789abcdef".into(),
            run_id: "T-0123456789abcdef".into(),
            kind: ArtifactKind::Report,
            title: Some("Summary".into()),
            content: ArtifactContent::Text("# Done".into()),
            content_hash: String::new(),
            redactions: 0,
            redacted_kinds: Vec::new(),
            poster: None,
            trace: None,
            parent_lineage_head: Digest::ZERO.to_string(),
            lineage_head: String::new(),
            posted_at: 1,
        })
    }

    #[test]
    fn content_hash_is_the_canonical_body_and_ignores_the_clock() {
        let r = sample();
        let pre = br##"{"content":"# Done","kind":"report","title":"Summary"}"##;
        assert_eq!(r.content_hash, Digest::of(pre).to_string());
        let later = seal(ArtifactRecord {
            posted_at: 99,
            ..r.clone()
        });
        assert_eq!(
            later,
            ArtifactRecord {
                posted_at: 99,
                ..r.clone()
            }
        );
        assert!(r.artifact_id.starts_with("A-") && r.artifact_id.len() == 18);
        assert_eq!(r.artifact_id, artifact_id(&r.lineage_head));
    }

    #[test]
    fn every_provenance_field_moves_the_lineage_hash() {
        let r = sample();
        let trace = TraceRef {
            trace_id: "4bf92f3577b34da6a3ce929d0e0e4736".into(),
            parent_span: "00f067aa0ba902b7".into(),
            traceparent: None,
            tracestate: None,
            baggage: None,
        };
        let edits: Vec<ArtifactRecord> = vec![
            ArtifactRecord {
                key: "other".into(),
                ..r.clone()
            },
            ArtifactRecord {
                version: 2,
                ..r.clone()
            },
            ArtifactRecord {
                task_id: "T-fedcba9876543210".into(),
                ..r.clone()
            },
            ArtifactRecord {
                run_id: "T-fedcba9876543210".into(),
                ..r.clone()
            },
            ArtifactRecord {
                poster: Some("w".into()),
                ..r.clone()
            },
            ArtifactRecord {
                trace: Some(trace),
                ..r.clone()
            },
            ArtifactRecord {
                parent_lineage_head: Digest::of(b"p").to_string(),
                ..r.clone()
            },
            ArtifactRecord {
                content: ArtifactContent::Text("# done".into()),
                ..r.clone()
            },
        ];
        for e in edits {
            assert_ne!(seal(e.clone()).lineage_head, r.lineage_head, "{e:?}");
        }
    }

    #[test]
    fn content_shapes_parse_untagged_and_name_their_kind() {
        let t: ArtifactContent =
            serde_json::from_value(json!({"columns": ["a"], "rows": [["1"]]})).unwrap();
        assert_eq!(t.kind(), ArtifactKind::Table);
        let l: ArtifactContent = serde_json::from_value(json!({"url": "https://x"})).unwrap();
        assert_eq!(l.kind(), ArtifactKind::Link);
        let s: ArtifactContent = serde_json::from_value(json!("text")).unwrap();
        assert_eq!(s.kind(), ArtifactKind::Report);
        assert!(serde_json::from_value::<ArtifactContent>(json!({"url": "x", "y": 1})).is_err());
        assert!(serde_json::from_value::<ArtifactContent>(json!(3)).is_err());
    }
}
