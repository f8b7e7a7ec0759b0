//! Checkpoints written off the request path, for any store (the file store's and PostgreSQL's).
//! A request that makes a checkpoint due hands the state to the store's writer thread (a clone
//! is O(1): the projection's maps are persistent) and goes on; the thread serializes and writes
//! it while requests are served. At a million records a checkpoint is hundreds of megabytes:
//! written under the store's lock, or by the request that made it due, it stalled that request
//! for seconds.
//!
//! The writer then rests: after a write that took `d`, it is not [`Checkpointer::ready`] for
//! `d × rest` (`StoreOptions::checkpoint_rest`), and the store hands nothing over meanwhile.
//! Under a write load that makes checkpoints due faster than they are written, they take at
//! most `1 / (1 + rest)` of one core instead of all of it, and no state waits in the queue
//! pinning an old projection (while one is held, every append copies the map paths it folds).
//! Should a state be handed over while one is written anyway, it replaces any older one still
//! queued: at most one write runs and one waits.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use bernstein_ledger::time::Clock;

use bernstein_os::clock::SystemClock;

/// What writes one checkpoint of a state: the records it covers, or why it could not (logged
/// by the writer thread; a checkpoint is an optimisation and the records are durable).
pub type WriteCheckpoint<T> = Box<dyn FnMut(&T) -> Result<u64, String> + Send>;

#[derive(Debug)]
struct Slot<T> {
    /// The newest state handed over and not yet started.
    queued: Option<T>,
    busy: bool,
    stop: bool,
    /// Until when the writer rests after its last write.
    rest_until: Option<Instant>,
    /// When (wall-clock ms) the last write finished, and the records it covered.
    written: Option<(u64, u64)>,
}

#[derive(Debug)]
struct Shared<T> {
    slot: Mutex<Slot<T>>,
    changed: Condvar,
}

/// The writer thread of one store.
#[derive(Debug)]
pub struct Checkpointer<T> {
    shared: Arc<Shared<T>>,
    thread: Option<JoinHandle<()>>,
}

fn lock<T>(m: &Mutex<Slot<T>>) -> MutexGuard<'_, Slot<T>> {
    // Every update is a single assignment: a panic cannot leave the slot torn.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<T: Send + 'static> Checkpointer<T> {
    /// Starts a writer thread that writes the states handed over with `write`, resting `rest`
    /// times a write's duration after each.
    pub fn start(rest: u32, write: WriteCheckpoint<T>) -> std::io::Result<Checkpointer<T>> {
        let shared = Arc::new(Shared {
            slot: Mutex::new(Slot {
                queued: None,
                busy: false,
                stop: false,
                rest_until: None,
                written: None,
            }),
            changed: Condvar::new(),
        });
        let s = shared.clone();
        let thread = thread::Builder::new()
            .name("bernstein-checkpoint".into())
            .spawn(move || run(&s, rest, write))?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }
}

impl<T> Checkpointer<T> {
    /// Whether the writer would start a state handed over now: idle, nothing queued, and its
    /// rest after the last write over.
    pub fn ready(&self) -> bool {
        let slot = lock(&self.shared.slot);
        !slot.busy
            && slot.queued.is_none()
            && slot.rest_until.is_none_or(|until| until <= Instant::now())
    }

    /// Queues `state` to be written (replacing an older state not yet started).
    pub fn hand_over(&self, state: T) {
        lock(&self.shared.slot).queued = Some(state);
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

impl<T> Drop for Checkpointer<T> {
    fn drop(&mut self) {
        self.flush();
        lock(&self.shared.slot).stop = true;
        self.shared.changed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run<T>(shared: &Shared<T>, rest: u32, mut write: WriteCheckpoint<T>) {
    loop {
        let state = {
            let mut slot = lock(&shared.slot);
            loop {
                if let Some(s) = slot.queued.take() {
                    slot.busy = true;
                    break s;
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
        let written = write(&state);
        let rest_until = Instant::now() + began.elapsed().saturating_mul(rest);
        if let Err(e) = &written {
            bernstein_os::log_line!("bernstein: {e}");
        }
        let mut slot = lock(&shared.slot);
        slot.busy = false;
        slot.rest_until = Some(rest_until);
        if let Ok(records) = written {
            slot.written = Some((SystemClock.now().0, records));
        }
        shared.changed.notify_all();
    }
}
