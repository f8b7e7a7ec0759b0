//! OTLP/HTTP export of the spans, configured by the standard OpenTelemetry environment:
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as given) or `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (`/v1/traces` appended) turn it on; `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the
//! default, or `http/json`), `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT` (and
//! their `_TRACES_` forms), `OTEL_SERVICE_NAME` (default `bernstein`),
//! `OTEL_RESOURCE_ATTRIBUTES` and the batch settings `OTEL_BSP_*` are honoured;
//! `OTEL_SDK_DISABLED=true` turns it off.
//!
//! A request never waits for the exporter: a closed span goes into the batch processor's
//! bounded queue (2,048 spans unless `OTEL_BSP_MAX_QUEUE_SIZE` says otherwise; a full queue
//! drops the span) and a thread of its own posts the batches with a blocking `ureq` client
//! (HTTPS through the `os` crate's agent: rustls on `ring`, the system's roots). A collector that cannot be reached costs a log line
//! when it starts failing and one when it answers again; what was lost is counted and said at
//! exit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SpanData, SpanExporter, SpanProcessor};

use super::spans::Sink;

const TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// The running export.
#[derive(Debug)]
pub struct Export {
    processor: Arc<BatchSpanProcessor>,
    counts: Arc<Counts>,
    endpoint: String,
}

/// What became of the spans handed to the exporter.
#[derive(Debug, Default)]
struct Counts {
    queued: AtomicU64,
    exported: AtomicU64,
    failed: AtomicU64,
    failing: AtomicBool,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl Export {
    /// The export the environment asks for, if any.
    pub fn from_env(command: &str) -> Result<Option<Export>, String> {
        if env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let endpoint = match (env(TRACES_ENDPOINT), env(ENDPOINT)) {
            (Some(e), _) => e,
            (None, Some(e)) => format!("{}/v1/traces", e.trim_end_matches('/')),
            (None, None) => return Ok(None),
        };
        let timeout = env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .or_else(|| env("OTEL_EXPORTER_OTLP_TIMEOUT"))
            .and_then(|ms| ms.parse::<u64>().ok())
            .map_or(Duration::from_secs(10), Duration::from_millis);
        let client = UreqClient(agent(timeout)?);
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(protocol()?)
            .with_http_client(client)
            .with_timeout(timeout)
            .build()
            .map_err(|e| format!("cannot export traces to {endpoint}: {e}"))?;
        let counts = Arc::new(Counts::default());
        let exporter = Counted {
            inner: exporter,
            counts: counts.clone(),
            endpoint: endpoint.clone(),
        };
        let mut resource = Resource::builder();
        if env("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("bernstein");
        }
        let resource = resource
            .with_attribute(opentelemetry::KeyValue::new(
                "bernstein.command",
                command.to_string(),
            ))
            .build();
        let mut processor = BatchSpanProcessor::builder(exporter).build();
        processor.set_resource(&resource);
        Ok(Some(Export {
            processor: Arc::new(processor),
            counts,
            endpoint,
        }))
    }

    /// Where the spans go.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The queue closed spans are handed to.
    pub fn sink(&self) -> Sink {
        Arc::new(Queued {
            processor: self.processor.clone(),
            counts: self.counts.clone(),
        })
    }

    /// Exports what is queued (waiting at most `timeout`) and says what was lost, if anything.
    pub fn shutdown(self, timeout: Duration) {
        let _ = self.processor.shutdown_with_timeout(timeout);
        let c = &self.counts;
        let (queued, exported, failed) = (
            c.queued.load(Ordering::Relaxed),
            c.exported.load(Ordering::Relaxed),
            c.failed.load(Ordering::Relaxed),
        );
        let dropped = queued.saturating_sub(exported + failed);
        if failed + dropped > 0 {
            bernstein_os::log_line!(
                "bernstein: traces: {exported} of {queued} spans exported to {}, {failed} lost to failed exports, {dropped} dropped (queue full or export timed out)",
                self.endpoint
            );
        }
    }
}

/// The batch processor, counting what it is handed.
#[derive(Debug)]
struct Queued {
    processor: Arc<BatchSpanProcessor>,
    counts: Arc<Counts>,
}

impl SpanProcessor for Queued {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        self.counts.queued.fetch_add(1, Ordering::Relaxed);
        self.processor.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.processor.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.processor.shutdown_with_timeout(timeout)
    }
}

/// The OTLP exporter, counting what it exported and saying when the collector stops and
/// starts answering.
#[derive(Debug)]
struct Counted {
    inner: opentelemetry_otlp::SpanExporter,
    counts: Arc<Counts>,
    endpoint: String,
}

impl SpanExporter for Counted {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len() as u64;
        let result = self.inner.export(batch).await;
        let c = &self.counts;
        match &result {
            Ok(()) => {
                c.exported.fetch_add(n, Ordering::Relaxed);
                if c.failing.swap(false, Ordering::Relaxed) {
                    bernstein_os::log_line!(
                        "bernstein: traces: {} answers again; exporting",
                        self.endpoint
                    );
                }
            }
            Err(e) => {
                c.failed.fetch_add(n, Ordering::Relaxed);
                if !c.failing.swap(true, Ordering::Relaxed) {
                    bernstein_os::log_line!(
                        "bernstein: traces: export to {} failed ({e}); spans are dropped until it answers",
                        self.endpoint
                    );
                }
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else
/// `http/protobuf` (the standard's default; the library's would be JSON).
fn protocol() -> Result<Protocol, String> {
    let named = [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ]
    .into_iter()
    .find_map(|var| env(var).map(|v| (var, v)));
    match named {
        None => Ok(Protocol::HttpBinary),
        Some((_, v)) if v == "http/protobuf" => Ok(Protocol::HttpBinary),
        Some((_, v)) if v == "http/json" => Ok(Protocol::HttpJson),
        Some((var, v)) => Err(format!(
            "{var}={v} is not supported: traces are exported over HTTP (http/protobuf or http/json)"
        )),
    }
}

/// A blocking HTTP client for the exporter's thread.
#[derive(Debug)]
struct UreqClient(ureq::Agent);

#[async_trait::async_trait]
impl HttpClient for UreqClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let request = Request::from_parts(parts, body.to_vec());
        let response = self.0.run(request)?;
        let (parts, mut body) = response.into_parts();
        let bytes = body.with_config().limit(1 << 20).read_to_vec()?;
        Ok(Response::from_parts(parts, Bytes::from(bytes)))
    }
}

/// An agent whose requests take at most `timeout`: the `os` crate's HTTPS agent (the system's
/// roots, `SSL_CERT_FILE` honoured) for an `https:` collector, a plain one otherwise (no root
/// store needed to reach a collector on plain HTTP).
fn agent(timeout: Duration) -> Result<ureq::Agent, String> {
    let https = [TRACES_ENDPOINT, ENDPOINT]
        .iter()
        .filter_map(|v| env(v))
        .any(|e| e.starts_with("https:"));
    if https {
        return bernstein_os::https::agent(None, timeout)
            .map_err(|e| format!("the HTTPS trace collector: {e}"));
    }
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .build();
    Ok(config.into())
}
