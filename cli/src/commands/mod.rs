//! One module per subcommand. Each returns `Ok(exit code)` or `Err(message)` (exit 2).

pub mod audit;
pub mod backlog;
pub mod capsule;
pub mod handles;
pub mod init;
pub mod ledger;
pub mod lines;
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

/// Refuses a workdir that does not exist (or is not a directory): a mistyped path must not
/// become a new, empty project. `bernstein init DIR` is the command that creates one.
pub fn check_workdir(workdir: &Path) -> Result<(), String> {
    match std::fs::metadata(workdir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!("--workdir {}: not a directory", workdir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "--workdir {}: no such directory (nothing was created); create a project there with `bernstein init {}`",
            workdir.display(),
            workdir.display()
        )),
        Err(e) => Err(format!("--workdir {}: {e}", workdir.display())),
    }
}

/// The store an operator command (status, plan, task) works on: the database that `--store`
/// (else `BERNSTEIN_STORE_URL`) names, else the project's `.sdd/` store. It never creates
/// anything: a workdir without `.sdd/`, or without the audit key, is refused.
pub fn open_operator_store(
    workdir: &Path,
    store_flag: Option<&str>,
) -> Result<(Arc<dyn bernstein_core::ledger::Store>, Vec<u8>), String> {
    let url = crate::settings::store_url(store_flag)?;
    let sdd = workdir.join(".sdd");
    if url.is_none() && !sdd.is_dir() {
        return Err(format!(
            "{} is not a Bernstein project (no .sdd/): pass the --workdir of one, `--store URL` for a PostgreSQL ledger, or create it with `bernstein init {}`",
            workdir.display(),
            workdir.display()
        ));
    }
    let key = bernstein_runtime_std::keys::load_audit_key(&sdd)
        .map_err(|e| format!("audit key: {e}"))?
        .ok_or_else(|| match url {
            Some(_) => format!(
                "no audit key in {}/keys: pass the --workdir of an instance serving this database (the instances share its keys)",
                sdd.display()
            ),
            None => format!(
                "no audit key in {}/keys: the ledger cannot be authenticated (copy .sdd/keys from the instance that wrote it)",
                sdd.display()
            ),
        })?;
    let Some(url) = url else {
        let ledger = sdd.join("ledger/ledger.jsonl");
        if !ledger.is_file() {
            return Err(format!(
                "{} has no ledger: in a PostgreSQL instance's workdir pass --store URL (or set BERNSTEIN_STORE_URL)",
                sdd.display()
            ));
        }
        let store = FileStore::open(workdir, key.clone()).map_err(|e| e.to_string())?;
        return Ok((Arc::new(store), key));
    };
    let mut options = crate::settings::pg_options()?;
    options.listen = false;
    let store = bernstein_store_postgres::PgStore::open(&url, key.clone(), options)
        .map_err(|e| e.to_string())?;
    Ok((Arc::new(store), key))
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
