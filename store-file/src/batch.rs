//! Appends placed in batches. An appender that finds the store busy queues its append and waits
//! for the lock; whoever holds it places every queued append after its own, in queue order, and
//! writes them all with one write under one `flock` and one check of the ledger's path. Each is
//! placed as it would be alone at that point ([`sequence::place_one`]: a read, or a write whose
//! named reads stand, after the head the earlier ones left; anything else refused when one of
//! them moved it). A write that fails fails every append of its batch and leaves the folded
//! state as it was; an append refused on its own (a conflict, a malformed record) leaves the
//! others placed. An appender decided on the newest head this process folded renders its
//! records' lines and reads them back (what is written must be what readers accept) before it
//! takes the lock; an append decided on an older head, which will most likely be sealed again
//! after a later one, is rendered under it, once.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, TryLockError};

use bernstein_ledger::sequence;
use bernstein_ledger::verify::check_extends;
use bernstein_ledger::{Append, AppendResult, Record, Snapshot, StoreError};

use super::ledger_file::{self, TailPolicy};
use super::{Checkpointed, FileStore, State, io_error};

/// An append's placement, and the offset the ledger must be durable up to before it is
/// acknowledged.
pub(crate) type Placed = Result<(AppendResult, u64), StoreError>;

/// Appends queued while another thread held the store, each with the placement it gets.
#[derive(Debug, Default)]
pub(crate) struct Queue(Mutex<Vec<Arc<Slot>>>);

#[derive(Debug)]
pub(crate) struct Slot {
    append: Append,
    lines: Option<Result<Lines, StoreError>>,
    placed: OnceLock<Placed>,
}

/// An append's lines as they go in the file, read back under the store's key, and the length
/// of the last one.
#[derive(Clone, Debug)]
pub(crate) struct Lines {
    bytes: Vec<u8>,
    last_len: u64,
}

/// What a batch writes: its bytes, the length of their last line, their lines, and the appends
/// they hold.
#[derive(Default)]
struct Bytes {
    out: Vec<u8>,
    last_len: u64,
    lines: u64,
    appends: u64,
}

/// The ledger writes of this store, and the appends they held, since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    pub writes: u64,
    pub appends: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Writes {
    writes: AtomicU64,
    appends: AtomicU64,
}

impl Writes {
    fn note(&self, appends: u64) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.appends.fetch_add(appends, Ordering::Relaxed);
    }

    pub(crate) fn stats(&self) -> WriteStats {
        WriteStats {
            writes: self.writes.load(Ordering::Relaxed),
            appends: self.appends.load(Ordering::Relaxed),
        }
    }
}

impl Queue {
    fn take(&self) -> Vec<Arc<Slot>> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn push(&self, slot: Arc<Slot>) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(slot);
    }

    /// Appends queued and not placed yet (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl<F: Checkpointed> FileStore<F> {
    /// Places `append`, with whatever others queued meanwhile, without waiting for durability.
    pub(crate) fn append_locked(&self, append: &Append) -> Placed {
        let newest = append.expected.seq == self.seen.load(Ordering::Relaxed);
        let lines = newest.then(|| self.lines(&append.records));
        let mut state = match self.state.try_lock() {
            Ok(state) => state,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                let slot = Arc::new(Slot {
                    append: append.clone(),
                    lines,
                    placed: OnceLock::new(),
                });
                self.queued.push(slot.clone());
                let mut state = self.state();
                // A holder before us placed it and filled the slot before it let go; else it
                // is still queued, and we place it with whatever else is.
                if slot.placed.get().is_none() {
                    self.place(&mut state, None);
                }
                return slot
                    .placed
                    .get()
                    .cloned()
                    .expect("the batch placed every queued append");
            }
        };
        self.place(&mut state, Some((append, &lines)))
            .expect("the batch placed its own append")
    }

    /// Places `own` (first, when there is one) and every queued append, in order, taking what
    /// is queued meanwhile too until the write; fills the queued appends' slots (before the
    /// lock goes, so a waiter that takes it next finds its placement; a failure fails them
    /// all) and returns `own`'s.
    fn place(&self, state: &mut State<F>, own: Option<Ready<'_>>) -> Option<Placed> {
        // Taken first, so that a failure before the placing fails them too.
        let mut slots = self.queued.take();
        let mut placed: Vec<Placed> = match self.place_all(state, own, &mut slots) {
            Ok((results, end)) => results.into_iter().map(|r| Ok((r?, end))).collect(),
            Err(e) => vec![Err(e); usize::from(own.is_some()) + slots.len()],
        };
        let queued = placed.split_off(usize::from(own.is_some()));
        for (slot, p) in slots.iter().zip(queued) {
            let _ = slot.placed.set(p);
        }
        placed.pop()
    }

    fn place_all(
        &self,
        state: &mut State<F>,
        own: Option<Ready<'_>>,
        slots: &mut Vec<Arc<Slot>>,
    ) -> Result<(Vec<Result<AppendResult, StoreError>>, u64), StoreError> {
        let _guard = self.lock.exclusive().map_err(|e| self.lock_error(&e))?;
        let len = self.size_in_place()?;
        self.catch_up(state, TailPolicy::Repair, len)?;
        let folded = state
            .folded
            .as_mut()
            .expect("catch_up leaves a folded state on success");
        // A queued append is folded into a copy as it is placed, so that the next one is placed
        // after it; the copy becomes the store's only once the bytes are written. An own append
        // alone (the common case) is folded after the write, in place when no request still
        // holds the projection.
        let mut work: Option<Arc<Snapshot<F>>> = None;
        let mut bytes = Bytes::default();
        let mut results = Vec::new();
        let mut pending = None;
        if let Some((append, lines)) = own {
            let (result, placed) = self.place_one(&folded.snapshot, append, lines, &mut bytes);
            results.push(result);
            pending = placed;
        }
        let mut from = 0;
        loop {
            for slot in &slots[from..] {
                let copy = work.get_or_insert_with(|| folded.snapshot.clone());
                if let Some(own) = pending.take() {
                    fold(Arc::make_mut(copy), &own);
                }
                let (result, placed) = self.place_one(copy, &slot.append, &slot.lines, &mut bytes);
                results.push(result);
                if let Some(placed) = placed {
                    fold(Arc::make_mut(copy), &placed);
                }
            }
            // Those queued meanwhile join the batch.
            from = slots.len();
            let more = self.queued.take();
            if more.is_empty() {
                break;
            }
            slots.extend(more);
        }
        if bytes.out.is_empty() {
            // Nothing written, but the callers learn of the head, which records of other
            // processes folded above may have reached: a settle of it must cover them.
            self.commit
                .wrote(folded.snapshot.position.seq, folded.offset);
            self.seen
                .store(folded.snapshot.position.seq, Ordering::Relaxed);
            return Ok((results, folded.offset));
        }
        state
            .ledger
            .write_at(folded.offset, &bytes.out)
            .map_err(|e| io_error(&self.layout.ledger_file(), "append", &e))?;
        // Written (durable once group commit says so): fold our own records (checked above)
        // without reading them back; a snapshot holding them waits for their fsync too.
        // Folded in place when no request still holds the projection, else copied
        // (`Arc::make_mut`: the copy shares the projection's persistent maps and duplicates only
        // the paths it folds).
        if let Some(work) = work {
            folded.snapshot = work;
        }
        if let Some(own) = &pending {
            fold(Arc::make_mut(&mut folded.snapshot), own);
        }
        folded.offset += bytes.out.len() as u64;
        folded.last_line_start = folded.offset - bytes.last_len;
        folded.lines += bytes.lines;
        self.commit
            .appended(folded.snapshot.position.seq, folded.offset);
        self.seen
            .store(folded.snapshot.position.seq, Ordering::Relaxed);
        self.writes.note(bytes.appends);
        state.since_checkpoint += bytes.lines;
        let end = folded.offset;
        self.maybe_checkpoint(state);
        Ok((results, end))
    }
}

