//! Backpressure and the caps of long-lived streams, simulated: a client that reads nothing
//! holds the bound plus one answer (the engine starts nothing more on its connection, however
//! much is framed behind) and is served on once it reads; stdio is never held back; legacy
//! streams and feeds are capped per peer and in all, the one idle longest making room for a
//! new one; a feed with no new head, and a stream or feed whose client stopped reading, are
//! closed.

use core::time::Duration;

use super::{call, http_world, ids, line, open_stream, post_call, server};
use crate::engine::server::ConnId;
use crate::engine::sim::{World, get, post, responses};
use crate::transport::http::{HttpLimits, HttpResponse, Status};

const BOUND: usize = 4096;
const SECOND: Duration = Duration::from_secs(1);
const EVICTED: &str = ": closed for a newer stream (the cap is reached)\n\n";

fn small_bound(l: &mut HttpLimits) {
    l.max_unsent_bytes = BOUND;
}

fn open_feed(w: &mut World<()>, conn: u64, peer: &str) -> String {
    w.connect(conn, peer);
    w.bytes(conn, &get("/api/events", &[]));
    w.take_text(conn)
}

fn open_stream_from(w: &mut World<()>, conn: u64, peer: &str) -> String {
    w.connect(conn, peer);
    w.bytes(conn, &get("/sse", &["Accept: text/event-stream"]));
    let text = w.take_text(conn);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let at = text.find("/messages?stream=").expect("an endpoint event") + 17;
    text[at..].split('\n').next().unwrap().to_string()
}

fn message(token: &str, id: u64) -> Vec<u8> {
    post(&format!("/messages?stream={token}"), &call(id), &[])
}

