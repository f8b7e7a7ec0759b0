use super::*;
use crate::ledger::Snapshot;

fn w(uri: &str, stream: Option<&str>, text: &str) -> Watched {
    Watched {
        uri: uri.into(),
        digest: Digest::of(text.as_bytes()),
        stream: stream.map(String::from),
    }
}

/// A head at `seq` whose streams end at the given digests.
fn head(seq: u64, streams: &[(&str, &str)]) -> Snapshot<()> {
    let mut s = Snapshot::<()> {
        position: LedgerPosition {
            seq,
            head: Digest::of(&seq.to_le_bytes()),
        },
        ..Default::default()
    };
    for (name, at) in streams {
        s.stream_heads
            .insert((*name).into(), Digest::of(at.as_bytes()));
    }
    s
}

fn limits(per_connection: usize, total: usize) -> SubscriptionLimits {
    SubscriptionLimits {
        per_connection,
        total,
    }
}

#[test]
fn only_resources_of_a_moved_stream_are_due() {
    let mut subs = Subscriptions::new(SubscriptionLimits::default());
    subs.subscribe(1u64, w("r://a", Some("run:a"), "a0"))
        .unwrap();
    subs.subscribe(1u64, w("r://b", Some("run:b"), "b0"))
        .unwrap();
    assert_eq!(
        subs.due(&head(1, &[("run:a", "1"), ("run:b", "1")])).len(),
        2,
        "first look"
    );
    assert!(
        subs.due(&head(1, &[("run:a", "2")])).is_empty(),
        "the head did not move"
    );
    let due = subs.due(&head(2, &[("run:a", "2"), ("run:b", "1")]));
    let [(id, uri)] = due.as_slice() else {
        panic!("one due: {due:?}")
    };
    assert_eq!(uri, "r://a");
    assert!(
        !subs.changed(*id, "r://a", Digest::of(b"a0")),
        "same rendering"
    );
    assert!(subs.changed(*id, "r://a", Digest::of(b"a1")));
    assert!(!subs.changed(*id, "r://a", Digest::of(b"a1")));
    assert!(subs.watches_any(["run:b".to_string()].iter()));
    assert!(!subs.watches_any(["run:c".to_string()].iter()));
}

#[test]
fn a_resource_of_no_one_stream_is_due_whenever_the_head_moves() {
    let mut subs = Subscriptions::new(SubscriptionLimits::default());
    subs.subscribe(1u64, w("r://head", None, "h")).unwrap();
    assert!(subs.watches_any(std::iter::empty()));
    assert_eq!(subs.due(&head(1, &[])).len(), 1);
    assert!(subs.due(&head(1, &[])).is_empty());
    assert_eq!(subs.due(&head(2, &[])).len(), 1);
}

#[test]
fn caps_count_resources_per_connection_and_in_all() {
    let mut subs = Subscriptions::new(limits(2, 3));
    subs.subscribe(1u64, w("r://a", Some("s"), "")).unwrap();
    subs.subscribe(1u64, w("r://a", Some("s"), "again"))
        .unwrap();
    subs.subscribe(1u64, w("r://b", Some("s"), "")).unwrap();
    assert_eq!(
        subs.subscribe(1u64, w("r://c", Some("s"), "")),
        Err(Full::Connection(2))
    );
    assert_eq!(
        subs.listen(
            2u64,
            "1".into(),
            vec![w("r://a", None, ""), w("r://b", None, "")]
        ),
        Err(Full::Server(3))
    );
    let id = subs
        .listen(2u64, "1".into(), vec![w("r://a", None, "")])
        .unwrap();
    assert_eq!(subs.held(), 3);
    assert!(
        Full::Server(3)
            .message()
            .contains("BERNSTEIN_MCP_MAX_SUBSCRIPTIONS")
    );
    assert_eq!(subs.end(id), Some((2u64, Some("1".into()))));
    assert!(subs.unsubscribe(1u64, "r://a"));
    assert!(!subs.unsubscribe(1u64, "r://a"), "held once");
    assert_eq!(subs.held(), 1);
    subs.subscribe(2u64, w("r://c", Some("t"), "")).unwrap();
}

#[test]
fn a_closed_connection_drops_everything_it_held() {
    let mut subs = Subscriptions::new(SubscriptionLimits::default());
    subs.subscribe(1u64, w("r://a", Some("s"), "")).unwrap();
    let l = subs
        .listen(1u64, "\"x\"".into(), vec![w("r://b", None, "")])
        .unwrap();
    subs.listen(2u64, "\"x\"".into(), vec![]).unwrap();
    assert_eq!(subs.tagged("\"x\"").len(), 2);
    assert_eq!(subs.listens().len(), 2);
    assert_eq!(subs.sink(l), Some((1u64, Some("\"x\""))));
    assert_eq!(subs.end_conn(1u64), vec![(l, "\"x\"".to_string())]);
    assert_eq!(subs.held(), 0);
    assert!(!subs.watches_any(["s".to_string()].iter()));
    assert!(subs.due(&head(1, &[("s", "1")])).is_empty());
    assert_eq!(subs.tagged("\"x\"").len(), 1);
    subs.end_conn(2u64);
    assert!(subs.is_empty());
}
