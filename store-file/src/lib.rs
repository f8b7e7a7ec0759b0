//! The embedded ledger store of the Bernstein MCP server: `.sdd/` in the project directory
//! (layout in docs/FORMATS.md), its keys and the offline commands over it. It depends on the
//! ledger crate and external crates only (never on the protocol, the domain or a runtime): the
//! store is generic over the fold of its snapshots and checkpoints ([`Checkpointed`]).
//!
//! - [`FileStore`]: the ledger's [`Store`] over `.sdd/ledger/`; [`OpeningStore`] opens one in
//!   the background, [`FailedStore`] stands in for one that does not verify.
//! - [`keys`]: the audit key and the signing seed in `.sdd/keys/`.
//! - [`verify_cmd`], [`upgrade_cmd`]: `bernstein audit verify` and `bernstein ledger upgrade`.
//!
//! [`FileStore`] serves one append-only file, shared by any number of processes on one machine:
//! - compare-and-append takes the exclusive file lock, first folds what other processes appended
//!   (cutting a torn tail a crashed writer left), refuses a stale `expected` head, then writes
//!   all records of the request with one positional write, releases the locks and then waits
//!   until an fsync has covered its bytes (group commit: concurrent writers of one process
//!   share fsyncs, see [`group_commit`]; the engine waits only after giving up its turn, through
//!   [`Store::compare_and_append_unsettled`] and [`Store::settle`]);
//! - snapshots take the shared lock only when the file grew, and fold just the new bytes, so a
//!   request costs the same at any ledger size;
//! - checkpoints of the folded projection let an open skip the folded prefix; the appends that
//!   make one due hand it to a writer thread ([`checkpointer`]), so no request waits for one;
//! - a snapshot is handed out only once the records it reflects are durable (a reader may fold
//!   records a writer has written but not yet fsynced; it waits for, or performs, the fsync);
//!   the engine's unsettled snapshot skips that wait and settles before answering without an
//!   append.
//! - every append, and every wait for durability, first checks that the ledger's path still
//!   names the file the store holds open: a ledger removed or replaced behind the store's back
//!   is no longer the ledger, so nothing is written to it once that is seen, nothing made
//!   durable in it is acknowledged, and nothing is served from then on.
//!
//! It must never acknowledge an append before it is durable, never answer from records that
//! are not, never cut a byte it verified, and never hand out a snapshot built from unverified
//! records.

mod batch;
pub mod checkpoint;
pub mod checkpointer;
mod failed;
pub mod group_commit;
pub mod keys;
pub mod layout;
pub mod ledger_file;
pub mod lock;
pub mod open_check;
mod opening;
mod scan;
pub mod scrub;
pub mod temp_files;
pub mod upgrade_cmd;
pub mod verify_cmd;

/// Test support (the `test-support` feature): a store that loses its first appends' races.
#[cfg(any(test, feature = "test-support"))]
pub mod racing;
/// Test support (the `test-support` feature): a store refusing everything after a finding.
#[cfg(any(test, feature = "test-support"))]
pub mod refusing;
/// Test support (the `test-support` feature): a scratch directory removed on drop.
#[cfg(any(test, feature = "test-support"))]
pub mod test_dir;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bernstein_ledger::line::RecordKey;
use bernstein_ledger::time::Clock as _;
use bernstein_ledger::{
    Append, AppendResult, Fold, LedgerPosition, Snapshot, Store, StoreError, StoreFacts,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use self::batch::WriteStats;
use self::checkpointer::Checkpointer;
pub use self::failed::FailedStore;
use self::group_commit::{GroupCommit, SyncStats};
use self::layout::Layout;
use self::ledger_file::{CatchUp, Folded, LedgerFile, Place, TailPolicy};
use self::lock::LedgerLock;
pub use self::opening::{Opened, OpeningStore};
use bernstein_os::clock::SystemClock;

/// Tunables of a [`FileStore`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// Write a checkpoint once this many records were folded since the last one (and at least
    /// a sixteenth of the ledger's records: 62,500 at a million).
    pub checkpoint_every: u64,
    /// After writing a checkpoint that took `d`, the writer rests `d × checkpoint_rest`: a
    /// checkpoint that falls due meanwhile waits for a later append (or the store's close), so
    /// checkpoints take at most `1 / (1 + checkpoint_rest)` of one core under any write load.
    pub checkpoint_rest: u32,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            checkpoint_every: 5000,
            checkpoint_rest: 4,
        }
    }
}

