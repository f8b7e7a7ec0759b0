//! One module per subcommand. Each returns `Ok(exit code)` or `Err(message)` (exit 2).

pub mod audit;
pub mod backlog;
pub mod capsule;
pub mod handles;
pub mod init;
pub mod ledger;
pub mod mailbox;
pub mod mcp;
pub mod plan;
pub mod status;
pub mod store;
pub mod task;
pub mod tools;
pub mod worker;

use std::path::Path;
use std::sync::Arc;

use bernstein_runtime_std::store::FileStore;

/// The workdir's audit key. A missing key is created only while the ledger is empty: a new
/// key could never verify records written under another, so none is made (or left behind)
/// for a ledger that has records.
fn audit_key_for(
    workdir: &Path,
    ledger_has_records: impl FnOnce() -> Result<bool, String>,
) -> Result<Vec<u8>, String> {
    let sdd = workdir.join(".sdd");
    let key_err = |e| format!("audit key: {e}");
    if let Some(key) = bernstein_runtime_std::keys::load_audit_key(&sdd).map_err(key_err)? {
        return Ok(key);
    }
    if ledger_has_records()? {
        return Err(format!(
            "{} has no audit key, but the ledger already has records: this instance cannot authenticate them; copy .sdd/keys from an instance that wrote it (a new key is not created)",
            sdd.display()
        ));
    }
    bernstein_runtime_std::keys::load_or_create_audit_key(&sdd).map_err(key_err)
}

/// Opens the project's store (creating `.sdd/` on first use) and its audit key.
pub fn open_store(workdir: &Path) -> Result<(Arc<FileStore>, Vec<u8>), String> {
    let key = audit_key_for(workdir, || {
        let ledger = workdir.join(".sdd/ledger/ledger.jsonl");
        match std::fs::metadata(&ledger) {
            Ok(m) => Ok(m.len() > 0),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("{}: {e}", ledger.display())),
        }
    })?;
    let store = FileStore::open(workdir, key.clone()).map_err(|e| e.to_string())?;
    Ok((Arc::new(store), key))
}

/// The store an operator command (status, plan, task) works on: the database that
/// `BERNSTEIN_STORE_URL` names, else the project's `.sdd/` store.
pub fn open_operator_store(
    workdir: &Path,
) -> Result<(Arc<dyn bernstein_core::ledger::Store>, Vec<u8>), String> {
    let url = crate::settings::store_url(None)?;
    open_any_store(workdir, url.as_deref(), false)
}

/// Opens the store `url` names (see `settings::store_url`), else the project's `.sdd/` store,
/// with the audit key of the workdir (`.sdd/keys/audit.key`, created on first use; several
/// instances on one database must share it, see docs/POSTGRES.md). With `migrate` the
/// database's schema is brought up to date first; without it a schema this software does not
/// serve is refused.
pub fn open_any_store(
    workdir: &Path,
    url: Option<&str>,
    migrate: bool,
) -> Result<(Arc<dyn bernstein_core::ledger::Store>, Vec<u8>), String> {
    let Some(url) = url else {
        let (store, key) = open_store(workdir)?;
        return Ok((store, key));
    };
    if migrate {
        let applied = bernstein_store_postgres::migrate(url)?;
        if !applied.is_empty() {
            bernstein_runtime_std::log_line!("bernstein: applied schema migrations {applied:?}");
        }
    }
    let key = audit_key_for(workdir, || bernstein_store_postgres::has_records(url))?;
    let store =
        bernstein_store_postgres::PgStore::open(url, key.clone(), crate::settings::pg_options()?)
            .map_err(|e| e.to_string())?;
    Ok((Arc::new(store), key))
}

/// Loads (creating on first use) the project's Ed25519 signing identity,
/// `.sdd/keys/signing.ed25519`. A key file that is unreadable or open to others is an error:
/// the server never signs with a key it cannot trust, and never answers unsigned.
pub fn load_signer(workdir: &Path) -> Result<bernstein_core::domain::signing::Signer, String> {
    let seed = bernstein_runtime_std::keys::load_or_create_signing_key(&workdir.join(".sdd"))
        .map_err(|e| format!("signing key: {e}"))?;
    Ok(bernstein_core::domain::signing::Signer::from_seed(&seed))
}
