//! Leases end to end through the tools: grant, renewal by the claimer's messages, reclaim
//! after expiry (recorded, exactly once, verifiable), and the old claimer refused as stale.

use super::*;
use crate::lease::{TASK_LEASE, TASK_RECLAIMED, TaskReclaimed};
use crate::testkit::Bench;
use bernstein_core::Timestamp;
use serde_json::json;

fn claim(b: &mut Bench, claimer: &str, lease: u64) -> ClaimReceipt {
    serde_json::from_value(b.ok(NAME, json!({"claimer_id": claimer, "lease_seconds": lease})))
        .unwrap()
}

fn post(b: &mut Bench, task: &str, sender: &str, status: Option<&str>) -> Result<(), String> {
    let mut args = json!({"task_id": task, "body": "working", "kind": "finding", "sender": sender});
    if let Some(s) = status {
        args["status"] = json!(s);
    }
    b.call("bernstein_post_message", args)
        .result
        .map(drop)
        .map_err(|e| e.error.to_string())
}

fn verifies(b: &Bench, r: &ClaimReceipt) {
    assert_eq!(super::tests::verify(b, r), Ok(()));
}

#[test]
fn a_claim_carries_a_lease_and_the_claimers_messages_renew_it() {
    let mut b = Bench::new();
    let t = b.start("work");
    let granted_at = b.now.0;
    let r = claim(&mut b, "w1", 60);
    let task = r.task.clone().expect("a grant carries the task");
    assert_eq!(task.goal, "work");
    assert_eq!(task.previous_status, TaskStatus::Open);
    assert_eq!(task.lease_expires_at, granted_at + 60_000);
    let row = b.snapshot.domain.task(&t).unwrap();
    assert_eq!(row.rare.lease_expires_at, Some(granted_at + 60_000));
    assert_eq!(row.rare.lease_ms, Some(60_000));
    b.now = Timestamp(granted_at + 50_000);
    post(&mut b, &t, "w1", Some("in_progress")).unwrap();
    let row = b.snapshot.domain.task(&t).unwrap();
    assert_eq!(row.status, TaskStatus::InProgress);
    assert_eq!(row.rare.lease_expires_at, Some(granted_at + 110_000));
    // Someone else's message does not renew it.
    post(&mut b, &t, "operator", None).unwrap();
    let row = b.snapshot.domain.task(&t).unwrap();
    assert_eq!(row.rare.lease_expires_at, Some(granted_at + 110_000));
    verifies(&b, &r);
}

#[test]
fn an_expired_lease_is_reclaimed_once_and_the_old_claimer_is_stale() {
    let mut b = Bench::new();
    let t = b.start("work");
    let first = claim(&mut b, "w1", 5);
    post(&mut b, &t, "w1", Some("in_progress")).unwrap();
    let expiry = b
        .snapshot
        .domain
        .task(&t)
        .unwrap()
        .rare
        .lease_expires_at
        .unwrap();
    // Not yet expired: nothing to offer.
    b.now = Timestamp(expiry);
    assert!(!claim(&mut b, "w2", 5).granted);
    b.now = Timestamp(expiry + 1);
    let second = claim(&mut b, "w2", 5);
    assert!(second.granted);
    assert_eq!(second.task_id, t);
    let task = second.task.clone().unwrap();
    assert_eq!(task.previous_status, TaskStatus::InProgress);
    assert_eq!(task.reclaimed_from.as_deref(), Some("w1"));
    let row = b.snapshot.domain.task(&t).unwrap();
    assert_eq!(
        (row.status, row.claimer.as_deref(), row.attempts),
        (TaskStatus::Claimed, Some("w2"), 2)
    );
    // The reclaim is recorded with the previous claimer and the expiry.
    let rec = b
        .log
        .iter()
        .rev()
        .find(|r| r.kind == TASK_RECLAIMED)
        .expect("a task.reclaimed record");
    let body: TaskReclaimed = serde_json::from_value(rec.body.clone()).unwrap();
    assert_eq!(
        (
            body.previous_claimer_id.as_str(),
            body.claimer_id.as_str(),
            body.expired_at
        ),
        ("w1", "w2", expiry)
    );
    // Exactly once: the new lease is live, a third claimer gets nothing.
    assert!(!claim(&mut b, "w3", 5).granted);
    // The old claimer's verbs are refused.
    assert_eq!(post(&mut b, &t, "w1", None).unwrap_err(), "stale_claim");
    assert_eq!(
        post(&mut b, &t, "w1", Some("failed")).unwrap_err(),
        "stale_claim"
    );
    // Both receipts verify offline (the reclaim's decision is re-run at its recorded time).
    verifies(&b, &first);
    verifies(&b, &second);
    // The old claimer cannot complete it; the new claimer finishes it.
    let e = b.refused(
        "bernstein_complete",
        json!({"task_id": t, "result_summary": "late", "claimer_id": "w1"}),
    );
    assert_eq!(e.error, "stale_claim");
    post(&mut b, &t, "w2", Some("in_progress")).unwrap();
    b.ok(
        "bernstein_complete",
        json!({"task_id": t, "result_summary": "done by w2", "claimer_id": "w2"}),
    );
    assert_eq!(b.status_of(&t), TaskStatus::Done);
    assert!(
        b.snapshot
            .domain
            .task(&t)
            .unwrap()
            .rare
            .lease_expires_at
            .is_none()
    );
    assert_eq!(b.snapshot.domain.ignored_records(), 0);
}

