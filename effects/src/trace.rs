//! Request spans (`tracing`), for a process that traces ([`enable`]; off by default, and then
//! nothing here runs and no engine announces its requests).
//!
//! The engine names each request ([`Output::Began`](bernstein_core::engine::Output::Began)):
//! its span `request` carries the fields a subscriber builds the exported span from, the
//! content-derived ids included, so that the span is the one the answer's span id names:
//! - `otel.name`: `{method} {tool}` (`tools/call bernstein_status`), or the method;
//! - `rpc.method`, `mcp.tool`;
//! - `trace_id`, `span_id`: 32 and 16 lowercase hex digits;
//! - `parent_span_id`, `parent_sampled`: the incoming `traceparent`, when the request had a
//!   valid one (`params._meta` or the HTTP header);
//! - `rpc.error_code` (the JSON-RPC error it was answered with) and `failed` (a store
//!   failure ended it), recorded when it ends.
//!
//! The store calls made for it are its children: `store.append` around each
//! compare-and-append, `store.fsync` around the fsync that made its records durable (one fsync
//! covers every request that appended since the last one: each gets its own child, with
//! `store.batch`, how many shared it), wherever they run (the runtime's thread, the syncer,
//! the pool), each entered while it runs, so that a log line written meanwhile is inside the
//! request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use bernstein_core::engine::ReqId;
use bernstein_core::engine::span::RequestSpan;
use tracing::Span;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns request spans on for every performer created from now on (a process that exports
/// traces or writes structured logs).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether [`enable`] was called.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The open request spans of one engine, and the requests whose appends wait for an fsync.
#[derive(Debug, Default)]
pub(crate) struct Requests {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    open: HashMap<ReqId, Span>,
    /// Requests that appended since the last fsync was asked for.
    unsynced: Vec<ReqId>,
}

impl Requests {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens the span of a request the engine announced.
    pub(crate) fn begin(&self, req: ReqId, s: &RequestSpan) {
        let parent = s.parent.as_ref();
        let span = tracing::info_span!(
            target: "bernstein::request",
            parent: None,
            "request",
            otel.name = %s.name,
            otel.kind = "server",
            rpc.method = %s.method,
            mcp.tool = s.tool.as_deref(),
            trace_id = %s.trace_id,
            span_id = %s.span_id,
            parent_span_id = parent.map(|p| p.span_id.as_str()),
            parent_sampled = parent.map(|p| p.sampled),
            rpc.error_code = tracing::field::Empty,
            failed = tracing::field::Empty,
        );
        self.state().open.insert(req, span);
    }

    /// Closes a request's span (dropped here: the subscriber ends it now).
    pub(crate) fn end(&self, req: ReqId, error: Option<i64>, failed: bool) {
        let span = {
            let mut state = self.state();
            state.unsynced.retain(|r| *r != req);
            state.open.remove(&req)
        };
        if let Some(span) = span {
            if let Some(code) = error {
                span.record("rpc.error_code", code);
            }
            if failed {
                span.record("failed", true);
            }
        }
    }

    /// The `store.append` child of `req`'s span (disabled when it has none); `req` then
    /// waits for the next fsync.
    pub(crate) fn append(&self, req: ReqId) -> Span {
        let mut state = self.state();
        let Some(parent) = state.open.get(&req) else {
            return Span::none();
        };
        let span = tracing::info_span!(target: "bernstein::store", parent: parent, "store.append");
        state.unsynced.push(req);
        span
    }

    /// The `store.fsync` children of every request that appended since the last fsync.
    pub(crate) fn fsync(&self) -> Vec<Span> {
        let mut state = self.state();
        let waiting = std::mem::take(&mut state.unsynced);
        let batch = waiting.len();
        waiting
            .iter()
            .filter_map(|req| state.open.get(req))
            .map(|parent| {
                tracing::info_span!(
                    target: "bernstein::store",
                    parent: parent,
                    "store.fsync",
                    store.batch = batch
                )
            })
            .collect()
    }
}

/// Spans entered together while a call runs (a guard per span, dropped with it).
pub(crate) fn entered(spans: &[Span]) -> Vec<tracing::span::Entered<'_>> {
    spans.iter().map(Span::enter).collect()
}