/// What a file store folds its records into: a [`Fold`] it can also checkpoint (serialize, and
/// read back on open). Any such fold is one. A directory's checkpoint is read back into the
/// fold of whoever opens it next, so every process opening one `.sdd/` uses the same fold (the
/// server's: the domain's projection).
pub trait Checkpointed: Fold + Serialize + DeserializeOwned {}

impl<F: Fold + Serialize + DeserializeOwned> Checkpointed for F {}

/// The `.sdd/` file store, folding its records into `F`.
#[derive(Debug)]
pub struct FileStore<F: Checkpointed> {
    layout: Layout,
    key: Vec<u8>,
    /// The same key, prepared for checking many records.
    record_key: RecordKey,
    options: StoreOptions,
    lock: LedgerLock,
    state: Mutex<State<F>>,
    /// The durable offset of the ledger file; taken after `state` is released, never while.
    commit: GroupCommit<File>,
    /// Where the ledger file was opened: checked before each append and after each wait for
    /// durability.
    place: Place,
    /// The ledger path was found to name another file, or none: nothing more is served.
    displaced: AtomicBool,
    /// Writes the checkpoints appends make due, off the request path.
    checkpointer: Checkpointer<Folded<F>>,
    /// What the scrub found, if it found the ledger changed under the server: nothing more is
    /// served.
    finding: bernstein_os::scrub::Finding,
    /// Appends waiting for whoever holds `state` to place them ([`batch`]).
    queued: batch::Queue,
    writes: batch::Writes,
    /// The seq of the newest head this process folded: an appender decided on it renders its
    /// lines before the lock, where they will most likely go as they are ([`batch`]).
    seen: AtomicU64,
}

#[derive(Debug)]
struct State<F: Checkpointed> {
    ledger: LedgerFile,
    /// `None` after a failed fold: rebuilt (from the checkpoint, else from the start) next time.
    folded: Option<Folded<F>>,
    /// Records folded since the last checkpoint this process wrote or loaded.
    since_checkpoint: u64,
    /// When (wall-clock ms) this process last wrote or loaded a checkpoint, and the records
    /// it covers.
    checkpoint: Option<(u64, u64)>,
}

impl<F: Checkpointed> State<F> {
    /// Notes a checkpoint of `records` records written or loaded now.
    fn checkpointed(&mut self, records: u64) {
        self.since_checkpoint = 0;
        if records > 0 {
            self.checkpoint = Some((SystemClock.now().0, records));
        }
    }
}

impl<F: Checkpointed> FileStore<F> {
    /// Opens (creating `.sdd/` on first use) the store of `project_dir`. Records on keyed
    /// streams are verified with `audit_key`. Cuts a torn tail; refuses a corrupt ledger.
    pub fn open(project_dir: &Path, audit_key: Vec<u8>) -> Result<FileStore<F>, StoreError> {
        FileStore::open_with(project_dir, audit_key, StoreOptions::default())
    }

