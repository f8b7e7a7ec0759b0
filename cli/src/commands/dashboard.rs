//! `bernstein dashboard`: the operator's view of a project's ledger (the page at `/`, its API,
//! `/metrics`, `/healthz`, `/readyz`) on its own HTTP port, read-only: it serves no MCP and
//! appends nothing, so it can run beside stdio servers on the same `.sdd/` (or instances on
//! the same database). It never creates a project or a key; a ledger that does not verify is
//! shown as such (and `/readyz` is 503) instead of refused.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use bernstein_core::signing::Signer;
use bernstein_domain::Server;
use bernstein_effects::host::ProjectHost;
use bernstein_effects::perform::Backend;
use bernstein_os::clock::SystemClock;
use clap::Args;

use super::http_serve::Runtime;
use crate::settings;

#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// Interface to bind (a non-loopback one needs BERNSTEIN_MCP_TOKEN, sent as a bearer token).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to bind (0: any free one).
    #[arg(long, default_value_t = 8054)]
    port: u16,
    /// Extra `Host` values to answer, comma-separated (else BERNSTEIN_MCP_ALLOWED_HOSTS).
    #[arg(long, value_name = "HOSTS")]
    allowed_hosts: Option<String>,
    /// Read the PostgreSQL ledger at this URL (else BERNSTEIN_STORE_URL, else the .sdd/ of
    /// --workdir, which holds the instances' keys either way).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// Runtime that moves the bytes.
    #[arg(long, value_enum, default_value_t = Runtime::Std)]
    runtime: Runtime,
    #[command(flatten)]
    tls: super::tls::TlsArgs,
}

pub fn run(workdir: &Path, args: DashboardArgs) -> Result<ExitCode, String> {
    let tls = args.tls.load()?;
    let url = settings::store_url(args.store.as_deref())?;
    let (store, key) = super::open_operator_store_with(workdir, url.as_deref(), true)?;
    super::announce_store(&store, workdir, url.as_deref());
    let mut config = settings::config(key, settings::tier(None)?, Vec::new())?;
    config.auth = settings::auth_mode(None)?;
    let sdd = workdir.join(".sdd");
    // The signed head is shown when the project's signing key exists; none is created.
    config.signing_key = bernstein_store_file::keys::load_signing_key(&sdd)
        .map_err(|e| format!("signing key: {e}"))?
        .map(|seed| Signer::from_seed(&seed));
    let backend = Backend::new(
        store,
        Arc::new(SystemClock),
        Arc::new(ProjectHost::new(workdir)),
    );
    let max_body = config.limits.max_message_bytes;
    let mut opts = super::http_serve::options(
        args.host,
        args.port,
        args.allowed_hosts.as_deref(),
        max_body,
    )?;
    opts.mcp = false;
    super::http_serve::serve(
        args.runtime,
        Arc::new(Server::new(config)),
        backend,
        opts,
        tls,
    )
    .map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}
