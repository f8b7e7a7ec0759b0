//! `bernstein ledger upgrade`: re-tags `.sdd/ledger/ledger.jsonl` from format 1 or 2 in the
//! current format 3 in place (see `bernstein_ledger::upgrade`), under the exclusive ledger lock:
//! the new file is written beside the old one a line at a time, fsynced and renamed over it, and
//! the checkpoint (whose byte offsets no longer fit) is removed. A server that had the old file
//! open refuses further appends until it is restarted.

use std::io::{self, BufRead as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use bernstein_ledger::upgrade::{Upgraded, Upgrader};
use bernstein_ledger::verify::VerifyFailure;

use crate::keys::load_audit_key;
use crate::layout::{Layout, sync_dir};
use crate::lock::LedgerLock;
use crate::verify_cmd::resolve_sdd;

/// What `upgrade_ledger` did.
#[derive(Debug)]
pub enum UpgradeOutcome {
    /// The ledger already was format 3 (it verifies as such); nothing changed.
    AlreadyCurrent,
    Upgraded(Box<Upgraded>),
}

/// Upgrades the ledger of `dir` (`.sdd` or the project directory), streaming: the old file is
/// read and the new one written a line at a time, so memory does not grow with the ledger.
pub fn upgrade_ledger(dir: &Path, trust_unsealed: bool) -> Result<UpgradeOutcome, String> {
    let layout = Layout::at(&resolve_sdd(dir));
    let key = load_audit_key(&layout.sdd)
        .map_err(|e| format!("audit key: {e}"))?
        .ok_or_else(|| {
            format!(
                "{} is missing: the upgrade checks and re-tags records under the audit key the ledger was written with",
                layout.audit_key_file().display()
            )
        })?;
    let path = layout.ledger_file();
    let lock = LedgerLock::open_existing(&layout.lock_file())
        .map_err(|e| format!("{}: {e}", layout.lock_file().display()))?;
    let _guard = lock
        .as_ref()
        .map(LedgerLock::exclusive)
        .transpose()
        .map_err(|e| format!("lock: {e}"))?;
    let old = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let tmp = layout.ledger_dir().join("ledger.jsonl.upgrade");
    // Left by an upgrade killed mid-way (none runs now: the lock is ours). Removing a link
    // removes the link, never its target.
    match std::fs::remove_file(&tmp) {
        Err(_) if tmp.is_dir() => {
            return Err(format!(
                "{} is a directory, where the upgrade writes its new file: an upgrade never makes it, so move it away and run again; nothing changed",
                tmp.display()
            ));
        }
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            return Err(format!("{}: {e}; nothing changed", tmp.display()));
        }
        _ => {}
    }
    let new = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    let name = path.display().to_string();
    let outcome = (|| {
        let up = retag(old, &new, &name, &key, trust_unsealed)?;
        if up.changed_nothing() {
            return Ok(UpgradeOutcome::AlreadyCurrent);
        }
        let published = (|| {
            new.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            match std::fs::remove_file(layout.checkpoint_file()) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            sync_dir(&layout.ledger_dir())
        })();
        published.map_err(|e| format!("writing the upgraded ledger: {e}"))?;
        Ok(UpgradeOutcome::Upgraded(Box::new(up)))
    })();
    if !matches!(outcome, Ok(UpgradeOutcome::Upgraded(_))) {
        let _ = std::fs::remove_file(&tmp);
    }
    outcome
}

/// Streams `old` through an [`Upgrader`] into `new`.
fn retag(
    old: std::fs::File,
    new: &std::fs::File,
    name: &str,
    key: &[u8],
    trust_unsealed: bool,
) -> Result<Upgraded, String> {
    let refused = |f: VerifyFailure| format!("not upgraded, nothing changed: {f}");
    let read_error = |e: io::Error| format!("read {name}: {e}");
    let write_error = |e: io::Error| format!("writing the upgraded ledger: {e}");
    let mut reader = io::BufReader::with_capacity(1 << 20, old);
    let mut writer = io::BufWriter::with_capacity(1 << 20, new);
    let mut up = Upgrader::new(name, key, trust_unsealed);
    let mut line = Vec::new();
    loop {
        line.clear();
        reader.read_until(b'\n', &mut line).map_err(read_error)?;
        let Some(body) = line.strip_suffix(b"\n") else {
            break;
        };
        let out = up.push_line(body).map_err(refused)?;
        writer.write_all(&out).map_err(write_error)?;
    }
    writer.flush().map_err(write_error)?;
    up.finish(&line).map_err(refused)
}
