//! The embedded ledger store: `.sdd/` in the project directory (layout in docs/FORMATS.md).
//!
//! [`FileStore`] implements the core's [`Store`] over one append-only file, shared by any number
//! of processes on one machine:
//! - compare-and-append takes the exclusive file lock, first folds what other processes appended
//!   (cutting a torn tail a crashed writer left), refuses a stale `expected` head, then writes
//!   all records of the request with one positional write and `sync_data` before it answers;
//! - snapshots take the shared lock only when the file grew, and fold just the new bytes, so a
//!   request costs the same at any ledger size;
//! - checkpoints of the folded projection let an open skip the folded prefix.
//!
//! It must never acknowledge an append before it is durable, never cut a byte it verified, and
//! never hand out a snapshot built from unverified records.

pub mod checkpoint;
pub mod layout;
pub mod ledger_file;
pub mod lock;

#[cfg(test)]
pub(crate) mod test_dir;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use bernstein_core::ledger::verify::check_extends;
use bernstein_core::ledger::{Append, AppendResult, Record, Snapshot, Store, StoreError};

use self::layout::Layout;
use self::ledger_file::{CatchUp, Folded, LedgerFile, TailPolicy};
use self::lock::LedgerLock;

/// Tunables of a [`FileStore`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// Write a checkpoint once this many records were folded since the last one.
    pub checkpoint_every: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            checkpoint_every: 5000,
        }
    }
}

/// The `.sdd/` file store.
#[derive(Debug)]
pub struct FileStore {
    layout: Layout,
    key: Vec<u8>,
    options: StoreOptions,
    lock: LedgerLock,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    ledger: LedgerFile,
    /// `None` after a failed fold: rebuilt (from the checkpoint, else from the start) next time.
    folded: Option<Folded>,
    /// Records folded since the last checkpoint this process wrote or loaded.
    since_checkpoint: u64,
}

impl FileStore {
    /// Opens (creating `.sdd/` on first use) the store of `project_dir`. Records on keyed
    /// streams are verified with `audit_key`. Cuts a torn tail; refuses a corrupt ledger.
    pub fn open(project_dir: &Path, audit_key: Vec<u8>) -> Result<FileStore, StoreError> {
        FileStore::open_with(project_dir, audit_key, StoreOptions::default())
    }

    /// [`FileStore::open`] with explicit options.
    pub fn open_with(
        project_dir: &Path,
        audit_key: Vec<u8>,
        options: StoreOptions,
    ) -> Result<FileStore, StoreError> {
        let layout = Layout::in_project(project_dir);
        layout
            .create_dirs()
            .map_err(|e| io_error(&layout.sdd, "create", &e))?;
        let lock = LedgerLock::open(&layout.lock_file())
            .map_err(|e| io_error(&layout.lock_file(), "open", &e))?;
        let ledger = LedgerFile::open(&layout.ledger_file())
            .map_err(|e| io_error(&layout.ledger_file(), "open", &e))?;
        let store = FileStore {
            layout,
            key: audit_key,
            options,
            lock,
            state: Mutex::new(State {
                ledger,
                folded: None,
                since_checkpoint: 0,
            }),
        };
        {
            let mut state = store.state();
            let _guard = store.lock.exclusive().map_err(|e| store.lock_error(&e))?;
            store.catch_up(&mut state, TailPolicy::Repair)?;
            store.maybe_checkpoint(&mut state);
        }
        Ok(store)
    }

    /// The `.sdd` directory.
    pub fn sdd_dir(&self) -> &Path {
        &self.layout.sdd
    }

    /// Writes a checkpoint of the current projection now (done on drop too, when records were
    /// folded since the last one).
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        let mut state = self.state();
        let Some(folded) = &state.folded else {
            return Ok(());
        };
        checkpoint::write(&self.layout, &self.key, folded, &state.ledger)
            .map_err(|e| io_error(&self.layout.checkpoint_file(), "write", &e))?;
        state.since_checkpoint = 0;
        Ok(())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves at worst a stale `folded`, which every
        // operation re-validates against the file; keep serving.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_error(&self, e: &std::io::Error) -> StoreError {
        StoreError::Unavailable(format!(
            "cannot lock {}: {e}",
            self.layout.lock_file().display()
        ))
    }

    /// Folds what is new in the file (the caller holds the file lock matching `policy`). After
    /// a failure the cached projection is dropped, so the next call rebuilds it.
    fn catch_up(&self, state: &mut State, policy: TailPolicy) -> Result<CatchUp, StoreError> {
        let mut folded = match state.folded.take() {
            Some(f) => f,
            None => {
                let loaded = checkpoint::load(&self.layout, &self.key, &state.ledger);
                state.since_checkpoint = 0;
                loaded.unwrap_or_else(Folded::genesis)
            }
        };
        let done = state.ledger.catch_up(&mut folded, &self.key, policy)?;
        state.since_checkpoint += done.records;
        state.folded = Some(folded);
        Ok(done)
    }

    /// Writes a checkpoint when enough records were folded since the last one. A failure is
    /// only logged: the checkpoint is an optimisation and the records are already durable.
    fn maybe_checkpoint(&self, state: &mut State) {
        if state.since_checkpoint < self.options.checkpoint_every {
            return;
        }
        let Some(folded) = &state.folded else { return };
        match checkpoint::write(&self.layout, &self.key, folded, &state.ledger) {
            Ok(()) => state.since_checkpoint = 0,
            Err(e) => crate::log_line!(
                "bernstein: cannot write {}: {e}",
                self.layout.checkpoint_file().display()
            ),
        }
    }

    /// The append's bytes and the length of its last line, after checking that the records
    /// extend `snapshot` as whole transactions and that every line reads back as a valid record
    /// under this store's key (what is written must be what readers accept).
    fn checked_bytes(
        &self,
        snapshot: &Snapshot,
        records: &[Record],
    ) -> Result<(Vec<u8>, u64), StoreError> {
        let refuse = |reason: String| {
            StoreError::Unavailable(format!("refused a malformed append: {reason}"))
        };
        check_extends(snapshot, records)
            .map_err(|(i, reason)| refuse(format!("record {}: {reason}", i + 1)))?;
        let mut bytes = Vec::new();
        let mut last_len = 0;
        for rec in records {
            let line = rec.to_line();
            Record::parse_line(&line[..line.len() - 1], Some(&self.key))
                .map_err(|e| refuse(format!("record {} would not read back: {e}", rec.seq)))?;
            bytes.extend_from_slice(&line);
            last_len = line.len() as u64;
        }
        Ok((bytes, last_len))
    }
}

