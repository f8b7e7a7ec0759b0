//! `bernstein-conformance-fixture`: a test-only MCP server that serves the official
//! conformance suite's fixture tools, resources and prompts (see [`fixtures`]) over the real
//! HTTP server of either runtime (`--runtime std`, the default, or `smol`), through
//! `bernstein_domain::Server::with_catalog`. It is the same engine, transport and ledger as
//! `bernstein mcp --transport http`, with a different catalogue; it must never grow a protocol
//! path of its own.
//!
//! Usage: `bernstein-conformance-fixture --workdir DIR [--host 127.0.0.1] [--port 0]
//! [--runtime std|smol]`. Prints `... serving MCP over HTTP at http://ADDR/mcp ...` on stderr
//! when ready.

mod fixtures;
mod input_fixtures;
mod kit;
mod task_fixtures;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use bernstein_core::transport::http::HttpOptions;
use bernstein_core::{Config, Tier};
use bernstein_domain::Server;
use bernstein_effects::host::ProjectHost;
use bernstein_effects::perform::Backend;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_os::clock::SystemClock;

struct Args {
    workdir: PathBuf,
    host: String,
    port: u16,
    /// How long a request waits for the client's input (the server's
    /// `BERNSTEIN_MCP_INPUT_EXPIRY_SECS`); `None`: the default.
    input_expiry_secs: Option<u64>,
    /// Serve on runtime-smol instead of runtime-std.
    smol: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        workdir: PathBuf::from("."),
        host: "127.0.0.1".into(),
        port: 0,
        input_expiry_secs: None,
        smol: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--workdir" => args.workdir = PathBuf::from(value()?),
            "--host" => args.host = value()?,
            "--port" => {
                let v = value()?;
                args.port = v.parse().map_err(|_| format!("--port: not a port: {v}"))?;
            }
            "--input-expiry-secs" => {
                let v = value()?;
                let secs = v.parse().ok().filter(|s| (1..=86_400).contains(s));
                let secs = secs.ok_or_else(|| {
                    format!("--input-expiry-secs: not a number of seconds from 1 to 86400: {v}")
                })?;
                args.input_expiry_secs = Some(secs);
            }
            "--runtime" => match value()?.as_str() {
                "std" => args.smol = false,
                "smol" => args.smol = true,
                other => return Err(format!("--runtime: std or smol, not {other}")),
            },
            "-h" | "--help" => {
                return Err(
                    "usage: bernstein-conformance-fixture --workdir DIR [--host H] \
                     [--port P] [--input-expiry-secs N] [--runtime std|smol]"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    std::fs::create_dir_all(&args.workdir).map_err(|e| format!("workdir: {e}"))?;
    let key = bernstein_store_file::keys::load_or_create_audit_key(&args.workdir.join(".sdd"))
        .map_err(|e| format!("audit key: {e}"))?;
    let store = FileStore::open(&args.workdir, key.clone()).map_err(|e| e.to_string())?;
    let mut config = Config::new(key);
    config.tier = Tier::All;
    // The suite reads tool text verbatim: no meter envelope around it.
    config.cost_meter = false;
    config.transports = vec!["streamable-http".into(), "sse".into()];
    if let Some(secs) = args.input_expiry_secs {
        config.input_expiry_ms = secs * 1000;
    }
    let options = HttpOptions {
        host: args.host,
        port: args.port,
        ..HttpOptions::default()
    };
    let server = Arc::new(Server::with_catalog(config, fixtures::catalog()));
    let backend = Backend::new(
        Arc::new(store),
        Arc::new(SystemClock),
        Arc::new(ProjectHost::new(&args.workdir)),
    );
    if args.smol {
        bernstein_runtime_smol::http::serve_http(server, backend, options, None, |_| Ok(()))
    } else {
        bernstein_runtime_std::http::serve_http(server, backend, options, None, |_| Ok(()))
    }
    .map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            bernstein_os::log_line!("bernstein-conformance-fixture: {e}");
            ExitCode::from(2)
        }
    }
}
