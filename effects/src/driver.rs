//! One job driven to its answer on the caller's thread: the core's request state machine
//! ([`Request`]) with every output performed here and now (snapshots, compare-and-append,
//! host requests, the fsync, the turn, naps while a pending answer waits). For callers that
//! serve one message or command at a time: the command line's operator commands
//! ([`commit_job`]), an in-process worker and the benchmarks ([`serve_message`]). Servers run
//! the engine of all their connections instead (`bernstein_core::engine::Engine`, driven by a
//! runtime). Every decision is the engine's; this loop only does the IO, so it never releases
//! an answer whose records are not durable.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Instant;

use bernstein_core::engine::WaitSlots;
use bernstein_core::engine::request::{Input, Output};
use bernstein_core::engine::turns::{Grant, Ticket, Turns};
use bernstein_core::engine::{Finished, Job, Message, Moment, Request};
use bernstein_core::ledger::{Store, StoreError};
use bernstein_core::protocol::TransportFacts;
use bernstein_domain::Projection;
use bernstein_domain::bound::Server;

pub use bernstein_core::engine::{DEFAULT_WAIT, MAX_ATTEMPTS, Served, Stop, WaitPolicy};

pub use crate::host::HostIo;
pub use bernstein_core::time::Clock;

/// Serves one message: snapshot → core → compare-and-append (re-run from a fresh snapshot on
/// conflict) → settle → render with the measured latency. `Err` only for store failures,
/// after which nothing was acknowledged. Pending answers wait under [`DEFAULT_WAIT`].
pub fn serve_message(
    server: &Server,
    env: &Env<'_>,
    bytes: &[u8],
    facts: &TransportFacts,
) -> Result<Served, StoreError> {
    serve_message_with(server, env, bytes, facts, &DEFAULT_WAIT, &|| None)
}

/// [`serve_message`] with an explicit wait policy and a stop hook (asked before every look at
/// the store while an answer is pending). Notifications come back in
/// [`Served::notifications`], before the response.
pub fn serve_message_with(
    server: &Server,
    env: &Env<'_>,
    bytes: &[u8],
    facts: &TransportFacts,
    wait: &WaitPolicy,
    stop: &dyn Fn() -> Option<Stop>,
) -> Result<Served, StoreError> {
    // Read once: every run of the request serves this value.
    let message = server.read_message(bytes);
    let job = Message {
        server,
        message: &message,
        facts,
    };
    let notes = std::cell::RefCell::new(Vec::new());
    let finished = drive(env, job, wait, stop, &|n| {
        notes.borrow_mut().push(n.to_vec())
    })?;
    let mut served = finished.served;
    served.notifications = notes.into_inner();
    Ok(served)
}

/// Commits what `job` decides (an operator's command from the command line) through the same
/// request state machine as every message: decided on a fresh snapshot, re-run on a lost
/// race, durable before this returns. Such jobs never wait.
pub fn commit_job(
    env: &Env<'_>,
    job: &mut dyn Job<Fold = Projection>,
) -> Result<Finished, StoreError> {
    drive(env, job, &DEFAULT_WAIT, &|| Some(Stop::Settle), &|_| {})
}

/// What a job is served against: the ledger, the clock, the host, and the turn and wait
/// slots it shares with the other callers of this driver in the process.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub store: &'a dyn Store<Projection>,
    pub clock: &'a dyn Clock,
    pub host: &'a dyn HostIo,
    pub admission: &'a Arc<Admission>,
}

/// The owned store, clock and host a server is built from.
#[derive(Clone)]
pub struct Backend {
    pub store: Arc<dyn Store<Projection>>,
    pub clock: Arc<dyn Clock>,
    pub host: Arc<dyn HostIo>,
    /// The turn and the wait slots of this driver's callers.
    pub admission: Arc<Admission>,
}

impl Backend {
    pub fn new(
        store: Arc<dyn Store<Projection>>,
        clock: Arc<dyn Clock>,
        host: Arc<dyn HostIo>,
    ) -> Backend {
        Backend {
            store,
            clock,
            host,
            admission: Arc::new(Admission::new()),
        }
    }

    pub fn env(&self) -> Env<'_> {
        Env {
            store: &*self.store,
            clock: &*self.clock,
            host: &*self.host,
            admission: &self.admission,
        }
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Backend")
    }
}

