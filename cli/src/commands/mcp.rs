//! `bernstein mcp`: serve MCP over stdio on the chosen runtime; `bernstein mcp tools`.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use bernstein_core::Tier;
use bernstein_domain::Server;
use bernstein_effects::host::ProjectHost;
use bernstein_effects::perform::Backend;
use bernstein_os::clock::SystemClock;
use clap::{Args, Subcommand, ValueEnum};

use super::http_serve::Runtime;
use crate::settings;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    command: Option<McpCommand>,
    #[command(flatten)]
    pub log: crate::telemetry::LogArgs,
    /// Transport to serve.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    transport: Transport,
    /// Runtime that moves the bytes.
    #[arg(long, value_enum, default_value_t = Runtime::Std)]
    runtime: Runtime,
    /// Tool tier to advertise (else BERNSTEIN_MCP_TOOL_TIER, else standard).
    #[arg(long = "mcp-tier", value_name = "TIER", value_parser = tier_parser())]
    mcp_tier: Option<Tier>,
    /// Interface to bind with `--transport http` (a non-loopback one needs a bearer token).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to bind with `--transport http`.
    #[arg(long, default_value_t = 8053)]
    port: u16,
    /// Engines serving `--transport http`, each on its own event loop and core, sharing the
    /// port, the store and the caps (else BERNSTEIN_MCP_ENGINES, else 1; either runtime).
    #[arg(long, value_name = "N")]
    engines: Option<usize>,
    /// Extra `Host` values to answer with `--transport http`, comma-separated: `host` (any port)
    /// or `host:port` (else BERNSTEIN_MCP_ALLOWED_HOSTS). The bind address, and on a loopback
    /// or wildcard bind localhost/127.0.0.1/[::1] on the bound port, are always allowed.
    #[arg(long, value_name = "HOSTS")]
    allowed_hosts: Option<String>,
    /// HTTP auth mode: `none` (loopback only) or `bearer` (else BERNSTEIN_MCP_AUTH_MODE; default:
    /// bearer when a token is set, else none).
    #[arg(long, value_name = "MODE")]
    auth: Option<String>,
    /// Ledger store: a postgres:// URL shared by several instances (else BERNSTEIN_STORE_URL,
    /// else the .sdd/ directory of --workdir).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// Apply the PostgreSQL schema migrations before serving.
    #[arg(long)]
    migrate: bool,
    #[command(flatten)]
    tls: super::tls::TlsArgs,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Print the tools each tier advertises, with each tier's tools/list size in bytes and
    /// estimated tokens (bytes / 4, rounded up).
    Tools {
        /// Only this tier.
        #[arg(long, value_parser = tier_parser())]
        tier: Option<Tier>,
        /// Print JSON.
        // `--json-output`, the old spelling, stays accepted (hidden), like `--json` elsewhere.
        #[arg(long, alias = "json-output")]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Transport {
    /// Newline-delimited JSON-RPC on stdin/stdout.
    Stdio,
    /// Streamable HTTP on `POST /mcp` and legacy HTTP+SSE on `/sse`, one port.
    Http,
}

impl McpArgs {
    /// Whether this is `bernstein mcp tools` (which reads no project).
    pub fn is_tools(&self) -> bool {
        matches!(self.command, Some(McpCommand::Tools { .. }))
    }
}

/// Parses a tier name; the help and the error list the names (`core`, `standard`, `all`).
pub fn tier_parser() -> impl clap::builder::TypedValueParser<Value = Tier> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Tier::ALL.map(Tier::as_str))
        .try_map(|s| s.parse::<Tier>())
}

pub fn run(workdir: &Path, args: McpArgs) -> Result<ExitCode, String> {
    if let Some(McpCommand::Tools { tier, json }) = args.command {
        return super::tools::run(tier, json);
    }
    if args.tls.given() && !matches!(args.transport, Transport::Http) {
        return Err("--tls-cert and --tls-key serve HTTPS: they need --transport http".into());
    }
    let tls = match args.transport {
        Transport::Http => args.tls.load()?,
        Transport::Stdio => None,
    };
    let tier = settings::tier(args.mcp_tier)?;
    let url = settings::store_url(args.store.as_deref())?;
    let http = matches!(args.transport, Transport::Http);
    let (store, key) = super::open_serving_store(workdir, url.as_deref(), args.migrate, http)?;
    super::announce_store(&store, workdir, url.as_deref());
    let transports = match args.transport {
        Transport::Stdio => vec!["stdio".to_string()],
        Transport::Http => vec!["streamable-http".to_string(), "sse".to_string()],
    };
    let mut config = settings::config(key, tier, transports)?;
    config.signing_key = Some(super::load_signer(workdir)?);
    let backend = Backend::new(
        store,
        Arc::new(SystemClock),
        Arc::new(ProjectHost::new(workdir)),
    );
    let served = match args.transport {
        Transport::Stdio => {
            if std::io::stderr().is_terminal() {
                // Someone started it by hand: say that the silence is a server waiting.
                bernstein_os::log_line!(
                    "bernstein: serving MCP on stdin/stdout for {} (a host sends JSON-RPC lines); stop with Ctrl-D (end of input) or Ctrl-C",
                    workdir.display()
                );
            }
            let server = Arc::new(Server::new(config));
            match args.runtime {
                Runtime::Std => bernstein_runtime_std::stdio::serve_stdio(
                    server,
                    &backend,
                    super::stop_signals::stop_on_signals,
                ),
                Runtime::Smol => bernstein_runtime_smol::stdio::serve_stdio(
                    server,
                    backend,
                    super::stop_signals::stop_on_signals,
                ),
            }
        }
        Transport::Http => {
            config.auth = settings::auth_mode(args.auth.as_deref())?;
            config.oauth = settings::oauth()?;
            let max_body = config.limits.max_message_bytes;
            let mut opts = super::http_serve::options(
                args.host,
                args.port,
                args.allowed_hosts.as_deref(),
                max_body,
            )?;
            opts.engines = settings::engines(args.engines)?;
            let server = Arc::new(Server::new(config));
            super::http_serve::serve(args.runtime, server, backend, opts, tls)
        }
    };
    served.map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}
