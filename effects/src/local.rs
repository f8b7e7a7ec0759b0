//! An engine for callers that block: the command line's operator commands, an in-process
//! worker, the benchmarks. Each submits its job to one shared [`Engine`]
//! ([`Engine::submit`]) and drives it on its own thread until the engine says the job
//! finished ([`Output::Finished`]); the request state machine (snapshots, re-runs on a lost
//! race, the turn, host rounds, group commit, waits) is the engine's, and its store and host
//! outputs are performed by the same [`Performer`] as a server's. There is no thread of its
//! own: whichever caller holds the engine performs what it asks for.
//!
//! Reads, appends and host requests are performed with the engine held (a lock and an
//! `fstat`, a positional write); an fsync ([`Output::Sync`]) and a look at the durable head
//! ([`Output::Look`]) with it released, so that other callers append meanwhile and the next
//! fsync covers them all (the engine asks for one at a time). A caller with nothing to do
//! parks until it is woken (its answer was taken from the engine by another caller, or it is
//! the one asked to go on with the engine's work) or the engine's next timer
//! ([`Engine::poll_timeout`]: a nap, a jitter pause, a held sync) is due. A caller whose job
//! finished leaves what the engine still asks for (the fsync others wait for) to one of the
//! callers still waiting, and wakes it; a store thread (a non-local store's pool) wakes one
//! too. Each caller is woken for its own answer only, not every caller for every answer.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, Thread};
use std::time::Instant;

use bernstein_core::engine::{Engine, Output, Served};
use bernstein_core::engine::{
    EngineConfig, Finished, Input, Job, JobId, Moment, OwnedMessage, Round, Stop, Submitted,
    WaitPolicy,
};
use bernstein_core::ledger::{Fold, StoreError};
use bernstein_core::protocol::{Outcome, Server, TransportFacts};

use crate::perform::{Backend, Performer, moment, seed};

/// Store threads a non-local store (PostgreSQL) is called on.
const STORE_WORKERS: usize = 4;

/// One engine shared by blocking callers (see the module docs). Cloning it shares the engine.
pub struct Local<F: Fold> {
    shared: Arc<Shared<F>>,
    performer: Arc<Performer<F>>,
    server: Option<Arc<Server<F>>>,
    backend: Backend<F>,
    origin: Instant,
}

impl<F: Fold> Clone for Local<F> {
    fn clone(&self) -> Self {
        Local {
            shared: self.shared.clone(),
            performer: self.performer.clone(),
            server: self.server.clone(),
            backend: self.backend.clone(),
            origin: self.origin,
        }
    }
}

impl<F: Fold> std::fmt::Debug for Local<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Local").finish_non_exhaustive()
    }
}

/// The engine and what its callers leave each other, behind one lock.
struct Shared<F: Fold> {
    state: Mutex<State<F>>,
}

struct State<F: Fold> {
    engine: Engine<F>,
    /// Answers taken from the engine for callers that have not picked them up yet.
    ended: HashMap<JobId, Result<Box<Finished>, StoreError>>,
    /// An output that must be performed without the engine held, left by a caller whose job
    /// ended to one still waiting.
    left: Option<Output>,
    /// A store thread has results in [`Performer::drain`].
    rung: bool,
    /// The callers parked, by the job they wait for.
    parked: BTreeMap<JobId, Thread>,
}

impl<F: Fold> State<F> {
    /// Wakes the caller of `job` if it is parked.
    fn wake(&self, job: JobId) {
        if let Some(t) = self.parked.get(&job) {
            t.unpark();
        }
    }

    /// One parked caller, to go on with the engine's work (none: nobody waits for it).
    fn successor(&self) -> Option<Thread> {
        self.parked.values().next().cloned()
    }
}

