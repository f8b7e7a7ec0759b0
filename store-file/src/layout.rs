//! The `.sdd/` directory layout and its creation: which file lives where, directories made
//! with mode 0700, and directory fsyncs so that a newly created entry survives a crash.
//!
//! It only names and creates paths; it never reads or writes ledger contents.

use std::fs::{DirBuilder, File};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Name of the store's directory inside the project directory.
pub const SDD_DIR: &str = ".sdd";
/// File name of the projection checkpoint in `ledger/`.
pub const CHECKPOINT_FILE: &str = "checkpoint.json";
/// File name of the audit key in `keys/`.
pub const AUDIT_KEY_FILE: &str = "audit.key";

/// Paths of one `.sdd/` store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The `.sdd` directory itself.
    pub sdd: PathBuf,
}

impl Layout {
    /// The layout of the store in `project_dir`.
    pub fn in_project(project_dir: &Path) -> Layout {
        Layout {
            sdd: project_dir.join(SDD_DIR),
        }
    }

    /// The layout of an `.sdd` directory given directly.
    pub fn at(sdd: &Path) -> Layout {
        Layout {
            sdd: sdd.to_path_buf(),
        }
    }

    pub fn ledger_dir(&self) -> PathBuf {
        self.sdd.join("ledger")
    }

    /// The ledger's records, one canonical JSON line each.
    pub fn ledger_file(&self) -> PathBuf {
        self.ledger_dir().join("ledger.jsonl")
    }

    /// The lock file that serializes writers (exclusive) against readers (shared).
    pub fn lock_file(&self) -> PathBuf {
        self.ledger_dir().join("lock")
    }

    /// The projection checkpoint.
    pub fn checkpoint_file(&self) -> PathBuf {
        self.ledger_dir().join(CHECKPOINT_FILE)
    }

    pub fn keys_dir(&self) -> PathBuf {
        self.sdd.join("keys")
    }

    /// The HMAC key of the audit and mailbox chains.
    pub fn audit_key_file(&self) -> PathBuf {
        self.keys_dir().join(AUDIT_KEY_FILE)
    }

    /// Reserved for runtime files (signals, sockets).
    pub fn runtime_dir(&self) -> PathBuf {
        self.sdd.join("runtime")
    }

    /// Creates `.sdd/`, `ledger/`, `keys/` and `runtime/` where missing.
    pub fn create_dirs(&self) -> io::Result<()> {
        for dir in [self.ledger_dir(), self.keys_dir(), self.runtime_dir()] {
            create_private_dir_all(&dir)?;
        }
        Ok(())
    }
}

/// Creates `dir` and its missing parents with mode 0700, fsyncing each parent that gained an
/// entry so the new directories survive a crash.
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent()
        && !parent.as_os_str().is_empty()
    {
        create_private_dir_all(parent)?;
    }
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        // Another process created it in the meantime.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
        Err(e) => return Err(e),
    }
    if let Some(parent) = dir.parent() {
        sync_dir(if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        })?;
    }
    Ok(())
}

/// Fsyncs a directory, making the creation, removal or renaming of its entries durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::test_dir::TestDir;

    #[test]
    fn creates_private_dirs() {
        let tmp = TestDir::new("layout");
        let layout = Layout::in_project(tmp.path());
        layout.create_dirs().unwrap();
        for d in [
            &layout.sdd,
            &layout.ledger_dir(),
            &layout.keys_dir(),
            &layout.runtime_dir(),
        ] {
            let mode = std::fs::metadata(d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", d.display());
        }
        // Idempotent.
        layout.create_dirs().unwrap();
        assert_eq!(
            layout.ledger_file(),
            tmp.path().join(".sdd/ledger/ledger.jsonl")
        );
    }
}
