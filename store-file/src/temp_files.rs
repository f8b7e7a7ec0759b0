//! Temp files that are written, synced and then put in place (checkpoints, keys), and the sweep
//! of those a writer left behind when it died mid-write.
//!
//! A temp file is named `<final name>.tmp.<pid>.<counter>`, created 0600 with `create_new`, and
//! its writer holds an advisory lock on it until it is in place or removed: a temp file whose
//! lock anyone can take was left by a dead writer. Between the create and the lock a sweep can
//! take a live writer's file for a dead one's; the writer then finds its file gone when it puts
//! it in place (`NotFound`): a checkpoint is written again when the next one falls due, a key
//! is written again at once.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The `.tmp.` infix between a final name and the writer's pid and counter.
const INFIX: &str = ".tmp.";

/// A fresh temp file for `final_name` in `dir`, created 0600 and locked; its path.
pub fn create_locked(dir: &Path, final_name: &str) -> io::Result<(File, PathBuf)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let path = dir.join(format!(
        "{final_name}{INFIX}{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    // Held until the file is in place (or this writer dies): the mark of a live writer.
    file.try_lock().map_err(|e| match e {
        std::fs::TryLockError::Error(e) => e,
        std::fs::TryLockError::WouldBlock => {
            io::Error::other("a fresh temp file is locked by another process")
        }
    })?;
    Ok((file, path))
}

/// Removes from `dir` the temp files of `final_names` that writers which died mid-write left
/// there; returns how many. A temp file whose lock another writer holds is being written and is
/// left alone; so is anything not named like one of these temp files, and a directory. A
/// symbolic link so named is never a writer's (they create their files) and is removed, never
/// followed.
pub fn sweep_stale(dir: &Path, final_names: &[&str]) -> io::Result<usize> {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.as_encoded_bytes();
        let ours = final_names.iter().any(|f| {
            name.strip_prefix(f.as_bytes())
                .is_some_and(|rest| rest.starts_with(INFIX.as_bytes()))
        });
        if !ours {
            continue;
        }
        let path = entry.path();
        let stale = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => true,
            // Opened without following a link or waiting on a FIFO, should either have been
            // put in its place meanwhile.
            Ok(meta) if meta.is_file() => OpenOptions::new()
                .read(true)
                .custom_flags(
                    (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32,
                )
                .open(&path)
                .is_ok_and(|f| f.try_lock().is_ok()),
            _ => false,
        };
        if stale {
            match std::fs::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(removed)
}
