//! What a request runs against each snapshot. Every writer commits through the same
//! [`Request`](super::Request) state machine, whatever it runs: an MCP message through the
//! server ([`Message`]), or an operator's command from the command line (the CLI's own job).

use std::sync::Arc;

use crate::ledger::{Fold, Snapshot};
use crate::protocol::host::HostReply;
use crate::protocol::input::{Answers, ClientCaps, ClientSide};
use crate::protocol::{
    ClientMessage, MessageInput, Outcome, Phase, Server, TransportFacts, dispatch,
};
use crate::time::Timestamp;

/// One run of a job: the snapshot it decides on, the time, the host's replies so far and the
/// phase of the wait.
#[derive(Debug)]
pub struct Round<'a, F> {
    pub snapshot: &'a Snapshot<F>,
    pub now: Timestamp,
    pub host: &'a [HostReply],
    pub phase: Phase,
    /// The client's answers to the questions this request put to it (handshake era).
    pub answers: Option<&'a Answers>,
}

impl<F> Clone for Round<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for Round<'_, F> {}

/// A decision taken on a snapshot: the records to commit (`Outcome::append`, sealed against
/// that snapshot's position), what to answer, and whether to wait or ask the host first. It
/// may run many times (once per lost race, per host round, per wait); only the last run's
/// records are committed.
pub trait Job {
    /// What the job's snapshots fold the ledger into.
    type Fold: Fold;
    fn run(&mut self, round: Round<'_, Self::Fold>) -> Outcome;
}

impl<J: Job + ?Sized> Job for &mut J {
    type Fold = J::Fold;
    fn run(&mut self, round: Round<'_, J::Fold>) -> Outcome {
        (**self).run(round)
    }
}

/// An MCP message (a stdio line, an HTTP body), read once by whoever framed it, served by
/// `server`: every run serves the same [`ClientMessage`], never its bytes again.
#[derive(Debug)]
pub struct Message<'a, F> {
    pub server: &'a Server<F>,
    pub message: &'a ClientMessage,
    pub facts: &'a TransportFacts,
    /// What the client declared in `initialize` (handshake era; its connection keeps it).
    pub caps: ClientCaps,
}

impl<F> Clone for Message<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for Message<'_, F> {}

impl<F: Fold> Job for Message<'_, F> {
    type Fold = F;
    fn run(&mut self, round: Round<'_, F>) -> Outcome {
        let input = MessageInput {
            message: self.message.view(),
            snapshot: round.snapshot,
            now: round.now,
            transport: self.facts,
            client: ClientSide {
                caps: self.caps,
                answers: round.answers,
            },
        };
        dispatch::serve(self.server, &input, Some(round.host), round.phase, None)
    }
}

/// A [`Message`] that owns what it serves, for a request that outlives the call that started
/// it (an HTTP answer parked while it waits for the ledger).
#[derive(Clone, Debug)]
pub struct OwnedMessage<F> {
    pub server: Arc<Server<F>>,
    pub message: ClientMessage,
    pub facts: TransportFacts,
    pub caps: ClientCaps,
}

impl<F> OwnedMessage<F> {
    /// The [`Message`] that serves what this one owns.
    fn borrowed(&self) -> Message<'_, F> {
        Message {
            server: &self.server,
            message: &self.message,
            facts: &self.facts,
            caps: self.caps,
        }
    }
}

impl<F: Fold> Job for OwnedMessage<F> {
    type Fold = F;
    fn run(&mut self, round: Round<'_, F>) -> Outcome {
        self.borrowed().run(round)
    }
}

/// A job handed to the engine by a caller that is not a connection ([`Engine::submit`]): an
/// operator's command from the command line, a message of an in-process client. It must own
/// what it reads (the engine keeps it until its answer).
///
/// [`Engine::submit`]: super::Engine::submit
pub type Submitted<F> = Box<dyn Job<Fold = F> + Send>;

/// What one of the engine's requests runs: a message a connection framed, or a submitted job.
pub(crate) enum Work<F> {
    Message(OwnedMessage<F>),
    Submitted(Submitted<F>),
}

impl<F> Work<F> {
    /// A message a connection framed, served by `server`; what its client declared it can be
    /// asked is the connection's, set as the engine starts it.
    pub(crate) fn message(
        server: &Arc<Server<F>>,
        message: ClientMessage,
        facts: TransportFacts,
    ) -> Work<F> {
        Work::Message(OwnedMessage {
            server: server.clone(),
            message,
            facts,
            caps: ClientCaps::NONE,
        })
    }
}

impl<F> std::fmt::Debug for Work<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Work::Message(m) => f
                .debug_tuple("Message")
                .field(&m.message.bytes().len())
                .finish(),
            Work::Submitted(_) => f.write_str("Submitted"),
        }
    }
}

impl<F: Fold> Job for Work<F> {
    type Fold = F;
    fn run(&mut self, round: Round<'_, F>) -> Outcome {
        match self {
            Work::Message(m) => m.borrowed().run(round),
            Work::Submitted(job) => job.run(round),
        }
    }
}
