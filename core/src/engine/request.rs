//! One request's state machine (see the module above for the loop a runtime runs around it).

use core::time::Duration;
use std::collections::VecDeque;

use super::job::{Job, Round};
use super::{MAX_ATTEMPTS, Moment, Served, Stop, WaitPolicy};
use crate::ledger::{Append, AppendResult, Snapshot, StoreError};
use crate::protocol::host::{HostReply, HostRequest, MAX_HOST_ROUNDS};
use crate::protocol::input::{Answers, InputNeeded, Inputs, Unanswered};
use crate::protocol::tally::Tally;
use crate::protocol::{Outcome, Phase, Response, Wait};

/// What the world tells a request: each is the answer to the [`Output`] it names.
#[derive(Debug)]
pub enum Input<'a, F> {
    /// [`Output::ReadSnapshot`]: the store's projection now (it may hold records whose fsync
    /// is still due; the request settles before it answers).
    Snapshot(&'a Snapshot<F>),
    /// [`Output::Append`]: committed (not necessarily durable yet) or lost to another writer.
    Appended(AppendResult),
    /// [`Output::Host`]: what the host did.
    Host(HostReply),
    /// [`Output::AskClient`]: the client's answers by key, or why they never came.
    Answered(Result<Vec<(String, serde_json::Value)>, Unanswered>),
    /// [`Output::TakeTurn`]: whether the request holds the turn now (`false`: it was not
    /// needed).
    Turn { held: bool },
    /// [`Output::Pause`]: the pause is over.
    Paused,
    /// [`Output::Settle`]: everything read and appended so far is durable.
    Settled,
    /// [`Output::AskStop`]: whether the wait must end now, and why.
    Stop(Option<Stop>),
    /// [`Output::ClaimWaitSlot`]: whether the server had a wait slot free.
    WaitSlot { granted: bool },
    /// [`Output::WaitForHead`]: the head was looked at after the nap; `moved` if
    /// [`Wait::moved`] says the answer may differ.
    Looked { moved: bool },
}

/// What a request asks of the world, in order. Every output but [`Output::Notify`],
/// [`Output::LeaveTurn`], [`Output::ReleaseWaitSlot`], [`Output::Failed`] and
/// [`Output::Done`] is answered by the input of the same name before the request goes on.
#[derive(Debug)]
pub enum Output {
    /// Read the store's snapshot (records not yet durable included).
    ReadSnapshot,
    /// Compare-and-append these records (durability comes with [`Output::Settle`]).
    Append(Append),
    /// Perform this host request.
    Host(HostRequest),
    /// Put these questions to the client (handshake era: JSON-RPC requests on the request's
    /// stream) and bring back its answers.
    AskClient(InputNeeded),
    /// Take the server's turn ([`super::turns::Turns::request`] with these flags), waiting
    /// in line if another request holds it.
    TakeTurn {
        only_if_contended: bool,
        contend: bool,
    },
    /// Give the turn up ([`super::turns::Turns::leave`]).
    LeaveTurn { uncount: bool },
    /// Pause this long before the next run (jitter after repeated lost races).
    Pause(Duration),
    /// Wait until everything read and appended so far is durable.
    Settle,
    /// Send this notification now: the records of the round that produced it are durable.
    Notify(Vec<u8>),
    /// Say whether the pending answer must stop waiting (a cancellation, end of input, or a
    /// caller that does not wait at all).
    AskStop,
    /// Take one of the server's wait slots (waits are capped, so that waiting requests never
    /// hold every worker); without one the request settles at once (the answer as it stands).
    ClaimWaitSlot,
    /// Give the wait slot back.
    ReleaseWaitSlot,
    /// Wait at most `nap` for the ledger to move past `until.after`, then look whether it
    /// moved for this answer ([`Wait::moved`]).
    WaitForHead { until: Wait, nap: Duration },
    /// The request cannot be served (nothing it ran was acknowledged): answer with a storage
    /// failure.
    Failed(StoreError),
    /// The answer, whose records are durable.
    Done(Finished),
}

/// A served request and what its runtime counts about it.
#[derive(Debug)]
pub struct Finished {
    pub served: Served,
    pub tally: Tally,
    /// From [`Request::start`] to the answer.
    pub took: Duration,
}

/// The input a request waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Start,
    Turn,
    Paused,
    Snapshot,
    Host,
    Client,
    Appended,
    Settled,
    Stop,
    WaitSlot,
    Looked,
    Nothing,
}

/// One job (a message, an operator's command) being served.
#[derive(Debug)]
pub struct Request<J> {
    job: J,
    wait: WaitPolicy,
    seed: u64,
    started: Duration,
    phase: Phase,
    /// The current round: the host's replies so far, lost races, the turn.
    replies: Vec<HostReply>,
    /// The client's answers to the last questions, with the state the handler kept.
    answers: Option<Answers>,
    /// The handler's state while its questions are out.
    asked_state: Option<serde_json::Value>,
    /// How many times the request put questions to the client.
    asks: usize,
    conflicts: usize,
    held: bool,
    counted: bool,
    /// Whether the request holds a wait slot.
    slot: bool,
    /// The round's outcome while its records commit and settle, then while it waits.
    outcome: Option<Outcome>,
    /// The wait of a pending answer.
    deadline: Duration,
    pause: Duration,
    expect: Expect,
    out: VecDeque<Output>,
}

