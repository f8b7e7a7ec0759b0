//! The ledger lock: an advisory file lock on `.sdd/ledger/lock` that serializes writers
//! (exclusive) against each other and against readers (shared), across processes.
//!
//! Locks are held only for the duration of one store operation and released by the guard's
//! drop. They exclude other processes only: within a process the store's mutex does that
//! (an advisory lock is per open file description, so two threads on one handle would not
//! exclude each other).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The open lock file.
#[derive(Debug)]
pub struct LedgerLock {
    file: File,
}

/// Holds the lock until dropped.
#[derive(Debug)]
pub struct LockGuard<'a> {
    file: &'a File,
}

impl LedgerLock {
    /// Opens (creating with mode 0600 if needed) the lock file.
    pub fn open(path: &Path) -> io::Result<LedgerLock> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
        Ok(LedgerLock { file })
    }

    /// Opens the lock file only if it exists (readers that must not create files).
    pub fn open_existing(path: &Path) -> io::Result<Option<LedgerLock>> {
        match File::open(path) {
            Ok(file) => Ok(Some(LedgerLock { file })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Blocks until no other process holds the lock.
    pub fn exclusive(&self) -> io::Result<LockGuard<'_>> {
        self.file.lock()?;
        Ok(LockGuard { file: &self.file })
    }

    /// Blocks until no other process holds the lock exclusively.
    pub fn shared(&self) -> io::Result<LockGuard<'_>> {
        self.file.lock_shared()?;
        Ok(LockGuard { file: &self.file })
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        // Closing the file would release it too; an unlock error leaves nothing to undo.
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TestDir;

    #[test]
    fn exclusive_excludes_other_handles() {
        let tmp = TestDir::new("lock");
        let path = tmp.path().join("lock");
        let a = LedgerLock::open(&path).unwrap();
        let b = LedgerLock::open(&path).unwrap();
        let guard = a.exclusive().unwrap();
        assert!(matches!(
            b.file.try_lock_shared(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(guard);
        let _s1 = a.shared().unwrap();
        let _s2 = b.shared().unwrap();
    }
}
