//! Checkpoints written off the request path. An append that makes a checkpoint due hands the
//! folded state to this store's writer thread (a clone is O(1): the projection's maps are
//! persistent) and returns; the thread syncs the ledger, serializes, writes and renames, while
//! requests go on. A state handed over while one is being written replaces any older one still
//! queued, so at most one write runs and one waits. At a million records a checkpoint is
//! hundreds of megabytes: written under the store's lock, every 5,000th append stalled for
//! seconds.
//!
//! The writer then rests: after a write that took `d`, it is not [`Checkpointer::ready`] for
//! `d × rest` (`StoreOptions::checkpoint_rest`), and the store hands nothing over meanwhile.
//! Under a write load that makes checkpoints due faster than they are written, they take at
//! most `1 / (1 + rest)` of one core instead of all of it, and no state waits in the queue
//! pinning an old projection (while one is held, every append copies the map paths it folds).

use std::fs::File;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use bernstein_ledger::time::Clock;

use super::Checkpointed;
use super::checkpoint;
use super::layout::Layout;
use super::ledger_file::Folded;
use crate::clock::SystemClock;

#[derive(Debug, Default)]
struct Slot<F: Checkpointed> {
    /// The newest state handed over and not yet started.
    queued: Option<Folded<F>>,
    busy: bool,
    stop: bool,
    /// Until when the writer rests after its last write.
    rest_until: Option<Instant>,
    /// When (wall-clock ms) the last write finished, and the records it covered.
    written: Option<(u64, u64)>,
}

#[derive(Debug)]
struct Shared<F: Checkpointed> {
    slot: Mutex<Slot<F>>,
    changed: Condvar,
    layout: Layout,
    key: Vec<u8>,
    /// A handle of the ledger file, synced before each write.
    ledger: File,
}

/// The writer thread of one store.
#[derive(Debug)]
pub struct Checkpointer<F: Checkpointed> {
    shared: Arc<Shared<F>>,
    thread: Option<JoinHandle<()>>,
}

fn lock<F: Checkpointed>(m: &Mutex<Slot<F>>) -> MutexGuard<'_, Slot<F>> {
    // Every update is a single assignment: a panic cannot leave the slot torn.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<F: Checkpointed> Checkpointer<F> {
    /// Starts the writer of checkpoints of the ledger `ledger` (a handle of its file), resting
    /// `rest` times a write's duration after each.
    pub fn start(
        layout: Layout,
        key: Vec<u8>,
        ledger: File,
        rest: u32,
    ) -> std::io::Result<Checkpointer<F>> {
        let shared = Arc::new(Shared {
            slot: Mutex::default(),
            changed: Condvar::new(),
            layout,
            key,
            ledger,
        });
        let s = shared.clone();
        let thread = thread::Builder::new()
            .name("bernstein-checkpoint".into())
            .spawn(move || run(&s, rest))?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }

    /// Whether the writer would start a state handed over now: idle, nothing queued, and its
    /// rest after the last write over.
    pub fn ready(&self) -> bool {
        let slot = lock(&self.shared.slot);
        !slot.busy
            && slot.queued.is_none()
            && slot.rest_until.is_none_or(|until| until <= Instant::now())
    }

    /// Queues `folded` to be written (replacing an older state not yet started).
    pub fn hand_over(&self, folded: Folded<F>) {
        lock(&self.shared.slot).queued = Some(folded);
        self.shared.changed.notify_all();
    }

    /// Drops what is queued and waits until no write runs (the caller then writes a newer
    /// checkpoint itself, which an older one must not replace afterwards).
    pub fn quiesce(&self) {
        let mut slot = lock(&self.shared.slot);
        slot.queued = None;
        while slot.busy {
            slot = self
                .shared
                .changed
                .wait(slot)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Waits until what was handed over is written.
    pub fn flush(&self) {
        let mut slot = lock(&self.shared.slot);
        while slot.busy || slot.queued.is_some() {
            slot = self
                .shared
                .changed
                .wait(slot)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// When the last checkpoint this thread wrote finished (wall-clock ms), and its records.
    pub fn written(&self) -> Option<(u64, u64)> {
        lock(&self.shared.slot).written
    }
}

impl<F: Checkpointed> Drop for Checkpointer<F> {
    fn drop(&mut self) {
        self.flush();
        lock(&self.shared.slot).stop = true;
        self.shared.changed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run<F: Checkpointed>(shared: &Shared<F>, rest: u32) {
    loop {
        let folded = {
            let mut slot = lock(&shared.slot);
            loop {
                if let Some(f) = slot.queued.take() {
                    slot.busy = true;
                    break f;
                }
                if slot.stop {
                    return;
                }
                slot = shared
                    .changed
                    .wait(slot)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        let began = Instant::now();
        let written = checkpoint::write(&shared.layout, &shared.key, &folded, &shared.ledger);
        let rest_until = Instant::now() + began.elapsed().saturating_mul(rest);
        if let Err(e) = &written {
            // The checkpoint is an optimisation and the records are durable: say so and go on.
            crate::log_line!(
                "bernstein: cannot write {}: {e}",
                shared.layout.checkpoint_file().display()
            );
        }
        let mut slot = lock(&shared.slot);
        slot.busy = false;
        slot.rest_until = Some(rest_until);
        if written.is_ok() {
            slot.written = Some((SystemClock.now().0, folded.lines));
        }
        shared.changed.notify_all();
    }
}
