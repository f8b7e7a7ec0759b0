//! The request driver shared by every transport and both runtimes: it performs what the
//! core's request engine ([`bernstein_core::engine`]) asks for — snapshots, compare-and-append,
//! host requests, the fsync, the turn, naps while a pending answer waits — and feeds back what
//! happened. Every decision (re-runs on conflict, host rounds, the wait's deadline and
//! backoff, the settle or cancel round) is the engine's; this loop only does the IO, so it
//! never releases a response whose records are not durable. The final answer is counted once
//! into the [`Env`]'s metrics. A [`Drive`] owns all of one request's state, so a request that
//! waits can be put aside ([`Step::Asleep`]) and resumed on another thread; [`serve_message`]
//! and [`commit_job`] nap on the caller's thread instead.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bernstein_core::Projection;
use bernstein_core::domain::Snapshot;
use bernstein_core::domain::bound::Server;
use bernstein_core::engine::WaitSlots;
use bernstein_core::engine::turns::{Grant, Ticket, Turns};
use bernstein_core::engine::{Finished, Input, Job, Message, Moment, Output, Request};
use bernstein_core::ledger::{Store, StoreError};
use bernstein_core::protocol::{TransportFacts, Wait};

pub use bernstein_core::engine::{DEFAULT_WAIT, MAX_ATTEMPTS, Served, Stop, WaitPolicy};

pub use crate::host::HostIo;
use crate::metrics::Held;
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
    pub store: &'a dyn Store<Projection>,
    pub clock: &'a dyn Clock,
    pub host: &'a dyn HostIo,
    pub metrics: Option<&'a Metrics>,
    /// What this server's requests share: the turn once contended, the wait slots.
    pub admission: &'a Arc<Admission>,
}

/// The owned [`Env`] a long-lived server shares between its threads.
#[derive(Clone)]
pub struct Backend {
    pub store: Arc<dyn Store<Projection>>,
    pub clock: Arc<dyn Clock>,
    pub host: Arc<dyn HostIo>,
    /// This server's counters (`GET /metrics`), started now.
    pub metrics: Arc<Metrics>,
    /// The turn and the wait slots its requests share.
    pub admission: Arc<Admission>,
}

impl Backend {
    pub fn new(
        store: Arc<dyn Store<Projection>>,
        clock: Arc<dyn Clock>,
        host: Arc<dyn HostIo>,
    ) -> Backend {
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
/// The calling thread waits with the request; [`Drive`] is the request that lets it go.
pub fn serve_message_streaming(
    server: &Server,
    env: &Env<'_>,
    bytes: &[u8],
    facts: &TransportFacts,
    wait: &WaitPolicy,
    stop: &dyn Fn() -> Option<Stop>,
    notify: &dyn Fn(&[u8]),
) -> Result<Served, StoreError> {
    let job = Message {
        server,
        bytes,
        facts,
    };
    drive(env, job, wait, stop, notify).map(|f| f.served)
}

/// Commits what `job` decides (an operator's command from the command line) through the same
/// engine and loop as every message: decided on a fresh snapshot, re-run on a lost race,
/// durable before this returns. Such jobs never wait.
pub fn commit_job(
    env: &Env<'_>,
    job: &mut dyn Job<Fold = Projection>,
) -> Result<Finished, StoreError> {
    drive(env, job, &DEFAULT_WAIT, &|| Some(Stop::Settle), &|_| {})
}

/// Drives `job` to its answer on this thread, napping here while it waits.
fn drive<J: Job<Fold = Projection>>(
    env: &Env<'_>,
    job: J,
    wait: &WaitPolicy,
    stop: &dyn Fn() -> Option<Stop>,
    notify: &dyn Fn(&[u8]),
) -> Result<Finished, StoreError> {
    Drive::new(env, job, wait).finish(env, stop, notify)
}

/// What [`Drive::run`] stopped at.
#[derive(Debug)]
pub enum Step {
    /// The answer (counted into the metrics), or the store failure that ended the request.
    Done(Result<Finished, StoreError>),
    /// The answer waits for the head to move: nothing needs a thread until
    /// [`Drive::wakes_at`] or a move of the head; then [`Drive::look`] or [`Drive::run`].
    Asleep,
}

/// What [`Drive::look`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// Still waiting, until [`Drive::wakes_at`] or a move of the head.
    Asleep,
    /// The request has IO to do: [`Drive::run`] it on a thread that may block.
    Work,
}

/// One request being served: the core's engine and what the loop performing its outputs
/// keeps (its place at the [`Admission`], its metrics gauges, the output it stopped at). It
/// owns all of it, so a waiting request can be put aside and resumed on another thread.
pub struct Drive<J> {
    request: Request<J>,
    place: AdmissionHold,
    origin: Instant,
    /// An output taken from the engine that [`Drive::look`] could not perform.
    next: Option<Output>,
    /// While the engine waits for [`Input::Looked`]: what the pending answer waits on and the
    /// end of its nap.
    asleep: Option<(Wait, Instant)>,
    serving: Option<Held>,
    waiting: Option<Held>,
}

impl<J> std::fmt::Debug for Drive<J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Drive")
            .field("asleep", &self.asleep)
            .finish_non_exhaustive()
    }
}