    /// [`FileStore::open`] with explicit options.
    pub fn open_with(
        project_dir: &Path,
        audit_key: Vec<u8>,
        options: StoreOptions,
    ) -> Result<FileStore<F>, StoreError> {
        let layout = Layout::in_project(project_dir);
        layout
            .create_dirs()
            .map_err(|e| io_error(&layout.sdd, "create", &e))?;
        match checkpoint::sweep_stale(&layout) {
            Ok(0) => {}
            Ok(n) => bernstein_os::log_line!(
                "bernstein: removed {n} checkpoint temp file(s) left in {} by a writer stopped mid-write",
                layout.ledger_dir().display()
            ),
            Err(e) => bernstein_os::log_line!(
                "bernstein: cannot look for stale checkpoint temp files in {}: {e}",
                layout.ledger_dir().display()
            ),
        }
        let lock = LedgerLock::open(&layout.lock_file())
            .map_err(|e| io_error(&layout.lock_file(), "open", &e))?;
        let ledger = LedgerFile::open(&layout.ledger_file())
            .map_err(|e| io_error(&layout.ledger_file(), "open", &e))?;
        let handle = || {
            ledger
                .sync_handle()
                .map_err(|e| io_error(&layout.ledger_file(), "open", &e))
        };
        let commit = GroupCommit::new(handle()?);
        let place = ledger.place();
        let checkpointer = {
            let (layout, key, ledger) = (layout.clone(), audit_key.clone(), handle()?);
            Checkpointer::start(
                options.checkpoint_rest,
                Box::new(move |folded: &Folded<F>| {
                    checkpoint::write(&layout, &key, folded, &ledger)
                        .map(|()| folded.lines)
                        .map_err(|e| {
                            format!("cannot write {}: {e}", layout.checkpoint_file().display())
                        })
                }),
            )
            .map_err(|e| StoreError::Io(format!("start the checkpoint writer: {e}")))?
        };
        let store = FileStore {
            checkpointer,
            layout,
            record_key: RecordKey::new(&audit_key),
            key: audit_key,
            options,
            lock,
            commit,
            place,
            displaced: AtomicBool::new(false),
            finding: bernstein_os::scrub::Finding::new(),
            queued: batch::Queue::default(),
            writes: batch::Writes::default(),
            seen: AtomicU64::new(0),
            state: Mutex::new(State {
                ledger,
                folded: None,
                since_checkpoint: 0,
                checkpoint: None,
            }),
        };
        {
            let mut state = store.state();
            let _guard = store.lock.exclusive().map_err(|e| store.lock_error(&e))?;
            let len = store.ledger_size(&state)?;
            store.catch_up(&mut state, TailPolicy::Repair, len)?;
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
        // An older state queued for the writer thread must not land after this one.
        self.checkpointer.quiesce();
        let write = |f: &File| checkpoint::write(&self.layout, &self.key, folded, f);
        state
            .ledger
            .sync_handle()
            .and_then(|f| write(&f))
            .map_err(|e| io_error(&self.layout.checkpoint_file(), "write", &e))?;
        let records = folded.lines;
        state.checkpointed(records);
        Ok(())
    }

    /// What group commit did so far in this process (waits that found their bytes not yet
    /// durable, fsyncs performed for them).
    pub fn sync_stats(&self) -> SyncStats {
        self.commit.stats()
    }

    /// The ledger writes this store made, and the appends they held ([`batch`]).
    pub fn write_stats(&self) -> WriteStats {
        self.writes.stats()
    }

    /// Blocks until the ledger is durable up to `end` (see [`group_commit`]), in the file its
    /// path still names.
    fn durable(&self, end: u64) -> Result<(), StoreError> {
        self.commit
            .wait_durable(end)
            .map_err(|e| self.sync_failed(&e))?;
        self.size_in_place().map(drop)
    }

    /// Refuses once an fsync failed, the ledger path was found to name another file or the
    /// scrub found the ledger changed.
    fn check_served(&self) -> Result<(), StoreError> {
        self.commit.check().map_err(|e| self.sync_failed(&e))?;
        if self.displaced.load(Ordering::Acquire) {
            return Err(self.displaced_error());
        }
        if let Some(reason) = self.finding.get() {
            return Err(StoreError::NotServed(reason.clone()));
        }
        Ok(())
    }

    /// The head folded so far (`None` before anything was folded).
    fn position_now(&self) -> Option<LedgerPosition> {
        let state = self.state();
        state.folded.as_ref().map(|f| f.snapshot.position)
    }

    /// Records a scrub's finding; whether it is the first (the first is the one kept).
    #[cfg(test)]
    fn found(&self, reason: String) -> bool {
        self.finding.set(reason).is_ok()
    }

    fn ledger_path(&self) -> PathBuf {
        self.layout.ledger_file()
    }

    fn audit_key(&self) -> &[u8] {
        &self.key
    }

    /// The ledger file's size, read by its path; refused, and nothing served from then on,
    /// once the path no longer names the file the store holds open: a ledger removed or
    /// replaced behind the store's back (a restore, a copy moved over it) is no longer the
    /// ledger. Checked before each append, so nothing is written to a displaced file, and after
    /// each wait for durability, so nothing written to one just before it was displaced is
    /// acknowledged.
    fn size_in_place(&self) -> Result<u64, StoreError> {
        match self.place.size_if_still_here() {
            Ok(Some(len)) => Ok(len),
            Ok(None) => {
                self.displaced.store(true, Ordering::Release);
                Err(self.displaced_error())
            }
            Err(e) => Err(io_error(&self.layout.ledger_file(), "stat", &e)),
        }
    }

    fn displaced_error(&self) -> StoreError {
        StoreError::NotServed(format!(
            "{} was removed or replaced while in use; restart the server",
            self.layout.ledger_file().display()
        ))
    }

    fn sync_failed(&self, e: &str) -> StoreError {
        sync_failure(&self.layout.ledger_file(), e)
    }

    fn state(&self) -> MutexGuard<'_, State<F>> {
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

    /// The ledger file's size, read through the store's handle.
    fn ledger_size(&self, state: &State<F>) -> Result<u64, StoreError> {
        state
            .ledger
            .size()
            .map_err(|e| io_error(&self.layout.ledger_file(), "stat", &e))
    }

    /// Folds what is new in the file up to `len`, its size read under the file lock matching
    /// `policy`, which the caller holds. After a failure the cached projection is dropped, so
    /// the next call rebuilds it.
    fn catch_up(
        &self,
        state: &mut State<F>,
        policy: TailPolicy,
        len: u64,
    ) -> Result<CatchUp, StoreError> {
        let mut folded = match state.folded.take() {
            Some(f) => f,
            None => {
                let resumed = self.resume_point(&state.ledger)?;
                // Resumed from the checkpoint when it holds records (else from the start).
                state.checkpointed(resumed.lines);
                resumed
            }
        };
        let done = state
            .ledger
            .catch_up(&mut folded, &self.record_key, policy, len)?;
        state.since_checkpoint += done.records;
        state.folded = Some(folded);
        Ok(done)
    }

    /// Where folding starts when nothing is folded: the checkpoint, once the ledger up to it
    /// verified and reached exactly its position (else the store refuses to open), or the
    /// start. Either way every byte of the ledger is verified before anything is served.
    fn resume_point(&self, ledger: &LedgerFile) -> Result<Folded<F>, StoreError> {
        let path = self.layout.checkpoint_file();
        let name = path.display().to_string();
        // The ledger up to the offset the checkpoint claims is verified on a second thread
        // while the checkpoint is read and authenticated: start-up costs the longer of the
        // two, not their sum. The claimed offset is only used once the authenticated one
        // agrees with it.
        let hint = checkpoint::peek_offset(&self.layout);
        let (cp, early) = std::thread::scope(|s| {
            let early =
                hint.map(|end| s.spawn(move || open_check::verify_prefix(ledger, &self.key, end)));
            let cp = checkpoint::read(&self.layout, &self.key);
            let early = early.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            (cp, early)
        });
        let cp = cp.map_err(|reason| StoreError::Corrupt {
            file: name.clone(),
            line: 1,
            seq: 0,
            reason: format!("the checkpoint cannot be trusted: {reason}"),
        })?;
        let Some(cp) = cp else {
            return Ok(Folded::genesis());
        };
        let prefix = match (hint, early) {
            (Some(end), Some(prefix)) if end == cp.folded.offset => prefix?,
            _ => open_check::verify_prefix(ledger, &self.key, cp.folded.offset)?,
        };
        open_check::check_prefix(prefix, &ledger.name(), &cp.folded, &name)?;
        Ok(if cp.reusable {
            cp.folded
        } else {
            Folded::genesis()
        })
    }

    /// Hands the folded state to the checkpoint writer when enough records were folded since
    /// the last checkpoint ([`checkpointer`]: written off the request path; a failure is only
    /// logged, as the checkpoint is an optimisation and the records are already durable).
    fn maybe_checkpoint(&self, state: &mut State<F>) {
        let Some(folded) = &state.folded else { return };
        // A checkpoint costs the whole projection: at least a sixteenth of the ledger between
        // two, and the writer's rest after each, keep that a bounded share of the work at any
        // size (a restart after a crash folds at most that much past it, plus what was
        // appended while the writer wrote and rested).
        let every = self.options.checkpoint_every.max(folded.lines / 16);
        if state.since_checkpoint < every || !self.checkpointer.ready() {
            return;
        }
        self.checkpointer.hand_over(folded.clone());
        state.since_checkpoint = 0;
    }

    /// Blocks until the checkpoints handed to the writer thread are written (tests, tools).
    pub fn flush_checkpoints(&self) {
        self.checkpointer.flush();
    }
}

impl<F: Checkpointed> Store<F> for FileStore<F> {
    fn local(&self) -> bool {
        true
    }

