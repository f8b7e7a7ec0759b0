//! The request driver shared by every transport and both runtimes: it performs what the
//! core's request engine ([`bernstein_core::engine`]) asks for — snapshots, compare-and-append,
//! host requests, the fsync, the turn, naps while a pending answer waits — and feeds back what
//! happened. Every decision (re-runs on conflict, host rounds, the wait's deadline and
//! backoff, the settle or cancel round) is the engine's; this loop only does the IO, so it
//! never releases a response whose records are not durable. The final answer is counted once
//! into the [`Env`]'s metrics.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Instant;

use bernstein_core::engine::turns::{Grant, Ticket, Turns};
use bernstein_core::engine::{Finished, Input, Job, Message, Moment, Output, Request};
use bernstein_core::ledger::{Store, StoreError};
use bernstein_core::protocol::{Server, TransportFacts};

pub use bernstein_core::engine::{DEFAULT_WAIT, MAX_ATTEMPTS, Served, Stop, WaitPolicy};

pub use crate::host::HostIo;
pub use crate::metrics::Metrics;
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

/// What a request is served against: the ledger, the clock, the host and, when the server
/// keeps them, the metrics it counts into.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub store: &'a dyn Store,
    pub clock: &'a dyn Clock,
    pub host: &'a dyn HostIo,
    pub metrics: Option<&'a Metrics>,
    /// What this server's requests share: the turn once contended, the wait slots.
    pub admission: &'a Admission,
}

/// The owned [`Env`] a long-lived server shares between its threads.
#[derive(Clone)]
pub struct Backend {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub host: Arc<dyn HostIo>,
    /// This server's counters (`GET /metrics`), started now.
    pub metrics: Arc<Metrics>,
    /// The turn and the wait slots its requests share.
    pub admission: Arc<Admission>,
}

impl Backend {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, host: Arc<dyn HostIo>) -> Backend {
        let metrics = Arc::new(Metrics::new(clock.now()));
        Backend {
            store,
            clock,
            host,
            metrics,
            admission: Arc::new(Admission::new()),
        }
    }

    pub fn env(&self) -> Env<'_> {
        Env {
            store: &*self.store,
            clock: &*self.clock,
            host: &*self.host,
            metrics: Some(&self.metrics),
            admission: &self.admission,
        }
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Backend")
    }
}

/// [`serve_message_streaming`] collecting the notifications into [`Served::notifications`]
/// (in order, before the response), for callers that write everything at the end.
pub fn serve_message_with(
    server: &Server,
    env: &Env<'_>,
    bytes: &[u8],
    facts: &TransportFacts,
    wait: &WaitPolicy,
    stop: &dyn Fn() -> Option<Stop>,
) -> Result<Served, StoreError> {
    let notes = std::cell::RefCell::new(Vec::new());
    let mut served = serve_message_streaming(server, env, bytes, facts, wait, stop, &|n| {
        notes.borrow_mut().push(n.to_vec());
    })?;
    served.notifications = notes.into_inner();
    Ok(served)
}

/// [`serve_message`] with an explicit wait policy, a stop hook and a sink for notifications:
/// `notify` gets each notification as soon as the records of the round that produced it are
/// durable (a long poll's progress ticks while it still waits), and
/// [`Served::notifications`] stays empty. `stop` answers the engine's
/// [`Output::AskStop`], asked before every look at the store while an answer is pending (a
/// transport that learns its client went away, or a `notifications/cancelled`, plugs in here).
pub fn serve_message_streaming(
    server: &Server,
    env: &Env<'_>,
    bytes: &[u8],
    facts: &TransportFacts,
    wait: &WaitPolicy,
    stop: &dyn Fn() -> Option<Stop>,
    notify: &dyn Fn(&[u8]),
) -> Result<Served, StoreError> {
    let _serving = env.metrics.map(Metrics::request_started);
    let mut waiting = None;
    let job = Message {
        server,
        bytes,
        facts,
    };
    let finished = drive(env, job, wait, stop, notify, &mut || {
        if waiting.is_none() {
            waiting = env.metrics.map(Metrics::wait_started);
        }
    })?;
    drop(waiting);
    // A deferred answer is counted when it is served again.
    if let Some(m) = env.metrics.filter(|_| !finished.deferred) {
        m.served(&finished.tally, finished.took);
    }
    Ok(finished.served)
}

/// Commits what `job` decides (an operator's command from the command line) through the same
/// engine and loop as every message: decided on a fresh snapshot, re-run on a lost race,
/// durable before this returns. Such jobs never wait.
pub fn commit_job(env: &Env<'_>, job: &mut dyn Job) -> Result<Finished, StoreError> {
    drive(
        env,
        job,
        &DEFAULT_WAIT,
        &|| Some(Stop::Settle),
        &|_| {},
        &mut || {},
    )
}

