//! `bernstein ledger upgrade`: re-tags `.sdd/ledger/ledger.jsonl` from format 1 or 2 in the
//! current format 3 in place (see `bernstein_ledger::upgrade`), under the exclusive ledger lock: the new
//! file is written beside the old one, fsynced and renamed over it, and the checkpoint (whose
//! byte offsets no longer fit) is removed. A server that had the old file open refuses further
//! appends until it is restarted.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use bernstein_ledger::upgrade::{Upgraded, upgrade};
use bernstein_ledger::verify::verify_ledger;

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

/// Upgrades the ledger of `dir` (`.sdd` or the project directory).
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
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = path.display().to_string();
    if verify_ledger(&bytes, &name, Some(&key)).is_ok() {
        return Ok(UpgradeOutcome::AlreadyCurrent);
    }
    let up = upgrade(&bytes, &name, &key, trust_unsealed)
        .map_err(|f| format!("not upgraded, nothing changed: {f}"))?;
    let tmp = layout.ledger_dir().join("ledger.jsonl.upgrade");
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&up.bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        match std::fs::remove_file(layout.checkpoint_file()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        sync_dir(&layout.ledger_dir())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("writing the upgraded ledger: {e}"));
    }
    Ok(UpgradeOutcome::Upgraded(Box::new(up)))
}