impl<J: Job> Request<J> {
    /// What the request runs.
    pub fn job(&self) -> &J {
        &self.job
    }

    /// When it started (the `mono` of [`Request::start`]'s instant).
    pub fn started(&self) -> Duration {
        self.started
    }

    /// A request running `job`, waiting under `wait` if its answer is pending; `seed` is the
    /// randomness its jittered pauses draw on.
    pub fn new(job: J, wait: WaitPolicy, seed: u64) -> Request<J> {
        Request {
            job,
            wait,
            seed,
            started: Duration::ZERO,
            phase: Phase::Live,
            replies: Vec::new(),
            answers: None,
            asked_state: None,
            asks: 0,
            conflicts: 0,
            held: false,
            counted: false,
            slot: false,
            outcome: None,
            deadline: Duration::ZERO,
            pause: wait.min_backoff,
            expect: Expect::Start,
            out: VecDeque::new(),
        }
    }

    /// Starts serving at `now`.
    pub fn start(&mut self, now: Moment) {
        if self.expect == Expect::Start {
            self.started = now.mono;
            self.begin_round();
        }
    }

    /// The next thing the request asks for; `None` while it waits for an input.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// Feeds the answer to the output the request is waiting on. An input it is not waiting
    /// for ends the request with [`Output::Failed`]: a runtime bug, never a silent mix-up.
    pub fn handle_input(&mut self, now: Moment, input: Input<'_, J::Fold>) {
        let expected = std::mem::replace(&mut self.expect, Expect::Nothing);
        match (expected, input) {
            (Expect::Turn, Input::Turn { held }) => {
                self.held |= held;
                self.after_turn();
            }
            (Expect::Paused, Input::Paused) => self.read(),
            (Expect::Snapshot, Input::Snapshot(snapshot)) => self.run(now, snapshot),
            (Expect::Host, Input::Host(reply)) => {
                self.replies.push(reply);
                self.read();
            }
            (Expect::Client, Input::Answered(answered)) => {
                self.answers = Some(match answered {
                    Ok(responses) => Answers::Given(Inputs {
                        responses,
                        state: self.asked_state.take(),
                        ..Inputs::default()
                    }),
                    Err(why) => Answers::Unanswered(why),
                });
                self.begin_round();
            }
            (Expect::Appended, Input::Appended(AppendResult::Committed(_))) => self.end_round(),
            (Expect::Appended, Input::Appended(AppendResult::Conflict { .. })) => self.lost(),
            (Expect::Settled, Input::Settled) => self.after_settle(now),
            (Expect::Stop, Input::Stop(why)) => self.stop(now, why),
            (Expect::WaitSlot, Input::WaitSlot { granted: true }) => {
                self.slot = true;
                self.nap(now);
            }
            // No slot: answer now that the wait was refused (a clear, retryable error).
            (Expect::WaitSlot, Input::WaitSlot { granted: false }) => {
                self.phase = Phase::Refused;
                self.begin_round();
            }
            (Expect::Looked, Input::Looked { moved }) => {
                self.pause = (self.pause * 2).min(self.wait.max_backoff);
                if moved {
                    self.phase = Phase::Live;
                    self.begin_round();
                } else {
                    self.ask_stop();
                }
            }
            (expected, input) => self.fail(format!(
                "the request engine got {input:?} while waiting for {expected:?}"
            )),
        }
    }

    /// A round: run the message against fresh snapshots until its records commit.
    fn begin_round(&mut self) {
        self.replies.clear();
        self.conflicts = 0;
        self.held = false;
        self.counted = false;
        self.push(
            Output::TakeTurn {
                only_if_contended: true,
                contend: false,
            },
            Expect::Turn,
        );
    }

    fn after_turn(&mut self) {
        if self.conflicts > 2 {
            let ceiling = self.conflicts.min(20) as u64;
            let byte = splitmix(self.seed.wrapping_add(self.conflicts as u64)) & 0xff;
            self.push(
                Output::Pause(Duration::from_micros(byte * ceiling * 4)),
                Expect::Paused,
            );
        } else {
            self.read();
        }
    }

    fn read(&mut self) {
        self.push(Output::ReadSnapshot, Expect::Snapshot);
    }