impl<J: Job<Fold = Projection>> Drive<J> {
    /// Starts serving `job` against `env`.
    pub fn new(env: &Env<'_>, job: J, wait: &WaitPolicy) -> Drive<J> {
        let origin = Instant::now();
        let mut request = Request::new(job, *wait, seed());
        request.start(Moment {
            mono: Duration::ZERO,
            wall: env.clock.now(),
        });
        Drive {
            request,
            place: AdmissionHold::new(env.admission.clone()),
            origin,
            next: None,
            asleep: None,
            serving: env.metrics.map(Metrics::request_started),
            waiting: None,
        }
    }

    /// Counts the request's wait against `peer`'s share of the wait slots.
    pub fn for_peer(mut self, peer: IpAddr) -> Drive<J> {
        self.place.peer = Some(peer);
        self
    }

    fn now(&self, env: &Env<'_>) -> Moment {
        Moment {
            mono: self.origin.elapsed(),
            wall: env.clock.now(),
        }
    }

    /// Runs the request to its answer on this thread, napping here whenever it waits (until
    /// the head moves or the nap ends). A request put aside at [`Step::Asleep`] resumes here.
    pub fn finish(
        &mut self,
        env: &Env<'_>,
        stop: &dyn Fn() -> Option<Stop>,
        notify: &dyn Fn(&[u8]),
    ) -> Result<Finished, StoreError> {
        loop {
            if let Some((pending, until)) = &self.asleep {
                let nap = until.saturating_duration_since(Instant::now());
                if !env.store.wait_for_change(&pending.after, nap) {
                    std::thread::sleep(nap);
                }
            }
            if let Step::Done(finished) = self.run(env, stop, notify) {
                return finished;
            }
        }
    }

    /// What the request runs.
    pub fn job(&self) -> &J {
        self.request.job()
    }

    /// When the nap of a waiting request ends.
    pub fn wakes_at(&self) -> Option<Instant> {
        self.asleep.as_ref().map(|(_, until)| *until)
    }

    /// Performs the engine's outputs until its answer, or until it waits for the head
    /// ([`Step::Asleep`]; run again after the nap: the look at the store comes first).
    pub fn run(
        &mut self,
        env: &Env<'_>,
        stop: &dyn Fn() -> Option<Stop>,
        notify: &dyn Fn(&[u8]),
    ) -> Step {
        loop {
            let output = match self.next.take().or_else(|| self.request.poll_output()) {
                Some(output) => output,
                None => match self.asleep.take() {
                    Some((pending, _)) => {
                        let moved = match env.store.snapshot() {
                            Ok(s) => pending.moved(&s),
                            Err(e) => return self.done(env, Err(e)),
                        };
                        self.request
                            .handle_input(self.now(env), Input::Looked { moved });
                        continue;
                    }
                    None => {
                        let stalled = StoreError::Unavailable(
                            "the request engine stalled without an answer".into(),
                        );
                        return self.done(env, Err(stalled));
                    }
                },
            };
            let input = match output {
                Output::ReadSnapshot => {
                    // Dropped before the append, so the store can fold into it without a copy.
                    let snapshot = match env.store.snapshot_unsettled() {
                        Ok(s) => s,
                        Err(e) => return self.done(env, Err(e)),
                    };
                    self.request
                        .handle_input(self.now(env), Input::Snapshot(&snapshot));
                    continue;
                }
                Output::Append(append) => match env.store.compare_and_append_unsettled(&append) {
                    Ok(result) => Input::Appended(result),
                    Err(e) => return self.done(env, Err(e)),
                },
                Output::Host(host) => Input::Host(env.host.perform(&host)),
                Output::TakeTurn {
                    only_if_contended,
                    contend,
                } => Input::Turn {
                    held: self.place.take(only_if_contended, contend),
                },
                Output::LeaveTurn { uncount } => {
                    self.place.leave(uncount);
                    continue;
                }
                Output::Pause(d) => {
                    std::thread::sleep(d);
                    Input::Paused
                }
                Output::Settle => match env.store.settle() {
                    Ok(()) => Input::Settled,
                    Err(e) => return self.done(env, Err(e)),
                },
                Output::Notify(n) => {
                    notify(&n);
                    continue;
                }
                Output::ClaimWaitSlot => {
                    let granted = self.place.claim_wait();
                    if !granted && let Some(m) = env.metrics {
                        m.wait_refused();
                    }
                    Input::WaitSlot { granted }
                }
                Output::ReleaseWaitSlot => {
                    self.place.release_wait();
                    continue;
                }
                Output::AskStop => {
                    self.count_wait(env);
                    Input::Stop(stop())
                }
                Output::WaitForHead { until, nap } => {
                    self.asleep = Some((until, Instant::now() + nap));
                    return Step::Asleep;
                }
                Output::Failed(e) => return self.done(env, Err(e)),
                Output::Done(finished) => return self.done(env, Ok(finished)),
            };
            self.request.handle_input(self.now(env), input);
        }
    }