/// The loop: performs the engine's outputs for `job` until its answer. `waits` hears of each
/// look at the store while an answer is pending.
fn drive<J: Job>(
    env: &Env<'_>,
    job: J,
    wait: &WaitPolicy,
    stop: &dyn Fn() -> Option<Stop>,
    notify: &dyn Fn(&[u8]),
    waits: &mut dyn FnMut(),
) -> Result<Finished, StoreError> {
    let origin = Instant::now();
    let now = || Moment {
        mono: origin.elapsed(),
        wall: env.clock.now(),
    };
    let mut place = AdmissionHold::new(env.admission);
    let mut request = Request::new(job, *wait, seed());
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
            Output::ClaimWaitSlot => {
                let granted = place.claim_wait();
                if !granted && let Some(m) = env.metrics {
                    m.wait_refused();
                }
                Input::WaitSlot { granted }
            }
            Output::ReleaseWaitSlot => {
                place.release_wait();
                continue;
            }
            Output::AskStop => {
                waits();
                Input::Stop(stop())
            }
            Output::WaitForHead { after, nap } => {
                if !env.store.wait_for_change(&after, nap) {
                    std::thread::sleep(nap);
                }
                Input::Looked {
                    moved: env.store.snapshot()?.position != after,
                }
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

/// What a server's requests share: the turn ([`Turns`]) behind a lock, with a condition its
/// queued writers wait on, and the wait slots, so that waiting requests never hold every
/// thread of a transport.
#[derive(Debug)]
pub struct Admission {
    turns: Mutex<Turns>,
    handed: Condvar,
    /// [`Turns::contended`] as last seen, so uncontended requests skip the lock.
    contended: AtomicUsize,
    waiting: AtomicUsize,
    max_waiting: AtomicUsize,
}

impl Admission {
    /// No cap on waits until a transport sets one ([`Admission::limit_waits`]).
    pub const fn new() -> Admission {
        Admission {
            turns: Mutex::new(Turns::new()),
            handed: Condvar::new(),
            contended: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            max_waiting: AtomicUsize::new(usize::MAX),
        }
    }

    /// At most `max` pending answers wait at once (at least one); beyond that a pending answer
    /// is sent as it stands at once (the answer a wait that reached its deadline gives).
    pub fn limit_waits(&self, max: usize) {
        self.max_waiting.store(max.max(1), Ordering::Release);
    }

    fn claim_wait(&self) -> bool {
        let max = self.max_waiting.load(Ordering::Acquire);
        self.waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    fn release_wait(&self) {
        self.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Default for Admission {
    fn default() -> Admission {
        Admission::new()
    }
}

/// One request's place at its server's [`Admission`]: its ticket for the turn and its wait
/// slot; dropping it gives both back (a request that ends with a store error included).
struct AdmissionHold<'a> {
    admission: &'a Admission,
    ticket: Option<Ticket>,
    counted: bool,
    slot: bool,
}

impl<'a> AdmissionHold<'a> {
    fn new(admission: &'a Admission) -> AdmissionHold<'a> {
        AdmissionHold {
            admission,
            ticket: None,
            counted: false,
            slot: false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'a, Turns> {
        self.admission
            .turns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks until the engine's request for the turn is granted; whether it is held.
    fn take(&mut self, only_if_contended: bool, contend: bool) -> bool {
        if only_if_contended && !contend && self.admission.contended.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut turns = self.lock();
        let ticket = *self.ticket.get_or_insert_with(|| turns.ticket());
        let grant = turns.request(ticket, only_if_contended, contend);
        self.counted |= contend;
        self.admission
            .contended
            .store(turns.contended(), Ordering::Release);
        match grant {
            Grant::NotNeeded => false,
            Grant::Granted => true,
            Grant::Queued => {
                while !turns.holds(ticket) {
                    turns = self
                        .admission
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
        let mut turns = self.lock();
        turns.leave(ticket, uncount);
        self.counted &= !uncount;
        self.admission
            .contended
            .store(turns.contended(), Ordering::Release);
        drop(turns);
        self.admission.handed.notify_all();
    }

    fn claim_wait(&mut self) -> bool {
        self.slot = self.admission.claim_wait();
        self.slot
    }

    fn release_wait(&mut self) {
        if std::mem::take(&mut self.slot) {
            self.admission.release_wait();
        }
    }
}

impl Drop for AdmissionHold<'_> {
    fn drop(&mut self) {
        self.leave(self.counted);
        self.release_wait();
    }
}

#[cfg(test)]
mod tests;