impl<F: Fold> Shared<F> {
    fn lock(&self) -> MutexGuard<'_, State<F>> {
        // A caller that panicked left the engine between two calls: serve on.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<F: Fold> Local<F> {
    /// An engine serving the messages of `server` (an in-process client's, a benchmark's)
    /// over `backend`; answers that wait for the ledger wait under `wait`.
    pub fn new(
        server: Arc<Server<F>>,
        backend: &Backend<F>,
        wait: WaitPolicy,
    ) -> std::io::Result<Local<F>> {
        let now = Instant::now();
        let config = EngineConfig::jobs(wait, seed()?);
        let engine = Engine::new(server.clone(), config, moment(now, &*backend.clock));
        Local::start(engine, Some(server), backend, now)
    }

    /// An engine for jobs only (an operator's command: [`Local::commit`]), serving no message.
    pub fn for_jobs(backend: &Backend<F>) -> std::io::Result<Local<F>> {
        let now = Instant::now();
        let config = EngineConfig::jobs(bernstein_core::engine::DEFAULT_WAIT, seed()?);
        let engine = Engine::for_jobs(config, moment(now, &*backend.clock));
        Local::start(engine, None, backend, now)
    }

    fn start(
        mut engine: Engine<F>,
        server: Option<Arc<Server<F>>>,
        backend: &Backend<F>,
        origin: Instant,
    ) -> std::io::Result<Local<F>> {
        // Its performer traces the requests when the process does: from the first job on.
        engine.trace_requests(crate::trace::enabled());
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                engine,
                ended: HashMap::new(),
                left: None,
                rung: false,
                parked: BTreeMap::new(),
            }),
        });
        let ring = shared.clone();
        let wake = Arc::new(move || {
            let mut state = ring.lock();
            state.rung = true;
            let next = state.successor();
            drop(state);
            if let Some(t) = next {
                t.unpark();
            }
        });
        // Every sync where it is asked for (no syncer thread): the callers are the threads.
        let performer = Performer::new(
            backend.store.clone(),
            backend.host.clone(),
            None,
            STORE_WORKERS,
            usize::MAX,
            wake,
        )?;
        Ok(Local {
            shared,
            performer: Arc::new(performer),
            server,
            backend: backend.clone(),
            origin,
        })
    }

    /// What this engine is built on.
    pub fn backend(&self) -> &Backend<F> {
        &self.backend
    }

    /// Serves one message: snapshot → core → compare-and-append (re-run from a fresh snapshot
    /// on a conflict) → durable → rendered with the measured latency. `Err` only for store
    /// failures, after which nothing was acknowledged. Notifications come back in
    /// [`Served::notifications`], before the response; an answer that waits for the ledger
    /// waits here, under this engine's wait policy.
    pub fn serve_message(
        &self,
        bytes: &[u8],
        facts: &TransportFacts,
    ) -> Result<Served, StoreError> {
        self.serve_message_with(bytes, facts, &|| None)
    }

    /// [`Local::serve_message`] with a stop hook, asked after the job is submitted and each
    /// time this caller wakes while it runs, until it says how a pending answer ends.
    pub fn serve_message_with(
        &self,
        bytes: &[u8],
        facts: &TransportFacts,
        stop: &dyn Fn() -> Option<Stop>,
    ) -> Result<Served, StoreError> {
        let Some(server) = &self.server else {
            return Err(StoreError::Unavailable(
                "this engine serves jobs only, no message".into(),
            ));
        };
        // Read once here; every run of the job reads this value.
        let job = OwnedMessage {
            message: server.read_message(bytes),
            server: server.clone(),
            facts: facts.clone(),
            // An in-process caller is never asked: it declared nothing.
            caps: Default::default(),
        };
        let submit = |engine: &mut Engine<F>, now| engine.submit_message(now, job);
        Ok(self.drive(submit, stop)?.served)
    }

    /// Commits what `job` decides (an operator's command from the command line) through the
    /// same request state machine as every message: decided on a fresh snapshot, re-run on a
    /// lost race, durable before this returns. Such jobs never wait. The job comes back with
    /// what it decided last.
    pub fn commit<J>(&self, job: J) -> Result<(J, Finished), StoreError>
    where
        J: Job<Fold = F> + Send + 'static,
    {
        let job = Arc::new(Mutex::new(job));
        let lent: Submitted<F> = Box::new(Lent(job.clone()));
        let submit = |engine: &mut Engine<F>, now| engine.submit(now, lent);
        let finished = self.drive(submit, &|| Some(Stop::Settle))?;
        // The engine dropped its hold on the job when it ended it.
        let job = Arc::try_unwrap(job)
            .map_err(|_| StoreError::Unavailable("the engine kept a job it had finished".into()))?;
        let job = job.into_inner().unwrap_or_else(PoisonError::into_inner);
        Ok((job, *finished))
    }

    fn now(&self) -> Moment {
        moment(self.origin, &*self.backend.clock)
    }

    /// Submits a job (`submit` hands it to the engine) and drives the engine until it ends.
    fn drive(
        &self,
        submit: impl FnOnce(&mut Engine<F>, Moment) -> JobId,
        stop: &dyn Fn() -> Option<Stop>,
    ) -> Result<Box<Finished>, StoreError> {
        let mut state = self.shared.lock();
        let id = submit(&mut state.engine, self.now());
        let mut asked = false;
        loop {
            if !asked && let Some(why) = stop() {
                asked = true;
                state
                    .engine
                    .handle_input(self.now(), Input::StopJob { job: id, why });
            }
            if std::mem::take(&mut state.rung) {
                for done in self.performer.drain() {
                    done.feed(&mut state.engine, self.now());
                }
            }
            if state
                .engine
                .poll_timeout()
                .is_some_and(|at| at <= self.now().mono)
            {
                state.engine.handle_input(self.now(), Input::Tick);
            }
            state = self.perform(state, id);
            if let Some(result) = state.ended.remove(&id) {
                // A caller still waiting takes over what is left: an fsync, the timers.
                let next = state.successor();
                drop(state);
                if let Some(t) = next {
                    t.unpark();
                }
                return result;
            }
            let timeout = state
                .engine
                .poll_timeout()
                .map(|at| (self.origin + at).saturating_duration_since(Instant::now()));
            state.parked.insert(id, thread::current());
            drop(state);
            // An unpark since the insert is not lost: the park returns at once.
            match timeout {
                Some(t) => thread::park_timeout(t),
                None => thread::park(),
            }
            state = self.shared.lock();
            state.parked.remove(&id);
        }
    }

    /// Performs what the engine asks for until it asks nothing more, or until what it asks
    /// must be performed without it held and `id` has its answer (left to the callers still
    /// waiting).
    fn perform<'a>(
        &'a self,
        mut state: MutexGuard<'a, State<F>>,
        id: JobId,
    ) -> MutexGuard<'a, State<F>> {
        loop {
            let Some(output) = state.left.take().or_else(|| state.engine.poll_output()) else {
                return state;
            };
            match output {
                Output::Finished { job, result } => {
                    state.ended.insert(job, result);
                    if job != id {
                        state.wake(job);
                    }
                }
                Output::Log(line) => bernstein_os::log_line!("{line}"),
                slow @ (Output::Sync { .. } | Output::Look) => {
                    if state.ended.contains_key(&id) {
                        state.left = Some(slow);
                        return state;
                    }
                    drop(state);
                    let done = self.performer.perform_store(slow);
                    state = self.shared.lock();
                    if let Ok(Some(done)) = done {
                        done.feed(&mut state.engine, self.now());
                    }
                }
                other => match self.performer.perform_store(other) {
                    Ok(Some(done)) => done.feed(&mut state.engine, self.now()),
                    Ok(None) => {}
                    // No connection and no operator route here: nothing else is asked for.
                    Err(unexpected) => bernstein_os::log_line!(
                        "bernstein: a local engine was asked for {unexpected:?}"
                    ),
                },
            }
        }
    }
}

/// A job the caller gets back once the engine is done with it ([`Local::commit`]).
struct Lent<J>(Arc<Mutex<J>>);

impl<J: Job> Job for Lent<J> {
    type Fold = J::Fold;
    fn run(&mut self, round: Round<'_, J::Fold>) -> Outcome {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .run(round)
    }
}

#[cfg(test)]
mod tests;