fn refusal(bytes: &[u8]) -> (u16, String) {
    let r = responses(bytes);
    let body: serde_json::Value = serde_json::from_slice(&r[0].1).unwrap();
    (
        r[0].0,
        body["message"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn a_client_that_reads_nothing_is_answered_up_to_the_bound_and_served_on_once_it_reads() {
    let mut w = http_world(small_bound);
    w.connect(1, "127.0.0.1:40000");
    w.stall(1);
    let pipelined: Vec<u8> = (1..=100).flat_map(post_call).collect();
    w.bytes(1, &pipelined);
    let first = ids(&w.take(1));
    let answered = first.len() as u64;
    assert!((2..100).contains(&answered), "{answered} answered");
    assert_eq!(first, (1..=answered).collect::<Vec<_>>());
    // It stopped at the first answer that took it over the bound.
    let unsent = w.unread[&ConnId(1)];
    let per_answer = unsent / first.len();
    assert!(
        unsent > BOUND && unsent <= BOUND + per_answer + 8,
        "{unsent}"
    );
    assert!(w.engine.blocked_on_output(ConnId(1)));
    assert!(!w.engine.wants_bytes(ConnId(1)), "not read meanwhile");
    // Nothing more starts on it however long it waits (its runtime's write timeout closes it),
    // and its read clock does not close it as idle meanwhile; others are served.
    let appended = w.appends;
    w.advance(Duration::from_secs(120));
    assert!(w.take(1).is_empty() && w.closed.is_empty());
    assert_eq!(w.appends, appended, "no request started");
    w.connect(2, "127.0.0.1:40001");
    w.bytes(2, &post_call(500));
    assert_eq!(ids(&w.take(2)), vec![500]);
    // A read that leaves it over the bound changes nothing; under it, the next bound's worth.
    w.read_until(1, BOUND + 1);
    assert!(w.take(1).is_empty());
    w.read_until(1, BOUND / 2);
    let next = ids(&w.take(1));
    assert_eq!(next.first(), Some(&(answered + 1)));
    assert!(next.len() < 100 - first.len());
    // It reads again: everything is answered, in order, once.
    w.read_all(1);
    let rest = ids(&w.take(1));
    let all: Vec<u64> = first.iter().chain(&next).chain(&rest).copied().collect();
    assert_eq!(all, (1..=100).collect::<Vec<_>>());
    assert!(w.engine.wants_bytes(ConnId(1)));
    assert_eq!(w.engine.conns_blocked_on_output().count(), 0);
    // Its read clock started again from the drain: a kept-alive connection idles from there.
    assert!(w.closed.is_empty());
    w.advance(Duration::from_secs(31));
    assert_eq!(w.closed.get(&ConnId(1)), Some(&false));
}

#[test]
fn a_blocked_connection_whose_socket_breaks_is_closed_and_what_is_framed_dropped() {
    let mut w = http_world(small_bound);
    w.connect(1, "127.0.0.1:40000");
    w.stall(1);
    let pipelined: Vec<u8> = (1..=40).flat_map(post_call).collect();
    w.bytes(1, &pipelined);
    assert!(w.engine.blocked_on_output(ConnId(1)));
    let answered = ids(&w.take(1)).len();
    let appended = w.appends;
    // The runtime's write timed out: it dropped the socket and says so (no drain will come).
    w.hang_up(1);
    assert_eq!(w.closed.get(&ConnId(1)), Some(&false));
    assert!(w.take(1).is_empty() && answered < 40);
    assert_eq!(w.appends, appended, "what was framed behind is not served");
    assert_eq!(w.engine.counters().connections, 0);
    assert_eq!(w.engine.conns_blocked_on_output().count(), 0);
    assert!(w.engine.is_idle());
}

#[test]
fn a_client_that_reads_costs_one_report_a_bound_of_answers() {
    let mut w = http_world(small_bound);
    w.connect(1, "127.0.0.1:40000");
    let pipelined: Vec<u8> = (1..=100).flat_map(post_call).collect();
    w.bytes(1, &pipelined);
    let sent = w.take(1);
    assert_eq!(ids(&sent), (1..=100).collect::<Vec<_>>());
    let reports = w.drains;
    assert!(
        reports >= 1 && reports <= sent.len() / BOUND + 1,
        "{reports} reports for {} bytes",
        sent.len()
    );
}

#[test]
fn pipelined_operator_routes_wait_for_the_client_to_read_their_answers() {
    let mut w = http_world(small_bound);
    w.connect(1, "127.0.0.1:40000");
    w.stall(1);
    let scrapes: Vec<u8> = (0..50).flat_map(|_| get("/metrics", &[])).collect();
    w.bytes(1, &scrapes);
    let scrape = || {
        let mut r = HttpResponse::new(Status::OK, "s");
        r.body = vec![b'x'; 3000];
        r
    };
    assert_eq!(w.operator.len(), 1, "one route at a time");
    w.answer_operator(scrape());
    assert_eq!(
        w.operator.len(),
        1,
        "under the bound: the next route is asked"
    );
    w.answer_operator(scrape());
    assert!(w.operator.is_empty(), "over it: the next one is not");
    assert_eq!(responses(&w.take(1)).len(), 2);
    w.advance(Duration::from_secs(60));
    assert!(w.operator.is_empty());
    w.read_all(1);
    for _ in 0..48 {
        w.answer_operator(scrape());
    }
    assert_eq!(responses(&w.take(1)).len(), 48);
    assert!(w.operator.is_empty());
}

#[test]
fn stdio_answers_are_never_held_back() {
    let mut w = World::stdio(server(1 << 20));
    // Its writes block: the runtime never reports it, and nothing waits for that.
    w.stall(0);
    let input: Vec<u8> = (1..=300).flat_map(|i| line(&call(i))).collect();
    w.bytes(0, &input);
    let out = w.take_text(0);
    assert_eq!(out.lines().count(), 300);
    assert!(out.len() > 64 * 1024, "{}", out.len());
    assert_eq!(w.engine.max_unsent(), usize::MAX);
    assert!(!w.engine.blocked_on_output(ConnId(0)));
}

#[test]
fn at_a_feed_cap_the_feed_idle_longest_makes_room() {
    let mut w = http_world(|l| {
        l.max_legacy_streams = 4;
        l.max_streams_per_peer = 2;
    });
    assert!(open_feed(&mut w, 1, "127.0.0.1:42001").starts_with("HTTP/1.1 200"));
    w.advance(SECOND);
    assert!(open_feed(&mut w, 2, "127.0.0.1:42002").starts_with("HTTP/1.1 200"));
    w.advance(SECOND);
    // The peer is at its cap: its own feed idle longest is closed for its new one.
    assert!(open_feed(&mut w, 3, "127.0.0.1:42003").starts_with("HTTP/1.1 200"));
    assert_eq!(w.take_text(1), EVICTED);
    assert_eq!(w.closed.get(&ConnId(1)), Some(&false));
    assert!(
        w.logs.iter().any(|l| l.contains(
            "closed the dashboard feed of 127.0.0.1:42001 idle longest (2 s without an event) to open a new one: the cap of 2 dashboard feeds per peer address (BERNSTEIN_MCP_SSE_MAX_STREAMS_PER_PEER) is reached"
        )),
        "{:?}",
        w.logs
    );
    // Another peer's count is its own...
    w.advance(SECOND);
    assert!(open_feed(&mut w, 4, "127.0.0.2:42004").starts_with("HTTP/1.1 200"));
    w.advance(SECOND);
    assert!(open_feed(&mut w, 5, "127.0.0.2:42005").starts_with("HTTP/1.1 200"));
    assert_eq!(w.closed.len(), 1);
    // ...until the total cap: then the idle longest of anyone's makes room.
    w.advance(SECOND);
    assert!(open_feed(&mut w, 6, "127.0.0.3:42006").starts_with("HTTP/1.1 200"));
    assert!(w.closed.contains_key(&ConnId(2)));
    assert!(w.logs.iter().any(|l| l.contains(
        "to open a new one: the cap of 4 dashboard feeds (BERNSTEIN_MCP_SSE_MAX_STREAMS) is reached"
    )));
    // A feed that hears the head is no longer idle: the next to go is the oldest that did not.
    w.take(3);
    w.stall(3);
    w.connect(9, "127.0.0.1:40000");
    w.advance(SECOND);
    w.bytes(9, &post_call(1));
    assert!(w.take_text(4).contains("event: head"));
    w.advance(SECOND);
    assert!(open_feed(&mut w, 7, "127.0.0.4:42007").starts_with("HTTP/1.1 200"));
    assert!(
        w.closed.contains_key(&ConnId(3)),
        "3 heard the same head as 4, 5 and 6, but opened first"
    );
    assert_eq!(w.engine.counters().connections, 5);
    // With no place at all, a feed is refused, naming the cap.
    let mut w = http_world(|l| l.max_legacy_streams = 0);
    w.connect(1, "127.0.0.1:42001");
    w.bytes(1, &get("/api/events", &[]));
    let (status, message) = refusal(&w.take(1));
    assert_eq!(status, 503);
    assert_eq!(
        message,
        "the cap of 0 dashboard feeds (BERNSTEIN_MCP_SSE_MAX_STREAMS) is reached, none to close; retry later"
    );
    assert_eq!(w.closed.get(&ConnId(1)), Some(&false));
}

#[test]
fn a_feed_is_closed_when_it_hears_no_new_head_or_its_client_stops_reading() {
    let mut w = http_world(|l| {
        l.feed_idle = Duration::from_secs(60);
        l.max_unsent_bytes = 1024;
        l.write_timeout = Duration::from_secs(10);
    });
    open_feed(&mut w, 1, "127.0.0.1:42001");
    w.advance(Duration::from_secs(59));
    assert!(w.closed.is_empty());
    w.advance(SECOND);
    let text = w.take_text(1);
    assert!(text.contains(": keep-alive\n\n"), "{text:?}");
    assert!(
        text.ends_with(": idle timeout, closing\n\n"),
        "keep-alives are no heads: {text:?}"
    );
    assert_eq!(w.closed.get(&ConnId(1)), Some(&false));
    // A head keeps it open for another idle period.
    open_feed(&mut w, 2, "127.0.0.1:42002");
    w.advance(Duration::from_secs(40));
    w.connect(9, "127.0.0.1:40000");
    w.bytes(9, &post_call(1));
    w.advance(Duration::from_secs(59));
    assert!(!w.closed.contains_key(&ConnId(2)));
    w.advance(SECOND);
    assert!(w.closed.contains_key(&ConnId(2)));
    // Two feeds whose clients stop reading: heads are held back once they are over the bound.
    open_feed(&mut w, 3, "127.0.0.1:42003");
    open_feed(&mut w, 4, "127.0.0.1:42004");
    w.stall(3);
    w.stall(4);
    w.connect(10, "127.0.0.1:40001");
    let mut id = 10;
    while !w.engine.blocked_on_output(ConnId(4)) {
        id += 1;
        w.bytes(10, &post_call(id));
        assert_eq!(ids(&w.take(10)), vec![id]);
    }
    let unread = w.unread[&ConnId(4)];
    for _ in 0..20 {
        id += 1;
        w.bytes(10, &post_call(id));
    }
    assert_eq!(
        w.unread[&ConnId(4)],
        unread,
        "no head while it is over the bound"
    );
    assert!(unread <= 1024 + 200, "{unread}");
    // One reads before the write timeout: it hears the newest head, once.
    w.advance(Duration::from_secs(9));
    w.take(4);
    w.read_all(4);
    let caught_up = w.take_text(4);
    let newest = w.ledger.position.seq;
    assert_eq!(caught_up.matches("event: head").count(), 1, "{caught_up}");
    assert!(
        caught_up.contains(&format!("id: {newest}\n")),
        "{caught_up}"
    );
    // The other does not: closed at the write timeout.
    assert!(!w.closed.contains_key(&ConnId(3)));
    w.advance(SECOND);
    assert!(w.closed.contains_key(&ConnId(3)));
    assert!(!w.closed.contains_key(&ConnId(4)));
    assert!(
        w.logs.iter().any(|l| l
            .contains("127.0.0.1:42003: closed a dashboard feed: its client left")
            && l.contains("unread for 10s (over the bound of 1024)")),
        "{:?}",
        w.logs
    );
}

#[test]
fn at_a_stream_cap_an_idle_stream_makes_room_and_streams_serving_a_message_do_not() {
    let mut w = http_world(|l| {
        l.max_legacy_streams = 2;
        l.max_streams_per_peer = 2;
    });
    w.auto_sync = false;
    let a = open_stream_from(&mut w, 1, "127.0.0.1:41001");
    let b = open_stream_from(&mut w, 2, "127.0.0.1:41002");
    // A message for each: both serve one (its call waits for its fsync).
    w.connect(3, "127.0.0.1:41003");
    w.connect(4, "127.0.0.1:41004");
    w.bytes(3, &message(&a, 1));
    w.bytes(4, &message(&b, 2));
    w.connect(5, "127.0.0.1:41005");
    w.bytes(5, &get("/sse", &["Accept: text/event-stream"]));
    let (status, text) = refusal(&w.take(5));
    assert_eq!(status, 503);
    assert_eq!(
        text,
        "the cap of 2 legacy SSE streams per peer address (BERNSTEIN_MCP_SSE_MAX_STREAMS_PER_PEER) is reached, every one of them serving a message; retry later"
    );
    assert_eq!(w.closed.get(&ConnId(5)), Some(&false));
    assert!(
        w.logs
            .iter()
            .any(|l| l.contains("127.0.0.1:41005: 503: the cap of 2"))
    );
    // Answered, a second apart: the stream answered first is idle longest and makes room.
    w.sync();
    w.advance(SECOND);
    w.sync();
    assert_eq!(responses(&w.take(3))[0].0, 202);
    assert_eq!(responses(&w.take(4))[0].0, 202);
    w.advance(SECOND);
    open_stream_from(&mut w, 6, "127.0.0.1:41006");
    assert!(w.take_text(1).ends_with(EVICTED));
    assert_eq!(w.closed.get(&ConnId(1)), Some(&false));
    assert!(!w.closed.contains_key(&ConnId(2)));
    w.bytes(3, &message(&a, 3));
    assert_eq!(responses(&w.take(3))[0].0, 404, "its token is gone");
}

#[test]
fn messages_for_a_stream_whose_client_reads_nothing_wait_until_it_drains_or_closes() {
    let mut w = http_world(|l| {
        l.max_unsent_bytes = 1024;
        l.write_timeout = Duration::from_secs(10);
        l.sse_keepalive = Duration::from_secs(3);
    });
    let token = open_stream(&mut w, 1);
    w.connect(2, "127.0.0.1:41001");
    let fill = |w: &mut World<()>, id: &mut u64| {
        w.stall(1);
        while !w.engine.blocked_on_output(ConnId(1)) {
            *id += 1;
            w.bytes(2, &message(&token, *id));
            assert_eq!(responses(&w.take(2))[0].0, 202);
        }
    };
    let mut id = 0;
    fill(&mut w, &mut id);
    // The next message waits, and its poster with it; keep-alives wait too.
    w.bytes(2, &message(&token, 100));
    assert!(w.take(2).is_empty());
    let unread = w.unread[&ConnId(1)];
    w.advance(Duration::from_secs(7));
    assert_eq!(w.unread[&ConnId(1)], unread);
    // The client reads: the message is served.
    w.read_all(1);
    assert_eq!(responses(&w.take(2))[0].0, 202);
    assert!(w.take_text(1).contains("\"id\":100,"));
    // It stops reading again and never resumes: closed at the write timeout, and the message
    // waiting for it is answered that the stream is gone; its poster serves on.
    fill(&mut w, &mut id);
    w.bytes(2, &message(&token, 200));
    assert!(w.take(2).is_empty());
    w.advance(Duration::from_secs(10));
    assert!(w.closed.contains_key(&ConnId(1)));
    assert_eq!(responses(&w.take(2))[0].0, 404);
    assert!(
        w.logs
            .iter()
            .any(|l| l.contains("closed a legacy SSE stream: its client left")),
        "{:?}",
        w.logs
    );
    w.bytes(2, &post_call(300));
    assert_eq!(ids(&w.take(2)), vec![300]);
    assert!(!w.closed.contains_key(&ConnId(2)));
}