#[test]
fn lease_bounds_are_checked() {
    let mut b = Bench::new();
    b.start("work");
    for bad in [0u64, 86_401] {
        let e = b.refused(NAME, json!({"claimer_id": "w", "lease_seconds": bad}));
        assert_eq!(e.error, "invalid_arguments");
    }
    let leases = b.log.iter().filter(|r| r.kind == TASK_LEASE).count();
    assert_eq!(leases, 0);
}

/// A reference model of leases, written out independently of the tools: random claims,
/// messages, starts, completions and clock jumps, and after every step the tools answer and
/// the projection holds exactly what the model says; at the end every receipt verifies.
mod model {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;

    #[derive(Clone, Debug)]
    enum Op {
        Run,
        Claim(usize, u64),
        Post(usize, usize),
        Start(usize, usize),
        Complete(usize),
        Advance(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            2 => Just(Op::Run),
            3 => (0..3usize, 1..4u64).prop_map(|(c, s)| Op::Claim(c, s)),
            2 => (0..3usize, any::<usize>()).prop_map(|(c, t)| Op::Post(c, t)),
            2 => (0..3usize, any::<usize>()).prop_map(|(c, t)| Op::Start(c, t)),
            1 => any::<usize>().prop_map(Op::Complete),
            3 => (0..6000u64).prop_map(Op::Advance),
        ]
    }

    #[derive(Clone, Debug, PartialEq)]
    struct Held {
        claimer: String,
        expires_at: u64,
        lease_ms: u64,
        started: bool,
    }

    #[derive(Clone, Debug, Default)]
    struct Model {
        ids: Vec<String>,
        done: BTreeSet<usize>,
        held: BTreeMap<usize, Held>,
        reclaimed_from: BTreeMap<usize, BTreeSet<String>>,
    }

    impl Model {
        fn stale(&self, t: usize, c: &str) -> bool {
            self.held.get(&t).map(|h| h.claimer.as_str()) != Some(c)
                && self.reclaimed_from.get(&t).is_some_and(|s| s.contains(c))
        }

        /// The task a claim at `now` gets, and whether it is a reclaim.
        fn pick(&self, now: u64) -> Option<(usize, bool)> {
            let expired = self
                .held
                .iter()
                .filter(|(_, h)| h.expires_at < now)
                .min_by_key(|(t, h)| (h.expires_at, **t))
                .map(|(t, _)| (*t, true));
            expired.or_else(|| {
                (0..self.ids.len())
                    .find(|t| !self.done.contains(t) && !self.held.contains_key(t))
                    .map(|t| (t, false))
            })
        }
    }

    fn name(c: usize) -> String {
        format!("w{c}")
    }