impl Store for FileStore {
    fn snapshot(&self) -> Result<Arc<Snapshot>, StoreError> {
        let mut state = self.state();
        let len = state
            .ledger
            .size()
            .map_err(|e| io_error(&self.layout.ledger_file(), "stat", &e))?;
        if let Some(folded) = &state.folded
            && folded.offset == len
        {
            return Ok(folded.snapshot.clone());
        }
        let _guard = self.lock.shared().map_err(|e| self.lock_error(&e))?;
        self.catch_up(&mut state, TailPolicy::Ignore)?;
        let folded = state
            .folded
            .as_ref()
            .expect("catch_up leaves a folded state on success");
        Ok(folded.snapshot.clone())
    }

    fn compare_and_append(&self, append: &Append) -> Result<AppendResult, StoreError> {
        let mut state = self.state();
        let _guard = self.lock.exclusive().map_err(|e| self.lock_error(&e))?;
        if !state
            .ledger
            .still_at_path()
            .map_err(|e| io_error(&self.layout.ledger_file(), "stat", &e))?
        {
            return Err(StoreError::Unavailable(format!(
                "{} was removed or replaced while in use; restart the server",
                self.layout.ledger_file().display()
            )));
        }
        self.catch_up(&mut state, TailPolicy::Repair)?;
        let state = &mut *state;
        let folded = state
            .folded
            .as_mut()
            .expect("catch_up leaves a folded state on success");
        let current = folded.snapshot.position;
        if current != append.expected {
            return Ok(AppendResult::Conflict { current });
        }
        if append.records.is_empty() {
            return Ok(AppendResult::Committed(current));
        }
        let (bytes, last_len) = self.checked_bytes(&folded.snapshot, &append.records)?;
        state
            .ledger
            .append_at(folded.offset, &bytes)
            .map_err(|e| io_error(&self.layout.ledger_file(), "append", &e))?;
        // Durable now. Fold our own records (checked above) without re-reading them.
        let snapshot = Arc::make_mut(&mut folded.snapshot);
        for rec in &append.records {
            snapshot
                .apply(rec)
                .expect("check_extends accepted these records, so they extend the snapshot");
        }
        folded.offset += bytes.len() as u64;
        folded.last_line_start = folded.offset - last_len;
        folded.lines += append.records.len() as u64;
        let position = snapshot.position;
        debug_assert_eq!(position, append.new_position());
        state.since_checkpoint += append.records.len() as u64;
        self.maybe_checkpoint(state);
        Ok(AppendResult::Committed(position))
    }
}

impl Drop for FileStore {
    fn drop(&mut self) {
        let dirty = self.state().since_checkpoint > 0;
        if dirty && let Err(e) = self.checkpoint() {
            crate::log_line!("bernstein: {e}");
        }
    }
}

fn io_error(path: &Path, what: &str, e: &std::io::Error) -> StoreError {
    StoreError::Io(format!("{what} {}: {e}", path.display()))
}

/// Creates `.sdd/` in `project_dir` explicitly (ledger, keys with the audit key, runtime) and
/// returns its path. Idempotent.
pub fn init(project_dir: &Path) -> Result<PathBuf, StoreError> {
    let layout = Layout::in_project(project_dir);
    layout
        .create_dirs()
        .map_err(|e| io_error(&layout.sdd, "create", &e))?;
    let key = crate::keys::load_or_create_audit_key(&layout.sdd)
        .map_err(|e| StoreError::Io(e.to_string()))?;
    drop(FileStore::open(project_dir, key)?);
    Ok(layout.sdd)
}

#[cfg(test)]
mod tests;
