//! Requests announced and ended for a runtime that traces: only when asked, once each, the
//! span named before the request's first store output and ended after its answer.

use super::*;
use crate::engine::Output;
use crate::engine::span::SpanParent;

const TP: &str = "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn an_engine_that_does_not_trace_announces_nothing() {
    let mut w = http_world(|_| {});
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &post("/mcp", &call(1), &[JSON_OR_SSE, ERA, TP]));
    assert_eq!(ids(&w.take(1)), vec![1]);
    assert!(w.spans.is_empty());
}

#[test]
fn each_call_is_announced_with_its_parent_and_ended_once() {
    let mut w = http_world(|_| {});
    w.engine.trace_requests(true);
    w.connect(1, "127.0.0.1:40000");
    w.bytes(1, &post("/mcp", &call(1), &[JSON_OR_SSE, ERA, TP]));
    w.bytes(1, &post_call(2));
    assert_eq!(ids(&w.take(1)), vec![1, 2]);
    let [
        Output::Began {
            req: a,
            span: first,
        },
        Output::Ended {
            req: a_end,
            error: None,
            failed: false,
        },
        Output::Began {
            req: b,
            span: second,
        },
        Output::Ended {
            req: b_end,
            error: None,
            failed: false,
        },
    ] = w.spans.as_slice()
    else {
        panic!("one span per call, in order: {:?}", w.spans);
    };
    assert_eq!((a, b), (a_end, b_end));
    assert_eq!(first.name, "tools/call t");
    assert_eq!(first.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(
        first.parent,
        Some(SpanParent {
            span_id: "00f067aa0ba902b7".into(),
            sampled: true
        })
    );
    assert_eq!(second.parent, None, "no traceparent: a root span");
    assert_ne!(second.trace_id, first.trace_id);
}

#[test]
fn a_store_failure_ends_the_span_as_failed() {
    let mut w = http_world(|_| {});
    w.engine.trace_requests(true);
    w.fail_next = Some(StoreError::Unavailable("the disk is gone".into()));
    w.connect(1, "127.0.0.1:44000");
    w.bytes(1, &post_call(1));
    assert_eq!(responses(&w.take(1))[0].0, 503);
    assert!(matches!(
        w.spans.as_slice(),
        [Output::Began { .. }, Output::Ended { failed: true, .. }]
    ));
}