    /// For a waiting request whose nap ended or whose head may have moved (`snapshot`, as last
    /// read from the store: a stale one only delays the look): performs what
    /// needs no IO (the look — did what the answer depends on move? —, the question whether to
    /// stop, giving the wait slot back) and says whether the request sleeps on or has IO to
    /// do. Cheap enough for one thread to watch thousands.
    pub fn look(
        &mut self,
        env: &Env<'_>,
        snapshot: &Snapshot,
        stop: &dyn Fn() -> Option<Stop>,
    ) -> Look {
        let Some((pending, _)) = self.asleep.take() else {
            return Look::Work;
        };
        self.request.handle_input(
            self.now(env),
            Input::Looked {
                moved: pending.moved(snapshot),
            },
        );
        loop {
            match self.request.poll_output() {
                Some(Output::AskStop) => {
                    self.count_wait(env);
                    self.request
                        .handle_input(self.now(env), Input::Stop(stop()));
                }
                Some(Output::ReleaseWaitSlot) => self.place.release_wait(),
                Some(Output::WaitForHead { until, nap }) => {
                    self.asleep = Some((until, Instant::now() + nap));
                    return Look::Asleep;
                }
                other => {
                    self.next = other;
                    return Look::Work;
                }
            }
        }
    }

    fn count_wait(&mut self, env: &Env<'_>) {
        if self.waiting.is_none() {
            self.waiting = env.metrics.map(Metrics::wait_started);
        }
    }

    fn done(&mut self, env: &Env<'_>, finished: Result<Finished, StoreError>) -> Step {
        self.waiting = None;
        self.serving = None;
        if let (Some(m), Ok(f)) = (env.metrics, &finished) {
            m.served(&f.tally, f.took);
        }
        Step::Done(finished)
    }
}

/// A random seed for one request's jittered pauses.
fn seed() -> u64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes)
}

/// What a server's requests share, as the engine decides it: the turn ([`Turns`]) behind a
/// lock, with a condition its queued writers wait on, and the wait slots ([`WaitSlots`]).
#[derive(Debug)]
pub struct Admission {
    turns: Mutex<Turns>,
    handed: Condvar,
    /// [`Turns::contended`] as last seen, so uncontended requests skip the lock.
    contended: AtomicUsize,
    waits: Mutex<WaitSlots>,
}

impl Admission {
    /// No cap on waits until a transport sets one ([`Admission::limit_waits`]).
    pub const fn new() -> Admission {
        Admission {
            turns: Mutex::new(Turns::new()),
            handed: Condvar::new(),
            contended: AtomicUsize::new(0),
            waits: Mutex::new(WaitSlots::new()),
        }
    }

    /// At most `max` pending answers wait at once, and at most `per_peer` of them for one peer
    /// address (each at least one); beyond that a wait is refused (the engine answers with a
    /// clear, retryable error).
    pub fn limit_waits(&self, max: usize, per_peer: usize) {
        self.waits().limit(max, per_peer);
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

/// One request's place at its server's [`Admission`]: its ticket for the turn and its wait
/// slot; dropping it gives both back (a request that ends with a store error included).
struct AdmissionHold {
    admission: Arc<Admission>,
    /// The peer address its wait counts against, if the transport has one.
    peer: Option<IpAddr>,
    ticket: Option<Ticket>,
    counted: bool,
    slot: bool,
}

impl AdmissionHold {
    fn new(admission: Arc<Admission>) -> AdmissionHold {
        AdmissionHold {
            admission,
            peer: None,
            ticket: None,
            counted: false,
            slot: false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Turns> {
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
        let mut turns = self.lock();
        turns.leave(ticket, uncount);
        let contended = turns.contended();
        drop(turns);
        self.counted &= !uncount;
        self.admission.contended.store(contended, Ordering::Release);
        self.admission.handed.notify_all();
    }

    fn claim_wait(&mut self) -> bool {
        self.slot = self.admission.waits().claim(self.peer);
        self.slot
    }

    fn release_wait(&mut self) {
        if std::mem::take(&mut self.slot) {
            self.admission.waits().release(self.peer);
        }
    }
}

impl Drop for AdmissionHold {
    fn drop(&mut self) {
        self.leave(self.counted);
        self.release_wait();
    }
}

#[cfg(test)]
mod tests;