impl<F: Checkpointed> FileStore<F> {
    /// Places `append` after `at`: its result, and, when it is placed with records, the records
    /// as placed (to fold), their lines added to `bytes`.
    fn place_one<'a>(
        &self,
        at: &Snapshot<F>,
        append: &'a Append,
        lines: &Option<Result<Lines, StoreError>>,
        bytes: &mut Bytes,
    ) -> (Result<AppendResult, StoreError>, Option<Cow<'a, Append>>) {
        let current = at.position;
        let Some(placed) = sequence::place_one(append, current, |s| at.stream_head(s), &self.key)
        else {
            return (Ok(AppendResult::Conflict { current }), None);
        };
        if placed.records.is_empty() {
            return (Ok(AppendResult::Committed(current)), None);
        }
        // Rendered before the lock, unless sealed again here.
        let checked = extends(at, &placed.records).and_then(|()| match (&placed, lines) {
            (Cow::Borrowed(_), Some(Ok(lines))) => Ok(Cow::Borrowed(lines)),
            _ => self.lines(&placed.records).map(Cow::Owned),
        });
        let lines = match checked {
            Ok(lines) => lines,
            Err(e) => return (Err(e), None),
        };
        bytes.out.extend_from_slice(&lines.bytes);
        bytes.last_len = lines.last_len;
        bytes.lines += placed.records.len() as u64;
        bytes.appends += 1;
        (
            Ok(AppendResult::Committed(placed.new_position())),
            Some(placed),
        )
    }

    /// The lines of `records`, each read back as a valid record under this store's key.
    pub(crate) fn lines(&self, records: &[Record]) -> Result<Lines, StoreError> {
        let mut bytes = Vec::new();
        let mut last_len = 0;
        for rec in records {
            let line = rec.to_line();
            ledger_file::check_line(&line[..line.len() - 1], &self.record_key)
                .map_err(|e| malformed(format!("record {} would not read back: {e}", rec.seq)))?;
            bytes.extend_from_slice(&line);
            last_len = line.len() as u64;
        }
        Ok(Lines { bytes, last_len })
    }
}

/// An append and its lines, when they were rendered before the lock.
type Ready<'a> = (&'a Append, &'a Option<Result<Lines, StoreError>>);

/// Whether `records` extend `snapshot` as whole transactions.
fn extends<F: Checkpointed>(snapshot: &Snapshot<F>, records: &[Record]) -> Result<(), StoreError> {
    check_extends(snapshot, records)
        .map_err(|(i, reason)| malformed(format!("record {}: {reason}", i + 1)))
}

fn malformed(reason: String) -> StoreError {
    StoreError::Unavailable(format!("refused a malformed append: {reason}"))
}

fn fold<F: Checkpointed>(snapshot: &mut Snapshot<F>, placed: &Append) {
    for rec in &placed.records {
        snapshot
            .apply(rec)
            .expect("check_extends accepted these records, so they extend the snapshot");
    }
    debug_assert_eq!(snapshot.position, placed.new_position());
}

#[cfg(test)]
mod tests;
