//! Group commit of reads' audit records: the `mcp.stateless_call` records of calls that
//! succeeded and wrote nothing (`bernstein_ledger::rebase`) queue here, and one waiting thread at
//! a time (the leader) seals the whole queue after the head it reads and inserts it in one
//! database transaction while the others wait for its outcome. Since such a record may be
//! sealed again after a later head, a leader that loses the race for the head to another
//! instance reads the new head and tries again instead of refusing the calls: reads of many
//! instances no longer refuse one another.
//!
//! It must never hand a waiter another waiter's outcome, and never leave waiters behind when a
//! leader fails or panics: every ticket taken gets exactly one outcome.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(test)]
use bernstein_ledger::Draft;
use bernstein_ledger::LedgerPosition;

/// Most records one leader commits at once (the rest wait for the next leader).
pub const MAX_BATCH: usize = 512;

/// What became of one queued record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Committed (durable) at this position.
    Committed(LedgerPosition),
    /// Not written: the record may not be placed after another head; serve the call again from
    /// this head.
    Stale(LedgerPosition),
    /// Not acknowledged: the store failed (whether it landed shows in the ledger).
    Failed(String),
}

/// The queue of `T`s (what a leader needs to seal one record) and who leads it.
#[derive(Debug)]
pub struct Group<T> {
    queue: Mutex<Queue<T>>,
    settled: Condvar,
}

impl<T> Default for Group<T> {
    fn default() -> Self {
        Group {
            queue: Mutex::new(Queue {
                next: 0,
                pending: Vec::new(),
                leading: false,
                outcomes: HashMap::new(),
            }),
            settled: Condvar::new(),
        }
    }
}

#[derive(Debug)]
struct Queue<T> {
    next: u64,
    pending: Vec<(u64, T)>,
    leading: bool,
    outcomes: HashMap<u64, Outcome>,
}

impl<T> Group<T> {
    /// Queues `draft` and returns its outcome: as the leader, `commit` is called with the
    /// queue (oldest first) and must answer one outcome per ticket it was given.
    pub fn submit(
        &self,
        draft: T,
        mut commit: impl FnMut(Vec<(u64, T)>) -> Vec<(u64, Outcome)>,
    ) -> Outcome {
        let mut q = self.lock();
        let ticket = q.next;
        q.next += 1;
        q.pending.push((ticket, draft));
        loop {
            if let Some(outcome) = q.outcomes.remove(&ticket) {
                return outcome;
            }
            if q.leading {
                q = self.settled.wait(q).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            q.leading = true;
            let take = q.pending.len().min(MAX_BATCH);
            let batch: Vec<(u64, T)> = q.pending.drain(..take).collect();
            drop(q);
            let mut lead = Lead {
                group: self,
                tickets: batch.iter().map(|(t, _)| *t).collect(),
                settled: false,
            };
            let outcomes = commit(batch);
            lead.settle(outcomes);
            q = self.lock();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue<T>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A leader's batch: settled with the outcomes, or failed when dropped unsettled (a panic).
struct Lead<'a, T> {
    group: &'a Group<T>,
    tickets: Vec<u64>,
    settled: bool,
}

impl<T> Lead<'_, T> {
    fn settle(&mut self, outcomes: Vec<(u64, Outcome)>) {
        let mut q = self.group.lock();
        for (ticket, outcome) in outcomes {
            if let Some(i) = self.tickets.iter().position(|t| *t == ticket) {
                self.tickets.swap_remove(i);
                q.outcomes.insert(ticket, outcome);
            }
        }
        for ticket in self.tickets.drain(..) {
            q.outcomes.insert(
                ticket,
                Outcome::Failed("the group commit gave this record no outcome".into()),
            );
        }
        q.leading = false;
        self.settled = true;
        drop(q);
        self.group.settled.notify_all();
    }
}

impl<T> Drop for Lead<'_, T> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let mut q = self.group.lock();
        for ticket in self.tickets.drain(..) {
            q.outcomes.insert(
                ticket,
                Outcome::Failed("the group commit's leader failed".into()),
            );
        }
        q.leading = false;
        drop(q);
        self.group.settled.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bernstein_ledger::digest::Digest;
    use serde_json::json;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn draft(n: u64) -> Draft {
        Draft::new(
            "audit",
            bernstein_ledger::audit::CALL_KIND,
            json!({ "n": n }),
        )
    }

    fn at(seq: u64) -> LedgerPosition {
        LedgerPosition {
            seq,
            head: Digest::ZERO,
        }
    }

    #[test]
    fn every_waiter_gets_its_own_outcome_and_batches_form() {
        let group = Arc::new(Group::<Draft>::default());
        let commits = Arc::new(AtomicUsize::new(0));
        let seq = Arc::new(Mutex::new(0u64));
        let threads: Vec<_> = (0..32u64)
            .map(|n| {
                let (group, commits, seq) = (group.clone(), commits.clone(), seq.clone());
                std::thread::spawn(move || {
                    let out = group.submit(draft(n), |batch| {
                        commits.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        let mut s = seq.lock().unwrap();
                        batch
                            .into_iter()
                            .map(|(t, d)| {
                                *s += 1;
                                // The position says which draft it was, to check the routing.
                                let n = d.body["n"].as_u64().unwrap();
                                (t, Outcome::Committed(at(1000 * n + *s)))
                            })
                            .collect()
                    });
                    match out {
                        Outcome::Committed(p) => assert_eq!(p.seq / 1000, n),
                        other => panic!("{other:?}"),
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*seq.lock().unwrap(), 32);
        let commits = commits.load(Ordering::SeqCst);
        assert!(
            commits < 32,
            "{commits} commits for 32 records: no batch formed"
        );
    }

    #[test]
    fn a_leader_that_panics_fails_its_batch_and_the_next_one_leads() {
        let group = Arc::new(Group::<Draft>::default());
        let g = group.clone();
        let panicked = std::thread::spawn(move || {
            g.submit(draft(1), |_| panic!("the database client panicked"))
        })
        .join();
        assert!(panicked.is_err());
        let out = group.submit(draft(2), |batch| {
            batch
                .into_iter()
                .map(|(t, _)| (t, Outcome::Committed(at(7))))
                .collect()
        });
        assert_eq!(out, Outcome::Committed(at(7)));
    }

    #[test]
    fn a_ticket_left_without_outcome_fails_instead_of_hanging() {
        let group = Group::<Draft>::default();
        let out = group.submit(draft(1), |_| Vec::new());
        assert!(matches!(out, Outcome::Failed(_)), "{out:?}");
    }
}
