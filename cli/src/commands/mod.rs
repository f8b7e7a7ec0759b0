//! One module per subcommand. Each returns `Ok(exit code)` or `Err(message)` (exit 2).

pub mod audit;
pub mod init;
pub mod mcp;
pub mod status;
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