    fn facts(&self) -> StoreFacts {
        let state = self.state();
        let newest = state.checkpoint.max(self.checkpointer.written());
        StoreFacts {
            kind: "file",
            ledger_bytes: state.folded.as_ref().map(|f| f.offset),
            // The newer of the one this process loaded or wrote itself and the writer's last.
            checkpoint_at_ms: newest.map(|(at, _)| at),
            checkpoint_records: newest.map(|(_, records)| records),
            syncs: Some(self.commit.facts()),
        }
    }

    fn check_writable(&self) -> Result<(), StoreError> {
        self.check_served()?;
        self.size_in_place().map(drop)
    }

    fn scan_lines(&self, each: &mut dyn FnMut(&[u8]) -> bool) -> Result<(), StoreError> {
        // Up to what a snapshot would show, so a check never reads records not yet durable.
        let (_, end) = self.fold()?;
        self.durable(end)?;
        scan::lines(&self.layout.ledger_file(), end, each)
    }

    fn snapshot(&self) -> Result<Arc<Snapshot<F>>, StoreError> {
        let (snapshot, offset) = self.fold()?;
        // What was folded may have been written by a writer still waiting for its fsync (or
        // by another process): hand it out only once it is durable.
        self.durable(offset)?;
        Ok(snapshot)
    }

