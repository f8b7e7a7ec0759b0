//! The waiting room: HTTP requests whose answer waits for the ledger (a long poll, an open
//! `tasks/result`), put aside by their connection so that they hold no thread. One thread per
//! server watches them all: at the end of each one's nap it reads the ledger head once for
//! every request due, lets the engine look (has the head moved? must the wait end?) and hands
//! the request back to its transport ([`Parked::wake`]) only when there is IO to do: a new
//! round, the answer. So a waiting request costs its memory and one look per nap.
//!
//! Everything decided here is the engine's ([`Drive::look`](crate::driver::Drive::look)); the
//! room only keeps time and reads the head.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::driver::{Backend, Look};

use super::service::Waiting;

/// The shortest time between two sweeps of the room, so that thousands of naps ending at
/// slightly different instants cost one sweep, not thousands.
const TICK: Duration = Duration::from_millis(5);

/// How long the room's thread sleeps with nothing to watch (a request arriving wakes it).
const IDLE: Duration = Duration::from_secs(1);

/// The transport's end of a waiting request: its connection, put aside.
pub trait Parked: Send {
    /// Whether the peer left (cheap and non-blocking: it is asked at the end of every nap).
    fn gone(&self) -> bool;
    /// Hands the request back to a thread that may block, to be resumed with
    /// [`HttpService::resume`](super::HttpService::resume).
    fn wake(self: Box<Self>, waiting: Box<Waiting>);
}

struct Sleeper {
    waiting: Box<Waiting>,
    parked: Box<dyn Parked>,
}

struct Room {
    backend: Backend,
    sleepers: Mutex<Vec<Sleeper>>,
    changed: Condvar,
    /// Set at shutdown: every waiting request is answered as things stand.
    settling: AtomicBool,
}

/// A server's waiting room; its thread starts with the first request put in it and runs
/// until shutdown.
pub struct WaitRoom {
    room: Arc<Room>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for WaitRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitRoom")
            .field("waiting", &self.len())
            .finish()
    }
}

impl WaitRoom {
    pub fn new(backend: Backend) -> WaitRoom {
        WaitRoom {
            room: Arc::new(Room {
                backend,
                sleepers: Mutex::new(Vec::new()),
                changed: Condvar::new(),
                settling: AtomicBool::new(false),
            }),
            thread: Mutex::new(None),
        }
    }

    /// Puts a waiting request aside until its engine has IO to do. After shutdown it is
    /// answered at once instead.
    pub fn park(&self, waiting: Box<Waiting>, parked: Box<dyn Parked>) {
        let sleeper = Sleeper { waiting, parked };
        {
            // Checked under the lock: shutdown sets the flag before it takes what is left, so
            // a request is either taken by shutdown or sees the flag, never stranded.
            let mut sleepers = self.room.lock();
            if self.room.settling.load(Ordering::SeqCst) {
                drop(sleepers);
                return self.room.settle(sleeper);
            }
            sleepers.push(sleeper);
        }
        self.room.changed.notify_one();
        let mut thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner);
        if thread.is_none() {
            let room = self.room.clone();
            match thread::Builder::new()
                .name("bernstein-http-waits".into())
                .spawn(move || room.watch())
            {
                Ok(handle) => *thread = Some(handle),
                Err(e) => {
                    // Without its thread nobody would look at the requests: answer them now.
                    bernstein_store_file::log_line!(
                        "bernstein http: cannot start the waiting room: {e}"
                    );
                    drop(thread);
                    self.room.settling.store(true, Ordering::SeqCst);
                    let all = std::mem::take(&mut *self.room.lock());
                    for s in all {
                        self.room.settle(s);
                    }
                }
            }
        }
    }

    /// How many requests wait in the room.
    pub fn len(&self) -> usize {
        self.room.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Answers every waiting request as things stand (each is handed back to its transport
    /// to be resumed) and stops the thread; requests put aside later are answered at once.
    pub fn shutdown(&self) {
        self.room.settling.store(true, Ordering::SeqCst);
        self.room.changed.notify_all();
        let handle = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
        let rest = std::mem::take(&mut *self.room.lock());
        for s in rest {
            self.room.settle(s);
        }
    }
}

impl Drop for WaitRoom {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Sleeper {
    fn wake(self) {
        self.parked.wake(self.waiting);
    }

    fn due(&self, now: Instant) -> bool {
        self.waiting.wakes_at().is_none_or(|at| at <= now)
    }
}

impl Room {
    fn lock(&self) -> MutexGuard<'_, Vec<Sleeper>> {
        // Pushes and whole-vector swaps only: a panic cannot leave it half-changed.
        self.sleepers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets the engine end the wait now (it answers as things stand) and hands the request
    /// back to its transport for the answer.
    fn settle(&self, mut s: Sleeper) {
        let env = self.backend.env();
        if let Ok(snapshot) = env.store.snapshot() {
            let parked = &s.parked;
            let _ = s.waiting.look(&env, &snapshot, &|| parked.gone(), true);
        }
        s.wake();
    }

    /// The room's thread: sweeps the requests whose nap ended, then sleeps until the next
    /// nap ends (at least [`TICK`]) or a request arrives.
    fn watch(&self) {
        let env = self.backend.env();
        let mut sleepers = self.lock();
        loop {
            let settling = self.settling.load(Ordering::SeqCst);
            if settling {
                return;
            }
            let now = Instant::now();
            if sleepers.iter().any(|s| s.due(now)) {
                let batch = std::mem::take(&mut *sleepers);
                drop(sleepers);
                // One read of the head for every request due in this sweep.
                let head = env.store.snapshot();
                let mut keep = Vec::with_capacity(batch.len());
                for mut s in batch {
                    if !s.due(now) {
                        keep.push(s);
                        continue;
                    }
                    let look = match &head {
                        Ok(head) => {
                            let parked = &s.parked;
                            s.waiting.look(&env, head, &|| parked.gone(), false)
                        }
                        // The resumed request reads the store itself and reports the failure.
                        Err(_) => Look::Work,
                    };
                    match look {
                        Look::Asleep => keep.push(s),
                        Look::Work => s.wake(),
                    }
                }
                sleepers = self.lock();
                sleepers.extend(keep);
                continue;
            }
            let next = sleepers.iter().filter_map(|s| s.waiting.wakes_at()).min();
            let timeout = match next {
                Some(at) => at.saturating_duration_since(now).max(TICK),
                None if sleepers.is_empty() => IDLE,
                None => TICK,
            };
            sleepers = self
                .changed
                .wait_timeout(sleepers, timeout)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
