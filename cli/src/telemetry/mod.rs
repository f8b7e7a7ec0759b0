//! Traces and structured logs of `bernstein mcp`, `dashboard` and `worker`.
//!
//! Off by default, and then nothing is installed: log lines are plain text on stderr exactly
//! as always, no span is made and no engine announces its requests. On when asked:
//! - `--log-format json` (else `BERNSTEIN_LOG_FORMAT=json`): every log line is a JSON object
//!   on stderr ([`json`]), with the trace id of the request it was written in;
//! - `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` set: request spans
//!   are exported over OTLP/HTTP ([`otlp`]), batched on a thread of their own.
//!
//! Either way the request spans ([`bernstein_effects::trace`]) are turned on and [`spans`]
//! gives each its content-derived ids.

mod json;
mod otlp;
pub(crate) mod spans;

use std::time::Duration;

use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt as _;

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Plain text lines (the default).
    Plain,
    /// One JSON object a line: timestamp, level, message, trace and span ids.
    Json,
}

/// `--log-format`, on the commands that serve or work for long.
#[derive(Clone, Debug, clap::Args)]
pub struct LogArgs {
    /// Log lines on stderr as `plain` text (the default) or `json` objects, one a line (else
    /// BERNSTEIN_LOG_FORMAT).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,
}

/// The log format: the flag, then `BERNSTEIN_LOG_FORMAT`, then plain.
pub fn log_format(flag: Option<LogFormat>) -> Result<LogFormat, String> {
    if let Some(f) = flag {
        return Ok(f);
    }
    match std::env::var("BERNSTEIN_LOG_FORMAT") {
        Err(std::env::VarError::NotPresent) => Ok(LogFormat::Plain),
        Ok(v) if v.is_empty() || v == "plain" => Ok(LogFormat::Plain),
        Ok(v) if v == "json" => Ok(LogFormat::Json),
        Ok(v) => Err(format!(
            "BERNSTEIN_LOG_FORMAT={v} is not a log format: use plain or json"
        )),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err("BERNSTEIN_LOG_FORMAT is not valid UTF-8".into())
        }
    }
}

/// What was started; dropping it flushes the spans still queued (a few seconds at most).
#[derive(Debug, Default)]
pub struct Telemetry {
    export: Option<otlp::Export>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(export) = self.export.take() {
            export.shutdown(Duration::from_secs(3));
        }
    }
}

/// Starts the process's traces and logs for `command` (`mcp`, `dashboard`, `worker`).
pub fn start(format: LogFormat, command: &str) -> Result<Telemetry, String> {
    let export = otlp::Export::from_env(command)?;
    if format == LogFormat::Plain && export.is_none() {
        return Ok(Telemetry::default());
    }
    let spans = spans::Spans::new(export.as_ref().map(otlp::Export::sink));
    let lines = (format == LogFormat::Json).then(|| {
        tracing_subscriber::fmt::layer()
            .event_format(json::JsonLines)
            .with_writer(std::io::stderr)
            .log_internal_errors(false)
            .with_filter(LevelFilter::INFO)
    });
    let subscriber = tracing_subscriber::registry().with(spans).with(lines);
    tracing::subscriber::set_global_default(subscriber)
        .map_err(|e| format!("cannot install the trace subscriber: {e}"))?;
    if format == LogFormat::Json {
        bernstein_os::log::structured();
    }
    bernstein_effects::trace::enable();
    if let Some(e) = &export {
        bernstein_os::log_line!("bernstein: traces: exporting spans to {}", e.endpoint());
    }
    Ok(Telemetry { export })
}