    fn snapshot_unsettled(&self) -> Result<Arc<Snapshot<F>>, StoreError> {
        self.check_served()?;
        Ok(self.fold()?.0)
    }

    fn settle(&self, upto: u64) -> Result<u64, StoreError> {
        let durable = self
            .commit
            .settle_to(upto)
            .map_err(|e| self.sync_failed(&e))?;
        self.size_in_place()?;
        Ok(durable)
    }

    fn compare_and_append(&self, append: &Append) -> Result<AppendResult, StoreError> {
        self.check_served()?;
        let (result, end) = self.append_locked(append)?;
        if let AppendResult::Committed(_) = result {
            // Outside the locks: other writers append while this one waits for the fsync that
            // covers its bytes, and share it.
            self.durable(end)?;
        }
        Ok(result)
    }

    fn compare_and_append_unsettled(&self, append: &Append) -> Result<AppendResult, StoreError> {
        self.check_served()?;
        // The bytes are noted with group commit (`appended`), so `settle` covers them.
        Ok(self.append_locked(append)?.0)
    }
}

impl<F: Checkpointed> FileStore<F> {
    /// The projection at the current head (folding what is new) and the file offset it
    /// reflects, noted with group commit as bytes a later fsync must cover; not yet durable.
    fn fold(&self) -> Result<(Arc<Snapshot<F>>, u64), StoreError> {
        if let Some(reason) = self.finding.get() {
            return Err(StoreError::NotServed(reason.clone()));
        }
        let mut state = self.state();
        let len = self.ledger_size(&state)?;
        let (snapshot, offset) = match &state.folded {
            Some(folded) if folded.offset == len => (folded.snapshot.clone(), folded.offset),
            _ => {
                let _guard = self.lock.shared().map_err(|e| self.lock_error(&e))?;
                // Read again under the lock: a writer that held it may have appended since.
                let len = self.ledger_size(&state)?;
                self.catch_up(&mut state, TailPolicy::Ignore, len)?;
                let folded = state
                    .folded
                    .as_ref()
                    .expect("catch_up leaves a folded state on success");
                (folded.snapshot.clone(), folded.offset)
            }
        };
        drop(state);
        self.commit.wrote(snapshot.position.seq, offset);
        self.seen.store(snapshot.position.seq, Ordering::Relaxed);
        Ok((snapshot, offset))
    }
}

impl<F: Checkpointed> Drop for FileStore<F> {
    fn drop(&mut self) {
        // A displaced ledger is no longer the directory's: its checkpoint would describe
        // another file than the one now at the path.
        let displaced = self.displaced.load(Ordering::Acquire);
        let dirty = self.state().since_checkpoint > 0;
        if dirty
            && !displaced
            && let Err(e) = self.checkpoint()
        {
            bernstein_os::log_line!("bernstein: {e}");
        }
    }
}

/// A failed fsync of the ledger at `path`: after one, no later fsync can prove the earlier
/// bytes durable ([`group_commit`]), so the store refuses everything until the process
/// restarts, and retrying does not help before that.
fn sync_failure(path: &Path, e: &str) -> StoreError {
    StoreError::NotServed(format!(
        "fsync {}: {e}; the server refuses further requests until it restarts",
        path.display()
    ))
}

fn io_error(path: &Path, what: &str, e: &std::io::Error) -> StoreError {
    StoreError::Io(format!("{what} {}: {e}", path.display()))
}

/// Creates `.sdd/` in `project_dir` explicitly (ledger, keys with the audit key, runtime) and
/// returns its path. Idempotent. `F` is the fold the directory is served with (the store may
/// write a checkpoint of it).
pub fn init<F: Checkpointed>(project_dir: &Path) -> Result<PathBuf, StoreError> {
    let layout = Layout::in_project(project_dir);
    layout
        .create_dirs()
        .map_err(|e| io_error(&layout.sdd, "create", &e))?;
    let key = crate::keys::load_or_create_audit_key(&layout.sdd)
        .map_err(|e| StoreError::Io(e.to_string()))?;
    drop(FileStore::<F>::open(project_dir, key)?);
    Ok(layout.sdd)
}

#[cfg(test)]
mod tests;
