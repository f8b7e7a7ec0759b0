//! Log lines as JSON objects, one a line: `timestamp` (RFC 3339, UTC), `level`, `message`,
//! any other field of the event, and `trace_id` and `span_id` when the line was written inside
//! a span with ids (a request, its store calls, the worker's agent run).

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime as _, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::spans::Ids;

/// The event format (see the module docs).
#[derive(Debug)]
pub struct JsonLines;

struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        let mut line = Map::new();
        line.insert("timestamp".into(), timestamp.into());
        line.insert("level".into(), event.metadata().level().as_str().into());
        event.record(&mut Fields(&mut line));
        let ids = ctx.event_scope().and_then(|scope| {
            scope.into_iter().find_map(|span| {
                span.extensions()
                    .get::<Ids>()
                    .map(|i| (i.trace_id.to_string(), i.span_id.to_string()))
            })
        });
        if let Some((trace_id, span_id)) = ids {
            line.insert("trace_id".into(), trace_id.into());
            line.insert("span_id".into(), span_id.into());
        }
        writeln!(writer, "{}", Value::Object(line))
    }
}
