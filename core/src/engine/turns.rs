//! Fairness under contention, as a policy over tickets. Compare-and-append is optimistic: a
//! request that keeps losing the race for the head could be re-run until it gives up. So once
//! a request has lost once it counts itself as contended and queues for the one turn; while
//! anyone is contended, new requests queue for the turn too. Writers sharing one [`Turns`]
//! then append one at a time, in arrival order, until the contention clears; only writers of
//! other processes still race (the engine pauses with jitter after repeated losses).
//! Uncontended requests never queue.
//!
//! The engine keeps one `Turns` and parks a queued request until [`Turns::holds`] says its
//! ticket has the turn; the decisions are all here.

use std::collections::VecDeque;

/// One request's place at the turn, handed out by [`Turns::ticket`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(u64);

/// What [`Turns::request`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Nobody is contended: go on without the turn.
    NotNeeded,
    /// The ticket holds the turn now.
    Granted,
    /// The ticket waits in line; it holds the turn once [`Turns::holds`] says so.
    Queued,
}

/// The turn and its line.
#[derive(Debug, Default)]
pub struct Turns {
    contended: usize,
    holder: Option<Ticket>,
    line: VecDeque<Ticket>,
    issued: u64,
}

impl Turns {
    pub const fn new() -> Turns {
        Turns {
            contended: 0,
            holder: None,
            line: VecDeque::new(),
            issued: 0,
        }
    }

    /// A fresh ticket for one request.
    pub fn ticket(&mut self) -> Ticket {
        self.issued += 1;
        Ticket(self.issued)
    }

    /// Asks for the turn. With `only_if_contended` (a request starting a round) the turn is
    /// taken only while some request is contended; `contend` (a request that just lost its
    /// first race) counts the ticket as contended first.
    pub fn request(&mut self, ticket: Ticket, only_if_contended: bool, contend: bool) -> Grant {
        if contend {
            self.contended += 1;
        }
        if self.holds(ticket) || self.line.contains(&ticket) {
            return if self.holds(ticket) {
                Grant::Granted
            } else {
                Grant::Queued
            };
        }
        if only_if_contended && self.contended == 0 {
            return Grant::NotNeeded;
        }
        if self.holder.is_none() {
            self.holder = Some(ticket);
            Grant::Granted
        } else {
            self.line.push_back(ticket);
            Grant::Queued
        }
    }

    /// Whether `ticket` holds the turn.
    pub fn holds(&self, ticket: Ticket) -> bool {
        self.holder == Some(ticket)
    }

    /// Gives up the turn (or the place in line) of `ticket`, handing the turn to the next in
    /// line; `uncount` ends the ticket's contention.
    pub fn leave(&mut self, ticket: Ticket, uncount: bool) {
        if uncount {
            self.contended = self.contended.saturating_sub(1);
        }
        if self.holds(ticket) {
            self.holder = self.line.pop_front();
        } else {
            self.line.retain(|t| *t != ticket);
        }
    }

    /// How many requests are contended now.
    pub fn contended(&self) -> usize {
        self.contended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncontended_requests_never_queue() {
        let mut turns = Turns::new();
        let a = turns.ticket();
        assert_eq!(turns.request(a, true, false), Grant::NotNeeded);
        assert!(!turns.holds(a));
    }

    #[test]
    fn contended_requests_take_turns_in_arrival_order() {
        let mut turns = Turns::new();
        let (a, b, c) = (turns.ticket(), turns.ticket(), turns.ticket());
        assert_eq!(turns.request(a, false, true), Grant::Granted);
        // While a is contended, a new request queues even if it has not lost yet.
        assert_eq!(turns.request(b, true, false), Grant::Queued);
        assert_eq!(turns.request(c, false, true), Grant::Queued);
        assert_eq!(turns.contended(), 2);
        turns.leave(a, true);
        assert!(turns.holds(b) && !turns.holds(c));
        turns.leave(b, false);
        assert!(turns.holds(c));
        turns.leave(c, true);
        assert_eq!(turns.contended(), 0);
        let d = turns.ticket();
        assert_eq!(turns.request(d, true, false), Grant::NotNeeded);
    }

    #[test]
    fn leaving_the_line_hands_nothing_over() {
        let mut turns = Turns::new();
        let (a, b, c) = (turns.ticket(), turns.ticket(), turns.ticket());
        turns.request(a, false, true);
        turns.request(b, false, false);
        turns.request(c, false, false);
        turns.leave(b, false);
        assert!(turns.holds(a));
        turns.leave(a, true);
        assert!(turns.holds(c));
    }

    #[test]
    fn asking_again_keeps_the_turn() {
        let mut turns = Turns::new();
        let a = turns.ticket();
        assert_eq!(turns.request(a, false, true), Grant::Granted);
        assert_eq!(turns.request(a, false, false), Grant::Granted);
        assert_eq!(turns.contended(), 1);
    }
}