    fn run(&mut self, now: Moment, snapshot: &Snapshot<J::Fold>) {
        let mut outcome = self.job.run(Round {
            snapshot,
            now: now.wall,
            host: &self.replies,
            phase: self.phase,
            answers: self.answers.as_ref(),
        });
        if let Some(needed) = outcome.ask.take() {
            self.asks += 1;
            if self.asks > MAX_ASKS {
                return self.fail("the core kept asking the client after its round limit".into());
            }
            self.asked_state = needed.state.clone();
            return self.push(Output::AskClient(needed), Expect::Client);
        }
        if let Some(request) = outcome.host.take() {
            if self.replies.len() > MAX_HOST_ROUNDS {
                return self.fail("the core kept asking the host after its round limit".into());
            }
            return self.push(Output::Host(request), Expect::Host);
        }
        let append = outcome.append.take();
        self.outcome = Some(outcome);
        match append {
            Some(append) => self.push(Output::Append(append), Expect::Appended),
            None => self.end_round(),
        }
    }

    /// Another writer moved the head first: queue for the turn and run again.
    fn lost(&mut self) {
        self.conflicts += 1;
        if self.conflicts >= MAX_ATTEMPTS {
            let n = self.conflicts;
            return self.fail(format!(
                "the ledger head moved {n} times while serving one request; gave up"
            ));
        }
        if self.held && self.counted {
            return self.after_turn();
        }
        let contend = !self.counted;
        self.counted = true;
        self.push(
            Output::TakeTurn {
                only_if_contended: false,
                contend,
            },
            Expect::Turn,
        );
    }

    /// The records committed (or there were none): give the turn up so the writers behind
    /// append meanwhile and share the fsync, then settle.
    fn end_round(&mut self) {
        if self.held || self.counted {
            let uncount = self.counted;
            self.out.push_back(Output::LeaveTurn { uncount });
            self.held = false;
            self.counted = false;
        }
        self.push(Output::Settle, Expect::Settled);
    }

    fn after_settle(&mut self, now: Moment) {
        let Some(outcome) = self.outcome.as_mut() else {
            return self.fail("the request engine settled without an outcome".into());
        };
        for n in std::mem::take(&mut outcome.notifications) {
            self.out.push_back(Output::Notify(n));
        }
        let limit = match (&outcome.pending, self.phase) {
            (Some(pending), Phase::Live) => pending.max_wait_ms.map_or(self.wait.max_wait, |ms| {
                self.wait.max_wait.min(Duration::from_millis(ms))
            }),
            _ => return self.finish(now),
        };
        self.deadline = self.started + limit;
        self.pause = self.wait.min_backoff;
        self.ask_stop();
    }

    fn ask_stop(&mut self) {
        self.push(Output::AskStop, Expect::Stop);
    }

    fn stop(&mut self, now: Moment, why: Option<Stop>) {
        match why {
            Some(Stop::Settle) => self.phase = Phase::Settle,
            Some(Stop::Cancel) => self.phase = Phase::Cancelled,
            None if now.mono >= self.deadline => self.phase = Phase::Settle,
            None if !self.slot => return self.push(Output::ClaimWaitSlot, Expect::WaitSlot),
            None => return self.nap(now),
        }
        self.release_slot();
        self.begin_round();
    }

    /// Waits for the head to move, at most until the next look is due.
    fn nap(&mut self, now: Moment) {
        let Some(until) = self.outcome.as_ref().and_then(|o| o.pending.clone()) else {
            return self.fail("the request engine waited without a pending answer".into());
        };
        let nap = self.pause.min(self.deadline.saturating_sub(now.mono));
        self.push(Output::WaitForHead { until, nap }, Expect::Looked);
    }

    fn release_slot(&mut self) {
        if std::mem::take(&mut self.slot) {
            self.out.push_back(Output::ReleaseWaitSlot);
        }
    }

    fn finish(&mut self, now: Moment) {
        self.release_slot();
        let Some(outcome) = self.outcome.take() else {
            return self.fail("the request engine finished without an outcome".into());
        };
        let took = now.mono.saturating_sub(self.started);
        let latency_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        let served = Served {
            notifications: outcome.notifications,
            span_id: outcome.response.as_ref().map(|r| r.span_id.clone()),
            kind: outcome
                .response
                .as_ref()
                .map(Response::kind)
                .unwrap_or_default(),
            response: outcome.response.map(|r| r.render(latency_ms)),
            negotiated_version: outcome.negotiated_version,
            log_level: outcome.log_level,
            subscription: outcome.subscription,
            declared_caps: outcome.declared_caps,
        };
        self.out.push_back(Output::Done(Finished {
            served,
            tally: outcome.tally,
            took,
        }));
    }

    fn fail(&mut self, reason: String) {
        self.release_slot();
        self.outcome = None;
        self.out
            .push_back(Output::Failed(StoreError::Unavailable(reason)));
    }

    fn push(&mut self, output: Output, expect: Expect) {
        self.out.push_back(output);
        self.expect = expect;
    }
}

/// How many times one request may put questions to its client.
pub const MAX_ASKS: usize = 16;

/// A 64-bit mix of `x` (SplitMix64's finalizer): the jitter's randomness from the seed.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
