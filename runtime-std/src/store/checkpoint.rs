//! The projection checkpoint `.sdd/ledger/checkpoint.json`: a serialized [`Snapshot`] with the
//! file offset it reflects, so that opening a large ledger folds only what came after it.
//!
//! File form (one line): `{"checkpoint":<body>,"mac":"hmac-sha256:<hex>"}` where `<body>` is
//! the JSON of [`Body`] and the tag is HMAC-SHA256 of exactly those body bytes under the audit
//! key. It is written atomically (temp file, fsync, rename, directory fsync). On load it is
//! used only if its tag verifies, it was written by this software and format, and the record
//! ending at its offset is the one its snapshot claims as head; otherwise it is ignored and the
//! ledger is folded from the start. A checkpoint is a memo, never a source of truth: nothing
//! here may make the store trust bytes it has not verified or checkpointed itself.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bernstein_core::digest::{hmac_tag, verify_hmac_tag};
use bernstein_core::ledger::{LedgerPosition, Record, Snapshot};
use serde::{Deserialize, Serialize};

use super::layout::{Layout, sync_dir};
use super::ledger_file::{Folded, LedgerFile};

/// Version of the checkpoint body's layout.
pub const FORMAT: u32 = 1;
/// The software that wrote a checkpoint; another version's projection may differ, so its
/// checkpoints are ignored.
pub const SOFTWARE: &str = concat!("bernstein-runtime-std ", env!("CARGO_PKG_VERSION"));

const PREFIX: &[u8] = b"{\"checkpoint\":";
const MAC_FIELD: &[u8] = b",\"mac\":\"";
const SUFFIX: &[u8] = b"\"}\n";
/// Longest record line a checkpoint may point at.
const MAX_LINE: u64 = 64 << 20;

/// What a checkpoint records.
#[derive(Debug, Serialize)]
struct BodyRef<'a> {
    format: u32,
    software: &'a str,
    offset: u64,
    last_line_start: u64,
    lines: u64,
    snapshot: &'a Snapshot,
}

#[derive(Debug, Deserialize)]
struct Body {
    format: u32,
    software: String,
    offset: u64,
    last_line_start: u64,
    lines: u64,
    snapshot: Snapshot,
}

/// Writes a checkpoint of `folded` (nothing when nothing is folded). The ledger is synced first
/// so that a checkpoint never points past durable records.
pub fn write(layout: &Layout, key: &[u8], folded: &Folded, ledger: &LedgerFile) -> io::Result<()> {
    if folded.lines == 0 {
        return Ok(());
    }
    ledger.sync()?;
    let body = serde_json::to_vec(&BodyRef {
        format: FORMAT,
        software: SOFTWARE,
        offset: folded.offset,
        last_line_start: folded.last_line_start,
        lines: folded.lines,
        snapshot: &folded.snapshot,
    })
    .map_err(io::Error::other)?;
    let tag = hmac_tag(key, &body);
    let mut content = Vec::with_capacity(body.len() + 128);
    content.extend_from_slice(PREFIX);
    content.extend_from_slice(&body);
    content.extend_from_slice(MAC_FIELD);
    content.extend_from_slice(tag.as_bytes());
    content.extend_from_slice(SUFFIX);

    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = layout.ledger_dir();
    let tmp = dir.join(format!(
        "checkpoint.json.tmp.{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&content)?;
        f.sync_all()?;
        std::fs::rename(&tmp, layout.checkpoint_file())?;
        sync_dir(&dir)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Splits a checkpoint file into its body and tag.
fn split(content: &[u8]) -> Option<(&[u8], &str)> {
    let inner = content.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let at = inner
        .len()
        .checked_sub(MAC_FIELD.len() + "hmac-sha256:".len() + 64)?;
    let (body, rest) = inner.split_at(at);
    let tag = std::str::from_utf8(rest.strip_prefix(MAC_FIELD)?).ok()?;
    Some((body, tag))
}

fn read_body(path: &Path, key: Option<&[u8]>) -> Result<Option<Body>, String> {
    let content = match std::fs::read(path) {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("unreadable: {e}")),
    };
    let (body, tag) = split(&content).ok_or("not in checkpoint form")?;
    if let Some(key) = key
        && !verify_hmac_tag(key, body, tag)
    {
        return Err("its HMAC tag does not verify".into());
    }
    let body: Body = serde_json::from_slice(body).map_err(|e| format!("unreadable body: {e}"))?;
    if body.format != FORMAT || body.software != SOFTWARE {
        return Err(format!(
            "written by {} (format {}), this is {SOFTWARE} (format {FORMAT})",
            body.software, body.format
        ));
    }
    Ok(Some(body))
}

/// The checkpoint to resume from, if there is a usable one. An unusable checkpoint is reported
/// on stderr and ignored.
pub fn load(layout: &Layout, key: &[u8], ledger: &LedgerFile) -> Option<Folded> {
    let path = layout.checkpoint_file();
    let checked = read_body(&path, Some(key)).and_then(|body| match body {
        None => Ok(None),
        Some(body) => matches_ledger(&body, key, ledger).map(|()| Some(body)),
    });
    match checked {
        Ok(body) => body.map(|b| Folded {
            snapshot: Arc::new(b.snapshot),
            offset: b.offset,
            last_line_start: b.last_line_start,
            lines: b.lines,
        }),
        Err(reason) => {
            crate::log_line!(
                "bernstein: ignoring checkpoint {}: {reason}; folding the ledger from the start",
                path.display()
            );
            None
        }
    }
}

/// The position a checkpoint records as durable, for the offline verifier (which checks the
/// ledger against it). The tag is checked when the key is known.
pub fn anchor(layout: &Layout, key: Option<&[u8]>) -> Result<Option<LedgerPosition>, String> {
    Ok(read_body(&layout.checkpoint_file(), key)?.map(|b| b.snapshot.position))
}

/// Whether the record ending at the checkpoint's offset is the head its snapshot claims.
fn matches_ledger(body: &Body, key: &[u8], ledger: &LedgerFile) -> Result<(), String> {
    let pos = body.snapshot.position;
    let len = ledger.size().map_err(|e| e.to_string())?;
    let span = body
        .offset
        .checked_sub(body.last_line_start)
        .filter(|&s| s > 0 && s <= MAX_LINE);
    let (Some(span), true) = (span, body.offset <= len && body.lines > 0) else {
        return Err(format!(
            "its offset {} does not fit the {len}-byte ledger",
            body.offset
        ));
    };
    let line = ledger
        .read_at(body.last_line_start, span as usize)
        .map_err(|e| e.to_string())?;
    let rec = line
        .strip_suffix(b"\n")
        .filter(|l| !l.contains(&b'\n'))
        .and_then(|l| Record::parse_line(l, Some(key)).ok())
        .ok_or("no valid record ends at its offset")?;
    if rec.seq != pos.seq || rec.hash != pos.head {
        return Err(format!(
            "the ledger's record {} is not the head {} it claims",
            rec.seq, pos.head
        ));
    }
    Ok(())
}
