//! One module per subcommand. Each returns `Ok(exit code)` or `Err(message)` (exit 2).

pub mod audit;
pub mod backlog;
pub mod init;
pub mod mailbox;
pub mod mcp;
pub mod plan;
pub mod status;
pub mod task;
pub mod tools;

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

/// Loads (creating on first use) the project's Ed25519 signing identity,
/// `.sdd/keys/signing.ed25519`. A key file that is unreadable or open to others is an error:
/// the server never signs with a key it cannot trust, and never answers unsigned.
pub fn load_signer(workdir: &Path) -> Result<bernstein_core::domain::signing::Signer, String> {
    let seed = bernstein_runtime_std::keys::load_or_create_signing_key(&workdir.join(".sdd"))
        .map_err(|e| format!("signing key: {e}"))?;
    Ok(bernstein_core::domain::signing::Signer::from_seed(&seed))
}
