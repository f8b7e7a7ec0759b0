//! The `tracing` layer that gives every span its ids and, when traces are exported, hands it to
//! the exporter as an OpenTelemetry span when it closes.
//!
//! A span with a `trace_id` field (a request: [`bernstein_effects::trace`]; the worker's agent
//! run) is in that trace, with the `span_id` field as its id (else a random one) and the remote
//! parent its `parent_span_id` and
//! `parent_sampled` fields name (a request with no `traceparent` is a root). Any other span is a
//! child of the nearest span with ids, with a random span id. `otel.name` names the exported
//! span, `otel.kind` (`server`, `client`) its kind; every other field is an attribute.
//! `rpc.error_code` or `failed` mark it failed. A span whose parent was not sampled is not
//! exported.

use std::sync::Arc;
use std::time::SystemTime;

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::trace::{IdGenerator as _, RandomIdGenerator, SpanData, SpanProcessor};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Subscriber, span};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// Where closed spans go: the exporter's batch queue.
pub type Sink = Arc<dyn SpanProcessor>;

/// The layer (see the module docs).
pub struct Spans {
    sink: Option<Sink>,
    scope: InstrumentationScope,
    ids: RandomIdGenerator,
}

impl Spans {
    /// Ids only (structured logs), or ids and export to `sink`.
    pub fn new(sink: Option<Sink>) -> Spans {
        Spans {
            sink,
            scope: InstrumentationScope::builder("bernstein")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
            ids: RandomIdGenerator::default(),
        }
    }
}

/// A span's ids and what its exported form needs, kept in its extensions.
#[derive(Debug)]
pub struct Ids {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    parent: Option<(SpanId, bool)>,
    sampled: bool,
    name: String,
    kind: SpanKind,
    start: SystemTime,
    attributes: Vec<KeyValue>,
    failed: bool,
}

/// The fields of a span as it opens or records.
#[derive(Default)]
struct Fields {
    name: Option<String>,
    kind: Option<SpanKind>,
    trace_id: Option<TraceId>,
    span_id: Option<SpanId>,
    parent_span_id: Option<SpanId>,
    parent_sampled: Option<bool>,
    failed: bool,
    attributes: Vec<KeyValue>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        let text = || value.as_str().into_owned();
        match field.name() {
            "otel.name" => self.name = Some(text()),
            "otel.kind" => {
                self.kind = Some(match value.as_str().as_ref() {
                    "server" => SpanKind::Server,
                    "client" => SpanKind::Client,
                    _ => SpanKind::Internal,
                })
            }
            "trace_id" => self.trace_id = TraceId::from_hex(&text()).ok(),
            "span_id" => self.span_id = SpanId::from_hex(&text()).ok(),
            "parent_span_id" => self.parent_span_id = SpanId::from_hex(&text()).ok(),
            "parent_sampled" => self.parent_sampled = Some(matches!(value, Value::Bool(true))),
            name => {
                if matches!(name, "rpc.error_code" | "failed") {
                    self.failed = true;
                }
                self.attributes.push(KeyValue::new(name.to_string(), value));
            }
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::from(value.to_string()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::I64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::I64(i64::try_from(value).unwrap_or(i64::MAX)));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::from(format!("{value:?}")));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut f = Fields::default();
        attrs.record(&mut f);
        let inherited = span.scope().skip(1).find_map(|p| {
            p.extensions()
                .get::<Ids>()
                .map(|i| (i.trace_id, i.span_id, i.sampled))
        });
        let (trace_id, span_id, parent, sampled) = match (f.trace_id, f.span_id, inherited) {
            (Some(t), s, _) => {
                let parent = f.parent_span_id.map(|p| (p, true));
                let s = s.unwrap_or_else(|| self.ids.new_span_id());
                (t, s, parent, f.parent_sampled.unwrap_or(true))
            }
            (_, _, Some((t, p, sampled))) => (t, self.ids.new_span_id(), Some((p, false)), sampled),
            _ => (self.ids.new_trace_id(), self.ids.new_span_id(), None, true),
        };
        let ids = Ids {
            trace_id,
            span_id,
            parent,
            sampled,
            name: f
                .name
                .unwrap_or_else(|| attrs.metadata().name().to_string()),
            kind: f.kind.unwrap_or(SpanKind::Internal),
            start: SystemTime::now(),
            attributes: f.attributes,
            failed: f.failed,
        };
        span.extensions_mut().insert(ids);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut f = Fields::default();
        values.record(&mut f);
        if let Some(ids) = span.extensions_mut().get_mut::<Ids>() {
            ids.failed |= f.failed;
            ids.attributes.extend(f.attributes);
        }
    }

    fn on_close(&self, id: span::Id, ctx: Context<'_, S>) {
        let Some(sink) = &self.sink else { return };
        let Some(span) = ctx.span(&id) else { return };
        let Some(ids) = span.extensions_mut().remove::<Ids>() else {
            return;
        };
        if !ids.sampled {
            return;
        }
        let (parent_span_id, parent_span_is_remote) =
            ids.parent.unwrap_or((SpanId::INVALID, false));
        let context = SpanContext::new(
            ids.trace_id,
            ids.span_id,
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        );
        sink.on_end(SpanData {
            span_context: context,
            parent_span_id,
            parent_span_is_remote,
            span_kind: ids.kind,
            name: ids.name.into(),
            start_time: ids.start,
            end_time: SystemTime::now(),
            attributes: ids.attributes,
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: if ids.failed {
                Status::error("")
            } else {
                Status::Unset
            },
            instrumentation_scope: self.scope.clone(),
        });
    }
}
