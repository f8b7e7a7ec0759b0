//! What a request runs against each snapshot. Every writer commits through the same
//! [`Request`](super::Request) state machine, whatever it runs: an MCP message through the
//! server ([`Message`]), or an operator's command from the command line (the CLI's own job).

use std::sync::Arc;

use crate::ledger::Snapshot;
use crate::protocol::host::HostReply;
use crate::protocol::{self, Outcome, Phase, Server, TransportFacts};
use crate::time::Timestamp;

/// One run of a job: the snapshot it decides on, the time, the host's replies so far and the
/// phase of the wait.
#[derive(Clone, Copy, Debug)]
pub struct Round<'a> {
    pub snapshot: &'a Snapshot,
    pub now: Timestamp,
    pub host: &'a [HostReply],
    pub phase: Phase,
}

/// A decision taken on a snapshot: the records to commit (`Outcome::append`, sealed against
/// that snapshot's position), what to answer, and whether to wait or ask the host first. It
/// may run many times (once per lost race, per host round, per wait); only the last run's
/// records are committed.
pub trait Job {
    fn run(&mut self, round: Round<'_>) -> Outcome;
}

impl<J: Job + ?Sized> Job for &mut J {
    fn run(&mut self, round: Round<'_>) -> Outcome {
        (**self).run(round)
    }
}

/// An MCP message (a stdio line, an HTTP body) served by `server`.
#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    pub server: &'a Server,
    pub bytes: &'a [u8],
    pub facts: &'a TransportFacts,
}

impl Job for Message<'_> {
    fn run(&mut self, round: Round<'_>) -> Outcome {
        self.server.handle_round(
            &protocol::Input {
                bytes: self.bytes,
                snapshot: round.snapshot,
                now: round.now,
                transport: self.facts,
            },
            round.host,
            round.phase,
        )
    }
}

/// A [`Message`] that owns what it serves, for a request that outlives the call that started
/// it (an HTTP answer parked while it waits for the ledger).
#[derive(Clone, Debug)]
pub struct OwnedMessage {
    pub server: Arc<Server>,
    pub bytes: Vec<u8>,
    pub facts: TransportFacts,
}

impl Job for OwnedMessage {
    fn run(&mut self, round: Round<'_>) -> Outcome {
        Message {
            server: &self.server,
            bytes: &self.bytes,
            facts: &self.facts,
        }
        .run(round)
    }
}