/// Drives `job` to its answer on this thread, napping here while it waits.
fn drive<J: Job<Fold = Projection>>(
    env: &Env<'_>,
    job: J,
    wait: &WaitPolicy,
    stop: &dyn Fn() -> Option<Stop>,
    notify: &dyn Fn(&[u8]),
) -> Result<Finished, StoreError> {
    let origin = Instant::now();
    let now = || Moment {
        mono: origin.elapsed(),
        wall: env.clock.now(),
    };
    let mut request = Request::new(job, *wait, seed());
    let mut place = Place::new(env.admission.clone());
    request.start(now());
    loop {
        let Some(output) = request.poll_output() else {
            return Err(StoreError::Unavailable(
                "the request engine stalled without an answer".into(),
            ));
        };
        let input = match output {
            Output::ReadSnapshot => {
                // Dropped before the append, so the store can fold into it without a copy.
                let snapshot = env.store.snapshot_unsettled()?;
                request.handle_input(now(), Input::Snapshot(&snapshot));
                continue;
            }
            Output::Append(append) => {
                Input::Appended(env.store.compare_and_append_unsettled(&append)?)
            }
            Output::Host(host) => Input::Host(env.host.perform(&host)),
            Output::TakeTurn {
                only_if_contended,
                contend,
            } => Input::Turn {
                held: place.take(only_if_contended, contend),
            },
            Output::LeaveTurn { uncount } => {
                place.leave(uncount);
                continue;
            }
            Output::Pause(d) => {
                std::thread::sleep(d);
                Input::Paused
            }
            Output::Settle => {
                env.store.settle()?;
                Input::Settled
            }
            Output::Notify(n) => {
                notify(&n);
                continue;
            }
            Output::ClaimWaitSlot => Input::WaitSlot {
                granted: place.claim_wait(),
            },
            Output::ReleaseWaitSlot => {
                place.release_wait();
                continue;
            }
            Output::AskStop => Input::Stop(stop()),
            Output::WaitForHead { until, nap } => {
                if !env.store.wait_for_change(&until.after, nap) {
                    std::thread::sleep(nap);
                }
                let moved = until.moved(&*env.store.snapshot()?);
                Input::Looked { moved }
            }
            Output::Failed(e) => return Err(e),
            Output::Done(finished) => return Ok(finished),
        };
        request.handle_input(now(), input);
    }
}

/// A random seed for one request's jittered pauses.
fn seed() -> u64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes)
}

/// What the callers of this driver in one process share, as the engine decides it: the turn
/// ([`Turns`]) behind a lock, with a condition its queued writers wait on, and the wait
/// slots ([`WaitSlots`]).
#[derive(Debug)]
pub struct Admission {
    turns: Mutex<Turns>,
    handed: Condvar,
    /// [`Turns::contended`] as last seen, so uncontended requests skip the lock.
    contended: AtomicUsize,
    waits: Mutex<WaitSlots>,
}

impl Admission {
    /// No cap on waits.
    pub const fn new() -> Admission {
        Admission {
            turns: Mutex::new(Turns::new()),
            handed: Condvar::new(),
            contended: AtomicUsize::new(0),
            waits: Mutex::new(WaitSlots::new()),
        }
    }

    fn waits(&self) -> std::sync::MutexGuard<'_, WaitSlots> {
        // Every update is one call on the table, which leaves it whole: keep serving.
        self.waits.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for Admission {
    fn default() -> Admission {
        Admission::new()
    }
}

/// One job's place at its [`Admission`]: its ticket for the turn and its wait slot; dropping it
/// gives both back (a job that ends with a store error included).
struct Place {
    admission: Arc<Admission>,
    ticket: Option<Ticket>,
    counted: bool,
    slot: bool,
}

impl Place {
    fn new(admission: Arc<Admission>) -> Place {
        Place {
            admission,
            ticket: None,
            counted: false,
            slot: false,
        }
    }

    /// Blocks until the engine's request for the turn is granted; whether it is held.
    fn take(&mut self, only_if_contended: bool, contend: bool) -> bool {
        if only_if_contended && !contend && self.admission.contended.load(Ordering::Acquire) == 0 {
            return false;
        }
        let admission = self.admission.clone();
        let mut turns = admission
            .turns
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let ticket = *self.ticket.get_or_insert_with(|| turns.ticket());
        let grant = turns.request(ticket, only_if_contended, contend);
        self.counted |= contend;
        admission
            .contended
            .store(turns.contended(), Ordering::Release);
        match grant {
            Grant::NotNeeded => false,
            Grant::Granted => true,
            Grant::Queued => {
                while !turns.holds(ticket) {
                    turns = admission
                        .handed
                        .wait(turns)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                true
            }
        }
    }

    fn leave(&mut self, uncount: bool) {
        let Some(ticket) = self.ticket else { return };
        let mut turns = self
            .admission
            .turns
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        turns.leave(ticket, uncount);
        let contended = turns.contended();
        drop(turns);
        self.counted &= !uncount;
        self.admission.contended.store(contended, Ordering::Release);
        self.admission.handed.notify_all();
    }

    fn claim_wait(&mut self) -> bool {
        self.slot = self.admission.waits().claim(None::<IpAddr>);
        self.slot
    }

    fn release_wait(&mut self) {
        if std::mem::take(&mut self.slot) {
            self.admission.waits().release(None);
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.leave(self.counted);
        self.release_wait();
    }
}

#[cfg(test)]
mod tests;
