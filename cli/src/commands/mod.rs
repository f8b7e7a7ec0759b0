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

/// Opens the project's store (creating `.sdd/` on first use) and its audit key.
pub fn open_store(workdir: &Path) -> Result<(Arc<FileStore>, Vec<u8>), String> {
    let key = bernstein_runtime_std::keys::load_or_create_audit_key(&workdir.join(".sdd"))
        .map_err(|e| format!("audit key: {e}"))?;
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
    let key = bernstein_runtime_std::keys::load_or_create_audit_key(&workdir.join(".sdd"))
        .map_err(|e| format!("audit key: {e}"))?;
    if migrate {
        let applied = bernstein_store_postgres::migrate(url)?;
        if !applied.is_empty() {
            bernstein_runtime_std::log_line!("bernstein: applied schema migrations {applied:?}");
        }
    }
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