    fn message(b: &mut Bench, id: &str, c: &str, status: Option<&str>) -> Result<(), String> {
        post(b, id, c, status)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        #[test]
        fn leases_agree_with_the_model(ops in proptest::collection::vec(op(), 1..40)) {
            let mut b = Bench::new();
            let mut m = Model::default();
            let mut receipts = Vec::new();
            for op in ops {
                let now = b.now.0;
                match op {
                    Op::Run => m.ids.push(b.start("job")),
                    Op::Advance(ms) => b.now = bernstein_core::Timestamp(now + ms),
                    Op::Claim(c, secs) => {
                        let r = claim(&mut b, &name(c), secs);
                        match m.pick(now) {
                            None => prop_assert!(!r.granted),
                            Some((t, reclaim)) => {
                                prop_assert_eq!(&r.task_id, &m.ids[t]);
                                if reclaim {
                                    let prev = m.held[&t].claimer.clone();
                                    m.reclaimed_from.entry(t).or_default().insert(prev);
                                }
                                m.held.insert(t, Held {
                                    claimer: name(c),
                                    expires_at: now + secs * 1000,
                                    lease_ms: secs * 1000,
                                    started: false,
                                });
                            }
                        }
                        receipts.push(r);
                    }
                    Op::Post(c, t) | Op::Start(c, t) if !m.ids.is_empty() => {
                        let t = t % m.ids.len();
                        let id = m.ids[t].clone();
                        let who = name(c);
                        let start = matches!(op, Op::Start(..));
                        let got = message(&mut b, &id, &who, start.then_some("in_progress"));
                        let want = if m.done.contains(&t) {
                            Err("task_finished".to_string())
                        } else if m.stale(t, &who) {
                            Err("stale_claim".to_string())
                        } else if start && m.held.get(&t).map(|h| h.claimer.as_str()) != Some(who.as_str()) {
                            Err("not_claimer".to_string())
                        } else {
                            Ok(())
                        };
                        prop_assert_eq!(&got, &want);
                        if got.is_ok()
                            && let Some(h) = m.held.get_mut(&t)
                            && h.claimer == who
                        {
                            h.expires_at = now + h.lease_ms;
                            h.started |= start;
                        }
                    }
                    Op::Complete(t) if !m.ids.is_empty() => {
                        let t = t % m.ids.len();
                        let out = b.call(
                            "bernstein_complete",
                            json!({"task_id": m.ids[t], "result_summary": "ok"}),
                        );
                        prop_assert_eq!(out.result.is_ok(), !m.done.contains(&t));
                        m.done.insert(t);
                        m.held.remove(&t);
                    }
                    Op::Post(..) | Op::Start(..) | Op::Complete(_) => {}
                }
                let p = &b.snapshot.domain;
                prop_assert_eq!(p.ignored_records(), 0);
                for (t, id) in m.ids.iter().enumerate() {
                    let row = p.task(id).unwrap();
                    let want_status = if m.done.contains(&t) {
                        TaskStatus::Done
                    } else {
                        match m.held.get(&t) {
                            Some(h) if h.started => TaskStatus::InProgress,
                            Some(_) => TaskStatus::Claimed,
                            None => TaskStatus::Open,
                        }
                    };
                    prop_assert_eq!(row.status, want_status);
                    let held = m.held.get(&t);
                    // A finished task keeps its last claimer as history.
                    if !m.done.contains(&t) {
                        prop_assert_eq!(row.claimer.as_deref(), held.map(|h| h.claimer.as_str()));
                    }
                    prop_assert_eq!(row.rare.lease_expires_at, held.map(|h| h.expires_at));
                }
            }
            // Exactly one reclaim per expired lease.
            let mut seen = BTreeSet::new();
            for rec in b.log.iter().filter(|r| r.kind == TASK_RECLAIMED) {
                let body: TaskReclaimed = serde_json::from_value(rec.body.clone()).unwrap();
                prop_assert!(body.at > body.expired_at);
                prop_assert!(seen.insert((body.task_id, body.expired_at)));
            }
            for r in &receipts {
                prop_assert_eq!(super::super::tests::verify(&b, r), Ok(()));
            }
        }
    }
}
